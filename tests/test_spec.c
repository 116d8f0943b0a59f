/* test_spec.c - speculative decoding changes nothing but speed.
 *
 * Greedy: with any drafter (a close draft, a random unrelated one, prompt
 * lookup) the tokens are exactly qlm_generate's, on 24 prompts with
 * length, context, end-of-text and caller stops.  Sampling: the joint
 * distribution of the first generated tokens, computed exactly by walking
 * every path through the target, is matched by speculative samples under a
 * chi-square test, and a deliberately wrong acceptance rule fails the
 * same test.  Draft compatibility: different token texts or special
 * tokens are refused naming the difference; padding alone is accepted.
 *
 * `test_spec --write-draft KIND BASE OUT` writes the variants for
 * t_spec.sh: KIND is text (id 100 differs), special (eos differs), pad
 * (two [PAD] tokens appended) or bad (same vocabulary, other weights). */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "src/spec.h"
#include "tests/tiny_model.h"
#include "test.h"

typedef struct collect {
    int32_t tok[600];
    int n, stop_after;
} collect;

static int on_tok(void *u, int32_t t, const char *piece, size_t n)
{
    (void)piece; (void)n;
    collect *c = u;
    if (c->n < 600) c->tok[c->n++] = t;
    return c->stop_after && c->n >= c->stop_after;
}

static void tmp_path(char *buf)
{
    strcpy(buf, "/tmp/qlm-test-spec-XXXXXX");
    close(mkstemp(buf));
}

static int write_tiny(const char *path, uint64_t seed, qt_type wt, int n_layer)
{
    tiny_cfg cfg = tiny_default();
    cfg.seed = seed;
    cfg.wtype = wt;
    cfg.n_layer = n_layer;
    return tiny_write(path, &cfg);
}

/* Copies the model at in to out with its vocabulary changed (see the top). */
static int write_variant(const char *in, const char *out, const char *kind)
{
    if (!strcmp(kind, "bad")) return write_tiny(out, 4242, QT_F32, 1);
    qlm_err err = {0};
    gguf_ctx *g = NULL;
    if (gguf_open(&g, in, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const bool pad = !strcmp(kind, "pad");
    gguf_writer *w = gguf_writer_new();
    char *texts[TINY_VOCAB + 2] = {0};
    void *rows[2] = {0};
    int n_rows = 0;
    for (uint64_t k = 0; k < g->n_kv; k++) {
        const gguf_kv *kv = &g->kv[k];
        char *key = gguf_str_dup(kv->key);
        if (!strcmp(key, "tokenizer.ggml.tokens")) {
            const uint64_t n = kv->val.arr.n;
            for (uint64_t i = 0; i < n; i++) texts[i] = gguf_str_dup(kv->val.arr.strs[i]);
            if (!strcmp(kind, "text")) {
                free(texts[100]);
                texts[100] = strdup("zz");
            }
            uint64_t m = n;
            if (pad) {
                texts[m++] = strdup("[PAD258]");
                texts[m++] = strdup("[PAD259]");
            }
            gguf_w_arr_str(w, key, (const char *const *)texts, m);
        } else if (pad && !strcmp(key, "tokenizer.ggml.token_type")) {
            int32_t types[TINY_VOCAB + 2];
            for (int i = 0; i < TINY_VOCAB; i++) types[i] = (int32_t)gguf_arr_i64(&kv->val, (uint64_t)i);
            types[TINY_VOCAB] = types[TINY_VOCAB + 1] = 5; /* UNUSED */
            gguf_w_arr(w, key, GGUF_INT32, types, TINY_VOCAB + 2);
        } else if (!strcmp(kind, "special") && !strcmp(key, "tokenizer.ggml.eos_token_id")) {
            gguf_w_u32(w, key, 256);
        } else {
            gguf_w_value(w, key, &kv->val);
        }
        free(key);
    }
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const gguf_tensor *t = &g->tensors[i];
        char *name = gguf_str_dup(t->name);
        if (pad && (!strcmp(name, "token_embd.weight") || !strcmp(name, "output.weight"))) {
            /* two more rows of zeros: valid in every block format */
            const size_t row = t->nbytes / (size_t)t->ne[1];
            uint8_t *d = calloc(1, t->nbytes + 2 * row);
            memcpy(d, t->data, t->nbytes);
            const int64_t ne[2] = {t->ne[0], t->ne[1] + 2};
            gguf_w_tensor(w, name, t->type, 2, ne, d);
            rows[n_rows++] = d;
        } else {
            gguf_w_tensor_ref(w, name, t->type, t->n_dims, t->ne, t->data);
        }
        free(name);
    }
    const int rc = gguf_w_save(w, out, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    gguf_writer_free(w);
    gguf_close(g);
    for (int i = 0; i < TINY_VOCAB + 2; i++) free(texts[i]);
    for (int i = 0; i < n_rows; i++) free(rows[i]);
    return rc;
}

static qlm_sampler_params greedy_params(float penalty)
{
    qlm_sampler_params p = qlm_sampler_defaults();
    p.temp = 0;
    p.repeat_penalty = penalty;
    return p;
}

/* Generates with drafter d (NULL: plain qlm_generate) from a fresh context. */
static int generate(const qlm_model *m, qlm_drafter *d, const qlm_spec_params *sp, int n_ctx,
                    const int32_t *prompt, int n_prompt, int n_predict, const qlm_sampler_params *smp,
                    collect *out, qlm_gen_stats *st, qlm_spec_stats *ss)
{
    qlm_err err = {0};
    qlm_ctx *c = NULL;
    qlm_ctx_params cp = {.n_ctx = n_ctx, .n_threads = 1};
    if (qlm_ctx_new(&c, m, &cp, &err)) return -1;
    qlm_sampler *s = qlm_sampler_new(smp, m->hp.n_vocab);
    int rc = d ? qlm_spec_generate(c, m, d, sp, prompt, n_prompt, n_predict, s, on_tok, out, st, ss, &err)
               : qlm_generate(c, m, prompt, n_prompt, n_predict, s, on_tok, out, st, &err);
    if (rc) printf("# generate: %s\n", err.msg);
    qlm_sampler_free(s);
    qlm_ctx_free(c);
    return rc;
}

static const char *prompts[] = {
    "the cat sat on the mat", "hello hello hello", "abcabcabcabc", "Once upon a time",
    "1, 2, 3, 4, 5,", "he said he would", "zzzz", "The quick brown fox jumps over",
    "to be or not to be", "x", "hehehehehe", "SELECT * FROM t WHERE",
    "def f(x): return x", "aaaa bbbb aaaa bbbb", "Lorem ipsum dolor sit amet", "\n\n\n",
    "the the the the", "q", "one two three one two", "<html><body>",
    "what is the capital", "mississippi", "3.14159265358979", "ok ok ok",
};
#define N_PROMPTS ((int)(sizeof prompts / sizeof prompts[0]))

static void greedy_identical(const char *target_path, const char *close_path, const char *bad_path)
{
    TEST_BEGIN("greedy_identical_any_drafter");
    qlm_err err = {0};
    qlm_model *m = NULL, *mc = NULL, *mb = NULL;
    CHECK(!qlm_model_load(&m, target_path, &err) && !qlm_model_load(&mc, close_path, &err)
          && !qlm_model_load(&mb, bad_path, &err), "load: %s", err.msg);
    int n_rounds = 0, n_accepted = 0, n_cmp = 0, mismatches = 0;
    for (int pi = 0; m && mc && mb && pi < N_PROMPTS; pi++) {
        int32_t *ids = NULL;
        size_t n_ids = 0;
        qlm_tokenize(m->vocab, prompts[pi], strlen(prompts[pi]), false, true, &ids, &n_ids, &err);
        /* a mix of stops: length, a small context filling up, the caller */
        const int n_ctx = pi % 4 == 3 ? 48 : 256, n_predict = pi % 4 == 3 ? -1 : 40;
        const qlm_sampler_params smp = greedy_params(pi % 3 == 2 ? 1.3f : 1.0f);
        collect plain = {.stop_after = pi == 5 ? 7 : 0};
        qlm_gen_stats pst;
        CHECK(!generate(m, NULL, NULL, n_ctx, ids, (int)n_ids, n_predict, &smp, &plain, &pst, NULL),
              "plain generation failed");
        for (int di = 0; di < 4; di++) {
            qlm_drafter *d = NULL;
            qlm_draft_model_params dp = {.model = di == 0 ? mc : di == 1 ? mb : m,
                                         .ctx = {.n_ctx = n_ctx, .n_threads = 1}, .sampling = smp,
                                         .n_vocab = TINY_VOCAB, .n_min = 1, .p_min = pi % 2 ? 0.3f : 0};
            if (di == 2) qlm_drafter_lookup_new(&d, 3, 1, &err);
            else qlm_drafter_model_new(&d, &dp, &err);
            qlm_spec_params sp = qlm_spec_defaults();
            const int lens[] = {1, 3, 8, 5};
            sp.n_draft = lens[(pi + di) % 4];
            sp.adaptive = pi % 5 == 4; /* timing-driven choices must not matter either */
            sp.n_plain_first = pi % 7 == 0 ? 2 : 0;
            collect spec = {.stop_after = plain.stop_after};
            qlm_gen_stats sst;
            qlm_spec_stats ss;
            CHECK(d && !generate(m, d, &sp, n_ctx, ids, (int)n_ids, n_predict, &smp, &spec, &sst, &ss),
                  "speculative generation failed");
            n_cmp++;
            if (spec.n != plain.n || memcmp(spec.tok, plain.tok, sizeof(int32_t) * (size_t)plain.n)
                || sst.stop != pst.stop || sst.n_gen != pst.n_gen) {
                if (!mismatches++)
                    CHECK(0, "prompt %d drafter %d: %d tokens (stop %s) vs plain %d (stop %s)", pi, di,
                          spec.n, qlm_stop_name(sst.stop), plain.n, qlm_stop_name(pst.stop));
            }
            n_rounds += ss.n_rounds;
            n_accepted += ss.n_accepted;
            qlm_drafter_free(d);
        }
        free(ids);
    }
    CHECK(n_cmp == 4 * N_PROMPTS, "only %d of %d comparisons ran", n_cmp, 4 * N_PROMPTS);
    /* the comparison must have gone through verification, with both outcomes */
    CHECK(n_rounds > 100 && n_accepted > 100, "too little speculation: %d rounds, %d accepted", n_rounds,
          n_accepted);
    TEST_END();
    qlm_model_free(m);
    qlm_model_free(mc);
    qlm_model_free(mb);
}

/* ---- the distribution test ---- */

#define MAX_CATS 4096
typedef struct cat {
    int32_t seq[4];
    int len;
    bool eog;
    double p;
    long count;
} cat;

typedef struct walk {
    qlm_ctx *c;
    const qlm_model *m;
    const qlm_sampler_params *sp;
    const int32_t *prompt;
    int n_prompt, depth_max;
    cat *cats;
    int n_cats;
} walk;

/* Every path of up to depth_max tokens with its exact probability under
 * the sampler chain; logits come from token-by-token decoding. */
static void enumerate(walk *w, int32_t *pre, int depth, double prob, const float *logits)
{
    qlm_sampler *s = qlm_sampler_new(w->sp, w->m->hp.n_vocab);
    for (int i = 0; i < w->n_prompt; i++) qlm_sampler_accept(s, w->prompt[i]);
    for (int i = 0; i < depth; i++) qlm_sampler_accept(s, pre[i]);
    const qlm_tok_prob *d;
    const int n = qlm_sample_dist(s, logits, &d);
    qlm_tok_prob *dist = malloc(sizeof *dist * (size_t)n);
    memcpy(dist, d, sizeof *dist * (size_t)n);
    qlm_sampler_free(s);
    for (int j = 0; j < n && w->n_cats < MAX_CATS; j++) {
        const double p = prob * dist[j].p;
        const int32_t tok = dist[j].id;
        const bool eog = qlm_vocab_is_eog(w->m->vocab, tok);
        if (eog || depth + 1 == w->depth_max) {
            cat *ct = &w->cats[w->n_cats++];
            *ct = (cat){.len = depth + !eog, .eog = eog, .p = p};
            memcpy(ct->seq, pre, sizeof *pre * (size_t)depth);
            if (!eog) ct->seq[depth] = tok;
            continue;
        }
        pre[depth] = tok;
        qlm_batch b;
        qlm_batch_init(&b, 1);
        qlm_batch_add(&b, tok, w->n_prompt + depth, 0, true);
        qlm_err err;
        if (!qlm_decode(w->c, &b, &err)) enumerate(w, pre, depth + 1, p, qlm_logits(w->c, 0));
        qlm_kv_seq_rm(qlm_ctx_kv(w->c), 0, w->n_prompt + depth, -1);
        qlm_batch_free(&b);
    }
    free(dist);
}

/* Pearson's statistic over bins of expected count >= 5 (the rest pooled)
 * and the 1e-4 upper quantile of chi-square with that many degrees of
 * freedom (Wilson-Hilferty). */
static void chi_square(const cat *cats, int n_cats, long n, double *chi2, double *crit, int *df)
{
    double x = 0, pool_e = 0, pool_o = 0;
    int bins = 0;
    for (int i = 0; i < n_cats; i++) {
        const double e = cats[i].p * n;
        if (e < 5) {
            pool_e += e;
            pool_o += cats[i].count;
            continue;
        }
        x += (cats[i].count - e) * (cats[i].count - e) / e;
        bins++;
    }
    if (pool_e > 0) {
        x += (pool_o - pool_e) * (pool_o - pool_e) / (pool_e < 1 ? 1 : pool_e);
        bins++;
    }
    *df = bins - 1 > 0 ? bins - 1 : 1;
    const double k = *df, z = 3.719;
    *chi2 = x;
    *crit = k * pow(1 - 2 / (9 * k) + z * sqrt(2 / (9 * k)), 3);
}

typedef enum { DRAFT_CLOSE, DRAFT_BAD, DRAFT_LOOKUP } draft_kind;

/* Samples n speculative generations of depth tokens and tests them
 * against the exact joint distribution; returns chi2 / critical value. */
static double spec_fit(const qlm_model *m, const qlm_model *draft, draft_kind kind,
                       const qlm_sampler_params *smp, const int32_t *prompt, int n_prompt, int depth, long n,
                       qlm_spec_rule rule, long *drafted, long *accepted)
{
    qlm_err err = {0};
    qlm_ctx *c = NULL;
    qlm_ctx_params cp = {.n_ctx = 64, .n_threads = 1};
    if (qlm_ctx_new(&c, m, &cp, &err)) return INFINITY;
    cat *cats = calloc(MAX_CATS, sizeof *cats);
    walk w = {.c = c, .m = m, .sp = smp, .prompt = prompt, .n_prompt = n_prompt, .depth_max = depth,
              .cats = cats};
    qlm_batch b;
    qlm_batch_init(&b, n_prompt);
    for (int i = 0; i < n_prompt; i++) qlm_batch_add(&b, prompt[i], i, 0, i == n_prompt - 1);
    int32_t pre[4];
    if (!qlm_decode(c, &b, &err)) enumerate(&w, pre, 0, 1.0, qlm_logits(c, 0));
    qlm_batch_free(&b);

    qlm_drafter *d = NULL;
    if (kind == DRAFT_LOOKUP) {
        qlm_drafter_lookup_new(&d, 3, 1, &err);
    } else {
        qlm_draft_model_params dp = {.model = draft, .ctx = cp, .sampling = *smp, .n_vocab = TINY_VOCAB,
                                     .n_min = 1};
        qlm_drafter_model_new(&d, &dp, &err);
    }
    qlm_spec_params sp = qlm_spec_defaults();
    sp.n_draft = depth - 2 > 0 ? depth - 2 : 1;
    sp.adaptive = false;
    sp.n_plain_first = 0;
    sp.rule = rule;
    long impossible = 0;
    *drafted = *accepted = 0;
    for (long i = 0; i < n && d; i++) {
        qlm_kv_clear(qlm_ctx_kv(c));
        qlm_sampler_params p = *smp;
        p.seed = 1000 + (uint64_t)i;
        qlm_sampler *s = qlm_sampler_new(&p, m->hp.n_vocab);
        collect out = {0};
        qlm_gen_stats st;
        qlm_spec_stats ss;
        if (qlm_spec_generate(c, m, d, &sp, prompt, n_prompt, depth, s, on_tok, &out, &st, &ss, &err)) {
            impossible = n;
            qlm_sampler_free(s);
            break;
        }
        *drafted += ss.n_drafted;
        *accepted += ss.n_accepted;
        qlm_sampler_free(s);
        const bool eog = st.stop == QLM_STOP_EOG;
        int hit = -1;
        for (int k = 0; k < w.n_cats && hit < 0; k++)
            if (cats[k].eog == eog && cats[k].len == out.n && !memcmp(cats[k].seq, out.tok, sizeof(int32_t) * (size_t)out.n))
                hit = k;
        if (hit < 0) impossible++;
        else cats[hit].count++;
    }
    double chi2 = INFINITY, crit = 1;
    int df = 0;
    if (!impossible && d) chi_square(cats, w.n_cats, n, &chi2, &crit, &df);
    printf("# %s rule %d: %d paths, chi2 %.1f (df %d, 1e-4 critical %.1f), drafted %ld accepted %ld\n",
           kind == DRAFT_LOOKUP ? "lookup" : kind == DRAFT_BAD ? "bad draft" : "close draft", rule, w.n_cats,
           chi2, df, crit, *drafted, *accepted);
    qlm_drafter_free(d);
    free(cats);
    qlm_ctx_free(c);
    return chi2 / crit;
}

static void distribution_matches(const char *target_path, const char *close_path, const char *bad_path,
                                 const char *half_path)
{
    qlm_err err = {0};
    qlm_model *m = NULL, *mc = NULL, *mb = NULL, *mh = NULL;
    const bool ok = !qlm_model_load(&m, target_path, &err) && !qlm_model_load(&mc, close_path, &err)
                    && !qlm_model_load(&mb, bad_path, &err) && !qlm_model_load(&mh, half_path, &err);
    const long N = 4000;
    long dr = 0, ac = 0;
    const int32_t prompt[] = {'t', 'h', 'e', ' ', 'c', 'a', 't'};
    const int np = (int)(sizeof prompt / sizeof prompt[0]);

    TEST_BEGIN("sampling_distribution_close_draft");
    qlm_sampler_params p = qlm_sampler_defaults();
    p.temp = 1.0f;
    p.top_k = 3;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    double r = ok ? spec_fit(m, mc, DRAFT_CLOSE, &p, prompt, np, 4, N, QLM_SPEC_RULE_STANDARD, &dr, &ac) : INFINITY;
    CHECK(r < 1, "chi2 %.2f x the critical value: speculative samples do not follow the target", r);
    CHECK(ac > N / 2 && dr - ac > N / 20, "both outcomes must be exercised: drafted %ld accepted %ld", dr, ac);
    TEST_END();

    /* the full chain: penalties, top-p, min-p and temperature on both sides */
    TEST_BEGIN("sampling_distribution_bad_draft_full_chain");
    p.temp = 0.7f;
    p.top_k = 5;
    p.top_p = 0.9f;
    p.min_p = 0.05f;
    p.repeat_penalty = 1.5f;
    r = ok ? spec_fit(m, mb, DRAFT_BAD, &p, prompt, np, 4, N, QLM_SPEC_RULE_STANDARD, &dr, &ac) : INFINITY;
    CHECK(r < 1, "chi2 %.2f x the critical value", r);
    CHECK(ac > 0 && dr - ac > N / 10, "both outcomes must be exercised: drafted %ld accepted %ld", dr, ac);
    TEST_END();

    TEST_BEGIN("sampling_distribution_lookup");
    /* the prompt is the target's own greedy text, which settles into a
     * loop, so lookup drafts are often but not always right */
    int32_t lp[26] = {'a', 'b'};
    collect g = {0};
    qlm_gen_stats gst;
    const qlm_sampler_params gp = greedy_params(1.0f);
    if (ok) generate(m, NULL, NULL, 64, lp, 2, 24, &gp, &g, &gst, NULL);
    memcpy(lp + 2, g.tok, sizeof(int32_t) * (size_t)g.n);
    p = qlm_sampler_defaults();
    p.temp = 1.0f;
    p.top_k = 4;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    r = ok ? spec_fit(m, NULL, DRAFT_LOOKUP, &p, lp, 2 + g.n, 4, N, QLM_SPEC_RULE_STANDARD, &dr, &ac) : INFINITY;
    CHECK(r < 1, "chi2 %.2f x the critical value", r);
    CHECK(ac > N / 8 && dr - ac > N / 20, "lookup: drafted %ld accepted %ld", dr, ac);
    TEST_END();

    /* the test has teeth: drawing rejections from p instead of max(0, p - q)
     * biases the output, and the same statistic sees it */
    TEST_BEGIN("sampling_distribution_wrong_rule_detected");
    p = qlm_sampler_defaults();
    p.temp = 1.0f;
    p.top_k = 3;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    /* the half draft (the target's first layer alone) overlaps p enough
     * for the residual to matter; first the right rule passes with it */
    r = ok ? spec_fit(m, mh, DRAFT_CLOSE, &p, prompt, np, 4, N, QLM_SPEC_RULE_STANDARD, &dr, &ac) : INFINITY;
    CHECK(r < 1, "chi2 %.2f x the critical value with the half draft", r);
    r = ok ? spec_fit(m, mh, DRAFT_CLOSE, &p, prompt, np, 4, N, QLM_SPEC_RULE_BROKEN, &dr, &ac) : 0;
    CHECK(r > 1 && isfinite(r), "a wrong acceptance rule passed the chi-square test (%.2f x critical)", r);
    TEST_END();

    qlm_model_free(m);
    qlm_model_free(mc);
    qlm_model_free(mb);
    qlm_model_free(mh);
}

static void compat(const char *target_path)
{
    char path[64];
    tmp_path(path);
    qlm_err err = {0};
    qlm_model *t = NULL;
    qlm_model_load(&t, target_path, &err);
    static const struct { const char *kind, *want; } cases[] = {
        {"text", "token id 100 is \"d\" in the target but \"zz\" in the draft"},
        {"special", "eos token is id 257 in the target but 256"},
        {"pad", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "draft_compat_%s", cases[i].kind);
        TEST_BEGIN(name);
        qlm_model *d = NULL;
        int n_shared = -1;
        CHECK(t && !write_variant(target_path, path, cases[i].kind) && !qlm_model_load(&d, path, &err),
              "setup: %s", err.msg);
        const int rc = d ? qlm_draft_compat(t, d, &n_shared, &err) : -1;
        if (cases[i].want) {
            CHECK(rc == QLM_ELOAD && strstr(err.msg, cases[i].want), "rc %d, message: %s", rc, err.msg);
        } else {
            CHECK(rc == QLM_OK && n_shared == TINY_VOCAB, "padding refused (rc %d): %s", rc, err.msg);
            /* both directions: the padded one may be the target too */
            CHECK(d && qlm_draft_compat(d, t, &n_shared, &err) == QLM_OK && n_shared == TINY_VOCAB,
                  "padded target refused: %s", err.msg);
        }
        TEST_END();
        qlm_model_free(d);
    }
    /* a padded draft proposes only shared ids and changes nothing */
    TEST_BEGIN("padded_draft_greedy_identical");
    qlm_model *d = NULL;
    CHECK(t && !write_variant(target_path, path, "pad") && !qlm_model_load(&d, path, &err), "setup");
    if (t && d) {
        const int32_t prompt[] = {'h', 'e', 'l', 'l', 'o'};
        qlm_sampler_params smp = greedy_params(1.0f);
        collect a = {0}, b = {0};
        qlm_gen_stats sa, sb;
        qlm_spec_stats ss;
        qlm_drafter *dr = NULL;
        qlm_draft_model_params dp = {.model = d, .ctx = {.n_ctx = 128, .n_threads = 1}, .sampling = smp,
                                     .n_vocab = TINY_VOCAB, .n_min = 1};
        qlm_spec_params sp = qlm_spec_defaults();
        sp.adaptive = false;
        CHECK(!qlm_drafter_model_new(&dr, &dp, &err), "drafter: %s", err.msg);
        CHECK(!generate(t, NULL, NULL, 128, prompt, 5, 30, &smp, &a, &sa, NULL)
              && !generate(t, dr, &sp, 128, prompt, 5, 30, &smp, &b, &sb, &ss), "generation failed");
        CHECK(a.n == b.n && !memcmp(a.tok, b.tok, sizeof(int32_t) * (size_t)a.n) && ss.n_accepted > 0,
              "padded draft changed the output or never helped");
        qlm_drafter_free(dr);
    }
    TEST_END();
    qlm_model_free(d);
    qlm_model_free(t);
    unlink(path);
}

/* Verification's premise, for every weight type with its own batched
 * kernels: k tokens in one one_by_one batch give the bits of k one-token
 * decodes (llama.cpp's repacked Q4_K gemm sums in another order than its
 * gemv, so this needs the single-token kernels for every token). */
enum { NT = 12 };
static const int32_t TK[NT] = {72, 101, 108, 108, 111, 44, 32, 256, 3, 200, 17, 99};

/* A way of decoding TK[4..NT) in batches on context b (TK[0..4) is the
 * prompt, as in generation): true when every token's logits equal
 * one[i * V ...], what token-by-token decoding gave. */
typedef int (*batch_way)(qlm_ctx *b, qlm_batch *bt, const float *one, int V, qlm_err *err);

static int same_row(const float *one, int i, const float *row, int V)
{
    return !memcmp(one + (size_t)i * V, row, sizeof(float) * (size_t)V);
}

/* All of them in one one_by_one batch. */
static int way_one_batch(qlm_ctx *b, qlm_batch *bt, const float *one, int V, qlm_err *err)
{
    bt->n = 0;
    for (int i = 0; i < 4; i++) qlm_batch_add(bt, TK[i], i, 0, false);
    qlm_decode(b, bt, err);
    bt->n = 0;
    bt->one_by_one = true;
    for (int i = 4; i < NT; i++) qlm_batch_add(bt, TK[i], i, 0, true);
    int same = !qlm_decode(b, bt, err);
    for (int i = 4; same && i < NT; i++) same = same_row(one, i, qlm_logits(b, i - 4), V);
    return same;
}

/* With sequence 1 around, as qlm batch verifies: cells 0-3 its prompt,
 * 4-7 ours, 8-13 its draft, 14-15 our positions 4 and 5; its draft is
 * rejected (cells 8-13 free), and our positions 6.. take cells 8..,
 * below 14 and 15.  Our keys must still be read in position order, the
 * order they have alone. */
static int way_cells_out_of_order(qlm_ctx *b, qlm_batch *bt, const float *one, int V, qlm_err *err)
{
    int same = 1;
    bt->n = 0;
    for (int i = 0; i < 4; i++) qlm_batch_add(bt, TK[NT - 1 - i], i, 1, false);
    for (int i = 0; i < 4; i++) qlm_batch_add(bt, TK[i], i, 0, false);
    same &= !qlm_decode(b, bt, err);
    bt->n = 0;
    bt->one_by_one = true;
    for (int i = 4; i < 10; i++) qlm_batch_add(bt, TK[i - 4], i, 1, true);
    for (int i = 4; i < 6; i++) qlm_batch_add(bt, TK[i], i, 0, true);
    same &= !qlm_decode(b, bt, err);
    for (int i = 4; same && i < 6; i++) same = same_row(one, i, qlm_logits(b, 6 + i - 4), V);
    qlm_kv_seq_rm(qlm_ctx_kv(b), 1, 4, -1);
    bt->n = 0;
    qlm_batch_add(bt, TK[3], 4, 1, true);
    for (int i = 6; i < NT; i++) qlm_batch_add(bt, TK[i], i, 0, true);
    same &= !qlm_decode(b, bt, err);
    for (int i = 6; same && i < NT; i++) same = same_row(one, i, qlm_logits(b, 1 + i - 6), V);
    return same;
}

static void bit_exact_case(const char *name, const tiny_cfg *cfg, batch_way way, const char *what)
{
    char path[64];
    TEST_BEGIN(name);
    tmp_path(path);
    qlm_err err = {0};
    qlm_model *m = NULL;
    CHECK(!tiny_write(path, cfg) && !qlm_model_load(&m, path, &err), "setup: %s", err.msg);
    qlm_ctx *a = NULL, *b = NULL;
    qlm_ctx_params cp = {.n_ctx = 64, .n_threads = 2};
    if (m && !qlm_ctx_new(&a, m, &cp, &err) && !qlm_ctx_new(&b, m, &cp, &err)) {
        const int V = m->hp.n_vocab;
        float *one = malloc(sizeof(float) * NT * (size_t)V);
        qlm_batch bt;
        qlm_batch_init(&bt, NT);
        /* alone: the prompt, then token by token */
        for (int i = 0; i < 4; i++) qlm_batch_add(&bt, TK[i], i, 0, false);
        qlm_decode(a, &bt, &err);
        for (int i = 4; i < NT; i++) {
            bt.n = 0;
            qlm_batch_add(&bt, TK[i], i, 0, true);
            qlm_decode(a, &bt, &err);
            memcpy(one + (size_t)i * V, qlm_logits(a, 0), sizeof(float) * (size_t)V);
        }
        CHECK(way(b, &bt, one, V, &err), "%s: %s", what, err.msg);
        qlm_batch_free(&bt);
        free(one);
    } else {
        CHECK(0, "context: %s", err.msg);
    }
    qlm_ctx_free(a);
    qlm_ctx_free(b);
    qlm_model_free(m);
    unlink(path);
    TEST_END();
}

static void verify_batch_bit_exact(void)
{
    static const qt_type types[] = {QT_Q4_0, QT_Q4_K, QT_Q2_K, QT_Q3_K, QT_Q5_K, QT_Q6_K, QT_Q8_0, QT_IQ4_NL, QT_F16};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        char name[80];
        snprintf(name, sizeof name, "verify_batch_bit_exact_%s", qt_get(types[ti])->name);
        tiny_cfg cfg = tiny_default();
        cfg.n_embd = 256; /* K-quant rows */
        cfg.n_ff = 256;
        cfg.wtype = types[ti];
        bit_exact_case(name, &cfg, way_one_batch, "a one_by_one batch differs from one-token decodes");
    }
    const tiny_cfg cfg = tiny_default();
    bit_exact_case("verify_batch_bit_exact_cells_out_of_order", &cfg, way_cells_out_of_order,
                   "a sequence's logits depend on where its cells are");
}

static void sampler_dist(void)
{
    TEST_BEGIN("sample_dist_is_the_chain");
    const float lg[6] = {1.0f, 3.0f, 2.5f, -1.0f, 0.0f, 2.9f};
    qlm_sampler_params p = qlm_sampler_defaults();
    p.temp = 0.5f;
    p.top_k = 3;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    qlm_sampler *s = qlm_sampler_new(&p, 6);
    const qlm_tok_prob *d;
    const int n = qlm_sample_dist(s, lg, &d);
    /* top 3 = {1, 5, 2} at temperature 0.5 */
    const double z = exp(0) + exp(-0.2) + exp(-1.0);
    CHECK(n == 3 && d[0].id == 1 && d[1].id == 5 && d[2].id == 2, "candidates %d", n);
    CHECK(n == 3 && fabs(d[0].p - 1 / z) < 1e-6 && fabs(d[2].p - exp(-1.0) / z) < 1e-6, "probabilities");
    /* and qlm_sample draws from exactly that */
    long cnt[6] = {0};
    for (int i = 0; i < 30000; i++) cnt[qlm_sample(s, lg)]++;
    CHECK(cnt[0] == 0 && cnt[3] == 0 && cnt[4] == 0, "drew outside the top 3");
    CHECK(fabs(cnt[5] / 30000.0 - exp(-0.2) / z) < 0.02, "token 5 drawn %ld times", cnt[5]);
    qlm_sampler_free(s);
    p.temp = 0;
    s = qlm_sampler_new(&p, 6);
    CHECK(qlm_sample_dist(s, lg, &d) == 1 && d[0].id == 1 && d[0].p == 1.0f, "greedy is a point mass");
    qlm_sampler_free(s);
    TEST_END();
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "--write-draft")) return write_variant(argv[3], argv[4], argv[2]) ? 1 : 0;
    char target[64], close_p[64], bad[64], half[64];
    tmp_path(target);
    tmp_path(close_p);
    tmp_path(bad);
    tmp_path(half);
    /* a close draft: the target's weights at 4 bits; a bad one: unrelated */
    if (write_tiny(target, 1, QT_Q8_0, 2) || write_tiny(close_p, 1, QT_Q4_0, 2)
        || write_variant(NULL, bad, "bad") || write_tiny(half, 1, QT_Q8_0, 1)) {
        printf("FAIL spec_setup: cannot write tiny models\n");
        return 1;
    }
    sampler_dist();
    verify_batch_bit_exact();
    greedy_identical(target, close_p, bad);
    distribution_matches(target, close_p, bad, half);
    compat(target);
    unlink(target);
    unlink(close_p);
    unlink(bad);
    unlink(half);
    TEST_EXIT();
}
