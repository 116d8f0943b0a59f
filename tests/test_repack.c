/* test_repack.c - llama.cpp's repacked matmul orders (quant/repack.h).
 *
 * - Every ISA set of the repack kernels (gemv: 8 rows x 1 column, gemm:
 *   8 rows x 4 columns) equals the scalar reference bit for bit, on random
 *   blocks and adversarial ones (zero, max and subnormal f16 scales, quants
 *   at the ends of their ranges, activation bytes -128 and 127), for
 *   lengths of 1 to 64 blocks, in buffers that end at the data.
 * - gl_matmul routes: a Q4_0 weight with rows % 8 == 0 gives, for 1..9
 *   tokens, the reference repack order (gemm for the first n - n % 4
 *   tokens, gemv for the rest); with rows % 8 != 0 it gives vec_dot's
 *   order; other types (Q4_1) keep vec_dot.
 * The expected values of the llama.cpp kernels themselves were checked
 * with a harness against libggml-cpu.so (see quant/repack.h). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ggml-lite/matmul.h"
#include "quant/blocks.h"
#include "quant/cpu.h"
#include "quant/fp16.h"
#include "quant/repack.h"
#include "quant/types.h"
#include "tests/test.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng_next(void) {
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545f4914f6cdd1dull;
}

static int rng_below(int n) { return (int)(rng_next() % (uint64_t)n); }

static double rng_normal(void) {
    const double u1 = ((double)(rng_next() >> 11) + 0.5) * 0x1p-53;
    const double u2 = ((double)(rng_next() >> 11) + 0.5) * 0x1p-53;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        printf("FAIL out of memory\n");
        exit(1);
    }
    return p;
}

enum { SC_RANDOM, SC_ZERO, SC_MAX_SCALE, SC_SUBNORMAL, SC_EXTREMES, SC_COUNT };
static const char *sc_names[SC_COUNT] = {"random", "all-zero", "max-scale", "subnormal-scale", "extremes"};

static uint16_t scale_for(int sc, double sigma) {
    if (sc == SC_MAX_SCALE) return rng_below(2) ? 0x7bff : 0xfbff;
    if (sc == SC_SUBNORMAL) return (uint16_t)((1 + rng_below(0x3ff)) | (rng_below(2) ? 0x8000 : 0));
    return qt_f32_to_f16((float)(rng_normal() * sigma));
}

static void fill_q4_0(qt_block_q4_0 *x, int nb, int sc) {
    for (int i = 0; i < nb; i++) {
        if (sc == SC_ZERO) {
            memset(&x[i], 0, sizeof x[i]);
            continue;
        }
        x[i].d = scale_for(sc, 0.01);
        const int pat = rng_below(4);
        for (int j = 0; j < QT_QK4_0 / 2; j++)
            x[i].qs[j] = sc != SC_EXTREMES ? (uint8_t)rng_next()
                         : pat == 0 ? 0x00 : pat == 1 ? 0xff : pat == 2 ? 0x0f : (uint8_t)(j & 1 ? 0xf0 : 0x0f);
    }
}

static void fill_q8_0(qt_block_q8_0 *y, int nb, int sc) {
    for (int i = 0; i < nb; i++) {
        if (sc == SC_ZERO) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        y[i].d = scale_for(sc, 0.05);
        const int pat = rng_below(3);
        for (int j = 0; j < QT_QK8_0; j++)
            y[i].qs[j] = sc != SC_EXTREMES ? (int8_t)rng_next()
                         : pat == 0 ? -128 : pat == 1 ? 127 : (int8_t)(j & 1 ? -128 : 127);
    }
}

static void test_kernels_vs_ref(const char *set, const qt_repack_ops *k, qt_type type) {
    const qt_repack_ops *ref = qt_repack_ref();
    char name[128];
    for (int sc = 0; sc < SC_COUNT; sc++) {
        snprintf(name, sizeof name, "%s/repack_%s/%s", set, qt_get(type)->name, sc_names[sc]);
        TEST_BEGIN(name);
        for (int iter = 0; iter < 40; iter++) {
            const int nb = iter < 8 ? 1 + iter : 1 + rng_below(64), n = nb * QT_QK4_0;
            const size_t w_stride = sizeof(qt_block_q4_0) * nb, y_stride = sizeof(qt_block_q8_0) * nb;
            /* rows of the group a little apart, as in a wider tensor */
            const size_t w_gap = w_stride + sizeof(qt_block_q4_0) * (size_t)rng_below(3);
            uint8_t *w = xmalloc(w_gap * 7 + w_stride);
            uint8_t *y = xmalloc(y_stride * QT_RP_COLS);
            for (int r = 0; r < 8; r++) fill_q4_0((qt_block_q4_0 *)(w + r * w_gap), nb, sc);
            for (int c = 0; c < QT_RP_COLS; c++) fill_q8_0((qt_block_q8_0 *)(y + c * y_stride), nb, sc);
            float a[8], b[8], ga[QT_RP_COLS * 9], gb[QT_RP_COLS * 9];
            ref->gemv[type](n, a, w, w_gap, y);
            k->gemv[type](n, b, w, w_gap, y);
            for (int r = 0; r < 8; r++)
                CHECK(same_bits(a[r], b[r]), "gemv nb=%d row %d: ref %a, kernel %a", nb, r, a[r], b[r]);
            ref->gemm[type](n, ga, 9, w, w_gap, y, y_stride);
            k->gemm[type](n, gb, 9, w, w_gap, y, y_stride);
            for (int c = 0; c < QT_RP_COLS; c++)
                for (int r = 0; r < 8; r++) {
                    CHECK(same_bits(ga[c * 9 + r], gb[c * 9 + r]), "gemm nb=%d col %d row %d: ref %a, kernel %a",
                          nb, c, r, ga[c * 9 + r], gb[c * 9 + r]);
                    /* gemm's element order is gemv's, column by column */
                    ref->gemv[type](n, a, w, w_gap, y + c * y_stride);
                    CHECK(same_bits(ga[c * 9 + r], a[r]), "gemm != gemv nb=%d col %d row %d", nb, c, r);
                }
            free(w);
            free(y);
        }
        TEST_END();
    }
}

/* gl_matmul against the reference orders, computed here from the same
 * quantized activations. */
static void test_matmul_routing(qt_type type, int rows, int expect_repack) {
    char name[128];
    snprintf(name, sizeof name, "matmul_routes_%s_rows%d", qt_get(type)->name, rows);
    TEST_BEGIN(name);
    CHECK(qt_repack_applies(type, rows) == expect_repack, "qt_repack_applies(%s, %d)", qt_get(type)->name, rows);
    const qt_traits *tr = qt_get(type), *at = qt_get(tr->vec_dot_type);
    const int n = 4 * 32;
    const size_t row_bytes = qt_row_size(type, n), act_row = qt_row_size(tr->vec_dot_type, n);
    float *wf = xmalloc(sizeof(float) * n * rows);
    for (int i = 0; i < n * rows; i++) wf[i] = (float)rng_normal();
    uint8_t *w = xmalloc(row_bytes * rows);
    tr->from_float(wf, w, (int64_t)n * rows);
    gl_tensor t = {.type = type, .ne = {n, rows, 1, 1}, .row_bytes = row_bytes, .data = w};
    for (int ntok = 1; ntok <= 9; ntok++) {
        float *x = xmalloc(sizeof(float) * n * ntok), *out = xmalloc(sizeof(float) * rows * ntok);
        for (int i = 0; i < n * ntok; i++) x[i] = (float)(rng_normal() * 2.0);
        void *scratch = xmalloc(gl_matmul_scratch(&t, ntok));
        CHECK(gl_matmul(&t, x, out, ntok, scratch) == 0, "gl_matmul failed");
        uint8_t *xq = xmalloc(act_row * ntok);
        for (int k = 0; k < ntok; k++) at->quantize_act(x + (size_t)k * n, xq + k * act_row, n);
        for (int k = 0; k < ntok; k++)
            for (int r = 0; r < rows; r++) {
                float want;
                if (expect_repack) {
                    float g[8];
                    qt_repack_ref()->gemv[type](n, g, w + (size_t)(r & ~7) * row_bytes, row_bytes, xq + k * act_row);
                    want = g[r & 7];
                } else {
                    qt_isa_kernels(QT_ISA_SCALAR)->vec_dot[type](n, &want, w + (size_t)r * row_bytes, xq + k * act_row);
                }
                CHECK(same_bits(out[(size_t)k * rows + r], want), "ntok %d token %d row %d: %a, want %a", ntok, k,
                      r, out[(size_t)k * rows + r], want);
            }
        free(x);
        free(out);
        free(scratch);
        free(xq);
    }
    free(wf);
    free(w);
    TEST_END();
}

int main(void) {
    test_kernels_vs_ref("scalar", qt_repack_ref(), QT_Q4_0);
#if defined(__x86_64__)
    if (qt_isa_supported(qt_cpu(), QT_ISA_AVX2))
        test_kernels_vs_ref("avx2", &qt_repack_avx2, QT_Q4_0);
    else
        printf("SKIP avx2/repack: CPU lacks AVX2/FMA/F16C\n");
#endif
    test_matmul_routing(QT_Q4_0, 24, 1);
    test_matmul_routing(QT_Q4_0, 20, 0);
    test_matmul_routing(QT_Q4_0, 3, 0);
    test_matmul_routing(QT_Q4_1, 24, 0);
    test_matmul_routing(QT_Q8_0, 16, 0);
    TEST_EXIT();
}
