/* x86_avx512_k.c - AVX-512 F/BW/VL/DQ kernel for Q6_K·Q8_K.
 *
 * Compiled with the flags of x86_avx512.c, whose tables hand it out.  The
 * float work is the reference's 8-lane FMA chain, one FMA per 256
 * elements, so it never limits speed; the integer work does, and here it
 * runs 512 bits wide: each zmm holds two 32-element chunks, and its two
 * 256-bit halves are added before the conversion to float.  Integer sums
 * are exact and order-free, so the 8 lanes equal quant/ref_k.c's (lane k:
 * elements 4k..4k+3 of every chunk, scaled) and the result is
 * bit-identical to it.  vpmaddubsw cannot saturate: the unsigned side is a
 * quant below 64.
 *
 * Only Q6_K gains: on a Sapphire Rapids core it ran 20% faster than
 * x86_avx2_k.c's kernel, while 512-bit Q4_K and Q5_K kernels written the
 * same way ran 10-15% slower than theirs (the per-block scale unpacking
 * dominates), so the AVX-512 tables use x86_avx2_k.c for the other types. */
#if defined(__x86_64__)

#include <immintrin.h>

#include "blocks.h"
#include "fp16.h"
#include "ref.h"
#include "x86_k.h"

#define INLINE static inline __attribute__((always_inline))
#define QT_X86_DPBUSD "%{evex%} vpdpbusd %2, %1, %0"
#include "x86_simd.h"

/* The 16 int32 lanes of a zmm folded to the reference's 8, then one FMA. */
INLINE __m256 fma_block16(float d, __m512i lanes16, __m256i extra8, __m256 acc) {
    const __m256i l8 = _mm256_add_epi32(_mm512_castsi512_si256(lanes16), _mm512_extracti64x4_epi64(lanes16, 1));
    return _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_add_epi32(l8, extra8)), acc);
}
#define QK QT_QK_K
/* Unrolled so that per-chunk index vectors become constants. */
#define UNROLL _Pragma("GCC unroll 8")

INLINE __m512i load512(const void *p) {
    return _mm512_loadu_si512(p);
}

INLINE float half(uint16_t h) {
    return _cvtsh_ss(h);
}

/* Word index vector with one scale per 128-bit lane (16-element sub-blocks). */
INLINE __m512i idx_lanes(int a, int b, int c, int d) {
    return _mm512_setr_epi32(a | a << 16, a | a << 16, a | a << 16, a | a << 16, b | b << 16, b | b << 16,
                             b | b << 16, b | b << 16, c | c << 16, c | c << 16, c | c << 16, c | c << 16,
                             d | d << 16, d | d << 16, d | d << 16, d | d << 16);
}

/* Σ sc·q·y over a zmm of quants: q unsigned below 64, scales picked by idx
 * from the int16 scales in s. */
INLINE __m512i scaled(__m512i q, __m512i y, __m512i s, __m512i idx) {
    return _mm512_madd_epi16(_mm512_permutexvar_epi16(idx, s), _mm512_maddubs_epi16(q, y));
}

/* Per 128 elements, 64 bytes of ql give elements 0-63 (low nibbles) and
 * 64-127 (high nibbles), in order, and 32 bytes of qh, seen twice, their
 * top bits: shifted per half into bits 4-5. */
void qt_avx512_vec_dot_q6_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const qt_block_q6_K *x = vx;
    const qt_block_q8_K *y = vy;
    const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
    /* Word shift counts per 256-bit half: {4, 2} for elements 0-63 (qh
     * bits 0-1, 2-3 up to 4-5), {0, 2} right for elements 64-127. */
    const __m512i up = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    const __m512i down = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / QK; i++) {
        prefetch_weights(&x[i]);
        const float d = y[i].d * half(x[i].d);
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));
        const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(load256(y[i].bsums), sc16), 5);
        const __m512i s = _mm512_castsi256_si512(sc16);
        __m512i sumi = _mm512_setzero_si512();
        UNROLL for (int h = 0; h < 2; h++) {
            const __m512i ql = load512(x[i].ql + 64 * h);
            const __m512i qh = _mm512_broadcast_i64x4(load256(x[i].qh + 32 * h));
            const __m512i a =
                _mm512_or_si512(_mm512_and_si512(ql, m4), _mm512_and_si512(_mm512_sllv_epi16(qh, up), m30));
            const __m512i b = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                                              _mm512_and_si512(_mm512_srlv_epi16(qh, down), m30));
            const int8_t *yq = y[i].qs + 128 * h;
            const int sb = 8 * h; /* first sub-block of this half */
            sumi = _mm512_add_epi32(sumi, scaled(a, load512(yq), s, idx_lanes(sb, sb + 1, sb + 2, sb + 3)));
            sumi = _mm512_add_epi32(sumi, scaled(b, load512(yq + 64), s, idx_lanes(sb + 4, sb + 5, sb + 6, sb + 7)));
        }
        acc = fma_block16(d, sumi, _mm256_sub_epi32(_mm256_setzero_si256(), offset), acc);
    }
    *s = hsum_ps(acc);
}

#else

/* ISO C wants a declaration in every translation unit. */
typedef int qt_x86_avx512_k_unused;

#endif
