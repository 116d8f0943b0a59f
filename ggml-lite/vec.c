#include "ggml-lite/vec.h"

#include "quant/f32ops.h"

#include <math.h>
#include <string.h>

float gl_dot_f32(int n, const float *x, const float *y)
{
    return qt_f32()->dot(n, x, y);
}

void gl_pv(int n, int d, const float *v, int64_t ldv, const float *p, float *out, int tile16)
{
    qt_f32()->pv(n, d, v, ldv, p, out, tile16 ? QT_PV_TILE16 : QT_PV_VECDOT);
}

void gl_expf16(const float *x, float *y)
{
    qt_f32()->exp16(x, y);
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
        for (int l = 0; l < 16; l++) x[i + l] -= max;
        gl_expf16(x + i, x + i);
        sum += (double)qt_reduce16(x + i);
    }
    for (; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += (double)x[i];
    }
    const float inv = (float)(1.0 / sum);
    for (i = 0; i < n; i++) x[i] *= inv;
}
