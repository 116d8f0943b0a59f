#include "json.h"

#include <stdint.h>

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0. */
static size_t utf8_valid_len(const unsigned char *s, size_t n)
{
    const unsigned c = s[0];
    size_t len;
    uint32_t cp, min;
    if (c < 0x80) return 1;
    else if ((c & 0xe0) == 0xc0) { len = 2; cp = c & 0x1f; min = 0x80; }
    else if ((c & 0xf0) == 0xe0) { len = 3; cp = c & 0x0f; min = 0x800; }
    else if ((c & 0xf8) == 0xf0) { len = 4; cp = c & 0x07; min = 0x10000; }
    else return 0;
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return len;
}

void qlm_json_str(FILE *f, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        const unsigned c = p[i];
        if (c == '"' || c == '\\') { fputc('\\', f); fputc((int)c, f); i++; }
        else if (c == '\n') { fputs("\\n", f); i++; }
        else if (c == '\r') { fputs("\\r", f); i++; }
        else if (c == '\t') { fputs("\\t", f); i++; }
        else if (c < 0x20 || c == 0x7f) { fprintf(f, "\\u%04x", c); i++; }
        else {
            size_t len = utf8_valid_len(p + i, n - i);
            if (!len) { fputs("\\ufffd", f); i++; }
            else { fwrite(p + i, 1, len, f); i += len; }
        }
    }
    fputc('"', f);
}
