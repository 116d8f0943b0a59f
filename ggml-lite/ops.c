#include "ggml-lite/ops.h"
#include "ggml-lite/vec.h"

#include <math.h>
#include <string.h>

void gl_rmsnorm(float *out, const float *x, const float *w, int n_tokens, int n, float eps)
{
    for (int t = 0; t < n_tokens; t++) {
        const float *xr = x + (int64_t)t * n;
        float *o = out + (int64_t)t * n;
        double ss = 0.0; /* float squares summed in double, as ggml does */
        for (int i = 0; i < n; i++) ss += (double)(xr[i] * xr[i]);
        const float scale = 1.0f / sqrtf((float)(ss / n) + eps);
        for (int i = 0; i < n; i++) o[i] = xr[i] * scale * w[i];
    }
}

void gl_rope_apply(float *x, const int32_t *pos, int n_tokens, int n_head, int head_dim,
                   const gl_rope *r)
{
    const int half = r->n_rot / 2;
    /* ggml derives each pair's angle by repeated multiplication; doing the
     * same keeps our angles bit-identical to llama.cpp's. */
    const float theta_scale = powf(r->freq_base, -2.0f / (float)r->n_rot);
    float cs[GL_ROPE_MAX_DIM / 2][2];
    for (int t = 0; t < n_tokens; t++) {
        float theta = (float)pos[t];
        for (int i = 0; i < half; i++) {
            float th = theta;
            if (r->freq_factors) th /= r->freq_factors[i];
            th *= r->freq_scale;
            cs[i][0] = cosf(th);
            cs[i][1] = sinf(th);
            theta *= theta_scale;
        }
        for (int h = 0; h < n_head; h++) {
            float *v = x + ((int64_t)t * n_head + h) * head_dim;
            /* As llama.cpp's compiled rotate loop rounds: the cos product
             * is fused into the first output and the sin product into the
             * second, the other product rounded first. */
            for (int i = 0; i < half; i++) {
                const int a = r->neox ? i : 2 * i;
                const int b = r->neox ? i + half : 2 * i + 1;
                const float x0 = v[a], x1 = v[b], c = cs[i][0], sn = cs[i][1];
                v[a] = fmaf(x0, c, -(x1 * sn));
                v[b] = fmaf(x0, sn, x1 * c);
            }
        }
    }
}

void gl_swiglu(float *g, const float *u, int64_t n)
{
    /* ggml_vec_swiglu_f32: vector exp on 16-wide chunks, libm on the tail */
    int64_t i = 0;
    for (; i + 15 < n; i += 16) {
        float e[16];
        for (int l = 0; l < 16; l++) e[l] = 0.0f - g[i + l];
        gl_expf16(e, e);
        for (int l = 0; l < 16; l++) g[i + l] = g[i + l] / (1.0f + e[l]) * u[i + l];
    }
    for (; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

void gl_add(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] += x[i];
}

int gl_get_row(const gl_tensor *t, int64_t r, float *out)
{
    const qt_traits *tr = qt_get(t->type);
    if (!tr || !tr->to_float || r < 0 || r >= t->ne[1]) return -1;
    tr->to_float(gl_row(t, r), out, t->ne[0]);
    return 0;
}
