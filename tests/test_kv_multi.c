/* test_kv_multi.c - kv_ops.h's several-query kernels (qk_i8_multi,
 * pv_i8_multi): every query's result bit-identical to the one-query
 * reference kernels, for row counts across the 16-row blocks and the
 * 2-row chains, query counts across the kernels' groups, and extreme
 * bytes, over rows in order and through an index (a batched decoding
 * step's cells); nothing written outside the results.  The causal
 * block kernels likewise, query by query: qk_i8_causal against qk_i8,
 * pv_i8_causal's softmax and integer sums against the reference's bit for
 * bit and against a float softmax and pv_i8 within their rounding. */
#include <math.h>
#include <string.h>

#include "quant/cpu.h"
#include "quant/kv_ops.h"
#include "test.h"

static uint64_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static float frand(uint64_t *s) { return (float)(rnd(s) % 1000000) / 1000000.0f; }

static int same_bits(float a, float b) { return !memcmp(&a, &b, sizeof a); }

enum { D = 64, MAXN = 300, MAXQ = 11, PAD = 16 };

/* kind 0: random; 1: extremes (-128/127 bytes); 2: all K/V bytes -128,
 * queries 127; 3: zeros in q and p */
static int8_t byte_of(uint64_t *s, int kind, int is_q)
{
    switch (kind) {
    case 1: return rnd(s) & 1 ? 127 : -128;
    case 2: return is_q ? 127 : -128;
    case 3: return is_q && rnd(s) % 3 ? 0 : (int8_t)(rnd(s) & 0xff);
    default: return (int8_t)(rnd(s) & 0xff);
    }
}

/* The n rows in an order that is not theirs: from both ends inward. */
static const int32_t *order(int n)
{
    static int32_t idx[MAXN];
    for (int r = 0; r < n; r++) idx[r] = r % 2 ? n - 1 - r / 2 : r / 2;
    return idx;
}

static void check_set(const char *name, const qt_kv_ops *ops)
{
    const qt_kv_ops *ref = qt_kv_ref();
    static int8_t k[MAXN * 80], v[MAXN * 80], q[MAXQ * D];
    static float kd[MAXN * 2], vd[MAXN * 2], qd[MAXQ], s[MAXQ * (MAXN + PAD)], want[MAXN], p[MAXQ * (MAXN + PAD)],
        p1[MAXN], out[MAXQ * (D + PAD)], o1[D];
    uint64_t seed = 21;
    char title[96];
    const int ns[] = {1, 2, 3, 15, 16, 17, 31, 33, 64, 100, 255, 300};
    const int ldks[] = {D, 80};

    if (ops->qk_i8_multi) {
        snprintf(title, sizeof title, "%s/qk_i8_multi", name);
        TEST_BEGIN(title);
        for (int kind = 0; kind < 4; kind++)
            for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
                for (int nq = 1; nq <= MAXQ; nq += (nq < 9 ? 1 : 2))
                    for (int li = 0; li < 4; li++) {
                        const int n = ns[ni], ldk = ldks[li % 2], ld_s = n + PAD;
                        const int32_t *ix = li >= 2 ? order(n) : NULL;
                        for (int i = 0; i < n * ldk; i++) k[i] = byte_of(&seed, kind, 0);
                        for (int i = 0; i < nq * D; i++) q[i] = byte_of(&seed, kind, 1);
                        for (int r = 0; r < n; r++) kd[r] = frand(&seed) * 0.05f;
                        for (int h = 0; h < nq; h++) qd[h] = frand(&seed) * 0.01f;
                        for (int i = 0; i < nq * ld_s; i++) s[i] = 7.0f;
                        ops->qk_i8_multi(n, D, nq, q, qd, k, ldk, kd, 1, ix, s, ld_s);
                        for (int h = 0; h < nq; h++) {
                            ref->qk_i8(n, D, q + h * D, qd[h], k, ldk, kd, 1, ix, want);
                            for (int r = 0; r < n; r++)
                                CHECK(same_bits(s[h * ld_s + r], want[r]), "kind %d n=%d nq=%d ldk=%d idx %d h=%d r=%d: %.9g vs %.9g",
                                      kind, n, nq, ldk, ix != NULL, h, r, s[h * ld_s + r], want[r]);
                            for (int r = n; r < ld_s; r++)
                                CHECK(s[h * ld_s + r] == 7.0f, "n=%d nq=%d h=%d: wrote past the row at %d", n, nq, h, r);
                        }
                    }
        TEST_END();
    }

    if (ops->pv_i8_multi) {
        snprintf(title, sizeof title, "%s/pv_i8_multi", name);
        TEST_BEGIN(title);
        for (int kind = 0; kind < 4; kind++)
            for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
                for (int nq = 1; nq <= MAXQ; nq += (nq < 9 ? 1 : 2))
                    for (int li = 0; li < 4; li++) {
                        const int lds = 1 + li % 2;
                        const int n = ns[ni], ldv = ldks[lds - 1], ld_p = n + PAD, ld_o = D + PAD;
                        const int32_t *ix = li >= 2 ? order(n) : NULL;
                        for (int i = 0; i < n * ldv; i++) v[i] = byte_of(&seed, kind, 0);
                        for (int r = 0; r < n * lds; r++) vd[r] = frand(&seed) * 0.05f;
                        for (int i = 0; i < nq * ld_p; i++) p[i] = kind == 3 && rnd(&seed) % 4 == 0 ? 0.0f : frand(&seed);
                        for (int i = 0; i < nq * ld_o; i++) out[i] = 7.0f;
                        float keep[MAXQ][MAXN];
                        for (int h = 0; h < nq; h++) memcpy(keep[h], p + h * ld_p, sizeof(float) * (size_t)n);
                        ops->pv_i8_multi(n, D, nq, v, ldv, vd, lds, ix, p, ld_p, out, ld_o);
                        for (int h = 0; h < nq; h++) {
                            memcpy(p1, keep[h], sizeof(float) * (size_t)n);
                            ref->pv_i8(n, D, v, ldv, vd, lds, ix, p1, o1);
                            for (int e = 0; e < D; e++)
                                CHECK(same_bits(out[h * ld_o + e], o1[e]), "kind %d n=%d nq=%d lds=%d idx %d h=%d e=%d: %.9g vs %.9g",
                                      kind, n, nq, lds, ix != NULL, h, e, out[h * ld_o + e], o1[e]);
                            for (int e = D; e < ld_o; e++)
                                CHECK(out[h * ld_o + e] == 7.0f, "n=%d nq=%d h=%d: wrote past the output at %d", n, nq, h, e);
                        }
                    }
        TEST_END();
    }
}

/* The causal block kernels: queries in runs of equal row counts (a
 * token's heads) and single ones, counts across the 16-row K tiles and
 * the V tiles, each result against the references over its own rows;
 * scores and outputs not written past each query's own. */
static void check_causal(const char *name, const qt_kv_ops *ops)
{
    enum { CQ = 40, CN = 2 * QT_KV_CAUSAL_TILE + 37 };
    const qt_kv_ops *ref = qt_kv_ref();
    static int8_t k[CN * 80], v[CN * 80], q[CQ * D];
    static float kd[CN * 2], vd[CN * 2], qd[CQ], s[CQ * (CN + PAD)], want[CN + PAD], p[CQ * (CN + PAD)], keep[CQ * (CN + PAD)],
        out[CQ * (D + PAD)], o1[D], ref_out[CQ * D];
    static float work[QT_KV_CAUSAL_WORK(CQ)] __attribute__((aligned(64)));
    int n[CQ];
    uint64_t seed = 5;
    char title[96];
    if (!ops->qk_i8_causal || !ops->pv_i8_causal) return;
    snprintf(title, sizeof title, "%s/i8_causal", name);
    TEST_BEGIN(title);
    for (int kind = 0; kind < 4; kind++)
        for (int shape = 0; shape < 6; shape++)
            for (int li = 0; li < 2; li++) {
                /* shape: tokens of 8, 3 or 1 heads from row counts n0.. up */
                const int per = shape % 3 == 0 ? 8 : shape % 3 == 1 ? 3 : 1;
                const int n0 = shape < 3 ? 1 : 14 + kind;
                int nq = 0;
                for (int t = 0; nq + per <= CQ; t++)
                    for (int i = 0; i < per; i++) n[nq++] = n0 + t * (shape % 2 ? 3 : 1) > CN ? CN : n0 + t * (shape % 2 ? 3 : 1);
                const int lds = 1 + li, ldk = li ? 80 : D, ld_s = CN + PAD;
                for (int i = 0; i < CN * ldk; i++) {
                    k[i] = byte_of(&seed, kind, 0);
                    v[i] = byte_of(&seed, kind, 0);
                }
                for (int i = 0; i < nq * D; i++) q[i] = byte_of(&seed, kind, 1);
                for (int r = 0; r < CN * lds; r++) {
                    kd[r] = frand(&seed) * 0.05f;
                    vd[r] = frand(&seed) * 0.05f;
                }
                for (int h = 0; h < nq; h++) qd[h] = frand(&seed) * 0.01f;
                for (int i = 0; i < nq * ld_s; i++) s[i] = 7.0f;
                ops->qk_i8_causal(D, nq, n, q, qd, k, ldk, kd, lds, s, ld_s);
                for (int h = 0; h < nq; h++) {
                    ref->qk_i8(n[h], D, q + h * D, qd[h], k, ldk, kd, lds, NULL, want);
                    for (int r = 0; r < n[h]; r++)
                        CHECK(same_bits(s[h * ld_s + r], want[r]), "qk kind %d shape %d lds %d h=%d n=%d r=%d: %.9g vs %.9g",
                              kind, shape, lds, h, n[h], r, s[h * ld_s + r], want[r]);
                    for (int r = n[h]; r < ld_s; r++)
                        CHECK(s[h * ld_s + r] == 7.0f, "qk shape %d h=%d: wrote past the row at %d", shape, h, r);
                }
                /* scores as qk leaves them: a spread of a few units, some
                 * far below the rest */
                for (int i = 0; i < nq * ld_s; i++)
                    p[i] = keep[i] = kind == 3 && rnd(&seed) % 4 == 0 ? -40.0f : frand(&seed) * 12.0f - 6.0f;
                for (int i = 0; i < nq * (D + PAD); i++) out[i] = 7.0f;
                float *outs[CQ], *ref_outs[CQ];
                for (int h = 0; h < nq; h++) {
                    outs[h] = out + h * (D + PAD);
                    ref_outs[h] = ref_out + h * D;
                }
                ops->pv_i8_causal(D, nq, n, v, ldk, vd, lds, p, ld_s, outs, work);
                for (int i = 0; i < nq * ld_s; i++) p[i] = keep[i];
                ref->pv_i8_causal(D, nq, n, v, ldk, vd, lds, p, ld_s, ref_outs, work);
                for (int h = 0; h < nq; h++) {
                    /* f32: the softmax written out, then pv_i8 */
                    float *sm = keep + h * ld_s, mx = -INFINITY, sum = 0.0f, mw = 0.0f;
                    for (int r = 0; r < n[h]; r++) mx = fmaxf(mx, sm[r]);
                    for (int r = 0; r < n[h]; r++) sum += sm[r] = expf(sm[r] - mx);
                    for (int r = 0; r < n[h]; r++) {
                        sm[r] /= sum;
                        mw = fmaxf(mw, sm[r] * vd[r * lds]);
                    }
                    ref->pv_i8(n[h], D, v, ldk, vd, lds, NULL, sm, o1);
                    for (int e = 0; e < D; e++) {
                        CHECK(same_bits(out[h * (D + PAD) + e], ref_out[h * D + e]), "pv kind %d shape %d lds %d h=%d n=%d e=%d: %.9g vs %.9g",
                              kind, shape, lds, h, n[h], e, out[h * (D + PAD) + e], ref_out[h * D + e]);
                        /* about 15 bits per weight, relative to the largest;
                         * exp16 and the sums' order within 1e-5 */
                        CHECK(fabsf(ref_out[h * D + e] - o1[e]) <= (float)n[h] * mw * 128.0f / 32767.0f + 1e-5f * fabsf(o1[e]) + 1e-30f,
                              "pv kind %d shape %d h=%d n=%d e=%d: %.9g far from f32's %.9g", kind, shape, h, n[h], e,
                              ref_out[h * D + e], o1[e]);
                    }
                    for (int e = D; e < D + PAD; e++)
                        CHECK(out[h * (D + PAD) + e] == 7.0f, "pv shape %d h=%d: wrote past the output at %d", shape, h, e);
                }
            }
    TEST_END();
}

int main(void)
{
#if defined(__x86_64__)
    const struct { qt_isa isa; const char *name; const qt_kv_ops *ops; } sets[] = {
        {QT_ISA_AVX2, "kv_avx2", &qt_kv_avx2}, {QT_ISA_AVX2_VNNI, "kv_avx2-vnni", &qt_kv_avx2_vnni},
        {QT_ISA_AVX512, "kv_avx512", &qt_kv_avx512}, {QT_ISA_AVX512_VNNI, "kv_avx512-vnni", &qt_kv_avx512_vnni}};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        if (qt_isa_supported(qt_cpu(), sets[i].isa))
            check_set(sets[i].name, sets[i].ops), check_causal(sets[i].name, sets[i].ops);
        else
            printf("SKIP %s: CPU lacks it\n", sets[i].name);
#endif
    /* the set this CPU uses, whichever it is (NULL members: none) */
    check_set("kv_active", qt_kv());
    check_causal("kv_active", qt_kv());
    check_causal("kv_scalar", qt_kv_ref());
    TEST_EXIT();
}
