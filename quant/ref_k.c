/* ref_k.c - scalar reference for the K-quants (Q2_K..Q6_K) and Q8_K.
 *
 * Quantizers and dequantizers mirror ggml's reference C (ggml-quants.c,
 * quantize_row_q*_K_ref and dequantize_row_q*_K) operation by operation in
 * float.  llama.cpp compiles that file for baseline x86-64, without FMA, and
 * this one is built with -std=c11, which turns contraction off, so the same
 * expressions round the same way: `qlm quantize` writes llama-quantize's
 * bytes (without an importance matrix).  Operand order inside expressions is
 * kept as ggml writes it ((w*x)*l is not w*(x*l) in float), and so are its
 * integer truncations (a uint8_t that a negative scale wraps, for one).
 *
 * The dot products reproduce ggml-cpu's AVX2 kernels (arch/x86/quants.c),
 * which is what llama.cpp runs on every AVX2 or AVX-512 machine: the K-quant
 * dots have no AVX-512 branch, and the compiled library keeps the intrinsics'
 * order (checked in its disassembly).  Each super-block yields 8 exact int32
 * lanes; lane k holds the products of elements 4k..4k+3 of every 32-element
 * chunk of the block, times their sub-block scales.  The lanes are converted
 * to float and accumulated with FMA by d = dy * dx; the min terms have their
 * own lanes or chains (see each function), which is where the types differ.
 * Every integer sum is exact for every byte value, so only the float
 * operations, done here in the kernels' order, decide the result. */
#include <math.h>
#include <string.h>

#include "blocks.h"
#include "fp16.h"
#include "ref.h"

#define QK QT_QK_K

/* ggml's quantizers give up on a group whose largest magnitude is below this. */
#define GROUP_MAX_EPS 1e-15f

/* ggml's nearest_int: adding 1.5 * 2^23 leaves the integer, rounded half to
 * even, in the low mantissa bits.  Done with the same bits rather than
 * rintf so that out-of-range inputs (|v| >= 2^22, NaN), which ggml does not
 * guard against, still give ggml's result. */
static inline int nearest_int(float v) {
    const float t = v + 12582912.f;
    return (int)(qt_f32_bits(t) & 0x007fffffu) - 0x00400000;
}

static inline int clampi(int v, int lo, int hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

/* The 6-bit scale and min of sub-block j of a Q4_K/Q5_K block: the low six
 * bits of bytes 0-7 for j < 4, else a nibble of bytes 8-11 plus the top two
 * bits of bytes 0-7. */
static inline void scale_min_k4(int j, const uint8_t *q, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* The 16 6-bit scales of a Q3_K block, unbiased (-32..31): low nibbles
 * in bytes 0-7 (two per byte), high bit pairs in bytes 8-11. */
static void q3_k_scales(const uint8_t s[12], int out[16]) {
    for (int j = 0; j < 16; j++) {
        const int lo = j < 8 ? s[j] & 0x0f : s[j - 8] >> 4;
        const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
        out[j] = (lo | hi << 4) - 32;
    }
}

/* ---- scale search: ggml's make_*_quants ------------------------------- */

/* Fits x ~ scale * L - the_min with L in 0..nmax, minimising weighted
 * squared (or absolute, use_mad) error over nstep + 1 trial scales. */
static float make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                              float *the_min, uint8_t *Laux, float rmin, float rdelta, int nstep,
                              int use_mad) {
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min)
            min = x[i];
        if (x[i] > max)
            max = x[i];
        const float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0)
        min = 0;
    if (max == min) {
        for (int i = 0; i < n; i++)
            L[i] = 0;
        *the_min = -min;
        return 0.f;
    }
    float iscale = (float)nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; i++) {
        const int l = nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)clampi(l, 0, nmax);
        float diff = scale * L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        best_error += weights[i] * diff;
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            const int l = clampi(nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = (uint8_t)l;
            const float w = weights[i];
            sum_l += w * l;
            sum_l2 += w * l * l;
            sum_xl += w * l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; i++) {
                float diff = this_scale * Laux[i] + this_min - x[i];
                diff = use_mad ? fabsf(diff) : diff * diff;
                cur_error += weights[i] * diff;
            }
            if (cur_error < best_error) {
                memcpy(L, Laux, (size_t)n);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

/* Symmetric fit x ~ scale * (L - nmax), L in 0..2*nmax-1, weights x^2,
 * refined by moving one quant at a time (ggml's make_q3_quants, do_rmse). */
static float make_q3_quants(int n, int nmax, const float *x, int8_t *L) {
    const float max = qt_signed_absmax(x, n);
    if (fabsf(max) < GROUP_MAX_EPS) {
        for (int i = 0; i < n; i++)
            L[i] = 0;
        return 0.f;
    }
    const float iscale = (float)-nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        const int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)l;
        const float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    for (int itry = 0; itry < 5; itry++) {
        int n_changed = 0;
        for (int i = 0; i < n; i++) {
            const float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * L[i];
            if (slx > 0) {
                float sl2 = suml2 - w * L[i] * L[i];
                const int new_l = clampi(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (new_l != L[i]) {
                    slx += w * x[i] * new_l;
                    sl2 += w * new_l * new_l;
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (int8_t)new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        n_changed++;
                    }
                }
            }
        }
        if (!n_changed)
            break;
    }
    for (int i = 0; i < n; i++)
        L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* Symmetric fit with weights x^2 over 19 trial scales around nmax / max
 * (ggml's make_qx_quants with rmse_type 1 and no importance weights). */
static float make_qx_quants(int n, int nmax, const float *x, int8_t *L) {
    const float max = qt_signed_absmax(x, n);
    if (fabsf(max) < GROUP_MAX_EPS) {
        for (int i = 0; i < n; i++)
            L[i] = 0;
        return 0.f;
    }
    float iscale = (float)-nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        const int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0)
            continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; i++) {
            const int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
            const float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++)
                L[i] = (int8_t)(nmax + clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Packs 2-bit quants L[0..255] (values 0..3): byte l of each 32-byte group
 * holds elements l, l+32, l+64, l+96 of its 128, lowest bits first. */
static void pack_2bit(const uint8_t *L, uint8_t qs[QK / 4]) {
    for (int j = 0; j < QK; j += 128)
        for (int l = 0; l < 32; l++)
            qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

/* ---- Q2_K: x = d * sc * q - dmin * m, 16 sub-blocks of 16 -------------- */

void qt_from_float_q2_K(const float *src, void *dst, int64_t n) {
    qt_block_q2_K *y = dst;
    const float q4scale = 15.f;
    for (int64_t i = 0; i < n / QK; i++) {
        const float *x = src + i * QK;
        uint8_t L[QK], Laux[16];
        float weights[16], mins[QK / 16], scales[QK / 16];
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < QK / 16; j++) {
            for (int l = 0; l < 16; l++)
                weights[l] = fabsf(x[16 * j + l]);
            scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, 1);
            if (scales[j] > max_scale)
                max_scale = scales[j];
            if (mins[j] > max_min)
                max_min = mins[j];
        }
        if (max_scale > 0) {
            const float iscale = q4scale / max_scale;
            for (int j = 0; j < QK / 16; j++)
                y[i].scales[j] = (uint8_t)nearest_int(iscale * scales[j]);
            y[i].d = qt_f32_to_f16(max_scale / q4scale);
        } else {
            memset(y[i].scales, 0, sizeof y[i].scales);
            y[i].d = qt_f32_to_f16(0.f);
        }
        if (max_min > 0) {
            const float iscale = q4scale / max_min;
            for (int j = 0; j < QK / 16; j++)
                y[i].scales[j] |= (uint8_t)((unsigned)nearest_int(iscale * mins[j]) << 4);
            y[i].dmin = qt_f32_to_f16(max_min / q4scale);
        } else {
            y[i].dmin = qt_f32_to_f16(0.f);
        }
        /* Requantize against the rounded scales; a sub-block whose scale
         * rounded to 0 keeps make_qkx2_quants' quants, as in ggml. */
        for (int j = 0; j < QK / 16; j++) {
            const float d = qt_f16_to_f32(y[i].d) * (y[i].scales[j] & 0xf);
            if (!d)
                continue;
            const float dm = qt_f16_to_f32(y[i].dmin) * (y[i].scales[j] >> 4);
            for (int ii = 0; ii < 16; ii++)
                L[16 * j + ii] = (uint8_t)clampi(nearest_int((x[16 * j + ii] + dm) / d), 0, 3);
        }
        pack_2bit(L, y[i].qs);
    }
}

void qt_to_float_q2_K(const void *src, float *dst, int64_t n) {
    const qt_block_q2_K *x = src;
    for (int64_t i = 0; i < n / QK; i++) {
        const float d = qt_f16_to_f32(x[i].d);
        const float dmin = qt_f16_to_f32(x[i].dmin);
        float *y = dst + i * QK;
        for (int e = 0; e < QK; e++) {
            const int sub = e / 16, shift = 2 * ((e % 128) / 32);
            const uint8_t sc = x[i].scales[sub];
            const float dl = d * (sc & 0xf), ml = dmin * (sc >> 4);
            const int q = (x[i].qs[32 * (e / 128) + e % 32] >> shift) & 3;
            y[e] = dl * q - ml;
        }
    }
}

/* ---- Q3_K: x = d * sc * (q - 4 * !h), 16 sub-blocks of 16 ------------- */

void qt_from_float_q3_K(const float *src, void *dst, int64_t n) {
    qt_block_q3_K *y = dst;
    for (int64_t i = 0; i < n / QK; i++) {
        const float *x = src + i * QK;
        int8_t L[QK];
        float scales[QK / 16];
        for (int j = 0; j < QK / 16; j++) scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
        const float max_scale = qt_signed_absmax(scales, QK / 16);
        memset(y[i].scales, 0, sizeof y[i].scales);
        if (max_scale) {
            const float iscale = -32.f / max_scale;
            for (int j = 0; j < QK / 16; j++) {
                /* ggml stores nearest_int in an int8_t before clamping. */
                int l = (int8_t)nearest_int(iscale * scales[j]);
                l = clampi(l, -32, 31) + 32;
                if (j < 8)
                    y[i].scales[j] = (uint8_t)(l & 0xf);
                else
                    y[i].scales[j - 8] |= (uint8_t)((l & 0xf) << 4);
                y[i].scales[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
            }
            y[i].d = qt_f32_to_f16(1 / iscale);
        } else {
            y[i].d = qt_f32_to_f16(0.f);
        }
        int sc[16];
        q3_k_scales(y[i].scales, sc);
        for (int j = 0; j < QK / 16; j++) {
            const float d = qt_f16_to_f32(y[i].d) * sc[j];
            if (!d)
                continue;
            for (int ii = 0; ii < 16; ii++)
                L[16 * j + ii] = (int8_t)(clampi(nearest_int(x[16 * j + ii] / d), -4, 3) + 4);
        }
        /* The high bit of element j goes to bit j / 32 of hmask[j % 32], set
         * when the quant is >= 0 (ggml subtracts 4 where it is clear). */
        uint8_t Lu[QK];
        memset(y[i].hmask, 0, sizeof y[i].hmask);
        for (int j = 0; j < QK; j++) {
            int l = L[j];
            if (l > 3) {
                y[i].hmask[j % 32] |= (uint8_t)(1u << (j / 32));
                l -= 4;
            }
            Lu[j] = (uint8_t)l;
        }
        pack_2bit(Lu, y[i].qs);
    }
}

void qt_to_float_q3_K(const void *src, float *dst, int64_t n) {
    const qt_block_q3_K *x = src;
    for (int64_t i = 0; i < n / QK; i++) {
        const float d_all = qt_f16_to_f32(x[i].d);
        int sc[16];
        q3_k_scales(x[i].scales, sc);
        float *y = dst + i * QK;
        for (int e = 0; e < QK; e++) {
            const int shift = 2 * ((e % 128) / 32);
            const float dl = d_all * sc[e / 16];
            const int ql = (x[i].qs[32 * (e / 128) + e % 32] >> shift) & 3;
            const int h = (x[i].hmask[e % 32] >> (e / 32)) & 1;
            y[e] = dl * (ql - (h ? 0 : 4));
        }
    }
}

/* ---- Q4_K and Q5_K: x = d * sc * q - dmin * m, 8 sub-blocks of 32 ------ */

/* The shared part of both quantizers: per-sub-block fits, 6-bit scales and
 * mins, and the final quants L (0..nmax) against the rounded scales. */
static void quantize_k_scales_mins(const float *x, int nmax, float rmin, int nstep, uint8_t scales_out[12],
                                   uint16_t *d_out, uint16_t *dmin_out, uint8_t L[QK]) {
    uint8_t Laux[32];
    float weights[32], mins[QK / 32], scales[QK / 32];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < QK / 32; j++) {
        float sum_x2 = 0;
        for (int l = 0; l < 32; l++)
            sum_x2 += x[32 * j + l] * x[32 * j + l];
        const float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; l++)
            weights[l] = av_x + fabsf(x[32 * j + l]);
        scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep, 0);
        if (scales[j] > max_scale)
            max_scale = scales[j];
        if (mins[j] > max_min)
            max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < QK / 32; j++) {
        /* uint8_t first, as ggml does: a negative fit wraps and clamps to 63. */
        uint8_t ls = (uint8_t)nearest_int(inv_scale * scales[j]);
        uint8_t lm = (uint8_t)nearest_int(inv_min * mins[j]);
        ls = ls < 63 ? ls : 63;
        lm = lm < 63 ? lm : 63;
        if (j < 4) {
            scales_out[j] = ls;
            scales_out[j + 4] = lm;
        } else {
            scales_out[j + 4] = (uint8_t)((ls & 0xf) | ((lm & 0xf) << 4));
            scales_out[j - 4] |= (uint8_t)((ls >> 4) << 6);
            scales_out[j] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    *d_out = qt_f32_to_f16(max_scale / 63.f);
    *dmin_out = qt_f32_to_f16(max_min / 63.f);
    for (int j = 0; j < QK / 32; j++) {
        uint8_t sc, m;
        scale_min_k4(j, scales_out, &sc, &m);
        const float d = qt_f16_to_f32(*d_out) * sc;
        if (!d)
            continue;
        const float dm = qt_f16_to_f32(*dmin_out) * m;
        for (int ii = 0; ii < 32; ii++)
            L[32 * j + ii] = (uint8_t)clampi(nearest_int((x[32 * j + ii] + dm) / d), 0, nmax);
    }
}

void qt_from_float_q4_K(const float *src, void *dst, int64_t n) {
    qt_block_q4_K *y = dst;
    for (int64_t i = 0; i < n / QK; i++) {
        uint8_t L[QK];
        memset(y[i].scales, 0, sizeof y[i].scales);
        quantize_k_scales_mins(src + i * QK, 15, -1.f, 20, y[i].scales, &y[i].d, &y[i].dmin, L);
        /* Byte l of each 32-byte group: element l low, element l + 32 high. */
        for (int j = 0; j < QK; j += 64)
            for (int l = 0; l < 32; l++)
                y[i].qs[j / 2 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
    }
}

void qt_to_float_q4_K(const void *src, float *dst, int64_t n) {
    const qt_block_q4_K *x = src;
    for (int64_t i = 0; i < n / QK; i++) {
        const float d = qt_f16_to_f32(x[i].d);
        const float dmin = qt_f16_to_f32(x[i].dmin);
        float *y = dst + i * QK;
        for (int j = 0; j < QK / 32; j++) {
            uint8_t sc, m;
            scale_min_k4(j, x[i].scales, &sc, &m);
            const float dl = d * sc, ml = dmin * m;
            const uint8_t *q = x[i].qs + 32 * (j / 2);
            const int shift = 4 * (j % 2);
            for (int l = 0; l < 32; l++)
                y[32 * j + l] = dl * ((q[l] >> shift) & 0xf) - ml;
        }
    }
}

void qt_from_float_q5_K(const float *src, void *dst, int64_t n) {
    qt_block_q5_K *y = dst;
    for (int64_t i = 0; i < n / QK; i++) {
        uint8_t L[QK];
        memset(y[i].scales, 0, sizeof y[i].scales);
        quantize_k_scales_mins(src + i * QK, 31, -0.5f, 15, y[i].scales, &y[i].d, &y[i].dmin, L);
        /* As Q4_K, plus the 5th bit of element e in bit e / 32 of qh[e % 32]. */
        memset(y[i].qh, 0, sizeof y[i].qh);
        for (int j = 0; j < QK; j += 64) {
            for (int l = 0; l < 32; l++) {
                int l1 = L[j + l], l2 = L[j + l + 32];
                if (l1 > 15) {
                    l1 -= 16;
                    y[i].qh[l] |= (uint8_t)(1u << (j / 32));
                }
                if (l2 > 15) {
                    l2 -= 16;
                    y[i].qh[l] |= (uint8_t)(2u << (j / 32));
                }
                y[i].qs[j / 2 + l] = (uint8_t)(l1 | (l2 << 4));
            }
        }
    }
}

void qt_to_float_q5_K(const void *src, float *dst, int64_t n) {
    const qt_block_q5_K *x = src;
    for (int64_t i = 0; i < n / QK; i++) {
        const float d = qt_f16_to_f32(x[i].d);
        const float dmin = qt_f16_to_f32(x[i].dmin);
        float *y = dst + i * QK;
        for (int j = 0; j < QK / 32; j++) {
            uint8_t sc, m;
            scale_min_k4(j, x[i].scales, &sc, &m);
            const float dl = d * sc, ml = dmin * m;
            const uint8_t *q = x[i].qs + 32 * (j / 2);
            const int shift = 4 * (j % 2);
            for (int l = 0; l < 32; l++) {
                const int h = (x[i].qh[l] >> j) & 1;
                y[32 * j + l] = dl * (((q[l] >> shift) & 0xf) + 16 * h) - ml;
            }
        }
    }
}

/* ---- Q6_K: x = d * sc * (q - 32), 16 sub-blocks of 16, int8 scales ---- */

void qt_from_float_q6_K(const float *src, void *dst, int64_t n) {
    qt_block_q6_K *y = dst;
    for (int64_t i = 0; i < n / QK; i++) {
        const float *x = src + i * QK;
        int8_t L[QK];
        float scales[QK / 16];
        float max_scale = 0, max_abs_scale = 0;
        for (int ib = 0; ib < QK / 16; ib++) {
            scales[ib] = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
            const float abs_scale = fabsf(scales[ib]);
            if (abs_scale > max_abs_scale) {
                max_abs_scale = abs_scale;
                max_scale = scales[ib];
            }
        }
        if (max_abs_scale < GROUP_MAX_EPS) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const float iscale = -128.f / max_scale;
        y[i].d = qt_f32_to_f16(1 / iscale);
        for (int ib = 0; ib < QK / 16; ib++) {
            const int l = nearest_int(iscale * scales[ib]);
            y[i].scales[ib] = (int8_t)(l < 127 ? l : 127);
        }
        for (int j = 0; j < QK / 16; j++) {
            const float d = qt_f16_to_f32(y[i].d) * y[i].scales[j];
            if (!d)
                continue;
            for (int ii = 0; ii < 16; ii++)
                L[16 * j + ii] = (int8_t)(clampi(nearest_int(x[16 * j + ii] / d), -32, 31) + 32);
        }
        /* Per 128 elements: ql bytes 0-31 hold elements 0-31 (low nibble)
         * and 64-95 (high), bytes 32-63 hold 32-63 and 96-127; qh byte l
         * holds the top two bits of elements l, l+32, l+64, l+96. */
        for (int j = 0; j < QK; j += 128) {
            uint8_t *ql = y[i].ql + j / 2, *qh = y[i].qh + j / 4;
            for (int l = 0; l < 32; l++) {
                const int q1 = L[j + l], q2 = L[j + l + 32], q3 = L[j + l + 64], q4 = L[j + l + 96];
                ql[l] = (uint8_t)((q1 & 0xf) | ((q3 & 0xf) << 4));
                ql[l + 32] = (uint8_t)((q2 & 0xf) | ((q4 & 0xf) << 4));
                qh[l] = (uint8_t)((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
            }
        }
    }
}

/* The unsigned 6-bit quant (0..63) of element e of a Q6_K block. */
static inline int q6_k_quant(const qt_block_q6_K *b, int e) {
    const int h = e / 128, r = e % 128, l = r % 32, part = r / 32;
    const uint8_t lo = b->ql[64 * h + l + 32 * (part & 1)];
    const int nib = part < 2 ? lo & 0xf : lo >> 4;
    return nib | ((b->qh[32 * h + l] >> (2 * part)) & 3) << 4;
}

void qt_to_float_q6_K(const void *src, float *dst, int64_t n) {
    const qt_block_q6_K *x = src;
    for (int64_t i = 0; i < n / QK; i++) {
        const float d = qt_f16_to_f32(x[i].d);
        float *y = dst + i * QK;
        for (int e = 0; e < QK; e++)
            y[e] = d * x[i].scales[e / 16] * (q6_k_quant(&x[i], e) - 32);
    }
}

/* ---- Q8_K: x = d * q, float d, with sums of 16 -------------------------- */

/* ggml's quantize_row_q8_K_ref, which is also what llama.cpp's x86 build
 * quantizes activations with (its quantize_row_q8_K only forwards to it):
 * scale -127 / max by the signed value of largest magnitude (the first of
 * equals), nearest_int (half to even), float d = 1 / iscale.  A block of
 * zeros gets d = 0 and zero quants; ggml leaves its bsums unwritten there,
 * they are zeroed here. */
void qt_from_float_q8_K(const float *src, void *dst, int64_t n) {
    qt_block_q8_K *y = dst;
    for (int64_t i = 0; i < n / QK; i++) {
        const float *x = src + i * QK;
        const float max = qt_signed_absmax(x, QK);
        if (max == 0) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const float iscale = -127.f / max;
        for (int j = 0; j < QK; j++) {
            const int v = nearest_int(iscale * x[j]);
            y[i].qs[j] = (int8_t)(v < 127 ? v : 127);
        }
        for (int j = 0; j < QK / 16; j++) {
            int sum = 0;
            for (int ii = 0; ii < 16; ii++)
                sum += y[i].qs[16 * j + ii];
            y[i].bsums[j] = (int16_t)sum;
        }
        y[i].d = 1 / iscale;
    }
}

void qt_quantize_act_q8_K(const float *src, void *dst, int64_t n) {
    qt_from_float_q8_K(src, dst, n);
}

void qt_to_float_q8_K(const void *src, float *dst, int64_t n) {
    const qt_block_q8_K *x = src;
    for (int64_t i = 0; i < n / QK; i++)
        for (int j = 0; j < QK; j++)
            dst[i * QK + j] = x[i].d * x[i].qs[j];
}

/* ---- dot products with Q8_K, in ggml-cpu's AVX2 order ------------------ */

/* acc[k] = fma(d, lane[k], acc[k]): one block's lanes into the running sums. */
static inline void fma_lanes(float acc[8], float d, const int32_t lane[8]) {
    for (int k = 0; k < 8; k++)
        acc[k] = fmaf(d, (float)lane[k], acc[k]);
}

/* Sums of pairs of y's 16-element sums, as vphaddw forms them: in int16, so
 * inconsistent bsums wrap exactly as there (consistent ones never do). */
static inline int bsum32(const qt_block_q8_K *y, int j) {
    return (int16_t)(y->bsums[2 * j] + y->bsums[2 * j + 1]);
}

/* Lanes of Σ sc(e) * q(e) * y(e) for 16-element sub-blocks with scales
 * sc[16] and quants q[256] (any sign): lane k takes elements 4k..4k+3 of
 * each 32-element chunk. */
static void lanes_sub16(int32_t lane[8], const int sc[16], const int q[QK], const int8_t *yq) {
    for (int k = 0; k < 8; k++)
        lane[k] = 0;
    for (int e = 0; e < QK; e++)
        lane[(e % 32) / 4] += sc[e / 16] * q[e] * yq[e];
}

/* The same for 32-element sub-blocks with scales sc[8]. */
static void lanes_sub32(int32_t lane[8], const uint8_t sc[8], const int q[QK], const int8_t *yq) {
    for (int k = 0; k < 8; k++)
        lane[k] = 0;
    for (int e = 0; e < QK; e++)
        lane[(e % 32) / 4] += sc[e / 32] * q[e] * yq[e];
}

/* Per block: first acc = fma(-dy·dmin, lane(Σ m·bsum), acc), lane k taking
 * sub-blocks 2k and 2k+1, then acc = fma(dy·d, lanes of Σ sc·q·y, acc)
 * with unsigned q. */
void qt_vec_dot_q2_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const qt_block_q2_K *x = vx;
    const qt_block_q8_K *y = vy;
    float acc[8] = {0};
    for (int i = 0; i < n / QK; i++) {
        const float d = y[i].d * qt_f16_to_f32(x[i].d);
        const float dmin = -y[i].d * qt_f16_to_f32(x[i].dmin);
        int32_t lane[8];
        int sc[16], q[QK];
        for (int k = 0; k < 8; k++)
            lane[k] = (x[i].scales[2 * k] >> 4) * y[i].bsums[2 * k] +
                      (x[i].scales[2 * k + 1] >> 4) * y[i].bsums[2 * k + 1];
        fma_lanes(acc, dmin, lane);
        for (int j = 0; j < 16; j++)
            sc[j] = x[i].scales[j] & 0xf;
        for (int e = 0; e < QK; e++)
            q[e] = (x[i].qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
        lanes_sub16(lane, sc, q, y[i].qs);
        fma_lanes(acc, d, lane);
    }
    *s = qt_hsum8(acc);
}

/* Signed q (-4..3) per element; no min term. */
void qt_vec_dot_q3_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const qt_block_q3_K *x = vx;
    const qt_block_q8_K *y = vy;
    float acc[8] = {0};
    for (int i = 0; i < n / QK; i++) {
        const float d = y[i].d * qt_f16_to_f32(x[i].d);
        int32_t lane[8];
        int sc[16], q[QK];
        q3_k_scales(x[i].scales, sc);
        for (int e = 0; e < QK; e++) {
            const int ql = (x[i].qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
            q[e] = ql - (((x[i].hmask[e % 32] >> (e / 32)) & 1) ? 0 : 4);
        }
        lanes_sub16(lane, sc, q, y[i].qs);
        fma_lanes(acc, d, lane);
    }
    *s = qt_hsum8(acc);
}

/* The min term is a 4-lane FMA chain by -dy·dmin, lane k taking sub-blocks
 * 2k and 2k+1, summed (0+2)+(1+3) and added after the 8-lane sum. */
void qt_vec_dot_q4_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const qt_block_q4_K *x = vx;
    const qt_block_q8_K *y = vy;
    float acc[8] = {0}, acc_m[4] = {0};
    for (int i = 0; i < n / QK; i++) {
        const float d = y[i].d * qt_f16_to_f32(x[i].d);
        const float dmin = -y[i].d * qt_f16_to_f32(x[i].dmin);
        uint8_t sc[8], m[8];
        for (int j = 0; j < 8; j++)
            scale_min_k4(j, x[i].scales, &sc[j], &m[j]);
        for (int k = 0; k < 4; k++) {
            const int32_t p = m[2 * k] * bsum32(&y[i], 2 * k) + m[2 * k + 1] * bsum32(&y[i], 2 * k + 1);
            acc_m[k] = fmaf(dmin, (float)p, acc_m[k]);
        }
        int q[QK];
        for (int e = 0; e < QK; e++)
            q[e] = (x[i].qs[32 * (e / 64) + e % 32] >> (4 * ((e / 32) % 2))) & 0xf;
        int32_t lane[8];
        lanes_sub32(lane, sc, q, y[i].qs);
        fma_lanes(acc, d, lane);
    }
    *s = qt_hsum8(acc) + ((acc_m[0] + acc_m[2]) + (acc_m[1] + acc_m[3]));
}

/* The min term is one scalar FMA chain, summs = fma(-dy·dmin, Σ m·bsum,
 * summs), added after the 8-lane sum. */
void qt_vec_dot_q5_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const qt_block_q5_K *x = vx;
    const qt_block_q8_K *y = vy;
    float acc[8] = {0}, summs = 0.f;
    for (int i = 0; i < n / QK; i++) {
        const float d = y[i].d * qt_f16_to_f32(x[i].d);
        const float dmin = -y[i].d * qt_f16_to_f32(x[i].dmin);
        uint8_t sc[8], m[8];
        for (int j = 0; j < 8; j++)
            scale_min_k4(j, x[i].scales, &sc[j], &m[j]);
        int32_t msum = 0;
        for (int j = 0; j < 8; j++)
            msum += m[j] * bsum32(&y[i], j);
        summs = fmaf(dmin, (float)msum, summs);
        int q[QK];
        for (int e = 0; e < QK; e++)
            q[e] = ((x[i].qs[32 * (e / 64) + e % 32] >> (4 * ((e / 32) % 2))) & 0xf) |
                   ((x[i].qh[e % 32] >> (e / 32)) & 1) << 4;
        int32_t lane[8];
        lanes_sub32(lane, sc, q, y[i].qs);
        fma_lanes(acc, d, lane);
    }
    *s = qt_hsum8(acc) + summs;
}

/* Unsigned q (0..63) in the lanes, then the offset 32 comes off through
 * the bsums: lane k -= 32·(sc[2k]·bsum[2k] + sc[2k+1]·bsum[2k+1]).  That
 * lane is not the one the offset's elements went to, so the lanes differ
 * from those of signed q, and so would the float sum. */
void qt_vec_dot_q6_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const qt_block_q6_K *x = vx;
    const qt_block_q8_K *y = vy;
    float acc[8] = {0};
    for (int i = 0; i < n / QK; i++) {
        const float d = y[i].d * qt_f16_to_f32(x[i].d);
        int sc[16], q[QK];
        for (int j = 0; j < 16; j++)
            sc[j] = x[i].scales[j];
        for (int e = 0; e < QK; e++)
            q[e] = q6_k_quant(&x[i], e);
        int32_t lane[8];
        lanes_sub16(lane, sc, q, y[i].qs);
        for (int k = 0; k < 8; k++)
            lane[k] -= 32 * (sc[2 * k] * y[i].bsums[2 * k] + sc[2 * k + 1] * y[i].bsums[2 * k + 1]);
        fma_lanes(acc, d, lane);
    }
    *s = qt_hsum8(acc);
}
