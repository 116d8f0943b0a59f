/* ops.h - the float ops of a transformer forward pass.
 *
 * Buffers are row-major [n_tokens][dim] float arrays.  Numerics follow
 * ggml's CPU ops where it matters for matching llama.cpp token for token:
 * float squares summed in double, RoPE angles advanced by repeated
 * multiplication with FMAs where ggml's compiler put them, SwiGLU through
 * ggml's vector exp.  The softmax and f32 dots are in vec.h. */
#ifndef QLM_GL_OPS_H
#define QLM_GL_OPS_H

#include <stdint.h>

#include "ggml-lite/tensor.h"

/* Calls of these ops over at most GL_OPS_SERIAL elements reach no
 * parallel construct (a caller's own parallel region may make them). */
#define GL_OPS_SERIAL 65535

/* out[t] = x[t] / rms(x[t]) * w, for n_tokens rows of n. out may be x.
 * Up to GL_RMSNORM_ROWS rows' sums are chains side by side: a call with
 * that many rows costs about what one row's does. */
#define GL_RMSNORM_ROWS 8
void gl_rmsnorm(float *out, const float *x, const float *w, int n_tokens, int n, float eps);
/* x[t] += y[t] (each sum rounded to float, as gl_add), then y[t] =
 * rmsnorm(x[t]) * w as gl_rmsnorm: a residual add and the next norm in
 * one pass over the rows, the same bits as the two calls. */
void gl_add_rmsnorm(float *x, float *y, const float *w, int n_tokens, int n, float eps);

/* Rotary position embedding in place over n_tokens rows of n_head heads of
 * head_dim, rotating the first n_rot dims of each head.
 * neox=false: pairs (2i, 2i+1) (llama); neox=true: pairs (i, i+n_rot/2).
 * freq_factors (n_rot/2 entries, may be NULL) divide each pair's angle. */
#define GL_ROPE_MAX_DIM 1024 /* n_rot limit; loaders reject larger */
typedef struct gl_rope {
    int n_rot;
    float freq_base;
    float freq_scale;          /* 1/linear scaling factor */
    const float *freq_factors;
    int neox;
    float mscale;              /* cos and sin multiplied by it (1: plain) */
} gl_rope;
void gl_rope_apply(float *x, const int32_t *pos, int n_tokens, int n_head, int head_dim,
                   const gl_rope *r);
/* One token's Q (n_head heads) and K (n_head_kv heads) at position pos,
 * as two gl_rope_apply calls would, the angles worked out once; serial. */
void gl_rope_apply_qk(float *q, int n_head, float *k, int n_head_kv, int32_t pos, int head_dim, const gl_rope *r);

/* x[i] = silu(g[i]) * u[i], in place into g. */
void gl_swiglu(float *g, const float *u, int64_t n);

/* gelu's tanh approximation of every half value h, rounded to fp16 as
 * ggml's CPU build tabulates it: tab[bits of h], GL_GELU_ENTRIES of them
 * (128 KiB; a model whose family gates with GELU keeps one). */
#define GL_GELU_ENTRIES 65536
void gl_gelu_table(uint16_t *tab);

/* g[i] = gelu(g[i]) * u[i] in place, as ggml's CPU GeGLU rounds it: 0 for
 * g <= -10, g above 10, else tab's entry for g rounded to fp16 (tab from
 * gl_gelu_table).  Split among the OpenMP threads when large. */
void gl_geglu(float *g, const float *u, int64_t n, const uint16_t *tab);

/* x[i] *= s */
void gl_scale(float *x, float s, int64_t n);

/* x[i] = cap * tanh(x[i] / cap): final-logit soft-capping. */
void gl_softcap(float *x, float cap, int64_t n);

/* x[t][i] += b[i] for n_tokens rows of n. */
void gl_add_bias(float *x, const float *b, int n_tokens, int n);

/* y[i] += x[i] */
void gl_add(float *y, const float *x, int64_t n);

/* Row r of an embedding table, dequantized to f32 (n = ne[0] floats). */
int gl_get_row(const gl_tensor *t, int64_t r, float *out);

#endif
