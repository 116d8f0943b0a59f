/* x86_avx2_rows.h - 8 weight rows turned into row-per-lane form with
 * AVX2 (lane r of a vector holds 4 bytes of row r), and the 4 activation
 * bytes those lanes multiply, broadcast.  Shared by the AVX2 kernels that
 * give each row an int32 lane (x86_avx2_wide.c, x86_avx2_tiled.c);
 * included only by files compiled with -mavx2. */
#ifndef QLM_QT_X86_AVX2_ROWS_H
#define QLM_QT_X86_AVX2_ROWS_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifndef INLINE
#define INLINE static inline __attribute__((always_inline))
#endif

INLINE __m256i bcast4(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm256_set1_epi32(v);
}

/* Loads turned into row-per-lane form: v[k] lane r = dword k of the 16
 * bytes at p + r * stride, for 8 rows.  Rows i and i + 4 share a register
 * (one per 128-bit lane), then a 4x4 dword transpose inside each lane. */
INLINE void load8x4(const uint8_t *p, size_t stride, __m256i v[4])
{
    __m256i a[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
        a[i] = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(p + i * stride))),
                                       _mm_loadu_si128((const __m128i *)(p + (i + 4) * stride)), 1);
    const __m256i t0 = _mm256_unpacklo_epi32(a[0], a[1]), t1 = _mm256_unpackhi_epi32(a[0], a[1]);
    const __m256i t2 = _mm256_unpacklo_epi32(a[2], a[3]), t3 = _mm256_unpackhi_epi32(a[2], a[3]);
    v[0] = _mm256_unpacklo_epi64(t0, t2);
    v[1] = _mm256_unpackhi_epi64(t0, t2);
    v[2] = _mm256_unpacklo_epi64(t1, t3);
    v[3] = _mm256_unpackhi_epi64(t1, t3);
}

/* 32 bytes per row: v[k], k < 8. */
INLINE void load8x8(const uint8_t *p, size_t stride, __m256i v[8])
{
    load8x4(p, stride, v);
    load8x4(p + 16, stride, v + 4);
}

#endif
