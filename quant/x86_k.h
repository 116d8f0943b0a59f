/* x86_k.h - the K-quant kernels of the x86 ISA files, for their tables.
 *
 * x86_avx2_k.c and x86_avx512_k.c are compiled with their own -m flags like
 * x86_avx2.c and x86_avx512.c; these names are how the kernel tables in
 * those files reach them.  Nothing outside quant/'s x86 files includes this.
 * Each function has the contract of its reference in quant/ref.h: dots
 * bit-identical, quantizers byte-identical. */
#ifndef QLM_QT_X86_K_H
#define QLM_QT_X86_K_H

#include <stddef.h>
#include <stdint.h>

#include "types.h"

#if defined(__x86_64__)

void qt_avx2_vec_dot_q2_K_q8_K(int n, float *s, const void *x, const void *y);
void qt_avx2_vec_dot_q3_K_q8_K(int n, float *s, const void *x, const void *y);
void qt_avx2_vec_dot_q4_K_q8_K(int n, float *s, const void *x, const void *y);
void qt_avx2_vec_dot_q5_K_q8_K(int n, float *s, const void *x, const void *y);
void qt_avx2_vec_dot_q6_K_q8_K(int n, float *s, const void *x, const void *y);
void qt_avx2_quantize_q8_K(const float *src, void *dst, int64_t n);
/* The vec_dot_tile of Q8_0, Q5_0, Q4_1 and Q5_1 for AVX2 without VNNI
 * (x86_avx2_tile_q8.c); the columns they cannot take in their own way go
 * to `exact`, the generic tile. */
void qt_avx2_tile_q8_0(int n, float *s, size_t ldo, const void *x, size_t xs, int nr, const void *y, size_t ys,
                       int nc, qt_vec_dot_tile_fn exact);
void qt_avx2_tile_q5_0(int n, float *s, size_t ldo, const void *x, size_t xs, int nr, const void *y, size_t ys,
                       int nc, qt_vec_dot_tile_fn exact);
void qt_avx2_tile_q4_1(int n, float *s, size_t ldo, const void *x, size_t xs, int nr, const void *y, size_t ys,
                       int nc, qt_vec_dot_tile_fn exact);
void qt_avx2_tile_q5_1(int n, float *s, size_t ldo, const void *x, size_t xs, int nr, const void *y, size_t ys,
                       int nc, qt_vec_dot_tile_fn exact);

void qt_avx512_vec_dot_q6_K_q8_K(int n, float *s, const void *x, const void *y);
void qt_avx512_quantize_q8_K(const float *src, void *dst, int64_t n);
void qt_avx512_vec_dot_tile_q6_K_q8_K(int n, float *s, size_t ldo, const void *x, size_t xs, int nr, const void *y,
                                      size_t ys, int nc);
void qt_avx512_vec_dot_tile_q4_K_q8_K(int n, float *s, size_t ldo, const void *x, size_t xs, int nr, const void *y,
                                      size_t ys, int nc);
void qt_avx512_vec_dot_tile_q2_K_q8_K(int n, float *s, size_t ldo, const void *x, size_t xs, int nr, const void *y,
                                      size_t ys, int nc);
void qt_avx512_vec_dot_tile_q3_K_q8_K(int n, float *s, size_t ldo, const void *x, size_t xs, int nr, const void *y,
                                      size_t ys, int nc);
void qt_avx512_vec_dot_tile_q5_K_q8_K(int n, float *s, size_t ldo, const void *x, size_t xs, int nr, const void *y,
                                      size_t ys, int nc);
/* The same with AVX512-VNNI (vpdpwssd). */
void qt_avx512_vnni_vec_dot_tile_q6_K_q8_K(int n, float *s, size_t ldo, const void *x, size_t xs, int nr,
                                           const void *y, size_t ys, int nc);
void qt_avx512_vnni_vec_dot_tile_q2_K_q8_K(int n, float *s, size_t ldo, const void *x, size_t xs, int nr,
                                           const void *y, size_t ys, int nc);
void qt_avx512_vnni_vec_dot_tile_q3_K_q8_K(int n, float *s, size_t ldo, const void *x, size_t xs, int nr,
                                           const void *y, size_t ys, int nc);
void qt_avx512_vnni_vec_dot_tile_q4_K_q8_K(int n, float *s, size_t ldo, const void *x, size_t xs, int nr,
                                           const void *y, size_t ys, int nc);
void qt_avx512_vnni_vec_dot_tile_q5_K_q8_K(int n, float *s, size_t ldo, const void *x, size_t xs, int nr,
                                           const void *y, size_t ys, int nc);

#endif

#endif
