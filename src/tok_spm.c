/* tok_spm.c - SentencePiece-style tokenization (tokenizer.ggml.model =
 * "llama").
 *
 * The fragment (spaces already turned into U+2581) starts as one symbol
 * per UTF-8 character; neighbouring symbols whose concatenation is a
 * token are merged, highest token score first (leftmost on ties), until
 * no pair is a token.  A symbol that is no token at all falls back to
 * one <0xNN> token per byte.  Unlike BPE there is no pre-tokenizer: the
 * whole fragment is one sequence. */
#include <stdlib.h>

#include "heap.h"
#include "tok_internal.h"
#include "unicode.h"

typedef struct sym {
    int prev, next;
    size_t off, n; /* bytes of the text; n = 0 once merged away */
} sym;

typedef struct pair {
    float score;
    int left, right;
    size_t size; /* bytes of the merged text when queued */
} pair;

typedef struct spm_work {
    const qlm_vocab *v;
    const char *text;
    sym *s;
    qlm_heap heap; /* of pair */
} spm_work;

static bool before(const void *pa, const void *pb)
{
    const pair *a = pa, *b = pb;
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

/* Queues (left, right) if their joined text is a token.  Neighbouring
 * symbols are adjacent in the text, so the joined text is a slice. */
static int try_pair(spm_work *w, int left, int right)
{
    if (left < 0 || right < 0)
        return 0;
    size_t size = w->s[left].n + w->s[right].n;
    int32_t id = qlm_tok_lookup(w->v, w->text + w->s[left].off, size);
    if (id < 0)
        return 0;
    pair p = {w->v->score[id], left, right, size};
    return qlm_heap_push(&w->heap, &p, sizeof p, before);
}

static int emit(spm_work *w, const sym *s, qlm_ids *out)
{
    const qlm_vocab *v = w->v;
    int32_t id = qlm_tok_lookup(v, w->text + s->off, s->n);
    if (id >= 0)
        return qlm_ids_push(out, id);
    for (size_t i = 0; i < s->n; i++) {
        /* A vocab without the byte has no way to say it: the reference
         * throws there; the unknown token is the honest stand-in. */
        int32_t b = v->byte_token[(unsigned char)w->text[s->off + i]];
        if (b < 0)
            b = v->unk;
        if (b >= 0 && qlm_ids_push(out, b))
            return -1;
    }
    return 0;
}

int qlm_spm_tokenize(const qlm_vocab *v, const char *text, size_t len, qlm_ids *out)
{
    if (len == 0)
        return 0;
    spm_work w = {.v = v, .text = text};
    int rc = -1;
    w.s = malloc(len * sizeof *w.s);
    if (!w.s)
        return -1;
    int n = 0;
    for (size_t off = 0; off < len;) {
        size_t k = qlm_utf8_len((unsigned char)text[off]);
        if (k > len - off)
            k = len - off;
        w.s[n] = (sym){n - 1, off + k == len ? -1 : n + 1, off, k};
        n++;
        off += k;
    }
    for (int i = 1; i < n; i++)
        if (try_pair(&w, i - 1, i))
            goto done;
    while (w.heap.n) {
        pair p;
        qlm_heap_pop(&w.heap, &p, sizeof p, before);
        sym *l = &w.s[p.left], *r = &w.s[p.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != p.size)
            continue; /* one side changed since it was queued */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            w.s[r->next].prev = p.left;
        if (try_pair(&w, l->prev, p.left) || try_pair(&w, p.left, l->next))
            goto done;
    }
    for (int i = 0; i >= 0; i = w.s[i].next)
        if (emit(&w, &w.s[i], out))
            goto done;
    rc = 0;
done:
    free(w.s);
    qlm_heap_free(&w.heap);
    return rc;
}
