/* drafters.c - the two ways qlm guesses tokens ahead: a small draft model
 * with its own context, and prompt lookup (n-gram continuation). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "spec.h"
#include "ggml-lite/threads.h"

int qlm_draft_reserve(qlm_draft *d, int n)
{
    if (n <= d->cap) return 0;
    int32_t *tok = realloc(d->tok, sizeof *tok * (size_t)n);
    if (tok) d->tok = tok;
    qlm_tok_prob **q = realloc(d->q, sizeof *q * (size_t)n);
    if (q) d->q = q;
    int *n_q = realloc(d->n_q, sizeof *n_q * (size_t)n);
    if (n_q) d->n_q = n_q;
    int *q_cap = realloc(d->q_cap, sizeof *q_cap * (size_t)n);
    if (q_cap) d->q_cap = q_cap;
    if (!tok || !q || !n_q || !q_cap) return -1;
    for (int i = d->cap; i < n; i++) {
        d->q[i] = NULL;
        d->n_q[i] = d->q_cap[i] = 0;
    }
    d->cap = n;
    return 0;
}

int qlm_draft_set(qlm_draft *d, int i, int32_t tok, const qlm_tok_prob *q, int n_q)
{
    if (n_q > d->q_cap[i]) {
        qlm_tok_prob *nq = realloc(d->q[i], sizeof *nq * (size_t)n_q);
        if (!nq) return -1;
        d->q[i] = nq;
        d->q_cap[i] = n_q;
    }
    if (n_q) memcpy(d->q[i], q, sizeof *q * (size_t)n_q);
    d->tok[i] = tok;
    d->n_q[i] = n_q;
    return 0;
}

/* ---- draft model ---- */

typedef struct model_drafter {
    qlm_drafter base;
    qlm_ctx *c;
    qlm_sampler *s;
    int n_vocab, n_min, n_threads, repeat_last_n;
    float p_min;
    int32_t *toks; /* what the draft's cache holds, positions [0, n_toks) */
    int n_toks, n_ctx;
    qlm_batch b;
} model_drafter;

static void model_free(qlm_drafter *base)
{
    model_drafter *d = (model_drafter *)base;
    qlm_ctx_free(d->c);
    qlm_sampler_free(d->s);
    free(d->toks);
    qlm_batch_free(&d->b);
    free(d);
}

/* Probability of the most likely token at temperature 1: how sure the
 * draft is, whatever the sampler settings. */
static float top_prob(const float *lg, int n)
{
    float mx = lg[0];
    for (int i = 1; i < n; i++) mx = lg[i] > mx ? lg[i] : mx;
    double sum = 0;
    for (int i = 0; i < n; i++) sum += expf(lg[i] - mx);
    return (float)(1.0 / sum);
}

/* After a pause in speculation the draft model lags behind by up to a
 * whole paused stretch.  Decoding all of it would make every probe cost
 * a prefill of that stretch, so only its last CATCHUP_MAX tokens are
 * decoded and the rest stays a hole in the draft's context: drafts from a
 * slightly blind draft are still checked by the target, so this costs
 * acceptance, never correctness. */
#define CATCHUP_MAX 16

/* Makes the draft's cache hold ctx[0..n) (less any hole) with the logits
 * of its last entry current, keeping the cached prefix ctx starts with. */
static int model_sync(model_drafter *d, const int32_t *ctx, int n, qlm_err *err)
{
    gl_set_threads(d->n_threads);
    int keep = 0;
    while (keep < d->n_toks && keep < n - 1 && (d->toks[keep] == ctx[keep] || d->toks[keep] < 0)) keep++;
    qlm_kv_seq_rm(qlm_ctx_kv(d->c), 0, keep, -1);
    const int from = keep > 0 && n - keep > CATCHUP_MAX ? n - CATCHUP_MAX : keep;
    for (int i = keep; i < from; i++) d->toks[i] = -1; /* the hole */
    d->b.n = 0;
    for (int i = from; i < n; i++) qlm_batch_add(&d->b, ctx[i], i, 0, i == n - 1);
    d->n_toks = from;
    const int rc = qlm_decode(d->c, &d->b, err);
    if (rc) return rc;
    memcpy(d->toks + from, ctx + from, sizeof *ctx * (size_t)(n - from));
    d->n_toks = n;
    return QLM_OK;
}

static int model_begin(qlm_drafter *base, const int32_t *prompt, int n, qlm_err *err)
{
    model_drafter *d = (model_drafter *)base;
    if (n < 1 || n > d->n_ctx) return QLM_OK;
    return model_sync(d, prompt, n, err);
}

static int model_propose(qlm_drafter *base, const int32_t *ctx, int n, int max, qlm_draft *out, qlm_err *err)
{
    model_drafter *d = (model_drafter *)base;
    out->n = 0;
    if (n < 1 || max < 1) return QLM_OK;
    if (n + max > d->n_ctx) max = d->n_ctx - n;
    if (max < 1) return QLM_OK;
    if (qlm_draft_reserve(out, max)) return qlm_fail(err, QLM_ERUNTIME, "out of memory");
    int rc = model_sync(d, ctx, n, err);
    if (rc) return rc;

    qlm_sampler_reset(d->s);
    for (int i = n - d->repeat_last_n > 0 ? n - d->repeat_last_n : 0; i < n; i++)
        qlm_sampler_accept(d->s, ctx[i]);
    const bool greedy = qlm_sampler_is_greedy(d->s);
    for (int i = 0; i < max; i++) {
        const float *lg = qlm_logits(d->c, 0);
        /* stopping looks only at what precedes the token about to be drawn */
        if (i >= d->n_min && d->p_min > 0 && top_prob(lg, d->n_vocab) < d->p_min) break;
        const qlm_tok_prob *q;
        const int n_q = qlm_sample_dist(d->s, lg, &q);
        double sum = 0;
        for (int j = 0; j < n_q; j++) sum += q[j].p;
        const int32_t x = greedy ? q[0].id : qlm_sample_from(d->s, q, n_q, sum);
        if (qlm_draft_set(out, i, x, q, greedy ? 0 : n_q)) return qlm_fail(err, QLM_ERUNTIME, "out of memory");
        out->n = i + 1;
        qlm_sampler_accept(d->s, x);
        if (i + 1 == max) break;
        d->b.n = 0;
        qlm_batch_add(&d->b, x, n + i, 0, true);
        if ((rc = qlm_decode(d->c, &d->b, err))) return rc;
        d->toks[d->n_toks++] = x;
    }
    return QLM_OK;
}

int qlm_drafter_model_new(qlm_drafter **out, const qlm_draft_model_params *p, qlm_err *err)
{
    *out = NULL;
    model_drafter *d = calloc(1, sizeof *d);
    if (!d) return qlm_fail(err, QLM_ERUNTIME, "out of memory");
    d->base = (qlm_drafter){.kind = "model", .rel_cost = p->rel_cost, .propose = model_propose,
                            .begin = model_begin, .free = model_free};
    int rc = qlm_ctx_new(&d->c, p->model, &p->ctx, err);
    if (rc) {
        free(d);
        return rc;
    }
    d->n_ctx = qlm_ctx_n_ctx(d->c);
    d->n_threads = qlm_ctx_n_threads(d->c);
    d->n_vocab = p->n_vocab > 0 && p->n_vocab < p->model->hp.n_vocab ? p->n_vocab : p->model->hp.n_vocab;
    d->n_min = p->n_min;
    d->p_min = p->p_min;
    d->repeat_last_n = p->sampling.repeat_last_n;
    /* its own stream of random numbers: a draw shared with the target's
     * acceptance test would correlate q's samples with the test */
    qlm_sampler_params sp = p->sampling;
    sp.seed ^= 0x9e3779b97f4a7c15ull;
    /* restricted to the shared ids: q never proposes a token the target
     * does not have */
    d->s = qlm_sampler_new(&sp, d->n_vocab);
    d->toks = malloc(sizeof *d->toks * (size_t)d->n_ctx);
    if (!d->s || !d->toks || qlm_batch_init(&d->b, d->n_ctx)) {
        model_free(&d->base);
        return qlm_fail(err, QLM_ERUNTIME, "out of memory");
    }
    *out = &d->base;
    return QLM_OK;
}

/* ---- prompt lookup ---- */

typedef struct lookup_drafter {
    qlm_drafter base;
    int ngram_max, ngram_min;
} lookup_drafter;

static void lookup_free(qlm_drafter *base) { free(base); }

static int lookup_propose(qlm_drafter *base, const int32_t *ctx, int n, int max, qlm_draft *out, qlm_err *err)
{
    const lookup_drafter *d = (const lookup_drafter *)base;
    out->n = 0;
    for (int g = d->ngram_max; g >= d->ngram_min; g--) {
        if (n <= g) continue;
        const int32_t *pat = ctx + n - g;
        /* latest earlier occurrence: recent text predicts best */
        for (int j = n - g - 1; j >= 0; j--) {
            if (ctx[j] != pat[0] || memcmp(ctx + j, pat, sizeof *pat * (size_t)g)) continue;
            int cnt = n - (j + g);
            if (cnt > max) cnt = max;
            if (qlm_draft_reserve(out, cnt)) return qlm_fail(err, QLM_ERUNTIME, "out of memory");
            for (int i = 0; i < cnt; i++) qlm_draft_set(out, i, ctx[j + g + i], NULL, 0);
            out->n = cnt;
            return QLM_OK;
        }
    }
    return QLM_OK;
}

int qlm_drafter_lookup_new(qlm_drafter **out, int ngram_max, int ngram_min, qlm_err *err)
{
    *out = NULL;
    if (ngram_min < 1 || ngram_max < ngram_min)
        return qlm_fail(err, QLM_EUSAGE, "lookup n-gram sizes %d..%d: need 1 <= min <= max", ngram_min, ngram_max);
    lookup_drafter *d = calloc(1, sizeof *d);
    if (!d) return qlm_fail(err, QLM_ERUNTIME, "out of memory");
    d->base = (qlm_drafter){.kind = "lookup", .propose = lookup_propose, .free = lookup_free};
    d->ngram_max = ngram_max;
    d->ngram_min = ngram_min;
    *out = &d->base;
    return QLM_OK;
}
