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
void gl_arena_free(void *p, size_t n);

#endif
