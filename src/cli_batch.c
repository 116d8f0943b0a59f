/* cli_batch.c - `qlm batch`: every line of a JSONL file through one loaded
 * model, several sequences decoded together.
 *
 * Continuous batching: up to --parallel sequences live in the KV cache at
 * once, one per slot (sequence id = slot).  The prompts that take slots
 * together are prefilled together, in passes whose arithmetic is what
 * each prompt's would be alone (prefill_round); then each step decodes
 * the next token of every live sequence in one qlm_decode batch, and a
 * finished sequence's slot takes the next prompt at once.  Output
 * lines come out in input order (finished lines wait for earlier ones),
 * each written whole with one write() and fsync'd, so a killed run leaves
 * at most one partial line; with -o, a rerun drops that partial line and
 * skips the ids already done. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chat_fmt.h"
#include "cli.h"
#include "cli_spec.h"
#include "generate.h"
#include "ggml-lite/threads.h"
#include "json.h"
#include "jsonl.h"
#include "model.h"
#include "stop.h"
#include "strbuf.h"

/* Set by the SIGINT and SIGTERM handler: write the lines already done,
 * then exit 130. */
static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

#define MAX_STOPS 16

typedef struct batch_opts {
    const char *model, *input, *output, *chat_template;
    int parallel, n_predict, n_ctx, n_threads, n_batch;
    qlm_sampler_params sp;
    const char *stops[MAX_STOPS];
    int n_stops;
    bool verbose;
    int load_mode;  /* gguf_load_mode, -1: default */
    qlm_spec_opts spec;
} batch_opts;

/* One input line, parsed. */
typedef struct job {
    long line;              /* 1-based line number in the input */
    long order;             /* index among the lines this run writes */
    char *id;               /* the id as compact JSON ("null" if none) */
    char *error;            /* set: this line gets an error record */
    int32_t *ids;
    int n_ids;
    int n_predict;
    qlm_sampler_params sp;
    char *stops[MAX_STOPS];
    int n_stops;
} job;

typedef struct slot {
    bool busy;
    job j;
    qlm_sampler *smp;
    qlm_stopper stop;
    int pos;                /* position of `last` */
    int32_t last;           /* sampled, to be decoded in the next step */
    int n_gen;
    char *text;             /* released text */
    size_t len, cap;
    double t_start, prompt_ms;
    int cached;             /* prompt tokens taken from the cache */
    bool prefilling;        /* admitted; the prompt is computed in this round's prefill */
    /* The prompt whose cells this sequence holds (kept after the line
     * finishes, until the slot takes another): the prefixes others share. */
    int32_t *kv_toks;
    int n_kv_toks;
    /* speculative decoding (the drafter outlives the line, so a draft
     * model keeps its cache for the slot's next prompt) */
    qlm_drafter *drafter;
    qlm_draft draft;
    int32_t *hist;          /* prompt and generated tokens: what drafts continue */
    int n_hist;
    int n_drafted, n_accepted, n_rounds;
    double draft_ms;
    qlm_spec_adapt ad;      /* the draft length, per sequence */
    int step_acc, step_gen; /* this step's round: drafts accepted, tokens generated */
    bool step_rej;
    double step_draft_ms;
} slot;

/* A shared prefix is a multiple of this many tokens (the token groups of
 * the repacked Q4_0 matmul), and the rest of a prompt is decoded in chunks
 * that end where a whole prompt's chunks end (multiples of n_batch), with
 * at least two tokens in the last: each token then meets the same
 * arithmetic whether the prefix was computed by this sequence or by
 * another one with the same prefix (a common system prompt), so sharing
 * never changes a result. */
#define PREFIX_ALIGN 4

typedef struct resume_key {
    char *key;
    int count;
} resume_key;

typedef struct batch {
    batch_opts o;
    qlm_model *m;
    qlm_ctx *ctx;
    qlm_spec_cli sc;        /* drafter settings; sc.drafter is slot 0's */
    qlm_spec_verifier ver;
    qlm_chat_fmt fmt;
    bool have_fmt;
    char *fmt_error;        /* why "messages" lines cannot be rendered */
    int slot_ctx;           /* positions each sequence may use */
    FILE *in;
    long line_no;
    bool in_done;
    slot *slots;
    /* finished lines waiting for earlier ones: pending[order - next_write] */
    char **pending;
    long next_write, next_order, pending_cap;
    int out_fd;
    bool out_broken, out_tty;
    int out_errno;          /* why the output broke (EPIPE: the reader left) */
    resume_key *done;       /* ids already in the output (sorted) */
    size_t n_done;
    /* progress */
    bool progress;
    long total, finished, skipped, errors;
    long long gen_tokens, cached_tokens, drafted, accepted;
    long long prefill_passes; /* forward passes of prompt chunks */
    job held;               /* a line waiting for the next round (pick_prefix) */
    bool have_held;
    double t0, last_draw;
} batch;

static void batch_usage(FILE *f)
{
    fprintf(f,
        "usage: qlm batch -m MODEL IN.jsonl [-o OUT.jsonl] [options]\n"
        "\n"
        "Generates for every line of IN.jsonl (- for stdin) with the model loaded once.\n"
        "Each line is {\"id\": ..., \"prompt\": \"...\"} or {\"id\": ..., \"messages\": [{\"role\": ...,\n"
        "\"content\": ...}, ...]} (rendered with the chat template), optionally with\n"
        "n_predict, temperature, top_k, top_p, min_p, repeat_penalty, seed, ignore_eos\n"
        "and stop (a string or a list).  Each output line is {\"id\", \"text\", \"finish_reason\",\n"
        "\"tokens\", \"timings\"}, or {\"id\", \"line\", \"error\"} for a line that could not be\n"
        "run, in input order; blank input lines are skipped.\n"
        "\n"
        "  -m, --model FILE        GGUF model\n"
        "  -o, --output FILE       write the results to FILE (default stdout); if FILE\n"
        "                          already holds results, the ids done there are skipped\n"
        "                          and a partial last line is dropped (resume)\n"
        "      --resume            the same, said explicitly (needs -o)\n"
        "  -np, --parallel N       sequences decoded together (default 4, at most %d)\n"
        "  -n, --n-predict N       tokens per line unless the line says (default -1: until\n"
        "                          end of text or the sequence's context)\n"
        "  -c, --ctx-size N        context per sequence (default min(4096, training context))\n"
        "  -t, --threads N         threads (default: physical cores)\n"
        QLM_CLI_BATCH_HELP
        "  -s, --seed N, --temp X, --top-k N, --top-p X, --min-p X, --repeat-penalty X,\n"
        "  --repeat-last-n N,      sampling defaults for lines that do not set them\n"
        "  --ignore-eos            (as for qlm run; the default temperature is 0.8)\n"
        "      --stop STR          default stop string (repeatable)\n"
        QLM_CLI_TEMPLATE_HELP
        QLM_CLI_LOAD_HELP
        "%s"
        "                          In qlm batch each sequence drafts for itself (adapting\n"
        "                          its length to its acceptance and its share of each\n"
        "                          step's time), and the drafts of all sequences are\n"
        "                          checked in one batch.\n"
        "  -v, --verbose           log loading and a summary to stderr\n"
        "\n"
        "A progress bar is drawn on stderr when it is a terminal.  Exit status: 0 ok,\n"
        "1 usage, 2 cannot load the model or input, or some input lines were malformed\n"
        "(each got an error record; the rest ran), 3 runtime failure, 130 interrupted\n"
        "(finished lines are written; rerun with -o to resume).\n", QLM_MAX_SEQ, qlm_spec_usage);
}

static int parse_args(int argc, char **argv, batch_opts *o)
{
    *o = (batch_opts){.parallel = 4, .n_predict = -1, .sp = qlm_sampler_defaults(), .load_mode = -1,
                      .spec = qlm_spec_opts_defaults()};
    bool resume = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long l;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { batch_usage(stdout); return -1; }
        if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) { o->verbose = true; continue; }
        if (!strcmp(a, "--resume")) { resume = true; continue; }
        if (qlm_cli_gen_switch(a, &o->sp)) continue;
        const int lf = qlm_cli_load_flag(a, &o->load_mode);
        if (lf) { if (lf < 0) return QLM_EUSAGE; continue; }
        const int sr = qlm_spec_opt(&o->spec, argc, argv, &i);
        if (sr > 0) return sr;
        if (!sr) continue;
        if (a[0] != '-' || !strcmp(a, "-")) {
            if (o->input) return qlm_cli_error(QLM_EUSAGE, "one input file only ('%s' and '%s')", o->input, a);
            o->input = a;
            continue;
        }
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        if (!v) return qlm_cli_error(QLM_EUSAGE, "%s: missing value (qlm batch --help)", a);
        const int gf = qlm_cli_gen_flag(a, v, &o->sp, &o->n_predict, &o->n_ctx, &o->n_threads, &o->n_batch);
        if (gf < 0) return QLM_EUSAGE;
        if (gf) continue;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) o->model = v;
        else if (!strcmp(a, "-o") || !strcmp(a, "--output")) o->output = v;
        else if (!strcmp(a, "--chat-template")) {
            const int tf = qlm_cli_template_flag(v);
            if (tf) return tf;
            o->chat_template = v;
        }
        else if (!strcmp(a, "--stop")) {
            if (o->n_stops == MAX_STOPS) return qlm_cli_error(QLM_EUSAGE, "--stop: at most %d stop strings", MAX_STOPS);
            if (!*v) return qlm_cli_error(QLM_EUSAGE, "--stop: empty string");
            o->stops[o->n_stops++] = v;
        } else if (!strcmp(a, "-np") || !strcmp(a, "--parallel")) {
            if (!qlm_cli_int(a, v, 1, QLM_MAX_SEQ, &l)) return QLM_EUSAGE;
            o->parallel = (int)l;
        } else
            return qlm_cli_error(QLM_EUSAGE, "unknown option '%s' (qlm batch --help)", a);
    }
    if (!o->model) return qlm_cli_error(QLM_EUSAGE, "no model: pass -m FILE.gguf");
    if (!o->input) return qlm_cli_error(QLM_EUSAGE, "no input: pass a JSONL file (or - for stdin)");
    if (resume && !o->output) return qlm_cli_error(QLM_EUSAGE, "--resume needs -o FILE");
    return 0;
}

/* ---- resume: what the output already holds ---- */

static int key_cmp(const void *a, const void *b)
{
    return strcmp(((const resume_key *)a)->key, ((const resume_key *)b)->key);
}

/* The key a record is known by: its id, or for a line without one, the
 * line number. */
static char *record_key(const char *id_json, long line)
{
    char *k = NULL;
    if (strcmp(id_json, "null")) k = strdup(id_json);
    else if (asprintf(&k, "#line:%ld", line) < 0) k = NULL;
    return k;
}

static char *json_text(const qlm_jval *v)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) return NULL;
    if (v) qlm_json_write(f, v);
    else fputs("null", f);
    if (fclose(f)) { free(buf); return NULL; }
    return buf;
}

/* Opens the output for appending after its last complete line, and
 * records the ids found there. */
static int open_output(batch *b)
{
    const int fd = open(b->o.output, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return qlm_cli_error(QLM_ELOAD, "cannot open %s: %s", b->o.output, strerror(errno));
    b->out_fd = fd;
    FILE *f = fdopen(dup(fd), "r");
    if (!f) return qlm_cli_error(QLM_ERUNTIME, "cannot read %s: %s", b->o.output, strerror(errno));
    char *l = NULL;
    size_t cap = 0, cap_done = 0;
    ssize_t n;
    off_t good = 0;
    while ((n = getline(&l, &cap, f)) > 0) {
        if (l[n - 1] != '\n') break;   /* a partial last line: dropped */
        good += n;
        qlm_jval *v = NULL;
        qlm_err err = {0};
        if (qlm_json_parse(l, (size_t)n, &v, &err)) {
            free(l);
            fclose(f);
            return qlm_cli_error(QLM_ELOAD, "%s holds a line that is not JSON (%s): not a results file?",
                                 b->o.output, err.msg);
        }
        const qlm_jval *ln = qlm_json_get(v, "line");
        char *id = json_text(qlm_json_get(v, "id"));
        char *key = id ? record_key(id, ln && ln->type == QLM_JNUM ? (long)ln->num : 0) : NULL;
        free(id);
        qlm_jval_free(v);
        if (!key) { free(l); fclose(f); return qlm_cli_error(QLM_ERUNTIME, "out of memory"); }
        if (b->n_done == cap_done) {
            cap_done = cap_done ? cap_done * 2 : 64;
            resume_key *nd = realloc(b->done, cap_done * sizeof *nd);
            if (!nd) { free(key); free(l); fclose(f); return qlm_cli_error(QLM_ERUNTIME, "out of memory"); }
            b->done = nd;
        }
        b->done[b->n_done++] = (resume_key){.key = key, .count = 1};
    }
    free(l);
    fclose(f);
    if (ftruncate(fd, good) || lseek(fd, 0, SEEK_END) < 0)
        return qlm_cli_error(QLM_ERUNTIME, "cannot truncate %s: %s", b->o.output, strerror(errno));
    /* Sort and fold repeats into counts: an id given twice in the input
     * is done twice. */
    if (b->n_done) qsort(b->done, b->n_done, sizeof *b->done, key_cmp);
    size_t k = 0;
    for (size_t i = 0; i < b->n_done; i++) {
        if (k && !strcmp(b->done[k - 1].key, b->done[i].key)) {
            b->done[k - 1].count++;
            free(b->done[i].key);
        } else
            b->done[k++] = b->done[i];
    }
    b->n_done = k;
    return 0;
}

/* True (and one fewer left) if a record with this key is already done. */
static bool already_done(batch *b, const char *key)
{
    resume_key probe = {.key = (char *)key};
    resume_key *r = b->n_done ? bsearch(&probe, b->done, b->n_done, sizeof *b->done, key_cmp) : NULL;
    if (!r || !r->count) return false;
    r->count--;
    return true;
}

/* ---- output in input order ---- */

static void write_all(batch *b, const char *s, size_t n)
{
    if (b->out_broken) return;
    if ((b->out_errno = qlm_cli_write_all(b->out_fd, s, n))) b->out_broken = true;
}

static void flush_ready(batch *b)
{
    while (b->next_write < b->next_order && b->pending[0]) {
        char *line = b->pending[0];
        /* Results on the terminal the bar is drawn on: clear the bar first. */
        if (b->progress && b->out_tty) {
            fputs("\r\x1b[K", stderr);
            fflush(stderr);
        }
        write_all(b, line, strlen(line));
        /* fsync fails with EINVAL on a pipe or terminal: nothing to sync. */
        fsync(b->out_fd);
        free(line);
        memmove(b->pending, b->pending + 1, sizeof *b->pending * (size_t)(b->pending_cap - 1));
        b->pending[b->pending_cap - 1] = NULL;
        b->next_write++;
    }
}

static int put_result(batch *b, long order, char *line)
{
    if (!line) return qlm_cli_error(QLM_ERUNTIME, "out of memory");
    const long at = order - b->next_write;
    if (at >= b->pending_cap) {
        long cap = (at + 1) * 2;
        char **np = realloc(b->pending, sizeof *np * (size_t)cap);
        if (!np) { free(line); return qlm_cli_error(QLM_ERUNTIME, "out of memory"); }
        memset(np + b->pending_cap, 0, sizeof *np * (size_t)(cap - b->pending_cap));
        b->pending = np;
        b->pending_cap = cap;
    }
    b->pending[at] = line;
    b->finished++;
    flush_ready(b);
    return 0;
}

static char *error_record(const job *j)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) return NULL;
    fprintf(f, "{\"id\":%s,\"line\":%ld,\"error\":", j->id, j->line);
    qlm_json_str(f, j->error, strlen(j->error));
    fputs("}\n", f);
    if (fclose(f)) { free(buf); return NULL; }
    return buf;
}

/* ---- input lines to jobs ---- */

static void job_free(job *j)
{
    free(j->id);
    free(j->error);
    free(j->ids);
    for (int i = 0; i < j->n_stops; i++) free(j->stops[i]);
    memset(j, 0, sizeof *j);
}

static void job_fail(job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void job_fail(job *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&j->error, fmt, ap) < 0) j->error = NULL;
    va_end(ap);
}

static bool get_num(job *j, const qlm_jval *obj, const char *key, double lo, double hi, bool integer, double *out)
{
    const qlm_jval *v = qlm_json_get(obj, key);
    if (!v) return true;
    if (v->type != QLM_JNUM || v->num < lo || v->num > hi || (integer && v->num != (double)(long long)v->num)) {
        job_fail(j, "\"%s\" must be %s in [%g, %g]", key, integer ? "an integer" : "a number", lo, hi);
        return false;
    }
    *out = v->num;
    return true;
}

/* Sampling settings and stop strings of one line, over the defaults. */
static bool job_settings(batch *b, job *j, const qlm_jval *v)
{
    double d;
    j->sp = b->o.sp;
    j->n_predict = b->o.n_predict;
    d = j->n_predict;
    if (!get_num(j, v, "max_tokens", -1, 1 << 30, true, &d) || !get_num(j, v, "n_predict", -1, 1 << 30, true, &d))
        return false;
    j->n_predict = (int)d;
#define NUM(key, field, lo, hi, integer, type)                       \
    d = j->sp.field;                                                \
    if (!get_num(j, v, key, lo, hi, integer, &d)) return false;     \
    j->sp.field = (type)d;
    NUM("temperature", temp, 0, 100, false, float)
    NUM("top_k", top_k, 0, 1 << 30, true, int)
    NUM("top_p", top_p, 0, 1, false, float)
    NUM("min_p", min_p, 0, 1, false, float)
    NUM("repeat_penalty", repeat_penalty, 0.01, 100, false, float)
    NUM("seed", seed, 0, 9007199254740991.0, true, uint64_t)
#undef NUM
    const qlm_jval *ie = qlm_json_get(v, "ignore_eos");
    if (ie && ie->type != QLM_JNULL) {
        if (ie->type != QLM_JBOOL) { job_fail(j, "\"ignore_eos\" must be true or false"); return false; }
        j->sp.ignore_eos = ie->b;
    }
    const qlm_jval *st = qlm_json_get(v, "stop");
    if (!st || st->type == QLM_JNULL) {
        for (int i = 0; i < b->o.n_stops; i++)
            if (!(j->stops[j->n_stops++] = strdup(b->o.stops[i]))) return false;
        return true;
    }
    const size_t n = st->type == QLM_JARR ? st->n : 1;
    if (n > MAX_STOPS) { job_fail(j, "\"stop\": at most %d strings", MAX_STOPS); return false; }
    for (size_t i = 0; i < n; i++) {
        const qlm_jval *s = st->type == QLM_JARR ? &st->items[i] : st;
        if (s->type != QLM_JSTR || !s->len || memchr(s->str, 0, s->len)) {
            job_fail(j, "\"stop\" must be a non-empty string or a list of them");
            return false;
        }
        if (!(j->stops[j->n_stops++] = strdup(s->str))) return false;
    }
    return true;
}

static void job_prompt(batch *b, job *j, const qlm_jval *v)
{
    const qlm_jval *p = qlm_json_get(v, "prompt"), *ms = qlm_json_get(v, "messages");
    qlm_err err = {0};
    int32_t *ids = NULL;
    size_t n_ids = 0;
    int rc;
    if (!p == !ms) { job_fail(j, "needs exactly one of \"prompt\" and \"messages\""); return; }
    if (p) {
        if (p->type != QLM_JSTR) { job_fail(j, "\"prompt\" must be a string"); return; }
        rc = qlm_tokenize(b->m->vocab, p->str, p->len, qlm_vocab_add_bos(b->m->vocab), true, &ids, &n_ids, &err);
    } else {
        if (ms->type != QLM_JARR || !ms->n) { job_fail(j, "\"messages\" must be a non-empty list"); return; }
        for (size_t i = 0; i < ms->n; i++) {
            const qlm_jval *r = qlm_json_get(&ms->items[i], "role"), *c = qlm_json_get(&ms->items[i], "content");
            if (!r || r->type != QLM_JSTR || !c || c->type != QLM_JSTR || memchr(c->str, 0, c->len)) {
                job_fail(j, "messages[%zu] needs string \"role\" and \"content\"", i);
                return;
            }
        }
        if (!b->have_fmt && !b->fmt_error) {
            if (qlm_chat_fmt_init(&b->fmt, b->m, b->o.chat_template, &err)) b->fmt_error = strdup(err.msg);
            else b->have_fmt = true;
        }
        if (!b->have_fmt) { job_fail(j, "%s", b->fmt_error ? b->fmt_error : "out of memory"); return; }
        qlm_chat_msg *msgs = calloc(ms->n, sizeof *msgs);
        if (!msgs) { job_fail(j, "out of memory"); return; }
        for (size_t i = 0; i < ms->n; i++)
            msgs[i] = (qlm_chat_msg){.role = qlm_json_get(&ms->items[i], "role")->str,
                                     .content = qlm_json_get(&ms->items[i], "content")->str};
        rc = qlm_chat_fmt_tokens(&b->fmt, msgs, ms->n, true, &ids, &n_ids, &err);
        free(msgs);
    }
    if (rc) { job_fail(j, "%s", err.msg); free(ids); return; }
    if (!n_ids) job_fail(j, "the prompt is empty");
    else if ((int)n_ids >= b->slot_ctx)
        job_fail(j, "the prompt is %zu tokens but each sequence's context holds %d (raise -c)", n_ids, b->slot_ctx);
    if (j->error) { free(ids); return; }
    j->ids = ids;
    j->n_ids = (int)n_ids;
}

/* Reads input lines until one this run must answer: 1 with *j filled (its
 * error set for a line that cannot run), 0 at the end of the input, or an
 * exit status on failure. */
static int next_job(batch *b, job *j)
{
    char *l = NULL;
    size_t cap = 0;
    ssize_t n;
    int ret = 0;
    while (!b->in_done) {
        memset(j, 0, sizeof *j);
        errno = 0;
        if ((n = getline(&l, &cap, b->in)) < 0) {
            b->in_done = true;
            if (ferror(b->in) && errno != EINTR) ret = qlm_cli_error(QLM_ELOAD, "reading %s: %s", b->o.input, strerror(errno));
            break;
        }
        j->line = ++b->line_no;
        if (!l[strspn(l, " \t\r\n")]) continue;   /* blank line */
        qlm_jval *v = NULL;
        qlm_err err = {0};
        if (qlm_json_parse(l, (size_t)n, &v, &err)) job_fail(j, "not JSON: %s", err.msg);
        else if (v->type != QLM_JOBJ) job_fail(j, "expected a JSON object");
        const qlm_jval *id = qlm_json_get(v, "id");
        j->id = json_text(id && id->type != QLM_JARR && id->type != QLM_JOBJ ? id : NULL);
        char *key = j->id ? record_key(j->id, j->line) : NULL;
        if (!key) { qlm_jval_free(v); job_free(j); ret = qlm_cli_error(QLM_ERUNTIME, "out of memory"); break; }
        const bool skip = already_done(b, key);
        free(key);
        if (skip) {
            qlm_jval_free(v);
            job_free(j);
            b->skipped++;
            continue;
        }
        if (!j->error && id && (id->type == QLM_JARR || id->type == QLM_JOBJ))
            job_fail(j, "\"id\" must be a string, number, boolean or null");
        if (!j->error && job_settings(b, j, v)) job_prompt(b, j, v);
        qlm_jval_free(v);
        if (j->error) {
            b->errors++;
            qlm_cli_error(QLM_ELOAD, "%s:%ld: %s", b->o.input, j->line, j->error);
        }
        j->order = b->next_order++;
        ret = 1;
        break;
    }
    free(l);
    return ret;
}

/* ---- sequences ---- */

static char *result_record(const slot *s, const char *finish)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) return NULL;
    const double gen_ms = qlm_now_ms() - s->t_start - s->prompt_ms;
    fprintf(f, "{\"id\":%s,\"text\":", s->j.id);
    qlm_json_str(f, s->text ? s->text : "", s->len);
    fprintf(f, ",\"finish_reason\":\"%s\",\"tokens\":{\"prompt\":%d,\"cached\":%d,\"generated\":%d",
            finish, s->j.n_ids, s->cached, s->n_gen);
    if (s->drafter) fprintf(f, ",\"drafted\":%d,\"accepted\":%d", s->n_drafted, s->n_accepted);
    fprintf(f, "},\"timings\":{\"prompt_ms\":%.3f,\"generate_ms\":%.3f", s->prompt_ms, gen_ms);
    if (s->drafter) fprintf(f, ",\"draft_ms\":%.3f", s->draft_ms);
    fputs("}}\n", f);
    if (fclose(f)) { free(buf); return NULL; }
    return buf;
}

static bool text_add(slot *s, const char *p, size_t n)
{
    /* nothing to add may come as NULL (a stopper that never saw text) */
    return !n || qlm_strbuf_add(&s->text, &s->len, &s->cap, p, n);
}

/* Clears a slot for its next line, keeping what outlives a line: the
 * prompt its cells hold, its drafter and buffers. */
static void slot_reset(slot *s)
{
    const slot keep = *s;
    memset(s, 0, sizeof *s);
    s->kv_toks = keep.kv_toks;
    s->n_kv_toks = keep.n_kv_toks;
    s->drafter = keep.drafter;
    s->draft = keep.draft;
    s->hist = keep.hist;
}

static int finish(batch *b, slot *s, int seq, const char *reason)
{
    if (strcmp(reason, "stop")) {
        const char *rest;
        size_t rn;
        qlm_stopper_flush(&s->stop, &rest, &rn);
        if (!text_add(s, rest, rn)) return qlm_cli_error(QLM_ERUNTIME, "out of memory");
    }
    int rc = put_result(b, s->j.order, result_record(s, reason));
    b->gen_tokens += s->n_gen;
    b->cached_tokens += s->cached;
    b->drafted += s->n_drafted;
    b->accepted += s->n_accepted;
    /* The generated tokens' cells go; the prompt's stay for sharing. */
    qlm_kv_seq_rm(qlm_ctx_kv(b->ctx), seq, s->n_kv_toks, -1);
    qlm_sampler_free(s->smp);
    qlm_stopper_free(&s->stop);
    s->j.ids = NULL;   /* owned by kv_toks */
    job_free(&s->j);
    free(s->text);
    slot_reset(s);
    return rc;
}

/* Passes on the next token of s, as qlm_generate does: the sequence
 * finishes at end of generation, a stop string, n_predict tokens or the
 * end of its context (then s->busy is false); otherwise the token is
 * decoded next step. */
static int take(batch *b, slot *s, int seq, int32_t tok)
{
    const qlm_vocab *v = b->m->vocab;
    if (qlm_vocab_is_eog(v, tok)) return finish(b, s, seq, "eos");
    qlm_sampler_accept(s->smp, tok);
    s->n_gen++;
    if (s->hist) s->hist[s->n_hist++] = tok;
    qlm_piece piece = {0};
    size_t n;
    const char *text = qlm_piece_of(&piece, v, tok, &n);
    const char *rel;
    size_t rn;
    const int hit = qlm_stopper_feed(&s->stop, text, n, &rel, &rn);
    qlm_piece_free(&piece);
    if (hit < 0 || !text_add(s, rel, rn)) return qlm_cli_error(QLM_ERUNTIME, "out of memory");
    if (hit) return finish(b, s, seq, "stop");
    if (s->pos + 1 >= b->slot_ctx) return finish(b, s, seq, "context");
    if (s->j.n_predict >= 0 && s->n_gen >= s->j.n_predict) return finish(b, s, seq, "length");
    s->last = tok;
    s->pos++;
    return 0;
}

/* Samples the next token of s from logits and passes it on. */
static int advance(batch *b, slot *s, int seq, const float *logits)
{
    if (s->j.n_predict >= 0 && s->n_gen >= s->j.n_predict) return finish(b, s, seq, "length");
    return take(b, s, seq, qlm_sample(s->smp, logits));
}

static int common_prefix(const int32_t *a, int na, const int32_t *b, int nb)
{
    int k = 0;
    while (k < na && k < nb && a[k] == b[k]) k++;
    return k;
}

/* The part of a held prefix of length l that a prompt of n tokens keeps:
 * a multiple of align, and at least two tokens left to compute. */
static int usable_prefix(int l, int n, int align)
{
    const int keep = l < n - 2 ? l : n - 2;
    return keep > 0 ? keep / align * align : 0;
}

/* The longest prefix of a prompt (ids, n) that some sequence holds: its
 * own slot's (from its last line) first, then the other slots'.  Returns
 * the length kept and the sequence it comes from in *src.  A slot whose
 * prompt waits in this round's prefill holds only its first `cached`
 * positions yet; *wait says that one of them will hold a longer prefix
 * than any held now: the prompt then waits for the next round. */
static int pick_prefix(const batch *b, int seq, const int32_t *ids, int n, int *src, bool *wait)
{
    const int nb = qlm_ctx_n_batch(b->ctx);
    const int align = nb % PREFIX_ALIGN ? nb : PREFIX_ALIGN;
    const slot *own = &b->slots[seq];
    int best = common_prefix(own->kv_toks, own->n_kv_toks, ids, n), later = 0;
    *src = seq;
    for (int o = 0; o < b->o.parallel; o++) {
        if (o == seq) continue;
        const slot *so = &b->slots[o];
        int l = common_prefix(so->kv_toks, so->n_kv_toks, ids, n);
        if (so->prefilling) {
            if (l > later) later = l;
            if (l > so->cached) l = so->cached;
        }
        if (l > best) { best = l; *src = o; }
    }
    *wait = usable_prefix(later, n, align) > usable_prefix(best, n, align);
    return usable_prefix(best, n, align);
}

/* Puts j in slot s (sequence seq), its first `keep` positions shared
 * from sequence src through the cache; the rest waits for the round's
 * prefill (prefill_round). */
static int admit(batch *b, slot *s, int seq, job *j, int keep, int src)
{
    int32_t *kv_toks = s->kv_toks;
    slot_reset(s);
    s->j = *j;
    memset(j, 0, sizeof *j);
    s->busy = s->prefilling = true;
    s->t_start = qlm_now_ms();
    const int n = s->j.n_ids;
    qlm_kv *kv = qlm_ctx_kv(b->ctx);
    if (src == seq) qlm_kv_seq_rm(kv, seq, keep, -1);
    else {
        qlm_kv_seq_rm(kv, seq, 0, -1);
        qlm_kv_seq_cp(kv, src, seq, 0, keep);
    }
    free(kv_toks);
    s->kv_toks = s->j.ids;   /* the slot owns the prompt from here on */
    s->n_kv_toks = n;
    s->cached = keep;
    if (!(s->smp = qlm_sampler_for(b->m, &s->j.sp))) return qlm_cli_error(QLM_ERUNTIME, "out of memory");
    qlm_stopper_init(&s->stop, (const char *const *)s->j.stops, s->j.n_stops);
    for (int i = 0; i < n; i++) qlm_sampler_accept(s->smp, s->j.ids[i]);
    return 0;
}

/* s's prompt is in the cache: its draft model reads it too, and the
 * first token is sampled from logits. */
static int prompt_done(batch *b, slot *s, int seq, const float *logits)
{
    qlm_err err = {0};
    const int n = s->j.n_ids;
    s->prefilling = false;
    if (s->drafter) {
        qlm_spec_adapt_init(&s->ad, s->drafter->rel_cost);
        /* a draft model reads the prompt too, in prompt time */
        memcpy(s->hist, s->j.ids, sizeof *s->hist * (size_t)n);
        s->n_hist = n;
        const int rc = s->drafter->begin ? s->drafter->begin(s->drafter, s->j.ids, n, &err) : 0;
        gl_set_threads(qlm_ctx_n_threads(b->ctx));
        if (rc) return qlm_cli_report(&err);
    }
    s->prompt_ms = qlm_now_ms() - s->t_start;
    s->pos = n - 1;
    return advance(b, s, seq, logits);
}

/* One forward pass of prompt chunks, at most one per sequence: tokens
 * [off[k], end[k]) of sequence seq[k]'s prompt. */
typedef struct pass {
    int n, tokens, rows;    /* chunks, their tokens, those that end a prompt */
    int seq[QLM_MAX_SEQ], off[QLM_MAX_SEQ], end[QLM_MAX_SEQ];
} pass;

/* Whether chunk (seq, off, end) may join p: the pass stays within one
 * micro-batch, and every chunk's tokens get the bits they get in a pass
 * of their own (qlm_ctx_same_order at the pass's size and at the chunk's). */
static bool pass_fits(const batch *b, const pass *p, int seq, int off, int end)
{
    const int nb = qlm_ctx_n_batch(b->ctx);
    if (!p->n) return true;
    if (p->tokens + end - off > nb) return false;
    const int T = p->tokens + end - off, rows = p->rows + (end == b->slots[seq].j.n_ids);
    if (!qlm_ctx_same_order(b->ctx, end - off, end == b->slots[seq].j.n_ids, T, rows)) return false;
    for (int k = 0; k < p->n; k++) {
        const int last = p->end[k] == b->slots[p->seq[k]].j.n_ids;
        if (p->seq[k] == seq || !qlm_ctx_same_order(b->ctx, p->end[k] - p->off[k], last, T, rows)) return false;
    }
    return true;
}

static int run_pass(batch *b, pass *p, qlm_batch *pb)
{
    qlm_err err = {0};
    pb->n = 0;
    for (int k = 0; k < p->n; k++) {
        const slot *s = &b->slots[p->seq[k]];
        for (int i = p->off[k]; i < p->end[k]; i++)
            qlm_batch_add(pb, s->j.ids[i], i, p->seq[k], i == s->j.n_ids - 1);
    }
    if (qlm_decode(b->ctx, pb, &err)) return qlm_cli_report(&err);
    b->prefill_passes++;
    int rc = 0;
    for (int k = 0, row = 0; k < p->n && !rc; k++)
        if (p->end[k] == b->slots[p->seq[k]].j.n_ids)
            rc = prompt_done(b, &b->slots[p->seq[k]], p->seq[k], qlm_logits(b->ctx, row++));
    p->n = p->tokens = p->rows = 0;
    return rc;
}

/* Computes the prompts admitted this round (seqs[0..n)), each in the
 * chunks PREFIX_ALIGN's comment describes, and samples each one's first
 * token.  Chunks of several prompts share a forward pass where that
 * keeps every chunk's bits (pass_fits): the weights are then read once
 * for all of them, where a pass per prompt read them for each. */
static int prefill_round(batch *b, const int *seqs, int n, qlm_batch *pb)
{
    const int nb = qlm_ctx_n_batch(b->ctx);
    pass p = {0};
    int rc = 0;
    pb->one_by_one = false;
    for (int k = 0; k < n && !rc; k++) {
        const slot *s = &b->slots[seqs[k]];
        for (int off = s->cached; off < s->j.n_ids && !rc; off = (off / nb + 1) * nb) {
            const int end = s->j.n_ids < (off / nb + 1) * nb ? s->j.n_ids : (off / nb + 1) * nb;
            if (!pass_fits(b, &p, seqs[k], off, end)) rc = run_pass(b, &p, pb);
            p.seq[p.n] = seqs[k];
            p.off[p.n] = off;
            p.end[p.n++] = end;
            p.tokens += end - off;
            p.rows += end == s->j.n_ids;
        }
    }
    if (!rc && p.n) rc = run_pass(b, &p, pb);
    pb->one_by_one = true;
    return rc;
}

static void draw_progress(batch *b, bool final)
{
    const double now = qlm_now_ms();
    if (!b->progress || (!final && now - b->last_draw < 100)) return;
    b->last_draw = now;
    const double secs = (now - b->t0) / 1e3;
    long long toks = b->gen_tokens;
    for (int i = 0; i < b->o.parallel; i++) toks += b->slots[i].n_gen;
    const double tps = secs > 0 ? toks / secs : 0;
    const long done = b->finished + b->skipped;
    char bar[32] = "";
    char eta[32] = "";
    if (b->total > 0) {
        const int w = 24, fill = (int)(w * (done > b->total ? 1.0 : (double)done / b->total));
        for (int i = 0; i < w; i++) bar[i] = i < fill ? '#' : '.';
        bar[w] = 0;
        if (b->finished > 0 && done < b->total) {
            const double left = secs / b->finished * (b->total - done);
            snprintf(eta, sizeof eta, "  ETA %dm%02ds", (int)(left / 60), (int)left % 60);
        }
        fprintf(stderr, "\r[%s] %ld/%ld  %.1f tok/s%s\x1b[K", bar, done, b->total, tps, eta);
    } else
        fprintf(stderr, "\r%ld done  %.1f tok/s\x1b[K", done, tps);
    if (final) fputc('\n', stderr);
    fflush(stderr);
}

/* Non-blank lines of a regular file, for the progress bar's total. */
static long count_lines(FILE *f)
{
    struct stat sb;
    if (fstat(fileno(f), &sb) || !S_ISREG(sb.st_mode)) return -1;
    long n = 0;
    char *l = NULL;
    size_t cap = 0;
    while (getline(&l, &cap, f) >= 0) n += l[strspn(l, " \t\r\n")] != 0;
    free(l);
    rewind(f);
    return n;
}

/* Asks s's drafter for up to --draft tokens after its text so far, within
 * the line's token budget and the sequence's context; like qlm run, a
 * proposal shorter than --draft-min is not checked. */
static int propose(batch *b, slot *s)
{
    s->draft.n = 0;
    s->step_draft_ms = 0;
    const qlm_spec_params *sp = &b->sc.params;
    const int k_min = sp->n_draft_min < 1 ? 1 : sp->n_draft_min;
    int k = sp->adaptive ? qlm_spec_adapt_length(&s->ad, k_min, sp->n_draft) : sp->n_draft;
    if (s->j.n_predict >= 0 && k > s->j.n_predict - s->n_gen - 1) k = s->j.n_predict - s->n_gen - 1;
    if (k > b->slot_ctx - 1 - s->pos) k = b->slot_ctx - 1 - s->pos;
    if (k < k_min) return 0;
    qlm_err err = {0};
    const double t0 = qlm_now_ms();
    const int rc = s->drafter->propose(s->drafter, s->hist, s->n_hist, k, &s->draft, &err);
    gl_set_threads(qlm_ctx_n_threads(b->ctx));
    s->step_draft_ms = qlm_now_ms() - t0;
    s->draft_ms += s->step_draft_ms;
    if (rc) return qlm_cli_report(&err);
    if (s->draft.n > k) s->draft.n = k;
    if (s->draft.n < k_min) s->draft.n = 0;
    return 0;
}

/* Walks the rows of s's entries in a verify step (from row0): accepted
 * drafts, then a replacement or the bonus token; cells after the last
 * accepted draft saw a future that did not happen and are removed. */
static int verify(batch *b, slot *s, int seq, int row0)
{
    const qlm_draft *d = &s->draft;
    if (s->j.n_predict >= 0 && s->n_gen >= s->j.n_predict) return finish(b, s, seq, "length");
    /* counted before the tokens go out: the line's record may be written
     * by the take that ends it */
    if (d->n) {
        s->n_rounds++;
        s->n_drafted += d->n;
    }
    int rc = 0;
    s->step_acc = s->step_gen = 0;
    s->step_rej = false;
    for (int i = 0; i <= d->n; i++) {
        const int32_t tok = qlm_spec_decide(&b->ver, s->smp, qlm_logits(b->ctx, row0 + i), d, i, &s->step_rej);
        if (i < d->n && !s->step_rej) {
            s->n_accepted++;
            s->step_acc++;
        }
        s->step_gen++;
        if ((rc = take(b, s, seq, tok)) || !s->busy || s->step_rej) break;
    }
    if (!rc && s->busy) qlm_kv_seq_rm(qlm_ctx_kv(b->ctx), seq, s->pos, -1);
    return rc;
}

/* Feeds each sequence's controller its share of the step: one step
 * serves every sequence, so its time is split by entries (a sequence
 * with a draft of k is k + 1 of them); what a draft costs to make is its
 * own. */
static void adapt_step(batch *b, const int *busy_idx, const int *row0, int n_busy, int n_entries, double ms)
{
    for (int k = 0; k < n_busy; k++) {
        slot *s = &b->slots[busy_idx[k]];
        if (!s->busy) continue;   /* finished: the next line starts afresh */
        const int entries = (k + 1 < n_busy ? row0[k + 1] : n_entries) - row0[k];
        const double share = ms * entries / n_entries;
        if (!s->draft.n) qlm_spec_adapt_plain(&s->ad, share);
        else
            qlm_spec_adapt_round(&s->ad, s->draft.n, s->step_acc, s->step_rej, s->step_draft_ms, share,
                                 s->step_gen);
    }
}

/* Fills free slots with the next lines, in rounds: the lines admitted in
 * a round are prefilled together (prefill_round); a line that waits for
 * a prefix being computed in this round (pick_prefix) ends the round and
 * starts the next.  A line that ends at its first token frees its slot
 * for a further round. */
static int fill(batch *b, qlm_batch *pb)
{
    int rc = 0;
    for (;;) {
        int seqs[QLM_MAX_SEQ], n = 0;
        bool wait = false;
        for (int i = 0; i < b->o.parallel && !rc && !wait && !interrupted && !b->out_broken; i++) {
            while (!b->slots[i].busy && (b->have_held || !b->in_done)) {
                job j;
                if (b->have_held) {
                    j = b->held;
                    b->have_held = false;
                } else {
                    const int r = next_job(b, &j);
                    if (r <= 0) { rc = r; break; }
                    if (j.error) {
                        rc = put_result(b, j.order, error_record(&j));
                        job_free(&j);
                        if (rc) break;
                        continue;
                    }
                }
                int src;
                const int keep = pick_prefix(b, i, j.ids, j.n_ids, &src, &wait);
                if (wait) {
                    b->held = j;
                    b->have_held = true;
                    break;
                }
                if ((rc = admit(b, &b->slots[i], i, &j, keep, src))) break;
                seqs[n++] = i;
            }
        }
        if (rc || !n || interrupted || b->out_broken) return rc;
        if ((rc = prefill_round(b, seqs, n, pb))) return rc;
        draw_progress(b, false);
    }
}

static int run(batch *b)
{
    qlm_batch step;
    const int P = b->o.parallel, nb = qlm_ctx_n_batch(b->ctx);
    const int per_seq = b->sc.drafter ? b->sc.params.n_draft + 1 : 1;
    if (qlm_batch_init(&step, nb > P * per_seq ? nb : P * per_seq))
        return qlm_cli_error(QLM_ERUNTIME, "out of memory");
    /* The step's entries are one token of each sequence (or its pending
     * token and draft), each to be computed exactly as a one-token batch
     * (the sequence alone, token by token) would. */
    step.one_by_one = true;
    int rc = 0;
    qlm_err err = {0};
    int busy_idx[QLM_MAX_SEQ], row0[QLM_MAX_SEQ];
    for (;;) {
        if ((rc = fill(b, &step)) || interrupted || b->out_broken) break;
        /* One token (and its draft) for every live sequence, all in one batch. */
        int n_busy = 0;
        step.n = 0;
        for (int i = 0; i < P && !rc; i++) {
            slot *s = &b->slots[i];
            if (!s->busy) continue;
            if (s->drafter && (rc = propose(b, s))) break;
            busy_idx[n_busy] = i;
            row0[n_busy++] = step.n;
            qlm_batch_add(&step, s->last, s->pos, i, true);
            for (int k = 0; s->drafter && k < s->draft.n; k++) qlm_batch_add(&step, s->draft.tok[k], s->pos + 1 + k, i, true);
        }
        if (rc || !n_busy) break;
        const double t0 = qlm_now_ms();
        if ((rc = qlm_decode(b->ctx, &step, &err))) { qlm_cli_report(&err); break; }
        for (int k = 0; k < n_busy && !rc; k++) {
            slot *s = &b->slots[busy_idx[k]];
            rc = s->drafter ? verify(b, s, busy_idx[k], row0[k]) : advance(b, s, busy_idx[k], qlm_logits(b->ctx, row0[k]));
        }
        if (!rc && b->sc.drafter && b->sc.params.adaptive) adapt_step(b, busy_idx, row0, n_busy, step.n, qlm_now_ms() - t0);
        draw_progress(b, false);
    }
    qlm_batch_free(&step);
    return rc;
}

/* With -md or --lookup: a drafter and a token history for every slot. */
static int start_spec(batch *b, const qlm_ctx_params *cp, qlm_err *err)
{
    qlm_ctx_params dcp = *cp;
    dcp.n_ctx = b->slot_ctx;
    int rc = qlm_spec_cli_start(&b->sc, &b->o.spec, b->m, b->ctx, &dcp, &b->o.sp, err);
    if (rc || !b->sc.drafter) return rc;
    if (qlm_spec_verifier_init(&b->ver, b->m->hp.n_vocab, QLM_SPEC_RULE_STANDARD))
        return qlm_fail(err, QLM_ERUNTIME, "out of memory");
    for (int i = 0; i < b->o.parallel; i++) {
        slot *s = &b->slots[i];
        if (!(s->hist = malloc(sizeof *s->hist * ((size_t)b->slot_ctx + 1))))
            return qlm_fail(err, QLM_ERUNTIME, "out of memory");
        if (!i) s->drafter = b->sc.drafter;
        else if ((rc = qlm_spec_cli_drafter(&b->sc, &s->drafter, err))) return rc;
    }
    return QLM_OK;
}

int qlm_cmd_batch(int argc, char **argv)
{
    batch b = {.out_fd = STDOUT_FILENO};
    int rc = parse_args(argc, argv, &b.o);
    if (rc) return rc < 0 ? 0 : rc;
    const bool logs = b.o.verbose;
    qlm_err err = {0};
    if (!strcmp(b.o.input, "-")) b.in = stdin;
    else if (!(b.in = fopen(b.o.input, "r"))) return qlm_cli_error(QLM_ELOAD, "cannot read %s: %s", b.o.input, strerror(errno));
    if (b.o.output && (rc = open_output(&b))) goto done;
    double t0 = qlm_now_ms();
    if ((rc = qlm_model_load_mode(&b.m, b.o.model, b.o.load_mode < 0 ? GGUF_LOAD_MMAP : (gguf_load_mode)b.o.load_mode, &err))) goto fail;
    b.slot_ctx = b.o.n_ctx > 0 ? b.o.n_ctx : (b.m->hp.n_ctx_train < 4096 ? b.m->hp.n_ctx_train : 4096);
    if ((long long)b.slot_ctx * b.o.parallel > (1 << 24)) {
        rc = qlm_fail(&err, QLM_EUSAGE, "-c %d times --parallel %d is too large a cache", b.slot_ctx, b.o.parallel);
        goto fail;
    }
    qlm_ctx_params cp = {.n_ctx = b.slot_ctx * b.o.parallel, .n_batch = b.o.n_batch, .n_threads = b.o.n_threads};
    if ((rc = qlm_ctx_new(&b.ctx, b.m, &cp, &err))) goto fail;
    if (!(b.slots = calloc((size_t)b.o.parallel, sizeof *b.slots))) {
        rc = qlm_fail(&err, QLM_ERUNTIME, "out of memory");
        goto fail;
    }
    if ((rc = start_spec(&b, &cp, &err))) goto fail;
    if (logs)
        fprintf(stderr, "qlm: %s loaded in %.0f ms; %d sequences of up to %d tokens\n", b.m->name,
                qlm_now_ms() - t0, b.o.parallel, b.slot_ctx);
    b.progress = isatty(STDERR_FILENO);
    b.out_tty = isatty(b.out_fd);
    b.total = b.progress ? count_lines(b.in) : -1;
    b.t0 = qlm_now_ms();
    struct sigaction sa = {.sa_handler = on_sigint};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* over a file-size limit, write() fails with EFBIG (reported below)
     * instead of the process dying mid-line */
    signal(SIGXFSZ, SIG_IGN);
    rc = run(&b);
    flush_ready(&b);
    draw_progress(&b, true);
    if (logs) {
        const double secs = (qlm_now_ms() - b.t0) / 1e3;
        fprintf(stderr, "qlm: %ld lines written (%ld with errors), %ld already done; %lld prompt tokens "
                "shared from the cache, the rest in %lld passes; %lld tokens generated in %.1f s (%.1f t/s)\n",
                b.finished, b.errors, b.skipped, b.cached_tokens, b.prefill_passes, b.gen_tokens, secs,
                secs > 0 ? b.gen_tokens / secs : 0.0);
        if (b.sc.drafter)
            fprintf(stderr, "qlm: speculative (%s): drafted %lld, accepted %lld (%.1f%%)\n", b.sc.drafter->kind,
                    b.drafted, b.accepted, b.drafted ? 100.0 * b.accepted / b.drafted : 0.0);
    }
    /* A reader that went away is not an error; a full disk is: lines were
     * lost, and the run can be resumed once there is room. */
    if (!rc && b.out_broken && b.out_errno != EPIPE)
        rc = b.o.output ? qlm_cli_error(QLM_ERUNTIME, "writing %s: %s (the lines before are complete; rerun "
                                        "with the same -o to resume)", b.o.output, strerror(b.out_errno))
                        : qlm_cli_error(QLM_ERUNTIME, "writing the output: %s", strerror(b.out_errno));
    if (!rc && interrupted) rc = QLM_EINTR;
    if (!rc && b.errors) rc = QLM_ELOAD;
    goto done;
fail:
    qlm_cli_report(&err);
done:
    if (b.slots)
        for (int i = 0; i < b.o.parallel; i++)
            if (b.slots[i].busy) {
                qlm_sampler_free(b.slots[i].smp);
                qlm_stopper_free(&b.slots[i].stop);
                b.slots[i].j.ids = NULL;   /* owned by kv_toks */
                job_free(&b.slots[i].j);
                free(b.slots[i].text);
            }
    for (int i = 0; b.slots && i < b.o.parallel; i++) {
        free(b.slots[i].kv_toks);
        free(b.slots[i].hist);
        qlm_draft_free(&b.slots[i].draft);
        if (i) qlm_drafter_free(b.slots[i].drafter);   /* slot 0's is sc's */
    }
    qlm_spec_verifier_free(&b.ver);
    qlm_spec_cli_end(&b.sc);
    free(b.slots);
    for (long i = 0; i < b.pending_cap; i++) free(b.pending[i]);
    free(b.pending);
    if (b.have_held) job_free(&b.held);
    for (size_t i = 0; i < b.n_done; i++) free(b.done[i].key);
    free(b.done);
    if (b.have_fmt) qlm_chat_fmt_free(&b.fmt);
    free(b.fmt_error);
    if (b.in && b.in != stdin) fclose(b.in);
    if (b.o.output && b.out_fd >= 0) close(b.out_fd);
    qlm_ctx_free(b.ctx);
    qlm_model_free(b.m);
    return rc;
}
