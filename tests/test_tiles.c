/* test_tiles.c - the many-outputs kernels of llama.cpp's batch orders
 * against their one-output definitions, bit for bit.
 *
 * - quant/tiles.h: the Q8_0 tile kernel (where the CPU has AVX512-VNNI)
 *   equals the scalar vec_dot for every element, over block counts that
 *   cross its chunking, row counts that end its groups of 3 rows with 1,
 *   2 or 3 and cross its 48-row output runs, and column counts from a partial tile to more than one
 *   pass of tiles; on random blocks and adversarial ones (zero, max and
 *   subnormal f16 scales, bytes -128 and 127 on both sides).  Elements
 *   outside the output are left alone, and packed buffers are allocated to
 *   their exact size so ASan sees any overread.
 * - The AVX2 Q8_0 set (the i16 order) likewise equals qt_tiles_i16_dot_ref
 *   on the same shapes (rows across its 16-row panels, blocks across its
 *   32-block chunks, columns across tiles and its 128-column slices), and
 *   its packer writes qt_tiles_pack_i16_ref's bytes; gl_matmul's Q8_0
 *   batches take that order where the set runs.
 * - The kernel for the x16 layout (kernel_x16: Q4_1, Q5_0, Q5_1, Q8_0; Q2_K, Q3_K
 *   in the tiled order) gives the row kernel's
 *   bits for the same rows' whole groups, and writes nothing past them.
 * - The tiled K-quant kernel equals qt_tiled_dot likewise for Q2_K..Q6_K
 *   (raw random or extreme bytes: every quant and scale value, with the
 *   scenario's f16 d and dmin; Q8_K activations with consistent bsums).
 * - gl_matmul routes Q8_0 batches of 8 or more columns, and K-quant ones
 *   llama.cpp does not repack, to them with the same bits; so does
 *   gl_matmul_shared, several weights over one quantized input.
 * - The AMX-INT8 kernel (Q2_K..Q6_K, where CPU and OS have AMX; else a
 *   PASS line saying it was skipped) equals qt_tiled_dot bit for bit at
 *   every column count 1..70 and across its 256-column passes, rows not a
 *   multiple of its 16, and the adversarial blocks above (the extremes
 *   include Q3_K's (q - 4)·sc = 128 corner and the largest scale·quant
 *   products); a column gives the same bits alone and among 40; and
 *   gl_matmul gives those bits for the batches routed to it.  Its packer
 *   from float activations writes the bytes of the reference Q8_K
 *   quantizer followed by the portable packer, for blocks with NaN,
 *   infinities, zeros, ties, subnormal and huge magnitudes, and a largest
 *   magnitude of either sign anywhere in the block. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ggml-lite/matmul.h"
#include "quant/blocks.h"
#include "quant/cpu.h"
#include "quant/fp16.h"
#include "quant/ref.h"
#include "quant/repack.h"
#include "quant/tiled.h"
#include "quant/tiles.h"
#include "quant/types.h"
#include "tests/test.h"
#define TEST_RNG_SEED 0x2545f4914f6cdd1dull
#include "tests/test_rng.h"

enum { SC_RANDOM, SC_ZERO, SC_MAX_SCALE, SC_SUBNORMAL, SC_EXTREMES, SC_COUNT };
static const char *sc_names[SC_COUNT] = {"random", "all-zero", "max-scale", "subnormal-scale", "extremes"};

static uint16_t scale_for(int sc) {
    if (sc == SC_ZERO) return 0;
    if (sc == SC_MAX_SCALE) return rng_below(2) ? 0x7bff : 0xfbff;
    if (sc == SC_SUBNORMAL) return (uint16_t)((1 + rng_below(0x3ff)) | (rng_below(2) ? 0x8000 : 0));
    return qt_f32_to_f16((float)(rng_below(2001) - 1000) * 1e-5f);
}

/* nb Q8_0 blocks: random bytes, or the scenario's extremes. */
static void fill_q8_0(qt_block_q8_0 *b, int nb, int sc) {
    const int pat = rng_below(3);
    for (int i = 0; i < nb; i++) {
        b[i].d = scale_for(sc);
        for (int j = 0; j < QT_QK8_0; j++)
            b[i].qs[j] = sc == SC_ZERO ? 0 : sc != SC_EXTREMES ? (int8_t)rng_next()
                       : pat == 0 ? -128 : pat == 1 ? 127 : (int8_t)(j & 1 ? -128 : 127);
    }
}

/* nb blocks of `size` bytes with f16 scales in their first `scales`
 * bytes (Q5_0: d; Q4_1, Q5_1: d, m; Q8_1: d, s), the rest random bits or, as
 * extremes, all set or all clear. */
static void fill_scaled(uint8_t *x, size_t size, int scales, int nb, int sc) {
    const int pat = rng_below(2);
    for (int i = 0; i < nb; i++) {
        uint8_t *b = x + i * size;
        for (int k = 0; k < scales; k++) {
            const uint16_t h = scale_for(sc);
            memcpy(b + 2 * k, &h, 2);
        }
        for (size_t j = 2 * (size_t)scales; j < size; j++)
            b[j] = sc == SC_ZERO ? 0 : sc != SC_EXTREMES ? (uint8_t)rng_next() : pat ? 0xff : 0x00;
    }
}

/* Where a K-quant block keeps its f16 d and dmin (-1: none). */
static void k_scale_offsets(qt_type type, int *d, int *dmin) {
    switch (type) {
    case QT_Q2_K: *d = offsetof(qt_block_q2_K, d), *dmin = offsetof(qt_block_q2_K, dmin); break;
    case QT_Q3_K: *d = offsetof(qt_block_q3_K, d), *dmin = -1; break;
    case QT_Q4_K: *d = offsetof(qt_block_q4_K, d), *dmin = offsetof(qt_block_q4_K, dmin); break;
    case QT_Q5_K: *d = offsetof(qt_block_q5_K, d), *dmin = offsetof(qt_block_q5_K, dmin); break;
    default: *d = offsetof(qt_block_q6_K, d), *dmin = -1; break;
    }
}

static void fill_k(qt_type type, uint8_t *x, int nb, int sc) {
    const size_t bs = qt_get(type)->type_size;
    int od, om;
    k_scale_offsets(type, &od, &om);
    /* pattern 3: Q6_K's largest sums, every q - 32 = -32 at scale -128
     * (the kernels' 16-element sums then need 18 bits) */
    const int pat = rng_below(4);
    for (size_t j = 0; j < bs * nb; j++)
        x[j] = sc == SC_ZERO ? 0 : sc != SC_EXTREMES ? (uint8_t)rng_next() : pat == 1 ? 0xff : pat == 2 ? 0x5a : 0x00;
    for (int i = 0; i < nb; i++) {
        if (sc == SC_EXTREMES && pat == 3 && type == QT_Q6_K)
            memset(x + i * bs + offsetof(qt_block_q6_K, scales), 0x80, sizeof ((qt_block_q6_K *)0)->scales);
        const uint16_t d = scale_for(sc), m = scale_for(sc);
        memcpy(x + i * bs + od, &d, 2);
        if (om >= 0) memcpy(x + i * bs + om, &m, 2);
    }
}

static void fill_q8_K(qt_block_q8_K *b, int nb, int sc) {
    const int pat = rng_below(3);
    for (int i = 0; i < nb; i++) {
        b[i].d = sc == SC_ZERO ? 0.0f : sc == SC_MAX_SCALE ? 1e4f : sc == SC_SUBNORMAL ? 1e-40f
                                 : (float)(rng_below(2001) - 1000) * 1e-4f;
        for (int j = 0; j < QT_QK_K; j++)
            b[i].qs[j] = sc == SC_ZERO ? 0 : sc != SC_EXTREMES ? (int8_t)rng_next()
                       : pat == 0 ? -128 : pat == 1 ? 127 : (int8_t)(j & 1 ? -128 : 127);
        for (int j = 0; j < QT_QK_K / 16; j++) {
            int sum = 0;
            for (int k = 0; k < 16; k++) sum += b[i].qs[16 * j + k];
            b[i].bsums[j] = (int16_t)sum;
        }
    }
}

/* One shape of a weight type's tile kernel against the type's one-output
 * definition: vec_dot for Q8_0, qt_tiled_dot for the K-quants. */
static void check_shape_out(const qt_tiles *tiles, qt_type type, int nb, int rows, int cols, int sc, size_t out_stride,
                            bool stream);
static void check_shape(const qt_tiles *tiles, qt_type type, int nb, int rows, int cols, int sc) {
    check_shape_out(tiles, type, nb, rows, cols, sc, (size_t)rows + 3, false);
}

/* The same with outputs out_stride floats apart in a 64-byte aligned
 * buffer, the kernel asked to stream them or not (qt_rp_stream_out). */
static void check_shape_out(const qt_tiles *tiles, qt_type type, int nb, int rows, int cols, int sc, size_t out_stride,
                            bool stream) {
    const qt_traits *tr = qt_get(type);
    const int n = nb * tr->block_size;
    /* rows a little apart, as in a wider tensor (blocks stay 2-aligned) */
    const size_t w_stride = qt_row_size(type, n) + 2 * (size_t)rng_below(3);
    const size_t y_stride = qt_row_size(tr->vec_dot_type, n);
    uint8_t *w = test_xmalloc(w_stride * rows), *y = test_xmalloc(y_stride * cols);
    for (int r = 0; r < rows; r++) {
        if (type == QT_Q8_0)
            fill_q8_0((qt_block_q8_0 *)(w + r * w_stride), nb, sc);
        else if (type == QT_Q5_0 || type == QT_Q4_1 || type == QT_Q5_1)
            fill_scaled(w + r * w_stride, tr->type_size, type == QT_Q5_0 ? 1 : 2, nb, sc);
        else
            fill_k(type, w + r * w_stride, nb, sc);
    }
    for (int c = 0; c < cols; c++) {
        if (tr->vec_dot_type == QT_Q8_0)
            fill_q8_0((qt_block_q8_0 *)(y + c * y_stride), nb, sc);
        else if (tr->vec_dot_type == QT_Q8_1)
            fill_scaled(y + c * y_stride, sizeof(qt_block_q8_1), 2, nb, sc);
        else
            fill_q8_K((qt_block_q8_K *)(y + c * y_stride), nb, sc);
    }
    const size_t pack_bytes = tiles->pack_size(n, cols);
    void *packed = test_xmalloc(pack_bytes);
    for (int t = 0; t < (cols + QT_TILE_COLS - 1) / QT_TILE_COLS; t++) tiles->pack(n, y, y_stride, cols, t, packed);
    if (tr->vec_dot_type != QT_Q8_K) { /* the set's packer writes the portable layout */
        uint8_t *ref = test_xmalloc(pack_bytes);
        for (int t = 0; t < (cols + QT_TILE_COLS - 1) / QT_TILE_COLS; t++)
            (tiles->i16_order ? qt_tiles_pack_i16_ref
             : tr->vec_dot_type == QT_Q8_0 ? qt_tiles_pack_q8_0_ref : qt_tiles_pack_q8_1_ref)(n, y, y_stride, cols, t, ref);
        CHECK(memcmp(ref, packed, pack_bytes) == 0, "nb %d cols %d: packed tiles differ from the portable layout", nb, cols);
        free(ref);
    }
    float *out = aligned_alloc(64, (sizeof(float) * out_stride * cols + 63) / 64 * 64);
    if (!out) abort();
    for (size_t i = 0; i < out_stride * cols; i++) out[i] = -0.0f;
    tiles->kernel(type, n, w, w_stride, rows, packed, cols, out, out_stride, stream);
    for (int c = 0; c < cols; c++) {
        for (int r = 0; r < rows; r++) {
            float want;
            if (tiles->i16_order)
                qt_tiles_i16_dot_ref(n, w + r * w_stride, w_stride, 1, y + c * y_stride, y_stride, 1, &want, 1);
            else if (type == QT_Q8_0)
                qt_vec_dot_q8_0_q8_0(n, &want, w + r * w_stride, y + c * y_stride);
            else if (type == QT_Q5_0)
                qt_vec_dot_q5_0_q8_0(n, &want, w + r * w_stride, y + c * y_stride);
            else if (type == QT_Q4_1)
                qt_vec_dot_q4_1_q8_1(n, &want, w + r * w_stride, y + c * y_stride);
            else if (type == QT_Q5_1)
                qt_vec_dot_q5_1_q8_1(n, &want, w + r * w_stride, y + c * y_stride);
            else
                want = qt_tiled_dot(type, n, w + r * w_stride, y + c * y_stride);
            const float got = out[c * out_stride + r];
            CHECK(same_bits(got, want), "nb %d rows %d cols %d: row %d col %d: %a, want %a", nb, rows, cols, r, c,
                  got, want);
        }
        for (size_t r = rows; r < out_stride; r++)
            CHECK(same_bits(out[c * out_stride + r], -0.0f), "cols %d: wrote outside row %zu", cols, r);
    }
    if (tiles->kernel_x16 &&
        (type == QT_Q4_1 || type == QT_Q5_0 || type == QT_Q5_1 || type == QT_Q8_0 || type == QT_Q2_K ||
         type == QT_Q3_K) &&
        rows >= QT_X16_ROWS) {
        /* the same rows' whole groups in the x16 layout: the same bits */
        const int grouped = rows - rows % QT_X16_ROWS;
        uint8_t *g = test_xmalloc(w_stride * grouped);
        for (int r = 0; r < grouped; r += QT_X16_ROWS)
            qt_x16_interleave(type, n, w + r * w_stride, w_stride, g + r * w_stride);
        float *o16 = aligned_alloc(64, (sizeof(float) * out_stride * cols + 63) / 64 * 64);
        if (!o16) abort();
        for (size_t i = 0; i < out_stride * cols; i++) o16[i] = -0.0f;
        tiles->kernel_x16(type, n, g, w_stride, grouped, packed, cols, o16, out_stride, stream);
        for (int c = 0; c < cols; c++)
            for (size_t r = 0; r < out_stride; r++) {
                const float want = (int)r < grouped ? out[c * out_stride + r] : -0.0f;
                CHECK(same_bits(o16[c * out_stride + r], want), "x16: nb %d rows %d cols %d: row %zu col %d: %a, want %a",
                      nb, rows, cols, r, c, o16[c * out_stride + r], want);
            }
        free(g), free(o16);
    }
    free(w), free(y), free(packed), free(out);
}

static void test_kernel(const char *set, qt_type type, const qt_tiles *tiles) {
    /* blocks, rows, columns: Q8_0's blocks cross the kernel's 128-block
     * chunks, rows its groups of 3 (ending in 1 or 2 rows) and 48-row
     * runs, columns its passes (Q8_0: 8 tiles, K-quants: 16) */
    static const int q8_shapes[][3] = {{1, 1, 8},    {2, 3, 16},   {5, 2, 17},  {64, 5, 33}, {129, 3, 40},
                                       {3, 17, 130}, {130, 33, 9}, {7, 16, 31}, {2, 35, 257}, {3, 50, 20},
                                       {2, 97, 47},  {1, 48, 16}};
    static const int k_shapes[][3] = {{1, 1, 8},  {2, 4, 16},  {3, 5, 17}, {1, 9, 33},
                                      {2, 36, 40}, {1, 3, 130}, {4, 7, 47}, {1, 5, 300}};
    const bool q8 = qt_get(type)->vec_dot_type != QT_Q8_K;
    const int(*shapes)[3] = q8 ? q8_shapes : k_shapes;
    const size_t n_shapes = q8 ? sizeof q8_shapes / sizeof q8_shapes[0] : sizeof k_shapes / sizeof k_shapes[0];
    char name[96];
    for (int sc = 0; sc < SC_COUNT; sc++) {
        snprintf(name, sizeof name, "%s/tiles_%s/%s", set, qt_get(type)->name, sc_names[sc]);
        TEST_BEGIN(name);
        for (size_t s = 0; s < n_shapes; s++) check_shape(tiles, type, shapes[s][0], shapes[s][1], shapes[s][2], sc);
        if (!q8) {
            /* a pass larger than L2, which the kernel takes in bands of
             * rows (bands of 16, one of 8 and single rows) */
            const long l2 = qt_cpu()->l2_bytes;
            int nb = 1;
            while (tiles->pack_size(nb * QT_QK_K, 16 * QT_TILE_COLS) <= (size_t)l2) nb++;
            check_shape(tiles, type, nb, 43, 16 * QT_TILE_COLS, sc);
        }
        /* asked to stream, aligned: whole lines streamed, masked stores
         * for the last 5 rows */
        CHECK(qt_rp_stream_out(true, (const float *)(uintptr_t)64, 4096),
              "aligned 4096-float columns are not streamed");
        check_shape_out(tiles, type, q8 ? 3 : 2, 37, 64, sc, 4096, true);
        TEST_END();
    }
}

/* gl_matmul on a Q8_0 tensor: every element is the scalar vec_dot's, or
 * where the batch takes a set in the i16 order, that order's. */
static void test_matmul_q8_0(void) {
    TEST_BEGIN("matmul_q8_0_batches");
    const int n = 3 * QT_QK8_0, rows = 21;
    const size_t row_bytes = qt_row_size(QT_Q8_0, n), act_row = qt_row_size(QT_Q8_0, n);
    uint8_t *w = test_xmalloc(row_bytes * rows);
    for (int r = 0; r < rows; r++) fill_q8_0((qt_block_q8_0 *)(w + r * row_bytes), n / QT_QK8_0, SC_RANDOM);
    gl_tensor t = {.type = QT_Q8_0, .ne = {n, rows, 1, 1}, .row_bytes = row_bytes, .data = w};
    for (int ntok = 1; ntok <= 40; ntok += 1 + ntok / 8) {
        float *x = test_xmalloc(sizeof(float) * n * ntok), *out = test_xmalloc(sizeof(float) * rows * ntok);
        for (int i = 0; i < n * ntok; i++) x[i] = (float)(rng_below(20001) - 10000) * 1e-3f;
        void *scratch = test_xmalloc(gl_matmul_scratch(&t, ntok));
        CHECK(gl_matmul(&t, x, out, ntok, scratch) == 0, "gl_matmul failed");
        uint8_t *xq = test_xmalloc(act_row * ntok);
        for (int k = 0; k < ntok; k++) qt_quantize_act_q8_0(x + (size_t)k * n, xq + k * act_row, n);
        const qt_tiles *tiles = qt_tiles_for(QT_Q8_0, rows, ntok);
        for (int k = 0; k < ntok; k++)
            for (int r = 0; r < rows; r++) {
                float want;
                if (tiles && tiles->i16_order)
                    qt_tiles_i16_dot_ref(n, w + r * row_bytes, row_bytes, 1, xq + k * act_row, act_row, 1, &want, 1);
                else
                    qt_vec_dot_q8_0_q8_0(n, &want, w + r * row_bytes, xq + k * act_row);
                CHECK(same_bits(out[(size_t)k * rows + r], want), "ntok %d token %d row %d: %a, want %a", ntok, k, r,
                      out[(size_t)k * rows + r], want);
            }
        free(x), free(out), free(scratch), free(xq);
    }
    free(w);
    TEST_END();
}

#if defined(__x86_64__)
static void test_amx(qt_type type) {
    const qt_tiles *tiles = qt_tiles_amx(type);
    char name[96];
    snprintf(name, sizeof name, "amx/tiles_%s/columns_1_70", qt_get(type)->name);
    TEST_BEGIN(name);
    for (int cols = 1; cols <= 70; cols++)
        check_shape(tiles, type, 1 + cols % 3, 1 + (cols * 7) % 37, cols, cols % SC_COUNT);
    TEST_END();
    /* blocks, rows, columns: rows across 16-row groups, columns across
     * the 256-column passes */
    static const int shapes[][3] = {{1, 16, 16}, {2, 17, 31}, {3, 33, 48}, {1, 15, 257}, {2, 5, 300}, {8, 3, 20}};
    for (int sc = 0; sc < SC_COUNT; sc++) {
        snprintf(name, sizeof name, "amx/tiles_%s/%s", qt_get(type)->name, sc_names[sc]);
        TEST_BEGIN(name);
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            for (int rep = 0; rep < 3; rep++) check_shape(tiles, type, shapes[i][0], shapes[i][1], shapes[i][2], sc);
        TEST_END();
    }
}

/* A block of `len` floats for the packer tests: scenario k. */
static void fill_act_block(float *x, int len, int k) {
    const int at = rng_below(len);
    for (int j = 0; j < len; j++) x[j] = (float)((int)(rng_next() % 20001) - 10000) * 1e-3f;
    switch (k % 9) {
    case 0: break;                                              /* random */
    case 1: memset(x, 0, sizeof(float) * len); break;      /* all zero: d = 0 */
    case 2: x[at] = NAN; break;                                 /* reference path */
    case 3: x[at] = rng_below(2) ? INFINITY : -INFINITY; break;
    case 4: for (int j = 0; j < len; j++) x[j] *= 1e-42f; break; /* subnormal: iscale overflows */
    case 5: for (int j = 0; j < len; j++) x[j] *= 3e34f; break;  /* huge, finite */
    case 6: /* max 127: iscale -1, halves are ties (to even) */
        for (int j = 0; j < len; j++) x[j] = (float)((int)(rng_next() % 253) - 126) + 0.5f;
        x[at] = 127.0f;
        break;
    case 7: /* the same magnitude with both signs: the first one sets the sign */
        x[at] = 12.0f;
        x[(at + 1 + rng_below(len - 1)) % len] = -12.0f;
        break;
    default: x[at] = -x[at] * 50; break;                        /* one outlier */
    }
}

/* A set's packer from float activations against the reference quantizer
 * (act, qk elements per block) + the packer ref_pack, partial tiles. */
typedef void (*quantize_fn)(const float *src, void *dst, int64_t n);
typedef void (*pack_fn)(int n, const void *y, size_t y_stride, int ncols, int tile, void *packed);
static void check_pack_f32(const char *name, const qt_tiles *tiles, qt_type act, int qk, quantize_fn quant,
                           pack_fn ref_pack, const int (*shapes)[2], size_t n_shapes) {
    TEST_BEGIN(name);
    for (size_t i = 0; i < n_shapes; i++) {
        const int nb = shapes[i][0], cols = shapes[i][1], n = nb * qk, tiles_n = (cols + QT_TILE_COLS - 1) / QT_TILE_COLS;
        const size_t row = qt_row_size(act, n);
        float *x = test_xmalloc(sizeof(float) * (size_t)n * cols);
        uint8_t *xq = test_xmalloc(row * cols);
        for (int b = 0; b < nb * cols; b++) fill_act_block(x + (size_t)b * qk, qk, b + (int)i);
        for (int c = 0; c < cols; c++) quant(x + (size_t)c * n, xq + row * c, n);
        const size_t bytes = tiles->pack_size(n, cols);
        uint8_t *want = test_xmalloc(bytes), *got = test_xmalloc(bytes);
        memset(got, 0x5a, bytes);
        for (int t = 0; t < tiles_n; t++) {
            ref_pack(n, xq, row, cols, t, want);
            tiles->pack_f32(n, x, cols, t, got);
        }
        CHECK(memcmp(want, got, bytes) == 0, "nb %d cols %d: packed from floats differs from quantize + pack", nb, cols);
        free(x), free(xq), free(want), free(got);
    }
    TEST_END();
}

static void test_amx_pack_f32(void) {
    static const int shapes[][2] = {{1, 1}, {1, 16}, {2, 5}, {4, 17}, {3, 40}, {8, 33}};
    const qt_tiles *tiles = qt_tiles_amx(QT_Q4_K);
    check_pack_f32("amx/pack_f32_q8_K", tiles, QT_Q8_K, QT_QK_K, qt_quantize_act_q8_K, tiles->pack, shapes,
                   sizeof shapes / sizeof shapes[0]);
}

/* The Q8_0 set's packer, odd and even block counts. */
static void test_pack_f32_q8_0(void) {
    static const int shapes[][2] = {{1, 1}, {1, 16}, {2, 5}, {3, 17}, {4, 40}, {9, 33}, {64, 20}};
    check_pack_f32("avx512-vnni/pack_f32_q8_0", qt_tiles_avx512_vnni(QT_Q8_0), QT_Q8_0, QT_QK8_0,
                   qt_quantize_act_q8_0, qt_tiles_pack_q8_0_ref, shapes, sizeof shapes / sizeof shapes[0]);
}

/* A column's outputs alone and inside a 40-column call, bit for bit. */
static void test_amx_columns_independent(qt_type type) {
    char name[96];
    snprintf(name, sizeof name, "amx/tiles_%s/column_alone_equals_in_batch", qt_get(type)->name);
    TEST_BEGIN(name);
    const qt_tiles *tiles = qt_tiles_amx(type);
    const int nb = 2, n = nb * QT_QK_K, rows = 19, cols = 40;
    const size_t w_stride = qt_row_size(type, n), y_stride = qt_row_size(QT_Q8_K, n);
    uint8_t *w = test_xmalloc(w_stride * rows), *y = test_xmalloc(y_stride * cols);
    for (int r = 0; r < rows; r++) fill_k(type, w + r * w_stride, nb, SC_RANDOM);
    for (int c = 0; c < cols; c++) fill_q8_K((qt_block_q8_K *)(y + c * y_stride), nb, SC_RANDOM);
    void *packed = test_xmalloc(tiles->pack_size(n, cols));
    for (int t = 0; t < (cols + QT_TILE_COLS - 1) / QT_TILE_COLS; t++) tiles->pack(n, y, y_stride, cols, t, packed);
    float *all = test_xmalloc(sizeof(float) * rows * cols), one[19];
    tiles->kernel(type, n, w, w_stride, rows, packed, cols, all, rows, false);
    void *packed1 = test_xmalloc(tiles->pack_size(n, 1));
    for (int c = 0; c < cols; c++) {
        tiles->pack(n, y + c * y_stride, y_stride, 1, 0, packed1);
        tiles->kernel(type, n, w, w_stride, rows, packed1, 1, one, rows, false);
        for (int r = 0; r < rows; r++)
            CHECK(same_bits(one[r], all[c * rows + r]), "col %d row %d: alone %a, in batch %a", c, r, one[r],
                  all[c * rows + r]);
    }
    free(w), free(y), free(packed), free(packed1), free(all);
    TEST_END();
}

/* gl_matmul where the AMX kernel applies: the tiled order's bits.  It
 * applies to every K-quant whenever AMX runs (Q2_K and Q4_K then are not
 * repacked: quant/tiles.h). */
static void test_matmul_amx(qt_type type, int rows) {
    char name[96];
    snprintf(name, sizeof name, "amx/matmul_%s_rows%d_batches", qt_get(type)->name, rows);
    TEST_BEGIN(name);
    const int n = 2 * QT_QK_K;
    const int min_cols = qt_tiles_amx_min_cols(type);
    CHECK(qt_tiles_amx_applies(type, rows, min_cols), "AMX not taken for %d rows with QLM_ISA=%s", rows,
          getenv("QLM_ISA") ? getenv("QLM_ISA") : "(unset)");
    CHECK(!qt_repack_applies(type, rows), "%s still repacked for %d rows where AMX runs", qt_get(type)->name, rows);
    CHECK(!qt_tiles_amx_applies(type, rows, min_cols - 1), "AMX taken below %d columns", min_cols);
    const size_t row_bytes = qt_row_size(type, n), act_row = qt_row_size(QT_Q8_K, n);
    uint8_t *w = test_xmalloc(row_bytes * rows);
    for (int r = 0; r < rows; r++) fill_k(type, w + r * row_bytes, n / QT_QK_K, SC_RANDOM);
    gl_tensor t = {.type = type, .ne = {n, rows, 1, 1}, .row_bytes = row_bytes, .data = w};
    const int ntoks[] = {min_cols, min_cols + 1, 40, 70};
    for (size_t i = 0; i < sizeof ntoks / sizeof ntoks[0]; i++) {
        const int ntok = ntoks[i];
        if (!qt_tiles_amx_applies(type, rows, ntok)) continue; /* test_repack checks the other orders */
        float *x = test_xmalloc(sizeof(float) * n * ntok), *out = test_xmalloc(sizeof(float) * rows * ntok);
        for (int k = 0; k < n * ntok; k++) x[k] = (float)(rng_below(20001) - 10000) * 1e-3f;
        void *scratch = test_xmalloc(gl_matmul_scratch(&t, ntok));
        CHECK(gl_matmul(&t, x, out, ntok, scratch) == 0, "gl_matmul failed");
        uint8_t *xq = test_xmalloc(act_row * ntok);
        for (int k = 0; k < ntok; k++) qt_quantize_act_q8_K(x + (size_t)k * n, xq + k * act_row, n);
        for (int k = 0; k < ntok; k++)
            for (int r = 0; r < rows; r++) {
                const float want = qt_tiled_dot(type, n, w + r * row_bytes, xq + k * act_row);
                CHECK(same_bits(out[(size_t)k * rows + r], want), "ntok %d token %d row %d: %a, want %a", ntok, k, r,
                      out[(size_t)k * rows + r], want);
            }
        free(x), free(out), free(scratch), free(xq);
    }
    free(w);
    TEST_END();
}
#endif

/* gl_matmul_shared: weights that share one input (several row counts, a
 * K-quant that takes the tile kernels only from some row counts, a type
 * mix, batches below the tile kernels) give gl_matmul's bits, and touch
 * nothing past each output. */
static void check_shared(int n_w, const qt_type *types, const int *rows, int n, int ntok) {
    const gl_tensor *w[4];
    gl_tensor t[4];
    float *y[4], *want[4];
    size_t scratch_bytes = 0;
    for (int i = 0; i < n_w; i++) {
        const size_t rb = qt_row_size(types[i], n);
        uint8_t *d = test_xmalloc(rb * rows[i]);
        for (int r = 0; r < rows[i]; r++) {
            if (types[i] == QT_Q8_0)
                fill_q8_0((qt_block_q8_0 *)(d + r * rb), n / QT_QK8_0, SC_RANDOM);
            else if (types[i] == QT_Q4_0)
                for (size_t j = 0; j < rb; j += 18) {
                    for (int k = 0; k < 18; k++) d[r * rb + j + k] = (uint8_t)rng_next();
                    const uint16_t sc = scale_for(SC_RANDOM);
                    memcpy(d + r * rb + j, &sc, 2);
                }
            else
                fill_k(types[i], d + r * rb, n / QT_QK_K, SC_RANDOM);
        }
        t[i] = (gl_tensor){.type = types[i], .ne = {n, rows[i], 1, 1}, .row_bytes = rb, .data = d};
        w[i] = &t[i];
        y[i] = test_xmalloc(sizeof(float) * (rows[i] * ntok + 1));
        want[i] = test_xmalloc(sizeof(float) * rows[i] * ntok);
        y[i][rows[i] * ntok] = -0.0f;
        const size_t sb = gl_matmul_scratch(w[i], ntok);
        if (sb > scratch_bytes) scratch_bytes = sb;
    }
    float *x = test_xmalloc(sizeof(float) * n * ntok);
    for (int i = 0; i < n * ntok; i++) x[i] = (float)(rng_below(20001) - 10000) * 1e-3f;
    void *scratch = test_xmalloc(scratch_bytes);
    for (int i = 0; i < n_w; i++) CHECK(gl_matmul(w[i], x, want[i], ntok, scratch) == 0, "gl_matmul failed");
    CHECK(gl_matmul_shared(n_w, w, x, y, ntok, scratch) == 0, "gl_matmul_shared failed");
    for (int i = 0; i < n_w; i++) {
        for (int e = 0; e < rows[i] * ntok; e++)
            CHECK(same_bits(y[i][e], want[i][e]), "%s ntok %d weight %d element %d: %a, want %a",
                  qt_get(types[i])->name, ntok, i, e, y[i][e], want[i][e]);
        CHECK(same_bits(y[i][rows[i] * ntok], -0.0f), "weight %d: wrote past its output", i);
        free((void *)t[i].data), free(y[i]), free(want[i]);
    }
    free(x), free(scratch);
}

static void test_matmul_shared(void) {
    TEST_BEGIN("matmul_shared_input");
    /* Q4_K: llama.cpp repacks 24 rows, not 37 (shared only where AMX takes both) */
    const qt_type q8[3] = {QT_Q8_0, QT_Q8_0, QT_Q8_0}, q4k[2] = {QT_Q4_K, QT_Q4_K}, q5k[2] = {QT_Q5_K, QT_Q5_K},
                  mix[2] = {QT_Q8_0, QT_Q4_0}, kmix[3] = {QT_Q6_K, QT_Q5_K, QT_Q6_K},
                  /* Q4_K_M's Q and K beside its Q6_K V: the wide kernels and
                   * the tiles from one quantized input */
                  wmix[3] = {QT_Q4_K, QT_Q4_K, QT_Q6_K};
    const int r3[3] = {37, 8, 130}, r2[2] = {24, 37}, r5[2] = {37, 9}, rw[3] = {48, 16, 32};
    for (int ntok = 1; ntok <= 70; ntok += 1 + ntok / 4) {
        check_shared(3, q8, r3, 2 * QT_QK8_0, ntok);
        check_shared(2, q4k, r2, QT_QK_K, ntok);
        check_shared(2, q5k, r5, QT_QK_K, ntok);
        check_shared(2, mix, r2, 2 * QT_QK8_0, ntok);
        check_shared(3, kmix, r3, 2 * QT_QK_K, ntok); /* K-quant types side by side: one packing */
        check_shared(3, wmix, rw, 2 * QT_QK_K, ntok);
    }
    check_shared(3, kmix, r3, 2 * QT_QK_K, 300); /* across the caller's 256-column passes */
    TEST_END();
}

int main(void) {
#if defined(__x86_64__)
    if (qt_isa_supported(qt_cpu(), QT_ISA_AVX512_VNNI))
    {
        const qt_type types[] = {QT_Q8_0, QT_Q5_0, QT_Q4_1, QT_Q5_1, QT_Q2_K, QT_Q3_K, QT_Q4_K, QT_Q5_K, QT_Q6_K};
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
            test_kernel("avx512-vnni", types[i], qt_tiles_avx512_vnni(types[i]));
        test_pack_f32_q8_0();
    } else {
        printf("SKIP avx512-vnni/tiles: CPU lacks AVX512-VNNI\n");
    }
    if (qt_isa_supported(qt_cpu(), QT_ISA_AVX2))
        test_kernel("avx2", QT_Q8_0, qt_tiles_avx2(QT_Q8_0));
    else
        printf("SKIP avx2/tiles: CPU lacks AVX2\n");
    if (qt_cpu()->amx && qt_isa_supported(qt_cpu(), QT_ISA_AVX512_VNNI)) {
        const qt_type types[] = {QT_Q2_K, QT_Q3_K, QT_Q4_K, QT_Q5_K, QT_Q6_K};
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
            test_amx(types[i]);
            test_amx_columns_independent(types[i]);
        }
        test_amx_pack_f32();
        if (qt_amx_active()) {
            for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
                test_matmul_amx(types[i], 36);
                test_matmul_amx(types[i], 40);
            }
        } else {
            printf("PASS amx/matmul (skipped: AMX turned off by QLM_ISA)\n");
        }
    } else {
        printf("PASS amx/tiles (skipped: CPU or OS lacks AMX-INT8)\n");
    }
#endif
    test_matmul_q8_0();
    test_matmul_shared();
    TEST_EXIT();
}
