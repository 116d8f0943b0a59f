/* ref.c - scalar reference for the float and legacy block formats.
 *
 * The arithmetic mirrors ggml's reference C (ggml-quants.c quantize_row_*_ref
 * and dequantize_row_*, ggml-cpu/quants.c ggml_vec_dot_*_generic) operation
 * by operation, in float, so that quantizing the same floats gives the same
 * bytes as llama.cpp and gguf-py, and dot products round like llama.cpp's.
 * That is why products and sums are sometimes split over two statements: a
 * compiler may fuse a*b + c into one fma within an expression, which rounds
 * once instead of twice and changes the last bit.  (GCC fuses across
 * statements too unless -ffp-contract=off, which -std=c11 implies.)
 *
 * Where ggml's C has undefined behaviour (casting a NaN or an out-of-range
 * float to an integer), this code clamps instead; on every input where ggml's
 * result is defined the bytes are the same. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "blocks.h"
#include "fp16.h"
#include "ref.h"

/* Truncates toward zero like ggml's (int8_t)/(uint8_t) casts, clamped to
 * [lo, hi]; NaN gives lo. */
static inline int trunc_clamp(float v, int lo, int hi) {
    if (!(v > (float)lo))
        return lo;
    if (v >= (float)hi)
        return hi;
    return (int)v;
}

/* roundf (ties away from zero, as ggml and gguf-py's np_roundf) into int8. */
static inline int8_t round_i8(float v) {
    const float r = roundf(v);
    if (!(r > -128.0f))
        return r == r ? -128 : 0;
    if (r > 127.0f)
        return 127;
    return (int8_t)r;
}

/* Starts from +-FLT_MAX and keeps the first of equal values, as ggml does:
 * in a block of zeros m takes the sign of the first zero.  (gguf-py's
 * numpy min() picks a zero of either sign, so its m bytes can differ.) */
static void minmax(const float *x, int n, float *mn, float *mx) {
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (int j = 0; j < n; j++) {
        if (x[j] < lo)
            lo = x[j];
        if (x[j] > hi)
            hi = x[j];
    }
    *mn = lo;
    *mx = hi;
}

static inline uint32_t load_qh(const uint8_t qh[4]) {
    return (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 |
           (uint32_t)qh[3] << 24;
}

static inline void store_qh(uint8_t qh[4], uint32_t v) {
    qh[0] = (uint8_t)v;
    qh[1] = (uint8_t)(v >> 8);
    qh[2] = (uint8_t)(v >> 16);
    qh[3] = (uint8_t)(v >> 24);
}

/* ---- F32, F16, BF16 ---------------------------------------------------- */

void qt_to_float_f32(const void *src, float *dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}

void qt_from_float_f32(const float *src, void *dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}

void qt_to_float_f16(const void *src, float *dst, int64_t n) {
    const uint16_t *h = src;
    for (int64_t i = 0; i < n; i++)
        dst[i] = qt_f16_to_f32(h[i]);
}

void qt_from_float_f16(const float *src, void *dst, int64_t n) {
    uint16_t *h = dst;
    for (int64_t i = 0; i < n; i++)
        h[i] = qt_f32_to_f16(src[i]);
}

void qt_to_float_bf16(const void *src, float *dst, int64_t n) {
    const uint16_t *b = src;
    for (int64_t i = 0; i < n; i++)
        dst[i] = qt_bf16_to_f32(b[i]);
}

void qt_from_float_bf16(const float *src, void *dst, int64_t n) {
    uint16_t *b = dst;
    for (int64_t i = 0; i < n; i++)
        b[i] = qt_f32_to_bf16(src[i]);
}

/* ggml sums float products in double (ggml_float).  For F16 and BF16 the
 * float product of two narrow values is exact. */
void qt_vec_dot_f32_f32(int n, float *s, const void *vx, const void *vy) {
    const float *x = vx, *y = vy;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        const float p = x[i] * y[i];
        sum += (double)p;
    }
    *s = (float)sum;
}

void qt_vec_dot_f16_f16(int n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    double sum = 0.0;
    for (int i = 0; i < n; i++)
        sum += (double)(qt_f16_to_f32(x[i]) * qt_f16_to_f32(y[i]));
    *s = (float)sum;
}

void qt_vec_dot_bf16_bf16(int n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    double sum = 0.0;
    for (int i = 0; i < n; i++)
        sum += (double)(qt_bf16_to_f32(x[i]) * qt_bf16_to_f32(y[i]));
    *s = (float)sum;
}

/* ---- Q4_0: x = d * (q - 8), d = max / -8 ------------------------------- */

/* Dividing by -8 maps the largest-magnitude value exactly to q = 0; the
 * opposite extreme would need q = 16 and is clipped to 15. */
void qt_from_float_q4_0(const float *src, void *dst, int64_t n) {
    qt_block_q4_0 *y = dst;
    for (int64_t i = 0; i < n / QT_QK4_0; i++) {
        const float *x = src + i * QT_QK4_0;
        const float d = qt_signed_absmax(x, QT_QK4_0) / -8;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = qt_f32_to_f16(d);
        for (int j = 0; j < QT_QK4_0 / 2; j++) {
            const float x0 = x[j] * id;
            const float x1 = x[j + QT_QK4_0 / 2] * id;
            const int q0 = trunc_clamp(x0 + 8.5f, 0, 15);
            const int q1 = trunc_clamp(x1 + 8.5f, 0, 15);
            y[i].qs[j] = (uint8_t)(q0 | q1 << 4);
        }
    }
}

void qt_to_float_q4_0(const void *src, float *dst, int64_t n) {
    const qt_block_q4_0 *x = src;
    for (int64_t i = 0; i < n / QT_QK4_0; i++) {
        const float d = qt_f16_to_f32(x[i].d);
        float *y = dst + i * QT_QK4_0;
        for (int j = 0; j < QT_QK4_0 / 2; j++) {
            y[j] = (float)((x[i].qs[j] & 0x0f) - 8) * d;
            y[j + QT_QK4_0 / 2] = (float)((x[i].qs[j] >> 4) - 8) * d;
        }
    }
}

/* ---- Q4_1: x = d * q + m, d = (max - min) / 15 -------------------------- */

void qt_from_float_q4_1(const float *src, void *dst, int64_t n) {
    qt_block_q4_1 *y = dst;
    for (int64_t i = 0; i < n / QT_QK4_1; i++) {
        const float *x = src + i * QT_QK4_1;
        float mn, mx;
        minmax(x, QT_QK4_1, &mn, &mx);
        const float d = (mx - mn) / 15;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = qt_f32_to_f16(d);
        y[i].m = qt_f32_to_f16(mn);
        for (int j = 0; j < QT_QK4_1 / 2; j++) {
            const float x0 = (x[j] - mn) * id;
            const float x1 = (x[j + QT_QK4_1 / 2] - mn) * id;
            const int q0 = trunc_clamp(x0 + 0.5f, 0, 15);
            const int q1 = trunc_clamp(x1 + 0.5f, 0, 15);
            y[i].qs[j] = (uint8_t)(q0 | q1 << 4);
        }
    }
}

void qt_to_float_q4_1(const void *src, float *dst, int64_t n) {
    const qt_block_q4_1 *x = src;
    for (int64_t i = 0; i < n / QT_QK4_1; i++) {
        const float d = qt_f16_to_f32(x[i].d);
        const float m = qt_f16_to_f32(x[i].m);
        float *y = dst + i * QT_QK4_1;
        for (int j = 0; j < QT_QK4_1 / 2; j++) {
            const float v0 = (float)(x[i].qs[j] & 0x0f) * d;
            const float v1 = (float)(x[i].qs[j] >> 4) * d;
            y[j] = v0 + m;
            y[j + QT_QK4_1 / 2] = v1 + m;
        }
    }
}

/* ---- Q5_0: x = d * (q - 16), d = max / -16 ----------------------------- */

void qt_from_float_q5_0(const float *src, void *dst, int64_t n) {
    qt_block_q5_0 *y = dst;
    for (int64_t i = 0; i < n / QT_QK5_0; i++) {
        const float *x = src + i * QT_QK5_0;
        const float d = qt_signed_absmax(x, QT_QK5_0) / -16;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = qt_f32_to_f16(d);
        uint32_t qh = 0;
        for (int j = 0; j < QT_QK5_0 / 2; j++) {
            const float x0 = x[j] * id;
            const float x1 = x[j + QT_QK5_0 / 2] * id;
            const int q0 = trunc_clamp(x0 + 16.5f, 0, 31);
            const int q1 = trunc_clamp(x1 + 16.5f, 0, 31);
            y[i].qs[j] = (uint8_t)((q0 & 0x0f) | (q1 & 0x0f) << 4);
            qh |= (uint32_t)(q0 >> 4) << j;
            qh |= (uint32_t)(q1 >> 4) << (j + QT_QK5_0 / 2);
        }
        store_qh(y[i].qh, qh);
    }
}

void qt_to_float_q5_0(const void *src, float *dst, int64_t n) {
    const qt_block_q5_0 *x = src;
    for (int64_t i = 0; i < n / QT_QK5_0; i++) {
        const float d = qt_f16_to_f32(x[i].d);
        const uint32_t qh = load_qh(x[i].qh);
        float *y = dst + i * QT_QK5_0;
        for (int j = 0; j < QT_QK5_0 / 2; j++) {
            const int h0 = (int)((qh >> j) & 1u) << 4;
            const int h1 = (int)((qh >> (j + QT_QK5_0 / 2)) & 1u) << 4;
            y[j] = (float)(((x[i].qs[j] & 0x0f) | h0) - 16) * d;
            y[j + QT_QK5_0 / 2] = (float)(((x[i].qs[j] >> 4) | h1) - 16) * d;
        }
    }
}

/* ---- Q5_1: x = d * q + m, d = (max - min) / 31 -------------------------- */

/* ggml casts without clamping here; (max - min) * id stays below 31.5, so
 * the clamp (which gguf-py also applies) never changes a byte. */
void qt_from_float_q5_1(const float *src, void *dst, int64_t n) {
    qt_block_q5_1 *y = dst;
    for (int64_t i = 0; i < n / QT_QK5_1; i++) {
        const float *x = src + i * QT_QK5_1;
        float mn, mx;
        minmax(x, QT_QK5_1, &mn, &mx);
        const float d = (mx - mn) / 31;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = qt_f32_to_f16(d);
        y[i].m = qt_f32_to_f16(mn);
        uint32_t qh = 0;
        for (int j = 0; j < QT_QK5_1 / 2; j++) {
            const float x0 = (x[j] - mn) * id;
            const float x1 = (x[j + QT_QK5_1 / 2] - mn) * id;
            const int q0 = trunc_clamp(x0 + 0.5f, 0, 31);
            const int q1 = trunc_clamp(x1 + 0.5f, 0, 31);
            y[i].qs[j] = (uint8_t)((q0 & 0x0f) | (q1 & 0x0f) << 4);
            qh |= (uint32_t)(q0 >> 4) << j;
            qh |= (uint32_t)(q1 >> 4) << (j + QT_QK5_1 / 2);
        }
        store_qh(y[i].qh, qh);
    }
}

void qt_to_float_q5_1(const void *src, float *dst, int64_t n) {
    const qt_block_q5_1 *x = src;
    for (int64_t i = 0; i < n / QT_QK5_1; i++) {
        const float d = qt_f16_to_f32(x[i].d);
        const float m = qt_f16_to_f32(x[i].m);
        const uint32_t qh = load_qh(x[i].qh);
        float *y = dst + i * QT_QK5_1;
        for (int j = 0; j < QT_QK5_1 / 2; j++) {
            const int h0 = (int)((qh >> j) & 1u) << 4;
            const int h1 = (int)((qh >> (j + QT_QK5_1 / 2)) & 1u) << 4;
            const float v0 = (float)((x[i].qs[j] & 0x0f) | h0) * d;
            const float v1 = (float)((x[i].qs[j] >> 4) | h1) * d;
            y[j] = v0 + m;
            y[j + QT_QK5_1 / 2] = v1 + m;
        }
    }
}

/* ---- Q8_0 and Q8_1: x = d * q, d = amax / 127 -------------------------- */

/* Shared by both: returns the float d (before f16 rounding), which Q8_1's
 * sum term is computed from. */
static float quantize_block_q8(const float *x, int8_t *qs, int nq) {
    float amax = 0.0f;
    for (int j = 0; j < nq; j++) {
        const float a = fabsf(x[j]);
        amax = amax > a ? amax : a;
    }
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < nq; j++) {
        const float v = x[j] * id;
        qs[j] = round_i8(v);
    }
    return d;
}

void qt_from_float_q8_0(const float *src, void *dst, int64_t n) {
    qt_block_q8_0 *y = dst;
    for (int64_t i = 0; i < n / QT_QK8_0; i++) {
        const float d = quantize_block_q8(src + i * QT_QK8_0, y[i].qs, QT_QK8_0);
        y[i].d = qt_f32_to_f16(d);
    }
}

void qt_to_float_q8_0(const void *src, float *dst, int64_t n) {
    const qt_block_q8_0 *x = src;
    for (int64_t i = 0; i < n / QT_QK8_0; i++) {
        const float d = qt_f16_to_f32(x[i].d);
        for (int j = 0; j < QT_QK8_0; j++)
            dst[i * QT_QK8_0 + j] = (float)x[i].qs[j] * d;
    }
}

/* s uses the float d, not the f16-rounded one, exactly as ggml's
 * quantize_row_q8_1_ref: s = f16(sum(q) * d). */
void qt_from_float_q8_1(const float *src, void *dst, int64_t n) {
    qt_block_q8_1 *y = dst;
    for (int64_t i = 0; i < n / QT_QK8_1; i++) {
        const float d = quantize_block_q8(src + i * QT_QK8_1, y[i].qs, QT_QK8_1);
        int sum = 0;
        for (int j = 0; j < QT_QK8_1; j++)
            sum += y[i].qs[j];
        y[i].d = qt_f32_to_f16(d);
        y[i].s = qt_f32_to_f16((float)sum * d);
    }
}

/* ggml has no dequantizer for Q8_1 (it is only an activation type); this
 * one ignores s and exists so tests can compare dots with dequantized data. */
void qt_to_float_q8_1(const void *src, float *dst, int64_t n) {
    const qt_block_q8_1 *x = src;
    for (int64_t i = 0; i < n / QT_QK8_1; i++) {
        const float d = qt_f16_to_f32(x[i].d);
        for (int j = 0; j < QT_QK8_1; j++)
            dst[i * QT_QK8_1 + j] = (float)x[i].qs[j] * d;
    }
}

/* ---- dot products: llama.cpp's x86 summation order --------------------
 * The models we run are chaotic at the level of rounding: one ulp in an
 * attention score flips roundings of the next layer's 8-bit activations
 * and moves final logits by a tenth.  Token-for-token agreement with
 * llama.cpp therefore needs its exact float order, which on x86 is: per
 * block, 8 integer lanes each summing 4 consecutive products, converted to
 * float and accumulated with FMA as acc[k] = d * lane[k] + acc[k]
 * (d = dx * dy rounded once); at the end the lanes are summed pairwise,
 * ((0+4)+(2+6)) + ((1+5)+(3+7)); the min term of the _1 types is a
 * separate scalar FMA chain added last.  The SIMD kernels do the same
 * operations, so every ISA level gives identical bits. */

float qt_hsum8(const float a[8])
{
    const float t0 = a[0] + a[4], t1 = a[1] + a[5], t2 = a[2] + a[6], t3 = a[3] + a[7];
    const float u0 = t0 + t2, u1 = t1 + t3;
    return u0 + u1;
}

static void lanes_acc(float acc[8], float d, const int8_t xq[32], const int8_t yq[32])
{
    for (int k = 0; k < 8; k++) {
        int32_t l = 0;
        for (int j = 4 * k; j < 4 * k + 4; j++)
            l += (int32_t)xq[j] * yq[j];
        acc[k] = fmaf(d, (float)l, acc[k]);
    }
}

/* Unpacks 32 weights of a 4/5-bit block into signed bytes in element order. */
static void unpack_nibbles(const uint8_t qs[16], int off, uint32_t qh, int hbit, int8_t out[32])
{
    for (int j = 0; j < 16; j++) {
        int lo = qs[j] & 0x0f, hi = qs[j] >> 4;
        if (hbit) {
            lo |= (int)((qh >> j) & 1u) << 4;
            hi |= (int)((qh >> (j + 16)) & 1u) << 4;
        }
        out[j] = (int8_t)(lo - off);
        out[j + 16] = (int8_t)(hi - off);
    }
}

void qt_vec_dot_q4_0_q8_0(int n, float *s, const void *vx, const void *vy) {
    const qt_block_q4_0 *x = vx;
    const qt_block_q8_0 *y = vy;
    float acc[8] = {0};
    int8_t w[32];
    for (int i = 0; i < n / QT_QK8_0; i++) {
        unpack_nibbles(x[i].qs, 8, 0, 0, w);
        lanes_acc(acc, qt_f16_to_f32(x[i].d) * qt_f16_to_f32(y[i].d), w, y[i].qs);
    }
    *s = qt_hsum8(acc);
}

void qt_vec_dot_q4_1_q8_1(int n, float *s, const void *vx, const void *vy) {
    const qt_block_q4_1 *x = vx;
    const qt_block_q8_1 *y = vy;
    float acc[8] = {0}, summs = 0.0f;
    int8_t w[32];
    for (int i = 0; i < n / QT_QK8_1; i++) {
        summs = fmaf(qt_f16_to_f32(x[i].m), qt_f16_to_f32(y[i].s), summs);
        unpack_nibbles(x[i].qs, 0, 0, 0, w);
        lanes_acc(acc, qt_f16_to_f32(x[i].d) * qt_f16_to_f32(y[i].d), w, y[i].qs);
    }
    *s = qt_hsum8(acc) + summs;
}

void qt_vec_dot_q5_0_q8_0(int n, float *s, const void *vx, const void *vy) {
    const qt_block_q5_0 *x = vx;
    const qt_block_q8_0 *y = vy;
    float acc[8] = {0};
    int8_t w[32];
    for (int i = 0; i < n / QT_QK8_0; i++) {
        unpack_nibbles(x[i].qs, 16, load_qh(x[i].qh), 1, w);
        lanes_acc(acc, qt_f16_to_f32(x[i].d) * qt_f16_to_f32(y[i].d), w, y[i].qs);
    }
    *s = qt_hsum8(acc);
}

void qt_vec_dot_q5_1_q8_1(int n, float *s, const void *vx, const void *vy) {
    const qt_block_q5_1 *x = vx;
    const qt_block_q8_1 *y = vy;
    float acc[8] = {0}, summs = 0.0f;
    int8_t w[32];
    for (int i = 0; i < n / QT_QK8_1; i++) {
        summs = fmaf(qt_f16_to_f32(x[i].m), qt_f16_to_f32(y[i].s), summs);
        unpack_nibbles(x[i].qs, 0, load_qh(x[i].qh), 1, w);
        lanes_acc(acc, qt_f16_to_f32(x[i].d) * qt_f16_to_f32(y[i].d), w, y[i].qs);
    }
    *s = qt_hsum8(acc) + summs;
}

void qt_vec_dot_q8_0_q8_0(int n, float *s, const void *vx, const void *vy) {
    const qt_block_q8_0 *x = vx;
    const qt_block_q8_0 *y = vy;
    float acc[8] = {0};
    for (int i = 0; i < n / QT_QK8_0; i++)
        lanes_acc(acc, qt_f16_to_f32(x[i].d) * qt_f16_to_f32(y[i].d), x[i].qs, y[i].qs);
    *s = qt_hsum8(acc);
}

/* ---- activation quantizers: llama.cpp's x86 rounding ---------------------
 * Weights are quantized like ggml's reference (qt_from_float_q8_0), but the
 * activations llama.cpp feeds its dot products come from its SIMD
 * quantizer, which scales by 127/amax (not 1/d) and rounds half to even. */
static float quantize_act_block(const float *x, int8_t *qs) {
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) {
        const float a = fabsf(x[j]);
        amax = amax > a ? amax : a;
    }
    const float d = amax / 127.f;
    const float id = amax != 0.0f ? 127.f / amax : 0.0f;
    for (int j = 0; j < 32; j++) {
        float v = nearbyintf(x[j] * id);
        v = v > 127.f ? 127.f : v < -128.f ? -128.f : v; /* NaN-free inputs never clip */
        /* NaN (garbage activations from a hostile file) becomes -128, as the
         * SIMD kernels' convert-and-saturate gives; the cast would be UB */
        qs[j] = v == v ? (int8_t)v : -128;
    }
    return d;
}

void qt_quantize_act_q8_0(const float *src, void *dst, int64_t n) {
    qt_block_q8_0 *y = dst;
    for (int64_t i = 0; i < n / QT_QK8_0; i++)
        y[i].d = qt_f32_to_f16(quantize_act_block(src + i * QT_QK8_0, y[i].qs));
}

void qt_quantize_act_q8_1(const float *src, void *dst, int64_t n) {
    qt_block_q8_1 *y = dst;
    for (int64_t i = 0; i < n / QT_QK8_1; i++) {
        const float d = quantize_act_block(src + i * QT_QK8_1, y[i].qs);
        int sum = 0;
        for (int j = 0; j < QT_QK8_1; j++) sum += y[i].qs[j];
        y[i].d = qt_f32_to_f16(d);
        y[i].s = qt_f32_to_f16(d * (float)sum);
    }
}
