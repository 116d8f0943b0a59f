/* unicode.h - UTF-8 decoding/encoding and code point categories for the
 * tokenizers.
 *
 * Decoding follows llama.cpp's lenient rules rather than strict UTF-8,
 * because token ids must match its output byte for byte: the length comes
 * from the lead byte, continuation bytes are checked, but overlong forms
 * and surrogates are accepted; anything else becomes U+FFFD one byte at a
 * time. */
#ifndef QLM_UNICODE_H
#define QLM_UNICODE_H

#include <stddef.h>
#include <stdint.h>

/* Category flags (one per general category class) plus White_Space.
 * Code points past U+10FFFF are UNDEF. */
enum {
    QLM_UCP_UNDEF = 0x01,      /* Cn: unassigned */
    QLM_UCP_NUMBER = 0x02,     /* \p{N} */
    QLM_UCP_LETTER = 0x04,     /* \p{L} */
    QLM_UCP_SEPARATOR = 0x08,  /* \p{Z} */
    QLM_UCP_MARK = 0x10,       /* \p{M} */
    QLM_UCP_PUNCT = 0x20,      /* \p{P} */
    QLM_UCP_SYMBOL = 0x40,     /* \p{S} */
    QLM_UCP_CONTROL = 0x80,    /* \p{C} except Cn */
    QLM_UCP_WHITESPACE = 0x100 /* Unicode White_Space, i.e. \s */
};

typedef struct qlm_ucp_range {
    uint32_t start;
    uint16_t flags;
} qlm_ucp_range;

/* Generated (src/unicode_data.c): sorted by start, first at 0. */
extern const qlm_ucp_range qlm_ucp_ranges[];
extern const size_t qlm_ucp_nranges;

#define QLM_UCP_REPLACEMENT 0xFFFDu

unsigned qlm_ucp_flags(uint32_t cp);

/* Sequence length announced by a lead byte (1 for continuation bytes and
 * ASCII, 2/3/4 by the high bits) -- how the tokenizers cut raw text into
 * symbols, valid or not. */
size_t qlm_utf8_len(unsigned char lead);

/* Decodes the code point at s[0..n) (n >= 1) and stores the bytes consumed
 * in *used (>= 1).  Malformed input gives U+FFFD with *used = 1, and so
 * does a 4-byte form past U+10FFFF (which has no encoding to go back to). */
uint32_t qlm_utf8_decode(const char *s, size_t n, size_t *used);

/* Encodes cp (<= U+10FFFF) into out; returns the byte count (1..4), or 0
 * for a code point past the range. */
size_t qlm_utf8_encode(uint32_t cp, char out[4]);

/* Decodes all of s[0..n) into a malloc'd array (*out, *n_out code points);
 * -1 on out of memory. */
int qlm_utf8_to_cps(const char *s, size_t n, uint32_t **out, size_t *n_out);

#endif
