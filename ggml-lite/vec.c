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
    const qt_f32_ops *ops = qt_f32();
    (ops->softmax ? ops->softmax : qt_f32_ref()->softmax)(x, n);
}
