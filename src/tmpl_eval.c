/* tmpl_eval.c - rendering: scopes, expressions, statements, and the
 * entry points of template.h.
 *
 * Scoping follows jinja2: a for loop's body gets a fresh scope each turn
 * (so {% set %} inside a loop is gone at the next turn and after the
 * loop -- the reason templates use namespace()), if does not scope, a
 * macro's scope hangs off the one it was defined in and sees top-level
 * variables as they are when it is called. */
#include "tmpl_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_EVAL_DEPTH 1500   /* nested evaluations, for the C stack's sake */

static qlm_tval *tm_eval(tm_rt *rt, const tnode *n, tm_frame *f);

/* Statement results besides errors. */
enum { EX_OK = 0, EX_ERR = -1, EX_BREAK = 1, EX_CONTINUE = 2 };

/* ---- errors ---- */
qlm_tval *tm_fail(tm_rt *rt, const char *fmt, ...)
{
    if (rt->failed)
        return NULL;
    rt->failed = true;
    rt->code = QLM_EUSAGE;
    if (rt->err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(rt->err->msg, sizeof rt->err->msg, fmt, ap);
        va_end(ap);
        rt->err->code = QLM_EUSAGE;
        /* Errors are one line, even a raise_exception("a\nb"), and never
         * empty, even a raise_exception("") or one whose text starts with
         * a NUL: callers print the message as the whole diagnosis. */
        for (char *c = rt->err->msg; *c; c++)
            if (*c == '\n' || *c == '\r')
                *c = ' ';
        if (!rt->err->msg[0])
            snprintf(rt->err->msg, sizeof rt->err->msg, "template raised an error with an empty message");
    }
    return NULL;
}

qlm_tval *tm_nomem(tm_rt *rt)
{
    if (rt->failed)
        return NULL;
    if (rt->ar.over_cap) {
        tm_fail(rt, "template used more than %zu MiB of memory while rendering",
                rt->ar.cap >> 20);
        return NULL;
    }
    rt->failed = true;
    rt->code = qlm_fail(rt->err, QLM_ERUNTIME, "template: out of memory");
    return NULL;
}

bool tm_step(tm_rt *rt)
{
    if (++rt->steps <= rt->max_steps)
        return true;
    tm_fail(rt, "template rendering took more than %llu steps",
            (unsigned long long)rt->max_steps);
    return false;
}

qlm_tval *tm_mkundef(tm_rt *rt, qlm_tval *obj, qlm_tval *name, const char *hint)
{
    qlm_tval *u = tv_new(&rt->ar, TV_UNDEF);
    if (!u)
        return tm_nomem(rt);
    u->undef.obj = obj;
    u->undef.name = name;
    u->undef.hint = hint;
    return u;
}

/* jinja2's object_type_repr: how "X has no attribute" names the object. */
static const char *object_type(const qlm_tval *v)
{
    switch (v->type) {
    case TV_NONE: return "None";
    case TV_UNDEF: return "jinja2.runtime.Undefined object";
    case TV_NS: return "jinja2.utils.Namespace object";
    case TV_LOOP: return "jinja2.runtime.LoopContext object";
    case TV_MACRO: return "jinja2.runtime.Macro object";
    case TV_STR: return v->flags & TVF_MARKUP ? "markupsafe.Markup object" : "str object";
    case TV_LIST: return v->flags & TVF_TUPLE ? "tuple object" : "list object";
    case TV_DICT: return "dict object";
    case TV_BOOL: return "bool object";
    case TV_INT: return "int object";
    case TV_FLOAT: return "float object";
    default: return "builtin_function_or_method object";
    }
}

qlm_tval *tm_undef_error(tm_rt *rt, const qlm_tval *u)
{
    if (rt->failed)
        return NULL;
    if (u->type != TV_UNDEF)
        return tm_fail(rt, "undefined value used");
    if (u->undef.hint)
        return tm_fail(rt, "%s", u->undef.hint);
    tm_buf b = {.a = &rt->ar};
    const qlm_tval *name = u->undef.name;
    if (!name) {
        tb_puts(&b, "undefined value");
    } else if (!u->undef.obj) {
        tm_repr_to(rt, &b, name);
        tb_puts(&b, " is undefined");
    } else if (name->type != TV_STR) {
        tb_puts(&b, object_type(u->undef.obj));
        tb_puts(&b, " has no element ");
        tm_repr_to(rt, &b, name);
    } else {
        tb_putc(&b, '\'');
        tb_puts(&b, object_type(u->undef.obj));
        tb_puts(&b, "' has no attribute ");
        tm_repr_to(rt, &b, name);
    }
    if (rt->failed)
        return NULL;
    return tm_fail(rt, "%.*s", (int)b.n, b.p ? b.p : "");
}

/* ---- scopes ---- */
static tm_frame *frame_new(tm_rt *rt, tm_frame *parent)
{
    tm_frame *f = tm_alloc(&rt->ar, sizeof *f);
    if (!f)
        return tm_nomem(rt), NULL;
    f->parent = parent;
    return f;
}

static bool frame_set(tm_rt *rt, tm_frame *f, const char *name, qlm_tval *v)
{
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->names[i], name)) {
            f->vals[i] = v;
            return true;
        }
    if (f->n == f->cap) {
        int cap = f->cap ? f->cap * 2 : 4;
        const char **nn = tm_alloc(&rt->ar, (size_t)cap * sizeof *nn);
        qlm_tval **nv = tm_alloc(&rt->ar, (size_t)cap * sizeof *nv);
        if (!nn || !nv)
            return tm_nomem(rt), false;
        if (f->n) {
            memcpy(nn, f->names, (size_t)f->n * sizeof *nn);
            memcpy(nv, f->vals, (size_t)f->n * sizeof *nv);
        }
        f->names = nn;
        f->vals = nv;
        f->cap = cap;
    }
    f->names[f->n] = name;
    f->vals[f->n++] = v;
    return true;
}

static qlm_tval *lookup(tm_rt *rt, tm_frame *f, const char *name)
{
    for (; f; f = f->parent)
        for (int i = f->n - 1; i >= 0; i--)
            if (!strcmp(f->names[i], name))
                return f->vals[i];
    size_t n = strlen(name);
    for (int i = 0; i < rt->nvars; i++) {
        qlm_tval *v = tv_dict_gets(rt->vars[i]->dict, name, n);
        if (v)
            return v;
    }
    int g = tm_global_id(name);
    if (g >= 0) {
        qlm_tval *fn = tv_new(&rt->ar, TV_FUNC);
        if (!fn)
            return tm_nomem(rt);
        fn->fn.id = g;
        return fn;
    }
    qlm_tval *nm = tv_str(&rt->ar, name, n);
    return nm ? tm_mkundef(rt, NULL, nm, NULL) : tm_nomem(rt);
}

/* ---- attribute and item access ---- */
static qlm_tval *loop_attr(tm_rt *rt, qlm_tval *lv, const char *name, size_t n)
{
    tm_loop *l = lv->loop;
    int64_t i = (int64_t)l->i, len = (int64_t)l->n;
#define IS(w) (n == sizeof(w) - 1 && !memcmp(name, w, n))
    if (IS("index")) return tv_int(&rt->ar, i + 1);
    if (IS("index0")) return tv_int(&rt->ar, i);
    if (IS("revindex")) return tv_int(&rt->ar, len - i);
    if (IS("revindex0")) return tv_int(&rt->ar, len - i - 1);
    if (IS("first")) return tv_bool(i == 0);
    if (IS("last")) return tv_bool(i == len - 1);
    if (IS("length")) return tv_int(&rt->ar, len);
    if (IS("depth")) return tv_int(&rt->ar, 1);
    if (IS("depth0")) return tv_int(&rt->ar, 0);
    if (IS("previtem"))
        return i > 0 ? l->items[i - 1] : tm_mkundef(rt, NULL, NULL, "there is no previous item");
    if (IS("nextitem"))
        return i + 1 < len ? l->items[i + 1] : tm_mkundef(rt, NULL, NULL, "there is no next item");
#undef IS
    int m = tm_method_id(lv, name, n);
    if (m >= 0) {
        qlm_tval *meth = tv_new(&rt->ar, TV_METHOD);
        if (!meth)
            return tm_nomem(rt);
        meth->fn.id = m;
        meth->fn.self = lv;
        return meth;
    }
    qlm_tval *nm = tv_str(&rt->ar, name, n);
    return nm ? tm_mkundef(rt, lv, nm, NULL) : tm_nomem(rt);
}

/* Container methods that would change the container: the sandbox hands
 * out an undefined that fails when called. */
static bool unsafe_method(const qlm_tval *obj, const char *name, size_t n)
{
    static const char *const list_m[] = {"append", "clear", "pop", "reverse", "insert",
                                         "sort", "extend", "remove", NULL};
    static const char *const dict_m[] = {"clear", "pop", "popitem", "setdefault", "update", NULL};
    const char *const *m = obj->type == TV_LIST && !(obj->flags & TVF_TUPLE) ? list_m
                           : obj->type == TV_DICT                          ? dict_m
                                                                          : NULL;
    for (; m && *m; m++)
        if (strlen(*m) == n && !memcmp(*m, name, n))
            return true;
    return false;
}

static qlm_tval *attr_method(tm_rt *rt, qlm_tval *obj, const char *name, size_t n, bool *found)
{
    *found = true;
    int m = tm_method_id(obj, name, n);
    if (m >= 0) {
        qlm_tval *meth = tv_new(&rt->ar, TV_METHOD);
        if (!meth)
            return tm_nomem(rt);
        meth->fn.id = m;
        meth->fn.self = obj;
        return meth;
    }
    if (unsafe_method(obj, name, n)) {
        char *hint = tm_alloc(&rt->ar, n + 80);
        if (!hint)
            return tm_nomem(rt);
        snprintf(hint, n + 80, "access to attribute '%.*s' of '%s' object is unsafe.", (int)n, name,
                 tv_typename(obj));
        return tm_mkundef(rt, obj, NULL, hint);
    }
    *found = false;
    return NULL;
}

qlm_tval *tm_getattr(tm_rt *rt, qlm_tval *obj, const char *name, size_t n)
{
    bool found;
    switch (obj->type) {
    case TV_UNDEF:
        return tm_undef_error(rt, obj);
    case TV_LOOP:
        return loop_attr(rt, obj, name, n);
    case TV_NS: {
        qlm_tval *v = tv_dict_gets(obj, name, n);
        if (v)
            return v;
        break;
    }
    default: {
        qlm_tval *v = attr_method(rt, obj, name, n, &found);
        if (found)
            return v;
        if (obj->type == TV_DICT && (v = tv_dict_gets(obj, name, n)))
            return v;
    }
    }
    qlm_tval *nm = tv_str(&rt->ar, name, n);
    return nm ? tm_mkundef(rt, obj, nm, NULL) : tm_nomem(rt);
}

/* Byte offsets of the code points of a string: off[i] for i <= count. */
static size_t *cp_offsets(tm_rt *rt, const qlm_tval *s, size_t *count)
{
    size_t n = tm_u8_count(s);
    size_t *off = tm_alloc(&rt->ar, (n + 1) * sizeof *off);
    if (!off)
        return tm_nomem(rt), NULL;
    size_t i = 0, k = 0;
    for (; i < s->str.n; k++) {
        off[k] = i;
        i += s->ascii ? 1 : tm_u8_step(s->str.s + i, s->str.n - i);
    }
    off[k] = i;
    *count = n;
    return off;
}

qlm_tval *tm_getitem(tm_rt *rt, qlm_tval *obj, qlm_tval *key)
{
    if (obj->type == TV_UNDEF)
        return tm_undef_error(rt, obj);
    bool int_key = key->type == TV_INT || key->type == TV_BOOL;
    int64_t idx = key->type == TV_INT ? key->i : key->type == TV_BOOL ? key->b : 0;
    switch (obj->type) {
    case TV_DICT: {
        qlm_tval *v = tv_dict_get(obj, key);
        if (v)
            return v;
        break;
    }
    case TV_LIST:
        if (int_key) {
            int64_t n = (int64_t)obj->list.n;
            if (idx < 0)
                idx += n;
            if (idx >= 0 && idx < n)
                return obj->list.v[idx];
        }
        break;
    case TV_STR:
        if (int_key) {
            size_t n, *off = cp_offsets(rt, obj, &n);
            if (!off)
                return NULL;
            if (idx < 0)
                idx += (int64_t)n;
            if (idx >= 0 && idx < (int64_t)n) {
                qlm_tval *c = tv_str(&rt->ar, obj->str.s + off[idx], off[idx + 1] - off[idx]);
                return c ? c : tm_nomem(rt);
            }
        }
        break;
    default:
        break;
    }
    if (key->type == TV_STR && obj->type != TV_DICT)
        return tm_getattr(rt, obj, key->str.s, key->str.n);
    if (key->type == TV_STR) {
        bool found;
        qlm_tval *m = attr_method(rt, obj, key->str.s, key->str.n, &found);
        if (found)
            return m;
    }
    return tm_mkundef(rt, obj, key, NULL);
}

/* Python's slice index normalisation. */
static bool slice_bound(tm_rt *rt, qlm_tval *v, bool *given, int64_t *out)
{
    *given = false;
    if (!v || v->type == TV_NONE)
        return true;
    if (v->type == TV_INT || v->type == TV_BOOL) {
        *given = true;
        *out = v->type == TV_INT ? v->i : v->b;
        return true;
    }
    if (v->type == TV_UNDEF)
        tm_undef_error(rt, v);
    else
        tm_fail(rt, "slice indices must be integers or None or have an __index__ method");
    return false;
}

static qlm_tval *do_slice(tm_rt *rt, qlm_tval *obj, qlm_tval *start, qlm_tval *stop, qlm_tval *step)
{
    if (obj->type == TV_UNDEF)
        return tm_undef_error(rt, obj);
    bool has_start, has_stop, has_step;
    int64_t a = 0, b = 0, st = 1;
    if (!slice_bound(rt, start, &has_start, &a) || !slice_bound(rt, stop, &has_stop, &b) ||
        !slice_bound(rt, step, &has_step, &st))
        return NULL;
    if (st == 0)
        return tm_fail(rt, "slice step cannot be zero");
    if (obj->type != TV_LIST && obj->type != TV_STR)
        return tm_mkundef(rt, obj, NULL, "this object cannot be sliced");
    size_t *off = NULL, count;
    if (obj->type == TV_STR) {
        if (!(off = cp_offsets(rt, obj, &count)))
            return NULL;
    } else {
        count = obj->list.n;
    }
    int64_t len = (int64_t)count;
    if (st > 0) {
        if (!has_start) a = 0;
        else if (a < 0 && (a += len) < 0) a = 0;
        else if (a > len) a = len;
        if (!has_stop) b = len;
        else if (b < 0 && (b += len) < 0) b = 0;
        else if (b > len) b = len;
    } else {
        if (!has_start) a = len - 1;
        else if (a < 0 && (a += len) < 0) a = -1;
        else if (a >= len) a = len - 1;
        if (!has_stop) b = -1;
        else if (b < 0 && (b += len) < 0) b = -1;
        else if (b >= len) b = len - 1;
    }
    if (obj->type == TV_LIST) {
        qlm_tval *r = tv_list(&rt->ar, 0);
        if (!r)
            return tm_nomem(rt);
        r->flags = obj->flags & TVF_TUPLE;
        for (int64_t i = a; st > 0 ? i < b : i > b; i += st)
            if (!tv_push(&rt->ar, r, obj->list.v[i]))
                return tm_nomem(rt);
        return r;
    }
    tm_buf out = {.a = &rt->ar};
    for (int64_t i = a; st > 0 ? i < b : i > b; i += st)
        tb_put(&out, obj->str.s + off[i], off[i + 1] - off[i]);
    if (out.failed)
        return tm_nomem(rt);
    qlm_tval *r = out.p ? tv_str_take(&rt->ar, out.p, out.n) : tv_str(&rt->ar, "", 0);
    return r ? r : tm_nomem(rt);
}

qlm_tval *tm_iterate(tm_rt *rt, qlm_tval *v)
{
    qlm_tval *r;
    switch (v->type) {
    case TV_LIST:
        return v;
    case TV_UNDEF:
        r = tv_list(&rt->ar, 0);
        return r ? r : tm_nomem(rt);
    case TV_DICT:
        if (!(r = tv_list(&rt->ar, v->dict.n)))
            return tm_nomem(rt);
        for (size_t i = 0; i < v->dict.n; i++)
            tv_push(&rt->ar, r, v->dict.k[i]);
        return r;
    case TV_STR: {
        if (!(r = tv_list(&rt->ar, tm_u8_count(v))))
            return tm_nomem(rt);
        for (size_t i = 0; i < v->str.n;) {
            size_t k = v->ascii ? 1 : tm_u8_step(v->str.s + i, v->str.n - i);
            if (!tv_push(&rt->ar, r, tv_str(&rt->ar, v->str.s + i, k)))
                return tm_nomem(rt);
            i += k;
        }
        return r;
    }
    default:
        return tm_fail(rt, "'%s' object is not iterable", tv_typename(v));
    }
}

qlm_tval *tm_contains(tm_rt *rt, qlm_tval *c, qlm_tval *x)
{
    switch (c->type) {
    case TV_STR:
        if (x->type == TV_UNDEF)
            return tm_undef_error(rt, x);
        if (x->type != TV_STR)
            return tm_fail(rt, "'in <string>' requires string as left operand, not %s",
                           tv_typename(x));
        if (!x->str.n)
            return &tm_true;
        return tv_bool(memmem(c->str.s, c->str.n, x->str.s, x->str.n) != NULL);
    case TV_LIST:
        for (size_t i = 0; i < c->list.n; i++)
            if (tv_eq(c->list.v[i], x))
                return &tm_true;
        return &tm_false;
    case TV_DICT: {
        const qlm_tval *bad = tv_unhashable(x);
        if (bad)
            return tm_fail(rt, "unhashable type: '%s'", tv_typename(bad));
        return tv_bool(tv_dict_get(c, x) != NULL);
    }
    case TV_UNDEF:
        return &tm_false;
    default:
        return tm_fail(rt, "argument of type '%s' is not iterable", tv_typename(c));
    }
}

/* ---- calls ---- */
qlm_tval *tm_arg(tm_args *a, int pos, const char *name)
{
    if (pos >= 0 && pos < a->npos)
        return a->pos[pos];
    for (int i = 0; name && i < a->nkw; i++)
        if (!strcmp(a->kwn[i], name))
            return a->kwv[i];
    return NULL;
}

static int ex(tm_rt *rt, const tnode *n, tm_frame *f);
static int ex_body(tm_rt *rt, tnode *const *items, int n, tm_frame *f);
static bool assign(tm_rt *rt, const tnode *target, qlm_tval *v, tm_frame *f);

/* Runs a body into a fresh buffer and returns what it printed. */
static qlm_tval *capture(tm_rt *rt, tnode *const *items, int n, tm_frame *f)
{
    tm_buf buf = {.a = &rt->ar, .limit = rt->out->limit}, *saved = rt->out;
    rt->out = &buf;
    int rc = ex_body(rt, items, n, f);
    rt->out = saved;
    if (rc == EX_ERR)
        return NULL;
    if (buf.failed)
        return buf.over_limit ? tm_fail(rt, "rendered text is longer than %zu bytes", buf.limit)
                              : tm_nomem(rt);
    qlm_tval *s = buf.p ? tv_str_take(&rt->ar, buf.p, buf.n) : tv_str(&rt->ar, "", 0);
    return s ? s : tm_nomem(rt);
}

qlm_tval *tm_invoke_macro(tm_rt *rt, qlm_tval *mv, tm_args *a)
{
    const tm_macro *m = mv->macro;
    const tnode *def = m->node;
    const char *mname = m->name ? m->name : "caller";
    if (!tm_step(rt))
        return NULL;
    /* jinja2 stops where Python's recursion limit does, with this message
     * (a template's macro recursing without end, e.g. Hermes' type
     * mapper on "null", must fail the same way, not crash). */
    if (rt->macro_depth >= TM_MAX_DEPTH)
        return tm_fail(rt, "maximum recursion depth exceeded");
    if (a->npos > def->nnames)
        return tm_fail(rt, "macro '%s' takes not more than %d argument(s)", mname, def->nnames);
    tm_frame *f = frame_new(rt, m->closure);
    if (!f)
        return NULL;
    for (int i = 0; i < a->nkw; i++) {
        bool known = !strcmp(a->kwn[i], "caller");
        for (int j = 0; j < def->nnames && !known; j++)
            known = !strcmp(a->kwn[i], def->names[j]);
        if (!known)
            return tm_fail(rt, "macro '%s' takes no keyword argument '%s'", mname, a->kwn[i]);
        if (!strcmp(a->kwn[i], "caller") && !frame_set(rt, f, "caller", a->kwv[i]))
            return NULL;
    }
    /* Parameters left to right; a default may use the ones before it. */
    int first_default = def->nnames - def->nitems2;
    for (int j = 0; j < def->nnames; j++) {
        qlm_tval *v = j < a->npos ? a->pos[j] : tm_arg(a, -1, def->names[j]);
        if (v && j < a->npos && tm_arg(a, -1, def->names[j]))
            return tm_fail(rt, "macro '%s' got multiple values for argument '%s'", mname,
                           def->names[j]);
        if (!v && j >= first_default) {
            if (!(v = tm_eval(rt, def->items2[j - first_default], f)))
                return NULL;
        }
        if (!v) {
            char *hint = tm_alloc(&rt->ar, strlen(def->names[j]) + 40);
            if (!hint)
                return tm_nomem(rt);
            sprintf(hint, "parameter '%s' was not provided", def->names[j]);
            if (!(v = tm_mkundef(rt, NULL, NULL, hint)))
                return NULL;
        }
        if (!frame_set(rt, f, def->names[j], v))
            return NULL;
    }
    rt->macro_depth++;
    qlm_tval *r = capture(rt, def->items, def->nitems, f);
    rt->macro_depth--;
    return r;
}

qlm_tval *tm_call(tm_rt *rt, qlm_tval *fn, tm_args *a)
{
    switch (fn->type) {
    case TV_MACRO: return tm_invoke_macro(rt, fn, a);
    case TV_FUNC: return tm_call_global(rt, fn->fn.id, a);
    case TV_METHOD: return tm_call_method(rt, fn->fn.id, fn->fn.self, a);
    case TV_UNDEF: return tm_undef_error(rt, fn);
    default: return tm_fail(rt, "'%s' object is not callable", tv_typename(fn));
    }
}

/* ---- expressions ---- */

static bool eval_args(tm_rt *rt, const tnode *n, tm_frame *f, tm_args *a, int extra)
{
    memset(a, 0, sizeof *a);
    a->pos = tm_alloc(&rt->ar, (size_t)(n->nitems + 1) * sizeof *a->pos);
    a->kwv = tm_alloc(&rt->ar, (size_t)(n->nitems2 + extra + 1) * sizeof *a->kwv);
    a->kwn = tm_alloc(&rt->ar, (size_t)(n->nitems2 + extra + 1) * sizeof *a->kwn);
    if (!a->pos || !a->kwv || !a->kwn)
        return tm_nomem(rt), false;
    for (int i = 0; i < n->nitems; i++)
        if (!(a->pos[a->npos++] = tm_eval(rt, n->items[i], f)))
            return false;
    for (int i = 0; i < n->nitems2; i++) {
        a->kwn[a->nkw] = n->names[i];
        if (!(a->kwv[a->nkw++] = tm_eval(rt, n->items2[i], f)))
            return false;
    }
    return true;
}

/* A filter node applied to its operand, or to input at the bottom of a
 * {% filter %} / {% set %} block's chain. */
static qlm_tval *eval_filter(tm_rt *rt, const tnode *n, tm_frame *f, qlm_tval *input)
{
    qlm_tval *v = n->a ? (n->a->kind == N_FILTER && input ? eval_filter(rt, n->a, f, input)
                                                           : tm_eval(rt, n->a, f))
                       : input;
    tm_args a;
    if (!v || !eval_args(rt, n, f, &a, 0))
        return NULL;
    return tm_apply_filter(rt, n->fid, v, &a);
}

static qlm_tval *eval_compare(tm_rt *rt, const tnode *n, tm_frame *f)
{
    qlm_tval *left = tm_eval(rt, n->a, f);
    if (!left)
        return NULL;
    for (int i = 0; i < n->nitems; i++) {
        qlm_tval *right = tm_eval(rt, n->items[i], f);
        if (!right)
            return NULL;
        bool ok;
        int op = n->ops[i], c;
        switch (op) {
        case OP_EQ: ok = tv_eq(left, right); break;
        case OP_NE: ok = !tv_eq(left, right); break;
        case OP_IN: case OP_NOTIN: {
            qlm_tval *r = tm_contains(rt, right, left);
            if (!r)
                return NULL;
            ok = r->b == (op == OP_IN);
            break;
        }
        default:
            if (!tm_compare(rt, left, right, op, &c))
                return NULL;
            ok = op == OP_LT ? c < 0 : op == OP_LE ? c <= 0 : op == OP_GT ? c > 0 : c >= 0;
        }
        if (!ok)
            return &tm_false;
        left = right;
    }
    return &tm_true;
}

static qlm_tval *tm_eval(tm_rt *rt, const tnode *n, tm_frame *f)
{
    if (rt->failed)
        return NULL;
    if (++rt->depth > MAX_EVAL_DEPTH) {
        rt->depth--;
        return tm_fail(rt, "maximum recursion depth exceeded");
    }
    if (!tm_step(rt)) {
        rt->depth--;
        return NULL;
    }
    qlm_tval *r = NULL, *x, *y;
    tm_args a;
    switch (n->kind) {
    case N_CONST:
        r = n->val;
        break;
    case N_NAME:
        r = lookup(rt, f, n->name);
        break;
    case N_GETATTR:
        if ((x = tm_eval(rt, n->a, f)))
            r = tm_getattr(rt, x, n->name, strlen(n->name));
        break;
    case N_GETITEM:
        if (!(x = tm_eval(rt, n->a, f)))
            break;
        if (n->b->kind == N_SLICE) {
            const tnode *s = n->b;
            qlm_tval *lo = NULL, *hi = NULL, *st = NULL;
            if ((s->a && !(lo = tm_eval(rt, s->a, f))) || (s->b && !(hi = tm_eval(rt, s->b, f))) ||
                (s->c && !(st = tm_eval(rt, s->c, f))))
                break;
            r = do_slice(rt, x, lo, hi, st);
        } else if ((y = tm_eval(rt, n->b, f))) {
            r = tm_getitem(rt, x, y);
        }
        break;
    case N_CALL:
        if ((x = tm_eval(rt, n->a, f)) && eval_args(rt, n, f, &a, 0))
            r = tm_call(rt, x, &a);
        break;
    case N_FILTER:
        r = eval_filter(rt, n, f, NULL);
        break;
    case N_TEST:
        if ((x = tm_eval(rt, n->a, f)) && eval_args(rt, n, f, &a, 0)) {
            int t = tm_apply_test(rt, n->fid, x, &a);
            r = t < 0 ? NULL : tv_bool(t);
        }
        break;
    case N_NOT:
        if ((x = tm_eval(rt, n->a, f)))
            r = tv_bool(!tv_truthy(x));
        break;
    case N_NEG: case N_POS:
        if (!(x = tm_eval(rt, n->a, f)))
            break;
        if (x->type == TV_UNDEF) {
            tm_undef_error(rt, x);
        } else if (!tv_is_num(x)) {
            tm_fail(rt, "bad operand type for unary %c: '%s'", n->kind == N_NEG ? '-' : '+',
                    tv_typename(x));
        } else if (n->kind == N_POS) {
            r = x->type == TV_BOOL ? tv_int(&rt->ar, x->b) : x;
        } else if (x->type == TV_FLOAT) {
            r = tv_float(&rt->ar, -x->f);  /* -0.0 stays negative zero */
        } else {
            qlm_tval zero = {.type = TV_INT};
            r = tm_arith(rt, OP_SUB, &zero, x);
        }
        if (!r && !rt->failed)
            tm_nomem(rt);
        break;
    case N_BINOP:
        if ((x = tm_eval(rt, n->a, f)) && (y = tm_eval(rt, n->b, f)))
            r = tm_arith(rt, n->op, x, y);
        break;
    case N_AND:
        if ((x = tm_eval(rt, n->a, f)))
            r = tv_truthy(x) ? tm_eval(rt, n->b, f) : x;
        break;
    case N_OR:
        if ((x = tm_eval(rt, n->a, f)))
            r = tv_truthy(x) ? x : tm_eval(rt, n->b, f);
        break;
    case N_CONCAT: {
        tm_buf b = {.a = &rt->ar};
        int i;
        for (i = 0; i < n->nitems; i++)
            if (!(x = tm_eval(rt, n->items[i], f)) || !tm_str_to(rt, &b, x))
                break;
        if (i == n->nitems && !(r = b.p ? tv_str_take(&rt->ar, b.p, b.n) : tv_str(&rt->ar, "", 0)))
            tm_nomem(rt);
        break;
    }
    case N_COMPARE:
        r = eval_compare(rt, n, f);
        break;
    case N_COND:
        if ((x = tm_eval(rt, n->a, f))) {
            if (tv_truthy(x))
                r = tm_eval(rt, n->b, f);
            else if (n->c)
                r = tm_eval(rt, n->c, f);
            else
                r = tm_mkundef(rt, NULL, NULL,
                               "the inline if-expression evaluated to false and no else "
                               "section was defined.");
        }
        break;
    case N_LIST: case N_TUPLE: {
        qlm_tval *l = tv_list(&rt->ar, (size_t)n->nitems);
        if (!l) {
            tm_nomem(rt);
            break;
        }
        if (n->kind == N_TUPLE)
            l->flags = TVF_TUPLE;
        int i;
        for (i = 0; i < n->nitems; i++)
            if (!(x = tm_eval(rt, n->items[i], f)) || !tv_push(&rt->ar, l, x))
                break;
        if (i == n->nitems)
            r = l;
        else if (!rt->failed)
            tm_nomem(rt);
        break;
    }
    case N_DICT: {
        qlm_tval *d = tv_dict(&rt->ar, (size_t)n->nitems, TV_DICT);
        if (!d) {
            tm_nomem(rt);
            break;
        }
        int i;
        for (i = 0; i < n->nitems; i++) {
            if (!(x = tm_eval(rt, n->items[i], f)) || !(y = tm_eval(rt, n->items2[i], f)))
                break;
            const qlm_tval *bad = tv_unhashable(x);
            if (bad) {
                tm_fail(rt, "unhashable type: '%s'", tv_typename(bad));
                break;
            }
            if (!tv_dict_set(&rt->ar, d, x, y)) {
                tm_nomem(rt);
                break;
            }
        }
        if (i == n->nitems)
            r = d;
        break;
    }
    default:
        tm_fail(rt, "internal error: cannot evaluate node kind %d", n->kind);
    }
    rt->depth--;
    return rt->failed ? NULL : r;
}

/* ---- statements ---- */
static bool out_put(tm_rt *rt, const char *s, size_t n)
{
    if (tb_put(rt->out, s, n))
        return true;
    if (rt->out->over_limit)
        tm_fail(rt, "rendered text is longer than %zu bytes", rt->out->limit);
    else
        tm_nomem(rt);
    return false;
}

static bool assign(tm_rt *rt, const tnode *t, qlm_tval *v, tm_frame *f)
{
    if (t->kind == N_NAME)
        return frame_set(rt, f, t->name, v);
    if (t->kind == N_NSREF) {
        qlm_tval *ns = lookup(rt, f, t->name);
        if (!ns)
            return false;
        if (ns->type != TV_NS)
            return tm_fail(rt, "cannot assign attribute on non-namespace object"), false;
        qlm_tval *k = tv_str(&rt->ar, t->names[0], strlen(t->names[0]));
        if (!tv_dict_set(&rt->ar, ns, k, v))
            return tm_nomem(rt), false;
        return true;
    }
    /* A tuple of targets: unpack. */
    qlm_tval *items = tm_iterate(rt, v);
    if (!items)
        return false;
    if ((int64_t)items->list.n != t->nitems) {
        if ((int64_t)items->list.n > t->nitems)
            tm_fail(rt, "too many values to unpack (expected %d)", t->nitems);
        else
            tm_fail(rt, "not enough values to unpack (expected %d, got %zu)", t->nitems,
                    items->list.n);
        return false;
    }
    for (int i = 0; i < t->nitems; i++)
        if (!assign(rt, t->items[i], items->list.v[i], f))
            return false;
    return true;
}

static int ex_for(tm_rt *rt, const tnode *n, tm_frame *f)
{
    qlm_tval *src = tm_eval(rt, n->b, f), *items;
    if (!src || !(items = tm_iterate(rt, src)))
        return EX_ERR;
    if (n->c) {  /* for x in xs if cond: the condition sees the target only */
        qlm_tval *kept = tv_list(&rt->ar, 0);
        if (!kept)
            return tm_nomem(rt), EX_ERR;
        for (size_t i = 0; i < items->list.n; i++) {
            tm_frame *tf = frame_new(rt, f);
            qlm_tval *c;
            if (!tf || !assign(rt, n->a, items->list.v[i], tf) || !(c = tm_eval(rt, n->c, tf)))
                return EX_ERR;
            if (tv_truthy(c) && !tv_push(&rt->ar, kept, items->list.v[i]))
                return tm_nomem(rt), EX_ERR;
        }
        items = kept;
    }
    if (!items->list.n)
        return ex_body(rt, n->items2, n->nitems2, f);
    tm_loop *l = tm_alloc(&rt->ar, sizeof *l);
    qlm_tval *lv = tv_new(&rt->ar, TV_LOOP);
    if (!l || !lv)
        return tm_nomem(rt), EX_ERR;
    l->items = items->list.v;
    l->n = items->list.n;
    lv->loop = l;
    for (l->i = 0; l->i < l->n; l->i++) {
        if (!tm_step(rt))
            return EX_ERR;
        tm_frame *it = frame_new(rt, f);
        if (!it || !frame_set(rt, it, "loop", lv) || !assign(rt, n->a, l->items[l->i], it))
            return EX_ERR;
        int rc = ex_body(rt, n->items, n->nitems, it);
        if (rc == EX_ERR)
            return EX_ERR;
        if (rc == EX_BREAK)
            break;
    }
    return EX_OK;
}

static int ex(tm_rt *rt, const tnode *n, tm_frame *f)
{
    qlm_tval *v;
    switch (n->kind) {
    case S_BODY:
        return ex_body(rt, n->items, n->nitems, f);
    case S_DATA:
        return out_put(rt, n->val->str.s, n->val->str.n) ? EX_OK : EX_ERR;
    case S_PRINT: {
        if (!(v = tm_eval(rt, n->a, f)) || !(v = tm_to_str(rt, v)))
            return EX_ERR;
        return out_put(rt, v->str.s, v->str.n) ? EX_OK : EX_ERR;
    }
    case S_IF:
        if (!(v = tm_eval(rt, n->a, f)))
            return EX_ERR;
        return tv_truthy(v) ? ex_body(rt, n->items, n->nitems, f)
                            : ex_body(rt, n->items2, n->nitems2, f);
    case S_FOR:
        return ex_for(rt, n, f);
    case S_SET:
        if (!(v = tm_eval(rt, n->b, f)))
            return EX_ERR;
        return assign(rt, n->a, v, f) ? EX_OK : EX_ERR;
    case S_SETBLOCK: case S_FILTERBLOCK: {
        tm_frame *inner = frame_new(rt, f);
        if (!inner || !(v = capture(rt, n->items, n->nitems, inner)))
            return EX_ERR;
        if (n->c && !(v = eval_filter(rt, n->c, f, v)))
            return EX_ERR;
        if (n->kind == S_SETBLOCK)
            return assign(rt, n->a, v, f) ? EX_OK : EX_ERR;
        if (v->type != TV_STR && !(v = tm_to_str(rt, v)))
            return EX_ERR;
        return out_put(rt, v->str.s, v->str.n) ? EX_OK : EX_ERR;
    }
    case S_MACRO: case S_CALLBLOCK: {
        tm_macro *m = tm_alloc(&rt->ar, sizeof *m);
        qlm_tval *mv = tv_new(&rt->ar, TV_MACRO);
        if (!m || !mv)
            return tm_nomem(rt), EX_ERR;
        m->node = n;
        m->closure = f;
        m->name = n->kind == S_MACRO ? n->name : NULL;
        mv->macro = m;
        if (n->kind == S_MACRO)
            return frame_set(rt, f, n->name, mv) ? EX_OK : EX_ERR;
        /* {% call m(args) %}body{% endcall %}: m gets the body as caller. */
        tm_args a;
        qlm_tval *fn = tm_eval(rt, n->a->a, f);
        if (!fn || !eval_args(rt, n->a, f, &a, 1))
            return EX_ERR;
        a.kwn[a.nkw] = "caller";
        a.kwv[a.nkw++] = mv;
        if (!(v = tm_call(rt, fn, &a)) || !(v = tm_to_str(rt, v)))
            return EX_ERR;
        return out_put(rt, v->str.s, v->str.n) ? EX_OK : EX_ERR;
    }
    case S_WITH: {
        tm_frame *inner = frame_new(rt, f);
        if (!inner)
            return EX_ERR;
        const tnode *targets = n->a, *values = n->b;
        qlm_tval **vals = tm_alloc(&rt->ar, (size_t)(values->nitems + 1) * sizeof *vals);
        if (!vals)
            return tm_nomem(rt), EX_ERR;
        for (int i = 0; i < values->nitems; i++)
            if (!(vals[i] = tm_eval(rt, values->items[i], f)))
                return EX_ERR;
        for (int i = 0; i < targets->nitems; i++)
            if (!assign(rt, targets->items[i], vals[i], inner))
                return EX_ERR;
        return ex_body(rt, n->items, n->nitems, inner);
    }
    case S_SCOPE: {
        tm_frame *inner = frame_new(rt, f);
        return inner ? ex_body(rt, n->items, n->nitems, inner) : EX_ERR;
    }
    case S_BREAK:
        return EX_BREAK;
    case S_CONTINUE:
        return EX_CONTINUE;
    default:
        tm_fail(rt, "internal error: cannot run node kind %d", n->kind);
        return EX_ERR;
    }
}

static int ex_body(tm_rt *rt, tnode *const *items, int n, tm_frame *f)
{
    if (++rt->depth > MAX_EVAL_DEPTH) {
        rt->depth--;
        tm_fail(rt, "maximum recursion depth exceeded");
        return EX_ERR;
    }
    int rc = EX_OK;
    for (int i = 0; i < n && rc == EX_OK; i++)
        rc = rt->failed ? EX_ERR : ex(rt, items[i], f);
    rt->depth--;
    return rt->failed ? EX_ERR : rc;
}

/* ---- entry points ---- */
int qlm_tmpl_parse(const char *src, size_t len, qlm_tmpl **out, qlm_err *err)
{
    *out = NULL;
    if (!src && len)
        return qlm_fail(err, QLM_EUSAGE, "template: no source");
    qlm_tmpl *t = calloc(1, sizeof *t);
    if (!t)
        return qlm_fail(err, QLM_ERUNTIME, "template: out of memory");
    tm_token *toks;
    size_t n;
    int rc = tm_lex(&t->ar, src ? src : "", len, &toks, &n, err);
    if (!rc)
        rc = tm_parse(&t->ar, toks, n, &t->body, err);
    if (rc) {
        qlm_tmpl_free(t);
        return rc;
    }
    *out = t;
    return QLM_OK;
}

void qlm_tmpl_free(qlm_tmpl *t)
{
    if (!t)
        return;
    tm_arena_free(&t->ar);
    free(t);
}

static int render_vars(const qlm_tmpl *t, const qlm_tmpl_vars *const *vars, int nvars,
                       char **out, size_t *out_len, qlm_err *err)
{
    *out = NULL;
    if (out_len)
        *out_len = 0;
    if (!t)
        return qlm_fail(err, QLM_EUSAGE, "template: none given");
    qlm_tmpl_limits lim = {0};
    size_t vars_bytes = 0;
    bool now_set = false;
    int64_t now = 0;
    for (int i = 0; i < nvars; i++) {
        const qlm_tmpl_vars *v = vars[i];
        if (!lim.max_output) lim.max_output = v->lim.max_output;
        if (!lim.max_memory) lim.max_memory = v->lim.max_memory;
        if (!lim.max_steps) lim.max_steps = v->lim.max_steps;
        if (!now_set && v->now_set) {
            now_set = true;
            now = v->now;
        }
        vars_bytes += v->ar.total;
    }
    if (!lim.max_output) lim.max_output = (size_t)64 << 20;
    if (!lim.max_memory)
        lim.max_memory = ((size_t)256 << 20) + (vars_bytes < SIZE_MAX / 64 ? vars_bytes * 32 : 0);
    if (!lim.max_steps) lim.max_steps = 50000000;

    tm_rt rt = {.err = err, .max_steps = lim.max_steps, .vars = vars, .nvars = nvars,
                .now = now_set ? now : (int64_t)time(NULL)};
    rt.ar.cap = lim.max_memory;
    tm_buf buf = {.limit = lim.max_output};
    rt.out = &buf;
    int rc = QLM_OK;
    if (!(rt.root = frame_new(&rt, NULL)) || ex(&rt, t->body, rt.root) == EX_ERR || rt.failed) {
        rc = rt.failed ? rt.code : qlm_fail(err, QLM_ERUNTIME, "template: out of memory");
        free(buf.p);
    } else if (!buf.p && !(buf.p = calloc(1, 1))) {
        rc = qlm_fail(err, QLM_ERUNTIME, "template: out of memory");
    } else {
        *out = buf.p;
        if (out_len)
            *out_len = buf.n;
    }
    if (rt.loc)
        freelocale(rt.loc);
    tm_arena_free(&rt.ar);
    return rc;
}

int qlm_tmpl_render(const qlm_tmpl *t, const qlm_tmpl_vars *v, char **out, size_t *out_len,
                    qlm_err *err)
{
    if (err)
        err->code = QLM_OK;
    return render_vars(t, v ? &v : NULL, v ? 1 : 0, out, out_len, err);
}

static int put_json(qlm_tmpl_vars *v, qlm_tval *d, const char *key, const char *json,
                    qlm_err *err)
{
    qlm_tval *x;
    int rc = qlm_tv_json(v, json, strlen(json), &x, err);
    if (rc)
        return rc;
    return qlm_tv_put(v, d, key, x);
}

int qlm_tmpl_render_chat(const qlm_tmpl *t, const qlm_chat_msg *msgs, size_t n,
                         const qlm_chat_opts *o, char **out, size_t *out_len, qlm_err *err)
{
    *out = NULL;
    if (err)
        err->code = QLM_OK;
    qlm_chat_opts none = {0};
    if (!o)
        o = &none;
    qlm_tmpl_vars *v = qlm_tmpl_vars_new();
    if (!v)
        return qlm_fail(err, QLM_ERUNTIME, "template: out of memory");
    int rc = QLM_OK;
    qlm_tval *list = qlm_tv_list(v), *tools = NULL;
    for (size_t i = 0; i < n && !rc; i++) {
        qlm_tval *m = qlm_tv_dict(v);
        rc = qlm_tv_push(v, list, m);
        if (!rc)
            rc = qlm_tv_put(v, m, "role", qlm_tv_str(v, msgs[i].role ? msgs[i].role : ""));
        if (!rc)
            rc = qlm_tv_put(v, m, "content", qlm_tv_str(v, msgs[i].content));
        if (!rc && msgs[i].tool_calls)
            rc = put_json(v, m, "tool_calls", msgs[i].tool_calls, err);
        if (!rc && msgs[i].tool_call_id)
            rc = qlm_tv_put(v, m, "tool_call_id", qlm_tv_str(v, msgs[i].tool_call_id));
        if (!rc && msgs[i].name)
            rc = qlm_tv_put(v, m, "name", qlm_tv_str(v, msgs[i].name));
    }
    if (!rc && o->tools)
        rc = qlm_tv_json(v, o->tools, strlen(o->tools), &tools, err);
    if (!rc)
        rc = qlm_tmpl_vars_set(v, "messages", list);
    if (!rc)
        rc = qlm_tmpl_vars_set(v, "tools", tools ? tools : qlm_tv_none(v));
    if (!rc)
        rc = qlm_tmpl_vars_set(v, "documents", qlm_tv_none(v));
    if (!rc)
        rc = qlm_tmpl_vars_set(v, "add_generation_prompt", qlm_tv_bool(v, o->add_generation_prompt));
    if (!rc && o->bos_token)
        rc = qlm_tmpl_vars_set(v, "bos_token", qlm_tv_str(v, o->bos_token));
    if (!rc && o->eos_token)
        rc = qlm_tmpl_vars_set(v, "eos_token", qlm_tv_str(v, o->eos_token));
    if (rc) {
        if (!err || !err->code)
            rc = qlm_fail(err, rc, rc == QLM_ERUNTIME ? "template: out of memory"
                                                      : "template: bad chat message");
        qlm_tmpl_vars_free(v);
        return rc;
    }
    const qlm_tmpl_vars *chain[2] = {v, o->extra};
    rc = render_vars(t, chain, o->extra ? 2 : 1, out, out_len, err);
    qlm_tmpl_vars_free(v);
    return rc;
}
