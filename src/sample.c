#include "sample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct cand {
    int32_t id;
    float logit;
    float p;
} cand;

struct qlm_sampler {
    qlm_sampler_params p;
    int n_vocab;
    uint64_t rng[4];     /* xoshiro256** state */
    int32_t *recent;     /* ring of the last repeat_last_n tokens */
    int n_recent, recent_head;
    cand *c;             /* [n_vocab] */
    qlm_tok_prob *dist;  /* [n_vocab] what qlm_sample_dist returns */
    int32_t *banned;     /* qlm_sampler_ban's tokens, n_banned of them */
    int n_banned, cap_banned;
};

qlm_sampler_params qlm_sampler_defaults(void)
{
    return (qlm_sampler_params){.temp = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f,
                                .repeat_penalty = 1.0f, .repeat_last_n = 64, .seed = 0};
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next_u64(uint64_t s[4])
{
    const uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

/* Uniform in [0, 1) with 53 random bits. */
static double next_unit(uint64_t s[4]) { return (next_u64(s) >> 11) * 0x1.0p-53; }

qlm_sampler *qlm_sampler_new(const qlm_sampler_params *p, int n_vocab)
{
    qlm_sampler *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->p = *p;
    s->n_vocab = n_vocab;
    if (s->p.repeat_last_n < 0) s->p.repeat_last_n = 0;
    s->recent = malloc(sizeof *s->recent * (size_t)(s->p.repeat_last_n + 1));
    s->c = malloc(sizeof *s->c * (size_t)n_vocab);
    s->dist = malloc(sizeof *s->dist * (size_t)n_vocab);
    if (!s->recent || !s->c || !s->dist) {
        qlm_sampler_free(s);
        return NULL;
    }
    uint64_t x = p->seed;
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix64(&x);
    return s;
}

void qlm_sampler_free(qlm_sampler *s)
{
    if (!s) return;
    free(s->recent);
    free(s->c);
    free(s->dist);
    free(s->banned);
    free(s);
}

void qlm_sampler_accept(qlm_sampler *s, int32_t tok)
{
    const int n = s->p.repeat_last_n;
    if (n <= 0) return;
    s->recent[s->recent_head] = tok;
    s->recent_head = (s->recent_head + 1) % n;
    if (s->n_recent < n) s->n_recent++;
}

static int by_logit_desc(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->logit != y->logit) return x->logit < y->logit ? 1 : -1;
    return x->id - y->id; /* ties: lower id first, so results are stable */
}

void qlm_sampler_ban(qlm_sampler *s, int32_t tok)
{
    if (tok < 0 || tok >= s->n_vocab) return;
    for (int i = 0; i < s->n_banned; i++)
        if (s->banned[i] == tok) return;
    if (s->n_banned == s->cap_banned) {
        const int cap = s->cap_banned ? 2 * s->cap_banned : 8;
        int32_t *b = realloc(s->banned, sizeof *b * (size_t)cap);
        if (!b) return; /* cannot happen in practice: a handful of ids */
        s->banned = b, s->cap_banned = cap;
    }
    s->banned[s->n_banned++] = tok;
}

/* Whether recent[i] is a token id that first occurs there: the penalty
 * applies once per distinct recent token. */
static bool recent_first(const qlm_sampler *s, int i)
{
    const int32_t t = s->recent[i];
    if (t < 0 || t >= s->n_vocab) return false;
    for (int j = 0; j < i; j++)
        if (s->recent[j] == t) return false;
    return true;
}

/* Positive logits are divided by the penalty, negative ones multiplied. */
static float penalized(float l, float pen)
{
    return l > 0 ? l / pen : l * pen;
}

/* Penalized copy of the logits; banned tokens get -inf. */
static void load_candidates(qlm_sampler *s, const float *logits)
{
    for (int i = 0; i < s->n_vocab; i++) s->c[i] = (cand){.id = i, .logit = logits[i]};
    for (int i = 0; i < s->n_banned; i++) s->c[s->banned[i]].logit = -INFINITY;
    const float pen = s->p.repeat_penalty;
    if (pen == 1.0f) return;
    for (int i = 0; i < s->n_recent; i++)
        if (recent_first(s, i)) s->c[s->recent[i]].logit = penalized(s->c[s->recent[i]].logit, pen);
}

/* Sifts c[i] down the min-heap c[0..n) (the smallest logit at the top). */
static void sift_down(cand *c, int n, int i)
{
    for (;;) {
        const int l = 2 * i + 1, r = l + 1;
        int m = i;
        if (l < n && c[l].logit < c[m].logit) m = l;
        if (r < n && c[r].logit < c[m].logit) m = r;
        if (m == i) return;
        const cand t = c[i];
        c[i] = c[m], c[m] = t;
        i = m;
    }
}

/* load_candidates for a top-k of at most `keep` tokens, without writing
 * all n_vocab of them (a 150k vocabulary's copy and quickselect were most
 * of a small model's sampling): the keep largest raw logits, by one pass
 * with a min-heap, plus every recent token, penalized and banned as
 * load_candidates does.  Any other token has at least keep - n_recent -
 * n_banned tokens in the set that are neither recent nor banned, whose
 * logits are unchanged and no smaller than its own, so with keep - n_recent
 * - n_banned >= k the set holds load_candidates' top k (but for ties at
 * the k-th logit, which quickselect breaks arbitrarily either way).
 * Returns the candidates' count, in s->c[0..). */
static int load_top(qlm_sampler *s, const float *logits, int keep)
{
    cand *c = s->c;
    int m = keep < s->n_vocab ? keep : s->n_vocab;
    for (int i = 0; i < m; i++) c[i] = (cand){.id = i, .logit = logits[i]};
    for (int j = m / 2 - 1; j >= 0; j--) sift_down(c, m, j);
    /* the heap's smallest in a register: almost every logit is below it
     * (an equal one never enters: a later id loses the tie) */
    float least = c[0].logit;
    for (int i = m; i < s->n_vocab; i++)
        if (logits[i] > least) {
            c[0] = (cand){.id = i, .logit = logits[i]};
            sift_down(c, m, 0);
            least = c[0].logit;
        }
    const bool pen = s->p.repeat_penalty != 1.0f;
    for (int i = 0; i < s->n_recent; i++) {
        const int32_t t = s->recent[i];
        if (t < 0 || t >= s->n_vocab) continue;
        int at = 0;
        while (at < m && c[at].id != t) at++;
        if (at == m) c[m++] = (cand){.id = t, .logit = logits[t]};
        if (pen && recent_first(s, i)) c[at].logit = penalized(c[at].logit, s->p.repeat_penalty);
    }
    for (int i = 0; i < s->n_banned; i++)
        for (int j = 0; j < m; j++)
            if (c[j].id == s->banned[i]) c[j].logit = -INFINITY;
    return m;
}

/* Runs the chain for temp > 0: leaves the n surviving candidates in
 * s->c[0..n), most likely first, with unnormalised weights in .p. */
static int chain(qlm_sampler *s, const float *logits, double *total)
{
    int n = s->n_vocab;
    const int k = s->p.top_k > 0 && s->p.top_k < n ? s->p.top_k : n;
    const int keep = k + s->n_recent + s->n_banned;
    if (k < n && keep <= n / 8)
        n = load_top(s, logits, keep);
    else
        load_candidates(s, logits);
    /* A full sort of a 150k vocabulary per token is wasteful; partial
     * selection keeps the k best first. */
    if (k < n) {
        int lo = 0, hi = n - 1;
        while (lo < hi) { /* quickselect the k largest into [0, k) */
            const float pivot = s->c[(lo + hi) / 2].logit;
            int i = lo, j = hi;
            while (i <= j) {
                while (s->c[i].logit > pivot) i++;
                while (s->c[j].logit < pivot) j--;
                if (i <= j) {
                    cand t = s->c[i]; s->c[i] = s->c[j]; s->c[j] = t;
                    i++; j--;
                }
            }
            if (k - 1 <= j) hi = j;
            else if (k - 1 >= i) lo = i;
            else break;
        }
        n = k;
    }
    qsort(s->c, (size_t)n, sizeof *s->c, by_logit_desc);

    /* probabilities at temperature 1 drive top-p and min-p */
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += s->c[i].p = expf(s->c[i].logit - s->c[0].logit);
    if (s->p.top_p < 1.0f) {
        double cum = 0.0;
        for (int i = 0; i < n; i++) {
            cum += s->c[i].p / sum;
            if (cum >= s->p.top_p) { n = i + 1; break; }
        }
    }
    if (s->p.min_p > 0.0f) {
        int m = 1;
        while (m < n && s->c[m].p >= s->p.min_p * s->c[0].p) m++;
        n = m;
    }
    sum = 0.0;
    for (int i = 0; i < n; i++)
        sum += s->c[i].p = expf((s->c[i].logit - s->c[0].logit) / s->p.temp);
    *total = sum;
    return n;
}

static int32_t argmax(const qlm_sampler *s)
{
    int best = 0;
    for (int i = 1; i < s->n_vocab; i++)
        if (s->c[i].logit > s->c[best].logit) best = i;
    return s->c[best].id;
}

/* Greedy without a penalty to apply: argmax(s) over the logits as they
 * are, without copying 150k candidates first (batched decoding samples
 * every sequence every step).  The same token: argmax keeps the first
 * index whose value no later one exceeds, i.e. a NaN at 0 wins, NaNs
 * elsewhere never do, and ties (-0 == +0 too) go to the lowest index.
 * One pass in blocks: a block's maximum is taken in 16 independent
 * chains (any chain order finds the same value; x > m ? x : m is one
 * vector max), and only a block that beats the best so far is searched
 * for its first index of that value: one read of the row where a
 * maximum, then a search from the start, read it twice (8 rows a step
 * at --parallel 8: 145 us against 61). */
enum { ARGMAX_BLOCK = 256 };

static int32_t argmax_logits(const float *x, int n)
{
    if (isnan(x[0])) return 0;
    float best = x[0];
    int at = 0;
    for (int i0 = 0; i0 < n; i0 += ARGMAX_BLOCK) {
        const int nb = n - i0 < ARGMAX_BLOCK ? n - i0 : ARGMAX_BLOCK;
        const float *xb = x + i0;
        float m[16];
        for (int j = 0; j < 16; j++) m[j] = best;
        int i = 0;
        for (; i + 16 <= nb; i += 16)
            for (int j = 0; j < 16; j++) m[j] = xb[i + j] > m[j] ? xb[i + j] : m[j];
        for (; i < nb; i++) m[0] = xb[i] > m[0] ? xb[i] : m[0];
        float bm = m[0];
        for (int j = 1; j < 16; j++) bm = m[j] > bm ? m[j] : bm;
        if (bm > best) { /* bm is one of this block's values */
            best = bm;
            for (i = 0; xb[i] != bm; i++) {}
            at = i0 + i;
        }
    }
    return at;
}

/* Whether greedy must look at a modified copy of the logits. */
static bool penalty_applies(const qlm_sampler *s)
{
    return (s->p.repeat_penalty != 1.0f && s->n_recent > 0) || s->n_banned > 0;
}

int32_t qlm_sample(qlm_sampler *s, const float *logits)
{
    if (s->p.temp <= 0.0f) {
        if (!penalty_applies(s)) return argmax_logits(logits, s->n_vocab);
        load_candidates(s, logits);
        return argmax(s);
    }
    double sum;
    const int n = chain(s, logits, &sum);
    double r = next_unit(s->rng) * sum;
    for (int i = 0; i < n; i++) {
        r -= s->c[i].p;
        if (r < 0) return s->c[i].id;
    }
    return s->c[n - 1].id;
}

int qlm_sample_dist(qlm_sampler *s, const float *logits, const qlm_tok_prob **out)
{
    if (s->p.temp <= 0.0f) {
        int32_t id;
        if (penalty_applies(s)) {
            load_candidates(s, logits);
            id = argmax(s);
        } else {
            id = argmax_logits(logits, s->n_vocab);
        }
        s->dist[0] = (qlm_tok_prob){.id = id, .p = 1.0f};
        *out = s->dist;
        return 1;
    }
    double sum;
    const int n = chain(s, logits, &sum);
    for (int i = 0; i < n; i++) s->dist[i] = (qlm_tok_prob){.id = s->c[i].id, .p = (float)(s->c[i].p / sum)};
    *out = s->dist;
    return n;
}

double qlm_sampler_unit(qlm_sampler *s) { return next_unit(s->rng); }

int32_t qlm_sample_from(qlm_sampler *s, const qlm_tok_prob *d, int n, double total)
{
    double r = next_unit(s->rng) * total;
    for (int i = 0; i < n; i++) {
        r -= d[i].p;
        if (r < 0) return d[i].id;
    }
    /* rounding left r >= 0: the last candidate with weight */
    for (int i = n - 1; i > 0; i--)
        if (d[i].p > 0) return d[i].id;
    return d[0].id;
}

bool qlm_sampler_is_greedy(const qlm_sampler *s) { return s->p.temp <= 0.0f; }

void qlm_sampler_reset(qlm_sampler *s)
{
    s->n_recent = 0;
    s->recent_head = 0;
}
