/* tmpl_int.h - what the template files (tmpl_*.c) share: the arena, the
 * value model, the syntax tree and the render state.  Not for other users:
 * the interface is template.h. */
#ifndef QLM_TMPL_INT_H
#define QLM_TMPL_INT_H

#include <locale.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "template.h"

/* ---- arena ----
 * Everything a parse or a render makes lives in one arena freed at once:
 * an error anywhere in a render then leaks nothing, and sharing values
 * needs no reference counts (the sandbox makes lists and dicts read-only,
 * so a value once built never changes -- namespaces excepted). */
typedef struct tm_chunk tm_chunk;
typedef struct tm_arena {
    tm_chunk *head;
    size_t total;   /* bytes handed out */
    size_t cap;     /* 0: unbounded */
    bool over_cap;  /* the last failure was the cap, not malloc */
} tm_arena;

void *tm_alloc(tm_arena *a, size_t n);   /* zeroed; NULL on failure */
char *tm_strdup(tm_arena *a, const char *s, size_t n);
void tm_arena_free(tm_arena *a);

/* A growing byte buffer, in an arena (a == NULL: malloc'd, for the final
 * output), refusing to grow past limit (0: no limit). */
typedef struct tm_buf {
    char *p;
    size_t n, cap, limit;
    tm_arena *a;
    bool failed, over_limit;
} tm_buf;

bool tb_put(tm_buf *b, const char *s, size_t n);
bool tb_putc(tm_buf *b, char c);
bool tb_puts(tm_buf *b, const char *s);
bool tb_printf(tm_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- values ---- */
typedef enum tv_type {
    TV_UNDEF, TV_NONE, TV_BOOL, TV_INT, TV_FLOAT, TV_STR, TV_LIST, TV_DICT,
    TV_NS,      /* namespace(): a dict whose attributes can be set */
    TV_LOOP,    /* the loop variable of a for */
    TV_MACRO,   /* a macro, or the caller of a call block */
    TV_FUNC,    /* a global function (range, namespace, raise_exception..) */
    TV_METHOD,  /* a method bound to its object (s.strip, d.items..) */
} tv_type;

enum { TVF_TUPLE = 1,   /* list that is a tuple: prints (a, b), != list */
       TVF_MARKUP = 2 }; /* string marked safe (Markup): + escapes the other */

typedef struct tm_loop tm_loop;
typedef struct tm_macro tm_macro;

struct qlm_tval {
    uint8_t type;
    uint8_t flags;
    bool ascii;           /* TV_STR: all bytes < 0x80 (set when made) */
    union {
        bool b;
        int64_t i;
        double f;
        struct { char *s; size_t n; } str;    /* NUL-terminated too */
        struct { qlm_tval **v; size_t n, cap; } list;
        /* TV_DICT and TV_NS: entries in insertion order, plus a hash
         * index (slot = entry + 1) once there are enough to need one */
        struct { qlm_tval **k, **v; size_t n, cap; uint32_t *idx; size_t icap; } dict;
        tm_loop *loop;
        tm_macro *macro;
        struct { int id; qlm_tval *self; } fn;  /* TV_FUNC, TV_METHOD */
        /* TV_UNDEF: why it is undefined, for the error when it is used:
         * a missing name (obj NULL), an attribute or item of obj, or a
         * ready-made hint. */
        struct { qlm_tval *obj; qlm_tval *name; const char *hint; } undef;
    };
};

extern qlm_tval tm_none, tm_true, tm_false;  /* shared, never changed */

qlm_tval *tv_new(tm_arena *a, int type);
qlm_tval *tv_int(tm_arena *a, int64_t i);
qlm_tval *tv_float(tm_arena *a, double f);
static inline qlm_tval *tv_bool(bool b) { return b ? &tm_true : &tm_false; }
qlm_tval *tv_str(tm_arena *a, const char *s, size_t n);      /* copies */
qlm_tval *tv_str_take(tm_arena *a, char *s, size_t n);       /* s in a */
qlm_tval *tv_list(tm_arena *a, size_t cap);
qlm_tval *tv_dict(tm_arena *a, size_t cap, int type);        /* DICT or NS */
bool tv_push(tm_arena *a, qlm_tval *list, qlm_tval *v);
/* dict[key] = v, key compared with Python equality; replaces in place. */
bool tv_dict_set(tm_arena *a, qlm_tval *d, qlm_tval *key, qlm_tval *v);
qlm_tval *tv_dict_get(const qlm_tval *d, const qlm_tval *key);
qlm_tval *tv_dict_gets(const qlm_tval *d, const char *key, size_t n);

/* The part of v that cannot be a dict key (a list or dict, maybe inside a
 * tuple), or NULL. */
const qlm_tval *tv_unhashable(const qlm_tval *v);
bool tv_truthy(const qlm_tval *v);
bool tv_eq(const qlm_tval *a, const qlm_tval *b);
bool tv_is_num(const qlm_tval *v);     /* bool, int or float */
double tv_num(const qlm_tval *v);
const char *tv_typename(const qlm_tval *v);   /* Python's type(v).__name__ */

/* Python's repr() of a float (shortest round-trip digits). */
void tm_float_repr(double f, char out[32]);

/* UTF-8 the way Python sees a str: one code point per valid sequence,
 * and each byte of an invalid one counted alone. */
size_t tm_u8_step(const char *s, size_t n);           /* bytes of the cp at s */
uint32_t tm_u8_cp(const char *s, size_t n, size_t *len);
size_t tm_u8_count(const qlm_tval *str);
bool tm_py_space(uint32_t cp);                        /* str.isspace() */

/* ---- syntax tree ---- */
typedef enum tn_kind {
    /* expressions */
    N_CONST, N_NAME, N_GETATTR, N_GETITEM, N_SLICE, N_CALL, N_FILTER, N_TEST,
    N_NOT, N_NEG, N_POS, N_BINOP, N_AND, N_OR, N_CONCAT, N_COMPARE, N_COND,
    N_LIST, N_TUPLE, N_DICT, N_NSREF,
    /* statements */
    S_BODY, S_DATA, S_PRINT, S_FOR, S_IF, S_SET, S_SETBLOCK, S_MACRO,
    S_CALLBLOCK, S_FILTERBLOCK, S_BREAK, S_CONTINUE, S_WITH, S_SCOPE,
} tn_kind;

enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW,
       OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_IN, OP_NOTIN };

typedef struct tnode tnode;
struct tnode {
    uint8_t kind, op;
    bool flag;                 /* S_FOR: recursive (refused); N_TEST: negated */
    int line, col;
    tnode *a, *b, *c;
    tnode **items;  int nitems;   /* args, elements, dict keys, body */
    tnode **items2; int nitems2;  /* kwarg values, dict values, else body,
                                     macro defaults (aligned to the end) */
    const char **names; int nnames; /* kwarg names, macro parameters */
    uint8_t *ops;                 /* N_COMPARE: one per operand */
    const char *name;             /* identifier, attribute, filter, test */
    int fid;                      /* filter or test id */
    qlm_tval *val;                /* N_CONST, S_DATA */
};

struct qlm_tmpl {
    tm_arena ar;
    tnode *body;
};

struct qlm_tmpl_vars {
    tm_arena ar;
    qlm_tval *dict;
    int64_t now;
    bool now_set;
    qlm_tmpl_limits lim;
};

/* ---- lexer and parser (tmpl_lex.c, tmpl_parse.c) ---- */
enum tk_type {
    TK_EOF, TK_DATA, TK_VAR_BEGIN, TK_VAR_END, TK_BLOCK_BEGIN, TK_BLOCK_END,
    TK_NAME, TK_STRING, TK_INT, TK_FLOAT, TK_OP,
};

/* Operators, in the order the lexer tries them (longest first). */
enum { T_FLOORDIV, T_POW, T_EQ, T_NE, T_GE, T_LE, T_ADD, T_SUB, T_DIV,
       T_MUL, T_MOD, T_TILDE, T_LBRACKET, T_RBRACKET, T_LPAREN, T_RPAREN,
       T_LBRACE, T_RBRACE, T_GT, T_LT, T_ASSIGN, T_DOT, T_COLON, T_PIPE,
       T_COMMA, T_SEMICOLON };

typedef struct tm_token {
    uint8_t type, op;
    int line, col;
    const char *s;  size_t n;  /* text (DATA, NAME, STRING after unescaping) */
    int64_t i;
    double f;
} tm_token;

/* Cuts src into tokens (in a): data, tags and what is inside them, with
 * whitespace control, trim_blocks and lstrip_blocks applied.  Fails with
 * QLM_ELOAD "template:LINE:COL: ...". */
int tm_lex(tm_arena *a, const char *src, size_t len, tm_token **out, size_t *n,
           qlm_err *err);
int tm_parse(tm_arena *a, const tm_token *toks, size_t n, tnode **out, qlm_err *err);

/* ---- rendering (tmpl_eval.c, tmpl_builtins.c) ---- */
typedef struct tm_frame tm_frame;
struct tm_frame {
    tm_frame *parent;
    const char **names;
    qlm_tval **vals;
    int n, cap;
};

struct tm_loop {
    qlm_tval **items;
    size_t n, i;
    qlm_tval *changed_last;   /* loop.changed()'s memory; NULL before a call */
};

struct tm_macro {
    const tnode *node;        /* S_MACRO, or S_CALLBLOCK for a caller */
    tm_frame *closure;
    const char *name;
};

typedef struct tm_rt {
    tm_arena ar;
    qlm_err *err;
    bool failed;
    int code;                /* the error's code, once failed */
    uint64_t steps, max_steps;
    int depth;               /* nested evaluations and bodies */
    int macro_depth;         /* nested macro calls */
    tm_buf *out;
    tm_frame *root;
    const qlm_tmpl_vars *const *vars;
    int nvars;
    int64_t now;
    locale_t loc;            /* C.UTF-8 for case mapping, made on demand */
    bool loc_tried;
} tm_rt;

/* Call arguments, positional then keyword. */
typedef struct tm_args {
    qlm_tval **pos; int npos;
    const char **kwn; qlm_tval **kwv; int nkw;
} tm_args;

/* Records the first error (QLM_EUSAGE) and returns NULL. */
qlm_tval *tm_fail(tm_rt *rt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The error for an arena or buffer failure: memory limit or out of memory. */
qlm_tval *tm_nomem(tm_rt *rt);
/* The UndefinedError a use of u raises. */
qlm_tval *tm_undef_error(tm_rt *rt, const qlm_tval *u);
qlm_tval *tm_mkundef(tm_rt *rt, qlm_tval *obj, qlm_tval *name, const char *hint);
bool tm_step(tm_rt *rt);   /* counts one step; false past the limit */

/* str(v) and repr(v) appended to b, and str(v) as a value (v itself for a
 * string).  False (error recorded) when memory runs out. */
bool tm_str_to(tm_rt *rt, tm_buf *b, const qlm_tval *v);
bool tm_repr_to(tm_rt *rt, tm_buf *b, const qlm_tval *v);
qlm_tval *tm_to_str(tm_rt *rt, qlm_tval *v);
/* json.dumps(v, ...) as transformers' tojson calls it. */
typedef struct tm_json_opts {
    const char *indent;   /* NULL: one line */
    const char *item_sep, *key_sep;
    bool sort_keys, ensure_ascii;
} tm_json_opts;
bool tm_json_to(tm_rt *rt, tm_buf *b, const qlm_tval *v, const tm_json_opts *o, int depth);
/* Ordering a < b as Python has it; false and an error when the types do
 * not compare.  *res is <0, 0, >0. */
bool tm_compare(tm_rt *rt, const qlm_tval *a, const qlm_tval *b, int op, int *res);

/* The members of an iterable (list, tuple, dict keys, string characters,
 * nothing for undefined) as a list value; error for the rest. */
qlm_tval *tm_iterate(tm_rt *rt, qlm_tval *v);
/* jinja2's getattr (attribute, then item) and getitem (item, then
 * attribute): undefined when missing. */
qlm_tval *tm_getattr(tm_rt *rt, qlm_tval *obj, const char *name, size_t n);
qlm_tval *tm_getitem(tm_rt *rt, qlm_tval *obj, qlm_tval *key);
qlm_tval *tm_call(tm_rt *rt, qlm_tval *fn, tm_args *a);
/* Truthiness of a test / result of a filter by id (tmpl_builtins.c). */
int tm_filter_id(const char *name);
int tm_test_id(const char *name);
qlm_tval *tm_apply_filter(tm_rt *rt, int id, qlm_tval *v, tm_args *a);
int tm_apply_test(tm_rt *rt, int id, qlm_tval *v, tm_args *a);   /* -1 error */
qlm_tval *tm_call_method(tm_rt *rt, int id, qlm_tval *self, tm_args *a);
qlm_tval *tm_call_global(tm_rt *rt, int id, tm_args *a);
/* Method id for obj.name, or -1. */
int tm_method_id(const qlm_tval *obj, const char *name, size_t n);
/* Global function id for a name, or -1. */
int tm_global_id(const char *name);
qlm_tval *tm_invoke_macro(tm_rt *rt, qlm_tval *m, tm_args *a);
qlm_tval *tm_arith(tm_rt *rt, int op, qlm_tval *a, qlm_tval *b);
qlm_tval *tm_contains(tm_rt *rt, qlm_tval *container, qlm_tval *item);  /* bool */
/* Case mapping of one code point (Python's simple mapping via C.UTF-8). */
uint32_t tm_upper(tm_rt *rt, uint32_t cp);
uint32_t tm_lower(tm_rt *rt, uint32_t cp);

/* Argument pos, or the keyword argument name (either may be -1/NULL). */
qlm_tval *tm_arg(tm_args *a, int pos, const char *name);

/* ---- strings and small makers shared by built-ins (tmpl_str.c) ----
 * Each returns NULL with the error recorded. */
qlm_tval *tm_mkstr(tm_rt *rt, const char *s, size_t n);
qlm_tval *tm_buf_str(tm_rt *rt, tm_buf *b);   /* the buffer as a string value */
qlm_tval *tm_mklist(tm_rt *rt, size_t cap);
qlm_tval *tm_mkint(tm_rt *rt, int64_t i);
qlm_tval *tm_str_of(tm_rt *rt, qlm_tval *v);  /* str(v); undefined gives "" */
bool tm_want_str(tm_rt *rt, qlm_tval *v, const char *what);
bool tm_want_int(tm_rt *rt, qlm_tval *v, int64_t *out);
void tm_put_cp(tm_buf *b, uint32_t cp);

typedef struct tm_cps {  /* a string as code points */
    uint32_t *c;
    size_t n;
} tm_cps;
bool tm_to_cps(tm_rt *rt, const qlm_tval *s, tm_cps *out);
qlm_tval *tm_from_cps(tm_rt *rt, const uint32_t *c, size_t n);

enum { C_UPPER, C_LOWER, C_CAPITALIZE, C_TITLE_FILTER, C_TITLE, C_SWAP };
qlm_tval *tm_str_case(tm_rt *rt, qlm_tval *s, int mode);
qlm_tval *tm_str_strip(tm_rt *rt, qlm_tval *s, qlm_tval *chars, bool left, bool right);
qlm_tval *tm_str_splitlines(tm_rt *rt, qlm_tval *s, bool keepends);
qlm_tval *tm_str_replace(tm_rt *rt, qlm_tval *s, qlm_tval *old, qlm_tval *new_, int64_t count);
/* Pads to width code points: how 0 centres, <0 left-justifies, >0 right. */
qlm_tval *tm_str_pad(tm_rt *rt, qlm_tval *s, int64_t width, qlm_tval *fill, int how);
int tm_case_test(tm_rt *rt, qlm_tval *v, bool want_lower);  /* islower/isupper */
qlm_tval *tm_pairs_of(tm_rt *rt, qlm_tval *dict);           /* [(k, v), ...] */

#define TM_MAX_DEPTH 100          /* nesting of bodies and macro calls */
#define TM_MAX_PARSE_DEPTH 200    /* nesting of expressions and blocks */
#define TM_MAX_JSON_DEPTH 256

#endif
