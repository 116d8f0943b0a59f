#include "ggml-lite/matmul.h"

#include <stdbool.h>
#include <stdint.h>

#include "quant/repack.h"
#include "quant/tiled.h"

size_t gl_matmul_scratch(const gl_tensor *w, int n_tokens)
{
    const qt_traits *tr = qt_get(w->type);
    if (!tr) return 0;
    return qt_row_size(tr->vec_dot_type, w->ne[0]) * (size_t)n_tokens;
}

static int matmul(const gl_tensor *w, const float *x, float *y, int n_tokens, void *scratch, bool each)
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
    /* Weights llama.cpp repacks (quant/repack.h): groups of 8 rows, the
     * first n - n % 4 tokens 4 at a time (its gemm), the rest one at a time
     * (its gemv), each output in its own float lane.  qlm uses that order
     * on every CPU so the bits depend on the model only; a type the ISA set
     * lacks takes the reference kernel. */
    if (qt_repack_applies(w->type, n_out)) {
        const qt_repack_ops *rp = qt_repack(), *ref = qt_repack_ref();
        qt_rp_gemv_fn gemv = rp->gemv[w->type] ? rp->gemv[w->type] : ref->gemv[w->type];
        qt_rp_gemm_fn gemm = rp->gemm[w->type] ? rp->gemm[w->type] : ref->gemm[w->type];
        if (gemv && gemm) {
            const int n_gemm = each ? 0 : n_tokens - n_tokens % QT_RP_COLS;
            #pragma omp parallel for schedule(static)
            for (int64_t g = 0; g < n_out / QT_RP_ROWS; g++) {
                const void *wg = gl_row(w, g * QT_RP_ROWS);
                for (int t = 0; t < n_gemm; t += QT_RP_COLS)
                    gemm((int)n_in, &y[(int64_t)t * n_out + g * QT_RP_ROWS], (size_t)n_out, wg,
                         w->row_bytes, (const uint8_t *)xq + (size_t)t * xq_row, xq_row);
                for (int t = n_gemm; t < n_tokens; t++)
                    gemv((int)n_in, &y[(int64_t)t * n_out + g * QT_RP_ROWS], wg, w->row_bytes,
                         (const uint8_t *)xq + (size_t)t * xq_row);
            }
            return 0;
        }
    }
    /* K-quant weights llama.cpp does not repack, with 8 or more tokens:
     * its tiled kernels' order (quant/tiled.h). */
    if (qt_tiled_applies(w->type, n_out, each ? 1 : n_tokens)) {
        qt_tiled_row_fn row = qt_tiled_row();
        #pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < n_out; r++)
            row(w->type, (int)n_in, gl_row(w, r), xq, xq_row, n_tokens, &y[r], (size_t)n_out);
        return 0;
    }
    /* Rows outermost: each weight row is streamed once and reused across
     * all tokens of the batch while it is in cache.  Where llama.cpp's
     * tinyBLAS order differs from vec_dot's (quant/tiled.h), it is used. */
    qt_vec_dot_fn tiny = qt_tinyblas_dot(w->type, n_out, each ? 1 : n_tokens);
    qt_vec_dot_fn dot = tiny ? tiny : tr->vec_dot;
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < n_out; r++) {
        const void *wr = gl_row(w, r);
        for (int t = 0; t < n_tokens; t++)
            dot((int)n_in, &y[(int64_t)t * n_out + r], wr, (const uint8_t *)xq + (size_t)t * xq_row);
    }
    return 0;
}

int gl_matmul(const gl_tensor *w, const float *x, float *y, int n_tokens, void *scratch)
{
    return matmul(w, x, y, n_tokens, scratch, false);
}

int gl_matmul_each(const gl_tensor *w, const float *x, float *y, int n_tokens, void *scratch)
{
    return matmul(w, x, y, n_tokens, scratch, true);
}
