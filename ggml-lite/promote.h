/* promote.h - memory moved into transparent huge pages in the background.
 *
 * Weights that qlm copies at load (the x16 layout, ggml-lite/layout.h)
 * stream faster from 2 MB pages (tl-q4_0 decode 1.12x here), but asking
 * for huge pages when the memory is first written puts their cost in the
 * load: on this VM, faulting in 600 MB of fresh huge pages took 0.04 s on
 * one run and 1.4 s on the next (pages the host had to back anew), where
 * 4 KB pages took 0.3 s every time.  So the copy is written in ordinary
 * pages, and a thread then asks the kernel to collapse them
 * (MADV_COLLAPSE, Linux 6.1+) a huge page at a time while generation
 * goes on; the contents never change, only the pages under them.  Where the
 * kernel cannot collapse, the thread stops and the pages stay small. */
#ifndef QLM_GL_PROMOTE_H
#define QLM_GL_PROMOTE_H

#include <stdatomic.h>
#include <stddef.h>

/* The memory: gl_promotable_alloc (ggml-lite/arena.h). */
typedef struct gl_promoter gl_promoter;
/* A promoter for [p, p + n), not started yet (NULL: out of memory, or
 * nothing to collapse). */
gl_promoter *gl_promote_new(void *p, size_t n);
/* Starts collapsing on a thread of its own, the first time it is called
 * (any thread may call it, any number of times; NULL is fine).  The
 * model starts it after its first forward pass: collapsing takes the
 * address space's lock, and started at load it held up the page faults
 * of the rest of the load (0.4-1.3 s where the load took 0.3 s alone).
 * If no thread can start, the pages stay small. */
void gl_promote_go(gl_promoter *pr);
/* Waits until the thread has been through all of the memory; returns at
 * once if it never started (NULL is fine).  For a benchmark, which times
 * the steady state after its warm-up, as llama-bench does after its load
 * repacks the weights. */
void gl_promote_wait(gl_promoter *pr);
/* A flag that reads true once the thread has moved all of the memory
 * into huge pages (for gl_tensor.huge); valid while pr is. */
const atomic_bool *gl_promote_flag(const gl_promoter *pr);
/* Stops the thread at its next step (one huge page), waits for it and
 * frees pr; NULL is fine.  Call before the memory is freed. */
void gl_promote_stop(gl_promoter *pr);

#endif
