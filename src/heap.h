/* heap.h - a binary heap of fixed-size items under the caller's order: the
 * tokenizers' queues of candidate merges (tok_bpe.c by merge rank,
 * tok_spm.c by score), the item that comes `before` all others on top.
 * Push and pop move a hole instead of swapping: one copy per level, not
 * three.
 *
 * Each call names the item size and the order, and the functions are
 * always inlined, so every caller gets them compiled for its own item and
 * comparison: through a function pointer, with copies of a run-time size,
 * the SentencePiece tokenizer ran 1.35x slower. */
#ifndef QLM_HEAP_H
#define QLM_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct qlm_heap {
    unsigned char *items;
    size_t n, cap; /* items held, room for */
} qlm_heap;

typedef bool (*qlm_heap_before)(const void *a, const void *b);

#define QLM_HEAP_INLINE static inline __attribute__((always_inline))

/* Copies *item in; -1 when memory runs out (the heap is unchanged). */
QLM_HEAP_INLINE int qlm_heap_push(qlm_heap *h, const void *item, size_t size, qlm_heap_before before)
{
    if (h->n == h->cap) {
        const size_t cap = h->cap ? h->cap * 2 : 64;
        unsigned char *items = realloc(h->items, cap * size);
        if (!items) return -1;
        h->items = items;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0 && before(item, h->items + (i - 1) / 2 * size)) {
        memcpy(h->items + i * size, h->items + (i - 1) / 2 * size, size);
        i = (i - 1) / 2;
    }
    memcpy(h->items + i * size, item, size);
    return 0;
}

/* Moves the top item to *out; the heap must not be empty. */
QLM_HEAP_INLINE void qlm_heap_pop(qlm_heap *h, void *out, size_t size, qlm_heap_before before)
{
    memcpy(out, h->items, size);
    const size_t n = --h->n;
    /* past the live items: the moves below never reach it */
    const unsigned char *last = h->items + n * size;
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && before(h->items + (c + 1) * size, h->items + c * size)) c++;
        if (!before(h->items + c * size, last)) break;
        memcpy(h->items + i * size, h->items + c * size, size);
        i = c;
    }
    if (n) memcpy(h->items + i * size, last, size);
}

static inline void qlm_heap_free(qlm_heap *h)
{
    free(h->items);
    *h = (qlm_heap){0};
}

#endif
