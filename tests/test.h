/* test.h - the smallest test harness that reports per case.
 *
 * Each test binary prints one line per case, "PASS name" or
 * "FAIL name: reason", and exits non-zero if any case failed.  tests/run.sh
 * counts those lines for the suite's closing "N passed, N failed". */
#ifndef QLM_TEST_H
#define QLM_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_failed_cases, t_case_failed;
static const char *t_case_name;

#define TEST_BEGIN(name) do { t_case_name = (name); t_case_failed = 0; } while (0)
#define TEST_END() do { \
        if (t_case_failed) { t_failed_cases++; } \
        else printf("PASS %s\n", t_case_name); \
        fflush(stdout); } while (0)

/* CHECK records the first failure of a case with its location and keeps
 * going, so one run shows every broken case. */
#define CHECK(cond, ...) do { if (!(cond)) { \
        if (!t_case_failed) { printf("FAIL %s: %s:%d: ", t_case_name, __FILE__, __LINE__); \
            printf(__VA_ARGS__); printf("\n"); } \
        t_case_failed = 1; } } while (0)

#define TEST_EXIT() return t_failed_cases ? 1 : 0

/* malloc that ends the binary with a FAIL line when memory runs out. */
static inline void *test_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        printf("FAIL out of memory\n");
        exit(1);
    }
    return p;
}

/* Bitwise float equality: kernels equal their reference bit for bit. */
static inline int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* The same, except that any NaN equals any NaN: the NaN an inf*0 produces
 * has a different sign bit on x86 and ARM. */
static inline int same_float(float a, float b)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return same_bits(a, b);
}

#endif
