/* heap.c - see heap.h.  Both operations move a hole instead of swapping:
 * each level costs one copy, not three. */
#include "heap.h"

#include <stdlib.h>
#include <string.h>

qlm_heap qlm_heap_new(size_t size, qlm_heap_before before)
{
    return (qlm_heap){.size = size, .before = before};
}

static unsigned char *at(const qlm_heap *h, size_t i) { return h->items + i * h->size; }

int qlm_heap_push(qlm_heap *h, const void *item)
{
    if (h->n == h->cap) {
        const size_t cap = h->cap ? h->cap * 2 : 64;
        unsigned char *items = realloc(h->items, cap * h->size);
        if (!items) return -1;
        h->items = items;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0 && h->before(item, at(h, (i - 1) / 2))) {
        memcpy(at(h, i), at(h, (i - 1) / 2), h->size);
        i = (i - 1) / 2;
    }
    memcpy(at(h, i), item, h->size);
    return 0;
}

void qlm_heap_pop(qlm_heap *h, void *out)
{
    memcpy(out, at(h, 0), h->size);
    const size_t n = --h->n;
    const unsigned char *last = at(h, n); /* past the live items: moves below never reach it */
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && h->before(at(h, c + 1), at(h, c))) c++;
        if (!h->before(at(h, c), last)) break;
        memcpy(at(h, i), at(h, c), h->size);
        i = c;
    }
    if (n) memcpy(at(h, i), last, h->size);
}

void qlm_heap_free(qlm_heap *h)
{
    free(h->items);
    *h = (qlm_heap){.size = h->size, .before = h->before};
}
