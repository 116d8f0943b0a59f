/* heap.h - a binary heap of fixed-size items under the caller's order: the
 * tokenizers' queues of candidate merges (tok_bpe.c by merge rank,
 * tok_spm.c by score), the item that comes `before` all others on top. */
#ifndef QLM_HEAP_H
#define QLM_HEAP_H

#include <stdbool.h>
#include <stddef.h>

typedef bool (*qlm_heap_before)(const void *a, const void *b);

typedef struct qlm_heap {
    unsigned char *items;
    size_t n, cap, size;
    qlm_heap_before before;
} qlm_heap;

/* An empty heap of items of `size` bytes; nothing is allocated until the
 * first push. */
qlm_heap qlm_heap_new(size_t size, qlm_heap_before before);
/* Copies *item in; -1 when memory runs out (the heap is unchanged). */
int qlm_heap_push(qlm_heap *h, const void *item);
/* Moves the top item to *out; the heap must not be empty. */
void qlm_heap_pop(qlm_heap *h, void *out);
void qlm_heap_free(qlm_heap *h);

#endif
