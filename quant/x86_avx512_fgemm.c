/* x86_avx512_fgemm.c - fgemm.h's kernel with AVX-512F: float weights times
 * activation columns in tinyBLAS's 16-lane order, one register per output.
 *
 * Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c;
 * reached through qt_fgemm() at the avx512 levels.
 *
 * The order's 16 lanes are a zmm register's, so where the AVX2 kernel
 * runs each tile twice (lanes 0-7, then 8-15), this one runs it once.  A
 * tile is RM rows by RN columns: RM x RN accumulators, the RN columns'
 * vectors and one row's fill 31 of the 32 registers.  Half-precision
 * operands are widened to floats once and then read as floats: F16's
 * vcvtph2ps and BF16's shift take the same ports as the FMAs on Intel
 * cores, so widening every operand as it is loaded (as the AVX2 kernel
 * does for F16, where Zen 3 runs the conversion elsewhere) would cost a
 * third of the FMA rate.  Each chunk of KC elements of a column tile is
 * widened once and run against every row tile of the pass; each row
 * tile's chunk is widened once and run against every column tile.  The
 * sums wait in memory between chunks.  Every output takes exactly the
 * reference's FMAs in its order, so the bits are qt_fgemm_dot's. */
#if defined(__x86_64__)

#include <immintrin.h>
#include <stdalign.h>

#include "fgemm.h"
#include "x86_avx512_exp.h"

#define INLINE static inline __attribute__((always_inline))

enum {
    RM = 4,        /* rows of a tile */
    RN = 6,        /* columns of a tile, and of a pass */
    MAX_ROWS = 32, /* rows of a pass: 8 tiles, whose sums (12 KB) wait between chunks */
    /* elements per chunk: the pass's columns as floats (24 KB) stay in L1
     * while the row tiles stream past them.  Measured alone here (Xeon,
     * F16 5632 x 2048, 2048 x 5632, 2048 x 2048 weights by 128 columns,
     * GMAC/s): 512: 60, 55, 57; 1024: 60, 56, 58; with 24-column passes
     * of 256-element chunks and the rows widened once per chunk, 47-49 */
    KC = 1024,
    TILES = MAX_ROWS / RM,
};

/* 16 elements of a row of `type` at element i, widened exactly. */
INLINE __m512 load16(const int type, const uint8_t *row, int64_t i)
{
    if (type == QT_F16) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(row + 2 * i)));
    if (type == QT_BF16)
        return _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(row + 2 * i))), 16));
    return _mm512_loadu_ps((const float *)(row + 4 * i));
}

/* One chunk of kc elements of an RM-row tile (a: rows of `type`,
 * a_stride bytes apart, from element k0) by rn columns (b: floats, KC
 * apart): acc (RM x RN vectors, [r][j]) in and out of memory. */
INLINE void tile_chunk(const int type, const int rn, const uint8_t *a, size_t a_stride, int64_t k0, const float *b,
                       int kc, __m512 *acc)
{
    __m512 c[RM][RN];
#pragma GCC unroll 4
    for (int r = 0; r < RM; r++)
#pragma GCC unroll 6
        for (int j = 0; j < rn; j++) c[r][j] = acc[r * RN + j];
    for (int k = 0; k < kc; k += 16) {
        __m512 bv[RN];
#pragma GCC unroll 6
        for (int j = 0; j < rn; j++) bv[j] = _mm512_load_ps(b + j * KC + k);
#pragma GCC unroll 4
        for (int r = 0; r < RM; r++) {
            __m512 av = load16(type, a + (size_t)r * a_stride, k0 + k);
            /* in a register: GCC would otherwise fold the load into each
             * of the rn FMAs, rn loads (and conversions) instead of one */
            __asm__("" : "+v"(av));
#pragma GCC unroll 6
            for (int j = 0; j < rn; j++) c[r][j] = _mm512_fmadd_ps(av, bv[j], c[r][j]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < RM; r++)
#pragma GCC unroll 6
        for (int j = 0; j < rn; j++) acc[r * RN + j] = c[r][j];
}

/* tile_chunk for the pass's rn (the last pass's may be short). */
INLINE void tile_any(const int type, int rn, const uint8_t *a, size_t a_stride, int64_t k0, const float *b, int kc,
                     __m512 *acc)
{
    switch (rn) {
    case 6: tile_chunk(type, 6, a, a_stride, k0, b, kc, acc); break;
    case 5: tile_chunk(type, 5, a, a_stride, k0, b, kc, acc); break;
    case 4: tile_chunk(type, 4, a, a_stride, k0, b, kc, acc); break;
    case 3: tile_chunk(type, 3, a, a_stride, k0, b, kc, acc); break;
    case 2: tile_chunk(type, 2, a, a_stride, k0, b, kc, acc); break;
    default: tile_chunk(type, 1, a, a_stride, k0, b, kc, acc); break;
    }
}

/* A pass: ncols (<= RN) columns of y against nrows (<= MAX_ROWS, a
 * multiple of 4) rows of w, chunk by chunk: the columns' chunk widened
 * into b, then every row tile's chunk against it. */
INLINE void pass(const int type, int n, const uint8_t *w, size_t w_stride, int nrows, const uint8_t *y,
                 size_t y_stride, int ncols, float *out, size_t ldo)
{
    alignas(64) __m512 acc[TILES][RM * RN];
    alignas(64) float b[RN * KC];
    const int tiles = nrows / RM;
    for (int t = 0; t < tiles; t++)
        for (int i = 0; i < RM * RN; i++) acc[t][i] = _mm512_setzero_ps();
    for (int64_t k0 = 0; k0 < n; k0 += KC) {
        const int kc = n - k0 < KC ? (int)(n - k0) : KC;
        for (int j = 0; j < ncols; j++)
            for (int k = 0; k < kc; k += 16) _mm512_store_ps(b + j * KC + k, load16(type, y + (size_t)j * y_stride, k0 + k));
        for (int t = 0; t < tiles; t++)
            tile_any(type, ncols, w + (size_t)(RM * t) * w_stride, w_stride, k0, b, kc, acc[t]);
    }
    for (int t = 0; t < tiles; t++)
        for (int j = 0; j < ncols; j++)
            for (int r = 0; r < RM; r++)
                out[(size_t)j * ldo + (size_t)(RM * t + r)] = qt_reduce16v16(acc[t][r * RN + j]);
}

#define PASS_ROWS MAX_ROWS
#define PASS_COLS RN
#define FGEMM_ENTRY qt_avx512_fgemm
#include "x86_fgemm_entry.inc"

#endif
