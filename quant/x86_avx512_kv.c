/* x86_avx512_kv.c - kv_ops.h with AVX-512 F/BW/VL, and with AVX512-VNNI.
 *
 * Bit-identical to kv_ref.c like the AVX2 set; 512-bit registers cover a
 * 64-wide head in one load, and masks take the ragged ends that the AVX2
 * set leaves to scalar code. */
#if defined(__x86_64__)

#include <immintrin.h>
#include <math.h>
#include <stdalign.h>

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
        s[r] = qt_reduce16v16(acc) * scale;
    }
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

static void pv_f16(int n, int d, const uint16_t *v, int64_t ldv, const int32_t *idx,
                   const float *p, float *out)
{
    PV_BODY(uint16_t, v16_f16, p[r])
}

/* ---- several queries over the same K rows (d a multiple of 64) ---------
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

/* 128 * sum(q[0..d)), what the +128 on k adds */
INLINE int32_t q_corr(int d, const int8_t *q)
{
    int32_t sum = 0;
    for (int e = 0; e < d; e++) sum += q[e];
    return 128 * sum;
}

/* Heads wider than 64 go in 64-wide slices: each slice's 16 rows are laid
 * out once (up to QT_KV_MULTI_MAXD / 64 of them, 4 KB) and every query's
 * integer chain runs through all of them, so the sums are the one-slice
 * kernel's (integer adds: exact in any order). */
#define QK_SLICES (QT_KV_MULTI_MAXD / 64)

static void qk_i8_multi(int n, int d, int nq, const int8_t *q, const float *qd, const int8_t *k, int64_t ldk,
                        const float *kd, int64_t lds, const int32_t *idx, float *s, int64_t ld_s)
{
    if (n <= 0) return;
    const int ns = d / 64;
    int32_t corr[QK_GROUP];
    for (int h0 = 0; h0 < nq; h0 += QK_GROUP) {
        const int g = nq - h0 < QK_GROUP ? nq - h0 : QK_GROUP;
        for (int h = 0; h < g; h++) corr[h] = q_corr(d, q + (int64_t)(h0 + h) * d);
        for (int r0 = 0; r0 < n; r0 += 16) {
            __m512i u[QK_SLICES][16];
            for (int sl = 0; sl < ns; sl++) k_lanes(k + 64 * sl, ldk, idx, r0, n, u[sl]);
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
                    const int8_t *qh = q + (int64_t)(h0 + h) * d;
                    __m512i acc = dot64_bcast(_mm512_set1_epi32(-corr[h]), u[0], qh);
                    for (int sl = 1; sl < ns; sl++) acc = dot64_bcast(acc, u[sl], qh + 64 * sl);
                    /* (float)sum * (qd * kd), as qk_i8 */
                    const __m512 w = _mm512_mul_ps(_mm512_set1_ps(qd[h0 + h]), vkd);
                    _mm512_mask_storeu_ps(s + (h0 + h) * ld_s + r0, m, _mm512_mul_ps(_mm512_cvtepi32_ps(acc), w));
                }
        }
    }
}

/* ---- a prompt's causal block (d a multiple of 64, rows 0..n[h]-1) ---
 *
 * qk_i8_multi's steps, each K tile once for every query of the block (a
 * run of tokens times a KV head's query heads) instead of once per token:
 * queries past whose rows a tile lies skip it. */

/* dot64_bcast in two chains (integer adds: exact in any order), so that a
 * query's 16 steps are not one dependent chain */
INLINE void dot64_bcast2(__m512i *a0, __m512i *a1, const __m512i u[16], const int8_t *q)
{
#pragma GCC unroll 8
    for (int j = 0; j < 16; j += 2) {
        __asm__("%{evex%} vpdpbusd %2%{1to16%}, %1, %0" : "+v"(*a0) : "v"(u[j]), "m"(*(const int32_t *)(q + 4 * j)));
        __asm__("%{evex%} vpdpbusd %2%{1to16%}, %1, %0" : "+v"(*a1) : "v"(u[j + 1]), "m"(*(const int32_t *)(q + 4 * j + 4)));
    }
}

static void qk_i8_causal(int d, int nq, const int *n, const int8_t *q, const float *qd, const int8_t *k,
                         int64_t ldk, const float *kd, int64_t lds, float *s, int64_t ld_s)
{
    const int ns = d / 64;
    int32_t corr[QT_KV_CAUSAL_MAXQ];
    int n_max = 0;
    for (int h = 0; h < nq; h++) {
        corr[h] = q_corr(d, q + (int64_t)h * d);
        if (n[h] > n_max) n_max = n[h];
    }
    for (int r0 = 0; r0 < n_max; r0 += 16) {
        __m512i u[QK_SLICES][16];
        for (int sl = 0; sl < ns; sl++) k_lanes(k + 64 * sl, ldk, NULL, r0, n_max, u[sl]);
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
            const int8_t *qh = q + (int64_t)h * d;
            __m512i a0 = _mm512_set1_epi32(-corr[h]), a1 = _mm512_setzero_si512();
            for (int sl = 0; sl < ns; sl++) dot64_bcast2(&a0, &a1, u[sl], qh + 64 * sl);
            /* (float)sum * (qd * kd), as qk_i8 */
            const __m512 w = _mm512_mul_ps(_mm512_set1_ps(qd[h]), vkd);
            _mm512_mask_storeu_ps(s + h * ld_s + r0, mask16(n[h] - r0),
                                  _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(a0, a1)), w));
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

/* ---- p.v over int8 V rows (VNNI) ----------------------------------------
 *
 * AVX2's pv_i8_sum (weights, V tiles, carries) with this tile kernel: a
 * pair of ranks' 64 int16 pairs are 4 registers, and one vpdpwssd per
 * register against the pair's weights broadcast does AVX2's vpmaddwd
 * and vpaddd for 16 elements.  Pairs alternate between two sets of 4
 * accumulators so that each chain waits on vpdpwssd's latency half as
 * often; integer adds, so the sums are AVX2's. */
#define PV_DP(J, A) "%{evex%} vpdpwssd " #J "*64(%[x]), %[b], %[" A "]\n\t"

static void pv16_tile_vnni(int r0, int re, const void *vtp, const int16_t *w, int32_t *carry, int first, int flush,
                           double *acc)
{
    const uint8_t *vt = vtp; /* 256 bytes a pair of ranks */
    __m512i a0, a1, a2, a3, c0, c1, c2, c3, b;
    if (first) {
        a0 = a1 = a2 = a3 = _mm512_setzero_si512();
    } else {
        a0 = _mm512_loadu_si512(carry), a1 = _mm512_loadu_si512(carry + 16);
        a2 = _mm512_loadu_si512(carry + 32), a3 = _mm512_loadu_si512(carry + 48);
    }
    c0 = c1 = c2 = c3 = _mm512_setzero_si512();
    int r = r0;
    for (; r + 2 < re; r += 4) {
        const uint8_t *x = vt + (size_t)(r - r0) / 2 * 256;
        __asm__("vpbroadcastd (%[w]), %[b]\n\t" PV_DP(0, "a0") PV_DP(1, "a1") PV_DP(2, "a2") PV_DP(3, "a3")
                : [a0] "+v"(a0), [a1] "+v"(a1), [a2] "+v"(a2), [a3] "+v"(a3), [b] "=&v"(b)
                : [x] "r"(x), [w] "r"(w + r), "m"(*(const uint8_t(*)[256])x), "m"(*(const int32_t *)(w + r)));
        __asm__("vpbroadcastd (%[w]), %[b]\n\t" PV_DP(0, "c0") PV_DP(1, "c1") PV_DP(2, "c2") PV_DP(3, "c3")
                : [c0] "+v"(c0), [c1] "+v"(c1), [c2] "+v"(c2), [c3] "+v"(c3), [b] "=&v"(b)
                : [x] "r"(x + 256), [w] "r"(w + r + 2), "m"(*(const uint8_t(*)[256])(x + 256)),
                  "m"(*(const int32_t *)(w + r + 2)));
    }
    if (r < re) {
        const uint8_t *x = vt + (size_t)(r - r0) / 2 * 256;
        __asm__("vpbroadcastd (%[w]), %[b]\n\t" PV_DP(0, "a0") PV_DP(1, "a1") PV_DP(2, "a2") PV_DP(3, "a3")
                : [a0] "+v"(a0), [a1] "+v"(a1), [a2] "+v"(a2), [a3] "+v"(a3), [b] "=&v"(b)
                : [x] "r"(x), [w] "r"(w + r), "m"(*(const uint8_t(*)[256])x), "m"(*(const int32_t *)(w + r)));
    }
    const __m512i a[4] = {_mm512_add_epi32(a0, c0), _mm512_add_epi32(a1, c1), _mm512_add_epi32(a2, c2),
                          _mm512_add_epi32(a3, c3)};
    if (!flush) {
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) _mm512_storeu_si512(carry + 16 * j, a[j]);
        return;
    }
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        _mm512_storeu_pd(acc + 16 * j, _mm512_add_pd(_mm512_loadu_pd(acc + 16 * j),
                                                     _mm512_cvtepi32_pd(_mm512_castsi512_si256(a[j]))));
        _mm512_storeu_pd(acc + 16 * j + 8, _mm512_add_pd(_mm512_loadu_pd(acc + 16 * j + 8),
                                                         _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(a[j], 1))));
    }
}
#undef PV_DP

/* x86_avx2_kv.c's w16_weights 16 ranks at a time: the same lane-wise
 * exp (ref_expf), the same rounded and clamped products, and the E's as
 * exact integer sums, so the same W and z.  AVX2's took 8.8% of a
 * 1-thread tl-q4_0 pp2048 profile. */
/* lrintf(x) clamped to [0, hi], as x86_avx2_kv.c's clamp_rint8: vminps
 * with x second passes a NaN on, which converts to INT32_MIN and clamps
 * to 0. */
INLINE __m512i clamp_rint16(__m512 x, float hi)
{
    return _mm512_max_epi32(_mm512_cvtps_epi32(_mm512_min_ps(_mm512_set1_ps(hi), x)), _mm512_setzero_si512());
}

static void w16_weights16(int n, float *s, const float *vd, int64_t lds, const int32_t *idx, float mx, float kw,
                          double *z)
{
    const __m512 vmx = _mm512_set1_ps(mx), vkw = _mm512_set1_ps(kw), e24 = _mm512_set1_ps(0x1p24f);
    int16_t *w = (int16_t *)s;
    __m512d zd = _mm512_setzero_pd();
    for (int r0 = 0; r0 < n; r0 += 128) {
        __m512i ez = _mm512_setzero_si512(); /* up to 8 E's a lane: under 2^28 */
        for (int r = r0; r < n && r < r0 + 128; r += 16) {
            const __mmask16 m = n - r >= 16 ? 0xffff : (__mmask16)((1u << (n - r)) - 1);
            /* W is written over s from the front, behind the floats still to be read */
            const __m512 e = _mm512_maskz_mov_ps(m, qt_expv16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + r), vmx)));
            __m512 sv;
            if (!idx && lds == 1) {
                sv = _mm512_maskz_loadu_ps(m, vd + r);
            } else {
                alignas(64) float t[16];
                for (int i = 0; i < 16; i++) t[i] = r + i < n ? vd[(int64_t)(idx ? idx[r + i] : r + i) * lds] : 0.0f;
                sv = _mm512_load_ps(t);
            }
            ez = _mm512_add_epi32(ez, clamp_rint16(_mm512_mul_ps(e, e24), 0x1p24f));
            const __m512i c = clamp_rint16(_mm512_mul_ps(_mm512_mul_ps(e, sv), vkw), 32767.0f);
            _mm256_mask_storeu_epi16(w + r, m, _mm512_cvtepi32_epi16(c));
        }
        zd = _mm512_add_pd(zd, _mm512_add_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(ez)),
                                             _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(ez, 1))));
    }
    w[n] = 0;
    *z += _mm512_reduce_add_pd(zd); /* integers: exact */
}

static void pv_i8_sum_vnni(int d, int nq, const int *n, const int8_t *v, int64_t ldv, const float *vd, int64_t lds,
                           const int32_t *idx, float *s, int64_t ld_s, const float *mx, const float *kw, double *acc,
                           int64_t ld_acc, double *z)
{
    qt_avx2_pv_i8_sum_with(w16_weights16, pv16_tile_vnni, d, nq, n, v, ldv, vd, lds, idx, s, ld_s, mx, kw, acc,
                           ld_acc, z);
}

/* Without VNNI p.v is AVX2's (x86_avx2_kv.c), and so is the prompt's
 * q.k: every x86 set then attends alike. */
const qt_kv_ops qt_kv_avx512 = {.name = "avx512", .qk_i8 = qk_i8, .qk_f16 = qk_f16, .pv_f16 = pv_f16,
                                .quantize_i8 = quantize_i8, .max_f32 = qt_avx2_max_f32,
                                .qk_i8_causal = qt_avx2_qk_i8_causal, .pv_i8_sum = qt_avx2_pv_i8_sum};
const qt_kv_ops qt_kv_avx512_vnni = {.name = "avx512-vnni", .qk_i8 = qk_i8_vnni, .qk_f16 = qk_f16, .pv_f16 = pv_f16,
                                     .qk_i8_multi = qk_i8_multi, .quantize_i8 = quantize_i8,
                                     .max_f32 = qt_avx2_max_f32, .qk_i8_causal = qk_i8_causal,
                                     .pv_i8_sum = pv_i8_sum_vnni};

#else
typedef int qt_x86_avx512_kv_unused;
#endif
