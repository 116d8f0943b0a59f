/* x86_avx2_f32.c - the float kernels of f32ops.h with AVX2 + FMA: each
 * 16-lane step of the reference is two 8-lane halves doing the same
 * operations lane by lane, so results are identical to f32ops.c's.  The
 * exponent scaling (AVX-512's vscalefps, the reference's ldexpf) is two
 * exact-or-once-rounded multiplies by powers of two. */
#if defined(__x86_64__)
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "f32ops.h"
#include "x86_avx2_exp.h"
#include "x86_rms8.h"

#define INLINE static inline __attribute__((always_inline))

static float dot(int n, const float *x, const float *y)
{
    __m256 s[8];
    for (int q = 0; q < 8; q++) s[q] = _mm256_setzero_ps();
    const int np = n & ~63;
    for (int i = 0; i < np; i += 64)
        for (int q = 0; q < 8; q++)
            s[q] = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8 * q), _mm256_loadu_ps(y + i + 8 * q), s[q]);
    /* acc[j] is s[2j] (lanes 0-7), s[2j + 1] (8-15): 0 += 2, 1 += 3, 0 += 1 */
    for (int h = 0; h < 2; h++) {
        s[h] = _mm256_add_ps(s[h], s[4 + h]);
        s[2 + h] = _mm256_add_ps(s[2 + h], s[6 + h]);
        s[h] = _mm256_add_ps(s[h], s[2 + h]);
    }
    float sum = qt_reduce16v8(s[0], s[1]);
    for (int e = np; e < n; e++) sum = fmaf(x[e], y[e], sum);
    return sum;
}

static void pv(int n, int d, const float *v, int64_t ldv, const float *p, float *out, qt_pv_order order)
{
    qt_f32_ref()->pv(n, d, v, ldv, p, out, order);
}

static void exp16(const float *x, float *y)
{
    const __m256 lo = qt_expv8(_mm256_loadu_ps(x)), hi = qt_expv8(_mm256_loadu_ps(x + 8));
    _mm256_storeu_ps(y, lo);
    _mm256_storeu_ps(y + 8, hi);
}

/* The reference's softmax, 16 lanes at a time as two halves.  vmaxps keeps
 * the running value when x is NaN, as the scalar compare does. */
static void softmax(float *x, int n)
{
    const int n16 = n & ~15;
    __m256 vmax = _mm256_set1_ps(-__builtin_inff());
    for (int i = 0; i < n16; i += 8) vmax = _mm256_max_ps(_mm256_loadu_ps(x + i), vmax);
    float lanes[8], max = -__builtin_inff();
    _mm256_storeu_ps(lanes, vmax);
    for (int l = 0; l < 8; l++) max = lanes[l] > max ? lanes[l] : max;
    for (int i = n16; i < n; i++) max = x[i] > max ? x[i] : max;
    if (max == -__builtin_inff()) {
        memset(x, 0, sizeof *x * (size_t)n);
        return;
    }
    const __m256 vm = _mm256_set1_ps(max);
    double sum = 0.0;
    for (int i = 0; i < n16; i += 16) {
        const __m256 lo = qt_expv8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        const __m256 hi = qt_expv8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vm));
        _mm256_storeu_ps(x + i, lo);
        _mm256_storeu_ps(x + i + 8, hi);
        sum += (double)qt_reduce16v8(lo, hi);
    }
    for (int i = n16; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += (double)x[i];
    }
    const float inv = (float)(1.0 / sum);
    const __m256 vinv = _mm256_set1_ps(inv);
    for (int i = 0; i < n16; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vinv));
    for (int i = n16; i < n; i++) x[i] *= inv;
}

static void swiglu(float *g, const float *u, int64_t n)
{
    for (int64_t c = 0; c < n; c += 8) {
        const __m256 x = _mm256_loadu_ps(g + c);
        const __m256 e = qt_expv8(_mm256_sub_ps(_mm256_setzero_ps(), x));
        const __m256 sig = _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
        _mm256_storeu_ps(g + c, _mm256_mul_ps(sig, _mm256_loadu_ps(u + c)));
    }
}

/* 8 lanes at a time: F16C's conversion (nearest even, as the reference's
 * qt_f32_to_f16), the table read lane by lane, the clamps by blends (a
 * NaN compares false both ways and takes the table's NaN, as there). */
void qt_avx2_geglu(float *g, const float *u, int64_t n, const uint16_t *tab)
{
    const __m256 lo = _mm256_set1_ps(-10.0f), hi = _mm256_set1_ps(10.0f);
    const int64_t n8 = n & ~(int64_t)7;
    for (int64_t i = 0; i < n8; i += 8) {
        const __m256 x = _mm256_loadu_ps(g + i);
        uint16_t h[8], t[8];
        _mm_storeu_si128((__m128i *)h, _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
        for (int l = 0; l < 8; l++) t[l] = tab[h[l]];
        __m256 y = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)t));
        y = _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, hi, _CMP_GE_OQ));
        y = _mm256_andnot_ps(_mm256_cmp_ps(x, lo, _CMP_LE_OQ), y);
        _mm256_storeu_ps(g + i, _mm256_mul_ps(y, _mm256_loadu_ps(u + i)));
    }
    if (n8 < n) qt_f32_ref()->geglu(g + n8, u + n8, n - n8, tab);
}

/* The rows' x * scale * w, 8 lanes at a time, the tail as the reference. */
static void rms_scale(int nt, int n, const float *x, const float *w, const float *scale, float *out)
{
    const int n8 = n & ~7;
    for (int t = 0; t < nt; t++) {
        const float *xr = x + (int64_t)t * n;
        float *o = out + (int64_t)t * n;
        const __m256 vs = _mm256_set1_ps(scale[t]);
        for (int i = 0; i < n8; i += 8)
            _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(xr + i), vs), _mm256_loadu_ps(w + i)));
        for (int i = n8; i < n; i++) o[i] = xr[i] * scale[t] * w[i];
    }
}

/* Up to eight rows with n a multiple of 8, as the AVX-512 kernel: the
 * rows' sums are lanes of doubles (rows 0-3 and 4-7 in two registers),
 * fed column by column from 8 x 8 transposes of the squares, so each
 * row's adds stay in element order; missing rows repeat row 0 and are
 * dropped. */
static void rmsnorm(int nt, int n, float *x, const float *y, const float *w, float eps, float *out)
{
    float scale[QT_RMS_ROWS];
    if (n % 8 || nt == 1) { /* one row: qt_rms_scales_scalar says why */
        qt_rms_scales_scalar(nt, n, x, y, eps, scale);
        rms_scale(nt, n, x, w, scale, out);
        return;
    }
    __m256d ss0 = _mm256_setzero_pd(), ss1 = _mm256_setzero_pd();
    for (int i = 0; i < n; i += 8) {
        __m256 u[8];
        qt_rms_squares8(nt, n, x, y, i, u);
        /* column c of the block: rows 0..3 in u[c % 4], rows 4..7 in
         * u[4 + c % 4], the low halves for c < 4, the high ones after */
        for (int c = 0; c < 4; c++) {
            ss0 = _mm256_add_pd(ss0, _mm256_cvtps_pd(_mm256_castps256_ps128(u[c])));
            ss1 = _mm256_add_pd(ss1, _mm256_cvtps_pd(_mm256_castps256_ps128(u[4 + c])));
        }
        for (int c = 0; c < 4; c++) {
            ss0 = _mm256_add_pd(ss0, _mm256_cvtps_pd(_mm256_extractf128_ps(u[c], 1)));
            ss1 = _mm256_add_pd(ss1, _mm256_cvtps_pd(_mm256_extractf128_ps(u[4 + c], 1)));
        }
    }
    double s[8];
    _mm256_storeu_pd(s, ss0);
    _mm256_storeu_pd(s + 4, ss1);
    for (int j = 0; j < nt; j++) scale[j] = 1.0f / sqrtf((float)(s[j] / n) + eps);
    rms_scale(nt, n, x, w, scale, out);
}

/* One pair as the reference turns it. */
INLINE void rope_pair(float *a, float *b, float c, float sn)
{
    const float x0 = *a, x1 = *b;
    *a = fmaf(x0, c, -(x1 * sn));
    *b = fmaf(x0, sn, x1 * c);
}

/* Four pairs (llama order) or eight (neox) per step, the tail pair by
 * pair; the reference's products and FMAs, lane by lane. */
static void rope(float *x, int n_head, int head_dim, int n_rot, int neox, const float (*cs)[2])
{
    const int half = n_rot / 2;
    const float *csf = &cs[0][0];
    for (int h = 0; h < n_head; h++) {
        float *v = x + (int64_t)h * head_dim;
        int i = 0;
        if (!neox) {
            for (; i + 4 <= half; i += 4) { /* pairs i..i+3: floats 2i..2i+7 */
                const __m256 t = _mm256_loadu_ps(csf + 2 * i);
                const __m256 c = _mm256_moveldup_ps(t), sn = _mm256_movehdup_ps(t);
                const __m256 xv = _mm256_loadu_ps(v + 2 * i), xs = _mm256_permute_ps(xv, 0xb1);
                /* even lanes: fma(x0, c, -(x1 * s)); odd: fma(x0, s, x1 * c) */
                const __m256 ev = _mm256_fmsub_ps(xv, c, _mm256_mul_ps(xs, sn));
                const __m256 od = _mm256_fmadd_ps(xs, sn, _mm256_mul_ps(xv, c));
                _mm256_storeu_ps(v + 2 * i, _mm256_blend_ps(ev, od, 0xaa));
            }
            for (; i < half; i++) rope_pair(v + 2 * i, v + 2 * i + 1, cs[i][0], cs[i][1]);
        } else {
            for (; i + 8 <= half; i += 8) {
                const __m256 t0 = _mm256_loadu_ps(csf + 2 * i), t1 = _mm256_loadu_ps(csf + 2 * i + 8);
                /* even floats (cos) and odd (sin) of the 16, in pair order */
                const __m256 c = _mm256_castpd_ps(
                    _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(t0, t1, 0x88)), 0xd8));
                const __m256 sn = _mm256_castpd_ps(
                    _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(t0, t1, 0xdd)), 0xd8));
                const __m256 x0 = _mm256_loadu_ps(v + i), x1 = _mm256_loadu_ps(v + i + half);
                _mm256_storeu_ps(v + i, _mm256_fmsub_ps(x0, c, _mm256_mul_ps(x1, sn)));
                _mm256_storeu_ps(v + i + half, _mm256_fmadd_ps(x0, sn, _mm256_mul_ps(x1, c)));
            }
            for (; i < half; i++) rope_pair(v + i, v + i + half, cs[i][0], cs[i][1]);
        }
    }
}

const qt_f32_ops qt_f32_avx2 = {.name = "avx2", .dot = dot, .pv = pv, .exp16 = exp16, .softmax = softmax,
                                .swiglu = swiglu, .geglu = qt_avx2_geglu, .rmsnorm = rmsnorm, .rope = rope};

#else
typedef int qt_x86_avx2_f32_unused;
#endif
