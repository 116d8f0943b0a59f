/* test_repack.c - llama.cpp's repacked and tiled matmul orders
 * (quant/repack.h, quant/tiled.h).
 *
 * - Every ISA set of the repack kernels (gemv: 8 rows x 1 column, gemm:
 *   8 rows x 4 columns) equals the scalar reference bit for bit, for Q4_0,
 *   Q4_K, Q2_K and IQ4_NL, on random blocks and adversarial ones (zero, max and
 *   subnormal f16 scales, quants and scales at the ends of their ranges,
 *   activation bytes -128 and 127), in buffers that end at the data.
 * - The tiled order's AVX2 kernel equals its reference likewise, for
 *   Q2_K..Q6_K.
 * - Fixtures made by llama.cpp itself (tools/llamacpp/gen_repack_fixtures.c:
 *   its repack + gemm/gemv, its tiled MUL_MAT) equal gl_matmul and the
 *   scalar reference bit for bit.
 * - gl_matmul routes: repacked types with rows % 8 == 0 take the repack
 *   order (gemm for the first n - n % 4 tokens, gemv for the rest); K-quants
 *   otherwise take the tiled order from 8 tokens on and vec_dot's below;
 *   IQ4_NL not repacked takes tinyBLAS's order from 2 tokens on; other
 *   types keep vec_dot. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ggml-lite/layout.h"
#include "ggml-lite/matmul.h"
#include "ggml-lite/ops.h"
#include "quant/blocks.h"
#include "quant/cpu.h"
#include "quant/fp16.h"
#include "quant/ref.h"
#include "quant/repack.h"
#include "quant/tiled.h"
#include "quant/tiles.h"
#include "quant/types.h"
#include "tests/test.h"
#include "tests/test_rng.h"

enum { SC_RANDOM, SC_ZERO, SC_MAX_SCALE, SC_SUBNORMAL, SC_EXTREMES, SC_COUNT };
static const char *sc_names[SC_COUNT] = {"random", "all-zero", "max-scale", "subnormal-scale", "extremes"};

static uint16_t scale_for(int sc, double sigma) {
    if (sc == SC_MAX_SCALE) return rng_below(2) ? 0x7bff : 0xfbff;
    if (sc == SC_SUBNORMAL) return (uint16_t)((1 + rng_below(0x3ff)) | (rng_below(2) ? 0x8000 : 0));
    return qt_f32_to_f16((float)(rng_normal() * sigma));
}

/* Where a weight block keeps its f16 d and dmin (-1: none). */
static void scale_offsets(qt_type type, int *d, int *dmin) {
    *d = type == QT_Q2_K ? 80 : type == QT_Q3_K ? 108 : type == QT_Q6_K ? 208 : 0;
    *dmin = type == QT_Q4_K || type == QT_Q5_K ? 2 : type == QT_Q2_K ? 82 : -1;
}

/* nb weight blocks: random or extreme bytes, then the scenario's scales. */
static void fill_weights(qt_type type, uint8_t *x, int nb, int sc) {
    const size_t bs = qt_get(type)->type_size;
    int od, om;
    scale_offsets(type, &od, &om);
    for (int i = 0; i < nb; i++) {
        uint8_t *b = x + i * bs;
        const int pat = rng_below(4);
        for (size_t j = 0; j < bs; j++)
            b[j] = sc == SC_ZERO ? 0 : sc != SC_EXTREMES ? (uint8_t)rng_next()
                 : pat == 0 ? 0x00 : pat == 1 ? 0xff : pat == 2 ? 0x0f : (uint8_t)(j & 1 ? 0xf0 : 0x0f);
        if (sc == SC_ZERO) continue;
        const uint16_t d = scale_for(sc, 0.01), m = scale_for(sc, 0.01);
        memcpy(b + od, &d, 2);
        if (om >= 0) memcpy(b + om, &m, 2);
    }
}

/* nb activation blocks of Q8_0 or Q8_K (consistent bsums). */
static void fill_acts(qt_type act, uint8_t *y, int nb, int sc) {
    const int pat = rng_below(3);
    for (int i = 0; i < nb; i++) {
        int8_t *qs;
        int nq;
        if (act == QT_Q8_0) {
            qt_block_q8_0 *b = (qt_block_q8_0 *)y + i;
            b->d = sc == SC_ZERO ? 0 : scale_for(sc, 0.05);
            qs = b->qs, nq = QT_QK8_0;
        } else {
            qt_block_q8_K *b = (qt_block_q8_K *)y + i;
            b->d = sc == SC_ZERO ? 0.0f : sc == SC_MAX_SCALE ? 1e4f : sc == SC_SUBNORMAL ? 1e-40f
                                       : (float)(rng_normal() * 0.05);
            qs = b->qs, nq = QT_QK_K;
        }
        for (int j = 0; j < nq; j++)
            qs[j] = sc == SC_ZERO ? 0 : sc != SC_EXTREMES ? (int8_t)rng_next()
                  : pat == 0 ? -128 : pat == 1 ? 127 : (int8_t)(j & 1 ? -128 : 127);
        if (act == QT_Q8_K) {
            qt_block_q8_K *b = (qt_block_q8_K *)y + i;
            for (int j = 0; j < QT_QK_K / 16; j++) {
                int s = 0;
                for (int k = 0; k < 16; k++) s += b->qs[16 * j + k];
                b->bsums[j] = (int16_t)s;
            }
        }
    }
}

static void test_kernels_vs_ref(const char *set, const qt_repack_ops *k, qt_type type) {
    const qt_repack_ops *ref = qt_repack_ref();
    const qt_traits *tr = qt_get(type);
    const qt_type act = tr->vec_dot_type;
    char name[128];
    for (int sc = 0; sc < SC_COUNT; sc++) {
        snprintf(name, sizeof name, "%s/repack_%s/%s", set, tr->name, sc_names[sc]);
        TEST_BEGIN(name);
        CHECK(k->gemv[type] && k->gemm[type], "no kernel");
        for (int iter = 0; iter < 24 && k->gemv[type] && k->gemm[type]; iter++) {
            const int max_nb = tr->block_size == QT_QK_K ? 6 : 48;
            const int nb = iter < 4 ? 1 + iter : 1 + rng_below(max_nb), n = nb * tr->block_size;
            const size_t w_stride = tr->type_size * nb, y_stride = qt_row_size(act, n);
            /* rows of the group a little apart, as in a wider tensor */
            const size_t w_gap = w_stride + tr->type_size * (size_t)rng_below(3);
            uint8_t *w = test_xmalloc(w_gap * 7 + w_stride);
            uint8_t *y = test_xmalloc(y_stride * QT_RP_COLS);
            for (int r = 0; r < 8; r++) fill_weights(type, w + r * w_gap, nb, sc);
            for (int c = 0; c < QT_RP_COLS; c++) fill_acts(act, y + c * y_stride, nb, sc);
            float a[8], b[8], ga[QT_RP_COLS * 9], gb[QT_RP_COLS * 9];
            ref->gemv[type](n, a, w, w_gap, y);
            k->gemv[type](n, b, w, w_gap, y);
            for (int r = 0; r < 8; r++)
                CHECK(same_bits(a[r], b[r]), "gemv nb=%d row %d: ref %a, kernel %a", nb, r, a[r], b[r]);
            ref->gemm[type](n, ga, 9, w, w_gap, y, y_stride);
            k->gemm[type](n, gb, 9, w, w_gap, y, y_stride);
            for (int c = 0; c < QT_RP_COLS; c++)
                for (int r = 0; r < 8; r++)
                    CHECK(same_bits(ga[c * 9 + r], gb[c * 9 + r]), "gemm nb=%d col %d row %d: ref %a, kernel %a",
                          nb, c, r, ga[c * 9 + r], gb[c * 9 + r]);
            free(w);
            free(y);
        }
        TEST_END();
    }
}

/* A call's side data (repack.h): prep for each of its ncols columns. */
static void prep_call(const qt_rp_wide *k, int n, int ncols, uint8_t *aux, const uint8_t *y, size_t y_stride) {
    for (int c = 0; c < ncols; c++) k->prep(n, c, ncols, aux, y + c * y_stride);
}

/* A wide kernel set (16 rows, any number of columns) against the reference
 * order, gemm and gemv, at every column count from 1 to 40; a set that
 * says it has one order must match gemv's with gemm's too. */
/* One call asked to stream its outputs (qt_rp_stream_out), ncols columns
 * STREAM_LDO floats apart: the same bits as want, and nothing written
 * between a column's 16 rows and the next. */
enum { STREAM_LDO = 4096 };
static void check_wide_streamed(const qt_rp_wide *k, int x16, int n, int ncols, const uint8_t *w, size_t w_gap,
                                const uint8_t *y, size_t y_stride, uint8_t *aux, int gemm, const float *want,
                                int want_stride) {
    float *out = aligned_alloc(64, sizeof(float) * STREAM_LDO * (size_t)ncols);
    if (!out) abort();
    CHECK(qt_rp_stream_out(true, out, STREAM_LDO), "%d columns %d apart are not streamed", ncols, STREAM_LDO);
    for (size_t i = 0; i < (size_t)STREAM_LDO * ncols; i++) out[i] = -0.0f;
    prep_call(k, n, ncols, aux, y, y_stride);
    if (x16)
        k->run_x16(n, ncols, gemm, out, STREAM_LDO, w, y, y_stride, aux, true);
    else
        k->run(n, ncols, gemm, out, STREAM_LDO, w, w_gap, y, y_stride, aux, true);
    for (int c = 0; c < ncols; c++) {
        for (int r = 0; r < QT_RP_WIDE_ROWS; r++)
            CHECK(same_bits(out[(size_t)c * STREAM_LDO + r], want[c * want_stride + r]),
                  "streamed %s%s col %d row %d: ref %a, kernel %a", x16 ? "x16 " : "", gemm ? "gemm" : "gemv", c, r,
                  want[c * want_stride + r], out[(size_t)c * STREAM_LDO + r]);
        CHECK(same_bits(out[(size_t)c * STREAM_LDO + QT_RP_WIDE_ROWS], -0.0f), "streamed: col %d written past its rows",
              c);
    }
    free(out);
}

/* run2_x16 on groups a and b (x16) equals run_x16 on each, bit for bit,
 * at ldo (STREAM_LDO when streamed), with nothing written past a column's
 * rows in either. */
static void check_wide_pair(const qt_rp_wide *k, int n, int ncols, const uint8_t *a, const uint8_t *b,
                            const uint8_t *y, size_t y_stride, uint8_t *aux, int gemm, bool stream) {
    const size_t ldo = stream ? STREAM_LDO : 2 * QT_RP_WIDE_ROWS + 1;
    /* aligned_alloc takes whole multiples of the alignment */
    const size_t bytes = (sizeof(float) * ldo * (size_t)ncols + 63) / 64 * 64;
    float *want = aligned_alloc(64, bytes), *out = aligned_alloc(64, bytes);
    if (!want || !out) abort();
    for (size_t i = 0; i < ldo * (size_t)ncols; i++) want[i] = out[i] = -0.0f;
    prep_call(k, n, ncols, aux, y, y_stride);
    k->run_x16(n, ncols, gemm, want, ldo, a, y, y_stride, aux, false);
    k->run_x16(n, ncols, gemm, want + QT_RP_WIDE_ROWS, ldo, b, y, y_stride, aux, false);
    k->run2_x16(n, ncols, gemm, (float *const[2]){out, out + QT_RP_WIDE_ROWS}, ldo, (const void *const[2]){a, b}, y,
                y_stride, aux, stream);
    for (int c = 0; c < ncols; c++)
        for (int r = 0; r <= 2 * QT_RP_WIDE_ROWS; r++)
            CHECK(same_bits(out[(size_t)c * ldo + r], want[(size_t)c * ldo + r]),
                  "pair %s%s ncols=%d col %d row %d: one group at a time %a, pair %a", stream ? "streamed " : "",
                  gemm ? "gemm" : "gemv", ncols, c, r, want[(size_t)c * ldo + r], out[(size_t)c * ldo + r]);
    free(want), free(out);
}

static void test_wide_vs_ref(const char *set, const qt_rp_wide *const *table, qt_type type) {
    const qt_repack_ops *ref = qt_repack_ref();
    const qt_traits *tr = qt_get(type);
    const qt_type act = tr->vec_dot_type;
    const qt_rp_wide *k = table[type];
    char name[128];
    /* every width to 40, then past the 64 columns the kernels keep
     * accumulators for at once (their chunks) */
    enum { ROWS = QT_RP_WIDE_ROWS, MAXC = 72 };
    for (int sc = 0; sc < SC_COUNT; sc++) {
        snprintf(name, sizeof name, "%s/wide_%s/%s", set, tr->name, sc_names[sc]);
        TEST_BEGIN(name);
        for (int iter = 0; iter < 6; iter++) {
            const int max_nb = tr->block_size == QT_QK_K ? 4 : 24;
            const int nb = iter < 2 ? 1 + iter : 1 + rng_below(max_nb), n = nb * tr->block_size;
            const size_t w_stride = tr->type_size * nb, y_stride = qt_row_size(act, n);
            const size_t w_gap = w_stride + tr->type_size * (size_t)rng_below(3);
            uint8_t *w = test_xmalloc(w_gap * (ROWS - 1) + w_stride), *y = test_xmalloc(y_stride * MAXC);
            uint8_t *aux = test_xmalloc(k->aux_bytes(n, MAXC) + 1);
            for (int r = 0; r < ROWS; r++) fill_weights(type, w + r * w_gap, nb, sc);
            for (int c = 0; c < MAXC; c++) fill_acts(act, y + c * y_stride, nb, sc);
            /* the reference: gemv per column, gemm per group of 4 */
            float want_v[MAXC][ROWS], want_g[MAXC][ROWS], g[QT_RP_COLS * ROWS];
            for (int c = 0; c < MAXC; c++)
                for (int h = 0; h < ROWS; h += 8) ref->gemv[type](n, &want_v[c][h], w + h * w_gap, w_gap, y + c * y_stride);
            for (int c = 0; c < MAXC; c += QT_RP_COLS)
                for (int h = 0; h < ROWS; h += 8) {
                    ref->gemm[type](n, g, ROWS, w + h * w_gap, w_gap, y + c * y_stride, y_stride);
                    for (int j = 0; j < QT_RP_COLS; j++) memcpy(&want_g[c + j][h], &g[j * ROWS], 8 * sizeof(float));
                }
            if (k->one_order)
                for (int c = 0; c < MAXC; c++)
                    for (int r = 0; r < ROWS; r++)
                        CHECK(same_bits(want_g[c][r], want_v[c][r]), "one order, yet gemm %a gemv %a (col %d row %d)",
                              want_g[c][r], want_v[c][r], c, r);
            for (int ncols = 1; ncols <= MAXC; ncols = ncols < 40 ? ncols + 1 : ncols + 8)
                for (int gemm = 0; gemm < 2; gemm++) {
                    float out[MAXC * (ROWS + 1)];
                    prep_call(k, n, ncols, aux, y, y_stride);
                    k->run(n, ncols, gemm, out, ROWS + 1, w, w_gap, y, y_stride, aux, false);
                    for (int c = 0; c < ncols; c++)
                        for (int r = 0; r < ROWS; r++) {
                            const float want = gemm ? want_g[c][r] : want_v[c][r];
                            CHECK(same_bits(out[c * (ROWS + 1) + r], want),
                                  "%s nb=%d ncols=%d col %d row %d: ref %a, kernel %a", gemm ? "gemm" : "gemv", nb,
                                  ncols, c, r, want, out[c * (ROWS + 1) + r]);
                        }
                }
            if (iter < 2)
                for (int gemm = 0; gemm < 2; gemm++)
                    check_wide_streamed(k, 0, n, MAXC, w, w_gap, y, y_stride, aux, gemm,
                                        gemm ? &want_g[0][0] : &want_v[0][0], ROWS);
            if (k->run_x16) { /* the same outputs from the interleaved layout */
                uint8_t *x16 = test_xmalloc(w_stride * ROWS), *back = test_xmalloc(w_gap * (ROWS - 1) + w_stride);
                qt_x16_interleave(type, n, w, w_gap, x16);
                qt_x16_deinterleave(type, n, x16, back, w_gap);
                for (int r = 0; r < ROWS; r++)
                    CHECK(!memcmp(back + r * w_gap, w + r * w_gap, w_stride), "x16 nb=%d: row %d back differs", nb, r);
                for (int ncols = 1; ncols <= MAXC; ncols = ncols < 40 ? ncols + 1 : ncols + 8)
                    for (int gemm = 0; gemm < 2; gemm++) {
                        float out[MAXC * (ROWS + 1)];
                        prep_call(k, n, ncols, aux, y, y_stride);
                        k->run_x16(n, ncols, gemm, out, ROWS + 1, x16, y, y_stride, aux, false);
                        for (int c = 0; c < ncols; c++)
                            for (int r = 0; r < ROWS; r++) {
                                const float want = gemm ? want_g[c][r] : want_v[c][r];
                                CHECK(same_bits(out[c * (ROWS + 1) + r], want),
                                      "x16 %s nb=%d ncols=%d col %d row %d: ref %a, kernel %a", gemm ? "gemm" : "gemv",
                                      nb, ncols, c, r, want, out[c * (ROWS + 1) + r]);
                            }
                    }
                if (iter < 2)
                    for (int gemm = 0; gemm < 2; gemm++)
                        check_wide_streamed(k, 1, n, MAXC, x16, 0, y, y_stride, aux, gemm,
                                            gemm ? &want_g[0][0] : &want_v[0][0], ROWS);
                if (k->run2_x16) { /* two groups at once: this one and another */
                    uint8_t *other = test_xmalloc(w_stride * ROWS), *x16b = test_xmalloc(w_stride * ROWS);
                    for (int r = 0; r < ROWS; r++) fill_weights(type, other + r * w_stride, nb, sc);
                    qt_x16_interleave(type, n, other, w_stride, x16b);
                    for (int ncols = 1; ncols <= MAXC; ncols = ncols < 12 ? ncols + 1 : ncols + 29)
                        for (int gemm = 0; gemm < 2; gemm++)
                            check_wide_pair(k, n, ncols, x16, x16b, y, y_stride, aux, gemm, iter < 2 && ncols > 60);
                    free(other), free(x16b);
                }
                free(x16), free(back);
            }
            free(w), free(y), free(aux);
        }
        TEST_END();
    }
}

/* nr rows x_stride apart at once (rows8, rows16): every row and column as
 * the reference's one row; ncols leaves columns past the 4-column passes. */
static void check_tiled_rows(qt_type type, int n, size_t x_stride, int ncols, int sc, qt_tiled_rows8_fn kernel, int nr)
{
    const qt_tiled_row_fn ref = qt_tiled_row_ref();
    const int nb = n / QT_QK_K, ld = nr + 1;
    const size_t y_stride = qt_row_size(QT_Q8_K, n);
    uint8_t *w = test_xmalloc(x_stride * (size_t)nr), *y = test_xmalloc(y_stride * (size_t)ncols);
    for (int r = 0; r < nr; r++) fill_weights(type, w + r * x_stride, nb, sc);
    for (int c = 0; c < ncols; c++) fill_acts(QT_Q8_K, y + c * y_stride, nb, sc);
    float out[16 * 17], a[16];
    kernel(type, n, w, x_stride, y, y_stride, ncols, out, (size_t)ld);
    for (int r = 0; r < nr; r++) {
        ref(type, n, w + r * x_stride, y, y_stride, ncols, a, 1);
        for (int c = 0; c < ncols; c++)
            CHECK(same_bits(a[c], out[ld * c + r]), "rows%d nb=%d row %d col %d: ref %a, kernel %a", nr, nb, r, c,
                  a[c], out[ld * c + r]);
    }
    free(w);
    free(y);
}

/* The tiled order's kernel for this CPU against its reference. */
static void test_tiled_vs_ref(const char *set, qt_tiled_row_fn k, qt_tiled_rows8_fn rows8, qt_tiled_rows8_fn rows16,
                              qt_type type) {
    const qt_tiled_row_fn ref = qt_tiled_row_ref();
    char name[128];
    for (int sc = 0; sc < SC_COUNT; sc++) {
        snprintf(name, sizeof name, "%s/tiled_%s/%s", set, qt_get(type)->name, sc_names[sc]);
        TEST_BEGIN(name);
        for (int iter = 0; iter < 12; iter++) {
            const int nb = 1 + rng_below(5), n = nb * QT_QK_K, ncols = 8 + rng_below(9);
            const size_t y_stride = qt_row_size(QT_Q8_K, n);
            uint8_t *w = test_xmalloc(qt_row_size(type, n)), *y = test_xmalloc(y_stride * ncols);
            fill_weights(type, w, nb, sc);
            for (int c = 0; c < ncols; c++) fill_acts(QT_Q8_K, y + c * y_stride, nb, sc);
            float a[16], b[16];
            ref(type, n, w, y, y_stride, ncols, a, 1);
            k(type, n, w, y, y_stride, ncols, b, 1);
            for (int c = 0; c < ncols; c++)
                CHECK(same_bits(a[c], b[c]), "nb=%d col %d: ref %a, kernel %a", nb, c, a[c], b[c]);
            free(w);
            free(y);
            const size_t x_stride = qt_row_size(type, n) + 16 * (size_t)rng_below(3);
            if (rows8) check_tiled_rows(type, n, x_stride, ncols, sc, rows8, 8);
            if (rows16) check_tiled_rows(type, n, x_stride, ncols, sc, rows16, 16);
        }
        TEST_END();
    }
}

/* ---- fixtures from llama.cpp -------------------------------------------- */

typedef struct fixture {
    qt_type type;
    int rows, n, ncols;
    uint8_t *w;
    float *x, *out;
    bool repacked; /* made by llama.cpp with its repacked kernels */
} fixture;

static int load_fixture(const char *path, fixture *f) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return -1;
    char magic[4];
    int32_t h[5];
    int ok = fread(magic, 4, 1, fp) == 1 && !memcmp(magic, "QRPF", 4) && fread(h, sizeof h, 1, fp) == 1 &&
             h[0] == 1 && qt_get((qt_type)h[1]) && h[2] > 0 && h[2] <= 4096 && h[3] > 0 && h[3] <= 65536 &&
             h[4] > 0 && h[4] <= 64;
    if (ok) {
        f->type = (qt_type)h[1], f->rows = h[2], f->n = h[3], f->ncols = h[4];
        const size_t wb = qt_row_size(f->type, f->n) * f->rows;
        f->w = test_xmalloc(wb);
        f->x = test_xmalloc(sizeof(float) * f->n * f->ncols);
        f->out = test_xmalloc(sizeof(float) * f->rows * f->ncols);
        ok = fread(f->w, wb, 1, fp) == 1 && fread(f->x, sizeof(float) * f->n * f->ncols, 1, fp) == 1 &&
             fread(f->out, sizeof(float) * f->rows * f->ncols, 1, fp) == 1;
    }
    fclose(fp);
    return ok ? 0 : -1;
}

/* The reference order for one output, from quantized activations. */
static float reference_out(const fixture *f, const uint8_t *xq, size_t act_row, int c, int r) {
    const size_t row = qt_row_size(f->type, f->n);
    if (f->repacked) {
        float g[QT_RP_COLS * 8];
        const int n_gemm = f->ncols - f->ncols % QT_RP_COLS;
        const uint8_t *wg = f->w + (size_t)(r & ~7) * row;
        if (c < n_gemm) {
            const int c0 = c - c % QT_RP_COLS;
            qt_repack_ref()->gemm[f->type](f->n, g, 8, wg, row, xq + c0 * act_row, act_row);
            return g[(c - c0) * 8 + (r & 7)];
        }
        qt_repack_ref()->gemv[f->type](f->n, g, wg, row, xq + c * act_row);
        return g[r & 7];
    }
    if (qt_tiled_applies(f->type, f->rows, f->ncols)) return qt_tiled_dot(f->type, f->n, f->w + r * row, xq + c * act_row);
    float s;
    if (qt_tinyblas_dot(f->type, f->rows, f->ncols)) {
        qt_tinyblas_dot(f->type, f->rows, f->ncols)(f->n, &s, f->w + r * row, xq + c * act_row);
        return s;
    }
    qt_isa_kernels(QT_ISA_SCALAR)->vec_dot[f->type](f->n, &s, f->w + r * row, xq + c * act_row);
    return s;
}

static void test_fixture(const char *stem) {
    char path[256], name[128];
    snprintf(path, sizeof path, "tests/data/repack/%s.bin", stem);
    snprintf(name, sizeof name, "llamacpp_fixture_%s", stem);
    TEST_BEGIN(name);
    fixture f;
    if (load_fixture(path, &f)) {
        CHECK(0, "cannot read %s", path);
        TEST_END();
        return;
    }
    f.repacked = strncmp(stem, "repack_", 7) == 0;
    /* Where AMX runs, qlm does not repack Q4_K and Q2_K (quant/tiles.h):
     * then only the reference kernels meet the repacked fixtures here, and
     * t_amx.sh reruns this with AMX off for gl_matmul. */
    const bool routed = f.repacked == qt_repack_applies(f.type, f.rows);
    const qt_traits *tr = qt_get(f.type), *at = qt_get(tr->vec_dot_type);
    gl_tensor t = {.type = f.type, .ne = {f.n, f.rows, 1, 1}, .row_bytes = qt_row_size(f.type, f.n), .data = f.w};
    float *out = test_xmalloc(sizeof(float) * f.rows * f.ncols);
    void *scratch = test_xmalloc(gl_matmul_scratch(&t, f.ncols));
    CHECK(gl_matmul(&t, f.x, out, f.ncols, scratch) == 0, "gl_matmul failed");
    const size_t act_row = qt_row_size(tr->vec_dot_type, f.n);
    uint8_t *xq = test_xmalloc(act_row * f.ncols);
    for (int c = 0; c < f.ncols; c++) at->quantize_act(f.x + (size_t)c * f.n, xq + c * act_row, f.n);
    for (int c = 0; c < f.ncols; c++)
        for (int r = 0; r < f.rows; r++) {
            const float want = f.out[c * f.rows + r], ref = reference_out(&f, xq, act_row, c, r);
            CHECK(!routed || same_bits(out[c * f.rows + r], want), "gl_matmul col %d row %d: %a, llama.cpp %a", c, r,
                  out[c * f.rows + r], want);
            CHECK(same_bits(ref, want), "reference col %d row %d: %a, llama.cpp %a", c, r, ref, want);
        }
    free(out), free(scratch), free(xq), free(f.w), free(f.x), free(f.out);
    TEST_END();
}

/* ---- routing ------------------------------------------------------------- */

enum { ORDER_VEC_DOT, ORDER_REPACK, ORDER_TILED, ORDER_TINYBLAS, ORDER_I16 };

/* gl_matmul against the order it should take, computed here from the same
 * quantized activations, for 1..`max_tok` tokens. */
static void test_matmul_routing(qt_type type, int rows, int max_tok) {
    char name[128];
    snprintf(name, sizeof name, "matmul_routes_%s_rows%d", qt_get(type)->name, rows);
    TEST_BEGIN(name);
    const qt_traits *tr = qt_get(type), *at = qt_get(tr->vec_dot_type);
    const int n = tr->block_size == QT_QK_K ? 2 * QT_QK_K : 4 * 32;
    const size_t row_bytes = qt_row_size(type, n), act_row = qt_row_size(tr->vec_dot_type, n);
    float *wf = test_xmalloc(sizeof(float) * n * rows);
    for (int i = 0; i < n * rows; i++) wf[i] = (float)rng_normal();
    uint8_t *w = test_xmalloc(row_bytes * rows);
    tr->from_float(wf, w, (int64_t)n * rows);
    gl_tensor t = {.type = type, .ne = {n, rows, 1, 1}, .row_bytes = row_bytes, .data = w};
    /* every count up to 12, then a few across the wide kernels' passes */
    for (int ntok = 1; ntok <= max_tok; ntok += ntok < 12 ? 1 : 29) {
        /* where AMX runs, K-quant batches take the tiled order first (quant/tiles.h) */
        const qt_tiles *tiles = qt_tiles_for(type, rows, ntok);
        const int order = tiles && tiles->i16_order ? ORDER_I16
                        : qt_tiles_amx_applies(type, rows, ntok) ? ORDER_TILED
                        : qt_repack_applies(type, rows) ? ORDER_REPACK
                        : qt_tiled_applies(type, rows, ntok) ? ORDER_TILED
                        : qt_tinyblas_dot(type, rows, ntok) ? ORDER_TINYBLAS : ORDER_VEC_DOT;
        float *x = test_xmalloc(sizeof(float) * n * ntok), *out = test_xmalloc(sizeof(float) * rows * ntok);
        for (int i = 0; i < n * ntok; i++) x[i] = (float)(rng_normal() * 2.0);
        void *scratch = test_xmalloc(gl_matmul_scratch(&t, ntok));
        CHECK(gl_matmul(&t, x, out, ntok, scratch) == 0, "gl_matmul failed");
        uint8_t *xq = test_xmalloc(act_row * ntok);
        for (int k = 0; k < ntok; k++) at->quantize_act(x + (size_t)k * n, xq + k * act_row, n);
        const int n_gemm = ntok - ntok % QT_RP_COLS;
        for (int k = 0; k < ntok; k++)
            for (int r = 0; r < rows; r++) {
                float want, g[QT_RP_COLS * 8];
                const uint8_t *wg = w + (size_t)(r & ~7) * row_bytes;
                if (order == ORDER_REPACK && k < n_gemm) {
                    qt_repack_ref()->gemm[type](n, g, 8, wg, row_bytes, xq + (k - k % 4) * act_row, act_row);
                    want = g[(k % 4) * 8 + (r & 7)];
                } else if (order == ORDER_REPACK) {
                    qt_repack_ref()->gemv[type](n, g, wg, row_bytes, xq + k * act_row);
                    want = g[r & 7];
                } else if (order == ORDER_TILED) {
                    want = qt_tiled_dot(type, n, w + (size_t)r * row_bytes, xq + k * act_row);
                } else if (order == ORDER_I16) {
                    qt_tiles_i16_dot_ref(n, w + (size_t)r * row_bytes, row_bytes, 1, xq + k * act_row, act_row, 1,
                                         &want, 1);
                } else if (order == ORDER_TINYBLAS) {
                    qt_tinyblas_dot(type, rows, ntok)(n, &want, w + (size_t)r * row_bytes, xq + k * act_row);
                } else {
                    qt_isa_kernels(QT_ISA_SCALAR)->vec_dot[type](n, &want, w + (size_t)r * row_bytes, xq + k * act_row);
                }
                CHECK(same_bits(out[(size_t)k * rows + r], want), "ntok %d token %d row %d (order %d): %a, want %a",
                      ntok, k, r, order, out[(size_t)k * rows + r], want);
            }
        free(x), free(out), free(scratch), free(xq);
    }
    free(wf);
    free(w);
    TEST_END();
}

/* Batched decoding's gl_matmul_rows, which takes repacked weights through
 * the wide kernels where gl_matmul_plain says so, gives want (gl_matmul's
 * outputs) from x, two threads sharing the rows. */
static void check_rows(const gl_tensor *w, const float *x, const float *want, int ntok, float *out) {
    gl_act act;
    if (!gl_matmul_plain(w, ntok, false, &act)) return;
    const int n = (int)w->ne[0];
    uint8_t *xq = test_xmalloc(act.row_bytes * ntok);
    for (int k = 0; k < ntok; k++) act.quantize(x + (size_t)k * n, xq + k * act.row_bytes, n);
    const gl_tensor *const tw[] = {w};
    float *const ty[] = {out};
    #pragma omp parallel num_threads(2)
    gl_matmul_rows(1, tw, ty, xq, act.row_bytes, ntok);
    CHECK(!memcmp(want, out, sizeof(float) * w->ne[1] * ntok), "%s ntok %d layout %d: gl_matmul_rows differs",
          qt_get(w->type)->name, ntok, (int)w->layout);
    free(xq);
}

/* The same for weights with no x16 layout (the K-quants llama.cpp
 * repacks, where AMX does not run: tests/t_amx.sh runs this without it). */
static void test_rows_wide(qt_type type, int rows, int n, int max_tok) {
    char name[128];
    snprintf(name, sizeof name, "rows_wide_%s_rows%d_n%d", qt_get(type)->name, rows, n);
    TEST_BEGIN(name);
    const qt_traits *tr = qt_get(type);
    const size_t row_bytes = qt_row_size(type, n);
    float *wf = test_xmalloc(sizeof(float) * n * rows);
    for (int i = 0; i < n * rows; i++) wf[i] = (float)rng_normal();
    uint8_t *w = test_xmalloc(row_bytes * rows);
    tr->from_float(wf, w, (int64_t)n * rows);
    const gl_tensor t = {.type = type, .ne = {n, rows, 1, 1}, .row_bytes = row_bytes, .data = w};
    for (int ntok = 1; ntok <= max_tok; ntok++) {
        float *x = test_xmalloc(sizeof(float) * n * ntok), *want = test_xmalloc(sizeof(float) * rows * ntok),
              *got = test_xmalloc(sizeof(float) * rows * ntok);
        for (int i = 0; i < n * ntok; i++) x[i] = (float)(rng_normal() * 2.0);
        void *scratch = test_xmalloc(gl_matmul_scratch(&t, ntok));
        CHECK(gl_matmul(&t, x, want, ntok, scratch) == 0, "gl_matmul");
        check_rows(&t, x, want, ntok, got);
        free(x), free(want), free(got), free(scratch);
    }
    free(wf), free(w);
    TEST_END();
}

/* A matrix moved to the x16 layout (ggml-lite/layout.h) gives gl_matmul's
 * outputs bit for bit, in place or copied, a last 8-row group included;
 * its rows read back as before (gl_get_row); and batched decoding's
 * gl_matmul_rows, which takes repacked weights through the wide kernels
 * where gl_matmul_plain says so, agrees with gl_matmul. */
static void test_x16_matmul(qt_type type, int rows, int n, int max_tok) {
    char name[128];
    snprintf(name, sizeof name, "x16_matmul_%s_rows%d_n%d", qt_get(type)->name, rows, n);
    const qt_traits *tr = qt_get(type);
    const size_t row_bytes = qt_row_size(type, n), bytes = row_bytes * rows;
    float *wf = test_xmalloc(sizeof(float) * n * rows);
    for (int i = 0; i < n * rows; i++) wf[i] = (float)rng_normal();
    uint8_t *w = test_xmalloc(bytes), *copy = test_xmalloc(bytes), *inplace = test_xmalloc(bytes);
    tr->from_float(wf, w, (int64_t)n * rows);
    memcpy(inplace, w, bytes);
    const gl_tensor t = {.type = type, .ne = {n, rows, 1, 1}, .row_bytes = row_bytes, .data = w};
    if (!gl_x16_wanted(&t)) {
        printf("SKIP %s: no x16 kernel on this CPU\n", name);
        free(wf), free(w), free(copy), free(inplace);
        return;
    }
    TEST_BEGIN(name);
    gl_tensor tc = t, ti = t;
    ti.data = inplace;
    CHECK(gl_x16_relayout(&tc, copy) == 0 && tc.data == copy && tc.layout == GL_LAYOUT_X16, "copy relayout");
    CHECK(gl_x16_relayout(&ti, inplace) == 0 && ti.layout == GL_LAYOUT_X16, "in-place relayout");
    CHECK(!memcmp(copy, inplace, bytes), "in place and copied layouts differ");
    CHECK(!gl_x16_wanted(&tc), "an x16 tensor is not interleaved twice");
    float *row_a = test_xmalloc(sizeof(float) * n), *row_b = test_xmalloc(sizeof(float) * n);
    for (int r = 0; r < rows; r++) {
        CHECK(gl_get_row(&t, r, row_a) == 0 && gl_get_row(&tc, r, row_b) == 0, "gl_get_row");
        CHECK(!memcmp(row_a, row_b, sizeof(float) * n), "row %d reads back differently", r);
    }
    for (int ntok = 1; ntok <= max_tok; ntok++) {
        float *x = test_xmalloc(sizeof(float) * n * ntok), *want = test_xmalloc(sizeof(float) * rows * ntok),
              *got = test_xmalloc(sizeof(float) * rows * ntok), *fused = test_xmalloc(sizeof(float) * rows * ntok);
        for (int i = 0; i < n * ntok; i++) x[i] = (float)(rng_normal() * 2.0);
        void *scratch = test_xmalloc(gl_matmul_scratch(&t, ntok));
        CHECK(gl_matmul(&t, x, want, ntok, scratch) == 0 && gl_matmul(&tc, x, got, ntok, scratch) == 0, "gl_matmul");
        CHECK(!memcmp(want, got, sizeof(float) * rows * ntok), "ntok %d: x16 outputs differ", ntok);
        CHECK(gl_matmul_each(&tc, x, got, ntok, scratch) == 0, "gl_matmul_each");
        float *each = test_xmalloc(sizeof(float) * rows * ntok);
        CHECK(gl_matmul_each(&t, x, each, ntok, scratch) == 0, "gl_matmul_each");
        CHECK(!memcmp(each, got, sizeof(float) * rows * ntok), "ntok %d: x16 outputs differ (each)", ntok);
        for (int lay = 0; lay < 2; lay++)
            check_rows(lay ? &tc : &t, x, want, ntok, fused);
        free(x), free(want), free(got), free(fused), free(each), free(scratch);
    }
    free(row_a), free(row_b), free(wf), free(w), free(copy), free(inplace);
    TEST_END();
}

/* gl_matmul_glu against gl_matmul_shared then the gate, bit for bit, SiLU
 * and GELU, both layouts, token counts across the gemm/gemv split and the
 * wide route's passes.  fused: the wide route takes both whole, so the
 * one-pass path runs, which never writes u (checked); else the fallback. */
static void test_glu(qt_type type, int rows, int n, bool fused) {
    char name[96];
    snprintf(name, sizeof name, "matmul_glu_%s_rows%d", qt_get(type)->name, rows);
    TEST_BEGIN(name);
    const qt_traits *tr = qt_get(type);
    const size_t row_bytes = qt_row_size(type, n), bytes = row_bytes * rows;
    float *wf = test_xmalloc(sizeof(float) * n * rows);
    uint8_t *wd[2][2];
    gl_tensor t[2][2]; /* [layout][gate, up] */
    for (int i = 0; i < 2; i++) {
        for (int e = 0; e < n * rows; e++) wf[e] = (float)rng_normal();
        wd[0][i] = test_xmalloc(bytes), wd[1][i] = test_xmalloc(bytes);
        tr->from_float(wf, wd[0][i], (int64_t)n * rows);
        t[0][i] = (gl_tensor){.type = type, .ne = {n, rows, 1, 1}, .row_bytes = row_bytes, .data = wd[0][i]};
        t[1][i] = t[0][i];
    }
    const int layouts = gl_x16_wanted(&t[1][0]) ? 2 : 1;
    for (int i = 0; i < 2 && layouts == 2; i++) CHECK(gl_x16_relayout(&t[1][i], wd[1][i]) == 0, "relayout");
    uint16_t *tab = test_xmalloc(sizeof(uint16_t) * GL_GELU_ENTRIES);
    gl_gelu_table(tab);
    static const int ntoks[] = {2, 5, 8, 37, 300};
    for (size_t k = 0; k < sizeof ntoks / sizeof ntoks[0]; k++) {
        const int ntok = ntoks[k];
        const size_t out = (size_t)rows * ntok;
        float *x = test_xmalloc(sizeof(float) * n * ntok), *g = test_xmalloc(sizeof(float) * out),
              *u = test_xmalloc(sizeof(float) * out), *g2 = test_xmalloc(sizeof(float) * out), *u2 = test_xmalloc(sizeof(float) * out);
        for (int e = 0; e < n * ntok; e++) x[e] = (float)(rng_normal() * 2.0);
        void *scratch = test_xmalloc(gl_matmul_scratch(&t[0][0], ntok));
        for (int lay = 0; lay < layouts; lay++)
            for (int gelu = 0; gelu < 2; gelu++) {
                const gl_tensor *const w[2] = {&t[lay][0], &t[lay][1]};
                float *const y[2] = {g, u};
                CHECK(gl_matmul_shared(2, w, x, y, ntok, scratch) == 0, "gl_matmul_shared");
                if (gelu)
                    gl_geglu(g, u, (int64_t)out, tab);
                else
                    gl_swiglu(g, u, (int64_t)out);
                for (size_t e = 0; e < out; e++) u2[e] = -0.0f;
                CHECK(gl_matmul_glu(w[0], w[1], x, g2, u2, ntok, scratch, gelu ? tab : NULL) == 0, "gl_matmul_glu");
                CHECK(!memcmp(g, g2, sizeof(float) * out), "%s ntok %d %s: outputs differ", lay ? "x16" : "rows", ntok,
                      gelu ? "gelu" : "silu");
                if (fused) {
                    bool untouched = true;
                    for (size_t e = 0; e < out; e++) untouched = untouched && same_bits(u2[e], -0.0f);
                    CHECK(untouched, "ntok %d: the one-pass path did not run (u written)", ntok);
                }
            }
        free(x), free(g), free(u), free(g2), free(u2), free(scratch);
    }
    for (int i = 0; i < 2; i++) free(wd[0][i]), free(wd[1][i]);
    free(wf), free(tab);
    TEST_END();
}

#if defined(__x86_64__)
/* An x16 kernel of vec_dot's order (Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K) against the reference
 * vec_dot, bit for bit, over random rows (quants and high bits at both
 * ends, signed scales and mins), activations at their extremes (-128 and
 * 127 included), block counts 1 to 70 and 1 to 20 columns (one column
 * takes the layout straight; more share chunks of 32 split blocks, 16
 * columns at a time, whose accumulators carry over from chunk to chunk);
 * and the layout's rows read back as they were. */
static void test_x16_dot(const char *name, qt_type type, qt_x16_dot_fn kernel) {
    char case_name[64];
    snprintf(case_name, sizeof case_name, "%s/x16_dot_%s_vs_ref", name, qt_get(type)->name);
    TEST_BEGIN(case_name);
    const qt_type yt = qt_get(type)->vec_dot_type;
    const int nbs[] = {1, 2, 7, 19, 32, 33, 70}, ncs[] = {1, 2, 3, 4, 17, 1, 20};
    for (size_t i = 0; i < sizeof nbs / sizeof nbs[0]; i++) {
        const int n = nbs[i] * (type == QT_Q2_K || type == QT_Q3_K ? QT_QK_K : 32), nc = ncs[i];
        const size_t row = qt_row_size(type, n), yrow = qt_row_size(yt, n);
        uint8_t *w = test_xmalloc(row * QT_X16_ROWS), *g = test_xmalloc(row * QT_X16_ROWS), *back = test_xmalloc(row);
        uint8_t *y = test_xmalloc(yrow * nc);
        for (size_t j = 0; j < row * QT_X16_ROWS; j++) w[j] = (uint8_t)rng_next();
        for (int r = 0; r < QT_X16_ROWS; r++) /* finite scales and mins of either sign */
            for (int b = 0; b < nbs[i]; b++) {
                if (type == QT_Q4_1) {
                    qt_block_q4_1 *x = (qt_block_q4_1 *)(w + r * row) + b;
                    x->d = qt_f32_to_f16((float)rng_normal() * 0.01f);
                    x->m = qt_f32_to_f16((float)rng_normal() * 0.1f);
                } else if (type == QT_Q5_1) {
                    qt_block_q5_1 *x = (qt_block_q5_1 *)(w + r * row) + b;
                    x->d = qt_f32_to_f16((float)rng_normal() * 0.01f);
                    x->m = qt_f32_to_f16((float)rng_normal() * 0.1f);
                    if (b == 0 && r < 2) { /* quants 0 and 31 throughout */
                        memset(x->qs, r ? 0xff : 0x00, sizeof x->qs);
                        memset(x->qh, r ? 0xff : 0x00, sizeof x->qh);
                    }
                } else if (type == QT_Q2_K) {
                    qt_block_q2_K *x = (qt_block_q2_K *)(w + r * row) + b;
                    x->d = qt_f32_to_f16((float)rng_normal() * 0.01f);
                    x->dmin = qt_f32_to_f16((float)rng_normal() * 0.01f);
                    if (b == 0 && r < 2) { /* quants 0 and 3, scales and mins 15 throughout */
                        memset(x->qs, r ? 0xff : 0x00, sizeof x->qs);
                        memset(x->scales, 0xff, sizeof x->scales);
                    }
                } else if (type == QT_Q3_K) {
                    qt_block_q3_K *x = (qt_block_q3_K *)(w + r * row) + b;
                    x->d = qt_f32_to_f16((float)rng_normal() * 0.01f);
                    if (b == 0 && r < 2) { /* values -4 with scales -32, values 3 with scales 31 */
                        memset(x->qs, r ? 0xff : 0x00, sizeof x->qs);
                        memset(x->hmask, r ? 0xff : 0x00, sizeof x->hmask);
                        memset(x->scales, r ? 0xff : 0x00, sizeof x->scales);
                    }
                } else if (type == QT_Q8_0) {
                    qt_block_q8_0 *x = (qt_block_q8_0 *)(w + r * row) + b;
                    x->d = qt_f32_to_f16((float)rng_normal() * 0.01f);
                    if (b == 0 && r < 2) memset(x->qs, r ? 0x7f : 0x80, sizeof x->qs); /* 127 and -128 throughout */
                } else {
                    qt_block_q5_0 *x = (qt_block_q5_0 *)(w + r * row) + b;
                    x->d = qt_f32_to_f16((float)rng_normal() * 0.01f);
                    if (b == 0 && r < 2) { /* quants -16 and 15 throughout */
                        memset(x->qs, r ? 0xff : 0x00, sizeof x->qs);
                        memset(x->qh, r ? 0xff : 0x00, sizeof x->qh);
                    }
                }
            }
        float *f = test_xmalloc(sizeof(float) * n);
        for (int c = 0; c < nc; c++) {
            for (int j = 0; j < n; j++) f[j] = (float)rng_normal();
            f[rng_below(n)] = -50.0f; /* that block's amax: its quant is -127 */
            qt_get(yt)->quantize_act(f, y + c * yrow, n);
            int8_t *qs = yt == QT_Q8_1   ? ((qt_block_q8_1 *)(y + c * yrow))[0].qs
                         : yt == QT_Q8_K ? ((qt_block_q8_K *)(y + c * yrow))[0].qs
                                         : ((qt_block_q8_0 *)(y + c * yrow))[0].qs;
            qs[0] = -128, qs[1] = 127; /* products a quantizer never makes still exact */
        }
        qt_x16_interleave(type, n, w, row, g);
        float out[20 * QT_X16_ROWS];
        kernel(n, out, QT_X16_ROWS, g, y, yrow, nc);
        for (int r = 0; r < QT_X16_ROWS; r++) {
            qt_x16_row(type, n, g, r, back);
            CHECK(!memcmp(back, w + r * row, row), "nb=%d: row %d reads back differently", nbs[i], r);
            for (int c = 0; c < nc; c++) {
                float want;
                qt_get(type)->vec_dot(n, &want, w + r * row, y + c * yrow);
                CHECK(same_bits(want, out[c * QT_X16_ROWS + r]), "nb=%d col %d row %d: ref %a, kernel %a", nbs[i], c,
                      r, want, out[c * QT_X16_ROWS + r]);
            }
        }
        free(w), free(g), free(back), free(y), free(f);
    }
    TEST_END();
}
#endif

int main(void) {
#if defined(__x86_64__)
    const struct { const char *name; qt_isa isa; qt_type type; qt_x16_dot_fn fn; } x16[] = {
        {"avx2", QT_ISA_AVX2, QT_Q4_1, qt_avx2_x16_dot_q4_1},
        {"avx2-vnni", QT_ISA_AVX2_VNNI, QT_Q4_1, qt_avx2_vnni_x16_dot_q4_1},
        {"avx512", QT_ISA_AVX512, QT_Q4_1, qt_avx512_x16_dot_q4_1},
        {"avx512-vnni", QT_ISA_AVX512_VNNI, QT_Q4_1, qt_avx512_vnni_x16_dot_q4_1},
        {"avx2", QT_ISA_AVX2, QT_Q5_0, qt_avx2_x16_dot_q5_0},
        {"avx2-vnni", QT_ISA_AVX2_VNNI, QT_Q5_0, qt_avx2_vnni_x16_dot_q5_0},
        {"avx512", QT_ISA_AVX512, QT_Q5_0, qt_avx512_x16_dot_q5_0},
        {"avx512-vnni", QT_ISA_AVX512_VNNI, QT_Q5_0, qt_avx512_vnni_x16_dot_q5_0},
        {"avx2", QT_ISA_AVX2, QT_Q5_1, qt_avx2_x16_dot_q5_1},
        {"avx2-vnni", QT_ISA_AVX2_VNNI, QT_Q5_1, qt_avx2_vnni_x16_dot_q5_1},
        {"avx512", QT_ISA_AVX512, QT_Q5_1, qt_avx512_x16_dot_q5_1},
        {"avx512-vnni", QT_ISA_AVX512_VNNI, QT_Q5_1, qt_avx512_vnni_x16_dot_q5_1},
        {"avx512-vnni", QT_ISA_AVX512_VNNI, QT_Q8_0, qt_avx512_vnni_x16_dot_q8_0},
        {"avx512-vnni", QT_ISA_AVX512_VNNI, QT_Q2_K, qt_avx512_vnni_x16_dot_q2_K},
        {"avx512-vnni", QT_ISA_AVX512_VNNI, QT_Q3_K, qt_avx512_vnni_x16_dot_q3_K}};
    for (size_t j = 0; j < sizeof x16 / sizeof x16[0]; j++) {
        if (qt_isa_supported(qt_cpu(), x16[j].isa))
            test_x16_dot(x16[j].name, x16[j].type, x16[j].fn);
        else
            printf("SKIP %s/x16_dot_%s_vs_ref: CPU lacks it\n", x16[j].name, qt_get(x16[j].type)->name);
    }
#endif
    const qt_type repacked[] = {QT_Q4_0, QT_Q4_K, QT_Q2_K, QT_IQ4_NL};
    for (size_t i = 0; i < sizeof repacked / sizeof repacked[0]; i++) {
        test_kernels_vs_ref("scalar", qt_repack_ref(), repacked[i]);
#if defined(__x86_64__)
        if (qt_isa_supported(qt_cpu(), QT_ISA_AVX2))
            test_kernels_vs_ref("avx2", &qt_repack_avx2, repacked[i]);
        else
            printf("SKIP avx2/repack_%s: CPU lacks AVX2/FMA/F16C\n", qt_get(repacked[i])->name);
        const struct { const char *name; qt_isa isa; const qt_rp_wide *const *table; } wide[] = {
            {"avx2", QT_ISA_AVX2, qt_rp_wide_avx2}, {"avx512", QT_ISA_AVX512, qt_rp_wide_avx512},
            {"avx512-vnni", QT_ISA_AVX512_VNNI, qt_rp_wide_avx512_vnni}};
        for (size_t j = 0; j < sizeof wide / sizeof wide[0]; j++) {
            if (!wide[j].table[repacked[i]]) continue;
            if (qt_isa_supported(qt_cpu(), wide[j].isa))
                test_wide_vs_ref(wide[j].name, wide[j].table, repacked[i]);
            else
                printf("SKIP %s/wide_%s: CPU lacks it\n", wide[j].name, qt_get(repacked[i])->name);
        }
#endif
    }
    const qt_type kquants[] = {QT_Q2_K, QT_Q3_K, QT_Q4_K, QT_Q5_K, QT_Q6_K};
    for (size_t i = 0; i < sizeof kquants / sizeof kquants[0]; i++) {
#if defined(__x86_64__)
        if (qt_isa_supported(qt_cpu(), QT_ISA_AVX2))
            test_tiled_vs_ref("avx2", qt_avx2_tiled_row, qt_avx2_tiled_rows8, qt_avx2_tiled_rows16, kquants[i]);
#endif
    }
    const char *fixtures[] = {"repack_q4_0", "repack_q4_k", "repack_q2_k", "repack_iq4_nl", "tinyblas_iq4_nl",
                              "tiled_q2_k",
                              "tiled_q3_k",  "tiled_q4_k",  "tiled_q5_k",  "tiled_q6_k"};
    for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) test_fixture(fixtures[i]);

    /* the decisions of llama.cpp's x86 AVX-512 build, spelled out */
    TEST_BEGIN("routing_decisions");
    CHECK(qt_repack_applies(QT_Q4_0, 8) && qt_repack_applies(QT_IQ4_NL, 8), "repacked types with rows %% 8 == 0");
    CHECK(qt_repack_applies(QT_Q4_K, 16) == !qt_amx_active() && qt_repack_applies(QT_Q2_K, 576) == !qt_amx_active(),
          "Q4_K and Q2_K repacked with rows %% 8 == 0 unless AMX runs");
    CHECK(!qt_repack_applies(QT_Q4_K, 12) && !qt_repack_applies(QT_Q6_K, 16) && !qt_repack_applies(QT_Q8_0, 16) &&
          !qt_repack_applies(QT_Q5_0, 16) && !qt_repack_applies(QT_Q4_K, 0), "not repacked");
    CHECK(qt_repack_applies(QT_IQ4_NL, 8) && !qt_tinyblas_dot(QT_IQ4_NL, 8, 4) && qt_tinyblas_dot(QT_IQ4_NL, 12, 2) &&
          !qt_tinyblas_dot(QT_IQ4_NL, 12, 1) && !qt_tinyblas_dot(QT_Q4_0, 12, 4), "tinyBLAS: IQ4_NL, 2+ columns");
    CHECK(qt_tiled_applies(QT_Q6_K, 16, 8) && !qt_tiled_applies(QT_Q6_K, 16, 7) && qt_tiled_applies(QT_Q4_K, 12, 8) &&
          qt_tiled_applies(QT_Q4_K, 16, 64) == qt_amx_active() && qt_tiled_applies(QT_Q3_K, 8, 9) && qt_tiled_applies(QT_Q5_K, 8, 9) &&
          !qt_tiled_applies(QT_Q8_0, 12, 64) && !qt_tiled_applies(QT_Q4_1, 12, 64), "tiled: K-quants, 8+ columns");
    TEST_END();
    test_x16_matmul(QT_Q4_0, 64, 2048, 5);
    test_x16_matmul(QT_Q4_0, 40, 7 * 32, 9); /* an odd block count, a last 8-row group */
    test_x16_matmul(QT_IQ4_NL, 24, 3 * 32, 5);
    test_x16_matmul(QT_Q4_K, 40, 3 * 256, 20); /* past 16 tokens: the tiled batches too */
    test_x16_matmul(QT_Q2_K, 24, 2 * 256, 5);
    test_x16_matmul(QT_Q4_K, 56, 2 * 256, 20); /* three groups: two in one call (run2_x16), then one */
    test_x16_matmul(QT_Q2_K, 48, 2 * 256, 20);
    test_x16_matmul(QT_Q2_K, 40, 3 * 256, 20); /* with AMX: vec_dot's order, then the tiled batches */
    test_x16_matmul(QT_Q3_K, 40, 3 * 256, 28); /* vec_dot's order, the VNNI tiles from 8, AMX's from 24 */
    test_x16_matmul(QT_Q4_1, 40, 7 * 32, 9); /* an odd block count, rows past the last group */
    test_x16_matmul(QT_Q4_1, 64, 576, 20);
    test_x16_matmul(QT_Q4_1, 56, 3 * 32, 12); /* with tiles, a run of rows in groups and past them */
    test_x16_matmul(QT_Q5_0, 40, 7 * 32, 9);
    test_x16_matmul(QT_Q5_0, 64, 576, 20);
    test_x16_matmul(QT_Q5_0, 56, 3 * 32, 12);
    test_x16_matmul(QT_Q8_0, 40, 7 * 32, 9); /* an odd block count: a last block without its pair */
    test_x16_matmul(QT_Q8_0, 64, 576, 20);
    test_x16_matmul(QT_Q8_0, 56, 3 * 32, 12);
    test_x16_matmul(QT_Q5_1, 40, 7 * 32, 9);
    test_x16_matmul(QT_Q5_1, 56, 3 * 32, 20);
    {
        /* the one-pass gate and up where a wide set runs them whole */
        const bool q4k = qt_repack_wide(QT_Q4_K) && !qt_tiles_for(QT_Q4_K, 64, 300);
        test_glu(QT_Q4_K, 64, 2 * QT_QK_K, q4k);
        test_glu(QT_Q2_K, 48, QT_QK_K, qt_repack_wide(QT_Q2_K) && !qt_tiles_for(QT_Q2_K, 48, 300));
        test_glu(QT_Q4_0, 32, 8 * QT_QK4_0, qt_repack_wide(QT_Q4_0) != NULL);
        test_glu(QT_Q4_K, 40, QT_QK_K, false); /* 40 rows: not whole groups of 16 */
        test_glu(QT_Q8_0, 32, 2 * QT_QK8_0, false); /* the tiles' route */
    }
    test_rows_wide(QT_Q4_K, 48, 2 * QT_QK_K, 5);
    test_rows_wide(QT_Q2_K, 32, 3 * QT_QK_K, 5);
    test_matmul_routing(QT_Q4_0, 24, 9);
    test_matmul_routing(QT_Q4_0, 20, 9);
    test_matmul_routing(QT_Q4_0, 40, 70); /* past a pass of the wide kernels */
    test_matmul_routing(QT_Q4_K, 16, 9);
    test_matmul_routing(QT_Q4_K, 12, 10);
    test_matmul_routing(QT_Q4_K, 24, 70);
    test_matmul_routing(QT_Q2_K, 40, 70);
    test_matmul_routing(QT_Q2_K, 16, 9);
    test_matmul_routing(QT_Q6_K, 16, 10);
    test_matmul_routing(QT_Q5_K, 5, 10);
    test_matmul_routing(QT_Q3_K, 8, 10);
    test_matmul_routing(QT_Q4_1, 24, 9);
    test_matmul_routing(QT_Q4_1, 20, 70); /* the Q8_0 tile kernel from decoded blocks, m·s apart */
    test_matmul_routing(QT_Q5_1, 16, 70);
    test_matmul_routing(QT_Q8_0, 16, 9);
    test_matmul_routing(QT_Q5_0, 24, 70); /* the Q8_0 tile kernel from decoded blocks */
    test_matmul_routing(QT_IQ4_NL, 16, 9);
    test_matmul_routing(QT_IQ4_NL, 12, 9);
    test_matmul_routing(QT_IQ4_NL, 24, 70);
    /* one token over many rows: the decode split (runs of groups or tiles
     * taken as they come), clipped tiles and a last 8-row group */
    test_matmul_routing(QT_Q4_0, 264, 2);
    test_matmul_routing(QT_Q4_K, 264, 2);
    test_matmul_routing(QT_Q2_K, 520, 1);
    test_matmul_routing(QT_Q6_K, 203, 2);
    test_matmul_routing(QT_Q8_0, 203, 2);
    test_matmul_routing(QT_Q5_K, 203, 2);
    TEST_EXIT();
}
