#include "ggml-lite/matmul.h"

#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ggml-lite/ops.h"
#include "quant/cpu.h"
#include "quant/fgemm.h"
#include "quant/repack.h"
#include "quant/tiled.h"
#include "quant/tiles.h"

/* Where the wide repack kernels' per-column data starts in the scratch:
 * after the quantized activations, 64-byte aligned. */
static uint8_t *wide_aux(void *scratch, size_t act_bytes)
{
    return (uint8_t *)(((uintptr_t)scratch + act_bytes + 63) & ~(uintptr_t)63);
}

/* Bytes the float kernel's activation rows are padded by (matmul). */
enum { FGEMM_ROW_PAD = 64 };

size_t gl_matmul_scratch(const gl_tensor *w, int n_tokens)
{
    const qt_traits *tr = qt_get(w->type);
    if (!tr) return 0;
    size_t bytes = qt_row_size(tr->vec_dot_type, w->ne[0]) * (size_t)n_tokens;
    const qt_rp_wide *wide = qt_repack_wide(w->type);
    if (wide && qt_repack_applies(w->type, w->ne[1]))
        bytes += 64 + wide->aux_bytes((int)w->ne[0], n_tokens);
    const qt_tiles *tiles = qt_tiles_for(w->type, w->ne[1], n_tokens);
    if (tiles) bytes += 64 + tiles->pack_size((int)w->ne[0], n_tokens);
    if (qt_fgemm_applies(w->type, w->ne[1], w->ne[0], n_tokens)) bytes += (size_t)FGEMM_ROW_PAD * (size_t)n_tokens;
    return bytes;
}

/* Whether a matmul's outputs go out in streaming stores (quant/repack.h,
 * qt_rp_stream_out): when there are at least as many as the cores' L2s
 * hold, so that the next op reads them from memory anyway. */
static bool stream_out(int64_t n_out, int n_tokens)
{
    return (size_t)n_out * (size_t)n_tokens * sizeof(float) >=
           (size_t)qt_cpu()->l2_bytes * (size_t)omp_get_max_threads();
}

/* How activations of type `act` are made from floats (NULL: act NULL or
 * no such quantizer): the batch quantizer where the type has one. */
static qt_from_float_fn act_quantizer(const qt_traits *act)
{
    return act ? (act->quantize_act ? act->quantize_act : act->from_float) : NULL;
}

/* A matrix in the x16 layout takes a set's tiles only where the set reads
 * that layout (kernel_x16: Q4_1's, whose layout keeps vec_dot's order);
 * elsewhere its own kernels (the tile kernels read rows). */
static const qt_tiles *tiles_for(const gl_tensor *w, int n_tokens)
{
    const qt_tiles *tiles = qt_tiles_for(w->type, w->ne[1], n_tokens);
    if (w->layout == GL_LAYOUT_X16 && tiles && !(tiles->kernel_x16 && qt_x16_dot(w->type))) return NULL;
    return tiles;
}

/* Rows [r0, r0 + nr) of w through the set's kernel for w's layout: in an
 * x16 matrix, the rows in whole groups through kernel_x16 (r0 is then a
 * group's first row: runs start at multiples of 16), those past the last
 * group as rows. */
static void tiles_run(const qt_tiles *tiles, const gl_tensor *w, int64_t r0, int64_t nr, const void *pass, int nc,
                      float *y, bool stream)
{
    const int n_in = (int)w->ne[0];
    const int64_t n_out = w->ne[1];
    const int64_t groups_end = w->layout == GL_LAYOUT_X16 ? n_out - n_out % QT_X16_ROWS : 0;
    const int64_t grouped = groups_end <= r0 ? 0 : groups_end - r0 < nr ? groups_end - r0 : nr;
    if (grouped)
        tiles->kernel_x16(w->type, n_in, gl_row(w, r0), w->row_bytes, (int)grouped, pass, nc, y + r0, (size_t)n_out,
                          stream);
    if (grouped < nr)
        tiles->kernel(w->type, n_in, gl_row(w, r0 + grouped), w->row_bytes, (int)(nr - grouped), pass, nc,
                      y + r0 + grouped, (size_t)n_out, stream);
}

/* Tokens per pass of the wide kernels: the pass's activations stay in L2
 * while every row group streams past them, and each thread's share of a
 * weight matrix is read once per pass.  Twice WIDE_TOKENS where that many
 * rows take at most 7/8 of the core's L2 (512 KB where the C library
 * does not say): the weights then stream half as often (tl-q4_k_m pp512
 * 1.03-1.07x with 1 thread on Zen 5, whose 1 MB L2 holds 128 rows of its
 * 2048-wide inputs). */
#define WIDE_TOKENS 64

static int wide_pass(size_t xq_row)
{
    const long l2 = qt_cpu()->l2_bytes;
    return xq_row * 2 * WIDE_TOKENS <= (size_t)l2 / 8 * 7 ? 2 * WIDE_TOKENS : WIDE_TOKENS;
}

/* One group of 16 rows at wg through the kernel for w's layout. */
static void wide_run(const qt_rp_wide *wide, const gl_tensor *w, int n_in, int ncols, bool gemm, float *s,
                     size_t ldo, const void *wg, const void *y, size_t y_stride, const void *aux, bool stream)
{
    if (w->layout == GL_LAYOUT_X16)
        wide->run_x16(n_in, ncols, gemm, s, ldo, wg, y, y_stride, aux, stream);
    else
        wide->run(n_in, ncols, gemm, s, ldo, wg, w->row_bytes, y, y_stride, aux, stream);
}

/* Groups g and g + 1 (x16 layout, a set with run2_x16) in one call,
 * sharing each activation load; bits as two wide_run calls. */
static void wide_run2(const qt_rp_wide *wide, const gl_tensor *w, int n_in, int ncols, bool gemm, float *s,
                      size_t ldo, const void *wg, const void *y, size_t y_stride, const void *aux, bool stream)
{
    float *const s2[2] = {s, s + QT_RP_WIDE_ROWS};
    const void *const w2[2] = {wg, (const uint8_t *)wg + QT_RP_WIDE_ROWS * w->row_bytes};
    wide->run2_x16(n_in, ncols, gemm, s2, ldo, w2, y, y_stride, aux, stream);
}

/* The tokens of the calls matmul_wide makes: passes of `pass` tokens from
 * t0, each split at ng (the pass's first ng tokens in gemm order) unless
 * the set has one order.  Token t's call starts at *start with *ncols
 * columns; its aux starts aux_bytes(start) in (repack.h: calls start at
 * multiples of 8 columns, or the set keeps each column's own). */
static int wide_call(const qt_rp_wide *wide, int pass, int n_tokens, int n_gemm, int t, int *start)
{
    const int t0 = t - t % pass, nt = n_tokens - t0 < pass ? n_tokens - t0 : pass;
    const int ng = wide->one_order ? nt : n_gemm - t0 < 0 ? 0 : n_gemm - t0 > nt ? nt : n_gemm - t0;
    *start = t < t0 + ng ? t0 : t0 + ng;
    return t < t0 + ng ? ng : nt - ng;
}

/* Every token's side data (prep) in its call's aux, the tokens shared
 * out among the threads of the caller's parallel region. */
static void wide_prep(const qt_rp_wide *wide, int n_in, int pass, int n_tokens, int n_gemm, const uint8_t *xq,
                      size_t xq_row, uint8_t *aux)
{
    #pragma omp for schedule(static)
    for (int t = 0; t < n_tokens; t++) {
        int start;
        const int ncols = wide_call(wide, pass, n_tokens, n_gemm, t, &start);
        wide->prep(n_in, t - start, ncols, aux + wide->aux_bytes(n_in, start), xq + (size_t)t * xq_row);
    }
}

/* The one or two calls (ncols[1] = 0: one) of the pass from token t0. */
static void wide_pass_calls(const qt_rp_wide *wide, int pass, int n_tokens, int n_gemm, int t0, int start[2],
                            int ncols[2])
{
    ncols[0] = wide_call(wide, pass, n_tokens, n_gemm, t0, &start[0]);
    ncols[1] = start[0] + ncols[0] < n_tokens && start[0] + ncols[0] < t0 + pass
                   ? wide_call(wide, pass, n_tokens, n_gemm, start[0] + ncols[0], &start[1])
                   : 0;
}

/* The repacked order with the wide kernels on rows [0, n_wide) (a multiple
 * of QT_RP_WIDE_ROWS): tokens in passes, row groups split across threads
 * within a pass; the first n_gemm tokens in gemm order, the rest gemv. */
static void matmul_wide(const qt_rp_wide *wide, const gl_tensor *w, const uint8_t *xq, size_t xq_row,
                        uint8_t *aux, float *y, int n_tokens, int n_gemm, int64_t n_wide)
{
    const int n_in = (int)w->ne[0];
    const int64_t n_out = w->ne[1];
    const int pass = wide_pass(xq_row);
    const bool stream = stream_out(n_out, n_tokens);
    #pragma omp parallel
    {
        wide_prep(wide, n_in, pass, n_tokens, n_gemm, xq, xq_row, aux);
        for (int t0 = 0; t0 < n_tokens; t0 += pass) {
            int start[2], ncols[2];
            wide_pass_calls(wide, pass, n_tokens, n_gemm, t0, start, ncols);
            /* Groups as threads come for them, two at a time: a static
             * split left the thread that another process slowed holding
             * the rest at the end of the matmul (libgomp's spin was 4.6%
             * of a tl-q4_k_m pp512 profile with 2 threads, 1.2% this
             * way; tl-q4_0 3-4% and 0.6%).  Which thread runs a group
             * does not change its bits. */
            const int64_t groups = n_wide / QT_RP_WIDE_ROWS;
            #pragma omp for schedule(dynamic, 1) nowait
            for (int64_t g = 0; g < groups; g += 2) {
                const void *wg = gl_row(w, g * QT_RP_WIDE_ROWS);
                const bool two = g + 1 < groups && w->layout == GL_LAYOUT_X16 && wide->run2_x16;
                for (int k = 0; k < 2; k++) {
                    if (!ncols[k]) continue;
                    float *s = &y[(int64_t)start[k] * n_out + g * QT_RP_WIDE_ROWS];
                    const uint8_t *yk = xq + (size_t)start[k] * xq_row, *ak = aux + wide->aux_bytes(n_in, start[k]);
                    if (two) {
                        wide_run2(wide, w, n_in, ncols[k], start[k] < n_gemm, s, (size_t)n_out, wg, yk, xq_row, ak,
                                  stream);
                        continue;
                    }
                    for (int64_t i = g; i < g + 2 && i < groups; i++)
                        wide_run(wide, w, n_in, ncols[k], start[k] < n_gemm, s + (i - g) * QT_RP_WIDE_ROWS,
                                 (size_t)n_out, gl_row(w, i * QT_RP_WIDE_ROWS), yk, xq_row, ak, stream);
                }
            }
        }
    }
}

/* matmul_wide for a gated feed-forward's gate and up (same type, shape
 * and layout, rows a multiple of 16) and its gate: each row group's two
 * results go to the thread's own buffers, meet there, and only act(gate)
 * * up goes out to g, where gate and up were each written whole and read
 * back (46 MB a layer for a TinyLlama pp512).  The kernels' calls and the
 * gate's arithmetic are matmul_wide's and gl_swiglu's or gl_geglu's on
 * the same values, so the bits are theirs. */
static void matmul_wide_glu(const qt_rp_wide *wide, const gl_tensor *wgate, const gl_tensor *wup, const uint8_t *xq,
                            size_t xq_row, uint8_t *aux, float *g, int n_tokens, int n_gemm, const uint16_t *gelu_tab)
{
    const int n_in = (int)wgate->ne[0];
    const int64_t n_out = wgate->ne[1];
    const int pass = wide_pass(xq_row);
    const bool pair = wgate->layout == GL_LAYOUT_X16 && wide->run2_x16;
    #pragma omp parallel
    {
        wide_prep(wide, n_in, pass, n_tokens, n_gemm, xq, xq_row, aux);
        /* a call's 16 rows per column, gate's and up's: [column][row]
         * (streaming g's lines out, as the kernels do, measured level) */
        _Static_assert(2 * WIDE_TOKENS * QT_RP_WIDE_ROWS <= GL_OPS_SERIAL, "one call's gate runs serially");
        _Alignas(64) float tg[2 * WIDE_TOKENS][QT_RP_WIDE_ROWS], tu[2 * WIDE_TOKENS][QT_RP_WIDE_ROWS];
        for (int t0 = 0; t0 < n_tokens; t0 += pass) {
            int start[2], ncols[2];
            wide_pass_calls(wide, pass, n_tokens, n_gemm, t0, start, ncols);
            #pragma omp for schedule(dynamic, 2) nowait
            for (int64_t grp = 0; grp < n_out / QT_RP_WIDE_ROWS; grp++)
                for (int k = 0; k < 2; k++) {
                    if (!ncols[k]) continue;
                    const uint8_t *y = xq + (size_t)start[k] * xq_row, *ax = aux + wide->aux_bytes(n_in, start[k]);
                    const void *wg = gl_row(wgate, grp * QT_RP_WIDE_ROWS), *wu = gl_row(wup, grp * QT_RP_WIDE_ROWS);
                    if (pair) { /* gate's and up's groups side by side (run2_x16) */
                        wide->run2_x16(n_in, ncols[k], start[k] < n_gemm, (float *const[2]){tg[0], tu[0]},
                                       QT_RP_WIDE_ROWS, (const void *const[2]){wg, wu}, y, xq_row, ax, false);
                    } else {
                        wide_run(wide, wgate, n_in, ncols[k], start[k] < n_gemm, tg[0], QT_RP_WIDE_ROWS, wg, y, xq_row,
                                 ax, false);
                        wide_run(wide, wup, n_in, ncols[k], start[k] < n_gemm, tu[0], QT_RP_WIDE_ROWS, wu, y, xq_row,
                                 ax, false);
                    }
                    /* the call's columns side by side: one gate call
                     * (below GL_OPS_SERIAL elements: serial) */
                    if (gelu_tab)
                        gl_geglu(tg[0], tu[0], (int64_t)ncols[k] * QT_RP_WIDE_ROWS, gelu_tab);
                    else
                        gl_swiglu(tg[0], tu[0], (int64_t)ncols[k] * QT_RP_WIDE_ROWS);
                    for (int c = 0; c < ncols[k]; c++)
                        memcpy(&g[(int64_t)(start[k] + c) * n_out + grp * QT_RP_WIDE_ROWS], tg[c], sizeof tg[c]);
                }
        }
    }
}

/* One token (decode), rows [0, n_wide) in the wide kernels' gemv: the
 * column's prep is a few hundred bytes, done before the team starts (a
 * barrier after it would make every thread wait for the last to wake);
 * then threads take runs of groups as they come, large runs first
 * (guided), so a thread that wakes late under a passive wait policy, or
 * shares its core with another process, takes fewer groups instead of
 * holding the others at the end.  Each output is one group's kernel call
 * whoever makes it, so the split does not change the bits. */
static void matmul_wide_one(const qt_rp_wide *wide, const gl_tensor *w, const uint8_t *xq, uint8_t *aux, float *y,
                            int64_t n_wide)
{
    const int n_in = (int)w->ne[0];
    wide->prep(n_in, 0, 1, aux, xq);
    #pragma omp parallel for schedule(guided)
    for (int64_t g = 0; g < n_wide / QT_RP_WIDE_ROWS; g++)
        wide_run(wide, w, n_in, 1, false, &y[g * QT_RP_WIDE_ROWS], (size_t)w->ne[1], gl_row(w, g * QT_RP_WIDE_ROWS),
                 xq, 0, aux, false);
}

/* Batches with tile kernels (quant/tiles.h): the activations are packed
 * once (tiles shared out among threads), then passes of TB_PASS columns
 * (or the set's pass_cols),
 * each split into runs of TB_ROWS rows that threads take as they come:
 * another process on a core slows one thread, and a static split would
 * make the rest wait for it at every matmul.  No thread waits between
 * passes.  Several weights sharing the input (n_w > 1, same activation
 * type, tile set and ne[0]) pool their runs, so one packing serves them
 * all. */
#define TB_PASS (8 * QT_TILE_COLS)
#define TB_ROWS 32
_Static_assert(TB_ROWS % QT_X16_ROWS == 0, "tile runs start at an x16 group's first row");
/* x: the float activations where the set packs from them (pack_f32; xq
 * is then the scratch, unused), else NULL and xq the quantized rows. */
static void matmul_tiles_x(const qt_tiles *tiles, int n_w, const gl_tensor *const w[], const float *x, const void *xq,
                           size_t xq_row, float *const y[], int n_tokens)
{
    const int64_t n_in = w[0]->ne[0];
    const int pass_cols = tiles->pass_cols ? tiles->pass_cols : TB_PASS;
    int64_t runs = 0;
    for (int i = 0; i < n_w; i++) runs += (w[i]->ne[1] + TB_ROWS - 1) / TB_ROWS;
    uint8_t *packed = (uint8_t *)xq + (x ? 0 : xq_row * (size_t)n_tokens);
    packed += (64 - (uintptr_t)packed % 64) % 64;
    const int n_tiles = (n_tokens + QT_TILE_COLS - 1) / QT_TILE_COLS;
    /* Runs per take: each take is an atomic add on a line the threads
     * share (one run per take: 0.9% of a pp512 Q8_0 pass's samples in
     * libgomp's fetch-add on a 2-core VM; four: 0.2%); up to 4 while
     * every thread still gets 8 takes a pass, so the threads end within
     * a few runs of each other. */
    const int64_t grab_max = runs / (8 * (int64_t)omp_get_max_threads());
    const int grab = grab_max < 1 ? 1 : grab_max > 4 ? 4 : (int)grab_max;
    #pragma omp parallel
    {
        #pragma omp for schedule(static)
        for (int t = 0; t < n_tiles; t++)
            if (x)
                tiles->pack_f32((int)n_in, x, n_tokens, t, packed);
            else
                tiles->pack((int)n_in, xq, xq_row, n_tokens, t, packed);
        for (int c0 = 0; c0 < n_tokens; c0 += pass_cols) {
            const int nc = n_tokens - c0 < pass_cols ? n_tokens - c0 : pass_cols;
            const uint8_t *pass = packed + tiles->pack_size((int)n_in, c0);
            #pragma omp for schedule(dynamic, grab) nowait
            for (int64_t run = 0; run < runs; run++) {
                int i = 0;
                int64_t r0 = run * TB_ROWS;
                while (r0 >= (w[i]->ne[1] + TB_ROWS - 1) / TB_ROWS * TB_ROWS)
                    r0 -= (w[i]->ne[1] + TB_ROWS - 1) / TB_ROWS * TB_ROWS, i++;
                const int64_t n_out = w[i]->ne[1], nr = n_out - r0 < TB_ROWS ? n_out - r0 : TB_ROWS;
                tiles_run(tiles, w[i], r0, nr, pass, nc, y[i] + (size_t)c0 * n_out, stream_out(n_out, n_tokens));
            }
        }
    }
}

static void matmul_tiles(const qt_tiles *tiles, int n_w, const gl_tensor *const w[], const void *xq, size_t xq_row,
                         float *const y[], int n_tokens)
{
    matmul_tiles_x(tiles, n_w, w, NULL, xq, xq_row, y, n_tokens);
}

/* Rows per unit of work in the vec_dot paths: few enough to keep a static
 * split balanced, enough for the tile kernels' row blocks. */
enum { TILE_ROWS = 32, BIG_ROWS = 512 };

static int64_t row_tiles(const gl_tensor *w) { return (w->ne[1] + TILE_ROWS - 1) / TILE_ROWS; }

/* Rows per call of vec_dot_tile for a batch: a call prepares its columns
 * once per chunk of rows (x86_tile.inc, x86_avx2_tile_q8.c), so a matrix
 * tall enough for 16 calls per thread goes in calls of BIG_ROWS rows (at
 * 8 columns the preparation is about a tenth of a 32-row call's work),
 * and short rows, whose chunks the AVX2 Q8_0 tile makes 2 or 4 times
 * TILE_ROWS tall, in calls that hold a chunk while 8 calls per thread
 * remain (Gemma 3's 640-wide rows: 128-row chunks and calls took the
 * tile 0.93x the time of 32-row ones). */
static int64_t tile_call_rows(const gl_tensor *w, int n_tokens)
{
    const int64_t threads = omp_get_max_threads();
    if (w->ne[1] >= (int64_t)BIG_ROWS * 16 * threads) return BIG_ROWS;
    int64_t m = n_tokens <= 8 ? 1 : w->ne[0] < 1024 ? 4 : w->ne[0] < 2048 ? 2 : 1;
    while (m > 1 && w->ne[1] < TILE_ROWS * m * 8 * threads) m /= 2;
    return TILE_ROWS * m;
}

/* Rows per call of the float kernel (a multiple of 4): a call reads its
 * rows once per pass of columns (quant/x86_avx2_fgemm.c), from L2 while
 * they fit, and each thread should get 8 calls or more to take as they
 * come. */
enum { FGEMM_MAX_ROWS = 32 };

static int64_t fgemm_call_rows(const gl_tensor *w)
{
    int64_t rows = FGEMM_MAX_ROWS;
    while (rows > 4 && w->ne[1] < rows * 8 * omp_get_max_threads()) rows /= 2;
    return rows;
}

/* Weights that llama.cpp repacks go through gl_matmul_rows in 16-row
 * groups of the wide kernels, every token in the gemv order (which is
 * gl_matmul's order only where it takes no token in fours: gl_matmul_plain
 * checks).  Each thread makes the kernels' per-column data for itself, on
 * its stack: a few hundred bytes per token, where sharing it would cost a
 * barrier. */
enum { WIDE_AUX_MAX = 8192 };

static const qt_rp_wide *rows_wide(const gl_tensor *w, int n_tokens)
{
    const qt_rp_wide *wide = qt_repack_wide(w->type);
    if (!wide || !qt_repack_applies(w->type, w->ne[1]) || w->ne[1] % QT_RP_WIDE_ROWS ||
        wide->aux_bytes((int)w->ne[0], n_tokens) > WIDE_AUX_MAX)
        return NULL;
    return wide;
}

/* The per-column data of n_tokens rows of xq for w, or NULL where w is
 * not a wide-kernel weight. */
static const uint8_t *rows_aux(const gl_tensor *w, const void *xq, size_t xq_row, int n_tokens,
                               uint8_t buf[WIDE_AUX_MAX])
{
    const qt_rp_wide *wide = rows_wide(w, n_tokens);
    if (!wide) return NULL;
    for (int t = 0; t < n_tokens; t++) wide->prep((int)w->ne[0], t, n_tokens, buf, (const uint8_t *)xq + t * xq_row);
    return buf;
}

/* Rows [r, r + nr) of w times every token, each output in vec_dot's
 * order (vec_dot_tile gives the same bits as vec_dot), or with aux (from
 * rows_aux) in the repacked gemv order, r and nr multiples of 16. */
static void rows_dot(const qt_traits *tr, const gl_tensor *w, const void *xq, size_t xq_row, const uint8_t *aux,
                     float *y, int n_tokens, int64_t r, int nr)
{
    const int64_t n_out = w->ne[1];
    if (aux) {
        const qt_rp_wide *wide = qt_repack_wide(w->type);
        for (int64_t g = r; g < r + nr; g += QT_RP_WIDE_ROWS)
            wide_run(wide, w, (int)w->ne[0], n_tokens, false, &y[g], (size_t)n_out, gl_row(w, g), xq, xq_row, aux,
                     false);
        return;
    }
    const qt_x16_dot_fn dot16 = w->layout == GL_LAYOUT_X16 ? qt_x16_dot(w->type) : NULL;
    if (dot16) { /* whole groups (r is a group's first row), then rows */
        const int64_t grouped = n_out - n_out % QT_X16_ROWS;
        for (; nr > 0 && r < grouped; r += QT_X16_ROWS, nr -= QT_X16_ROWS)
            dot16((int)w->ne[0], &y[r], (size_t)n_out, gl_row(w, r), xq, xq_row, n_tokens);
        if (nr <= 0) return;
    }
    if (tr->vec_dot_tile && !(n_tokens == 1 && tr->one_row_min_bytes && w->row_bytes >= tr->one_row_min_bytes &&
                              gl_tensor_huge(w))) {
        tr->vec_dot_tile((int)w->ne[0], &y[r], (size_t)n_out, gl_row(w, r), w->row_bytes, nr, xq, xq_row,
                         n_tokens);
        return;
    }
    for (int i = 0; i < nr; i++)
        for (int t = 0; t < n_tokens; t++)
            tr->vec_dot((int)w->ne[0], &y[(int64_t)t * n_out + r + i], gl_row(w, r + i),
                        (const uint8_t *)xq + (size_t)t * xq_row);
}

/* Rows [g*TILE_ROWS, +TILE_ROWS) of w times every token. */
static void rows_vec_dot(const qt_traits *tr, const gl_tensor *w, const void *xq, size_t xq_row, float *y,
                         int n_tokens, int64_t g)
{
    const int64_t r = g * TILE_ROWS;
    rows_dot(tr, w, xq, xq_row, NULL, y, n_tokens, r, (int)(w->ne[1] - r < TILE_ROWS ? w->ne[1] - r : TILE_ROWS));
}

/* Rows per call of a thread's run of rows: a call prepares its columns
 * once (x86_tile.inc), so with one group of up to 8 columns, where each
 * weight row is read once whatever the call's length, long calls; more
 * columns pass over a call's rows once per group, which then stay in L1
 * at TILE_ROWS. */
static int64_t call_rows(int n_tokens) { return n_tokens <= 8 ? 32 * TILE_ROWS : TILE_ROWS; }

void gl_matmul_rows_range(const gl_tensor *w, float *y, const void *xq, size_t xq_row, int n_tokens, int64_t r0,
                          int64_t n)
{
    const qt_traits *tr = qt_get(w->type);
    const int64_t step = call_rows(n_tokens);
    uint8_t buf[WIDE_AUX_MAX] __attribute__((aligned(64)));
    const uint8_t *aux = rows_aux(w, xq, xq_row, n_tokens, buf);
    for (int64_t r = r0; r < r0 + n; r += step)
        rows_dot(tr, w, xq, xq_row, aux, y, n_tokens, r, (int)(r0 + n - r < step ? r0 + n - r : step));
}

/* The order matmul() (not each) computes w's outputs in for n_tokens
 * tokens; the tile kernels keep the order of the path they stand for
 * (Q8_0's is vec_dot's, the K-quants' the tiled one), except a set in
 * the i16 order (quant/tiles.h). */
typedef enum { ORDER_VEC_DOT, ORDER_TILED, ORDER_TINYBLAS, ORDER_REPACKED, ORDER_I16 } mm_order;

static mm_order order_of(const gl_tensor *w, int n_tokens)
{
    const qt_tiles *tiles = tiles_for(w, n_tokens);
    if (tiles && tiles->i16_order) return ORDER_I16;
    if (qt_repack_applies(w->type, w->ne[1])) return ORDER_REPACKED;
    if (qt_tiled_applies(w->type, w->ne[1], n_tokens)) return ORDER_TILED;
    if (qt_tinyblas_dot(w->type, w->ne[1], n_tokens) || qt_fgemm_applies(w->type, w->ne[1], w->ne[0], n_tokens))
        return ORDER_TINYBLAS;
    return ORDER_VEC_DOT;
}

bool gl_matmul_plain(const gl_tensor *w, int n_tokens, bool each, gl_act *act)
{
    const qt_traits *tr = qt_get(w->type);
    if (!tr || !tr->vec_dot || tr->vec_dot_type == QT_F32) return false;
    const qt_traits *at = qt_get(tr->vec_dot_type);
    qt_from_float_fn quantize = act_quantizer(at);
    const int cols = each ? 1 : n_tokens;
    /* every other order matmul() may pick for this weight and batch; the
     * repacked one where it takes every token alone (gemv) and the wide
     * kernels can run it in gl_matmul_rows */
    const mm_order order = order_of(w, cols);
    if (!quantize || (!each && tiles_for(w, n_tokens)) ||
        !(order == ORDER_VEC_DOT || (order == ORDER_REPACKED && cols < QT_RP_COLS && rows_wide(w, n_tokens))))
        return false;
    *act = (gl_act){.type = tr->vec_dot_type, .quantize = quantize,
                    .row_bytes = qt_row_size(tr->vec_dot_type, w->ne[0]), .by_blocks = true};
    return true;
}

bool gl_matmul_same_order(const gl_tensor *w, int n_a, int n_b)
{
    const mm_order a = order_of(w, n_a);
    return a != ORDER_REPACKED && a == order_of(w, n_b);
}

/* Tiles [g, g + n) of the weights w[] (numbered across them), each
 * weight's part in calls of up to max_tiles tiles. */
static void rows_tiles(int n_w, const gl_tensor *const w[], float *const y[], const void *xq, size_t xq_row,
                       const uint8_t *const aux[], int n_tokens, int64_t g, int64_t n, int64_t max_tiles)
{
    for (const int64_t g1 = g + n; g < g1;) {
        int i = 0;
        int64_t gi = g;
        while (i < n_w - 1 && gi >= row_tiles(w[i])) gi -= row_tiles(w[i++]);
        int64_t run = row_tiles(w[i]) - gi;
        if (run > g1 - g) run = g1 - g;
        if (run > max_tiles) run = max_tiles;
        const int64_t r = gi * TILE_ROWS, end = (gi + run) * TILE_ROWS < w[i]->ne[1] ? (gi + run) * TILE_ROWS : w[i]->ne[1];
        rows_dot(qt_get(w[i]->type), w[i], xq, xq_row, aux[i], y[i], n_tokens, r, (int)(end - r));
        g += run;
    }
}

/* Batched decoding's chunks of tiles: guided, largest first (half of
 * what is left per thread, within [MIN_CHUNK, max]), taken as they
 * come.  A thread that started late (woken from sleep) or shares its core
 * takes fewer, where equal static shares made the other wait at the
 * next barrier; a chunk of at least MIN_CHUNK tiles keeps the columns'
 * preparation per call (x86_tile.inc) under a few percent. */
enum { MIN_CHUNK = 2, MAX_CHUNKS = 256 };

static int guided_chunks(int64_t total, int nth, int64_t max_tiles, int64_t start[MAX_CHUNKS + 1])
{
    int k = 0;
    for (int64_t g = 0; g < total; k++) {
        start[k] = g;
        int64_t n = (total - g + 2 * nth - 1) / (2 * nth);
        if (n < MIN_CHUNK) n = MIN_CHUNK;
        if (n > max_tiles) n = max_tiles;
        /* at the cap, the rest in one chunk */
        g = k == MAX_CHUNKS - 1 || g + n > total ? total : g + n;
    }
    start[k] = total;
    return k;
}

/* Thread th's first tile of total in contiguous shares, as a static `omp
 * for` deals them, and (n) how many. */
static int64_t static_share(int64_t total, int64_t nth, int64_t th, int64_t *n)
{
    const int64_t q = total / nth, rem = total % nth;
    *n = q + (th < rem);
    return th * q + (th < rem ? th : rem);
}

void gl_matmul_rows(int n_w, const gl_tensor *const w[], float *const y[], const void *xq, size_t xq_row,
                    int n_tokens)
{
    int64_t total = 0;
    for (int i = 0; i < n_w; i++) total += row_tiles(w[i]);
    const int64_t nth = omp_get_num_threads(), th = omp_get_thread_num();
    const int64_t max_tiles = call_rows(n_tokens) / TILE_ROWS;
    enum { MAX_W = 3 };
    if (n_w > MAX_W) { /* in pieces: each call shares out its own rows, no barrier between */
        for (int i = 0; i < n_w; i += MAX_W)
            gl_matmul_rows(n_w - i < MAX_W ? n_w - i : MAX_W, w + i, y + i, xq, xq_row, n_tokens);
        return;
    }
    uint8_t buf[MAX_W][WIDE_AUX_MAX] __attribute__((aligned(64)));
    const uint8_t *aux[MAX_W] = {NULL};
    for (int i = 0; i < n_w && i < MAX_W; i++) aux[i] = rows_aux(w[i], xq, xq_row, n_tokens, buf[i]);
    if (n_tokens <= 8 && nth > 1) {
        int64_t start[MAX_CHUNKS + 1];
        const int n_chunks = guided_chunks(total, (int)nth, max_tiles, start);
        /* each thread's first chunk is its own (gl_matmul_rows_next:
         * what it prefetched while it waited), the rest as they come */
        if (th < n_chunks)
            rows_tiles(n_w, w, y, xq, xq_row, aux, n_tokens, start[th], start[th + 1] - start[th], max_tiles);
        #pragma omp for schedule(dynamic, 1) nowait
        for (int k = (int)nth; k < n_chunks; k++)
            rows_tiles(n_w, w, y, xq, xq_row, aux, n_tokens, start[k], start[k + 1] - start[k], max_tiles);
        return;
    }
    int64_t n;
    const int64_t g0 = static_share(total, nth, th, &n);
    rows_tiles(n_w, w, y, xq, xq_row, aux, n_tokens, g0, n, max_tiles);
}

/* The activations of n_tokens rows quantized to xq_row-byte rows.  A few
 * tokens quantize in a microsecond or two, less than waking the team and
 * waiting at its barrier (far less with a passive OMP_WAIT_POLICY):
 * batched decoding keeps this serial. */
static void quantize_rows(qt_from_float_fn quantize, const float *x, void *xq, int n_tokens, int64_t n_in,
                          size_t xq_row)
{
    #pragma omp parallel for schedule(static) if ((int64_t)n_tokens * n_in >= 65536)
    for (int t = 0; t < n_tokens; t++) quantize(x + (int64_t)t * n_in, (uint8_t *)xq + (size_t)t * xq_row, n_in);
}

static int matmul_q(const gl_tensor *w, const void *xq, size_t xq_row, float *y, int n_tokens, void *scratch,
                    bool each);

/* Whether matmul() quantizes its input as it is (then matmul_q): not
 * where the float rows go to a packer (pack_f32) or the float GEMM. */
static bool takes_quantized(const gl_tensor *w, int n_tokens, bool each)
{
    const qt_traits *tr = qt_get(w->type);
    if (!tr || !tr->vec_dot) return false;
    if (w->layout == GL_LAYOUT_X16 && !qt_x16_dot(w->type) &&
        (!qt_x16_available(w->type) || !qt_repack_applies(w->type, w->ne[1])))
        return false;
    const qt_tiles *tiles = each ? NULL : tiles_for(w, n_tokens);
    if (tiles && tiles->pack_f32) return false;
    return each || !qt_fgemm_applies(w->type, w->ne[1], w->ne[0], n_tokens);
}

static int matmul(const gl_tensor *w, const float *x, float *y, int n_tokens, void *scratch, bool each)
{
    const qt_traits *tr = qt_get(w->type);
    if (!tr || !tr->vec_dot) return -1;
    /* interleaved weights are only ever made for the wide kernels and
     * qt_x16_dot */
    if (w->layout == GL_LAYOUT_X16 && !qt_x16_dot(w->type) &&
        (!qt_x16_available(w->type) || !qt_repack_applies(w->type, w->ne[1])))
        return -1;
    const int64_t n_in = w->ne[0], n_out = w->ne[1];
    const qt_traits *act = qt_get(tr->vec_dot_type);
    const qt_tiles *tiles = each ? NULL : tiles_for(w, n_tokens);
    if (tiles && tiles->pack_f32) { /* quantized as it is packed */
        matmul_tiles_x(tiles, 1, &w, x, scratch, 0, &y, n_tokens);
        return 0;
    }
    /* Float weights with 2 or more tokens: tinyBLAS's order (quant/fgemm.h),
     * the activations rounded to the weight's type (F32: copied) into rows
     * FGEMM_ROW_PAD bytes longer, off multiples of 4 KB; runs of rows that
     * threads take as they come (fgemm_call_rows). */
    if (!each && qt_fgemm_applies(w->type, n_out, n_in, n_tokens)) {
        const size_t row = qt_row_size(tr->vec_dot_type, n_in) + FGEMM_ROW_PAD;
        quantize_rows(act_quantizer(act), x, scratch, n_tokens, n_in, row);
        const qt_fgemm_fn fgemm = qt_fgemm();
        const int64_t rows = fgemm_call_rows(w);
        #pragma omp parallel for schedule(dynamic, 1)
        for (int64_t r = 0; r < n_out; r += rows)
            fgemm(w->type, (int)n_in, gl_row(w, r), w->row_bytes, (int)(n_out - r < rows ? n_out - r : rows), scratch,
                  row, n_tokens, &y[r], (size_t)n_out);
        return 0;
    }
    const void *xq = x;
    size_t xq_row = (size_t)n_in * sizeof(float);
    if (tr->vec_dot_type != QT_F32) {
        qt_from_float_fn quantize = act_quantizer(act);
        if (!quantize) return -1;
        xq_row = qt_row_size(tr->vec_dot_type, n_in);
        quantize_rows(quantize, x, scratch, n_tokens, n_in, xq_row);
        xq = scratch;
    }
    return matmul_q(w, xq, xq_row, y, n_tokens, scratch, each);
}

/* matmul() from activations already in the weight's vec_dot_type (xq,
 * rows xq_row bytes apart: the scratch's start, or for F32 the input),
 * for the routes that take them so; the scratch past the rows is free. */
static int matmul_q(const gl_tensor *w, const void *xq, size_t xq_row, float *y, int n_tokens, void *scratch,
                    bool each)
{
    const qt_traits *tr = qt_get(w->type);
    const int64_t n_in = w->ne[0], n_out = w->ne[1];
    const qt_tiles *tiles = each ? NULL : tiles_for(w, n_tokens);
    /* Q8_0 and the K-quants, where the CPU has tile kernels: the same
     * orders, many outputs at a time (quant/tiles.h); with AMX also the
     * K-quants llama.cpp repacks, in the tiled order (quant/tiles.h says
     * why). */
    if (tiles) {
        matmul_tiles(tiles, 1, &w, xq, xq_row, &y, n_tokens);
        return 0;
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
            const qt_rp_wide *wide = qt_repack_wide(w->type);
            const int64_t n_wide = wide ? n_out - n_out % QT_RP_WIDE_ROWS : 0;
            if (n_wide && n_tokens == 1)
                matmul_wide_one(wide, w, xq, wide_aux(scratch, xq_row), y, n_wide);
            else if (n_wide)
                matmul_wide(wide, w, xq, xq_row, wide_aux(scratch, xq_row * (size_t)n_tokens), y, n_tokens, n_gemm,
                            n_wide);
            /* the last 8 rows when the wide kernels take 16 at a time */
            #pragma omp parallel for schedule(static) if (n_out - n_wide > QT_RP_ROWS)
            for (int64_t g = n_wide / QT_RP_ROWS; g < n_out / QT_RP_ROWS; g++) {
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
        const bool rows = w->layout == GL_LAYOUT_ROWS;
        qt_tiled_rows8_fn rows16 = rows ? qt_tiled_rows16() : NULL, rows8 = rows ? qt_tiled_rows8() : NULL;
        /* groups of 16 rows, then of 8: each column read once per group */
        const int64_t n16 = rows16 ? n_out / 16 : 0, n8 = rows8 ? (n_out - 16 * n16) / 8 : 0;
        const int64_t r1 = 16 * n16 + 8 * n8; /* the rows left one at a time */
        /* static: taken as they come (dynamic, 1 or 4), tl-q6_k pp512
         * ran ~8% slower (alternated, 2 threads) though libgomp's spin
         * fell from 3% to 0.5% */
        #pragma omp parallel for schedule(static)
        for (int64_t g = 0; g < n16 + n8 + (n_out - r1); g++) {
            if (g < n16)
                rows16(w->type, (int)n_in, gl_row(w, 16 * g), w->row_bytes, xq, xq_row, n_tokens, &y[16 * g],
                       (size_t)n_out);
            else if (g < n16 + n8)
                rows8(w->type, (int)n_in, gl_row(w, 16 * n16 + 8 * (g - n16)), w->row_bytes, xq, xq_row, n_tokens,
                      &y[16 * n16 + 8 * (g - n16)], (size_t)n_out);
            else
                row(w->type, (int)n_in, gl_row(w, r1 + (g - n16 - n8)), xq, xq_row, n_tokens, &y[r1 + (g - n16 - n8)],
                    (size_t)n_out);
        }
        return 0;
    }
    /* Rows outermost: each weight row is streamed once and reused across
     * all tokens of the batch while it is in cache.  Where llama.cpp's
     * tinyBLAS order differs from vec_dot's (quant/tiled.h), it is used. */
    qt_vec_dot_fn tiny = qt_tinyblas_dot(w->type, n_out, each ? 1 : n_tokens);
    qt_vec_dot_fn dot = tiny ? tiny : tr->vec_dot;
    /* vec_dot's order with each weight block unpacked once for all tokens
     * and several rows' chains in flight (qt_vec_dot_tile_fn): the same
     * bits, so gl_matmul_each may use it too.  Threads take TILE_ROWS rows
     * at a time, few enough to keep the split balanced. */
    if (!tiny && tr->vec_dot_tile && n_tokens == 1) { /* runs taken as they come, as in matmul_wide_one */
        #pragma omp parallel for schedule(guided)
        for (int64_t g = 0; g < row_tiles(w); g++) rows_vec_dot(tr, w, xq, xq_row, y, 1, g);
        return 0;
    }
    if (!tiny && tr->vec_dot_tile) {
        /* Guided for the same reason (a batched step's output head) */
        const int64_t rows = tile_call_rows(w, n_tokens);
        #pragma omp parallel for schedule(guided)
        for (int64_t r = 0; r < w->ne[1]; r += rows)
            rows_dot(tr, w, xq, xq_row, NULL, y, n_tokens, r, (int)(w->ne[1] - r < rows ? w->ne[1] - r : rows));
        return 0;
    }
    if (n_tokens == 1) {
        #pragma omp parallel for schedule(guided, 8)
        for (int64_t r = 0; r < n_out; r++) dot((int)n_in, &y[r], gl_row(w, r), xq);
        return 0;
    }
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

int gl_matmul_shared(int n_w, const gl_tensor *const w[], const float *x, float *const y[], int n_tokens,
                     void *scratch)
{
    const qt_traits *tr = qt_get(w[0]->type);
    const qt_traits *act = tr ? qt_get(tr->vec_dot_type) : NULL;
    const qt_tiles *tiles = act && tr->vec_dot_type != QT_F32 ? tiles_for(w[0], n_tokens) : NULL;
    /* only where matmul() would take the same tile kernels for every weight
     * (a set's kernel takes each weight's type: Q4_K's Q/K beside a Q6_K V
     * share one packing of their Q8_K input) */
    for (int i = 0; i < n_w && tiles; i++)
        if (qt_get(w[i]->type)->vec_dot_type != tr->vec_dot_type || w[i]->ne[0] != w[0]->ne[0] ||
            tiles_for(w[i], n_tokens) != tiles)
            tiles = NULL;
    qt_from_float_fn quantize = act_quantizer(act);
    if (!tiles) {
        /* each weight its own route (Q4_K's wide kernels beside a Q6_K's
         * tiles), all from one quantization of x where they read the same
         * type: gate and up quantized it twice, q, k and v three times */
        bool shared = quantize && tr->vec_dot_type != QT_F32;
        for (int i = 0; i < n_w && shared; i++)
            shared = takes_quantized(w[i], n_tokens, false) && w[i]->ne[0] == w[0]->ne[0] &&
                     qt_get(w[i]->type)->vec_dot_type == tr->vec_dot_type;
        if (!shared) {
            for (int i = 0; i < n_w; i++)
                if (gl_matmul(w[i], x, y[i], n_tokens, scratch)) return -1;
            return 0;
        }
        const size_t xq_row = qt_row_size(tr->vec_dot_type, w[0]->ne[0]);
        quantize_rows(quantize, x, scratch, n_tokens, w[0]->ne[0], xq_row);
        for (int i = 0; i < n_w; i++)
            if (matmul_q(w[i], scratch, xq_row, y[i], n_tokens, scratch, false)) return -1;
        return 0;
    }
    if (tiles->pack_f32) {
        matmul_tiles_x(tiles, n_w, w, x, scratch, 0, y, n_tokens);
        return 0;
    }
    const int64_t n_in = w[0]->ne[0];
    const size_t xq_row = qt_row_size(tr->vec_dot_type, n_in);
    quantize_rows(quantize, x, scratch, n_tokens, n_in, xq_row);
    matmul_tiles(tiles, n_w, w, scratch, xq_row, y, n_tokens);
    return 0;
}

int gl_matmul_each(const gl_tensor *w, const float *x, float *y, int n_tokens, void *scratch)
{
    return matmul(w, x, y, n_tokens, scratch, true);
}

/* The bytes of rows [r, end) of w (gl_barrier_wait_pf takes the first
 * GL_PREFETCH_MAX of them). */
static gl_prefetch rows_bytes(const gl_tensor *w, int64_t r, int64_t end)
{
    if (w->layout == GL_LAYOUT_X16) r -= r % QT_RP_WIDE_ROWS; /* groups: r is a group's first row */
    return (gl_prefetch){.p = gl_row(w, r), .n = (size_t)(end - r) * w->row_bytes};
}

gl_prefetch gl_matmul_rows_next(int n_w, const gl_tensor *const w[], int n_tokens)
{
    int64_t total = 0;
    for (int i = 0; i < n_w; i++) total += row_tiles(w[i]);
    const int64_t nth = omp_get_num_threads(), th = omp_get_thread_num();
    int64_t g;
    if (n_tokens <= 8 && nth > 1) {
        int64_t start[MAX_CHUNKS + 1];
        if (th >= guided_chunks(total, (int)nth, call_rows(n_tokens) / TILE_ROWS, start)) return (gl_prefetch){0};
        g = start[th];
    } else {
        int64_t n;
        g = static_share(total, nth, th, &n);
    }
    int i = 0;
    while (i < n_w - 1 && g >= row_tiles(w[i])) g -= row_tiles(w[i++]);
    if (g >= row_tiles(w[i])) return (gl_prefetch){0};
    return rows_bytes(w[i], g * TILE_ROWS, w[i]->ne[1]);
}

gl_prefetch gl_matmul_rows_range_next(const gl_tensor *w, int64_t r0, int64_t n)
{
    return n > 0 ? rows_bytes(w, r0, r0 + n) : (gl_prefetch){0};
}

int gl_matmul_glu(const gl_tensor *gate, const gl_tensor *up, const float *x, float *g, float *u, int n_tokens,
                  void *scratch, const uint16_t *gelu_tab)
{
    const int64_t n_in = gate->ne[0], n_out = gate->ne[1];
    const qt_traits *tr = qt_get(gate->type);
    const qt_rp_wide *wide = tr && n_tokens > 1 ? qt_repack_wide(gate->type) : NULL;
    /* only where matmul() takes the wide kernels for both, whole */
    bool fused = wide && up->type == gate->type && up->layout == gate->layout && up->ne[0] == n_in &&
                 up->ne[1] == n_out && n_out % QT_RP_WIDE_ROWS == 0 && qt_repack_applies(gate->type, n_out) &&
                 takes_quantized(gate, n_tokens, false) && !tiles_for(gate, n_tokens) && !tiles_for(up, n_tokens);
    if (fused) {
        const qt_repack_ops *rp = qt_repack(), *ref = qt_repack_ref();
        fused = (rp->gemv[gate->type] || ref->gemv[gate->type]) && (rp->gemm[gate->type] || ref->gemm[gate->type]);
    }
    const qt_traits *act = fused ? qt_get(tr->vec_dot_type) : NULL;
    qt_from_float_fn quantize = act_quantizer(act);
    if (!quantize || tr->vec_dot_type == QT_F32) {
        const gl_tensor *const w[2] = {gate, up};
        float *const y[2] = {g, u};
        if (gl_matmul_shared(2, w, x, y, n_tokens, scratch)) return -1;
        if (gelu_tab)
            gl_geglu(g, u, (int64_t)n_tokens * n_out, gelu_tab);
        else
            gl_swiglu(g, u, (int64_t)n_tokens * n_out);
        return 0;
    }
    const size_t xq_row = qt_row_size(tr->vec_dot_type, n_in);
    quantize_rows(quantize, x, scratch, n_tokens, n_in, xq_row);
    matmul_wide_glu(wide, gate, up, scratch, xq_row, wide_aux(scratch, xq_row * (size_t)n_tokens), g, n_tokens,
                    n_tokens - n_tokens % QT_RP_COLS, gelu_tab);
    return 0;
}
