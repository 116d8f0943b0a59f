/* x86_rms8.h - the 8 x 8 block step of the x86 RMSNorm kernels
 * (x86_avx2_f32.c, x86_avx512_f32.c): eight rows' squares of one block of
 * 8 columns, transposed so that each row's sum can take its columns in
 * element order from lanes of doubles.  Included only by files compiled
 * with at least -mavx2. */
#ifndef QLM_QT_X86_RMS8_H
#define QLM_QT_X86_RMS8_H

#include <immintrin.h>
#include <math.h>
#include <stdint.h>

/* Rows j < 8 at x + j * n + i (rows past nt repeat row 0); y: added to x
 * first, and the sums stored back to x's rows below nt.  Then u[] holds
 * the squares with column c of the block (element i + c) in u[c % 4] for
 * rows 0..3 and u[4 + c % 4] for rows 4..7, in the low 128-bit halves for
 * c < 4 and the high ones after. */
static inline __attribute__((always_inline)) void qt_rms_squares8(int nt, int n, float *x, const float *y, int i,
                                                                  __m256 u[8])
{
    __m256 r[8], t[8];
    for (int j = 0; j < 8; j++) {
        const int64_t at = (int64_t)(j < nt ? j : 0) * n + i;
        r[j] = _mm256_loadu_ps(x + at);
        if (y) {
            r[j] = _mm256_add_ps(r[j], _mm256_loadu_ps(y + at));
            if (j < nt) _mm256_storeu_ps(x + at, r[j]);
        }
        r[j] = _mm256_mul_ps(r[j], r[j]);
    }
    for (int j = 0; j < 8; j += 2) {
        t[j] = _mm256_unpacklo_ps(r[j], r[j + 1]);
        t[j + 1] = _mm256_unpackhi_ps(r[j], r[j + 1]);
    }
    for (int j = 0; j < 8; j += 4) {
        u[j] = _mm256_shuffle_ps(t[j], t[j + 2], 0x44);
        u[j + 1] = _mm256_shuffle_ps(t[j], t[j + 2], 0xee);
        u[j + 2] = _mm256_shuffle_ps(t[j + 1], t[j + 3], 0x44);
        u[j + 3] = _mm256_shuffle_ps(t[j + 1], t[j + 3], 0xee);
    }
}

/* The reference's scales for rows whose width is not a multiple of 8 (x
 * gets y's rows added as there), and for a single row (a decode step's
 * norm): a row's sum is one chain of dependent adds either way, and a
 * scalar add's latency is the shortest (2 cycles on a Sapphire Rapids
 * core, where the 8-row kernels' 512-bit adds take 4) with no transposes
 * of rows that are not there.  One 2048-wide row there: 1.1 us against
 * 4.6-4.9 through the 8-row kernel, twice per layer of every one-token
 * decode step. */
static inline void qt_rms_scales_scalar(int nt, int n, float *x, const float *y, float eps, float *scale)
{
    for (int t = 0; t < nt; t++) {
        float *xr = x + (int64_t)t * n;
        double ss = 0.0;
        for (int i = 0; i < n; i++) {
            if (y) xr[i] = xr[i] + y[(int64_t)t * n + i];
            ss += (double)(xr[i] * xr[i]);
        }
        scale[t] = 1.0f / sqrtf((float)(ss / n) + eps);
    }
}

#endif
