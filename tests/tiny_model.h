/* tiny_model.h - writes small random-weight GGUF files for tests (llama,
 * or another family's shape: qwen2, gemma3), with a byte-level BPE
 * vocabulary of the 256 byte symbols plus "he" and an end-of-text control
 * token, so the whole load path is exercised. */
#ifndef QLM_TINY_MODEL_H
#define QLM_TINY_MODEL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/types.h"
#include "src/gguf.h"

typedef struct tiny_cfg {
    int n_embd, n_head, n_head_kv, n_ff, n_layer, n_ctx_train;
    float rope_base;
    qt_type wtype;   /* type of the projection matrices */
    int tied;        /* output shares token_embd */
    uint64_t seed;
    const char *arch;      /* NULL: "llama" */
    int head_dim;          /* 0: n_embd / n_head */
    int n_swa, swa_pattern; /* window and period (every n-th layer global, 0: all) */
    float rope_base_swa, softcap;
    int n_ctx_orig;        /* phi3: longrope factors switch past this context */
    float attn_factor;     /* phi3: longrope cos/sin multiplier */
} tiny_cfg;

#define TINY_VOCAB 258 /* 256 bytes + "he" + <|endoftext|> */
#define TINY_EOT 257

static inline tiny_cfg tiny_default(void)
{
    return (tiny_cfg){.n_embd = 64, .n_head = 4, .n_head_kv = 2, .n_ff = 96, .n_layer = 2,
                      .n_ctx_train = 256, .rope_base = 10000.0f, .wtype = QT_F32, .tied = 0,
                      .seed = 1};
}

/* The defaults for family arch, gemma3 with its sliding window (every
 * other layer, 4 positions), second RoPE base and logit cap switched on. */
static inline tiny_cfg tiny_for_arch(const char *arch)
{
    tiny_cfg cfg = tiny_default();
    cfg.arch = arch;
    if (arch && !strcmp(arch, "gemma3")) {
        cfg.n_swa = 4;
        cfg.swa_pattern = 2;
        cfg.rope_base_swa = 10000.0f;
        cfg.softcap = 30.0f;
    }
    return cfg;
}

static inline float tiny_rand(uint64_t *s) /* uniform in [-1, 1) */
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*s >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}

/* GPT-2's byte -> code point map, UTF-8 encoded into out (>= 3 bytes). */
static inline void tiny_byte_symbol(int b, char *out)
{
    int cp;
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) cp = b;
    else {
        int n = 0;
        for (int i = 0; i < b; i++)
            if (!((i >= 33 && i <= 126) || (i >= 161 && i <= 172) || (i >= 174 && i <= 255))) n++;
        cp = 256 + n;
    }
    if (cp < 0x80) { out[0] = (char)cp; out[1] = 0; }
    else { out[0] = (char)(0xc0 | cp >> 6); out[1] = (char)(0x80 | (cp & 0x3f)); out[2] = 0; }
}

static inline void tiny_add_tensor(gguf_writer *w, const char *name, qt_type type, int64_t ne0,
                                   int64_t ne1, uint64_t *seed, float scale)
{
    const int64_t n = ne0 * ne1;
    float *f = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) f[i] = tiny_rand(seed) * scale;
    const int64_t ne[2] = {ne0, ne1};
    if (type == QT_F32) {
        gguf_w_tensor(w, name, type, ne1 > 1 ? 2 : 1, ne, f);
    } else {
        const qt_traits *tr = qt_get(type);
        void *q = malloc(qt_row_size(type, ne0) * (size_t)ne1);
        tr->from_float(f, q, n);
        gguf_w_tensor(w, name, type, 2, ne, q);
        free(q);
    }
    free(f);
}

/* Writes the model to path; returns 0 on success. */
static inline void tiny_w_hp_u32(gguf_writer *w, const char *arch, const char *k, uint32_t v)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, k);
    gguf_w_u32(w, key, v);
}

static inline void tiny_w_hp_f32(gguf_writer *w, const char *arch, const char *k, float v)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, k);
    gguf_w_f32(w, key, v);
}

/* Writes the model to path; returns 0 on success. */
static inline int tiny_write(const char *path, const tiny_cfg *c)
{
    gguf_writer *w = gguf_writer_new();
    const char *a = c->arch ? c->arch : "llama";
    const int gemma = !strcmp(a, "gemma3"), qwen = !strcmp(a, "qwen2"), phi3 = !strcmp(a, "phi3");
    const int hd = c->head_dim ? c->head_dim : c->n_embd / c->n_head;
    gguf_w_str(w, "general.architecture", a);
    gguf_w_str(w, "general.name", "tiny");
    tiny_w_hp_u32(w, a, "context_length", (uint32_t)c->n_ctx_train);
    tiny_w_hp_u32(w, a, "embedding_length", (uint32_t)c->n_embd);
    tiny_w_hp_u32(w, a, "block_count", (uint32_t)c->n_layer);
    tiny_w_hp_u32(w, a, "feed_forward_length", (uint32_t)c->n_ff);
    tiny_w_hp_u32(w, a, "attention.head_count", (uint32_t)c->n_head);
    tiny_w_hp_u32(w, a, "attention.head_count_kv", (uint32_t)c->n_head_kv);
    tiny_w_hp_u32(w, a, "rope.dimension_count", (uint32_t)hd);
    tiny_w_hp_f32(w, a, "rope.freq_base", c->rope_base);
    tiny_w_hp_f32(w, a, "attention.layer_norm_rms_epsilon", 1e-5f);
    if (c->head_dim) {
        tiny_w_hp_u32(w, a, "attention.key_length", (uint32_t)hd);
        tiny_w_hp_u32(w, a, "attention.value_length", (uint32_t)hd);
    }
    if (c->n_swa) {
        tiny_w_hp_u32(w, a, "attention.sliding_window", (uint32_t)c->n_swa);
        if (c->swa_pattern) tiny_w_hp_u32(w, a, "attention.sliding_window_pattern", (uint32_t)c->swa_pattern);
        tiny_w_hp_f32(w, a, "rope.freq_base_swa", c->rope_base_swa);
    }
    if (c->softcap > 0) tiny_w_hp_f32(w, a, "final_logit_softcapping", c->softcap);
    if (c->n_ctx_orig) {
        tiny_w_hp_u32(w, a, "rope.scaling.original_context_length", (uint32_t)c->n_ctx_orig);
        tiny_w_hp_f32(w, a, "rope.scaling.attn_factor", c->attn_factor);
    }

    char syms[TINY_VOCAB][16];
    const char *toks[TINY_VOCAB];
    int32_t types[TINY_VOCAB];
    for (int b = 0; b < 256; b++) {
        tiny_byte_symbol(b, syms[b]);
        toks[b] = syms[b];
        types[b] = 1;
    }
    toks[256] = "he";
    types[256] = 1;
    toks[257] = "<|endoftext|>";
    types[257] = 3;
    const char *merges[] = {"h e"};
    gguf_w_str(w, "tokenizer.ggml.model", "gpt2");
    gguf_w_str(w, "tokenizer.ggml.pre", "default");
    gguf_w_arr_str(w, "tokenizer.ggml.tokens", toks, TINY_VOCAB);
    gguf_w_arr(w, "tokenizer.ggml.token_type", GGUF_INT32, types, TINY_VOCAB);
    gguf_w_arr_str(w, "tokenizer.ggml.merges", merges, 1);
    gguf_w_u32(w, "tokenizer.ggml.bos_token_id", TINY_EOT);
    gguf_w_u32(w, "tokenizer.ggml.eos_token_id", TINY_EOT);
    gguf_w_bool(w, "tokenizer.ggml.add_bos_token", 0);

    uint64_t s = c->seed;
    const int QD = c->n_head * hd, KD = c->n_head_kv * hd;
    tiny_add_tensor(w, "token_embd.weight", c->tied ? c->wtype : QT_F32, c->n_embd, TINY_VOCAB, &s, 1.0f);
    tiny_add_tensor(w, "output_norm.weight", QT_F32, c->n_embd, 1, &s, 0.5f);
    if (c->n_ctx_orig) {
        /* factors in [1, 5) and [1, 1.5): offset by writing 1 + |x| */
        float lf[64], sf[64];
        for (int i = 0; i < hd / 2 && i < 64; i++) {
            lf[i] = 3.0f + 2.0f * tiny_rand(&s);
            sf[i] = 1.25f + 0.25f * tiny_rand(&s);
        }
        const int64_t ne[1] = {hd / 2};
        gguf_w_tensor(w, "rope_factors_long.weight", QT_F32, 1, ne, lf);
        gguf_w_tensor(w, "rope_factors_short.weight", QT_F32, 1, ne, sf);
    }
    if (!c->tied) tiny_add_tensor(w, "output.weight", c->wtype, c->n_embd, TINY_VOCAB, &s, 0.3f);
    for (int l = 0; l < c->n_layer; l++) {
        char n[64];
#define W(suffix, ne0, ne1, type, scale) \
    (snprintf(n, sizeof n, "blk.%d.%s.weight", l, suffix), tiny_add_tensor(w, n, type, ne0, ne1, &s, scale))
        W("attn_norm", c->n_embd, 1, QT_F32, 0.5f);
        W("ffn_norm", c->n_embd, 1, QT_F32, 0.5f);
        if (phi3) { /* fused: Q, K, V rows in one tensor; gate then up in one */
            W("attn_qkv", c->n_embd, QD + 2 * KD, c->wtype, 0.3f);
        } else {
            W("attn_q", c->n_embd, QD, c->wtype, 0.3f);
            W("attn_k", c->n_embd, KD, c->wtype, 0.3f);
            W("attn_v", c->n_embd, KD, c->wtype, 0.3f);
        }
        W("attn_output", QD, c->n_embd, c->wtype, 0.3f);
        if (phi3) {
            W("ffn_up", c->n_embd, 2 * c->n_ff, c->wtype, 0.3f);
        } else {
            W("ffn_gate", c->n_embd, c->n_ff, c->wtype, 0.3f);
            W("ffn_up", c->n_embd, c->n_ff, c->wtype, 0.3f);
        }
        W("ffn_down", c->n_ff, c->n_embd, c->wtype, 0.3f);
        if (gemma) {
            W("attn_q_norm", hd, 1, QT_F32, 0.5f);
            W("attn_k_norm", hd, 1, QT_F32, 0.5f);
            W("post_attention_norm", c->n_embd, 1, QT_F32, 0.5f);
            W("post_ffw_norm", c->n_embd, 1, QT_F32, 0.5f);
        }
        if (qwen) {
            snprintf(n, sizeof n, "blk.%d.attn_q.bias", l);
            tiny_add_tensor(w, n, QT_F32, QD, 1, &s, 0.5f);
            snprintf(n, sizeof n, "blk.%d.attn_k.bias", l);
            tiny_add_tensor(w, n, QT_F32, KD, 1, &s, 0.5f);
            snprintf(n, sizeof n, "blk.%d.attn_v.bias", l);
            tiny_add_tensor(w, n, QT_F32, KD, 1, &s, 0.5f);
        }
#undef W
    }
    qlm_err err = {0};
    int rc = gguf_w_save(w, path, &err);
    if (rc) fprintf(stderr, "tiny_write: %s\n", err.msg);
    gguf_writer_free(w);
    return rc;
}

#endif
