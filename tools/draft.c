/* draft.c - `qlm draft IN.gguf OUT.gguf`: a self-speculative draft made
 * from the target itself, for models without a small sibling that shares
 * their tokenizer.
 *
 * It keeps a subset of the transformer blocks (renumbered), the embedding,
 * the final norm and the output head, and requantizes the weights with a
 * llama-quantize recipe (Q4_0 by default).  The vocabulary is copied, so
 * the draft always passes the compatibility check.  Dropping blocks works
 * because a residual network's blocks each add a small correction to the
 * stream; the first and last blocks matter most and are always kept. */
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

static void draft_usage(FILE *f)
{
    fprintf(f,
        "usage: qlm draft IN.gguf OUT.gguf [options]\n"
        "\n"
        "Writes a smaller draft model for speculative decoding (qlm run -md OUT.gguf):\n"
        "IN with only some of its layers, requantized.\n"
        "\n"
        "  --layers N|LIST   keep N layers spread evenly, first and last included\n"
        "                    (default: a third of them), or the listed ones, e.g. 0-7,29\n"
        "  --type TYPE       weight type recipe, as qlm quantize (default Q4_0): %s\n"
        "  -t, --threads N   threads (default: all)\n"
        "  -v, --verbose     one line per tensor on stderr\n"
        "\n"
        "Small models lose much per dropped layer (SmolLM2-135M: 10-80%% of its greedy\n"
        "agreement for a single layer); measure a draft with tools/bench_spec.sh.\n",
        qr_names());
}

typedef struct d_opts {
    const char *in, *out, *layers;
    const qr_ftype *ft;
    int threads, verbose;
} d_opts;

static int parse_args(int argc, char **argv, d_opts *o)
{
    *o = (d_opts){.ft = qr_find("Q4_0")};
    const char *pos[2];
    int n_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { draft_usage(stdout); return -1; }
        if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) { o->verbose = 1; continue; }
        if (!strcmp(a, "--layers") || !strcmp(a, "--type") || !strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (i + 1 >= argc) return qlm_cli_error(QLM_EUSAGE, "%s: missing value (qlm draft --help)", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--layers")) o->layers = v;
            else if (!strcmp(a, "--type")) {
                if (!(o->ft = qr_find(v)))
                    return qlm_cli_error(QLM_EUSAGE, "unknown type '%s' (one of: %s)", v, qr_names());
            } else {
                long l;
                if (!qlm_cli_int(a, v, 1, 4096, &l)) return QLM_EUSAGE;
                o->threads = (int)l;
            }
            continue;
        }
        if (a[0] == '-' && a[1]) return qlm_cli_error(QLM_EUSAGE, "unknown option '%s' (qlm draft --help)", a);
        if (n_pos == 2) return qlm_cli_error(QLM_EUSAGE, "unexpected argument '%s' (qlm draft --help)", a);
        pos[n_pos++] = a;
    }
    if (n_pos < 2) return qlm_cli_error(QLM_EUSAGE, "expected IN.gguf OUT.gguf (qlm draft --help)");
    o->in = pos[0];
    o->out = pos[1];
    struct stat si, so;
    if (!strcmp(o->in, o->out)
        || (!stat(o->in, &si) && !stat(o->out, &so) && si.st_dev == so.st_dev && si.st_ino == so.st_ino))
        return qlm_cli_error(QLM_EUSAGE, "%s: output is the input file; choose another OUT", o->out);
    return 0;
}

/* Fills keep[0..n_layer) from --layers; returns the number kept, or -1
 * after printing the error. */
static int pick_layers(const char *spec, int n_layer, bool *keep)
{
    memset(keep, 0, sizeof *keep * (size_t)n_layer);
    char *end;
    long n = spec ? strtol(spec, &end, 10) : (n_layer + 2) / 3;
    if (!spec || (!*end && end != spec)) {
        if (n < 1 || n > n_layer) {
            qlm_cli_error(QLM_EUSAGE, "--layers %ld: the model has %d layers", n, n_layer);
            return -1;
        }
        /* evenly spaced, the first and the last always in */
        for (long i = 0; i < n; i++) keep[n == 1 ? 0 : (int)((i * (n_layer - 1) + (n - 1) / 2) / (n - 1))] = true;
    } else {
        for (const char *p = spec; *p;) {
            long a = strtol(p, &end, 10), b = a;
            if (end == p) goto bad;
            p = end;
            if (*p == '-') {
                b = strtol(++p, &end, 10);
                if (end == p) goto bad;
                p = end;
            }
            if (a < 0 || b < a || b >= n_layer) {
                qlm_cli_error(QLM_EUSAGE, "--layers %s: layers run from 0 to %d", spec, n_layer - 1);
                return -1;
            }
            for (long i = a; i <= b; i++) keep[i] = true;
            if (*p == ',') p++;
            else if (*p) goto bad;
        }
    }
    int kept = 0;
    for (int i = 0; i < n_layer; i++) kept += keep[i];
    return kept;
bad:
    qlm_cli_error(QLM_EUSAGE, "--layers %s: expected a count or a list like 0-7,29", spec);
    return -1;
}

/* blk.N.rest: N, with *rest pointing after "blk.N."; -1 if not a block tensor. */
static int block_of(const char *name, const char **rest)
{
    if (strncmp(name, "blk.", 4)) return -1;
    char *end;
    const long n = strtol(name + 4, &end, 10);
    if (end == name + 4 || *end != '.') return -1;
    *rest = end + 1;
    return (int)n;
}

int qlm_cmd_draft(int argc, char **argv)
{
    d_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    qlm_err err = {0};
    gguf_ctx *g = NULL;
    if (gguf_open(&g, o.in, &err)) return qlm_cli_report(&err);

    gguf_str as;
    char arch[64] = "", key[160];
    if (gguf_get_str(g, "general.architecture", &as) && as.len < sizeof arch) {
        memcpy(arch, as.ptr, as.len);
        arch[as.len] = 0;
    }
    uint32_t n_layer = 0;
    snprintf(key, sizeof key, "%s.block_count", arch);
    if (!arch[0] || !gguf_get_u32(g, key, &n_layer) || n_layer < 1) {
        gguf_close(g);
        return qlm_cli_error(QLM_ELOAD, "%s: no general.architecture or %s", o.in, key);
    }
    const int64_t n = (int64_t)g->n_tensors;
    bool *keep = calloc(n_layer, sizeof *keep);
    int *renum = calloc(n_layer, sizeof *renum);
    qr_tensor *plan = calloc((size_t)(n ? n : 1), sizeof *plan);
    char **names = calloc((size_t)(n ? n : 1), sizeof *names);
    const gguf_tensor **src = calloc((size_t)(n ? n : 1), sizeof *src);
    void **bufs = calloc((size_t)(n ? n : 1), sizeof *bufs);
    gguf_writer *w = gguf_writer_new();
    if (!keep || !renum || !plan || !names || !src || !bufs || !w) {
        rc = qlm_cli_error(QLM_ERUNTIME, "out of memory");
        goto done;
    }
    const int kept = pick_layers(o.layers, (int)n_layer, keep);
    if (kept < 0) {
        rc = QLM_EUSAGE;
        goto done;
    }
    for (int l = 0, j = 0; l < (int)n_layer; l++) renum[l] = keep[l] ? j++ : -1;

    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        const gguf_tensor *t = &g->tensors[i];
        char *name = gguf_str_dup(t->name);
        const char *rest;
        if (!name) {
            rc = qlm_cli_error(QLM_ERUNTIME, "out of memory");
            goto done;
        }
        const int b = block_of(name, &rest);
        if (b >= (int)n_layer) {
            rc = qlm_cli_error(QLM_ELOAD, "%s: tensor '%s' beyond block_count %u", o.in, name, n_layer);
            free(name);
            goto done;
        }
        if (b >= 0 && !keep[b]) {
            free(name);
            continue;
        }
        if (b >= 0) {
            char nn[256];
            snprintf(nn, sizeof nn, "blk.%d.%s", renum[b], rest);
            free(name);
            if (!(name = strdup(nn))) {
                rc = qlm_cli_error(QLM_ERUNTIME, "out of memory");
                goto done;
            }
        }
        names[m] = name;
        src[m] = t;
        plan[m] = (qr_tensor){.name = name, .type = t->type};
        memcpy(plan[m].ne, t->ne, sizeof plan[m].ne);
        m++;
    }
    uint32_t n_head = 0, n_head_kv = 0;
    snprintf(key, sizeof key, "%s.attention.head_count", arch);
    gguf_get_u32(g, key, &n_head);
    snprintf(key, sizeof key, "%s.attention.head_count_kv", arch);
    if (!gguf_get_u32(g, key, &n_head_kv)) n_head_kv = n_head;
    const qr_model qm = {.n_layer = kept, .n_head = (int)n_head, .n_head_kv = (int)n_head_kv,
                         .falcon = !strcmp(arch, "falcon")};
    if (!qr_plan(o.ft, &qm, plan, m)) {
        rc = qlm_cli_error(QLM_ERUNTIME, "out of memory");
        goto done;
    }
    for (int64_t i = 0; i < m; i++) {
        if (plan[i].new_type == plan[i].type) continue;
        if (!qt_get(plan[i].type)->to_float) {
            rc = qlm_cli_error(QLM_ELOAD, "%s: tensor '%s': cannot dequantize type %s", o.in, names[i],
                               qt_get(plan[i].type)->name);
            goto done;
        }
    }

    snprintf(key, sizeof key, "%s.block_count", arch);
    for (uint64_t k = 0; k < g->n_kv; k++) {
        const gguf_kv *kv = &g->kv[k];
        if (gguf_str_eq(kv->key, key) || gguf_str_eq(kv->key, "general.file_type")
            || gguf_str_eq(kv->key, "general.quantization_version") || gguf_str_eq(kv->key, "general.name")
            || gguf_str_eq(kv->key, "split.no") || gguf_str_eq(kv->key, "split.count")
            || gguf_str_eq(kv->key, "split.tensors.count"))
            continue;
        char *kname = gguf_str_dup(kv->key);
        if (!kname) {
            rc = qlm_cli_error(QLM_ERUNTIME, "out of memory");
            goto done;
        }
        gguf_w_value(w, kname, &kv->val);
        free(kname);
    }
    gguf_w_u32(w, key, (uint32_t)kept);
    gguf_w_u32(w, "general.quantization_version", 2);
    gguf_w_u32(w, "general.file_type", (uint32_t)o.ft->ftype);
    gguf_str gn = {0};
    char name_buf[256];
    snprintf(name_buf, sizeof name_buf, "%.*s draft (%d of %u layers)",
             gguf_get_str(g, "general.name", &gn) && gn.len < 200 ? (int)gn.len : 5,
             gn.len && gn.len < 200 ? gn.ptr : "model", kept, n_layer);
    gguf_w_str(w, "general.name", name_buf);

    uint64_t bytes_out = 0;
    for (int64_t i = 0; i < m; i++) {
        const gguf_tensor *t = src[i];
        const qt_type to = (qt_type)plan[i].new_type;
        const void *data = t->data;
        size_t nbytes = t->nbytes;
        if (to != t->type) {
            nbytes = qt_row_size(to, t->ne[0]) * (size_t)(t->nbytes / qt_row_size(t->type, t->ne[0]));
            if (!(bufs[i] = malloc(nbytes ? nbytes : 1)) || qr_convert(t, to, bufs[i], o.threads)) {
                rc = qlm_cli_error(QLM_ERUNTIME, "tensor '%s': out of memory", names[i]);
                goto done;
            }
            data = bufs[i];
        }
        gguf_w_tensor_ref(w, names[i], to, t->n_dims, t->ne, data);
        bytes_out += nbytes;
        if (o.verbose)
            fprintf(stderr, "%-32s %-6s -> %s\n", names[i], qt_get(t->type)->name, qt_get(to)->name);
    }
    if (gguf_w_save(w, o.out, &err)) {
        rc = qlm_cli_report(&err);
        goto done;
    }
    if (!o.verbose && !isatty(STDERR_FILENO)) goto done;
    fprintf(stderr, "%s: %d of %u layers (", o.out, kept, n_layer);
    for (int l = 0, first = 1; l < (int)n_layer; l++)
        if (keep[l]) {
            fprintf(stderr, "%s%d", first ? "" : ",", l);
            first = 0;
        }
    fprintf(stderr, "), %s, %.2f MiB (from %.2f MiB)\n", o.ft->name, bytes_out / 1048576.0,
            g->size / 1048576.0);
done:
    gguf_writer_free(w);
    for (int64_t i = 0; i < n; i++) {
        if (bufs) free(bufs[i]);
        if (names) free(names[i]);
    }
    free(bufs);
    free(names);
    free(src);
    free(plan);
    free(keep);
    free(renum);
    gguf_close(g);
    return rc;
}
