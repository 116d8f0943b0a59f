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
 *  - pv_*: for each output element, two FMA chains (rank r in chain r % 2)
 *    added at the end. */
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
    /* out[e] = sum_r (p[r] * vd[c * lds]) * V_c[e], e < d. */
    void (*pv_i8)(int n, int d, const int8_t *v, int64_t ldv, const float *vd, int64_t lds,
                  const int32_t *idx, const float *p, float *out);
    /* out[e] = sum_r p[r] * f32(V_c[e]). */
    void (*pv_f16)(int n, int d, const uint16_t *v, int64_t ldv, const int32_t *idx,
                   const float *p, float *out);
    /* qt_kv_quantize_i8 (below), the same bits; NULL: the reference. */
    float (*quantize_i8)(int n, const float *x, int8_t *q);
    /* Several queries over the same rows (a KV head's query heads): each
     * row is read, and its layout work done, once for all of them.  Each
     * result is bit-identical to the one-query kernel's over the same
     * rows (c = idx ? idx[r] : r); NULL where the set has none.  d must be
     * 64 (callers fall back to the one-query kernels otherwise).
     * qk_i8_multi: s + h * ld_s gets qk_i8(n, d, q + h * d, qd[h], ...).
     * pv_i8_multi: out + h * ld_o gets pv_i8(n, d, ..., p + h * ld_p, ...);
     * p is overwritten (with p[r] * vd[c * lds]). */
    void (*qk_i8_multi)(int n, int d, int nq, const int8_t *q, const float *qd, const int8_t *k, int64_t ldk,
                        const float *kd, int64_t lds, const int32_t *idx, float *s, int64_t ld_s);
    void (*pv_i8_multi)(int n, int d, int nq, const int8_t *v, int64_t ldv, const float *vd, int64_t lds,
                        const int32_t *idx, float *p, int64_t ld_p, float *out, int64_t ld_o);
    /* A prompt's causal block: nq queries (up to QT_KV_CAUSAL_MAXQ) over
     * rows 0..n[h]-1 of the cache each (a run of tokens' heads of one KV
     * head), every K and V row read and rearranged once for all queries
     * that see it; idx NULL, d must be 64, n[h] >= 1.
     * qk_i8_causal: s + h * ld_s gets qk_i8(n[h], d, q + h * d, qd[h], ...),
     * bit for bit.
     * pv_i8_causal: the softmax of each query's scores (at s + h * ld_s,
     * as qk_i8_causal leaves them) times V, in integer steps (four times
     * the products per instruction of f32 FMAs), to out[h]: with mx the
     * largest score, e[r] = exp16(s[r] - mx) (f32ops.h's, 16 ranks at a
     * time from rank 0, lanes past n[h] dropped), sum = the e's added in
     * 16 lanes (rank r in lane r % 16) and qt_reduce16'd, w[r] = e[r] *
     * vd[r * lds] with m their largest, W[r] = lrintf(w[r] * (32767 / m))
     * clamped to [0, 32767] (m = 0: all 0); then per element j and tile
     * of QT_KV_CAUSAL_TILE ranks from rank 0 the exact sum S of W[r] *
     * V_r[j], acc += (float)S tile after tile from 0, and out[h][j] = acc
     * * ((m / 32767) / sum).  W keeps about 15 bits of each weight
     * relative to the largest.  s is overwritten; work holds
     * QT_KV_CAUSAL_WORK(nq) floats, 64-byte aligned. */
    void (*qk_i8_causal)(int d, int nq, const int *n, const int8_t *q, const float *qd, const int8_t *k,
                         int64_t ldk, const float *kd, int64_t lds, float *s, int64_t ld_s);
    void (*pv_i8_causal)(int d, int nq, const int *n, const int8_t *v, int64_t ldv, const float *vd, int64_t lds,
                         float *s, int64_t ld_s, float *const out[], float *work);
} qt_kv_ops;

/* The causal kernels' limits: queries per call, V rows per tile (widened
 * to int16 pairs once, into work, for every query of the call), and the
 * work floats of pv_i8_causal: the tile, then a query's 64 sums carried
 * from tile to tile and its scale. */
#define QT_KV_CAUSAL_MAXQ 256
#define QT_KV_CAUSAL_TILE 64
#define QT_KV_CAUSAL_WORK(nq) ((size_t)QT_KV_CAUSAL_TILE * 32 + (size_t)(nq) * 80)

/* The reference set and the one for this CPU (QLM_ISA caps it as for the
 * weight kernels). */
const qt_kv_ops *qt_kv_ref(void);
const qt_kv_ops *qt_kv(void);

/* Symmetric int8 with one scale for the n values: q = round(x / d) with
 * d = max|x| / 127 (ties to even; all-zero x gives d = 0).  Returns d. */
float qt_kv_quantize_i8(int n, const float *x, int8_t *q);

#if defined(__x86_64__)
extern const qt_kv_ops qt_kv_avx2, qt_kv_avx2_vnni, qt_kv_avx512, qt_kv_avx512_vnni;
/* The AVX2 causal block kernels, which the AVX-512 set without VNNI
 * takes too (x86_avx2_kv.c). */
void qt_avx2_qk_i8_causal(int d, int nq, const int *n, const int8_t *q, const float *qd, const int8_t *k, int64_t ldk,
                          const float *kd, int64_t lds, float *s, int64_t ld_s);
void qt_avx2_pv_i8_causal(int d, int nq, const int *n, const int8_t *v, int64_t ldv, const float *vd, int64_t lds,
                          float *s, int64_t ld_s, float *const out[], float *work);
#endif

#endif
