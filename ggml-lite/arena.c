#include "ggml-lite/arena.h"

#include <sys/mman.h>

void *gl_arena_alloc(size_t n)
{
    if (!n) return NULL;
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
    if (n >= (2u << 20)) madvise(p, n, MADV_HUGEPAGE); /* a hint: failure changes nothing */
#endif
    return p;
}

void gl_arena_free(void *p, size_t n)
{
    if (p) munmap(p, n);
}
