/* cli_chat.c - `qlm chat`: a conversation in the terminal.
 *
 * Each turn re-renders the whole conversation with the chat template and
 * tokenizes it; the longest prefix of those tokens already in the KV
 * cache (sequence 0) is kept and only the rest is decoded, so earlier
 * turns are not recomputed.  Ctrl-C stops the current reply (or the
 * prompt processing before it) and keeps the conversation, the partial
 * reply included; Ctrl-C again at an empty prompt, Ctrl-D or /exit quits.
 * With stdin not a terminal, each input line is a turn (no line editor),
 * and stdout carries only the replies, one per line. */
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
#include "jsonl.h"
#include "lineedit.h"
#include "model.h"
#include "strbuf.h"

/* Set by the SIGINT handler, polled by generation: the CLI's one piece of
 * process-wide state, as in qlm run. */
static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

typedef struct chat_opts {
    const char *model, *system, *chat_template, *load, *history;
    bool no_history, verbose;
    int load_mode;  /* gguf_load_mode, -1: default */
    int n_predict, n_ctx, n_threads, n_batch;
    qlm_sampler_params sp;
    qlm_spec_opts spec;
} chat_opts;

typedef struct chat {
    chat_opts o;
    qlm_model *m;
    qlm_ctx *ctx;
    qlm_chat_fmt fmt;
    qlm_sampler *smp;
    qlm_spec_cli sc;       /* drafter: NULL without -md / --lookup */
    qlm_le *le;            /* NULL when stdin is not a terminal */
    bool logs;             /* notes on stderr: -v or a terminal there */
    qlm_chat_msg *msgs;    /* role and content owned (strdup'd) */
    size_t n_msgs, cap_msgs;
    /* the reply being generated */
    char *reply;
    size_t reply_len, reply_cap;
    bool out_broken;       /* stdout went away */
} chat;

static void chat_usage(FILE *f)
{
    fprintf(f,
        "usage: qlm chat -m MODEL [options]\n"
        "\n"
        "A conversation with the model, using its chat template.  On a terminal the\n"
        "prompt has line editing and history; otherwise each input line is a turn\n"
        "and only the replies go to stdout.\n"
        "\n"
        "  -m, --model FILE        GGUF model\n"
        "      --system TEXT       a system message first\n"
        QLM_CLI_TEMPLATE_HELP
        "      --load FILE         resume a conversation saved with /save\n"
        "      --history FILE      keep the prompt history in FILE\n"
        "                          (default $XDG_STATE_HOME/qlm/chat_history)\n"
        "      --no-history        no history, in memory or on disk\n"
        "  -n, --n-predict N       most tokens per reply (default -1: until the model ends it)\n"
        "  -c, --ctx-size N        context size in tokens (default min(4096, training context))\n"
        "  -t, --threads N         threads (default: physical cores)\n"
        QLM_CLI_BATCH_HELP
        "  -s, --seed N            random seed (default 0)\n"
        "      --temp X            temperature (default 0.8; 0 = greedy)\n"
        "      --top-k N, --top-p X, --min-p X, --repeat-penalty X, --repeat-last-n N,\n"
        "      --ignore-eos        as for qlm run\n"
        QLM_CLI_LOAD_HELP
        "%s"
        "  -v, --verbose           after each reply: tokens reused from the cache, timings\n"
        "                          (and the speculative decoding statistics)\n"
        "\n"
        "In the chat: /help lists the commands; a line \"\"\" starts a multi-line message\n"
        "ended by a line ending in \"\"\"; pasted text may span lines.  Ctrl-C stops a\n"
        "reply (the conversation keeps what was said); Ctrl-C again at an empty prompt,\n"
        "Ctrl-D or /exit quits.\n", qlm_spec_usage);
}

static int parse_args(int argc, char **argv, chat_opts *o)
{
    *o = (chat_opts){.n_predict = -1, .sp = qlm_sampler_defaults(), .load_mode = -1,
                     .spec = qlm_spec_opts_defaults()};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { chat_usage(stdout); return -1; }
        if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) { o->verbose = true; continue; }
        if (!strcmp(a, "--no-history")) { o->no_history = true; continue; }
        if (qlm_cli_gen_switch(a, &o->sp)) continue;
        const int lf = qlm_cli_load_flag(a, &o->load_mode);
        if (lf) { if (lf < 0) return QLM_EUSAGE; continue; }
        const int sr = qlm_spec_opt(&o->spec, argc, argv, &i);
        if (sr > 0) return sr;
        if (!sr) continue;
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        if (!v) return qlm_cli_error(QLM_EUSAGE, "%s: missing value (qlm chat --help)", a);
        const int gf = qlm_cli_gen_flag(a, v, &o->sp, &o->n_predict, &o->n_ctx, &o->n_threads, &o->n_batch);
        if (gf < 0) return QLM_EUSAGE;
        if (gf) continue;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) o->model = v;
        else if (!strcmp(a, "--system")) o->system = v;
        else if (!strcmp(a, "--chat-template")) {
            const int tf = qlm_cli_template_flag(v);
            if (tf) return tf;
            o->chat_template = v;
        }
        else if (!strcmp(a, "--load")) o->load = v;
        else if (!strcmp(a, "--history")) o->history = v;
        else
            return qlm_cli_error(QLM_EUSAGE, "unknown option '%s' (qlm chat --help)", a);
    }
    if (!o->model) return qlm_cli_error(QLM_EUSAGE, "no model: pass -m FILE.gguf");
    return 0;
}

/* ---- the conversation ---- */

static void msg_free(qlm_chat_msg *m)
{
    free((char *)m->role);
    free((char *)m->content);
}

static void msgs_clear(chat *c, size_t keep)
{
    while (c->n_msgs > keep) msg_free(&c->msgs[--c->n_msgs]);
}

static bool msg_push(chat *c, const char *role, const char *content, size_t len)
{
    if (c->n_msgs == c->cap_msgs) {
        size_t cap = c->cap_msgs ? c->cap_msgs * 2 : 16;
        qlm_chat_msg *nm = realloc(c->msgs, cap * sizeof *nm);
        if (!nm) return false;
        c->msgs = nm;
        c->cap_msgs = cap;
    }
    char *r = strdup(role), *t = malloc(len + 1);
    if (!r || !t) { free(r); free(t); return false; }
    memcpy(t, content, len);
    t[len] = 0;
    c->msgs[c->n_msgs++] = (qlm_chat_msg){.role = r, .content = t};
    return true;
}

static bool has_system(const chat *c)
{
    return c->n_msgs && !strcmp(c->msgs[0].role, "system");
}

/* Replaces (or inserts, or with NULL removes) the system message. */
static bool set_system(chat *c, const char *text)
{
    if (has_system(c)) {
        msg_free(&c->msgs[0]);
        memmove(c->msgs, c->msgs + 1, (c->n_msgs - 1) * sizeof *c->msgs);
        c->n_msgs--;
    }
    if (!text) return true;
    if (!msg_push(c, "system", text, strlen(text))) return false;
    qlm_chat_msg sys = c->msgs[c->n_msgs - 1];
    memmove(c->msgs + 1, c->msgs, (c->n_msgs - 1) * sizeof *c->msgs);
    c->msgs[0] = sys;
    return true;
}

/* ---- one turn ---- */

static bool reply_add(chat *c, const char *piece, size_t n)
{
    return qlm_strbuf_add(&c->reply, &c->reply_len, &c->reply_cap, piece, n);
}

/* Writes a reply piece; on a terminal without control characters (other
 * than newline and tab), so model output cannot drive the terminal.  Not
 * through stdio: a Ctrl-C that lands while a write to a slow terminal
 * waits interrupts it (no SA_RESTART), and stdio would count that as a
 * broken output and end the chat. */
static bool show(const chat *c, const char *piece, size_t n)
{
    char buf[256];
    if (fflush(stdout)) return false;
    while (n) {
        size_t k = 0, used = 0;
        for (; used < n && k < sizeof buf; used++) {
            const unsigned char b = (unsigned char)piece[used];
            if (c->le && ((b < 0x20 && b != '\n' && b != '\t') || b == 0x7f)) continue;
            buf[k++] = (char)b;
        }
        if (qlm_cli_write_all(STDOUT_FILENO, buf, k)) return false;
        piece += used;
        n -= used;
    }
    return true;
}

static int on_token(void *user, int32_t tok, const char *piece, size_t n)
{
    chat *c = user;
    (void)tok;
    if (!reply_add(c, piece, n)) return 1;
    if (n && !show(c, piece, n)) {
        c->out_broken = true;
        return 1;
    }
    return interrupted;
}

static int cancel_cb(void *user)
{
    (void)user;
    return interrupted;
}

/* Runs one user turn.  Problems with this turn (a template that refuses
 * the conversation, a conversation longer than the context) are reported
 * and the turn dropped; only a failure of the runtime is returned. */
static int turn(chat *c, const char *text, size_t len)
{
    qlm_err err = {0};
    if (!msg_push(c, "user", text, len)) return qlm_cli_error(QLM_ERUNTIME, "out of memory");
    int32_t *ids = NULL;
    size_t n_ids = 0;
    int rc = qlm_chat_fmt_tokens(&c->fmt, c->msgs, c->n_msgs, true, &ids, &n_ids, &err);
    const int n_ctx = qlm_ctx_n_ctx(c->ctx);
    /* A conversation that outgrows the context loses its oldest exchanges
     * (the system message stays), leaving room for a reply. */
    const int room = c->o.n_predict > 0 && c->o.n_predict < n_ctx / 2 ? c->o.n_predict : n_ctx / 4;
    const size_t first = has_system(c) ? 1 : 0;
    int dropped = 0;
    while (!rc && (int)n_ids > n_ctx - room && c->n_msgs - first > 1) {
        size_t k = c->n_msgs - first > 2 && !strcmp(c->msgs[first + 1].role, "assistant") ? 2 : 1;
        for (size_t i = 0; i < k; i++) msg_free(&c->msgs[first + i]);
        memmove(c->msgs + first, c->msgs + first + k, (c->n_msgs - first - k) * sizeof *c->msgs);
        c->n_msgs -= k;
        dropped += (int)k;
        free(ids);
        ids = NULL;
        rc = qlm_chat_fmt_tokens(&c->fmt, c->msgs, c->n_msgs, true, &ids, &n_ids, &err);
    }
    if (dropped && c->logs)
        fprintf(stderr, "(the %d oldest messages were dropped to fit the %d-token context)\n", dropped, n_ctx);
    if (!rc && (int)n_ids >= n_ctx)
        rc = qlm_fail(&err, QLM_ELOAD, "the message is %zu tokens but the context holds %d "
                      "(raise -c)", n_ids, n_ctx);
    if (rc) {
        msgs_clear(c, c->n_msgs - 1);
        free(ids);
        if (rc == QLM_ERUNTIME) return qlm_cli_report(&err);
        qlm_cli_report(&err);
        return 0;
    }
    /* Generation keeps what sequence 0 already holds of this prompt (the
     * earlier turns) and decodes the rest. */
    const int keep = qlm_kv_seq_prefix(qlm_ctx_kv(c->ctx), 0, ids, (int)n_ids - 1);

    c->reply_len = 0;
    interrupted = 0;
    /* A long read (a big paste, a loaded transcript) says so: otherwise
     * the terminal looks stuck, and Ctrl-C works here too. */
    if (c->logs && (int)n_ids - keep > 1024)
        fprintf(stderr, "(reading %d tokens; Ctrl-C stops)\n", (int)n_ids - keep);
    qlm_gen_stats st;
    const qlm_gen_opts go = {.n_predict = c->o.n_predict, .cancel = cancel_cb};
    /* A reply with a drafter: the same tokens, the draft's cache reused
     * across turns by prefix as the target's is. */
    if (c->sc.drafter)
        rc = qlm_spec_generate_ex(c->ctx, c->m, c->sc.drafter, &c->sc.params, ids, (int)n_ids, &go, c->smp,
                                  on_token, c, &st, &c->sc.stats, &err);
    else
        rc = qlm_generate_ex(c->ctx, c->m, ids, (int)n_ids, &go, c->smp, on_token, c, &st, &err);
    free(ids);
    if (rc) return qlm_cli_report(&err);
    if (c->out_broken) return 0;
    const bool stopped = st.stop == QLM_STOP_CALLER;
    if (stopped && !st.n_gen) {
        /* Stopped before the reply began: as if the message was not sent. */
        msgs_clear(c, c->n_msgs - 1);
        if (c->logs) fprintf(stderr, "(stopped)\n");
        return 0;
    }
    if (!msg_push(c, "assistant", c->reply ? c->reply : "", c->reply_len))
        return qlm_cli_error(QLM_ERUNTIME, "out of memory");
    if (!show(c, "\n", 1)) c->out_broken = true;
    if (stopped && c->logs) fprintf(stderr, "(reply stopped; Ctrl-C again to quit)\n");
    if (st.stop == QLM_STOP_CONTEXT && c->logs)
        fprintf(stderr, "(the context is full: /reset to start over, or raise -c)\n");
    if (c->o.verbose)
        fprintf(stderr, "qlm: prompt %d tokens: %d reused from the cache, %d decoded in %.0f ms; "
                "generated %d tokens in %.0f ms (%.1f t/s), stop: %s\n",
                st.n_prompt, st.n_past, st.n_prompt - st.n_past, st.prompt_ms, st.n_gen, st.gen_ms,
                st.gen_ms > 0 ? st.n_gen * 1e3 / st.gen_ms : 0.0, qlm_stop_name(st.stop));
    if (c->o.verbose) qlm_spec_cli_log(stderr, &c->sc, &st);
    return 0;
}

/* ---- transcripts ---- */

static int save(const chat *c, const char *path)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return qlm_cli_error(QLM_EUSAGE, "/save: path too long");
    FILE *f = fopen(tmp, "w");
    if (!f) return qlm_cli_error(QLM_ERUNTIME, "/save: cannot write %s: %s", tmp, strerror(errno));
    fputs("{\"messages\": [", f);
    for (size_t i = 0; i < c->n_msgs; i++) {
        fputs(i ? ",\n  {\"role\": " : "\n  {\"role\": ", f);
        qlm_json_str(f, c->msgs[i].role, strlen(c->msgs[i].role));
        fputs(", \"content\": ", f);
        qlm_json_str(f, c->msgs[i].content, strlen(c->msgs[i].content));
        fputc('}', f);
    }
    fputs("\n]}\n", f);
    const bool bad = ferror(f) | (fflush(f) != 0) | (fsync(fileno(f)) != 0);
    if ((fclose(f) != 0) | bad || rename(tmp, path) != 0) {
        const int e = errno;
        unlink(tmp);
        return qlm_cli_error(QLM_ERUNTIME, "/save: cannot write %s: %s", path, strerror(e));
    }
    return 0;
}

/* Replaces the conversation with the one saved in path; on any problem the
 * current one is left as it was. */
static int load(chat *c, const char *path)
{
    qlm_err err = {0};
    char *text = NULL;
    size_t len = 0;
    qlm_jval *v = NULL;
    int rc = qlm_read_file(path, &text, &len, &err);
    if (rc) return qlm_cli_report(&err);
    rc = qlm_json_parse(text, len, &v, &err);
    free(text);
    if (rc) return qlm_cli_error(rc == QLM_ERUNTIME ? rc : QLM_ELOAD, "%s: %s", path, err.msg);
    const qlm_jval *ms = v->type == QLM_JARR ? v : qlm_json_get(v, "messages");
    const char *why = NULL;
    if (!ms || ms->type != QLM_JARR) why = "expected {\"messages\": [...]}";
    for (size_t i = 0; !why && i < ms->n; i++) {
        const qlm_jval *r = qlm_json_get(&ms->items[i], "role"), *t = qlm_json_get(&ms->items[i], "content");
        if (!r || r->type != QLM_JSTR || !t || t->type != QLM_JSTR)
            why = "each message needs string \"role\" and \"content\"";
    }
    if (why) {
        qlm_jval_free(v);
        return qlm_cli_error(QLM_ELOAD, "%s: %s", path, why);
    }
    msgs_clear(c, 0);
    for (size_t i = 0; i < ms->n; i++) {
        const qlm_jval *t = qlm_json_get(&ms->items[i], "content");
        if (!msg_push(c, qlm_json_get(&ms->items[i], "role")->str, t->str, t->len)) {
            qlm_jval_free(v);
            return qlm_cli_error(QLM_ERUNTIME, "out of memory");
        }
    }
    qlm_jval_free(v);
    if (c->logs) fprintf(stderr, "(loaded %zu messages from %s)\n", c->n_msgs, path);
    return 0;
}

/* ---- input ---- */

typedef enum { IN_LINE, IN_EOF, IN_INTERRUPT, IN_ERROR } in_status;

static in_status read_line(chat *c, const char *prompt, char **line)
{
    *line = NULL;
    if (c->le) {
        switch (qlm_le_read(c->le, prompt, line)) {
        case QLM_LE_LINE: return IN_LINE;
        case QLM_LE_EOF: return IN_EOF;
        case QLM_LE_INTERRUPT: return IN_INTERRUPT;
        default: return IN_ERROR;
        }
    }
    size_t cap = 0;
    errno = 0;
    ssize_t n = getline(line, &cap, stdin);
    if (n < 0) {
        free(*line);
        *line = NULL;
        if (interrupted) return IN_INTERRUPT;
        return errno && errno != EINTR ? IN_ERROR : IN_EOF;
    }
    if (n && (*line)[n - 1] == '\n') (*line)[--n] = 0;
    if (n && (*line)[n - 1] == '\r') (*line)[--n] = 0;
    return IN_LINE;
}

static bool ends_with_quotes(const char *s)
{
    const size_t n = strlen(s);
    return n >= 3 && !strcmp(s + n - 3, "\"\"\"");
}

/* After a line starting with """: the lines up to one ending in """,
 * joined by newlines.  IN_INTERRUPT / IN_EOF abandon the block. */
static in_status read_block(chat *c, const char *first, char **out)
{
    size_t len = strlen(first), cap = len + 64;
    char *buf = malloc(cap);
    if (!buf) return IN_ERROR;
    memcpy(buf, first, len + 1);
    bool have = len > 0;
    if (ends_with_quotes(buf)) {   /* """one line""" */
        buf[len - 3] = 0;
        *out = buf;
        return IN_LINE;
    }
    for (;;) {
        char *l;
        in_status s = read_line(c, "... ", &l);
        if (s != IN_LINE) {
            free(buf);
            free(l);
            return s;
        }
        const bool last = ends_with_quotes(l);
        size_t ln = strlen(l) - (last ? 3 : 0);
        if (len + ln + 2 > cap) {
            char *nb = realloc(buf, cap = (len + ln + 2) * 2);
            if (!nb) { free(buf); free(l); return IN_ERROR; }
            buf = nb;
        }
        if (have) buf[len++] = '\n';
        memcpy(buf + len, l, ln);
        len += ln;
        buf[len] = 0;
        have = true;
        free(l);
        if (last) break;
    }
    *out = buf;
    return IN_LINE;
}

static void help(void)
{
    printf("  /help            this list\n"
           "  /reset           forget the conversation (the system message stays)\n"
           "  /system TEXT     set the system message (/system alone shows it)\n"
           "  /save FILE       write the conversation to FILE (JSON)\n"
           "  /load FILE       continue the conversation saved in FILE\n"
           "  /exit            quit (also Ctrl-D, or Ctrl-C twice at an empty prompt)\n"
           "  \"\"\"              start a multi-line message; a line ending in \"\"\" ends it\n"
           "  Ctrl-C during a reply stops it; the conversation keeps what was said.\n");
    fflush(stdout);
}

/* Handles a /command; returns 1 to quit, 0 to go on, or an exit status > 1
 * on a runtime failure. */
static int command(chat *c, const char *line)
{
    const char *arg = line + strcspn(line, " \t");
    const size_t nlen = (size_t)(arg - line);
    while (*arg == ' ' || *arg == '\t') arg++;
#define CMD(s) (nlen == strlen(s) && !strncmp(line, s, nlen))
    if (CMD("/exit") || CMD("/quit") || CMD("/bye")) return 1;
    if (CMD("/help") || CMD("/?")) help();
    else if (CMD("/reset") || CMD("/clear")) {
        msgs_clear(c, has_system(c) ? 1 : 0);
        if (c->logs) fprintf(stderr, "(conversation cleared)\n");
    } else if (CMD("/system")) {
        if (!*arg) {
            if (has_system(c)) printf("%s\n", c->msgs[0].content);
            else if (c->logs) fprintf(stderr, "(no system message)\n");
            fflush(stdout);
        } else if (!set_system(c, arg))
            return qlm_cli_error(QLM_ERUNTIME, "out of memory");
        else if (c->logs)
            fprintf(stderr, "(system message set)\n");
    } else if (CMD("/save")) {
        if (!*arg) qlm_cli_error(QLM_EUSAGE, "/save needs a file name");
        else if (!save(c, arg) && c->logs) fprintf(stderr, "(saved %zu messages to %s)\n", c->n_msgs, arg);
    } else if (CMD("/load")) {
        if (!*arg) qlm_cli_error(QLM_EUSAGE, "/load needs a file name");
        else if (load(c, arg) == QLM_ERUNTIME) return QLM_ERUNTIME;
    } else
        qlm_cli_error(QLM_EUSAGE, "unknown command %.*s (/help lists them)", (int)nlen, line);
#undef CMD
    return 0;
}

static void open_history(chat *c)
{
    if (c->o.no_history || !c->le) return;
    char path[4096];
    const char *p = c->o.history;
    if (!p) {
        const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
        char dir[4000];
        if (state && *state) snprintf(dir, sizeof dir, "%s", state);
        else if (home && *home) snprintf(dir, sizeof dir, "%s/.local/state", home);
        else return;
        /* Create the directories on the way; a failure shows at open below. */
        char *s = dir + 1;
        while ((s = strchr(s, '/'))) { *s = 0; mkdir(dir, 0700); *s++ = '/'; }
        mkdir(dir, 0700);
        snprintf(path, sizeof path, "%s/qlm", dir);
        mkdir(path, 0700);
        snprintf(path, sizeof path, "%s/qlm/chat_history", dir);
        p = path;
    }
    if (!qlm_le_history_file(c->le, p) && c->o.verbose)
        fprintf(stderr, "qlm: history stays in memory: cannot open %s: %s\n", p, strerror(errno));
}

/* The read-eval loop.  Returns the exit status. */
static int loop(chat *c)
{
    bool last_interrupt = false;
    for (;;) {
        char *line = NULL;
        in_status s = read_line(c, ">>> ", &line);
        if (s == IN_ERROR) {
            free(line);
            return qlm_cli_error(QLM_ERUNTIME, "reading input: %s", strerror(errno ? errno : EIO));
        }
        if (s == IN_EOF) return 0;
        if (s == IN_INTERRUPT) {
            const bool empty = !line || !*line;
            free(line);
            if (!c->le) return QLM_EINTR;   /* a script's Ctrl-C */
            if (empty && last_interrupt) return 0;
            if (empty) fprintf(stderr, "(Ctrl-C again or Ctrl-D to quit)\n");
            last_interrupt = empty;
            continue;
        }
        last_interrupt = false;
        if (!strncmp(line, "\"\"\"", 3)) {
            char *block = NULL;
            s = read_block(c, line + 3, &block);
            free(line);
            if (s == IN_ERROR) return qlm_cli_error(QLM_ERUNTIME, "reading input: out of memory");
            if (s == IN_EOF) return 0;
            if (s == IN_INTERRUPT) {
                if (!c->le) return QLM_EINTR;
                continue;
            }
            line = block;
        } else if (line[0] == '/') {
            if (c->le) qlm_le_history_add(c->le, line);
            const int rc = command(c, line);
            free(line);
            if (rc) return rc == 1 ? 0 : rc;
            continue;
        }
        if (c->le) qlm_le_history_add(c->le, line);
        /* Only blank lines: nothing to say. */
        if (!line[strspn(line, " \t\n")]) { free(line); continue; }
        const int rc = turn(c, line, strlen(line));
        free(line);
        if (rc) return rc;
        if (c->out_broken) return 0;
        last_interrupt = interrupted;
        interrupted = 0;
    }
}

int qlm_cmd_chat(int argc, char **argv)
{
    chat c = {0};
    int rc = parse_args(argc, argv, &c.o);
    if (rc) return rc < 0 ? 0 : rc;
    c.logs = c.o.verbose || isatty(STDERR_FILENO);
    qlm_err err = {0};
    if ((rc = qlm_model_load_mode(&c.m, c.o.model, c.o.load_mode < 0 ? GGUF_LOAD_MMAP : (gguf_load_mode)c.o.load_mode, &err))) goto fail;
    qlm_ctx_params cp = {.n_ctx = c.o.n_ctx, .n_batch = c.o.n_batch, .n_threads = c.o.n_threads};
    if ((rc = qlm_ctx_new(&c.ctx, c.m, &cp, &err))) goto fail;
    if ((rc = qlm_spec_cli_start(&c.sc, &c.o.spec, c.m, c.ctx, &cp, &c.o.sp, &err))) goto fail;
    if ((rc = qlm_chat_fmt_init(&c.fmt, c.m, c.o.chat_template, &err))) goto fail;
    if (!(c.smp = qlm_sampler_for(c.m, &c.o.sp))) {
        rc = qlm_fail(&err, QLM_ERUNTIME, "out of memory");
        goto fail;
    }
    if (c.o.load && (rc = load(&c, c.o.load))) goto done;
    if (c.o.system && !set_system(&c, c.o.system)) {
        rc = qlm_fail(&err, QLM_ERUNTIME, "out of memory");
        goto fail;
    }
    if (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)) {
        if (!(c.le = qlm_le_new(STDIN_FILENO, STDOUT_FILENO, c.o.no_history ? 0 : 1000))) {
            rc = qlm_fail(&err, QLM_ERUNTIME, "out of memory");
            goto fail;
        }
        open_history(&c);
    }
    if (c.logs && c.le)
        fprintf(stderr, "qlm chat: %s, %d-token context. /help for commands, Ctrl-D to quit.\n",
                c.m->name, qlm_ctx_n_ctx(c.ctx));
    /* No SA_RESTART: a Ctrl-C also ends a blocking read of piped input. */
    struct sigaction sa = {.sa_handler = on_sigint};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    rc = loop(&c);
    goto done;
fail:
    qlm_cli_report(&err);
done:
    msgs_clear(&c, 0);
    free(c.msgs);
    free(c.reply);
    qlm_le_free(c.le);
    qlm_sampler_free(c.smp);
    qlm_spec_cli_end(&c.sc);
    qlm_chat_fmt_free(&c.fmt);
    qlm_ctx_free(c.ctx);
    qlm_model_free(c.m);
    return rc;
}
