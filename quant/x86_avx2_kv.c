/* x86_avx2_kv.c - kv_ops.h with AVX2 (+F16C), and with AVX-VNNI.
 *
 * Bit-identical to kv_ref.c: the integer dots and the int8 p.v's sums are
 * exact, and the f16 kernels run the reference's per-element FMA chains
 * side by side in the vector lanes (8 elements of the head dimension per
 * register). */
#if defined(__x86_64__)

#include <immintrin.h>
#include <math.h>
#include <stdalign.h>
#include <string.h>

#include "f32ops.h"
#include "fp16.h"
#include "kv_ops.h"
#include "x86_avx2_exp.h"
#include "x86_avx2_rows.h"

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

/* Widens 8 halves of a V row to float. */
INLINE __m256 v8_f16(const uint16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }

/* Rows of 32 elements at a time keep 4 registers x 2 chains of FMAs in
 * flight; the reference's chain for element e is lane e of these. */
static void pv_f16(int n, int d, const uint16_t *v, int64_t ldv, const int32_t *idx,
                   const float *p, float *out)
{
    const int d32 = d & ~31, d8 = d & ~7;
    int e0 = 0;
    for (; e0 < d32; e0 += 32) {
        __m256 a[2][4];
        for (int i = 0; i < 4; i++) a[0][i] = a[1][i] = _mm256_setzero_ps();
        for (int r = 0; r < n; r++) {
            const uint16_t *vr = v + (idx ? idx[r] : r) * ldv + e0;
            const __m256 w = _mm256_set1_ps(p[r]);
            for (int i = 0; i < 4; i++) a[r & 1][i] = _mm256_fmadd_ps(w, v8_f16(vr + 8 * i), a[r & 1][i]);
        }
        for (int i = 0; i < 4; i++) _mm256_storeu_ps(out + e0 + 8 * i, _mm256_add_ps(a[0][i], a[1][i]));
    }
    for (; e0 < d8; e0 += 8) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0;
        for (int r = 0; r < n; r++) {
            const __m256 w = _mm256_set1_ps(p[r]), x = v8_f16(v + (idx ? idx[r] : r) * ldv + e0);
            if (r & 1) a1 = _mm256_fmadd_ps(w, x, a1); else a0 = _mm256_fmadd_ps(w, x, a0);
        }
        _mm256_storeu_ps(out + e0, _mm256_add_ps(a0, a1));
    }
    for (; e0 < d; e0++) {
        float acc[2] = {0.0f, 0.0f};
        for (int r = 0; r < n; r++) acc[r & 1] = fmaf(p[r], qt_f16_to_f32(v[(idx ? idx[r] : r) * ldv + e0]), acc[r & 1]);
        out[e0] = acc[0] + acc[1];
    }
}

/* ---- several queries over the same K rows (d a multiple of 64) --------
 * Each result is the one-query kernel's, bit for bit. */

/* q.k, here and in the causal block below: an 8-row K tile goes into
 * row-per-lane int16 pairs (the even and odd bytes of each dword,
 * sign-extended in place) once for all the queries, and each query takes
 * 32 vpmaddwd against its own pairs, broadcast: no horizontal sums, and
 * exact for every byte, -128 included (the abs/sign trick of qk_i8 is
 * not).  Then qk_i8's float steps, 8 scores at once.  8 queries over
 * 2048 rows, best of 30: 2.0-2.6 ns per query and row, against 2.7-2.8
 * with each row's sums reduced by vphaddd.  Each query's pairs broadcast
 * into whole vectors beforehand (a vpmaddwd memory operand instead of a
 * broadcast per product) measured no faster. */
INLINE __m256i even16(__m256i v) { return _mm256_srai_epi16(_mm256_slli_epi16(v, 8), 8); }

/* even16's twin: each int16 of v holding its odd byte, sign-extended. */
INLINE __m256i odd16(__m256i v) { return _mm256_srai_epi16(v, 8); }

/* Lane i < n (n <= 8) set, as the AVX mask loads and stores take it. */
INLINE __m256i lanes_below(int n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* K rows r0..r0+7 (rank r is row idx ? idx[r] : r; the last real one
 * repeated past n) in row-per-lane pairs: lane i of kt[j] (kt[16 + j])
 * holds bytes 4j and 4j + 2 (4j + 1 and 4j + 3) of rank r0 + i. */
static void k_tile8(const int8_t *k, int64_t ldk, const int32_t *idx, int r0, int n, __m256i kt[32])
{
    __m256i v[16];
    if (!idx && r0 + 8 <= n) {
        const uint8_t *p = (const uint8_t *)(k + (int64_t)r0 * ldk);
        load8x8(p, (size_t)ldk, v);
        load8x8(p + 32, (size_t)ldk, v + 8);
    } else {
        alignas(32) int8_t rows[8][64];
        for (int i = 0; i < 8; i++) {
            const int r = r0 + i < n ? r0 + i : n - 1;
            memcpy(rows[i], k + (int64_t)(idx ? idx[r] : r) * ldk, 64);
        }
        load8x8((const uint8_t *)rows, 64, v);
        load8x8((const uint8_t *)rows + 32, 64, v + 8);
    }
#pragma GCC unroll 16
    for (int j = 0; j < 16; j++) {
        kt[j] = even16(v[j]);
        kt[16 + j] = odd16(v[j]);
    }
}

/* One query's 8 exact sums against a K tile: step J of half C (even
 * bytes 0, odd 1) broadcasts the query's pair qp[16C + J] against kt[16C
 * + J], into one of four chains.  Written as asm: compiled from
 * intrinsics, GCC formed all 32 products first and spilled them. */
#define QK_STEP(J, C, A)                                      \
    "vpbroadcastd " #J "*4+" #C "*64(%[qp]), %[t]\n\t"        \
    "vpmaddwd " #J "*32+" #C "*512(%[kt]), %[t], %[t]\n\t"    \
    "vpaddd %[t], %[" A "], %[" A "]\n\t"
#define QK_STEP2(J) QK_STEP(J, 0, "a0") QK_STEP(J, 1, "a1")
#define QK_STEP4(J) QK_STEP2(J) QK_STEP((J + 1), 0, "a2") QK_STEP((J + 1), 1, "a3")

INLINE __m256i qk_tile_dot(const __m256i kt[32], const int32_t qp[32])
{
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, t;
    __asm__(QK_STEP4(0) QK_STEP4(2) QK_STEP4(4) QK_STEP4(6) QK_STEP4(8) QK_STEP4(10) QK_STEP4(12) QK_STEP4(14)
            : [a0] "+x"(a0), [a1] "+x"(a1), [a2] "+x"(a2), [a3] "+x"(a3), [t] "=&x"(t)
            : [kt] "r"(kt), [qp] "r"(qp), "m"(*(const __m256i(*)[32])kt), "m"(*(const int32_t(*)[32])qp));
    return _mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3));
}
#undef QK_STEP4
#undef QK_STEP2
#undef QK_STEP

/* A query's pairs for one 64-wide slice, the broadcasts' sources: qp[j]
 * (j < 16) bytes 4j and 4j + 2 of q as int16s, qp[16 + j] bytes 4j + 1
 * and 4j + 3. */
static void q_pairs64(const int8_t *q, int32_t qp[32])
{
    for (int c = 0; c < 2; c++) {
        const __m256i v = load256(q + 32 * c);
        _mm256_store_si256((__m256i *)&qp[8 * c], even16(v));
        _mm256_store_si256((__m256i *)&qp[16 + 8 * c], odd16(v));
    }
}

/* Query h's scores for the tile at rank r0 from its exact sums (n_h its
 * rows): (float)sum * (qd * kd), as qk_i8, not written past n_h. */
INLINE void qk_tile_scores(__m256i sum, float qd, __m256 vkd, int r0, int n_h, float *s)
{
    const __m256 sc = _mm256_mul_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(_mm256_set1_ps(qd), vkd));
    if (n_h - r0 >= 8)
        _mm256_storeu_ps(s + r0, sc);
    else
        _mm256_maskstore_ps(s + r0, lanes_below(n_h - r0), sc);
}

/* The 8 K scales of the tile at rank r0 (0 past n). */
INLINE __m256 k_scales8(const float *kd, int64_t lds, const int32_t *idx, int r0, int n)
{
    alignas(32) float kv[8];
    for (int i = 0; i < 8; i++) kv[i] = r0 + i < n ? kd[(int64_t)(idx ? idx[r0 + i] : r0 + i) * lds] : 0.0f;
    return _mm256_load_ps(kv);
}

enum {
    QK_MULTI_Q = 32,                      /* queries whose pairs are formed at once */
    QK_MAX_SLICES = QT_KV_MULTI_MAXD / 64, /* 64-wide slices of a head */
};

/* nq queries (d wide, a multiple of 64 up to QT_KV_MULTI_MAXD) over K
 * rows, query h over ranks 0..n_h - 1 (n_h = n_each ? n_each[h] : n): a
 * group of QK_MULTI_Q queries at a time, each 8-row tile's slices formed
 * once for all of the group's queries that reach it, each query's exact
 * sum the sum of its slices' (integers: the one-query kernel's). */
static void qk_multi(int d, int nq, const int *n_each, int n, const int8_t *q, const float *qd, const int8_t *k,
                     int64_t ldk, const float *kd, int64_t lds, const int32_t *idx, float *s, int64_t ld_s)
{
    const int slices = d / 64;
    alignas(32) int32_t qp[QK_MULTI_Q][QK_MAX_SLICES][32];
    alignas(32) __m256i kt[QK_MAX_SLICES][32];
    for (int h0 = 0; h0 < nq; h0 += QK_MULTI_Q) {
        const int g = nq - h0 < QK_MULTI_Q ? nq - h0 : QK_MULTI_Q;
        int n_max = 0;
        for (int h = 0; h < g; h++) {
            for (int c = 0; c < slices; c++) q_pairs64(q + (int64_t)(h0 + h) * d + 64 * c, qp[h][c]);
            const int nh = n_each ? n_each[h0 + h] : n;
            n_max = nh > n_max ? nh : n_max;
        }
        for (int r0 = 0; r0 < n_max; r0 += 8) {
            for (int c = 0; c < slices; c++) k_tile8(k + 64 * c, ldk, idx, r0, n_max, kt[c]);
            const __m256 vkd = k_scales8(kd, lds, idx, r0, n_max);
            for (int h = 0; h < g; h++) {
                const int nh = n_each ? n_each[h0 + h] : n;
                if (nh <= r0) continue;
                __m256i sum = qk_tile_dot(kt[0], qp[h][0]);
                for (int c = 1; c < slices; c++) sum = _mm256_add_epi32(sum, qk_tile_dot(kt[c], qp[h][c]));
                qk_tile_scores(sum, qd[h0 + h], vkd, r0, nh, s + (h0 + h) * ld_s);
            }
        }
    }
}

void qt_avx2_qk_i8_multi(int n, int d, int nq, const int8_t *q, const float *qd, const int8_t *k, int64_t ldk,
                         const float *kd, int64_t lds, const int32_t *idx, float *s, int64_t ld_s)
{
    qk_multi(d, nq, NULL, n, q, qd, k, ldk, kd, lds, idx, s, ld_s);
}

/* ---- a prompt's causal block (rows 0..n[h]-1) -------------------------
 * qk_multi's tiles, each for the queries whose rows reach it. */

void qt_avx2_qk_i8_causal(int d, int nq, const int *n, const int8_t *q, const float *qd, const int8_t *k,
                          int64_t ldk, const float *kd, int64_t lds, float *s, int64_t ld_s)
{
    qk_multi(d, nq, n, 0, q, qd, k, ldk, kd, lds, NULL, s, ld_s);
}

/* ---- the int8 p.v contract (kv_ops.h), several queries at once --------
 * A 64-rank V tile is widened once into int16 pairs of consecutive
 * ranks, for every query that sees it; each query's 15-bit weights meet
 * it by vpmaddwd and an add per 16 products (f32 FMAs take one per 8).
 * The sums are exact, so each tile's go straight into the double
 * accumulators.  Masked loads and stores (vmaskmovps) cost many times a
 * plain one on AMD: only a query's last, partial 8 lanes take them. */

/* 8 floats from p, those at or past `left` 0 (masked only then). */
INLINE __m256 load8_upto(const float *p, int left)
{
    return left >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, lanes_below(left));
}

float qt_avx2_max_f32(int n, const float *x)
{
    const __m256 ninf = _mm256_set1_ps(-__builtin_inff());
    __m256 m0 = ninf, m1 = ninf;
    int i = 0;
    /* vmaxps keeps its second operand for a NaN, as the scalar compare */
    for (; i + 16 <= n; i += 16) {
        m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
        m1 = _mm256_max_ps(_mm256_loadu_ps(x + i + 8), m1);
    }
    for (; i < n; i += 8) {
        const __m256 v = load8_upto(x + i, n - i);
        m0 = _mm256_max_ps(n - i >= 8 ? v : _mm256_blendv_ps(ninf, v, _mm256_castsi256_ps(lanes_below(n - i))), m0);
    }
    return hmax_ps(_mm256_max_ps(m0, m1));
}

/* The 8 V scales of ranks r.. (0 past n). */
INLINE __m256 v_scales8(const float *vd, int64_t lds, const int32_t *idx, int r, int n)
{
    if (!idx && lds == 1) return load8_upto(vd + r, n - r);
    alignas(32) float t[8];
    for (int i = 0; i < 8; i++) t[i] = r + i < n ? vd[(int64_t)(idx ? idx[r + i] : r + i) * lds] : 0.0f;
    return _mm256_load_ps(t);
}

/* lrintf(x) clamped to [0, hi], 8 lanes: vminps with x second passes a
 * NaN on, which converts to INT32_MIN and clamps to 0, as LONG_MIN does;
 * above hi the float clamp gives what the integer one would. */
INLINE __m256i clamp_rint8(__m256 x, float hi)
{
    return _mm256_max_epi32(_mm256_cvtps_epi32(_mm256_min_ps(_mm256_set1_ps(hi), x)), _mm256_setzero_si256());
}

/* One query's weights W (int16, written over its scores from the front,
 * behind the floats still to be read; W[n] = 0 for a whole last pair),
 * and its E's added to *z: the contract's first steps, 8 ranks at a time
 * (exp16 is lane-wise, so 8 at a time are its values). */
static void w16_weights(int n, float *s, const float *vd, int64_t lds, const int32_t *idx, float mx, float kw,
                        double *z)
{
    const __m256 vmx = _mm256_set1_ps(mx), vkw = _mm256_set1_ps(kw), e24 = _mm256_set1_ps(0x1p24f);
    int16_t *w = (int16_t *)s;
    __m256d zd = _mm256_setzero_pd();
    for (int r0 = 0; r0 < n; r0 += 64) {
        __m256i ez = _mm256_setzero_si256(); /* up to 8 E's a lane: under 2^28 */
        for (int r = r0; r < n && r < r0 + 64; r += 8) {
            __m256 e = qt_expv8(_mm256_sub_ps(load8_upto(s + r, n - r), vmx));
            if (n - r < 8) e = _mm256_and_ps(e, _mm256_castsi256_ps(lanes_below(n - r))); /* dropped */
            ez = _mm256_add_epi32(ez, clamp_rint8(_mm256_mul_ps(e, e24), 0x1p24f));
            const __m256i c = clamp_rint8(_mm256_mul_ps(_mm256_mul_ps(e, v_scales8(vd, lds, idx, r, n)), vkw), 32767.0f);
            const __m128i p = _mm_packs_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
            if (n - r >= 8) {
                _mm_storeu_si128((__m128i *)(w + r), p);
            } else {
                alignas(16) int16_t t[8];
                _mm_store_si128((__m128i *)t, p);
                memcpy(w + r, t, sizeof(int16_t) * (size_t)(n - r));
            }
        }
        zd = _mm256_add_pd(zd, _mm256_add_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(ez)),
                                              _mm256_cvtepi32_pd(_mm256_extracti128_si256(ez, 1))));
    }
    w[n] = 0;
    alignas(32) double t[4];
    _mm256_store_pd(t, zd);
    *z += (t[0] + t[1]) + (t[2] + t[3]); /* integers: exact */
}

/* qt_pv16_tile_fn (kv_ops.h) on AVX2: per pair of ranks 8 vectors, lane
 * e of vector j holding the pair's elements 8j + e as int16s; re rounded
 * up to a pair, whose weight past the query's last rank is 0. */
static void pv16_tile(int r0, int re, const void *vtp, const int16_t *w, int32_t *carry, int first, int flush,
                      double *acc)
{
    const __m256i *vt = vtp;
    __m256i a0, a1, a2, a3, a4, a5, a6, a7, b, t;
    if (first) {
        a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = _mm256_setzero_si256();
    } else {
        const __m256i *c = (const __m256i *)carry;
        a0 = c[0], a1 = c[1], a2 = c[2], a3 = c[3], a4 = c[4], a5 = c[5], a6 = c[6], a7 = c[7];
    }
    /* one pair of ranks: its weights broadcast against its 8 vectors (asm
     * for the reason qk_tile_dot gives) */
#define PV_STEP(J, A)                                         \
    "vpmaddwd " #J "*32(%[x]), %[b], %[t]\n\t"                \
    "vpaddd %[t], %[" A "], %[" A "]\n\t"
    for (int r = r0; r < re; r += 2) {
        const __m256i *x = vt + (r - r0) / 2 * 8;
        __asm__("vpbroadcastd (%[w]), %[b]\n\t" PV_STEP(0, "a0") PV_STEP(1, "a1") PV_STEP(2, "a2") PV_STEP(3, "a3")
                    PV_STEP(4, "a4") PV_STEP(5, "a5") PV_STEP(6, "a6") PV_STEP(7, "a7")
                : [a0] "+x"(a0), [a1] "+x"(a1), [a2] "+x"(a2), [a3] "+x"(a3), [a4] "+x"(a4), [a5] "+x"(a5),
                  [a6] "+x"(a6), [a7] "+x"(a7), [b] "=&x"(b), [t] "=&x"(t)
                : [x] "r"(x), [w] "r"(w + r), "m"(*(const __m256i(*)[8])x), "m"(*(const int32_t *)(w + r)));
    }
#undef PV_STEP
    const __m256i a[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
    if (!flush) {
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) _mm256_store_si256((__m256i *)carry + j, a[j]);
        return;
    }
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
        _mm256_storeu_pd(acc + 8 * j, _mm256_add_pd(_mm256_loadu_pd(acc + 8 * j), _mm256_cvtepi32_pd(_mm256_castsi256_si128(a[j]))));
        _mm256_storeu_pd(acc + 8 * j + 4,
                         _mm256_add_pd(_mm256_loadu_pd(acc + 8 * j + 4), _mm256_cvtepi32_pd(_mm256_extracti128_si256(a[j], 1))));
    }
}

/* V ranks r0..r0+nt-1 (64 elements from e0) as pv16_tile reads them: rank
 * r0 + i in the low int16 of each pair, the next in the high; a missing
 * odd rank is zeros. */
static void v_tile16(const int8_t *v, int64_t ldv, const int32_t *idx, int r0, int nt, int e0, __m256i *vt)
{
    for (int i = 0; i < nt; i += 2) {
        const int8_t *v0 = v + (int64_t)(idx ? idx[r0 + i] : r0 + i) * ldv + e0;
        const int8_t *v1 = i + 1 < nt ? v + (int64_t)(idx ? idx[r0 + i + 1] : r0 + i + 1) * ldv + e0 : NULL;
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            const __m128i a = _mm_loadu_si128((const __m128i *)(v0 + 16 * c));
            const __m128i b = v1 ? _mm_loadu_si128((const __m128i *)(v1 + 16 * c)) : _mm_setzero_si128();
            _mm256_store_si256(vt + i / 2 * 8 + 2 * c, _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, b)));
            _mm256_store_si256(vt + i / 2 * 8 + 2 * c + 1, _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(a, b)));
        }
    }
}

void qt_avx2_pv_i8_sum_with(qt_pv_weights_fn weights, qt_pv16_tile_fn tile_fn, int d, int nq, const int *n,
                            const int8_t *v, int64_t ldv, const float *vd, int64_t lds, const int32_t *idx, float *s,
                            int64_t ld_s, const float *mx, const float *kw, double *acc, int64_t ld_acc, double *z)
{
    if (!weights) weights = w16_weights;
    if (d % 64) {
        qt_kv_ref()->pv_i8_sum(d, nq, n, v, ldv, vd, lds, idx, s, ld_s, mx, kw, acc, ld_acc, z);
        return;
    }
    enum { CT = 64, CQ = 128 }; /* ranks per V tile; queries whose sums are carried at once */
    alignas(64) __m256i vt[CT / 2 * 8];
    alignas(32) int32_t carry[CQ][64];
    for (int h = 0; h < nq; h++) weights(n[h], s + h * ld_s, vd, lds, idx, mx[h], kw[h], z + h);
    const int64_t ld_w = 2 * ld_s;
    for (int h0 = 0; h0 < nq; h0 += CQ) {
        const int nh = nq - h0 < CQ ? nq - h0 : CQ;
        const int16_t *w = (const int16_t *)(s + h0 * ld_s);
        int n_max = 0;
        for (int h = h0; h < h0 + nh; h++) n_max = n[h] > n_max ? n[h] : n_max;
        for (int e0 = 0; e0 < d; e0 += 64)
            for (int r0 = 0; r0 < n_max; r0 += CT) {
                const int nt = n_max - r0 < CT ? n_max - r0 : CT, tile = r0 / CT;
                v_tile16(v, ldv, idx, r0, nt, e0, vt);
                for (int h = 0; h < nh; h++) {
                    const int nh_h = n[h0 + h];
                    if (nh_h <= r0) continue;
                    const int last = nh_h <= r0 + CT;
                    tile_fn(r0, last ? nh_h : r0 + CT, vt, w + h * ld_w, carry[h], tile % PV_CARRY_TILES == 0,
                            last || tile % PV_CARRY_TILES == PV_CARRY_TILES - 1, acc + (h0 + h) * ld_acc + e0);
                }
            }
    }
}

void qt_avx2_pv_i8_sum(int d, int nq, const int *n, const int8_t *v, int64_t ldv, const float *vd, int64_t lds,
                       const int32_t *idx, float *s, int64_t ld_s, const float *mx, const float *kw, double *acc,
                       int64_t ld_acc, double *z)
{
    qt_avx2_pv_i8_sum_with(NULL, pv16_tile, d, nq, n, v, ldv, vd, lds, idx, s, ld_s, mx, kw, acc, ld_acc, z);
}

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

const qt_kv_ops qt_kv_avx2 = {.name = "avx2", .qk_i8 = qk_i8, .qk_f16 = qk_f16, .pv_f16 = pv_f16,
                              .quantize_i8 = quantize_i8, .max_f32 = qt_avx2_max_f32, .qk_i8_multi = qt_avx2_qk_i8_multi,
                              .qk_i8_causal = qt_avx2_qk_i8_causal, .pv_i8_sum = qt_avx2_pv_i8_sum};
const qt_kv_ops qt_kv_avx2_vnni = {.name = "avx2-vnni", .qk_i8 = qk_i8_vnni, .qk_f16 = qk_f16, .pv_f16 = pv_f16,
                                   .quantize_i8 = quantize_i8, .max_f32 = qt_avx2_max_f32, .qk_i8_multi = qt_avx2_qk_i8_multi,
                                   .qk_i8_causal = qt_avx2_qk_i8_causal, .pv_i8_sum = qt_avx2_pv_i8_sum};

#else
typedef int qt_x86_avx2_kv_unused;
#endif
