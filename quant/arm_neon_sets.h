/* arm_neon_sets.h - what quant/arm_neon.c shares with quant/arm_neon_dotprod.c.
 *
 * The two NEON kernel sets differ only in how they form the integer lanes
 * of a dot product (vmull/vpaddl, or sdot); their byte-dot kernels come
 * from one body, quant/arm_neon_dot.inc, compiled once per file, and the
 * kernels without byte products (Q8 quantizers, float dots) live once in
 * arm_neon.c and are named here for the dotprod table.  Nothing outside
 * quant/'s NEON files includes this.  Each function has the contract of its
 * reference in quant/ref.h: quantizers byte-identical, quantized dots
 * bit-identical, float dots within float rounding of the double sums. */
#ifndef QLM_QT_ARM_NEON_SETS_H
#define QLM_QT_ARM_NEON_SETS_H

#include <stdint.h>

#if defined(__aarch64__)

void qt_neon_vec_dot_f32(int n, float *s, const void *x, const void *y);
void qt_neon_vec_dot_f16(int n, float *s, const void *x, const void *y);
void qt_neon_vec_dot_bf16(int n, float *s, const void *x, const void *y);

void qt_neon_from_float_q8_0(const float *src, void *dst, int64_t n);
void qt_neon_from_float_q8_1(const float *src, void *dst, int64_t n);
void qt_neon_quantize_act_q8_0(const float *src, void *dst, int64_t n);
void qt_neon_quantize_act_q8_1(const float *src, void *dst, int64_t n);
void qt_neon_quantize_q8_K(const float *src, void *dst, int64_t n);

#endif

#endif
