/* jsonl.c - a small strict JSON parser into a tree of qlm_jval. */
#include "jsonl.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

#define MAX_DEPTH 64

typedef struct parser {
    const char *s;
    size_t n, i;
    qlm_err *err;
} parser;

static int bad(parser *p, const char *what)
{
    return qlm_fail(p->err, QLM_EUSAGE, "col %zu: %s", p->i + 1, what);
}

static void skip_ws(parser *p)
{
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' ||
                           p->s[p->i] == '\r'))
        p->i++;
}

static void clear(qlm_jval *v)
{
    if (v->type == QLM_JARR || v->type == QLM_JOBJ) {
        for (size_t i = 0; i < v->n; i++) {
            clear(&v->items[i]);
            if (v->keys) free(v->keys[i]);
        }
        free(v->items);
        free(v->keys);
    }
    free(v->str);
    memset(v, 0, sizeof *v);
}

void qlm_jval_free(qlm_jval *v)
{
    if (!v) return;
    clear(v);
    free(v);
}

static int hex4(parser *p, uint32_t *out)
{
    if (p->n - p->i < 4) return bad(p, "truncated \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; k++) {
        const char c = p->s[p->i++];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
        else return bad(p, "bad hex digit in \\u escape");
    }
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xc0 | cp >> 6); o[1] = (char)(0x80 | (cp & 0x3f)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | cp >> 12); o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | cp >> 18); o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3f)); o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* At the opening quote.  Decoded text is never longer than its source. */
static int parse_string(parser *p, char **out, size_t *len)
{
    p->i++;
    size_t start = p->i;
    char *o = malloc(p->n - start + 1);
    if (!o) return qlm_fail(p->err, QLM_ERUNTIME, "out of memory");
    size_t k = 0;
    for (;;) {
        if (p->i >= p->n) { free(o); return bad(p, "unterminated string"); }
        const unsigned char c = (unsigned char)p->s[p->i];
        if (c == '"') { p->i++; break; }
        if (c < 0x20) { free(o); return bad(p, "control character in string"); }
        if (c != '\\') { o[k++] = (char)c; p->i++; continue; }
        if (++p->i >= p->n) { free(o); return bad(p, "unterminated escape"); }
        const char e = p->s[p->i++];
        switch (e) {
        case '"': o[k++] = '"'; break;
        case '\\': o[k++] = '\\'; break;
        case '/': o[k++] = '/'; break;
        case 'b': o[k++] = '\b'; break;
        case 'f': o[k++] = '\f'; break;
        case 'n': o[k++] = '\n'; break;
        case 'r': o[k++] = '\r'; break;
        case 't': o[k++] = '\t'; break;
        case 'u': {
            uint32_t cp, lo;
            if (hex4(p, &cp)) { free(o); return p->err ? p->err->code : QLM_EUSAGE; }
            if (cp >= 0xd800 && cp <= 0xdbff && p->n - p->i >= 6 && p->s[p->i] == '\\' &&
                p->s[p->i + 1] == 'u') {
                const size_t save = p->i;
                p->i += 2;
                if (hex4(p, &lo)) { free(o); return QLM_EUSAGE; }
                if (lo >= 0xdc00 && lo <= 0xdfff) cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                else p->i = save;
            }
            /* A lone surrogate cannot be UTF-8: it becomes U+FFFD, as
             * Python's json module would refuse to encode it. */
            if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd;
            k += put_utf8(o + k, cp);
            break;
        }
        default: free(o); p->i--; return bad(p, "invalid escape in string");
        }
    }
    o[k] = 0;
    *out = o;
    *len = k;
    return 0;
}

static int parse_value(parser *p, qlm_jval *v, int depth);

static int push(parser *p, qlm_jval *v, size_t *cap, char *key)
{
    if (v->n == *cap) {
        const size_t nc = *cap ? *cap * 2 : 4;
        qlm_jval *ni = realloc(v->items, nc * sizeof *ni);
        if (!ni) { free(key); return qlm_fail(p->err, QLM_ERUNTIME, "out of memory"); }
        v->items = ni;
        if (v->type == QLM_JOBJ) {
            char **nk = realloc(v->keys, nc * sizeof *nk);
            if (!nk) { free(key); return qlm_fail(p->err, QLM_ERUNTIME, "out of memory"); }
            v->keys = nk;
        }
        *cap = nc;
    }
    memset(&v->items[v->n], 0, sizeof v->items[0]);
    if (v->type == QLM_JOBJ) v->keys[v->n] = key;
    v->n++;
    return 0;
}

static int parse_container(parser *p, qlm_jval *v, int depth)
{
    const bool obj = p->s[p->i] == '{';
    const char close = obj ? '}' : ']';
    v->type = obj ? QLM_JOBJ : QLM_JARR;
    p->i++;
    size_t cap = 0;
    skip_ws(p);
    if (p->i < p->n && p->s[p->i] == close) { p->i++; return 0; }
    for (;;) {
        char *key = NULL;
        skip_ws(p);
        if (obj) {
            size_t kl;
            if (p->i >= p->n || p->s[p->i] != '"') return bad(p, "expected a member name");
            int rc = parse_string(p, &key, &kl);
            if (rc) return rc;
            skip_ws(p);
            if (p->i >= p->n || p->s[p->i] != ':') { free(key); return bad(p, "expected ':'"); }
            p->i++;
        }
        int rc = push(p, v, &cap, key);
        if (rc) return rc;
        if ((rc = parse_value(p, &v->items[v->n - 1], depth + 1))) return rc;
        skip_ws(p);
        if (p->i >= p->n) return bad(p, obj ? "unterminated object" : "unterminated array");
        if (p->s[p->i] == ',') { p->i++; continue; }
        if (p->s[p->i] == close) { p->i++; return 0; }
        return bad(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int parse_number(parser *p, qlm_jval *v)
{
    const size_t start = p->i;
    if (p->s[p->i] == '-') p->i++;
#define DIGITS(min_one)                                                              \
    do {                                                                             \
        size_t d0 = p->i;                                                            \
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;        \
        if ((min_one) && p->i == d0) return bad(p, "malformed number");              \
    } while (0)
    if (p->i < p->n && p->s[p->i] == '0') p->i++;
    else DIGITS(1);
    if (p->i < p->n && p->s[p->i] == '.') { p->i++; DIGITS(1); }
    if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
        p->i++;
        if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-')) p->i++;
        DIGITS(1);
    }
#undef DIGITS
    const size_t len = p->i - start;
    v->type = QLM_JNUM;
    if (!(v->str = malloc(len + 1))) return qlm_fail(p->err, QLM_ERUNTIME, "out of memory");
    memcpy(v->str, p->s + start, len);
    v->str[len] = 0;
    v->len = len;
    v->num = strtod(v->str, NULL);
    return 0;
}

static int literal(parser *p, const char *word)
{
    const size_t l = strlen(word);
    if (p->n - p->i < l || memcmp(p->s + p->i, word, l)) return bad(p, "unexpected character");
    p->i += l;
    return 0;
}

static int parse_value(parser *p, qlm_jval *v, int depth)
{
    if (depth > MAX_DEPTH) return bad(p, "nested too deeply");
    skip_ws(p);
    if (p->i >= p->n) return bad(p, "expected a value");
    const char c = p->s[p->i];
    if (c == '{' || c == '[') return parse_container(p, v, depth);
    if (c == '"') { v->type = QLM_JSTR; return parse_string(p, &v->str, &v->len); }
    if (c == '-' || (c >= '0' && c <= '9')) return parse_number(p, v);
    if (c == 't') { v->type = QLM_JBOOL; v->b = true; return literal(p, "true"); }
    if (c == 'f') { v->type = QLM_JBOOL; return literal(p, "false"); }
    if (c == 'n') { v->type = QLM_JNULL; return literal(p, "null"); }
    return bad(p, "unexpected character");
}

int qlm_json_parse(const char *s, size_t n, qlm_jval **out, qlm_err *err)
{
    *out = NULL;
    parser p = {.s = s, .n = n, .err = err};
    qlm_jval *v = calloc(1, sizeof *v);
    if (!v) return qlm_fail(err, QLM_ERUNTIME, "out of memory");
    int rc = parse_value(&p, v, 0);
    if (!rc) {
        skip_ws(&p);
        if (p.i < n) rc = bad(&p, "text after the JSON value");
    }
    if (rc) {
        qlm_jval_free(v);
        return rc;
    }
    *out = v;
    return 0;
}

const qlm_jval *qlm_json_get(const qlm_jval *obj, const char *key)
{
    if (!obj || obj->type != QLM_JOBJ) return NULL;
    for (size_t i = obj->n; i-- > 0;)
        if (!strcmp(obj->keys[i], key)) return &obj->items[i];
    return NULL;
}

void qlm_json_write(FILE *f, const qlm_jval *v)
{
    switch (v->type) {
    case QLM_JNULL: fputs("null", f); break;
    case QLM_JBOOL: fputs(v->b ? "true" : "false", f); break;
    case QLM_JNUM: fputs(v->str, f); break;
    case QLM_JSTR: qlm_json_str(f, v->str, v->len); break;
    case QLM_JARR:
    case QLM_JOBJ:
        fputc(v->type == QLM_JOBJ ? '{' : '[', f);
        for (size_t i = 0; i < v->n; i++) {
            if (i) fputc(',', f);
            if (v->type == QLM_JOBJ) {
                qlm_json_str(f, v->keys[i], strlen(v->keys[i]));
                fputc(':', f);
            }
            qlm_json_write(f, &v->items[i]);
        }
        fputc(v->type == QLM_JOBJ ? '}' : ']', f);
        break;
    }
}
