#include "ggml-lite/arena.h"

#include <stdio.h>
#include <sys/mman.h>

/* n bytes of private anonymous memory (zeroed), or NULL. */
static void *anon(size_t n)
{
    if (!n) return NULL;
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void *gl_stream_alloc(size_t n)
{
    void *p = anon(n);
    if (!p) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, n, MADV_HUGEPAGE);
#endif
    return p;
}

void *gl_arena_alloc(size_t n)
{
    void *p = anon(n);
    if (!p) return NULL;
#ifdef MADV_NOHUGEPAGE
    /* Small pages, even where the system makes huge ones by default: the
     * cache is head-major, so a sequence's first token touches every
     * (layer, head) slab, and with 2 MiB pages that zeroes the whole
     * cache up front (batch --parallel 8 on SmolLM2: 380 MB zeroed for
     * 12 MB used, 8-12% of the run).  A hint: failure changes nothing. */
    madvise(p, n, MADV_NOHUGEPAGE);
#endif
    return p;
}

void *gl_promotable_alloc(size_t n)
{
    return anon(n);
}

void gl_arena_free(void *p, size_t n)
{
    if (p) munmap(p, n);
}

size_t gl_mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[128];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    fclose(f);
    return (size_t)kb * 1024;
}
