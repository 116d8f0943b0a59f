#include "ggml-lite/membw.h"

#include "ggml-lite/arena.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <omp.h>

typedef uint64_t u64x2 __attribute__((vector_size(16)));

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double gl_read_bandwidth(size_t bytes, int reps)
{
    const size_t n = bytes / sizeof(uint64_t);
    if (n == 0) return 0;
    /* In 2 MB pages where the kernel grants them, as decoding's weights
     * are when their file sits in the page cache in large folios (or
     * --no-mmap copies them).  In 4 KB pages this probe is no ceiling:
     * on a KVM guest, one thread read 6.5-10 GB/s from a posix_memalign
     * buffer and 13.6-16 GB/s from a huge-page one, alternating in one
     * process, and qlm's one-token Q8_0 matmuls over weights mapped in
     * 2 MB pages read 13.2-13.7 GB/s. */
    uint64_t *buf = gl_stream_alloc(n * sizeof *buf);
    if (!buf) return 0;
    /* First touch from the threads that will read, so pages sit on their
     * NUMA node, as the model's weights do after the first token. */
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) buf[i] = i;
    double best = 0;
    volatile uint64_t sink = 0;
    for (int r = 0; r < (reps > 0 ? reps : 1); r++) {
        uint64_t total = 0;
        const double t0 = now_s();
        /* 16-byte vectors, eight independent sums: 128 bytes per step, so
         * the adds never limit the loads even on baseline x86-64. */
        #pragma omp parallel reduction(+ : total)
        {
            const int nt = omp_get_num_threads(), id = omp_get_thread_num();
            const size_t n_blk = n / 16, lo = n_blk * id / nt, hi = n_blk * (id + 1) / nt;
            u64x2 acc[8] = {{0}};
            for (size_t b = lo; b < hi; b++) {
                const u64x2 *p = (const u64x2 *)(buf + b * 16);
                for (int k = 0; k < 8; k++) acc[k] += p[k];
            }
            for (int k = 1; k < 8; k++) acc[0] += acc[k];
            total += acc[0][0] + acc[0][1];
        }
        const double dt = now_s() - t0;
        sink += total;
        const double gbs = (double)(n / 16 * 16) * sizeof *buf / dt / 1e9;
        if (gbs > best) best = gbs;
    }
    (void)sink;
    gl_arena_free(buf, n * sizeof *buf);
    return best;
}
