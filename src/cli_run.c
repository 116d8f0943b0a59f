/* cli_run.c - `qlm run`: one prompt in, generated text out, for scripts.
 *
 * stdout carries only the generated text (or one JSON object with
 * --json); everything else goes to stderr, and only with -v or when
 * stderr is a terminal. */
#include <errno.h>
#include <signal.h>
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
#include "json.h"
#include "model.h"
#include "ggml-lite/numa.h"
#include "prompt_cache.h"
#include "sample.h"
#include "stop.h"
#include "tokenizer.h"
#include "strbuf.h"

/* The one piece of process-wide state the CLI needs: set by the SIGINT
 * handler, read by the generation callback. */
static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

typedef struct run_opts {
    const char *model, *prompt, *prompt_file;
    int n_predict, n_ctx, n_threads, n_batch;
    qlm_sampler_params sp;
    bool json, verbose;
    const char *stops[16];
    int n_stops;
    bool chat, dump_prompt;
    const char *system, *chat_template;
    int load_mode; /* gguf_load_mode, -1: default */
    qlm_kv_type type_k, type_v;
    int n_keep; /* -2: no context shift */
    const char *prompt_cache;
    int numa;
    qlm_spec_opts spec;
} run_opts;

static void run_usage(FILE *f)
{
    fprintf(f,
        "usage: qlm run -m MODEL [-p TEXT | -f FILE | < stdin] [options]\n"
        "\n"
        "Generates a continuation of the prompt and writes only that text to stdout.\n"
        "\n"
        "  -m, --model FILE        GGUF model\n"
        "  -p, --prompt TEXT       prompt text\n"
        "  -f, --file FILE         read the prompt from FILE\n"
        "                          With neither, the prompt is standard input, read to EOF.\n"
        "                          With one, piped stdin (or a file redirected with <) is\n"
        "                          added on a new line after it: cat notes | qlm run -p \"Summarise:\".\n"
        "                          A terminal, /dev/null, or a file a `while read` loop is\n"
        "                          reading, is never read (in a loop fed by a pipe, give qlm\n"
        "                          </dev/null).  One trailing newline of a file or stdin is dropped.\n"
        "  -n, --n-predict N       tokens to generate (default -1: until end of text or context)\n"
        "  -c, --ctx-size N        context size in tokens (default min(4096, training context))\n"
        "  -t, --threads N         threads (default: physical cores)\n"
        QLM_CLI_BATCH_HELP
        "      --kv-type T         KV cache element type for K and V: int8 (default), f16, f32\n"
        "  -ctk, -ctv T            the same for K or V alone\n"
        "      --numa MODE         distribute (default: threads and KV heads spread over NUMA\n"
        "                          nodes), isolate (all on this node) or off\n"
        "      --prompt-cache F    reuse the KV of the prompt's longest prefix saved in file F,\n"
        "                          and save this prompt's KV there\n"
        "      --keep N            when the context is full, keep the first N tokens (-1: the\n"
        "                          whole prompt), drop the older half of the rest and go on\n"
        "                          (default: stop at a full context)\n"
        "  -s, --seed N            random seed (default 0)\n"
        "      --temp X            temperature (default 0.8; 0 = greedy)\n"
        "      --top-k N           keep the N most likely tokens (default 40; 0 = off)\n"
        "      --top-p X           nucleus sampling (default 0.95; 1 = off)\n"
        "      --min-p X           drop tokens below X times the top probability (default 0.05)\n"
        "      --repeat-penalty X  penalise recent tokens (default 1.0 = off)\n"
        "      --repeat-last-n N   how many recent tokens are penalised (default 64)\n"
        "      --ignore-eos        never end the text: generate until -n or a full context\n"
        "      --stop STR          stop when the generated text contains STR (repeatable;\n"
        "                          STR itself is not printed)\n"
        "      --chat              wrap the prompt as one user turn in the model's chat template\n"
        "      --system TEXT       with --chat: a system message first\n"
        "      --chat-template T   with --chat: a built-in template by name (--chat-template\n"
        "                          list shows them) or a Jinja file, instead of the model's\n"
        "      --dump-prompt       print the exact prompt text (after --chat) and exit\n"
        "      --json              print one JSON object: text, tokens, timings, stop reason\n"
        QLM_CLI_LOAD_HELP
        "  -v, --verbose           log loading and timings to stderr\n"
        "%s"
        "\n"
        "exit status: 0 ok, 1 usage, 2 cannot load model or input, 3 runtime failure, 130 interrupted\n",
        qlm_spec_usage);
}

static bool is_opt(const char *a, const char *s1, const char *s2)
{
    return !strcmp(a, s1) || (s2 && !strcmp(a, s2));
}

static int parse_args(int argc, char **argv, run_opts *o)
{
    *o = (run_opts){.n_predict = -1, .sp = qlm_sampler_defaults(), .load_mode = -1, .n_keep = -2,
                    .spec = qlm_spec_opts_defaults()};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long l;
#define IS(s1, s2) is_opt(a, s1, s2)
#define NEXT() (i + 1 < argc ? argv[++i] : NULL)
        if (IS("-h", "--help")) { run_usage(stdout); return -1; }
        if (IS("-v", "--verbose")) { o->verbose = true; continue; }
        if (IS("--json", NULL)) { o->json = true; continue; }
        if (IS("--chat", NULL)) { o->chat = true; continue; }
        if (IS("--dump-prompt", NULL)) { o->dump_prompt = true; continue; }
        if (qlm_cli_gen_switch(a, &o->sp)) continue;
        const int lf = qlm_cli_load_flag(a, &o->load_mode);
        if (lf) { if (lf < 0) return QLM_EUSAGE; continue; }
        const int sr = qlm_spec_opt(&o->spec, argc, argv, &i);
        if (sr >= 0) {
            if (sr) return sr;
            continue;
        }
        const char *v = NEXT();
        if (!v) return qlm_cli_error(QLM_EUSAGE, "%s: missing value (qlm run --help)", a);
        const int kvf = qlm_cli_kv_flag(a, v, &o->type_k, &o->type_v);
        if (kvf < 0) return QLM_EUSAGE;
        if (kvf) continue;
        const int gf = qlm_cli_gen_flag(a, v, &o->sp, &o->n_predict, &o->n_ctx, &o->n_threads, &o->n_batch);
        if (gf < 0) return QLM_EUSAGE;
        if (gf) continue;
        if (IS("-m", "--model")) o->model = v;
        else if (IS("-p", "--prompt")) o->prompt = v;
        else if (IS("-f", "--file")) o->prompt_file = v;
        else if (IS("--system", NULL)) o->system = v;
        else if (IS("--prompt-cache", NULL)) o->prompt_cache = v;
        else if (IS("--numa", NULL)) {
            if ((o->numa = gl_numa_mode_parse(v)) < 0)
                return qlm_cli_error(QLM_EUSAGE, "--numa: expected distribute, isolate or off, got '%s'", v);
        }
        else if (IS("--chat-template", NULL)) {
            const int tf = qlm_cli_template_flag(v);
            if (tf) return tf;
            o->chat_template = v;
        }
        else if (IS("--stop", NULL)) {
            if (o->n_stops == (int)(sizeof o->stops / sizeof o->stops[0]))
                return qlm_cli_error(QLM_EUSAGE, "--stop: at most %d stop strings", o->n_stops);
            if (!*v) return qlm_cli_error(QLM_EUSAGE, "--stop: empty string");
            o->stops[o->n_stops++] = v;
        }
        else if (IS("--keep", NULL)) {
            if (!qlm_cli_int(a, v, -1, 1 << 24, &l)) return QLM_EUSAGE;
            o->n_keep = (int)l;
        } else
            return qlm_cli_error(QLM_EUSAGE, "unknown option '%s' (qlm run --help)", a);
#undef IS
#undef NEXT
    }
    if (!o->model) return qlm_cli_error(QLM_EUSAGE, "no model: pass -m FILE.gguf");
    if (o->prompt && o->prompt_file)
        return qlm_cli_error(QLM_EUSAGE, "give the prompt with -p or -f, not both");
    if ((o->system || o->chat_template) && !o->chat)
        return qlm_cli_error(QLM_EUSAGE, "--system and --chat-template need --chat");
    /* the speculative loop stops at a full context rather than shifting it */
    if (o->n_keep > -2 && (o->spec.draft_model || o->spec.lookup))
        return qlm_cli_error(QLM_EUSAGE, "--keep (context shift) does not work with -md or --lookup yet");
    return 0;
}

/* Reads all of f; NULL with errno set on failure. */
static char *slurp(FILE *f, size_t *len)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *nb = realloc(buf, cap *= 2);
        if (!nb) { free(buf); return NULL; }
        buf = nb;
    }
    if (buf && ferror(f)) { free(buf); return NULL; }
    *len = n;
    return buf;
}

/* Like llama.cpp's -f: one trailing newline (what `echo` and editors
 * add) is not part of the prompt. */
static int strip_newline(char *text, size_t *len)
{
    if (*len && text[*len - 1] == '\n') (*len)--;
    return 0;
}

/* Whether stdin should be read as (more of) the prompt.  Without -p/-f it
 * is the prompt, unless it is a terminal: a script never waits at an
 * interactive prompt.  With -p/-f it is added only when it was clearly
 * meant as input: a pipe (`cat notes | qlm run -p "Summarise:"`) or a
 * regular file redirected from its start (`< notes`).  A file already
 * partly read by someone else is a `while read ...; done < list` loop's
 * input and is left to the loop; a terminal, /dev/null or a closed stdin
 * is never read. */
static bool stdin_is_input(bool have_prompt)
{
    struct stat sb;
    if (isatty(STDIN_FILENO) || fstat(STDIN_FILENO, &sb)) return false;
    if (!have_prompt) return true;
    if (S_ISFIFO(sb.st_mode)) return true;
    return S_ISREG(sb.st_mode) && sb.st_size > 0 && lseek(STDIN_FILENO, 0, SEEK_CUR) == 0;
}

/* Appends stdin to the prompt, on a line of its own. */
static int add_stdin(char **text, size_t *len)
{
    size_t n = 0;
    char *in = slurp(stdin, &n);
    if (!in) return qlm_cli_error(QLM_ELOAD, "cannot read the prompt from stdin: %s", strerror(errno));
    strip_newline(in, &n);
    if (n) {
        const bool sep = *len && (*text)[*len - 1] != '\n';
        char *t = realloc(*text, *len + sep + n + 1);
        if (!t) { free(in); return qlm_cli_error(QLM_ERUNTIME, "out of memory"); }
        if (sep) t[(*len)++] = '\n';
        memcpy(t + *len, in, n);
        *len += n;
        *text = t;
    }
    free(in);
    return 0;
}

static int read_prompt(const run_opts *o, char **text, size_t *len)
{
    if (o->prompt) {
        *len = strlen(o->prompt);
        *text = strdup(o->prompt);
        if (!*text) return qlm_cli_error(QLM_ERUNTIME, "out of memory");
    } else if (o->prompt_file) {
        FILE *f = fopen(o->prompt_file, "rb");
        if (!f) return qlm_cli_error(QLM_ELOAD, "cannot read prompt file %s: %s", o->prompt_file, strerror(errno));
        *text = slurp(f, len);
        int e = errno;
        fclose(f);
        if (!*text) return qlm_cli_error(QLM_ELOAD, "cannot read prompt file %s: %s", o->prompt_file, strerror(e));
        strip_newline(*text, len);
    } else if (isatty(STDIN_FILENO)) {
        return qlm_cli_error(QLM_EUSAGE, "no prompt: use -p TEXT, -f FILE or pipe text on stdin");
    } else {
        *text = slurp(stdin, len);
        return *text ? strip_newline(*text, len)
                     : qlm_cli_error(QLM_ELOAD, "cannot read the prompt from stdin: %s", strerror(errno));
    }
    return stdin_is_input(true) ? add_stdin(text, len) : 0;
}

/* Renders text as one user turn (after an optional system turn) through
 * the model's chat template, or the one in opts->chat_template.  On success
 * *text is replaced by the rendered prompt. */
static int apply_chat(const run_opts *o, const qlm_model *m, char **text, size_t *len, qlm_err *err)
{
    /* The template sees the prompt as a C string: refuse embedded NULs
     * rather than silently cutting the prompt short. */
    if (memchr(*text, 0, *len))
        return qlm_fail(err, QLM_ELOAD, "the prompt contains a NUL byte, which a chat turn cannot hold");
    qlm_chat_fmt fmt;
    int rc = qlm_chat_fmt_init(&fmt, m, o->chat_template, err);
    if (rc) return rc;
    qlm_chat_msg msgs[2];
    size_t n = 0;
    if (o->system) msgs[n++] = (qlm_chat_msg){.role = "system", .content = o->system};
    (*text)[*len] = 0;
    msgs[n++] = (qlm_chat_msg){.role = "user", .content = *text};
    char *out = NULL;
    size_t out_len = 0;
    rc = qlm_chat_fmt_render(&fmt, msgs, n, true, &out, &out_len, err);
    qlm_chat_fmt_free(&fmt);
    if (rc) return rc;
    free(*text);
    *text = out;
    *len = out_len;
    return QLM_OK;
}

typedef struct out_state {
    bool json, broken_pipe, stopped;
    int write_errno; /* a failed write other than a closed pipe (disk full) */
    qlm_stopper stop;
    char *text;
    size_t len, cap;
} out_state;

/* Shows released text: into the JSON buffer or straight to stdout. */
static int emit(out_state *o, const char *piece, size_t n)
{
    if (o->json) {
        if (!qlm_strbuf_add(&o->text, &o->len, &o->cap, piece, n)) return 1;
    } else if (n && (fwrite(piece, 1, n, stdout) != n || fflush(stdout))) {
        /* The reader went away (`| head`): stop quietly, not an error.
         * Anything else (a full disk) is an error: output was lost. */
        if (errno == EPIPE) o->broken_pipe = true;
        else o->write_errno = errno ? errno : EIO;
        return 1;
    }
    return 0;
}

static int on_token(void *user, int32_t tok, const char *piece, size_t n)
{
    (void)tok;
    out_state *o = user;
    const char *rel;
    size_t rn;
    const int hit = qlm_stopper_feed(&o->stop, piece, n, &rel, &rn);
    if (hit < 0 || emit(o, rel, rn)) return 1;
    if (hit) {
        o->stopped = true;
        return 1;
    }
    return interrupted;
}

int qlm_cmd_run(int argc, char **argv)
{
    run_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    const bool logs = o.verbose || isatty(STDERR_FILENO);

    char *text = NULL;
    size_t text_len = 0;
    if ((rc = read_prompt(&o, &text, &text_len))) return rc;

    qlm_err err = {0};
    qlm_model *m = NULL;
    qlm_ctx *ctx = NULL;
    qlm_sampler *smp = NULL;
    qlm_spec_cli sc = {0};
    int32_t *ids = NULL;
    size_t n_ids = 0;
    out_state out = {.json = o.json};
    qlm_stopper_init(&out.stop, o.stops, o.n_stops);
    double t0 = qlm_now_ms();
    const gguf_load_mode lm = o.load_mode < 0 ? GGUF_LOAD_MMAP : (gguf_load_mode)o.load_mode;
    if ((rc = qlm_model_load_mode(&m, o.model, lm, &err))) goto fail;
    qlm_ctx_params cp = {.n_ctx = o.n_ctx, .n_batch = o.n_batch, .n_threads = o.n_threads,
                         .type_k = o.type_k, .type_v = o.type_v, .ctx_shift = o.n_keep > -2, .n_keep = o.n_keep,
                         .numa = o.numa};
    if ((rc = qlm_ctx_new(&ctx, m, &cp, &err))) goto fail;
    if ((rc = qlm_spec_cli_start(&sc, &o.spec, m, ctx, &cp, &o.sp, &err))) goto fail;
    const double load_ms = qlm_now_ms() - t0;
    if (logs) {
        const qlm_kv *kv = qlm_ctx_kv(ctx);
        fprintf(stderr, "qlm: %s (%s, %d layers, %d-token context), loaded (%s) in %.0f ms; "
                "KV cache K %s V %s, %zu bytes (%.1f MiB)\n", m->name, m->arch->name, m->hp.n_layer,
                qlm_ctx_n_ctx(ctx), gguf_load_mode_name(lm), load_ms, qlm_kv_type_name(kv->type_k),
                qlm_kv_type_name(kv->type_v), qlm_kv_bytes(kv), qlm_kv_bytes(kv) / (double)(1 << 20));
        fprintf(stderr, "qlm: %s, %d threads, forward passes of up to %d prompt tokens\n", qlm_ctx_numa(ctx),
                qlm_ctx_n_threads(ctx), qlm_ctx_n_batch(ctx));
    }

    if (o.chat && (rc = apply_chat(&o, m, &text, &text_len, &err))) goto fail;
    if (o.dump_prompt) {
        if ((fwrite(text, 1, text_len, stdout) != text_len || fflush(stdout)) && errno != EPIPE) {
            rc = qlm_fail(&err, QLM_ERUNTIME, "writing the output: %s", strerror(errno));
            goto fail;
        }
        goto done;
    }
    /* Prompts may carry the model's control tokens (chat markup), as in
     * llama.cpp.  A rendered template that already starts with BOS gets no
     * second one. */
    bool add_bos = qlm_vocab_add_bos(m->vocab);
    const int32_t bos = qlm_vocab_bos(m->vocab);
    if (add_bos && o.chat && bos >= 0) {
        const char *bt = qlm_vocab_text(m->vocab, bos);
        if (bt && *bt && !strncmp(text, bt, strlen(bt))) add_bos = false;
    }
    if ((rc = qlm_tokenize(m->vocab, text, text_len, add_bos, true, &ids, &n_ids, &err)))
        goto fail;
    if (!(smp = qlm_sampler_for(m, &o.sp))) {
        rc = qlm_fail(&err, QLM_ERUNTIME, "out of memory");
        goto fail;
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_sigint);
    /* A bad cache file is reported and ignored, never trusted; a missing
     * one is simply the first run. */
    double cache_ms = 0;
    int n_cached = 0;
    if (o.prompt_cache) {
        const double tc = qlm_now_ms();
        qlm_err cerr = {0};
        if (qlm_prompt_cache_load(ctx, m, o.prompt_cache, ids, (int)n_ids, &n_cached, &cerr) &&
            access(o.prompt_cache, F_OK) == 0)
            fprintf(stderr, "qlm: warning: %s; ignored\n", cerr.msg);
        cache_ms = qlm_now_ms() - tc;
    }
    qlm_gen_stats st;
    if (sc.drafter)
        rc = qlm_spec_generate(ctx, m, sc.drafter, &sc.params, ids, (int)n_ids, o.n_predict, smp, on_token,
                               &out, &st, &sc.stats, &err);
    else
        rc = qlm_generate(ctx, m, ids, (int)n_ids, o.n_predict, smp, on_token, &out, &st, &err);
    if (rc) goto fail;
    if (o.prompt_cache && st.n_past < (int)n_ids - 1 &&
        qlm_kv_seq_prefix(qlm_ctx_kv(ctx), 0, ids, (int)n_ids) == (int)n_ids) {
        qlm_err cerr = {0};
        if (qlm_prompt_cache_save(ctx, m, o.prompt_cache, (int)n_ids, &cerr))
            fprintf(stderr, "qlm: warning: %s\n", cerr.msg);
    }
    if (!out.stopped && !out.broken_pipe) {
        const char *rest;
        size_t rest_n;
        qlm_stopper_flush(&out.stop, &rest, &rest_n);
        emit(&out, rest, rest_n);
    }
    if (out.write_errno) {
        rc = qlm_fail(&err, QLM_ERUNTIME, "writing the output: %s", strerror(out.write_errno));
        goto fail;
    }
    if (out.broken_pipe) goto done;
    const char *stop_name = out.stopped ? "stop" : qlm_stop_name(st.stop);
    if (o.json) {
        printf("{\"text\":");
        qlm_json_str(stdout, out.text ? out.text : "", out.len);
        printf(",\"stop_reason\":\"%s\",\"tokens\":{\"prompt\":%d,\"generated\":%d},"
               "\"timings\":{\"load_ms\":%.3f,\"prompt_ms\":%.3f,\"generate_ms\":%.3f,"
               "\"prompt_tokens_per_s\":%.3f,\"generate_tokens_per_s\":%.3f}",
               stop_name, st.n_prompt, st.n_gen, load_ms, st.prompt_ms, st.gen_ms,
               st.prompt_ms > 0 ? st.n_prompt * 1e3 / st.prompt_ms : 0.0,
               st.gen_ms > 0 ? st.n_gen * 1e3 / st.gen_ms : 0.0);
        qlm_spec_cli_json(stdout, &sc, &st);
        printf("}\n");
        if (fflush(stdout) || ferror(stdout)) {
            if (errno == EPIPE) goto done;
            rc = qlm_fail(&err, QLM_ERUNTIME, "writing the output: %s", strerror(errno));
            goto fail;
        }
    }
    if (logs) {
        if (o.prompt_cache)
            fprintf(stderr, "\nqlm: prompt cache: %d tokens loaded in %.0f ms, %d reused", n_cached, cache_ms, st.n_past);
        fprintf(stderr, "\nqlm: time to first token %.0f ms; prompt %d tokens in %.0f ms (%.1f t/s), generated %d tokens in %.0f ms "
                "(%.1f t/s), stop: %s\n", cache_ms + st.prompt_ms, st.n_prompt, st.prompt_ms,
                st.prompt_ms > 0 ? st.n_prompt * 1e3 / st.prompt_ms : 0.0, st.n_gen, st.gen_ms,
                st.gen_ms > 0 ? st.n_gen * 1e3 / st.gen_ms : 0.0, stop_name);
        qlm_spec_cli_log(stderr, &sc, &st);
    }
    if (st.stop == QLM_STOP_CALLER && interrupted && !out.stopped) rc = QLM_EINTR;
done:
    qlm_sampler_free(smp);
    qlm_spec_cli_end(&sc);
    free(ids);
    free(out.text);
    qlm_stopper_free(&out.stop);
    qlm_ctx_free(ctx);
    qlm_model_free(m);
    free(text);
    return rc;
fail:
    qlm_cli_report(&err);
    goto done;
}
