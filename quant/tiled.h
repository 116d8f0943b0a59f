/* tiled.h - llama.cpp's tiled K-quant matmul order, for batches of 8 or
 * more activation columns.
 *
 * llama.cpp (ggml-cpu/tiled/, this version) computes a MUL_MAT whose
 * weight is Q2_K..Q6_K (and not repacked, quant/repack.h) with 8 or more
 * columns through 16x16 integer micro-tiles.  Every output element then
 * takes, per 256-element super-block b,
 *
 *     r   = (float)isum_b * d_w                (isum = Σ scale·q·y, exact)
 *     r   = fma(-dmin_w, (float)imin_b, r)     (types with mins; imin = Σ min·bsum)
 *     acc = fma(r, d_y, acc)                   (acc starts at 0)
 *
 * (its compiler fuses the last multiply-add), which is neither vec_dot's
 * order nor the repacked kernels'.  With fewer than 8 columns it uses
 * vec_dot.  qlm uses the same orders on every CPU. */
#ifndef QLM_QT_TILED_H
#define QLM_QT_TILED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "types.h"

/* Columns from which llama.cpp takes the tiled path. */
#define QT_TILED_MIN_COLS 8

/* Whether a matmul over a weight of this type and `rows` rows with
 * `n_cols` activation columns takes the tiled order. */
bool qt_tiled_applies(qt_type type, int64_t rows, int n_cols);

/* One output element in the tiled order: x is a weight row of `type`, y
 * its Q8_K activation row, n elements.  The scalar definition. */
float qt_tiled_dot(qt_type type, int n, const void *x, const void *y);

/* One super-block unpacked: quants q + bias as unsigned bytes in element
 * order, a scale (and, for types with mins, a min) per 16 elements. */
typedef struct qt_tiled_block {
    uint8_t q[256];
    int16_t sc[16], m[16];
    int bias;
    bool has_min;
    float d, dmin;
} qt_tiled_block;

/* Unpacks the block at x; returns its size in bytes (0: not a K-quant).
 * The _scales form fills all but q, for kernels that unpack the quants
 * their own way. */
size_t qt_tiled_unpack(qt_type type, const void *x, qt_tiled_block *k);
size_t qt_tiled_unpack_scales(qt_type type, const void *x, qt_tiled_block *k);

/* out[c * out_stride] = the tiled-order dot of weight row x with activation
 * row y + c * y_stride, for c < ncols. */
typedef void (*qt_tiled_row_fn)(qt_type type, int n, const void *x, const void *y, size_t y_stride, int ncols,
                                float *out, size_t out_stride);

/* The set for this CPU (QLM_ISA caps it): AVX2 or the reference. */
qt_tiled_row_fn qt_tiled_row(void);
qt_tiled_row_fn qt_tiled_row_ref(void);
#if defined(__x86_64__)
void qt_avx2_tiled_row(qt_type type, int n, const void *x, const void *y, size_t y_stride, int ncols, float *out,
                       size_t out_stride);
#endif

/* The same for 8 weight rows x_stride apart at once: out[c * out_stride
 * + r], r < 8.  NULL where this CPU has no such kernel (then qt_tiled_row
 * per row). */
typedef void (*qt_tiled_rows8_fn)(qt_type type, int n, const void *x, size_t x_stride, const void *y, size_t y_stride,
                                  int ncols, float *out, size_t out_stride);
qt_tiled_rows8_fn qt_tiled_rows8(void);
/* The same for 16 rows (r < 16), or NULL. */
qt_tiled_rows8_fn qt_tiled_rows16(void);
#if defined(__x86_64__)
void qt_avx2_tiled_rows8(qt_type type, int n, const void *x, size_t x_stride, const void *y, size_t y_stride,
                         int ncols, float *out, size_t out_stride);
void qt_avx2_tiled_rows16(qt_type type, int n, const void *x, size_t x_stride, const void *y, size_t y_stride,
                          int ncols, float *out, size_t out_stride);
#endif

/* llama.cpp's tinyBLAS (llamafile_sgemm) takes Q4_0, Q5_0, Q8_0 and IQ4_NL
 * weights that are not repacked when there are 2 or more columns: 8-lane
 * fma accumulation per block, then the 8-lane sum.  That equals vec_dot's
 * order except for IQ4_NL, whose vec_dot splits even and odd blocks: the
 * per-element dot for that case, or NULL where vec_dot's order holds. */
qt_vec_dot_fn qt_tinyblas_dot(qt_type type, int64_t rows, int n_cols);

#endif
