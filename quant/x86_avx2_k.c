/* x86_avx2_k.c - AVX2 + FMA + F16C kernels for the K-quants.
 *
 * Compiled with -mavx2 -mfma -mf16c like x86_avx2.c, whose tables (and
 * x86_avx512.c's, for the types without a wider kernel) hand these out.
 *
 * Exactness: each dot product forms, block by block, the same 8 int32
 * lanes as quant/ref_k.c (lane k: elements 4k..4k+3 of every 32-element
 * chunk, times their sub-block scales), exactly: vpmaddubsw's int16 pair
 * sums cannot saturate here, as the unsigned operand is a quant of at most
 * 6 bits (|q·y + q·y| <= 63·128·2 < 2^15).  The float operations then are
 * the reference's, in its order, so results are bit-identical.  No VNNI
 * variants: every chunk's products must be scaled by vpmaddwd anyway, which
 * also sums them in pairs, so vpdpbusd would save nothing. */
#if defined(__x86_64__)

#include <float.h>
#include <immintrin.h>
#include <string.h>

#include "blocks.h"
#include "fp16.h"
#include "ref.h"
#include "x86_k.h"

#define INLINE static inline __attribute__((always_inline))
#define QT_X86_DPBUSD "%{vex%} vpdpbusd %2, %1, %0"
#include "x86_simd.h"
#define QK QT_QK_K
/* The chunk loops must be unrolled for their shuffle controls and shifts to
 * become constants; -O2 alone leaves them rolled. */
#define UNROLL _Pragma("GCC unroll 8")

/* ---- helpers ------------------------------------------------------------ */

INLINE __m128i load128(const void *p) {
    return _mm_loadu_si128((const __m128i *)p);
}

/* F16C widening is exact, subnormals included. */
INLINE float half(uint16_t h) {
    return _cvtsh_ss(h);
}

/* Σ q·y by pairs, in int16, for unsigned q below 64. */
INLINE __m256i pairs(__m256i q, const int8_t *y) {
    return _mm256_maddubs_epi16(q, load256(y));
}

/* For 16-element sub-blocks.  s holds the 8 int16 scales of one 128-element
 * half in both 128-bit lanes; chunk l (32 elements) takes sub-block 2l in
 * its low lane and 2l+1 in its high lane, and vpmaddwd then multiplies and
 * sums pairs into the int32 lanes. */
INLINE __m256i scale_sub16(__m256i p, __m256i s, int l) {
    const __m256i ctl = _mm256_setr_m128i(_mm_set1_epi16((short)(0x0100 + 0x0404 * l)),
                                          _mm_set1_epi16((short)(0x0302 + 0x0404 * l)));
    return _mm256_madd_epi16(_mm256_shuffle_epi8(s, ctl), p);
}

/* For 32-element sub-blocks: s holds 8 int16 scales in both lanes. */
INLINE __m256i scale_sub32(__m256i p, __m256i s, int j) {
    return _mm256_madd_epi16(_mm256_shuffle_epi8(s, _mm256_set1_epi16((short)(0x0100 + 0x0202 * j))), p);
}

/* The two halves (sub-blocks 0-7, 8-15) of 16 int16 scales, each in both
 * lanes.  (Loop counters never reach an intrinsic that wants an immediate:
 * an -O1 build need not unroll the loop to make them constant.) */
INLINE void half_scales(__m256i s16, __m256i out[2]) {
    out[0] = _mm256_permute2x128_si256(s16, s16, 0x00);
    out[1] = _mm256_permute2x128_si256(s16, s16, 0x11);
}

/* Q4_K/Q5_K's 6-bit scales (bytes 0-7) and mins (bytes 8-15), unpacked as
 * quant/ref_k.c's scale_min_k4 does one at a time. */
INLINE __m128i k4_scales_mins(const uint8_t s[12]) {
    uint32_t a[3];
    memcpy(a, s, sizeof a);
    const uint32_t sc_lo = a[0] & 0x3f3f3f3fu;
    const uint32_t sc_hi = (a[2] & 0x0f0f0f0fu) | ((a[0] >> 6) & 0x03030303u) << 4;
    const uint32_t m_lo = a[1] & 0x3f3f3f3fu;
    const uint32_t m_hi = ((a[2] >> 4) & 0x0f0f0f0fu) | ((a[1] >> 6) & 0x03030303u) << 4;
    return _mm_setr_epi32((int)sc_lo, (int)sc_hi, (int)m_lo, (int)m_hi);
}

/* Q3_K's 16 scales, unbiased (-32..31), as bytes: the low nibbles of
 * bytes 0-7 are scales 0-7, their high nibbles scales 8-15, and bits
 * 2g..2g+1 of byte 8 + b the top bits of scale 4g + b.  In vector
 * registers, not as four 32-bit words put together in a vector (the dot
 * product from cache on a Zen 2: 9.0 GB/s against 8.3). */
INLINE __m128i q3_k_scales(const uint8_t s[12]) {
    int32_t a2;
    memcpy(&a2, s + 8, sizeof a2);
    const __m128i v = _mm_loadl_epi64((const __m128i *)s), m4 = _mm_set1_epi8(0x0f);
    const __m128i lo = _mm_unpacklo_epi64(_mm_and_si128(v, m4), _mm_and_si128(_mm_srli_epi16(v, 4), m4));
    const __m128i hi = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(a2), _mm_setr_epi32(0, 2, 4, 6)),
                                     _mm_set1_epi8(3));
    return _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
}

/* Sums of 32 activations (pairs of bsums) in int16, as vphaddw forms them. */
INLINE __m128i bsums32(const qt_block_q8_K *y) {
    const __m256i b = load256(y->bsums);
    return _mm_hadd_epi16(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
}

/* ---- dot products ------------------------------------------------------- */

void qt_avx2_vec_dot_q2_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const qt_block_q2_K *x = vx;
    const qt_block_q8_K *y = vy;
    const __m256i m3 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / QK; i++) {
        prefetch_block(&x[i], sizeof x[i]);
        const float d = y[i].d * half(x[i].d);
        const float dmin = -(y[i].d * half(x[i].dmin));
        const __m128i sm = load128(x[i].scales);
        const __m256i m16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), _mm_set1_epi8(0x0f)));
        acc = fma_block(dmin, _mm256_madd_epi16(m16, load256(y[i].bsums)), acc);
        __m256i sh[2];
        half_scales(_mm256_cvtepu8_epi16(_mm_and_si128(sm, _mm_set1_epi8(0x0f))), sh);
        __m256i sumi = _mm256_setzero_si256();
        UNROLL for (int h = 0; h < 2; h++) {
            __m256i bits = load256(x[i].qs + 32 * h);
            const int8_t *yq = y[i].qs + 128 * h;
            UNROLL for (int l = 0; l < 4; l++) {
                const __m256i q = _mm256_and_si256(bits, m3);
                bits = _mm256_srli_epi16(bits, 2);
                sumi = _mm256_add_epi32(sumi, scale_sub16(pairs(q, yq + 32 * l), sh[h], l));
            }
        }
        acc = fma_block(d, sumi, acc);
    }
    *s = hsum_ps(acc);
}

/* q - 4·!h as (q·y) - (4·!h)·y, both products unsigned·signed. */
void qt_avx2_vec_dot_q3_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const qt_block_q3_K *x = vx;
    const qt_block_q8_K *y = vy;
    const __m256i m3 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / QK; i++) {
        prefetch_block(&x[i], sizeof x[i]);
        const float d = y[i].d * half(x[i].d);
        __m256i sh[2];
        half_scales(_mm256_cvtepi8_epi16(q3_k_scales(x[i].scales)), sh);
        __m256i hbits = load256(x[i].hmask);
        __m256i sumi = _mm256_setzero_si256();
        UNROLL for (int h = 0; h < 2; h++) {
            __m256i bits = load256(x[i].qs + 32 * h);
            const int8_t *yq = y[i].qs + 128 * h;
            UNROLL for (int l = 0; l < 4; l++) {
                const __m256i q = _mm256_and_si256(bits, m3);
                const __m256i no_h = _mm256_andnot_si256(hbits, one);
                bits = _mm256_srli_epi16(bits, 2);
                hbits = _mm256_srli_epi16(hbits, 1);
                const __m256i p =
                    _mm256_sub_epi16(pairs(q, yq + 32 * l), pairs(_mm256_slli_epi16(no_h, 2), yq + 32 * l));
                sumi = _mm256_add_epi32(sumi, scale_sub16(p, sh[h], l));
            }
        }
        acc = fma_block(d, sumi, acc);
    }
    *s = hsum_ps(acc);
}

void qt_avx2_vec_dot_q4_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const qt_block_q4_K *x = vx;
    const qt_block_q8_K *y = vy;
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256 acc = _mm256_setzero_ps();
    __m128 acc_m = _mm_setzero_ps();
    for (int i = 0; i < n / QK; i++) {
        prefetch_block(&x[i], sizeof x[i]);
        const float d = y[i].d * half(x[i].d);
        const float dmin = -(y[i].d * half(x[i].dmin));
        const __m256i sm16 = _mm256_cvtepu8_epi16(k4_scales_mins(x[i].scales));
        const __m128i prod = _mm_madd_epi16(_mm256_extracti128_si256(sm16, 1), bsums32(&y[i]));
        acc_m = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(prod), acc_m);
        const __m256i sc = _mm256_permute2x128_si256(sm16, sm16, 0x00);
        __m256i sumi = _mm256_setzero_si256();
        UNROLL for (int j = 0; j < 4; j++) {
            const __m256i q4 = load256(x[i].qs + 32 * j);
            const __m256i lo = _mm256_and_si256(q4, m4);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q4, 4), m4);
            const __m256i plo = scale_sub32(pairs(lo, y[i].qs + 64 * j), sc, 2 * j);
            const __m256i phi = scale_sub32(pairs(hi, y[i].qs + 64 * j + 32), sc, 2 * j + 1);
            sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(plo, phi));
        }
        acc = fma_block(d, sumi, acc);
    }
    __m128 m = _mm_add_ps(acc_m, _mm_movehl_ps(acc_m, acc_m));
    m = _mm_add_ss(m, _mm_movehdup_ps(m));
    *s = hsum_ps(acc) + _mm_cvtss_f32(m);
}

void qt_avx2_vec_dot_q5_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const qt_block_q5_K *x = vx;
    const qt_block_q8_K *y = vy;
    const __m256i m4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    __m128 summs = _mm_setzero_ps();
    for (int i = 0; i < n / QK; i++) {
        prefetch_block(&x[i], sizeof x[i]);
        const float d = y[i].d * half(x[i].d);
        const float dmin = -(y[i].d * half(x[i].dmin));
        const __m256i sm16 = _mm256_cvtepu8_epi16(k4_scales_mins(x[i].scales));
        const __m128i prod = _mm_madd_epi16(_mm256_extracti128_si256(sm16, 1), bsums32(&y[i]));
        const __m128i p2 = _mm_add_epi32(prod, _mm_shuffle_epi32(prod, 0x4e));
        const int msum = _mm_cvtsi128_si32(_mm_add_epi32(p2, _mm_shuffle_epi32(p2, 0xb1)));
        summs = _mm_fmadd_ss(_mm_set_ss(dmin), _mm_set_ss((float)msum), summs);
        const __m256i sc = _mm256_permute2x128_si256(sm16, sm16, 0x00);
        __m256i hbits = load256(x[i].qh);
        __m256i sumi = _mm256_setzero_si256();
        UNROLL for (int j = 0; j < 4; j++) {
            const __m256i q4 = load256(x[i].qs + 32 * j);
            const __m256i h0 = _mm256_and_si256(hbits, one);
            const __m256i h1 = _mm256_and_si256(_mm256_srli_epi16(hbits, 1), one);
            hbits = _mm256_srli_epi16(hbits, 2);
            const __m256i lo = _mm256_or_si256(_mm256_and_si256(q4, m4), _mm256_slli_epi16(h0, 4));
            const __m256i hi =
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q4, 4), m4), _mm256_slli_epi16(h1, 4));
            const __m256i plo = scale_sub32(pairs(lo, y[i].qs + 64 * j), sc, 2 * j);
            const __m256i phi = scale_sub32(pairs(hi, y[i].qs + 64 * j + 32), sc, 2 * j + 1);
            sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(plo, phi));
        }
        acc = fma_block(d, sumi, acc);
    }
    *s = hsum_ps(acc) + _mm_cvtss_f32(summs);
}

/* Unsigned q (0..63), then 32·Σsc·bsum off each lane, as the reference. */
void qt_avx2_vec_dot_q6_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const qt_block_q6_K *x = vx;
    const qt_block_q8_K *y = vy;
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / QK; i++) {
        prefetch_block(&x[i], sizeof x[i]);
        const float d = y[i].d * half(x[i].d);
        const __m256i sc16 = _mm256_cvtepi8_epi16(load128(x[i].scales));
        const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(load256(y[i].bsums), sc16), 5);
        __m256i sh[2];
        half_scales(sc16, sh);
        __m256i sumi = _mm256_setzero_si256();
        UNROLL for (int h = 0; h < 2; h++) {
            const __m256i ql0 = load256(x[i].ql + 64 * h), ql1 = load256(x[i].ql + 64 * h + 32);
            const __m256i qh = load256(x[i].qh + 32 * h);
            const int8_t *yq = y[i].qs + 128 * h;
            __m256i q[4];
            q[0] = _mm256_or_si256(_mm256_and_si256(ql0, m4),
                                   _mm256_slli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(0x03)), 4));
            q[1] = _mm256_or_si256(_mm256_and_si256(ql1, m4),
                                   _mm256_slli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(0x0c)), 2));
            q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                                   _mm256_and_si256(qh, _mm256_set1_epi8(0x30)));
            q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                                   _mm256_srli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8((char)0xc0)), 2));
            UNROLL for (int l = 0; l < 4; l++)
                sumi = _mm256_add_epi32(sumi, scale_sub16(pairs(q[l], yq + 32 * l), sh[h], l));
        }
        acc = fma_block(d, _mm256_sub_epi32(sumi, offset), acc);
    }
    *s = hsum_ps(acc);
}

/* ---- Q8_K quantizer ------------------------------------------------------ *
 * quant/ref_k.c's qt_from_float_q8_K, which is also llama.cpp's activation
 * quantizer.  A block falls back to the reference when its bytes come from
 * ggml's nearest_int outside its range: any NaN or inf, or a scale that
 * overflows (a subnormal max).  Otherwise |iscale·x| <= 127·(1 + 2^-22), so
 * vcvtps2dq's round-to-even is nearest_int and nothing reaches the packs'
 * saturation or the reference's MIN(127). */
void qt_avx2_quantize_q8_K(const float *src, void *dst, int64_t n) {
    qt_block_q8_K *y = dst;
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (int64_t i = 0; i < n / QK; i++) {
        const float *x = src + i * QK;
        __m256 vmax = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
        for (int k = 0; k < QK / 8; k++) {
            const __m256 a = _mm256_and_ps(_mm256_loadu_ps(x + 8 * k), abs_mask);
            vmax = _mm256_max_ps(vmax, a);
            bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, _mm256_set1_ps(FLT_MAX), _CMP_NLE_UQ));
        }
        const float amax = hmax_ps(vmax);
        if (_mm256_movemask_ps(bad) || amax == 0.0f) {
            qt_from_float_q8_K(x, &y[i], QK);
            continue;
        }
        /* The sign comes from the first element of that magnitude. */
        float max = amax;
        for (int k = 0; k < QK / 8; k++) {
            const __m256 a = _mm256_and_ps(_mm256_loadu_ps(x + 8 * k), abs_mask);
            const int hit = _mm256_movemask_ps(_mm256_cmp_ps(a, _mm256_set1_ps(amax), _CMP_EQ_OQ));
            if (hit) {
                max = x[8 * k + __builtin_ctz((unsigned)hit)];
                break;
            }
        }
        const float iscale = -127.f / max;
        if (!(iscale >= -FLT_MAX && iscale <= FLT_MAX)) {
            qt_from_float_q8_K(x, &y[i], QK);
            continue;
        }
        const __m256 vs = _mm256_set1_ps(iscale);
        for (int g = 0; g < QK / 32; g++) {
            __m256i q[4];
            for (int k = 0; k < 4; k++)
                q[k] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 32 * g + 8 * k), vs));
            /* The packs interleave groups of four; the permute restores order. */
            const __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
            _mm256_storeu_si256((__m256i *)(y[i].qs + 32 * g),
                                _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
            y[i].bsums[2 * g] = (int16_t)hsum_epi32(_mm256_add_epi32(q[0], q[1]));
            y[i].bsums[2 * g + 1] = (int16_t)hsum_epi32(_mm256_add_epi32(q[2], q[3]));
        }
        y[i].d = 1 / iscale;
    }
}

#else

/* ISO C wants a declaration in every translation unit. */
typedef int qt_x86_avx2_k_unused;

#endif
