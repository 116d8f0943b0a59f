/* x86_avx512_f32.c - the float kernels of f32ops.h with AVX-512, doing the
 * very operations llama.cpp's AVX-512 build does, so results are identical
 * to the reference in f32ops.c. */
#if defined(__x86_64__)
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "f32ops.h"
#include "x86_rms8.h"
#include "x86_avx512_exp.h"


static float dot(int n, const float *x, const float *y)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    const int np = n & ~63;
    for (int i = 0; i < np; i += 64) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(y + i + 16), s1);
        s2 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 32), _mm512_loadu_ps(y + i + 32), s2);
        s3 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 48), _mm512_loadu_ps(y + i + 48), s3);
    }
    s0 = _mm512_add_ps(s0, s2);
    s1 = _mm512_add_ps(s1, s3);
    float sum = qt_reduce16v16(_mm512_add_ps(s0, s1));
    for (int e = np; e < n; e++) sum = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(x[e]), _mm_set_ss(y[e]), _mm_set_ss(sum)));
    return sum;
}

/* Vectorised over k (the head dimension): lane slot j % lanes keeps its own
 * accumulator row, exactly the lane a ggml kernel would put cell j in. */
static void pv(int n, int d, const float *v, int64_t ldv, const float *p, float *out, qt_pv_order order)
{
    const int lanes = order == QT_PV_TILE16 ? 16 : 64;
    for (int k0 = 0; k0 < d; k0 += 16) {
        const int w = d - k0 < 16 ? d - k0 : 16;
        const __mmask16 m = (__mmask16)((1u << w) - 1);
        __m512 acc[64];
        for (int l = 0; l < lanes; l++) acc[l] = _mm512_setzero_ps();
        for (int j = 0; j < n; j++) {
            const __m512 vj = _mm512_maskz_loadu_ps(m, v + j * ldv + k0);
            acc[j % lanes] = _mm512_fmadd_ps(vj, _mm512_set1_ps(p[j]), acc[j % lanes]);
        }
        if (order == QT_PV_VECDOT) {
            for (int l = 0; l < 16; l++) {
                acc[l] = _mm512_add_ps(acc[l], acc[32 + l]);
                acc[16 + l] = _mm512_add_ps(acc[16 + l], acc[48 + l]);
            }
            for (int l = 0; l < 16; l++) acc[l] = _mm512_add_ps(acc[l], acc[16 + l]);
        }
        /* reduce16 across the 16 lane slots, per k: transpose-free by
         * following the same pairing tree on whole vectors. */
        __m512 t[8], u[4];
        for (int q = 0; q < 8; q++) t[q] = _mm512_add_ps(acc[q + 8], acc[q]);
        for (int q = 0; q < 4; q++) u[q] = _mm512_add_ps(t[q + 4], t[q]);
        const __m512 v0 = _mm512_add_ps(u[0], u[2]), v1 = _mm512_add_ps(u[1], u[3]);
        _mm512_mask_storeu_ps(out + k0, m, _mm512_add_ps(v0, v1));
    }
}

static void exp16(const float *x, float *y)
{
    _mm512_storeu_ps(y, qt_expv16(_mm512_loadu_ps(x)));
}

/* The reference's softmax with each pass 16 lanes wide.  The maximum of
 * the lanes' maxima is the maximum (vmaxps, like the scalar compare,
 * keeps the running value when x is NaN); the 16-element sums, their
 * double accumulation and the tail are the reference's. */
static void softmax(float *x, int n)
{
    const int n16 = n & ~15;
    __m512 vmax = _mm512_set1_ps(-__builtin_inff());
    for (int i = 0; i < n16; i += 16) vmax = _mm512_max_ps(_mm512_loadu_ps(x + i), vmax);
    float max = _mm512_reduce_max_ps(vmax);
    for (int i = n16; i < n; i++) max = x[i] > max ? x[i] : max;
    if (max == -__builtin_inff()) {
        memset(x, 0, sizeof *x * (size_t)n);
        return;
    }
    const __m512 vm = _mm512_set1_ps(max);
    double sum = 0.0;
    for (int i = 0; i < n16; i += 16) {
        const __m512 e = qt_expv16(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
        _mm512_storeu_ps(x + i, e);
        sum += (double)qt_reduce16v16(e);
    }
    for (int i = n16; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += (double)x[i];
    }
    const float inv = (float)(1.0 / sum);
    const __m512 vinv = _mm512_set1_ps(inv);
    for (int i = 0; i < n16; i += 16) _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), vinv));
    for (int i = n16; i < n; i++) x[i] *= inv;
}

static void swiglu(float *g, const float *u, int64_t n)
{
    for (int64_t c = 0; c < n; c += 16) {
        const __m512 x = _mm512_loadu_ps(g + c);
        const __m512 e = qt_expv16(_mm512_sub_ps(_mm512_setzero_ps(), x));
        const __m512 sig = _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
        _mm512_storeu_ps(g + c, _mm512_mul_ps(sig, _mm512_loadu_ps(u + c)));
    }
}

/* The rows' x * scale * w, 16 lanes at a time. */
static void rms_scale(int nt, int n, const float *x, const float *w, const float *scale, float *out)
{
    for (int t = 0; t < nt; t++) {
        const float *xr = x + (int64_t)t * n;
        float *o = out + (int64_t)t * n;
        const __m512 vs = _mm512_set1_ps(scale[t]);
        for (int i = 0; i < n; i += 16) {
            const __mmask16 m = (__mmask16)(n - i >= 16 ? 0xffff : (1u << (n - i)) - 1);
            _mm512_mask_storeu_ps(o + i, m, _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, xr + i), vs),
                                                          _mm512_maskz_loadu_ps(m, w + i)));
        }
    }
}

/* Up to eight rows with n a multiple of 8: the rows' sums are the lanes
 * of one register of doubles, fed column by column from 8 x 8 transposes
 * of the squares (each lane's adds still in element order); missing rows
 * repeat row 0 and are dropped. */
static void rmsnorm(int nt, int n, float *x, const float *y, const float *w, float eps, float *out)
{
    float scale[QT_RMS_ROWS];
    if (n % 8 || nt == 1) { /* one row: qt_rms_scales_scalar says why */
        qt_rms_scales_scalar(nt, n, x, y, eps, scale);
        rms_scale(nt, n, x, w, scale, out);
        return;
    }
    __m512d ss = _mm512_setzero_pd();
    for (int i = 0; i < n; i += 8) {
        __m256 u[8];
        qt_rms_squares8(nt, n, x, y, i, u);
        /* column c of the block: rows 0..3 from u[c % 4], rows 4..7 from
         * u[4 + c % 4], the low halves for c < 4, the high ones after */
        for (int c = 0; c < 4; c++)
            ss = _mm512_add_pd(ss, _mm512_cvtps_pd(_mm256_permute2f128_ps(u[c], u[4 + c], 0x20)));
        for (int c = 0; c < 4; c++)
            ss = _mm512_add_pd(ss, _mm512_cvtps_pd(_mm256_permute2f128_ps(u[c], u[4 + c], 0x31)));
    }
    double s[8];
    _mm512_storeu_pd(s, ss);
    for (int j = 0; j < nt; j++) scale[j] = 1.0f / sqrtf((float)(s[j] / n) + eps);
    rms_scale(nt, n, x, w, scale, out);
}

/* Eight pairs (llama order) or sixteen (neox) per step, masked at the
 * end; the products and FMAs of the reference, lane by lane. */
static void rope(float *x, int n_head, int head_dim, int n_rot, int neox, const float (*cs)[2])
{
    const int half = n_rot / 2;
    const float *csf = &cs[0][0];
    for (int h = 0; h < n_head; h++) {
        float *v = x + (int64_t)h * head_dim;
        if (!neox) {
            for (int i = 0; i < half; i += 8) { /* pairs i..i+7: floats 2i..2i+15 */
                const int w = half - i < 8 ? 2 * (half - i) : 16;
                const __mmask16 m = (__mmask16)(w >= 16 ? 0xffff : (1u << w) - 1);
                const __m512 t = _mm512_maskz_loadu_ps(m, csf + 2 * i);
                const __m512 c = _mm512_moveldup_ps(t), sn = _mm512_movehdup_ps(t);
                const __m512 xv = _mm512_maskz_loadu_ps(m, v + 2 * i), xs = _mm512_permute_ps(xv, 0xb1);
                /* even lanes: fma(x0, c, -(x1 * s)); odd: fma(x0, s, x1 * c) */
                const __m512 ev = _mm512_fmsub_ps(xv, c, _mm512_mul_ps(xs, sn));
                const __m512 od = _mm512_fmadd_ps(xs, sn, _mm512_mul_ps(xv, c));
                _mm512_mask_storeu_ps(v + 2 * i, m, _mm512_mask_blend_ps(0xaaaa, ev, od));
            }
        } else {
            const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
            const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
            for (int i = 0; i < half; i += 16) {
                const int w = half - i < 16 ? half - i : 16;
                const __mmask16 m = (__mmask16)(w >= 16 ? 0xffff : (1u << w) - 1);
                const __mmask16 lo = (__mmask16)(w >= 8 ? 0xffff : (1u << (2 * w)) - 1),
                                hi = (__mmask16)(w >= 16 ? 0xffff : w > 8 ? (1u << (2 * (w - 8))) - 1 : 0);
                const __m512 t0 = _mm512_maskz_loadu_ps(lo, csf + 2 * i), t1 = _mm512_maskz_loadu_ps(hi, csf + 2 * i + 16);
                const __m512 c = _mm512_permutex2var_ps(t0, even, t1), sn = _mm512_permutex2var_ps(t0, odd, t1);
                const __m512 x0 = _mm512_maskz_loadu_ps(m, v + i), x1 = _mm512_maskz_loadu_ps(m, v + i + half);
                _mm512_mask_storeu_ps(v + i, m, _mm512_fmsub_ps(x0, c, _mm512_mul_ps(x1, sn)));
                _mm512_mask_storeu_ps(v + i + half, m, _mm512_fmadd_ps(x0, sn, _mm512_mul_ps(x1, c)));
            }
        }
    }
}

const qt_f32_ops qt_f32_avx512 = {.name = "avx512", .dot = dot, .pv = pv, .exp16 = exp16, .softmax = softmax,
                                  .swiglu = swiglu, .geglu = qt_avx2_geglu, .rmsnorm = rmsnorm, .rope = rope};

#else
typedef int qt_x86_avx512_f32_unused;
#endif
