/* tmpl_vars.c - the caller's side of rendering: variables, value
 * builders, and a strict JSON reader for tools, tool calls and test
 * conversations. */
#include "tmpl_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "unicode.h"

qlm_tmpl_vars *qlm_tmpl_vars_new(void)
{
    qlm_tmpl_vars *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->dict = tv_dict(&v->ar, 8, TV_DICT);
    if (!v->dict) {
        qlm_tmpl_vars_free(v);
        return NULL;
    }
    return v;
}

void qlm_tmpl_vars_free(qlm_tmpl_vars *v)
{
    if (!v)
        return;
    tm_arena_free(&v->ar);
    free(v);
}

/* Scalars are made fresh rather than shared singletons so every builder
 * returns memory the caller's vars own (and a NULL only on failure). */
qlm_tval *qlm_tv_none(qlm_tmpl_vars *v) { return v ? tv_new(&v->ar, TV_NONE) : NULL; }

qlm_tval *qlm_tv_bool(qlm_tmpl_vars *v, bool b)
{
    qlm_tval *x = v ? tv_new(&v->ar, TV_BOOL) : NULL;
    if (x)
        x->b = b;
    return x;
}

qlm_tval *qlm_tv_int(qlm_tmpl_vars *v, int64_t i) { return v ? tv_int(&v->ar, i) : NULL; }
qlm_tval *qlm_tv_float(qlm_tmpl_vars *v, double d) { return v ? tv_float(&v->ar, d) : NULL; }

qlm_tval *qlm_tv_strn(qlm_tmpl_vars *v, const char *s, size_t n)
{
    return v && (s || !n) ? tv_str(&v->ar, s ? s : "", n) : NULL;
}

qlm_tval *qlm_tv_str(qlm_tmpl_vars *v, const char *s)
{
    return s ? qlm_tv_strn(v, s, strlen(s)) : qlm_tv_none(v);
}

qlm_tval *qlm_tv_list(qlm_tmpl_vars *v) { return v ? tv_list(&v->ar, 0) : NULL; }
qlm_tval *qlm_tv_dict(qlm_tmpl_vars *v) { return v ? tv_dict(&v->ar, 0, TV_DICT) : NULL; }

int qlm_tv_push(qlm_tmpl_vars *v, qlm_tval *list, qlm_tval *item)
{
    if (!v || !list || !item)
        return QLM_ERUNTIME;
    if (list->type != TV_LIST)
        return QLM_EUSAGE;
    return tv_push(&v->ar, list, item) ? QLM_OK : QLM_ERUNTIME;
}

int qlm_tv_put(qlm_tmpl_vars *v, qlm_tval *dict, const char *key, qlm_tval *val)
{
    if (!v || !dict || !key || !val)
        return QLM_ERUNTIME;
    if (dict->type != TV_DICT)
        return QLM_EUSAGE;
    qlm_tval *k = tv_str(&v->ar, key, strlen(key));
    return tv_dict_set(&v->ar, dict, k, val) ? QLM_OK : QLM_ERUNTIME;
}

int qlm_tmpl_vars_set(qlm_tmpl_vars *v, const char *name, qlm_tval *val)
{
    return qlm_tv_put(v, v ? v->dict : NULL, name, val);
}

void qlm_tmpl_vars_set_now(qlm_tmpl_vars *v, int64_t unix_seconds)
{
    if (v) {
        v->now = unix_seconds;
        v->now_set = true;
    }
}

void qlm_tmpl_vars_set_limits(qlm_tmpl_vars *v, const qlm_tmpl_limits *lim)
{
    if (v && lim)
        v->lim = *lim;
}

/* ---- JSON ---- */
typedef struct jp {
    const char *s, *end, *line_start;
    int line;
    tm_arena *a;
    qlm_err *err;
    int code;
} jp;

static qlm_tval *jfail(jp *p, const char *what)
{
    if (!p->code)
        p->code = qlm_fail(p->err, QLM_EUSAGE, "json:%d:%d: %s", p->line,
                           (int)(p->s - p->line_start) + 1, what);
    return NULL;
}

static qlm_tval *jnomem(jp *p)
{
    if (!p->code)
        p->code = qlm_fail(p->err, QLM_ERUNTIME, "json: out of memory");
    return NULL;
}

static void jws(jp *p)
{
    while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r')) {
        if (*p->s == '\n') {
            p->line++;
            p->line_start = p->s + 1;
        }
        p->s++;
    }
}

static int hex4(const char *s)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= c - '0';
        else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
        else return -1;
    }
    return v;
}

static qlm_tval *jstring(jp *p)
{
    const char *start = ++p->s;
    /* First find the end: the decoded text is no longer than the source. */
    while (p->s < p->end && *p->s != '"') {
        if ((unsigned char)*p->s < 0x20)
            return jfail(p, "control character in string");
        if (*p->s == '\\' && ++p->s >= p->end)
            break;
        p->s++;
    }
    if (p->s >= p->end)
        return jfail(p, "unterminated string");
    const char *stop = p->s++;
    char *out = tm_alloc(p->a, (size_t)(stop - start) + 1), *o = out;
    if (!out)
        return jnomem(p);
    for (const char *s = start; s < stop;) {
        if (*s != '\\') {
            *o++ = *s++;
            continue;
        }
        s++;
        switch (*s++) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            int cp = stop - s >= 4 ? hex4(s) : -1;
            if (cp < 0) {
                p->s = s;
                return jfail(p, "bad \\u escape");
            }
            s += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && stop - s >= 6 && s[0] == '\\' && s[1] == 'u') {
                int lo = hex4(s + 2);
                if (lo >= 0xdc00 && lo < 0xe000) {
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                    s += 6;
                }
            }
            if (cp >= 0xd800 && cp < 0xe000)
                cp = 0xfffd;  /* a lone surrogate has no UTF-8 form */
            char enc[4];
            size_t k = qlm_utf8_encode((uint32_t)cp, enc);
            memcpy(o, enc, k);  /* an escape is 6 bytes, its UTF-8 <= 4 */
            o += k;
            break;
        }
        default:
            p->s = s - 1;
            return jfail(p, "bad escape");
        }
    }
    qlm_tval *v = tv_str_take(p->a, out, (size_t)(o - out));
    return v ? v : jnomem(p);
}

static qlm_tval *jnumber(jp *p)
{
    const char *s = p->s;
    bool is_float = false;
    if (*s == '-')
        s++;
    if (s >= p->end || !(*s >= '0' && *s <= '9'))
        return jfail(p, "bad number");
    if (*s == '0')
        s++;
    else
        while (s < p->end && *s >= '0' && *s <= '9')
            s++;
    if (s < p->end && *s == '.') {
        is_float = true;
        s++;
        if (s >= p->end || !(*s >= '0' && *s <= '9'))
            return jfail(p, "bad number");
        while (s < p->end && *s >= '0' && *s <= '9')
            s++;
    }
    if (s < p->end && (*s == 'e' || *s == 'E')) {
        is_float = true;
        s++;
        if (s < p->end && (*s == '+' || *s == '-'))
            s++;
        if (s >= p->end || !(*s >= '0' && *s <= '9'))
            return jfail(p, "bad number");
        while (s < p->end && *s >= '0' && *s <= '9')
            s++;
    }
    char tmp[64];
    size_t n = (size_t)(s - p->s);
    if (n >= sizeof tmp)
        return jfail(p, "number too long");
    memcpy(tmp, p->s, n);
    tmp[n] = 0;
    p->s = s;
    qlm_tval *v;
    if (!is_float) {
        errno = 0;
        long long i = strtoll(tmp, NULL, 10);
        if (errno == 0) {
            v = tv_int(p->a, i);
            return v ? v : jnomem(p);
        }
    }
    v = tv_float(p->a, strtod(tmp, NULL));
    return v ? v : jnomem(p);
}

static bool jword(jp *p, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(p->end - p->s) >= n && memcmp(p->s, w, n) == 0) {
        p->s += n;
        return true;
    }
    return false;
}

static qlm_tval *jvalue(jp *p, int depth)
{
    if (depth > TM_MAX_JSON_DEPTH)
        return jfail(p, "nested too deeply");
    jws(p);
    if (p->s >= p->end)
        return jfail(p, "unexpected end of input");
    qlm_tval *v;
    switch (*p->s) {
    case '"': return jstring(p);
    case '[':
        p->s++;
        if (!(v = tv_list(p->a, 0)))
            return jnomem(p);
        jws(p);
        if (p->s < p->end && *p->s == ']') {
            p->s++;
            return v;
        }
        for (;;) {
            qlm_tval *x = jvalue(p, depth + 1);
            if (!x)
                return NULL;
            if (!tv_push(p->a, v, x))
                return jnomem(p);
            jws(p);
            if (p->s < p->end && *p->s == ',') {
                p->s++;
                continue;
            }
            if (p->s < p->end && *p->s == ']') {
                p->s++;
                return v;
            }
            return jfail(p, "expected ',' or ']'");
        }
    case '{':
        p->s++;
        if (!(v = tv_dict(p->a, 0, TV_DICT)))
            return jnomem(p);
        jws(p);
        if (p->s < p->end && *p->s == '}') {
            p->s++;
            return v;
        }
        for (;;) {
            jws(p);
            if (p->s >= p->end || *p->s != '"')
                return jfail(p, "expected a string key");
            qlm_tval *k = jstring(p);
            if (!k)
                return NULL;
            jws(p);
            if (p->s >= p->end || *p->s != ':')
                return jfail(p, "expected ':'");
            p->s++;
            qlm_tval *x = jvalue(p, depth + 1);
            if (!x)
                return NULL;
            if (!tv_dict_set(p->a, v, k, x))
                return jnomem(p);
            jws(p);
            if (p->s < p->end && *p->s == ',') {
                p->s++;
                continue;
            }
            if (p->s < p->end && *p->s == '}') {
                p->s++;
                return v;
            }
            return jfail(p, "expected ',' or '}'");
        }
    case 't':
        if (jword(p, "true"))
            return (v = tv_new(p->a, TV_BOOL)) ? (v->b = true, v) : jnomem(p);
        break;
    case 'f':
        if (jword(p, "false"))
            return (v = tv_new(p->a, TV_BOOL)) ? v : jnomem(p);
        break;
    case 'n':
        if (jword(p, "null"))
            return (v = tv_new(p->a, TV_NONE)) ? v : jnomem(p);
        break;
    default:
        if (*p->s == '-' || (*p->s >= '0' && *p->s <= '9'))
            return jnumber(p);
    }
    return jfail(p, "unexpected character");
}

int qlm_tv_json(qlm_tmpl_vars *v, const char *json, size_t n, qlm_tval **out, qlm_err *err)
{
    if (!v || !json)
        return qlm_fail(err, QLM_ERUNTIME, "json: out of memory");
    jp p = {.s = json, .end = json + n, .line_start = json, .line = 1, .a = &v->ar, .err = err};
    qlm_tval *x = jvalue(&p, 0);
    if (x) {
        jws(&p);
        if (p.s != p.end)
            x = jfail(&p, "trailing characters after the value");
    }
    if (!x)
        return p.code;
    *out = x;
    return QLM_OK;
}

int qlm_tmpl_vars_set_json(qlm_tmpl_vars *v, const char *json, size_t n, qlm_err *err)
{
    qlm_tval *obj;
    int rc = qlm_tv_json(v, json, n, &obj, err);
    if (rc)
        return rc;
    if (obj->type != TV_DICT)
        return qlm_fail(err, QLM_EUSAGE, "json: expected an object of variables");
    for (size_t i = 0; i < obj->dict.n; i++)
        if (!tv_dict_set(&v->ar, v->dict, obj->dict.k[i], obj->dict.v[i]))
            return qlm_fail(err, QLM_ERUNTIME, "json: out of memory");
    return QLM_OK;
}
