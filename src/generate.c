#include "generate.h"

#include <stdlib.h>
#include <time.h>

const char *qlm_stop_name(qlm_stop s)
{
    switch (s) {
    case QLM_STOP_EOG: return "eos";
    case QLM_STOP_LENGTH: return "length";
    case QLM_STOP_CONTEXT: return "context";
    case QLM_STOP_CALLER: return "interrupted";
    }
    return "?";
}

qlm_sampler *qlm_sampler_for(const qlm_model *m, const qlm_sampler_params *p)
{
    qlm_sampler *s = qlm_sampler_new(p, m->hp.n_vocab);
    if (s && p->ignore_eos)
        for (int32_t t = 0; t < m->hp.n_vocab; t++)
            if (qlm_vocab_is_eog(m->vocab, t)) qlm_sampler_ban(s, t);
    return s;
}

double qlm_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int qlm_generate(qlm_ctx *c, const qlm_model *m, const int32_t *prompt, int n_prompt,
                 int n_predict, qlm_sampler *s, qlm_token_fn on_token, void *user,
                 qlm_gen_stats *st, qlm_err *err)
{
    const qlm_gen_opts o = {.n_predict = n_predict};
    return qlm_generate_ex(c, m, prompt, n_prompt, &o, s, on_token, user, st, err);
}

int qlm_gen_prefill(qlm_ctx *c, const int32_t *prompt, int n_prompt, const qlm_gen_opts *o,
                    qlm_sampler *s, void *user, qlm_gen_stats *st, qlm_err *err)
{
    *st = (qlm_gen_stats){.n_prompt = n_prompt};
    const int n_ctx = qlm_ctx_n_ctx(c);
    if (n_prompt < 1) return qlm_fail(err, QLM_EUSAGE, "the prompt is empty");
    if (n_prompt >= n_ctx)
        return qlm_fail(err, QLM_ELOAD, "the prompt is %d tokens but the context holds %d (raise -c)",
                        n_prompt, n_ctx);
    /* Prefix reuse: what sequence 0 already holds of this prompt (an
     * earlier turn, a loaded --prompt-cache) is not computed again; the
     * last prompt token always is, for its logits. */
    qlm_kv *kv = qlm_ctx_kv(c);
    const int n_past = qlm_kv_seq_prefix(kv, 0, prompt, n_prompt - 1);
    qlm_kv_seq_rm(kv, 0, n_past, -1);
    st->n_past = n_past;
    /* The rest goes in micro-batches of the context's own size, so the
     * arithmetic is what one qlm_decode call would do, with a chance to
     * cancel in between. */
    const int step = qlm_ctx_n_batch(c);
    qlm_batch b;
    if (qlm_batch_init(&b, step)) return qlm_fail(err, QLM_ERUNTIME, "out of memory");
    for (int i = 0; i < n_prompt; i++) qlm_sampler_accept(s, prompt[i]);
    const double t0 = qlm_now_ms();
    int rc = 0;
    for (int off = n_past; off < n_prompt && !rc; off += step) {
        if (o->cancel && o->cancel(user)) {
            st->stop = QLM_STOP_CALLER;
            break;
        }
        b.n = 0;
        for (int i = off; i < n_prompt && i < off + step; i++)
            qlm_batch_add(&b, prompt[i], i, 0, i == n_prompt - 1);
        rc = qlm_decode(c, &b, err);
    }
    st->prompt_ms = qlm_now_ms() - t0;
    qlm_batch_free(&b);
    return rc;
}

const char *qlm_piece_of(qlm_piece *p, const qlm_vocab *v, int32_t tok, size_t *n)
{
    free(p->big);
    p->big = NULL;
    int k = qlm_token_to_piece(v, tok, p->small, sizeof p->small, false);
    const char *text = p->small;
    if (k > (int)sizeof p->small && (p->big = malloc((size_t)k))) { /* rare: very long token text */
        qlm_token_to_piece(v, tok, p->big, (size_t)k, false);
        text = p->big;
    }
    if (k < 0 || (k > (int)sizeof p->small && !p->big)) k = 0;
    *n = (size_t)k;
    return text;
}

void qlm_piece_free(qlm_piece *p)
{
    free(p->big);
    p->big = NULL;
}

int qlm_generate_ex(qlm_ctx *c, const qlm_model *m, const int32_t *prompt, int n_prompt,
                    const qlm_gen_opts *o, qlm_sampler *s, qlm_token_fn on_token, void *user,
                    qlm_gen_stats *st, qlm_err *err)
{
    const int n_predict = o->n_predict;
    const int n_ctx = qlm_ctx_n_ctx(c);
    int rc = qlm_gen_prefill(c, prompt, n_prompt, o, s, user, st, err);
    if (rc || st->stop == QLM_STOP_CALLER) return rc;
    qlm_batch b;
    if (qlm_batch_init(&b, 1)) return qlm_fail(err, QLM_ERUNTIME, "out of memory");
    const double t0 = qlm_now_ms();
    qlm_piece piece = {0};
    int pos = n_prompt;
    for (;;) {
        if (n_predict >= 0 && st->n_gen >= n_predict) { st->stop = QLM_STOP_LENGTH; break; }
        const int32_t tok = qlm_sample(s, qlm_logits(c, 0));
        if (qlm_vocab_is_eog(m->vocab, tok)) { st->stop = QLM_STOP_EOG; break; }
        qlm_sampler_accept(s, tok);
        st->n_gen++;
        size_t n;
        const char *text = qlm_piece_of(&piece, m->vocab, tok, &n);
        if (on_token && on_token(user, tok, text, n)) {
            st->stop = QLM_STOP_CALLER;
            break;
        }
        if (pos >= n_ctx) {
            /* context shift (qlm_ctx_params.ctx_shift): drop the older half
             * after the kept tokens and continue */
            const int keep = qlm_ctx_shift_keep(c) == -1 ? n_prompt : qlm_ctx_shift_keep(c);
            const int dropped = keep >= 0 && keep < n_ctx - 1 ? qlm_ctx_context_shift(c, 0, keep) : 0;
            if (!dropped) { st->stop = QLM_STOP_CONTEXT; break; }
            pos -= dropped;
        }
        if (n_predict >= 0 && st->n_gen >= n_predict) { st->stop = QLM_STOP_LENGTH; break; }
        b.n = 0;
        qlm_batch_add(&b, tok, pos++, 0, true);
        if ((rc = qlm_decode(c, &b, err))) break;
    }
    st->gen_ms = qlm_now_ms() - t0;
    qlm_piece_free(&piece);
    qlm_batch_free(&b);
    return rc;
}
