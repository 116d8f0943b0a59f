/* tmpl_ops.c - operators with Python's semantics and error messages:
 * + - * / // % ** (including str + str, list * n and "%s" % x), and case
 * mapping of code points. */
#include "tmpl_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <wctype.h>

#include "unicode.h"

/* ---- case mapping ----
 * Python maps case with its own Unicode tables; glibc's C.UTF-8 locale
 * has the same simple mappings for every script, taken per render with
 * newlocale so no global locale is touched.  (Python's few one-to-many
 * mappings, like "ß".upper() == "SS", are handled where strings are.) */
static locale_t case_locale(tm_rt *rt)
{
    if (!rt->loc_tried) {
        rt->loc_tried = true;
        rt->loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    }
    return rt->loc;
}

uint32_t tm_upper(tm_rt *rt, uint32_t cp)
{
    if (cp < 0x80)
        return cp >= 'a' && cp <= 'z' ? cp - 32 : cp;
    if (cp >= 0xD800 && cp <= 0xDFFF)
        return cp;
    locale_t l = case_locale(rt);
    return l ? (uint32_t)towupper_l((wint_t)cp, l) : cp;
}

uint32_t tm_lower(tm_rt *rt, uint32_t cp)
{
    if (cp < 0x80)
        return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
    if (cp >= 0xD800 && cp <= 0xDFFF)
        return cp;
    locale_t l = case_locale(rt);
    return l ? (uint32_t)towlower_l((wint_t)cp, l) : cp;
}

/* ---- arithmetic ---- */
static qlm_tval *unsupported(tm_rt *rt, const char *op, const qlm_tval *a, const qlm_tval *b)
{
    return tm_fail(rt, "unsupported operand type(s) for %s: '%s' and '%s'", op, tv_typename(a),
                   tv_typename(b));
}

static qlm_tval *overflow(tm_rt *rt)
{
    return tm_fail(rt, "integer overflow (the template's arithmetic went past 64 bits)");
}

static int64_t as_int(const qlm_tval *v) { return v->type == TV_INT ? v->i : v->b; }
static bool is_intlike(const qlm_tval *v) { return v->type == TV_INT || v->type == TV_BOOL; }

static qlm_tval *mkint(tm_rt *rt, int64_t i)
{
    qlm_tval *v = tv_int(&rt->ar, i);
    return v ? v : tm_nomem(rt);
}

static qlm_tval *mkfloat(tm_rt *rt, double f)
{
    qlm_tval *v = tv_float(&rt->ar, f);
    return v ? v : tm_nomem(rt);
}

/* Python's float % and //. */
static double py_fmod(double a, double b)
{
    double m = fmod(a, b);
    if (m) {
        if ((b < 0) != (m < 0))
            m += b;
    } else {
        m = copysign(0.0, b);
    }
    return m;
}

static double py_floordiv(double a, double b)
{
    double m = fmod(a, b), div = (a - m) / b;
    if (m && (b < 0) != (m < 0))
        div -= 1.0;
    if (div) {
        double fl = floor(div);
        if (div - fl > 0.5)
            fl += 1.0;
        return fl;
    }
    return copysign(0.0, a / b);
}

static qlm_tval *repeat(tm_rt *rt, qlm_tval *seq, int64_t times)
{
    if (times < 0)
        times = 0;
    if (seq->type == TV_STR) {
        if (seq->str.n && (uint64_t)times > (rt->ar.cap ? rt->ar.cap : SIZE_MAX) / seq->str.n)
            return tm_fail(rt, "template used more than %zu MiB of memory while rendering",
                           rt->ar.cap >> 20);
        size_t n = seq->str.n * (size_t)times;
        char *p = tm_alloc(&rt->ar, n + 1);
        if (!p)
            return tm_nomem(rt);
        for (int64_t i = 0; i < times; i++)
            memcpy(p + (size_t)i * seq->str.n, seq->str.s, seq->str.n);
        qlm_tval *r = tv_str_take(&rt->ar, p, n);
        if (r)
            r->flags = seq->flags & TVF_MARKUP;
        return r ? r : tm_nomem(rt);
    }
    if (seq->list.n && (uint64_t)times > (uint64_t)(64u << 20) / seq->list.n)
        return tm_fail(rt, "list repetition too large");
    qlm_tval *r = tv_list(&rt->ar, seq->list.n * (size_t)times);
    if (!r)
        return tm_nomem(rt);
    r->flags = seq->flags & TVF_TUPLE;
    for (int64_t i = 0; i < times; i++)
        for (size_t j = 0; j < seq->list.n; j++)
            tv_push(&rt->ar, r, seq->list.v[j]);
    return r;
}

/* markupsafe's escape, for Markup + str. */
static bool html_escape_to(tm_buf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '&': tb_puts(b, "&amp;"); break;
        case '<': tb_puts(b, "&lt;"); break;
        case '>': tb_puts(b, "&gt;"); break;
        case '"': tb_puts(b, "&#34;"); break;
        case '\'': tb_puts(b, "&#39;"); break;
        default: tb_putc(b, s[i]);
        }
    }
    return !b->failed;
}

static qlm_tval *str_add(tm_rt *rt, qlm_tval *a, qlm_tval *b)
{
    /* Markup + str escapes the str (markupsafe), even with autoescape off. */
    bool markup = (a->flags | b->flags) & TVF_MARKUP;
    tm_buf buf = {.a = &rt->ar};
    if (markup && !(a->flags & TVF_MARKUP))
        html_escape_to(&buf, a->str.s, a->str.n);
    else
        tb_put(&buf, a->str.s, a->str.n);
    if (markup && !(b->flags & TVF_MARKUP))
        html_escape_to(&buf, b->str.s, b->str.n);
    else
        tb_put(&buf, b->str.s, b->str.n);
    if (buf.failed)
        return tm_nomem(rt);
    qlm_tval *r = buf.p ? tv_str_take(&rt->ar, buf.p, buf.n) : tv_str(&rt->ar, "", 0);
    if (!r)
        return tm_nomem(rt);
    if (markup)
        r->flags = TVF_MARKUP;
    return r;
}

static qlm_tval *percent_format(tm_rt *rt, qlm_tval *fmt, qlm_tval *args);

qlm_tval *tm_arith(tm_rt *rt, int op, qlm_tval *a, qlm_tval *b)
{
    if (a->type == TV_UNDEF)
        return tm_undef_error(rt, a);
    if (a->type == TV_STR && op == OP_MOD)  /* str.__mod__ takes even an undefined */
        return percent_format(rt, a, b);
    if (b->type == TV_UNDEF)
        return tm_undef_error(rt, b);
    static const char *const sym[] = {"+", "-", "*", "/", "//", "%", "** or pow()"};
    bool nums = tv_is_num(a) && tv_is_num(b);
    bool ints = nums && is_intlike(a) && is_intlike(b);
    int64_t x = ints ? as_int(a) : 0, y = ints ? as_int(b) : 0, r;
    double fx = nums ? tv_num(a) : 0, fy = nums ? tv_num(b) : 0;
    switch (op) {
    case OP_ADD:
        if (ints)
            return __builtin_add_overflow(x, y, &r) ? overflow(rt) : mkint(rt, r);
        if (nums)
            return mkfloat(rt, fx + fy);
        if (a->type == TV_STR && b->type == TV_STR)
            return str_add(rt, a, b);
        if (a->type == TV_LIST && b->type == TV_LIST &&
            (a->flags & TVF_TUPLE) == (b->flags & TVF_TUPLE)) {
            qlm_tval *l = tv_list(&rt->ar, a->list.n + b->list.n);
            if (!l)
                return tm_nomem(rt);
            l->flags = a->flags & TVF_TUPLE;
            for (size_t i = 0; i < a->list.n; i++)
                tv_push(&rt->ar, l, a->list.v[i]);
            for (size_t i = 0; i < b->list.n; i++)
                tv_push(&rt->ar, l, b->list.v[i]);
            return l;
        }
        if (a->type == TV_STR || a->type == TV_LIST)
            return tm_fail(rt, "can only concatenate %s (not \"%s\") to %s", tv_typename(a),
                           tv_typename(b), tv_typename(a));
        return unsupported(rt, "+", a, b);
    case OP_SUB:
        if (ints)
            return __builtin_sub_overflow(x, y, &r) ? overflow(rt) : mkint(rt, r);
        if (nums)
            return mkfloat(rt, fx - fy);
        return unsupported(rt, "-", a, b);
    case OP_MUL:
        if (ints)
            return __builtin_mul_overflow(x, y, &r) ? overflow(rt) : mkint(rt, r);
        if (nums)
            return mkfloat(rt, fx * fy);
        if ((a->type == TV_STR || a->type == TV_LIST) && is_intlike(b))
            return repeat(rt, a, as_int(b));
        if ((b->type == TV_STR || b->type == TV_LIST) && is_intlike(a))
            return repeat(rt, b, as_int(a));
        if (a->type == TV_STR || a->type == TV_LIST || b->type == TV_STR || b->type == TV_LIST)
            return tm_fail(rt, "can't multiply sequence by non-int of type '%s'",
                           tv_typename(a->type == TV_STR || a->type == TV_LIST ? b : a));
        return unsupported(rt, "*", a, b);
    case OP_DIV:
        if (!nums)
            return unsupported(rt, "/", a, b);
        if (fy == 0)
            return tm_fail(rt, ints ? "division by zero" : "float division by zero");
        return mkfloat(rt, fx / fy);
    case OP_FLOORDIV: case OP_MOD:
        if (a->type == TV_STR && op == OP_MOD)
            return percent_format(rt, a, b);
        if (!nums)
            return unsupported(rt, sym[op], a, b);
        if (ints) {
            if (y == 0)
                return tm_fail(rt, op == OP_MOD ? "integer modulo by zero"
                                                : "integer division or modulo by zero");
            if (x == INT64_MIN && y == -1)
                return op == OP_MOD ? mkint(rt, 0) : overflow(rt);
            int64_t q = x / y, m = x % y;
            if (m && ((m < 0) != (y < 0))) {
                q--;
                m += y;
            }
            return mkint(rt, op == OP_MOD ? m : q);
        }
        if (fy == 0)
            return tm_fail(rt, op == OP_MOD ? "float modulo" : "float floor division by zero");
        return mkfloat(rt, op == OP_MOD ? py_fmod(fx, fy) : py_floordiv(fx, fy));
    case OP_POW:
        if (!nums)
            return unsupported(rt, sym[op], a, b);
        if (ints && y >= 0) {
            int64_t acc = 1, base = x;
            for (int64_t e = y; e; e >>= 1) {
                if ((e & 1) && __builtin_mul_overflow(acc, base, &acc))
                    return overflow(rt);
                if (e > 1 && __builtin_mul_overflow(base, base, &base))
                    return overflow(rt);
            }
            return mkint(rt, acc);
        }
        if (fx == 0 && fy < 0)
            return tm_fail(rt, "0.0 cannot be raised to a negative power");
        if (fx < 0 && fy != floor(fy))
            return tm_fail(rt, "unsupported: a negative number to a fractional power "
                               "(Python gives a complex number)");
        return mkfloat(rt, pow(fx, fy));
    }
    return tm_fail(rt, "internal error: unknown operator");
}

/* ---- printf-style formatting: "%s and %d" % (a, b) ---- */
static qlm_tval *percent_format(tm_rt *rt, qlm_tval *fmt, qlm_tval *args)
{
    qlm_tval **argv = &args;
    size_t argc = 1, used = 0;
    if (args->type == TV_LIST && (args->flags & TVF_TUPLE)) {
        argv = args->list.v;
        argc = args->list.n;
    }
    const char *s = fmt->str.s;
    size_t n = fmt->str.n;
    tm_buf out = {.a = &rt->ar};
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            tb_putc(&out, s[i]);
            continue;
        }
        /* %[flags][width][.precision]type */
        size_t j = i + 1;
        char spec[32] = "%";
        size_t sl = 1;
        const char *mapkey = NULL;
        size_t mapkey_n = 0;
        if (j < n && s[j] == '(') {
            size_t close = j + 1;
            while (close < n && s[close] != ')')
                close++;
            if (close >= n)
                return tm_fail(rt, "incomplete format key");
            mapkey = s + j + 1;
            mapkey_n = close - j - 1;
            j = close + 1;
        }
        while (j < n && strchr("-+ #0", s[j]) && sl < 8)
            spec[sl++] = s[j++];
        while (j < n && s[j] >= '0' && s[j] <= '9' && sl < 16)
            spec[sl++] = s[j++];
        if (j < n && s[j] == '.') {
            spec[sl++] = s[j++];
            while (j < n && s[j] >= '0' && s[j] <= '9' && sl < 24)
                spec[sl++] = s[j++];
        }
        if (j >= n)
            return tm_fail(rt, "incomplete format");
        char type = s[j];
        i = j;
        if (type == '%') {
            tb_putc(&out, '%');
            continue;
        }
        qlm_tval *v;
        if (mapkey) {
            if (args->type != TV_DICT)
                return tm_fail(rt, "format requires a mapping");
            if (!(v = tv_dict_gets(args, mapkey, mapkey_n)))
                return tm_fail(rt, "'%.*s'", (int)mapkey_n, mapkey);
        } else {
            if (used >= argc)
                return tm_fail(rt, "not enough arguments for format string");
            v = argv[used++];
        }
        char tmp[512];
        switch (type) {
        case 's': case 'r': {
            tm_buf sb = {.a = &rt->ar};
            if (!(type == 's' ? tm_str_to(rt, &sb, v) : tm_repr_to(rt, &sb, v)))
                return NULL;
            spec[sl++] = 's';
            spec[sl] = 0;
            if (!strcmp(spec, "%s")) {
                tb_put(&out, sb.p ? sb.p : "", sb.n);
            } else {
                /* Width and precision count code points, not bytes: only
                 * plain ASCII is handed to snprintf. */
                qlm_tval *sv = tv_str(&rt->ar, sb.p ? sb.p : "", sb.n);
                if (!sv)
                    return tm_nomem(rt);
                if (!sv->ascii)
                    return tm_fail(rt, "unsupported: width or precision on non-ASCII text in %% formatting");
                int k = snprintf(tmp, sizeof tmp, spec, sv->str.s);
                if (k < 0 || (size_t)k >= sizeof tmp)
                    return tm_fail(rt, "formatted field too wide");
                tb_puts(&out, tmp);
            }
            break;
        }
        case 'd': case 'i': case 'x': case 'X': case 'o': case 'e': case 'E': case 'f':
        case 'F': case 'g': case 'G': case 'c': {
            if (v->type == TV_UNDEF)
                return tm_undef_error(rt, v);
            if (!tv_is_num(v))
                return tm_fail(rt, "%%%c format: a %s is required, not %s", type,
                               strchr("dixXoc", type) ? "number" : "real number", tv_typename(v));
            int k;
            if (strchr("dixXoc", type)) {
                if (v->type == TV_FLOAT && type != 'd' && type != 'i')
                    return tm_fail(rt, "%%%c format: an integer is required, not float", type);
                long long iv = v->type == TV_FLOAT ? (long long)v->f : (long long)as_int(v);
                spec[sl++] = 'l';
                spec[sl++] = 'l';
                spec[sl++] = type == 'i' || type == 'c' ? 'd' : type;
                spec[sl] = 0;
                if (type == 'c') {
                    char enc[4];
                    size_t m = iv >= 0 && iv <= 0x10ffff ? qlm_utf8_encode((uint32_t)iv, enc) : 0;
                    if (!m)
                        return tm_fail(rt, "%%c arg not in range(0x110000)");
                    tb_put(&out, enc, m);
                    break;
                }
                k = snprintf(tmp, sizeof tmp, spec, iv);
            } else {
                spec[sl++] = type;
                spec[sl] = 0;
                k = snprintf(tmp, sizeof tmp, spec, tv_num(v));
            }
            if (k < 0 || (size_t)k >= sizeof tmp)
                return tm_fail(rt, "formatted field too wide");
            tb_puts(&out, tmp);
            break;
        }
        default:
            return tm_fail(rt, "unsupported format character '%c' (0x%x)", type,
                           (unsigned char)type);
        }
    }
    /* Python skips this check when the argument has __getitem__ (a list
     * or dict that is not a tuple): "x" % [1] is "x". */
    bool indexable = args->type == TV_DICT || args->type == TV_UNDEF ||
                     (args->type == TV_LIST && !(args->flags & TVF_TUPLE));
    if (!indexable && used < argc)
        return tm_fail(rt, "not all arguments converted during string formatting");
    if (out.failed)
        return tm_nomem(rt);
    qlm_tval *r = out.p ? tv_str_take(&rt->ar, out.p, out.n) : tv_str(&rt->ar, "", 0);
    return r ? r : tm_nomem(rt);
}
