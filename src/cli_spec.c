#include "cli_spec.h"

#include <string.h>

#include "cli.h"

qlm_spec_opts qlm_spec_opts_defaults(void)
{
    const qlm_spec_params d = qlm_spec_defaults();
    return (qlm_spec_opts){.n_draft = d.n_draft, .n_draft_min = d.n_draft_min, .ngram = 3, .p_min = 0.5f};
}

const char qlm_spec_usage[] =
    "  -md, --model-draft F    speculative decoding with draft model F (same tokenizer); the\n"
    "                          output is exactly what the model alone would produce\n"
    "      --lookup            speculative decoding without a draft model: continue repeated\n"
    "                          n-grams of the prompt and output (summaries, quotes, code edits)\n"
    "      --lookup-ngram N    longest n-gram lookup matches (default 3)\n"
    "      --draft N           most tokens drafted per step (default 8)\n"
    "      --draft-min N       fewest tokens drafted per step (default 1)\n"
    "      --draft-p-min P     stop drafting when the draft model's top token is below P (default 0.5)\n"
    "      --draft-fixed       always draft --draft tokens (default: the length follows the\n"
    "                          acceptance rate and speculation pauses when it does not pay)\n"
    "  -td, --threads-draft N  threads for the draft model (default: as -t)\n";

int qlm_spec_opt(qlm_spec_opts *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--lookup")) { o->lookup = true; return 0; }
    if (!strcmp(a, "--draft-fixed")) { o->fixed = true; return 0; }
    const bool md = !strcmp(a, "-md") || !strcmp(a, "--model-draft"),
               n = !strcmp(a, "--draft") || !strcmp(a, "--draft-max"), nmin = !strcmp(a, "--draft-min"),
               pmin = !strcmp(a, "--draft-p-min"), ng = !strcmp(a, "--lookup-ngram"),
               td = !strcmp(a, "-td") || !strcmp(a, "--threads-draft");
    if (!md && !n && !nmin && !pmin && !ng && !td) return -1;
    if (*i + 1 >= argc) return qlm_cli_error(QLM_EUSAGE, "%s: missing value", a);
    const char *v = argv[++*i];
    long l;
    double d;
    if (md) o->draft_model = v;
    else if (pmin) {
        if (!qlm_cli_float(a, v, 0, 1, &d)) return QLM_EUSAGE;
        o->p_min = (float)d;
    } else {
        if (!qlm_cli_int(a, v, td || ng ? 1 : 0, td ? 1024 : 256, &l)) return QLM_EUSAGE;
        if (n) o->n_draft = (int)l;
        else if (nmin) o->n_draft_min = (int)l;
        else if (ng) o->ngram = (int)l;
        else o->threads_draft = (int)l;
    }
    return 0;
}

int qlm_spec_cli_start(qlm_spec_cli *sc, const qlm_spec_opts *o, const qlm_model *m, qlm_ctx *c,
                       const qlm_ctx_params *cp, const qlm_sampler_params *sp, qlm_err *err)
{
    *sc = (qlm_spec_cli){.params = qlm_spec_defaults()};
    if (o->draft_model && o->lookup)
        return qlm_fail(err, QLM_EUSAGE, "-md and --lookup are two kinds of drafter: choose one");
    if (!o->draft_model && !o->lookup) return QLM_OK;
    if (o->n_draft < 1) return qlm_fail(err, QLM_EUSAGE, "--draft must be at least 1");
    if (o->n_draft_min > o->n_draft)
        return qlm_fail(err, QLM_EUSAGE, "--draft-min %d is more than --draft %d", o->n_draft_min, o->n_draft);
    sc->params.n_draft = o->n_draft;
    sc->params.n_draft_min = o->n_draft_min;
    sc->params.adaptive = !o->fixed;
    sc->ngram = o->ngram;
    if (o->lookup) return qlm_drafter_lookup_new(&sc->drafter, o->ngram, 1, err);
    int rc = qlm_model_load(&sc->draft, o->draft_model, err);
    int n_shared = 0;
    if (!rc) rc = qlm_draft_compat(m, sc->draft, &n_shared, err);
    if (rc) {
        qlm_spec_cli_end(sc);
        return rc;
    }
    qlm_draft_model_params dp = {.model = sc->draft, .ctx = *cp, .sampling = *sp, .n_vocab = n_shared,
                                 .n_min = o->n_draft_min, .p_min = o->p_min,
                                 /* decoding streams the weights: size is the first guess at cost */
                                 .rel_cost = (double)sc->draft->gguf->size / (double)m->gguf->size};
    /* as many cells as the target's sequence: drafts run up to its positions */
    dp.ctx.n_ctx = cp->n_ctx > 0 ? cp->n_ctx : qlm_ctx_n_ctx(c);
    if (o->threads_draft) dp.ctx.n_threads = o->threads_draft;
    sc->dp = dp;
    if ((rc = qlm_drafter_model_new(&sc->drafter, &dp, err))) qlm_spec_cli_end(sc);
    return rc;
}

int qlm_spec_cli_drafter(const qlm_spec_cli *sc, qlm_drafter **out, qlm_err *err)
{
    *out = NULL;
    if (!sc->drafter) return QLM_OK;
    if (!sc->draft) return qlm_drafter_lookup_new(out, sc->ngram, 1, err);
    return qlm_drafter_model_new(out, &sc->dp, err);
}

void qlm_spec_cli_end(qlm_spec_cli *sc)
{
    qlm_drafter_free(sc->drafter);
    qlm_model_free(sc->draft);
    sc->drafter = NULL;
    sc->draft = NULL;
}

void qlm_spec_cli_json(FILE *f, const qlm_spec_cli *sc, const qlm_gen_stats *st)
{
    if (!sc->drafter) return;
    const qlm_spec_stats *s = &sc->stats;
    fprintf(f, ",\"speculative\":{\"drafter\":\"%s\",\"drafted\":%d,\"accepted\":%d,\"acceptance_rate\":%.4f,"
            "\"rounds\":%d,\"mean_accepted_length\":%.3f,\"plain_decodes\":%d,\"plain_ms_per_token\":%.3f,"
            "\"pauses\":%d,\"draft_ms\":%.3f,\"verify_ms\":%.3f,\"speedup\":%.3f}",
            sc->drafter->kind, s->n_drafted, s->n_accepted, qlm_spec_acceptance(s), s->n_rounds,
            qlm_spec_mean_accepted(s), s->n_plain, s->n_plain ? s->plain_ms / s->n_plain : 0.0, s->n_pauses,
            s->draft_ms, s->verify_ms, qlm_spec_speedup(s, st));
}

void qlm_spec_cli_log(FILE *f, const qlm_spec_cli *sc, const qlm_gen_stats *st)
{
    if (!sc->drafter) return;
    const qlm_spec_stats *s = &sc->stats;
    fprintf(f, "qlm: speculative (%s): drafted %d, accepted %d (%.1f%%), mean accepted length %.2f over %d "
            "rounds; %d plain decodes at %.1f ms/token, %d pauses; ", sc->drafter->kind, s->n_drafted,
            s->n_accepted, 100 * qlm_spec_acceptance(s), qlm_spec_mean_accepted(s), s->n_rounds, s->n_plain,
            s->n_plain ? s->plain_ms / s->n_plain : 0.0, s->n_pauses);
    const double x = qlm_spec_speedup(s, st);
    if (x > 0) fprintf(f, "speedup %.2fx over the measured plain rate\n", x);
    else fprintf(f, "speedup unknown (no plain decode measured)\n");
}
