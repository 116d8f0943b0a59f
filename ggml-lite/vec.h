/* vec.h - float vector primitives that round exactly as llama.cpp's x86
 * (AVX-512) build does.
 *
 * Small models are chaotic at the rounding level (see quant/ref.c), so
 * matching llama.cpp token for token means matching its summation order,
 * not just its math.  Each function names the ggml routine whose order it
 * reproduces; all are plain C, so any CPU gets the same bits. */
#ifndef QLM_GL_VEC_H
#define QLM_GL_VEC_H

#include <stdint.h>

/* _mm512_reduce_add_ps as GCC expands it: halves, then quarters, then
 * ((a0+a2)+(a1+a3)) of the last four. */
float gl_reduce16(const float a[16]);

/* ggml_vec_dot_f32 (AVX-512): four 16-lane FMA accumulators over 64-wide
 * steps, combined (0+2)+(1+3) and reduced; a scalar FMA tail.  x is read
 * with stride xs (elements). */
float gl_dot_f32(int n, const float *x, int64_t xs, const float *y);

/* llamafile's tinyBLAS F32 kernel (AVX-512): one 16-lane FMA accumulator
 * over 16-wide steps, then reduced; n must be a multiple of 16. */
float gl_dot_f32_tile16(int n, const float *x, int64_t xs, const float *y);

/* ggml_v_expf (AVX-512): the vector exp llama.cpp uses in softmax and
 * SiLU, 1.5 ulp, flushing to 0 / inf outside |n| > 192. */
float gl_expf(float x);

/* ggml_vec_soft_max_f32 after ggml's scale and mask steps: y = exp(x - max)
 * normalised, with 16-wide chunks summed through gl_reduce16 into a double.
 * -INFINITY entries get 0. */
void gl_softmax_ggml(float *x, int n);

#endif
