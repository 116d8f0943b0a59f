/* test_generate.c - the generation loop's reused prefix and cancel hook. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/generate.h"
#include "test.h"
#include "tiny_model.h"

typedef struct rec {
    int32_t tok[64];
    int n, polls, cancel_after;
} rec;

static int on_tok(void *u, int32_t tok, const char *p, size_t n)
{
    (void)p; (void)n;
    rec *r = u;
    if (r->n < 64) r->tok[r->n++] = tok;
    return 0;
}

static int cancel(void *u)
{
    rec *r = u;
    return ++r->polls > r->cancel_after;
}

int main(void)
{
    char path[] = "/tmp/qlm-test-gen-XXXXXX";
    close(mkstemp(path));
    tiny_cfg cfg = tiny_default();
    cfg.wtype = QT_Q8_0;
    tiny_write(path, &cfg);
    qlm_model *m = NULL;
    qlm_err err = {0};
    if (qlm_model_load(&m, path, &err)) { printf("FAIL gen_setup: %s\n", err.msg); return 1; }
    unlink(path);
    enum { NP = 40 };
    int32_t prompt[NP];
    for (int i = 0; i < NP; i++) prompt[i] = (i * 53 + 7) % 256;
    const qlm_ctx_params cp = {.n_ctx = 128, .n_batch = 8, .n_threads = 2};
    const qlm_sampler_params sp = {.temp = 0};
    qlm_ctx *c = NULL;
    qlm_gen_stats st;

    /* reference: the whole prompt, then 12 greedy tokens */
    rec whole = {.cancel_after = 1 << 30};
    qlm_sampler *s = qlm_sampler_new(&sp, m->hp.n_vocab);
    qlm_ctx_new(&c, m, &cp, &err);
    qlm_gen_opts o = {.n_predict = 12, .cancel = cancel};
    int rc = qlm_generate_ex(c, m, prompt, NP, &o, s, on_tok, &whole, &st, &err);

    TEST_BEGIN("generate_polls_between_micro_batches");
    CHECK(rc == 0 && whole.n == 12 && st.n_prompt == NP, "rc %d n %d", rc, whole.n);
    CHECK(whole.polls == NP / 8, "%d polls for %d micro-batches", whole.polls, NP / 8);
    TEST_END();

    TEST_BEGIN("generate_reuses_prefix");
    /* keep the first 30 prompt tokens in the cache: generation finds them
     * there and decodes only the rest */
    qlm_kv_seq_rm(qlm_ctx_kv(c), 0, 30, -1);
    rec again = {.cancel_after = 1 << 30};
    qlm_sampler_free(s);
    s = qlm_sampler_new(&sp, m->hp.n_vocab);
    rc = qlm_generate_ex(c, m, prompt, NP, &o, s, on_tok, &again, &st, &err);
    CHECK(rc == 0 && st.n_past == 30 && st.n_prompt == NP, "rc %d past %d prompt %d", rc, st.n_past, st.n_prompt);
    CHECK(again.n == whole.n && !memcmp(again.tok, whole.tok, sizeof(int32_t) * (size_t)whole.n),
          "tokens after a reused prefix differ from a full run");
    TEST_END();

    TEST_BEGIN("generate_cancel_during_prompt");
    qlm_kv_clear(qlm_ctx_kv(c));
    rec cut = {.cancel_after = 2};
    rc = qlm_generate_ex(c, m, prompt, NP, &o, s, on_tok, &cut, &st, &err);
    CHECK(rc == 0 && st.stop == QLM_STOP_CALLER && cut.n == 0, "rc %d stop %d gen %d", rc, st.stop, cut.n);
    CHECK(qlm_kv_seq_pos_max(qlm_ctx_kv(c), 0) == 2 * 8 - 1, "cache holds up to %d",
          qlm_kv_seq_pos_max(qlm_ctx_kv(c), 0));
    TEST_END();

    qlm_sampler_free(s);
    qlm_ctx_free(c);
    qlm_model_free(m);
    TEST_EXIT();
}
