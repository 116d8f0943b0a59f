/* x86_avx2_exp.h - f32ops.c's ref_expf on 8 lanes (f32ops.h's exp16 as
 * two halves) and qt_reduce16 of two such halves, for the AVX2 files that
 * need them inside their loops (softmax, swiglu, the causal p.v). */
#ifndef QLM_QT_X86_AVX2_EXP_H
#define QLM_QT_X86_AVX2_EXP_H

#include <immintrin.h>

/* qt_reduce16 of the 16 lanes lo (0-7) and hi (8-15). */
static inline float qt_reduce16v8(__m256 lo, __m256 hi)
{
    const __m256 t = _mm256_add_ps(hi, lo);
    const __m128 u = _mm_add_ps(_mm256_extractf128_ps(t, 1), _mm256_castps256_ps128(t));
    const __m128 v = _mm_add_ps(u, _mm_permute_ps(u, 0x4e));
    return _mm_cvtss_f32(_mm_add_ss(v, _mm_shuffle_ps(v, v, 0x55)));
}

/* 2^k for integer k in [-126, 127], exactly. */
static inline __m256 qt_pow2v8(__m256i k)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
}

/* f32ops.c's ref_expf on 8 lanes.  j * 2^n as j * 2^a * 2^b with a =
 * floor(n / 2), b = n - a: both powers are normal for |n| <= 192, the first
 * product is exact (j is near 1), and only the second rounds, once, as
 * ldexpf does (subnormal results included). */
static inline __m256 qt_expv8(__m256 x)
{
    const __m256 r = _mm256_set1_ps(0x1.8p23f);
    const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
    const __m256 n = _mm256_sub_ps(z, r);
    const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f),
                                      _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
    const __m256 u = _mm256_mul_ps(b, b);
    const __m256 j = _mm256_fmadd_ps(
        _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                        _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
        u, _mm256_fmadd_ps(_mm256_set1_ps(0x1.ffffecp-1f), b, _mm256_set1_ps(1.0f)));
    const __m256 absn = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), n);
    const __m256 big = _mm256_cmp_ps(absn, _mm256_set1_ps(192.0f), _CMP_GT_OQ);
    /* clamped so that the powers stay valid in lanes replaced below */
    const __m256i ni = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(n, _mm256_set1_ps(-192.0f)),
                                                        _mm256_set1_ps(192.0f)));
    const __m256i a = _mm256_srai_epi32(ni, 1);
    __m256 res = _mm256_mul_ps(_mm256_mul_ps(j, qt_pow2v8(a)), qt_pow2v8(_mm256_sub_epi32(ni, a)));
    if (!_mm256_testz_ps(big, big)) {
        const __m256 alt = _mm256_blendv_ps(_mm256_set1_ps(__builtin_inff()), _mm256_setzero_ps(),
                                            _mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_LE_OQ));
        res = _mm256_blendv_ps(res, alt, big);
    }
    return res;
}

#endif
