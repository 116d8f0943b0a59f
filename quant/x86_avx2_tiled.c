/* x86_avx2_tiled.c - AVX2 version of quant/tiled_ref.c's order.
 *
 * Compiled with -mavx2 -mfma; reached through qt_tiled_row().  One weight
 * row against many activation columns: each super-block is unpacked once
 * (qt_tiled_unpack) and its exact integer sums are formed per column with
 * maddubs (unsigned quants below 64 times signed bytes: no saturation) and
 * a 16-bit scale per 16 elements; the float work is the reference's. */
#if defined(__x86_64__)

#include <immintrin.h>
#include <math.h>

#include "blocks.h"
#include "tiled.h"

#define INLINE static inline __attribute__((always_inline))

INLINE int32_t hsum_epi32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

void qt_avx2_tiled_row(qt_type type, int n, const void *vx, const void *vy, size_t y_stride, int ncols, float *out,
                       size_t out_stride)
{
    const uint8_t *x = vx;
    for (int c = 0; c < ncols; c++) out[c * out_stride] = 0.0f;
    for (int b = 0; b < n / QT_QK_K; b++) {
        qt_tiled_block k;
        const size_t size = qt_tiled_unpack(type, x, &k);
        if (!size) {
            for (int c = 0; c < ncols; c++) out[c * out_stride] = NAN;
            return;
        }
        x += size;
        __m256i q[8], scv[8];
        for (int i = 0; i < 8; i++) {
            q[i] = _mm256_loadu_si256((const __m256i *)(k.q + 32 * i));
            scv[i] = _mm256_setr_m128i(_mm_set1_epi16(k.sc[2 * i]), _mm_set1_epi16(k.sc[2 * i + 1]));
        }
        for (int c = 0; c < ncols; c++) {
            const qt_block_q8_K *y = (const qt_block_q8_K *)((const uint8_t *)vy + c * y_stride) + b;
            __m256i acc = _mm256_setzero_si256();
            for (int i = 0; i < 8; i++) {
                const __m256i p = _mm256_maddubs_epi16(q[i], _mm256_loadu_si256((const __m256i *)(y->qs + 32 * i)));
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, scv[i]));
            }
            int32_t isum = hsum_epi32(acc), imin = 0;
            if (k.bias) {
                int32_t corr = 0;
                for (int j = 0; j < 16; j++) corr += k.sc[j] * y->bsums[j];
                isum -= k.bias * corr;
            }
            float r = (float)isum * k.d;
            if (k.has_min) {
                for (int j = 0; j < 16; j++) imin += k.m[j] * y->bsums[j];
                r = fmaf(-k.dmin, (float)imin, r);
            }
            out[c * out_stride] = fmaf(r, y->d, out[c * out_stride]);
        }
    }
}

#endif
