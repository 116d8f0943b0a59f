#include "cli.h"

#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"

int qlm_cli_error(int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* One line, whatever the message carried in. */
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    fprintf(stderr, "qlm: error: %s\n", msg);
    return code;
}

int qlm_cli_report(const qlm_err *e)
{
    return qlm_cli_error(e->code ? e->code : QLM_ERUNTIME, "%s", e->msg);
}

int qlm_cli_int(const char *flag, const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        qlm_cli_error(QLM_EUSAGE, "%s: expected an integer in [%ld, %ld], got '%s'", flag, lo, hi, s);
        return 0;
    }
    *out = v;
    return 1;
}

int qlm_cli_load_flag(const char *a, int *mode)
{
    int m;
    if (!strcmp(a, "--mmap")) m = GGUF_LOAD_MMAP;
    else if (!strcmp(a, "--no-mmap")) m = GGUF_LOAD_READ;
    else if (!strcmp(a, "--mlock")) m = GGUF_LOAD_MLOCK;
    else return 0;
    if (*mode >= 0 && *mode != m) {
        static const char *const names[] = {"--mmap", "--no-mmap", "--mlock"};
        qlm_cli_error(QLM_EUSAGE, "%s and %s: choose one load mode", names[*mode], a);
        return -1;
    }
    *mode = m;
    return 1;
}

int qlm_cli_float(const char *flag, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi) {
        qlm_cli_error(QLM_EUSAGE, "%s: expected a number in [%g, %g], got '%s'", flag, lo, hi, s);
        return 0;
    }
    *out = v;
    return 1;
}

int qlm_cli_kv_flag(const char *flag, const char *value, qlm_kv_type *k, qlm_kv_type *v)
{
    const bool is_k = !strcmp(flag, "-ctk") || !strcmp(flag, "--cache-type-k");
    const bool is_v = !strcmp(flag, "-ctv") || !strcmp(flag, "--cache-type-v");
    const bool both = !strcmp(flag, "--kv-type");
    if (!is_k && !is_v && !both) return 0;
    const int t = qlm_kv_type_parse(value);
    if (t < 0) {
        qlm_cli_error(QLM_EUSAGE, "%s: expected f32, f16 or int8, got '%s'", flag, value);
        return -1;
    }
    if (is_k || both) *k = (qlm_kv_type)t;
    if (is_v || both) *v = (qlm_kv_type)t;
    return 1;
}
