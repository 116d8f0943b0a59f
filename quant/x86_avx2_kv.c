/* x86_avx2_kv.c - kv_ops.h with AVX2 (+F16C), and with AVX-VNNI.
 *
 * Bit-identical to kv_ref.c: integer dots are exact, and the float
 * kernels run the reference's per-element FMA chains side by side in the
 * vector lanes (8 elements of the head dimension per register). */
#if defined(__x86_64__)

#include <immintrin.h>
#include <math.h>

#include "f32ops.h"
#include "fp16.h"
#include "kv_ops.h"

#define INLINE static inline __attribute__((always_inline))
#define QT_X86_DPBUSD "%{vex%} vpdpbusd %2, %1, %0"
#include "x86_simd.h"

/* q and k are in [-127, 127], so |q| and sign(k, q) feed the unsigned x
 * signed byte product exactly (no -128, and pairs stay under 2^15). */
INLINE void qk_i8_body(int n, int d, const int8_t *q, float qd, const int8_t *k, int64_t ldk,
                       const float *kd, int64_t lds, const int32_t *idx, float *s, const int vnni)
{
    const int d32 = d & ~31;
    for (int r = 0; r < n; r++) {
        const int64_t c = idx ? idx[r] : r;
        const int8_t *kr = k + c * ldk;
        __m256i acc = _mm256_setzero_si256();
        for (int e = 0; e < d32; e += 32) {
            const __m256i vq = load256(q + e), vk = load256(kr + e);
            acc = _mm256_add_epi32(acc, dot4(_mm256_abs_epi8(vq), _mm256_sign_epi8(vk, vq), vnni));
        }
        int32_t sum = hsum_epi32(acc);
        for (int e = d32; e < d; e++) sum += (int32_t)q[e] * kr[e];
        s[r] = (float)sum * (qd * kd[c * lds]);
    }
}

static void qk_i8(int n, int d, const int8_t *q, float qd, const int8_t *k, int64_t ldk,
                  const float *kd, int64_t lds, const int32_t *idx, float *s)
{
    qk_i8_body(n, d, q, qd, k, ldk, kd, lds, idx, s, 0);
}

static void qk_i8_vnni(int n, int d, const int8_t *q, float qd, const int8_t *k, int64_t ldk,
                       const float *kd, int64_t lds, const int32_t *idx, float *s)
{
    qk_i8_body(n, d, q, qd, k, ldk, kd, lds, idx, s, 1);
}

/* Lanes 0-7 and 8-15 of the reference's 16 accumulators in two registers. */
static void qk_f16(int n, int d, const float *q, float scale, const uint16_t *k, int64_t ldk,
                   const int32_t *idx, float *s)
{
    const int d16 = d & ~15;
    for (int r = 0; r < n; r++) {
        const uint16_t *kr = k + (idx ? idx[r] : r) * ldk;
        __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
        for (int e = 0; e < d16; e += 16) {
            lo = _mm256_fmadd_ps(_mm256_loadu_ps(q + e), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kr + e))), lo);
            hi = _mm256_fmadd_ps(_mm256_loadu_ps(q + e + 8),
                                 _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(kr + e + 8))), hi);
        }
        float acc[16];
        _mm256_storeu_ps(acc, lo);
        _mm256_storeu_ps(acc + 8, hi);
        for (int e = d16; e < d; e++) acc[e % 16] = fmaf(q[e], qt_f16_to_f32(kr[e]), acc[e % 16]);
        s[r] = qt_reduce16(acc) * scale;
    }
}

/* Widens 8 values of V row c at element e to float. */
INLINE __m256 v8_i8(const int8_t *p) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p))); }
INLINE __m256 v8_f16(const uint16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }

/* One body for both element types: rows of 32 elements at a time keep
 * 4 registers x 2 chains of FMAs in flight; the reference's chain for
 * element e is lane e of these. */
#define PV_BODY(T, LOAD8, TOF, WEIGHT)                                                        \
    const int d32 = d & ~31, d8 = d & ~7;                                                   \
    int e0 = 0;                                                                             \
    for (; e0 < d32; e0 += 32) {                                                            \
        __m256 a[2][4];                                                                     \
        for (int i = 0; i < 4; i++) a[0][i] = a[1][i] = _mm256_setzero_ps();                \
        for (int r = 0; r < n; r++) {                                                       \
            const int64_t c = idx ? idx[r] : r;                                             \
            const T *vr = v + c * ldv + e0;                                                 \
            const __m256 w = _mm256_set1_ps(WEIGHT);                                        \
            for (int i = 0; i < 4; i++) a[r & 1][i] = _mm256_fmadd_ps(w, LOAD8(vr + 8 * i), a[r & 1][i]); \
        }                                                                                   \
        for (int i = 0; i < 4; i++) _mm256_storeu_ps(out + e0 + 8 * i, _mm256_add_ps(a[0][i], a[1][i])); \
    }                                                                                       \
    for (; e0 < d8; e0 += 8) {                                                              \
        __m256 a0 = _mm256_setzero_ps(), a1 = a0;                                           \
        for (int r = 0; r < n; r++) {                                                       \
            const int64_t c = idx ? idx[r] : r;                                             \
            const __m256 w = _mm256_set1_ps(WEIGHT), x = LOAD8(v + c * ldv + e0);           \
            if (r & 1) a1 = _mm256_fmadd_ps(w, x, a1); else a0 = _mm256_fmadd_ps(w, x, a0); \
        }                                                                                   \
        _mm256_storeu_ps(out + e0, _mm256_add_ps(a0, a1));                                  \
    }                                                                                       \
    for (; e0 < d; e0++) {                                                                  \
        float acc[2] = {0.0f, 0.0f};                                                        \
        for (int r = 0; r < n; r++) {                                                       \
            const int64_t c = idx ? idx[r] : r;                                             \
            acc[r & 1] = fmaf(WEIGHT, TOF(v[c * ldv + e0]), acc[r & 1]);                    \
        }                                                                                   \
        out[e0] = acc[0] + acc[1];                                                          \
    }

static void pv_i8(int n, int d, const int8_t *v, int64_t ldv, const float *vd, int64_t lds,
                  const int32_t *idx, const float *p, float *out)
{
    PV_BODY(int8_t, v8_i8, (float), p[r] * vd[c * lds])
}

static void pv_f16(int n, int d, const uint16_t *v, int64_t ldv, const int32_t *idx,
                   const float *p, float *out)
{
    PV_BODY(uint16_t, v8_f16, qt_f16_to_f32, p[r])
}

const qt_kv_ops qt_kv_avx2 = {.name = "avx2", .qk_i8 = qk_i8, .qk_f16 = qk_f16, .pv_i8 = pv_i8, .pv_f16 = pv_f16};
const qt_kv_ops qt_kv_avx2_vnni = {.name = "avx2-vnni", .qk_i8 = qk_i8_vnni, .qk_f16 = qk_f16,
                                   .pv_i8 = pv_i8, .pv_f16 = pv_f16};

#else
typedef int qt_x86_avx2_kv_unused;
#endif
