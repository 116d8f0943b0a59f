/* unicode.c - UTF-8 and category lookups (see unicode.h). */
#include "unicode.h"

#include <stdlib.h>

unsigned qlm_ucp_flags(uint32_t cp)
{
    if (cp >= 0x110000)
        return QLM_UCP_UNDEF;
    size_t lo = 0, hi = qlm_ucp_nranges; /* last range with start <= cp */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (qlm_ucp_ranges[mid].start <= cp)
            lo = mid;
        else
            hi = mid;
    }
    return qlm_ucp_ranges[lo].flags;
}

size_t qlm_utf8_len(unsigned char lead)
{
    static const unsigned char len_by_high_nibble[16] = {
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4,
    };
    return len_by_high_nibble[lead >> 4];
}

static int is_cont(unsigned char c) { return (c & 0xC0) == 0x80; }

uint32_t qlm_utf8_decode(const char *s, size_t n, size_t *used)
{
    const unsigned char *u = (const unsigned char *)s;
    unsigned char c = u[0];
    *used = 1;
    if (c < 0x80)
        return c;
    if (c < 0xC0) /* stray continuation byte */
        return QLM_UCP_REPLACEMENT;
    if (c < 0xE0) {
        if (n < 2 || !is_cont(u[1]))
            return QLM_UCP_REPLACEMENT;
        *used = 2;
        return ((uint32_t)(c & 0x1F) << 6) | (u[1] & 0x3F);
    }
    if (c < 0xF0) {
        if (n < 3 || !is_cont(u[1]) || !is_cont(u[2]))
            return QLM_UCP_REPLACEMENT;
        *used = 3;
        return ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(u[1] & 0x3F) << 6) | (u[2] & 0x3F);
    }
    if (c < 0xF8) {
        if (n < 4 || !is_cont(u[1]) || !is_cont(u[2]) || !is_cont(u[3]))
            return QLM_UCP_REPLACEMENT;
        uint32_t cp = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(u[1] & 0x3F) << 12) |
                      ((uint32_t)(u[2] & 0x3F) << 6) | (u[3] & 0x3F);
        if (cp > 0x10FFFF)
            return QLM_UCP_REPLACEMENT;
        *used = 4;
        return cp;
    }
    return QLM_UCP_REPLACEMENT;
}

size_t qlm_utf8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp <= 0x10FFFF) {
        out[0] = (char)(0xF0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (char)(0x80 | (cp & 0x3F));
        return 4;
    }
    return 0;
}

int qlm_utf8_to_cps(const char *s, size_t n, uint32_t **out, size_t *n_out)
{
    uint32_t *cps = malloc((n ? n : 1) * sizeof *cps);
    if (!cps)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        size_t used;
        cps[k++] = qlm_utf8_decode(s + i, n - i, &used);
        i += used;
    }
    *out = cps;
    *n_out = k;
    return 0;
}
