/* bench.c - `qlm bench`: prompt processing and generation speed, reported
 * like llama-bench (mean ± sd tokens/s over repetitions) so the two can be
 * run side by side on the same file and threads. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/cpu.h"
#include "src/cli.h"
#include "src/generate.h"
#include "src/model.h"
#include "tools/tools.h"

#define MAX_LIST 16

typedef struct bench_opts {
    const char *model;
    int pp[MAX_LIST], n_pp;
    int tg[MAX_LIST], n_tg;
    int threads[MAX_LIST], n_threads;
    int reps, n_batch, depth;
    int load_mode; /* gguf_load_mode, -1: default (mmap) */
    qlm_kv_type kv_k[MAX_LIST], kv_v[MAX_LIST];
    int n_kv;
    enum { OUT_TABLE, OUT_CSV, OUT_JSON } out;
} bench_opts;

static void bench_usage(FILE *f)
{
    fprintf(f,
        "usage: qlm bench -m MODEL [options]\n"
        "\n"
        "Measures prompt processing (ppN: one batch of N tokens) and generation\n"
        "(tgN: N tokens one at a time) in tokens/s, like llama-bench.\n"
        "\n"
        "  -m, --model FILE     GGUF model\n"
        "  -p, --n-prompt LIST  prompt lengths, comma-separated (default 512; 0 skips)\n"
        "  -n, --n-gen LIST     generation lengths (default 128; 0 skips)\n"
        "  -t, --threads LIST   thread counts (default: physical cores)\n"
        "  -r, --repetitions N  runs per test after one warm-up (default 5)\n"
        "  -b, --batch-size N   tokens per forward pass in pp (default 512)\n"
        "  -d, --n-depth N      run each test after N tokens of context (default 0)\n"
        "      --kv-type LIST   KV cache types to compare, e.g. int8,f16,f32 (default int8)\n"
        "  -ctk, -ctv T         K or V cache type alone (one configuration)\n"
        "  -o, --output FMT     table (default), csv or json\n"
        "      --mmap, --no-mmap, --mlock\n"
        "                       how the weights are loaded, as in qlm run (default\n"
        "                       --mmap; --no-mmap reads them into anonymous memory,\n"
        "                       like llama-bench -mmp 0)\n"
        "      --kernels        instead: each type's dot-product kernels per ISA level in\n"
        "                       GB/s, next to memory bandwidth (qlm bench --kernels --help)\n");
}

/* Parses "a,b,c" into out; 0 on error (message printed). */
static int parse_list(const char *flag, const char *s, int lo, int *out, int *n)
{
    *n = 0;
    char *dup = strdup(s), *save = NULL;
    for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        long v;
        if (*n == MAX_LIST || !qlm_cli_int(flag, tok, lo, 1 << 20, &v)) {
            if (*n == MAX_LIST) qlm_cli_error(QLM_EUSAGE, "%s: at most %d values", flag, MAX_LIST);
            free(dup);
            return 0;
        }
        out[(*n)++] = (int)v;
    }
    free(dup);
    if (!*n) qlm_cli_error(QLM_EUSAGE, "%s: empty list", flag);
    return *n > 0;
}

static int parse_args(int argc, char **argv, bench_opts *o)
{
    *o = (bench_opts){.pp = {512}, .n_pp = 1, .tg = {128}, .n_tg = 1, .reps = 5, .n_batch = 512,
                      .kv_k = {QLM_KV_I8}, .kv_v = {QLM_KV_I8}, .n_kv = 1, .load_mode = -1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { bench_usage(stdout); return -1; }
        const int lf = qlm_cli_load_flag(a, &o->load_mode);
        if (lf < 0) return QLM_EUSAGE;
        if (lf) continue;
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        if (!v) return qlm_cli_error(QLM_EUSAGE, "%s: missing value (qlm bench --help)", a);
        long l;
        if (!strcmp(a, "--kv-type")) {
            char *dup = strdup(v), *save = NULL;
            o->n_kv = 0;
            for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                const int t = qlm_kv_type_parse(tok);
                if (t < 0 || o->n_kv == MAX_LIST) {
                    free(dup);
                    return qlm_cli_error(QLM_EUSAGE, "%s: expected up to %d of f32, f16, int8, got '%s'", a, MAX_LIST, v);
                }
                o->kv_k[o->n_kv] = o->kv_v[o->n_kv] = (qlm_kv_type)t;
                o->n_kv++;
            }
            free(dup);
            if (!o->n_kv) return qlm_cli_error(QLM_EUSAGE, "%s: empty list", a);
            continue;
        }
        const int kvf = qlm_cli_kv_flag(a, v, &o->kv_k[0], &o->kv_v[0]);
        if (kvf < 0) return QLM_EUSAGE;
        if (kvf) { o->n_kv = 1; continue; }
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) o->model = v;
        else if (!strcmp(a, "-p") || !strcmp(a, "--n-prompt")) { if (!parse_list(a, v, 0, o->pp, &o->n_pp)) return QLM_EUSAGE; }
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-gen")) { if (!parse_list(a, v, 0, o->tg, &o->n_tg)) return QLM_EUSAGE; }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) { if (!parse_list(a, v, 1, o->threads, &o->n_threads)) return QLM_EUSAGE; }
        else if (!strcmp(a, "-r") || !strcmp(a, "--repetitions")) {
            if (!qlm_cli_int(a, v, 1, 1000, &l)) return QLM_EUSAGE;
            o->reps = (int)l;
        } else if (!strcmp(a, "-d") || !strcmp(a, "--n-depth")) {
            if (!qlm_cli_int(a, v, 0, 1 << 20, &l)) return QLM_EUSAGE;
            o->depth = (int)l;
        } else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size")) {
            if (!qlm_cli_int(a, v, 1, 1 << 16, &l)) return QLM_EUSAGE;
            o->n_batch = (int)l;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!strcmp(v, "table")) o->out = OUT_TABLE;
            else if (!strcmp(v, "csv")) o->out = OUT_CSV;
            else if (!strcmp(v, "json")) o->out = OUT_JSON;
            else return qlm_cli_error(QLM_EUSAGE, "%s: expected table, csv or json, got '%s'", a, v);
        } else
            return qlm_cli_error(QLM_EUSAGE, "unknown option '%s' (qlm bench --help)", a);
    }
    if (!o->model) return qlm_cli_error(QLM_EUSAGE, "no model: pass -m FILE.gguf");
    return 0;
}

/* Fills positions [0, depth) of sequence 0 with random tokens (untimed),
 * as llama-bench -d does; the runs then start after them. */
static int fill_depth(qlm_ctx *c, const qlm_model *m, int depth, uint64_t *rng, qlm_err *err)
{
    qlm_kv_clear(qlm_ctx_kv(c));
    if (depth <= 0) return 0;
    qlm_batch b;
    if (qlm_batch_init(&b, depth)) return qlm_fail(err, QLM_ERUNTIME, "out of memory");
    for (int i = 0; i < depth; i++) {
        *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
        qlm_batch_add(&b, (int32_t)((*rng >> 33) % (uint64_t)m->hp.n_vocab), i, 0, false);
    }
    const int rc = qlm_decode(c, &b, err);
    qlm_batch_free(&b);
    return rc;
}

/* One timed run: a pp test decodes n random tokens as one batch, a tg test
 * decodes n tokens one at a time; both from an empty cache (or after the
 * -d context), as llama-bench does.  Returns elapsed ms, or < 0 on error. */
static double run_once(qlm_ctx *c, const qlm_model *m, int n, int is_pp, int depth, uint64_t *rng, qlm_err *err)
{
    qlm_kv_seq_rm(qlm_ctx_kv(c), -1, depth, -1);
    qlm_batch b;
    if (qlm_batch_init(&b, is_pp ? n : 1)) {
        qlm_fail(err, QLM_ERUNTIME, "out of memory");
        return -1;
    }
    double t0 = qlm_now_ms(), ms = -1;
    for (int i = 0; i < n; i += is_pp ? n : 1) {
        b.n = 0;
        for (int j = 0; j < (is_pp ? n : 1); j++) {
            *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
            qlm_batch_add(&b, (int32_t)((*rng >> 33) % (uint64_t)m->hp.n_vocab), depth + i + j, 0, j == (is_pp ? n : 1) - 1);
        }
        if (qlm_decode(c, &b, err)) goto done;
    }
    ms = qlm_now_ms() - t0;
done:
    qlm_batch_free(&b);
    return ms;
}

static size_t model_bytes(const qlm_model *m)
{
    size_t n = 0;
    for (uint64_t i = 0; i < m->gguf->n_tensors; i++) n += m->gguf->tensors[i].nbytes;
    return n;
}

int qlm_cmd_bench(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--kernels") || !strcmp(argv[i], "--bandwidth")) return qlm_bench_kernels(argc, argv);
    bench_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    qlm_err err = {0};
    qlm_model *m = NULL;
    const gguf_load_mode lm = o.load_mode < 0 ? GGUF_LOAD_MMAP : (gguf_load_mode)o.load_mode;
    if ((rc = qlm_model_load_mode(&m, o.model, lm, &err))) return qlm_cli_report(&err);
    if (!o.n_threads) o.threads[o.n_threads++] = 0;
    int max_ctx = 16;
    for (int i = 0; i < o.n_pp; i++) max_ctx = o.pp[i] > max_ctx ? o.pp[i] : max_ctx;
    for (int i = 0; i < o.n_tg; i++) max_ctx = o.tg[i] > max_ctx ? o.tg[i] : max_ctx;
    max_ctx += o.depth;

    const double size_gib = model_bytes(m) / 1073741824.0;
    if (o.out == OUT_TABLE) {
        printf("| model %-*s | size GiB | kernels     | threads | kv        | test   |          t/s |\n", 20, "");
        printf("|%s|----------|-------------|---------|-----------|--------|--------------|\n", "----------------------------");
    } else if (o.out == OUT_CSV)
        printf("model,size_bytes,kernels,threads,kv_type,test,n_tokens,reps,avg_ts,stddev_ts\n");
    int first_json = 1;
    if (o.out == OUT_JSON) printf("[");
    uint64_t rng = 42;
    for (int ti = 0; ti < o.n_threads * o.n_kv && !rc; ti++) {
        qlm_ctx *c = NULL;
        const int ki = ti % o.n_kv;
        qlm_ctx_params cp = {.n_ctx = max_ctx, .n_batch = o.n_batch, .n_threads = o.threads[ti / o.n_kv],
                             .type_k = o.kv_k[ki], .type_v = o.kv_v[ki]};
        if ((rc = qlm_ctx_new(&c, m, &cp, &err))) break;
        char kvname[16];
        if (o.kv_k[ki] == o.kv_v[ki]) snprintf(kvname, sizeof kvname, "%s", qlm_kv_type_name(o.kv_k[ki]));
        else snprintf(kvname, sizeof kvname, "%s/%s", qlm_kv_type_name(o.kv_k[ki]), qlm_kv_type_name(o.kv_v[ki]));
        const int threads = qlm_ctx_n_threads(c);
        for (int kind = 0; kind < 2 && !rc; kind++) {
            const int *ns = kind == 0 ? o.pp : o.tg, count = kind == 0 ? o.n_pp : o.n_tg;
            for (int k = 0; k < count && !rc; k++) {
                const int n = ns[k];
                if (n <= 0) continue;
                double sum = 0, sum2 = 0;
                if (fill_depth(c, m, o.depth, &rng, &err)) { rc = err.code; break; }
                if (run_once(c, m, n, kind == 0, o.depth, &rng, &err) < 0) { rc = err.code; break; } /* warm-up */
                /* what the model still does in the background after its
                 * first pass (huge pages) finishes before the timed runs:
                 * they measure the steady state, as llama-bench's do after
                 * its load has repacked the weights */
                qlm_model_settle(m);
                for (int r = 0; r < o.reps; r++) {
                    const double ms = run_once(c, m, n, kind == 0, o.depth, &rng, &err);
                    if (ms < 0) { rc = err.code; break; }
                    const double ts = n * 1e3 / ms;
                    sum += ts;
                    sum2 += ts * ts;
                }
                if (rc) break;
                const double mean = sum / o.reps;
                const double sd = o.reps > 1 ? sqrt(fmax(0, (sum2 - o.reps * mean * mean) / (o.reps - 1))) : 0;
                char test[32];
                if (o.depth) snprintf(test, sizeof test, "%s%d@d%d", kind == 0 ? "pp" : "tg", n, o.depth);
                else snprintf(test, sizeof test, "%s%d", kind == 0 ? "pp" : "tg", n);
                if (o.out == OUT_TABLE)
                    printf("| %-26.26s | %8.3f | %-11s | %7d | %-9s | %-6s | %6.2f ± %4.2f |\n", m->name, size_gib,
                           qt_isa_name(), threads, kvname, test, mean, sd);
                else if (o.out == OUT_CSV)
                    printf("\"%s\",%zu,%s,%d,%s,%s,%d,%d,%.3f,%.3f\n", m->name, model_bytes(m), qt_isa_name(),
                           threads, kvname, test, n, o.reps, mean, sd);
                else {
                    printf("%s\n  {\"model\": \"%s\", \"size_bytes\": %zu, \"kernels\": \"%s\", \"threads\": %d, \"kv_type\": \"%s\", "
                           "\"test\": \"%s\", \"n_tokens\": %d, \"reps\": %d, \"avg_ts\": %.3f, \"stddev_ts\": %.3f}",
                           first_json ? "" : ",", m->name, model_bytes(m), qt_isa_name(), threads, kvname, test, n,
                           o.reps, mean, sd);
                    first_json = 0;
                }
                fflush(stdout);
            }
        }
        qlm_ctx_free(c);
    }
    if (o.out == OUT_JSON) printf("\n]\n");
    qlm_model_free(m);
    return rc ? qlm_cli_report(&err) : 0;
}
