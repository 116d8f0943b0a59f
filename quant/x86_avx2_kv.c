/* x86_avx2_kv.c - kv_ops.h with AVX2 (+F16C), and with AVX-VNNI.
 *
 * Bit-identical to kv_ref.c: integer dots are exact, and the float
 * kernels run the reference's per-element FMA chains side by side in the
 * vector lanes (8 elements of the head dimension per register). */
#if defined(__x86_64__)

#include <immintrin.h>
#include <math.h>
#include <stdalign.h>
#include <string.h>

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

/* ---- several queries over the same rows (d = 64) ----------------------
 * Each result is the one-query kernel's, bit for bit. */

/* Lane i: the sum of a[i]'s lanes (exact integer adds, any order). */
INLINE __m256i hsum8_epi32(const __m256i a[8])
{
    const __m256i t0 = _mm256_hadd_epi32(a[0], a[1]), t1 = _mm256_hadd_epi32(a[2], a[3]);
    const __m256i t2 = _mm256_hadd_epi32(a[4], a[5]), t3 = _mm256_hadd_epi32(a[6], a[7]);
    const __m256i u0 = _mm256_hadd_epi32(t0, t1), u1 = _mm256_hadd_epi32(t2, t3);
    return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20), _mm256_permute2x128_si256(u0, u1, 0x31));
}

/* q.k: 8 rows at a time, every query against them while they sit in L1,
 * the 8 rows' lane sums reduced together (one horizontal sum per row is
 * most of qk_i8's work); then qk_i8's float steps, 8 scores at once.
 * Exact for every byte, -128 included (the abs/sign trick of qk_i8 is
 * not): even and odd bytes sign-extended in place to int16, the rows'
 * once per block and each query's once, then vpmaddwd. */
INLINE __m256i even16(__m256i v) { return _mm256_srai_epi16(_mm256_slli_epi16(v, 8), 8); }

static void qk_i8_multi(int n, int d, int nq, const int8_t *q, const float *qd, const int8_t *k, int64_t ldk,
                        const float *kd, int64_t lds, const int32_t *idx, float *s, int64_t ld_s)
{
    (void)d; /* 64 */
    for (int r0 = 0; r0 < n; r0 += 8) {
        const int nr = n - r0 < 8 ? n - r0 : 8;
        __m256i ke[8][2], ko[8][2];
        float kv[8];
        for (int i = 0; i < 8; i++) {
            const int r = r0 + (i < nr ? i : nr - 1); /* lanes past n repeat the last row, not stored */
            const int64_t c = idx ? idx[r] : r;
            for (int j = 0; j < 2; j++) {
                const __m256i kb = load256(k + c * ldk + 32 * j);
                ke[i][j] = even16(kb);
                ko[i][j] = _mm256_srai_epi16(kb, 8);
            }
            kv[i] = kd[c * lds];
        }
        const __m256 vkd = _mm256_loadu_ps(kv);
        for (int h = 0; h < nq; h++) {
            const __m256i q0 = load256(q + 64 * h), q1 = load256(q + 64 * h + 32);
            const __m256i qe0 = even16(q0), qo0 = _mm256_srai_epi16(q0, 8);
            const __m256i qe1 = even16(q1), qo1 = _mm256_srai_epi16(q1, 8);
            __m256i acc[8];
#pragma GCC unroll 8
            for (int i = 0; i < 8; i++)
                acc[i] = _mm256_add_epi32(
                    _mm256_add_epi32(_mm256_madd_epi16(qe0, ke[i][0]), _mm256_madd_epi16(qo0, ko[i][0])),
                    _mm256_add_epi32(_mm256_madd_epi16(qe1, ke[i][1]), _mm256_madd_epi16(qo1, ko[i][1])));
            const __m256 w = _mm256_mul_ps(_mm256_set1_ps(qd[h]), vkd);
            const __m256 sc = _mm256_mul_ps(_mm256_cvtepi32_ps(hsum8_epi32(acc)), w);
            if (nr == 8) {
                _mm256_storeu_ps(s + h * ld_s + r0, sc);
            } else {
                float t[8];
                _mm256_storeu_ps(t, sc);
                memcpy(s + h * ld_s + r0, t, sizeof(float) * (size_t)nr);
            }
        }
    }
}

/* p.v: a tile of V rows is widened to float once for all queries (pv_i8
 * widens each row per query: two conversions per fma); each query then
 * runs pv_i8's chains (rank r in chain r % 2, element e in lane e % 8 of
 * its vector) with the widened values as fma memory operands, half the
 * head dimension at a time (16 accumulators would be every register).
 * The chains live in acc[] between tiles. */
#define PV_TILE 32 /* even: a rank's chain is its parity within the tile */
#define PV_HEADS 8

static void pv_i8_multi(int n, int d, int nq, const int8_t *v, int64_t ldv, const float *vd, int64_t lds,
                        const int32_t *idx, float *p, int64_t ld_p, float *out, int64_t ld_o)
{
    (void)d; /* 64 */
    /* each row's V scale looked up once for all queries, then the
     * queries' weights scaled 8 at a time (the same products as one at a
     * time; element by element, the look-up per query was about a
     * quarter of this kernel's operations) */
    for (int r0 = 0; r0 < n; r0 += 64) {
        const int nr = n - r0 < 64 ? n - r0 : 64;
        alignas(32) float sv[64];
        for (int i = 0; i < nr; i++) sv[i] = vd[(idx ? idx[r0 + i] : r0 + i) * lds];
        for (int h = 0; h < nq; h++) {
            float *ph = p + h * ld_p + r0;
            int i = 0;
            for (; i + 8 <= nr; i += 8) _mm256_storeu_ps(ph + i, _mm256_mul_ps(_mm256_loadu_ps(ph + i), _mm256_load_ps(sv + i)));
            for (; i < nr; i++) ph[i] *= sv[i];
        }
    }
    alignas(32) float x[PV_TILE][64];
    alignas(32) float acc[PV_HEADS][2][64];
    for (int h0 = 0; h0 < nq; h0 += PV_HEADS) {
        const int nh = nq - h0 < PV_HEADS ? nq - h0 : PV_HEADS;
        memset(acc, 0, sizeof acc);
        for (int r0 = 0; r0 < n; r0 += PV_TILE) {
            const int nr = n - r0 < PV_TILE ? n - r0 : PV_TILE;
            for (int i = 0; i < nr; i++) {
                const int8_t *vr = v + (int64_t)(idx ? idx[r0 + i] : r0 + i) * ldv;
#pragma GCC unroll 8
                for (int e = 0; e < 64; e += 8) _mm256_store_ps(&x[i][e], v8_i8(vr + e));
            }
            for (int h = 0; h < nh; h++) {
                const float *w = p + (h0 + h) * ld_p + r0;
#pragma GCC unroll 1
                for (int half = 0; half < 64; half += 32) {
                    __m256 a0[4], a1[4];
#pragma GCC unroll 4
                    for (int i = 0; i < 4; i++) {
                        a0[i] = _mm256_load_ps(&acc[h][0][half + 8 * i]);
                        a1[i] = _mm256_load_ps(&acc[h][1][half + 8 * i]);
                    }
                    int i = 0;
                    for (; i + 1 < nr; i += 2) {
                        const __m256 w0 = _mm256_set1_ps(w[i]), w1 = _mm256_set1_ps(w[i + 1]);
#pragma GCC unroll 4
                        for (int j = 0; j < 4; j++) {
                            a0[j] = _mm256_fmadd_ps(w0, _mm256_load_ps(&x[i][half + 8 * j]), a0[j]);
                            a1[j] = _mm256_fmadd_ps(w1, _mm256_load_ps(&x[i + 1][half + 8 * j]), a1[j]);
                        }
                    }
                    if (i < nr) { /* the last rank, even */
                        const __m256 w0 = _mm256_set1_ps(w[i]);
#pragma GCC unroll 4
                        for (int j = 0; j < 4; j++)
                            a0[j] = _mm256_fmadd_ps(w0, _mm256_load_ps(&x[i][half + 8 * j]), a0[j]);
                    }
#pragma GCC unroll 4
                    for (int j = 0; j < 4; j++) {
                        _mm256_store_ps(&acc[h][0][half + 8 * j], a0[j]);
                        _mm256_store_ps(&acc[h][1][half + 8 * j], a1[j]);
                    }
                }
            }
        }
        for (int h = 0; h < nh; h++)
#pragma GCC unroll 8
            for (int e = 0; e < 64; e += 8)
                _mm256_storeu_ps(out + (h0 + h) * ld_o + e,
                                 _mm256_add_ps(_mm256_load_ps(&acc[h][0][e]), _mm256_load_ps(&acc[h][1][e])));
    }
}
#undef PV_TILE
#undef PV_HEADS

/* qt_kv_quantize_i8's bits: the max of |x| (max takes its second operand
 * when the first is NaN, as fmaxf ignores one), then x * id rounded to
 * nearest even by vcvtps2dq as by lrintf (NaN or out-of-range products
 * become INT32_MIN here and LONG_MIN there, both clamped to -127),
 * clamped to +-127; the tail past a multiple of 8 as the reference. */
static float quantize_i8(int n, const float *x, int8_t *q)
{
    const int n8 = n & ~7;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_setzero_ps();
    for (int i = 0; i < n8; i += 8) m = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)), m);
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    float amax = _mm_cvtss_f32(m4);
    for (int i = n8; i < n; i++) amax = fmaxf(amax, fabsf(x[i]));
    const float d = amax / 127.0f, id = amax > 0.0f ? 127.0f / amax : 0.0f;
    const __m256 vid = _mm256_set1_ps(id);
    const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
    for (int i = 0; i < n8; i += 8) {
        const __m256i v = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i), vid));
        const __m256i c = _mm256_min_epi32(_mm256_max_epi32(v, lo), hi);
        const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
        _mm_storel_epi64((__m128i *)(q + i), _mm_packs_epi16(w, w));
    }
    for (int i = n8; i < n; i++) {
        const long v = lrintf(x[i] * id);
        q[i] = (int8_t)(v > 127 ? 127 : v < -127 ? -127 : v);
    }
    return d;
}

const qt_kv_ops qt_kv_avx2 = {.name = "avx2", .qk_i8 = qk_i8, .qk_f16 = qk_f16, .pv_i8 = pv_i8, .pv_f16 = pv_f16,
                              .quantize_i8 = quantize_i8, .qk_i8_multi = qk_i8_multi, .pv_i8_multi = pv_i8_multi};
const qt_kv_ops qt_kv_avx2_vnni = {.name = "avx2-vnni", .qk_i8 = qk_i8_vnni, .qk_f16 = qk_f16,
                                   .pv_i8 = pv_i8, .pv_f16 = pv_f16, .quantize_i8 = quantize_i8,
                                   .qk_i8_multi = qk_i8_multi, .pv_i8_multi = pv_i8_multi};

#else
typedef int qt_x86_avx2_kv_unused;
#endif
