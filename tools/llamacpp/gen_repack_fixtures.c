/* gen_repack_fixtures.c - expected matmul outputs from llama.cpp itself for
 * the orders qlm reproduces in quant/repack.h and quant/tiled.h, written as
 * fixtures to tests/data/repack (read by tests/test_repack.c, so the tests
 * need no llama.cpp).  Not part of the build; needs the reference build of
 * tools/build_llamacpp.sh:
 *
 *   R=~/.cache/qlm/ref; L=$R/llama_cpp_python-0.3.36/vendor/llama.cpp/ggml
 *   B=$R/build-llama_cpp_python-0.3.36/bin
 *   make build/libqlm.a
 *   gcc -O1 -std=c11 -D_GNU_SOURCE -I. -I$L/include tools/llamacpp/gen_repack_fixtures.c \
 *       build/libqlm.a -L$B -lggml -lggml-base -lggml-cpu -Wl,-rpath,$B -ldl \
 *       -fopenmp -lhwloc -lxxhash -lm -o /tmp/gen_repack_fixtures
 *   /tmp/gen_repack_fixtures tests/data/repack
 *
 * Repacked orders: the weight is interleaved by llama.cpp's own repack
 * (ggml::cpu::repack::repack<block, 8, 8>) and multiplied with its gemm on
 * the first n - n % 4 columns (activations from ggml_quantize_mat_*_4x8)
 * and its gemv on the rest (quantize_row_*), as forward_mul_mat does.
 * Tiled order (K-quants) and tinyBLAS order (IQ4_NL): a plain ggml MUL_MAT
 * graph with 9 columns over a weight whose rows are not a multiple of 8
 * (so nothing repacks it).
 *
 * File format (little-endian): "QRPF", int32 version 1, int32 qlm/ggml
 * type id, int32 rows, int32 n (row length), int32 ncols, then the weight
 * rows (qt_row_size bytes each), ncols x n float activations, ncols x rows
 * float outputs (column-major as ggml's dst: out[c * rows + r]). */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggml.h"
#include "quant/types.h"

#define LIBCPU "libggml-cpu.so"

typedef int (*repack_fn)(struct ggml_tensor *, const void *, size_t);
typedef void (*gem_fn)(int, float *, size_t, const void *, const void *, int, int);
typedef void (*quant_fn)(const float *, void *, int64_t);

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static double normal(void)
{
    const double u = ((next() >> 11) + 0.5) * 0x1p-53, v = (next() >> 11) * 0x1p-53;
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

static void fill(qt_type type, int rows, int n, int ncols, void **w, float **x)
{
    float *wf = malloc(sizeof(float) * (size_t)n * rows);
    for (int i = 0; i < n * rows; i++) wf[i] = (float)normal();
    *w = malloc(qt_row_size(type, n) * rows);
    qt_get(type)->from_float(wf, *w, (int64_t)n * rows);
    free(wf);
    *x = malloc(sizeof(float) * (size_t)n * ncols);
    for (int i = 0; i < n * ncols; i++) (*x)[i] = (float)(normal() * 2 * (next() % 50 == 0 ? 20 : 1));
    /* one block whose +amax and -amax tie (llama.cpp's quantizers differ there) */
    (*x)[3] = -40.0f;
    (*x)[40] = 40.0f;
}

static int write_fixture(const char *dir, const char *name, qt_type type, int rows, int n, int ncols, const void *w,
                         const float *x, const float *out)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.bin", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return perror(path), 1;
    const int32_t hdr[5] = {1, (int32_t)type, rows, n, ncols};
    fwrite("QRPF", 1, 4, f);
    fwrite(hdr, sizeof hdr, 1, f);
    fwrite(w, qt_row_size(type, n), (size_t)rows, f);
    fwrite(x, sizeof(float) * n, (size_t)ncols, f);
    fwrite(out, sizeof(float) * rows, (size_t)ncols, f);
    fclose(f);
    printf("%s: %s rows %d n %d columns %d\n", path, qt_get(type)->name, rows, n, ncols);
    return 0;
}

static int repacked(void *lib, const char *dir, qt_type type, const char *block, const char *gemv_name,
                    const char *gemm_name, const char *qmat_name, const char *qrow_name)
{
    char sym[160];
    snprintf(sym, sizeof sym, "_ZN4ggml3cpu6repack6repackI%zu%sLl8ELl8EEEiP11ggml_tensorPKvm", strlen(block), block);
    repack_fn rp = (repack_fn)dlsym(lib, sym);
    gem_fn gemv = (gem_fn)dlsym(lib, gemv_name), gemm = (gem_fn)dlsym(lib, gemm_name);
    quant_fn qmat = (quant_fn)dlsym(lib, qmat_name), qrow = (quant_fn)dlsym(lib, qrow_name);
    if (!rp || !gemv || !gemm || !qmat || !qrow) return fprintf(stderr, "missing symbols for %s\n", block), 1;
    const qt_traits *tr = qt_get(type);
    const int rows = 16, n = tr->block_size == 256 ? 512 : 256, ncols = 7;
    void *w;
    float *x;
    fill(type, rows, n, ncols, &w, &x);
    const size_t row = qt_row_size(type, n), arow = qt_row_size(tr->vec_dot_type, n);
    struct ggml_tensor t;
    memset(&t, 0, sizeof t);
    t.type = (enum ggml_type)type;
    t.ne[0] = n, t.ne[1] = rows, t.ne[2] = t.ne[3] = 1;
    t.nb[0] = tr->type_size, t.nb[1] = row, t.nb[2] = t.nb[3] = row * rows;
    t.data = aligned_alloc(64, (row * rows + 63) / 64 * 64);
    if (rp(&t, w, row * rows)) return fprintf(stderr, "repack failed\n"), 1;
    uint8_t *xq = aligned_alloc(64, (arow * ncols + 63) / 64 * 64);
    const int n_gemm = ncols - ncols % 4;
    for (int c = 0; c < n_gemm; c += 4) qmat(x + (size_t)c * n, xq + c * arow, n);
    for (int c = n_gemm; c < ncols; c++) qrow(x + (size_t)c * n, xq + c * arow, n);
    float *out = calloc((size_t)rows * ncols, sizeof(float));
    if (n_gemm) gemm(n, out, rows, t.data, xq, n_gemm, rows);
    for (int c = n_gemm; c < ncols; c++) gemv(n, out + c * rows, rows, t.data, xq + c * arow, 1, rows);
    char name[64];
    snprintf(name, sizeof name, "repack_%s", tr->name);
    const int rc = write_fixture(dir, name, type, rows, n, ncols, w, x, out);
    free(w), free(x), free(t.data), free(xq), free(out);
    return rc;
}

static int plain(const char *dir, const char *prefix, qt_type type)
{
    const qt_traits *tr = qt_get(type);
    const int rows = 12, n = tr->block_size == 256 ? 512 : 256, ncols = 9;
    void *w;
    float *x;
    fill(type, rows, n, ncols, &w, &x);
    struct ggml_init_params ip = {64 * 1024 * 1024, NULL, false};
    struct ggml_context *ctx = ggml_init(ip);
    struct ggml_tensor *W = ggml_new_tensor_2d(ctx, (enum ggml_type)type, n, rows);
    struct ggml_tensor *X = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n, ncols);
    memcpy(W->data, w, qt_row_size(type, n) * rows);
    memcpy(X->data, x, sizeof(float) * n * ncols);
    struct ggml_tensor *Y = ggml_mul_mat(ctx, W, X);
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, Y);
    ggml_graph_compute_with_ctx(ctx, gf, 2);
    char name[64];
    snprintf(name, sizeof name, "%s_%s", prefix, tr->name);
    const int rc = write_fixture(dir, name, type, rows, n, ncols, w, x, Y->data);
    ggml_free(ctx);
    free(w), free(x);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) return fprintf(stderr, "usage: %s OUTDIR\n", argv[0]), 1;
    void *lib = dlopen(LIBCPU, RTLD_NOW);
    if (!lib) return fprintf(stderr, "%s\n", dlerror()), 1;
    ggml_cpu_init(); /* its f16 table, which the Q4_0 kernels read */
    int rc = 0;
    rc |= repacked(lib, argv[1], QT_Q4_0, "block_q4_0", "ggml_gemv_q4_0_8x8_q8_0", "ggml_gemm_q4_0_8x8_q8_0",
                   "ggml_quantize_mat_q8_0_4x8", "quantize_row_q8_0");
    rc |= repacked(lib, argv[1], QT_Q4_K, "block_q4_K", "ggml_gemv_q4_K_8x8_q8_K", "ggml_gemm_q4_K_8x8_q8_K",
                   "ggml_quantize_mat_q8_K_4x8", "quantize_row_q8_K");
    rc |= repacked(lib, argv[1], QT_Q2_K, "block_q2_K", "ggml_gemv_q2_K_8x8_q8_K", "ggml_gemm_q2_K_8x8_q8_K",
                   "ggml_quantize_mat_q8_K_4x8", "quantize_row_q8_K");
    const qt_type kq[] = {QT_Q2_K, QT_Q3_K, QT_Q4_K, QT_Q5_K, QT_Q6_K};
    rc |= repacked(lib, argv[1], QT_IQ4_NL, "block_iq4_nl", "ggml_gemv_iq4_nl_8x8_q8_0", "ggml_gemm_iq4_nl_8x8_q8_0",
                   "ggml_quantize_mat_q8_0_4x8", "quantize_row_q8_0");
    for (size_t i = 0; i < sizeof kq / sizeof kq[0]; i++) rc |= plain(argv[1], "tiled", kq[i]);
    rc |= plain(argv[1], "tinyblas", QT_IQ4_NL);
    return rc;
}
