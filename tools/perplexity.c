/* perplexity.c - `qlm perplexity`: scores a text the way llama-perplexity
 * does, so the two can be compared on the same file: the tokens are cut
 * into non-overlapping chunks of -c tokens, each chunk is evaluated from
 * an empty cache, and only the second half of each chunk is scored (every
 * scored token then has at least c/2 tokens of context). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/cli.h"
#include "src/generate.h"
#include "src/model.h"
#include "tools/tools.h"

static void ppl_usage(FILE *f)
{
    fprintf(f,
        "usage: qlm perplexity -m MODEL -f TEXT [-c N] [options]\n"
        "\n"
        "  -m, --model FILE     GGUF model\n"
        "  -f, --file FILE      text to score\n"
        "  -c, --ctx-size N     tokens per chunk (default 512)\n"
        "      --chunks N       score at most N chunks (default: all)\n"
        "  -t, --threads N      threads (default: physical cores)\n"
        "  -b, --batch-size N   tokens per forward pass (default 512)\n"
        "      --kv-type T      KV cache type for K and V: f32 (the default; llama.cpp's exact\n"
        "                       scores with -ctk f32 -ctv f32), f16, int8\n"
        "  -ctk, -ctv T         K or V alone\n");
}

/* -log softmax(logits)[tok], with the max subtracted for range. */
static double nll(const float *logits, int n_vocab, int tok)
{
    float max = logits[0];
    for (int i = 1; i < n_vocab; i++) max = logits[i] > max ? logits[i] : max;
    double sum = 0;
    for (int i = 0; i < n_vocab; i++) sum += exp((double)logits[i] - max);
    return log(sum) - ((double)logits[tok] - max);
}

int qlm_cmd_perplexity(int argc, char **argv)
{
    const char *model = NULL, *file = NULL;
    long n_ctx = 512, max_chunks = -1, threads = 0, n_batch = 512;
    qlm_kv_type type_k = QLM_KV_F32, type_v = QLM_KV_F32;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { ppl_usage(stdout); return 0; }
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        if (!v) return qlm_cli_error(QLM_EUSAGE, "%s: missing value (qlm perplexity --help)", a);
        const int kvf = qlm_cli_kv_flag(a, v, &type_k, &type_v);
        if (kvf < 0) return QLM_EUSAGE;
        if (kvf) continue;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) model = v;
        else if (!strcmp(a, "-f") || !strcmp(a, "--file")) file = v;
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) { if (!qlm_cli_int(a, v, 8, 1 << 20, &n_ctx)) return QLM_EUSAGE; }
        else if (!strcmp(a, "--chunks")) { if (!qlm_cli_int(a, v, 1, 1 << 30, &max_chunks)) return QLM_EUSAGE; }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) { if (!qlm_cli_int(a, v, 1, 1024, &threads)) return QLM_EUSAGE; }
        else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size")) { if (!qlm_cli_int(a, v, 1, 1 << 16, &n_batch)) return QLM_EUSAGE; }
        else return qlm_cli_error(QLM_EUSAGE, "unknown option '%s' (qlm perplexity --help)", a);
    }
    if (!model || !file) return qlm_cli_error(QLM_EUSAGE, "need -m MODEL and -f TEXT");

    FILE *f = fopen(file, "rb");
    if (!f) return qlm_cli_error(QLM_ELOAD, "cannot read %s: %s", file, strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap);
    size_t got;
    while (text && (got = fread(text + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) { char *t = realloc(text, cap *= 2); if (!t) { free(text); text = NULL; } else text = t; }
    }
    fclose(f);
    if (!text) return qlm_cli_error(QLM_ERUNTIME, "out of memory reading %s", file);

    qlm_err err = {0};
    qlm_model *m = NULL;
    qlm_ctx *c = NULL;
    int32_t *toks = NULL;
    size_t n_toks = 0;
    qlm_batch b = {0};
    int rc;
    if ((rc = qlm_model_load(&m, model, &err))) goto fail;
    /* As llama-perplexity: the text with the model's BOS, specials literal. */
    if ((rc = qlm_tokenize(m->vocab, text, len, qlm_vocab_add_bos(m->vocab), false, &toks, &n_toks, &err)))
        goto fail;
    const long n_chunks_all = (long)n_toks / n_ctx;
    const long n_chunks = max_chunks > 0 && max_chunks < n_chunks_all ? max_chunks : n_chunks_all;
    if (n_chunks < 1) {
        rc = qlm_fail(&err, QLM_ELOAD, "%s: %zu tokens is less than one chunk of %ld (lower -c)", file, n_toks, n_ctx);
        goto fail;
    }
    qlm_ctx_params cp = {.n_ctx = (int)n_ctx, .n_batch = (int)n_batch, .n_threads = (int)threads,
                         .type_k = type_k, .type_v = type_v};
    if ((rc = qlm_ctx_new(&c, m, &cp, &err))) goto fail;
    if (qlm_batch_init(&b, (int)n_ctx)) { rc = qlm_fail(&err, QLM_ERUNTIME, "out of memory"); goto fail; }
    fprintf(stderr, "qlm: %zu tokens, %ld chunks of %ld, scoring the second half of each; KV cache K %s V %s\n",
            n_toks, n_chunks, n_ctx, qlm_kv_type_name(type_k), qlm_kv_type_name(type_v));

    const int first = (int)n_ctx / 2;
    double sum = 0, sum2 = 0;
    long count = 0;
    const double t0 = qlm_now_ms();
    for (long ch = 0; ch < n_chunks; ch++) {
        const int32_t *ct = toks + ch * n_ctx;
        qlm_kv_clear(qlm_ctx_kv(c));
        b.n = 0;
        for (int i = 0; i < n_ctx; i++) qlm_batch_add(&b, ct[i], i, 0, i >= first && i < n_ctx - 1);
        if ((rc = qlm_decode(c, &b, &err))) goto fail;
        for (int i = first; i < n_ctx - 1; i++) {
            const double v = nll(qlm_logits(c, i - first), m->hp.n_vocab, ct[i + 1]);
            sum += v;
            sum2 += v * v;
            count++;
        }
        printf("[%ld]%.4f%s", ch + 1, exp(sum / count), ch + 1 == n_chunks ? "\n" : ",");
        fflush(stdout);
    }
    const double mean = sum / count, var = sum2 / count - mean * mean;
    /* error of exp(mean NLL) by the delta method, as llama-perplexity */
    const double ppl = exp(mean), err_ppl = ppl * sqrt(var / (count - 1 > 0 ? count - 1 : 1));
    printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl, err_ppl);
    fprintf(stderr, "qlm: %ld tokens scored in %.1f s\n", count, (qlm_now_ms() - t0) / 1e3);
    rc = 0;
    goto done;
fail:
    qlm_cli_report(&err);
done:
    qlm_batch_free(&b);
    qlm_ctx_free(c);
    free(toks);
    free(text);
    qlm_model_free(m);
    return rc;
}
