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
    if (mask && mask->row_pos)
        for (int r = 0; r < n; r++)
            if (mask->row_pos[idx ? idx[r] : r] < mask->min_pos) sc->s[r] = -INFINITY;
    for (int r = n; r < win; r++) sc->s[r] = -INFINITY;
    gl_softmax_ggml(sc->s, win);
    if (v->type == GL_KV_F16) {
        qt_kv()->pv_f16(n, d, v->data, v->ld, idx, sc->s, out);
    } else if (v->type == GL_KV_I8) {
        qt_kv()->pv_i8(n, d, v->data, v->ld, v->scale, v->lds, idx, sc->s, out);
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

int gl_attn_group_applies(int d, const gl_kv_view *k, const gl_kv_view *v)
{
    const qt_kv_ops *ops = qt_kv();
    return d == 64 && k->type == GL_KV_I8 && v->type == GL_KV_I8 && ops->qk_i8_multi && ops->pv_i8_multi;
}

void gl_attn_group(int d, int n_q, const float *q, float scale, const gl_kv_view *k, const gl_kv_view *v, int n,
                   const int32_t *idx, int n_ctx, gl_attn_scratch *sc, float *out)
{
    enum { MAX_Q = 32 };
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
    const qt_kv_ops *ops = qt_kv();
    int8_t q8[MAX_Q * 64];
    float qd[MAX_Q];
    /* as scores() forms each head's factor */
    for (int h = 0; h < n_q; h++) qd[h] = qt_kv_quantize_i8(d, q + (size_t)h * d, q8 + h * d) * scale;
    ops->qk_i8_multi(n, d, n_q, q8, qd, k->data, k->ld, k->scale, k->lds, idx, s, win);
    for (int h = 0; h < n_q; h++) {
        float *sh = s + (size_t)h * win;
        for (int r = n; r < win; r++) sh[r] = -INFINITY;
        gl_softmax_ggml(sh, win);
    }
    ops->pv_i8_multi(n, d, n_q, v->data, v->ld, v->scale, v->lds, idx, s, win, out, d);
    free(heap);
}

int gl_attn_prompt_applies(int d, const gl_kv_view *k, const gl_kv_view *v)
{
    const qt_kv_ops *ops = qt_kv();
    return d == 64 && k->type == GL_KV_I8 && v->type == GL_KV_I8 && ops->qk_i8_causal && ops->pv_i8_causal;
}

/* the scores (n_max rounded to 16 per query), then the pv kernel's work */
static size_t prompt_ld_s(int n_max) { return (size_t)(n_max + 15) / 16 * 16; }

size_t gl_attn_prompt_work(int nq, int n_max)
{
    return (size_t)nq * prompt_ld_s(n_max) + QT_KV_CAUSAL_WORK(nq);
}

void gl_attn_prompt(int d, int n_tok, int n_q, const float *q, int64_t ldq, float scale, const gl_kv_view *k,
                    const gl_kv_view *v, const int *n, float *work, float *out, int64_t ldo)
{
    _Static_assert(GL_ATTN_PROMPT_MAXQ <= QT_KV_CAUSAL_MAXQ, "the kernels take the block");
    const qt_kv_ops *ops = qt_kv();
    const int nq = n_tok * n_q;
    int8_t q8[GL_ATTN_PROMPT_MAXQ * 64];
    float qd[GL_ATTN_PROMPT_MAXQ], *outs[GL_ATTN_PROMPT_MAXQ];
    int nh[GL_ATTN_PROMPT_MAXQ], n_max = 0;
    for (int j = 0; j < n_tok; j++) {
        n_max = n[j] > n_max ? n[j] : n_max;
        for (int i = 0; i < n_q; i++) {
            const int h = j * n_q + i;
            /* as scores() forms each head's factor (the set's quantizer
             * is qt_kv_quantize_i8's, without its look-up per call) */
            const float *qh = q + j * ldq + (int64_t)i * d;
            int8_t *qh8 = q8 + h * d;
            qd[h] = (ops->quantize_i8 ? ops->quantize_i8(d, qh, qh8) : qt_kv_quantize_i8(d, qh, qh8)) * scale;
            nh[h] = n[j];
            outs[h] = out + j * ldo + (int64_t)i * d;
        }
    }
    const size_t ld_s = prompt_ld_s(n_max);
    float *s = work, *pv_work = work + (size_t)nq * ld_s; /* ld_s is a multiple of 16: still aligned */
    ops->qk_i8_causal(d, nq, nh, q8, qd, k->data, k->ld, k->scale, k->lds, s, (int64_t)ld_s);
    ops->pv_i8_causal(d, nq, nh, v->data, v->ld, v->scale, v->lds, s, (int64_t)ld_s, outs, pv_work);
}
