#include "cli.h"

#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "chat_fmt.h"
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

int qlm_cli_write_all(int fd, const void *s, size_t n)
{
    const char *p = s;
    while (n) {
        const ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return w < 0 ? errno : EIO;
        p += w;
        n -= (size_t)w;
    }
    return 0;
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

static int size_flag(const char *a, const char *v, int *n_predict, int *n_ctx, int *n_threads, int *n_batch)
{
    long l;
    int *dst;
    long lo, hi;
    if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) dst = n_predict, lo = -1, hi = 1 << 30;
    else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) dst = n_ctx, lo = 0, hi = 1 << 24;
    else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) dst = n_threads, lo = 1, hi = 1024;
    else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size") || !strcmp(a, "-ub") || !strcmp(a, "--ubatch-size"))
        dst = n_batch, lo = 1, hi = 1 << 16;
    else return 0;
    if (!qlm_cli_int(a, v, lo, hi, &l)) return -1;
    /* both -b and -ub bound a forward pass (QLM_CLI_BATCH_HELP) */
    *dst = dst == n_batch && *n_batch > 0 && *n_batch < l ? *n_batch : (int)l;
    return 1;
}

static int sampler_flag(const char *a, const char *v, qlm_sampler_params *sp)
{
    long l;
    double d;
    if (!strcmp(a, "-s") || !strcmp(a, "--seed")) {
        if (!qlm_cli_int(a, v, -1, 0x7fffffffL, &l)) return -1;
        sp->seed = (uint64_t)(l < 0 ? 0 : l);
    } else if (!strcmp(a, "--temp")) {
        if (!qlm_cli_float(a, v, 0, 100, &d)) return -1;
        sp->temp = (float)d;
    } else if (!strcmp(a, "--top-k")) {
        if (!qlm_cli_int(a, v, 0, 1 << 30, &l)) return -1;
        sp->top_k = (int)l;
    } else if (!strcmp(a, "--top-p")) {
        if (!qlm_cli_float(a, v, 0, 1, &d)) return -1;
        sp->top_p = (float)d;
    } else if (!strcmp(a, "--min-p")) {
        if (!qlm_cli_float(a, v, 0, 1, &d)) return -1;
        sp->min_p = (float)d;
    } else if (!strcmp(a, "--repeat-penalty")) {
        if (!qlm_cli_float(a, v, 0.01, 100, &d)) return -1;
        sp->repeat_penalty = (float)d;
    } else if (!strcmp(a, "--repeat-last-n")) {
        if (!qlm_cli_int(a, v, 0, 1 << 20, &l)) return -1;
        sp->repeat_last_n = (int)l;
    } else
        return 0;
    return 1;
}

int qlm_cli_gpu_layers(const char *flag, const char *v, long *layers)
{
    if (!strcmp(v, "auto") || !strcmp(v, "all")) {
        *layers = -1;
        return 1;
    }
    return qlm_cli_int(flag, v, -1, 1 << 20, layers);
}

void qlm_cli_no_gpu_warning(const char *flag, const char *v)
{
    fprintf(stderr, "qlm: warning: %s %s: this qlm has no GPU offload; every layer runs on the CPU\n", flag, v);
}

/* -ngl/--gpu-layers/--n-gpu-layers N|auto|all, llama.cpp's offload flag,
 * taken so that a command line written for llama.cpp runs unchanged.  This
 * qlm has no GPU backend, so every layer stays on the CPU, and a flag that
 * asks for any layer elsewhere gets one warning line, as a llama.cpp built
 * without a GPU backend gives. */
static int gpu_layers_flag(const char *a, const char *v)
{
    if (strcmp(a, "-ngl") && strcmp(a, "--gpu-layers") && strcmp(a, "--n-gpu-layers")) return 0;
    long l;
    if (!qlm_cli_gpu_layers(a, v, &l)) return -1;
    if (l != 0) qlm_cli_no_gpu_warning(a, v);
    return 1;
}

int qlm_cli_gen_flag(const char *a, const char *v, qlm_sampler_params *sp, int *n_predict, int *n_ctx,
                     int *n_threads, int *n_batch)
{
    const int sf = sampler_flag(a, v, sp);
    if (sf) return sf;
    const int gf = gpu_layers_flag(a, v);
    return gf ? gf : size_flag(a, v, n_predict, n_ctx, n_threads, n_batch);
}

int qlm_cli_gen_switch(const char *a, qlm_sampler_params *sp)
{
    if (strcmp(a, "--ignore-eos")) return 0;
    sp->ignore_eos = true;
    return 1;
}

int qlm_cli_template_flag(const char *v)
{
    size_t n;
    const qlm_named_tmpl *all = qlm_named_tmpl_all(&n);
    if (!strcmp(v, "list")) {
        for (size_t i = 0; i < n; i++) printf("%-10s %s\n", all[i].name, all[i].about);
        fflush(stdout);
        return -1;
    }
    if (qlm_named_tmpl_find(v)) return 0;
    FILE *f = fopen(v, "rb");
    if (f) {
        fclose(f);
        return 0;
    }
    /* checked now, not when the template is first needed: a typo is a
     * usage error before the model loads, with the names to choose from */
    char names[512] = "";
    for (size_t i = 0, k = 0; i < n && k < sizeof names; i++)
        k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", i ? ", " : "", all[i].name);
    return qlm_cli_error(QLM_EUSAGE, "--chat-template %s: not a built-in template (%s) nor a readable file: %s",
                         v, names, strerror(errno));
}
