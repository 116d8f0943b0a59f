/* x86_avx2_repack.c - AVX2 + FMA + F16C versions of quant/repack_ref.c.
 *
 * Compiled with -mavx2 -mfma -mf16c; reached only through qt_repack() when
 * the CPU has them.  Bit-identical to the reference: the integer block sums
 * are exact (unsigned nibbles times signed bytes with maddubs, which cannot
 * saturate at 15 * 128 * 2, then minus 8 * sum(y)), and the float work is
 * the same one multiply and one fma per block and output, in block order. */
#if defined(__x86_64__)

#include <immintrin.h>

#include "blocks.h"
#include "ref.h"
#include "repack.h"

#define INLINE static inline __attribute__((always_inline))

/* The 32 nibbles of a Q4_0 block as unsigned bytes, in element order. */
INLINE __m256i nibbles(const qt_block_q4_0 *x)
{
    const __m128i q = _mm_loadu_si128((const __m128i *)x->qs);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0f));
}

/* 8 int32 partial sums of nib * y. */
INLINE __m256i partial(__m256i nib, __m256i y)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(nib, y), _mm256_set1_epi16(1));
}

/* Lane r of the result = sum of the 8 lanes of v[r]. */
INLINE __m256i hsum8x8(const __m256i v[8])
{
    const __m256i h0 = _mm256_hadd_epi32(v[0], v[1]), h1 = _mm256_hadd_epi32(v[2], v[3]);
    const __m256i h2 = _mm256_hadd_epi32(v[4], v[5]), h3 = _mm256_hadd_epi32(v[6], v[7]);
    const __m256i g0 = _mm256_hadd_epi32(h0, h1), g1 = _mm256_hadd_epi32(h2, h3);
    return _mm256_add_epi32(_mm256_permute2x128_si256(g0, g1, 0x20),
                            _mm256_permute2x128_si256(g0, g1, 0x31));
}

/* 8 * sum(y) broadcast to all lanes. */
INLINE __m256i sum_y_x8(__m256i y)
{
    const __m256i s = partial(_mm256_set1_epi8(1), y);
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4e));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1));
    return _mm256_slli_epi32(_mm256_broadcastd_epi32(t), 3);
}

/* The 8 rows' f16 scales of block b, widened (exactly). */
INLINE __m256 row_scales(const qt_block_q4_0 *const xr[8], int b)
{
    const __m128i h = _mm_setr_epi16((short)xr[0][b].d, (short)xr[1][b].d, (short)xr[2][b].d,
                                     (short)xr[3][b].d, (short)xr[4][b].d, (short)xr[5][b].d,
                                     (short)xr[6][b].d, (short)xr[7][b].d);
    return _mm256_cvtph_ps(h);
}

INLINE float f16(uint16_t h)
{
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}

/* Accumulates `ncols` columns (1 or 4) of one 8-row group. */
INLINE void q4_0_8rows(int n, float *s, size_t ldo, const void *w, size_t w_stride,
                       const void *y, size_t y_stride, int ncols)
{
    const qt_block_q4_0 *xr[8];
    for (int r = 0; r < 8; r++) xr[r] = (const void *)((const uint8_t *)w + r * w_stride);
    const qt_block_q8_0 *yc[QT_RP_COLS];
    for (int c = 0; c < ncols; c++) yc[c] = (const void *)((const uint8_t *)y + c * y_stride);
    __m256 acc[QT_RP_COLS];
    for (int c = 0; c < ncols; c++) acc[c] = _mm256_setzero_ps();
    for (int b = 0; b < n / QT_QK4_0; b++) {
        __m256i nib[8];
        for (int r = 0; r < 8; r++) nib[r] = nibbles(&xr[r][b]);
        const __m256 dw = row_scales(xr, b);
        for (int c = 0; c < ncols; c++) {
            const __m256i yv = _mm256_loadu_si256((const __m256i *)yc[c][b].qs);
            __m256i p[8];
            for (int r = 0; r < 8; r++) p[r] = partial(nib[r], yv);
            const __m256i is = _mm256_sub_epi32(hsum8x8(p), sum_y_x8(yv));
            const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(f16(yc[c][b].d)));
            acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is), d, acc[c]);
        }
    }
    for (int c = 0; c < ncols; c++) _mm256_storeu_ps(s + c * ldo, acc[c]);
}

/* IQ4_NL: Q4_0's order with table values (-127..113).  The products are
 * formed in int16 (vpmaddwd), exact for every activation byte. */
INLINE void iq4_nl_8rows(int n, float *s, size_t ldo, const void *w, size_t w_stride,
                         const void *y, size_t y_stride, int ncols)
{
    const __m128i table = _mm_loadu_si128((const __m128i *)qt_iq4nl_values);
    const qt_block_iq4_nl *xr[8];
    for (int r = 0; r < 8; r++) xr[r] = (const void *)((const uint8_t *)w + r * w_stride);
    const qt_block_q8_0 *yc[QT_RP_COLS];
    for (int c = 0; c < ncols; c++) yc[c] = (const void *)((const uint8_t *)y + c * y_stride);
    __m256 acc[QT_RP_COLS];
    for (int c = 0; c < ncols; c++) acc[c] = _mm256_setzero_ps();
    for (int b = 0; b < n / QT_QK4_NL; b++) {
        __m256i lo[8], hi[8]; /* values of elements 0-15 and 16-31, as int16 */
        uint16_t dh[8];
        /* the eight rows' lines ahead, every 4 blocks (72 bytes a row):
         * eight strided streams left to the hardware prefetchers ran at
         * 7.0 GB/s in `QLM_ISA=avx2 qlm bench --kernels` (4096 x 4096, 2
         * threads, Sapphire Rapids); 192 B into L1 and 384 B into L2
         * ahead 12.9-13.1 (512 and 2048: 9.5-10.1; 256 and 768: 11.7-11.9) */
        if (b % 4 == 0)
            for (int r = 0; r < 8; r++) {
                _mm_prefetch((const char *)&xr[r][b] + 192, _MM_HINT_T0);
                _mm_prefetch((const char *)&xr[r][b] + 384, _MM_HINT_T1);
            }
        for (int r = 0; r < 8; r++) {
            const __m128i q = _mm_loadu_si128((const __m128i *)xr[r][b].qs);
            const __m128i m4 = _mm_set1_epi8(0x0f);
            lo[r] = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(table, _mm_and_si128(q, m4)));
            hi[r] = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(q, 4), m4)));
            dh[r] = xr[r][b].d;
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)dh));
        for (int c = 0; c < ncols; c++) {
            const __m256i y0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)yc[c][b].qs));
            const __m256i y1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(yc[c][b].qs + 16)));
            __m256i p[8];
            for (int r = 0; r < 8; r++)
                p[r] = _mm256_add_epi32(_mm256_madd_epi16(lo[r], y0), _mm256_madd_epi16(hi[r], y1));
            const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(f16(yc[c][b].d)));
            acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hsum8x8(p)), d, acc[c]);
        }
    }
    for (int c = 0; c < ncols; c++) _mm256_storeu_ps(s + c * ldo, acc[c]);
}

static void gemv_iq4_nl(int n, float *s, const void *w, size_t w_stride, const void *y)
{
    iq4_nl_8rows(n, s, 0, w, w_stride, y, 0, 1);
}

static void gemm_iq4_nl(int n, float *s, size_t ldo, const void *w, size_t w_stride,
                        const void *y, size_t y_stride)
{
    iq4_nl_8rows(n, s, ldo, w, w_stride, y, y_stride, QT_RP_COLS);
}

static void gemv_q4_0(int n, float *s, const void *w, size_t w_stride, const void *y)
{
    q4_0_8rows(n, s, 0, w, w_stride, y, 0, 1);
}

static void gemm_q4_0(int n, float *s, size_t ldo, const void *w, size_t w_stride,
                      const void *y, size_t y_stride)
{
    q4_0_8rows(n, s, ldo, w, w_stride, y, y_stride, QT_RP_COLS);
}

const qt_repack_ops qt_repack_avx2 = {
    .name = "avx2",
    .gemv = {[QT_Q4_0] = gemv_q4_0, [QT_Q4_K] = qt_avx2_rp_gemv_q4_K, [QT_Q2_K] = qt_avx2_rp_gemv_q2_K,
             [QT_IQ4_NL] = gemv_iq4_nl},
    .gemm = {[QT_Q4_0] = gemm_q4_0, [QT_Q4_K] = qt_avx2_rp_gemm_q4_K, [QT_Q2_K] = qt_avx2_rp_gemm_q2_K,
             [QT_IQ4_NL] = gemm_iq4_nl},
};

#endif
