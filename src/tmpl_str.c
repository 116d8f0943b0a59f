/* tmpl_str.c - strings the way Python's str handles them (code points,
 * case mapping, strip/split/replace/find with Python's whitespace and
 * edge cases), and the str/dict/list methods chat templates call. */
#include "tmpl_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unicode.h"

/* ---- small helpers ---- */
qlm_tval *tm_mkstr(tm_rt *rt, const char *s, size_t n)
{
    qlm_tval *v = tv_str(&rt->ar, s, n);
    return v ? v : tm_nomem(rt);
}

qlm_tval *tm_buf_str(tm_rt *rt, tm_buf *b)
{
    if (b->failed)
        return b->over_limit ? tm_fail(rt, "string too long") : tm_nomem(rt);
    qlm_tval *v = b->p ? tv_str_take(&rt->ar, b->p, b->n) : tv_str(&rt->ar, "", 0);
    return v ? v : tm_nomem(rt);
}

qlm_tval *tm_mklist(tm_rt *rt, size_t cap)
{
    qlm_tval *v = tv_list(&rt->ar, cap);
    return v ? v : tm_nomem(rt);
}

qlm_tval *tm_mkint(tm_rt *rt, int64_t i)
{
    qlm_tval *v = tv_int(&rt->ar, i);
    return v ? v : tm_nomem(rt);
}

void tm_put_cp(tm_buf *b, uint32_t cp)
{
    if (cp >= 0xDC80 && cp <= 0xDCFF) {  /* an invalid byte, kept as it was */
        tb_putc(b, (char)(cp & 0xff));
        return;
    }
    char enc[4];
    size_t k = qlm_utf8_encode(cp, enc);
    tb_put(b, enc, k);
}

/* A string as code points. */

bool tm_to_cps(tm_rt *rt, const qlm_tval *s, tm_cps *out)
{
    out->c = tm_alloc(&rt->ar, (s->str.n + 1) * sizeof *out->c);
    if (!out->c)
        return tm_nomem(rt), false;
    out->n = 0;
    for (size_t i = 0; i < s->str.n;) {
        size_t k;
        out->c[out->n++] = tm_u8_cp(s->str.s + i, s->str.n - i, &k);
        i += k;
    }
    return true;
}

qlm_tval *tm_from_cps(tm_rt *rt, const uint32_t *c, size_t n)
{
    tm_buf b = {.a = &rt->ar};
    for (size_t i = 0; i < n; i++)
        tm_put_cp(&b, c[i]);
    return tm_buf_str(rt, &b);
}

/* str(v), with jinja2's soft_str: undefined is "". */
qlm_tval *tm_str_of(tm_rt *rt, qlm_tval *v) { return tm_to_str(rt, v); }

bool tm_want_str(tm_rt *rt, qlm_tval *v, const char *what)
{
    if (v && v->type == TV_STR)
        return true;
    if (v && v->type == TV_UNDEF)
        tm_undef_error(rt, v);
    else
        tm_fail(rt, "%s must be str, not %s", what, v ? tv_typename(v) : "nothing");
    return false;
}

bool tm_want_int(tm_rt *rt, qlm_tval *v, int64_t *out)
{
    if (v->type == TV_INT || v->type == TV_BOOL) {
        *out = v->type == TV_INT ? v->i : v->b;
        return true;
    }
    if (v->type == TV_UNDEF)
        tm_undef_error(rt, v);
    else
        tm_fail(rt, "'%s' object cannot be interpreted as an integer", tv_typename(v));
    return false;
}

/* ---- case ---- */

static bool is_lower(tm_rt *rt, uint32_t cp) { return cp == 0xDF || tm_upper(rt, cp) != cp; }
static bool is_upper(tm_rt *rt, uint32_t cp) { return tm_lower(rt, cp) != cp; }
static bool cased(tm_rt *rt, uint32_t cp)
{
    /* The titlecase digraphs (ǅ ǈ ǋ ǲ) are cased but map both ways. */
    return is_lower(rt, cp) || is_upper(rt, cp) || cp == 0x1C5 || cp == 0x1C8 || cp == 0x1CB ||
           cp == 0x1F2;
}

static void put_upper(tm_rt *rt, tm_buf *b, uint32_t cp)
{
    if (cp == 0xDF)  /* Python's full mapping: "ß".upper() == "SS" */
        tb_puts(b, "SS");
    else
        tm_put_cp(b, tm_upper(rt, cp));
}

static void put_lower(tm_rt *rt, tm_buf *b, uint32_t cp)
{
    if (cp == 0x130)  /* "İ".lower() == "i̇" */
        tb_puts(b, "i\xcc\x87");
    else
        tm_put_cp(b, tm_lower(rt, cp));
}

/* Titlecase: upper case but for ß and the Latin digraphs, whose title
 * forms are their own letters (ǆ -> ǅ, not Ǆ). */
static void put_title(tm_rt *rt, tm_buf *b, uint32_t cp)
{
    if (cp == 0xDF)
        tb_puts(b, "Ss");
    else if ((cp >= 0x1C4 && cp <= 0x1CC) || (cp >= 0x1F1 && cp <= 0x1F3))
        tm_put_cp(b, cp <= 0x1C6 ? 0x1C5 : cp <= 0x1C9 ? 0x1C8 : cp <= 0x1CC ? 0x1CB : 0x1F2);
    else
        tm_put_cp(b, tm_upper(rt, cp));
}

qlm_tval *tm_str_case(tm_rt *rt, qlm_tval *s, int mode)
{
    if (!(s = tm_str_of(rt, s)))
        return NULL;
    tm_buf b = {.a = &rt->ar};
    bool word_start = true, prev_cased = false;
    size_t idx = 0;
    for (size_t i = 0; i < s->str.n; idx++) {
        size_t k;
        uint32_t cp = tm_u8_cp(s->str.s + i, s->str.n - i, &k);
        i += k;
        switch (mode) {
        case C_UPPER: put_upper(rt, &b, cp); break;
        case C_LOWER: put_lower(rt, &b, cp); break;
        case C_CAPITALIZE:
            if (idx == 0)
                put_title(rt, &b, cp);
            else
                put_lower(rt, &b, cp);
            break;
        case C_TITLE_FILTER:
            /* jinja2's title: words start after -, whitespace, ( { [ or <. */
            if (tm_py_space(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<') {
                tm_put_cp(&b, cp);
                word_start = true;
            } else if (word_start) {
                put_upper(rt, &b, cp);  /* item[0].upper(), not a titlecase */
                word_start = false;
            } else {
                put_lower(rt, &b, cp);
            }
            break;
        case C_TITLE: {
            /* str.title: a cased letter after an uncased one starts a word. */
            bool c = cased(rt, cp);
            if (c && !prev_cased)
                put_title(rt, &b, cp);
            else if (c)
                put_lower(rt, &b, cp);
            else
                tm_put_cp(&b, cp);
            prev_cased = c;
            break;
        }
        default:
            if (is_lower(rt, cp))
                put_upper(rt, &b, cp);
            else
                put_lower(rt, &b, cp);
        }
    }
    return tm_buf_str(rt, &b);
}

/* ---- strip, split, replace, find ---- */
static bool in_cps(const tm_cps *set, uint32_t cp)
{
    for (size_t i = 0; i < set->n; i++)
        if (set->c[i] == cp)
            return true;
    return false;
}

qlm_tval *tm_str_strip(tm_rt *rt, qlm_tval *s, qlm_tval *chars, bool left, bool right)
{
    if (!(s = tm_str_of(rt, s)))
        return NULL;
    tm_cps set = {0}, c;
    if (chars && chars->type != TV_NONE) {
        if (!tm_want_str(rt, chars, "strip arg") || !tm_to_cps(rt, chars, &set))
            return NULL;
    }
    if (!tm_to_cps(rt, s, &c))
        return NULL;
    size_t a = 0, z = c.n;
    bool custom = chars && chars->type != TV_NONE;
    while (left && a < z && (custom ? in_cps(&set, c.c[a]) : tm_py_space(c.c[a])))
        a++;
    while (right && z > a && (custom ? in_cps(&set, c.c[z - 1]) : tm_py_space(c.c[z - 1])))
        z--;
    return tm_from_cps(rt, c.c + a, z - a);
}

static bool push_piece(tm_rt *rt, qlm_tval *list, const uint32_t *c, size_t n)
{
    qlm_tval *p = tm_from_cps(rt, c, n);
    return p && (tv_push(&rt->ar, list, p) || (tm_nomem(rt), false));
}

static qlm_tval *reverse_list(qlm_tval *l)
{
    for (size_t i = 0, j = l->list.n; i + 1 < j; i++, j--) {
        qlm_tval *t = l->list.v[i];
        l->list.v[i] = l->list.v[j - 1];
        l->list.v[j - 1] = t;
    }
    return l;
}

/* Appends p[0..n) as a string, put back in order when the split ran on
 * the reversed text. */
static bool push_run(tm_rt *rt, qlm_tval *out, const uint32_t *p, size_t n, bool reversed)
{
    if (reversed) {
        uint32_t *rev = tm_alloc(&rt->ar, (n + 1) * sizeof *rev);
        if (!rev)
            return tm_nomem(rt), false;
        for (size_t k = 0; k < n; k++)
            rev[k] = p[n - 1 - k];
        p = rev;
    }
    return push_piece(rt, out, p, n);
}

/* str.split / str.rsplit. */
static qlm_tval *str_split(tm_rt *rt, qlm_tval *s, qlm_tval *sep, int64_t maxsplit, bool from_right)
{
    tm_cps c, sp = {0};
    if (!tm_to_cps(rt, s, &c))
        return NULL;
    bool ws = !sep || sep->type == TV_NONE;
    if (!ws) {
        if (!tm_want_str(rt, sep, "separator") || !tm_to_cps(rt, sep, &sp))
            return NULL;
        if (!sp.n)
            return tm_fail(rt, "empty separator");
    }
    qlm_tval *out = tm_mklist(rt, 0);
    if (!out)
        return NULL;
    if (maxsplit < 0)
        maxsplit = INT64_MAX;
    /* Splitting from the right is splitting the reversed string. */
    if (from_right) {
        for (size_t i = 0, j = c.n; i + 1 < j; i++, j--) {
            uint32_t t = c.c[i]; c.c[i] = c.c[j - 1]; c.c[j - 1] = t;
        }
        for (size_t i = 0, j = sp.n; i + 1 < j; i++, j--) {
            uint32_t t = sp.c[i]; sp.c[i] = sp.c[j - 1]; sp.c[j - 1] = t;
        }
    }
    size_t i = 0, start = 0;
    int64_t splits = 0;
    if (ws) {
        for (;;) {
            while (i < c.n && tm_py_space(c.c[i]))
                i++;
            if (i >= c.n)
                break;
            start = i;
            if (splits++ >= maxsplit)
                i = c.n;  /* the rest, trailing whitespace and all, is the last piece */
            else
                while (i < c.n && !tm_py_space(c.c[i]))
                    i++;
            if (!push_run(rt, out, c.c + start, i - start, from_right))
                return NULL;
        }
    } else {
        while (i + sp.n <= c.n && splits < maxsplit) {
            if (memcmp(c.c + i, sp.c, sp.n * sizeof *sp.c)) {
                i++;
                continue;
            }
            if (!push_run(rt, out, c.c + start, i - start, from_right))
                return NULL;
            i += sp.n;
            start = i;
            splits++;
        }
        if (!push_run(rt, out, c.c + start, c.n - start, from_right))
            return NULL;
    }
    return from_right ? reverse_list(out) : out;
}

static bool is_line_break(uint32_t cp)
{
    return cp == '\n' || cp == '\r' || cp == 0x0b || cp == 0x0c || (cp >= 0x1c && cp <= 0x1e) ||
           cp == 0x85 || cp == 0x2028 || cp == 0x2029;
}

qlm_tval *tm_str_splitlines(tm_rt *rt, qlm_tval *s, bool keepends)
{
    tm_cps c;
    qlm_tval *out;
    if (!tm_to_cps(rt, s, &c) || !(out = tm_mklist(rt, 0)))
        return NULL;
    size_t start = 0;
    for (size_t i = 0; i < c.n;) {
        if (!is_line_break(c.c[i])) {
            i++;
            continue;
        }
        size_t eol = i + (c.c[i] == '\r' && i + 1 < c.n && c.c[i + 1] == '\n' ? 2 : 1);
        if (!push_piece(rt, out, c.c + start, (keepends ? eol : i) - start))
            return NULL;
        start = i = eol;
    }
    if (start < c.n && !push_piece(rt, out, c.c + start, c.n - start))
        return NULL;
    return out;
}

qlm_tval *tm_str_replace(tm_rt *rt, qlm_tval *s, qlm_tval *old, qlm_tval *new_, int64_t count)
{
    if (!(s = tm_str_of(rt, s)) || !(old = tm_str_of(rt, old)) || !(new_ = tm_str_of(rt, new_)))
        return NULL;
    if (count < 0)
        count = INT64_MAX;
    tm_buf b = {.a = &rt->ar};
    if (!old->str.n) {
        /* "abc".replace("", "-") == "-a-b-c-" */
        int64_t done = 0;
        for (size_t i = 0; i <= s->str.n;) {
            if (done < count) {
                tb_put(&b, new_->str.s, new_->str.n);
                done++;
            }
            if (i == s->str.n)
                break;
            size_t k = tm_u8_step(s->str.s + i, s->str.n - i);
            tb_put(&b, s->str.s + i, k);
            i += k;
            if (!tm_step(rt))
                return NULL;
        }
        return tm_buf_str(rt, &b);
    }
    const char *p = s->str.s, *end = s->str.s + s->str.n;
    int64_t done = 0;
    while (done < count) {
        const char *hit = memmem(p, (size_t)(end - p), old->str.s, old->str.n);
        if (!hit)
            break;
        tb_put(&b, p, (size_t)(hit - p));
        tb_put(&b, new_->str.s, new_->str.n);
        p = hit + old->str.n;
        done++;
    }
    tb_put(&b, p, (size_t)(end - p));
    return tm_buf_str(rt, &b);
}

/* Code point index of byte offset off in s. */
static int64_t cp_index(const qlm_tval *s, size_t off)
{
    if (s->ascii)
        return (int64_t)off;
    int64_t n = 0;
    for (size_t i = 0; i < off; n++)
        i += tm_u8_step(s->str.s + i, s->str.n - i);
    return n;
}

static int64_t str_find(const qlm_tval *s, const qlm_tval *sub, bool from_right)
{
    if (!sub->str.n)
        return from_right ? cp_index(s, s->str.n) : 0;
    const char *hit = NULL, *p = s->str.s, *end = s->str.s + s->str.n;
    for (;;) {
        const char *h = memmem(p, (size_t)(end - p), sub->str.s, sub->str.n);
        if (!h)
            break;
        hit = h;
        if (!from_right)
            break;
        p = h + 1;
    }
    return hit ? cp_index(s, (size_t)(hit - s->str.s)) : -1;
}

static bool affix_match(const qlm_tval *s, const qlm_tval *a, bool suffix)
{
    if (a->str.n > s->str.n)
        return false;
    const char *at = suffix ? s->str.s + s->str.n - a->str.n : s->str.s;
    return !memcmp(at, a->str.s, a->str.n);
}

/* Pads s to width code points: str.center, ljust, rjust. */
qlm_tval *tm_str_pad(tm_rt *rt, qlm_tval *s, int64_t width, qlm_tval *fill, int how)
{
    uint32_t fc = ' ';
    if (fill) {
        size_t k;
        if (!tm_want_str(rt, fill, "fill character"))
            return NULL;
        if (tm_u8_count(fill) != 1)
            return tm_fail(rt, "The fill character must be exactly one character long");
        fc = tm_u8_cp(fill->str.s, fill->str.n, &k);
    }
    int64_t len = (int64_t)tm_u8_count(s);
    if (width <= len)
        return s;
    if (width > (int64_t)(64 << 20))
        return tm_fail(rt, "padding width too large");
    int64_t marg = width - len, left;
    if (how == 0)       /* center, as CPython's pad() splits the margin */
        left = marg / 2 + (marg & width & 1);
    else if (how < 0)   /* ljust */
        left = 0;
    else
        left = marg;
    tm_buf b = {.a = &rt->ar};
    for (int64_t i = 0; i < left; i++)
        tm_put_cp(&b, fc);
    tb_put(&b, s->str.s, s->str.n);
    for (int64_t i = 0; i < marg - left; i++)
        tm_put_cp(&b, fc);
    return tm_buf_str(rt, &b);
}

int tm_case_test(tm_rt *rt, qlm_tval *v, bool want_lower)
{
    if (!(v = tm_str_of(rt, v)))
        return -1;
    bool any = false;
    for (size_t i = 0; i < v->str.n;) {
        size_t k;
        uint32_t cp = tm_u8_cp(v->str.s + i, v->str.n - i, &k);
        i += k;
        bool up = tm_lower(rt, cp) != cp, low = tm_upper(rt, cp) != cp;
        if ((want_lower && up) || (!want_lower && low))
            return 0;
        any = any || up || low;
    }
    return any;
}

/* Tests that take the value alone, and their Python function names (for
 * jinja2's arity error). */
qlm_tval *tm_pairs_of(tm_rt *rt, qlm_tval *v)
{
    qlm_tval *out = tm_mklist(rt, v->dict.n);
    if (!out)
        return NULL;
    for (size_t i = 0; i < v->dict.n; i++) {
        qlm_tval *pair = tm_mklist(rt, 2);
        if (!pair)
            return NULL;
        pair->flags = TVF_TUPLE;
        tv_push(&rt->ar, pair, v->dict.k[i]);
        tv_push(&rt->ar, pair, v->dict.v[i]);
        tv_push(&rt->ar, out, pair);
    }
    return out;
}

/* ---- methods ---- */
enum {
    M_STRIP, M_LSTRIP, M_RSTRIP, M_SPLIT, M_RSPLIT, M_SPLITLINES, M_STARTSWITH, M_ENDSWITH,
    M_UPPER, M_LOWER, M_TITLE, M_CAPITALIZE, M_SWAPCASE, M_REPLACE, M_FIND, M_RFIND, M_INDEX,
    M_RINDEX, M_COUNT, M_JOIN, M_ISDIGIT, M_ISALPHA, M_ISALNUM, M_ISSPACE, M_ISLOWER, M_ISUPPER,
    M_REMOVEPREFIX, M_REMOVESUFFIX, M_FORMAT, M_CENTER, M_LJUST, M_RJUST, M_ZFILL, M_PARTITION,
    M_RPARTITION, M_STR_END,
    M_ITEMS = 100, M_KEYS, M_VALUES, M_GET, M_DICT_COPY,
    M_LIST_INDEX = 200, M_LIST_COUNT, M_LIST_COPY,
    M_CYCLE = 300, M_CHANGED,
};

static const char *const str_methods[] = {
    "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith",
    "upper", "lower", "title", "capitalize", "swapcase", "replace", "find", "rfind", "index",
    "rindex", "count", "join", "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper",
    "removeprefix", "removesuffix", "format", "center", "ljust", "rjust", "zfill", "partition",
    "rpartition",
};

static bool name_is(const char *name, size_t n, const char *w)
{
    return strlen(w) == n && !memcmp(name, w, n);
}

int tm_method_id(const qlm_tval *obj, const char *name, size_t n)
{
    switch (obj->type) {
    case TV_STR:
        for (int i = 0; i < M_STR_END; i++)
            if (name_is(name, n, str_methods[i]))
                return i;
        return -1;
    case TV_DICT:
        if (name_is(name, n, "items")) return M_ITEMS;
        if (name_is(name, n, "keys")) return M_KEYS;
        if (name_is(name, n, "values")) return M_VALUES;
        if (name_is(name, n, "get")) return M_GET;
        if (name_is(name, n, "copy")) return M_DICT_COPY;
        return -1;
    case TV_LIST:
        if (name_is(name, n, "index")) return M_LIST_INDEX;
        if (name_is(name, n, "count")) return M_LIST_COUNT;
        if (name_is(name, n, "copy") && !(obj->flags & TVF_TUPLE)) return M_LIST_COPY;
        return -1;
    case TV_LOOP:
        return name_is(name, n, "cycle") ? M_CYCLE : name_is(name, n, "changed") ? M_CHANGED : -1;
    default:
        return -1;
    }
}

static qlm_tval *str_isclass(qlm_tval *s, int id)
{
    if (!s->str.n)
        return &tm_false;
    for (size_t i = 0; i < s->str.n;) {
        size_t k;
        uint32_t cp = tm_u8_cp(s->str.s + i, s->str.n - i, &k);
        i += k;
        unsigned f = cp < 0x80 ? 0 : qlm_ucp_flags(cp);
        bool digit = cp < 0x80 ? cp >= '0' && cp <= '9' : (f & QLM_UCP_NUMBER) != 0;
        bool alpha = cp < 0x80 ? ((cp | 32) >= 'a' && (cp | 32) <= 'z') : (f & QLM_UCP_LETTER) != 0;
        bool ok = id == M_ISDIGIT ? digit : id == M_ISALPHA ? alpha : id == M_ISALNUM ? digit || alpha
                                                                                     : tm_py_space(cp);
        if (!ok)
            return &tm_false;
    }
    return &tm_true;
}

/* str.format with {} / {0} / {name} fields and {{ }} escapes. */
static qlm_tval *str_format(tm_rt *rt, qlm_tval *s, tm_args *a)
{
    tm_buf b = {.a = &rt->ar};
    int auto_idx = 0;
    for (size_t i = 0; i < s->str.n; i++) {
        char c = s->str.s[i];
        if ((c == '{' || c == '}') && i + 1 < s->str.n && s->str.s[i + 1] == c) {
            tb_putc(&b, c);
            i++;
            continue;
        }
        if (c == '}')
            return tm_fail(rt, "Single '}' encountered in format string");
        if (c != '{') {
            tb_putc(&b, c);
            continue;
        }
        const char *close = memchr(s->str.s + i, '}', s->str.n - i);
        if (!close)
            return tm_fail(rt, "Single '{' encountered in format string");
        const char *f = s->str.s + i + 1;
        size_t fl = (size_t)(close - f);
        if (memchr(f, ':', fl) || memchr(f, '!', fl) || memchr(f, '.', fl) || memchr(f, '[', fl))
            return tm_fail(rt, "unsupported: format specs and field access in str.format");
        qlm_tval *v = NULL;
        if (!fl) {
            v = tm_arg(a, auto_idx++, NULL);
            if (!v)
                return tm_fail(rt, "Replacement index %d out of range for positional args tuple",
                               auto_idx - 1);
        } else if (f[0] >= '0' && f[0] <= '9') {
            int idx = atoi(f);
            if (!(v = tm_arg(a, idx, NULL)))
                return tm_fail(rt, "Replacement index %d out of range for positional args tuple", idx);
        } else {
            for (int k = 0; k < a->nkw && !v; k++)
                if (strlen(a->kwn[k]) == fl && !memcmp(a->kwn[k], f, fl))
                    v = a->kwv[k];
            if (!v)
                return tm_fail(rt, "'%.*s'", (int)fl, f);
        }
        if (!tm_str_to(rt, &b, v))
            return NULL;
        i = (size_t)(close - s->str.s);
    }
    return tm_buf_str(rt, &b);
}

static qlm_tval *partition(tm_rt *rt, qlm_tval *s, qlm_tval *sep, bool from_right)
{
    if (!tm_want_str(rt, sep, "separator"))
        return NULL;
    if (!sep->str.n)
        return tm_fail(rt, "empty separator");
    const char *hit = NULL, *p = s->str.s, *end = p + s->str.n;
    for (;;) {
        const char *h = memmem(p, (size_t)(end - p), sep->str.s, sep->str.n);
        if (!h)
            break;
        hit = h;
        if (!from_right)
            break;
        p = h + 1;
    }
    qlm_tval *t = tm_mklist(rt, 3), *empty = tm_mkstr(rt, "", 0);
    if (!t || !empty)
        return NULL;
    t->flags = TVF_TUPLE;
    if (!hit) {
        tv_push(&rt->ar, t, from_right ? empty : s);
        tv_push(&rt->ar, t, empty);
        tv_push(&rt->ar, t, from_right ? s : empty);
    } else {
        tv_push(&rt->ar, t, tm_mkstr(rt, s->str.s, (size_t)(hit - s->str.s)));
        tv_push(&rt->ar, t, sep);
        tv_push(&rt->ar, t, tm_mkstr(rt, hit + sep->str.n, (size_t)(end - hit - sep->str.n)));
    }
    return rt->failed ? NULL : t;
}

static qlm_tval *str_method(tm_rt *rt, int id, qlm_tval *s, tm_args *a)
{
    qlm_tval *x = tm_arg(a, 0, NULL), *y = tm_arg(a, 1, NULL);
    int64_t n;
    switch (id) {
    case M_STRIP: return tm_str_strip(rt, s, x, true, true);
    case M_LSTRIP: return tm_str_strip(rt, s, x, true, false);
    case M_RSTRIP: return tm_str_strip(rt, s, x, false, true);
    case M_SPLIT: case M_RSPLIT: {
        qlm_tval *sep = tm_arg(a, 0, "sep"), *ms = tm_arg(a, 1, "maxsplit");
        n = -1;
        if (ms && !tm_want_int(rt, ms, &n))
            return NULL;
        return str_split(rt, s, sep, n, id == M_RSPLIT);
    }
    case M_SPLITLINES: return tm_str_splitlines(rt, s, (x = tm_arg(a, 0, "keepends")) && tv_truthy(x));
    case M_STARTSWITH: case M_ENDSWITH:
        if (!x)
            return tm_fail(rt, "%s() takes at least 1 argument (0 given)", str_methods[id]);
        if (x->type == TV_LIST && (x->flags & TVF_TUPLE)) {
            for (size_t i = 0; i < x->list.n; i++) {
                if (!tm_want_str(rt, x->list.v[i], "tuple item"))
                    return NULL;
                if (affix_match(s, x->list.v[i], id == M_ENDSWITH))
                    return &tm_true;
            }
            return &tm_false;
        }
        if (x->type != TV_STR)
            return tm_fail(rt, "%s first arg must be str or a tuple of str, not %s", str_methods[id],
                           tv_typename(x));
        return tv_bool(affix_match(s, x, id == M_ENDSWITH));
    case M_UPPER: return tm_str_case(rt, s, C_UPPER);
    case M_LOWER: return tm_str_case(rt, s, C_LOWER);
    case M_TITLE: return tm_str_case(rt, s, C_TITLE);
    case M_CAPITALIZE: return tm_str_case(rt, s, C_CAPITALIZE);
    case M_SWAPCASE: return tm_str_case(rt, s, C_SWAP);
    case M_REPLACE: {
        qlm_tval *c = tm_arg(a, 2, "count");
        n = -1;
        if (!x || !y || !tm_want_str(rt, x, "replace arg") || !tm_want_str(rt, y, "replace arg"))
            return rt->failed ? NULL : tm_fail(rt, "replace expected at least 2 arguments");
        if (c && !tm_want_int(rt, c, &n))
            return NULL;
        return tm_str_replace(rt, s, x, y, n);
    }
    case M_FIND: case M_RFIND: case M_INDEX: case M_RINDEX: {
        if (!x || !tm_want_str(rt, x, "substring"))
            return rt->failed ? NULL : tm_fail(rt, "%s() takes at least 1 argument", str_methods[id]);
        int64_t at = str_find(s, x, id == M_RFIND || id == M_RINDEX);
        if (at < 0 && (id == M_INDEX || id == M_RINDEX))
            return tm_fail(rt, "substring not found");
        return tm_mkint(rt, at);
    }
    case M_COUNT: {
        if (!x || !tm_want_str(rt, x, "substring"))
            return rt->failed ? NULL : tm_fail(rt, "count() takes at least 1 argument");
        if (!x->str.n)
            return tm_mkint(rt, (int64_t)tm_u8_count(s) + 1);
        int64_t c = 0;
        for (const char *p = s->str.s, *end = p + s->str.n;
             (p = memmem(p, (size_t)(end - p), x->str.s, x->str.n)); p += x->str.n)
            c++;
        return tm_mkint(rt, c);
    }
    case M_JOIN: {
        qlm_tval *items;
        if (!x || !(items = tm_iterate(rt, x)))
            return rt->failed ? NULL : tm_fail(rt, "join() takes exactly one argument");
        tm_buf b = {.a = &rt->ar};
        for (size_t i = 0; i < items->list.n; i++) {
            qlm_tval *it = items->list.v[i];
            if (it->type != TV_STR)
                return tm_fail(rt, "sequence item %zu: expected str instance, %s found", i,
                               tv_typename(it));
            if (i)
                tb_put(&b, s->str.s, s->str.n);
            tb_put(&b, it->str.s, it->str.n);
        }
        return tm_buf_str(rt, &b);
    }
    case M_ISDIGIT: case M_ISALPHA: case M_ISALNUM: case M_ISSPACE: return str_isclass(s, id);
    case M_ISLOWER: case M_ISUPPER: {
        int r = tm_case_test(rt, s, id == M_ISLOWER);
        return r < 0 ? NULL : tv_bool(r);
    }
    case M_REMOVEPREFIX: case M_REMOVESUFFIX:
        if (!x || !tm_want_str(rt, x, "affix"))
            return NULL;
        if (!affix_match(s, x, id == M_REMOVESUFFIX))
            return s;
        return id == M_REMOVEPREFIX ? tm_mkstr(rt, s->str.s + x->str.n, s->str.n - x->str.n)
                                    : tm_mkstr(rt, s->str.s, s->str.n - x->str.n);
    case M_FORMAT: return str_format(rt, s, a);
    case M_CENTER: case M_LJUST: case M_RJUST:
        if (!x || !tm_want_int(rt, x, &n))
            return rt->failed ? NULL : tm_fail(rt, "%s() takes at least 1 argument", str_methods[id]);
        return tm_str_pad(rt, s, n, y, id == M_CENTER ? 0 : id == M_LJUST ? -1 : 1);
    case M_ZFILL: {
        if (!x || !tm_want_int(rt, x, &n))
            return rt->failed ? NULL : tm_fail(rt, "zfill() takes exactly one argument");
        int64_t len = (int64_t)tm_u8_count(s);
        if (n <= len)
            return s;
        if (n > (64 << 20))
            return tm_fail(rt, "padding width too large");
        tm_buf b = {.a = &rt->ar};
        size_t start = 0;
        if (s->str.n && (s->str.s[0] == '+' || s->str.s[0] == '-')) {
            tb_putc(&b, s->str.s[0]);
            start = 1;
        }
        for (int64_t i = 0; i < n - len; i++)
            tb_putc(&b, '0');
        tb_put(&b, s->str.s + start, s->str.n - start);
        return tm_buf_str(rt, &b);
    }
    case M_PARTITION: case M_RPARTITION:
        if (!x)
            return tm_fail(rt, "partition() takes exactly one argument");
        return partition(rt, s, x, id == M_RPARTITION);
    }
    return tm_fail(rt, "internal error: method %d", id);
}

qlm_tval *tm_call_method(tm_rt *rt, int id, qlm_tval *self, tm_args *a)
{
    qlm_tval *x = tm_arg(a, 0, NULL), *r;
    if (id < M_STR_END)
        return str_method(rt, id, self, a);
    switch (id) {
    case M_ITEMS: return tm_pairs_of(rt, self);
    case M_KEYS: case M_VALUES:
        if (!(r = tm_mklist(rt, self->dict.n)))
            return NULL;
        for (size_t i = 0; i < self->dict.n; i++)
            tv_push(&rt->ar, r, id == M_KEYS ? self->dict.k[i] : self->dict.v[i]);
        return r;
    case M_GET:
        if (!x)
            return tm_fail(rt, "get expected at least 1 argument, got 0");
        if (tv_unhashable(x))
            return tm_fail(rt, "unhashable type: '%s'", tv_typename(tv_unhashable(x)));
        r = tv_dict_get(self, x);
        return r ? r : a->npos > 1 ? a->pos[1] : &tm_none;
    case M_DICT_COPY: {
        qlm_tval *d = tv_dict(&rt->ar, self->dict.n, TV_DICT);
        if (!d)
            return tm_nomem(rt);
        for (size_t i = 0; i < self->dict.n; i++)
            tv_dict_set(&rt->ar, d, self->dict.k[i], self->dict.v[i]);
        return d;
    }
    case M_LIST_INDEX:
        if (!x)
            return tm_fail(rt, "index expected at least 1 argument, got 0");
        for (size_t i = 0; i < self->list.n; i++)
            if (tv_eq(self->list.v[i], x))
                return tm_mkint(rt, (int64_t)i);
        return tm_fail(rt, "value is not in list");
    case M_LIST_COUNT: {
        int64_t c = 0;
        if (!x)
            return tm_fail(rt, "count() takes exactly one argument (0 given)");
        for (size_t i = 0; i < self->list.n; i++)
            c += tv_eq(self->list.v[i], x);
        return tm_mkint(rt, c);
    }
    case M_LIST_COPY:
        if (!(r = tm_mklist(rt, self->list.n)))
            return NULL;
        for (size_t i = 0; i < self->list.n; i++)
            tv_push(&rt->ar, r, self->list.v[i]);
        return r;
    case M_CYCLE:
        if (!a->npos)
            return tm_fail(rt, "no items for cycling given");
        return a->pos[self->loop->i % (size_t)a->npos];
    case M_CHANGED: {
        /* True when the arguments differ from the previous call's. */
        qlm_tval *now = tm_mklist(rt, (size_t)a->npos);
        if (!now)
            return NULL;
        now->flags = TVF_TUPLE;
        for (int i = 0; i < a->npos; i++)
            tv_push(&rt->ar, now, a->pos[i]);
        qlm_tval *last = self->loop->changed_last;
        self->loop->changed_last = now;
        return tv_bool(!last || !tv_eq(last, now));
    }
    }
    return tm_fail(rt, "internal error: method %d", id);
}
