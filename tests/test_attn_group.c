/* test_attn_group.c - gl_attn_group against gl_attn_head head by head:
 * identical bits for int8 K/V over many row counts and group sizes, with
 * the scores in the caller's scratch and in its own allocation, and the
 * head-by-head fallback for what it does not take (f32 K/V, odd widths). */
#include <math.h>
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

enum { MAXN = 260, MAXQ = 9, MAXD = 80 };

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

int main(void)
{
    check("attn_group/int8_d64", GL_KV_I8, 64);
    check("attn_group/int8_d80_fallback", GL_KV_I8, 80);
    check("attn_group/f32_fallback", GL_KV_F32, 64);
    TEST_EXIT();
}
