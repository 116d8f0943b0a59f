/* arm_neon.c - the NEON kernel set (Armv8-A Advanced SIMD, every aarch64
 * CPU), and the kernels both NEON sets share.
 *
 * Compiled with the baseline aarch64 flags, so it runs on Cortex-A53 and
 * A72, which lack sdot: the byte products are vmull_s8 (exact int16) summed
 * by vpaddl/vpadd into int32 lanes of four.  quant/arm_neon_dotprod.c
 * compiles the same byte-dot bodies (arm_neon_dot.inc) with sdot and takes
 * this file's quantizers and float dots for its table (arm_neon_sets.h).
 *
 * Exactness as on x86: quantized dots bit-identical to quant/ref.c and
 * ref_k.c (arm_neon_dot.inc says how), Q8 quantizers byte-identical, float
 * dots within float rounding of the reference's double sums, and the
 * f32ops kernels bit-identical to quant/f32ops.c's reference. */
#if defined(__aarch64__)

#include <arm_neon.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "arm_neon_sets.h"
#include "blocks.h"
#include "cpu.h"
#include "f32ops.h"
#include "fp16.h"
#include "ref.h"

#define INLINE static inline __attribute__((always_inline))

/* Lane i = Σ a[4i+t]·b[4i+t]: products exact in int16 (|-128·-128| fits),
 * pairs widened to int32 before they are added (two products of -128·-128
 * would not fit int16), then adjacent pairs added. */
INLINE int32x4_t dot4(int8x16_t a, int8x16_t b) {
    const int32x4_t p0 = vpaddlq_s16(vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    const int32x4_t p1 = vpaddlq_s16(vmull_high_s8(a, b));
    return vpaddq_s32(p0, p1);
}

#define QT_NEON_SET qt_kernels_neon
#define QT_NEON_NAME "neon"
#include "arm_neon_dot.inc"

/* ---- float dot products ------------------------------------------------- *
 * Products of two halves or two bfloat16s are exact in float, so only the
 * sums round: eight accumulators of four lanes, so no lane sums more than
 * n/32 + 1 terms (the bound tests/test_kernels.c holds every set to). */

enum { F32, F16, BF16 };

INLINE float32x4_t load4(const void *p, int64_t i, const int kind) {
    if (kind == F32)
        return vld1q_f32((const float *)p + i);
    const uint16x4_t h = vld1_u16((const uint16_t *)p + i);
    if (kind == F16)
        return vcvt_f32_f16(vreinterpret_f16_u16(h));
    return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
}

/* The last r < 4 elements, zero-padded: the padding adds 0·0. */
INLINE float32x4_t load4_tail(const void *p, int64_t i, int r, const int kind) {
    const size_t size = kind == F32 ? 4 : 2;
    unsigned char buf[16] = {0};
    memcpy(buf, (const unsigned char *)p + (size_t)i * size, (size_t)r * size);
    return load4(buf, 0, kind);
}

INLINE void dot_float(int n, float *s, const void *x, const void *y, const int kind) {
    float32x4_t a[8];
    for (int k = 0; k < 8; k++)
        a[k] = vdupq_n_f32(0.0f);
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 8; k++)
            a[k] = vfmaq_f32(a[k], load4(x, i + 4 * k, kind), load4(y, i + 4 * k, kind));
    for (int k = 0; i + 4 <= n; i += 4, k++)
        a[k] = vfmaq_f32(a[k], load4(x, i, kind), load4(y, i, kind));
    if (i < n)
        a[7] = vfmaq_f32(a[7], load4_tail(x, i, (int)(n - i), kind), load4_tail(y, i, (int)(n - i), kind));
    for (int k = 0; k < 4; k++)
        a[k] = vaddq_f32(a[k], a[k + 4]);
    *s = vaddvq_f32(vaddq_f32(vaddq_f32(a[0], a[2]), vaddq_f32(a[1], a[3])));
}

void qt_neon_vec_dot_f32(int n, float *s, const void *x, const void *y) {
    dot_float(n, s, x, y, F32);
}

void qt_neon_vec_dot_f16(int n, float *s, const void *x, const void *y) {
    dot_float(n, s, x, y, F16);
}

void qt_neon_vec_dot_bf16(int n, float *s, const void *x, const void *y) {
    dot_float(n, s, x, y, BF16);
}

/* ---- Q8_0 / Q8_1 quantizers --------------------------------------------- *
 * Two references, two roundings (quant/ref.c): from_float is ggml's
 * quantize_row_q8_*_ref (id = 1/d, roundf: ties away from zero, which is
 * fcvtas), quantize_act is llama.cpp's SIMD activation quantizer
 * (id = 127/amax, nearest-even: fcvtns).  The float operations are the
 * reference's; only the max, which is exact, is taken in another order. */

enum { ROUND_AWAY, ROUND_EVEN };

/* Quantizes one block of 32 and returns 1, or returns 0 having written
 * nothing when only the reference reproduces its own bytes: NaN or inf in
 * the block (the reference's scalar max lets a NaN's position matter), or
 * a scale that overflows to inf.  Otherwise the saturating narrows are the
 * reference's clamps, and the sum is that of the stored bytes. */
INLINE int quantize_block(const float *x, int8_t *qs, float *d_out, int *sum_out, const int mode) {
    float32x4_t v[8], vmax = vdupq_n_f32(0.0f);
    uint32x4_t finite = vdupq_n_u32(~0u);
    for (int k = 0; k < 8; k++) {
        v[k] = vld1q_f32(x + 4 * k);
        const float32x4_t a = vabsq_f32(v[k]);
        vmax = vmaxq_f32(vmax, a);
        finite = vandq_u32(finite, vcleq_f32(a, vdupq_n_f32(FLT_MAX)));
    }
    if (vminvq_u32(finite) == 0)
        return 0;
    const float amax = vmaxvq_f32(vmax);
    const float d = amax / 127;
    float id;
    if (mode == ROUND_AWAY)
        id = d != 0.0f ? 1.0f / d : 0.0f;
    else
        id = amax != 0.0f ? 127.0f / amax : 0.0f;
    if (id > FLT_MAX)
        return 0;
    int16x8_t h[4];
    for (int k = 0; k < 4; k++) {
        const float32x4_t s0 = vmulq_n_f32(v[2 * k], id), s1 = vmulq_n_f32(v[2 * k + 1], id);
        const int32x4_t q0 = mode == ROUND_AWAY ? vcvtaq_s32_f32(s0) : vcvtnq_s32_f32(s0);
        const int32x4_t q1 = mode == ROUND_AWAY ? vcvtaq_s32_f32(s1) : vcvtnq_s32_f32(s1);
        h[k] = vcombine_s16(vqmovn_s32(q0), vqmovn_s32(q1));
    }
    const int8x16_t b0 = vcombine_s8(vqmovn_s16(h[0]), vqmovn_s16(h[1]));
    const int8x16_t b1 = vcombine_s8(vqmovn_s16(h[2]), vqmovn_s16(h[3]));
    vst1q_s8(qs, b0);
    vst1q_s8(qs + 16, b1);
    *d_out = d;
    *sum_out = vaddlvq_s8(b0) + vaddlvq_s8(b1);
    return 1;
}

INLINE void quantize_q8_0(const float *src, void *dst, int64_t n, const int mode) {
    qt_block_q8_0 *y = dst;
    for (int64_t i = 0; i < n / QT_QK8_0; i++) {
        const float *x = src + i * QT_QK8_0;
        float d;
        int sum;
        if (quantize_block(x, y[i].qs, &d, &sum, mode))
            y[i].d = qt_f32_to_f16(d);
        else if (mode == ROUND_AWAY)
            qt_from_float_q8_0(x, &y[i], QT_QK8_0);
        else
            qt_quantize_act_q8_0(x, &y[i], QT_QK8_0);
    }
}

/* s = f16(sum·d) with the float d, as both references compute it. */
INLINE void quantize_q8_1(const float *src, void *dst, int64_t n, const int mode) {
    qt_block_q8_1 *y = dst;
    for (int64_t i = 0; i < n / QT_QK8_1; i++) {
        const float *x = src + i * QT_QK8_1;
        float d;
        int sum;
        if (quantize_block(x, y[i].qs, &d, &sum, mode)) {
            y[i].d = qt_f32_to_f16(d);
            y[i].s = qt_f32_to_f16((float)sum * d);
        } else if (mode == ROUND_AWAY) {
            qt_from_float_q8_1(x, &y[i], QT_QK8_1);
        } else {
            qt_quantize_act_q8_1(x, &y[i], QT_QK8_1);
        }
    }
}

void qt_neon_from_float_q8_0(const float *src, void *dst, int64_t n) {
    quantize_q8_0(src, dst, n, ROUND_AWAY);
}

void qt_neon_from_float_q8_1(const float *src, void *dst, int64_t n) {
    quantize_q8_1(src, dst, n, ROUND_AWAY);
}

void qt_neon_quantize_act_q8_0(const float *src, void *dst, int64_t n) {
    quantize_q8_0(src, dst, n, ROUND_EVEN);
}

void qt_neon_quantize_act_q8_1(const float *src, void *dst, int64_t n) {
    quantize_q8_1(src, dst, n, ROUND_EVEN);
}

/* ---- Q8_K quantizer ------------------------------------------------------ *
 * quant/ref_k.c's qt_from_float_q8_K (llama.cpp's activation quantizer
 * too).  A block goes to the reference when its bytes come from ggml's
 * nearest_int outside its range: any NaN or inf, an all-zero block, or a
 * scale that overflows.  Otherwise |iscale·x| <= 127·(1 + 2^-22), so fcvtns
 * (nearest-even) is nearest_int and nothing reaches the narrows'
 * saturation or the reference's MIN(127). */
void qt_neon_quantize_q8_K(const float *src, void *dst, int64_t n) {
    qt_block_q8_K *y = dst;
    for (int64_t i = 0; i < n / QT_QK_K; i++) {
        const float *x = src + i * QT_QK_K;
        float32x4_t vmax = vdupq_n_f32(0.0f);
        uint32x4_t finite = vdupq_n_u32(~0u);
        for (int k = 0; k < QT_QK_K / 4; k++) {
            const float32x4_t a = vabsq_f32(vld1q_f32(x + 4 * k));
            vmax = vmaxq_f32(vmax, a);
            finite = vandq_u32(finite, vcleq_f32(a, vdupq_n_f32(FLT_MAX)));
        }
        const float amax = vmaxvq_f32(vmax);
        if (vminvq_u32(finite) == 0 || amax == 0.0f) {
            qt_from_float_q8_K(x, &y[i], QT_QK_K);
            continue;
        }
        /* The sign comes from the first element of that magnitude. */
        float max = amax;
        for (int j = 0; j < QT_QK_K; j++)
            if (fabsf(x[j]) == amax) {
                max = x[j];
                break;
            }
        const float iscale = -127.f / max;
        if (!(iscale >= -FLT_MAX && iscale <= FLT_MAX)) {
            qt_from_float_q8_K(x, &y[i], QT_QK_K);
            continue;
        }
        for (int g = 0; g < QT_QK_K / 16; g++) {
            int32x4_t q[4];
            for (int k = 0; k < 4; k++)
                q[k] = vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + 16 * g + 4 * k), iscale));
            const int16x8_t h0 = vcombine_s16(vqmovn_s32(q[0]), vqmovn_s32(q[1]));
            const int16x8_t h1 = vcombine_s16(vqmovn_s32(q[2]), vqmovn_s32(q[3]));
            const int8x16_t b = vcombine_s8(vqmovn_s16(h0), vqmovn_s16(h1));
            vst1q_s8(y[i].qs + 16 * g, b);
            y[i].bsums[g] = vaddlvq_s8(b);
        }
        y[i].d = 1 / iscale;
    }
}

/* ---- f32ops: llama.cpp's AVX-512 order, with four-lane vectors ---------- *
 * A 16-lane accumulator of the reference is four float32x4; the FMAs and
 * the pairwise reductions are the reference's, lane for lane. */

/* qt_reduce16 of a[0..3] (lanes 0-3, 4-7, 8-11, 12-15). */
INLINE float reduce16(const float32x4_t a[4]) {
    const float32x4_t t0 = vaddq_f32(a[2], a[0]), t1 = vaddq_f32(a[3], a[1]);
    const float32x4_t u = vaddq_f32(t1, t0);
    const float32x2_t v = vadd_f32(vget_low_f32(u), vget_high_f32(u));
    return vget_lane_f32(v, 0) + vget_lane_f32(v, 1);
}

static float f32_dot(int n, const float *x, const float *y) {
    float32x4_t acc[4][4];
    for (int j = 0; j < 4; j++)
        for (int q = 0; q < 4; q++)
            acc[j][q] = vdupq_n_f32(0.0f);
    const int np = n & ~63;
    for (int i = 0; i < np; i += 64)
        for (int j = 0; j < 4; j++)
            for (int q = 0; q < 4; q++)
                acc[j][q] = vfmaq_f32(acc[j][q], vld1q_f32(x + i + 16 * j + 4 * q), vld1q_f32(y + i + 16 * j + 4 * q));
    for (int q = 0; q < 4; q++) {
        acc[0][q] = vaddq_f32(acc[0][q], acc[2][q]);
        acc[1][q] = vaddq_f32(acc[1][q], acc[3][q]);
    }
    for (int q = 0; q < 4; q++)
        acc[0][q] = vaddq_f32(acc[0][q], acc[1][q]);
    float sum = reduce16(acc[0]);
    for (int e = np; e < n; e++)
        sum = fmaf(x[e], y[e], sum);
    return sum;
}

/* Four outputs k at a time, each lane slot j % lanes its own accumulator;
 * the last d % 4 outputs one at a time in the same order. */
static void f32_pv(int n, int d, const float *v, int64_t ldv, const float *p, float *out, qt_pv_order order) {
    const int lanes = order == QT_PV_TILE16 ? 16 : 64;
    int k0 = 0;
    for (; k0 + 4 <= d; k0 += 4) {
        float32x4_t acc[64];
        for (int l = 0; l < lanes; l++)
            acc[l] = vdupq_n_f32(0.0f);
        for (int j = 0; j < n; j++)
            acc[j % lanes] = vfmaq_n_f32(acc[j % lanes], vld1q_f32(v + j * ldv + k0), p[j]);
        if (order == QT_PV_VECDOT) {
            for (int l = 0; l < 16; l++) {
                acc[l] = vaddq_f32(acc[l], acc[32 + l]);
                acc[16 + l] = vaddq_f32(acc[16 + l], acc[48 + l]);
            }
            for (int l = 0; l < 16; l++)
                acc[l] = vaddq_f32(acc[l], acc[16 + l]);
        }
        /* qt_reduce16 over the 16 slots, on whole vectors. */
        float32x4_t t[8], u[4];
        for (int q = 0; q < 8; q++)
            t[q] = vaddq_f32(acc[q + 8], acc[q]);
        for (int q = 0; q < 4; q++)
            u[q] = vaddq_f32(t[q + 4], t[q]);
        vst1q_f32(out + k0, vaddq_f32(vaddq_f32(u[0], u[2]), vaddq_f32(u[1], u[3])));
    }
    for (; k0 < d; k0++) {
        float acc[64] = {0};
        for (int j = 0; j < n; j++)
            acc[j % lanes] = fmaf(v[j * ldv + k0], p[j], acc[j % lanes]);
        if (order == QT_PV_VECDOT) {
            for (int l = 0; l < 16; l++) {
                acc[l] += acc[32 + l];
                acc[16 + l] += acc[48 + l];
            }
            for (int l = 0; l < 16; l++)
                acc[l] += acc[16 + l];
        }
        out[k0] = qt_reduce16(acc);
    }
}

/* ggml_v_expf as quant/f32ops.c's reference computes it.  ldexpf(j, n)
 * rounds once; so does j·2^n when 2^n is a float, and for n < -100 the
 * exact j·2^-100 (normal) times 2^(n+100) rounds once too.  For n > 127
 * every lane overflows to inf either way (j > 0.7). */
static void f32_exp16(const float *x, float *y) {
    const float32x4_t r = vdupq_n_f32(0x1.8p23f);
    for (int k = 0; k < 4; k++) {
        const float32x4_t xv = vld1q_f32(x + 4 * k);
        const float32x4_t z = vfmaq_f32(r, xv, vdupq_n_f32(0x1.715476p+0f));
        const float32x4_t nf = vsubq_f32(z, r);
        float32x4_t b = vfmsq_f32(xv, nf, vdupq_n_f32(0x1.62e4p-1f));
        b = vfmsq_f32(b, nf, vdupq_n_f32(0x1.7f7d1cp-20f));
        const float32x4_t u = vmulq_f32(b, b);
        const float32x4_t p1 = vfmaq_f32(vdupq_n_f32(0x1.573e2ep-5f), vdupq_n_f32(0x1.0e4020p-7f), b);
        const float32x4_t p2 = vfmaq_f32(vdupq_n_f32(0x1.fffdb6p-2f), vdupq_n_f32(0x1.555e66p-3f), b);
        const float32x4_t p3 = vfmaq_f32(vdupq_n_f32(1.0f), vdupq_n_f32(0x1.ffffecp-1f), b);
        const float32x4_t j = vfmaq_f32(p3, vfmaq_f32(p2, p1, u), u);
        /* n is integral here, or |n| > 192 (inf, NaN: replaced below). */
        const int32x4_t ni = vcvtq_s32_f32(nf);
        const uint32x4_t low = vcltq_s32(ni, vdupq_n_s32(-100)), high = vcgtq_s32(ni, vdupq_n_s32(127));
        const int32x4_t adj = vbslq_s32(low, vdupq_n_s32(-100), vbslq_s32(high, vdupq_n_s32(64), vdupq_n_s32(0)));
        const int32x4_t e1 = vaddq_s32(adj, vdupq_n_s32(127));
        const int32x4_t e2 = vmaxq_s32(vminq_s32(vaddq_s32(vsubq_s32(ni, adj), vdupq_n_s32(127)), vdupq_n_s32(254)),
                                       vdupq_n_s32(1));
        const float32x4_t s1 = vreinterpretq_f32_s32(vshlq_n_s32(e1, 23));
        const float32x4_t s2 = vreinterpretq_f32_s32(vshlq_n_s32(e2, 23));
        float32x4_t res = vmulq_f32(vmulq_f32(j, s1), s2);
        const uint32x4_t big = vcgtq_f32(vabsq_f32(nf), vdupq_n_f32(192.0f));
        const float32x4_t alt = vbslq_f32(vcleq_f32(nf, vdupq_n_f32(0.0f)), vdupq_n_f32(0.0f), vdupq_n_f32(INFINITY));
        res = vbslq_f32(big, alt, res);
        vst1q_f32(y + 4 * k, res);
    }
}

const qt_f32_ops qt_f32_neon = {.name = "neon", .dot = f32_dot, .pv = f32_pv, .exp16 = f32_exp16};

#else

/* ISO C wants a declaration in every translation unit. */
typedef int qt_arm_neon_unused;

#endif
