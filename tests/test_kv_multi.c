/* test_kv_multi.c - kv_ops.h's several-query kernels against the
 * reference: qk_i8_multi and qk_i8_causal against qk_i8 query by query,
 * and the int8 p.v contract (pv_i8_sum) bit for bit, for row counts
 * across the kernels' tiles and pairs, query counts across their groups,
 * head widths of one and more 64-wide slices and one that is not, extreme
 * bytes, rows in order and through an index (a batched decoding step's
 * cells); nothing written outside the results.  The contract's sums for
 * rows split in two parts add up to the whole's bit for bit (what
 * Flash-Decoding relies on), and its result is within its rounding of a
 * float softmax times V. */
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


/* head widths: one 64-wide slice, two, and Gemma 3's four */
static const int qk_ds[] = {64, 128, 256};
enum { QK_MAXD = 256, MAXN = 300, MAXQ = 35, PAD = 16 };

/* kind 0: random; 1: extremes (-128/127 bytes); 2: all K/V bytes -128,
 * queries 127; 3: zeros in q and p */
static int8_t byte_of(uint64_t *s, int kind, int is_q)
{
    switch (kind % 4) {
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
    static int8_t k[MAXN * (QK_MAXD + 16)], q[MAXQ * QK_MAXD];
    static float kd[MAXN * 2], qd[MAXQ], s[MAXQ * (MAXN + PAD)], want[MAXN];
    uint64_t seed = 21;
    char title[96];
    const int ns[] = {1, 2, 3, 15, 16, 17, 31, 33, 64, 100, 255, 300};

    if (ops->qk_i8_multi) {
        snprintf(title, sizeof title, "%s/qk_i8_multi", name);
        TEST_BEGIN(title);
        for (size_t di = 0; di < sizeof qk_ds / sizeof qk_ds[0]; di++)
            for (int kind = 0; kind < 4; kind++)
                for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
                    /* query counts across the kernels' groups of 32 */
                    for (int nq = 1; nq <= MAXQ; nq += (nq < 9 ? 1 : nq < 31 ? 11 : 2))
                        for (int li = 0; li < 4; li++) {
                            const int D = qk_ds[di], n = ns[ni], ldk = li % 2 ? D + 16 : D, ld_s = n + PAD;
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
                                    CHECK(same_bits(s[h * ld_s + r], want[r]),
                                          "d=%d kind %d n=%d nq=%d ldk=%d idx %d h=%d r=%d: %.9g vs %.9g", D, kind, n,
                                          nq, ldk, ix != NULL, h, r, s[h * ld_s + r], want[r]);
                                for (int r = n; r < ld_s; r++)
                                    CHECK(s[h * ld_s + r] == 7.0f, "n=%d nq=%d h=%d: wrote past the row at %d", n, nq,
                                          h, r);
                            }
                        }
        TEST_END();
    }

    snprintf(title, sizeof title, "%s/max_f32", name);
    TEST_BEGIN(title);
    for (int n = 0; n <= 40; n++)
        for (int kind = 0; kind < 3; kind++) {
            float x[40];
            for (int i = 0; i < n; i++) x[i] = frand(&seed) * 10.0f - 5.0f;
            if (kind == 1 && n) x[rnd(&seed) % n] = NAN;
            if (kind == 2)
                for (int i = 0; i < n; i++) x[i] = i % 3 ? -INFINITY : NAN;
            const float got = (ops->max_f32 ? ops->max_f32 : ref->max_f32)(n, x), want1 = ref->max_f32(n, x);
            CHECK(same_bits(got, want1), "n=%d kind %d: %.9g vs %.9g", n, kind, got, want1);
        }
    TEST_END();
}

/* The int8 p.v contract: a set's pv_i8_sum against the reference's, bit
 * for bit, for queries of equal row counts (a KV head's group) and of
 * rising ones (a prompt's causal block); sums added to what acc and z
 * held; nothing written past them. */
static void check_pv(const char *name, const qt_kv_ops *ops)
{
    enum { PQ = 20, PN = 300, MAXD = 128 };
    const qt_kv_ops *ref = qt_kv_ref();
    static int8_t v[PN * (MAXD + 16)];
    static float vd[PN * 2], s0[PQ * (PN + PAD)], s1[PQ * (PN + PAD)], s2[PQ * (PN + PAD)];
    static double acc[PQ * (MAXD + PAD)], want[PQ * (MAXD + PAD)];
    uint64_t seed = 33;
    char title[96];
    snprintf(title, sizeof title, "%s/pv_i8_sum", name);
    TEST_BEGIN(title);
    const int ds[] = {64, 128, 48}, ns[] = {1, 2, 3, 17, 63, 64, 65, 129, 300};
    /* kind 4: NaN and -inf scores among the rest; 5: every score -inf
     * (a query that sees nothing: mx -inf, all weights 0) */
    for (int kind = 0; kind < 6; kind++)
        for (size_t di = 0; di < sizeof ds / sizeof ds[0]; di++)
            for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
                for (int li = 0; li < 6; li++) {
                    const int d = ds[di], n1 = ns[ni], lds = 1 + li % 2, ldv = d + 16 * (li % 2), ld_s = PN + PAD,
                              ld_acc = d + PAD, rising = li >= 4, nq = 1 + (int)((ni + li + kind) % PQ);
                    const int32_t *ix = li == 2 || li == 3 ? order(n1) : NULL;
                    int n[PQ];
                    float mx[PQ], kw[PQ];
                    double z[PQ + 1], zw[PQ + 1];
                    for (int h = 0; h < nq; h++) n[h] = rising ? 1 + (n1 * h) / nq + h % 3 : n1;
                    for (int h = 0; h < nq; h++) n[h] = n[h] > PN ? PN : n[h];
                    for (int i = 0; i < PN * ldv; i++) v[i] = byte_of(&seed, kind, 0);
                    for (int r = 0; r < PN * lds; r++) vd[r] = kind == 3 && rnd(&seed) % 5 == 0 ? 0.0f : frand(&seed) * 0.05f;
                    for (int h = 0; h < nq; h++) {
                        float vmax = 0.0f;
                        mx[h] = -INFINITY;
                        for (int r = 0; r < n[h]; r++) {
                            /* scores as qk leaves them: a spread of a few
                             * units, some far below the rest */
                            float x = kind == 3 && rnd(&seed) % 4 == 0 ? -40.0f : frand(&seed) * 12.0f - 6.0f;
                            if (kind == 4 && rnd(&seed) % 5 == 0) x = rnd(&seed) % 2 ? NAN : -INFINITY;
                            if (kind == 5) x = -INFINITY;
                            s0[h * ld_s + r] = x;
                            mx[h] = x > mx[h] ? x : mx[h];
                            vmax = fmaxf(vmax, vd[(ix ? ix[r] : r) * lds]);
                        }
                        kw[h] = vmax > 0.0f ? 32767.0f / vmax : 0.0f;
                    }
                    for (int i = 0; i < nq * ld_acc; i++) acc[i] = want[i] = i % ld_acc < d ? (double)(i % 7) : 7.5;
                    for (int h = 0; h <= nq; h++) z[h] = zw[h] = h < nq ? 3.0 : 7.5;
                    memcpy(s1, s0, sizeof s0);
                    memcpy(s2, s0, sizeof s0);
                    ops->pv_i8_sum(d, nq, n, v, ldv, vd, lds, ix, s1, ld_s, mx, kw, acc, ld_acc, z);
                    ref->pv_i8_sum(d, nq, n, v, ldv, vd, lds, ix, s2, ld_s, mx, kw, want, ld_acc, zw);
                    for (int h = 0; h < nq; h++) {
                        CHECK(z[h] == zw[h], "kind %d d=%d n=%d li=%d h=%d: z %.17g vs %.17g", kind, d, n[h], li, h, z[h], zw[h]);
                        for (int j = 0; j < d; j++)
                            CHECK(acc[h * ld_acc + j] == want[h * ld_acc + j], "kind %d d=%d n=%d li=%d h=%d j=%d: %.17g vs %.17g",
                                  kind, d, n[h], li, h, j, acc[h * ld_acc + j], want[h * ld_acc + j]);
                        for (int j = d; j < ld_acc; j++)
                            CHECK(acc[h * ld_acc + j] == 7.5, "d=%d h=%d: wrote past the sums at %d", d, h, j);
                    }
                    CHECK(z[nq] == 7.5, "wrote past z");
                    /* the rows in two parts, each part's scores, rows and
                     * scales offset as a thread of Flash-Decoding has them */
                    if (!rising && n1 > 1) {
                        const int cut = 1 + (int)(rnd(&seed) % (uint64_t)(n1 - 1));
                        int na[PQ], nb[PQ];
                        for (int h = 0; h < nq; h++) na[h] = cut, nb[h] = n1 - cut;
                        memcpy(s1, s0, sizeof s0);
                        for (int i = 0; i < nq * ld_acc; i++) acc[i] = 0.0;
                        for (int h = 0; h < nq; h++) z[h] = 0.0;
                        ops->pv_i8_sum(d, nq, na, v, ldv, vd, lds, ix, s1, ld_s, mx, kw, acc, ld_acc, z);
                        if (ix)
                            ops->pv_i8_sum(d, nq, nb, v, ldv, vd, lds, ix + cut, s1 + cut, ld_s, mx, kw, acc, ld_acc, z);
                        else
                            ops->pv_i8_sum(d, nq, nb, v + (int64_t)cut * ldv, ldv, vd + cut * lds, lds, NULL, s1 + cut, ld_s,
                                           mx, kw, acc, ld_acc, z);
                        for (int h = 0; h < nq; h++) {
                            CHECK(z[h] + 3.0 == zw[h], "split at %d d=%d n=%d h=%d: z %.17g vs %.17g", cut, d, n1, h, z[h] + 3.0, zw[h]);
                            for (int j = 0; j < d; j++)
                                CHECK(acc[h * ld_acc + j] + (double)((h * ld_acc + j) % 7) == want[h * ld_acc + j],
                                      "split at %d d=%d n=%d h=%d j=%d", cut, d, n1, h, j);
                        }
                    }
                }
    TEST_END();
}

/* The contract against a float softmax times V: the weights keep about
 * 15 bits relative to the largest V scale, the exps' sum 24 bits. */
static void check_pv_accuracy(void)
{
    enum { AN = 700, AD = 64 };
    const qt_kv_ops *ref = qt_kv_ref();
    static int8_t v[AN * AD];
    static float vd[AN], sc[AN], sm[AN + 1];
    uint64_t seed = 8;
    TEST_BEGIN("kv_scalar/pv_i8_accuracy");
    for (int kind = 0; kind < 4; kind++)
        for (int n = 1; n <= AN; n = n * 3 + 1) {
            for (int i = 0; i < n * AD; i++) v[i] = byte_of(&seed, kind, 0);
            float mx = -INFINITY, vmax = 0.0f, sum = 0.0f;
            for (int r = 0; r < n; r++) {
                vd[r] = frand(&seed) * 0.05f;
                sc[r] = kind == 3 && rnd(&seed) % 4 == 0 ? -40.0f : frand(&seed) * 12.0f - 6.0f;
                mx = fmaxf(mx, sc[r]);
                vmax = fmaxf(vmax, vd[r]);
            }
            for (int r = 0; r < n; r++) sum += sm[r] = expf(sc[r] - mx);
            const float kw = 32767.0f / vmax;
            double acc[AD] = {0}, z = 0.0;
            float out[AD];
            ref->pv_i8_sum(AD, 1, &n, v, AD, vd, 1, NULL, sc, 0, &mx, &kw, acc, AD, &z);
            qt_kv_pv_out(AD, acc, z, kw, out);
            for (int e = 0; e < AD; e++) {
                double f = 0.0;
                for (int r = 0; r < n; r++) f += (double)sm[r] / sum * vd[r] * v[r * AD + e];
                CHECK(fabs(out[e] - f) <= n * 64.0 * vmax / 32767.0 + (1e-5 + n * 3e-8) * fabs(f) + 1e-30,
                      "kind %d n=%d e=%d: %.9g far from f32's %.9g", kind, n, e, out[e], f);
            }
        }
    TEST_END();
}

/* qk_i8_causal: queries in runs of equal row counts (a token's heads)
 * and single ones, counts across the K tiles, each query's scores against
 * qk_i8 over its own rows and not written past them. */
static void check_causal(const char *name, const qt_kv_ops *ops)
{
    enum { CQ = 40, CN = 165 };
    const qt_kv_ops *ref = qt_kv_ref();
    static int8_t k[CN * (QK_MAXD + 16)], q[CQ * QK_MAXD];
    static float kd[CN * 2], qd[CQ], s[CQ * (CN + PAD)], want[CN + PAD];
    int n[CQ];
    uint64_t seed = 5;
    char title[96];
    if (!ops->qk_i8_causal) return;
    snprintf(title, sizeof title, "%s/i8_causal", name);
    TEST_BEGIN(title);
    for (size_t di = 0; di < sizeof qk_ds / sizeof qk_ds[0]; di++)
        for (int kind = 0; kind < 4; kind++)
            for (int shape = 0; shape < 6; shape++)
                for (int li = 0; li < 2; li++) {
                    /* shape: tokens of 8, 3 or 1 heads from row counts n0.. up */
                    const int per = shape % 3 == 0 ? 8 : shape % 3 == 1 ? 3 : 1;
                    const int n0 = shape < 3 ? 1 : 14 + kind;
                    int nq = 0;
                    for (int t = 0; nq + per <= CQ; t++)
                        for (int i = 0; i < per; i++)
                            n[nq++] = n0 + t * (shape % 2 ? 3 : 1) > CN ? CN : n0 + t * (shape % 2 ? 3 : 1);
                    const int D = qk_ds[di], lds = 1 + li, ldk = li ? D + 16 : D, ld_s = CN + PAD;
                    for (int i = 0; i < CN * ldk; i++) k[i] = byte_of(&seed, kind, 0);
                    for (int i = 0; i < nq * D; i++) q[i] = byte_of(&seed, kind, 1);
                    for (int r = 0; r < CN * lds; r++) kd[r] = frand(&seed) * 0.05f;
                    for (int h = 0; h < nq; h++) qd[h] = frand(&seed) * 0.01f;
                    for (int i = 0; i < nq * ld_s; i++) s[i] = 7.0f;
                    ops->qk_i8_causal(D, nq, n, q, qd, k, ldk, kd, lds, s, ld_s);
                    for (int h = 0; h < nq; h++) {
                        ref->qk_i8(n[h], D, q + h * D, qd[h], k, ldk, kd, lds, NULL, want);
                        for (int r = 0; r < n[h]; r++)
                            CHECK(same_bits(s[h * ld_s + r], want[r]),
                                  "qk d=%d kind %d shape %d lds %d h=%d n=%d r=%d: %.9g vs %.9g", D, kind, shape, lds, h,
                                  n[h], r, s[h * ld_s + r], want[r]);
                        for (int r = n[h]; r < ld_s; r++)
                            CHECK(s[h * ld_s + r] == 7.0f, "qk shape %d h=%d: wrote past the row at %d", shape, h, r);
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
            check_set(sets[i].name, sets[i].ops), check_causal(sets[i].name, sets[i].ops), check_pv(sets[i].name, sets[i].ops);
        else
            printf("SKIP %s: CPU lacks it\n", sets[i].name);
#endif
    /* the set this CPU uses, whichever it is (NULL members: none) */
    check_set("kv_active", qt_kv());
    check_causal("kv_active", qt_kv());
    check_causal("kv_scalar", qt_kv_ref());
    check_pv("kv_active", qt_kv());
    check_pv("kv_scalar", qt_kv_ref());
    check_pv_accuracy();
    TEST_EXIT();
}
