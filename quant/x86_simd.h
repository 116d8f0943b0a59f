/* x86_simd.h - 256-bit helpers shared by the x86 kernel files (AVX2 and
 * up).  Included only by quant/x86_*.c, which are compiled with at least
 * -mavx2 -mfma -mf16c; each file gets its own copy under its own flags.
 * The includer defines QT_X86_DPBUSD, the vpdpbusd spelling its ISA may
 * use: {vex} (AVX-VNNI) in the AVX2 files, {evex} (AVX512-VNNI) in the
 * AVX-512 ones, since a CPU with one need not have the other. */
#ifndef QLM_QT_X86_SIMD_H
#define QLM_QT_X86_SIMD_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "blocks.h"

#ifndef INLINE
#define INLINE static inline __attribute__((always_inline))
#endif

INLINE __m256i load256(const void *p) {
    return _mm256_loadu_si256((const __m256i *)p);
}

/* The f16 at p (any alignment) as a float; F16C's widening is exact. */
INLINE float half_at(const void *p) {
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

/* ((0+4)+(2+6)) + ((1+5)+(3+7)): qt_hsum8's order, which is llama.cpp's. */
INLINE float hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* hsum_ps of four vectors at once, bit for bit (each lane's additions
 * are hsum_ps's, on the same operands): lane i of the result is
 * hsum_ps of the i-th vector. */
INLINE __m128 hsum4_ps(__m256 a, __m256 b, __m256 c, __m256 d) {
    const __m128 sa = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    const __m128 sb = _mm_add_ps(_mm256_castps256_ps128(b), _mm256_extractf128_ps(b, 1));
    const __m128 sc = _mm_add_ps(_mm256_castps256_ps128(c), _mm256_extractf128_ps(c, 1));
    const __m128 sd = _mm_add_ps(_mm256_castps256_ps128(d), _mm256_extractf128_ps(d, 1));
    /* (x0 + x2, y0 + y2, x1 + x3, y1 + y3) for x, y = sa, sb and sc, sd */
    const __m128 ab = _mm_add_ps(_mm_unpacklo_ps(sa, sb), _mm_unpackhi_ps(sa, sb));
    const __m128 cd = _mm_add_ps(_mm_unpacklo_ps(sc, sd), _mm_unpackhi_ps(sc, sd));
    return _mm_add_ps(_mm_movelh_ps(ab, cd), _mm_movehl_ps(cd, ab));
}

INLINE int hsum_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

INLINE float hmax_ps(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

/* Sums of u·s over each group of four bytes, u unsigned and s signed.
 * Without VNNI, vpmaddubsw first adds byte pairs into int16 with
 * saturation, which is exact only while u < 128; callers keep to that. */
INLINE __m256i dot4(__m256i u, __m256i s, const int vnni) {
    if (vnni) {
        __m256i acc = _mm256_setzero_si256();
        __asm__(QT_X86_DPBUSD : "+v"(acc) : "v"(u), "v"(s));
        return acc;
    }
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

/* Sums of (q - off)·y by groups of four, for unsigned q <= 31.  Keeping q
 * unsigned and subtracting off·y afterwards avoids the abs/sign trick,
 * which overflows when y = -128.  Without VNNI the subtraction happens on
 * int16 pairs: |q·y| <= 7936 and |off·y| <= 4096 per pair, so no saturation. */
INLINE __m256i dot4_offset(__m256i q, __m256i off, __m256i y, const int vnni) {
    if (vnni)
        return _mm256_sub_epi32(dot4(q, y, 1), dot4(off, y, 1));
    const __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(q, y), _mm256_maddubs_epi16(off, y));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

/* Signed·signed by groups of four, exact for every byte value (the usual
 * abs/sign + vpmaddubsw trick is wrong when one side is -128). */
INLINE __m256i dot4_s8(const int8_t *a, const int8_t *b, const int vnni) {
    const __m256i va = load256(a), vb = load256(b);
    if (vnni) {
        /* a ^ 0x80 is a + 128 as an unsigned byte; 128·Σb comes back off. */
        const __m256i bias = _mm256_set1_epi8((char)0x80);
        return _mm256_sub_epi32(dot4(_mm256_xor_si256(va, bias), vb, 1), dot4(bias, vb, 1));
    }
    /* Sign-extend even and odd bytes into int16 in place: vpmaddwd then
     * pairs bytes 4k, 4k+2 and 4k+1, 4k+3, which together are group k.
     * Shifts keep this off the shuffle port, unlike vpmovsxbw. */
    const __m256i a_even = _mm256_srai_epi16(_mm256_slli_epi16(va, 8), 8);
    const __m256i b_even = _mm256_srai_epi16(_mm256_slli_epi16(vb, 8), 8);
    const __m256i a_odd = _mm256_srai_epi16(va, 8), b_odd = _mm256_srai_epi16(vb, 8);
    return _mm256_add_epi32(_mm256_madd_epi16(a_even, b_even), _mm256_madd_epi16(a_odd, b_odd));
}

/* a·b by groups of four with the sign trick: vpmaddubsw of |a| (-128's
 * negation wraps to 0x80, which it reads as an unsigned 128) and b
 * negated where a is negative, pair sums at most 2·128·127.  Exact unless
 * b holds -128, whose negation wraps too: *b_min collects b's -128 bytes,
 * and a caller that finds any redoes the sum with dot4_s8.  Four vector
 * operations where dot4_s8 takes six shifts and two vpmaddwd, and a Zen 2
 * shifts one vector a cycle (one row of 4096 Q8_0 values from L2: 5.6
 * cycles a block against 8.1). */
INLINE __m256i dot4_sign(__m256i a, __m256i b, __m256i *b_min) {
    *b_min = _mm256_or_si256(*b_min, _mm256_cmpeq_epi8(b, _mm256_set1_epi8((char)-128)));
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a)),
                             _mm256_set1_epi16(1));
}

/* The 32 4-bit values of a block in element order: element j < 16 is the
 * low nibble of qs[j], j >= 16 the high nibble of qs[j - 16].  A broadcast
 * load and a per-half shift do it without a cross-lane shuffle. */
INLINE __m256i nibbles(const uint8_t *qs) {
    const __m256i b = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
    const __m256i v = _mm256_srlv_epi64(b, _mm256_setr_epi64x(0, 0, 4, 4));
    return _mm256_and_si256(v, _mm256_set1_epi8(0x0f));
}

/* Weight rows stream from memory once per token.  A core's hardware
 * prefetchers alone keep too few cache misses in flight: the out-of-order
 * window, a few hundred instructions, reaches only ~1 KB ahead, and a
 * 4096x4096 Q4_1 matvec streamed from DRAM at 3.7 GB/s on one core.
 * Asking for the line 2 KB ahead (well into the next row at the end of a
 * row; prefetches never fault) made it 10.6 GB/s, and L3-resident
 * matrices 12% faster.  8 KB ahead keeps more lines in flight still: one
 * decode layer of TinyLlama shapes, one thread, per-layer alternation with
 * a plain read of the same bytes, went from 90-100% to 118-133% of that
 * read's speed for Q8_0 and from 87-91% to 110-124% for Q6_K (16 KB was no
 * better, 4 KB in between).  Asking twice, 12 KB ahead into L2 only
 * (prefetcht1 frees its L1 fill buffer when the line reaches L2, so more
 * lines stay in flight) and 1 KB ahead into L1, made a 1.1B-shape Q8_0
 * model's 2-thread decode 1.05x (Sapphire Rapids, tg128, alternated
 * twice: 23.2-24.5 against 22.0-23.3 t/s; T1 at 8 KB 1.03x, at 16 KB
 * 1.02x), its pp512 level. */
INLINE void prefetch_weights(const void *block) {
    _mm_prefetch((const char *)block + 12288, _MM_HINT_T1);
    _mm_prefetch((const char *)block + 1024, _MM_HINT_T0);
}

/* The same for every cache line of a block `bytes` long: a K-quant block
 * spans 2-4 lines, and one request per block left the rest to the
 * hardware prefetchers (asking for each line made a Q6_K model's 2-thread
 * decode 5-16% faster, side by side). */
INLINE void prefetch_block(const void *block, const size_t bytes) {
    for (size_t o = 0; o < bytes; o += 64)
        prefetch_weights((const char *)block + o);
}

INLINE __m256 fma_block(float d, __m256i lanes, __m256 acc) {
    return _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(lanes), acc);
}

/* ---- the block scales and Q8_0's dot, shared by x86_avx2.c and x86_avx512.c */

/* dx·dy from two blocks' f16 scales, with one conversion for both (F16C
 * widening is exact, subnormals included).  Scalar conversions, one per
 * half, cost more than the block's integer work. */
INLINE float scale2(const uint16_t *xd, const uint16_t *yd) {
    const __m128 h = _mm_cvtph_ps(_mm_insert_epi16(_mm_cvtsi32_si128(*xd), *yd, 1));
    return _mm_cvtss_f32(_mm_mul_ss(h, _mm_movehdup_ps(h)));
}

/* For the _1 types, whose blocks start with two halves each (x: d, m;
 * y: d, s): one conversion gives [dx, mx, dy, sy]; returns dx·dy and
 * advances lane 1 of *summs to fma(mx, sy, summs), the reference's chain.
 * The other lanes of *summs are scratch. */
INLINE float scale4(const void *x, const void *y, __m128 *summs) {
    uint32_t a, b;
    memcpy(&a, x, sizeof a);
    memcpy(&b, y, sizeof b);
    const __m128 h = _mm_cvtph_ps(_mm_setr_epi32((int)a, (int)b, 0, 0));
    const __m128 swapped = _mm_permute_ps(h, 0x4e); /* [dy, sy, dx, mx] */
    *summs = _mm_fmadd_ps(h, swapped, *summs);
    return _mm_cvtss_f32(_mm_mul_ss(h, swapped));
}

INLINE void dot_q8_0(int n, float *s, const void *vx, const void *vy, const int vnni) {
    const qt_block_q8_0 *x = vx;
    const qt_block_q8_0 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    if (!vnni) {
        __m256i y_min = _mm256_setzero_si256();
        for (int i = 0; i < n / QT_QK8_0; i++) {
            prefetch_weights(&x[i]);
            acc = fma_block(scale2(&x[i].d, &y[i].d), dot4_sign(load256(x[i].qs), load256(y[i].qs), &y_min), acc);
        }
        if (_mm256_testz_si256(y_min, y_min)) {
            *s = hsum_ps(acc);
            return;
        }
        acc = _mm256_setzero_ps(); /* y holds -128, which qlm's quantizers never write */
    }
    for (int i = 0; i < n / QT_QK8_0; i++) {
        prefetch_weights(&x[i]);
        acc = fma_block(scale2(&x[i].d, &y[i].d), dot4_s8(x[i].qs, y[i].qs, vnni), acc);
    }
    *s = hsum_ps(acc);
}

#endif
