/* tmpl_builtins.c - jinja2's filters and tests, and the globals (range,
 * namespace, dict, raise_exception, strftime_now).  Each follows jinja2
 * 3.1 and Python 3 closely enough to give the same text; the few
 * departures are named where they are.  Methods are in tmpl_str.c. */
#include "tmpl_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "unicode.h"

/* ---- attribute getters for map/sort/selectattr ("a.b.0") ---- */
static qlm_tval *get_path(tm_rt *rt, qlm_tval *item, qlm_tval *attr)
{
    if (!attr || attr->type == TV_NONE)
        return item;
    if (attr->type != TV_STR)
        return tm_getitem(rt, item, attr);
    const char *s = attr->str.s, *end = s + attr->str.n;
    while (item) {
        const char *dot = memchr(s, '.', (size_t)(end - s));
        size_t n = dot ? (size_t)(dot - s) : (size_t)(end - s);
        bool digits = n > 0;
        for (size_t i = 0; i < n; i++)
            digits = digits && s[i] >= '0' && s[i] <= '9';
        qlm_tval *key = digits && n < 18 ? tv_int(&rt->ar, strtoll(s, NULL, 10)) : tv_str(&rt->ar, s, n);
        if (!key)
            return tm_nomem(rt);
        item = tm_getitem(rt, item, key);
        if (!dot)
            break;
        s = dot + 1;
    }
    return item;
}

/* Sort keys: strings lowercased unless case sensitive. */
static qlm_tval *sort_key(tm_rt *rt, qlm_tval *v, bool case_sensitive)
{
    if (!case_sensitive && v->type == TV_STR)
        return tm_str_case(rt, v, C_LOWER);
    return v;
}

/* Stable merge sort of vals by keys (Python's sorted is stable too). */
static bool merge_sort(tm_rt *rt, qlm_tval **keys, qlm_tval **vals, size_t n, bool reverse)
{
    qlm_tval **tk = tm_alloc(&rt->ar, (n + 1) * sizeof *tk), **tv = tm_alloc(&rt->ar, (n + 1) * sizeof *tv);
    if (!tk || !tv)
        return tm_nomem(rt), false;
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                int c;
                if (!tm_compare(rt, keys[j], keys[i], OP_LT, &c))
                    return false;
                /* Take from the right only when strictly before (stable);
                 * reversed, Python sorts reverse-stable the same way. */
                bool right_first = reverse ? c > 0 : c < 0;
                if (right_first) {
                    tk[k] = keys[j];
                    tv[k++] = vals[j++];
                } else {
                    tk[k] = keys[i];
                    tv[k++] = vals[i++];
                }
            }
            while (i < mid) { tk[k] = keys[i]; tv[k++] = vals[i++]; }
            while (j < hi) { tk[k] = keys[j]; tv[k++] = vals[j++]; }
        }
        memcpy(keys, tk, n * sizeof *keys);
        memcpy(vals, tv, n * sizeof *vals);
        if (!tm_step(rt))
            return false;
    }
    return true;
}

/* ---- filters ---- */
enum {
    FL_ABS, FL_ATTR, FL_BATCH, FL_CAPITALIZE, FL_CENTER, FL_DEFAULT, FL_DICTSORT, FL_ESCAPE,
    FL_FIRST, FL_FLOAT, FL_FORCEESCAPE, FL_FORMAT, FL_INDENT, FL_INT, FL_ITEMS, FL_JOIN,
    FL_LAST, FL_LENGTH, FL_LIST, FL_LOWER, FL_MAP, FL_MAX, FL_MIN, FL_REJECT, FL_REJECTATTR,
    FL_REPLACE, FL_REVERSE, FL_ROUND, FL_SAFE, FL_SELECT, FL_SELECTATTR, FL_SORT, FL_STRING,
    FL_SUM, FL_TITLE, FL_TOJSON, FL_TRIM, FL_TRUNCATE, FL_UNIQUE, FL_UPPER, FL_WORDCOUNT,
};

static const struct { const char *name; int id; } filters[] = {
    {"abs", FL_ABS}, {"attr", FL_ATTR}, {"batch", FL_BATCH}, {"capitalize", FL_CAPITALIZE},
    {"center", FL_CENTER}, {"count", FL_LENGTH}, {"d", FL_DEFAULT}, {"default", FL_DEFAULT},
    {"dictsort", FL_DICTSORT}, {"e", FL_ESCAPE}, {"escape", FL_ESCAPE}, {"first", FL_FIRST},
    {"float", FL_FLOAT}, {"forceescape", FL_FORCEESCAPE}, {"format", FL_FORMAT},
    {"indent", FL_INDENT}, {"int", FL_INT}, {"items", FL_ITEMS}, {"join", FL_JOIN},
    {"last", FL_LAST}, {"length", FL_LENGTH}, {"list", FL_LIST}, {"lower", FL_LOWER},
    {"map", FL_MAP}, {"max", FL_MAX}, {"min", FL_MIN}, {"reject", FL_REJECT},
    {"rejectattr", FL_REJECTATTR}, {"replace", FL_REPLACE}, {"reverse", FL_REVERSE},
    {"round", FL_ROUND}, {"safe", FL_SAFE}, {"select", FL_SELECT}, {"selectattr", FL_SELECTATTR},
    {"sort", FL_SORT}, {"string", FL_STRING}, {"sum", FL_SUM}, {"title", FL_TITLE},
    {"tojson", FL_TOJSON}, {"trim", FL_TRIM}, {"truncate", FL_TRUNCATE}, {"unique", FL_UNIQUE},
    {"upper", FL_UPPER}, {"wordcount", FL_WORDCOUNT},
};

/* jinja2 filters this interpreter does not have (so a template using one
 * is refused as unsupported rather than as a typo). */
static const char *const missing_filters[] = {
    "filesizeformat", "groupby", "pprint", "random", "slice", "striptags", "urlencode",
    "urlize", "wordwrap", "xmlattr", NULL,
};

int tm_filter_id(const char *name)
{
    for (size_t i = 0; i < sizeof filters / sizeof *filters; i++)
        if (!strcmp(filters[i].name, name))
            return filters[i].id;
    for (int i = 0; missing_filters[i]; i++)
        if (!strcmp(missing_filters[i], name))
            return -2;
    return -1;
}

static qlm_tval *length_of(tm_rt *rt, qlm_tval *v)
{
    switch (v->type) {
    case TV_STR: return tm_mkint(rt, (int64_t)tm_u8_count(v));
    case TV_LIST: return tm_mkint(rt, (int64_t)v->list.n);
    case TV_DICT: return tm_mkint(rt, (int64_t)v->dict.n);
    case TV_UNDEF: return tm_mkint(rt, 0);
    default: return tm_fail(rt, "object of type '%s' has no len()", tv_typename(v));
    }
}

static qlm_tval *html_escape(tm_rt *rt, qlm_tval *v)
{
    if (v->type == TV_STR && (v->flags & TVF_MARKUP))
        return v;
    if (!(v = tm_str_of(rt, v)))
        return NULL;
    tm_buf b = {.a = &rt->ar};
    for (size_t i = 0; i < v->str.n; i++) {
        switch (v->str.s[i]) {
        case '&': tb_puts(&b, "&amp;"); break;
        case '<': tb_puts(&b, "&lt;"); break;
        case '>': tb_puts(&b, "&gt;"); break;
        case '"': tb_puts(&b, "&#34;"); break;
        case '\'': tb_puts(&b, "&#39;"); break;
        default: tb_putc(&b, v->str.s[i]);
        }
    }
    qlm_tval *r = tm_buf_str(rt, &b);
    if (r)
        r->flags |= TVF_MARKUP;
    return r;
}

/* Python's int(str, base) for the int filter: None when it does not parse. */
static bool parse_int(const qlm_tval *s, int base, int64_t *out)
{
    char tmp[80];
    size_t n = 0;
    const char *p = s->str.s, *end = p + s->str.n;
    while (p < end && tm_py_space((unsigned char)*p))
        p++;
    while (end > p && tm_py_space((unsigned char)end[-1]))
        end--;
    bool neg = false;
    if (p < end && (*p == '+' || *p == '-'))
        neg = *p++ == '-';
    if (end - p >= 2 && p[0] == '0') {
        char c = (char)(p[1] | 0x20);
        if ((c == 'x' && base == 16) || (c == 'o' && base == 8) || (c == 'b' && base == 2))
            p += 2;
    }
    for (; p < end && n < sizeof tmp - 1; p++) {
        if (*p == '_' && n && p + 1 < end && p[1] != '_')
            continue;
        tmp[n++] = *p;
    }
    if (!n || p != end)
        return false;
    tmp[n] = 0;
    char *stop;
    errno = 0;
    long long v = strtoll(tmp, &stop, base);
    if (*stop || errno || tmp[0] == '-' || tmp[0] == '+' || tm_py_space((unsigned char)tmp[0]))
        return false;
    *out = neg ? -v : v;
    return true;
}

/* Python's float(str): None when it does not parse. */
static bool parse_float(const qlm_tval *s, double *out)
{
    char tmp[128];
    size_t n = 0;
    const char *p = s->str.s, *end = p + s->str.n;
    while (p < end && tm_py_space((unsigned char)*p))
        p++;
    while (end > p && tm_py_space((unsigned char)end[-1]))
        end--;
    for (; p < end && n < sizeof tmp - 1; p++) {
        if (*p == '_')
            continue;
        if (*p == 'x' || *p == 'X' || *p == 'p' || *p == 'P')
            return false;  /* strtod reads hex floats; Python does not */
        tmp[n++] = *p;
    }
    if (!n || p != end)
        return false;
    tmp[n] = 0;
    char *stop;
    double v = strtod(tmp, &stop);
    if (*stop)
        return false;
    *out = v;
    return true;
}

static qlm_tval *to_int(tm_rt *rt, qlm_tval *v, qlm_tval *deflt, int base)
{
    int64_t i;
    double f;
    switch (v->type) {
    case TV_UNDEF: return tm_undef_error(rt, v);  /* int(Undefined) raises */
    case TV_INT: return v;
    case TV_BOOL: return tm_mkint(rt, v->b);
    case TV_FLOAT:
        if (isnan(v->f) || isinf(v->f))
            return tm_fail(rt, "cannot convert float %s to integer", isnan(v->f) ? "NaN" : "infinity");
        if (!(v->f > -9.2e18 && v->f < 9.2e18))
            return tm_fail(rt, "integer overflow (the template's arithmetic went past 64 bits)");
        return tm_mkint(rt, (int64_t)v->f);
    case TV_STR:
        if (parse_int(v, base, &i))
            return tm_mkint(rt, i);
        if (parse_float(v, &f) && !isnan(f) && !isinf(f) && f > -9.2e18 && f < 9.2e18)
            return tm_mkint(rt, (int64_t)f);
        break;
    default:
        break;
    }
    return deflt ? deflt : tm_mkint(rt, 0);
}

static qlm_tval *to_float(tm_rt *rt, qlm_tval *v, qlm_tval *deflt)
{
    double f;
    if (v->type == TV_UNDEF)
        return tm_undef_error(rt, v);
    if (tv_is_num(v))
        return v->type == TV_FLOAT ? v : (v = tv_float(&rt->ar, tv_num(v))) ? v : tm_nomem(rt);
    if (v->type == TV_STR && parse_float(v, &f)) {
        qlm_tval *r = tv_float(&rt->ar, f);
        return r ? r : tm_nomem(rt);
    }
    if (deflt)
        return deflt;
    qlm_tval *r = tv_float(&rt->ar, 0.0);
    return r ? r : tm_nomem(rt);
}

/* Python's round(x, ndigits): exact decimal rounding, half to even. */
static qlm_tval *do_round(tm_rt *rt, qlm_tval *v, qlm_tval *prec, qlm_tval *method)
{
    int64_t nd = 0;
    if (prec && !tm_want_int(rt, prec, &nd))
        return NULL;
    const char *m = method ? (method->type == TV_STR ? method->str.s : "?") : "common";
    if (strcmp(m, "common") && strcmp(m, "ceil") && strcmp(m, "floor"))
        return tm_fail(rt, "method must be common, ceil or floor");
    if (v->type == TV_UNDEF)
        return tm_undef_error(rt, v);
    if (!tv_is_num(v))
        return tm_fail(rt, "type %s doesn't define __round__ method", tv_typename(v));
    double x = tv_num(v), r;
    if (!strcmp(m, "common")) {
        if (v->type != TV_FLOAT && nd >= 0)
            return v->type == TV_INT ? v : tm_mkint(rt, v->b);
        if (isnan(x) || isinf(x) || nd > 300) {
            r = x;
        } else if (nd >= 0) {
            char tmp[400];
            snprintf(tmp, sizeof tmp, "%.*f", (int)nd, x);
            r = strtod(tmp, NULL);
        } else {
            double p = pow(10.0, (double)-nd);
            r = nearbyint(x / p) * p;
        }
        if (v->type != TV_FLOAT)
            return tm_mkint(rt, (int64_t)r);
    } else {
        double p = pow(10.0, (double)nd);
        r = (m[0] == 'c' ? ceil(x * p) : floor(x * p)) / p;
    }
    qlm_tval *f = tv_float(&rt->ar, r);
    return f ? f : tm_nomem(rt);
}

static qlm_tval *do_indent(tm_rt *rt, qlm_tval *s, tm_args *a)
{
    qlm_tval *w = tm_arg(a, 0, "width"), *first = tm_arg(a, 1, "first"), *blank = tm_arg(a, 2, "blank");
    /* jinja2 does s += "\n" on the value itself: only a string will do. */
    if (s->type == TV_UNDEF)
        return tm_undef_error(rt, s);
    if (s->type != TV_STR)
        return tm_fail(rt, s->type == TV_LIST ? "'list' object has no attribute 'splitlines'"
                                              : "unsupported operand type(s) for +=: '%s' and 'str'",
                       tv_typename(s));
    tm_buf ind = {.a = &rt->ar};
    if (w && w->type == TV_STR) {
        tb_put(&ind, w->str.s, w->str.n);
    } else {
        int64_t n = 4;
        if (w && !tm_want_int(rt, w, &n))
            return NULL;
        for (int64_t i = 0; i < n && i < 4096; i++)
            tb_putc(&ind, ' ');
    }
    /* jinja2 appends "\n" before splitlines(), so a trailing newline
     * yields no empty last line. */
    qlm_tval *sn = tv_str(&rt->ar, "", 0);
    tm_buf tmp = {.a = &rt->ar};
    tb_put(&tmp, s->str.s, s->str.n);
    tb_putc(&tmp, '\n');
    if (!sn || !(sn = tm_buf_str(rt, &tmp)))
        return NULL;
    qlm_tval *lines = tm_str_splitlines(rt, sn, false);
    if (!lines)
        return NULL;
    tm_buf b = {.a = &rt->ar};
    if (first && tv_truthy(first))
        tb_put(&b, ind.p ? ind.p : "", ind.n);
    for (size_t i = 0; i < lines->list.n; i++) {
        qlm_tval *l = lines->list.v[i];
        if (i) {
            tb_putc(&b, '\n');
            if ((blank && tv_truthy(blank)) || l->str.n)
                tb_put(&b, ind.p ? ind.p : "", ind.n);
        }
        tb_put(&b, l->str.s, l->str.n);
    }
    return tm_buf_str(rt, &b);
}

static qlm_tval *do_tojson(tm_rt *rt, qlm_tval *v, tm_args *a)
{
    /* transformers' signature: tojson(x, ensure_ascii=False, indent=None,
     * separators=None, sort_keys=False). */
    qlm_tval *ea = tm_arg(a, 0, "ensure_ascii"), *ind = tm_arg(a, 1, "indent"),
             *sep = tm_arg(a, 2, "separators"), *sk = tm_arg(a, 3, "sort_keys");
    tm_json_opts o = {.item_sep = ", ", .key_sep = ": ", .ensure_ascii = ea && tv_truthy(ea),
                      .sort_keys = sk && tv_truthy(sk)};
    if (ind && ind->type != TV_NONE) {
        if (ind->type == TV_STR) {
            o.indent = ind->str.s;
        } else {
            int64_t n;
            if (!tm_want_int(rt, ind, &n))
                return NULL;
            if (n > 4096)
                return tm_fail(rt, "tojson indent too large");
            char *sp = tm_alloc(&rt->ar, (size_t)(n > 0 ? n : 0) + 1);
            if (!sp)
                return tm_nomem(rt);
            memset(sp, ' ', (size_t)(n > 0 ? n : 0));
            o.indent = sp;
        }
        o.item_sep = ",";
    }
    if (sep && sep->type != TV_NONE) {
        if (sep->type != TV_LIST || sep->list.n != 2 || sep->list.v[0]->type != TV_STR ||
            sep->list.v[1]->type != TV_STR)
            return tm_fail(rt, "tojson separators must be a pair of strings");
        o.item_sep = sep->list.v[0]->str.s;
        o.key_sep = sep->list.v[1]->str.s;
    }
    tm_buf b = {.a = &rt->ar};
    if (!tm_json_to(rt, &b, v, &o, 0))
        return NULL;
    return tm_buf_str(rt, &b);
}

static qlm_tval *do_truncate(tm_rt *rt, qlm_tval *s, tm_args *a)
{
    qlm_tval *lv = tm_arg(a, 0, "length"), *kw = tm_arg(a, 1, "killwords"),
             *endv = tm_arg(a, 2, "end"), *lw = tm_arg(a, 3, "leeway");
    int64_t length = 255, leeway = 5;
    if ((lv && !tm_want_int(rt, lv, &length)) || (lw && lw->type != TV_NONE && !tm_want_int(rt, lw, &leeway)))
        return NULL;
    if (s->type != TV_STR) {
        /* len(s) first: undefined and short containers come back as they are */
        qlm_tval *len = length_of(rt, s);
        if (!len)
            return NULL;
        if (len->i <= length + leeway)
            return s;
        return tm_fail(rt, "truncate: expected a string, got %s", tv_typename(s));
    }
    qlm_tval *end = endv ? tm_str_of(rt, endv) : tm_mkstr(rt, "...", 3);
    if (!end)
        return NULL;
    int64_t elen = (int64_t)tm_u8_count(end), slen = (int64_t)tm_u8_count(s);
    if (length < elen)
        return tm_fail(rt, "expected length >= %lld, got %lld", (long long)elen, (long long)length);
    if (leeway < 0)
        return tm_fail(rt, "expected leeway >= 0, got %lld", (long long)leeway);
    if (slen <= length + leeway)
        return s;
    tm_cps c;
    if (!tm_to_cps(rt, s, &c))
        return NULL;
    size_t keep = (size_t)(length - elen);
    if (!(kw && tv_truthy(kw))) {
        /* rsplit(" ", 1)[0]: cut at the last space, if any */
        for (size_t i = keep; i > 0; i--)
            if (c.c[i - 1] == ' ') {
                keep = i - 1;
                break;
            }
    }
    tm_buf b = {.a = &rt->ar};
    for (size_t i = 0; i < keep; i++)
        tm_put_cp(&b, c.c[i]);
    tb_put(&b, end->str.s, end->str.n);
    return tm_buf_str(rt, &b);
}

/* select/reject(test, args...) and selectattr/rejectattr(attr, test, args...). */
static qlm_tval *do_select(tm_rt *rt, qlm_tval *v, tm_args *a, bool attr, bool keep)
{
    if (!tv_truthy(v))  /* jinja2 only iterates a true value: none|select is empty */
        return tm_mklist(rt, 0);
    qlm_tval *items = tm_iterate(rt, v), *out;
    if (!items || !(out = tm_mklist(rt, 0)))
        return NULL;
    int ti = attr ? 1 : 0;
    qlm_tval *path = attr ? tm_arg(a, 0, NULL) : NULL;
    if (attr && !path)
        return tm_fail(rt, "Missing parameter for attribute name");
    int test = -1;
    if (a->npos > ti) {
        if (!tm_want_str(rt, a->pos[ti], "test name"))
            return NULL;
        if ((test = tm_test_id(a->pos[ti]->str.s)) < 0)
            return tm_fail(rt, "No test named '%s'.", a->pos[ti]->str.s);
    }
    tm_args ta = {.pos = a->pos + (a->npos > ti ? ti + 1 : a->npos),
                  .npos = a->npos > ti ? a->npos - ti - 1 : 0, .kwn = a->kwn, .kwv = a->kwv,
                  .nkw = a->nkw};
    for (size_t i = 0; i < items->list.n; i++) {
        if (!tm_step(rt))
            return NULL;
        qlm_tval *x = get_path(rt, items->list.v[i], path);
        if (!x)
            return NULL;
        int r = test < 0 ? tv_truthy(x) : tm_apply_test(rt, test, x, &ta);
        if (r < 0)
            return NULL;
        if ((r != 0) == keep && !tv_push(&rt->ar, out, items->list.v[i]))
            return tm_nomem(rt);
    }
    return out;
}

static qlm_tval *do_map(tm_rt *rt, qlm_tval *v, tm_args *a)
{
    if (!tv_truthy(v))  /* as select: a false value maps to nothing */
        return tm_mklist(rt, 0);
    qlm_tval *items = tm_iterate(rt, v), *out;
    if (!items || !(out = tm_mklist(rt, items->list.n)))
        return NULL;
    qlm_tval *path = tm_arg(a, -1, "attribute"), *deflt = tm_arg(a, -1, "default");
    int fid = -1;
    if (!path) {
        if (!a->npos)
            return tm_fail(rt, "map requires a filter argument");
        if (!tm_want_str(rt, a->pos[0], "filter name"))
            return NULL;
        if ((fid = tm_filter_id(a->pos[0]->str.s)) < 0)
            return tm_fail(rt, "No filter named '%s'.", a->pos[0]->str.s);
    }
    tm_args fa = {.pos = a->pos + (a->npos ? 1 : 0), .npos = a->npos ? a->npos - 1 : 0,
                  .kwn = a->kwn, .kwv = a->kwv, .nkw = a->nkw};
    for (size_t i = 0; i < items->list.n; i++) {
        if (!tm_step(rt))
            return NULL;
        qlm_tval *x = path ? get_path(rt, items->list.v[i], path)
                           : tm_apply_filter(rt, fid, items->list.v[i], &fa);
        if (!x)
            return NULL;
        if (path && deflt && x->type == TV_UNDEF)
            x = deflt;
        tv_push(&rt->ar, out, x);
    }
    return out;
}

static qlm_tval *do_sort(tm_rt *rt, qlm_tval *v, tm_args *a)
{
    qlm_tval *rev = tm_arg(a, 0, "reverse"), *cs = tm_arg(a, 1, "case_sensitive"),
             *attr = tm_arg(a, 2, "attribute");
    qlm_tval *items = tm_iterate(rt, v);
    if (!items)
        return NULL;
    size_t n = items->list.n;
    qlm_tval **keys = tm_alloc(&rt->ar, (n + 1) * sizeof *keys);
    qlm_tval *out = tm_mklist(rt, n);
    if (!keys || !out)
        return tm_nomem(rt);
    for (size_t i = 0; i < n; i++) {
        qlm_tval *k = get_path(rt, items->list.v[i], attr);
        if (!k || !(keys[i] = sort_key(rt, k, cs && tv_truthy(cs))))
            return NULL;
        out->list.v[i] = items->list.v[i];
    }
    out->list.n = n;
    if (!merge_sort(rt, keys, out->list.v, n, rev && tv_truthy(rev)))
        return NULL;
    return out;
}

static qlm_tval *do_dictsort(tm_rt *rt, qlm_tval *v, tm_args *a)
{
    qlm_tval *cs = tm_arg(a, 0, "case_sensitive"), *by = tm_arg(a, 1, "by"),
             *rev = tm_arg(a, 2, "reverse");
    if (v->type != TV_DICT)
        return tm_fail(rt, "dictsort: expected a mapping, got %s", tv_typename(v));
    bool by_value = false;
    if (by) {
        if (by->type == TV_STR && !strcmp(by->str.s, "value"))
            by_value = true;
        else if (!(by->type == TV_STR && !strcmp(by->str.s, "key")))
            return tm_fail(rt, "You can only sort by either \"key\" or \"value\"");
    }
    size_t n = v->dict.n;
    qlm_tval **keys = tm_alloc(&rt->ar, (n + 1) * sizeof *keys), *out = tm_mklist(rt, n);
    if (!keys || !out)
        return tm_nomem(rt);
    for (size_t i = 0; i < n; i++) {
        qlm_tval *pair = tm_mklist(rt, 2);
        if (!pair)
            return NULL;
        pair->flags = TVF_TUPLE;
        tv_push(&rt->ar, pair, v->dict.k[i]);
        tv_push(&rt->ar, pair, v->dict.v[i]);
        out->list.v[i] = pair;
        if (!(keys[i] = sort_key(rt, by_value ? v->dict.v[i] : v->dict.k[i], cs && tv_truthy(cs))))
            return NULL;
    }
    out->list.n = n;
    return merge_sort(rt, keys, out->list.v, n, rev && tv_truthy(rev)) ? out : NULL;
}

static qlm_tval *do_minmax(tm_rt *rt, qlm_tval *v, tm_args *a, bool want_max)
{
    qlm_tval *cs = tm_arg(a, 0, "case_sensitive"), *attr = tm_arg(a, 1, "attribute");
    qlm_tval *items = tm_iterate(rt, v), *best = NULL, *best_key = NULL;
    if (!items)
        return NULL;
    for (size_t i = 0; i < items->list.n; i++) {
        qlm_tval *k = get_path(rt, items->list.v[i], attr);
        if (!k || !(k = sort_key(rt, k, cs && tv_truthy(cs))))
            return NULL;
        int c = 0;
        if (best && !tm_compare(rt, k, best_key, OP_LT, &c))
            return NULL;
        if (!best || (want_max ? c > 0 : c < 0)) {
            best = items->list.v[i];
            best_key = k;
        }
    }
    return best ? best : tm_mkundef(rt, NULL, NULL, "No aggregated item, sequence was empty.");
}

static qlm_tval *do_unique(tm_rt *rt, qlm_tval *v, tm_args *a)
{
    qlm_tval *cs = tm_arg(a, 0, "case_sensitive"), *attr = tm_arg(a, 1, "attribute");
    qlm_tval *items = tm_iterate(rt, v), *out, *seen;
    if (!items || !(out = tm_mklist(rt, 0)) || !(seen = tm_mklist(rt, 0)))
        return NULL;
    for (size_t i = 0; i < items->list.n; i++) {
        qlm_tval *k = get_path(rt, items->list.v[i], attr);
        if (!k || !(k = sort_key(rt, k, cs && tv_truthy(cs))))
            return NULL;
        if (tv_unhashable(k))  /* unique keeps a set of what it has seen */
            return tm_fail(rt, "unhashable type: '%s'", tv_typename(tv_unhashable(k)));
        qlm_tval *has = tm_contains(rt, seen, k);
        if (!has)
            return NULL;
        if (!has->b && (!tv_push(&rt->ar, seen, k) || !tv_push(&rt->ar, out, items->list.v[i])))
            return tm_nomem(rt);
        if (!tm_step(rt))
            return NULL;
    }
    return out;
}

static qlm_tval *do_join(tm_rt *rt, qlm_tval *v, tm_args *a)
{
    qlm_tval *d = tm_arg(a, 0, "d"), *attr = tm_arg(a, 1, "attribute");
    qlm_tval *items = tm_iterate(rt, v);
    if (!items || (d && !(d = tm_str_of(rt, d))))
        return NULL;
    tm_buf b = {.a = &rt->ar};
    for (size_t i = 0; i < items->list.n; i++) {
        qlm_tval *x = get_path(rt, items->list.v[i], attr);
        if (!x)
            return NULL;
        if (i && d)
            tb_put(&b, d->str.s, d->str.n);
        if (!tm_str_to(rt, &b, x))
            return NULL;
    }
    return tm_buf_str(rt, &b);
}

qlm_tval *tm_apply_filter(tm_rt *rt, int id, qlm_tval *v, tm_args *a)
{
    qlm_tval *x, *y;
    switch (id) {
    case FL_ABS:
        if (v->type == TV_INT)
            return v->i == INT64_MIN ? tm_fail(rt, "integer overflow") : tm_mkint(rt, v->i < 0 ? -v->i : v->i);
        if (v->type == TV_BOOL)
            return tm_mkint(rt, v->b);
        if (v->type == TV_FLOAT)
            return (x = tv_float(&rt->ar, fabs(v->f))) ? x : tm_nomem(rt);
        if (v->type == TV_UNDEF)
            return tm_undef_error(rt, v);
        return tm_fail(rt, "bad operand type for abs(): '%s'", tv_typename(v));
    case FL_ATTR:
        if (!(x = tm_arg(a, 0, "name")) || !tm_want_str(rt, x, "attribute name"))
            return x ? NULL : tm_fail(rt, "attr filter needs a name");
        return tm_getattr(rt, v, x->str.s, x->str.n);
    case FL_BATCH: {
        int64_t n;
        qlm_tval *items = tm_iterate(rt, v), *fill = tm_arg(a, 1, "fill_with"), *out, *cur = NULL;
        if (!items || !(x = tm_arg(a, 0, "linecount")) || !tm_want_int(rt, x, &n))
            return items && !x ? tm_fail(rt, "batch needs a line count") : NULL;
        if (n <= 0)
            return tm_fail(rt, "batch line count must be positive");
        if (!(out = tm_mklist(rt, 0)))
            return NULL;
        for (size_t i = 0; i < items->list.n; i++) {
            if (!cur || (int64_t)cur->list.n == n) {
                if (!(cur = tm_mklist(rt, 0)) || !tv_push(&rt->ar, out, cur))
                    return tm_nomem(rt);
            }
            if (!tv_push(&rt->ar, cur, items->list.v[i]))
                return tm_nomem(rt);
        }
        if (cur && fill && fill->type != TV_NONE)
            while ((int64_t)cur->list.n < n)
                if (!tv_push(&rt->ar, cur, fill))
                    return tm_nomem(rt);
        return out;
    }
    case FL_CAPITALIZE: return tm_str_case(rt, v, C_CAPITALIZE);
    case FL_CENTER: {
        int64_t w = 80;
        if ((x = tm_arg(a, 0, "width")) && !tm_want_int(rt, x, &w))
            return NULL;
        return (v = tm_str_of(rt, v)) ? tm_str_pad(rt, v, w, NULL, 0) : NULL;
    }
    case FL_DEFAULT:
        x = tm_arg(a, 0, "default_value");
        y = tm_arg(a, 1, "boolean");
        if (v->type == TV_UNDEF || (y && tv_truthy(y) && !tv_truthy(v)))
            return x ? x : tm_mkstr(rt, "", 0);
        return v;
    case FL_DICTSORT: return do_dictsort(rt, v, a);
    case FL_ESCAPE: return html_escape(rt, v);
    case FL_FORCEESCAPE:
        if (!(v = tm_str_of(rt, v)) || !(v = tm_mkstr(rt, v->str.s, v->str.n)))
            return NULL;
        return html_escape(rt, v);
    case FL_FIRST: case FL_LAST: {
        if (id == FL_LAST && v->type != TV_STR && v->type != TV_LIST && v->type != TV_DICT &&
            v->type != TV_UNDEF)
            return tm_fail(rt, "'%s' object is not reversible", tv_typename(v));
        qlm_tval *items = tm_iterate(rt, v);
        if (!items)
            return NULL;
        if (!items->list.n)
            return tm_mkundef(rt, NULL, NULL, id == FL_FIRST ? "No first item, sequence was empty."
                                                             : "No last item, sequence was empty.");
        return items->list.v[id == FL_FIRST ? 0 : items->list.n - 1];
    }
    case FL_FLOAT: return to_float(rt, v, tm_arg(a, 0, "default"));
    case FL_FORMAT: {
        tm_args fa = *a;
        if (!(v = tm_str_of(rt, v)))
            return NULL;
        qlm_tval *args;
        if (a->nkw) {
            if (!(args = tv_dict(&rt->ar, 0, TV_DICT)))
                return tm_nomem(rt);
            for (int i = 0; i < a->nkw; i++)
                if (!tv_dict_set(&rt->ar, args, tm_mkstr(rt, a->kwn[i], strlen(a->kwn[i])), a->kwv[i]))
                    return tm_nomem(rt);
        } else {
            if (!(args = tm_mklist(rt, 0)))
                return NULL;
            args->flags = TVF_TUPLE;
            for (int i = 0; i < fa.npos; i++)
                tv_push(&rt->ar, args, fa.pos[i]);
        }
        return tm_arith(rt, OP_MOD, v, args);
    }
    case FL_INDENT: return do_indent(rt, v, a);
    case FL_INT: {
        int64_t base = 10;
        if ((x = tm_arg(a, 1, "base")) && !tm_want_int(rt, x, &base))
            return NULL;
        if (base < 2 || base > 36)
            return tm_fail(rt, "int() base must be >= 2 and <= 36, or 0");
        return to_int(rt, v, tm_arg(a, 0, "default"), (int)base);
    }
    case FL_ITEMS:
        if (v->type == TV_UNDEF)
            return tm_mklist(rt, 0);
        if (v->type != TV_DICT)
            return tm_fail(rt, "Can only get item pairs from a mapping.");
        return tm_pairs_of(rt, v);
    case FL_JOIN: return do_join(rt, v, a);
    case FL_LENGTH: return length_of(rt, v);
    case FL_LIST:
        if (!(x = tm_iterate(rt, v)))
            return NULL;
        if (x != v)
            return x;
        if (!(y = tm_mklist(rt, x->list.n)))
            return NULL;
        for (size_t i = 0; i < x->list.n; i++)
            tv_push(&rt->ar, y, x->list.v[i]);
        return y;
    case FL_LOWER: return tm_str_case(rt, v, C_LOWER);
    case FL_UPPER: return tm_str_case(rt, v, C_UPPER);
    case FL_TITLE: return tm_str_case(rt, v, C_TITLE_FILTER);
    case FL_MAP: return do_map(rt, v, a);
    case FL_MAX: case FL_MIN: return do_minmax(rt, v, a, id == FL_MAX);
    case FL_SELECT: case FL_REJECT: return do_select(rt, v, a, false, id == FL_SELECT);
    case FL_SELECTATTR: case FL_REJECTATTR: return do_select(rt, v, a, true, id == FL_SELECTATTR);
    case FL_REPLACE: {
        int64_t count = -1;
        qlm_tval *old = tm_arg(a, 0, "old"), *new_ = tm_arg(a, 1, "new"), *c = tm_arg(a, 2, "count");
        if (!old || !new_)
            return tm_fail(rt, "replace needs old and new strings");
        if (c && c->type != TV_NONE && !tm_want_int(rt, c, &count))
            return NULL;
        return tm_str_replace(rt, v, old, new_, count);
    }
    case FL_REVERSE:
        if (v->type == TV_STR) {
            tm_cps c;
            if (!tm_to_cps(rt, v, &c))
                return NULL;
            for (size_t i = 0, j = c.n; i + 1 < j; i++, j--) {
                uint32_t t = c.c[i]; c.c[i] = c.c[j - 1]; c.c[j - 1] = t;
            }
            return tm_from_cps(rt, c.c, c.n);
        }
        if (!(x = tm_iterate(rt, v)) || !(y = tm_mklist(rt, x->list.n)))
            return NULL;
        for (size_t i = x->list.n; i > 0; i--)
            tv_push(&rt->ar, y, x->list.v[i - 1]);
        return y;
    case FL_ROUND: return do_round(rt, v, tm_arg(a, 0, "precision"), tm_arg(a, 1, "method"));
    case FL_SAFE:
        if (!(v = tm_str_of(rt, v)) || !(x = tm_mkstr(rt, v->str.s, v->str.n)))
            return NULL;
        x->flags |= TVF_MARKUP;
        return x;
    case FL_SORT: return do_sort(rt, v, a);
    case FL_STRING: return tm_str_of(rt, v);
    case FL_SUM: {
        qlm_tval *attr = tm_arg(a, 0, "attribute"), *acc = tm_arg(a, 1, "start");
        qlm_tval *items = tm_iterate(rt, v);
        if (!items || (!acc && !(acc = tm_mkint(rt, 0))))
            return NULL;
        for (size_t i = 0; i < items->list.n && acc; i++) {
            if (!(x = get_path(rt, items->list.v[i], attr)))
                return NULL;
            acc = tm_arith(rt, OP_ADD, acc, x);
        }
        return acc;
    }
    case FL_TOJSON: return do_tojson(rt, v, a);
    case FL_TRIM: return tm_str_strip(rt, v, tm_arg(a, 0, "chars"), true, true);
    case FL_TRUNCATE: return do_truncate(rt, v, a);
    case FL_UNIQUE: return do_unique(rt, v, a);
    case FL_WORDCOUNT: {
        /* re.findall(r"\w+"): runs of letters, digits and underscores. */
        if (!(v = tm_str_of(rt, v)))
            return NULL;
        int64_t words = 0;
        bool in = false;
        for (size_t i = 0; i < v->str.n;) {
            size_t k;
            uint32_t cp = tm_u8_cp(v->str.s + i, v->str.n - i, &k);
            bool w = cp == '_' || (cp < 0x80 ? (cp >= '0' && cp <= '9') || ((cp | 32) >= 'a' && (cp | 32) <= 'z')
                                             : (qlm_ucp_flags(cp) & (QLM_UCP_LETTER | QLM_UCP_NUMBER)) != 0);
            if (w && !in)
                words++;
            in = w;
            i += k;
        }
        return tm_mkint(rt, words);
    }
    }
    return tm_fail(rt, "internal error: filter %d", id);
}

/* ---- tests ---- */
enum {
    TT_BOOLEAN, TT_CALLABLE, TT_DEFINED, TT_DIVISIBLEBY, TT_EQ, TT_ESCAPED, TT_EVEN, TT_FALSE,
    TT_FILTER, TT_FLOAT, TT_GE, TT_GT, TT_IN, TT_INTEGER, TT_ITERABLE, TT_LE, TT_LOWER, TT_LT,
    TT_MAPPING, TT_NE, TT_NONE, TT_NUMBER, TT_ODD, TT_SAMEAS, TT_SEQUENCE, TT_STRING, TT_TEST,
    TT_TRUE, TT_UNDEFINED, TT_UPPER,
};

static const struct { const char *name; int id; } tests[] = {
    {"boolean", TT_BOOLEAN}, {"callable", TT_CALLABLE}, {"defined", TT_DEFINED},
    {"divisibleby", TT_DIVISIBLEBY}, {"eq", TT_EQ}, {"equalto", TT_EQ}, {"==", TT_EQ},
    {"escaped", TT_ESCAPED}, {"even", TT_EVEN}, {"false", TT_FALSE}, {"filter", TT_FILTER},
    {"float", TT_FLOAT}, {"ge", TT_GE}, {">=", TT_GE}, {"gt", TT_GT}, {"greaterthan", TT_GT},
    {">", TT_GT}, {"in", TT_IN}, {"integer", TT_INTEGER}, {"iterable", TT_ITERABLE},
    {"le", TT_LE}, {"<=", TT_LE}, {"lower", TT_LOWER}, {"lt", TT_LT}, {"lessthan", TT_LT},
    {"<", TT_LT}, {"mapping", TT_MAPPING}, {"ne", TT_NE}, {"!=", TT_NE}, {"none", TT_NONE},
    {"number", TT_NUMBER}, {"odd", TT_ODD}, {"sameas", TT_SAMEAS}, {"sequence", TT_SEQUENCE},
    {"string", TT_STRING}, {"test", TT_TEST}, {"true", TT_TRUE}, {"undefined", TT_UNDEFINED},
    {"upper", TT_UPPER},
};

int tm_test_id(const char *name)
{
    for (size_t i = 0; i < sizeof tests / sizeof *tests; i++)
        if (!strcmp(tests[i].name, name))
            return tests[i].id;
    return -1;
}

/* str.islower()/isupper(): some cased character, and none of the other case. */
static const char *unary_test_name(int id)
{
    switch (id) {
    case TT_BOOLEAN: return "boolean";
    case TT_DEFINED: return "defined";
    case TT_UNDEFINED: return "undefined";
    case TT_NONE: return "none";
    case TT_TRUE: return "true";
    case TT_FALSE: return "false";
    case TT_INTEGER: return "integer";
    case TT_FLOAT: return "float";
    case TT_NUMBER: return "number";
    case TT_STRING: return "string";
    case TT_MAPPING: return "mapping";
    case TT_ITERABLE: return "iterable";
    case TT_SEQUENCE: return "sequence";
    case TT_ESCAPED: return "escaped";
    case TT_LOWER: return "lower";
    case TT_UPPER: return "upper";
    case TT_FILTER: return "filter";
    case TT_TEST: return "test";
    case TT_EVEN: return "even";
    case TT_ODD: return "odd";
    default: return NULL;
    }
}

int tm_apply_test(tm_rt *rt, int id, qlm_tval *v, tm_args *a)
{
    qlm_tval *arg = tm_arg(a, 0, NULL);
    int c;
    if (a->npos + a->nkw > 0 && unary_test_name(id)) {
        tm_fail(rt, "test_%s() takes 1 positional argument but %d were given", unary_test_name(id),
                a->npos + 1);
        return -1;
    }
    if (a->npos + a->nkw > 0 && id == TT_CALLABLE) {
        tm_fail(rt, "callable() takes exactly one argument (%d given)", a->npos + 1);
        return -1;
    }
    switch (id) {
    case TT_BOOLEAN: return v->type == TV_BOOL;
    case TT_CALLABLE: return v->type == TV_MACRO || v->type == TV_FUNC || v->type == TV_METHOD;
    case TT_DEFINED: return v->type != TV_UNDEF;
    case TT_UNDEFINED: return v->type == TV_UNDEF;
    case TT_NONE: return v->type == TV_NONE;
    case TT_TRUE: return v->type == TV_BOOL && v->b;
    case TT_FALSE: return v->type == TV_BOOL && !v->b;
    case TT_INTEGER: return v->type == TV_INT;
    case TT_FLOAT: return v->type == TV_FLOAT;
    case TT_NUMBER: return tv_is_num(v);
    case TT_STRING: return v->type == TV_STR;
    case TT_MAPPING: return v->type == TV_DICT;
    case TT_ITERABLE:
        return v->type == TV_STR || v->type == TV_LIST || v->type == TV_DICT || v->type == TV_UNDEF;
    case TT_SEQUENCE:
        /* len() and __getitem__: dicts and Undefined pass too */
        return v->type == TV_STR || v->type == TV_LIST || v->type == TV_DICT || v->type == TV_UNDEF;
    case TT_ESCAPED: return v->type == TV_STR && (v->flags & TVF_MARKUP);
    case TT_LOWER: return tm_case_test(rt, v, true);
    case TT_UPPER: return tm_case_test(rt, v, false);
    case TT_FILTER: return v->type == TV_STR && tm_filter_id(v->str.s) >= 0;
    case TT_TEST: return v->type == TV_STR && tm_test_id(v->str.s) >= 0;
    case TT_EVEN: case TT_ODD: case TT_DIVISIBLEBY: {
        qlm_tval two = {.type = TV_INT, .i = 2}, *m;
        if (id == TT_DIVISIBLEBY && !arg)
            return tm_fail(rt, "divisibleby needs a number"), -1;
        if (!(m = tm_arith(rt, OP_MOD, v, id == TT_DIVISIBLEBY ? arg : &two)))
            return -1;
        /* jinja2: value % 2 == 1 for odd, == 0 otherwise (2.5 is neither) */
        qlm_tval one = {.type = TV_INT, .i = 1}, zero = {.type = TV_INT, .i = 0};
        return tv_eq(m, id == TT_ODD ? &one : &zero);
    }
    case TT_SAMEAS:
        if (!arg)
            return tm_fail(rt, "sameas needs a value"), -1;
        /* Python's "is": identity.  None, booleans and the small ints
         * CPython caches (-5..256) are one object per value. */
        if (v->type == TV_NONE || v->type == TV_BOOL || v->type == TV_UNDEF)
            return v->type == arg->type && (v->type != TV_BOOL || v->b == arg->b);
        if (v->type == TV_INT && arg->type == TV_INT && v->i >= -5 && v->i <= 256)
            return v->i == arg->i;
        return v == arg;
    case TT_IN: {
        if (!arg)
            return tm_fail(rt, "in needs a container"), -1;
        qlm_tval *r = tm_contains(rt, arg, v);
        return r ? r->b : -1;
    }
    case TT_EQ: case TT_NE:
        if (!arg)
            return tm_fail(rt, "missing argument for the comparison test"), -1;
        return tv_eq(v, arg) == (id == TT_EQ);
    case TT_LT: case TT_LE: case TT_GT: case TT_GE: {
        static const int ops[] = {[TT_LT] = OP_LT, [TT_LE] = OP_LE, [TT_GT] = OP_GT, [TT_GE] = OP_GE};
        if (!arg)
            return tm_fail(rt, "missing argument for the comparison test"), -1;
        if (!tm_compare(rt, v, arg, ops[id], &c))
            return -1;
        return id == TT_LT ? c < 0 : id == TT_LE ? c <= 0 : id == TT_GT ? c > 0 : c >= 0;
    }
    }
    tm_fail(rt, "internal error: test %d", id);
    return -1;
}

/* ---- globals ---- */
enum { G_RANGE, G_DICT, G_NAMESPACE, G_RAISE, G_STRFTIME, G_CYCLER, G_JOINER, G_LIPSUM };

int tm_global_id(const char *name)
{
    static const char *const names[] = {"range", "dict", "namespace", "raise_exception",
                                        "strftime_now", "cycler", "joiner", "lipsum", NULL};
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], name))
            return i;
    return -1;
}

#define MAX_RANGE 100000  /* jinja2's sandbox limit */

qlm_tval *tm_call_global(tm_rt *rt, int id, tm_args *a)
{
    switch (id) {
    case G_RANGE: {
        int64_t lo = 0, hi, st = 1;
        if (a->npos < 1 || a->npos > 3)
            return tm_fail(rt, "range expected 1 to 3 arguments, got %d", a->npos);
        if (a->npos == 1) {
            if (!tm_want_int(rt, a->pos[0], &hi))
                return NULL;
        } else if (!tm_want_int(rt, a->pos[0], &lo) || !tm_want_int(rt, a->pos[1], &hi) ||
                   (a->npos == 3 && !tm_want_int(rt, a->pos[2], &st))) {
            return NULL;
        }
        if (st == 0)
            return tm_fail(rt, "range() arg 3 must not be zero");
        double count = st > 0 ? ceil(((double)hi - (double)lo) / (double)st)
                              : ceil(((double)lo - (double)hi) / (double)-st);
        if (count > MAX_RANGE)
            return tm_fail(rt, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).",
                           MAX_RANGE);
        qlm_tval *r = tm_mklist(rt, count > 0 ? (size_t)count : 0);
        if (!r)
            return NULL;
        for (int64_t i = lo; st > 0 ? i < hi : i > hi; i += st)
            if (!tv_push(&rt->ar, r, tm_mkint(rt, i)))
                return tm_nomem(rt);
        return r;
    }
    case G_DICT: case G_NAMESPACE: {
        qlm_tval *d = tv_dict(&rt->ar, (size_t)a->nkw, id == G_DICT ? TV_DICT : TV_NS);
        if (!d)
            return tm_nomem(rt);
        /* A positional dict comes first, keywords then override it. */
        if (a->npos > 1)
            return tm_fail(rt, "%s expected at most 1 positional argument", id == G_DICT ? "dict" : "namespace");
        if (a->npos == 1) {
            qlm_tval *src = a->pos[0];
            if (src->type != TV_DICT && src->type != TV_NS)
                return tm_fail(rt, "cannot convert '%s' to a dictionary", tv_typename(src));
            for (size_t i = 0; i < src->dict.n; i++)
                if (!tv_dict_set(&rt->ar, d, src->dict.k[i], src->dict.v[i]))
                    return tm_nomem(rt);
        }
        for (int i = 0; i < a->nkw; i++)
            if (!tv_dict_set(&rt->ar, d, tm_mkstr(rt, a->kwn[i], strlen(a->kwn[i])), a->kwv[i]))
                return tm_nomem(rt);
        return d;
    }
    case G_RAISE: {
        qlm_tval *m = tm_arg(a, 0, "message");
        if (!m || !(m = tm_str_of(rt, m)))
            return rt->failed ? NULL : tm_fail(rt, "raise_exception() missing 1 required argument");
        return tm_fail(rt, "%s", m->str.s);
    }
    case G_STRFTIME: {
        qlm_tval *f = tm_arg(a, 0, "format");
        if (!f || !tm_want_str(rt, f, "strftime format"))
            return rt->failed ? NULL : tm_fail(rt, "strftime_now() missing 1 required argument");
        time_t t = (time_t)rt->now;
        struct tm tmv;
        if (!localtime_r(&t, &tmv))
            return tm_fail(rt, "strftime_now: the time is out of range");
        if (!f->str.n)
            return f;
        char out[1024];
        size_t n = strftime(out, sizeof out, f->str.s, &tmv);
        if (!n)
            return tm_fail(rt, "strftime_now: format too long or invalid");
        return tm_mkstr(rt, out, n);
    }
    default: {
        static const char *const names[] = {[G_CYCLER] = "cycler", [G_JOINER] = "joiner",
                                            [G_LIPSUM] = "lipsum"};
        return tm_fail(rt, "unsupported construct: %s()", names[id]);
    }
    }
}
