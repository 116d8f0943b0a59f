/* x86_avx2_fgemm.c - fgemm.h's kernel with AVX2 + FMA + F16C: float
 * weights times activation columns in tinyBLAS's 16-lane order.
 *
 * Compiled with -mavx2 -mfma -mf16c; reached through qt_fgemm().
 *
 * An output's 16 lanes are two independent halves until the final
 * qt_reduce16 (lanes 0-7 see elements 16j..16j+7, lanes 8-15 the rest),
 * so a tile of 4 rows by 3 columns runs in two passes of one 8-lane
 * register per output: 12 accumulators, the 3 columns' 8 activations and
 * one row's weights fill the 16 registers, 12 FMAs per 7 loads, both
 * sides widened as they are loaded (vcvtph2ps from memory does not take
 * an FMA pipe on Zen 3, and halves keep twice the elements in L1 that
 * floats would).  Elements go in chunks of KC: a row tile's chunk stays
 * in L1 for every column tile of the pass, its first pass's loads
 * bringing it in for the second; the sums wait in memory between passes
 * and chunks.  The caller should space activation rows off multiples of
 * 4 KB (matmul.c pads them): 2048-wide F16 rows 4 KB apart put the three
 * columns' loads in one L1 set, 37 against 41 GMAC/s.  Every output
 * takes exactly the reference's FMAs in its order, so the bits are
 * qt_fgemm_dot's. */
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
    /* elements per chunk.  Measured alone on a Zen 3 (F16, 5632 x 2048 and
     * 2048 x 5632 weights by 128 columns, GMAC/s): 384: 34 and 40, 512:
     * 37 and 41, 768: 38.5 and 42; with the columns widened to floats
     * once per chunk instead, at best 38.5 and 40 */
    KC = 768
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
/* One chunk of a 4-row tile (a: row 0, a_stride apart, from element k0)
 * by rn columns (b: column 0, b_stride apart, of btype, from element
 * kb0), both passes (h: lanes 8h..8h+7) in turn: acc (2 x 12 vectors,
 * [h][r][j]) in and out of memory. */
INLINE void tile_chunk(const int type, const int btype, const int rn, const uint8_t *a, size_t a_stride,
                       const uint8_t *b, size_t b_stride, int64_t k0, int64_t kb0, int kc, __m256 *acc)
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
            for (int j = 0; j < rn; j++) bv[j] = load8(btype, b + (size_t)j * b_stride, kb0 + k);
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
/* tile_chunk for the last column tile's rn. */
INLINE void tile_any(const int type, const int btype, int rn, const uint8_t *a, size_t a_stride, const uint8_t *b,
                     size_t b_stride, int64_t k0, int64_t kb0, int kc, __m256 *acc)
{
    if (rn == RN) tile_chunk(type, btype, RN, a, a_stride, b, b_stride, k0, kb0, kc, acc);
    else if (rn == 2) tile_chunk(type, btype, 2, a, a_stride, b, b_stride, k0, kb0, kc, acc);
    else tile_chunk(type, btype, 1, a, a_stride, b, b_stride, k0, kb0, kc, acc);
}
/* A pass: ncols (<= MAX_COLS) columns of y against nrows (<= MAX_ROWS, a
 * multiple of 4) rows of w, chunk by chunk, each row tile's chunk against
 * every column tile in turn.  BF16, whose widening takes two operations
 * (a shuffle and a shift) where F16's vcvtph2ps takes none of the FMA
 * pipes' time, widens each column tile's chunk once into floats and runs
 * it against every row tile instead (tl-bf16's matrices by 128 columns:
 * 30-31 against 27.5 GMAC/s). */
INLINE void pass(const int type, int n, const uint8_t *w, size_t w_stride, int nrows, const uint8_t *y, size_t y_stride,
                 int ncols, float *out, size_t ldo)
{
    enum { TILES = MAX_ROWS / RM, CTILES = MAX_COLS / RN, ACC = 2 * RM * RN };
    alignas(32) __m256 acc[TILES][CTILES][ACC];
    const int tiles = nrows / RM, ctiles = (ncols + RN - 1) / RN;
    for (int t = 0; t < tiles; t++)
        for (int c = 0; c < ctiles; c++)
            for (int i = 0; i < ACC; i++) acc[t][c][i] = _mm256_setzero_ps();
    for (int64_t k0 = 0; k0 < n; k0 += KC) {
        const int kc = n - k0 < KC ? (int)(n - k0) : KC;
        if (type == QT_BF16) {
            alignas(32) float b[RN * KC];
            for (int c = 0; c < ctiles; c++) {
                const int rn = ncols - RN * c < RN ? ncols - RN * c : RN;
                for (int j = 0; j < rn; j++)
                    for (int k = 0; k < kc; k += 8)
                        _mm256_store_ps(b + j * KC + k, load8(type, y + (size_t)(RN * c + j) * y_stride, k0 + k));
                for (int t = 0; t < tiles; t++)
                    tile_any(type, QT_F32, rn, w + (size_t)(RM * t) * w_stride, w_stride, (const uint8_t *)b,
                             KC * sizeof(float), k0, 0, kc, acc[t][c]);
            }
            continue;
        }
        for (int t = 0; t < tiles; t++)
            for (int c = 0; c < ctiles; c++)
                tile_any(type, type, ncols - RN * c < RN ? ncols - RN * c : RN, w + (size_t)(RM * t) * w_stride,
                         w_stride, y + (size_t)(RN * c) * y_stride, y_stride, k0, k0, kc, acc[t][c]);
    }
    for (int t = 0; t < tiles; t++)
        for (int c = 0; c < ctiles; c++)
            for (int j = 0; j < RN && RN * c + j < ncols; j++)
                for (int r = 0; r < RM; r++)
                    out[(size_t)(RN * c + j) * ldo + (size_t)(RM * t + r)] =
                        qt_reduce16v8(acc[t][c][r * RN + j], acc[t][c][(RM + r) * RN + j]);
}
#define PASS_ROWS MAX_ROWS
#define PASS_COLS MAX_COLS
#define FGEMM_ENTRY qt_avx2_fgemm
#include "x86_fgemm_entry.inc"

#endif
