/* tiny_model.h - writes small random-weight llama GGUF files for tests,
 * with a byte-level BPE vocabulary of the 256 byte symbols plus "he" and
 * an end-of-text control token, so the whole load path is exercised. */
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
} tiny_cfg;

#define TINY_VOCAB 258 /* 256 bytes + "he" + <|endoftext|> */
#define TINY_EOT 257

static inline tiny_cfg tiny_default(void)
{
    return (tiny_cfg){.n_embd = 64, .n_head = 4, .n_head_kv = 2, .n_ff = 96, .n_layer = 2,
                      .n_ctx_train = 256, .rope_base = 10000.0f, .wtype = QT_F32, .tied = 0,
                      .seed = 1};
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
static inline int tiny_write(const char *path, const tiny_cfg *c)
{
    gguf_writer *w = gguf_writer_new();
    const int hd = c->n_embd / c->n_head;
    gguf_w_str(w, "general.architecture", "llama");
    gguf_w_str(w, "general.name", "tiny");
    gguf_w_u32(w, "llama.context_length", (uint32_t)c->n_ctx_train);
    gguf_w_u32(w, "llama.embedding_length", (uint32_t)c->n_embd);
    gguf_w_u32(w, "llama.block_count", (uint32_t)c->n_layer);
    gguf_w_u32(w, "llama.feed_forward_length", (uint32_t)c->n_ff);
    gguf_w_u32(w, "llama.attention.head_count", (uint32_t)c->n_head);
    gguf_w_u32(w, "llama.attention.head_count_kv", (uint32_t)c->n_head_kv);
    gguf_w_u32(w, "llama.rope.dimension_count", (uint32_t)hd);
    gguf_w_f32(w, "llama.rope.freq_base", c->rope_base);
    gguf_w_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);

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
    if (!c->tied) tiny_add_tensor(w, "output.weight", c->wtype, c->n_embd, TINY_VOCAB, &s, 0.3f);
    for (int l = 0; l < c->n_layer; l++) {
        char n[64];
#define W(suffix, ne0, ne1, type, scale) \
    (snprintf(n, sizeof n, "blk.%d.%s.weight", l, suffix), tiny_add_tensor(w, n, type, ne0, ne1, &s, scale))
        W("attn_norm", c->n_embd, 1, QT_F32, 0.5f);
        W("ffn_norm", c->n_embd, 1, QT_F32, 0.5f);
        W("attn_q", c->n_embd, QD, c->wtype, 0.3f);
        W("attn_k", c->n_embd, KD, c->wtype, 0.3f);
        W("attn_v", c->n_embd, KD, c->wtype, 0.3f);
        W("attn_output", QD, c->n_embd, c->wtype, 0.3f);
        W("ffn_gate", c->n_embd, c->n_ff, c->wtype, 0.3f);
        W("ffn_up", c->n_embd, c->n_ff, c->wtype, 0.3f);
        W("ffn_down", c->n_ff, c->n_embd, c->wtype, 0.3f);
#undef W
    }
    qlm_err err = {0};
    int rc = gguf_w_save(w, path, &err);
    if (rc) fprintf(stderr, "tiny_write: %s\n", err.msg);
    gguf_writer_free(w);
    return rc;
}

#endif
