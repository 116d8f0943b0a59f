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
 * qt_avx512_vec_dot_tile_q6_K_q8_K is the same per output for a row times
 * several columns, unpacking each weight block once (quant/cpu.h).
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

/* One Q6_K block unpacked: per 128-element half, the quants of elements
 * 0-63 (a) and 64-127 (b), each next to its int16 scales (sa, sb) picked
 * per 16-element sub-block; the scales widened, and dx. */
typedef struct q6k_unpacked {
    __m512i a[2], b[2], sa[2], sb[2];
    __m256i sc16;
    float dx;
} q6k_unpacked;

/* Per 128 elements, 64 bytes of ql give elements 0-63 (low nibbles) and
 * 64-127 (high nibbles), in order, and 32 bytes of qh, seen twice, their
 * top bits: shifted per half into bits 4-5. */
INLINE void q6k_unpack(const qt_block_q6_K *x, q6k_unpacked *u) {
    const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
    /* Word shift counts per 256-bit half: {4, 2} for elements 0-63 (qh
     * bits 0-1, 2-3 up to 4-5), {0, 2} right for elements 64-127. */
    const __m512i up = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    const __m512i down = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    u->dx = half(x->d);
    u->sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->scales));
    const __m512i s = _mm512_castsi256_si512(u->sc16);
    UNROLL for (int h = 0; h < 2; h++) {
        const __m512i ql = load512(x->ql + 64 * h);
        const __m512i qh = _mm512_broadcast_i64x4(load256(x->qh + 32 * h));
        u->a[h] = _mm512_or_si512(_mm512_and_si512(ql, m4), _mm512_and_si512(_mm512_sllv_epi16(qh, up), m30));
        u->b[h] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                                  _mm512_and_si512(_mm512_srlv_epi16(qh, down), m30));
        const int sb = 8 * h; /* first sub-block of this half */
        u->sa[h] = _mm512_permutexvar_epi16(idx_lanes(sb, sb + 1, sb + 2, sb + 3), s);
        u->sb[h] = _mm512_permutexvar_epi16(idx_lanes(sb + 4, sb + 5, sb + 6, sb + 7), s);
    }
}

/* acc advanced by one unpacked block against one Q8_K block. */
INLINE __m256 q6k_fma(const q6k_unpacked *u, const qt_block_q8_K *y, __m256 acc) {
    const float d = y->d * u->dx;
    const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(load256(y->bsums), u->sc16), 5);
    __m512i sumi = _mm512_setzero_si512();
    UNROLL for (int h = 0; h < 2; h++) {
        const int8_t *yq = y->qs + 128 * h;
        sumi = _mm512_add_epi32(sumi, _mm512_madd_epi16(u->sa[h], _mm512_maddubs_epi16(u->a[h], load512(yq))));
        sumi = _mm512_add_epi32(sumi, _mm512_madd_epi16(u->sb[h], _mm512_maddubs_epi16(u->b[h], load512(yq + 64))));
    }
    return fma_block16(d, sumi, _mm256_sub_epi32(_mm256_setzero_si256(), offset), acc);
}

void qt_avx512_vec_dot_q6_K_q8_K(int n, float *s, const void *vx, const void *vy) {
    const qt_block_q6_K *x = vx;
    const qt_block_q8_K *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n / QK; i++) {
        prefetch_block(&x[i], sizeof x[i]);
        q6k_unpacked u;
        q6k_unpack(&x[i], &u);
        acc = q6k_fma(&u, &y[i], acc);
    }
    *s = hsum_ps(acc);
}

/* One row by C columns (the last real column repeated past nc, not
 * stored): each block unpacked once for all of them, which is most of a
 * Q6_K dot's work, and C independent chains, each vec_dot's. */
INLINE void q6k_tile_row(int n, float *s, size_t ldo, const qt_block_q6_K *x, const uint8_t *y, size_t ys, int nc,
                         const int C) {
    const qt_block_q8_K *yc[8];
    __m256 acc[8];
    UNROLL for (int c = 0; c < C; c++) {
        yc[c] = (const qt_block_q8_K *)(y + ys * (size_t)(c < nc ? c : nc - 1));
        acc[c] = _mm256_setzero_ps();
    }
    for (int i = 0; i < n / QK; i++) {
        prefetch_block(&x[i], sizeof x[i]);
        q6k_unpacked u;
        q6k_unpack(&x[i], &u);
        UNROLL for (int c = 0; c < C; c++)
            acc[c] = q6k_fma(&u, &yc[c][i], acc[c]);
    }
    UNROLL for (int c = 0; c < C && c < nc; c++)
        s[(size_t)c * ldo] = hsum_ps(acc[c]);
}

void qt_avx512_vec_dot_tile_q6_K_q8_K(int n, float *s, size_t ldo, const void *x, size_t xs, int nr, const void *y,
                                      size_t ys, int nc) {
    for (int r = 0; r < nr; r++) {
        const qt_block_q6_K *xr = (const qt_block_q6_K *)((const uint8_t *)x + xs * (size_t)r);
        for (int c = 0; c < nc;) {
            const int left = nc - c, C = left >= 5 ? 8 : left >= 3 ? 4 : left;
            float *o = s + (size_t)c * ldo + (size_t)r;
            const uint8_t *yo = (const uint8_t *)y + ys * (size_t)c;
            if (C == 8)
                q6k_tile_row(n, o, ldo, xr, yo, ys, left, 8);
            else if (C == 4)
                q6k_tile_row(n, o, ldo, xr, yo, ys, left, 4);
            else if (C == 2)
                q6k_tile_row(n, o, ldo, xr, yo, ys, left, 2);
            else
                q6k_tile_row(n, o, ldo, xr, yo, ys, left, 1);
            c += C;
        }
    }
}

#else

/* ISO C wants a declaration in every translation unit. */
typedef int qt_x86_avx512_k_unused;

#endif
