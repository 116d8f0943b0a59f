/* x86_avx2_fgemm.c - fgemm.h's kernel with AVX2 + FMA + F16C: float
 * weights times activation columns in tinyBLAS's 16-lane order.
 *
 * Compiled with -mavx2 -mfma -mf16c; reached through qt_fgemm().
 *
 * An output's 16 lanes are two independent halves until the final
 * qt_reduce16 (lanes 0-7 see elements 16j..16j+7, lanes 8-15 the rest),
 * so a tile of 4 rows by 3 columns runs in two passes of one 8-lane
 * register per output: 12 accumulators, the 3 columns' 8 activations and
 * one row's weights fill the 16 registers, 12 FMAs per 4 weight and 3
 * activation loads.  Columns are widened to floats once per chunk of
 * elements and read from L1 by every row tile; weights are widened as
 * they are loaded (a vcvtph2ps from memory does not take an FMA pipe on
 * Zen 3).  The sums wait in memory between passes and chunks.  Every
 * output takes exactly the reference's FMAs in its order, so the bits
 * are qt_fgemm_dot's. */
#if defined(__x86_64__)

#include <immintrin.h>
#include <stdalign.h>

#include "fgemm.h"
#include "x86_avx2_exp.h"

#define INLINE static inline __attribute__((always_inline))

enum {
    RM = 4,        /* rows of a tile */
    RN = 3,        /* columns of a tile */
    MAX_ROWS = 32, /* rows of a pass: 8 tiles */
    MAX_COLS = 24, /* columns of a pass: 8 tiles, whose sums (48 KB) wait between chunks */
    /* a chunk of the pass's rows: 1024 elements of F16 and BF16, 512 of
     * F32.  Measured alone on a Zen 3, 5632 x 2048 and 2048 x 5632 F16
     * weights by 128 columns, GMAC/s: 16 KB chunks and 30-column passes
     * 35-37, 32 KB and 12 columns 38-39, 64 KB and 24 columns 38-40,
     * 128 KB (the whole 2048-element rows) 30-31 */
    CHUNK_BYTES = 64 << 10
};

/* 8 elements of a row of `type` at element i, widened exactly. */
INLINE __m256 load8(const int type, const uint8_t *row, int64_t i)
{
    if (type == QT_F16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + 2 * i)));
    if (type == QT_BF16)
        return _mm256_castsi256_ps(
            _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(row + 2 * i))), 16));
    return _mm256_loadu_ps((const float *)(row + 4 * i));
}
/* Elements [k0, k0 + kc) of `rn` columns as floats, column j at b + j * kc. */
INLINE void widen_cols(const int type, const uint8_t *y, size_t y_stride, int rn, int64_t k0, int kc, float *b)
{
    for (int j = 0; j < rn; j++)
        for (int k = 0; k < kc; k += 8)
            _mm256_store_ps(b + j * kc + k, load8(type, y + (size_t)j * y_stride, k0 + k));
}
/* One chunk of a 4-row tile by rn columns, both passes (h: lanes
 * 8h..8h+7) in turn: acc (2 x 12 vectors, [h][r][j]) in and out of
 * memory; a: row 0 of the tile, its weights widened as they are loaded
 * (at the chunk's first element k0); b: the columns' chunk. */
INLINE void tile_chunk(const int type, const int rn, const uint8_t *a, size_t a_stride, int64_t k0, const float *b,
                       int kc, __m256 *acc)
{
    for (int h = 0; h < 2; h++) {
        __m256 c[RM][RN];
#pragma GCC unroll 4
        for (int r = 0; r < RM; r++)
#pragma GCC unroll 3
            for (int j = 0; j < rn; j++) c[r][j] = acc[(h * RM + r) * RN + j];
        for (int k = 8 * h; k < kc; k += 16) {
            __m256 bv[RN];
#pragma GCC unroll 3
            for (int j = 0; j < rn; j++) bv[j] = _mm256_load_ps(b + j * kc + k);
#pragma GCC unroll 4
            for (int r = 0; r < RM; r++) {
                const __m256 av = load8(type, a + (size_t)r * a_stride, k0 + k);
#pragma GCC unroll 3
                for (int j = 0; j < rn; j++) c[r][j] = _mm256_fmadd_ps(av, bv[j], c[r][j]);
            }
        }
#pragma GCC unroll 4
        for (int r = 0; r < RM; r++)
#pragma GCC unroll 3
            for (int j = 0; j < rn; j++) acc[(h * RM + r) * RN + j] = c[r][j];
    }
}
/* A pass: ncols (<= MAX_COLS) columns of y against nrows (<= MAX_ROWS, a
 * multiple of 4) rows of w, a chunk of elements at a time: each column
 * tile's chunk is widened once for the pass's row tiles, and the chunk's
 * weights (in L2) meet every column tile in turn; the tiles' sums wait in
 * acc between chunks. */
INLINE void pass(const int type, int n, const uint8_t *w, size_t w_stride, int nrows, const uint8_t *y, size_t y_stride,
                 int ncols, float *out, size_t ldo)
{
    enum { TILES = MAX_ROWS / RM, CTILES = MAX_COLS / RN, ACC = 2 * RM * RN };
    alignas(32) __m256 acc[TILES][CTILES][ACC];
    const int es = type == QT_F32 ? 4 : 2, kc_max = CHUNK_BYTES / (MAX_ROWS * es);
    alignas(32) float b[RN * (CHUNK_BYTES / (MAX_ROWS * 2))];
    const int tiles = nrows / RM, ctiles = (ncols + RN - 1) / RN;
    for (int t = 0; t < tiles; t++)
        for (int c = 0; c < ctiles; c++)
            for (int i = 0; i < ACC; i++) acc[t][c][i] = _mm256_setzero_ps();
    for (int64_t k0 = 0; k0 < n; k0 += kc_max) {
        const int kc = n - k0 < kc_max ? (int)(n - k0) : kc_max;
        for (int c = 0; c < ctiles; c++) {
            const int rn = ncols - RN * c < RN ? ncols - RN * c : RN;
            const uint8_t *yc = y + (size_t)(RN * c) * y_stride;
            widen_cols(type, yc, y_stride, rn, k0, kc, b);
            for (int t = 0; t < tiles; t++) {
                const uint8_t *a = w + (size_t)(RM * t) * w_stride;
                if (rn == RN) tile_chunk(type, RN, a, w_stride, k0, b, kc, acc[t][c]);
                else if (rn == 2) tile_chunk(type, 2, a, w_stride, k0, b, kc, acc[t][c]);
                else tile_chunk(type, 1, a, w_stride, k0, b, kc, acc[t][c]);
            }
        }
    }
    for (int t = 0; t < tiles; t++)
        for (int c = 0; c < ctiles; c++)
            for (int j = 0; j < RN && RN * c + j < ncols; j++)
                for (int r = 0; r < RM; r++)
                    out[(size_t)(RN * c + j) * ldo + (size_t)(RM * t + r)] =
                        qt_reduce16v8(acc[t][c][r * RN + j], acc[t][c][(RM + r) * RN + j]);
}
/* Passes over the call's rows and columns. */
INLINE void run(const int type, int n, const uint8_t *w, size_t w_stride, int nrows, const uint8_t *y,
                size_t y_stride, int ncols, float *out, size_t ldo)
{
    for (int r0 = 0; r0 < nrows; r0 += MAX_ROWS)
        for (int c0 = 0; c0 < ncols; c0 += MAX_COLS)
            pass(type, n, w + (size_t)r0 * w_stride, w_stride, nrows - r0 < MAX_ROWS ? nrows - r0 : MAX_ROWS,
                 y + (size_t)c0 * y_stride, y_stride, ncols - c0 < MAX_COLS ? ncols - c0 : MAX_COLS,
                 out + (size_t)c0 * ldo + r0, ldo);
}
void qt_avx2_fgemm(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *y, size_t y_stride,
                   int ncols, float *out, size_t ldo)
{
    switch (type) {
    case QT_F16: run(QT_F16, n, w, w_stride, nrows, y, y_stride, ncols, out, ldo); break;
    case QT_BF16: run(QT_BF16, n, w, w_stride, nrows, y, y_stride, ncols, out, ldo); break;
    default: run(QT_F32, n, w, w_stride, nrows, y, y_stride, ncols, out, ldo); break;
    }
}

#endif
