/* test_attn_group.c - gl_attn_group against gl_attn_head head by head:
 * identical bits for int8 K/V over many row counts and group sizes, with
 * the scores in the caller's scratch and in its own allocation, and the
 * head-by-head fallback for what it does not take (f32 K/V, odd widths);
 * gl_attn_prompt's causal blocks and Flash-Decoding's parts
 * (gl_attn_split_*) against it too, bit for bit. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-lite/attn.h"
#include "test.h"

static uint64_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static float frand(uint64_t *s) { return (float)(rnd(s) % 2000001) / 1000000.0f - 1.0f; }

enum { MAXN = 260, MAXQ = 9, MAXD = 256 };

static void check(const char *name, gl_kv_elem type, int d)
{
    static int8_t k8[MAXN * MAXD], v8[MAXN * MAXD];
    static float kf[MAXN * MAXD], vf[MAXN * MAXD], ks[MAXN], vs[MAXN], q[MAXQ * MAXD], got[MAXQ * MAXD],
        want[MAXQ * MAXD], s[MAXQ * (MAXN + 16)], vrows[MAXN * MAXD];
    static int8_t q8[MAXD];
    uint64_t seed = 3;
    TEST_BEGIN(name);
    const int ns[] = {1, 2, 15, 16, 17, 40, 64, 100, 257};
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
        for (int nq = 1; nq <= MAXQ; nq++)
            for (int ctx_i = 0; ctx_i < 4; ctx_i++) {
                const int n = ns[ni];
                /* a cache just big enough (the group's scores do not fit
                 * the scratch: allocated) or roomy (they fit) */
                const int n_ctx = ctx_i % 2 ? MAXN : n;
                /* ctx_i >= 2: the rows through an index, in an order not
                 * theirs (a batched decoding step's cells) */
                int32_t idx[MAXN];
                for (int r = 0; r < n; r++) idx[r] = r % 2 ? n - 1 - r / 2 : r / 2;
                const int32_t *ix = ctx_i >= 2 ? idx : NULL;
                for (int i = 0; i < n * d; i++) {
                    k8[i] = (int8_t)(rnd(&seed) % 255 - 127);
                    v8[i] = (int8_t)(rnd(&seed) % 255 - 127);
                    kf[i] = frand(&seed);
                    vf[i] = frand(&seed);
                }
                for (int r = 0; r < n; r++) {
                    ks[r] = (frand(&seed) + 1.5f) * 0.01f;
                    vs[r] = (frand(&seed) + 1.5f) * 0.01f;
                }
                for (int i = 0; i < nq * d; i++) q[i] = frand(&seed) * 3.0f;
                const gl_kv_view kv = {.type = type, .data = type == GL_KV_I8 ? (const void *)k8 : kf, .ld = d,
                                       .scale = type == GL_KV_I8 ? ks : NULL, .lds = 1};
                const gl_kv_view vv = {.type = type, .data = type == GL_KV_I8 ? (const void *)v8 : vf, .ld = d,
                                       .scale = type == GL_KV_I8 ? vs : NULL, .lds = 1};
                gl_attn_scratch sc = {.s = s, .q8 = q8, .vrows = vrows};
                for (int h = 0; h < nq; h++)
                    gl_attn_head(d, q + h * d, 0.125f, &kv, &vv, n, ix, NULL, n_ctx, 0, &sc, want + h * d);
                /* a roomy cache's scratch declared as nq windows (s holds
                 * them), so the group's scores go there, not to the heap */
                sc.n_win = ctx_i % 2 ? nq : 0;
                gl_attn_group(d, nq, q, 0.125f, &kv, &vv, n, ix, n_ctx, &sc, got);
                for (int i = 0; i < nq * d; i++)
                    CHECK(!memcmp(&got[i], &want[i], sizeof got[i]), "n=%d nq=%d n_ctx=%d idx %d h=%d e=%d: %.9g vs %.9g", n,
                          nq, n_ctx, ix != NULL, i / d, i % d, got[i], want[i]);
            }
    TEST_END();
}

/* gl_attn_prompt: a block of tokens seeing 1, 2, ... rows (or a run that
 * starts deep in the cache) against gl_attn_head token by token, head by
 * head, with the tokens' rows laid out as decode.c lays them: the same
 * bits (kv_ops.h's int8 contract depends on a query's rows alone). */
static void check_prompt(const char *name, int DD)
{
    enum { NQ = 8, NT = 20, NKV = 2 };
    static int8_t k8[MAXN * MAXD], v8[MAXN * MAXD], q8[MAXD];
    static float ks[MAXN], vs[MAXN], q[NT * NKV * NQ * MAXD], got[NT * NKV * NQ * MAXD], want[NQ * MAXD],
        s[MAXN + 16];
    static float work[(NT * NQ + 1) * (MAXN + 16) + NT * NQ * 2 * (MAXD + 1)] __attribute__((aligned(64)));
    uint64_t seed = 9;
    TEST_BEGIN(name);
    const gl_kv_view kv = {.type = GL_KV_I8, .data = k8, .ld = DD, .scale = ks, .lds = 1};
    const gl_kv_view vv = {.type = GL_KV_I8, .data = v8, .ld = DD, .scale = vs, .lds = 1};
    if (!gl_attn_prompt_applies(DD, &kv, &vv)) {
        printf("SKIP attn_prompt: no causal kernels here\n");
        return;
    }
    for (int i = 0; i < MAXN * DD; i++) {
        k8[i] = (int8_t)(rnd(&seed) % 255 - 127);
        v8[i] = (int8_t)(rnd(&seed) % 255 - 127);
    }
    for (int r = 0; r < MAXN; r++) {
        ks[r] = (frand(&seed) + 1.5f) * 0.01f;
        vs[r] = (frand(&seed) + 1.5f) * 0.01f;
    }
    for (int i = 0; i < NT * NKV * NQ * DD; i++) q[i] = frand(&seed) * 3.0f;
    const int starts[] = {1, 15, 31, 200, MAXN - NT + 1};
    const int nqs[] = {1, 3, 8};
    for (size_t si = 0; si < sizeof starts / sizeof starts[0]; si++)
        for (size_t qi = 0; qi < sizeof nqs / sizeof nqs[0]; qi++) {
            const int nq = nqs[qi], QD = NKV * nq * DD;
            int n[NT];
            for (int t = 0; t < NT; t++) n[t] = starts[si] + t;
            memset(got, 0, sizeof got);
            /* KV head 1's heads of every token, as decode.c's att rows */
            gl_attn_prompt(DD, NT, nq, q + nq * DD, QD, 0.125f, &kv, &vv, n, work, got + nq * DD, QD);
            CHECK(gl_attn_prompt_work(DD, NT * nq, n[NT - 1]) <= sizeof work / sizeof work[0], "work too small");
            gl_attn_scratch sc = {.s = s, .q8 = q8};
            for (int t = 0; t < NT; t++) {
                for (int h = 0; h < nq; h++)
                    gl_attn_head(DD, q + (size_t)t * QD + (nq + h) * DD, 0.125f, &kv, &vv, n[t], NULL, NULL, MAXN, 0, &sc,
                                 want + h * DD);
                for (int i = 0; i < nq * DD; i++)
                    CHECK(!memcmp(&got[t * QD + nq * DD + i], &want[i], sizeof want[i]),
                          "start %d nq %d t=%d h=%d e=%d: %.9g vs %.9g", starts[si], nq, t, i / DD, i % DD,
                          got[t * QD + nq * DD + i], want[i]);
                for (int i = 0; i < nq * DD; i++)
                    CHECK(got[t * QD + i] == 0.0f, "start %d nq %d t=%d: wrote KV head 0's rows", starts[si], nq, t);
            }
        }
    TEST_END();
}

/* Flash-Decoding: the rows cut into 1 to 5 parts at random places (a
 * part's steps run in a shuffled order, as threads would), each part's
 * scores and sums kept apart, against gl_attn_group's bits. */
static void check_split(const char *name, int d)
{
    enum { SN = 700, SQ = 8, SD = 128, MAXP = 5 };
    static int8_t k8[SN * SD], v8[SN * SD], q8[SD];
    static float ks[SN], vs[SN], q[SQ * SD], got[SQ * SD], want[SQ * SD], s[SQ * (SN + 16)], sg[SQ * (SN + 16)];
    static double acc[MAXP * SQ * SD], z[MAXP * SQ];
    uint64_t seed = 17;
    TEST_BEGIN(name);
    const int ns[] = {1, 2, 9, 64, 65, 300, SN};
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
        for (int nq = 1; nq <= SQ; nq += 3)
            for (int np = 1; np <= MAXP; np++)
                for (int use_idx = 0; use_idx < 2; use_idx++) {
                    const int n = ns[ni], ld_s = SN + 16;
                    if (np > n) continue;
                    int32_t idx[SN];
                    for (int r = 0; r < n; r++) idx[r] = r % 2 ? n - 1 - r / 2 : r / 2;
                    const int32_t *ix = use_idx ? idx : NULL;
                    for (int i = 0; i < n * d; i++) {
                        k8[i] = (int8_t)(rnd(&seed) % 255 - 127);
                        v8[i] = (int8_t)(rnd(&seed) % 255 - 127);
                    }
                    for (int r = 0; r < n; r++) {
                        ks[r] = (frand(&seed) + 1.5f) * 0.01f;
                        vs[r] = (frand(&seed) + 1.5f) * 0.01f;
                    }
                    for (int i = 0; i < nq * d; i++) q[i] = frand(&seed) * 3.0f;
                    const gl_kv_view kv = {.type = GL_KV_I8, .data = k8, .ld = d, .scale = ks, .lds = 1};
                    const gl_kv_view vv = {.type = GL_KV_I8, .data = v8, .ld = d, .scale = vs, .lds = 1};
                    gl_attn_scratch sc = {.s = sg, .q8 = q8, .n_win = SQ};
                    gl_attn_group(d, nq, q, 0.125f, &kv, &vv, n, ix, SN, &sc, want);
                    /* cuts: np - 1 distinct places in 1..n-1 */
                    int cut[MAXP + 1] = {0};
                    cut[np] = n;
                    for (int p = 1; p < np; p++) {
                        int c;
                        bool dup;
                        do {
                            c = 1 + (int)(rnd(&seed) % (uint64_t)(n - 1));
                            dup = false;
                            for (int i = 1; i < p; i++) dup |= cut[i] == c;
                        } while (dup);
                        cut[p] = c;
                    }
                    for (int i = 1; i < np; i++) /* sorted */
                        for (int j = i + 1; j < np; j++)
                            if (cut[j] < cut[i]) {
                                const int t = cut[i];
                                cut[i] = cut[j];
                                cut[j] = t;
                            }
                    float mxp[MAXP][SQ], vmp[MAXP], mx[SQ], vmax = 0.0f;
                    const int first = (int)(rnd(&seed) % (uint64_t)np);
                    for (int i = 0; i < np; i++) {
                        const int p = (first + i) % np;
                        gl_attn_split_scores(d, nq, q, 0.125f, &kv, &vv, cut[p], cut[p + 1], ix, s, ld_s, mxp[p], &vmp[p]);
                    }
                    for (int h = 0; h < nq; h++) {
                        mx[h] = -INFINITY;
                        for (int p = 0; p < np; p++) mx[h] = fmaxf(mx[h], mxp[p][h]);
                    }
                    for (int p = 0; p < np; p++) vmax = fmaxf(vmax, vmp[p]);
                    for (int i = 0; i < np; i++) {
                        const int p = (first + np - i) % np;
                        gl_attn_split_sums(d, nq, &vv, cut[p], cut[p + 1], ix, s, ld_s, mx, vmax, acc + (size_t)p * SQ * SD,
                                           z + p * nq);
                    }
                    gl_attn_split_out(d, nq, np, acc, SQ * SD, z, vmax, got);
                    for (int i = 0; i < nq * d; i++)
                        CHECK(!memcmp(&got[i], &want[i], sizeof got[i]), "n=%d nq=%d parts=%d idx %d h=%d e=%d: %.9g vs %.9g",
                              n, nq, np, use_idx, i / d, i % d, got[i], want[i]);
                }
    TEST_END();
}

int main(void)
{
    check_prompt("attn_prompt/int8_d64", 64);
    check_prompt("attn_prompt/int8_d256", 256);
    check_split("attn_split/int8_d64", 64);
    check_split("attn_split/int8_d128", 128);
    check_split("attn_split/int8_d80", 80);
    check("attn_group/int8_d64", GL_KV_I8, 64);
    check("attn_group/int8_d128", GL_KV_I8, 128);
    check("attn_group/int8_d256", GL_KV_I8, 256);
    check("attn_group/int8_d80_fallback", GL_KV_I8, 80);
    check("attn_group/f32_fallback", GL_KV_F32, 64);
    TEST_EXIT();
}
