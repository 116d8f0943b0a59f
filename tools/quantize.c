/* quantize.c - `qlm quantize IN.gguf OUT.gguf TYPE`: rewrites a model's
 * weights in another type, choosing per tensor as llama-quantize does
 * (tools/quant_recipe.c) and quantizing with the reference quantizers, so
 * the output matches llama-quantize's byte for byte on the same input. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quant/types.h"
#include "src/cli.h"
#include "src/gguf.h"
#include "tools/quant_recipe.h"
#include "tools/tools.h"

static void quantize_usage(FILE *f)
{
    fprintf(f,
        "usage: qlm quantize IN.gguf OUT.gguf TYPE [options]\n"
        "\n"
        "Writes IN's weights as TYPE, choosing per tensor as llama-quantize does\n"
        "(norms stay as they are, output/embedding and some attn_v/ffn_down\n"
        "layers get more bits in the _S/_M/_L mixes). Any input type qlm can\n"
        "read is accepted; no importance matrix is used.\n"
        "\n"
        "TYPE (case-insensitive): %s\n"
        "      (Q3_K, Q4_K, Q5_K are aliases of the _M mixes)\n"
        "\n"
        "  -t, --threads N   threads (default: all)\n"
        "  -v, --verbose     one line per tensor on stderr\n",
        qr_names());
}

typedef struct q_opts {
    const char *in, *out;
    const qr_ftype *ft;
    int threads, verbose;
} q_opts;

static int parse_args(int argc, char **argv, q_opts *o)
{
    *o = (q_opts){0};
    const char *pos[3];
    int n_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { quantize_usage(stdout); return -1; }
        if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) { o->verbose = 1; continue; }
        if (!strcmp(a, "-t") || !strcmp(a, "--threads") || !strcmp(a, "--nthreads")) {
            long l;
            if (i + 1 >= argc) return qlm_cli_error(QLM_EUSAGE, "%s: missing value (qlm quantize --help)", a);
            if (!qlm_cli_int(a, argv[++i], 1, 4096, &l)) return QLM_EUSAGE;
            o->threads = (int)l;
            continue;
        }
        if (a[0] == '-' && a[1])
            return qlm_cli_error(QLM_EUSAGE, "unknown option '%s' (qlm quantize --help)", a);
        if (n_pos == 3) return qlm_cli_error(QLM_EUSAGE, "unexpected argument '%s' (qlm quantize --help)", a);
        pos[n_pos++] = a;
    }
    if (n_pos < 3)
        return qlm_cli_error(QLM_EUSAGE, "expected IN.gguf OUT.gguf TYPE (qlm quantize --help)");
    o->in = pos[0];
    o->out = pos[1];
    if (!(o->ft = qr_find(pos[2])))
        return qlm_cli_error(QLM_EUSAGE, "unknown type '%s' (one of: %s)", pos[2], qr_names());
    /* the output is renamed over OUT after IN's mapping was read, which
     * would replace the model being read from */
    struct stat si, so;
    if (!strcmp(o->in, o->out)
        || (!stat(o->in, &si) && !stat(o->out, &so) && si.st_dev == so.st_dev && si.st_ino == so.st_ino))
        return qlm_cli_error(QLM_EUSAGE, "%s: output is the input file; choose another OUT", o->out);
    return 0;
}

static uint32_t get_u32_or(const gguf_ctx *g, const char *arch, const char *key, uint32_t dflt)
{
    char k[160];
    uint32_t v;
    snprintf(k, sizeof k, "%s.%s", arch, key);
    return gguf_get_u32(g, k, &v) ? v : dflt;
}

static qr_model model_info(const gguf_ctx *g)
{
    gguf_str s = {0};
    char arch[64] = "";
    if (gguf_get_str(g, "general.architecture", &s) && s.len < sizeof arch) {
        memcpy(arch, s.ptr, s.len);
        arch[s.len] = 0;
    }
    qr_model m = {
        .n_layer = (int)get_u32_or(g, arch, "block_count", 0),
        .n_head = (int)get_u32_or(g, arch, "attention.head_count", 0),
        .n_expert = (int)get_u32_or(g, arch, "expert_count", 0),
        .falcon = !strcmp(arch, "falcon"),
    };
    m.n_head_kv = (int)get_u32_or(g, arch, "attention.head_count_kv", (uint32_t)m.n_head);
    /* llama.cpp's LLM_TYPE_70B for the families whose 80-layer size is 70B
     * (llama's 80-layer MHA model is the 65B) */
    m.is_70b = m.n_layer == 80
        && ((!strcmp(arch, "llama") && m.n_head != m.n_head_kv) || !strcmp(arch, "qwen2")
            || !strcmp(arch, "deci") || !strcmp(arch, "olmo"));
    return m;
}

/* Dequantizes and requantizes src (nrows rows of ne0 elements) into dst,
 * in chunks of rows so each thread's float buffer stays small. */
int qr_convert(const gguf_tensor *t, qt_type to, void *dst, int threads)
{
    const qt_traits *in = qt_get(t->type), *out = qt_get(to);
    const int64_t ne0 = t->ne[0], nrows = (int64_t)(t->nbytes / qt_row_size(t->type, ne0));
    const size_t in_row = qt_row_size(t->type, ne0), out_row = qt_row_size(to, ne0);
    /* ~64K floats per chunk: enough work to amortise scheduling */
    const int64_t chunk = ne0 >= 65536 ? 1 : 65536 / ne0;
    const int64_t n_chunks = (nrows + chunk - 1) / chunk;
    int failed = 0;
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads())
    {
        float *buf = malloc(sizeof(float) * (size_t)(chunk * ne0));
        if (!buf) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t c = 0; c < n_chunks; c++) {
            if (!buf) continue;
            const int64_t r0 = c * chunk, nr = nrows - r0 < chunk ? nrows - r0 : chunk;
            const uint8_t *s = (const uint8_t *)t->data + (size_t)r0 * in_row;
            in->to_float(s, buf, nr * ne0);
            out->from_float(buf, (uint8_t *)dst + (size_t)r0 * out_row, nr * ne0);
        }
        free(buf);
    }
    return failed;
}

int qlm_cmd_quantize(int argc, char **argv)
{
    q_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;

    qlm_err err = {0};
    gguf_ctx *g = NULL;
    if (gguf_open(&g, o.in, &err)) return qlm_cli_report(&err);

    const int64_t n = (int64_t)g->n_tensors;
    qr_tensor *plan = calloc((size_t)(n ? n : 1), sizeof *plan);
    char **names = calloc((size_t)(n ? n : 1), sizeof *names);
    void **bufs = calloc((size_t)(n ? n : 1), sizeof *bufs);
    gguf_writer *w = gguf_writer_new();
    rc = QLM_OK;
    if (!plan || !names || !bufs || !w) {
        rc = qlm_cli_error(QLM_ERUNTIME, "out of memory");
        goto done;
    }
    for (int64_t i = 0; i < n; i++) {
        const gguf_tensor *t = &g->tensors[i];
        if (!(names[i] = gguf_str_dup(t->name))) {
            rc = qlm_cli_error(QLM_ERUNTIME, "out of memory");
            goto done;
        }
        plan[i] = (qr_tensor){.name = names[i], .type = t->type};
        memcpy(plan[i].ne, t->ne, sizeof plan[i].ne);
    }
    const qr_model m = model_info(g);
    if (!qr_plan(o.ft, &m, plan, n)) {
        rc = qlm_cli_error(QLM_ERUNTIME, "out of memory");
        goto done;
    }
    /* refuse before any work: a type qlm cannot read or write is a property
     * of the input, not a failure halfway through */
    for (int64_t i = 0; i < n; i++) {
        if (plan[i].new_type == plan[i].type) continue;
        const qt_traits *in = qt_get(plan[i].type), *out = qt_get(plan[i].new_type);
        if (!in->to_float) {
            rc = qlm_cli_error(QLM_ELOAD, "%s: tensor '%s': cannot dequantize type %s", o.in,
                               names[i], in->name);
            goto done;
        }
        if (!out->from_float) {
            rc = qlm_cli_error(QLM_ERUNTIME, "tensor '%s': cannot quantize to %s", names[i], out->name);
            goto done;
        }
    }

    for (uint64_t k = 0; k < g->n_kv; k++) {
        const gguf_kv *kv = &g->kv[k];
        /* set below; split keys describe the input's shards, not this file */
        if (gguf_str_eq(kv->key, "general.file_type") || gguf_str_eq(kv->key, "general.quantization_version")
            || gguf_str_eq(kv->key, "split.no") || gguf_str_eq(kv->key, "split.count")
            || gguf_str_eq(kv->key, "split.tensors.count"))
            continue;
        char *key = gguf_str_dup(kv->key);
        if (!key) {
            rc = qlm_cli_error(QLM_ERUNTIME, "out of memory");
            goto done;
        }
        gguf_w_value(w, key, &kv->val);
        free(key);
    }
    gguf_w_u32(w, "general.quantization_version", 2);
    gguf_w_u32(w, "general.file_type", (uint32_t)o.ft->ftype);

    const int tty = isatty(2);
    uint64_t bytes_in = 0, bytes_out = 0;
    int n_fallback = 0;
    for (int64_t i = 0; i < n; i++) {
        const gguf_tensor *t = &g->tensors[i];
        const qt_type to = (qt_type)plan[i].new_type;
        const void *data = t->data;
        size_t nbytes = t->nbytes;
        if (to != t->type) {
            /* same type: llama.cpp copies the bytes rather than requantize */
            nbytes = qt_row_size(to, t->ne[0]) * (size_t)(t->nbytes / qt_row_size(t->type, t->ne[0]));
            if (!(bufs[i] = malloc(nbytes ? nbytes : 1)) || qr_convert(t, to, bufs[i], o.threads)) {
                rc = qlm_cli_error(QLM_ERUNTIME, "tensor '%s': out of memory", names[i]);
                goto done;
            }
            data = bufs[i];
        }
        gguf_w_tensor_ref(w, names[i], to, t->n_dims, t->ne, data);
        bytes_in += t->nbytes;
        bytes_out += nbytes;
        n_fallback += plan[i].fallback;
        if (o.verbose)
            fprintf(stderr, "[%4lld/%4lld] %-32s %-6s -> %s%s\n", (long long)i + 1, (long long)n,
                    names[i], qt_get(t->type)->name, qt_get(to)->name,
                    plan[i].fallback ? " (row length: fallback type)" : "");
        else if (tty)
            fprintf(stderr, "\rquantizing: %lld/%lld tensors", (long long)i + 1, (long long)n);
    }
    if (tty && !o.verbose) fprintf(stderr, "\n");
    if (gguf_w_save(w, o.out, &err)) {
        rc = qlm_cli_report(&err);
        goto done;
    }
    if (o.verbose || tty)
        fprintf(stderr, "%s: %s, %.2f MiB -> %.2f MiB%s\n", o.out, o.ft->name, bytes_in / 1048576.0,
                bytes_out / 1048576.0, n_fallback ? " (some rows did not fit the type's block: see -v)" : "");
done:
    gguf_writer_free(w);
    for (int64_t i = 0; i < n; i++) {
        if (bufs) free(bufs[i]);
        if (names) free(names[i]);
    }
    free(bufs);
    free(names);
    free(plan);
    gguf_close(g);
    return rc;
}
