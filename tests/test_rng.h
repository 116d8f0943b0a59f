/* test_rng.h - the unit tests' random data: xorshift64*, seeded per test
 * binary, so every run of a binary draws the same numbers and a failure
 * reproduces.  A binary that wants its own sequence defines TEST_RNG_SEED
 * before including this. */
#ifndef QLM_TEST_RNG_H
#define QLM_TEST_RNG_H

#include <math.h>
#include <stdint.h>

#ifndef TEST_RNG_SEED
#define TEST_RNG_SEED 0x9e3779b97f4a7c15ull
#endif

static uint64_t rng_state = TEST_RNG_SEED;

static inline uint64_t rng_next(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

/* 0 .. n-1 */
static inline int rng_below(int n) { return (int)(rng_next() % (uint64_t)n); }

/* (0, 1): 53 random bits, never 0, so log() of it is finite */
static inline double rng_uniform(void) { return ((double)(rng_next() >> 11) + 0.5) * 0x1p-53; }

/* standard normal (Box-Muller), u1 drawn before u2 */
static inline double rng_normal(void)
{
    const double u1 = rng_uniform();
    const double u2 = rng_uniform();
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

#endif
