/* test_heap.c - src/heap.h: items come out in the caller's order, every
 * pushed item exactly once, across growth and interleaved pushes and pops,
 * with ties settled by the order's own tie-break as the tokenizers use it. */
#include <stdint.h>
#include <string.h>

#include "src/heap.h"
#include "test.h"
#include "test_rng.h"

typedef struct item {
    int key, left; /* as the merge queues: key first, then the leftmost */
    uint32_t tag;  /* which push this was */
} item;

static bool item_before(const void *pa, const void *pb)
{
    const item *a = pa, *b = pb;
    return a->key < b->key || (a->key == b->key && a->left < b->left);
}

/* Pushes n random items (keys below `keys`, so ties abound), popping one
 * after every `pop_every` pushes (0: none), then drains; checks each
 * popped item against the first, in the order, of those the heap holds. */
static void check_order(const char *name, int n, int keys, int pop_every)
{
    TEST_BEGIN(name);
    qlm_heap h = {0};
    item *live = test_xmalloc((size_t)n * sizeof *live); /* what the heap should hold */
    int n_live = 0, popped = 0, since_pop = 0;
    unsigned char *seen = test_xmalloc((size_t)n);
    memset(seen, 0, (size_t)n);
    for (int i = 0; i < n || n_live > 0;) {
        if (i < n && (pop_every == 0 || since_pop < pop_every)) {
            item it = {rng_below(keys), rng_below(1 << 20), (uint32_t)i};
            CHECK(qlm_heap_push(&h, &it, sizeof it, item_before) == 0, "push %d failed", i);
            live[n_live++] = it;
            i++;
            since_pop++;
            continue;
        }
        CHECK(h.n == (size_t)n_live, "%zu items held, %d pushed and not popped", h.n, n_live);
        /* the expected top: the first of the live items in the order */
        int best = 0;
        for (int k = 1; k < n_live; k++)
            if (item_before(&live[k], &live[best])) best = k;
        item got;
        qlm_heap_pop(&h, &got, sizeof got, item_before);
        CHECK(got.key == live[best].key && got.left == live[best].left,
              "pop %d: (%d, %d), expected (%d, %d)", popped, got.key, got.left, live[best].key, live[best].left);
        CHECK(got.tag < (uint32_t)n && !seen[got.tag], "pop %d: item %u twice or unknown", popped, got.tag);
        if (got.tag < (uint32_t)n) seen[got.tag] = 1;
        /* drop the popped one (by tag, so equal keys stay distinct) */
        for (int k = 0; k < n_live; k++)
            if (live[k].tag == got.tag) {
                live[k] = live[--n_live];
                break;
            }
        popped++;
        since_pop = 0;
    }
    CHECK(popped == n && h.n == 0, "%d popped of %d, %zu left", popped, n, h.n);
    qlm_heap_free(&h);
    CHECK(h.items == NULL && h.n == 0 && h.cap == 0, "free left items behind");
    free(seen);
    free(live);
    TEST_END();
}

int main(void)
{
    check_order("heap_sorted_drain", 1000, 1 << 30, 0);
    check_order("heap_ties", 700, 5, 0);
    check_order("heap_interleaved", 900, 50, 2);
    check_order("heap_one", 1, 3, 0);
    /* past the first allocation (64) and two doublings, popping as it grows */
    check_order("heap_growth", 300, 1000, 7);
    TEST_EXIT();
}
