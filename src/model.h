/* model.h - a loaded model and the one batch-oriented forward API.
 *
 * A batch is a list of (token, position, sequence id, want-logits), as in
 * llama_decode(): the same call serves prefill, decode, speculative
 * verification, many sequences at once and prefix reuse. */
#ifndef QLM_MODEL_H
#define QLM_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "gguf.h"
#include "kv.h"
#include "tokenizer.h"
#include "ggml-lite/tensor.h"

typedef enum qlm_ffn_act { QLM_ACT_SILU, QLM_ACT_GELU } qlm_ffn_act;

/* What "<arch>.attention.sliding_window" means for a family. */
typedef enum qlm_swa_kind {
    QLM_SWA_IGNORED, /* llama.cpp ignores the key for this family; so does qlm */
    QLM_SWA_ALL,     /* every layer windowed (Mistral) unless a pattern is given */
    QLM_SWA_PERIOD,  /* every swa_period-th layer global (Gemma 3: 6) */
} qlm_swa_kind;

/* What a family does differently from llama; forward() switches on these. */
typedef struct qlm_arch {
    const char *name;   /* general.architecture */
    bool rope_neox;     /* rotate (i, i+n/2) pairs instead of (2i, 2i+1) */
    bool qkv_bias;      /* Q, K and V projections carry biases (qwen2) */
    bool qk_norm;       /* RMSNorm over each head of Q and K before RoPE */
    bool post_norms;    /* RMSNorm on the attention and FFN outputs before
                           their residual adds (gemma's sandwich norms) */
    bool embd_scale;    /* embeddings multiplied by sqrt(n_embd) */
    bool scale_q;       /* attention scale applied to Q, not to the scores */
    bool logit_cap;     /* honours "<arch>.final_logit_softcapping" */
    qlm_ffn_act act;    /* gate activation of the gated FFN */
    bool fused_up;      /* gate and up in one ffn_up of 2 * n_ff rows (phi3) */
    qlm_swa_kind swa;   /* how a sliding window applies (model.c) */
    int swa_period;     /* QLM_SWA_PERIOD's default period */
    const char *chat_template; /* Jinja used when the GGUF carries none */
} qlm_arch;

/* The architecture row for name, or NULL. */
const qlm_arch *qlm_arch_find(const char *name);
/* Comma-separated list of supported architectures, for error messages. */
const char *qlm_arch_list(void);

typedef struct qlm_hparams {
    int n_vocab, n_ctx_train, n_embd, n_layer, n_head, n_head_kv, n_ff;
    int head_dim;   /* per-head width of Q and K (and V) */
    int n_rot;      /* dims rotated by RoPE per head */
    float rope_base, rope_freq_scale, norm_eps;
    int n_swa;             /* sliding window in positions; 0: none */
    float rope_base_swa;   /* RoPE base of the sliding-window layers */
    float attn_scale;      /* softmax scale of q.k (1/sqrt(head_dim) by default) */
    float logit_softcap;   /* logits = cap * tanh(logits / cap); 0: off */
    int n_ctx_orig;        /* context the RoPE factors switch at (longrope) */
    float rope_mscale;     /* cos/sin multiplier: longrope's attention factor */
} qlm_hparams;

typedef struct qlm_layer {
    const float *attn_norm, *ffn_norm;                /* [n_embd] */
    const float *q_norm, *k_norm;                     /* [head_dim] or NULL */
    const float *attn_post_norm, *ffn_post_norm;      /* [n_embd] or NULL */
    const float *bq, *bk, *bv;                        /* [QD], [KD], [KD] or NULL */
    gl_tensor wq, wk, wv, wo, w_gate, w_up, w_down;
    bool swa;            /* attends to the last n_swa positions only */
    float rope_base, rope_freq_scale;                 /* this layer's RoPE */
} qlm_layer;

typedef struct qlm_model {
    gguf_ctx *gguf;
    qlm_vocab *vocab;
    const qlm_arch *arch;
    char *name;               /* general.name, or the file name */
    qlm_hparams hp;
    gl_tensor tok_embd;       /* [n_vocab][n_embd] */
    gl_tensor output;         /* [n_vocab][n_embd], tok_embd when tied */
    const float *output_norm; /* [n_embd] */
    const float *rope_freqs;  /* [n_rot/2] or NULL */
    const float *rope_long, *rope_short; /* [n_rot/2] longrope factors or NULL:
                                            long when n_ctx > n_ctx_orig */
    qlm_layer *layers;        /* [n_layer] */
    uint8_t *own;             /* the streamed matrices copied out of a mapping (x16 layout where it applies), or NULL */
    size_t own_bytes;
    struct gl_promoter *promoter; /* moving them into huge pages */
    atomic_bool owned_huge;   /* true under --no-mmap: its memory is in huge pages from the start */
    uint16_t *gelu;           /* [GL_GELU_ENTRIES] gl_gelu_table, for a family gating with GELU, else NULL */
} qlm_model;

/* Opens, validates (every tensor present with the right shape and a
 * supported type) and maps the model.  QLM_ELOAD with the reason. */
int qlm_model_load(qlm_model **out, const char *path, qlm_err *err);
/* The same with the load mode of --mmap / --no-mmap / --mlock. */
int qlm_model_load_mode(qlm_model **out, const char *path, gguf_load_mode mode, qlm_err *err);
void qlm_model_free(qlm_model *m);
/* Waits for the work the model goes on with in the background after its
 * first forward pass (moving its copy of the weights into huge pages,
 * ggml-lite/promote.h): for benchmarks, which time the steady state. */
void qlm_model_settle(qlm_model *m);

typedef struct qlm_batch {
    int n;
    int32_t *token;
    int32_t *pos;
    int32_t *seq;
    int8_t *logits; /* nonzero: produce logits for this entry */
    /* Compute every entry bit for bit as a one-entry batch would (the
     * speculative verify step needs exactly the plain decoding's logits);
     * otherwise a sequence with several entries takes the prefill order. */
    bool one_by_one;
} qlm_batch;

/* Allocates a batch with room for cap entries (n = 0). */
int qlm_batch_init(qlm_batch *b, int cap);
void qlm_batch_free(qlm_batch *b);
static inline void qlm_batch_add(qlm_batch *b, int32_t tok, int32_t pos, int32_t seq, bool logits)
{
    b->token[b->n] = tok;
    b->pos[b->n] = pos;
    b->seq[b->n] = seq;
    b->logits[b->n] = logits;
    b->n++;
}

typedef struct qlm_ctx qlm_ctx;

typedef struct qlm_ctx_params {
    int n_ctx;     /* KV cells; 0: min(4096, n_ctx_train) */
    int n_batch;   /* most tokens per forward pass; 0: 512 */
    int n_threads; /* 0: physical cores */
    qlm_kv_type type_k, type_v; /* KV element types; 0 (QLM_KV_DEFAULT): int8.
                                 * llama.cpp parity needs QLM_KV_F32 */
    bool ctx_shift; /* generation shifts the context instead of stopping when full */
    int n_keep;     /* with ctx_shift: tokens kept at the start (-1: the prompt) */
    int numa;       /* gl_numa_mode: 0 distribute (one node: plain), isolate, off */
    bool unfused;   /* tests: one parallel region per matmul, never decode.c's fused
                     * layers (which must give the same bits) */
} qlm_ctx_params;

int qlm_ctx_new(qlm_ctx **out, const qlm_model *m, const qlm_ctx_params *p, qlm_err *err);
void qlm_ctx_free(qlm_ctx *c);
int qlm_ctx_n_ctx(const qlm_ctx *c);
int qlm_ctx_n_threads(const qlm_ctx *c);
int qlm_ctx_n_batch(const qlm_ctx *c);
qlm_kv *qlm_ctx_kv(qlm_ctx *c);
/* The ctx_shift setting: tokens to keep (-1: the prompt), or -2 when off. */
int qlm_ctx_shift_keep(const qlm_ctx *c);
/* How threads and KV memory were placed, e.g. "distribute over 2 NUMA
 * nodes" or "one NUMA node: plain allocations". */
const char *qlm_ctx_numa(const qlm_ctx *c);

/* Adds delta to the positions of seq's cells in [p0, p1) (p1 < 0: no
 * bound) and re-rotates their keys in place by delta, as if they had been
 * computed at the new positions.  int8/f16 keys are widened, rotated and
 * stored again: one rounding per shift, while attention keeps reading
 * plain rotated keys (storing keys before RoPE would cost a rotation of
 * every key at every step instead).  Returns the number of cells moved. */
int qlm_ctx_seq_shift(qlm_ctx *c, int seq, int32_t p0, int32_t p1, int32_t delta);
/* Context shift of seq, as llama.cpp's: keep positions [0, n_keep), drop
 * half of the rest (the oldest), move the newer half down.  Returns the
 * number of positions dropped (0 when nothing can be). */
int qlm_ctx_context_shift(qlm_ctx *c, int seq, int n_keep);

/* Runs the batch through the model, storing K/V in the cache.  Batches
 * larger than n_batch are split.  QLM_EUSAGE for invalid entries (token
 * out of range, bad sequence id), QLM_ERUNTIME when the cache is full. */
int qlm_decode(qlm_ctx *c, const qlm_batch *b, qlm_err *err);
/* Whether a sequence's tokens get the same bits in a micro-batch of n_b
 * tokens, rows_b of which want logits, as in one of n_a tokens with rows_a
 * (every matmul in the same order at both sizes: gl_matmul_same_order;
 * the fused and unfused layers attend alike), for batches not marked
 * one_by_one; attention and the elementwise work
 * never depend on what else shares the batch.  qlm batch prefills several
 * prompts in one pass where this holds. */
bool qlm_ctx_same_order(const qlm_ctx *c, int n_a, int rows_a, int n_b, int rows_b);
/* Logits [n_vocab] of the i-th batch entry that asked for them (in batch
 * order) in the last qlm_decode call; NULL if out of range. */
const float *qlm_logits(const qlm_ctx *c, int i);

#endif
