/* tmpl_parse.c - tokens to a syntax tree, with jinja2's grammar and
 * operator precedence (parser.py): conditional < or < and < not <
 * comparisons < + - < ~ < * / // % < ** < unary < postfix and filters. */
#include "tmpl_int.h"

#include <stdio.h>
#include <string.h>

typedef struct ps {
    const tm_token *t;
    size_t n, i;
    tm_arena *a;
    qlm_err *err;
    int code;
    int depth;       /* expression and block nesting */
    int loops;       /* enclosing for loops (break/continue are legal) */
} ps;

static const tm_token *cur(ps *P) { return &P->t[P->i]; }
static const tm_token *peek(ps *P) { return &P->t[P->i + 1 < P->n ? P->i + 1 : P->i]; }
static void next(ps *P) { if (P->i + 1 < P->n) P->i++; }

static bool tok_is_name(const tm_token *t, const char *w)
{
    return t->type == TK_NAME && t->n == strlen(w) && memcmp(t->s, w, t->n) == 0;
}

static bool is_name(ps *P, const char *w) { return tok_is_name(cur(P), w); }
static bool is_op(ps *P, int op) { return cur(P)->type == TK_OP && cur(P)->op == op; }

/* How an error message names a token, like jinja2's describe_token. */
static void describe(const tm_token *t, char *out, size_t n)
{
    switch (t->type) {
    case TK_EOF: snprintf(out, n, "end of template"); break;
    case TK_VAR_END: snprintf(out, n, "end of print statement"); break;
    case TK_BLOCK_END: snprintf(out, n, "end of statement block"); break;
    case TK_VAR_BEGIN: snprintf(out, n, "begin of print statement"); break;
    case TK_BLOCK_BEGIN: snprintf(out, n, "begin of statement block"); break;
    case TK_DATA: snprintf(out, n, "template data"); break;
    case TK_STRING: snprintf(out, n, "string"); break;
    case TK_INT: snprintf(out, n, "integer"); break;
    case TK_FLOAT: snprintf(out, n, "float"); break;
    default: snprintf(out, n, "%.*s", (int)(t->n > 40 ? 40 : t->n), t->s); break;
    }
}

static void *pfail_at(ps *P, const tm_token *t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void *pfail_at(ps *P, const tm_token *t, const char *fmt, ...)
{
    if (P->code)
        return NULL;
    char what[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    P->code = qlm_fail(P->err, QLM_ELOAD, "template:%d:%d: %s", t->line, t->col, what);
    return NULL;
}

static void *nomem(ps *P)
{
    if (!P->code)
        P->code = qlm_fail(P->err, QLM_ERUNTIME, "template: out of memory");
    return NULL;
}

static void *unexpected(ps *P)
{
    char d[64];
    describe(cur(P), d, sizeof d);
    return pfail_at(P, cur(P), "unexpected '%s'", d);
}

static bool expect_op(ps *P, int op, const char *what)
{
    if (is_op(P, op)) {
        next(P);
        return true;
    }
    char d[64];
    describe(cur(P), d, sizeof d);
    pfail_at(P, cur(P), "expected '%s', got '%s'", what, d);
    return false;
}

static bool expect_type(ps *P, int type, const char *what)
{
    if (cur(P)->type == type) {
        next(P);
        return true;
    }
    char d[64];
    describe(cur(P), d, sizeof d);
    pfail_at(P, cur(P), "expected '%s', got '%s'", what, d);
    return false;
}

static bool expect_name(ps *P, const char *w)
{
    if (is_name(P, w)) {
        next(P);
        return true;
    }
    char d[64];
    describe(cur(P), d, sizeof d);
    pfail_at(P, cur(P), "expected '%s', got '%s'", w, d);
    return false;
}

static tnode *mk(ps *P, int kind, const tm_token *at)
{
    tnode *n = tm_alloc(P->a, sizeof *n);
    if (!n)
        return nomem(P);
    n->kind = (uint8_t)kind;
    n->line = at->line;
    n->col = at->col;
    return n;
}

static const char *tok_str(ps *P, const tm_token *t)
{
    char *s = tm_strdup(P->a, t->s, t->n);
    return s ? s : nomem(P);
}

/* A growing array of nodes (and names) in the arena. */
typedef struct nvec {
    tnode **v;
    const char **names;
    int n, cap;
} nvec;

static bool nv_push(ps *P, nvec *v, tnode *x, const char *name)
{
    if (!x)
        return false;
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 4;
        tnode **nv = tm_alloc(P->a, (size_t)cap * sizeof *nv);
        const char **nn = tm_alloc(P->a, (size_t)cap * sizeof *nn);
        if (!nv || !nn)
            return nomem(P), false;
        if (v->n) {
            memcpy(nv, v->v, (size_t)v->n * sizeof *nv);
            memcpy(nn, v->names, (size_t)v->n * sizeof *nn);
        }
        v->v = nv;
        v->names = nn;
        v->cap = cap;
    }
    v->names[v->n] = name;
    v->v[v->n++] = x;
    return true;
}

static bool enter(ps *P)
{
    if (++P->depth > TM_MAX_PARSE_DEPTH) {
        pfail_at(P, cur(P), "template nested too deeply (over %d levels)", TM_MAX_PARSE_DEPTH);
        return false;
    }
    return true;
}

static tnode *parse_expression(ps *P, bool with_condexpr);
static tnode *parse_tuple(ps *P, bool simplified, bool with_condexpr, const char *extra_end,
                          bool explicit_parens, bool with_namespace);
static tnode *parse_unary(ps *P, bool with_filter);
static tnode *parse_primary(ps *P, bool with_namespace);
static tnode *parse_postfix(ps *P, tnode *node);

static tnode *parse_condexpr(ps *P)
{
    tnode *e1 = parse_expression(P, false);
    while (e1 && is_name(P, "if")) {
        const tm_token *at = cur(P);
        next(P);
        tnode *c = mk(P, N_COND, at);
        if (!c || !(c->a = parse_expression(P, false)))
            return NULL;
        c->b = e1;
        if (is_name(P, "else")) {
            next(P);
            if (!enter(P) || !(c->c = parse_condexpr(P)))
                return NULL;
            P->depth--;
        }
        e1 = c;
    }
    return e1;
}

static tnode *parse_not(ps *P);

static tnode *parse_and(ps *P)
{
    tnode *l = parse_not(P);
    while (l && is_name(P, "and")) {
        tnode *n = mk(P, N_AND, cur(P));
        next(P);
        if (!n || !(n->b = parse_not(P)))
            return NULL;
        n->a = l;
        l = n;
    }
    return l;
}

static tnode *parse_or(ps *P)
{
    tnode *l = parse_and(P);
    while (l && is_name(P, "or")) {
        tnode *n = mk(P, N_OR, cur(P));
        next(P);
        if (!n || !(n->b = parse_and(P)))
            return NULL;
        n->a = l;
        l = n;
    }
    return l;
}

static tnode *parse_math1(ps *P);

static tnode *parse_compare(ps *P)
{
    const tm_token *at = cur(P);
    tnode *e = parse_math1(P);
    if (!e)
        return NULL;
    nvec ops = {0};
    uint8_t opv[64];
    for (;;) {
        int op = -1;
        const tm_token *t = cur(P);
        if (t->type == TK_OP) {
            switch (t->op) {
            case T_EQ: op = OP_EQ; break;
            case T_NE: op = OP_NE; break;
            case T_LT: op = OP_LT; break;
            case T_LE: op = OP_LE; break;
            case T_GT: op = OP_GT; break;
            case T_GE: op = OP_GE; break;
            }
            if (op >= 0)
                next(P);
        } else if (is_name(P, "in")) {
            op = OP_IN;
            next(P);
        } else if (is_name(P, "not") && tok_is_name(peek(P), "in")) {
            op = OP_NOTIN;
            next(P);
            next(P);
        }
        if (op < 0)
            break;
        if (ops.n == (int)sizeof opv)
            return pfail_at(P, t, "too many chained comparisons");
        opv[ops.n] = (uint8_t)op;
        if (!nv_push(P, &ops, parse_math1(P), NULL))
            return NULL;
    }
    if (!ops.n)
        return e;
    tnode *c = mk(P, N_COMPARE, at);
    if (!c || !(c->ops = tm_alloc(P->a, (size_t)ops.n)))
        return nomem(P);
    memcpy(c->ops, opv, (size_t)ops.n);
    c->a = e;
    c->items = ops.v;
    c->nitems = ops.n;
    return c;
}

static tnode *parse_not(ps *P)
{
    if (is_name(P, "not")) {
        tnode *n = mk(P, N_NOT, cur(P));
        next(P);
        if (!n || !enter(P) || !(n->a = parse_not(P)))
            return NULL;
        P->depth--;
        return n;
    }
    return parse_compare(P);
}

static tnode *binop(ps *P, const tm_token *at, int op, tnode *l, tnode *r)
{
    if (!l || !r)
        return NULL;
    tnode *n = mk(P, N_BINOP, at);
    if (!n)
        return NULL;
    n->op = (uint8_t)op;
    n->a = l;
    n->b = r;
    return n;
}

static tnode *parse_pow(ps *P)
{
    tnode *l = parse_unary(P, true);
    while (l && is_op(P, T_POW)) {
        const tm_token *at = cur(P);
        next(P);
        l = binop(P, at, OP_POW, l, parse_unary(P, true));
    }
    return l;
}

static tnode *parse_math2(ps *P)
{
    tnode *l = parse_pow(P);
    for (;;) {
        if (!l || cur(P)->type != TK_OP)
            return l;
        int op;
        switch (cur(P)->op) {
        case T_MUL: op = OP_MUL; break;
        case T_DIV: op = OP_DIV; break;
        case T_FLOORDIV: op = OP_FLOORDIV; break;
        case T_MOD: op = OP_MOD; break;
        default: return l;
        }
        const tm_token *at = cur(P);
        next(P);
        l = binop(P, at, op, l, parse_pow(P));
    }
}

static tnode *parse_concat(ps *P)
{
    const tm_token *at = cur(P);
    tnode *first = parse_math2(P);
    if (!first || !is_op(P, T_TILDE))
        return first;
    nvec args = {0};
    nv_push(P, &args, first, NULL);
    while (is_op(P, T_TILDE)) {
        next(P);
        if (!nv_push(P, &args, parse_math2(P), NULL))
            return NULL;
    }
    tnode *n = mk(P, N_CONCAT, at);
    if (!n)
        return NULL;
    n->items = args.v;
    n->nitems = args.n;
    return n;
}

static tnode *parse_math1(ps *P)
{
    tnode *l = parse_concat(P);
    while (l && (is_op(P, T_ADD) || is_op(P, T_SUB))) {
        const tm_token *at = cur(P);
        int op = cur(P)->op == T_ADD ? OP_ADD : OP_SUB;
        next(P);
        l = binop(P, at, op, l, parse_concat(P));
    }
    return l;
}

static tnode *parse_expression(ps *P, bool with_condexpr)
{
    if (!enter(P))
        return NULL;
    tnode *n = with_condexpr ? parse_condexpr(P) : parse_or(P);
    P->depth--;
    return n;
}

/* (args, kw=args): positional into items, keywords into names/items2. */
static bool parse_call_args(ps *P, tnode *n)
{
    const tm_token *open = cur(P);
    if (!expect_op(P, T_LPAREN, "("))
        return false;
    nvec pos = {0}, kw = {0};
    bool need_comma = false;
    while (!is_op(P, T_RPAREN)) {
        if (need_comma) {
            if (!expect_op(P, T_COMMA, ","))
                return false;
            if (is_op(P, T_RPAREN))
                break;
        }
        if (is_op(P, T_MUL) || is_op(P, T_POW)) {
            pfail_at(P, cur(P), "unsupported construct: *args or **kwargs in a call");
            return false;
        }
        if (cur(P)->type == TK_NAME && peek(P)->type == TK_OP && peek(P)->op == T_ASSIGN) {
            const char *key = tok_str(P, cur(P));
            next(P);
            next(P);
            if (!key || !nv_push(P, &kw, parse_expression(P, true), key))
                return false;
        } else {
            if (kw.n) {
                pfail_at(P, open, "invalid syntax for function call expression");
                return false;
            }
            if (!nv_push(P, &pos, parse_expression(P, true), NULL))
                return false;
        }
        need_comma = true;
    }
    next(P);
    n->items = pos.v;
    n->nitems = pos.n;
    n->items2 = kw.v;
    n->names = kw.names;
    n->nitems2 = n->nnames = kw.n;
    return true;
}

/* A dotted name after "|" or "is". */
static const char *dotted_name(ps *P)
{
    if (cur(P)->type != TK_NAME) {
        char d[64];
        describe(cur(P), d, sizeof d);
        return pfail_at(P, cur(P), "expected a name, got '%s'", d);
    }
    const tm_token *first = cur(P);
    size_t len = first->n;
    next(P);
    while (is_op(P, T_DOT) && peek(P)->type == TK_NAME) {
        next(P);
        len = (size_t)(cur(P)->s + cur(P)->n - first->s);
        next(P);
    }
    char *s = tm_strdup(P->a, first->s, len);
    if (!s)
        return nomem(P);
    /* "a .\n b" names the filter "a.b", as in jinja2; the slice's
     * whitespace would also put a newline into the error message. */
    char *o = s;
    for (const char *c = s; *c; c++)
        if (!strchr(" \t\n\r\f\v", *c))
            *o++ = *c;
    *o = '\0';
    return s;
}

/* Filters after "|" on node (NULL in {% filter %} and {% set %} blocks). */
static tnode *parse_filters(ps *P, tnode *node, bool start_inline)
{
    while (is_op(P, T_PIPE) || start_inline) {
        if (!start_inline)
            next(P);
        start_inline = false;
        const tm_token *at = cur(P);
        tnode *f = mk(P, N_FILTER, at);
        if (!f || !(f->name = dotted_name(P)))
            return NULL;
        if ((f->fid = tm_filter_id(f->name)) == -2)
            return pfail_at(P, at, "unsupported construct: the '%s' filter", f->name);
        if (f->fid < 0)
            return pfail_at(P, at, "no filter named '%s'", f->name);
        if (is_op(P, T_LPAREN) && !parse_call_args(P, f))
            return NULL;
        f->a = node;
        node = f;
    }
    return node;
}

static tnode *parse_test(ps *P, tnode *node)
{
    const tm_token *at = cur(P);
    next(P);  /* "is" */
    bool negated = false;
    if (is_name(P, "not")) {
        next(P);
        negated = true;
    }
    const tm_token *name_tok = cur(P);
    tnode *t = mk(P, N_TEST, at);
    if (!t || !(t->name = dotted_name(P)))
        return NULL;
    if ((t->fid = tm_test_id(t->name)) < 0)
        return pfail_at(P, name_tok, "no test named '%s'", t->name);
    t->a = node;
    const tm_token *c = cur(P);
    if (is_op(P, T_LPAREN)) {
        if (!parse_call_args(P, t))
            return NULL;
    } else if ((c->type == TK_NAME || c->type == TK_STRING || c->type == TK_INT ||
                c->type == TK_FLOAT ||
                (c->type == TK_OP && (c->op == T_LBRACKET || c->op == T_LBRACE))) &&
               !is_name(P, "else") && !is_name(P, "or") && !is_name(P, "and")) {
        if (is_name(P, "is"))
            return pfail_at(P, c, "You cannot chain multiple tests with is");
        tnode *arg = parse_primary(P, false);
        if (!arg || !(arg = parse_postfix(P, arg)))
            return NULL;
        if (!(t->items = tm_alloc(P->a, sizeof *t->items)))
            return nomem(P);
        t->items[0] = arg;
        t->nitems = 1;
    }
    if (negated) {
        tnode *n = mk(P, N_NOT, at);
        if (!n)
            return NULL;
        n->a = t;
        return n;
    }
    return t;
}

/* One [...] index: an expression or a slice a:b:c. */
static tnode *parse_subscribed(ps *P)
{
    const tm_token *at = cur(P);
    tnode *parts[3] = {0};
    if (is_op(P, T_COLON)) {
        next(P);
    } else {
        tnode *e = parse_expression(P, true);
        if (!e || !is_op(P, T_COLON))
            return e;
        next(P);
        parts[0] = e;
    }
    if (!is_op(P, T_COLON) && !is_op(P, T_RBRACKET) && !is_op(P, T_COMMA))
        if (!(parts[1] = parse_expression(P, true)))
            return NULL;
    if (is_op(P, T_COLON)) {
        next(P);
        if (!is_op(P, T_RBRACKET) && !is_op(P, T_COMMA))
            if (!(parts[2] = parse_expression(P, true)))
                return NULL;
    }
    tnode *s = mk(P, N_SLICE, at);
    if (!s)
        return NULL;
    s->a = parts[0];
    s->b = parts[1];
    s->c = parts[2];
    return s;
}

static tnode *parse_postfix(ps *P, tnode *node)
{
    while (node) {
        const tm_token *at = cur(P);
        if (is_op(P, T_DOT)) {
            next(P);
            const tm_token *a = cur(P);
            if (a->type == TK_NAME) {
                tnode *g = mk(P, N_GETATTR, at);
                if (!g || !(g->name = tok_str(P, a)))
                    return NULL;
                g->a = node;
                node = g;
                next(P);
            } else if (a->type == TK_INT) {
                tnode *g = mk(P, N_GETITEM, at), *k = mk(P, N_CONST, a);
                if (!g || !k || !(k->val = tv_int(P->a, a->i)))
                    return nomem(P);
                g->a = node;
                g->b = k;
                node = g;
                next(P);
            } else {
                return pfail_at(P, a, "expected name or number");
            }
        } else if (is_op(P, T_LBRACKET)) {
            next(P);
            nvec args = {0};
            while (!is_op(P, T_RBRACKET)) {
                if (args.n && !expect_op(P, T_COMMA, ","))
                    return NULL;
                if (!nv_push(P, &args, parse_subscribed(P), NULL))
                    return NULL;
            }
            next(P);
            tnode *g = mk(P, N_GETITEM, at);
            if (!g)
                return NULL;
            g->a = node;
            if (args.n == 1) {
                g->b = args.v[0];
            } else {
                tnode *t = mk(P, N_TUPLE, at);
                if (!t)
                    return NULL;
                t->items = args.v;
                t->nitems = args.n;
                g->b = t;
            }
            node = g;
        } else if (is_op(P, T_LPAREN)) {
            tnode *c = mk(P, N_CALL, at);
            if (!c || !parse_call_args(P, c))
                return NULL;
            c->a = node;
            node = c;
        } else {
            break;
        }
    }
    return node;
}

static tnode *parse_filter_expr(ps *P, tnode *node)
{
    while (node) {
        if (is_op(P, T_PIPE)) {
            node = parse_filters(P, node, false);
        } else if (is_name(P, "is")) {
            node = parse_test(P, node);
        } else if (is_op(P, T_LPAREN)) {
            tnode *c = mk(P, N_CALL, cur(P));
            if (!c || !parse_call_args(P, c))
                return NULL;
            c->a = node;
            node = c;
        } else {
            break;
        }
    }
    return node;
}

static tnode *parse_unary(ps *P, bool with_filter)
{
    if (!enter(P))
        return NULL;
    tnode *node;
    const tm_token *at = cur(P);
    if (is_op(P, T_SUB) || is_op(P, T_ADD)) {
        node = mk(P, is_op(P, T_SUB) ? N_NEG : N_POS, at);
        next(P);
        if (!node || !(node->a = parse_unary(P, false)))
            return NULL;
    } else {
        node = parse_primary(P, false);
    }
    node = parse_postfix(P, node);
    if (with_filter)
        node = parse_filter_expr(P, node);
    P->depth--;
    return node;
}

static tnode *parse_list(ps *P)
{
    const tm_token *at = cur(P);
    next(P);
    nvec items = {0};
    while (!is_op(P, T_RBRACKET)) {
        if (items.n && !expect_op(P, T_COMMA, ","))
            return NULL;
        if (is_op(P, T_RBRACKET))
            break;
        if (!nv_push(P, &items, parse_expression(P, true), NULL))
            return NULL;
    }
    next(P);
    tnode *n = mk(P, N_LIST, at);
    if (n) {
        n->items = items.v;
        n->nitems = items.n;
    }
    return n;
}

static tnode *parse_dict(ps *P)
{
    const tm_token *at = cur(P);
    next(P);
    nvec keys = {0}, vals = {0};
    while (!is_op(P, T_RBRACE)) {
        if (keys.n && !expect_op(P, T_COMMA, ","))
            return NULL;
        if (is_op(P, T_RBRACE))
            break;
        if (!nv_push(P, &keys, parse_expression(P, true), NULL) || !expect_op(P, T_COLON, ":") ||
            !nv_push(P, &vals, parse_expression(P, true), NULL))
            return NULL;
    }
    next(P);
    tnode *n = mk(P, N_DICT, at);
    if (n) {
        n->items = keys.v;
        n->items2 = vals.v;
        n->nitems = n->nitems2 = keys.n;
    }
    return n;
}

static tnode *parse_primary(ps *P, bool with_namespace)
{
    const tm_token *t = cur(P);
    tnode *n;
    switch (t->type) {
    case TK_NAME:
        next(P);
        if (!(n = mk(P, N_CONST, t)))
            return NULL;
        if (tok_is_name(t, "true") || tok_is_name(t, "True")) {
            n->val = &tm_true;
        } else if (tok_is_name(t, "false") || tok_is_name(t, "False")) {
            n->val = &tm_false;
        } else if (tok_is_name(t, "none") || tok_is_name(t, "None")) {
            n->val = &tm_none;
        } else if (with_namespace && is_op(P, T_DOT)) {
            next(P);
            n->kind = N_NSREF;
            if (!(n->name = tok_str(P, t)))
                return NULL;
            if (cur(P)->type != TK_NAME)
                return pfail_at(P, cur(P), "expected a name after '.'");
            const char *attr = tok_str(P, cur(P));
            if (!attr || !(n->names = tm_alloc(P->a, sizeof *n->names)))
                return nomem(P);
            n->names[0] = attr;
            n->nnames = 1;
            next(P);
        } else {
            n->kind = N_NAME;
            if (!(n->name = tok_str(P, t)))
                return NULL;
        }
        return n;
    case TK_STRING: {
        size_t len = 0;
        size_t j = P->i;
        for (; j < P->n && P->t[j].type == TK_STRING; j++)
            len += P->t[j].n;
        char *s = tm_alloc(P->a, len + 1), *o = s;
        if (!s)
            return nomem(P);
        for (; P->i < j; P->i++) {
            memcpy(o, P->t[P->i].s, P->t[P->i].n);
            o += P->t[P->i].n;
        }
        if (!(n = mk(P, N_CONST, t)) || !(n->val = tv_str_take(P->a, s, len)))
            return nomem(P);
        return n;
    }
    case TK_INT: case TK_FLOAT:
        next(P);
        if (!(n = mk(P, N_CONST, t)))
            return NULL;
        n->val = t->type == TK_INT ? tv_int(P->a, t->i) : tv_float(P->a, t->f);
        return n->val ? n : nomem(P);
    case TK_OP:
        if (t->op == T_LPAREN) {
            next(P);
            n = parse_tuple(P, false, true, NULL, true, false);
            if (!n || !expect_op(P, T_RPAREN, ")"))
                return NULL;
            return n;
        }
        if (t->op == T_LBRACKET)
            return parse_list(P);
        if (t->op == T_LBRACE)
            return parse_dict(P);
        break;
    }
    return unexpected(P);
}

static bool tuple_end(ps *P, const char *extra_end)
{
    const tm_token *t = cur(P);
    if (t->type == TK_VAR_END || t->type == TK_BLOCK_END || t->type == TK_EOF ||
        (t->type == TK_OP && t->op == T_RPAREN))
        return true;
    return extra_end && is_name(P, extra_end);
}

static tnode *parse_tuple(ps *P, bool simplified, bool with_condexpr, const char *extra_end,
                          bool explicit_parens, bool with_namespace)
{
    const tm_token *at = cur(P);
    nvec args = {0};
    bool is_tuple = false;
    for (;;) {
        if (args.n && !expect_op(P, T_COMMA, ","))
            return NULL;
        if (tuple_end(P, extra_end))
            break;
        tnode *e = simplified ? parse_primary(P, with_namespace) : parse_expression(P, with_condexpr);
        if (!nv_push(P, &args, e, NULL))
            return NULL;
        if (is_op(P, T_COMMA))
            is_tuple = true;
        else
            break;
    }
    if (!is_tuple) {
        if (args.n)
            return args.v[0];
        if (!explicit_parens) {
            char d[64];
            describe(cur(P), d, sizeof d);
            return pfail_at(P, cur(P), "expected an expression, got '%s'", d);
        }
    }
    tnode *n = mk(P, N_TUPLE, at);
    if (n) {
        n->items = args.v;
        n->nitems = args.n;
    }
    return n;
}

static bool assignable(const tnode *n)
{
    if (n->kind == N_NAME || n->kind == N_NSREF)
        return true;
    if (n->kind != N_TUPLE)
        return false;
    for (int i = 0; i < n->nitems; i++)
        if (!assignable(n->items[i]))
            return false;
    return true;
}

static tnode *parse_assign_target(ps *P, const char *extra_end, bool with_namespace)
{
    const tm_token *at = cur(P);
    tnode *t = parse_tuple(P, true, true, extra_end, false, with_namespace);
    if (t && !assignable(t))
        return pfail_at(P, at, "can't assign to this expression");
    return t;
}

/* ---- statements ---- */
static bool subparse(ps *P, const char *const *end_names, nvec *body);

/* The body of a block statement up to one of end_names; leaves the
 * cursor on that name (drop: past it). */
static bool parse_statements(ps *P, const char *const *end_names, nvec *body, bool drop,
                             const char *tag, const tm_token *tag_at)
{
    if (is_op(P, T_COLON))
        next(P);
    if (!expect_type(P, TK_BLOCK_END, "end of statement block"))
        return false;
    if (!enter(P))
        return false;
    if (!subparse(P, end_names, body))
        return false;
    P->depth--;
    if (cur(P)->type == TK_EOF) {
        char want[120] = "";
        for (int i = 0; end_names[i]; i++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s'%s'", i ? " or " : "",
                     end_names[i]);
        pfail_at(P, tag_at,
                 "unexpected end of template: the '%s' block opened here is never closed "
                 "(looking for %s)",
                 tag, want);
        return false;
    }
    if (drop)
        next(P);
    return true;
}

static bool parse_signature(ps *P, tnode *n)
{
    if (!expect_op(P, T_LPAREN, "("))
        return false;
    nvec params = {0}, defaults = {0};
    while (!is_op(P, T_RPAREN)) {
        if (params.n && !expect_op(P, T_COMMA, ","))
            return false;
        if (cur(P)->type != TK_NAME) {
            unexpected(P);
            return false;
        }
        const char *name = tok_str(P, cur(P));
        next(P);
        tnode *def = NULL;
        if (is_op(P, T_ASSIGN)) {
            next(P);
            if (!(def = parse_expression(P, true)))
                return false;
        } else if (defaults.n) {
            pfail_at(P, cur(P), "non-default argument follows default argument");
            return false;
        }
        /* params keeps only names: the node slot just has to be non-NULL */
        if (!name || !nv_push(P, &params, (tnode *)P->t, name))
            return false;
        if (def && !nv_push(P, &defaults, def, NULL))
            return false;
    }
    next(P);
    n->names = params.names;
    n->nnames = params.n;
    n->items2 = defaults.v;
    n->nitems2 = defaults.n;
    return true;
}

static tnode *parse_for(ps *P, const tm_token *at)
{
    static const char *const body_end[] = {"endfor", "else", NULL}, *const else_end[] = {"endfor", NULL};
    tnode *n = mk(P, S_FOR, at);
    if (!n || !(n->a = parse_assign_target(P, "in", false)) || !expect_name(P, "in") ||
        !(n->b = parse_tuple(P, false, false, "recursive", false, false)))
        return NULL;
    if (is_name(P, "if")) {
        next(P);
        if (!(n->c = parse_expression(P, true)))
            return NULL;
    }
    if (is_name(P, "recursive"))
        return pfail_at(P, cur(P), "unsupported construct: recursive for loops");
    nvec body = {0}, els = {0};
    P->loops++;
    if (!parse_statements(P, body_end, &body, false, "for", at))
        return NULL;
    P->loops--;
    n->items = body.v;
    n->nitems = body.n;
    if (is_name(P, "else")) {
        next(P);
        /* A loop's else runs outside the loop: no break there. */
        int loops = P->loops;
        P->loops = 0;
        bool ok = parse_statements(P, else_end, &els, true, "for", at);
        P->loops = loops;
        if (!ok)
            return NULL;
        n->items2 = els.v;
        n->nitems2 = els.n;
    } else {
        next(P);
    }
    return n;
}

static tnode *parse_if(ps *P, const tm_token *at)
{
    static const char *const body_end[] = {"elif", "else", "endif", NULL}, *const else_end[] = {"endif", NULL};
    tnode *n = mk(P, S_IF, at);
    if (!n || !(n->a = parse_tuple(P, false, false, NULL, false, false)))
        return NULL;
    nvec body = {0};
    if (!parse_statements(P, body_end, &body, false, "if", at))
        return NULL;
    n->items = body.v;
    n->nitems = body.n;
    if (is_name(P, "elif")) {
        const tm_token *elif_at = cur(P);
        next(P);
        if (!enter(P))
            return NULL;
        tnode *e = parse_if(P, elif_at);
        P->depth--;
        if (!e || !(n->items2 = tm_alloc(P->a, sizeof *n->items2)))
            return e ? nomem(P) : NULL;
        n->items2[0] = e;
        n->nitems2 = 1;
        return n;  /* the elif chain consumed the endif */
    }
    if (is_name(P, "else")) {
        next(P);
        nvec els = {0};
        if (!parse_statements(P, else_end, &els, true, "if", at))
            return NULL;
        n->items2 = els.v;
        n->nitems2 = els.n;
        return n;
    }
    next(P);
    return n;
}

static tnode *parse_set(ps *P, const tm_token *at)
{
    static const char *const end[] = {"endset", NULL};
    tnode *n = mk(P, S_SET, at);
    if (!n || !(n->a = parse_assign_target(P, NULL, true)))
        return NULL;
    if (is_op(P, T_ASSIGN)) {
        next(P);
        if (!(n->b = parse_tuple(P, false, true, NULL, false, false)))
            return NULL;
        return n;
    }
    n->kind = S_SETBLOCK;
    if (is_op(P, T_PIPE) && !(n->c = parse_filters(P, NULL, false)))
        return NULL;
    nvec body = {0};
    if (!parse_statements(P, end, &body, true, "set", at))
        return NULL;
    n->items = body.v;
    n->nitems = body.n;
    return n;
}

static tnode *parse_macro(ps *P, const tm_token *at)
{
    static const char *const end[] = {"endmacro", NULL};
    tnode *n = mk(P, S_MACRO, at);
    if (!n)
        return NULL;
    if (cur(P)->type != TK_NAME)
        return unexpected(P);
    if (!(n->name = tok_str(P, cur(P))))
        return NULL;
    next(P);
    if (!parse_signature(P, n))
        return NULL;
    /* break in a macro body cannot leave a loop around the definition. */
    int loops = P->loops;
    P->loops = 0;
    nvec body = {0};
    bool ok = parse_statements(P, end, &body, true, "macro", at);
    P->loops = loops;
    if (!ok)
        return NULL;
    n->items = body.v;
    n->nitems = body.n;
    return n;
}

static tnode *parse_call_block(ps *P, const tm_token *at)
{
    static const char *const end[] = {"endcall", NULL};
    tnode *n = mk(P, S_CALLBLOCK, at);
    if (!n)
        return NULL;
    if (is_op(P, T_LPAREN) && !parse_signature(P, n))
        return NULL;
    if (!(n->a = parse_expression(P, true)))
        return NULL;
    if (n->a->kind != N_CALL)
        return pfail_at(P, at, "expected call");
    int loops = P->loops;
    P->loops = 0;
    nvec body = {0};
    bool ok = parse_statements(P, end, &body, true, "call", at);
    P->loops = loops;
    if (!ok)
        return NULL;
    n->items = body.v;
    n->nitems = body.n;
    return n;
}

static tnode *parse_simple_block(ps *P, const tm_token *at, int kind, const char *tag,
                                 const char *const *end)
{
    tnode *n = mk(P, kind, at);
    nvec body = {0};
    if (!n || !parse_statements(P, end, &body, true, tag, at))
        return NULL;
    n->items = body.v;
    n->nitems = body.n;
    return n;
}

static tnode *parse_statement(ps *P)
{
    static const char *const endfilter[] = {"endfilter", NULL}, *const endwith[] = {"endwith", NULL},
                             *const endgen[] = {"endgeneration", NULL};
    const tm_token *at = cur(P);
    if (at->type != TK_NAME)
        return pfail_at(P, at, "tag name expected");
    char name[48];
    snprintf(name, sizeof name, "%.*s", (int)(at->n > 40 ? 40 : at->n), at->s);
    next(P);
    if (!strcmp(name, "for"))
        return parse_for(P, at);
    if (!strcmp(name, "if"))
        return parse_if(P, at);
    if (!strcmp(name, "set"))
        return parse_set(P, at);
    if (!strcmp(name, "macro"))
        return parse_macro(P, at);
    if (!strcmp(name, "call"))
        return parse_call_block(P, at);
    if (!strcmp(name, "filter")) {
        tnode *f = parse_filters(P, NULL, true);
        tnode *n = f ? parse_simple_block(P, at, S_FILTERBLOCK, "filter", endfilter) : NULL;
        if (n)
            n->c = f;
        return n;
    }
    if (!strcmp(name, "with")) {
        /* Targets and values ride in two tuples: with a = 1, b = 2. */
        tnode *n = mk(P, S_WITH, at), *targets = mk(P, N_TUPLE, at), *values = mk(P, N_TUPLE, at);
        nvec tv = {0}, vv = {0}, body = {0};
        if (!n || !targets || !values)
            return NULL;
        while (cur(P)->type != TK_BLOCK_END) {
            if (tv.n && !expect_op(P, T_COMMA, ","))
                return NULL;
            tnode *t = parse_assign_target(P, NULL, false);
            if (!t || !nv_push(P, &tv, t, NULL) || !expect_op(P, T_ASSIGN, "=") ||
                !nv_push(P, &vv, parse_expression(P, true), NULL))
                return NULL;
        }
        if (!parse_statements(P, endwith, &body, true, "with", at))
            return NULL;
        targets->items = tv.v;
        targets->nitems = tv.n;
        values->items = vv.v;
        values->nitems = vv.n;
        n->a = targets;
        n->b = values;
        n->items = body.v;
        n->nitems = body.n;
        return n;
    }
    if (!strcmp(name, "generation"))  /* transformers' assistant-mask tag */
        return parse_simple_block(P, at, S_SCOPE, "generation", endgen);
    if (!strcmp(name, "print")) {
        tnode *n = mk(P, S_BODY, at);
        nvec items = {0};
        if (!n)
            return NULL;
        while (cur(P)->type != TK_BLOCK_END) {
            if (items.n && !expect_op(P, T_COMMA, ","))
                return NULL;
            tnode *p = mk(P, S_PRINT, cur(P));
            if (!p || !(p->a = parse_expression(P, true)) || !nv_push(P, &items, p, NULL))
                return NULL;
        }
        n->items = items.v;
        n->nitems = items.n;
        return n;
    }
    if (!strcmp(name, "break") || !strcmp(name, "continue")) {
        if (!P->loops)
            return pfail_at(P, at, "'%s' outside of a for loop", name);
        return mk(P, name[0] == 'b' ? S_BREAK : S_CONTINUE, at);
    }
    static const char *const unsupported[] = {"include", "extends", "block", "import", "from",
                                              "autoescape", "trans", "do", NULL};
    for (int i = 0; unsupported[i]; i++)
        if (!strcmp(name, unsupported[i]))
            return pfail_at(P, at, "unsupported construct: the '%s' tag", name);
    return pfail_at(P, at, "unknown tag '%s'", name);
}

static bool subparse(ps *P, const char *const *end_names, nvec *body)
{
    for (;;) {
        const tm_token *t = cur(P);
        switch (t->type) {
        case TK_EOF:
            return true;
        case TK_DATA: {
            tnode *d = mk(P, S_DATA, t);
            if (!d || !(d->val = tv_str(P->a, t->s, t->n)))
                return nomem(P), false;
            if (!nv_push(P, body, d, NULL))
                return false;
            next(P);
            break;
        }
        case TK_VAR_BEGIN: {
            next(P);
            tnode *p = mk(P, S_PRINT, t);
            if (!p || !(p->a = parse_tuple(P, false, true, NULL, false, false)) ||
                !expect_type(P, TK_VAR_END, "end of print statement") || !nv_push(P, body, p, NULL))
                return false;
            break;
        }
        case TK_BLOCK_BEGIN: {
            next(P);
            if (end_names)
                for (int i = 0; end_names[i]; i++)
                    if (is_name(P, end_names[i]))
                        return true;
            const tm_token *at = cur(P);
            /* An end tag of some other block, out of place. */
            if (at->type == TK_NAME && ((at->n > 3 && !memcmp(at->s, "end", 3)) ||
                                        tok_is_name(at, "else") || tok_is_name(at, "elif"))) {
                if (end_names)
                    pfail_at(P, at, "unexpected '%.*s': the innermost open block needs '%s'",
                             (int)(at->n > 40 ? 40 : at->n), at->s, end_names[0]);
                else
                    pfail_at(P, at, "unexpected '%.*s': no block is open",
                             (int)(at->n > 40 ? 40 : at->n), at->s);
                return false;
            }
            tnode *s = parse_statement(P);
            if (!s || !nv_push(P, body, s, NULL) ||
                !expect_type(P, TK_BLOCK_END, "end of statement block"))
                return false;
            break;
        }
        default:
            unexpected(P);
            return false;
        }
    }
}

int tm_parse(tm_arena *a, const tm_token *toks, size_t n, tnode **out, qlm_err *err)
{
    ps P = {.t = toks, .n = n, .a = a, .err = err};
    nvec body = {0};
    if (!subparse(&P, NULL, &body))
        return P.code ? P.code : qlm_fail(err, QLM_ELOAD, "template: syntax error");
    tnode *root = mk(&P, S_BODY, &toks[0]);
    if (!root)
        return P.code;
    root->items = body.v;
    root->nitems = body.n;
    *out = root;
    return QLM_OK;
}
