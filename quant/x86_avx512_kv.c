/* x86_avx512_kv.c - kv_ops.h with AVX-512 F/BW/VL, and with AVX512-VNNI.
 *
 * Bit-identical to kv_ref.c like the AVX2 set; 512-bit registers cover a
 * 64-wide head in one load, and masks take the ragged ends that the AVX2
 * set leaves to scalar code. */
#if defined(__x86_64__)

#include <immintrin.h>
#include <math.h>

#include "f32ops.h"
#include "fp16.h"
#include "kv_ops.h"
#include "x86_avx512_exp.h"
#include "x86_avx512_wide.h"

#define INLINE static inline __attribute__((always_inline))
#define QT_X86_DPBUSD "%{evex%} vpdpbusd %2, %1, %0"
#include "x86_simd.h"

/* |q| x sign(k, q) by groups of four bytes, as in the AVX2 set; BW has no
 * vpsignb, so k is negated under q's sign mask. */
INLINE __m512i dot4_512(__m512i vq, __m512i vk, const int vnni)
{
    const __m512i u = _mm512_abs_epi8(vq);
    const __m512i sk = _mm512_mask_sub_epi8(vk, _mm512_movepi8_mask(vq), _mm512_setzero_si512(), vk);
    if (vnni) {
        __m512i acc = _mm512_setzero_si512();
        __asm__(QT_X86_DPBUSD : "+v"(acc) : "v"(u), "v"(sk));
        return acc;
    }
    return _mm512_madd_epi16(_mm512_maddubs_epi16(u, sk), _mm512_set1_epi16(1));
}

/* The 16 int32 lane sums of a[0..15] as one register (row r in lane r):
 * a transposing add tree, 15 register steps for 16 rows instead of a
 * horizontal reduction per row.  Integer adds, so exact in any order. */
INLINE __m512i sum16x16(const __m512i a[16])
{
    __m512i b[8], c[4];
    for (int i = 0; i < 8; i++)
        b[i] = _mm512_add_epi32(_mm512_unpacklo_epi32(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_epi32(a[2 * i], a[2 * i + 1]));
    for (int j = 0; j < 4; j++)
        c[j] = _mm512_add_epi32(_mm512_unpacklo_epi64(b[2 * j], b[2 * j + 1]), _mm512_unpackhi_epi64(b[2 * j], b[2 * j + 1]));
    const __m512i d0 = _mm512_add_epi32(_mm512_shuffle_i32x4(c[0], c[1], 0x88), _mm512_shuffle_i32x4(c[0], c[1], 0xdd));
    const __m512i d1 = _mm512_add_epi32(_mm512_shuffle_i32x4(c[2], c[3], 0x88), _mm512_shuffle_i32x4(c[2], c[3], 0xdd));
    return _mm512_add_epi32(_mm512_shuffle_i32x4(d0, d1, 0x88), _mm512_shuffle_i32x4(d0, d1, 0xdd));
}

/* One row's products by groups of four bytes, summed over its chunks. */
INLINE __m512i row_dot(int d64, __mmask64 tail, const int8_t *q, const int8_t *kr, const int vnni)
{
    __m512i acc = _mm512_setzero_si512();
    for (int e = 0; e < d64; e += 64)
        acc = _mm512_add_epi32(acc, dot4_512(_mm512_loadu_si512(q + e), _mm512_loadu_si512(kr + e), vnni));
    if (tail)
        acc = _mm512_add_epi32(acc, dot4_512(_mm512_maskz_loadu_epi8(tail, q + d64), _mm512_maskz_loadu_epi8(tail, kr + d64), vnni));
    return acc;
}

/* d64/tail: d's whole 64-byte chunks and the mask of the rest.  head64:
 * d is 64 (the usual head), so |q| and q's signs are formed once per call
 * instead of once per row. */
INLINE void qk_i8_rows(int n, int d64, __mmask64 tail, const int8_t *q, float qd, const int8_t *k, int64_t ldk,
                       const float *kd, int64_t lds, const int32_t *idx, float *s, const int vnni, const int head64)
{
    const __m512 vqd = _mm512_set1_ps(qd);
    const __m512i vq = head64 ? _mm512_loadu_si512(q) : _mm512_setzero_si512();
    const __m512i u = _mm512_abs_epi8(vq);
    const __mmask64 neg = _mm512_movepi8_mask(vq);
    int r = 0;
    for (; r + 16 <= n; r += 16) {
        __m512i acc[16];
        float sc[16];
        /* unrolled, the 16 dots stay in registers for the add tree */
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++) {
            const int64_t c = idx ? idx[r + i] : r + i;
            if (head64) {
                const __m512i kv = _mm512_loadu_si512(k + c * ldk);
                const __m512i sk = _mm512_mask_sub_epi8(kv, neg, _mm512_setzero_si512(), kv);
                if (vnni) {
                    acc[i] = _mm512_setzero_si512();
                    __asm__(QT_X86_DPBUSD : "+v"(acc[i]) : "v"(u), "v"(sk));
                } else {
                    acc[i] = _mm512_madd_epi16(_mm512_maddubs_epi16(u, sk), _mm512_set1_epi16(1));
                }
            } else {
                acc[i] = row_dot(d64, tail, q, k + c * ldk, vnni);
            }
            sc[i] = kd[c * lds];
        }
        /* (float)sum * (qd * kd), the reference's two roundings per lane */
        const __m512 w = _mm512_mul_ps(vqd, _mm512_loadu_ps(sc));
        _mm512_storeu_ps(s + r, _mm512_mul_ps(_mm512_cvtepi32_ps(sum16x16(acc)), w));
    }
    for (; r < n; r++) {
        const int64_t c = idx ? idx[r] : r;
        s[r] = (float)_mm512_reduce_add_epi32(row_dot(d64, tail, q, k + c * ldk, vnni)) * (qd * kd[c * lds]);
    }
}

INLINE void qk_i8_body(int n, int d, const int8_t *q, float qd, const int8_t *k, int64_t ldk,
                       const float *kd, int64_t lds, const int32_t *idx, float *s, const int vnni)
{
    const int d64 = d & ~63;
    const __mmask64 tail = d - d64 >= 64 ? ~0ull : (1ull << (d - d64)) - 1;
    if (d == 64)
        qk_i8_rows(n, d64, tail, q, qd, k, ldk, kd, lds, idx, s, vnni, 1);
    else
        qk_i8_rows(n, d64, tail, q, qd, k, ldk, kd, lds, idx, s, vnni, 0);
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

INLINE __mmask16 mask16(int w) { return (__mmask16)(w >= 16 ? 0xffff : (1u << w) - 1); }

/* qt_reduce16's tree on one register. */
INLINE float reduce16(__m512 a)
{
    const __m256 t = _mm256_add_ps(_mm512_extractf32x8_ps(a, 1), _mm512_castps512_ps256(a));
    const __m128 u = _mm_add_ps(_mm256_extractf128_ps(t, 1), _mm256_castps256_ps128(t));
    const __m128 v = _mm_add_ps(u, _mm_permute_ps(u, 0x4e));
    return _mm_cvtss_f32(_mm_add_ss(v, _mm_shuffle_ps(v, v, 0x55)));
}

/* Masked-off lanes load zeros, and fma(0, 0, acc) leaves acc as it is. */
static void qk_f16(int n, int d, const float *q, float scale, const uint16_t *k, int64_t ldk,
                   const int32_t *idx, float *s)
{
    for (int r = 0; r < n; r++) {
        const uint16_t *kr = k + (idx ? idx[r] : r) * ldk;
        __m512 acc = _mm512_setzero_ps();
        for (int e = 0; e < d; e += 16) {
            const __mmask16 m = mask16(d - e);
            acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + e),
                                  _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, kr + e)), acc);
        }
        s[r] = reduce16(acc) * scale;
    }
}

INLINE __m512 v16_i8(__mmask16 m, const int8_t *p)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, p)));
}
INLINE __m512 v16_f16(__mmask16 m, const uint16_t *p)
{
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

/* 64 elements (4 registers x 2 chains) at a time, then masked 16s.  Rows
 * go in pairs so that each chain is a named register: indexed by r & 1,
 * the accumulators lived in memory and every row waited on a store. */
#define PV_ROW64(T, LOAD16, WEIGHT, row, a)                                                   \
    do {                                                                                    \
        const int rr = (row);                                                               \
        const int r = rr; /* WEIGHT names its row r */                                      \
        const int64_t c = idx ? idx[r] : r;                                                 \
        const T *vr = v + c * ldv + e0;                                                     \
        const __m512 w = _mm512_set1_ps(WEIGHT);                                            \
        _Pragma("GCC unroll 4")                                                             \
        for (int i = 0; i < 4; i++) a[i] = _mm512_fmadd_ps(w, LOAD16(0xffff, vr + 16 * i), a[i]); \
    } while (0)
#define PV_BODY(T, LOAD16, WEIGHT)                                                            \
    const int d64 = d & ~63;                                                                \
    int e0 = 0;                                                                             \
    for (; e0 < d64; e0 += 64) {                                                            \
        __m512 a0[4], a1[4];                                                                \
        _Pragma("GCC unroll 4")                                                             \
        for (int i = 0; i < 4; i++) a0[i] = a1[i] = _mm512_setzero_ps();                    \
        int r = 0;                                                                          \
        for (; r + 1 < n; r += 2) {                                                         \
            PV_ROW64(T, LOAD16, WEIGHT, r, a0);                                             \
            PV_ROW64(T, LOAD16, WEIGHT, r + 1, a1);                                         \
        }                                                                                   \
        if (r < n) PV_ROW64(T, LOAD16, WEIGHT, r, a0);                                      \
        _Pragma("GCC unroll 4")                                                             \
        for (int i = 0; i < 4; i++) _mm512_storeu_ps(out + e0 + 16 * i, _mm512_add_ps(a0[i], a1[i])); \
    }                                                                                       \
    for (; e0 < d; e0 += 16) {                                                              \
        const __mmask16 m = mask16(d - e0);                                                 \
        __m512 a0 = _mm512_setzero_ps(), a1 = a0;                                           \
        for (int r = 0; r < n; r++) {                                                       \
            const int64_t c = idx ? idx[r] : r;                                             \
            const __m512 w = _mm512_set1_ps(WEIGHT), x = LOAD16(m, v + c * ldv + e0);       \
            if (r & 1) a1 = _mm512_fmadd_ps(w, x, a1); else a0 = _mm512_fmadd_ps(w, x, a0); \
        }                                                                                   \
        _mm512_mask_storeu_ps(out + e0, m, _mm512_add_ps(a0, a1));                          \
    }

static void pv_i8(int n, int d, const int8_t *v, int64_t ldv, const float *vd, int64_t lds,
                  const int32_t *idx, const float *p, float *out)
{
    PV_BODY(int8_t, v16_i8, p[r] * vd[c * lds])
}

static void pv_f16(int n, int d, const uint16_t *v, int64_t ldv, const int32_t *idx,
                   const float *p, float *out)
{
    PV_BODY(uint16_t, v16_f16, p[r])
}

/* ---- several queries over the same rows (d = 64) ----------------------
 *
 * q.k: 16 K rows are transposed once into row-per-lane form (vector j
 * holds bytes 4j..4j+3 of each row), offset to unsigned by +128; each
 * query then takes 16 vpdpbusd with its own 4-byte groups broadcast, and
 * its lanes are the 16 rows' sums plus 128 * sum(q), which is taken off:
 * no per-row sign fix-up and no horizontal sums.  The float steps per
 * score are qk_i8's. */
#define QK_GROUP 8 /* queries whose chains are in flight together */

INLINE __m512i dot64_bcast(__m512i acc, const __m512i u[16], const int8_t *q)
{
#pragma GCC unroll 16
    for (int j = 0; j < 16; j++)
        __asm__("%{evex%} vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u[j]), "m"(*(const int32_t *)(q + 4 * j)));
    return acc;
}

/* ranks r0..r0+15 of k (rows idx[r], or r) in row-per-lane form, +128;
 * past rank n - 1 the lanes hold copies of it (their scores are not
 * stored) */
INLINE void k_lanes(const int8_t *k, int64_t ldk, const int32_t *idx, int r0, int n, __m512i u[16])
{
    if (r0 + 16 <= n && !idx) {
        load16x16((const uint8_t *)(k + (int64_t)r0 * ldk), (size_t)ldk, u);
    } else {
        int8_t rows[16][64];
        for (int i = 0; i < 16; i++) {
            const int r = r0 + i < n ? r0 + i : n - 1;
            memcpy(rows[i], k + (int64_t)(idx ? idx[r] : r) * ldk, 64);
        }
        load16x16((const uint8_t *)rows, 64, u);
    }
    const __m512i flip = _mm512_set1_epi8((char)0x80);
#pragma GCC unroll 16
    for (int j = 0; j < 16; j++) u[j] = _mm512_xor_si512(u[j], flip);
}

static void qk_i8_multi(int n, int d, int nq, const int8_t *q, const float *qd, const int8_t *k, int64_t ldk,
                        const float *kd, int64_t lds, const int32_t *idx, float *s, int64_t ld_s)
{
    (void)d; /* 64 */
    if (n <= 0) return;
    /* 128 * sum(q) of each query, what the +128 on k adds */
    int32_t corr[QK_GROUP];
    for (int h0 = 0; h0 < nq; h0 += QK_GROUP) {
        const int g = nq - h0 < QK_GROUP ? nq - h0 : QK_GROUP;
        for (int h = 0; h < g; h++) {
            int32_t sum = 0;
            for (int e = 0; e < 64; e++) sum += q[(h0 + h) * 64 + e];
            corr[h] = 128 * sum;
        }
        for (int r0 = 0; r0 < n; r0 += 16) {
            __m512i u[16];
            k_lanes(k, ldk, idx, r0, n, u);
            const __mmask16 m = mask16(n - r0);
            float kv[16];
            for (int i = 0; i < 16; i++)
                kv[i] = r0 + i < n ? kd[(int64_t)(idx ? idx[r0 + i] : r0 + i) * lds] : 0.0f;
            const __m512 vkd = _mm512_loadu_ps(kv);
            /* the queries' chains are independent: out of order
             * execution overlaps them */
#pragma GCC unroll 8
            for (int h = 0; h < QK_GROUP; h++)
                if (h < g) {
                    const __m512i acc = dot64_bcast(_mm512_set1_epi32(-corr[h]), u, q + (h0 + h) * 64);
                    /* (float)sum * (qd * kd), as qk_i8 */
                    const __m512 w = _mm512_mul_ps(_mm512_set1_ps(qd[h0 + h]), vkd);
                    _mm512_mask_storeu_ps(s + (h0 + h) * ld_s + r0, m, _mm512_mul_ps(_mm512_cvtepi32_ps(acc), w));
                }
        }
    }
}

/* p.v: NQ queries share each V row's widening; their weights p[r] * vd[r]
 * are formed 16 at a time first, then each meets the row by an fma with
 * a broadcast operand.  Chains as pv_i8's: rank r in chain r % 2. */
INLINE void pv_rows_nq(int n, const int8_t *v, int64_t ldv, const int32_t *idx, const float *w, int64_t ld_w,
                       float *out, int64_t ld_o, const int nq)
{
    __m512 a0[3][4], a1[3][4];
#pragma GCC unroll 3
    for (int h = 0; h < nq; h++)
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) a0[h][i] = a1[h][i] = _mm512_setzero_ps();
    int r = 0;
    for (; r + 1 < n; r += 2) {
        __m512 x0[4], x1[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            x0[i] = v16_i8(0xffff, v + (int64_t)(idx ? idx[r] : r) * ldv + 16 * i);
            x1[i] = v16_i8(0xffff, v + (int64_t)(idx ? idx[r + 1] : r + 1) * ldv + 16 * i);
        }
#pragma GCC unroll 3
        for (int h = 0; h < nq; h++) {
            const __m512 w0 = _mm512_set1_ps(w[h * ld_w + r]), w1 = _mm512_set1_ps(w[h * ld_w + r + 1]);
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) {
                a0[h][i] = _mm512_fmadd_ps(w0, x0[i], a0[h][i]);
                a1[h][i] = _mm512_fmadd_ps(w1, x1[i], a1[h][i]);
            }
        }
    }
    if (r < n) {
#pragma GCC unroll 3
        for (int h = 0; h < nq; h++) {
            const __m512 w0 = _mm512_set1_ps(w[h * ld_w + r]);
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++)
                a0[h][i] = _mm512_fmadd_ps(w0, v16_i8(0xffff, v + (int64_t)(idx ? idx[r] : r) * ldv + 16 * i), a0[h][i]);
        }
    }
#pragma GCC unroll 3
    for (int h = 0; h < nq; h++)
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) _mm512_storeu_ps(out + h * ld_o + 16 * i, _mm512_add_ps(a0[h][i], a1[h][i]));
}

static void pv_i8_multi(int n, int d, int nq, const int8_t *v, int64_t ldv, const float *vd, int64_t lds,
                        const int32_t *idx, float *p, int64_t ld_p, float *out, int64_t ld_o)
{
    (void)d; /* 64 */
    if (lds != 1) { /* the weights below read vd contiguously */
        for (int h = 0; h < nq; h++) pv_i8(n, 64, v, ldv, vd, lds, idx, p + h * ld_p, out + h * ld_o);
        return;
    }
    for (int h = 0; h < nq; h++) {
        float *w = p + h * ld_p;
        int r = 0;
        if (!idx)
            for (; r + 16 <= n; r += 16)
                _mm512_storeu_ps(w + r, _mm512_mul_ps(_mm512_loadu_ps(w + r), _mm512_loadu_ps(vd + r)));
        for (; r < n; r++) w[r] = w[r] * vd[idx ? idx[r] : r];
    }
    int h = 0;
    for (; nq - h >= 3; h += 3) pv_rows_nq(n, v, ldv, idx, p + h * ld_p, ld_p, out + h * ld_o, ld_o, 3);
    if (nq - h == 2) pv_rows_nq(n, v, ldv, idx, p + h * ld_p, ld_p, out + h * ld_o, ld_o, 2);
    if (nq - h == 1) pv_rows_nq(n, v, ldv, idx, p + h * ld_p, ld_p, out + h * ld_o, ld_o, 1);
}

/* ---- a prompt's causal block (d = 64, rows 0..n[h]-1) ------------------
 *
 * The multi kernels' steps, but each K tile goes into row-per-lane form
 * and each V tile is widened to f32 once for every query of the block
 * (a run of tokens times a KV head's query heads) instead of once per
 * token: queries past whose rows a tile lies skip it.  A query's pv
 * chains go from one V tile to the next through work. */

/* dot64_bcast in two chains (integer adds: exact in any order), so that a
 * query's 16 steps are not one dependent chain */
INLINE __m512i dot64_bcast2(int32_t corr, const __m512i u[16], const int8_t *q)
{
    __m512i a0 = _mm512_set1_epi32(-corr), a1 = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int j = 0; j < 16; j += 2) {
        __asm__("%{evex%} vpdpbusd %2%{1to16%}, %1, %0" : "+v"(a0) : "v"(u[j]), "m"(*(const int32_t *)(q + 4 * j)));
        __asm__("%{evex%} vpdpbusd %2%{1to16%}, %1, %0" : "+v"(a1) : "v"(u[j + 1]), "m"(*(const int32_t *)(q + 4 * j + 4)));
    }
    return _mm512_add_epi32(a0, a1);
}

static void qk_i8_causal(int d, int nq, const int *n, const int8_t *q, const float *qd, const int8_t *k,
                         int64_t ldk, const float *kd, int64_t lds, float *s, int64_t ld_s)
{
    (void)d; /* 64 */
    int32_t corr[QT_KV_CAUSAL_MAXQ]; /* 128 * sum(q), as in qk_i8_multi */
    int n_max = 0;
    for (int h = 0; h < nq; h++) {
        int32_t sum = 0;
        for (int e = 0; e < 64; e++) sum += q[h * 64 + e];
        corr[h] = 128 * sum;
        if (n[h] > n_max) n_max = n[h];
    }
    for (int r0 = 0; r0 < n_max; r0 += 16) {
        __m512i u[16];
        k_lanes(k, ldk, NULL, r0, n_max, u);
        __m512 vkd;
        if (lds == 1) {
            vkd = _mm512_maskz_loadu_ps(mask16(n_max - r0), kd + r0);
        } else {
            float kv[16];
            for (int i = 0; i < 16; i++) kv[i] = r0 + i < n_max ? kd[(int64_t)(r0 + i) * lds] : 0.0f;
            vkd = _mm512_loadu_ps(kv);
        }
        for (int h = 0; h < nq; h++) {
            if (n[h] <= r0) continue;
            const __m512i acc = dot64_bcast2(corr[h], u, q + h * 64);
            /* (float)sum * (qd * kd), as qk_i8 */
            const __m512 w = _mm512_mul_ps(_mm512_set1_ps(qd[h]), vkd);
            _mm512_mask_storeu_ps(s + h * ld_s + r0, mask16(n[h] - r0), _mm512_mul_ps(_mm512_cvtepi32_ps(acc), w));
        }
    }
}

#define QT_X86_DPWSSD_B "%{evex%} vpdpwssd %2%{1to16%}, %1, %0"

/* Ranks r0..re-1 (re rounded up to a pair; the weight past a query's last
 * rank is 0) of one V tile (vt: per pair of ranks 4 vectors, lane e of
 * vector i holding the pair's elements 16i + e as int16s) for nqq
 * queries with the same ranks; weights W (int16, ld_w apart), the f32
 * sums carried in fa (64 per query), results times sc at o[h] when the
 * tile is the queries' last.  A query alone gets two sets of chains,
 * pairs alternating: integer sums, so exact in any order. */
INLINE void pv16_tile(int r0, int re, int last, const __m512i *vt, const int16_t *w, int64_t ld_w, float *fa,
                      const float *sc, float *const *o, const int nqq)
{
    __m512i a[4][2][4];
#pragma GCC unroll 4
    for (int h = 0; h < nqq; h++)
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) a[h][0][i] = a[h][1][i] = _mm512_setzero_si512();
    int r = r0;
    if (nqq == 1) { /* one query's chains alone would wait on each other */
        for (; r + 2 < re; r += 4) {
            const __m512i *x0 = vt + (r - r0) / 2 * 4, *x1 = x0 + 4;
            const int32_t *wp = (const int32_t *)(w + r);
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) {
                __asm__(QT_X86_DPWSSD_B : "+v"(a[0][0][i]) : "v"(_mm512_load_si512(x0 + i)), "m"(wp[0]));
                __asm__(QT_X86_DPWSSD_B : "+v"(a[0][1][i]) : "v"(_mm512_load_si512(x1 + i)), "m"(wp[1]));
            }
        }
    }
    for (; r < re; r += 2) {
        const __m512i *x0 = vt + (r - r0) / 2 * 4;
        __m512i v0[4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) v0[i] = _mm512_load_si512(x0 + i);
#pragma GCC unroll 4
        for (int h = 0; h < nqq; h++) {
            const int32_t *wp = (const int32_t *)(w + h * ld_w + r);
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) __asm__(QT_X86_DPWSSD_B : "+v"(a[h][0][i]) : "v"(v0[i]), "m"(wp[0]));
        }
    }
#pragma GCC unroll 4
    for (int h = 0; h < nqq; h++)
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            const __m512 t = _mm512_cvtepi32_ps(nqq == 1 ? _mm512_add_epi32(a[h][0][i], a[h][1][i]) : a[h][0][i]);
            const __m512 acc = r0 ? _mm512_add_ps(_mm512_loadu_ps(fa + h * 64 + 16 * i), t) : t;
            if (last)
                _mm512_storeu_ps(o[h] + 16 * i, _mm512_mul_ps(acc, _mm512_set1_ps(sc[h])));
            else
                _mm512_storeu_ps(fa + h * 64 + 16 * i, acc);
        }
}

/* One query's softmax weights times its V scales, to int16 in place
 * (W[r] at the r-th int16 of s, written behind the floats still to be
 * read), W[n] = 0 for a whole last pair; returns (m / 32767) / sum. */
static float pv16_weights(int n, float *s, const float *vd, int64_t lds)
{
    const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
    __m512 vmax = ninf;
    for (int r = 0; r < n; r += 16) vmax = _mm512_max_ps(_mm512_mask_loadu_ps(ninf, mask16(n - r), s + r), vmax);
    const __m512 vmx = _mm512_set1_ps(_mm512_reduce_max_ps(vmax));
    __m512 mw = _mm512_setzero_ps(), lane = _mm512_setzero_ps();
    for (int r = 0; r < n; r += 16) {
        const __mmask16 m = mask16(n - r);
        const __m512 e = _mm512_maskz_mov_ps(m, qt_expv16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + r), vmx)));
        lane = _mm512_add_ps(lane, e);
        __m512 x;
        if (lds == 1) {
            x = _mm512_mul_ps(e, _mm512_maskz_loadu_ps(m, vd + r));
        } else {
            float t[16] = {0};
            for (int i = 0; i < 16 && r + i < n; i++) t[i] = vd[(int64_t)(r + i) * lds];
            x = _mm512_mul_ps(e, _mm512_loadu_ps(t));
        }
        _mm512_mask_storeu_ps(s + r, m, x);
        mw = _mm512_max_ps(x, mw); /* a NaN weight is passed over, as fmaxf does */
    }
    const float sum = reduce16(lane), m = _mm512_reduce_max_ps(mw);
    const __m512 vid = _mm512_set1_ps(m > 0.0f ? 32767.0f / m : 0.0f);
    const __m512i lo = _mm512_setzero_si512(), hi = _mm512_set1_epi32(32767);
    int16_t *w = (int16_t *)s;
    for (int r = 0; r < n; r += 16) {
        const __mmask16 k = mask16(n - r);
        const __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, s + r), vid));
        _mm256_mask_storeu_epi16(w + r, k, _mm512_cvtepi32_epi16(_mm512_min_epi32(_mm512_max_epi32(q, lo), hi)));
    }
    w[n] = 0;
    return (m / 32767.0f) / sum;
}

static void pv_i8_causal(int d, int nq, const int *n, const int8_t *v, int64_t ldv, const float *vd, int64_t lds,
                         float *p, int64_t ld_p, float *const out[], float *work)
{
    (void)d; /* 64 */
    enum { CT = QT_KV_CAUSAL_TILE };
    __m512i *vt = (__m512i *)work;
    float *fa = work + CT * 32, *sc = fa + (size_t)nq * 64;
    int n_max = 0;
    for (int h = 0; h < nq; h++) {
        sc[h] = pv16_weights(n[h], p + h * ld_p, vd, lds);
        if (n[h] > n_max) n_max = n[h];
    }
    const int16_t *w = (const int16_t *)p;
    const int64_t ld_w = 2 * ld_p;
    const __m512i lo16 = _mm512_set1_epi32(0xffff);
    for (int r0 = 0; r0 < n_max; r0 += CT) {
        const int nt = n_max - r0 < CT ? n_max - r0 : CT;
        for (int i = 0; i < nt; i += 2) { /* a missing odd rank: zeros */
            const int8_t *v0 = v + (int64_t)(r0 + i) * ldv, *v1 = v0 + ldv;
            const __mmask16 m1 = i + 1 < nt ? 0xffff : 0;
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                const __m512i x0 = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(v0 + 16 * j)));
                const __m512i x1 = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m1, v1 + 16 * j));
                /* rank r0 + i in the low half, the next in the high one */
                _mm512_store_si512(vt + i / 2 * 4 + j, _mm512_or_si512(_mm512_and_si512(x0, lo16), _mm512_slli_epi32(x1, 16)));
            }
        }
        for (int h = 0; h < nq;) {
            if (n[h] <= r0) {
                h++;
                continue;
            }
            const int re = n[h] < r0 + CT ? n[h] : r0 + CT, last = re == n[h];
            int run = 1; /* queries with these ranks, up to 4 */
            while (run < 4 && h + run < nq && n[h + run] == n[h]) run++;
            if (run == 4) {
                pv16_tile(r0, re, last, vt, w + h * ld_w, ld_w, fa + h * 64, sc + h, out + h, 4);
                h += 4;
            } else if (run >= 2) {
                pv16_tile(r0, re, last, vt, w + h * ld_w, ld_w, fa + h * 64, sc + h, out + h, 2);
                h += 2;
            } else {
                pv16_tile(r0, re, last, vt, w + h * ld_w, ld_w, fa + h * 64, sc + h, out + h, 1);
                h++;
            }
        }
    }
}

/* ---- int8 quantizer (kv_ref.c's, the same bits) -----------------------
 * max(|x|) ignoring NaNs as fmaxf does (vmaxps returns its second operand,
 * the running maximum, when the first is NaN; the maximum of the rest
 * does not depend on the order), one scalar division each for d and its
 * inverse, then x * id rounded in the current mode as lrintf (NaN and
 * out-of-range products become INT32_MIN here and LONG_MIN there, both
 * clamped to -127), clamped to +-127. */
static float quantize_i8(int n, const float *x, int8_t *q)
{
    __m512 m = _mm512_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) m = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + i)), m);
    if (i < n) m = _mm512_max_ps(_mm512_abs_ps(_mm512_maskz_loadu_ps(mask16(n - i), x + i)), m);
    const float amax = _mm512_reduce_max_ps(m);
    const float d = amax / 127.0f, id = amax > 0.0f ? 127.0f / amax : 0.0f;
    const __m512 vid = _mm512_set1_ps(id);
    const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
    for (i = 0; i < n; i += 16) {
        const __mmask16 k = mask16(n - i);
        const __m512i v = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), vid));
        _mm_mask_storeu_epi8(q + i, k, _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(v, lo), hi)));
    }
    return d;
}

/* without VNNI, the prompt blocks take the AVX2 kernels: every x86 set
 * then attends a prompt alike */
const qt_kv_ops qt_kv_avx512 = {.name = "avx512", .qk_i8 = qk_i8, .qk_f16 = qk_f16, .pv_i8 = pv_i8, .pv_f16 = pv_f16,
                                .pv_i8_multi = pv_i8_multi, .quantize_i8 = quantize_i8,
                                .qk_i8_causal = qt_avx2_qk_i8_causal, .pv_i8_causal = qt_avx2_pv_i8_causal};
const qt_kv_ops qt_kv_avx512_vnni = {.name = "avx512-vnni", .qk_i8 = qk_i8_vnni, .qk_f16 = qk_f16,
                                     .pv_i8 = pv_i8, .pv_f16 = pv_f16, .qk_i8_multi = qk_i8_multi,
                                     .pv_i8_multi = pv_i8_multi, .quantize_i8 = quantize_i8,
                                     .qk_i8_causal = qk_i8_causal, .pv_i8_causal = pv_i8_causal};

#else
typedef int qt_x86_avx512_kv_unused;
#endif
