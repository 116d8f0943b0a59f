/* test_threads.c - gl_barrier (the fused forward pass's barrier) and
 * gl_matmul_rows's chunked split for batched decoding.
 *
 * The barrier: every thread's writes before a round are seen by every
 * thread after it, with rounds where a thread arrives late enough that
 * the others go to sleep, for 2 to 4 threads; the spin budget falls to
 * its floor when waits keep outlasting it.  The split: the products of
 * tall weights, shared out in guided chunks by 2 and 3 threads, equal
 * gl_matmul_each's bit for bit. */
#include <omp.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ggml-lite/arena.h"
#include "ggml-lite/matmul.h"
#include "ggml-lite/promote.h"
#include "ggml-lite/threads.h"
#include "quant/types.h"
#include "test.h"

static float frand(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((*s >> 40) & 0xffffff) / (float)0x1000000 * 2.0f - 1.0f;
}

enum { ROUNDS = 3000, MAX_TH = 4 };

/* Each round every thread writes its slot, waits, checks every slot, and
 * waits again (so no slot is rewritten while another thread reads it).
 * Every 500th round one thread arrives 3 ms late: the others sleep.
 * Returns the number of stale slots seen, or -1 if the team was short. */
static long rounds(gl_barrier *b, int n)
{
    /* the first wait of a round prefetches (gl_barrier_wait_pf), which
     * must not change what the barrier guarantees */
    static char lines[1 << 16];
    int slot[MAX_TH];
    long stale[MAX_TH] = {0};
    int got = 0;
    #pragma omp parallel num_threads(n)
    {
        const int th = omp_get_thread_num();
        #pragma omp single
        got = omp_get_num_threads();
        if (got == n) /* the single's barrier published got */
            for (int r = 0; r < ROUNDS; r++) {
                if (r % 500 == 499 && th == (r / 500) % n) usleep(3000);
                slot[th] = r;
                gl_barrier_wait_pf(b, (gl_prefetch){.p = r % 3 ? lines : NULL, .n = (size_t)(r % 7) << 13});
                for (int j = 0; j < n; j++) stale[th] += slot[j] != r;
                gl_barrier_wait(b);
            }
    }
    if (got != n) return -1;
    long s = 0;
    for (int i = 0; i < n; i++) s += stale[i];
    return s;
}

/* Three weights of type ty (rows R[]) times T columns: gl_matmul_rows
 * in a team of n_th against gl_matmul_each per weight.  Returns 1 if
 * equal, 0 if not, -1 if the type has no plain path here. */
static int rows_equal(qt_type ty, int T, int n_th, bool huge, uint64_t *seed)
{
    static atomic_bool yes = true;
    const qt_traits *tr = qt_get(ty);
    const int64_t K = 2048, R[3] = {1000, 300, 70}; /* Q8_0 rows of 2176 bytes: one_row_min_bytes applies */
    gl_tensor w[3];
    gl_act act;
    void *wq[3];
    float *y[3], *ye[3];
    size_t scr = 0;
    float *xf = test_xmalloc(sizeof(float) * K * T), *wf = test_xmalloc(sizeof(float) * K * R[0]);
    for (int64_t i = 0; i < K * T; i++) xf[i] = frand(seed);
    bool plain = true;
    for (int j = 0; j < 3; j++) {
        w[j] = (gl_tensor){.type = ty, .ne = {K, R[j], 1, 1}, .row_bytes = qt_row_size(ty, K), .huge = huge ? &yes : NULL};
        for (int64_t i = 0; i < K * R[j]; i++) wf[i] = frand(seed);
        wq[j] = test_xmalloc(w[j].row_bytes * R[j]);
        tr->from_float(wf, wq[j], K * R[j]);
        w[j].data = wq[j];
        y[j] = test_xmalloc(sizeof(float) * R[j] * T);
        ye[j] = test_xmalloc(sizeof(float) * R[j] * T);
        plain &= gl_matmul_plain(&w[j], T, true, &act);
        const size_t sz = gl_matmul_scratch(&w[j], T);
        scr = sz > scr ? sz : scr;
    }
    void *scratch = test_xmalloc(scr);
    int ok = -1;
    if (plain) {
        for (int j = 0; j < 3; j++) gl_matmul_each(&w[j], xf, ye[j], T, scratch);
        for (int t = 0; t < T; t++)
            act.quantize(xf + (size_t)t * K, (uint8_t *)scratch + (size_t)t * act.row_bytes, K);
        for (int j = 0; j < 3; j++) memset(y[j], 0xff, sizeof(float) * R[j] * T);
        const gl_tensor *wp[] = {&w[0], &w[1], &w[2]};
        gl_prefetch pf[16] = {{0}};
        #pragma omp parallel num_threads(n_th)
        {
            if (omp_get_thread_num() < 16) pf[omp_get_thread_num()] = gl_matmul_rows_next(3, wp, T);
            gl_matmul_rows(3, wp, y, scratch, act.row_bytes, T);
        }
        ok = 1;
        /* what a thread prefetches for its first rows: the first thread's
         * are the first weight's first rows; every range lies in one
         * weight, and no two threads start at the same rows */
        ok &= pf[0].p == w[0].data;
        for (int i = 0; i < n_th && i < 16; i++) {
            if (!pf[i].p) continue;
            int in = 0;
            for (int j = 0; j < 3; j++) {
                const char *d = w[j].data;
                in |= (const char *)pf[i].p >= d && (const char *)pf[i].p + pf[i].n <= d + w[j].row_bytes * R[j];
            }
            ok &= in && pf[i].n > 0;
            for (int k = 0; k < i; k++) ok &= pf[k].p != pf[i].p;
        }
        for (int j = 0; j < 3; j++) ok &= !memcmp(y[j], ye[j], sizeof(float) * R[j] * T);
    }
    for (int j = 0; j < 3; j++) {
        free(wq[j]);
        free(y[j]);
        free(ye[j]);
    }
    free(scratch);
    free(xf);
    free(wf);
    return ok;
}

int main(void)
{
    for (int n = 2; n <= MAX_TH; n++) {
        char name[64];
        snprintf(name, sizeof name, "barrier_rounds_%d_threads", n);
        TEST_BEGIN(name);
        gl_barrier b;
        gl_barrier_init(&b, n);
        const long stale = rounds(&b, n);
        if (stale < 0) { /* a runtime thread limit */
            printf("PASS %s skipped: the runtime gave fewer than %d threads\n", name, n);
            continue;
        }
        CHECK(stale == 0, "%ld stale slots after the barrier", stale);
        const int budget = atomic_load(&b.spin_us);
        CHECK(budget >= GL_BARRIER_SPIN_MIN_US && budget <= GL_BARRIER_SPIN_MAX_US, "spin budget %d us", budget);
        CHECK(atomic_load(&b.arrived) == 0 && atomic_load(&b.sleeping) == 0, "not whole after the rounds");
        TEST_END();
    }

    TEST_BEGIN("barrier_budget_falls_when_waits_outlast_it");
    {
        /* every round the other thread sleeps 2 ms (past any budget), so
         * each halves the budget: from the ceiling, 7 rounds reach the
         * floor.  Tried over 40 rounds and judged by the lowest budget
         * seen, as on a loaded machine the sleeper may lose its CPU and
         * arrive last, which makes the other's wait a short one. */
        gl_barrier b;
        gl_barrier_init(&b, 2);
        int got = 0, low = GL_BARRIER_SPIN_MAX_US + 1;
        #pragma omp parallel num_threads(2)
        {
            #pragma omp single
            got = omp_get_num_threads();
            for (int r = 0; got == 2 && r < 40 && low > GL_BARRIER_SPIN_MIN_US; r++) {
                if (omp_get_thread_num() == 1) usleep(2000);
                gl_barrier_wait(&b);
                #pragma omp single
                {
                    const int v = atomic_load(&b.spin_us);
                    low = v < low ? v : low;
                }
            }
        }
        CHECK(got != 2 || low == GL_BARRIER_SPIN_MIN_US, "budget no lower than %d us after 40 long waits", low);
    }
    TEST_END();

    TEST_BEGIN("barrier_budget_recovers_after_short_waits");
    {
        /* from the floor, sleepers that needed only ~20 us (within the
         * ceiling) double the budget until a spin covers the wait; tried
         * over 300 rounds, as the late thread may lose its CPU meanwhile */
        gl_barrier b;
        gl_barrier_init(&b, 2);
        atomic_store(&b.spin_us, GL_BARRIER_SPIN_MIN_US);
        int got = 0, top = 0;
        #pragma omp parallel num_threads(2)
        {
            #pragma omp single
            got = omp_get_num_threads();
            for (int r = 0; got == 2 && r < 300; r++) {
                if (omp_get_thread_num() == 1) {
                    struct timespec t0, t;
                    clock_gettime(CLOCK_MONOTONIC, &t0);
                    do clock_gettime(CLOCK_MONOTONIC, &t);
                    while ((t.tv_sec - t0.tv_sec) * 1000000000L + t.tv_nsec - t0.tv_nsec < 20000);
                }
                gl_barrier_wait(&b);
                #pragma omp single
                {
                    const int v = atomic_load(&b.spin_us);
                    top = v > top ? v : top;
                }
            }
        }
        CHECK(got != 2 || top >= 16, "the budget rose only to %d us from %d", top, GL_BARRIER_SPIN_MIN_US);
        CHECK(top <= GL_BARRIER_SPIN_MAX_US, "budget %d us over the ceiling", top);
    }
    TEST_END();

    TEST_BEGIN("matmul_rows_chunks_equal_matmul_each");
    {
        uint64_t seed = 42;
        static const qt_type types[] = {QT_Q4_1, QT_Q8_0, QT_Q4_0, QT_Q5_1};
        int checked = 0;
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
            for (int T = 1; T <= 8; T += 7)
                for (int n_th = 2; n_th <= 3; n_th++)
                    for (int huge = 0; huge < 2; huge++) { /* tile, or row by row (one_row_min_bytes) */
                        const int r = rows_equal(types[i], T, n_th, huge, &seed);
                        CHECK(r != 0, "%s T=%d threads=%d huge=%d differs", qt_get(types[i])->name, T, n_th, huge);
                        checked += r > 0;
                    }
        CHECK(checked >= 8, "only %d cases took the plain path", checked);
    }
    TEST_END();
    /* The huge-page promoter: contents unchanged whatever it did, started
     * once however often asked, stopped whether or not it started (and
     * mid-way) or was waited for, NULL accepted everywhere. */
    TEST_BEGIN("promoter_keeps_contents");
    {
        const size_t n = (size_t)24 << 20;
        for (int variant = 0; variant < 5; variant++) {
            uint32_t *p = gl_promotable_alloc(n);
            CHECK(p != NULL, "gl_promotable_alloc");
            if (!p) break;
            for (size_t i = 0; i < n / 4; i++) p[i] = (uint32_t)(i * 2654435761u);
            gl_promoter *pr = gl_promote_new(p, n);
            CHECK(pr != NULL, "gl_promote_new");
            if (variant > 0) {
                gl_promote_go(pr);
                gl_promote_go(pr);
            }
            if (variant == 2) usleep(50 * 1000); /* let it collapse some */
            /* waited for (qlm_model_settle): before it started (returns
             * at once), after it ran through, and twice */
            if (variant == 4) gl_promote_wait(pr);
            if (variant >= 3) {
                gl_promote_go(pr);
                gl_promote_wait(pr);
                gl_promote_wait(pr);
            }
            gl_promote_stop(pr);
            size_t bad = 0;
            for (size_t i = 0; i < n / 4; i++) bad += p[i] != (uint32_t)(i * 2654435761u);
            CHECK(bad == 0, "variant %d: %zu words changed", variant, bad);
            gl_arena_free(p, n);
        }
        CHECK(gl_promote_new(NULL, n) == NULL, "nothing to promote");
        gl_promote_go(NULL);
        gl_promote_wait(NULL);
        gl_promote_stop(NULL);
    }
    TEST_END();
    TEST_EXIT();
}
