/* test_f32ops.c - the float kernels of quant/f32ops.h: every ISA version
 * bit-identical to the reference, and the reference in the orders it
 * claims (checked against sums written out by hand; for rmsnorm and rope,
 * against their recipes). */
#include <math.h>
#include <string.h>

#include "quant/cpu.h"
#include "quant/f32ops.h"
#include "test.h"

static float frand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*s >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}

static uint64_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}


static void check_set(const qt_f32_ops *ops)
{
    const qt_f32_ops *ref = qt_f32_ref();
    uint64_t seed = 11;
    char name[96];

    snprintf(name, sizeof name, "%s/dot", ops->name);
    TEST_BEGIN(name);
    const int ns[] = {1, 15, 16, 64, 65, 128, 200, 256, 1000};
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
        float x[1000], y[1000];
        for (int i = 0; i < ns[t]; i++) { x[i] = frand(&seed) * 100; y[i] = frand(&seed) * 1e-3f; }
        const float a = ops->dot(ns[t], x, y), b = ref->dot(ns[t], x, y);
        CHECK(same_bits(a, b), "n=%d: %.9g vs reference %.9g", ns[t], a, b);
    }
    TEST_END();

    snprintf(name, sizeof name, "%s/pv", ops->name);
    TEST_BEGIN(name);
    for (int order = 0; order < 2; order++)
        for (int n = 64; n <= 320; n += 128)
            for (int di = 0; di < 4; di++) {
                /* 13: vector kernels' tails past their width */
                const int d = (const int[]){8, 13, 32, 128}[di];
                static float v[320 * 160], p[320], o1[128], o2[128];
                for (int i = 0; i < n * 160; i++) v[i] = frand(&seed);
                for (int j = 0; j < n; j++) p[j] = j % 7 ? fabsf(frand(&seed)) : 0.0f;
                ops->pv(n, d, v, 160, p, o1, (qt_pv_order)order);
                ref->pv(n, d, v, 160, p, o2, (qt_pv_order)order);
                for (int k = 0; k < d; k++)
                    CHECK(same_bits(o1[k], o2[k]), "order %d n=%d d=%d k=%d: %.9g vs %.9g", order, n, d, k, o1[k], o2[k]);
            }
    TEST_END();

    snprintf(name, sizeof name, "%s/exp16", ops->name);
    TEST_BEGIN(name);
    float x[16], a[16], b[16];
    for (int rep = 0; rep < 2000; rep++) {
        for (int i = 0; i < 16; i++) x[i] = frand(&seed) * (rep < 1000 ? 20 : 120);
        if (rep == 0) { x[0] = -INFINITY; x[1] = 0; x[2] = -0.0f; x[3] = 88.7f; x[4] = -103.0f; x[5] = 200; }
        ops->exp16(x, a);
        ref->exp16(x, b);
        for (int i = 0; i < 16; i++) CHECK(same_bits(a[i], b[i]), "exp(%.9g): %.9g vs %.9g", x[i], a[i], b[i]);
    }
    TEST_END();

    snprintf(name, sizeof name, "%s/swiglu", ops->name);
    TEST_BEGIN(name);
    const qt_f32_ops *sw = ops->swiglu ? ops : ref;
    for (int rep = 0; rep < 2000; rep++) {
        float g1[48], g2[48], u[48];
        const int n = 16 * (1 + rep % 3);
        for (int i = 0; i < n; i++) {
            g1[i] = frand(&seed) * (rep < 1000 ? 10 : 150);
            u[i] = frand(&seed) * 4;
        }
        if (rep == 0) { g1[0] = -INFINITY; g1[1] = 0; g1[2] = -0.0f; g1[3] = 88.7f; g1[4] = -103.0f; g1[5] = 200; }
        memcpy(g2, g1, sizeof g1);
        sw->swiglu(g1, u, n);
        ref->swiglu(g2, u, n);
        for (int i = 0; i < n; i++) CHECK(same_bits(g1[i], g2[i]), "rep %d i=%d: %.9g vs %.9g", rep, i, g1[i], g2[i]);
    }
    TEST_END();

    snprintf(name, sizeof name, "%s/geglu", ops->name);
    TEST_BEGIN(name);
    {
        /* a table of random halves (NaNs among them) shows any lane
         * reading the wrong entry; inputs across the clamps at +-10, tiny
         * and subnormal values that round to different halves, signed
         * zeros, NaN and the infinities; lengths that leave tails */
        static uint16_t tab[65536];
        for (int i = 0; i < 65536; i++) tab[i] = (uint16_t)(rnd(&seed) & 0xffff);
        const qt_f32_ops *gg = ops->geglu ? ops : ref;
        for (int rep = 0; rep < 3000; rep++) {
            float g1[37], g2[37], u[37];
            const int n = 1 + rep % 37;
            for (int i = 0; i < n; i++) {
                const int kind = (int)(rnd(&seed) % 6);
                g1[i] = kind == 0   ? frand(&seed) * 30.0f
                        : kind == 1 ? (rnd(&seed) & 1 ? 10.0f : -10.0f) + frand(&seed) * 1e-5f
                        : kind == 2 ? frand(&seed) * 1e-6f
                        : kind == 3 ? frand(&seed) * 1e-40f
                                    : frand(&seed) * 4.0f;
                u[i] = frand(&seed) * 2.0f;
            }
            if (rep == 0) { g1[0] = NAN; g1[1] = INFINITY; g1[2] = -INFINITY; g1[3] = -0.0f; g1[4] = 0.0f; g1[5] = 65520.0f; }
            memcpy(g2, g1, sizeof g1);
            gg->geglu(g1, u, n, tab);
            ref->geglu(g2, u, n, tab);
            for (int i = 0; i < n; i++)
                CHECK(same_bits(g1[i], g2[i]) || (isnan(g1[i]) && isnan(g2[i])), "rep %d i=%d: %.9g vs %.9g", rep, i,
                      g1[i], g2[i]);
        }
    }
    TEST_END();

    snprintf(name, sizeof name, "%s/softmax", ops->name);
    TEST_BEGIN(name);
    const qt_f32_ops *sm = ops->softmax ? ops : ref;
    for (int n = 1; n <= 100; n++)
        for (int kind = 0; kind < 5; kind++) {
            /* scores of attention (masked tails at -inf, a row all
             * masked), a huge range, a tie of +0 and -0 at the top */
            float s1[100], s2[100];
            for (int i = 0; i < n; i++) {
                s1[i] = frand(&seed) * (kind == 2 ? 200.0f : 8.0f);
                if (kind == 1 && i > n / 2) s1[i] = -INFINITY;
                if (kind == 3) s1[i] = -INFINITY;
                if (kind == 4) s1[i] = i % 3 ? -fabsf(s1[i]) : (i % 2 ? 0.0f : -0.0f);
            }
            memcpy(s2, s1, sizeof s1);
            sm->softmax(s1, n);
            ref->softmax(s2, n);
            for (int i = 0; i < n; i++)
                CHECK(same_bits(s1[i], s2[i]), "kind %d n=%d i=%d: %.9g vs %.9g", kind, n, i, s1[i], s2[i]);
        }
    TEST_END();
}

/* rmsnorm: every row count up to QT_RMS_ROWS, widths across the 8-wide
 * steps (and ones the wide path leaves to scalar code), with and without
 * rows to add, out apart from x or on y (the fused residual's layout):
 * x's sums and the norms bit for bit the reference's, and the reference
 * against ggml's recipe written out here (double sum in element order). */
static void check_rmsnorm(const qt_f32_ops *ops)
{
    const qt_f32_ops *ref = qt_f32_ref();
    if (!ops->rmsnorm) return;
    enum { N = 2056 };
    static float x0[QT_RMS_ROWS * N], y0[QT_RMS_ROWS * N], w[N], xa[QT_RMS_ROWS * N], xb[QT_RMS_ROWS * N],
        ya[QT_RMS_ROWS * N], yb[QT_RMS_ROWS * N], oa[QT_RMS_ROWS * N], ob[QT_RMS_ROWS * N];
    uint64_t seed = 17;
    char name[96];
    snprintf(name, sizeof name, "%s/rmsnorm", ops->name);
    TEST_BEGIN(name);
    const int ns[] = {8, 13, 64, 100, 2048, N};
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
        for (int nt = 1; nt <= QT_RMS_ROWS; nt++)
            for (int mode = 0; mode < 3; mode++) { /* 0: norm only, 1: add, out apart, 2: add, out on y */
                const int n = ns[ni];
                for (int i = 0; i < nt * n; i++) {
                    x0[i] = frand(&seed) * (i % 7 ? 3.0f : 300.0f);
                    y0[i] = frand(&seed);
                }
                for (int i = 0; i < n; i++) w[i] = frand(&seed) * 2.0f;
                memcpy(xa, x0, sizeof(float) * (size_t)(nt * n));
                memcpy(xb, x0, sizeof(float) * (size_t)(nt * n));
                memcpy(ya, y0, sizeof(float) * (size_t)(nt * n));
                memcpy(yb, y0, sizeof(float) * (size_t)(nt * n));
                const float *y_a = mode ? ya : NULL, *y_b = mode ? yb : NULL;
                ops->rmsnorm(nt, n, xa, y_a, w, 1e-5f, mode == 2 ? ya : oa);
                ref->rmsnorm(nt, n, xb, y_b, w, 1e-5f, mode == 2 ? yb : ob);
                const float *ra = mode == 2 ? ya : oa, *rb = mode == 2 ? yb : ob;
                for (int i = 0; i < nt * n; i++) {
                    CHECK(same_bits(ra[i], rb[i]), "n=%d nt=%d mode %d i=%d: %.9g vs %.9g", n, nt, mode, i, ra[i], rb[i]);
                    CHECK(same_bits(xa[i], xb[i]), "n=%d nt=%d mode %d: x[%d] %.9g vs %.9g", n, nt, mode, i, xa[i], xb[i]);
                }
                for (int t = 0; t < nt; t++) { /* the recipe, by hand */
                    double ss = 0.0;
                    for (int i = 0; i < n; i++) {
                        const float v = mode ? x0[t * n + i] + y0[t * n + i] : x0[t * n + i];
                        ss += (double)(v * v);
                    }
                    const float sc = 1.0f / sqrtf((float)(ss / n) + 1e-5f);
                    for (int i = 0; i < n; i += 97) {
                        const float v = mode ? x0[t * n + i] + y0[t * n + i] : x0[t * n + i];
                        CHECK(same_bits(rb[t * n + i], v * sc * w[i]), "recipe n=%d t=%d i=%d", n, t, i);
                    }
                }
            }
    TEST_END();
}

/* rope: both pair orders, whole and partial rotations (tails of the
 * 8- and 16-pair steps), bit for bit the reference's, and the reference
 * against the rounding recipe written out here. */
static void check_rope(const qt_f32_ops *ops)
{
    const qt_f32_ops *ref = qt_f32_ref();
    if (!ops->rope) return;
    enum { H = 3, MAXD = 128 };
    float xa[H * MAXD], xb[H * MAXD], x0[H * MAXD], cs[MAXD / 2][2];
    uint64_t seed = 23;
    char name[96];
    snprintf(name, sizeof name, "%s/rope", ops->name);
    TEST_BEGIN(name);
    const int dims[][2] = {{64, 64}, {128, 128}, {80, 80}, {64, 32}, {128, 24}, {64, 6}, {64, 2}, {96, 34}};
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
        for (int neox = 0; neox < 2; neox++) {
            const int d = dims[di][0], n_rot = dims[di][1];
            for (int i = 0; i < H * d; i++) x0[i] = frand(&seed) * 20.0f;
            for (int i = 0; i < n_rot / 2; i++) {
                cs[i][0] = frand(&seed);
                cs[i][1] = frand(&seed);
            }
            memcpy(xa, x0, sizeof(float) * (size_t)(H * d));
            memcpy(xb, x0, sizeof(float) * (size_t)(H * d));
            ops->rope(xa, H, d, n_rot, neox, (const float (*)[2])cs);
            ref->rope(xb, H, d, n_rot, neox, (const float (*)[2])cs);
            for (int i = 0; i < H * d; i++)
                CHECK(same_bits(xa[i], xb[i]), "d=%d n_rot=%d neox %d i=%d: %.9g vs %.9g", d, n_rot, neox, i, xa[i], xb[i]);
            for (int h = 0; h < H; h++)
                for (int i = 0; i < d; i++) {
                    const float *v = x0 + h * d;
                    const int half = n_rot / 2, p = i < n_rot ? (neox ? i % half : i / 2) : -1;
                    const int a = p < 0 ? i : neox ? p : 2 * p, b = p < 0 ? i : neox ? p + half : 2 * p + 1;
                    const float want = p < 0 ? v[i] : i == a ? fmaf(v[a], cs[p][0], -(v[b] * cs[p][1]))
                                                                : fmaf(v[a], cs[p][1], v[b] * cs[p][0]);
                    CHECK(same_bits(xb[h * d + i], want), "recipe d=%d n_rot=%d neox %d h=%d i=%d", d, n_rot, neox, h, i);
                }
        }
    TEST_END();
}

int main(void)
{
    const qt_f32_ops *ref = qt_f32_ref();

    TEST_BEGIN("reference_dot_order");
    /* 64 ones times powers chosen so any other grouping rounds differently */
    float x[64], y[64];
    for (int i = 0; i < 64; i++) { x[i] = 1.0f; y[i] = (i % 3 == 0) ? 1e8f : (i % 3 == 1 ? 1.0f : -1e8f); }
    float lanes[64];
    for (int i = 0; i < 64; i++) lanes[i] = x[i] * y[i];
    float acc[16];
    for (int l = 0; l < 16; l++) acc[l] = (lanes[l] + lanes[32 + l]) + (lanes[16 + l] + lanes[48 + l]);
    CHECK(same_bits(ref->dot(64, x, y), qt_reduce16(acc)), "dot does not follow the 4x16 lane order");
    TEST_END();

    TEST_BEGIN("reference_exp_accuracy");
    double worst = 0;
    for (float v = -80.0f; v < 80.0f; v += 0.37f) {
        float r;
        float in[16] = {v};
        ref->exp16(in, in);
        r = in[0];
        worst = fmax(worst, fabs(r - exp((double)v)) / exp((double)v));
    }
    CHECK(worst < 4e-7, "relative error %.3g above 1.5 ulp-ish bound", worst);
    TEST_END();

    check_set(ref);
    check_rmsnorm(ref);
    check_rope(ref);
#if defined(__x86_64__)
    const qt_cpu_features *cpu = qt_cpu();
    if (cpu->avx512f && cpu->avx512dq && cpu->avx512vl && cpu->avx512bw)
        check_set(&qt_f32_avx512), check_rmsnorm(&qt_f32_avx512), check_rope(&qt_f32_avx512);
    else
        printf("SKIP avx512 f32 kernels: CPU lacks AVX-512\n");
    if (cpu->avx2 && cpu->fma)
        check_set(&qt_f32_avx2), check_rmsnorm(&qt_f32_avx2), check_rope(&qt_f32_avx2);
    else
        printf("SKIP avx2 f32 kernels: CPU lacks AVX2\n");
#endif
#if defined(__aarch64__)
    if (qt_cpu()->neon)
        check_set(&qt_f32_neon);
    else
        printf("SKIP neon f32 kernels: CPU lacks NEON\n");
#endif
    TEST_EXIT();
}
