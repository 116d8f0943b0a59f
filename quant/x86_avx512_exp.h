/* x86_avx512_exp.h - ggml_v_expf on 16 lanes (f32ops.h's exp16), for the
 * AVX-512 files that need it inside their loops (the reference is
 * f32ops.c's ref_expf, lane by lane), and qt_reduce16 on a register. */
#ifndef QLM_QT_X86_AVX512_EXP_H
#define QLM_QT_X86_AVX512_EXP_H

#include <immintrin.h>

/* qt_reduce16's tree (GCC's _mm512_reduce_add_ps, spelled out so the
 * order is ours to keep) on one register. */
static inline float qt_reduce16v16(__m512 a)
{
    const __m256 t = _mm256_add_ps(_mm512_extractf32x8_ps(a, 1), _mm512_castps512_ps256(a));
    const __m128 u = _mm_add_ps(_mm256_extractf128_ps(t, 1), _mm256_castps256_ps128(t));
    const __m128 v = _mm_add_ps(u, _mm_permute_ps(u, 0x4e));
    return _mm_cvtss_f32(_mm_add_ss(v, _mm_shuffle_ps(v, v, 0x55)));
}

static inline __m512 qt_expv16(__m512 xv)
{
    const __m512 r = _mm512_set1_ps(0x1.8p23f);
    const __m512 z = _mm512_fmadd_ps(xv, _mm512_set1_ps(0x1.715476p+0f), r);
    const __m512 n = _mm512_sub_ps(z, r);
    const __m512 b = _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.7f7d1cp-20f),
                                      _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e4p-1f), xv));
    const __mmask16 big = _mm512_cmp_ps_mask(_mm512_abs_ps(n), _mm512_set1_ps(192), _CMP_GT_OQ);
    const __m512 u = _mm512_mul_ps(b, b);
    const __m512 j = _mm512_fmadd_ps(
        _mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_set1_ps(0x1.0e4020p-7f), b, _mm512_set1_ps(0x1.573e2ep-5f)), u,
                        _mm512_fmadd_ps(_mm512_set1_ps(0x1.555e66p-3f), b, _mm512_set1_ps(0x1.fffdb6p-2f))),
        u, _mm512_fmadd_ps(_mm512_set1_ps(0x1.ffffecp-1f), b, _mm512_set1_ps(1.0f)));
    __m512 res = _mm512_scalef_ps(j, n);
    if (big) {
        const __m512 alt = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(n, _mm512_setzero_ps(), _CMP_LE_OQ),
                                                _mm512_set1_ps(__builtin_inff()), _mm512_setzero_ps());
        res = _mm512_mask_blend_ps(big, res, alt);
    }
    return res;
}

#endif
