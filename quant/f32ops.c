/* f32ops.c - reference float kernels in llama.cpp's AVX-512 order, and the
 * choice of set for this CPU. */
#include "f32ops.h"

#include <math.h>
#include <string.h>

#include "cpu.h"
#include "fp16.h"

float qt_reduce16(const float a[16])
{
    float t[8], u[4];
    for (int k = 0; k < 8; k++) t[k] = a[k + 8] + a[k];
    for (int k = 0; k < 4; k++) u[k] = t[k + 4] + t[k];
    const float v0 = u[0] + u[2], v1 = u[1] + u[3];
    return v0 + v1;
}

static float ref_dot(int n, const float *x, const float *y)
{
    float acc[4][16];
    memset(acc, 0, sizeof acc);
    const int np = n & ~63;
    for (int i = 0; i < np; i += 64)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 16; l++)
                acc[j][l] = fmaf(x[i + 16 * j + l], y[i + 16 * j + l], acc[j][l]);
    for (int l = 0; l < 16; l++) {
        acc[0][l] += acc[2][l];
        acc[1][l] += acc[3][l];
    }
    for (int l = 0; l < 16; l++) acc[0][l] += acc[1][l];
    float sum = qt_reduce16(acc[0]);
    for (int e = np; e < n; e++) sum = fmaf(x[e], y[e], sum);
    return sum;
}

static void ref_pv(int n, int d, const float *v, int64_t ldv, const float *p, float *out,
                   qt_pv_order order)
{
    for (int k = 0; k < d; k++) {
        float acc[64] = {0};
        const int lanes = order == QT_PV_TILE16 ? 16 : 64;
        for (int j = 0; j < n; j++) acc[j % lanes] = fmaf(v[j * ldv + k], p[j], acc[j % lanes]);
        if (order == QT_PV_VECDOT) {
            for (int l = 0; l < 16; l++) {
                acc[l] += acc[32 + l];
                acc[16 + l] += acc[48 + l];
            }
            for (int l = 0; l < 16; l++) acc[l] += acc[16 + l];
        }
        out[k] = qt_reduce16(acc);
    }
}

/* ggml_v_expf: 2^n * p(b) with n = round(x / ln 2) and a degree-5
 * polynomial; |n| > 192 gives 0 or inf, NaN gives NaN (as the vector
 * versions do; the int conversion below would be undefined for it). */
static float ref_expf(float x)
{
    const float r = 0x1.8p23f;
    const float z = fmaf(x, 0x1.715476p+0f, r);
    const float n = z - r;
    float b = fmaf(-n, 0x1.62e4p-1f, x);
    b = fmaf(-n, 0x1.7f7d1cp-20f, b);
    const float u = b * b;
    const float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u,
                              fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                         u, fmaf(0x1.ffffecp-1f, b, 1.0f));
    if (isnan(n)) return j;
    if (fabsf(n) > 192.0f) return n <= 0.0f ? 0.0f : INFINITY;
    return ldexpf(j, (int)n);
}

static void ref_exp16(const float *x, float *y)
{
    for (int i = 0; i < 16; i++) y[i] = ref_expf(x[i]);
}

static void ref_softmax(float *x, int n)
{
    float max = -INFINITY;
    for (int i = 0; i < n; i++) max = x[i] > max ? x[i] : max;
    if (max == -INFINITY) {
        memset(x, 0, sizeof *x * (size_t)n);
        return;
    }
    double sum = 0.0;
    int i = 0;
    for (; i + 15 < n; i += 16) {
        for (int l = 0; l < 16; l++) x[i + l] -= max;
        ref_exp16(x + i, x + i);
        sum += (double)qt_reduce16(x + i);
    }
    for (; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += (double)x[i];
    }
    const float inv = (float)(1.0 / sum);
    for (i = 0; i < n; i++) x[i] *= inv;
}

static void ref_swiglu(float *g, const float *u, int64_t n)
{
    for (int64_t c = 0; c < n; c += 16) {
        float e[16];
        for (int l = 0; l < 16; l++) e[l] = 0.0f - g[c + l];
        ref_exp16(e, e);
        for (int l = 0; l < 16; l++) g[c + l] = g[c + l] / (1.0f + e[l]) * u[c + l];
    }
}

static void ref_geglu(float *g, const float *u, int64_t n, const uint16_t *tab)
{
    for (int64_t i = 0; i < n; i++) {
        const float x = g[i];
        const float y = x <= -10.0f ? 0.0f : x >= 10.0f ? x : qt_f16_to_f32(tab[qt_f32_to_f16(x)]);
        g[i] = y * u[i];
    }
}

static void ref_rmsnorm(int nt, int n, float *x, const float *y, const float *w, float eps, float *out)
{
    for (int t = 0; t < nt; t++) {
        float *xr = x + (int64_t)t * n, *o = out + (int64_t)t * n;
        double ss = 0.0;
        for (int i = 0; i < n; i++) {
            if (y) xr[i] = xr[i] + y[(int64_t)t * n + i];
            ss += (double)(xr[i] * xr[i]);
        }
        const float scale = 1.0f / sqrtf((float)(ss / n) + eps);
        for (int i = 0; i < n; i++) o[i] = xr[i] * scale * w[i];
    }
}

static void ref_rope(float *x, int n_head, int head_dim, int n_rot, int neox, const float (*cs)[2])
{
    const int half = n_rot / 2;
    for (int h = 0; h < n_head; h++) {
        float *v = x + (int64_t)h * head_dim;
        for (int i = 0; i < half; i++) {
            const int a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
            const float x0 = v[a], x1 = v[b], c = cs[i][0], sn = cs[i][1];
            v[a] = fmaf(x0, c, -(x1 * sn));
            v[b] = fmaf(x0, sn, x1 * c);
        }
    }
}

static const qt_f32_ops ref_ops = {.name = "scalar", .dot = ref_dot, .pv = ref_pv, .exp16 = ref_exp16,
                                   .softmax = ref_softmax, .swiglu = ref_swiglu, .geglu = ref_geglu, .rmsnorm = ref_rmsnorm,
                                   .rope = ref_rope};

const qt_f32_ops *qt_f32_ref(void) { return &ref_ops; }

const qt_f32_ops *qt_f32(void)
{
#if defined(__x86_64__)
    const qt_isa isa = qt_isa_active();
    if (isa == QT_ISA_AVX512 || isa == QT_ISA_AVX512_VNNI) return &qt_f32_avx512;
    if (isa == QT_ISA_AVX2 || isa == QT_ISA_AVX2_VNNI) return &qt_f32_avx2;
#endif
#if defined(__aarch64__)
    if (qt_isa_active() != QT_ISA_SCALAR) return &qt_f32_neon;
#endif
    return &ref_ops;
}
