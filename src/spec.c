/* spec.c - the speculative generation loop and its adaptive controller.
 *
 * State between rounds: the target's cache holds positions [0, n_past);
 * the last generated token ("pending", position n_past) is known but not
 * yet decoded.  A round drafts d[0..k) after it, decodes [pending, d...]
 * in one one_by_one batch, and walks the k+1 rows of logits: row i gives
 * the target's distribution for the token after entry i, which either
 * accepts d[i] or replaces it (and ends the round); a round that accepts
 * all k adds a bonus token from row k.  The new pending token is the last
 * one generated; cache cells past it are removed.
 *
 * Every decision that shortens or skips a draft depends only on what was
 * generated before the round (lengths, budgets, timings), never on the
 * drafted tokens themselves, which the acceptance rule requires. */
#include "spec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-lite/threads.h"

qlm_spec_params qlm_spec_defaults(void)
{
    return (qlm_spec_params){.n_draft = 8, .n_draft_min = 1, .adaptive = true, .n_plain_first = 2};
}

double qlm_spec_acceptance(const qlm_spec_stats *s)
{
    return s->n_drafted ? (double)s->n_accepted / s->n_drafted : 0.0;
}

double qlm_spec_mean_accepted(const qlm_spec_stats *s)
{
    return s->n_rounds ? (double)s->n_accepted / s->n_rounds : 0.0;
}

double qlm_spec_speedup(const qlm_spec_stats *s, const qlm_gen_stats *g)
{
    if (!s->n_plain || s->plain_ms <= 0 || !g->n_gen || g->gen_ms <= 0) return 0.0;
    return (s->plain_ms / s->n_plain) / (g->gen_ms / g->n_gen);
}

void qlm_drafter_free(qlm_drafter *d)
{
    if (d) d->free(d);
}

/* ---- adaptive controller ----
 *
 * A cost model with parameters measured online: a plain decode takes
 * t_plain, a drafted token t_draft, a verify batch of k + 1 entries
 * t_plain * (1 + beta * k), and each drafted token is accepted with
 * probability alpha, so a round of k drafts yields (1 - alpha^(k+1)) /
 * (1 - alpha) tokens.  The draft length is the k with the most tokens per
 * millisecond; when no k beats plain decoding, speculation pauses for a
 * stretch of plain tokens and then probes with the shortest draft.
 *
 * What bounds the loss is an account (bank): every token earns
 * QLM_SPEC_LOSS_SHARE of a plain decode, every round pays what it cost
 * beyond decoding its tokens plainly (a paying round earns).  A probe
 * waits until the account covers its expected cost, measured on earlier
 * probes: that includes what a draft model spends catching up on the
 * paused stretch, which a useless draft pays at every probe.  On top,
 * each probe that does not pay doubles the next pause, and after
 * GIVE_UP probes in a row that accepted nothing the draft is left alone
 * for PAUSE_MAX tokens: cheap drafters (lookup) are then not probed
 * every few tokens just because the account could afford it. */
#define PAUSE_MIN 16
#define PAUSE_MAX 1024
#define GIVE_UP 4
/* the account starts with one plain decode's worth, holds at most 16 */
#define BANK_START 1.0
#define BANK_MAX 16.0
/* before a probe is measured, a draft model is taken to catch up on
 * this many tokens (drafters.c's CATCHUP_MAX) in a batch that costs what
 * the target's verify batches do per entry */
#define CATCHUP_GUESS 16
#define EMA(x, v, w) ((x) = (x) > 0 ? (x) + (w) * ((v) - (x)) : (v))

void qlm_spec_adapt_init(qlm_spec_adapt *a, double draft_prior)
{
    /* priors: acceptance 1/2, a verify entry costs 0.3 plain decodes
     * (two entries cost ~1.25 plain decodes on one core, nine ~3) */
    *a = (qlm_spec_adapt){.acc = 1, .trials = 2, .beta = 0.3, .pause = PAUSE_MIN, .draft_prior = draft_prior};
}

static void bank_add(qlm_spec_adapt *a, double ms)
{
    a->bank += ms;
    if (a->bank > BANK_MAX * a->t_plain) a->bank = BANK_MAX * a->t_plain;
}

static void adapt_pause(qlm_spec_adapt *a)
{
    a->off_left = a->pause;
    a->pause = a->pause * 2 < PAUSE_MAX ? a->pause * 2 : PAUSE_MAX;
    a->after_pause = true;
    a->n_pauses++;
}

static double draft_ms_per_token(const qlm_spec_adapt *a)
{
    return a->t_draft > 0 ? a->t_draft : a->draft_prior * a->t_plain;
}

/* What a probe is expected to cost beyond plain decoding: measured on
 * earlier probes after pauses, else drafting and verifying k_min tokens
 * after a catch-up on the plain tokens since the last round. */
static double probe_cost(const qlm_spec_adapt *a, int k_min)
{
    if (a->probe_cost > 0 && a->n_pauses > 0) return a->probe_cost;
    const int m = a->since_round < CATCHUP_GUESS ? a->since_round : CATCHUP_GUESS;
    return k_min * a->beta * a->t_plain + (k_min + a->beta * (m > 1 ? m - 1 : 0)) * draft_ms_per_token(a);
}

int qlm_spec_adapt_length(qlm_spec_adapt *a, int k_min, int k_max)
{
    if (a->off_left > 0 || a->t_plain <= 0) return 0;
    if (a->probing) return k_min;
    if (!a->after_pause) {
        const double al = a->acc / a->trials;
        int best = k_min;
        double best_rate = -1;
        for (int k = k_min; k <= k_max; k++) {
            /* expected tokens of a round: accepted run plus the final one */
            const double tokens = al >= 1 ? k + 1 : (1 - pow(al, k + 1)) / (1 - al);
            const double cost =
                (k + a->beta * pow(al, k)) * draft_ms_per_token(a) + a->t_plain * (1 + a->beta * k);
            if (tokens / cost > best_rate) {
                best_rate = tokens / cost;
                best = k;
            }
        }
        if (best_rate * a->t_plain >= 1.0 && a->bank >= 0) return best;
        /* a drafter never tried is probed rather than judged on priors */
        if (a->tried) {
            adapt_pause(a);
            return 0;
        }
        a->after_pause = true;
    }
    /* only a measurement can tell that drafts got better, but a probe
     * costs: wait until the account covers it */
    const double cost = probe_cost(a, k_min);
    if (a->bank < cost) {
        a->off_left = (int)ceil((cost - a->bank) / (QLM_SPEC_LOSS_SHARE * a->t_plain));
        return 0;
    }
    a->after_pause = false;
    a->probing = true;
    return k_min;
}

void qlm_spec_adapt_plain(qlm_spec_adapt *a, double ms)
{
    const bool first = a->t_plain <= 0;
    EMA(a->t_plain, ms, 0.2);
    if (first) a->bank = BANK_START * a->t_plain;
    bank_add(a, QLM_SPEC_LOSS_SHARE * ms);
    a->since_round++;
    if (a->off_left > 0) a->off_left--;
}

void qlm_spec_adapt_round(qlm_spec_adapt *a, int k, int accepted, bool rejected, double draft_ms,
                          double verify_ms, int generated)
{
    a->acc = 0.8 * a->acc + accepted;
    a->trials = 0.8 * a->trials + accepted + rejected;
    a->tried = true;
    a->since_round = 0;
    const bool full = a->last_full;
    a->last_full = accepted == k;
    if (a->t_plain <= 0) return;
    const double b = (verify_ms / a->t_plain - 1) / k;
    a->beta += 0.3 * ((b < 0 ? 0 : b) - a->beta);
    /* what the round cost beyond decoding its tokens plainly */
    const double loss = draft_ms + verify_ms - generated * a->t_plain;
    bank_add(a, QLM_SPEC_LOSS_SHARE * generated * a->t_plain - loss);
    if (a->probing) {
        /* a draft model caught up on the paused stretch: not its speed,
         * but what every probe costs */
        a->probing = false;
        if (a->n_pauses > 0) EMA(a->probe_cost, loss > 0 ? loss : 1e-3, 0.5);
        if (loss <= 0) {
            a->pause = PAUSE_MIN;
            a->n_failed = 0;
            return;
        }
        if (accepted > 0) {
            a->n_failed = 0; /* the model decides next */
            return;
        }
        if (++a->n_failed >= GIVE_UP) a->pause = PAUSE_MAX;
        adapt_pause(a);
        return;
    }
    /* a draft model decodes about k tokens a round: what the last round
     * added (two tokens in one batch, costing 1 + beta of one as the
     * target's batches do, after a round that accepted everything), then
     * k - 1 drafts on top of the first.  Measured as draft_ms / k, a
     * draft that pays only at k = 1 would look 1 + beta times dearer. */
    EMA(a->t_draft, draft_ms / (k + (full ? a->beta : 0)), 0.3);
    /* the model pauses when acceptance drops; the account when the
     * measured losses add up, whatever the model believes */
    if (a->bank < 0) adapt_pause(a);
    else if (loss < 0) {
        a->pause = PAUSE_MIN;
        a->n_failed = 0;
    }
}

/* ---- the loop ---- */

typedef struct run {
    qlm_ctx *c;
    const qlm_model *m;
    qlm_sampler *s;
    qlm_token_fn on_token;
    void *user;
    qlm_gen_stats *st;
    int n_ctx, n_predict;
    int32_t *hist; /* prompt + generated tokens */
    int n_hist;
    qlm_piece piece;
} run;

/* Passes one generated token on, with qlm_generate's checks in its order;
 * returns 1 when generation ends (st->stop says why). */
static int emit(run *r, int32_t tok)
{
    qlm_gen_stats *st = r->st;
    if (qlm_vocab_is_eog(r->m->vocab, tok)) { st->stop = QLM_STOP_EOG; return 1; }
    qlm_sampler_accept(r->s, tok);
    st->n_gen++;
    r->hist[r->n_hist++] = tok;
    size_t n;
    const char *text = qlm_piece_of(&r->piece, r->m->vocab, tok, &n);
    if (r->on_token && r->on_token(r->user, tok, text, n)) { st->stop = QLM_STOP_CALLER; return 1; }
    /* this token's position: it would be decoded there next */
    if (r->n_hist - 1 >= r->n_ctx) { st->stop = QLM_STOP_CONTEXT; return 1; }
    if (r->n_predict >= 0 && st->n_gen >= r->n_predict) { st->stop = QLM_STOP_LENGTH; return 1; }
    return 0;
}

static float prob_of(const qlm_tok_prob *d, int n, int32_t id)
{
    for (int i = 0; i < n; i++)
        if (d[i].id == id) return d[i].p;
    return 0.0f;
}

int qlm_spec_verifier_init(qlm_spec_verifier *v, int n_vocab, qlm_spec_rule rule)
{
    *v = (qlm_spec_verifier){.rule = rule, .qd = calloc((size_t)n_vocab, sizeof *v->qd),
                             .resid = malloc(sizeof *v->resid * (size_t)n_vocab)};
    if (v->qd && v->resid) return 0;
    qlm_spec_verifier_free(v);
    return -1;
}

void qlm_spec_verifier_free(qlm_spec_verifier *v)
{
    free(v->qd);
    free(v->resid);
    v->qd = NULL;
    v->resid = NULL;
}

int32_t qlm_spec_decide(qlm_spec_verifier *v, qlm_sampler *s, const float *logits, const qlm_draft *d, int i,
                        bool *rejected)
{
    *rejected = false;
    if (i >= d->n) return qlm_sample(s, logits); /* every draft accepted: the bonus token */
    const int32_t x = d->tok[i];
    if (qlm_sampler_is_greedy(s)) {
        /* p is a point mass on the argmax, q on x: accept iff they agree */
        const int32_t y = qlm_sample(s, logits);
        *rejected = y != x;
        return y;
    }
    const qlm_tok_prob *p;
    const int n_p = qlm_sample_dist(s, logits, &p);
    const qlm_tok_prob *q = d->q[i];
    const int n_q = d->n_q[i];
    const float px = prob_of(p, n_p, x), qx = n_q ? prob_of(q, n_q, x) : 1.0f;
    if (px >= qx || qlm_sampler_unit(s) * qx < px) return x;
    *rejected = true;
    if (v->rule == QLM_SPEC_RULE_BROKEN) return qlm_sample_from(s, p, n_p, 1.0);
    float *qd = v->qd;
    qlm_tok_prob *resid = v->resid;
    if (n_q)
        for (int j = 0; j < n_q; j++) qd[q[j].id] = q[j].p;
    else
        qd[x] = 1.0f;
    double sum = 0;
    for (int j = 0; j < n_p; j++) {
        const float w = p[j].p - qd[p[j].id];
        resid[j] = (qlm_tok_prob){.id = p[j].id, .p = w > 0 ? w : 0.0f};
        sum += resid[j].p;
    }
    if (n_q)
        for (int j = 0; j < n_q; j++) qd[q[j].id] = 0.0f;
    else
        qd[x] = 0.0f;
    /* p <= q everywhere means p == q up to rounding, where rejection has
     * probability zero; fall back to p rather than divide by zero */
    if (sum <= 0) return qlm_sample_from(s, p, n_p, 1.0);
    return qlm_sample_from(s, resid, n_p, sum);
}

void qlm_draft_free(qlm_draft *d)
{
    for (int i = 0; i < d->cap; i++) free(d->q[i]);
    free(d->tok);
    free(d->q);
    free(d->n_q);
    free(d->q_cap);
    *d = (qlm_draft){0};
}

int qlm_spec_generate(qlm_ctx *c, const qlm_model *m, qlm_drafter *d, const qlm_spec_params *sp,
                      const int32_t *prompt, int n_prompt, int n_predict, qlm_sampler *s,
                      qlm_token_fn on_token, void *user, qlm_gen_stats *st, qlm_spec_stats *spec,
                      qlm_err *err)
{
    const qlm_gen_opts o = {.n_predict = n_predict};
    return qlm_spec_generate_ex(c, m, d, sp, prompt, n_prompt, &o, s, on_token, user, st, spec, err);
}

int qlm_spec_generate_ex(qlm_ctx *c, const qlm_model *m, qlm_drafter *d, const qlm_spec_params *sp,
                         const int32_t *prompt, int n_prompt, const qlm_gen_opts *o, qlm_sampler *s,
                         qlm_token_fn on_token, void *user, qlm_gen_stats *st, qlm_spec_stats *spec,
                         qlm_err *err)
{
    const int n_predict = o->n_predict;
    qlm_spec_stats spec_local;
    if (!spec) spec = &spec_local;
    *spec = (qlm_spec_stats){0};
    if (!d || !sp) return qlm_fail(err, QLM_EUSAGE, "speculative generation without a drafter");
    const int n_ctx = qlm_ctx_n_ctx(c);
    const int k_max = sp->n_draft > 0 ? sp->n_draft : 1;
    const int k_min = sp->n_draft_min < 1 ? 1 : sp->n_draft_min > k_max ? k_max : sp->n_draft_min;
    run r = {.c = c, .m = m, .s = s, .on_token = on_token, .user = user, .st = st, .n_ctx = n_ctx,
             .n_predict = n_predict};
    qlm_batch b = {0};
    qlm_draft dr = {0};
    qlm_spec_verifier ver = {0};
    qlm_spec_adapt a;
    qlm_spec_adapt_init(&a, d->rel_cost);
    /* the prompt phase first: it checks the prompt and resets *st */
    const int n_threads = qlm_ctx_n_threads(c);
    double t0 = qlm_now_ms();
    int rc = qlm_gen_prefill(c, prompt, n_prompt, o, s, user, st, err);
    if (rc || st->stop == QLM_STOP_CALLER) return rc;
    if (d->begin) {
        rc = d->begin(d, prompt, n_prompt, err);
        gl_set_threads(n_threads);
        if (rc) return rc;
    }
    st->prompt_ms = qlm_now_ms() - t0;
    r.hist = malloc(sizeof *r.hist * ((size_t)n_ctx + 1));
    if (!r.hist || qlm_spec_verifier_init(&ver, m->hp.n_vocab, sp->rule) || qlm_batch_init(&b, k_max + 1)) {
        rc = qlm_fail(err, QLM_ERUNTIME, "out of memory");
        goto done;
    }
    memcpy(r.hist, prompt, sizeof *prompt * (size_t)n_prompt);
    r.n_hist = n_prompt;

    t0 = qlm_now_ms();
    if (n_predict >= 0 && st->n_gen >= n_predict) {
        st->stop = QLM_STOP_LENGTH;
        goto finish;
    }
    if (emit(&r, qlm_sample(s, qlm_logits(c, 0)))) goto finish;

    int n_plain_first = sp->n_plain_first;
    qlm_kv *kv = qlm_ctx_kv(c);
    for (;;) {
        const int n_past = r.n_hist - 1; /* the pending token's position */
        /* budget: a round of k drafts yields up to k + 1 tokens, and its
         * last entry must fit in the context */
        int k = sp->adaptive ? qlm_spec_adapt_length(&a, k_min, k_max) : k_max;
        if (n_plain_first > 0) k = 0;
        if (n_predict >= 0 && k > n_predict - st->n_gen - 1) k = n_predict - st->n_gen - 1;
        if (k > n_ctx - 1 - n_past) k = n_ctx - 1 - n_past;
        if (k < k_min) k = 0;
        double draft_ms = 0;
        dr.n = 0;
        if (k > 0) {
            const double td = qlm_now_ms();
            rc = d->propose(d, r.hist, r.n_hist, k, &dr, err);
            draft_ms = qlm_now_ms() - td;
            spec->draft_ms += draft_ms;
            gl_set_threads(n_threads);
            if (rc) break;
            if (dr.n > k) dr.n = k;
            /* a deterministic drafter's short proposal is not worth a batch */
            if (dr.n < k_min) dr.n = 0;
        }
        b.n = 0;
        b.one_by_one = dr.n > 0;
        qlm_batch_add(&b, r.hist[n_past], n_past, 0, true);
        for (int i = 0; i < dr.n; i++) qlm_batch_add(&b, dr.tok[i], n_past + 1 + i, 0, true);
        const double tv = qlm_now_ms();
        if ((rc = qlm_decode(c, &b, err))) break;
        if (dr.n == 0) {
            /* a plain step, timed like a round: decode, sample, pass on */
            const int ended = emit(&r, qlm_sample(s, qlm_logits(c, 0)));
            const double ms = qlm_now_ms() - tv;
            spec->plain_ms += ms;
            spec->n_plain++;
            qlm_spec_adapt_plain(&a, ms);
            if (n_plain_first > 0) n_plain_first--;
            if (ended) break;
            continue;
        }
        int accepted = 0, ended = 0;
        bool rejected = false;
        for (int i = 0; i <= dr.n; i++) {
            const int32_t tok = qlm_spec_decide(&ver, s, qlm_logits(c, i), &dr, i, &rejected);
            if (i < dr.n && !rejected) accepted++;
            if ((ended = emit(&r, tok))) break;
            if (i == dr.n || rejected) break;
        }
        const double verify_ms = qlm_now_ms() - tv;
        spec->verify_ms += verify_ms;
        spec->n_rounds++;
        spec->n_drafted += dr.n;
        spec->n_accepted += accepted;
        if (ended) break;
        if (sp->adaptive) qlm_spec_adapt_round(&a, dr.n, accepted, rejected, draft_ms, verify_ms, accepted + 1);
        /* entries after the last accepted draft saw a future that did not happen */
        qlm_kv_seq_rm(kv, 0, n_past + accepted + 1, -1);
    }
    spec->n_pauses = a.n_pauses;
finish:
    st->gen_ms = qlm_now_ms() - t0;
done:
    qlm_draft_free(&dr);
    qlm_spec_verifier_free(&ver);
    qlm_piece_free(&r.piece);
    free(r.hist);
    qlm_batch_free(&b);
    return rc;
}
