/* threads.h - how many threads to run, from the machine's topology, and
 * the barrier the fused forward pass waits at. */
#ifndef QLM_GL_THREADS_H
#define QLM_GL_THREADS_H

#include <stdatomic.h>
#include <stddef.h>

/* Physical cores (hwloc), at least 1; hyperthreads do not help the
 * memory-bound decode loop and hurt it when oversubscribed. */
int gl_physical_cores(void);
/* Makes later parallel ops use n threads. */
void gl_set_threads(int n);

/* A barrier for the n threads of one parallel region that spins a short
 * while before it sleeps, whatever OMP_WAIT_POLICY says.
 *
 * Why: a batched decoding step passes some 200 barriers (7 a layer), each
 * after tens of microseconds of work.  With OMP_WAIT_POLICY=passive an
 * OpenMP barrier puts the early thread to sleep at once, and waking a
 * halted vCPU took 30-40 us here (two threads, 6 us of work per round:
 * 42 us a round passive, 6.7 active), about the work itself; active
 * spinning, the default, costs a loaded machine far more (a spinner holds
 * the CPU its late partner needs).  So a waiter spins up to the
 * barrier's current budget, then sleeps in the kernel.  The budget adapts
 * to the waits a sleeper turns out to have needed (the last thread
 * stamps its arrival): doubled by one within GL_BARRIER_SPIN_MAX_US (a
 * longer spin would have saved the sleep), halved by a longer one (another
 * process has a CPU, or the work is uneven: spinning then takes a CPU the
 * late thread may need, and would not have saved it), within
 * [GL_BARRIER_SPIN_MIN_US, GL_BARRIER_SPIN_MAX_US].  gl_barrier_init
 * once before the first use; the barrier is whole again after every
 * round, so one serves any number of regions of the same n threads. */
typedef struct gl_barrier {
    atomic_uint arrived;      /* threads at the barrier this round */
    atomic_uint round;        /* bumped by the last thread of each round */
    atomic_uint sleeping;     /* threads asleep on round */
    atomic_int spin_us;       /* the current spin budget */
    atomic_llong released_ns; /* when the last round's last thread arrived */
    unsigned n;
} gl_barrier;
#define GL_BARRIER_SPIN_MIN_US 2
#define GL_BARRIER_SPIN_MAX_US 200
void gl_barrier_init(gl_barrier *b, int n_threads);
/* Every one of the n threads calls it; none returns before all have
 * arrived, and every write before it is visible to all after it. */
void gl_barrier_wait(gl_barrier *b);

/* Bytes a thread reads first after a barrier.  Decoding is bound by
 * memory reads; a thread that waits at a barrier leaves its share of the
 * bandwidth idle, so it asks for these lines (into L2) while it waits. */
typedef struct gl_prefetch {
    const void *p;
    size_t n;
} gl_prefetch;
/* At most this much is asked for per wait: what a core reads in ~20 us,
 * well within its L2. */
#define GL_PREFETCH_MAX (256 * 1024)
/* gl_barrier_wait, prefetching pf's bytes (up to GL_PREFETCH_MAX) while
 * this thread waits; the last thread to arrive prefetches nothing. */
void gl_barrier_wait_pf(gl_barrier *b, gl_prefetch pf);

#endif
