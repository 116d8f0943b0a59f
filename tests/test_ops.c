/* test_ops.c - ggml-lite ops against double-precision math, and matmul
 * for every type with a dot product against dequantize-then-multiply. */
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <string.h>

#include "ggml-lite/matmul.h"
#include "ggml-lite/ops.h"
#include "ggml-lite/vec.h"
#include "test.h"

static float frand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*s >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}

int main(void)
{
    uint64_t seed = 3;

    TEST_BEGIN("rmsnorm");
    float x[2][96], w[96], out[2][96];
    for (int i = 0; i < 96; i++) { x[0][i] = frand(&seed) * 10; x[1][i] = frand(&seed); w[i] = frand(&seed); }
    gl_rmsnorm(out[0], x[0], w, 2, 96, 1e-6f);
    for (int t = 0; t < 2; t++) {
        double ss = 0;
        for (int i = 0; i < 96; i++) ss += (double)x[t][i] * x[t][i];
        for (int i = 0; i < 96; i++) {
            const double e = x[t][i] / sqrt(ss / 96 + 1e-6) * w[i];
            CHECK(fabs(out[t][i] - e) < 1e-5 * (1 + fabs(e)), "row %d elem %d: %g vs %g", t, i, out[t][i], e);
        }
    }
    TEST_END();

    TEST_BEGIN("rope_norm_and_neox");
    for (int neox = 0; neox < 2; neox++) {
        const int H = 3, D = 16, NR = 12;
        float v[2][3 * 16], orig[2][3 * 16];
        for (int i = 0; i < 2 * H * D; i++) orig[i / (H * D)][i % (H * D)] = frand(&seed);
        memcpy(v, orig, sizeof v);
        const int32_t pos[2] = {0, 1234};
        gl_rope r = {.n_rot = NR, .freq_base = 10000.0f, .freq_scale = 1.0f, .neox = neox, .mscale = 1.0f};
        gl_rope_apply(&v[0][0], pos, 2, H, D, &r);
        for (int t = 0; t < 2; t++)
            for (int h = 0; h < H; h++) {
                for (int i = 0; i < NR / 2; i++) {
                    const int a = neox ? i : 2 * i, b = neox ? i + NR / 2 : 2 * i + 1;
                    const double th = pos[t] * pow(10000.0, -2.0 * i / NR);
                    const double x0 = orig[t][h * D + a], x1 = orig[t][h * D + b];
                    const double e0 = x0 * cos(th) - x1 * sin(th), e1 = x0 * sin(th) + x1 * cos(th);
                    /* float angles at position 1234 carry ~1e-4 absolute error */
                    CHECK(fabs(v[t][h * D + a] - e0) < 2e-3 && fabs(v[t][h * D + b] - e1) < 2e-3,
                          "neox=%d t=%d h=%d pair %d: (%g,%g) vs (%g,%g)", neox, t, h, i,
                          v[t][h * D + a], v[t][h * D + b], e0, e1);
                }
                for (int i = NR; i < D; i++)
                    CHECK(v[t][h * D + i] == orig[t][h * D + i], "dim %d past n_rot changed", i);
            }
    }
    TEST_END();

    TEST_BEGIN("softmax");
    float s[5] = {1, 2, -INFINITY, 3, 0};
    gl_softmax_ggml(s, 5);
    double z = exp(1) + exp(2) + exp(3) + exp(0);
    CHECK(s[2] == 0.0f, "masked entry got %g", s[2]);
    CHECK(fabs(s[3] - exp(3) / z) < 1e-6, "got %g", s[3]);
    float allm[3] = {-INFINITY, -INFINITY, -INFINITY};
    gl_softmax_ggml(allm, 3);
    CHECK(allm[0] == 0 && allm[1] == 0 && allm[2] == 0, "fully masked row is not zero");
    TEST_END();

    /* Every weight type qlm can multiply with, against dequantized weights
     * times unquantized activations; the tolerance covers the activation
     * quantization to 8 bits. */
    for (uint32_t ty = 0; ty < QT_COUNT; ty++) {
        const qt_traits *tr = qt_get(ty);
        if (!tr || !tr->vec_dot || !tr->from_float || !tr->to_float || tr->block_size > 256) continue;
        if (ty == QT_Q8_1 || ty == QT_Q8_K) continue; /* activation-only types */
        char name[64];
        snprintf(name, sizeof name, "matmul_%s", tr->name);
        TEST_BEGIN(name);
        const int64_t K = 512, R = 7, T = 3;
        float *wf = malloc(sizeof(float) * K * R), *xf = malloc(sizeof(float) * K * T),
              *y = malloc(sizeof(float) * R * T), *row = malloc(sizeof(float) * K);
        for (int64_t i = 0; i < K * R; i++) wf[i] = frand(&seed);
        for (int64_t i = 0; i < K * T; i++) xf[i] = frand(&seed);
        gl_tensor w = {.type = (qt_type)ty, .ne = {K, R, 1, 1}, .row_bytes = qt_row_size((qt_type)ty, K)};
        void *wq = malloc(w.row_bytes * R);
        tr->from_float(wf, wq, K * R);
        w.data = wq;
        void *scratch = malloc(gl_matmul_scratch(&w, (int)T) + 1);
        CHECK(gl_matmul(&w, xf, y, (int)T, scratch) == 0, "matmul refused");
        for (int64_t r = 0; r < R; r++) {
            tr->to_float(gl_row(&w, r), row, K);
            for (int64_t t = 0; t < T; t++) {
                double e = 0, mag = 0;
                for (int64_t i = 0; i < K; i++) { e += (double)row[i] * xf[t * K + i]; mag += fabs(row[i] * xf[t * K + i]); }
                CHECK(fabs(y[t * R + r] - e) <= 0.01 * mag + 1e-6, "row %lld tok %lld: %g vs %g",
                      (long long)r, (long long)t, y[t * R + r], e);
            }
        }
        free(wf); free(xf); free(y); free(row); free(wq); free(scratch);
        TEST_END();
    }
    TEST_BEGIN("geglu_tanh_gelu_through_fp16");
    {
        /* gelu's tanh approximation in double; ggml rounds input and output
         * through fp16, so agreement is to half precision (and exact at the
         * clamps: 0 below -10, identity above 10). */
        enum { N = 2000 };
        static float g[N], u[N], g0[N];
        for (int i = 0; i < N; i++) {
            g0[i] = g[i] = (float)(i - N / 2) * 0.0125f; /* -12.5 .. 12.5 */
            u[i] = frand(&seed) * 2;
        }
        static uint16_t tab[GL_GELU_ENTRIES];
        gl_gelu_table(tab);
        gl_geglu(g, u, N, tab);
        for (int i = 0; i < N; i++) {
            const double x = g0[i];
            double e = 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))) * u[i];
            if (x <= -10) e = 0;
            if (x >= 10) e = x * u[i];
            CHECK(fabs(g[i] - e) <= 2e-3 * fabs(u[i]) * (1 + fabs(x)), "x=%g u=%g: %g vs %g", x, u[i], g[i], e);
        }
        /* an fp16-exact input whose gelu is fp16-exact after rounding: 1.0 */
        float one = 1.0f, uu = 1.0f;
        gl_geglu(&one, &uu, 1, tab);
        CHECK(fabsf(one - 0.841192f) < 5e-4f, "gelu(1) = %g", one);
        /* split among threads (a large n) as done serially, NaN and the
         * infinities kept as ggml keeps them */
        enum { M = 100003 };
        float *a = malloc(sizeof *a * M), *b = malloc(sizeof *b * M), *w = malloc(sizeof *w * M);
        for (int i = 0; i < M; i++) {
            a[i] = b[i] = (frand(&seed) - 0.5f) * 30.0f;
            w[i] = frand(&seed);
        }
        a[7] = b[7] = NAN;
        a[8] = b[8] = INFINITY;
        w[8] = 1.0f;
        a[9] = b[9] = -INFINITY;
        gl_geglu(a, w, M, tab);
        for (int i = 0; i < M; i += 1000) gl_geglu(b + i, w + i, M - i < 1000 ? M - i : 1000, tab);
        CHECK(!memcmp(a, b, sizeof *a * M), "threaded geglu differs from serial");
        CHECK(isnan(a[7]) && a[8] == INFINITY && a[9] == 0.0f, "nan/inf: %g %g %g", a[7], a[8], a[9]);
        free(a); free(b); free(w);
    }
    TEST_END();

    TEST_BEGIN("softcap_scale_bias");
    {
        float v[5] = {-100, -3, 0, 3, 100}, b[2] = {1, -1};
        gl_softcap(v, 30.0f, 5);
        for (int i = 0; i < 5; i++) {
            const double x0 = (double[]){-100, -3, 0, 3, 100}[i];
            CHECK(fabs(v[i] - 30 * tanh(x0 / 30)) < 1e-4, "softcap(%g) = %g", x0, v[i]);
        }
        CHECK(fabsf(v[4]) < 30.0f, "cap not applied: %g", v[4]);
        float s[4] = {1, 2, 3, 4};
        gl_scale(s, 0.5f, 4);
        CHECK(s[0] == 0.5f && s[3] == 2.0f, "scale: %g %g", s[0], s[3]);
        gl_add_bias(s, b, 2, 2);
        CHECK(s[0] == 1.5f && s[1] == 0.0f && s[2] == 2.5f && s[3] == 1.0f, "bias: %g %g %g %g", s[0], s[1], s[2], s[3]);
    }
    TEST_END();

    /* gl_matmul_rows (several weights sharing one quantized input, their
     * rows shared out together in the caller's parallel region) against
     * gl_matmul on each weight: the same bits, for every type and batch
     * width where gl_matmul_plain says it applies. */
    TEST_BEGIN("matmul_rows_equals_matmul");
    {
        int n_checked = 0;
        for (uint32_t ty = 0; ty < QT_COUNT; ty++) {
            const qt_traits *tr = qt_get(ty);
            if (!tr || !tr->vec_dot || !tr->from_float || tr->block_size > 256) continue;
            if (ty == QT_Q8_1 || ty == QT_Q8_K) continue;
            const int64_t K = 512, R[3] = {37, 8, 20};
            for (int T = 1; T <= 9; T += 4) {
                gl_tensor w[3];
                void *wq[3];
                float *y[3], *ye[3];
                size_t scr = 0;
                float *xf = malloc(sizeof(float) * K * T), *wf = malloc(sizeof(float) * K * R[0]);
                for (int64_t i = 0; i < K * T; i++) xf[i] = frand(&seed);
                gl_act act[3];
                bool plain = true;
                for (int j = 0; j < 3; j++) {
                    w[j] = (gl_tensor){.type = (qt_type)ty, .ne = {K, R[j], 1, 1},
                                       .row_bytes = qt_row_size((qt_type)ty, K)};
                    for (int64_t i = 0; i < K * R[j]; i++) wf[i] = frand(&seed);
                    wq[j] = malloc(w[j].row_bytes * R[j]);
                    tr->from_float(wf, wq[j], K * R[j]);
                    w[j].data = wq[j];
                    y[j] = malloc(sizeof(float) * R[j] * T);
                    ye[j] = malloc(sizeof(float) * R[j] * T);
                    plain &= gl_matmul_plain(&w[j], T, false, &act[j]);
                    const size_t sz = gl_matmul_scratch(&w[j], T);
                    scr = sz > scr ? sz : scr;
                }
                void *scratch = malloc(scr + 1);
                if (plain) {
                    n_checked++;
                    for (int j = 0; j < 3; j++) gl_matmul(&w[j], xf, ye[j], T, scratch);
                    for (int t = 0; t < T; t++)
                        act[0].quantize(xf + (size_t)t * K, (uint8_t *)scratch + (size_t)t * act[0].row_bytes, K);
                    const gl_tensor *wp[] = {&w[0], &w[1], &w[2]};
                    #pragma omp parallel num_threads(2)
                    gl_matmul_rows(3, wp, y, scratch, act[0].row_bytes, T);
                    for (int j = 0; j < 3; j++)
                        CHECK(!memcmp(y[j], ye[j], sizeof(float) * R[j] * T), "%s T=%d weight %d differs",
                              tr->name, T, j);
                    /* gl_matmul_rows_range: weight 0's 37 rows in uneven
                     * ranges (3, 32, 2), each on its own */
                    memset(y[0], 0, sizeof(float) * R[0] * T);
                    const int64_t cut[] = {0, 3, 35, 37};
                    for (int c = 0; c < 3; c++)
                        gl_matmul_rows_range(&w[0], y[0], scratch, act[0].row_bytes, T, cut[c], cut[c + 1] - cut[c]);
                    CHECK(!memcmp(y[0], ye[0], sizeof(float) * R[0] * T), "%s T=%d: row ranges differ", tr->name, T);
                }
                for (int j = 0; j < 3; j++) { free(wq[j]); free(y[j]); free(ye[j]); }
                free(xf); free(wf); free(scratch);
            }
        }
        CHECK(n_checked >= 5, "only %d type and width pairs took the plain path", n_checked);
    }
    TEST_END();

    /* A tall Q8_0 matrix (an output head) times a few tokens in their
     * one-token order: matmul hands out its rows in larger calls there,
     * the last one short; every output must be vec_dot's. */
    TEST_BEGIN("matmul_each_tall_equals_vec_dot");
    {
        const qt_traits *tr = qt_get(QT_Q8_0), *at = qt_get(tr->vec_dot_type);
        const int64_t K = 64, R = 512 * 16 * omp_get_max_threads() + 3 * 512 + 37;
        const int T = 8;
        const size_t rb = qt_row_size(QT_Q8_0, K), ab = qt_row_size(tr->vec_dot_type, K);
        gl_tensor w = {.type = QT_Q8_0, .ne = {K, R, 1, 1}, .row_bytes = rb};
        float *wf = malloc(sizeof(float) * K), *xf = malloc(sizeof(float) * K * T), *y = malloc(sizeof(float) * R * T);
        uint8_t *wq = malloc(rb * R), *xq = malloc(ab * T);
        void *scratch = malloc(gl_matmul_scratch(&w, T) + 1);
        for (int64_t r = 0; r < R; r++) {
            for (int64_t i = 0; i < K; i++) wf[i] = frand(&seed);
            tr->from_float(wf, wq + rb * r, K);
        }
        w.data = wq;
        for (int64_t i = 0; i < K * T; i++) xf[i] = frand(&seed);
        const qt_from_float_fn quant = at->quantize_act ? at->quantize_act : at->from_float;
        for (int t = 0; t < T; t++) quant(xf + K * t, xq + ab * t, K);
        gl_matmul_each(&w, xf, y, T, scratch);
        int bad = 0;
        for (int64_t r = 0; r < R; r++)
            for (int t = 0; t < T; t++) {
                float want;
                tr->vec_dot((int)K, &want, wq + rb * r, xq + ab * t);
                bad += memcmp(&want, &y[(int64_t)t * R + r], sizeof want) != 0;
            }
        CHECK(bad == 0, "%d of %lld outputs differ from vec_dot", bad, (long long)(R * T));
        free(wf); free(xf); free(y); free(wq); free(xq); free(scratch);
    }
    TEST_END();

    TEST_EXIT();
}
