/* synth_model.c - `qlm synth`: a random-weight model of a family's shape
 * with a real tokenizer copied from a vocabulary GGUF.  llama.cpp and qlm
 * run the same file, which is how a family is checked against llama.cpp
 * when no real model of it can be downloaded (make conformance).  The
 * weights come from a fixed-seed generator and qlm's own quantizer, so the
 * same arguments write the same bytes on every machine. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/types.h"
#include "src/cli.h"
#include "src/gguf.h"
#include "tools/tools.h"

typedef struct shape {
    const char *name, *arch;
    int n_embd, n_head, n_head_kv, head_dim, n_ff, n_layer;
    float rope_base;
    bool qkv_bias;    /* qwen2 */
    int n_swa;        /* llama: Mistral's sliding window on every layer */
    bool fused;       /* phi3: attn_qkv and a 2 * n_ff ffn_up */
    int n_ctx_orig;   /* phi3 longrope: factors switch past this context */
    float attn_factor;
    bool tied;        /* no output.weight: the embedding is the output head */
    bool bench;       /* a real model's full size, for speed only: f16 by default */
} shape;

/* Small, but with the features that matter: GQA, rows a multiple of 256,
 * each family's own tensors and metadata. */
static const shape shapes[] = {
    {.name = "qwen2", .arch = "qwen2", .n_embd = 256, .n_head = 4, .n_head_kv = 2, .head_dim = 64,
     .n_ff = 512, .n_layer = 4, .rope_base = 1000000.0f, .qkv_bias = true},
    {.name = "mistral", .arch = "llama", .n_embd = 256, .n_head = 4, .n_head_kv = 2, .head_dim = 64,
     .n_ff = 512, .n_layer = 4, .rope_base = 10000.0f, .n_swa = 64},
    /* n_ctx_orig below llama.cpp's and qlm's 2048-cell test context, so the
     * long factors are the ones used */
    {.name = "phi3", .arch = "phi3", .n_embd = 256, .n_head = 4, .n_head_kv = 4, .head_dim = 64,
     .n_ff = 512, .n_layer = 4, .rope_base = 10000.0f, .fused = true, .n_ctx_orig = 1024,
     .attn_factor = 1.1902f},
    /* Full-size shapes for benchmarks, where the weights do not fit in any
     * cache.  Random weights measure speed only, never quality. */
    {.name = "tinyllama-1.1b", .arch = "llama", .n_embd = 2048, .n_head = 32, .n_head_kv = 4,
     .head_dim = 64, .n_ff = 5632, .n_layer = 22, .rope_base = 10000.0f, .bench = true},
    {.name = "llama3.2-1b", .arch = "llama", .n_embd = 2048, .n_head = 32, .n_head_kv = 8,
     .head_dim = 64, .n_ff = 8192, .n_layer = 16, .rope_base = 500000.0f, .tied = true, .bench = true},
    /* Qwen2-7B (DeepSeek-R1-Distill-Qwen-7B's shape): 7B widths, whose
     * 18944-wide down projection outgrows the caches the 1B shapes fit */
    {.name = "qwen2-7b", .arch = "qwen2", .n_embd = 3584, .n_head = 28, .n_head_kv = 4, .head_dim = 128,
     .n_ff = 18944, .n_layer = 28, .rope_base = 1000000.0f, .qkv_bias = true, .bench = true},
};

static uint64_t next(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float uniform(uint64_t *s) /* [-1, 1) */
{
    return (float)((next(s) >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}

/* offset + scale * uniform, stored as type (f32 vectors; matrices in the
 * chosen type). */
static void add(gguf_writer *w, const char *name, qt_type type, int64_t ne0, int64_t ne1, float offset,
                float scale, uint64_t *seed)
{
    const int64_t n = ne0 * ne1;
    float *f = malloc(sizeof(float) * (size_t)n);
    if (!f) return; /* the writer then fails on the missing tensor's size */
    for (int64_t i = 0; i < n; i++) f[i] = offset + scale * uniform(seed);
    const int64_t ne[2] = {ne0, ne1};
    if (type == QT_F32 && ne1 == 1) {
        gguf_w_tensor(w, name, type, 1, ne, f);
    } else if (type == QT_F32) {
        gguf_w_tensor(w, name, type, 2, ne, f);
    } else {
        void *q = malloc(qt_row_size(type, ne0) * (size_t)ne1);
        if (q) {
            qt_get(type)->from_float(f, q, n);
            gguf_w_tensor(w, name, type, 2, ne, q);
        }
        free(q);
    }
    free(f);
}

static void key_u32(gguf_writer *w, const char *arch, const char *k, uint32_t v)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, k);
    gguf_w_u32(w, key, v);
}

static void key_f32(gguf_writer *w, const char *arch, const char *k, float v)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, k);
    gguf_w_f32(w, key, v);
}

int qlm_cmd_synth(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        printf("usage: qlm synth SHAPE VOCAB.gguf OUT.gguf [SEED] [--type T]\n\n"
               "Writes a random-weight model of SHAPE with the tokenizer of VOCAB.gguf.\n"
               "Family shapes (small, q8_0 weights), for comparing qlm with llama.cpp on a\n"
               "family without real weights: qwen2, mistral (llama with a sliding window),\n"
               "phi3 (fused QKV and gate/up, longrope).\n"
               "Benchmark shapes (full size, f16 weights; quantize them with qlm quantize),\n"
               "for speed only: tinyllama-1.1b, llama3.2-1b (tied output), qwen2-7b (15 GB in\n"
               "f16, built in memory: --type q8_0 takes 8 GB).\n\n"
               "  --type T   weight matrices in type T (f32, f16, bf16, q8_0, q4_0, ...)\n");
        return 0;
    }
    const char *pos[4];
    int n_pos = 0;
    const char *type_name = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--type")) {
            if (i + 1 >= argc) return qlm_cli_error(QLM_EUSAGE, "--type: missing value");
            type_name = argv[++i];
        } else if (n_pos < 4) {
            pos[n_pos++] = argv[i];
        } else
            return qlm_cli_error(QLM_EUSAGE, "qlm synth SHAPE VOCAB.gguf OUT.gguf [SEED] [--type T]");
    }
    if (n_pos != 3 && n_pos != 4)
        return qlm_cli_error(QLM_EUSAGE, "qlm synth SHAPE VOCAB.gguf OUT.gguf [SEED] [--type T]");
    const shape *sh = NULL;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (!strcmp(shapes[i].name, pos[0])) sh = &shapes[i];
    if (!sh)
        return qlm_cli_error(QLM_EUSAGE, "synth: no shape '%s' (known: qwen2, mistral, phi3, tinyllama-1.1b, "
                             "llama3.2-1b, qwen2-7b)", pos[0]);
    qt_type wt = sh->bench ? QT_F16 : QT_Q8_0;
    if (type_name) {
        bool found = false;
        for (uint32_t t = 0; t < QT_COUNT && !found; t++) {
            const qt_traits *tr = qt_get(t);
            if (tr && tr->from_float && !strcasecmp(tr->name, type_name)) {
                wt = (qt_type)t;
                found = true;
            }
        }
        if (!found) return qlm_cli_error(QLM_EUSAGE, "--type: '%s' is not a type qlm can write", type_name);
    }
    uint64_t seed = n_pos == 4 ? strtoull(pos[3], NULL, 10) : 1;
    const char *vocab_path = pos[1], *out_path = pos[2];

    qlm_err err = {0};
    gguf_ctx *voc = NULL;
    if (gguf_open(&voc, vocab_path, &err)) return qlm_cli_error(QLM_ELOAD, "%s", err.msg);
    const gguf_value *toks = gguf_get_arr(voc, "tokenizer.ggml.tokens", GGUF_STRING);
    if (!toks) {
        gguf_close(voc);
        return qlm_cli_error(QLM_ELOAD, "%s: no tokenizer.ggml.tokens", vocab_path);
    }
    const int64_t V = (int64_t)toks->arr.n;

    gguf_writer *w = gguf_writer_new();
    const char *a = sh->arch;
    const int E = sh->n_embd, D = sh->head_dim, QD = sh->n_head * D, KD = sh->n_head_kv * D, F = sh->n_ff;
    gguf_w_str(w, "general.architecture", a);
    gguf_w_str(w, "general.name", "qlm synth");
    key_u32(w, a, "context_length", 4096);
    key_u32(w, a, "embedding_length", (uint32_t)E);
    key_u32(w, a, "block_count", (uint32_t)sh->n_layer);
    key_u32(w, a, "feed_forward_length", (uint32_t)F);
    key_u32(w, a, "attention.head_count", (uint32_t)sh->n_head);
    key_u32(w, a, "attention.head_count_kv", (uint32_t)sh->n_head_kv);
    key_u32(w, a, "attention.key_length", (uint32_t)D);
    key_u32(w, a, "attention.value_length", (uint32_t)D);
    key_f32(w, a, "rope.freq_base", sh->rope_base);
    key_f32(w, a, "attention.layer_norm_rms_epsilon", 1e-6f);
    key_u32(w, a, "rope.dimension_count", (uint32_t)D);
    if (sh->n_swa) key_u32(w, a, "attention.sliding_window", (uint32_t)sh->n_swa);
    if (sh->n_ctx_orig) {
        key_u32(w, a, "rope.scaling.original_context_length", (uint32_t)sh->n_ctx_orig);
        key_f32(w, a, "rope.scaling.attn_factor", sh->attn_factor);
    }
    for (uint64_t i = 0; i < voc->n_kv; i++) {
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)(voc->kv[i].key.len < 255 ? voc->kv[i].key.len : 255),
                 voc->kv[i].key.ptr);
        if (!strncmp(key, "tokenizer.", 10)) gguf_w_value(w, key, &voc->kv[i].val);
    }

    /* Scales keep activations near unit size through the layers, so that
     * the logits have real gaps rather than ties. */
    const float we = 1.0f / sqrtf((float)E), wf = 1.0f / sqrtf((float)F), wq = 1.0f / sqrtf((float)QD);
    add(w, "token_embd.weight", wt, E, V, 0.0f, 1.0f, &seed);
    add(w, "output_norm.weight", QT_F32, E, 1, 1.0f, 0.2f, &seed);
    if (!sh->tied) add(w, "output.weight", wt, E, V, 0.0f, 2.0f * we, &seed);
    if (sh->n_ctx_orig) { /* per-pair angle divisors, >= 1 as real ones are */
        add(w, "rope_factors_long.weight", QT_F32, D / 2, 1, 2.5f, 1.5f, &seed);
        add(w, "rope_factors_short.weight", QT_F32, D / 2, 1, 1.25f, 0.25f, &seed);
    }
    for (int l = 0; l < sh->n_layer; l++) {
        char n[64];
#define T(suffix, type, ne0, ne1, off, sc) \
    (snprintf(n, sizeof n, "blk.%d.%s", l, suffix), add(w, n, type, ne0, ne1, off, sc, &seed))
        T("attn_norm.weight", QT_F32, E, 1, 1.0f, 0.2f);
        if (sh->fused) {
            T("attn_qkv.weight", wt, E, QD + 2 * KD, 0.0f, 1.7f * we);
        } else {
            T("attn_q.weight", wt, E, QD, 0.0f, 1.7f * we);
            T("attn_k.weight", wt, E, KD, 0.0f, 1.7f * we);
            T("attn_v.weight", wt, E, KD, 0.0f, 1.7f * we);
        }
        if (sh->qkv_bias) {
            T("attn_q.bias", QT_F32, QD, 1, 0.0f, 0.5f);
            T("attn_k.bias", QT_F32, KD, 1, 0.0f, 0.5f);
            T("attn_v.bias", QT_F32, KD, 1, 0.0f, 0.5f);
        }
        T("attn_output.weight", wt, QD, E, 0.0f, 1.7f * wq);
        T("ffn_norm.weight", QT_F32, E, 1, 1.0f, 0.2f);
        if (sh->fused) {
            T("ffn_up.weight", wt, E, 2 * F, 0.0f, 1.7f * we);
        } else {
            T("ffn_gate.weight", wt, E, F, 0.0f, 1.7f * we);
            T("ffn_up.weight", wt, E, F, 0.0f, 1.7f * we);
        }
        T("ffn_down.weight", wt, F, E, 0.0f, 1.7f * wf);
#undef T
    }
    int rc = gguf_w_save(w, out_path, &err);
    gguf_writer_free(w);
    gguf_close(voc);
    if (rc) return qlm_cli_error(rc, "%s", err.msg);
    return 0;
}
