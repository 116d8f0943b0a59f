/* fgemm.h - float weights (F32, F16, BF16) times batches of activation
 * columns, in llama.cpp's tinyBLAS order.
 *
 * llama.cpp computes a MUL_MAT whose weight is F32, F16 or BF16 with 2 or
 * more columns through tinyBLAS (llamafile_sgemm) when the weight's rows
 * are a multiple of 4 and its row length a multiple of the vector width;
 * the activations are first rounded to the weight's type (F16: nearest
 * even; F32 stays).  In its AVX-512 build (the order qlm keeps on every
 * CPU, as for the other float kernels, quant/f32ops.h) every output is
 *
 *     acc[L] = fma(w[i], y[i], acc[L])  for i = 0, 1, ..., n - 1, L = i % 16
 *     out    = qt_reduce16(acc)          (acc starts at 0)
 *
 * which is neither vec_dot's order (4 x 8 lanes over 32-wide steps) nor a
 * sum in double.  One column (decoding, and gl_matmul_each) keeps
 * vec_dot's order, as llama.cpp does. */
#ifndef QLM_QT_FGEMM_H
#define QLM_QT_FGEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "types.h"

/* Lanes of the order: tinyBLAS's vector width in the AVX-512 build. */
#define QT_FGEMM_LANES 16

/* Whether a matmul over a weight of `type`, `rows` rows of n elements,
 * with n_cols activation columns takes the tinyBLAS float order. */
bool qt_fgemm_applies(qt_type type, int64_t rows, int64_t n, int n_cols);

/* One output in that order: weight row x and activation row y, both of
 * `type` (the activation already rounded to it), n a multiple of 16.  The
 * scalar definition. */
float qt_fgemm_dot(qt_type type, int n, const void *x, const void *y);

/* out[c * ldo + r] for rows r < nrows of w (w_stride bytes apart, nrows a
 * multiple of 4) and columns c < ncols of y (y_stride bytes apart), each
 * qt_fgemm_dot of the pair, bit for bit. */
typedef void (*qt_fgemm_fn)(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *y,
                            size_t y_stride, int ncols, float *out, size_t ldo);

/* The kernel for this CPU (QLM_ISA caps it), or the reference's loop. */
qt_fgemm_fn qt_fgemm(void);
qt_fgemm_fn qt_fgemm_ref(void);
#if defined(__x86_64__)
void qt_avx2_fgemm(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *y, size_t y_stride,
                   int ncols, float *out, size_t ldo);
void qt_avx512_fgemm(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *y, size_t y_stride,
                     int ncols, float *out, size_t ldo);
#endif

#endif
