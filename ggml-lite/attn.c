#include "ggml-lite/attn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-lite/vec.h"
#include "quant/kv_ops.h"

int gl_attn_window(gl_kv_elem k_type, int n, int n_ctx)
{
    if (k_type != GL_KV_F32) return (n + 15) / 16 * 16; /* whole chunks for the vector exp */
    const int w = (n + 255) / 256 * 256;
    return w < n_ctx ? w : n_ctx;
}

static void scores(int d, const float *q, float scale, const gl_kv_view *k, int n, const int32_t *idx,
                   gl_attn_scratch *sc)
{
    float *s = sc->s;
    if (k->type == GL_KV_F32) {
        const float *kb = k->data;
        for (int r = 0; r < n; r++) s[r] = gl_dot_f32(d, kb + (idx ? idx[r] : r) * k->ld, q) * scale;
    } else if (k->type == GL_KV_F16) {
        qt_kv()->qk_f16(n, d, q, scale, k->data, k->ld, idx, s);
    } else {
        const float qd = qt_kv_quantize_i8(d, q, sc->q8);
        qt_kv()->qk_i8(n, d, sc->q8, qd * scale, k->data, k->ld, k->scale, k->lds, idx, s);
    }
}

static int masked(const gl_attn_mask *mask, const int32_t *idx, int r)
{
    return mask && mask->row_pos && mask->row_pos[idx ? idx[r] : r] < mask->min_pos;
}

/* The largest V scale among ranks r0..r1-1 that the query sees. */
static float v_scale_max(const gl_kv_view *v, int r0, int r1, const int32_t *idx, const gl_attn_mask *mask)
{
    const qt_kv_ops *ops = qt_kv();
    if (!idx && v->lds == 1 && !(mask && mask->row_pos)) {
        const float m = (ops->max_f32 ? ops->max_f32 : qt_kv_ref()->max_f32)(r1 - r0, v->scale + r0);
        return m > 0.0f ? m : 0.0f;
    }
    float m = 0.0f;
    for (int r = r0; r < r1; r++) {
        const float x = v->scale[(int64_t)(idx ? idx[r] : r) * v->lds];
        if (!masked(mask, idx, r)) m = x > m ? x : m;
    }
    return m;
}

static float kw_of(float vmax) { return vmax > 0.0f ? 32767.0f / vmax : 0.0f; }

static float max_of(int n, const float *x)
{
    const qt_kv_ops *ops = qt_kv();
    return (ops->max_f32 ? ops->max_f32 : qt_kv_ref()->max_f32)(n, x);
}

/* kv_ops.h's int8 p.v for one query whose scores are in s (masked rows
 * -INFINITY): its sums in doubles (on the stack for heads up to 256
 * wide), then out. */
static void pv_i8_one(int d, const gl_kv_view *v, int n, const int32_t *idx, const gl_attn_mask *mask, float *s,
                      float *out)
{
    double stack[256], *acc = d <= 256 ? stack : malloc(sizeof *acc * (size_t)d), z = 0.0;
    if (!acc) { /* not reached in practice: heads are at most a few hundred wide */
        memset(out, 0, sizeof *out * (size_t)d);
        return;
    }
    memset(acc, 0, sizeof *acc * (size_t)d);
    const float mx = max_of(n, s), kw = kw_of(v_scale_max(v, 0, n, idx, mask));
    qt_kv()->pv_i8_sum(d, 1, &n, v->data, v->ld, v->scale, v->lds, idx, s, 0, &mx, &kw, acc, d, &z);
    qt_kv_pv_out(d, acc, z, kw, out);
    if (acc != stack) free(acc);
}

void gl_attn_head(int d, const float *q, float scale, const gl_kv_view *k, const gl_kv_view *v,
                  int n, const int32_t *idx, const gl_attn_mask *mask, int n_ctx, int tiled,
                  gl_attn_scratch *sc, float *out)
{
    if (n <= 0) {
        memset(out, 0, sizeof *out * (size_t)d);
        return;
    }
    const int win = gl_attn_window(k->type, n, n_ctx);
    scores(d, q, scale, k, n, idx, sc);
    for (int r = 0; r < n; r++)
        if (masked(mask, idx, r)) sc->s[r] = -INFINITY;
    if (v->type == GL_KV_I8) {
        pv_i8_one(d, v, n, idx, mask, sc->s, out);
        return;
    }
    for (int r = n; r < win; r++) sc->s[r] = -INFINITY;
    gl_softmax_ggml(sc->s, win);
    if (v->type == GL_KV_F16) {
        qt_kv()->pv_f16(n, d, v->data, v->ld, idx, sc->s, out);
    } else if (!idx) {
        /* Rows past n have zero weight and add exact zeros; reading them
         * as llama.cpp's padded window does keeps its kernel's shape. */
        const int pad = tiled ? (n + 15) / 16 * 16 : (n + 63) / 64 * 64;
        gl_pv(pad < win ? pad : win, d, v->data, v->ld, sc->s, out, tiled);
    } else {
        const float *vb = v->data;
        for (int r = 0; r < n; r++) memcpy(sc->vrows + (size_t)r * d, vb + idx[r] * v->ld, sizeof(float) * (size_t)d);
        gl_pv(n, d, sc->vrows, d, sc->s, out, tiled);
    }
}

/* Heads the several-query q.k kernels take (kv_ops.h). */
static int multi_width(int d) { return d > 0 && d % 64 == 0 && d <= QT_KV_MULTI_MAXD; }

int gl_attn_group_applies(int d, const gl_kv_view *k, const gl_kv_view *v)
{
    return multi_width(d) && k->type == GL_KV_I8 && v->type == GL_KV_I8 && qt_kv()->qk_i8_multi;
}

/* The n_q heads' int8 queries and their score factors, as scores() forms
 * each head's (the set's quantizer is qt_kv_quantize_i8's, without its
 * look-up per call). */
static void quantize_heads(int d, int n_q, const float *q, int64_t ldq, float scale, int8_t *q8, float *qd)
{
    const qt_kv_ops *ops = qt_kv();
    for (int h = 0; h < n_q; h++) {
        const float *qh = q + h * ldq;
        int8_t *qh8 = q8 + (size_t)h * d;
        qd[h] = (ops->quantize_i8 ? ops->quantize_i8(d, qh, qh8) : qt_kv_quantize_i8(d, qh, qh8)) * scale;
    }
}

/* Scores of n_q heads over ranks r0..r1-1 (s + h * ld_s + r), all at once
 * where the set can (multi_width), else head by head: the same bits. */
static void head_scores(int d, int n_q, const float *q, float scale, const gl_kv_view *k, int r0, int r1,
                        const int32_t *idx, float *s, int64_t ld_s)
{
    enum { MAX_Q = GL_ATTN_SPLIT_MAXQ };
    const qt_kv_ops *ops = qt_kv();
    const int8_t *kb = k->data;
    const float *kd = k->scale;
    const int32_t *ix = idx ? idx + r0 : NULL;
    if (!idx) {
        kb += (int64_t)r0 * k->ld;
        kd += (int64_t)r0 * k->lds;
    }
    if (multi_width(d) && n_q <= MAX_Q && ops->qk_i8_multi) {
        int8_t q8[MAX_Q * QT_KV_MULTI_MAXD];
        float qd[MAX_Q];
        quantize_heads(d, n_q, q, d, scale, q8, qd);
        ops->qk_i8_multi(r1 - r0, d, n_q, q8, qd, kb, k->ld, kd, k->lds, ix, s + r0, ld_s);
        return;
    }
    int8_t stack[256], *q8 = d <= 256 ? stack : malloc((size_t)d);
    for (int h = 0; h < n_q && q8; h++) {
        float qd;
        quantize_heads(d, 1, q + (size_t)h * d, d, scale, q8, &qd);
        ops->qk_i8(r1 - r0, d, q8, qd, kb, k->ld, kd, k->lds, ix, s + h * ld_s + r0);
    }
    if (q8 != stack) free(q8);
}

void gl_attn_group(int d, int n_q, const float *q, float scale, const gl_kv_view *k, const gl_kv_view *v, int n,
                   const int32_t *idx, int n_ctx, gl_attn_scratch *sc, float *out)
{
    enum { MAX_Q = GL_ATTN_SPLIT_MAXQ };
    const int win = gl_attn_window(k->type, n, n_ctx);
    const size_t need = (size_t)n_q * (size_t)win,
                 have = (size_t)(sc->n_win > 1 ? sc->n_win : 1) * (size_t)gl_attn_window(k->type, n_ctx, n_ctx);
    float *s = need <= have ? sc->s : NULL;
    float *heap = s || n_q > MAX_Q || n <= 0 ? NULL : malloc(sizeof *heap * need);
    if (!s) s = heap;
    if (!s || n_q > MAX_Q || n <= 0 || !gl_attn_group_applies(d, k, v)) {
        for (int h = 0; h < n_q; h++)
            gl_attn_head(d, q + (size_t)h * d, scale, k, v, n, idx, NULL, n_ctx, 0, sc, out + (size_t)h * d);
        free(heap);
        return;
    }
    /* the split's steps with the rows in one part: the same bits */
    float mx[MAX_Q], vmax;
    double acc[MAX_Q * QT_KV_MULTI_MAXD], z[MAX_Q];
    gl_attn_split_scores(d, n_q, q, scale, k, v, 0, n, idx, s, win, mx, &vmax);
    gl_attn_split_sums(d, n_q, v, 0, n, idx, s, win, mx, vmax, acc, z);
    gl_attn_split_out(d, n_q, 1, acc, (int64_t)n_q * d, z, vmax, out);
    free(heap);
}

int gl_attn_split_applies(int d, int n_q, const gl_kv_view *k, const gl_kv_view *v)
{
    return d > 0 && n_q <= GL_ATTN_SPLIT_MAXQ && k->type == GL_KV_I8 && v->type == GL_KV_I8;
}

void gl_attn_split_scores(int d, int n_q, const float *q, float scale, const gl_kv_view *k, const gl_kv_view *v,
                          int r0, int r1, const int32_t *idx, float *s, int64_t ld_s, float *mx, float *vmax)
{
    head_scores(d, n_q, q, scale, k, r0, r1, idx, s, ld_s);
    for (int h = 0; h < n_q; h++) mx[h] = max_of(r1 - r0, s + h * ld_s + r0);
    *vmax = v_scale_max(v, r0, r1, idx, NULL);
}

void gl_attn_split_sums(int d, int n_q, const gl_kv_view *v, int r0, int r1, const int32_t *idx, float *s,
                        int64_t ld_s, const float *mx, float vmax, double *acc, double *z)
{
    enum { MAX_Q = GL_ATTN_SPLIT_MAXQ };
    float kw[MAX_Q];
    int nn[MAX_Q];
    for (int h = 0; h < n_q; h++) {
        kw[h] = kw_of(vmax);
        nn[h] = r1 - r0;
        z[h] = 0.0;
    }
    memset(acc, 0, sizeof *acc * (size_t)n_q * (size_t)d);
    const int8_t *vb = v->data;
    const float *vd = v->scale;
    if (!idx) {
        vb += (int64_t)r0 * v->ld;
        vd += (int64_t)r0 * v->lds;
    }
    qt_kv()->pv_i8_sum(d, n_q, nn, vb, v->ld, vd, v->lds, idx ? idx + r0 : NULL, s + r0, ld_s, mx, kw, acc, d, z);
}

void gl_attn_split_out(int d, int n_q, int n_parts, const double *acc, int64_t ld_part, const double *z,
                       float vmax, float *out)
{
    double a[256];
    for (int h = 0; h < n_q; h++)
        for (int j0 = 0; j0 < d; j0 += 256) {
            const int nj = d - j0 < 256 ? d - j0 : 256;
            double zh = 0.0;
            for (int j = 0; j < nj; j++) a[j] = 0.0;
            /* integers below 2^53: exact, whatever the order */
            for (int p = 0; p < n_parts; p++) {
                const double *ap = acc + p * ld_part + (int64_t)h * d + j0;
                for (int j = 0; j < nj; j++) a[j] += ap[j];
                zh += z[(int64_t)p * n_q + h];
            }
            qt_kv_pv_out(nj, a, zh, kw_of(vmax), out + (size_t)h * d + j0);
        }
}

int gl_attn_prompt_applies(int d, const gl_kv_view *k, const gl_kv_view *v)
{
    return multi_width(d) && k->type == GL_KV_I8 && v->type == GL_KV_I8 && qt_kv()->qk_i8_causal;
}

/* work: the scores (n_max rounded to 16 per query), the sums (d doubles
 * and z per query) and the running largest V scale (n_max floats) */
static size_t prompt_ld_s(int n_max) { return (size_t)(n_max + 15) / 16 * 16; }

size_t gl_attn_prompt_work(int d, int nq, int n_max)
{
    return (size_t)nq * prompt_ld_s(n_max) + (size_t)nq * 2 * (size_t)(d + 1) + prompt_ld_s(n_max);
}

void gl_attn_prompt(int d, int n_tok, int n_q, const float *q, int64_t ldq, float scale, const gl_kv_view *k,
                    const gl_kv_view *v, const int *n, float *work, float *out, int64_t ldo)
{
    _Static_assert(GL_ATTN_PROMPT_MAXQ <= QT_KV_CAUSAL_MAXQ, "the kernels take the block");
    const qt_kv_ops *ops = qt_kv();
    const int nq = n_tok * n_q;
    int8_t q8[GL_ATTN_PROMPT_MAXQ * QT_KV_MULTI_MAXD];
    float qd[GL_ATTN_PROMPT_MAXQ], mx[GL_ATTN_PROMPT_MAXQ], kw[GL_ATTN_PROMPT_MAXQ];
    int nh[GL_ATTN_PROMPT_MAXQ], n_max = 0;
    for (int j = 0; j < n_tok; j++) {
        n_max = n[j] > n_max ? n[j] : n_max;
        quantize_heads(d, n_q, q + j * ldq, d, scale, q8 + (size_t)j * n_q * d, qd + j * n_q);
        for (int i = 0; i < n_q; i++) nh[j * n_q + i] = n[j];
    }
    const size_t ld_s = prompt_ld_s(n_max);
    float *s = work, *vmax = work + (size_t)nq * ld_s;
    double *acc = (double *)(vmax + ld_s), *z = acc + (size_t)nq * d; /* ld_s: a multiple of 16, so aligned */
    ops->qk_i8_causal(d, nq, nh, q8, qd, k->data, k->ld, k->scale, k->lds, s, (int64_t)ld_s);
    /* each token's kw from the largest V scale of its own rows */
    float m = 0.0f;
    for (int r = 0; r < n_max; r++) {
        const float x = v->scale[(int64_t)r * v->lds];
        vmax[r] = m = x > m ? x : m;
    }
    for (int h = 0; h < nq; h++) {
        mx[h] = max_of(nh[h], s + h * ld_s);
        kw[h] = kw_of(vmax[nh[h] - 1]);
    }
    memset(acc, 0, sizeof *acc * (size_t)nq * (size_t)(d + 1));
    ops->pv_i8_sum(d, nq, nh, v->data, v->ld, v->scale, v->lds, NULL, s, (int64_t)ld_s, mx, kw, acc, d, z);
    for (int h = 0; h < nq; h++)
        qt_kv_pv_out(d, acc + (size_t)h * d, z[h], kw[h], out + (h / n_q) * ldo + (int64_t)(h % n_q) * d);
}
