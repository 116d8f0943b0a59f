/* inspect.c - `qlm inspect FILE`: a GGUF file's header, metadata and
 * tensor table, one item per line.
 *
 * Everything printed from the file is escaped, because names and strings
 * are untrusted bytes: a newline or terminal escape in a chat template must
 * not break the one-item-per-line layout that scripts grep. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/types.h"
#include "src/cli.h"
#include "src/gguf.h"
#include "tools/tools.h"

#define STR_SHOW 120      /* bytes of a string value shown before "..." */
#define ELEM_STR_SHOW 32  /* same, for strings inside arrays */
#define ARR_SHOW 8        /* array elements shown */
#define NEST_SHOW 3       /* elements of nested arrays shown */
#define KEY_COL 48        /* widest key column before lines just run on */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: qlm inspect [options] FILE\n"
            "\n"
            "Prints a GGUF file's header, metadata (key, type, value) and tensor\n"
            "table (name, type, shape, bytes, offset in the data section).\n"
            "\n"
            "options:\n"
            "  --no-kv        skip the metadata\n"
            "  --no-tensors   skip the tensor table\n"
            "  -h, --help     show this help\n");
}

/* Length of the valid UTF-8 sequence at p (0 if invalid) and its code
 * point; overlongs, surrogates and values past U+10FFFF are invalid. */
static int utf8_seq(const unsigned char *p, uint64_t avail, uint32_t *cp)
{
    unsigned c = p[0];
    int n;
    uint32_t v, min;
    if (c >= 0xc2 && c <= 0xdf) { n = 2; v = c & 0x1f; min = 0x80; }
    else if (c >= 0xe0 && c <= 0xef) { n = 3; v = c & 0x0f; min = 0x800; }
    else if (c >= 0xf0 && c <= 0xf4) { n = 4; v = c & 0x07; min = 0x10000; }
    else return 0;
    if (avail < (uint64_t)n) return 0;
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        v = v << 6 | (p[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
    *cp = v;
    return n;
}

/* Prints s escaped, showing at most max bytes of it, then "..." if cut,
 * and returns the columns used (code points count one each); with dry set
 * it only measures, for aligning columns.  Unicode line and paragraph
 * separators and C1 controls are escaped too: some terminals and editors
 * break lines on them. */
static int emit(const char *text, size_t n, bool dry)
{
    if (!dry) fwrite(text, 1, n, stdout);
    return (int)n;
}

static int put_esc(const char *s, uint64_t len, uint64_t max, bool quote, bool dry)
{
    const unsigned char *p = (const unsigned char *)s;
    char esc[8];
    int cols = quote ? emit("\"", 1, dry) : 0;
    uint64_t i = 0;
    while (i < len && i < max) {
        unsigned c = p[i];
        uint32_t cp = 0;
        int n = c < 0x80 ? 1 : utf8_seq(p + i, len - i, &cp);
        esc[0] = 0;
        if (c == '\\' || (c == '"' && quote)) snprintf(esc, sizeof esc, "\\%c", c);
        else if (c == '\n') strcpy(esc, "\\n");
        else if (c == '\t') strcpy(esc, "\\t");
        else if (c == '\r') strcpy(esc, "\\r");
        else if (c < 0x20 || c == 0x7f || n == 0) snprintf(esc, sizeof esc, "\\x%02x", c);
        else if (c >= 0x80 && (cp <= 0x9f || cp == 0x2028 || cp == 0x2029))
            snprintf(esc, sizeof esc, "\\u%04x", (unsigned)cp);
        if (n == 0) n = 1;  /* an invalid byte is escaped alone */
        if (esc[0]) {
            cols += emit(esc, strlen(esc), dry);
        } else {
            emit((const char *)p + i, (size_t)n, dry);
            cols++;  /* one column per code point, near enough for alignment */
        }
        i += (uint64_t)n;
    }
    if (quote) cols += emit("\"", 1, dry);
    if (i < len) cols += emit("...", 3, dry);
    return cols;
}

/* Shortest decimal that reads back as the same float / double. */
static void put_float(double d, bool single)
{
    char buf[40];
    for (int prec = single ? 6 : 15; prec <= (single ? 9 : 17); prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, d);
        double back = strtod(buf, NULL);
        if (single ? (float)back == (float)d : back == d) break;
    }
    fputs(buf, stdout);
}

static void put_elem(const gguf_value *a, uint64_t i)
{
    switch (a->arr.type) {
    case GGUF_UINT8: case GGUF_UINT16: case GGUF_UINT32: case GGUF_UINT64:
        /* i64 saturates; the raw 64-bit pattern is the true unsigned value */
        if (a->arr.type == GGUF_UINT64) {
            const unsigned char *q = (const unsigned char *)a->arr.data + i * 8;
            uint64_t u = 0;
            for (int k = 7; k >= 0; k--) u = u << 8 | q[k];
            printf("%llu", (unsigned long long)u);
        } else {
            printf("%lld", (long long)gguf_arr_i64(a, i));
        }
        break;
    case GGUF_INT8: case GGUF_INT16: case GGUF_INT32: case GGUF_INT64:
        printf("%lld", (long long)gguf_arr_i64(a, i));
        break;
    case GGUF_FLOAT32: put_float(gguf_arr_f64(a, i), true); break;
    case GGUF_FLOAT64: put_float(gguf_arr_f64(a, i), false); break;
    case GGUF_BOOL: fputs(gguf_arr_i64(a, i) ? "true" : "false", stdout); break;
    default: break;
    }
}

static void put_array(const gguf_value *a, int depth)
{
    printf("[%s x %llu]", gguf_vtype_name(a->arr.type), (unsigned long long)a->arr.n);
    uint64_t show = depth ? NEST_SHOW : ARR_SHOW;
    for (uint64_t i = 0; i < a->arr.n && i < show; i++) {
        fputs(i ? ", " : " ", stdout);
        if (a->arr.type == GGUF_STRING) {
            put_esc(a->arr.strs[i].ptr, a->arr.strs[i].len, ELEM_STR_SHOW, true, false);
        } else if (a->arr.type == GGUF_ARRAY) {
            putchar('{');
            put_array(&a->arr.vals[i], depth + 1);
            putchar('}');
        } else {
            put_elem(a, i);
        }
    }
    if (a->arr.n > show) fputs(", ...", stdout);
}

static void put_value(const gguf_value *v)
{
    switch (v->type) {
    case GGUF_UINT8: case GGUF_UINT16: case GGUF_UINT32: case GGUF_UINT64:
        printf("%llu", (unsigned long long)v->u64);
        break;
    case GGUF_INT8: case GGUF_INT16: case GGUF_INT32: case GGUF_INT64:
        printf("%lld", (long long)v->i64);
        break;
    case GGUF_FLOAT32: put_float(v->f64, true); break;
    case GGUF_FLOAT64: put_float(v->f64, false); break;
    case GGUF_BOOL: fputs(v->b ? "true" : "false", stdout); break;
    case GGUF_STRING:
        put_esc(v->str.ptr, v->str.len, STR_SHOW, true, false);
        if (v->str.len > STR_SHOW) printf(" (%llu bytes)", (unsigned long long)v->str.len);
        break;
    case GGUF_ARRAY: put_array(v, 0); break;
    }
}

static void pad(int n)
{
    while (n-- > 0) putchar(' ');
}

static void print_kv(const gguf_ctx *c)
{
    int kw = 3;
    for (uint64_t i = 0; i < c->n_kv; i++) {
        int w = put_esc(c->kv[i].key.ptr, c->kv[i].key.len, UINT64_MAX, false, true);
        if (w > KEY_COL) w = KEY_COL;
        if (w > kw) kw = w;
    }
    printf("\n%-*s  %-7s  %s\n", kw, "key", "type", "value");
    for (uint64_t i = 0; i < c->n_kv; i++) {
        const gguf_kv *kv = &c->kv[i];
        pad(kw - put_esc(kv->key.ptr, kv->key.len, UINT64_MAX, false, false));
        printf("  %-7s  ", gguf_vtype_name(kv->val.type));
        put_value(&kv->val);
        putchar('\n');
    }
}

static void print_tensors(const gguf_ctx *c)
{
    int nw = 4;
    for (uint64_t i = 0; i < c->n_tensors; i++) {
        int w = put_esc(c->tensors[i].name.ptr, c->tensors[i].name.len, UINT64_MAX, false, true);
        if (w > nw) nw = w;
    }
    printf("\n%-*s  %-7s  %-24s  %12s  %12s\n", nw, "name", "type", "shape", "bytes", "offset");
    for (uint64_t i = 0; i < c->n_tensors; i++) {
        const gguf_tensor *t = &c->tensors[i];
        char shape[96];
        size_t o = 0;
        shape[o++] = '[';
        for (uint32_t d = 0; d < t->n_dims; d++)
            o += (size_t)snprintf(shape + o, sizeof shape - o, "%s%lld", d ? ", " : "",
                                  (long long)t->ne[d]);
        snprintf(shape + o, sizeof shape - o, "]");
        const qt_traits *q = qt_get(t->type);
        pad(nw - put_esc(t->name.ptr, t->name.len, UINT64_MAX, false, false));
        printf("  %-7s  %-24s  %12llu  %12llu\n", q && q->name ? q->name : "?", shape,
               (unsigned long long)t->nbytes, (unsigned long long)t->offset);
    }
}

int qlm_cmd_inspect(int argc, char **argv)
{
    bool no_kv = false, no_tensors = false, opts = true;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (opts && (!strcmp(a, "-h") || !strcmp(a, "--help"))) {
            usage(stdout);
            return 0;
        } else if (opts && !strcmp(a, "--no-kv")) {
            no_kv = true;
        } else if (opts && !strcmp(a, "--no-tensors")) {
            no_tensors = true;
        } else if (opts && !strcmp(a, "--")) {
            opts = false;
        } else if (opts && a[0] == '-' && a[1]) {
            return qlm_cli_error(QLM_EUSAGE, "inspect: unknown option '%s' (see qlm inspect --help)", a);
        } else if (path) {
            return qlm_cli_error(QLM_EUSAGE, "inspect: takes one FILE, got '%s' and '%s'", path, a);
        } else {
            path = a;
        }
    }
    if (!path) return qlm_cli_error(QLM_EUSAGE, "inspect: missing FILE (see qlm inspect --help)");

    gguf_ctx *c;
    qlm_err err = {0};
    if (gguf_open(&c, path, &err)) return qlm_cli_report(&err);

    uint64_t data_bytes = 0;
    for (uint64_t i = 0; i < c->n_tensors; i++)
        data_bytes += c->tensors[i].nbytes;  /* non-overlapping, so <= file size */
    printf("file:        ");
    put_esc(path, strlen(path), UINT64_MAX, false, false);
    printf("\nversion:     %u\n", c->version);
    printf("size:        %zu bytes\n", c->size);
    printf("id:          %016llx\n", (unsigned long long)c->id);
    printf("alignment:   %llu\n", (unsigned long long)c->alignment);
    printf("data offset: %llu\n", (unsigned long long)c->data_offset);
    printf("metadata:    %llu keys\n", (unsigned long long)c->n_kv);
    printf("tensors:     %llu (%llu bytes)\n", (unsigned long long)c->n_tensors,
           (unsigned long long)data_bytes);
    if (!no_kv) print_kv(c);
    if (!no_tensors && c->n_tensors) print_tensors(c);
    gguf_close(c);
    if (fflush(stdout) != 0 || ferror(stdout))
        return qlm_cli_error(QLM_ERUNTIME, "inspect: cannot write to standard output");
    return 0;
}
