/* x86_avx512_x16_dot.c - Q4_1 and Q5_1 times Q8_1, Q5_0 times Q8_0, in
 * vec_dot's order, from the x16 layout (repack.h), row per lane, with
 * AVX-512: the AVX2 kernels' scheme (x86_avx2_x16_dot.c) with all 16 rows
 * of a group in one vector, the two halves' chunks side by side.  Q5_1 is
 * Q4_1 with the values' fifth bits (high_bits); Q5_0 comes after them.
 *
 * Compiled with the AVX-512 flags; vpdpbusd is inline asm behind a
 * constant `vnni` (x86_avx512_wide.h).  vec_dot's eight float lanes per
 * output become eight accumulators, vector k holding lane k of the 16
 * rows, summed in its order at the end, so every output is vec_dot's bit
 * for bit (the integer sums are exact: values <= 31 times |y| <= 128, two
 * per int16 without VNNI).
 * With 32 registers, two columns at a time share each chunk's nibble
 * split; from 8 columns a step of blocks is decoded once into L1 for up
 * to 16 (cols_q4_1_many, stop 53).  A Sapphire Rapids, 1.1B shape in Q4_1, 2
 * threads, against the rows: tg64 1.25-1.57x (AVX-512 VNNI), 1.24-1.46x
 * (AVX-512 alone, where the prompt's batches take this kernel too, pp512
 * 0.88x of the row tile's: 4 columns would need 32 accumulators; the
 * decode gain outweighs that on any prompt shorter than ~10 times the
 * reply). */
#if defined(__x86_64__)

#include <immintrin.h>
#include <string.h>

#include "blocks.h"
#include "repack.h"
#include "x86_avx512_tiles.h"
#include "x86_avx512_wide.h"

#define INLINE static inline __attribute__((always_inline))

/* Chunk, scales or mins of both halves: lo's 8 rows, then hi's. */
INLINE __m512i both256(const uint8_t *lo, const uint8_t *hi)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)lo)),
                              _mm256_loadu_si256((const __m256i *)hi), 1);
}

INLINE __m512 both_f16(const uint8_t *lo, const uint8_t *hi)
{
    const __m256i h = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)lo)),
                                              _mm_loadu_si128((const __m128i *)hi), 1);
    return _mm512_cvtph_ps(h);
}

/* The lines of a block in each half (p0, p1), each line once: two lines
 * a block, and a third where `third` (the caller knows its block size);
 * 1 KB ahead into L1 and 3 KB into L2, as x86_avx512_repack.c's
 * gemv_x16 asks (tl-q5_1 tg128, Sapphire Rapids, 2 threads, alternated
 * twice: 35.1-35.5 t/s against 32.8-32.9 with the L1 prefetch alone;
 * tl-q5_0 35.7-36.0 against 35.4-35.5; 6 KB into L2 was slower than
 * none). */
INLINE void prefetch_halves(const uint8_t *p0, const uint8_t *p1, int third)
{
    for (int o = 0; o < (third ? 192 : 128); o += 64) {
        _mm_prefetch((const char *)p0 + 1024 + o, _MM_HINT_T0);
        _mm_prefetch((const char *)p1 + 1024 + o, _MM_HINT_T0);
        _mm_prefetch((const char *)p0 + 3072 + o, _MM_HINT_T1);
        _mm_prefetch((const char *)p1 + 3072 + o, _MM_HINT_T1);
    }
}

/* vec_dot's lanes k and k + 4 of one column and block: the exact sums of
 * the 16 rows' groups lo and hi (started from init_lo and init_hi) by the
 * column's bytes 4k.. and 16 + 4k.., widened, times d. */
INLINE void lanes_add(__m512 acc[8], int k, __m512 d, __m512i lo, __m512i hi, const int8_t *yq, __m512i init_lo,
                      __m512i init_hi, const int vnni)
{
    const __m512i pl = dot4_bcast(init_lo, lo, yq + 4 * k, vnni), ph = dot4_bcast(init_hi, hi, yq + 16 + 4 * k, vnni);
    acc[k] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(pl), acc[k]);
    acc[k + 4] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(ph), acc[k + 4]);
}

/* The 8 lane accumulators of 16 outputs summed in qt_hsum8's order. */
INLINE __m512 lanes_sum(const __m512 a[8])
{
    const __m512 t0 = _mm512_add_ps(a[4], a[0]), t1 = _mm512_add_ps(a[5], a[1]);
    const __m512 t2 = _mm512_add_ps(a[6], a[2]), t3 = _mm512_add_ps(a[7], a[3]);
    return _mm512_add_ps(_mm512_add_ps(t0, t2), _mm512_add_ps(t1, t3));
}

/* Quant vector k's low and high nibbles (lo, hi) of 16 rows with their
 * fifth bits from the rows' qh dwords: 16 added where set (Q5_0, Q5_1).
 * The bits of elements 4k.. sit in qh byte k/2, those of 16+4k.. in byte
 * 2 + k/2: that byte copied to its dword's four bytes (vpshufb's index
 * stays in the 128-bit lane), bit i (even k) or 4 + i (odd k) of byte i
 * tested. */
INLINE void high_bits(__m512i qh, int k, __m512i *lo, __m512i *hi)
{
    const __m512i dword = _mm512_set4_epi32(0x0c0c0c0c, 0x08080808, 0x04040404, 0), sixteen = _mm512_set1_epi8(16);
    const __m512i bits = _mm512_set1_epi32(k % 2 ? (int)0x80402010u : 0x08040201);
    const __m512i jl = _mm512_set1_epi32(0x01010101 * (k / 2)), jh = _mm512_set1_epi32(0x01010101 * (2 + k / 2));
    const __mmask64 ml = _mm512_test_epi8_mask(_mm512_shuffle_epi8(qh, _mm512_add_epi8(dword, jl)), bits);
    const __mmask64 mh = _mm512_test_epi8_mask(_mm512_shuffle_epi8(qh, _mm512_add_epi8(dword, jh)), bits);
    *lo = _mm512_mask_add_epi8(*lo, ml, *lo, sixteen);
    *hi = _mm512_mask_add_epi8(*hi, mh, *hi, sixteen);
}

/* ncol (1 or 2) columns of the 16 rows; h0 and h1 point at the halves.
 * q5: Q5_1 (the values' fifth bits from qh, d and m after it). */
INLINE void cols_q4_1(int nb, float *s, size_t ldo, const uint8_t *h0, const uint8_t *h1, const qt_block_q8_1 *const *y,
                      const int ncol, const int vnni, const int q5)
{
    const size_t bs = q5 ? QT_X16_Q5_1_BLOCK : QT_X16_Q4_1_BLOCK, at_d = q5 ? 160 : 128;
    __m512 acc[2][8], summs[2];
#pragma GCC unroll 2
    for (int c = 0; c < ncol; c++) {
        summs[c] = _mm512_setzero_ps();
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) acc[c][k] = _mm512_setzero_ps();
    }
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    for (int b = 0; b < nb; b++) {
        const uint8_t *p0 = h0 + (size_t)b * bs, *p1 = h1 + (size_t)b * bs;
        prefetch_halves(p0, p1, q5 || (b & 1)); /* a block is 2.5 lines, Q5_1's 3 */
        const __m512 dx = both_f16(p0 + at_d, p1 + at_d), mx = both_f16(p0 + at_d + 16, p1 + at_d + 16);
        const __m512i qh = q5 ? both256(p0 + 128, p1 + 128) : _mm512_setzero_si512();
        __m512 d[2];
#pragma GCC unroll 2
        for (int c = 0; c < ncol; c++) {
            int32_t h;
            memcpy(&h, &y[c][b], sizeof h); /* d, s */
            const __m128 ds = _mm_cvtph_ps(_mm_cvtsi32_si128(h));
            d[c] = _mm512_mul_ps(dx, _mm512_broadcastss_ps(ds));
            summs[c] = _mm512_fmadd_ps(mx, _mm512_broadcastss_ps(_mm_movehdup_ps(ds)), summs[c]);
        }
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            const __m512i q = both256(p0 + 32 * k, p1 + 32 * k);
            __m512i lo = _mm512_and_si512(q, m4), hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
            if (q5) high_bits(qh, k, &lo, &hi);
#pragma GCC unroll 2
            for (int c = 0; c < ncol; c++)
                lanes_add(acc[c], k, d[c], lo, hi, y[c][b].qs, _mm512_setzero_si512(), _mm512_setzero_si512(), vnni);
        }
    }
#pragma GCC unroll 2
    for (int c = 0; c < ncol; c++) _mm512_storeu_ps(s + (size_t)c * ldo, _mm512_add_ps(lanes_sum(acc[c]), summs[c]));
}

/* -16 sum(y) of each 4-byte group of a Q8_0 block: where Q5_0's chains
 * start (cols_q5_0 says why). */
INLINE void q5_0_corr(const qt_block_q8_0 *yb, int32_t corr[8], const int vnni)
{
    const __m256i yv = _mm256_loadu_si256((const __m256i *)yb->qs), one = _mm256_set1_epi8(1);
    __m256i sum;
    if (vnni) {
        sum = _mm256_setzero_si256();
        __asm__("%{evex%} vpdpbusd %2, %1, %0" : "+v"(sum) : "v"(one), "v"(yv));
    } else {
        sum = _mm256_madd_epi16(_mm256_maddubs_epi16(one, yv), _mm256_set1_epi16(1));
    }
    _mm256_store_si256((__m256i *)corr, _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sum, 4)));
}

/* cols_q4_1 and cols_q5_0 for many columns: a step of MANY_BLOCKS blocks
 * is decoded once into L1 for up to MANY_COLS columns, which then run one
 * after another from there (two at a time, those split each chunk's
 * nibbles again for every pair; a batched step has 8 to 64 columns).
 * Each output takes their float steps in their order, so the same bits. */
#define MANY_BLOCKS 8
#define MANY_COLS 16

typedef struct q41_block {
    __m512i lo[4], hi[4]; /* vector k's low and high quants (Q5_0, Q5_1: with their fifth bits) */
    __m512 dx, mx;
} q41_block;

INLINE void decode_q4_1(const uint8_t *p0, const uint8_t *p1, const int q5, q41_block *o)
{
    const size_t at_d = q5 ? 160 : 128;
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    const __m512i qh = q5 ? both256(p0 + 128, p1 + 128) : _mm512_setzero_si512();
    o->dx = both_f16(p0 + at_d, p1 + at_d);
    o->mx = q5 == 1 ? _mm512_setzero_ps() : both_f16(p0 + at_d + 16, p1 + at_d + 16); /* Q5_0 has no m */
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        const __m512i q = both256(p0 + 32 * k, p1 + 32 * k);
        __m512i lo = _mm512_and_si512(q, m4), hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
        if (q5) high_bits(qh, k, &lo, &hi);
        o->lo[k] = lo;
        o->hi[k] = hi;
    }
}

INLINE void cols_q4_1_many(int nb, float *s, size_t ldo, const uint8_t *h0, const uint8_t *h1, const uint8_t *y,
                           size_t y_stride, int nc, const int vnni, const int q5)
{
    const size_t bs = q5 == 1 ? QT_X16_Q5_0_BLOCK : q5 ? QT_X16_Q5_1_BLOCK : QT_X16_Q4_1_BLOCK;
    q41_block w[MANY_BLOCKS];
    __m512 acc[MANY_COLS][8], summs[MANY_COLS];
    for (int c0 = 0; c0 < nc; c0 += MANY_COLS) {
        const int ncg = nc - c0 < MANY_COLS ? nc - c0 : MANY_COLS;
        for (int c = 0; c < ncg; c++) {
            summs[c] = _mm512_setzero_ps();
            for (int k = 0; k < 8; k++) acc[c][k] = _mm512_setzero_ps();
        }
        for (int b0 = 0; b0 < nb; b0 += MANY_BLOCKS) {
            const int nbs = nb - b0 < MANY_BLOCKS ? nb - b0 : MANY_BLOCKS;
            for (int b = 0; b < nbs; b++) {
                const uint8_t *p0 = h0 + (size_t)(b0 + b) * bs, *p1 = h1 + (size_t)(b0 + b) * bs;
                prefetch_halves(p0, p1, q5 == 1 ? (b0 + b) % 4 != 3 : q5 || ((b0 + b) & 1));
                decode_q4_1(p0, p1, q5, &w[b]);
            }
            for (int c = 0; c < ncg; c++) {
                const uint8_t *yc0 = y + (size_t)(c0 + c) * y_stride;
                __m512 a[8], sm = summs[c];
#pragma GCC unroll 8
                for (int k = 0; k < 8; k++) a[k] = acc[c][k];
                for (int b = 0; b < nbs; b++) {
                    __m512 d;
                    _Alignas(32) int32_t corr[8] = {0}; /* where the chains start */
                    const int8_t *qs;
                    if (q5 == 1) { /* Q5_0 against Q8_0: no m, chains from -16 sum(y) */
                        const qt_block_q8_0 *yb = (const qt_block_q8_0 *)yc0 + b0 + b;
                        d = _mm512_mul_ps(w[b].dx, _mm512_set1_ps(_cvtsh_ss(yb->d)));
                        q5_0_corr(yb, corr, vnni);
                        qs = yb->qs;
                    } else {
                        const qt_block_q8_1 *yb = (const qt_block_q8_1 *)yc0 + b0 + b;
                        int32_t h;
                        memcpy(&h, yb, sizeof h); /* d, s */
                        const __m128 ds = _mm_cvtph_ps(_mm_cvtsi32_si128(h));
                        d = _mm512_mul_ps(w[b].dx, _mm512_broadcastss_ps(ds));
                        sm = _mm512_fmadd_ps(w[b].mx, _mm512_broadcastss_ps(_mm_movehdup_ps(ds)), sm);
                        qs = yb->qs;
                    }
#pragma GCC unroll 4
                    for (int k = 0; k < 4; k++)
                        lanes_add(a, k, d, w[b].lo[k], w[b].hi[k], qs, _mm512_set1_epi32(corr[k]),
                                  _mm512_set1_epi32(corr[k + 4]), vnni);
                }
#pragma GCC unroll 8
                for (int k = 0; k < 8; k++) acc[c][k] = a[k];
                summs[c] = sm;
            }
        }
        for (int c = 0; c < ncg; c++)
            _mm512_storeu_ps(s + (size_t)(c0 + c) * ldo,
                             q5 == 1 ? lanes_sum(acc[c]) : _mm512_add_ps(lanes_sum(acc[c]), summs[c]));
    }
}

/* Q5_0: vector k lane r holds the unsigned 5-bit values u = nibble +
 * 16 * high bit of row r's group (elements 4k..4k+3, or 16+4k.. for the
 * high nibbles), which vec_dot's signed q = u - 16 gives as
 * sum(q y) = sum(u y) - 16 sum(y), exact in int32 either way: the
 * accumulator starts from -16 sum(y) of the column's group (a dword per
 * group, made once per block and column for all 16 rows); the high
 * bits as high_bits adds them. */
INLINE void cols_q5_0(int nb, float *s, size_t ldo, const uint8_t *h0, const uint8_t *h1, const qt_block_q8_0 *const *y,
                      const int ncol, const int vnni)
{
    __m512 acc[2][8];
#pragma GCC unroll 2
    for (int c = 0; c < ncol; c++)
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) acc[c][k] = _mm512_setzero_ps();
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    _Alignas(32) int32_t corr[2][8];
    for (int b = 0; b < nb; b++) {
        const uint8_t *p0 = h0 + (size_t)b * QT_X16_Q5_0_BLOCK, *p1 = h1 + (size_t)b * QT_X16_Q5_0_BLOCK;
        prefetch_halves(p0, p1, b % 4 != 3); /* a block is 2.75 lines */
        const __m512 dx = both_f16(p0 + 160, p1 + 160);
        const __m512i qh = both256(p0 + 128, p1 + 128);
        __m512 d[2];
#pragma GCC unroll 2
        for (int c = 0; c < ncol; c++) {
            d[c] = _mm512_mul_ps(dx, _mm512_set1_ps(_cvtsh_ss(y[c][b].d)));
            q5_0_corr(&y[c][b], corr[c], vnni);
        }
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            const __m512i q = both256(p0 + 32 * k, p1 + 32 * k);
            __m512i lo = _mm512_and_si512(q, m4), hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
            high_bits(qh, k, &lo, &hi);
#pragma GCC unroll 2
            for (int c = 0; c < ncol; c++)
                lanes_add(acc[c], k, d[c], lo, hi, y[c][b].qs, _mm512_set1_epi32(corr[c][k]),
                          _mm512_set1_epi32(corr[c][k + 4]), vnni);
        }
    }
#pragma GCC unroll 2
    for (int c = 0; c < ncol; c++) _mm512_storeu_ps(s + (size_t)c * ldo, lanes_sum(acc[c]));
}

/* Q8_0 (AVX512-VNNI only): vector j of a block holds rows 2j and 2j + 1,
 * 32 bytes each, so its sixteen 4-byte sums are those rows' vec_dot
 * lanes, and acc[j] carries them (the Q4_1 kernels' acc[k] holds lane k
 * of 16 rows instead: there one nibble split serves 16 rows, here there
 * is nothing to split, and a row's block stays one run for the tile
 * kernels).  vpdpbusd wants one operand unsigned: the weights flipped to
 * x + 128 (one xor per vector, shared by the columns) and the column's
 * signed bytes, broadcast to both halves, from -128·Σy per lane (a dword
 * per lane, made once per block and column), leave Σxy exactly, -128s
 * included.  The scale dx·dy, one product per row as vec_dot's, is
 * spread to each row's lanes by a permute. */
/* hsum_ps of each 256-bit half of a, as a float pair: rows 2j (lane 0)
 * and 2j + 1 (lane 8); the same additions as qt_hsum8's, in its order. */
INLINE __m512 halves_sum(__m512 a)
{
    a = _mm512_add_ps(a, _mm512_shuffle_f32x4(a, a, _MM_SHUFFLE(2, 3, 0, 1))); /* i + (i + 4) */
    a = _mm512_add_ps(a, _mm512_permute_ps(a, _MM_SHUFFLE(1, 0, 3, 2)));        /* (0 + 2), (1 + 3) */
    return _mm512_add_ps(a, _mm512_permute_ps(a, _MM_SHUFFLE(2, 3, 0, 1)));     /* + each other */
}

/* The lines of a block's quants, 1 KB ahead into L1 and 3 KB into L2 as
 * prefetch_halves asks; past the group's last block that is the next
 * group, its scales first (repack.h), in the order they are read. */
INLINE void prefetch_q8_0(const uint8_t *q)
{
    for (int o = 0; o < 512; o += 64) {
        _mm_prefetch((const char *)q + 1024 + o, _MM_HINT_T0);
        _mm_prefetch((const char *)q + 3072 + o, _MM_HINT_T1);
    }
}

INLINE void cols_q8_0(int nb, float *s, size_t ldo, const uint8_t *g, const qt_block_q8_0 *const *y, const int ncol)
{
    __m512 acc[2][8];
#pragma GCC unroll 2
    for (int c = 0; c < ncol; c++)
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) acc[c][j] = _mm512_setzero_ps();
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    for (int b = 0; b < nb; b++) {
        const uint8_t *q = g + qt_x16_q8_0_quants(b, nb);
        prefetch_q8_0(q);
        const __m512 dx = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(g + qt_x16_q8_0_scales(b))));
        __m512 d[2];
        __m512i yb[2], init[2];
#pragma GCC unroll 2
        for (int c = 0; c < ncol; c++) {
            d[c] = _mm512_mul_ps(dx, _mm512_set1_ps(_cvtsh_ss(y[c][b].d)));
            yb[c] = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)y[c][b].qs));
            init[c] = _mm512_sub_epi32(_mm512_setzero_si512(), qt_dpbusd512(_mm512_setzero_si512(), flip, yb[c]));
        }
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) {
            const __m512i x = _mm512_xor_si512(_mm512_loadu_si512(q + 64 * j), flip);
            const __m512i rows = _mm512_set_epi32(2 * j + 1, 2 * j + 1, 2 * j + 1, 2 * j + 1, 2 * j + 1, 2 * j + 1,
                                                  2 * j + 1, 2 * j + 1, 2 * j, 2 * j, 2 * j, 2 * j, 2 * j, 2 * j,
                                                  2 * j, 2 * j);
#pragma GCC unroll 2
            for (int c = 0; c < ncol; c++)
                acc[c][j] = _mm512_fmadd_ps(_mm512_permutexvar_ps(rows, d[c]),
                                            _mm512_cvtepi32_ps(qt_dpbusd512(init[c], x, yb[c])), acc[c][j]);
        }
    }
#pragma GCC unroll 2
    for (int c = 0; c < ncol; c++) {
        _Alignas(64) float h[16], o[16];
        for (int j = 0; j < 8; j++) {
            _mm512_store_ps(h, halves_sum(acc[c][j]));
            o[2 * j] = h[0], o[2 * j + 1] = h[8];
        }
        _mm512_storeu_ps(s + (size_t)c * ldo, _mm512_load_ps(o));
    }
}

void qt_avx512_vnni_x16_dot_q8_0(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride,
                                 int nc)
{
    for (int c = 0; c < nc; c += 2) {
        const qt_block_q8_0 *yc[2] = {(const qt_block_q8_0 *)((const uint8_t *)y + (size_t)c * y_stride),
                                      (const qt_block_q8_0 *)((const uint8_t *)y + (size_t)(c + (nc - c >= 2)) * y_stride)};
        if (nc - c >= 2)
            cols_q8_0(n / 32, s + (size_t)c * ldo, ldo, group, yc, 2);
        else
            cols_q8_0(n / 32, s + (size_t)c * ldo, ldo, group, yc, 1);
    }
}

/* A group's rows times nc columns (Q5_0 times Q8_0 where q5 == 1, Q5_1
 * times Q8_1 where q5 == 2, else Q4_1 times Q8_1): 8 or more through
 * cols_q4_1_many, fewer two at a time, then the last one alone. */
INLINE void dot_x16(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride, int nc,
                    const int vnni, const int q5)
{
    const int nb = n / 32;
    const size_t bs = q5 == 1 ? QT_X16_Q5_0_BLOCK : q5 ? QT_X16_Q5_1_BLOCK : QT_X16_Q4_1_BLOCK;
    const uint8_t *h0 = group, *h1 = h0 + (size_t)nb * bs;
    if (nc >= 8) { /* at 4 the pairs ran 1.15x */
        cols_q4_1_many(nb, s, ldo, h0, h1, y, y_stride, nc, vnni, q5);
        return;
    }
    for (int c = 0; c < nc; c += 2) {
        const int two = nc - c >= 2;
        const void *yc[2] = {(const uint8_t *)y + (size_t)c * y_stride, (const uint8_t *)y + (size_t)(c + two) * y_stride};
        float *sc = s + (size_t)c * ldo;
        if (q5 == 1 && two)
            cols_q5_0(nb, sc, ldo, h0, h1, (const qt_block_q8_0 *const *)yc, 2, vnni);
        else if (q5 == 1)
            cols_q5_0(nb, sc, ldo, h0, h1, (const qt_block_q8_0 *const *)yc, 1, vnni);
        else if (two)
            cols_q4_1(nb, sc, ldo, h0, h1, (const qt_block_q8_1 *const *)yc, 2, vnni, q5);
        else
            cols_q4_1(nb, sc, ldo, h0, h1, (const qt_block_q8_1 *const *)yc, 1, vnni, q5);
    }
}

void qt_avx512_x16_dot_q4_1(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride, int nc)
{
    dot_x16(n, s, ldo, group, y, y_stride, nc, 0, 0);
}

void qt_avx512_vnni_x16_dot_q4_1(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride,
                                 int nc)
{
    dot_x16(n, s, ldo, group, y, y_stride, nc, 1, 0);
}

void qt_avx512_x16_dot_q5_0(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride, int nc)
{
    dot_x16(n, s, ldo, group, y, y_stride, nc, 0, 1);
}

void qt_avx512_vnni_x16_dot_q5_0(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride,
                                 int nc)
{
    dot_x16(n, s, ldo, group, y, y_stride, nc, 1, 1);
}

void qt_avx512_x16_dot_q5_1(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride, int nc)
{
    dot_x16(n, s, ldo, group, y, y_stride, nc, 0, 2);
}

void qt_avx512_vnni_x16_dot_q5_1(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride,
                                 int nc)
{
    dot_x16(n, s, ldo, group, y, y_stride, nc, 1, 2);
}

#endif
