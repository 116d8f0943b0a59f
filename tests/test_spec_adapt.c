/* test_spec_adapt.c - the adaptive speculation controller on a fake clock.
 *
 * The controller (qlm_spec_adapt_*) only sees timings and acceptance
 * counts, so it is driven here by a simulated drafter and target with
 * known costs: a plain decode costs T ms (jittered), a verify batch of
 * k + 1 entries T (1 + beta k), a drafted token r T, and a draft model that
 * missed m tokens first catches up on them in a batch (at most 16) that
 * costs r T (1 + catchup (m - 1)).
 * Drafts are accepted with a fixed probability from a seeded generator.
 * The checks are the promises of issue 7: a draft that never helps costs
 * at most a few percent against plain decoding, however expensive its
 * probes; a cheap one is not probed every few tokens; a good draft is
 * used, found again after it was paused, and dropped when it turns bad.
 * Nothing here is timed for real. */
#include <math.h>
#include <string.h>

#include "src/spec.h"
#include "test.h"

#define T 10.0 /* ms per plain decode */

typedef struct sim {
    double r;           /* drafted token cost / T */
    double catchup;     /* cost of catching up one missed token / T (in a batch) */
    double beta;        /* verify cost per extra entry / T */
    double alpha;       /* acceptance probability ... */
    double alpha_after; /* ... from token `at` on */
    int at;
    int k_min, k_max;
    double prior;       /* the drafter's rel_cost */
} sim;

typedef struct result {
    double ms[2];  /* simulated time before and after token `at` */
    int tok[2];    /* tokens generated there */
    int rounds, drafted, plain;
    int at[16];    /* the token count when each of the first 16 rounds started */
} result;

static uint64_t rng_state;

static double unit(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* Runs the controller for n tokens as spec.c's loop does. */
static result run(const sim *s, int n)
{
    qlm_spec_adapt a;
    qlm_spec_adapt_init(&a, s->prior);
    result r = {0};
    rng_state = 42;
    int done = 0, lag = 0, first = 2;
    while (done < n) {
        const int part = done >= s->at;
        int k = first > 0 ? 0 : qlm_spec_adapt_length(&a, s->k_min, s->k_max);
        if (k > n - done - 1) k = n - done - 1;
        if (k < s->k_min) k = 0;
        const double jitter = 0.9 + 0.2 * unit();
        if (!k) {
            const double ms = T * jitter;
            qlm_spec_adapt_plain(&a, ms);
            r.ms[part] += ms;
            r.tok[part]++;
            r.plain++;
            done++;
            lag++;
            if (first > 0) first--;
            continue;
        }
        /* the drafter decodes what it missed (at least the last token
         * generated) in one batch, then k - 1 drafted tokens */
        const int m = lag < 16 ? lag : 16;
        const double draft_ms = T * s->r * (1 + s->catchup * (m - 1)) + (k - 1) * s->r * T;
        const double verify_ms = T * (1 + s->beta * k) * jitter;
        const double alpha = part ? s->alpha_after : s->alpha;
        int acc = 0;
        while (acc < k && unit() < alpha) acc++;
        const int gen = acc + 1 < n - done ? acc + 1 : n - done;
        qlm_spec_adapt_round(&a, k, acc, acc < k, draft_ms, verify_ms, gen);
        if (r.rounds < 16) r.at[r.rounds] = done;
        r.ms[part] += draft_ms + verify_ms;
        r.tok[part] += gen;
        r.rounds++;
        r.drafted += k;
        done += gen;
        lag = acc == k ? 2 : 1; /* the last draft and the bonus token, or the replacement */
    }
    return r;
}

/* time over the time plain decoding would have taken (> 1: slower) */
static double slowdown(const result *r, int part)
{
    return r->tok[part] ? r->ms[part] / (r->tok[part] * T) : 0;
}

static double slowdown_all(const result *r)
{
    return (r->ms[0] + r->ms[1]) / ((r->tok[0] + r->tok[1]) * T);
}

/* A draft that accepts nothing, at any length of generation, for drafts
 * from nearly free to as costly as the target, and catch-up batches up to
 * twice as costly per token as the verify batches (they run the same
 * kernels): at most 5% slower than plain decoding already over 128
 * tokens, near the loss share over long runs. */
static void useless_draft_bounded(void)
{
    TEST_BEGIN("adapt_useless_draft_bounded");
    const struct { double r, catchup, prior; } drafts[] = {
        {0.5, 0.1, 0.5}, {0.5, 0.6, 0.5}, {0.1, 0.6, 0.1}, {1.0, 0.6, 1.0}, {1.0, 0.1, 1.0},
        {0.5, 0.6, 0.05} /* its size underrates it tenfold */, {0.02, 0.0, 0.0}};
    const int lens[] = {32, 128, 512, 4096};
    for (size_t i = 0; i < sizeof drafts / sizeof drafts[0]; i++)
        for (size_t j = 0; j < sizeof lens / sizeof lens[0]; j++) {
            const sim s = {.r = drafts[i].r, .catchup = drafts[i].catchup, .prior = drafts[i].prior,
                           .beta = 0.3, .k_min = 1, .k_max = 8, .at = 1 << 30};
            const result r = run(&s, lens[j]);
            const double x = slowdown_all(&r);
            const double bound = lens[j] >= 512 ? 1.03 : 1.05;
            CHECK(x <= bound, "draft r %.2f catch-up %.1f, %d tokens: %.3fx the plain time (bound %.2f), "
                  "%d rounds", s.r, s.catchup, lens[j], x, bound, r.rounds);
        }
    TEST_END();
}

/* A draft whose probes cost ten plain decodes (a huge catch-up): the
 * account makes it wait, the loss stays near the share. */
static void costly_probes_wait(void)
{
    TEST_BEGIN("adapt_costly_probes_wait");
    const sim s = {.r = 0.6, .catchup = 1.0, .prior = 0.1, .beta = 0.3, .k_min = 1, .k_max = 8, .at = 1 << 30};
    const result r = run(&s, 4096);
    CHECK(slowdown_all(&r) <= 1.025, "%.3fx the plain time", slowdown_all(&r));
    TEST_END();
}

/* A nearly free drafter (prompt lookup) that never matches: its probes
 * cost little, so the account alone would let it probe every ~15 tokens;
 * the back-off after failed probes must keep rounds rare. */
static void cheap_useless_backs_off(void)
{
    TEST_BEGIN("adapt_cheap_useless_backs_off");
    const sim s = {.r = 0.0, .beta = 0.3, .k_min = 1, .k_max = 8, .at = 1 << 30};
    const int n = 20000;
    const result r = run(&s, n);
    CHECK(r.rounds * 100 < n / 2, "%d rounds in %d tokens (want under 0.5%%)", r.rounds, n);
    CHECK(slowdown_all(&r) <= 1.01, "%.3fx the plain time", slowdown_all(&r));
    TEST_END();
}

/* Each probe that accepts nothing doubles the pause before the next: the
 * gaps between a free useless drafter's rounds grow twofold (without the
 * doubling they stay at 16 tokens until the give-up). */
static void pauses_double(void)
{
    TEST_BEGIN("adapt_pauses_double");
    const sim s = {.r = 0.0, .beta = 0.3, .k_min = 1, .k_max = 8, .at = 1 << 30};
    const result r = run(&s, 2048);
    CHECK(r.rounds >= 5, "%d rounds", r.rounds);
    for (int i = 2; i + 1 < r.rounds && i < 4; i++) {
        const int g0 = r.at[i] - r.at[i - 1], g1 = r.at[i + 1] - r.at[i];
        CHECK(g1 >= 1.8 * g0, "gap %d after gap %d (rounds at %d, %d, %d)", g1, g0, r.at[i - 1], r.at[i],
              r.at[i + 1]);
    }
    TEST_END();
}

/* After GIVE_UP (4) probes in a row that accept nothing, the draft is left
 * alone for 1024 tokens: no round between tokens 256 and 1024 (the
 * doubling pauses alone would probe at about 500 and 1000). */
static void useless_given_up(void)
{
    TEST_BEGIN("adapt_useless_given_up");
    const sim s = {.r = 0.0, .beta = 0.3, .k_min = 1, .k_max = 8, .at = 1 << 30};
    const result a = run(&s, 256), b = run(&s, 1024);
    CHECK(a.rounds > 0, "never probed");
    CHECK(b.rounds == a.rounds, "%d rounds in 256 tokens, %d in 1024", a.rounds, b.rounds);
    TEST_END();
}

/* A cheap draft that agrees 90% of the time is used nearly throughout. */
static void good_draft_pays(void)
{
    TEST_BEGIN("adapt_good_draft_pays");
    const sim s = {.r = 0.05, .prior = 0.05, .beta = 0.25, .alpha = 0.9, .k_min = 1, .k_max = 8, .at = 1 << 30};
    const result r = run(&s, 1024);
    CHECK(slowdown_all(&r) < 1 / 1.5, "speedup only %.2fx", 1 / slowdown_all(&r));
    CHECK(r.plain < 64, "%d plain decodes", r.plain);
    TEST_END();
}

/* A draft its size says is too expensive (paused before any round) but
 * that agrees 90%: probes find it pays. */
static void costly_good_draft_found(void)
{
    TEST_BEGIN("adapt_costly_good_draft_found");
    const sim s = {.r = 0.3, .catchup = 0.1, .prior = 0.3, .beta = 0.25, .alpha = 0.9, .k_min = 1, .k_max = 8,
                   .at = 1 << 30};
    const result r = run(&s, 1024);
    CHECK(slowdown_all(&r) < 1 / 1.15, "speedup only %.2fx", 1 / slowdown_all(&r));
    TEST_END();
}

/* Drafts go bad halfway (the text stops copying its input): the second
 * half costs no more than the bound; and the other way round, drafts that
 * turn good after a long useless stretch are found again. */
static void draft_changes(void)
{
    TEST_BEGIN("adapt_draft_changes");
    const sim bad = {.r = 0.05, .prior = 0.05, .beta = 0.25, .alpha = 0.9, .alpha_after = 0, .k_min = 1,
                     .k_max = 8, .at = 512};
    result r = run(&bad, 2048);
    CHECK(slowdown(&r, 0) < 0.7, "first half: speedup only %.2fx", 1 / slowdown(&r, 0));
    CHECK(slowdown(&r, 1) <= 1.03, "second half: %.3fx the plain time", slowdown(&r, 1));
    const sim good = {.r = 0.05, .prior = 0.05, .beta = 0.25, .alpha = 0, .alpha_after = 0.9, .k_min = 1,
                      .k_max = 8, .at = 512};
    r = run(&good, 4096);
    CHECK(slowdown(&r, 0) <= 1.05, "first part: %.3fx the plain time", slowdown(&r, 0));
    CHECK(slowdown(&r, 1) < 0.85, "after it turned good: speedup only %.2fx", 1 / slowdown(&r, 1));
    TEST_END();
}

/* Probes are the shortest draft allowed: a useless draft model is never
 * asked for more than --draft-min tokens at a time once paused. */
static void probes_are_short(void)
{
    TEST_BEGIN("adapt_probes_are_short");
    const sim s = {.r = 0.5, .catchup = 0.1, .prior = 0.5, .beta = 0.3, .k_min = 2, .k_max = 8, .at = 1 << 30};
    const result r = run(&s, 4096);
    CHECK(r.rounds > 0, "never probed");
    CHECK(r.drafted == 2 * r.rounds, "%d drafted in %d rounds", r.drafted, r.rounds);
    TEST_END();
}

int main(void)
{
    useless_draft_bounded();
    costly_probes_wait();
    cheap_useless_backs_off();
    pauses_double();
    useless_given_up();
    good_draft_pays();
    costly_good_draft_found();
    draft_changes();
    probes_are_short();
    TEST_EXIT();
}
