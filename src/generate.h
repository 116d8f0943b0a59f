/* generate.h - prompt in, tokens out: the loop every front end shares. */
#ifndef QLM_GENERATE_H
#define QLM_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "sample.h"

typedef enum qlm_stop {
    QLM_STOP_EOG,      /* the model ended its turn */
    QLM_STOP_LENGTH,   /* n_predict reached */
    QLM_STOP_CONTEXT,  /* the context is full */
    QLM_STOP_CALLER,   /* the callback asked to stop (e.g. Ctrl-C) */
} qlm_stop;

const char *qlm_stop_name(qlm_stop s);

/* Called for each generated token with the bytes it stands for (control
 * tokens give none).  Return nonzero to stop. */
typedef int (*qlm_token_fn)(void *user, int32_t tok, const char *piece, size_t n);

typedef struct qlm_gen_stats {
    int n_prompt, n_gen;   /* prompt tokens (reused ones included), tokens generated */
    int n_past;            /* prompt tokens reused from the cache */
    double prompt_ms, gen_ms;
    qlm_stop stop;
} qlm_gen_stats;

/* Decodes prompt[0..n_prompt) into sequence 0 from position 0 (reusing
 * the KV of the longest prefix sequence 0 already holds and dropping the
 * rest of it), then
 * samples up to n_predict tokens (< 0: until end of generation or a full
 * context).  The end-of-generation token itself is not passed on. */
int qlm_generate(qlm_ctx *c, const qlm_model *m, const int32_t *prompt, int n_prompt,
                 int n_predict, qlm_sampler *s, qlm_token_fn on_token, void *user,
                 qlm_gen_stats *st, qlm_err *err);

/* A sampler for model m with settings p; with p->ignore_eos the model's
 * end-of-generation tokens are banned, so generation runs to n_predict or
 * a full context (llama.cpp's --ignore-eos).  NULL when out of memory. */
qlm_sampler *qlm_sampler_for(const qlm_model *m, const qlm_sampler_params *p);

/* Where a generation starts and what may stop it early. */
typedef struct qlm_gen_opts {
    int n_predict;  /* < 0: until end of generation or a full context */
    /* Polled (with the token callback's user pointer) between prompt
     * micro-batches, so a long prompt can be interrupted; nonzero stops
     * with QLM_STOP_CALLER.  NULL: never. */
    int (*cancel)(void *user);
} qlm_gen_opts;

/* qlm_generate with a cancel hook.  The cache then holds the prompt's
 * tokens up to where decoding stopped and the generated ones except the
 * last. */
int qlm_generate_ex(qlm_ctx *c, const qlm_model *m, const int32_t *prompt, int n_prompt,
                    const qlm_gen_opts *o, qlm_sampler *s, qlm_token_fn on_token, void *user,
                    qlm_gen_stats *st, qlm_err *err);

/* The prompt phase every generation loop shares: checks the prompt fits,
 * keeps the prefix sequence 0 already holds (dropping the rest of it),
 * feeds the prompt to the sampler's history and decodes the rest, leaving
 * the last prompt token's logits at row 0.  Resets *st; a cancel sets
 * st->stop = QLM_STOP_CALLER and returns QLM_OK. */
int qlm_gen_prefill(qlm_ctx *c, const int32_t *prompt, int n_prompt, const qlm_gen_opts *o,
                    qlm_sampler *s, void *user, qlm_gen_stats *st, qlm_err *err);

/* A token's text, for loops that pass tokens on: small pieces in place,
 * the rare long one malloc'd (and freed by the next call or by
 * qlm_piece_free). */
typedef struct qlm_piece {
    char small[256];
    char *big;
} qlm_piece;

/* The text of tok (*n bytes; control tokens give none). */
const char *qlm_piece_of(qlm_piece *p, const qlm_vocab *v, int32_t tok, size_t *n);
void qlm_piece_free(qlm_piece *p);

double qlm_now_ms(void);

#endif
