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
 * with its own scale and q.k is an integer dot per row; softmax and p.v
 * over int8 V follow quant/kv_ops.h's int8 contract (15-bit weights,
 * exact integer sums), whose result does not depend on how the rows are
 * split or ordered, so one token, a KV head's group, a prompt's block and
 * a long context split across threads all give a query the same bits.
 * f16 rows: F16C widening and ggml's softmax. */
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
 * int8 K and V, heads a multiple of 64 wide up to QT_KV_MULTI_MAXD, and
 * kernels for it on this CPU. */
int gl_attn_group_applies(int d, const gl_kv_view *k, const gl_kv_view *v);

/* gl_attn_head for n_q query heads that share k and v (q and out hold
 * them d floats apart), over n rows (idx as gl_attn_head's; no mask),
 * with bits identical to n_q calls of it: each K and V row is read and
 * rearranged once for all of them (the heads of one KV head, for a
 * decoding step's token or a verified draft's).  Uses sc->s when n_q
 * windows fit in its sc->n_win cache windows, else allocates (so a
 * decoding step's caller sizes the scratch); if that fails, goes head
 * by head. */
void gl_attn_group(int d, int n_q, const float *q, float scale, const gl_kv_view *k, const gl_kv_view *v, int n,
                   const int32_t *idx, int n_ctx, gl_attn_scratch *sc, float *out);

/* Flash-Decoding: gl_attn_group's result (any d; int8 K and V, no
 * mask) in parts over its n rows, so that threads share one token's
 * attention at long context, bit for bit what one call gives:
 *  1. gl_attn_split_scores, for each part's ranks r0..r1-1: the scores
 *     into s (head h at s + h * ld_s + r), the part's largest score per
 *     head into mx[h] and its largest V scale into *vmax;
 *  2. when every part has done step 1, gl_attn_split_sums for each part,
 *     given the largest mx[h] and *vmax over the parts: its exact sums
 *     into acc (n_q x d doubles) and z (n_q);
 *  3. gl_attn_split_out: out (n_q x d) from n_parts parts' sums, ld_part
 *     doubles apart in acc and n_q apart in z. */
#define GL_ATTN_SPLIT_MAXQ 32
int gl_attn_split_applies(int d, int n_q, const gl_kv_view *k, const gl_kv_view *v);
void gl_attn_split_scores(int d, int n_q, const float *q, float scale, const gl_kv_view *k, const gl_kv_view *v,
                          int r0, int r1, const int32_t *idx, float *s, int64_t ld_s, float *mx, float *vmax);
void gl_attn_split_sums(int d, int n_q, const gl_kv_view *v, int r0, int r1, const int32_t *idx, float *s,
                        int64_t ld_s, const float *mx, float vmax, double *acc, double *z);
void gl_attn_split_out(int d, int n_q, int n_parts, const double *acc, int64_t ld_part, const double *z,
                       float vmax, float *out);

/* A prompt's causal attention for a block of n_tok tokens of one KV head:
 * token j's query heads i < n_q (q + j * ldq + i * d) see cache rows
 * 0..n[j]-1 (n[j] >= 1), and out + j * ldo + i * d gets that query's
 * attention over those rows, with each K and V row read and rearranged
 * once for all the block's queries that see it: gl_attn_head's result
 * bit for bit, since a query's depends on its own rows alone, never on
 * the block.  For views
 * gl_attn_prompt_applies to, with n_tok * n_q <= GL_ATTN_PROMPT_MAXQ;
 * work holds gl_attn_prompt_work(d, n_tok * n_q, max n[j]) floats,
 * 64-byte aligned. */
#define GL_ATTN_PROMPT_MAXQ 256
int gl_attn_prompt_applies(int d, const gl_kv_view *k, const gl_kv_view *v);
size_t gl_attn_prompt_work(int d, int nq, int n_max);
void gl_attn_prompt(int d, int n_tok, int n_q, const float *q, int64_t ldq, float scale, const gl_kv_view *k,
                    const gl_kv_view *v, const int *n, float *work, float *out, int64_t ldo);

#endif
