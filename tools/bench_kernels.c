/* bench_kernels.c - `qlm bench --kernels`: each weight type's dot-product
 * kernel at every ISA level this CPU runs, as the GB/s of weights a
 * 4096 x 4096 matrix-vector product streams, next to the machine's read
 * bandwidth (the ceiling a memory-bound decode can reach).
 *
 * Enough matrices are cycled through that the weights come from memory,
 * not cache, as they do when a real model decodes.
 *
 * Every row also times what a model runs for one token: gl_matmul with
 * n_tokens = 1 at the active ISA level, activation quantization included
 * (the repacked gemv for the types llama.cpp repacks, quant/repack.h; else
 * vec_dot's order, through the level's tile kernel where it has one). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "ggml-lite/arena.h"
#include "ggml-lite/layout.h"
#include "ggml-lite/matmul.h"
#include "ggml-lite/membw.h"
#include "ggml-lite/threads.h"
#include "quant/cpu.h"
#include "quant/repack.h"
#include "src/cli.h"
#include "tools/tools.h"

#define KB_N 4096             /* rows and columns */


static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void kernels_usage(FILE *f)
{
    fprintf(f,
        "usage: qlm bench --kernels [-t N] [-r N] [--types LIST] [--mib N] [--bandwidth]\n"
        "\n"
        "Times a %d x %d matrix-vector product per weight type and ISA level,\n"
        "in GB/s of weights read, next to this machine's memory read bandwidth.\n"
        "\n"
        "  -t, --threads N   threads (default: physical cores)\n"
        "  -r, --reps N      best of N passes over the matrices (default 3)\n"
        "      --types LIST  comma-separated type names (default: every type with a kernel)\n"
        "      --mib N       MiB of weights cycled through per type (default 512: well past\n"
        "                    any cache, so the numbers are memory speed)\n"
        "      --bandwidth   only measure and print the memory read bandwidth\n",
        KB_N, KB_N);
}

static bool listed(const char *list, const char *name)
{
    if (!list) return true;
    const size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        const size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncasecmp(p, name, n)) return true;
        if (!e) break;
        p = e + 1;
    }
    return false;
}

/* The same through gl_matmul with one token: the model's decode path. */
static double time_matmul(qt_type type, gl_layout layout, const uint8_t *w, size_t row_bytes, int n_mat,
                          const float *x, float *y, void *scratch, int reps)
{
    const size_t mat_bytes = row_bytes * KB_N;
    static atomic_bool huge = true;
    double best = 0;
    for (int r = 0; r < reps; r++) {
        const double t0 = now_s();
        for (int m = 0; m < n_mat; m++) {
            const gl_tensor t = {.type = type, .ne = {KB_N, KB_N, 1, 1}, .row_bytes = row_bytes,
                                 .data = w + (size_t)m * mat_bytes, .layout = layout,
                                 .huge = &huge}; /* gl_stream_alloc, as a model's copy */
            if (gl_matmul(&t, x, y, 1, scratch)) return -1;
        }
        const double gbs = (double)mat_bytes * n_mat / (now_s() - t0) / 1e9;
        if (gbs > best) best = gbs;
    }
    return best;
}

/* One type at one ISA level: best GB/s over reps passes through n_mat
 * matrices, or a negative value when the kernel is missing. */
static double time_type(qt_vec_dot_fn dot, const uint8_t *w, size_t row_bytes, int n_mat,
                        const void *xq, float *y, int reps)
{
    const size_t mat_bytes = row_bytes * KB_N;
    double best = 0;
    for (int r = 0; r < reps; r++) {
        const double t0 = now_s();
        for (int m = 0; m < n_mat; m++) {
            const uint8_t *wm = w + (size_t)m * mat_bytes;
            #pragma omp parallel for schedule(static)
            for (int i = 0; i < KB_N; i++) dot(KB_N, &y[i], wm + (size_t)i * row_bytes, xq);
        }
        const double gbs = (double)mat_bytes * n_mat / (now_s() - t0) / 1e9;
        if (gbs > best) best = gbs;
    }
    return best;
}

int qlm_bench_kernels(int argc, char **argv)
{
    int threads = 0, reps = 3;
    size_t stream = (size_t)512 << 20;
    bool bw_only = false;
    const char *types = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long v;
        if (!strcmp(a, "--kernels")) continue;
        if (!strcmp(a, "--bandwidth")) { bw_only = true; continue; }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { kernels_usage(stdout); return 0; }
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!val) return qlm_cli_error(QLM_EUSAGE, "%s: missing value (qlm bench --kernels --help)", a);
        i++;
        if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (!qlm_cli_int(a, val, 1, 1024, &v)) return QLM_EUSAGE;
            threads = (int)v;
        } else if (!strcmp(a, "-r") || !strcmp(a, "--reps")) {
            if (!qlm_cli_int(a, val, 1, 1000, &v)) return QLM_EUSAGE;
            reps = (int)v;
        } else if (!strcmp(a, "--mib")) {
            if (!qlm_cli_int(a, val, 1, 1 << 20, &v)) return QLM_EUSAGE;
            stream = (size_t)v << 20;
        } else if (!strcmp(a, "--types")) {
            types = val;
        } else
            return qlm_cli_error(QLM_EUSAGE, "unknown option '%s' (qlm bench --kernels --help)", a);
    }
    if (types) {
        /* every listed name must be a type with a dot product */
        char *dup = strdup(types), *save = NULL;
        for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            bool ok = false;
            for (uint32_t ty = 0; ty < QT_COUNT && !ok; ty++) {
                const qt_traits *tr = qt_get(ty);
                ok = tr && tr->vec_dot && !strcasecmp(tr->name, t);
            }
            if (!ok) {
                int rc = qlm_cli_error(QLM_EUSAGE, "--types: '%s' is not a type with a dot product", t);
                free(dup);
                return rc;
            }
        }
        free(dup);
    }
    gl_set_threads(threads > 0 ? threads : gl_physical_cores());
    const int n_threads = threads > 0 ? threads : gl_physical_cores();

    const double bw = gl_read_bandwidth(stream, reps + 2);
    printf("memory read bandwidth: %.1f GB/s (%d threads, %zu MiB buffer)\n", bw, n_threads,
           stream >> 20);
    if (bw_only) return bw > 0 ? 0 : qlm_cli_error(QLM_ERUNTIME, "out of memory for the bandwidth buffer");
    printf("%d x %d matrix-vector product, GB/s of weights read (%% of bandwidth)\n\n", KB_N, KB_N);
    printf("| %-6s |", "type");
    for (int isa = 0; isa < QT_ISA_COUNT; isa++)
        if (qt_isa_supported(qt_cpu(), (qt_isa)isa)) printf(" %-15s |", qt_isa_kernels((qt_isa)isa)->name);
    printf("\n|--------|");
    for (int isa = 0; isa < QT_ISA_COUNT; isa++)
        if (qt_isa_supported(qt_cpu(), (qt_isa)isa)) printf("-----------------|");
    printf("\n");

    float *x = malloc(sizeof(float) * KB_N), *y = malloc(sizeof(float) * KB_N),
          *wf = malloc(sizeof(float) * KB_N * 64);
    if (!x || !y || !wf) {
        free(x); free(y); free(wf);
        return qlm_cli_error(QLM_ERUNTIME, "out of memory");
    }
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < KB_N * 64; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        wf[i] = (float)((int64_t)(s >> 11) % 2001 - 1000) / 1000.0f;
    }
    memcpy(x, wf, sizeof(float) * KB_N);
    int rc = 0;
    for (uint32_t ty = 0; ty < QT_COUNT && !rc; ty++) {
        const qt_traits *tr = qt_get(ty);
        if (!tr || !tr->vec_dot || !tr->from_float || !listed(types, tr->name)) continue;
        const qt_traits *act = qt_get(tr->vec_dot_type);
        qt_from_float_fn quant_act = act ? (act->quantize_act ? act->quantize_act : act->from_float) : NULL;
        if (!quant_act) continue;
        const size_t row_bytes = qt_row_size((qt_type)ty, KB_N), mat_bytes = row_bytes * KB_N;
        const int n_mat = (int)((stream + mat_bytes - 1) / mat_bytes);
        uint8_t *w = gl_stream_alloc(mat_bytes * n_mat);
        void *xq = malloc(qt_row_size(tr->vec_dot_type, KB_N));
        if (!w || !xq) {
            gl_arena_free(w, mat_bytes * n_mat);
            free(xq);
            rc = qlm_cli_error(QLM_ERUNTIME, "out of memory for %d %s matrices", n_mat, tr->name);
            break;
        }
        /* 64 distinct quantized rows repeated: contents do not change speed */
        for (int r = 0; r < 64; r++) tr->from_float(wf + (size_t)r * KB_N, w + (size_t)r * row_bytes, KB_N);
        for (size_t r = 64; r < (size_t)KB_N * n_mat; r++)
            memcpy(w + r * row_bytes, w + (r % 64) * row_bytes, row_bytes);
        quant_act(x, xq, KB_N);
        printf("| %-6s |", tr->name);
        for (int isa = 0; isa < QT_ISA_COUNT; isa++) {
            if (!qt_isa_supported(qt_cpu(), (qt_isa)isa)) continue;
            const qt_kernels *k = qt_isa_kernels((qt_isa)isa);
            qt_vec_dot_fn dot = k->vec_dot[ty] ? k->vec_dot[ty] : qt_isa_kernels(QT_ISA_SCALAR)->vec_dot[ty];
            if (!dot) dot = tr->vec_dot;
            const double gbs = time_type(dot, w, row_bytes, n_mat, xq, y, reps);
            printf(" %6.1f (%3.0f%%) %s |", gbs, bw > 0 ? 100 * gbs / bw : 0, k->vec_dot[ty] || isa == QT_ISA_SCALAR ? " " : "=");
            fflush(stdout);
        }
        {
            const gl_tensor t = {.type = (qt_type)ty, .ne = {KB_N, KB_N, 1, 1}, .row_bytes = row_bytes, .data = w};
            void *scratch = malloc(gl_matmul_scratch(&t, 1));
            double gbs = scratch ? time_matmul((qt_type)ty, GL_LAYOUT_ROWS, w, row_bytes, n_mat, x, y, scratch, reps)
                                 : -1;
            const char *path = qt_repack_applies((qt_type)ty, KB_N)     ? "repacked gemv"
                               : tr->vec_dot_tile && !(tr->one_row_min_bytes && row_bytes >= tr->one_row_min_bytes) ? "vec_dot tile"
                                                                        : "vec_dot";
            printf(" decode (%s, %s): %.1f (%.0f%%)", path, qt_isa_name(), gbs, bw > 0 ? 100 * gbs / bw : 0);
            /* and where a model interleaves the type at load, that layout */
            if (scratch && gl_x16_wanted(&t)) {
                for (int m = 0; m < n_mat && gbs >= 0; m++) {
                    gl_tensor tm = t;
                    tm.data = w + (size_t)m * mat_bytes;
                    if (gl_x16_relayout(&tm, (void *)tm.data)) gbs = -1;
                }
                if (gbs >= 0)
                    gbs = time_matmul((qt_type)ty, GL_LAYOUT_X16, w, row_bytes, n_mat, x, y, scratch, reps);
                printf(", x16 layout: %.1f (%.0f%%)", gbs, bw > 0 ? 100 * gbs / bw : 0);
            }
            free(scratch);
        }
        printf("\n");
        gl_arena_free(w, mat_bytes * n_mat);
        free(xq);
    }
    printf("\n\"=\": this level has no kernel of its own for the type and runs the scalar reference.\n"
           "decode: what a model runs for one token (gl_matmul, active level): llama.cpp's repacked\n"
           "gemv for the types it repacks, else vec_dot's order (through the tile kernel where the\n"
           "level has one, except for the legacy types, which stream faster row by row over the 2 MB\n"
           "pages a model's copy sits in); x16 layout: the same gemv over weights interleaved as a\n"
           "model's are at load (Q4_0, Q4_K, Q2_K, IQ4_NL; Q4_1, Q5_0, Q5_1, Q8_0 in vec_dot's order).\n");
    free(x); free(y); free(wf);
    return rc;
}
