/* test_sample.c - the sampler chain: greedy, filters, penalties, seeds. */
#include <math.h>
#include <string.h>

#include "src/sample.h"
#include "test.h"

#define NV 6

static qlm_sampler_params plain(float temp)
{
    qlm_sampler_params p = qlm_sampler_defaults();
    p.temp = temp;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    return p;
}

int main(void)
{
    const float logits[NV] = {1.0f, 3.0f, 2.5f, -1.0f, 0.0f, 2.9f};

    TEST_BEGIN("greedy_is_argmax");
    qlm_sampler_params p = plain(0.0f);
    qlm_sampler *s = qlm_sampler_new(&p, NV);
    CHECK(qlm_sample(s, logits) == 1, "expected token 1");
    qlm_sampler_free(s);
    TEST_END();

    TEST_BEGIN("repeat_penalty_demotes_recent");
    p = plain(0.0f);
    p.repeat_penalty = 1.1f;
    s = qlm_sampler_new(&p, NV);
    qlm_sampler_accept(s, 1);
    qlm_sampler_accept(s, 1);
    /* 3.0 / 1.1 = 2.73 < 2.9: token 5 wins; penalised once though seen twice */
    CHECK(qlm_sample(s, logits) == 5, "expected token 5");
    qlm_sampler_free(s);
    TEST_END();

    TEST_BEGIN("same_seed_same_tokens");
    p = plain(1.0f);
    p.seed = 42;
    qlm_sampler *a = qlm_sampler_new(&p, NV), *b = qlm_sampler_new(&p, NV);
    p.seed = 43;
    qlm_sampler *c = qlm_sampler_new(&p, NV);
    int same = 1, differs = 0;
    for (int i = 0; i < 200; i++) {
        int x = qlm_sample(a, logits), y = qlm_sample(b, logits), z = qlm_sample(c, logits);
        same &= x == y;
        differs |= x != z;
    }
    CHECK(same, "two samplers with seed 42 diverged");
    CHECK(differs, "seeds 42 and 43 gave identical 200-token streams");
    qlm_sampler_free(a); qlm_sampler_free(b); qlm_sampler_free(c);
    TEST_END();

    TEST_BEGIN("distribution_matches_softmax");
    /* Chi-square with 5 degrees of freedom; 20.5 is the 0.999 quantile, so
     * a correct sampler fails about once in a thousand seeds (fixed here). */
    p = plain(0.7f);
    p.seed = 7;
    s = qlm_sampler_new(&p, NV);
    const int N = 60000;
    int cnt[NV] = {0};
    for (int i = 0; i < N; i++) cnt[qlm_sample(s, logits)]++;
    double z = 0, pr[NV], chi = 0;
    for (int i = 0; i < NV; i++) z += pr[i] = exp(logits[i] / 0.7);
    for (int i = 0; i < NV; i++) {
        const double e = N * pr[i] / z;
        chi += (cnt[i] - e) * (cnt[i] - e) / e;
    }
    CHECK(chi < 20.5, "chi-square %.2f", chi);
    qlm_sampler_free(s);
    TEST_END();

    TEST_BEGIN("top_k_top_p_min_p_restrict");
    p = plain(1.0f);
    p.top_k = 2;
    s = qlm_sampler_new(&p, NV);
    int ok = 1;
    for (int i = 0; i < 500; i++) { int t = qlm_sample(s, logits); ok &= t == 1 || t == 5; }
    CHECK(ok, "top-k 2 produced a token outside {1, 5}");
    qlm_sampler_free(s);
    p = plain(1.0f);
    p.top_p = 0.3f; /* token 1 alone holds ~36% */
    s = qlm_sampler_new(&p, NV);
    ok = 1;
    for (int i = 0; i < 500; i++) ok &= qlm_sample(s, logits) == 1;
    CHECK(ok, "top-p 0.3 produced a token other than the top one");
    qlm_sampler_free(s);
    p = plain(1.0f);
    p.min_p = 0.5f; /* e^-0.5 = 0.61 keeps 2.5 and 2.9; e^-2 = 0.14 drops 1.0 */
    s = qlm_sampler_new(&p, NV);
    ok = 1;
    for (int i = 0; i < 500; i++) { int t = qlm_sample(s, logits); ok &= t == 1 || t == 2 || t == 5; }
    CHECK(ok, "min-p 0.5 kept a token below half the top probability");
    qlm_sampler_free(s);
    TEST_END();

    TEST_EXIT();
}
