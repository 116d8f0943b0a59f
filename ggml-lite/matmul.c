#include "ggml-lite/matmul.h"

#include <stdint.h>

size_t gl_matmul_scratch(const gl_tensor *w, int n_tokens)
{
    const qt_traits *tr = qt_get(w->type);
    if (!tr) return 0;
    return qt_row_size(tr->vec_dot_type, w->ne[0]) * (size_t)n_tokens;
}

int gl_matmul(const gl_tensor *w, const float *x, float *y, int n_tokens, void *scratch)
{
    const qt_traits *tr = qt_get(w->type);
    if (!tr || !tr->vec_dot) return -1;
    const int64_t n_in = w->ne[0], n_out = w->ne[1];
    const qt_traits *act = qt_get(tr->vec_dot_type);
    const void *xq = x;
    size_t xq_row = (size_t)n_in * sizeof(float);
    if (tr->vec_dot_type != QT_F32) {
        qt_from_float_fn quantize = act ? (act->quantize_act ? act->quantize_act : act->from_float) : NULL;
        if (!quantize) return -1;
        xq_row = qt_row_size(tr->vec_dot_type, n_in);
        #pragma omp parallel for schedule(static) if (n_tokens > 1)
        for (int t = 0; t < n_tokens; t++)
            quantize(x + (int64_t)t * n_in, (uint8_t *)scratch + (size_t)t * xq_row, n_in);
        xq = scratch;
    }
    /* Rows outermost: each weight row is streamed once and reused across
     * all tokens of the batch while it is in cache. */
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < n_out; r++) {
        const void *wr = gl_row(w, r);
        for (int t = 0; t < n_tokens; t++)
            tr->vec_dot((int)n_in, &y[(int64_t)t * n_out + r], wr,
                        (const uint8_t *)xq + (size_t)t * xq_row);
    }
    return 0;
}
