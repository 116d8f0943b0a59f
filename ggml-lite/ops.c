#include "ggml-lite/ops.h"
#include "ggml-lite/vec.h"

#include <math.h>
#include <stdlib.h>
#include <omp.h>
#include <string.h>

#include "quant/f32ops.h"
#include "quant/fp16.h"
#include "quant/repack.h"

/* Elementwise work of a whole prompt batch is split across the threads
 * (each element's arithmetic is unchanged, so are the bits); a decode
 * step's few thousand elements stay serial, cheaper than waking the team.
 * Serial means no parallel construct at all: decode.c calls these from
 * inside its own parallel region, where even an if(0) region makes
 * libgomp build (and allocate) a nested team of one. */
#define PAR_MIN (GL_OPS_SERIAL + 1)

/* Float squares summed in double in element order, as ggml does: a chain
 * of dependent adds per row, so the kernel runs QT_RMS_ROWS rows' chains
 * side by side (quant/f32ops.h). */
_Static_assert(GL_RMSNORM_ROWS == QT_RMS_ROWS, "ops.h's promise is the kernel's");

static void rmsnorm_rows(float *out, float *x, const float *y, const float *w, int n_tokens, int n, float eps)
{
    const qt_f32_ops *ops = qt_f32();
    void (*const norm)(int, int, float *, const float *, const float *, float, float *) =
        ops->rmsnorm ? ops->rmsnorm : qt_f32_ref()->rmsnorm;
    const int64_t off = (int64_t)n;
    if ((int64_t)n_tokens * n >= PAR_MIN) {
        #pragma omp parallel for schedule(static)
        for (int t0 = 0; t0 < n_tokens; t0 += QT_RMS_ROWS) {
            const int nt = n_tokens - t0 < QT_RMS_ROWS ? n_tokens - t0 : QT_RMS_ROWS;
            norm(nt, n, x + t0 * off, y ? y + t0 * off : NULL, w, eps, out + t0 * off);
        }
    } else {
        for (int t0 = 0; t0 < n_tokens; t0 += QT_RMS_ROWS) {
            const int nt = n_tokens - t0 < QT_RMS_ROWS ? n_tokens - t0 : QT_RMS_ROWS;
            norm(nt, n, x + t0 * off, y ? y + t0 * off : NULL, w, eps, out + t0 * off);
        }
    }
}

void gl_rmsnorm(float *out, const float *x, const float *w, int n_tokens, int n, float eps)
{
    /* without rows to add, the kernel only reads x */
    rmsnorm_rows(out, (float *)x, NULL, w, n_tokens, n, eps);
}

void gl_add_rmsnorm(float *x, float *y, const float *w, int n_tokens, int n, float eps)
{
    rmsnorm_rows(y, x, y, w, n_tokens, n, eps);
}

/* Token position p's cos and sin for each of the n_rot/2 pairs. */
static void rope_angles(float cs[][2], int32_t p, const gl_rope *r, float theta_scale)
{
    float theta = (float)p;
    for (int i = 0; i < r->n_rot / 2; i++) {
        float th = theta;
        if (r->freq_factors) th /= r->freq_factors[i];
        th *= r->freq_scale;
        cs[i][0] = cosf(th) * r->mscale;
        cs[i][1] = sinf(th) * r->mscale;
        theta *= theta_scale;
    }
}

/* n_head heads of head_dim at x, rotated by one token's angles. */
static void rope_heads(float *x, int n_head, int head_dim, const float cs[][2], const gl_rope *r)
{
    const qt_f32_ops *ops = qt_f32();
    (ops->rope ? ops->rope : qt_f32_ref()->rope)(x, n_head, head_dim, r->n_rot, r->neox, cs);
}

/* ggml derives each pair's angle by repeated multiplication; doing the
 * same keeps our angles bit-identical to llama.cpp's. */
static float rope_theta_scale(const gl_rope *r) { return powf(r->freq_base, -2.0f / (float)r->n_rot); }

static void rope_token(float *x, const int32_t *pos, int t, int n_head, int head_dim, const gl_rope *r,
                       float theta_scale)
{
    float cs[GL_ROPE_MAX_DIM / 2][2];
    rope_angles(cs, pos[t], r, theta_scale);
    rope_heads(x + (int64_t)t * n_head * head_dim, n_head, head_dim, cs, r);
}

void gl_rope_apply(float *x, const int32_t *pos, int n_tokens, int n_head, int head_dim,
                   const gl_rope *r)
{
    const float theta_scale = rope_theta_scale(r);
    if ((int64_t)n_tokens * n_head * head_dim >= PAR_MIN) {
        #pragma omp parallel for schedule(static)
        for (int t = 0; t < n_tokens; t++) rope_token(x, pos, t, n_head, head_dim, r, theta_scale);
    } else {
        for (int t = 0; t < n_tokens; t++) rope_token(x, pos, t, n_head, head_dim, r, theta_scale);
    }
}

void gl_rope_apply_qk(float *q, int n_head, float *k, int n_head_kv, int32_t pos, int head_dim, const gl_rope *r)
{
    float cs[GL_ROPE_MAX_DIM / 2][2];
    rope_angles(cs, pos, r, rope_theta_scale(r));
    rope_heads(q, n_head, head_dim, cs, r);
    rope_heads(k, n_head_kv, head_dim, cs, r);
}

void gl_swiglu(float *g, const float *u, int64_t n)
{
    /* ggml_vec_swiglu_f32: vector exp on 16-wide chunks, libm on the tail */
    const qt_f32_ops *ops = qt_f32();
    void (*const sw)(float *, const float *, int64_t) = ops->swiglu ? ops->swiglu : qt_f32_ref()->swiglu;
    const int64_t n16 = n / 16 * 16;
    if (n >= PAR_MIN) {
        /* a thread's share in one call, whole chunks of 16 */
        #pragma omp parallel
        {
            const int64_t nth = omp_get_num_threads(), th = omp_get_thread_num();
            const int64_t per = (n16 / 16 + nth - 1) / nth * 16, c0 = th * per < n16 ? th * per : n16;
            sw(g + c0, u + c0, (n16 - c0 < per ? n16 - c0 : per));
        }
    } else {
        sw(g, u, n16);
    }
    for (int64_t i = n16; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* GELU, tanh approximation, of a half value h, rounded to fp16 as ggml's
 * table holds it.  The table was computed by the compiler with the inner
 * polynomial fused (1 + a*h*h as fma(a*h, h, 1)); with it all 65536
 * entries match llama.cpp's. */
static uint16_t gelu_half(uint16_t bits)
{
    const float h = qt_f16_to_f32(bits);
    const float sqrt_2_over_pi = 0.79788456080286535587989211986876f, a = 0.044715f;
    return qt_f32_to_f16(0.5f * h * (1.0f + tanhf(sqrt_2_over_pi * h * fmaf(a * h, h, 1.0f))));
}

void gl_gelu_table(uint16_t *tab)
{
    for (int i = 0; i < GL_GELU_ENTRIES; i++) tab[i] = gelu_half((uint16_t)i);
}

void gl_geglu(float *g, const float *u, int64_t n, const uint16_t *tab)
{
    const qt_f32_ops *ops = qt_f32();
    void (*const gg)(float *, const float *, int64_t, const uint16_t *) = ops->geglu ? ops->geglu : qt_f32_ref()->geglu;
    if (n >= PAR_MIN) {
        #pragma omp parallel
        {
            const int64_t nth = omp_get_num_threads(), th = omp_get_thread_num();
            const int64_t per = (n + nth - 1) / nth, i0 = th * per < n ? th * per : n;
            gg(g + i0, u + i0, n - i0 < per ? n - i0 : per, tab);
        }
    } else {
        gg(g, u, n, tab);
    }
}

void gl_scale(float *x, float s, int64_t n)
{
    for (int64_t i = 0; i < n; i++) x[i] *= s;
}

void gl_softcap(float *x, float cap, int64_t n)
{
    /* ggml_scale, ggml_tanh, ggml_scale, each rounding to float */
    const float inv = 1.0f / cap;
    for (int64_t i = 0; i < n; i++) x[i] = tanhf(x[i] * inv) * cap;
}

void gl_add_bias(float *x, const float *b, int n_tokens, int n)
{
    for (int t = 0; t < n_tokens; t++)
        for (int i = 0; i < n; i++) x[(int64_t)t * n + i] += b[i];
}

void gl_add(float *y, const float *x, int64_t n)
{
    if (n >= PAR_MIN) {
        #pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; i++) y[i] += x[i];
    } else {
        for (int64_t i = 0; i < n; i++) y[i] += x[i];
    }
}

int gl_get_row(const gl_tensor *t, int64_t r, float *out)
{
    const qt_traits *tr = qt_get(t->type);
    if (!tr || !tr->to_float || r < 0 || r >= t->ne[1]) return -1;
    if (t->layout == GL_LAYOUT_X16 && r < t->ne[1] - t->ne[1] % QT_X16_ROWS) {
        /* not on any hot path: qlm interleaves no embedding table */
        void *row = malloc(t->row_bytes);
        if (!row) return -1;
        qt_x16_row(t->type, (int)t->ne[0], gl_row(t, r - r % QT_X16_ROWS), (int)(r % QT_X16_ROWS), row);
        tr->to_float(row, out, t->ne[0]);
        free(row);
        return 0;
    }
    tr->to_float(gl_row(t, r), out, t->ne[0]);
    return 0;
}
