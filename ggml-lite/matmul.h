/* matmul.h - quantized weights times float activations.
 *
 * The activations are first quantized to the weight type's paired
 * activation type (Q4_0 weights take Q8_0 activations, ...), then each
 * output element is an integer-heavy dot product in the float order
 * llama.cpp's x86 build uses for that weight and batch size: vec_dot's, or
 * its repacked (quant/repack.h), tiled or tinyBLAS one (quant/tiled.h;
 * F32, F16 and BF16 weights take activations rounded to their own type,
 * and tinyBLAS's float order from 2 tokens on: quant/fgemm.h). */
#ifndef QLM_GL_MATMUL_H
#define QLM_GL_MATMUL_H

#include <stdbool.h>
#include <stddef.h>

#include "ggml-lite/tensor.h"
#include "ggml-lite/threads.h"

/* Bytes of scratch gl_matmul needs for n_tokens activation rows. */
size_t gl_matmul_scratch(const gl_tensor *w, int n_tokens);

/* y[t][r] = W[r] . x[t] for t < n_tokens, r < ne[1].
 * x is [n_tokens][ne[0]], y is [n_tokens][ne[1]]; scratch holds at least
 * gl_matmul_scratch() bytes.  Returns -1 if the type has no dot product. */
int gl_matmul(const gl_tensor *w, const float *x, float *y, int n_tokens, void *scratch);
/* y[i] = w[i] . x for n_w weights that take the same input x (Q, K and V;
 * gate and up): where gl_matmul would give each the tile kernels, x is
 * quantized and packed once for all of them and their rows are shared
 * out together; else, where they read one activation type, x is
 * quantized once and each weight takes its own route; otherwise one
 * gl_matmul each.  Bit for bit gl_matmul's; scratch holds the largest
 * gl_matmul_scratch() of them. */
int gl_matmul_shared(int n_w, const gl_tensor *const w[], const float *x, float *const y[], int n_tokens,
                     void *scratch);
/* g = act(gate . x) * (up . x), a gated feed-forward's first half for
 * n_tokens rows of x: act is GELU by gl_geglu's table (gelu_tab), or SiLU
 * (NULL).  Where both weights take the wide kernels (quant/repack.h) for
 * all their rows, one pass, each 16-row group's two results meeting in
 * cache; otherwise gl_matmul_shared into g and u, then the gate.  Bit for
 * bit the latter; u is clobbered; scratch as for gl_matmul_shared. */
int gl_matmul_glu(const gl_tensor *gate, const gl_tensor *up, const float *x, float *g, float *u, int n_tokens,
                  void *scratch, const uint16_t *gelu_tab);
/* The same with every token's outputs bit for bit those of a one-token
 * call: the batch orders (repacked gemm, tiled, tinyBLAS) sum in another
 * order than the one-token kernels, and speculative verification needs
 * the one-token bits.  Weights are still read once per row (group) for
 * all tokens. */
int gl_matmul_each(const gl_tensor *w, const float *x, float *y, int n_tokens, void *scratch);
/* Whether gl_matmul gives a token's outputs the same bits in a call of
 * n_a tokens as in one of n_b, wherever the token sits in either: the
 * weight takes the same order at both sizes (vec_dot's, tiled or
 * tinyBLAS; each output's order depends on nothing else), and not the
 * repacked one, whose gemm takes tokens in fours by their place in the
 * batch.  Callers that merge separate batches into one (qlm batch's
 * prompts) check it for every weight. */
bool gl_matmul_same_order(const gl_tensor *w, int n_a, int n_b);

/* For callers that run their own parallel region around several matmuls
 * and the elementwise work between them (batched decoding: one region
 * per forward pass instead of one per matmul and serial work between).
 *
 * gl_matmul_plain: whether gl_matmul (gl_matmul_each when `each`) would
 * compute every output of w for n_tokens tokens with the weight's vec_dot
 * (no repacked, tiled or tinyBLAS order); if so *act tells how to
 * quantize one token's activations for it.  Weights whose act types are
 * equal take the same quantized rows. */
#include <stdbool.h>

#include "quant/types.h"

typedef struct gl_act {
    qt_type type;                 /* the activation type w pairs with */
    qt_from_float_fn quantize;    /* one row of ne[0] floats to that type */
    size_t row_bytes;             /* bytes of one quantized row */
    /* the row is the type's blocks alone, each quantized on its own: a
     * range of whole blocks may be quantized by itself, to its place at
     * qt_row_size(type, first element) */
    bool by_blocks;
} gl_act;
bool gl_matmul_plain(const gl_tensor *w, int n_tokens, bool each, gl_act *act);
/* y[i][t][r] = w[i][r] . xq[t] for every weight i, the row blocks of all
 * of them shared out among the threads together; xq holds n_tokens rows
 * of xq_row bytes, quantized as gl_matmul_plain said (the same act for
 * every w[i]).  Must be called by every thread of the enclosing parallel
 * region: up to 8 tokens (batched decoding) they take guided chunks as
 * they come, more take static shares; no barrier at the end (the caller
 * waits before it reads y).  Outputs are bit for bit gl_matmul's,
 * whoever computes which row. */
void gl_matmul_rows(int n_w, const gl_tensor *const w[], float *const y[], const void *xq, size_t xq_row,
                    int n_tokens);
/* Rows [r0, r0 + n) of gl_matmul_rows's product for one weight, on the
 * calling thread alone (no worksharing, no barrier): for a caller that
 * shares out rows itself and works on them before the other rows are
 * done.  Bit for bit gl_matmul's. */
void gl_matmul_rows_range(const gl_tensor *w, float *y, const void *xq, size_t xq_row, int n_tokens, int64_t r0,
                          int64_t n);
/* What the calling thread of the region will read first in
 * gl_matmul_rows / gl_matmul_rows_range with these arguments: for
 * gl_barrier_wait_pf at the barrier before. */
gl_prefetch gl_matmul_rows_next(int n_w, const gl_tensor *const w[], int n_tokens);
gl_prefetch gl_matmul_rows_range_next(const gl_tensor *w, int64_t r0, int64_t n);

#endif
