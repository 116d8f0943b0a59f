/* test_fgemm.c - float weights in tinyBLAS's 16-lane order (quant/fgemm.h).
 *
 * - The definition: a case where the order decides the result (a 16-lane
 *   chain and reduce16 give 1 where a sequential float sum gives 0), and
 *   random rows within float summation error of a double sum.
 * - Every kernel this CPU runs (AVX2, AVX-512) against qt_fgemm_dot bit
 *   for bit, for F32, F16 and BF16, over row counts across their 32-row
 *   passes, row lengths across their 768- and 1024-element chunks (short
 *   last chunks too), column counts across their 3- and 6-column tiles
 *   and passes (and every shorter remainder), with strides wider than a
 *   row.
 * - gl_matmul: 2 or more tokens take the order, one token and
 *   gl_matmul_each keep vec_dot's; rows not a multiple of 4 and lengths not
 *   a multiple of 16 stay on vec_dot, as llama.cpp's tinyBLAS declines them. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ggml-lite/matmul.h"
#include "quant/cpu.h"
#include "quant/fgemm.h"
#include "quant/fp16.h"
#include "quant/types.h"
#include "tests/test.h"
#include "tests/test_rng.h"

static float rng_float(void) { return (float)((int)(rng_next() % 20001) - 10000) * 1e-4f; }

static size_t elem_size(qt_type type) { return type == QT_F32 ? 4 : 2; }

/* n values of `type` at p: random, or v where v is given. */
static void fill(qt_type type, void *p, int n, const float *v)
{
    for (int i = 0; i < n; i++) {
        const float f = v ? v[i] : rng_float();
        if (type == QT_F16) ((uint16_t *)p)[i] = qt_f32_to_f16(f);
        else if (type == QT_BF16) ((uint16_t *)p)[i] = qt_f32_to_bf16(f);
        else ((float *)p)[i] = f;
    }
}

static double value(qt_type type, const void *p, int i)
{
    if (type == QT_F16) return qt_f16_to_f32(((const uint16_t *)p)[i]);
    if (type == QT_BF16) return qt_bf16_to_f32(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}

static const qt_type types[] = {QT_F32, QT_F16, QT_BF16};

static void test_definition(void)
{
    TEST_BEGIN("fgemm/definition");
    /* lanes 0, 1, 2 hold 1e8, 1, -1e8: reduce16 adds 1e8 and -1e8 first */
    float w[32] = {0}, y[32] = {0};
    w[0] = w[1] = w[2] = 1;
    y[0] = 1e8f, y[1] = 1, y[2] = -1e8f;
    CHECK(qt_fgemm_dot(QT_F32, 32, w, y) == 1.0f, "order case: %g, want 1", qt_fgemm_dot(QT_F32, 32, w, y));
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (int n = 16; n <= 4096; n *= 4) {
            uint8_t x[4096 * 4], v[4096 * 4];
            fill(types[t], x, n, NULL), fill(types[t], v, n, NULL);
            double want = 0, mag = 0;
            for (int i = 0; i < n; i++) {
                want += value(types[t], x, i) * value(types[t], v, i);
                mag += fabs(value(types[t], x, i) * value(types[t], v, i));
            }
            const double got = qt_fgemm_dot(types[t], n, x, v);
            CHECK(fabs(got - want) <= (n / 16 + 8) * 1.2e-7 * mag, "%s n %d: %g, want %g", qt_get(types[t])->name, n,
                  got, want);
        }
    CHECK(qt_fgemm_applies(QT_F16, 8, 32, 2) && !qt_fgemm_applies(QT_F16, 8, 32, 1) &&
              !qt_fgemm_applies(QT_F16, 6, 32, 2) && !qt_fgemm_applies(QT_F16, 8, 40, 2) &&
              !qt_fgemm_applies(QT_Q8_0, 8, 32, 2) && qt_fgemm_applies(QT_BF16, 4, 16, 9) &&
              qt_fgemm_applies(QT_F32, 4, 16, 2),
          "applies: F32/F16/BF16, rows %% 4, n %% 16, 2+ columns");
    TEST_END();
}

/* kernel(rows x n weights, cols columns) against the definition. */
static void check_kernel(qt_fgemm_fn kernel, qt_type type, int rows, int n, int cols)
{
    const size_t es = elem_size(type), w_stride = (size_t)n * es + 16 * es, y_stride = (size_t)n * es + 48 * es;
    const size_t ldo = (size_t)rows + 3;
    uint8_t *w = test_xmalloc(w_stride * rows), *y = test_xmalloc(y_stride * cols);
    float *out = test_xmalloc(sizeof(float) * ldo * cols);
    for (int r = 0; r < rows; r++) fill(type, w + r * w_stride, (int)(w_stride / es), NULL);
    for (int c = 0; c < cols; c++) fill(type, y + c * y_stride, (int)(y_stride / es), NULL);
    for (size_t i = 0; i < ldo * cols; i++) out[i] = -7.0f;
    kernel(type, n, w, w_stride, rows, y, y_stride, cols, out, ldo);
    for (int c = 0; c < cols; c++) {
        for (int r = 0; r < rows; r++) {
            const float want = qt_fgemm_dot(type, n, w + r * w_stride, y + c * y_stride), got = out[c * ldo + r];
            CHECK(same_bits(got, want), "%s rows %d n %d cols %d: out[%d][%d] %a, want %a", qt_get(type)->name, rows,
                  n, cols, c, r, got, want);
        }
        for (size_t r = rows; r < ldo; r++) CHECK(out[c * ldo + r] == -7.0f, "wrote past the rows at column %d", c);
    }
    free(w), free(y), free(out);
}

static void test_kernel(void)
{
    TEST_BEGIN("fgemm/kernel_vs_definition");
    /* the kernel qt_fgemm picks here, and every other kernel this CPU runs */
    qt_fgemm_fn kernels[3] = {qt_fgemm()};
    int nk = 1;
#if defined(__x86_64__)
    const qt_fgemm_fn x86[] = {qt_avx2_fgemm, qt_avx512_fgemm};
    const qt_isa levels[] = {QT_ISA_AVX2, QT_ISA_AVX512};
    for (int i = 0; i < 2; i++)
        if (qt_isa_supported(qt_cpu(), levels[i]) && x86[i] != kernels[0]) kernels[nk++] = x86[i];
#endif
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        check_kernel(qt_fgemm_ref(), types[t], 8, 48, 5); /* the loop scalar builds take */
        for (int k = 0; k < nk; k++) {
            const qt_fgemm_fn kernel = kernels[k];
            check_kernel(kernel, types[t], 4, 16, 1);
            for (int cols = 1; cols <= 8; cols++) check_kernel(kernel, types[t], 4 * cols, 16 * (cols + 1), cols);
            check_kernel(kernel, types[t], 68, 64, 7); /* past a 32-row pass */
            check_kernel(kernel, types[t], 132, 32, 5);
            check_kernel(kernel, types[t], 8, 64, 50);       /* past a 24-column pass */
            check_kernel(kernel, types[t], 36, 784, 13);     /* past chunks, with a short one */
            check_kernel(kernel, types[t], 8, 2048 + 48, 4); /* past a column chunk */
            check_kernel(kernel, types[t], 12, 3 * 2048, 3);
        }
    }
    TEST_END();
}

static void test_matmul(void)
{
    TEST_BEGIN("fgemm/gl_matmul_orders");
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        const qt_type type = types[t];
        const int shapes[][2] = {{64, 40}, {72, 12}, {48, 10}}; /* n, rows: the last two stay on vec_dot */
        for (int s = 0; s < 3; s++) {
            const int n = shapes[s][0], rows = shapes[s][1];
            const size_t row_bytes = qt_row_size(type, n);
            uint8_t *w = test_xmalloc(row_bytes * rows);
            fill(type, w, n * rows, NULL);
            gl_tensor tensor = {.type = type, .ne = {n, rows, 1, 1}, .row_bytes = row_bytes, .data = w};
            for (int ntok = 1; ntok <= 9; ntok += 4) {
                float *x = test_xmalloc(sizeof(float) * n * ntok), *out = test_xmalloc(sizeof(float) * rows * ntok);
                float *each = test_xmalloc(sizeof(float) * rows * ntok);
                uint8_t *xr = test_xmalloc(row_bytes * ntok);
                for (int i = 0; i < n * ntok; i++) x[i] = rng_float();
                fill(type, xr, n * ntok, x);
                void *scratch = test_xmalloc(gl_matmul_scratch(&tensor, ntok));
                CHECK(gl_matmul(&tensor, x, out, ntok, scratch) == 0, "gl_matmul failed");
                CHECK(gl_matmul_each(&tensor, x, each, ntok, scratch) == 0, "gl_matmul_each failed");
                const int tiny = qt_fgemm_applies(type, rows, n, ntok);
                CHECK(tiny == (s == 0 && ntok > 1), "%s n %d rows %d ntok %d: applies %d", qt_get(type)->name, n, rows,
                      ntok, tiny);
                for (int k = 0; k < ntok; k++)
                    for (int r = 0; r < rows; r++) {
                        float dot;
                        qt_get(type)->vec_dot(n, &dot, w + r * row_bytes, xr + k * row_bytes);
                        const float want = tiny ? qt_fgemm_dot(type, n, w + r * row_bytes, xr + k * row_bytes) : dot;
                        CHECK(same_bits(out[k * rows + r], want), "%s ntok %d: [%d][%d] %a, want %a",
                              qt_get(type)->name, ntok, k, r, out[k * rows + r], want);
                        CHECK(same_bits(each[k * rows + r], dot), "%s each ntok %d: [%d][%d] %a, want %a",
                              qt_get(type)->name, ntok, k, r, each[k * rows + r], dot);
                    }
                CHECK(gl_matmul_same_order(&tensor, 2, 9) && gl_matmul_same_order(&tensor, 1, 2) == (s != 0),
                      "same_order %s shape %d", qt_get(type)->name, s);
                free(x), free(out), free(each), free(xr), free(scratch);
            }
            free(w);
        }
    }
    TEST_END();
}

/* This CPU's F16 and BF16 row converters (the activations of such
 * weights) against qt_f32_to_f16 and qt_f32_to_bf16 over a spread of bit
 * patterns and the edges: NaNs (quiet and signalling), infinities,
 * overflow, half subnormals and their ties. */
static void test_from_float(qt_type type)
{
    char name[64];
    snprintf(name, sizeof name, "fgemm/from_float_%s_vs_reference", qt_get(type)->name);
    TEST_BEGIN(name);
    enum { N = 4096 };
    float x[N];
    uint16_t got[N];
    const uint32_t edges[] = {0x7f800000u, 0x7f800001u, 0x7fc00000u, 0x7fbfffffu, 0xffc01234u, 0x477ff000u,
                              0x477fefffu, 0x38800000u, 0x387fffffu, 0x33000000u, 0x33000001u, 0x32ffffffu,
                              0x00000001u, 0x80000000u, 0x3f800000u, 0x3f801000u, 0x3f803000u, 0x7f7fffffu,
                              0x3f808000u, 0x3f818000u, 0x7f7f8000u, 0x7f7fffffu, 0xff800001u, 0x7fffffffu};
    int bad = 0;
    for (uint64_t base = 0; base < (1ull << 32) && !bad; base += (uint64_t)N * 3989) {
        for (int i = 0; i < N; i++) {
            uint32_t u = (uint32_t)(base + (uint64_t)i * 3989);
            if (i < (int)(sizeof edges / sizeof edges[0])) u = edges[i] ^ (base & 0x80000000u);
            memcpy(&x[i], &u, sizeof u);
        }
        qt_get(type)->from_float(x, got, N - 3); /* a tail past the 8-wide steps */
        for (int i = 0; i < N - 3 && !bad; i++) {
            const uint16_t want = type == QT_F16 ? qt_f32_to_f16(x[i]) : qt_f32_to_bf16(x[i]);
            if (got[i] != want) {
                uint32_t u;
                memcpy(&u, &x[i], sizeof u);
                CHECK(0, "0x%08x: 0x%04x, want 0x%04x", u, got[i], want);
                bad = 1;
            }
        }
    }
    TEST_END();
}

int main(void)
{
    test_from_float(QT_F16);
    test_from_float(QT_BF16);
    test_definition();
    test_kernel();
    test_matmul();
    TEST_EXIT();
}
