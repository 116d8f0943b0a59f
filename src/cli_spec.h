/* cli_spec.h - the speculative-decoding flags of the front ends (-md,
 * --draft, --lookup, ...): parsing, setting up the drafter, reporting. */
#ifndef QLM_CLI_SPEC_H
#define QLM_CLI_SPEC_H

#include <stdbool.h>
#include <stdio.h>

#include "spec.h"

typedef struct qlm_spec_opts {
    const char *draft_model;
    int n_draft, n_draft_min, threads_draft, ngram;
    float p_min;
    bool lookup, fixed;
} qlm_spec_opts;

qlm_spec_opts qlm_spec_opts_defaults(void);

/* Option text for --help. */
extern const char qlm_spec_usage[];

/* Parses argv[*i] if it is one of these flags (advancing *i past a value):
 * -1 when it is not, 0 when parsed, else the exit code (error printed). */
int qlm_spec_opt(qlm_spec_opts *o, int argc, char **argv, int *i);

typedef struct qlm_spec_cli {
    qlm_model *draft;      /* with -md */
    qlm_drafter *drafter;  /* NULL: no speculation */
    qlm_spec_params params;
    qlm_spec_stats stats;
    /* how to make more drafters like this one (qlm_spec_cli_drafter) */
    qlm_draft_model_params dp;
    int ngram;
} qlm_spec_cli;

/* Loads and checks the draft model (or sets up lookup) for target m;
 * leaves sc->drafter NULL when no speculative flag was given.  The draft
 * model's context gets cp->n_ctx cells (0: as many as c has). */
int qlm_spec_cli_start(qlm_spec_cli *sc, const qlm_spec_opts *o, const qlm_model *m, qlm_ctx *c,
                       const qlm_ctx_params *cp, const qlm_sampler_params *sp, qlm_err *err);
void qlm_spec_cli_end(qlm_spec_cli *sc);
/* One more drafter like sc->drafter with state of its own (a draft
 * model's context and cache; the loaded model is shared), for a loop that
 * drafts for several sequences; *out NULL without speculation. */
int qlm_spec_cli_drafter(const qlm_spec_cli *sc, qlm_drafter **out, qlm_err *err);
/* ,"speculative":{...} for --json (nothing without a drafter). */
void qlm_spec_cli_json(FILE *f, const qlm_spec_cli *sc, const qlm_gen_stats *st);
/* One line for -v. */
void qlm_spec_cli_log(FILE *f, const qlm_spec_cli *sc, const qlm_gen_stats *st);

#endif
