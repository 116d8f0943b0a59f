/* tmpl_value.c - the template values: arena, buffers, construction, and
 * the Python behaviour they must copy byte for byte (str(), repr(),
 * json.dumps, ==, <, truthiness). */
#include "tmpl_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unicode.h"

/* ---- arena ---- */
struct tm_chunk {
    tm_chunk *next;
    size_t used, size;
    max_align_t data[];
};

#define TM_CHUNK (64 * 1024)

void *tm_alloc(tm_arena *a, size_t n)
{
    const size_t align = sizeof(max_align_t);
    if (n > SIZE_MAX / 2)
        return NULL;
    n = (n + align - 1) / align * align;
    if (n == 0)
        n = align;
    if (a->cap && (a->total > a->cap || n > a->cap - a->total)) {
        a->over_cap = true;
        return NULL;
    }
    tm_chunk *c = a->head;
    if (!c || c->size - c->used < n) {
        size_t size = n > TM_CHUNK / 4 ? n : TM_CHUNK;
        c = malloc(sizeof *c + size);
        if (!c) {
            a->over_cap = false;
            return NULL;
        }
        c->size = size;
        c->used = 0;
        /* A big block gets a chunk of its own behind the current one, so
         * the current one's free space is not thrown away. */
        if (size > TM_CHUNK && a->head) {
            c->next = a->head->next;
            a->head->next = c;
        } else {
            c->next = a->head;
            a->head = c;
        }
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    a->total += n;
    memset(p, 0, n);
    return p;
}

char *tm_strdup(tm_arena *a, const char *s, size_t n)
{
    char *p = tm_alloc(a, n + 1);
    if (p && n)
        memcpy(p, s, n);
    return p;
}

void tm_arena_free(tm_arena *a)
{
    tm_chunk *c = a->head;
    while (c) {
        tm_chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->total = 0;
}

/* ---- buffers ---- */
static bool tb_grow(tm_buf *b, size_t need)
{
    if (b->failed)
        return false;
    if (need > SIZE_MAX / 2 || (b->limit && need > b->limit)) {
        b->failed = b->over_limit = true;
        return false;
    }
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need + 1)
        cap *= 2;
    if (b->limit && cap > b->limit + 1)
        cap = b->limit + 1;
    char *p;
    if (b->a) {
        p = tm_alloc(b->a, cap);
        if (p && b->n)
            memcpy(p, b->p, b->n);
    } else {
        p = realloc(b->p, cap);
    }
    if (!p) {
        b->failed = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

bool tb_put(tm_buf *b, const char *s, size_t n)
{
    if (b->failed)
        return false;
    if (b->n + n + 1 > b->cap && !tb_grow(b, b->n + n))
        return false;
    if (n)
        memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return true;
}

bool tb_putc(tm_buf *b, char c) { return tb_put(b, &c, 1); }
bool tb_puts(tm_buf *b, const char *s) { return tb_put(b, s, strlen(s)); }

bool tb_printf(tm_buf *b, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= sizeof tmp)
        return false;
    return tb_put(b, tmp, (size_t)k);
}

/* ---- construction ---- */
qlm_tval tm_none = {.type = TV_NONE}, tm_true = {.type = TV_BOOL, .b = true},
         tm_false = {.type = TV_BOOL, .b = false};

qlm_tval *tv_new(tm_arena *a, int type)
{
    qlm_tval *v = tm_alloc(a, sizeof *v);
    if (v)
        v->type = (uint8_t)type;
    return v;
}

qlm_tval *tv_int(tm_arena *a, int64_t i)
{
    qlm_tval *v = tv_new(a, TV_INT);
    if (v)
        v->i = i;
    return v;
}

qlm_tval *tv_float(tm_arena *a, double f)
{
    qlm_tval *v = tv_new(a, TV_FLOAT);
    if (v)
        v->f = f;
    return v;
}

qlm_tval *tv_str_take(tm_arena *a, char *s, size_t n)
{
    qlm_tval *v = tv_new(a, TV_STR);
    if (!v)
        return NULL;
    v->str.s = s;
    v->str.n = n;
    v->ascii = true;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80) {
            v->ascii = false;
            break;
        }
    return v;
}

qlm_tval *tv_str(tm_arena *a, const char *s, size_t n)
{
    char *p = tm_strdup(a, s, n);
    return p ? tv_str_take(a, p, n) : NULL;
}

qlm_tval *tv_list(tm_arena *a, size_t cap)
{
    qlm_tval *v = tv_new(a, TV_LIST);
    if (!v)
        return NULL;
    if (cap) {
        if (cap > SIZE_MAX / sizeof *v->list.v / 4)
            return NULL;
        v->list.v = tm_alloc(a, cap * sizeof *v->list.v);
        if (!v->list.v)
            return NULL;
        v->list.cap = cap;
    }
    return v;
}

bool tv_push(tm_arena *a, qlm_tval *l, qlm_tval *x)
{
    if (!x)
        return false;
    if (l->list.n == l->list.cap) {
        size_t cap = l->list.cap ? l->list.cap * 2 : 4;
        qlm_tval **v = tm_alloc(a, cap * sizeof *v);
        if (!v)
            return false;
        if (l->list.n)
            memcpy(v, l->list.v, l->list.n * sizeof *v);
        l->list.v = v;
        l->list.cap = cap;
    }
    l->list.v[l->list.n++] = x;
    return true;
}

qlm_tval *tv_dict(tm_arena *a, size_t cap, int type)
{
    qlm_tval *v = tv_new(a, type);
    if (!v)
        return NULL;
    if (cap) {
        v->dict.k = tm_alloc(a, cap * sizeof *v->dict.k);
        v->dict.v = tm_alloc(a, cap * sizeof *v->dict.v);
        if (!v->dict.k || !v->dict.v)
            return NULL;
        v->dict.cap = cap;
    }
    return v;
}

/* ---- dict keys ----
 * Keys are compared with Python equality (1, 1.0 and True are one key),
 * so they hash alike: a number by its integer value when it has one. */
#define INDEX_FROM 16  /* entries before a dict gets a hash index */

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return mix(h);
}

/* Values nested deeper than this are not looked into any further by
 * hashing, equality and ordering: a template can build lists thousands
 * deep, and these recursions run on the C stack. */
#define MAX_NEST 512

static uint64_t hash_at(const qlm_tval *v, int depth)
{
    switch (v->type) {
    case TV_NONE: return 0x6e6f6e65;
    case TV_UNDEF: return 0x756e6466;
    case TV_BOOL: return mix((uint64_t)v->b);
    case TV_INT: return mix((uint64_t)v->i);
    case TV_FLOAT:
        if (v->f == floor(v->f) && v->f >= -9223372036854775808.0 && v->f < 9223372036854775808.0)
            return mix((uint64_t)(int64_t)v->f);
        {
            uint64_t bits;
            memcpy(&bits, &v->f, sizeof bits);
            return mix(bits);
        }
    case TV_STR: return hash_bytes(v->str.s, v->str.n);
    case TV_LIST: {
        uint64_t h = 0x7475706c;
        for (size_t i = 0; i < v->list.n && depth < MAX_NEST; i++)
            h = mix(h ^ hash_at(v->list.v[i], depth + 1));
        return h;
    }
    default: return mix((uint64_t)(uintptr_t)v);
    }
}

static uint64_t tv_hash(const qlm_tval *v) { return hash_at(v, 0); }

static bool index_build(tm_arena *a, qlm_tval *d, size_t icap)
{
    uint32_t *idx = tm_alloc(a, icap * sizeof *idx);
    if (!idx)
        return false;
    for (size_t i = 0; i < d->dict.n; i++) {
        size_t s = tv_hash(d->dict.k[i]) & (icap - 1);
        while (idx[s])
            s = (s + 1) & (icap - 1);
        idx[s] = (uint32_t)(i + 1);
    }
    d->dict.idx = idx;
    d->dict.icap = icap;
    return true;
}

static long dict_find(const qlm_tval *d, const qlm_tval *key)
{
    if (!d->dict.idx) {
        for (size_t i = 0; i < d->dict.n; i++)
            if (tv_eq(d->dict.k[i], key))
                return (long)i;
        return -1;
    }
    for (size_t s = tv_hash(key) & (d->dict.icap - 1); d->dict.idx[s];
         s = (s + 1) & (d->dict.icap - 1))
        if (tv_eq(d->dict.k[d->dict.idx[s] - 1], key))
            return (long)d->dict.idx[s] - 1;
    return -1;
}

qlm_tval *tv_dict_get(const qlm_tval *d, const qlm_tval *key)
{
    long i = dict_find(d, key);
    return i < 0 ? NULL : d->dict.v[i];
}

qlm_tval *tv_dict_gets(const qlm_tval *d, const char *key, size_t n)
{
    qlm_tval k = {.type = TV_STR, .str = {(char *)key, n}};
    return tv_dict_get(d, &k);
}

bool tv_dict_set(tm_arena *a, qlm_tval *d, qlm_tval *key, qlm_tval *v)
{
    if (!key || !v)
        return false;
    long i = dict_find(d, key);
    if (i >= 0) {
        d->dict.v[i] = v;
        return true;
    }
    if (d->dict.n >= UINT32_MAX - 1)
        return false;
    if (d->dict.n == d->dict.cap) {
        size_t cap = d->dict.cap ? d->dict.cap * 2 : 4;
        qlm_tval **k = tm_alloc(a, cap * sizeof *k), **vv = tm_alloc(a, cap * sizeof *vv);
        if (!k || !vv)
            return false;
        if (d->dict.n) {
            memcpy(k, d->dict.k, d->dict.n * sizeof *k);
            memcpy(vv, d->dict.v, d->dict.n * sizeof *vv);
        }
        d->dict.k = k;
        d->dict.v = vv;
        d->dict.cap = cap;
    }
    d->dict.k[d->dict.n] = key;
    d->dict.v[d->dict.n++] = v;
    /* Keep the index at most half full. */
    if (d->dict.idx && d->dict.n * 2 <= d->dict.icap) {
        size_t s = tv_hash(key) & (d->dict.icap - 1);
        while (d->dict.idx[s])
            s = (s + 1) & (d->dict.icap - 1);
        d->dict.idx[s] = (uint32_t)d->dict.n;
    } else if (d->dict.n >= INDEX_FROM) {
        size_t icap = 64;
        while (icap < d->dict.n * 4)
            icap *= 2;
        if (!index_build(a, d, icap))
            return false;
    }
    return true;
}

/* ---- Python semantics ---- */
static const qlm_tval *unhashable_at(const qlm_tval *v, int depth)
{
    if (v->type == TV_DICT || v->type == TV_NS)
        return v;
    if (v->type != TV_LIST)
        return NULL;
    if (!(v->flags & TVF_TUPLE))
        return v;
    for (size_t i = 0; i < v->list.n && depth < MAX_NEST; i++) {
        const qlm_tval *u = unhashable_at(v->list.v[i], depth + 1);
        if (u)
            return u;
    }
    return NULL;
}

const qlm_tval *tv_unhashable(const qlm_tval *v) { return unhashable_at(v, 0); }

bool tv_is_num(const qlm_tval *v)
{
    return v->type == TV_BOOL || v->type == TV_INT || v->type == TV_FLOAT;
}

double tv_num(const qlm_tval *v)
{
    return v->type == TV_FLOAT ? v->f : v->type == TV_INT ? (double)v->i : (double)v->b;
}

bool tv_truthy(const qlm_tval *v)
{
    switch (v->type) {
    case TV_UNDEF: case TV_NONE: return false;
    case TV_BOOL: return v->b;
    case TV_INT: return v->i != 0;
    case TV_FLOAT: return v->f != 0;
    case TV_STR: return v->str.n != 0;
    case TV_LIST: return v->list.n != 0;
    case TV_DICT: return v->dict.n != 0;
    default: return true;
    }
}

/* Past MAX_NEST levels two distinct containers are taken as unequal
 * (where Python would raise RecursionError). */
static bool eq_at(const qlm_tval *a, const qlm_tval *b, int depth)
{
    if (a == b)
        return true;
    if (depth > MAX_NEST)
        return false;
    if (tv_is_num(a) && tv_is_num(b)) {
        if (a->type != TV_FLOAT && b->type != TV_FLOAT)
            return (a->type == TV_INT ? a->i : a->b) == (b->type == TV_INT ? b->i : b->b);
        /* int == float compares exactly, as Python does, not via a rounded
         * double of a huge int. */
        const qlm_tval *f = a->type == TV_FLOAT ? a : b, *o = a->type == TV_FLOAT ? b : a;
        if (o->type == TV_FLOAT)
            return a->f == b->f;
        int64_t i = o->type == TV_INT ? o->i : o->b;
        if (!(f->f >= -9223372036854775808.0 && f->f < 9223372036854775808.0))
            return false;
        return f->f == floor(f->f) && (int64_t)f->f == i;
    }
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case TV_UNDEF: case TV_NONE: return true;
    case TV_STR:
        return a->str.n == b->str.n && memcmp(a->str.s, b->str.s, a->str.n) == 0;
    case TV_LIST:
        if ((a->flags & TVF_TUPLE) != (b->flags & TVF_TUPLE) || a->list.n != b->list.n)
            return false;
        for (size_t i = 0; i < a->list.n; i++)
            if (!eq_at(a->list.v[i], b->list.v[i], depth + 1))
                return false;
        return true;
    case TV_DICT:
        if (a->dict.n != b->dict.n)
            return false;
        for (size_t i = 0; i < a->dict.n; i++) {
            const qlm_tval *o = tv_dict_get(b, a->dict.k[i]);
            if (!o || !eq_at(a->dict.v[i], o, depth + 1))
                return false;
        }
        return true;
    case TV_LOOP: return a->loop == b->loop;
    case TV_MACRO: return a->macro == b->macro;
    case TV_FUNC: return a->fn.id == b->fn.id;
    case TV_METHOD: return a->fn.id == b->fn.id && a->fn.self == b->fn.self;
    default: return false;
    }
}

bool tv_eq(const qlm_tval *a, const qlm_tval *b) { return eq_at(a, b, 0); }

const char *tv_typename(const qlm_tval *v)
{
    switch (v->type) {
    case TV_UNDEF: return "Undefined";
    case TV_NONE: return "NoneType";
    case TV_BOOL: return "bool";
    case TV_INT: return "int";
    case TV_FLOAT: return "float";
    case TV_STR: return v->flags & TVF_MARKUP ? "Markup" : "str";
    case TV_LIST: return v->flags & TVF_TUPLE ? "tuple" : "list";
    case TV_DICT: return "dict";
    case TV_NS: return "Namespace";
    case TV_LOOP: return "LoopContext";
    case TV_MACRO: return "Macro";
    case TV_FUNC: return "function";
    default: return "builtin_function_or_method";
    }
}

/* Python's float repr: the shortest digit string that reads back as the
 * same double, in fixed notation when the exponent is in [-4, 16) and in
 * scientific notation otherwise ("1e+16", "1.5e-05"). */
void tm_float_repr(double f, char out[32])
{
    if (isnan(f)) {
        strcpy(out, "nan");
        return;
    }
    if (isinf(f)) {
        strcpy(out, f < 0 ? "-inf" : "inf");
        return;
    }
    char e[40];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec - 1, f);
        if (strtod(e, NULL) == f)
            break;
    }
    /* e is "-d.ddde+XX": pull out the digits and the exponent. */
    char digits[24];
    int nd = 0, exp10;
    const char *p = e;
    bool neg = *p == '-';
    if (neg)
        p++;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9')
            digits[nd++] = *p;
    exp10 = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = 0;
    char *o = out;
    if (neg)
        *o++ = '-';
    if (exp10 < -4 || exp10 >= 16) {
        *o++ = digits[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, (size_t)nd - 1);
            o += nd - 1;
        }
        sprintf(o, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
        return;
    }
    if (exp10 < 0) {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -exp10 - 1; i++)
            *o++ = '0';
        memcpy(o, digits, (size_t)nd);
        o += nd;
    } else {
        for (int i = 0; i <= exp10; i++)
            *o++ = i < nd ? digits[i] : '0';
        *o++ = '.';
        if (nd > exp10 + 1) {
            memcpy(o, digits + exp10 + 1, (size_t)(nd - exp10 - 1));
            o += nd - exp10 - 1;
        } else {
            *o++ = '0';
        }
    }
    *o = 0;
}

/* ---- UTF-8 as Python code points ---- */
uint32_t tm_u8_cp(const char *s, size_t n, size_t *len)
{
    const unsigned char *u = (const unsigned char *)s;
    unsigned c = u[0];
    size_t k;
    uint32_t cp, min;
    *len = 1;
    if (c < 0x80)
        return c;
    if ((c & 0xe0) == 0xc0) { k = 2; cp = c & 0x1f; min = 0x80; }
    else if ((c & 0xf0) == 0xe0) { k = 3; cp = c & 0x0f; min = 0x800; }
    else if ((c & 0xf8) == 0xf0) { k = 4; cp = c & 0x07; min = 0x10000; }
    else return 0xDC00 | c;
    if (k > n)
        return 0xDC00 | c;
    for (size_t i = 1; i < k; i++) {
        if ((u[i] & 0xc0) != 0x80)
            return 0xDC00 | c;
        cp = cp << 6 | (u[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0xDC00 | c;  /* an invalid byte stands for itself, as with
                               Python's surrogateescape */
    *len = k;
    return cp;
}

size_t tm_u8_step(const char *s, size_t n)
{
    size_t k;
    if ((unsigned char)s[0] < 0x80)
        return 1;
    tm_u8_cp(s, n, &k);
    return k;
}

size_t tm_u8_count(const qlm_tval *str)
{
    if (str->ascii)
        return str->str.n;
    size_t c = 0;
    for (size_t i = 0; i < str->str.n; c++)
        i += tm_u8_step(str->str.s + i, str->str.n - i);
    return c;
}

bool tm_py_space(uint32_t cp)
{
    return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 ||
           cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) ||
           cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

/* Python's str.isprintable() for one code point. */
static bool py_printable(uint32_t cp)
{
    if (cp < 0x80)
        return cp >= 0x20 && cp < 0x7f;
    if (cp >= 0xDC80 && cp <= 0xDCFF)
        return false;
    return !(qlm_ucp_flags(cp) & (QLM_UCP_CONTROL | QLM_UCP_UNDEF | QLM_UCP_SEPARATOR));
}

/* ---- str() and repr() ---- */
static bool str_repr(tm_buf *b, const char *s, size_t n)
{
    bool has_sq = memchr(s, '\'', n) != NULL, has_dq = memchr(s, '"', n) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    tb_putc(b, q);
    for (size_t i = 0; i < n;) {
        size_t k;
        uint32_t cp = tm_u8_cp(s + i, n - i, &k);
        if (cp == (uint32_t)q || cp == '\\') {
            tb_putc(b, '\\');
            tb_putc(b, (char)cp);
        } else if (cp == '\n') {
            tb_puts(b, "\\n");
        } else if (cp == '\r') {
            tb_puts(b, "\\r");
        } else if (cp == '\t') {
            tb_puts(b, "\\t");
        } else if (!py_printable(cp) && cp != ' ') {
            if (cp < 0x100)
                tb_printf(b, "\\x%02x", cp);
            else if (cp >= 0xDC80 && cp <= 0xDCFF)
                tb_printf(b, "\\udc%02x", cp & 0xff);
            else if (cp < 0x10000)
                tb_printf(b, "\\u%04x", cp);
            else
                tb_printf(b, "\\U%08x", cp);
        } else {
            tb_put(b, s + i, k);
        }
        i += k;
    }
    return tb_putc(b, q);
}

static bool put_repr(tm_rt *rt, tm_buf *b, const qlm_tval *v, int depth);

static bool put_str(tm_rt *rt, tm_buf *b, const qlm_tval *v, int depth)
{
    char tmp[40];
    switch (v->type) {
    case TV_UNDEF: return true;
    case TV_STR: return tb_put(b, v->str.s, v->str.n);
    case TV_INT:
        snprintf(tmp, sizeof tmp, "%lld", (long long)v->i);
        return tb_puts(b, tmp);
    case TV_FLOAT:
        tm_float_repr(v->f, tmp);
        return tb_puts(b, tmp);
    default: return put_repr(rt, b, v, depth);
    }
}

static bool put_repr(tm_rt *rt, tm_buf *b, const qlm_tval *v, int depth)
{
    if (depth > TM_MAX_JSON_DEPTH) {
        tm_fail(rt, "maximum recursion depth exceeded while getting the repr of an object");
        return false;
    }
    switch (v->type) {
    case TV_UNDEF: return tb_puts(b, "Undefined");
    case TV_NONE: return tb_puts(b, "None");
    case TV_BOOL: return tb_puts(b, v->b ? "True" : "False");
    case TV_INT: case TV_FLOAT: return put_str(rt, b, v, depth);
    case TV_STR:
        if (v->flags & TVF_MARKUP) {
            tb_puts(b, "Markup(");
            str_repr(b, v->str.s, v->str.n);
            return tb_putc(b, ')');
        }
        return str_repr(b, v->str.s, v->str.n);
    case TV_LIST: {
        bool tuple = v->flags & TVF_TUPLE;
        tb_putc(b, tuple ? '(' : '[');
        for (size_t i = 0; i < v->list.n; i++) {
            if (i)
                tb_puts(b, ", ");
            if (!put_repr(rt, b, v->list.v[i], depth + 1))
                return false;
        }
        if (tuple && v->list.n == 1)
            tb_putc(b, ',');
        return tb_putc(b, tuple ? ')' : ']');
    }
    case TV_DICT: case TV_NS:
        if (v->type == TV_NS)
            tb_puts(b, "<Namespace ");
        tb_putc(b, '{');
        for (size_t i = 0; i < v->dict.n; i++) {
            if (i)
                tb_puts(b, ", ");
            if (!put_repr(rt, b, v->dict.k[i], depth + 1))
                return false;
            tb_puts(b, ": ");
            if (!put_repr(rt, b, v->dict.v[i], depth + 1))
                return false;
        }
        tb_putc(b, '}');
        return v->type == TV_NS ? tb_putc(b, '>') : !b->failed;
    case TV_LOOP: return tb_puts(b, "<LoopContext>");
    case TV_MACRO:
        return tb_printf(b, "<Macro '%.60s'>", v->macro->name ? v->macro->name : "caller");
    default: return tb_puts(b, "<built-in function>");
    }
}

static bool buf_ok(tm_rt *rt, tm_buf *b)
{
    if (b->failed && !rt->failed)
        tm_nomem(rt);
    return !b->failed && !rt->failed;
}

bool tm_str_to(tm_rt *rt, tm_buf *b, const qlm_tval *v)
{
    put_str(rt, b, v, 0);
    return buf_ok(rt, b);
}

bool tm_repr_to(tm_rt *rt, tm_buf *b, const qlm_tval *v)
{
    put_repr(rt, b, v, 0);
    return buf_ok(rt, b);
}

qlm_tval *tm_to_str(tm_rt *rt, qlm_tval *v)
{
    if (v->type == TV_STR)
        return v;
    tm_buf b = {.a = &rt->ar};
    if (!tm_str_to(rt, &b, v))
        return NULL;
    qlm_tval *s = b.p ? tv_str_take(&rt->ar, b.p, b.n) : tv_str(&rt->ar, "", 0);
    return s ? s : tm_nomem(rt);
}

/* ---- json.dumps ---- */
static void json_str(tm_buf *b, const char *s, size_t n, bool ensure_ascii)
{
    tb_putc(b, '"');
    for (size_t i = 0; i < n;) {
        size_t k;
        uint32_t cp = tm_u8_cp(s + i, n - i, &k);
        switch (cp) {
        case '"': tb_puts(b, "\\\""); break;
        case '\\': tb_puts(b, "\\\\"); break;
        case '\n': tb_puts(b, "\\n"); break;
        case '\r': tb_puts(b, "\\r"); break;
        case '\t': tb_puts(b, "\\t"); break;
        case '\b': tb_puts(b, "\\b"); break;
        case '\f': tb_puts(b, "\\f"); break;
        default:
            if (cp < 0x20 || (ensure_ascii && cp >= 0x7f)) {
                if (cp >= 0x10000) {
                    uint32_t c = cp - 0x10000;
                    tb_printf(b, "\\u%04x\\u%04x", 0xd800 | (c >> 10), 0xdc00 | (c & 0x3ff));
                } else {
                    tb_printf(b, "\\u%04x", cp);
                }
            } else {
                tb_put(b, s + i, k);
            }
        }
        i += k;
    }
    tb_putc(b, '"');
}

static bool json_float(tm_buf *b, double f)
{
    char tmp[32];
    if (isnan(f))
        return tb_puts(b, "NaN");
    if (isinf(f))
        return tb_puts(b, f < 0 ? "-Infinity" : "Infinity");
    tm_float_repr(f, tmp);
    return tb_puts(b, tmp);
}

static void json_newline(tm_buf *b, const tm_json_opts *o, int level)
{
    tb_putc(b, '\n');
    for (int i = 0; i < level; i++)
        tb_puts(b, o->indent);
}

/* A dict key as json.dumps turns it into a string; false for a key type
 * it refuses. */
static bool json_key(tm_buf *b, const qlm_tval *k, bool ensure_ascii)
{
    switch (k->type) {
    case TV_STR: json_str(b, k->str.s, k->str.n, ensure_ascii); break;
    case TV_NONE: tb_puts(b, "\"null\""); break;
    case TV_BOOL: tb_puts(b, k->b ? "\"true\"" : "\"false\""); break;
    case TV_INT: tb_printf(b, "\"%lld\"", (long long)k->i); break;
    case TV_FLOAT:
        tb_putc(b, '"');
        json_float(b, k->f);
        tb_putc(b, '"');
        break;
    default:
        return false;
    }
    return true;
}

static int cmp_str_keys(const void *x, const void *y)
{
    const qlm_tval *a = **(qlm_tval *const *const *)x, *c = **(qlm_tval *const *const *)y;
    size_t n = a->str.n < c->str.n ? a->str.n : c->str.n;
    int r = memcmp(a->str.s, c->str.s, n);
    return r ? r : (a->str.n > c->str.n) - (a->str.n < c->str.n);
}

bool tm_json_to(tm_rt *rt, tm_buf *b, const qlm_tval *v, const tm_json_opts *o, int depth)
{
    if (depth > TM_MAX_JSON_DEPTH) {
        tm_fail(rt, "maximum recursion depth exceeded while encoding a JSON object");
        return false;
    }
    if (!tm_step(rt))
        return false;
    switch (v->type) {
    case TV_NONE: tb_puts(b, "null"); break;
    case TV_BOOL: tb_puts(b, v->b ? "true" : "false"); break;
    case TV_INT: tb_printf(b, "%lld", (long long)v->i); break;
    case TV_FLOAT: json_float(b, v->f); break;
    case TV_STR: json_str(b, v->str.s, v->str.n, o->ensure_ascii); break;
    case TV_LIST:
        if (!v->list.n) {
            tb_puts(b, "[]");
            break;
        }
        tb_putc(b, '[');
        for (size_t i = 0; i < v->list.n; i++) {
            if (i)
                tb_puts(b, o->item_sep);
            if (o->indent)
                json_newline(b, o, depth + 1);
            if (!tm_json_to(rt, b, v->list.v[i], o, depth + 1))
                return false;
        }
        if (o->indent)
            json_newline(b, o, depth);
        tb_putc(b, ']');
        break;
    case TV_DICT: {
        if (!v->dict.n) {
            tb_puts(b, "{}");
            break;
        }
        /* Entries in key order when sorting (keys must all be strings for
         * that, as in Python where mixed keys do not sort). */
        size_t n = v->dict.n;
        qlm_tval **keys = v->dict.k, **vals = v->dict.v;
        size_t *order = NULL;
        if (o->sort_keys) {
            qlm_tval ***ptrs = tm_alloc(&rt->ar, n * sizeof *ptrs);
            order = tm_alloc(&rt->ar, n * sizeof *order);
            if (!ptrs || !order) {
                tm_nomem(rt);
                return false;
            }
            for (size_t i = 0; i < n; i++) {
                if (keys[i]->type != TV_STR) {
                    tm_fail(rt, "'<' not supported between instances of '%s' and 'str'",
                            tv_typename(keys[i]));
                    return false;
                }
                ptrs[i] = &keys[i];
            }
            qsort(ptrs, n, sizeof *ptrs, cmp_str_keys);
            for (size_t i = 0; i < n; i++)
                order[i] = (size_t)(ptrs[i] - keys);
        }
        tb_putc(b, '{');
        for (size_t j = 0; j < n; j++) {
            size_t i = order ? order[j] : j;
            if (j)
                tb_puts(b, o->item_sep);
            if (o->indent)
                json_newline(b, o, depth + 1);
            if (!json_key(b, keys[i], o->ensure_ascii)) {
                tm_fail(rt, "keys must be str, int, float, bool or None, not %s",
                        tv_typename(keys[i]));
                return false;
            }
            tb_puts(b, o->key_sep);
            if (!tm_json_to(rt, b, vals[i], o, depth + 1))
                return false;
        }
        if (o->indent)
            json_newline(b, o, depth);
        tb_putc(b, '}');
        break;
    }
    default:
        tm_fail(rt, "Object of type %s is not JSON serializable", tv_typename(v));
        return false;
    }
    return buf_ok(rt, b);
}

/* ---- ordering ---- */
static const char *op_text(int op)
{
    switch (op) {
    case OP_LT: return "<";
    case OP_LE: return "<=";
    case OP_GT: return ">";
    default: return ">=";
    }
}

static bool compare_at(tm_rt *rt, const qlm_tval *a, const qlm_tval *b, int op, int *res, int depth)
{
    if (depth > MAX_NEST) {
        tm_fail(rt, "maximum recursion depth exceeded in comparison");
        return false;
    }
    if (a->type == TV_UNDEF || b->type == TV_UNDEF) {
        tm_undef_error(rt, a->type == TV_UNDEF ? a : b);
        return false;
    }
    if (tv_is_num(a) && tv_is_num(b)) {
        if (a->type != TV_FLOAT && b->type != TV_FLOAT) {
            int64_t x = a->type == TV_INT ? a->i : a->b, y = b->type == TV_INT ? b->i : b->b;
            *res = (x > y) - (x < y);
        } else {
            double x = tv_num(a), y = tv_num(b);
            /* NaN compares false every way: make every op false. */
            if (isnan(x) || isnan(y))
                *res = op == OP_LT || op == OP_LE ? 1 : -1;
            else
                *res = (x > y) - (x < y);
        }
        return true;
    }
    if (a->type == TV_STR && b->type == TV_STR) {
        /* UTF-8 byte order is code point order. */
        size_t n = a->str.n < b->str.n ? a->str.n : b->str.n;
        int r = memcmp(a->str.s, b->str.s, n);
        *res = r ? (r > 0) - (r < 0) : (a->str.n > b->str.n) - (a->str.n < b->str.n);
        return true;
    }
    if (a->type == TV_LIST && b->type == TV_LIST &&
        (a->flags & TVF_TUPLE) == (b->flags & TVF_TUPLE)) {
        size_t n = a->list.n < b->list.n ? a->list.n : b->list.n;
        for (size_t i = 0; i < n; i++) {
            if (tv_eq(a->list.v[i], b->list.v[i]))
                continue;
            return compare_at(rt, a->list.v[i], b->list.v[i], op, res, depth + 1);
        }
        *res = (a->list.n > b->list.n) - (a->list.n < b->list.n);
        return true;
    }
    tm_fail(rt, "'%s' not supported between instances of '%s' and '%s'", op_text(op),
            tv_typename(a), tv_typename(b));
    return false;
}

bool tm_compare(tm_rt *rt, const qlm_tval *a, const qlm_tval *b, int op, int *res)
{
    return compare_at(rt, a, b, op, res, 0);
}
