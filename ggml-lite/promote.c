#include "ggml-lite/promote.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25 /* Linux 6.1; older headers lack the name */
#endif

/* Bytes per madvise: one huge page, so that a stop request (a short run
 * ending) waits for one page's copy at most. */
#define STEP ((size_t)2 << 20)
#define HUGE ((size_t)2 << 20)

struct gl_promoter {
    pthread_t thread;
    uint8_t *p;
    size_t n;
    atomic_bool stop;
    atomic_bool started; /* gl_promote_go ran */
    atomic_bool running; /* and its thread exists, not joined yet */
    atomic_bool done;    /* every step collapsed */
};

static void *promote(void *arg)
{
    gl_promoter *pr = arg;
    /* the lowest priority: decoding threads come first, this thread takes
     * the time they leave (a thread's own nice value, on Linux) */
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
    /* whole 2 MB pages only: a partial one cannot be collapsed */
    uintptr_t a = ((uintptr_t)pr->p + HUGE - 1) & ~(uintptr_t)(HUGE - 1);
    const uintptr_t end = ((uintptr_t)pr->p + pr->n) & ~(uintptr_t)(HUGE - 1);
    bool all = true;
    for (; a < end && !atomic_load_explicit(&pr->stop, memory_order_relaxed); a += STEP) {
        const size_t len = end - a < STEP ? end - a : STEP;
        /* EINVAL/ENOSYS: a kernel without it; stop.  EAGAIN/ENOMEM (no
         * huge page free just now): leave this step small, go on. */
        if (madvise((void *)a, len, MADV_COLLAPSE) != 0) {
            all = false;
            if (errno == EINVAL || errno == ENOSYS) break;
        }
    }
    if (all && a >= end) atomic_store_explicit(&pr->done, true, memory_order_relaxed);
    return NULL;
}

gl_promoter *gl_promote_new(void *p, size_t n)
{
    if (!p || n < 2 * HUGE) return NULL;
    gl_promoter *pr = malloc(sizeof *pr);
    if (!pr) return NULL;
    pr->p = p;
    pr->n = n;
    atomic_init(&pr->stop, false);
    atomic_init(&pr->started, false);
    atomic_init(&pr->running, false);
    atomic_init(&pr->done, false);
    return pr;
}

void gl_promote_go(gl_promoter *pr)
{
    if (!pr || atomic_exchange(&pr->started, true)) return;
    if (pthread_create(&pr->thread, NULL, promote, pr) == 0) atomic_store(&pr->running, true);
}

/* Joins the thread if it exists and was not joined yet. */
static void join(gl_promoter *pr)
{
    if (atomic_exchange(&pr->running, false)) pthread_join(pr->thread, NULL);
}

const atomic_bool *gl_promote_flag(const gl_promoter *pr)
{
    return pr ? &pr->done : NULL;
}

void gl_promote_wait(gl_promoter *pr)
{
    if (pr) join(pr);
}

void gl_promote_stop(gl_promoter *pr)
{
    if (!pr) return;
    atomic_store(&pr->stop, true);
    join(pr);
    free(pr);
}
