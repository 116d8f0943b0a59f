/* x86_avx2_repack_k.c - AVX2 + FMA + F16C versions of the Q4_K and Q2_K
 * repacked orders of quant/repack_ref.c (see repack.h).
 *
 * Compiled with -mavx2 -mfma -mf16c; reached only through qt_repack_avx2.
 * Bit-identical to the reference: the integer sums are exact (unsigned
 * quants of at most 4 bits times signed bytes with maddubs, which cannot
 * saturate, times the sub-block scale in int32) and the float work is the
 * same two fmas per super-block (gemv) or per group (gemm), in order. */
#if defined(__x86_64__)

#include <immintrin.h>

#include "blocks.h"
#include "repack.h"

#define INLINE static inline __attribute__((always_inline))

/* Lane r of the result = sum of the 8 lanes of v[r]. */
INLINE __m256i hsum8x8(const __m256i v[8])
{
    const __m256i h0 = _mm256_hadd_epi32(v[0], v[1]), h1 = _mm256_hadd_epi32(v[2], v[3]);
    const __m256i h2 = _mm256_hadd_epi32(v[4], v[5]), h3 = _mm256_hadd_epi32(v[6], v[7]);
    const __m256i g0 = _mm256_hadd_epi32(h0, h1), g1 = _mm256_hadd_epi32(h2, h3);
    return _mm256_add_epi32(_mm256_permute2x128_si256(g0, g1, 0x20), _mm256_permute2x128_si256(g0, g1, 0x31));
}

/* Eight f16 values, one per row, widened exactly. */
INLINE __m256 halves8(const uint16_t h[8])
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h));
}

/* Σ over the pair of 32-element sub-blocks: lo·y0·sc0 + hi·y1·sc1, 8 lanes. */
INLINE __m256i pair_q4(__m256i q, const int8_t *y, int sc0, int sc1)
{
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
    const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)y)),
                                         _mm256_set1_epi16((short)sc0));
    const __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(y + 32))),
                                         _mm256_set1_epi16((short)sc1));
    return _mm256_add_epi32(p0, p1);
}

static void q4_K_scales(const uint8_t *q, int sc[8], int m[8])
{
    for (int j = 0; j < 4; j++) {
        sc[j] = q[j] & 63;
        m[j] = q[j + 4] & 63;
    }
    for (int j = 4; j < 8; j++) {
        sc[j] = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
        m[j] = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

/* `ncols` (1: gemv order, 4: gemm order) columns of one 8-row group. */
INLINE void q4_K_8rows(int n, float *s, size_t ldo, const void *w, size_t w_stride, const void *y,
                       size_t y_stride, int ncols)
{
    const uint8_t *xr[8];
    for (int r = 0; r < 8; r++) xr[r] = (const uint8_t *)w + r * w_stride;
    const qt_block_q8_K *yc[4];
    for (int c = 0; c < ncols; c++) yc[c] = (const void *)((const uint8_t *)y + c * y_stride);
    __m256 acc[4], accm[4];
    for (int c = 0; c < ncols; c++) acc[c] = accm[c] = _mm256_setzero_ps();
    for (int b = 0; b < n / QT_QK_K; b++) {
        int sc[8][8];
        int32_t mj[8][8]; /* [sub-block][row] */
        uint16_t dh[8], mh[8];
        const qt_block_q4_K *xb[8];
        for (int r = 0; r < 8; r++) {
            xb[r] = (const qt_block_q4_K *)xr[r] + b;
            int m[8];
            q4_K_scales(xb[r]->scales, sc[r], m);
            for (int j = 0; j < 8; j++) mj[j][r] = m[j];
            dh[r] = xb[r]->d;
            mh[r] = xb[r]->dmin;
        }
        const __m256 dw = halves8(dh), dmw = halves8(mh);
        for (int c = 0; c < ncols; c++) {
            const qt_block_q8_K *yb = &yc[c][b];
            const __m256 dy = _mm256_set1_ps(yb->d);
            const __m256 d = _mm256_mul_ps(dw, dy), dm = _mm256_mul_ps(dmw, dy);
            __m256i tot[8];
            for (int r = 0; r < 8; r++) tot[r] = _mm256_setzero_si256();
            __m256i mtot = _mm256_setzero_si256();
            for (int g = 0; g < 4; g++) {
                __m256i v[8];
                for (int r = 0; r < 8; r++)
                    v[r] = pair_q4(_mm256_loadu_si256((const __m256i *)(xb[r]->qs + 32 * g)), yb->qs + 64 * g,
                                   sc[r][2 * g], sc[r][2 * g + 1]);
                /* pair sums of the bsums in int16, as vphaddw forms them */
                const int b0 = (int16_t)(yb->bsums[4 * g] + yb->bsums[4 * g + 1]);
                const int b1 = (int16_t)(yb->bsums[4 * g + 2] + yb->bsums[4 * g + 3]);
                const __m256i im = _mm256_add_epi32(
                    _mm256_mullo_epi32(_mm256_loadu_si256((const __m256i *)mj[2 * g]), _mm256_set1_epi32(b0)),
                    _mm256_mullo_epi32(_mm256_loadu_si256((const __m256i *)mj[2 * g + 1]), _mm256_set1_epi32(b1)));
                if (ncols == 1) {
                    for (int r = 0; r < 8; r++) tot[r] = _mm256_add_epi32(tot[r], v[r]);
                    mtot = _mm256_add_epi32(mtot, im);
                } else {
                    acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hsum8x8(v)), d, acc[c]);
                    accm[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(im), dm, accm[c]);
                }
            }
            if (ncols == 1) {
                acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hsum8x8(tot)), d, acc[c]);
                accm[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mtot), dm, accm[c]);
            }
        }
    }
    for (int c = 0; c < ncols; c++) _mm256_storeu_ps(s + c * ldo, _mm256_sub_ps(acc[c], accm[c]));
}

/* Q2_K: a quarter q of group g holds sub-blocks 8g+2q and 8g+2q+1. */
INLINE __m256i quarter_q2(__m256i q, int quarter, const int8_t *y, int sc0, int sc1)
{
    const __m256i v = _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * quarter)), _mm256_set1_epi8(3));
    const __m256i scv = _mm256_setr_m128i(_mm_set1_epi16((short)sc0), _mm_set1_epi16((short)sc1));
    return _mm256_madd_epi16(_mm256_maddubs_epi16(v, _mm256_loadu_si256((const __m256i *)y)), scv);
}

INLINE void q2_K_8rows(int n, float *s, size_t ldo, const void *w, size_t w_stride, const void *y,
                       size_t y_stride, int ncols)
{
    const uint8_t *xr[8];
    for (int r = 0; r < 8; r++) xr[r] = (const uint8_t *)w + r * w_stride;
    const qt_block_q8_K *yc[4];
    for (int c = 0; c < ncols; c++) yc[c] = (const void *)((const uint8_t *)y + c * y_stride);
    __m256 acc[4], accm[4];
    for (int c = 0; c < ncols; c++) acc[c] = accm[c] = _mm256_setzero_ps();
    for (int b = 0; b < n / QT_QK_K; b++) {
        int32_t mj[16][8]; /* [sub-block][row] */
        uint16_t dh[8], mh[8];
        const qt_block_q2_K *xb[8];
        for (int r = 0; r < 8; r++) {
            xb[r] = (const qt_block_q2_K *)xr[r] + b;
            for (int j = 0; j < 16; j++) mj[j][r] = xb[r]->scales[j] >> 4;
            dh[r] = xb[r]->d;
            mh[r] = xb[r]->dmin;
        }
        const __m256 dw = halves8(dh), dmw = halves8(mh);
        for (int c = 0; c < ncols; c++) {
            const qt_block_q8_K *yb = &yc[c][b];
            const __m256 dy = _mm256_set1_ps(yb->d);
            const __m256 d = _mm256_mul_ps(dw, dy), dm = _mm256_mul_ps(dmw, dy);
            __m256i tot[8];
            for (int r = 0; r < 8; r++) tot[r] = _mm256_setzero_si256();
            __m256i mtot = _mm256_setzero_si256();
            for (int g = 0; g < 2; g++) {
                __m256i v[8];
                for (int r = 0; r < 8; r++) {
                    const __m256i q = _mm256_loadu_si256((const __m256i *)(xb[r]->qs + 32 * g));
                    const uint8_t *scb = xb[r]->scales + 8 * g;
                    __m256i t = _mm256_setzero_si256();
                    for (int k = 0; k < 4; k++)
                        t = _mm256_add_epi32(t, quarter_q2(q, k, yb->qs + 128 * g + 32 * k, scb[2 * k] & 0xf,
                                                           scb[2 * k + 1] & 0xf));
                    v[r] = t;
                }
                __m256i im = _mm256_setzero_si256();
                for (int j = 8 * g; j < 8 * g + 8; j++)
                    im = _mm256_add_epi32(im, _mm256_mullo_epi32(_mm256_loadu_si256((const __m256i *)mj[j]),
                                                                 _mm256_set1_epi32(yb->bsums[j])));
                if (ncols == 1) {
                    for (int r = 0; r < 8; r++) tot[r] = _mm256_add_epi32(tot[r], v[r]);
                    mtot = _mm256_add_epi32(mtot, im);
                } else {
                    acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hsum8x8(v)), d, acc[c]);
                    accm[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(im), dm, accm[c]);
                }
            }
            if (ncols == 1) {
                acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hsum8x8(tot)), d, acc[c]);
                accm[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mtot), dm, accm[c]);
            }
        }
    }
    for (int c = 0; c < ncols; c++) _mm256_storeu_ps(s + c * ldo, _mm256_sub_ps(acc[c], accm[c]));
}

void qt_avx2_rp_gemv_q4_K(int n, float *s, const void *w, size_t w_stride, const void *y)
{
    q4_K_8rows(n, s, 0, w, w_stride, y, 0, 1);
}

void qt_avx2_rp_gemm_q4_K(int n, float *s, size_t ldo, const void *w, size_t w_stride, const void *y,
                          size_t y_stride)
{
    q4_K_8rows(n, s, ldo, w, w_stride, y, y_stride, 4);
}

void qt_avx2_rp_gemv_q2_K(int n, float *s, const void *w, size_t w_stride, const void *y)
{
    q2_K_8rows(n, s, 0, w, w_stride, y, 0, 1);
}

void qt_avx2_rp_gemm_q2_K(int n, float *s, size_t ldo, const void *w, size_t w_stride, const void *y,
                          size_t y_stride)
{
    q2_K_8rows(n, s, ldo, w, w_stride, y, y_stride, 4);
}

#endif
