/* membw.h - how fast this machine reads memory: the ceiling of decode.
 *
 * Decoding one token reads every weight once, so tokens/s can never exceed
 * read bandwidth / bytes of weights; benchmarks quote both. */
#ifndef QLM_GL_MEMBW_H
#define QLM_GL_MEMBW_H

#include <stddef.h>

/* Best-of-reps read bandwidth in GB/s (1e9 bytes/s) over a buffer of
 * `bytes` (use several times the last-level cache), read by all OpenMP
 * threads, each a contiguous share, as a STREAM-style sum; the buffer is
 * asked for in transparent huge pages.  Returns 0 if it cannot be
 * allocated. */
double gl_read_bandwidth(size_t bytes, int reps);

#endif
