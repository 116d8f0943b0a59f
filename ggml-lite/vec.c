#include "ggml-lite/vec.h"

#include <math.h>
#include <string.h>

float gl_reduce16(const float a[16])
{
    float t[8], u[4];
    for (int k = 0; k < 8; k++) t[k] = a[k + 8] + a[k];
    for (int k = 0; k < 4; k++) u[k] = t[k + 4] + t[k];
    const float v0 = u[0] + u[2], v1 = u[1] + u[3];
    return v0 + v1;
}

float gl_dot_f32(int n, const float *x, int64_t xs, const float *y)
{
    float acc[4][16];
    memset(acc, 0, sizeof acc);
    const int np = n & ~63;
    for (int i = 0; i < np; i += 64)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 16; l++) {
                const int e = i + 16 * j + l;
                acc[j][l] = fmaf(x[e * xs], y[e], acc[j][l]);
            }
    for (int l = 0; l < 16; l++) {
        acc[0][l] += acc[2][l];
        acc[1][l] += acc[3][l];
    }
    for (int l = 0; l < 16; l++) acc[0][l] += acc[1][l];
    float sum = gl_reduce16(acc[0]);
    for (int e = np; e < n; e++) sum = fmaf(x[e * xs], y[e], sum);
    return sum;
}

float gl_dot_f32_tile16(int n, const float *x, int64_t xs, const float *y)
{
    float acc[16] = {0};
    for (int i = 0; i < n; i += 16)
        for (int l = 0; l < 16; l++) acc[l] = fmaf(x[(i + l) * xs], y[i + l], acc[l]);
    return gl_reduce16(acc);
}

float gl_expf(float x)
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
    if (fabsf(n) > 192.0f) return n <= 0.0f ? 0.0f : INFINITY;
    return ldexpf(j, (int)n);
}

void gl_softmax_ggml(float *x, int n)
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
        for (int l = 0; l < 16; l++) x[i + l] = gl_expf(x[i + l] - max);
        sum += (double)gl_reduce16(x + i);
    }
    for (; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += (double)x[i];
    }
    const float inv = (float)(1.0 / sum);
    for (i = 0; i < n; i++) x[i] *= inv;
}
