/* kv_ops.h - attention kernels over a KV cache stored as int8 or f16.
 *
 * Rows of the cache are addressed by an index list (the cells a query
 * sees, in rank order) so that attention never copies or dequantizes the
 * cache as a whole; idx == NULL means rows 0..n-1.  Each kernel's result
 * depends only on the values of the rows in rank order, never on where
 * they sit, which is what makes a sequence's output independent of other
 * sequences sharing the cache.
 *
 * Float order is part of each contract below, so every ISA version
 * returns bits identical to the scalar reference (kv_ref.c):
 *  - qk_i8: the integer dot is exact; then one float multiply chain.
 *  - qk_f16: 16 lane accumulators (element k in lane k % 16, FMA), summed
 *    with qt_reduce16's tree, then times scale.
 *  - pv_f16: for each output element, two FMA chains (rank r in chain
 *    r % 2) added at the end.
 *  - pv_i8_sum, the softmax and p.v of every attention over int8 V rows
 *    (one query, a KV head's group, a prompt's causal block, a long
 *    context split across threads): for a query whose rows r < n (c =
 *    idx ? idx[r] : r) have scores s[r], with mx the largest score
 *    (max_f32) and kw = 32767 / (the largest V scale vd[c * lds] among the
 *    rows the query sees; kw = 0 when that is 0):
 *        e[r] = exp16(s[r] - mx)           f32ops.h's exp, lane by lane
 *        W[r] = lrintf((e[r] * vd[c * lds]) * kw), clamped to [0, 32767]
 *        E[r] = lrintf(e[r] * 2^24), clamped to [0, 2^24]
 *        acc[j] = sum_r W[r] * V_c[j],  z = sum_r E[r]
 *        out[j] = (float)(acc[j] * (2^24 / ((double)kw * z)))  (qt_kv_pv_out)
 *    acc and z are integers below 2^53, held exactly in doubles, so they
 *    are the same in any order and for any split of the rows: a kernel
 *    may sum as it likes, and decoding at long context shares one
 *    query's rows among threads (Flash-Decoding) without changing a bit.
 *    The 15-bit weights and the 24-bit fixed-point sum of exps are far
 *    finer than the int8 rows they weigh. */
#ifndef QLM_QT_KV_OPS_H
#define QLM_QT_KV_OPS_H

#include <stdint.h>

typedef struct qt_kv_ops {
    const char *name;
    /* s[r] = (float)(q . K_c) * (qd * kd[c * lds]), c = idx ? idx[r] : r,
     * for r < n; K_c is the d int8 values at k + c * ldk. */
    void (*qk_i8)(int n, int d, const int8_t *q, float qd, const int8_t *k, int64_t ldk,
                  const float *kd, int64_t lds, const int32_t *idx, float *s);
    /* s[r] = (q . f32(K_c)) * scale, K_c the d halves at k + c * ldk. */
    void (*qk_f16)(int n, int d, const float *q, float scale, const uint16_t *k, int64_t ldk,
                   const int32_t *idx, float *s);
    /* out[e] = sum_r p[r] * f32(V_c[e]). */
    void (*pv_f16)(int n, int d, const uint16_t *v, int64_t ldv, const int32_t *idx,
                   const float *p, float *out);
    /* qt_kv_quantize_i8 (below), the same bits; NULL: the reference. */
    float (*quantize_i8)(int n, const float *x, int8_t *q);
    /* The largest of x[0..n) (-INFINITY for none), NaNs passed over:
     * exact, so any split of x agrees.  NULL: the reference's. */
    float (*max_f32)(int n, const float *x);
    /* Several queries over the same K rows (a KV head's query heads): each
     * row is read, and its layout work done, once for all of them.  s + h *
     * ld_s gets qk_i8(n, d, q + h * d, qd[h], ...) bit for bit.  d must be
     * a multiple of 64 up to QT_KV_MULTI_MAXD (callers go query by query
     * otherwise); NULL where the set has none. */
    void (*qk_i8_multi)(int n, int d, int nq, const int8_t *q, const float *qd, const int8_t *k, int64_t ldk,
                        const float *kd, int64_t lds, const int32_t *idx, float *s, int64_t ld_s);
    /* A prompt's causal block: nq queries (up to QT_KV_CAUSAL_MAXQ) over
     * rows 0..n[h]-1 of the cache each (a run of tokens' heads of one KV
     * head), every K row read and rearranged once for all queries that
     * see it; d as for qk_i8_multi, n[h] >= 1.  s + h * ld_s gets qk_i8(n[h], d,
     * q + h * d, qd[h], ..., NULL, ...) bit for bit.  NULL where the set
     * has none. */
    void (*qk_i8_causal)(int d, int nq, const int *n, const int8_t *q, const float *qd, const int8_t *k,
                         int64_t ldk, const float *kd, int64_t lds, float *s, int64_t ld_s);
    /* The int8 p.v contract above for nq queries over the same V rows,
     * query h over ranks 0..n[h]-1 of them (c = idx ? idx[r] : r; each V
     * row is read and widened once for all the queries that see it), its
     * scores at s + h * ld_s (overwritten), mx[h] and kw[h] as above:
     * adds its sums to acc + h * ld_acc (d of them) and to z[h].  Any d;
     * sets whose kernel wants d a multiple of 64 hand others to the
     * reference. */
    void (*pv_i8_sum)(int d, int nq, const int *n, const int8_t *v, int64_t ldv, const float *vd, int64_t lds,
                      const int32_t *idx, float *s, int64_t ld_s, const float *mx, const float *kw, double *acc,
                      int64_t ld_acc, double *z);
} qt_kv_ops;

/* Queries per qk_i8_causal call. */
#define QT_KV_CAUSAL_MAXQ 256
/* The widest head qk_i8_multi and qk_i8_causal take (Gemma 3's 256). */
#define QT_KV_MULTI_MAXD 256

/* The reference set and the one for this CPU (QLM_ISA caps it as for the
 * weight kernels). */
const qt_kv_ops *qt_kv_ref(void);
const qt_kv_ops *qt_kv(void);

/* Symmetric int8 with one scale for the n values: q = round(x / d) with
 * d = max|x| / 127 (ties to even; all-zero x gives d = 0).  Returns d. */
float qt_kv_quantize_i8(int n, const float *x, int8_t *q);

/* The contract's last step: out[j] = (float)(acc[j] * (2^24 / (kw * z)))
 * for j < d (all 0 when kw or z is 0). */
void qt_kv_pv_out(int d, const double *acc, double z, float kw, float *out);

#if defined(__x86_64__)
extern const qt_kv_ops qt_kv_avx2, qt_kv_avx2_vnni, qt_kv_avx512, qt_kv_avx512_vnni;
/* The AVX2 kernels that the AVX-512 sets take too (x86_avx2_kv.c): every
 * x86 set then attends a prompt alike. */
void qt_avx2_qk_i8_multi(int n, int d, int nq, const int8_t *q, const float *qd, const int8_t *k, int64_t ldk,
                         const float *kd, int64_t lds, const int32_t *idx, float *s, int64_t ld_s);
void qt_avx2_qk_i8_causal(int d, int nq, const int *n, const int8_t *q, const float *qd, const int8_t *k, int64_t ldk,
                          const float *kd, int64_t lds, float *s, int64_t ld_s);
void qt_avx2_pv_i8_sum(int d, int nq, const int *n, const int8_t *v, int64_t ldv, const float *vd, int64_t lds,
                       const int32_t *idx, float *s, int64_t ld_s, const float *mx, const float *kw, double *acc,
                       int64_t ld_acc, double *z);
float qt_avx2_max_f32(int n, const float *x);
/* pv_i8_sum's tiles: ranks r0..re-1 of a V tile laid out by pairs of
 * ranks (per pair 64 int16 pairs, element e at pair word e, the first
 * rank low) against one query's int16 weights w; the exact sums carried
 * in carry (64 int32 in element order; first: none) and added to acc (64
 * doubles) when flush.  A tile adds under 2^28 to a sum, so
 * PV_CARRY_TILES of them fit an int32. */
enum { PV_CARRY_TILES = 8 };
typedef void (*qt_pv16_tile_fn)(int r0, int re, const void *vt, const int16_t *w, int32_t *carry, int first,
                                int flush, double *acc);
/* pv_i8_sum's first steps for one query: its int16 weights W over its
 * n scores s from the front (W[n] = 0), and its E's added to *z. */
typedef void (*qt_pv_weights_fn)(int n, float *s, const float *vd, int64_t lds, const int32_t *idx, float mx, float kw,
                                 double *z);
/* qt_avx2_pv_i8_sum with another set's weights and tile kernels (the
 * AVX-512 VNNI ones; weights NULL: AVX2's) */
void qt_avx2_pv_i8_sum_with(qt_pv_weights_fn weights, qt_pv16_tile_fn tile, int d, int nq, const int *n,
                            const int8_t *v, int64_t ldv, const float *vd, int64_t lds, const int32_t *idx, float *s,
                            int64_t ld_s, const float *mx, const float *kw, double *acc, int64_t ld_acc, double *z);
#endif

#endif
