/* vec.h - float vector primitives that round exactly as llama.cpp's x86
 * (AVX-512) build does.
 *
 * Small models are chaotic at the rounding level (see quant/ref.c), so
 * matching llama.cpp token for token means matching its summation order,
 * not just its math.  The kernels behind these are quant/f32ops.h (scalar
 * reference and AVX-512, bit-identical). */
#ifndef QLM_GL_VEC_H
#define QLM_GL_VEC_H

#include <stdint.h>

/* ggml_vec_dot_f32 (AVX-512 order) of contiguous x and y. */
float gl_dot_f32(int n, const float *x, const float *y);

/* out[k] = sum_j p[j] v[j*ldv + k] (k < d, j < n) in the lane order of
 * tinyBLAS (tile16, n % 16 == 0) or of ggml_vec_dot_f32 (n % 64 == 0). */
void gl_pv(int n, int d, const float *v, int64_t ldv, const float *p, float *out, int tile16);

/* ggml_v_expf on 16 values. */
void gl_expf16(const float *x, float *y);

/* ggml_vec_soft_max_f32 after ggml's scale and mask steps: y = exp(x - max)
 * normalised, with 16-wide chunks summed through gl_reduce16 into a double.
 * -INFINITY entries get 0. */
void gl_softmax_ggml(float *x, int n);

#endif
