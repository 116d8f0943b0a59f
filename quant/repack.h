/* repack.h - llama.cpp's "repacked" matmul orders, for weight types it
 * interleaves at load on x86 CPUs with AVX2.
 *
 * llama.cpp (ggml-cpu/repack.cpp, ggml_repack_get_optimal_repack_type)
 * repacks a 2-D Q4_0 weight with ne[1] % 8 == 0 into block_q4_0x8 on any
 * CPU with AVX2 and then computes its matmuls with ggml_gemv_q4_0_8x8_q8_0
 * (one activation column) and ggml_gemm_q4_0_8x8_q8_0 (four columns at a
 * time; a batch of n columns runs gemm on the first n - n % 4 and gemv on
 * the rest).  Those kernels give every output element its own float lane:
 *
 *     acc = 0;  for each block b:  acc = fma((float)isum_b, dw_b * dy_b, acc)
 *
 * where isum_b is the exact integer dot product of the block's 32 quants and
 * dw_b * dy_b is rounded once: no 8-lane split, no horizontal sum, which is
 * a different float order from vec_dot's (quant/ref.c).
 *
 * qlm's definition: a matmul over a weight that llama.cpp-on-AVX2 repacks
 * (qt_repack_applies) uses this order on EVERY CPU, scalar included, so the
 * bits depend on the model only.  The activations are quantized with the
 * usual quantize_act: ggml_quantize_mat_q8_0_4x8, which the gemm path uses,
 * rounds exactly as quantize_row_q8_0 does (127/amax, ties to even).
 *
 * Not matched: activation bytes of -128, which llama.cpp's sign trick
 * multiplies wrongly and which its quantizers never produce; this code
 * computes exact products there.
 *
 * The kernels read qlm's ordinary row-major blocks; interleaving the memory
 * is a possible speed-up, not needed for the bits. */
#ifndef QLM_QT_REPACK_H
#define QLM_QT_REPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "types.h"

/* Rows of weights handled together, and activation columns per gemm call. */
#define QT_RP_ROWS 8
#define QT_RP_COLS 4

/* s[r] = W[r] . y for r < 8: w points at row 0 of a group of 8 rows,
 * w_stride bytes apart; y is one quantized activation row (n elements). */
typedef void (*qt_rp_gemv_fn)(int n, float *s, const void *w, size_t w_stride, const void *y);
/* s[c * ldo + r] = W[r] . y_c for r < 8, c < 4; y_c at y + c * y_stride. */
typedef void (*qt_rp_gemm_fn)(int n, float *s, size_t ldo, const void *w, size_t w_stride,
                              const void *y, size_t y_stride);

typedef struct qt_repack_ops {
    const char *name;
    qt_rp_gemv_fn gemv[QT_COUNT]; /* by weight type; NULL: not repacked */
    qt_rp_gemm_fn gemm[QT_COUNT];
} qt_repack_ops;

/* Whether llama.cpp on an AVX2 CPU repacks a 2-D weight of this type with
 * `rows` rows (ne[1]), i.e. whether qlm uses the orders above for it. */
bool qt_repack_applies(qt_type type, int64_t rows);

/* The reference (scalar) set and the one chosen for this CPU (QLM_ISA caps
 * it as it does the other kernels). */
const qt_repack_ops *qt_repack_ref(void);
const qt_repack_ops *qt_repack(void);

#if defined(__x86_64__)
extern const qt_repack_ops qt_repack_avx2;
#endif

#endif
