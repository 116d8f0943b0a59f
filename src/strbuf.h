/* strbuf.h - a growing text buffer: generated text collected for a JSON
 * record, a chat reply, a batch line. */
#ifndef QLM_STRBUF_H
#define QLM_STRBUF_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Appends s[0..n) to *buf (length *len, capacity *cap), keeping it
 * NUL-terminated; false (buffer unchanged) when memory runs out. */
static inline bool qlm_strbuf_add(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        const size_t nc = (*len + n + 1) * 2;
        char *nb = realloc(*buf, nc);
        if (!nb) return false;
        *buf = nb;
        *cap = nc;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = 0;
    return true;
}

#endif
