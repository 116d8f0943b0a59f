/* bench.c - `qlm bench`: prompt processing and generation speed, reported
 * like llama-bench (mean ± sd tokens/s over repetitions) so the two can be
 * run side by side on the same file and threads.  It takes llama-bench's
 * flags for the same tests (-p -n -pg -d -b -ub -t -r -ctk -ctv -o,
 * --no-warmup --delay --progress), so a llama-bench command line runs
 * unchanged; the ones about GPUs and attention kernels that qlm does not
 * have (-ngl, -fa off) are taken with one warning line. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quant/cpu.h"
#include "src/cli.h"
#include "src/generate.h"
#include "src/model.h"
#include "tools/tools.h"

#define MAX_LIST 16
/* llama-bench's -b and -ub defaults: a pp512 test is one forward pass */
#define DEFAULT_BATCH 2048
#define DEFAULT_UBATCH 512

typedef enum { OUT_TABLE, OUT_CSV, OUT_JSON, OUT_JSONL } bench_out;

typedef struct bench_opts {
    const char *model;
    int pp[MAX_LIST], n_pp;
    int tg[MAX_LIST], n_tg;
    int pg[MAX_LIST][2], n_pg; /* pp then tg tokens, timed together */
    int threads[MAX_LIST], n_threads;
    int depth[MAX_LIST], n_depth;
    int batch[MAX_LIST], n_batch;   /* tokens handed to one decode call */
    int ubatch[MAX_LIST], n_ubatch; /* tokens per forward pass (at most the batch) */
    bool sizes_given;               /* -b or -ub: the table shows them */
    int reps, delay_s;
    bool warmup, progress;
    int load_mode; /* gguf_load_mode, -1: default (mmap) */
    qlm_kv_type kv_k[MAX_LIST], kv_v[MAX_LIST];
    int n_kv;
    bench_out out;
} bench_opts;

static void bench_usage(FILE *f)
{
    fprintf(f,
        "usage: qlm bench -m MODEL [options]\n"
        "\n"
        "Measures prompt processing (ppN: a prompt of N tokens, decoded in batches of\n"
        "-b) and generation (tgN: N tokens one at a time) in tokens/s, like\n"
        "llama-bench, whose flags it takes.  LIST is comma-separated values; every\n"
        "combination is run.\n"
        "\n"
        "  -m, --model FILE         GGUF model\n"
        "  -p, --n-prompt LIST      prompt lengths (default 512; 0 skips)\n"
        "  -n, --n-gen LIST         generation lengths (default 128; 0 skips)\n"
        "  -pg PP,TG                a prompt of PP tokens then TG generated, timed together\n"
        "                           (test ppPP+tgTG; repeat the flag for more)\n"
        "  -d, --n-depth LIST       run each test after N tokens of context (default 0)\n"
        "  -t, --threads LIST       thread counts (default: physical cores)\n"
        "  -r, --repetitions N      timed runs per test (default 5)\n"
        "  -b, --batch-size LIST    prompt tokens per decode call (default 2048)\n"
        "  -ub, --ubatch-size LIST  prompt tokens per forward pass (default 512)\n"
        "      --kv-type LIST       KV cache types to compare, e.g. int8,f16,f32 (default int8)\n"
        "  -ctk, -ctv T             K or V cache type alone (one configuration)\n"
        "  -o, --output FMT         table (or md, the default), csv, json or jsonl\n"
        "      --no-warmup          no untimed run before each test's timed ones\n"
        "      --delay S            seconds to wait before each test after the first\n"
        "      --progress           a line on stderr as each run starts\n"
        "      --mmap, --no-mmap, --mlock  (or -mmp 0|1, -lm none|mmap|mlock)\n"
        "                           how the weights are loaded, as in qlm run (default\n"
        "                           --mmap; --no-mmap reads them into anonymous memory)\n"
        "  -ngl, --n-gpu-layers LIST  taken for llama-bench command lines; this qlm has no\n"
        "                           GPU offload (a warning unless 0)\n"
        "  -fa, --flash-attn LIST   on, off or auto: qlm's attention is always the tiled\n"
        "                           online-softmax kind (off: a warning)\n"
        "      --kernels            instead: each type's dot-product kernels per ISA level\n"
        "                           in GB/s, next to memory bandwidth (qlm bench --kernels --help)\n");
}

/* Parses "a,b,c" (integers in [lo, 1 << 20]) into out; 0 on error
 * (message printed). */
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

static int parse_kv_list(const char *flag, const char *v, bench_opts *o)
{
    char *dup = strdup(v), *save = NULL;
    o->n_kv = 0;
    for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        const int t = qlm_kv_type_parse(tok);
        if (t < 0 || o->n_kv == MAX_LIST) {
            free(dup);
            return qlm_cli_error(QLM_EUSAGE, "%s: expected up to %d of f32, f16, int8, got '%s'", flag, MAX_LIST, v);
        }
        o->kv_k[o->n_kv] = o->kv_v[o->n_kv] = (qlm_kv_type)t;
        o->n_kv++;
    }
    free(dup);
    return o->n_kv ? 0 : qlm_cli_error(QLM_EUSAGE, "%s: empty list", flag);
}

/* -pg PP,TG: one more pair. */
static int parse_pg(const char *flag, const char *v, bench_opts *o)
{
    int pair[MAX_LIST], n;
    if (!parse_list(flag, v, 1, pair, &n)) return QLM_EUSAGE;
    if (n != 2) return qlm_cli_error(QLM_EUSAGE, "%s: expected PP,TG (two token counts), got '%s'", flag, v);
    if (o->n_pg == MAX_LIST) return qlm_cli_error(QLM_EUSAGE, "%s: at most %d pairs", flag, MAX_LIST);
    o->pg[o->n_pg][0] = pair[0];
    o->pg[o->n_pg][1] = pair[1];
    o->n_pg++;
    return 0;
}

/* -ngl LIST and -fa LIST: checked, and a warning where they ask for what
 * this qlm does not do; nothing else changes. */
static int parse_ngl(const char *flag, const char *v)
{
    char *dup = strdup(v), *save = NULL;
    bool any = false, ok = true;
    int n = 0;
    for (char *tok = strtok_r(dup, ",", &save); tok && ok; tok = strtok_r(NULL, ",", &save), n++) {
        long l;
        ok = qlm_cli_gpu_layers(flag, tok, &l);
        any |= l != 0;
    }
    free(dup);
    if (!ok) return QLM_EUSAGE;
    if (!n) return qlm_cli_error(QLM_EUSAGE, "%s: empty list", flag);
    if (any) qlm_cli_no_gpu_warning(flag, v);
    return 0;
}

static int parse_fa(const char *flag, const char *v)
{
    char *dup = strdup(v), *save = NULL;
    bool off = false, any = false;
    for (char *tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save), any = true) {
        if (!strcmp(tok, "off") || !strcmp(tok, "0")) off = true;
        else if (strcmp(tok, "on") && strcmp(tok, "1") && strcmp(tok, "auto")) {
            free(dup);
            return qlm_cli_error(QLM_EUSAGE, "%s: expected on, off or auto, got '%s'", flag, v);
        }
    }
    free(dup);
    if (!any) return qlm_cli_error(QLM_EUSAGE, "%s: empty list", flag);
    if (off)
        fprintf(stderr, "qlm: warning: %s %s: qlm's attention is always the tiled online-softmax kind; "
                        "every test uses it\n", flag, v);
    return 0;
}

/* llama-bench's load flags -mmp 0|1 and -lm MODE, as qlm's own. */
static int parse_load(const char *flag, const char *v, int *mode)
{
    const char *as = NULL;
    if (!strcmp(flag, "-mmp") || !strcmp(flag, "--mmap-mode"))
        as = !strcmp(v, "0") ? "--no-mmap" : !strcmp(v, "1") ? "--mmap" : NULL;
    else if (!strcmp(v, "none")) as = "--no-mmap";
    else if (!strcmp(v, "mmap") || !strcmp(v, "auto")) as = "--mmap";
    else if (!strcmp(v, "mlock") || !strcmp(v, "mmap+mlock")) as = "--mlock";
    if (!as)
        return qlm_cli_error(QLM_EUSAGE, "%s: expected %s, got '%s'", flag,
                             flag[1] == 'm' ? "0 or 1" : "none, mmap, mlock, mmap+mlock or auto", v);
    return qlm_cli_load_flag(as, mode) < 0 ? QLM_EUSAGE : 0;
}

/* The flags without a value; 1 if a is one. */
static int bench_switch(const char *a, bench_opts *o)
{
    if (!strcmp(a, "--no-warmup")) o->warmup = false;
    else if (!strcmp(a, "--progress")) o->progress = true;
    else return 0;
    return 1;
}

static int parse_args(int argc, char **argv, bench_opts *o)
{
    *o = (bench_opts){.pp = {512}, .n_pp = 1, .tg = {128}, .n_tg = 1, .depth = {0}, .n_depth = 1,
                      .batch = {DEFAULT_BATCH}, .n_batch = 1, .ubatch = {DEFAULT_UBATCH}, .n_ubatch = 1,
                      .reps = 5, .warmup = true, .kv_k = {QLM_KV_I8}, .kv_v = {QLM_KV_I8}, .n_kv = 1,
                      .load_mode = -1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { bench_usage(stdout); return -1; }
        const int lf = qlm_cli_load_flag(a, &o->load_mode);
        if (lf < 0) return QLM_EUSAGE;
        if (lf || bench_switch(a, o)) continue;
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        if (!v) return qlm_cli_error(QLM_EUSAGE, "%s: missing value (qlm bench --help)", a);
        long l;
        int rc = 0;
        const int kvf = strcmp(a, "--kv-type") ? qlm_cli_kv_flag(a, v, &o->kv_k[0], &o->kv_v[0]) : 0;
        if (kvf < 0) return QLM_EUSAGE;
        if (kvf) { o->n_kv = 1; continue; }
        if (!strcmp(a, "--kv-type")) rc = parse_kv_list(a, v, o);
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) o->model = v;
        else if (!strcmp(a, "-p") || !strcmp(a, "--n-prompt")) rc = parse_list(a, v, 0, o->pp, &o->n_pp) ? 0 : QLM_EUSAGE;
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-gen")) rc = parse_list(a, v, 0, o->tg, &o->n_tg) ? 0 : QLM_EUSAGE;
        else if (!strcmp(a, "-pg")) rc = parse_pg(a, v, o);
        else if (!strcmp(a, "-d") || !strcmp(a, "--n-depth")) rc = parse_list(a, v, 0, o->depth, &o->n_depth) ? 0 : QLM_EUSAGE;
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) rc = parse_list(a, v, 1, o->threads, &o->n_threads) ? 0 : QLM_EUSAGE;
        else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size")) {
            rc = parse_list(a, v, 1, o->batch, &o->n_batch) ? 0 : QLM_EUSAGE;
            o->sizes_given = true;
        } else if (!strcmp(a, "-ub") || !strcmp(a, "--ubatch-size")) {
            rc = parse_list(a, v, 1, o->ubatch, &o->n_ubatch) ? 0 : QLM_EUSAGE;
            o->sizes_given = true;
        } else if (!strcmp(a, "-r") || !strcmp(a, "--repetitions")) {
            if (!qlm_cli_int(a, v, 1, 1000, &l)) return QLM_EUSAGE;
            o->reps = (int)l;
        } else if (!strcmp(a, "--delay")) {
            if (!qlm_cli_int(a, v, 0, 3600, &l)) return QLM_EUSAGE;
            o->delay_s = (int)l;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!strcmp(v, "table") || !strcmp(v, "md")) o->out = OUT_TABLE;
            else if (!strcmp(v, "csv")) o->out = OUT_CSV;
            else if (!strcmp(v, "json")) o->out = OUT_JSON;
            else if (!strcmp(v, "jsonl")) o->out = OUT_JSONL;
            else return qlm_cli_error(QLM_EUSAGE, "%s: expected table, md, csv, json or jsonl, got '%s'", a, v);
        } else if (!strcmp(a, "-ngl") || !strcmp(a, "--n-gpu-layers") || !strcmp(a, "--gpu-layers"))
            rc = parse_ngl(a, v);
        else if (!strcmp(a, "-fa") || !strcmp(a, "--flash-attn"))
            rc = parse_fa(a, v);
        else if (!strcmp(a, "-mmp") || !strcmp(a, "--mmap-mode") || !strcmp(a, "-lm") || !strcmp(a, "--load-mode"))
            rc = parse_load(a, v, &o->load_mode);
        else
            return qlm_cli_error(QLM_EUSAGE, "unknown option '%s' (qlm bench --help)", a);
        if (rc) return rc;
    }
    if (!o->model) return qlm_cli_error(QLM_EUSAGE, "no model: pass -m FILE.gguf");
    return 0;
}

/* One test: n_prompt tokens decoded in calls of `batch` (pp), then n_gen
 * one at a time (tg); pg tests have both. */
typedef struct bench_test {
    int n_prompt, n_gen, depth, batch;
} bench_test;

static void random_token(qlm_batch *b, const qlm_model *m, uint64_t *rng, int pos, bool logits)
{
    *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
    qlm_batch_add(b, (int32_t)((*rng >> 33) % (uint64_t)m->hp.n_vocab), pos, 0, logits);
}

/* Fills positions [0, depth) of sequence 0 with random tokens (untimed),
 * as llama-bench -d does; the runs then start after them. */
static int fill_depth(qlm_ctx *c, const qlm_model *m, int depth, uint64_t *rng, qlm_err *err)
{
    qlm_kv_clear(qlm_ctx_kv(c));
    if (depth <= 0) return 0;
    qlm_batch b;
    if (qlm_batch_init(&b, depth)) return qlm_fail(err, QLM_ERUNTIME, "out of memory");
    for (int i = 0; i < depth; i++) random_token(&b, m, rng, i, false);
    const int rc = qlm_decode(c, &b, err);
    qlm_batch_free(&b);
    return rc;
}

/* One timed run from an empty cache (or after the -d context), as
 * llama-bench's: random prompt tokens in decode calls of t->batch, the
 * last of each call asking for logits, then generated tokens one per
 * call.  Returns elapsed ms, or < 0 on error. */
static double run_once(qlm_ctx *c, const qlm_model *m, const bench_test *t, uint64_t *rng, qlm_err *err)
{
    qlm_kv_seq_rm(qlm_ctx_kv(c), -1, t->depth, -1);
    qlm_batch b;
    const int cap = t->n_prompt < t->batch ? t->n_prompt : t->batch;
    if (qlm_batch_init(&b, cap > 1 ? cap : 1)) {
        qlm_fail(err, QLM_ERUNTIME, "out of memory");
        return -1;
    }
    int pos = t->depth;
    double t0 = qlm_now_ms(), ms = -1;
    for (int done = 0; done < t->n_prompt;) {
        const int k = t->n_prompt - done < t->batch ? t->n_prompt - done : t->batch;
        b.n = 0;
        for (int j = 0; j < k; j++) random_token(&b, m, rng, pos++, j == k - 1);
        if (qlm_decode(c, &b, err)) goto done;
        done += k;
    }
    for (int i = 0; i < t->n_gen; i++) {
        b.n = 0;
        random_token(&b, m, rng, pos++, true);
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

/* The tests of one configuration, in llama-bench's order: each prompt
 * length, each generation length, each pair; 0 lengths skipped. */
static int list_tests(const bench_opts *o, int depth, int batch, bench_test *out)
{
    int n = 0;
    for (int i = 0; i < o->n_pp; i++)
        if (o->pp[i] > 0) out[n++] = (bench_test){o->pp[i], 0, depth, batch};
    for (int i = 0; i < o->n_tg; i++)
        if (o->tg[i] > 0) out[n++] = (bench_test){0, o->tg[i], depth, batch};
    for (int i = 0; i < o->n_pg; i++) out[n++] = (bench_test){o->pg[i][0], o->pg[i][1], depth, batch};
    return n;
}

static void test_name(const bench_test *t, char *name, size_t size)
{
    int k = t->n_gen == 0 ? snprintf(name, size, "pp%d", t->n_prompt)
            : t->n_prompt == 0 ? snprintf(name, size, "tg%d", t->n_gen)
                               : snprintf(name, size, "pp%d+tg%d", t->n_prompt, t->n_gen);
    if (t->depth && k > 0 && (size_t)k < size) snprintf(name + k, size - (size_t)k, "@d%d", t->depth);
}

/* What one configuration's row carries besides the test. */
typedef struct bench_cfg {
    int threads, ubatch;
    char kv[16];
} bench_cfg;

static void print_header(const bench_opts *o)
{
    if (o->out == OUT_TABLE) {
        printf("| model %-20s | size GiB | kernels     | threads | kv        |%s test           |          t/s |\n", "",
               o->sizes_given ? " n_batch | n_ubatch |" : "");
        printf("|----------------------------|----------|-------------|---------|-----------|%s----------------|--------------|\n",
               o->sizes_given ? "---------|----------|" : "");
    } else if (o->out == OUT_CSV)
        printf("model,size_bytes,kernels,threads,kv_type,test,n_tokens,reps,avg_ts,stddev_ts,"
               "n_prompt,n_gen,n_depth,n_batch,n_ubatch\n");
    else if (o->out == OUT_JSON)
        printf("[");
}

static void print_row(const bench_opts *o, const qlm_model *m, const bench_cfg *cfg, const bench_test *t,
                      const double *ts, bool first)
{
    double sum = 0, sum2 = 0;
    for (int r = 0; r < o->reps; r++) sum += ts[r];
    const double mean = sum / o->reps;
    for (int r = 0; r < o->reps; r++) sum2 += (ts[r] - mean) * (ts[r] - mean);
    const double sd = o->reps > 1 ? sqrt(sum2 / (o->reps - 1)) : 0;
    char test[48];
    test_name(t, test, sizeof test);
    const int n_tokens = t->n_prompt + t->n_gen;
    if (o->out == OUT_TABLE) {
        printf("| %-26.26s | %8.3f | %-11s | %7d | %-9s |", m->name, model_bytes(m) / 1073741824.0, qt_isa_name(),
               cfg->threads, cfg->kv);
        if (o->sizes_given) printf(" %7d | %8d |", t->batch, cfg->ubatch);
        printf(" %-14s | %6.2f ± %4.2f |\n", test, mean, sd);
    } else if (o->out == OUT_CSV) {
        printf("\"%s\",%zu,%s,%d,%s,%s,%d,%d,%.3f,%.3f,%d,%d,%d,%d,%d\n", m->name, model_bytes(m), qt_isa_name(),
               cfg->threads, cfg->kv, test, n_tokens, o->reps, mean, sd, t->n_prompt, t->n_gen, t->depth, t->batch,
               cfg->ubatch);
    } else {
        const bool lines = o->out == OUT_JSONL;
        printf("%s{\"model\": \"%s\", \"size_bytes\": %zu, \"kernels\": \"%s\", \"threads\": %d, \"kv_type\": \"%s\", "
               "\"test\": \"%s\", \"n_tokens\": %d, \"n_prompt\": %d, \"n_gen\": %d, \"n_depth\": %d, "
               "\"n_batch\": %d, \"n_ubatch\": %d, \"reps\": %d, \"avg_ts\": %.3f, \"stddev_ts\": %.3f, "
               "\"samples_ts\": [",
               lines ? "" : first ? "\n  " : ",\n  ", m->name, model_bytes(m), qt_isa_name(), cfg->threads, cfg->kv,
               test, n_tokens, t->n_prompt, t->n_gen, t->depth, t->batch, cfg->ubatch, o->reps, mean, sd);
        for (int r = 0; r < o->reps; r++) printf("%s%.3f", r ? ", " : "", ts[r]);
        printf("]}%s", lines ? "\n" : "");
    }
    fflush(stdout);
}

/* Runs one test (fill the context, warm up, the timed runs) into ts. */
static int run_test(qlm_ctx *c, qlm_model *m, const bench_opts *o, const bench_test *t, const char *label,
                    uint64_t *rng, double *ts, qlm_err *err)
{
    if (fill_depth(c, m, t->depth, rng, err)) return err->code;
    if (o->warmup) {
        if (o->progress) fprintf(stderr, "qlm bench: %s: warm-up\n", label);
        if (run_once(c, m, t, rng, err) < 0) return err->code;
    }
    /* what the model still does in the background after its first pass
     * (huge pages) finishes before the timed runs: they measure the
     * steady state, as llama-bench's do after its load has repacked the
     * weights */
    qlm_model_settle(m);
    for (int r = 0; r < o->reps; r++) {
        if (o->progress) fprintf(stderr, "qlm bench: %s: run %d/%d\n", label, r + 1, o->reps);
        const double ms = run_once(c, m, t, rng, err);
        if (ms < 0) return err->code;
        ts[r] = (t->n_prompt + t->n_gen) * 1e3 / ms;
    }
    return 0;
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
    /* one context per configuration holds its deepest, longest test */
    int longest = 16, deepest = 0;
    for (int i = 0; i < o.n_pp; i++) longest = o.pp[i] > longest ? o.pp[i] : longest;
    for (int i = 0; i < o.n_tg; i++) longest = o.tg[i] > longest ? o.tg[i] : longest;
    for (int i = 0; i < o.n_pg; i++) longest = o.pg[i][0] + o.pg[i][1] > longest ? o.pg[i][0] + o.pg[i][1] : longest;
    for (int i = 0; i < o.n_depth; i++) deepest = o.depth[i] > deepest ? o.depth[i] : deepest;
    bench_test tests[3 * MAX_LIST];
    const int per_depth = list_tests(&o, 0, 0, tests);
    const int n_cfg = o.n_threads * o.n_kv * o.n_batch * o.n_ubatch;
    const int total = n_cfg * o.n_depth * per_depth;
    double *ts = malloc(sizeof *ts * (size_t)o.reps);
    if (!ts) rc = qlm_fail(&err, QLM_ERUNTIME, "out of memory");

    print_header(&o);
    uint64_t rng = 42;
    int done = 0;
    for (int ci = 0; ci < n_cfg && !rc; ci++) {
        /* configurations in order: threads, then KV type, batch, ubatch */
        const int ui = ci % o.n_ubatch, bi = ci / o.n_ubatch % o.n_batch, ki = ci / o.n_ubatch / o.n_batch % o.n_kv,
                  ti = ci / o.n_ubatch / o.n_batch / o.n_kv;
        const int batch = o.batch[bi], ubatch = o.ubatch[ui] < batch ? o.ubatch[ui] : batch;
        qlm_ctx *c = NULL;
        qlm_ctx_params cp = {.n_ctx = deepest + longest, .n_batch = ubatch, .n_threads = o.threads[ti],
                             .type_k = o.kv_k[ki], .type_v = o.kv_v[ki]};
        if ((rc = qlm_ctx_new(&c, m, &cp, &err))) break;
        bench_cfg cfg = {.threads = qlm_ctx_n_threads(c), .ubatch = qlm_ctx_n_batch(c)};
        if (o.kv_k[ki] == o.kv_v[ki]) snprintf(cfg.kv, sizeof cfg.kv, "%s", qlm_kv_type_name(o.kv_k[ki]));
        else snprintf(cfg.kv, sizeof cfg.kv, "%s/%s", qlm_kv_type_name(o.kv_k[ki]), qlm_kv_type_name(o.kv_v[ki]));
        for (int di = 0; di < o.n_depth && !rc; di++) {
            list_tests(&o, o.depth[di], batch, tests);
            for (int k = 0; k < per_depth && !rc; k++, done++) {
                char name[48], label[96];
                test_name(&tests[k], name, sizeof name);
                snprintf(label, sizeof label, "test %d/%d (%s, %d threads)", done + 1, total, name, cfg.threads);
                if (done && o.delay_s) sleep((unsigned)o.delay_s);
                if ((rc = run_test(c, m, &o, &tests[k], label, &rng, ts, &err))) break;
                print_row(&o, m, &cfg, &tests[k], ts, done == 0);
            }
        }
        qlm_ctx_free(c);
    }
    if (o.out == OUT_JSON) printf("\n]\n");
    free(ts);
    qlm_model_free(m);
    return rc ? qlm_cli_report(&err) : 0;
}
