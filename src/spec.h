/* spec.h - speculative decoding: a cheap drafter guesses tokens, the
 * target checks them in one batch.
 *
 * Lossless by construction: verification runs as a one_by_one batch, so
 * the target's logits are bit for bit those of plain decoding, and each
 * drafted token x is accepted with probability min(1, p(x)/q(x)), where p
 * and q are the distributions the target's and the draft's sampler chains
 * actually sample from; on rejection the token is drawn from the
 * normalised max(0, p - q), and after k accepted tokens one more comes
 * from the target.  The output distribution is the target's alone; with
 * greedy sampling the tokens are exactly those of qlm_generate. */
#ifndef QLM_SPEC_H
#define QLM_SPEC_H

#include <stdbool.h>

#include "generate.h"
#include "model.h"
#include "sample.h"

/* What a drafter proposes: tokens tok[0..n) to follow the context, each
 * drawn from q[i][0..n_q[i]) (n_q[i] == 0: chosen deterministically, q is
 * a point mass on tok[i]). */
typedef struct qlm_draft {
    int n, cap;
    int32_t *tok;
    qlm_tok_prob **q;
    int *n_q, *q_cap;
} qlm_draft;

/* Room for n tokens; -1 when out of memory. */
int qlm_draft_reserve(qlm_draft *d, int n);
/* Sets entry i (< cap) to tok drawn from q[0..n_q) (copied; n_q 0: point mass). */
int qlm_draft_set(qlm_draft *d, int i, int32_t tok, const qlm_tok_prob *q, int n_q);

typedef struct qlm_drafter qlm_drafter;
struct qlm_drafter {
    const char *kind; /* "model" or "lookup", for logs */
    /* Cost of a drafted token relative to one target decode, when known
     * before measuring (0: unknown); adaptive mode starts from it. */
    double rel_cost;
    /* Proposes at most max (>= 1) tokens to follow ctx[0..n); out->n = 0
     * when it has nothing to offer.  ctx is the whole text so far, so a
     * drafter may keep state keyed by its prefix. */
    int (*propose)(qlm_drafter *d, const int32_t *ctx, int n, int max, qlm_draft *out, qlm_err *err);
    /* Optional: sees the prompt while the target processes it (a draft
     * model prefills its cache here, so that cost counts as prompt time). */
    int (*begin)(qlm_drafter *d, const int32_t *prompt, int n, qlm_err *err);
    void (*free)(qlm_drafter *d);
};

typedef struct qlm_draft_model_params {
    const qlm_model *model;      /* the draft model (not owned) */
    qlm_ctx_params ctx;          /* its own context: cells, batch, threads */
    qlm_sampler_params sampling; /* the target's settings: q follows the same chain */
    int n_vocab;                 /* ids it may propose: the range shared with the target */
    int n_min;                   /* always draft at least this many */
    float p_min;                 /* then stop when its top probability falls below */
    double rel_cost;             /* expected cost per token relative to the target (0: unknown) */
} qlm_draft_model_params;

/* A draft model with its own context, KV cache and sampler. */
int qlm_drafter_model_new(qlm_drafter **out, const qlm_draft_model_params *p, qlm_err *err);
/* Prompt lookup: continues the longest recent n-gram (ngram_max down to
 * ngram_min tokens) of the text so far with what followed its latest
 * earlier occurrence. */
int qlm_drafter_lookup_new(qlm_drafter **out, int ngram_max, int ngram_min, qlm_err *err);
void qlm_drafter_free(qlm_drafter *d);

/* Checks that draft's token ids mean what target's do: same tokenizer
 * family and special tokens, identical texts over the shared id range,
 * only padding beyond it.  QLM_ELOAD naming the first difference; on
 * success *n_shared is the shared range (what the draft may propose). */
int qlm_draft_compat(const qlm_model *target, const qlm_model *draft, int *n_shared, qlm_err *err);

typedef enum qlm_spec_rule {
    QLM_SPEC_RULE_STANDARD = 0,
    /* Tests only: on rejection draw from p instead of max(0, p - q), a
     * known-wrong rule the distribution tests must catch. */
    QLM_SPEC_RULE_BROKEN,
} qlm_spec_rule;

typedef struct qlm_spec_params {
    int n_draft;      /* most tokens per draft */
    int n_draft_min;  /* fewest tokens per draft (lookup: shorter proposals are not verified) */
    bool adaptive;    /* length follows acceptance; pauses when it does not pay */
    int n_plain_first; /* plain decodes first, to measure the plain rate (2) */
    qlm_spec_rule rule;
} qlm_spec_params;

qlm_spec_params qlm_spec_defaults(void);

typedef struct qlm_spec_stats {
    int n_rounds;        /* verify batches */
    int n_drafted;       /* drafted tokens checked by the target */
    int n_accepted;      /* of those, accepted */
    int n_plain;         /* tokens decoded without a draft */
    int n_pauses;        /* times adaptive mode switched speculation off */
    double plain_ms;     /* time of those plain decodes: the measured plain rate */
    double draft_ms, verify_ms;
} qlm_spec_stats;

/* accepted / drafted, 0 with nothing drafted */
double qlm_spec_acceptance(const qlm_spec_stats *s);
/* accepted tokens per verify round */
double qlm_spec_mean_accepted(const qlm_spec_stats *s);
/* ms per token of plain decoding (measured in this run) over ms per
 * generated token; 0 when there was no plain decode to measure. */
double qlm_spec_speedup(const qlm_spec_stats *s, const qlm_gen_stats *g);

/* Frees what a draft holds (the struct itself is the caller's). */
void qlm_draft_free(qlm_draft *d);

/* Decides the entries of a verify batch [pending, d->tok[0..d->n)] one
 * row at a time, for loops that run their own batches (qlm batch verifies
 * several sequences' drafts in one). */
typedef struct qlm_spec_verifier {
    qlm_spec_rule rule;
    float *qd;            /* q as a dense vector, zero between calls */
    qlm_tok_prob *resid;  /* the normalised max(0, p - q) is drawn from here */
} qlm_spec_verifier;

int qlm_spec_verifier_init(qlm_spec_verifier *v, int n_vocab, qlm_spec_rule rule);
void qlm_spec_verifier_free(qlm_spec_verifier *v);
/* The token the target generates after entry i, whose logits are given:
 * d->tok[i] when accepted, else its replacement with *rejected set; for
 * i == d->n the bonus token.  The caller passes each token to s
 * (qlm_sampler_accept) before deciding the next entry, and stops at the
 * first rejection. */
int32_t qlm_spec_decide(qlm_spec_verifier *v, qlm_sampler *s, const float *logits, const qlm_draft *d, int i,
                        bool *rejected);

/* The adaptive controller of the speculative loop (spec.c), for loops
 * that run their own rounds (qlm batch keeps one per sequence): the draft
 * length that gives the most tokens per millisecond under a cost model
 * measured online, and pauses (plain decoding) when none beats plain.
 * What speculation loses against plain decoding is kept on an account
 * that earns QLM_SPEC_LOSS_SHARE of plain decoding's time per token; no
 * probe starts without the account covering its expected cost, so a
 * draft that never helps costs at most that share plus a few plain
 * decodes' worth.  Its decisions use only what happened before the round. */
/* 1%, not 2%: on 128-token replies with a useless draft model, 2% let a
 * second probe (with its catch-up) in and measured 3-6% slower than plain
 * side by side; 1% measured within noise of plain. */
#define QLM_SPEC_LOSS_SHARE 0.01

typedef struct qlm_spec_adapt {
    double t_plain;     /* ms per plain decode (EMA); 0 until measured */
    double acc, trials; /* decayed counts: accepted drafts, accept/reject events */
    double beta;        /* extra cost of one more verify entry, in plain decodes */
    double t_draft;     /* ms per drafted token; 0 until measured */
    double draft_prior; /* until then: t_draft / t_plain guessed by the drafter */
    double bank;        /* ms speculation may still lose (can go below 0) */
    double probe_cost;  /* ms a probe costs beyond plain decoding (EMA); 0 until measured */
    int off_left;       /* plain tokens left in the current pause */
    int pause;          /* length of the next pause */
    int n_pauses;
    int n_failed;       /* probes in a row that accepted nothing */
    int since_round;    /* plain decodes since the last round: what a draft model catches up on */
    bool tried;         /* a round ran: the model's priors no longer decide alone */
    bool last_full;     /* the last round accepted all its drafts */
    bool after_pause;   /* a pause ended: the next round probes, when the bank allows */
    bool probing;       /* the next round is a probe (k_min drafts, whatever the model says) */
} qlm_spec_adapt;

/* draft_prior: the drafter's rel_cost. */
void qlm_spec_adapt_init(qlm_spec_adapt *a, double draft_prior);
/* Tokens to draft next, in [k_min, k_max], or 0: decode plainly. */
int qlm_spec_adapt_length(qlm_spec_adapt *a, int k_min, int k_max);
/* After a plain step that took ms. */
void qlm_spec_adapt_plain(qlm_spec_adapt *a, double ms);
/* After a round of k drafts: accepted of them (rejected: the round ended
 * on a rejection), its drafting and verifying time, tokens it generated. */
void qlm_spec_adapt_round(qlm_spec_adapt *a, int k, int accepted, bool rejected, double draft_ms,
                          double verify_ms, int generated);

/* qlm_generate with a drafter: same contract (prompt into sequence 0 of
 * an empty cache, callback per token, stop reasons, stats), the tokens of
 * the target alone.  spec may be NULL (stats not wanted). */
int qlm_spec_generate(qlm_ctx *c, const qlm_model *m, qlm_drafter *d, const qlm_spec_params *sp,
                      const int32_t *prompt, int n_prompt, int n_predict, qlm_sampler *s,
                      qlm_token_fn on_token, void *user, qlm_gen_stats *st, qlm_spec_stats *spec,
                      qlm_err *err);
/* ... and qlm_generate_ex's: a cancel hook polled during the prompt. */
int qlm_spec_generate_ex(qlm_ctx *c, const qlm_model *m, qlm_drafter *d, const qlm_spec_params *sp,
                         const int32_t *prompt, int n_prompt, const qlm_gen_opts *o, qlm_sampler *s,
                         qlm_token_fn on_token, void *user, qlm_gen_stats *st, qlm_spec_stats *spec,
                         qlm_err *err);

#endif
