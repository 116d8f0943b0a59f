/* arena.h - large, zeroed, page-aligned allocations for the KV cache.
 *
 * Anonymous mappings rather than malloc: their pages can be bound to a
 * NUMA node after the fact (numa.h), they start zeroed (so never-written
 * cells are finite), and they are kept on small pages, so only the cells
 * written are ever zeroed (arena.c says why that matters). */
#ifndef QLM_GL_ARENA_H
#define QLM_GL_ARENA_H

#include <stddef.h>

/* n zeroed bytes (n > 0), or NULL. */
void *gl_arena_alloc(size_t n);
/* n zeroed bytes (n > 0) that will be streamed through (weights, the
 * bandwidth probe's buffer): transparent huge pages asked for, since in
 * 4 KB pages this kind of VM reads them markedly slower (membw.c); with
 * the ask refused, ordinary pages.  NULL on failure. */
void *gl_stream_alloc(size_t n);
/* n zeroed bytes (n > 0) with no huge-page advice either way, so that a
 * promoter (promote.h) may collapse them later, or NULL. */
void *gl_promotable_alloc(size_t n);
/* Frees any of these. */
void gl_arena_free(void *p, size_t n);
/* Bytes the system could hand out without swapping (Linux's
 * MemAvailable: free memory plus the page cache it can drop), or 0 where
 * unknown. */
size_t gl_mem_available(void);

#endif
