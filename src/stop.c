#include "stop.h"

#include <stdlib.h>
#include <string.h>

void qlm_stopper_init(qlm_stopper *s, const char *const *stops, int n_stops)
{
    memset(s, 0, sizeof *s);
    s->stops = stops;
    s->n_stops = n_stops;
}

void qlm_stopper_free(qlm_stopper *s)
{
    free(s->text);
    memset(s, 0, sizeof *s);
}

/* Bytes at the end of text that could begin some stop string. */
static size_t held_back(const qlm_stopper *s)
{
    size_t hold = 0;
    for (int i = 0; i < s->n_stops; i++) {
        const size_t sl = strlen(s->stops[i]);
        for (size_t k = sl > 1 ? sl - 1 : 0; k > hold; k--)
            if (k <= s->len - s->emitted && !memcmp(s->text + s->len - k, s->stops[i], k)) {
                hold = k;
                break;
            }
    }
    return hold;
}

int qlm_stopper_feed(qlm_stopper *s, const char *piece, size_t n, const char **out, size_t *out_n)
{
    *out = NULL;
    *out_n = 0;
    if (s->len + n + 1 > s->cap) {
        size_t cap = (s->len + n + 1) * 2;
        char *t = realloc(s->text, cap);
        if (!t) return -1;
        s->text = t;
        s->cap = cap;
    }
    memcpy(s->text + s->len, piece, n);
    s->len += n;
    /* A match can only involve text not yet released (released text was
     * checked to hold no stop-string prefix at its end). */
    size_t stop_at = s->len + 1;
    for (int i = 0; i < s->n_stops; i++) {
        const size_t sl = strlen(s->stops[i]);
        if (!sl) continue;
        for (size_t p = s->emitted; p + sl <= s->len; p++)
            if (!memcmp(s->text + p, s->stops[i], sl)) {
                if (p < stop_at) stop_at = p;
                break;
            }
    }
    if (stop_at <= s->len) {
        *out = s->text + s->emitted;
        *out_n = stop_at - s->emitted;
        s->emitted = stop_at;
        return 1;
    }
    const size_t safe = s->len - held_back(s);
    *out = s->text + s->emitted;
    *out_n = safe - s->emitted;
    s->emitted = safe;
    return 0;
}

void qlm_stopper_flush(qlm_stopper *s, const char **out, size_t *out_n)
{
    *out = s->text + s->emitted;
    *out_n = s->len - s->emitted;
    s->emitted = s->len;
}
