/* ref.h - the scalar reference kernels (quant/ref.c), internal to quant/.
 *
 * They are the source of truth: ISA kernels are tested against them and the
 * traits table falls back to them.  Signatures match the function types in
 * types.h.  n counts elements and must be a multiple of the block size. */
#ifndef QLM_QT_REF_H
#define QLM_QT_REF_H

#include <math.h>
#include <stdint.h>

#include "types.h"

/* The signed value of the largest magnitude in a block, as ggml's
 * quantizers find it; the first of equal magnitudes wins, so -5 before +5
 * gives -5.  The signed value matters: the _0 formats map it to the end of
 * the range with exact representation.  Starting from +0 as ggml does, a
 * block of zeros gives d = 0 / -8 = -0 (f16 0x8000) whatever the zeros'
 * signs; gguf-py takes the first zero itself and gets +0 when that one is
 * -0.  Its magnitude is the block's largest (0 for zeros; NaNs never win). */
static inline float qt_signed_absmax(const float *x, int n)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++) {
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    return max;
}

void qt_to_float_f32(const void *src, float *dst, int64_t n);
void qt_to_float_f16(const void *src, float *dst, int64_t n);
void qt_to_float_bf16(const void *src, float *dst, int64_t n);
void qt_to_float_q4_0(const void *src, float *dst, int64_t n);
void qt_to_float_q4_1(const void *src, float *dst, int64_t n);
void qt_to_float_q5_0(const void *src, float *dst, int64_t n);
void qt_to_float_q5_1(const void *src, float *dst, int64_t n);
void qt_to_float_q8_0(const void *src, float *dst, int64_t n);
void qt_to_float_q8_1(const void *src, float *dst, int64_t n);

void qt_from_float_f32(const float *src, void *dst, int64_t n);
void qt_from_float_f16(const float *src, void *dst, int64_t n);
void qt_from_float_bf16(const float *src, void *dst, int64_t n);
void qt_from_float_q4_0(const float *src, void *dst, int64_t n);
void qt_from_float_q4_1(const float *src, void *dst, int64_t n);
void qt_from_float_q5_0(const float *src, void *dst, int64_t n);
void qt_from_float_q5_1(const float *src, void *dst, int64_t n);
void qt_from_float_q8_0(const float *src, void *dst, int64_t n);
void qt_from_float_q8_1(const float *src, void *dst, int64_t n);

void qt_vec_dot_f32_f32(int n, float *s, const void *x, const void *y);
void qt_vec_dot_f16_f16(int n, float *s, const void *x, const void *y);
void qt_vec_dot_bf16_bf16(int n, float *s, const void *x, const void *y);
void qt_vec_dot_q4_0_q8_0(int n, float *s, const void *x, const void *y);
void qt_vec_dot_q4_1_q8_1(int n, float *s, const void *x, const void *y);
void qt_vec_dot_q5_0_q8_0(int n, float *s, const void *x, const void *y);
void qt_vec_dot_q5_1_q8_1(int n, float *s, const void *x, const void *y);
void qt_vec_dot_q8_0_q8_0(int n, float *s, const void *x, const void *y);

/* K-quants (quant/ref_k.c): ggml's reference quantizers byte for byte,
 * its dequantizers bit for bit, and dots with Q8_K in llama.cpp's AVX2
 * order.  Q8_K's quantize_act is its from_float: llama.cpp's x86 build
 * quantizes K-quant activations with the reference itself. */
void qt_to_float_q2_K(const void *src, float *dst, int64_t n);
void qt_to_float_q3_K(const void *src, float *dst, int64_t n);
void qt_to_float_q4_K(const void *src, float *dst, int64_t n);
void qt_to_float_q5_K(const void *src, float *dst, int64_t n);
void qt_to_float_q6_K(const void *src, float *dst, int64_t n);
void qt_to_float_q8_K(const void *src, float *dst, int64_t n);

void qt_from_float_q2_K(const float *src, void *dst, int64_t n);
void qt_from_float_q3_K(const float *src, void *dst, int64_t n);
void qt_from_float_q4_K(const float *src, void *dst, int64_t n);
void qt_from_float_q5_K(const float *src, void *dst, int64_t n);
void qt_from_float_q6_K(const float *src, void *dst, int64_t n);
void qt_from_float_q8_K(const float *src, void *dst, int64_t n);
void qt_quantize_act_q8_K(const float *src, void *dst, int64_t n);

void qt_vec_dot_q2_K_q8_K(int n, float *s, const void *x, const void *y);
void qt_vec_dot_q3_K_q8_K(int n, float *s, const void *x, const void *y);
void qt_vec_dot_q4_K_q8_K(int n, float *s, const void *x, const void *y);
void qt_vec_dot_q5_K_q8_K(int n, float *s, const void *x, const void *y);
void qt_vec_dot_q6_K_q8_K(int n, float *s, const void *x, const void *y);

/* IQ4_NL (quant/ref_iq4.c): ggml's quantizer byte for byte, dequantization, and dots with Q8_0 in
 * llama.cpp's x86 vec_dot order and in its tinyBLAS order (2+ columns). */
extern const int8_t qt_iq4nl_values[16];
void qt_to_float_iq4_nl(const void *src, float *dst, int64_t n);
void qt_from_float_iq4_nl(const float *src, void *dst, int64_t n);
void qt_vec_dot_iq4_nl_q8_0(int n, float *s, const void *x, const void *y);
void qt_tinyblas_dot_iq4_nl_q8_0(int n, float *s, const void *x, const void *y);

/* Activation quantizers with llama.cpp's x86 rounding (see ref.c). */
void qt_quantize_act_q8_0(const float *src, void *dst, int64_t n);
void qt_quantize_act_q8_1(const float *src, void *dst, int64_t n);
/* ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)): the x86 8-lane horizontal sum. */
float qt_hsum8(const float a[8]);

#endif
