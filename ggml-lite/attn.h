/* attn.h - one query head's attention over KV rows in their stored type.
 *
 * The caller lists the rows the query sees in rank order (idx, or the
 * first n rows when idx is NULL); scores, softmax and p.v then depend on
 * rank only, so a sequence's result does not depend on where its cells
 * sit in the cache or on what other sequences share it.
 *
 * f32 rows take llama.cpp's float order (vec.h): ggml's dot for q.k, its
 * softmax over a window padded as its cache pads it, and p.v in the
 * tinyBLAS or vec_dot lane order.  int8 rows: q is quantized once to int8
 * with its own scale and q.k is an integer dot per row; p.v widens each V
 * row in registers (never the whole cache).  f16 rows: F16C widening. */
#ifndef QLM_GL_ATTN_H
#define QLM_GL_ATTN_H

#include <stddef.h>
#include <stdint.h>

typedef enum gl_kv_elem { GL_KV_F32, GL_KV_F16, GL_KV_I8 } gl_kv_elem;

/* One head's column of the cache: row r starts at data + r * ld elements;
 * int8 rows have their scale at scale[r * lds]. */
typedef struct gl_kv_view {
    gl_kv_elem type;
    const void *data;
    int64_t ld;
    const float *scale;
    int64_t lds;
} gl_kv_view;

typedef struct gl_attn_scratch {
    float *s;      /* >= max(1, n_win) windows (gl_attn_window of the cache size) of floats */
    int n_win;     /* 0 or 1: s holds one window; gl_attn_group takes up to n_win heads in it */
    int8_t *q8;    /* >= head_dim */
    float *vrows;  /* f32 V with idx: >= n * head_dim floats, else unused */
} gl_attn_scratch;

/* The softmax window for n visible rows in a cache of n_ctx cells: f32
 * keeps llama.cpp's (the used range padded to 256, capped at n_ctx). */
int gl_attn_window(gl_kv_elem k_type, int n, int n_ctx);

/* Rows the query may not see although they are listed (a sliding
 * window): row r is masked when row_pos[r] < min_pos, r being the row's
 * index in the cache (idx[rank], or the rank when idx is NULL).  Masked
 * rows keep their rank and weigh exactly zero, as in llama.cpp's masked
 * window, so the float order does not change.  row_pos NULL: no mask. */
typedef struct gl_attn_mask {
    const int32_t *row_pos;
    int32_t min_pos;
} gl_attn_mask;

/* out[0..d) = softmax(scale * q.K) . V over the n rows.  tiled selects
 * the tinyBLAS p.v order for f32 V (several tokens of one sequence at
 * once, as llama.cpp's batched matmul), else ggml's vec_dot order. */
void gl_attn_head(int d, const float *q, float scale, const gl_kv_view *k, const gl_kv_view *v,
                  int n, const int32_t *idx, const gl_attn_mask *mask, int n_ctx, int tiled,
                  gl_attn_scratch *sc, float *out);

/* Whether gl_attn_group takes several heads over these views at once:
 * int8 K and V, 64-wide heads, and kernels for it on this CPU. */
int gl_attn_group_applies(int d, const gl_kv_view *k, const gl_kv_view *v);

/* gl_attn_head for n_q query heads that share k and v (q and out hold
 * them d floats apart), over n rows (idx as gl_attn_head's; no mask),
 * with bits identical to n_q calls of it: each K and V row is read and
 * rearranged once for all of them (the heads of one KV head, for a
 * prompt's token or a batched decoding step's).  Uses sc->s when n_q
 * windows fit in its sc->n_win cache windows, else allocates (so a
 * decoding step's caller sizes the scratch); if that fails, goes head
 * by head. */
void gl_attn_group(int d, int n_q, const float *q, float scale, const gl_kv_view *k, const gl_kv_view *v, int n,
                   const int32_t *idx, int n_ctx, gl_attn_scratch *sc, float *out);

/* A prompt's causal attention for a block of n_tok tokens of one KV head:
 * token j's query heads i < n_q (q + j * ldq + i * d) see cache rows
 * 0..n[j]-1 (n[j] >= 1), and out + j * ldo + i * d gets that query's
 * attention over those rows, with each K and V row read and rearranged
 * once for all the block's queries that see it.  The scores are
 * gl_attn_head's bit for bit; softmax and p.v are fused in integer steps
 * (quant/kv_ops.h's pv_i8_causal: weights to about 15 bits), so results
 * differ from gl_attn_head's in the last bits, but a query's depends on
 * its own rows alone, never on the block.  For views
 * gl_attn_prompt_applies to, with n_tok * n_q <= GL_ATTN_PROMPT_MAXQ;
 * work holds gl_attn_prompt_work(n_tok * n_q, max n[j]) floats, 64-byte
 * aligned. */
#define GL_ATTN_PROMPT_MAXQ 256
int gl_attn_prompt_applies(int d, const gl_kv_view *k, const gl_kv_view *v);
size_t gl_attn_prompt_work(int nq, int n_max);
void gl_attn_prompt(int d, int n_tok, int n_q, const float *q, int64_t ldq, float scale, const gl_kv_view *k,
                    const gl_kv_view *v, const int *n, float *work, float *out, int64_t ldo);

#endif
