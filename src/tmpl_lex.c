/* tmpl_lex.c - template source to tokens, following jinja2's lexer rule
 * for rule: newlines normalised to "\n" and one trailing newline dropped;
 * "{%-"/"-%}" (and the {{ }} and {# #} forms) strip whitespace on that
 * side; trim_blocks drops the newline after a block or comment tag;
 * lstrip_blocks drops spaces before a block or comment tag that starts
 * its line, unless the tag opens with "{%+". */
#include "tmpl_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unicode.h"

#define MAX_TOKENS (4u << 20)
#define MAX_BRACKETS 256

typedef struct lx {
    const char *s;
    size_t n, pos;
    /* line/column of cur_pos, advanced monotonically */
    size_t cur_pos;
    int line, col;
    bool line_starting;   /* the last match ended with a newline */
    tm_arena *a;
    tm_token *t;
    size_t nt, cap;
    qlm_err *err;
    int code;             /* the error recorded, once there is one */
} lx;

static void locate(lx *L, size_t pos, int *line, int *col)
{
    if (pos < L->cur_pos) {  /* only error paths go back */
        L->cur_pos = 0;
        L->line = L->col = 1;
    }
    for (; L->cur_pos < pos && L->cur_pos < L->n; L->cur_pos++) {
        unsigned char c = (unsigned char)L->s[L->cur_pos];
        if (c == '\n') {
            L->line++;
            L->col = 1;
        } else if ((c & 0xc0) != 0x80) {
            L->col++;  /* columns count code points */
        }
    }
    *line = L->line;
    *col = L->col;
}

static int lfail(lx *L, size_t pos, const char *fmt, const char *arg)
{
    int line, col;
    char what[200];
    locate(L, pos, &line, &col);
    snprintf(what, sizeof what, fmt, arg);
    return L->code = qlm_fail(L->err, QLM_ELOAD, "template:%d:%d: %s", line, col, what);
}

static tm_token *emit(lx *L, int type, size_t pos)
{
    if (L->nt == L->cap) {
        if (L->cap >= MAX_TOKENS)
            return NULL;
        size_t cap = L->cap ? L->cap * 2 : 256;
        tm_token *t = tm_alloc(L->a, cap * sizeof *t);
        if (!t)
            return NULL;
        if (L->nt)
            memcpy(t, L->t, L->nt * sizeof *t);
        L->t = t;
        L->cap = cap;
    }
    tm_token *t = &L->t[L->nt++];
    memset(t, 0, sizeof *t);
    t->type = (uint8_t)type;
    locate(L, pos, &t->line, &t->col);
    return t;
}

static int too_big(lx *L, size_t pos)
{
    if (L->cap >= MAX_TOKENS)
        return lfail(L, pos, "%s", "template has too many tokens");
    return L->code = qlm_fail(L->err, QLM_ERUNTIME, "template: out of memory");
}

/* Python's str.isspace() on the code point at s[i]; *k gets its length. */
static bool space_at(const char *s, size_t n, size_t i, size_t *k)
{
    uint32_t cp = tm_u8_cp(s + i, n - i, k);
    return tm_py_space(cp);
}

/* Length of text[0..n) without trailing whitespace (str.rstrip()). */
static size_t rstrip_len(const char *s, size_t n)
{
    size_t keep = 0, i = 0, k;
    while (i < n) {
        bool sp = space_at(s, n, i, &k);
        i += k;
        if (!sp)
            keep = i;
    }
    return keep;
}

static size_t skip_space(const char *s, size_t n, size_t i)
{
    size_t k;
    while (i < n && space_at(s, n, i, &k))
        i += k;
    return i;
}

/* Data before a tag, with "-" stripping or lstrip_blocks applied. */
static int emit_data(lx *L, size_t from, size_t to, char sign, bool lstrip_ok)
{
    const char *text = L->s + from;
    size_t n = to - from;
    if (sign == '-') {
        n = rstrip_len(text, n);
    } else if (sign != '+' && lstrip_ok) {
        size_t l_pos = n;
        while (l_pos > 0 && text[l_pos - 1] != '\n')
            l_pos--;
        if ((l_pos > 0 || L->line_starting) && l_pos < n &&
            skip_space(text, n, l_pos) == n)
            n = l_pos;
    }
    if (!n)
        return 0;
    tm_token *t = emit(L, TK_DATA, from);
    if (!t)
        return too_big(L, from);
    t->s = text;
    t->n = n;
    return 0;
}

static bool starts(const lx *L, size_t pos, const char *w)
{
    size_t k = strlen(w);
    return pos <= L->n && L->n - pos >= k && memcmp(L->s + pos, w, k) == 0;
}

/* The end of a block tag ("%}") at pos, with its whitespace control: the
 * position after it, or 0 if there is none. */
static size_t block_end_at(const lx *L, size_t pos)
{
    if (starts(L, pos, "+%}"))
        return pos + 3;
    if (starts(L, pos, "-%}"))
        return skip_space(L->s, L->n, pos + 3);
    if (starts(L, pos, "%}"))
        return pos + 2 + (pos + 2 < L->n && L->s[pos + 2] == '\n');
    return 0;
}

static bool is_name_start(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}

static bool is_name_char(unsigned char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Digits with single underscores between them, as in 1_000. */
static size_t digits(const lx *L, size_t p)
{
    size_t start = p;
    while (p < L->n && is_digit(L->s[p])) {
        p++;
        if (p + 1 < L->n && L->s[p] == '_' && is_digit(L->s[p + 1]))
            p++;
    }
    return p - start;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* A string literal at pos: its unescaped text (Python's unicode-escape,
 * as jinja2 decodes it).  Returns the position after it, or 0. */
static size_t lex_string(lx *L, size_t pos, tm_token *t)
{
    char q = L->s[pos];
    size_t p = pos + 1;
    while (p < L->n && L->s[p] != q)
        p += L->s[p] == '\\' ? 2 : 1;
    if (p >= L->n) {
        lfail(L, pos, "%s", "unterminated string");
        return 0;
    }
    size_t end = p;
    char *out = tm_alloc(L->a, end - pos + 1), *o = out;
    if (!out) {
        too_big(L, pos);
        return 0;
    }
    for (p = pos + 1; p < end;) {
        char c = L->s[p];
        if (c != '\\') {
            *o++ = c;
            p++;
            continue;
        }
        char e = L->s[p + 1];
        p += 2;
        uint32_t cp;
        int want = 0;
        switch (e) {
        case '\n': continue;  /* backslash-newline continues the line */
        case '\\': *o++ = '\\'; continue;
        case '\'': *o++ = '\''; continue;
        case '"': *o++ = '"'; continue;
        case 'a': *o++ = '\a'; continue;
        case 'b': *o++ = '\b'; continue;
        case 'f': *o++ = '\f'; continue;
        case 'n': *o++ = '\n'; continue;
        case 'r': *o++ = '\r'; continue;
        case 't': *o++ = '\t'; continue;
        case 'v': *o++ = '\v'; continue;
        case 'x': want = 2; break;
        case 'u': want = 4; break;
        case 'U': want = 8; break;
        case 'N':
            lfail(L, p - 2, "%s", "unsupported \\N{...} escape in string");
            return 0;
        default:
            if (e >= '0' && e <= '7') {
                cp = (uint32_t)(e - '0');
                for (int i = 0; i < 2 && p < end && L->s[p] >= '0' && L->s[p] <= '7'; i++)
                    cp = cp * 8 + (uint32_t)(L->s[p++] - '0');
                goto put_cp;
            }
            /* Python keeps an unknown escape as it is. */
            *o++ = '\\';
            p--;
            continue;
        }
        cp = 0;
        for (int i = 0; i < want; i++) {
            int h = p < end ? hexval(L->s[p]) : -1;
            if (h < 0) {
                lfail(L, pos, "truncated \\%s escape in string",
                      e == 'x' ? "xXX" : e == 'u' ? "uXXXX" : "UXXXXXXXX");
                return 0;
            }
            cp = cp * 16 + (uint32_t)h;
            p++;
        }
        if (cp > 0x10ffff) {
            lfail(L, pos, "%s", "illegal Unicode character in string");
            return 0;
        }
    put_cp:
        if (cp >= 0xd800 && cp < 0xe000)
            cp = 0xfffd;  /* no UTF-8 form for a surrogate */
        {
            char enc[4];
            size_t k = qlm_utf8_encode(cp, enc);
            memcpy(o, enc, k);  /* each escape is at least as long as its UTF-8 */
            o += k;
        }
    }
    *o = 0;
    t->type = TK_STRING;
    t->s = out;
    t->n = (size_t)(o - out);
    return end + 1;
}

/* A number at pos (float tried first, as jinja2 does).  Returns the
 * position after it, or 0 if none starts there. */
static size_t lex_number(lx *L, size_t pos, tm_token *t)
{
    size_t p = pos, d = digits(L, p);
    bool after_dot = pos > 0 && L->s[pos - 1] == '.';
    if (d && !after_dot) {
        size_t q = p + d, f = 0;
        bool is_float = false;
        if (q < L->n && L->s[q] == '.' && (f = digits(L, q + 1)) > 0) {
            q += 1 + f;
            is_float = true;
        }
        if (q < L->n && (L->s[q] == 'e' || L->s[q] == 'E')) {
            size_t r = q + 1;
            if (r < L->n && (L->s[r] == '+' || L->s[r] == '-'))
                r++;
            size_t ed = digits(L, r);
            if (ed) {
                q = r + ed;
                is_float = true;
            }
        }
        if (is_float) {
            char tmp[128];
            size_t k = 0;
            for (size_t i = pos; i < q && k < sizeof tmp - 1; i++)
                if (L->s[i] != '_')
                    tmp[k++] = L->s[i];
            tmp[k] = 0;
            t->type = TK_FLOAT;
            t->f = strtod(tmp, NULL);
            return q;
        }
    }
    if (!d)
        return 0;
    /* Integers: 0b.., 0o.., 0x.., decimal, or zeros. */
    int base = 10;
    size_t q = pos;
    if (L->s[q] == '0' && q + 1 < L->n) {
        char b = (char)(L->s[q + 1] | 0x20);
        base = b == 'b' ? 2 : b == 'o' ? 8 : b == 'x' ? 16 : 10;
    }
    uint64_t v = 0;
    bool overflow = false;
    if (base != 10) {
        size_t r = q + 2, nd = 0;
        for (;;) {
            if (r < L->n && L->s[r] == '_' && r + 1 < L->n && hexval(L->s[r + 1]) >= 0 &&
                hexval(L->s[r + 1]) < base)
                r++;
            int h = r < L->n ? hexval(L->s[r]) : -1;
            if (h < 0 || h >= base)
                break;
            if (v > (UINT64_MAX - (uint64_t)h) / (uint64_t)base)
                overflow = true;
            v = v * (uint64_t)base + (uint64_t)h;
            r++;
            nd++;
        }
        if (nd) {
            q = r;
        } else {
            base = 10;  /* just "0" followed by a name */
        }
    }
    if (base == 10) {
        if (L->s[q] == '0') {
            q++;
            while (q < L->n && (L->s[q] == '0' || (L->s[q] == '_' && q + 1 < L->n && L->s[q + 1] == '0')))
                q++;
        } else {
            size_t e = q + digits(L, q);
            for (; q < e; q++) {
                if (L->s[q] == '_')
                    continue;
                uint64_t dgt = (uint64_t)(L->s[q] - '0');
                if (v > (UINT64_MAX - dgt) / 10)
                    overflow = true;
                v = v * 10 + dgt;
            }
        }
    }
    if (overflow || v > INT64_MAX) {
        lfail(L, pos, "%s", "integer literal too large");
        return 0;
    }
    t->type = TK_INT;
    t->i = (int64_t)v;
    return q;
}

static const char *const ops[] = {
    [T_FLOORDIV] = "//", [T_POW] = "**", [T_EQ] = "==", [T_NE] = "!=", [T_GE] = ">=",
    [T_LE] = "<=", [T_ADD] = "+", [T_SUB] = "-", [T_DIV] = "/", [T_MUL] = "*",
    [T_MOD] = "%", [T_TILDE] = "~", [T_LBRACKET] = "[", [T_RBRACKET] = "]",
    [T_LPAREN] = "(", [T_RPAREN] = ")", [T_LBRACE] = "{", [T_RBRACE] = "}",
    [T_GT] = ">", [T_LT] = "<", [T_ASSIGN] = "=", [T_DOT] = ".", [T_COLON] = ":",
    [T_PIPE] = "|", [T_COMMA] = ",", [T_SEMICOLON] = ";",
};

/* Tokens inside {{ }} or {% %} from pos up to and including the end tag;
 * returns the position after it, or 0 on error. */
static size_t lex_tag(lx *L, size_t pos, bool block)
{
    char stack[MAX_BRACKETS];
    int depth = 0;
    for (;;) {
        if (pos >= L->n) {
            lfail(L, pos, "unexpected end of template, expected '%s'", block ? "%}" : "}}");
            return 0;
        }
        if (!depth) {
            size_t end = 0;
            if (block)
                end = block_end_at(L, pos);
            else if (starts(L, pos, "-}}"))
                end = skip_space(L->s, L->n, pos + 3);
            else if (starts(L, pos, "}}"))
                end = pos + 2;
            if (end) {
                if (!emit(L, block ? TK_BLOCK_END : TK_VAR_END, pos)) {
                    too_big(L, pos);
                    return 0;
                }
                L->line_starting = L->s[end - 1] == '\n';
                return end;
            }
        }
        unsigned char c = (unsigned char)L->s[pos];
        size_t k;
        if (space_at(L->s, L->n, pos, &k)) {
            pos += k;
            continue;
        }
        tm_token *t = emit(L, TK_OP, pos);
        if (!t) {
            too_big(L, pos);
            return 0;
        }
        size_t next;
        if (is_digit((char)c)) {
            if (!(next = lex_number(L, pos, t)))
                return 0;
        } else if (is_name_start(c)) {
            next = pos;
            while (next < L->n && is_name_char((unsigned char)L->s[next]))
                next++;
            t->type = TK_NAME;
            t->s = L->s + pos;
            t->n = next - pos;
        } else if (c == '"' || c == '\'') {
            if (!(next = lex_string(L, pos, t)))
                return 0;
        } else {
            int op = -1;
            for (int i = 0; i < (int)(sizeof ops / sizeof *ops); i++)
                if (starts(L, pos, ops[i])) {
                    op = i;
                    break;
                }
            if (op < 0) {
                char ch[8];
                snprintf(ch, sizeof ch, c < 0x20 || c >= 0x7f ? "\\x%02x" : "%c", c);
                lfail(L, pos, "unexpected char '%s'", ch);
                return 0;
            }
            t->op = (uint8_t)op;
            t->s = L->s + pos;
            t->n = strlen(ops[op]);
            next = pos + t->n;
            if (op == T_LPAREN || op == T_LBRACKET || op == T_LBRACE) {
                if (depth == MAX_BRACKETS) {
                    lfail(L, pos, "%s", "brackets nested too deeply");
                    return 0;
                }
                stack[depth++] = op == T_LPAREN ? ')' : op == T_LBRACKET ? ']' : '}';
            } else if (op == T_RPAREN || op == T_RBRACKET || op == T_RBRACE) {
                char want = (char)c;
                if (!depth) {
                    lfail(L, pos, "unexpected '%s'", ops[op]);
                    return 0;
                }
                if (stack[depth - 1] != want) {
                    char msg[40];
                    snprintf(msg, sizeof msg, "unexpected '%c', expected '%c'", want,
                             stack[depth - 1]);
                    lfail(L, pos, "%s", msg);
                    return 0;
                }
                depth--;
            }
        }
        pos = next;
    }
}

/* "{% raw %}" at pos (with optional whitespace control): the position
 * after it, or 0. */
static size_t raw_begin_at(const lx *L, size_t pos)
{
    size_t p = pos + 2;
    if (p < L->n && (L->s[p] == '-' || L->s[p] == '+'))
        p++;
    p = skip_space(L->s, L->n, p);
    if (!starts(L, p, "raw") || (p + 3 < L->n && is_name_char((unsigned char)L->s[p + 3])))
        return 0;
    p = skip_space(L->s, L->n, p + 3);
    if (starts(L, p, "-%}"))
        return skip_space(L->s, L->n, p + 3);
    if (starts(L, p, "%}"))
        return p + 2;
    return 0;
}

/* The first "{% endraw %}" from pos: its start (in *at), its sign, and
 * the position after it; 0 if there is none. */
static size_t raw_end_from(const lx *L, size_t pos, size_t *at, char *sign)
{
    for (size_t i = pos; i + 1 < L->n; i++) {
        if (L->s[i] != '{' || L->s[i + 1] != '%')
            continue;
        size_t p = i + 2;
        char sg = 0;
        if (p < L->n && (L->s[p] == '-' || L->s[p] == '+'))
            sg = L->s[p++];
        p = skip_space(L->s, L->n, p);
        if (!starts(L, p, "endraw"))
            continue;
        p = skip_space(L->s, L->n, p + 6);
        size_t end = block_end_at(L, p);
        if (end) {
            *at = i;
            *sign = sg;
            return end;
        }
    }
    return 0;
}

int tm_lex(tm_arena *a, const char *src, size_t len, tm_token **out, size_t *n, qlm_err *err)
{
    /* Newlines to "\n", and one trailing newline dropped. */
    char *s = tm_alloc(a, len + 1);
    if (!s)
        return qlm_fail(err, QLM_ERUNTIME, "template: out of memory");
    size_t m = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            s[m++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n')
                i++;
        } else {
            s[m++] = src[i];
        }
    }
    if (m && s[m - 1] == '\n')
        m--;
    s[m] = 0;

    lx L = {.s = s, .n = m, .line = 1, .col = 1, .line_starting = true, .a = a, .err = err};
    size_t pos = 0;
    while (pos < L.n) {
        /* The next tag opener. */
        size_t tag = pos;
        char kind = 0;
        for (; tag + 1 < L.n; tag++) {
            if (L.s[tag] == '{' && (L.s[tag + 1] == '{' || L.s[tag + 1] == '%' || L.s[tag + 1] == '#')) {
                kind = L.s[tag + 1];
                break;
            }
        }
        if (!kind) {
            int rc = emit_data(&L, pos, L.n, 0, false);
            if (rc)
                return rc;
            break;
        }
        char sign = tag + 2 < L.n && (L.s[tag + 2] == '-' || L.s[tag + 2] == '+') ? L.s[tag + 2] : 0;
        size_t raw_end = kind == '%' ? raw_begin_at(&L, tag) : 0;
        int rc = emit_data(&L, pos, tag, sign, kind != '{');
        if (rc)
            return rc;
        size_t body = tag + 2 + (sign ? 1 : 0);
        if (raw_end) {
            size_t at, after;
            char esign;
            L.line_starting = L.s[raw_end - 1] == '\n';
            if (!(after = raw_end_from(&L, raw_end, &at, &esign)))
                return lfail(&L, tag, "%s", "missing end of raw directive");
            if ((rc = emit_data(&L, raw_end, at, esign, true)))
                return rc;
            L.line_starting = L.s[after - 1] == '\n';
            pos = after;
        } else if (kind == '#') {
            size_t p = body, end = 0;
            for (; p + 1 < L.n; p++) {
                if ((L.s[p] == '+' || L.s[p] == '-') && starts(&L, p + 1, "#}")) {
                    end = L.s[p] == '-' ? skip_space(L.s, L.n, p + 3) : p + 3;
                    break;
                }
                if (starts(&L, p, "#}")) {
                    end = p + 2 + (p + 2 < L.n && L.s[p + 2] == '\n');
                    break;
                }
            }
            if (!end)
                return lfail(&L, tag, "%s", "missing end of comment tag");
            L.line_starting = L.s[end - 1] == '\n';
            pos = end;
        } else {
            bool block = kind == '%';
            if (!emit(&L, block ? TK_BLOCK_BEGIN : TK_VAR_BEGIN, tag))
                return too_big(&L, tag);
            if (!(pos = lex_tag(&L, body, block)))
                return L.code;
        }
    }
    if (!emit(&L, TK_EOF, L.n))
        return too_big(&L, L.n);
    *out = L.t;
    *n = L.nt;
    return QLM_OK;
}
