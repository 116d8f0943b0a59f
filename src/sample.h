/* sample.h - picking the next token from logits.
 *
 * The chain follows llama.cpp's default order: repetition penalty over
 * the last tokens, top-k, top-p, min-p, temperature, then a draw from a
 * seeded generator.  temp <= 0 is greedy (argmax after the penalty).
 * The same seed and settings give the same tokens. */
#ifndef QLM_SAMPLE_H
#define QLM_SAMPLE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct qlm_sampler_params {
    float temp;            /* 0.8; <= 0 greedy */
    int top_k;             /* 40; <= 0 off */
    float top_p;           /* 0.95; >= 1 off */
    float min_p;           /* 0.05; <= 0 off */
    float repeat_penalty;  /* 1.0 off */
    int repeat_last_n;     /* 64 */
    uint64_t seed;
    bool ignore_eos;       /* false; callers ban the end-of-generation tokens
                            * (qlm_sampler_for in generate.h) */
} qlm_sampler_params;

qlm_sampler_params qlm_sampler_defaults(void);

typedef struct qlm_sampler qlm_sampler;

qlm_sampler *qlm_sampler_new(const qlm_sampler_params *p, int n_vocab);
void qlm_sampler_free(qlm_sampler *s);
/* Records a token of the context (prompt or generated) for penalties. */
void qlm_sampler_accept(qlm_sampler *s, int32_t tok);
/* Chooses a token from logits[n_vocab] (not modified). */
int32_t qlm_sample(qlm_sampler *s, const float *logits);

/* The distribution qlm_sample draws from for these logits, after the whole
 * chain (penalties over the accepted history, top-k, top-p, min-p,
 * temperature): returns n >= 1 and points *out at n candidates, most
 * likely first, with probabilities summing to 1.  Greedy is one candidate
 * with p = 1.  Speculative decoding needs these exact distributions (its
 * acceptance rule compares the target's and the draft's).  *out lives in
 * the sampler until its next call; nothing is drawn. */
typedef struct qlm_tok_prob {
    int32_t id;
    float p;
} qlm_tok_prob;
int qlm_sample_dist(qlm_sampler *s, const float *logits, const qlm_tok_prob **out);
/* Draws from d[0..n) with weights d[i].p summing to total, using the
 * sampler's generator. */
int32_t qlm_sample_from(qlm_sampler *s, const qlm_tok_prob *d, int n, double total);
/* A uniform draw in [0, 1) from the sampler's generator. */
double qlm_sampler_unit(qlm_sampler *s);
bool qlm_sampler_is_greedy(const qlm_sampler *s);
/* Never picks token tok again (its logit counts as -inf everywhere in the
 * chain, qlm_sample_dist included, so speculative acceptance agrees). */
void qlm_sampler_ban(qlm_sampler *s, int32_t tok);
/* Forgets the recorded history (the generator keeps its state). */
void qlm_sampler_reset(qlm_sampler *s);

#endif
