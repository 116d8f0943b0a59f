#include "ggml-lite/threads.h"

#include <hwloc.h>
#include <limits.h>
#include <omp.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

int gl_physical_cores(void)
{
    int n = 0;
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) == 0) {
        if (hwloc_topology_load(topo) == 0) n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
        hwloc_topology_destroy(topo);
    }
    if (n < 1) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n;
}

void gl_set_threads(int n)
{
    omp_set_num_threads(n < 1 ? 1 : n);
}

void gl_barrier_init(gl_barrier *b, int n_threads)
{
    atomic_store(&b->arrived, 0);
    atomic_store(&b->round, 0);
    atomic_store(&b->sleeping, 0);
    atomic_store(&b->spin_us, GL_BARRIER_SPIN_MAX_US);
    atomic_store(&b->released_ns, 0);
    b->n = n_threads < 1 ? 1 : (unsigned)n_threads;
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Sleeps while round still reads r (returns at once if it does not). */
static void sleep_on(atomic_uint *round, unsigned r)
{
#ifdef __linux__
    syscall(SYS_futex, (unsigned *)round, FUTEX_WAIT_PRIVATE, r, NULL, NULL, 0);
#else
    (void)round;
    (void)r;
    sched_yield();
#endif
}

static void wake_all(atomic_uint *round)
{
#ifdef __linux__
    syscall(SYS_futex, (unsigned *)round, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
#else
    (void)round;
#endif
}

void gl_barrier_wait(gl_barrier *b)
{
    gl_barrier_wait_pf(b, (gl_prefetch){0});
}

void gl_barrier_wait_pf(gl_barrier *b, gl_prefetch pf)
{
    if (b->n <= 1) return;
    /* the round is read before this thread counts itself in: after that
     * the last thread may end the round at any moment */
    const unsigned r = atomic_load(&b->round);
    if (atomic_fetch_add(&b->arrived, 1) == b->n - 1) {
        atomic_store(&b->arrived, 0); /* nobody counts in again before the new round shows */
        if (atomic_load_explicit(&b->sleeping, memory_order_relaxed))
            atomic_store_explicit(&b->released_ns, now_ns(), memory_order_relaxed);
        atomic_fetch_add(&b->round, 1);
        if (atomic_load(&b->sleeping)) wake_all(&b->round);
        return;
    }
    /* The clock is read every 64 pauses (a pause is 10-150 cycles by
     * CPU).  The budget and the stamp are hints: relaxed, and a lost or
     * stale update costs a little time, never correctness. */
    const int budget = atomic_load_explicit(&b->spin_us, memory_order_relaxed);
    const long long t0 = now_ns();
    const char *p = pf.p, *const p_end = p ? p + (pf.n < GL_PREFETCH_MAX ? pf.n : GL_PREFETCH_MAX) : p;
    for (unsigned i = 1; atomic_load_explicit(&b->round, memory_order_acquire) == r; i++) {
        /* 512 bytes per look at the round: the prefetches issue at the
         * rate the memory takes them */
        if (p < p_end) {
            for (int k = 0; k < 8; k++) __builtin_prefetch(p + 64 * k, 0, 2);
            p += 512;
        } else {
            cpu_relax();
        }
        if (i % 64 == 0 && now_ns() - t0 > budget * 1000LL) {
            /* sequentially consistent with the last thread's bump and
             * check: either it sees this thread counted as sleeping (and
             * stamps and wakes), or this thread sees the new round */
            atomic_fetch_add(&b->sleeping, 1);
            while (atomic_load(&b->round) == r) sleep_on(&b->round, r);
            atomic_fetch_sub(&b->sleeping, 1);
            const long long need = atomic_load_explicit(&b->released_ns, memory_order_relaxed) - t0;
            const int up = budget * 2 < GL_BARRIER_SPIN_MAX_US ? budget * 2 : GL_BARRIER_SPIN_MAX_US,
                      down = budget / 2 > GL_BARRIER_SPIN_MIN_US ? budget / 2 : GL_BARRIER_SPIN_MIN_US;
            atomic_store_explicit(&b->spin_us, need <= GL_BARRIER_SPIN_MAX_US * 1000LL ? up : down,
                                  memory_order_relaxed);
            return;
        }
    }
}
