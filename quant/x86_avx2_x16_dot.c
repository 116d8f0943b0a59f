/* x86_avx2_x16_dot.c - Q4_1 and Q5_1 times Q8_1, Q5_0 times Q8_0, in
 * vec_dot's order, from the x16 layout (repack.h), row per lane, with
 * AVX2.  Q5_1 is Q4_1 with the values' fifth bits (high_bits); Q5_0 at
 * the end of the file; the rest of this comment is Q4_1's.
 *
 * Compiled with -mavx2 -mfma -mf16c; the AVX-VNNI entry issues vpdpbusd
 * as inline asm (x86_simd.h's dot4).  vec_dot's order keeps eight float
 * lanes per output: lane k takes, block by block, fma(dx·dy, Σ of elements
 * 4k..4k+3 of q·y, lane), and the lanes are summed at the end
 * ((x4+x0) + (x6+x2)) + ((x5+x1) + (x7+x3)), then Σ m·s (its own fma
 * chain) added.  Row-major, each row's block is one vector and every
 * lane of the eight is that row's, so a block costs its nibble split, a
 * broadcast of the row's scale, a convert and an fma per row.  Here
 * vector k holds lane k of 8 rows (one int32 lane per row): the same
 * vpmaddubsw, vpmaddwd, convert and fma per row and block, but the nibble
 * split, the scale product (8 rows' dx in one vcvtph2ps) and the m·s
 * chain are shared by 8 rows, and the eight sums are vertical adds.  The
 * integer sums are exact (values <= 31 times |y| <= 128, two per int16),
 * so every output is vec_dot's, bit for bit.  Zen 2, one thread, 4096-wide
 * rows from L2: 2.63 cycles a block against vec_dot_tile's 4.05. */
#if defined(__x86_64__)

#include <immintrin.h>
#include <string.h>

#define QT_X86_DPBUSD "%{vex%} vpdpbusd %2, %1, %0"
#include "blocks.h"
#include "repack.h"
#include "x86_avx2_rows.h"
#include "x86_simd.h"

#define INLINE static inline __attribute__((always_inline))

/* A block's d = dx·dy for 8 rows and one column, and its step of the
 * m·s chain (acc[8]). */
INLINE __m256 block_d(__m256 acc[9], __m256 dx, __m256 mx, const qt_block_q8_1 *y)
{
    int32_t h;
    memcpy(&h, y, sizeof h); /* d, s */
    const __m128 ds = _mm_cvtph_ps(_mm_cvtsi32_si128(h));
    const __m256 dy = _mm256_broadcastss_ps(ds), sy = _mm256_broadcastss_ps(_mm_movehdup_ps(ds));
    acc[8] = _mm256_fmadd_ps(mx, sy, acc[8]);
    return _mm256_mul_ps(dx, dy);
}

/* Quant vector k's products, low nibbles lo and high hi, into lanes k
 * and k + 4. */
INLINE void quad_fma(__m256 acc[9], int k, __m256i lo, __m256i hi, __m256 d, const qt_block_q8_1 *y, const int vnni)
{
    const __m256i pl = dot4(lo, bcast4(y->qs + 4 * k), vnni);
    const __m256i ph = dot4(hi, bcast4(y->qs + 16 + 4 * k), vnni);
    acc[k] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(pl), acc[k]);
    acc[k + 4] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(ph), acc[k + 4]);
}

/* Quant vector k's low and high nibbles (lo, hi) of 8 rows with their
 * fifth bits from the rows' qh dwords, 16 added where set (Q5_0, Q5_1):
 * the bits of elements 4k.. sit in qh byte k/2, those of 16+4k.. in byte
 * 2 + k/2; that byte copied to its dword's four bytes (vpshufb), bit i
 * (even k) or 4 + i (odd k) of byte i kept and compared. */
INLINE void high_bits(__m256i qh, int k, __m256i *lo, __m256i *hi)
{
    const __m256i bits = _mm256_set1_epi32(k % 2 ? (int)0x80402010u : 0x08040201), sixteen = _mm256_set1_epi8(16);
    const __m256i dword = _mm256_setr_epi32(0, 0x04040404, 0x08080808, 0x0c0c0c0c, 0, 0x04040404, 0x08080808,
                                            0x0c0c0c0c);
    const __m256i bl = _mm256_and_si256(_mm256_shuffle_epi8(qh, _mm256_add_epi8(dword, _mm256_set1_epi8((char)(k / 2)))),
                                        bits);
    const __m256i bh = _mm256_and_si256(
        _mm256_shuffle_epi8(qh, _mm256_add_epi8(dword, _mm256_set1_epi8((char)(2 + k / 2)))), bits);
    *lo = _mm256_or_si256(*lo, _mm256_and_si256(_mm256_cmpeq_epi8(bl, bits), sixteen));
    *hi = _mm256_or_si256(*hi, _mm256_and_si256(_mm256_cmpeq_epi8(bh, bits), sixteen));
}

/* Bytes per half block and where the 8 rows' d sit (m 16 bytes on):
 * Q4_1, or Q5_1 where q5 (its qh dwords first). */
#define Q41_BLOCK(q5) ((q5) ? (size_t)QT_X16_Q5_1_BLOCK : (size_t)QT_X16_Q4_1_BLOCK)
#define Q41_AT_D(q5) ((q5) ? 160 : 128)

/* The block at p split: its nibbles (Q5_1: values) as quad_fma takes
 * them, its d and m. */
INLINE void split_block_at(const uint8_t *p, __m256i q[8], __m256 *dx, __m256 *mx, const int q5)
{
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    *dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + Q41_AT_D(q5))));
    *mx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + Q41_AT_D(q5) + 16)));
    const __m256i qh = q5 ? _mm256_loadu_si256((const __m256i *)(p + 128)) : _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(p + 32 * k));
        q[k] = _mm256_and_si256(v, m4);
        q[4 + k] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        if (q5) high_bits(qh, k, &q[k], &q[4 + k]);
    }
}

/* 1 KB ahead of block p into L1, each line once (a Q4_1 block is 2.5
 * lines: the third every other block; Q5_0's 2.75, three of every four);
 * SmolLM2 tg128 with 512 B or 2 KB ran 4-5% slower, a 1.1B shape 9-13%.
 * And 3 KB ahead into L2, as x86_avx2_wide.c's x16 gemv: at QLM_ISA=avx2
 * on a Sapphire Rapids, 1.1B shape, 2 threads, tg128 tl-q5_1 31.9-32.3
 * t/s against 30.5-30.6, tl-q5_0 29.5-31.1 against 28.4-28.6, tl-q4_1
 * 42.4-43.0 against 38.0-39.3 (SmolLM2 Q4_1 295-330 against 245-259). */
INLINE void prefetch_ahead(const uint8_t *p, int third)
{
    _mm_prefetch((const char *)p + 1024, _MM_HINT_T0);
    _mm_prefetch((const char *)p + 1024 + 64, _MM_HINT_T0);
    if (third) _mm_prefetch((const char *)p + 1024 + 128, _MM_HINT_T0);
    _mm_prefetch((const char *)p + 3072, _MM_HINT_T1);
    _mm_prefetch((const char *)p + 3072 + 64, _MM_HINT_T1);
    if (third) _mm_prefetch((const char *)p + 3072 + 128, _MM_HINT_T1);
}

/* The lanes' sums ((x4+x0) + (x6+x2)) + ((x5+x1) + (x7+x3)), then the m·s
 * chain, for 8 rows at s. */
INLINE __m256 lanes_sum(const __m256 acc[8])
{
    const __m256 t0 = _mm256_add_ps(acc[4], acc[0]), t1 = _mm256_add_ps(acc[5], acc[1]);
    const __m256 t2 = _mm256_add_ps(acc[6], acc[2]), t3 = _mm256_add_ps(acc[7], acc[3]);
    return _mm256_add_ps(_mm256_add_ps(t0, t2), _mm256_add_ps(t1, t3));
}

INLINE void half_store(const __m256 acc[9], float *s) { _mm256_storeu_ps(s, _mm256_add_ps(lanes_sum(acc), acc[8])); }

/* 8 rows of one column: half points at the half's first block.  Each
 * quant vector is split as its products need it (splitting the block
 * first, as dot_split's chunks are, measured 5-9% slower here). */
INLINE void half_q4_1(int nb, float *s, const uint8_t *half, const qt_block_q8_1 *y, const int vnni, const int q5)
{
    __m256 acc[9];
#pragma GCC unroll 9
    for (int k = 0; k < 9; k++) acc[k] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    for (int b = 0; b < nb; b++) {
        const uint8_t *p = half + (size_t)b * Q41_BLOCK(q5);
        prefetch_ahead(p, q5 || (b & 1));
        const __m256 d = block_d(acc, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + Q41_AT_D(q5)))),
                                 _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + Q41_AT_D(q5) + 16))), &y[b]);
        const __m256i qh = q5 ? _mm256_loadu_si256((const __m256i *)(p + 128)) : _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(p + 32 * k));
            __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            if (q5) high_bits(qh, k, &lo, &hi);
            quad_fma(acc, k, lo, hi, d, &y[b], vnni);
        }
    }
    half_store(acc, s);
}

/* ---- many columns: the split shared ------------------------------------
 * Column by column, every block's nibble split (three operations a quant
 * vector) and the two scale conversions were done again for each column:
 * about a fifth of the operations a column's block costs.  With two or
 * more columns a chunk of blocks of both halves is split once into
 * split_block form and every column of a slice reads it from L1; the
 * float operations per output are half_q4_1's, in its order (a chunk's
 * accumulators are kept between chunks, not restarted). */

enum {
    SPLIT_BLOCKS = 32, /* blocks per chunk: both halves' split chunk, 20 KB, stays in L1 */
    SPLIT_COLS = 16,   /* columns per slice, whose accumulators wait between chunks */
};

typedef struct split_block {
    __m256i q[8];  /* q[k]: low nibbles of quant vector k; q[4 + k]: its high nibbles */
    __m256 dx, mx; /* the 8 rows' d and m */
} split_block;

INLINE void split_half(int nbk, const uint8_t *half, split_block *o, const int q5)
{
    for (int b = 0; b < nbk; b++) {
        const uint8_t *p = half + (size_t)b * Q41_BLOCK(q5);
        prefetch_ahead(p, q5 || (b & 1));
        split_block_at(p, o[b].q, &o[b].dx, &o[b].mx, q5);
    }
}

INLINE void dot_split(int nb, float *s, size_t ldo, const uint8_t *g, const void *y, size_t y_stride, int nc,
                      const int vnni, const int q5)
{
    split_block sb[2][SPLIT_BLOCKS];
    __m256 st[SPLIT_COLS][2][9]; /* a slice's accumulators between chunks */
    for (int c0 = 0; c0 < nc; c0 += SPLIT_COLS) {
        const int ncs = nc - c0 < SPLIT_COLS ? nc - c0 : SPLIT_COLS;
        for (int b0 = 0; b0 < nb; b0 += SPLIT_BLOCKS) {
            const int nbk = nb - b0 < SPLIT_BLOCKS ? nb - b0 : SPLIT_BLOCKS, last = b0 + nbk == nb;
            for (int h = 0; h < 2; h++)
                split_half(nbk, g + ((size_t)h * nb + b0) * Q41_BLOCK(q5), sb[h], q5);
            for (int c = 0; c < ncs; c++) {
                const qt_block_q8_1 *yc =
                    (const qt_block_q8_1 *)((const uint8_t *)y + (size_t)(c0 + c) * y_stride) + b0;
                for (int h = 0; h < 2; h++) {
                    __m256 acc[9];
#pragma GCC unroll 9
                    for (int k = 0; k < 9; k++) acc[k] = b0 ? st[c][h][k] : _mm256_setzero_ps();
                    for (int b = 0; b < nbk; b++) {
                        const __m256 d = block_d(acc, sb[h][b].dx, sb[h][b].mx, &yc[b]);
#pragma GCC unroll 4
                        for (int k = 0; k < 4; k++) quad_fma(acc, k, sb[h][b].q[k], sb[h][b].q[4 + k], d, &yc[b], vnni);
                    }
                    if (last) {
                        half_store(acc, s + (size_t)(c0 + c) * ldo + 8 * h);
                    } else {
#pragma GCC unroll 9
                        for (int k = 0; k < 9; k++) st[c][h][k] = acc[k];
                    }
                }
            }
        }
    }
}

/* One column (decoding) takes each block straight from the layout;
 * more share the split (dot_split).  Column by column was still faster
 * than vec_dot_tile's column-sharing tiles (n = 576 and 1536, 64
 * columns: 2.7 cycles a block and column against 3.3-3.5). */
INLINE void dot_q4_1(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride, int nc,
                     const int vnni, const int q5)
{
    const int nb = n / QT_QK4_1;
    const uint8_t *g = group;
    if (nc >= 2) {
        dot_split(nb, s, ldo, g, y, y_stride, nc, vnni, q5);
        return;
    }
    for (int c = 0; c < nc; c++) {
        const qt_block_q8_1 *yc = (const qt_block_q8_1 *)((const uint8_t *)y + (size_t)c * y_stride);
        half_q4_1(nb, s + (size_t)c * ldo, g, yc, vnni, q5);
        half_q4_1(nb, s + (size_t)c * ldo + 8, g + (size_t)nb * Q41_BLOCK(q5), yc, vnni, q5);
    }
}

/* ---- Q5_0 ----------------------------------------------------------------
 * The same lanes and order without the m·s chain.  Vector k lane r holds
 * the unsigned values u = nibble + 16 * high bit of row r's group k
 * (elements 4k..4k+3; 16+4k.. for the high nibbles), vec_dot's q being
 * u - 16, so a lane's exact sum is sum(u y) - 16 sum(y): the second term
 * is the column's, made once per block (a dword per group) and added to
 * the products' sums; the high bits as high_bits adds them. */

/* The column's -16 * sum(y) of block y's 8 groups, into corr. */
INLINE void q5_corr(const qt_block_q8_0 *y, int32_t corr[8], const int vnni)
{
    const __m256i sum = dot4(_mm256_set1_epi8(1), _mm256_loadu_si256((const __m256i *)y->qs), vnni);
    _mm256_store_si256((__m256i *)corr, _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sum, 4)));
}

/* Block p of a half split into its 8 vectors of u (q5_fma's order: k,
 * then 4 + k) and its 8 rows' d. */
INLINE void q5_split_at(const uint8_t *p, __m256i u[8], __m256 *dx)
{
    const __m256i m4 = _mm256_set1_epi8(0x0f), qh = _mm256_loadu_si256((const __m256i *)(p + 128));
    *dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 160)));
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(p + 32 * k));
        u[k] = _mm256_and_si256(v, m4);
        u[4 + k] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        high_bits(qh, k, &u[k], &u[4 + k]);
    }
}

/* Vector k's and 4 + k's products into lanes k and k + 4. */
INLINE void q5_fma(__m256 acc[8], int k, const __m256i u[8], __m256 d, const qt_block_q8_0 *y, const int32_t corr[8],
                   const int vnni)
{
    const __m256i pl = _mm256_add_epi32(dot4(u[k], bcast4(y->qs + 4 * k), vnni), _mm256_set1_epi32(corr[k]));
    const __m256i ph = _mm256_add_epi32(dot4(u[4 + k], bcast4(y->qs + 16 + 4 * k), vnni), _mm256_set1_epi32(corr[4 + k]));
    acc[k] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(pl), acc[k]);
    acc[k + 4] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(ph), acc[k + 4]);
}

/* 8 rows of one column from the layout, block by block. */
INLINE void half_q5_0(int nb, float *s, const uint8_t *half, const qt_block_q8_0 *y, const int vnni)
{
    __m256 acc[8];
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) acc[k] = _mm256_setzero_ps();
    _Alignas(32) int32_t corr[8];
    for (int b = 0; b < nb; b++) {
        const uint8_t *p = half + (size_t)b * QT_X16_Q5_0_BLOCK;
        prefetch_ahead(p, b % 4 != 3);
        __m256i u[8];
        __m256 dx;
        q5_split_at(p, u, &dx);
        q5_corr(&y[b], corr, vnni);
        const __m256 d = _mm256_mul_ps(dx, _mm256_set1_ps(_cvtsh_ss(y[b].d)));
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) q5_fma(acc, k, u, d, &y[b], corr, vnni);
    }
    _mm256_storeu_ps(s, lanes_sum(acc));
}

/* Two or more columns: each chunk of blocks of both halves split once
 * into L1, as dot_split does for Q4_1, and the column's corrections of a
 * chunk made once for both halves. */
typedef struct q5_split {
    __m256i u[8];
    __m256 dx;
} q5_split;

INLINE void q5_dot_split(int nb, float *s, size_t ldo, const uint8_t *g, const void *y, size_t y_stride, int nc,
                         const int vnni)
{
    q5_split sb[2][SPLIT_BLOCKS];
    __m256 st[SPLIT_COLS][2][8];
    _Alignas(32) int32_t corr[SPLIT_BLOCKS][8];
    for (int c0 = 0; c0 < nc; c0 += SPLIT_COLS) {
        const int ncs = nc - c0 < SPLIT_COLS ? nc - c0 : SPLIT_COLS;
        for (int b0 = 0; b0 < nb; b0 += SPLIT_BLOCKS) {
            const int nbk = nb - b0 < SPLIT_BLOCKS ? nb - b0 : SPLIT_BLOCKS, last = b0 + nbk == nb;
            for (int h = 0; h < 2; h++)
                for (int b = 0; b < nbk; b++) {
                    const uint8_t *p = g + ((size_t)h * nb + b0 + b) * QT_X16_Q5_0_BLOCK;
                    prefetch_ahead(p, b % 4 != 3);
                    q5_split_at(p, sb[h][b].u, &sb[h][b].dx);
                }
            for (int c = 0; c < ncs; c++) {
                const qt_block_q8_0 *yc =
                    (const qt_block_q8_0 *)((const uint8_t *)y + (size_t)(c0 + c) * y_stride) + b0;
                for (int b = 0; b < nbk; b++) q5_corr(&yc[b], corr[b], vnni);
                for (int h = 0; h < 2; h++) {
                    __m256 acc[8];
#pragma GCC unroll 8
                    for (int k = 0; k < 8; k++) acc[k] = b0 ? st[c][h][k] : _mm256_setzero_ps();
                    for (int b = 0; b < nbk; b++) {
                        const __m256 d = _mm256_mul_ps(sb[h][b].dx, _mm256_set1_ps(_cvtsh_ss(yc[b].d)));
#pragma GCC unroll 4
                        for (int k = 0; k < 4; k++) q5_fma(acc, k, sb[h][b].u, d, &yc[b], corr[b], vnni);
                    }
                    if (last) {
                        _mm256_storeu_ps(s + (size_t)(c0 + c) * ldo + 8 * h, lanes_sum(acc));
                    } else {
#pragma GCC unroll 8
                        for (int k = 0; k < 8; k++) st[c][h][k] = acc[k];
                    }
                }
            }
        }
    }
}

INLINE void dot_q5_0(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride, int nc,
                     const int vnni)
{
    const int nb = n / QT_QK5_0;
    const uint8_t *g = group;
    if (nc >= 2) {
        q5_dot_split(nb, s, ldo, g, y, y_stride, nc, vnni);
        return;
    }
    for (int c = 0; c < nc; c++) {
        const qt_block_q8_0 *yc = (const qt_block_q8_0 *)((const uint8_t *)y + (size_t)c * y_stride);
        half_q5_0(nb, s + (size_t)c * ldo, g, yc, vnni);
        half_q5_0(nb, s + (size_t)c * ldo + 8, g + (size_t)nb * QT_X16_Q5_0_BLOCK, yc, vnni);
    }
}

void qt_avx2_x16_dot_q5_0(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride, int nc)
{
    dot_q5_0(n, s, ldo, group, y, y_stride, nc, 0);
}

void qt_avx2_vnni_x16_dot_q5_0(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride, int nc)
{
    dot_q5_0(n, s, ldo, group, y, y_stride, nc, 1);
}

void qt_avx2_x16_dot_q4_1(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride, int nc)
{
    dot_q4_1(n, s, ldo, group, y, y_stride, nc, 0, 0);
}

void qt_avx2_x16_dot_q5_1(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride, int nc)
{
    dot_q4_1(n, s, ldo, group, y, y_stride, nc, 0, 1);
}

void qt_avx2_vnni_x16_dot_q5_1(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride, int nc)
{
    dot_q4_1(n, s, ldo, group, y, y_stride, nc, 1, 1);
}

/* AVX-VNNI: vpdpbusd for the vpmaddubsw + vpmaddwd pair, the same sums */
void qt_avx2_vnni_x16_dot_q4_1(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride, int nc)
{
    dot_q4_1(n, s, ldo, group, y, y_stride, nc, 1, 0);
}

#endif
