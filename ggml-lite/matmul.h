/* matmul.h - quantized weights times float activations.
 *
 * The activations are first quantized to the weight type's paired
 * activation type (Q4_0 weights take Q8_0 activations, ...), then each
 * output element is an integer-heavy dot product in the float order
 * llama.cpp's x86 build uses for that weight and batch size: vec_dot's, or
 * its repacked (quant/repack.h), tiled or tinyBLAS one (quant/tiled.h). */
#ifndef QLM_GL_MATMUL_H
#define QLM_GL_MATMUL_H

#include <stddef.h>

#include "ggml-lite/tensor.h"

/* Bytes of scratch gl_matmul needs for n_tokens activation rows. */
size_t gl_matmul_scratch(const gl_tensor *w, int n_tokens);

/* y[t][r] = W[r] . x[t] for t < n_tokens, r < ne[1].
 * x is [n_tokens][ne[0]], y is [n_tokens][ne[1]]; scratch holds at least
 * gl_matmul_scratch() bytes.  Returns -1 if the type has no dot product. */
int gl_matmul(const gl_tensor *w, const float *x, float *y, int n_tokens, void *scratch);
/* The same with every token's outputs bit for bit those of a one-token
 * call: the batch orders (repacked gemm, tiled, tinyBLAS) sum in another
 * order than the one-token kernels, and speculative verification needs
 * the one-token bits.  Weights are still read once per row (group) for
 * all tokens. */
int gl_matmul_each(const gl_tensor *w, const float *x, float *y, int n_tokens, void *scratch);

#endif
