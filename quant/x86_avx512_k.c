/* x86_avx512_k.c - AVX-512 F/BW/VL/DQ kernels for Q6_K·Q8_K, and K-quant tiles.
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
 * qt_avx512[_vnni]_vec_dot_tile_q6_K_q8_K is the same per output: for a
 * row times several columns it unpacks each weight block once
 * (quant/cpu.h), the offset and VNNI as below (1.07-1.16x for 2-8
 * columns); for one column (a one-token decode) it takes two rows
 * at a time (two streams from memory), with the -32 offset folded into the
 * scale accumulator and, with VNNI, vpdpwssd.  Single thread, Sapphire
 * Rapids, 2048-wide rows: 1.2x the per-row kernel from L2, and from DRAM
 * 0.82 of a plain read's speed instead of 0.63 (the L2 prefetch,
 * then in prefetch_block_ahead, was a third of that gain).
 *
 * Only Q6_K gains: on a Sapphire Rapids core it ran 20% faster than
 * x86_avx2_k.c's kernel, while 512-bit Q4_K and Q5_K kernels written the
 * same way ran 10-15% slower than theirs (the per-block scale unpacking
 * dominates), so the AVX-512 tables use x86_avx2_k.c for the other types.
 *
 * Their tiles, though, are here (Q2_K..Q5_K, each also with AVX512-VNNI):
 * bit-identical to those AVX2 dots, with the activation side of a block
 * done once for four rows, the scales unpacked by vector loads and masks
 * (Q4_K's and Q5_K's for the four rows at once, one per 128-bit lane:
 * 1.25x from L2, and Q4_K from DRAM 0.83 of a plain read instead of
 * 0.75), and four rows' chains in flight (two for Q2_K and Q5_K, K_ROWS_TILE
 * says why).  They are what a one-token decode in
 * vec_dot's order runs (ggml-lite/matmul.c): single thread, weights in L2,
 * Sapphire Rapids, 1.3x (Q4_K, Q5_K), 1.15x (Q2_K) and 1.5x (Q3_K) the
 * AVX2 dot's speed, Q4_K and Q2_K level with the repacked wide gemv
 * (x86_avx512_repack_k.c) and ahead of it streaming from memory. */
#if defined(__x86_64__)

#include <float.h>
#include <immintrin.h>
#include <string.h>

#include "blocks.h"
#include "fp16.h"
#include "ref.h"
#include "x86_k.h"

#define INLINE static inline __attribute__((always_inline))
#define QT_X86_DPBUSD "%{evex%} vpdpbusd %2, %1, %0"
#include "x86_simd.h"

/* Every line of a block some way ahead, twice: 12 KB on into L2
 * (prefetcht1: a line on its way from memory then holds no L1 fill
 * buffer, so more stay in flight) and 1 KB on into L1, so the demand
 * loads find their lines in L1 rather than wait on L2.  The one-column
 * tiles below stream 2048-wide rows from DRAM; as a fraction of a plain
 * read of the same bytes, one core, T0 -> 8 KB T1 alone: Q6_K 0.76 ->
 * 0.82, Q4_K 0.79 -> 0.83, Q5_K 0.71 -> 0.76, Q3_K 0.63 -> 0.68 (4 KB
 * ahead worse, 16-32 KB no better).  Adding the 1 KB T0 and moving the
 * T1 to 12 KB, 1.1B shape, 2 threads, tg128 (Sapphire Rapids, alternated
 * twice): Q4_K_M 39.9-40.5 -> 42.1-42.5 t/s, Q6_K 28.4-28.7 -> 31.5-32.3,
 * Q5_K_M 30.3-30.6 -> 33.6-34.8, Q3_K_M 40.1-41.8 -> 42.7-43.0, Q2_K
 * 47.5-48.0 -> 48.6-50.4; T1 at 3-6 KB with the T0 was worse than 8 KB
 * without it. */
INLINE void prefetch_block_ahead(const void *block, const size_t bytes) {
    for (size_t o = 0; o < bytes; o += 64) {
        _mm_prefetch((const char *)block + o + 12288, _MM_HINT_T1);
        _mm_prefetch((const char *)block + o + 1024, _MM_HINT_T0);
    }
}

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

/* The 16 int32 lanes folded to the 8 of vec_dot's chain, as floats. */
INLINE __m256 fold16(__m512i v) {
    return _mm256_cvtepi32_ps(_mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1)));
}

/* acc + the int16 pairs of p times those of sc, summed by pairs: with
 * AVX512-VNNI one vpdpwssd (exact: no pair sum here comes near 2^31). */
INLINE __m512i madd_acc(__m512i acc, __m512i p, __m512i sc, const int vnni) {
    if (!vnni) return _mm512_add_epi32(acc, _mm512_madd_epi16(p, sc));
    __asm__("%{evex%} vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(p), "v"(sc));
    return acc;
}

/* One Q6_K block unpacked: per 128-element half, the quants of elements
 * 0-63 (a) and 64-127 (b), each next to its int16 scales (sa, sb) picked
 * per 16-element sub-block; the scales widened, and dx. */
typedef struct q6k_unpacked {
    __m512i a[2], b[2], sa[2], sb[2];
    __m512i off; /* -32·sc, in the low 256 bits (q6k_rows says why) */
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
    u->off = _mm512_zextsi256_si512(_mm256_mullo_epi16(u->sc16, _mm256_set1_epi16(-32)));
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

/* The same for the tile, with the offset taken into the accumulator as
 * in q6k_rows, and with VNNI vpdpwssd: the same 8 lanes, the same FMA. */
INLINE __m256 q6k_fma_acc(const q6k_unpacked *u, const qt_block_q8_K *y, __m256 acc, const int vnni) {
    const float d = y->d * u->dx;
    __m512i sum = _mm512_madd_epi16(_mm512_zextsi256_si512(load256(y->bsums)), u->off);
    UNROLL for (int h = 0; h < 2; h++) {
        const int8_t *yq = y->qs + 128 * h;
        sum = madd_acc(sum, _mm512_maddubs_epi16(u->a[h], load512(yq)), u->sa[h], vnni);
        sum = madd_acc(sum, _mm512_maddubs_epi16(u->b[h], load512(yq + 64)), u->sb[h], vnni);
    }
    return _mm256_fmadd_ps(_mm256_set1_ps(d), fold16(sum), acc);
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
                         const int C, const int vnni) {
    const qt_block_q8_K *yc[8];
    __m256 acc[8];
    UNROLL for (int c = 0; c < C; c++) {
        yc[c] = (const qt_block_q8_K *)(y + ys * (size_t)(c < nc ? c : nc - 1));
        acc[c] = _mm256_setzero_ps();
    }
    for (int i = 0; i < n / QK; i++) {
        prefetch_block_ahead(&x[i], sizeof x[i]);
        q6k_unpacked u;
        q6k_unpack(&x[i], &u);
        UNROLL for (int c = 0; c < C; c++)
            acc[c] = q6k_fma_acc(&u, &yc[c][i], acc[c], vnni);
    }
    UNROLL for (int c = 0; c < C && c < nc; c++)
        s[(size_t)c * ldo] = hsum_ps(acc[c]);
}

/* Columns in groups of 8, 4, 2 or 1 for one row. */
INLINE void q6k_tile_cols(int n, float *s, size_t ldo, const qt_block_q6_K *xr, const void *y, size_t ys, int nc,
                          const int vnni) {
    for (int c = 0; c < nc;) {
        const int left = nc - c, C = left >= 5 ? 8 : left >= 3 ? 4 : left;
        float *o = s + (size_t)c * ldo;
        const uint8_t *yo = (const uint8_t *)y + ys * (size_t)c;
        if (C == 8)
            q6k_tile_row(n, o, ldo, xr, yo, ys, left, 8, vnni);
        else if (C == 4)
            q6k_tile_row(n, o, ldo, xr, yo, ys, left, 4, vnni);
        else if (C == 2)
            q6k_tile_row(n, o, ldo, xr, yo, ys, left, 2, vnni);
        else
            q6k_tile_row(n, o, ldo, xr, yo, ys, left, 1, vnni);
        c += C;
    }
}

/* ---- Q2_K..Q5_K tiles: vec_dot's order, rows in flight ---------------
 *
 * A one-token decode streams each weight once, so a block's unpacking
 * cannot be shared among columns as Q6_K's tile does; what pays instead is
 * the activation side done once per block for R rows (its bytes laid out
 * per weight vector, its bsums), R independent float chains, and the
 * integer work 512 bits wide: each zmm holds two 32-element chunks in its
 * 256-bit halves, and vpmaddubsw/vpmaddwd with the chunk's scale in every
 * word give the lanes x86_avx2_k.c's kernels form (lane k: elements
 * 4k..4k+3 of every chunk, times its sub-block scale), added half to half
 * before the conversion.  Integer sums are exact, the float operations are
 * vec_dot's in its order: bit-identical.  Columns beyond the first re-read
 * the rows from L1 (batches of 8+ tokens take other orders in matmul). */


/* Two rows' block sums folded to their 8 lanes each, [first | second],
 * as floats: two cross-lane shuffles and one add and conversion for both
 * rows, the same lane values as fold16's. */
INLINE __m512 fold16x2(__m512i a, __m512i b) {
    return _mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_shuffle_i64x2(a, b, 0x44), _mm512_shuffle_i64x2(a, b, 0xee)));
}

/* d of rows a (lanes 0-7) and b (8-15), taken from lanes ia and ib of v. */
INLINE __m512 pick2(__m256 v, int ia, int ib) {
    return _mm512_permutexvar_ps(_mm512_inserti64x4(_mm512_set1_epi32(ia), _mm256_set1_epi32(ib), 1),
                                 _mm512_castps256_ps512(v));
}

/* Row r's 8-lane chain out of a pair's accumulator. */
INLINE __m256 pair_half(__m512 acc, int r) {
    return r & 1 ? _mm512_extractf32x8_ps(acc, 1) : _mm512_castps512_ps256(acc);
}

/* Q6_K, R rows times one column (a one-token decode, where no block is
 * read twice, so nothing is gained by unpacking it once for several
 * columns).  Per block and row the integer work is the tile's: the same
 * unpacking, one vpmaddubsw per 64 quants, and their scaling, which with
 * VNNI is one vpdpwssd that also accumulates.  The offset 32·Σsc·bsum goes
 * into the same accumulator's low 8 lanes as bsums times -32·sc (exact in
 * int16: |-32·sc| <= 4096), lane k of it being vec_dot's offset of lane k;
 * so the 8 folded lanes are vec_dot's, exactly.  The activation side
 * (its bytes, its bsums) is loaded once per block for the R rows, whose
 * chains are all in flight. */
INLINE void q6k_rows(int n, float *s, const uint8_t *x, size_t xs, const qt_block_q8_K *y, const int R,
                     const int vnni) {
    const __m512i m4 = _mm512_set1_epi8(0x0f), m33 = _mm512_set1_epi8(0x33);
    const __m512i down = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    const __m512i ia0 = idx_lanes(0, 1, 2, 3), ib0 = idx_lanes(4, 5, 6, 7);
    const __m512i ia1 = idx_lanes(8, 9, 10, 11), ib1 = idx_lanes(12, 13, 14, 15);
    /* rows 2p and 2p + 1 (for R = 1, row 0 twice) share acc[p] */
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int i = 0; i < n / QK; i++) {
        const qt_block_q8_K *yb = &y[i];
        const __m512i y0 = load512(yb->qs), y1 = load512(yb->qs + 64);
        const __m512i y2 = load512(yb->qs + 128), y3 = load512(yb->qs + 192);
        const __m512i bs = _mm512_zextsi256_si512(load256(yb->bsums));
        const qt_block_q6_K *xb[4];
        uint16_t h[4] = {0, 0, 0, 0};
        UNROLL for (int r = 0; r < R; r++) {
            xb[r] = (const qt_block_q6_K *)(x + xs * (size_t)r) + i;
            memcpy(&h[r], &xb[r]->d, sizeof h[r]);
        }
        /* y_d times each row's d, lane r: vec_dot's products */
        const __m256 d4 = _mm256_castps128_ps256(_mm_mul_ps(
            _mm_set1_ps(yb->d), _mm_cvtph_ps(_mm_setr_epi16((short)h[0], (short)h[1], (short)h[2], (short)h[3], 0, 0, 0, 0))));
        __m512i sums[4];
        UNROLL for (int r = 0; r < R; r++) {
            prefetch_block_ahead(xb[r], sizeof *xb[r]);
            const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)xb[r]->scales));
            const __m512i sc = _mm512_zextsi256_si512(sc16);
            const __m512i off = _mm512_zextsi256_si512(_mm256_mullo_epi16(sc16, _mm256_set1_epi16(-32)));
            __m512i sum = _mm512_madd_epi16(bs, off);
            UNROLL for (int g = 0; g < 2; g++) {
                /* per 128 elements: w holds the 2-bit fields of elements
                 * 0-31 (low 256 bits) and 32-63 (high) in bits 0-1 and
                 * those of 64-95 and 96-127 in bits 4-5, bits 2-3 and 6-7
                 * clear; vpternlogd 0xe4 takes bits 0-3 from its first
                 * operand, 4-7 from its second. */
                const __m512i ql = load512(xb[r]->ql + 64 * g);
                const __m512i qh = _mm512_broadcast_i64x4(load256(xb[r]->qh + 32 * g));
                const __m512i w = _mm512_and_si512(_mm512_srlv_epi16(qh, down), m33);
                const __m512i a = _mm512_ternarylogic_epi32(ql, _mm512_slli_epi16(w, 4), m4, 0xe4);
                const __m512i b = _mm512_ternarylogic_epi32(_mm512_srli_epi16(ql, 4), w, m4, 0xe4);
                sum = madd_acc(sum, _mm512_maddubs_epi16(a, g ? y2 : y0), _mm512_permutexvar_epi16(g ? ia1 : ia0, sc),
                               vnni);
                sum = madd_acc(sum, _mm512_maddubs_epi16(b, g ? y3 : y1), _mm512_permutexvar_epi16(g ? ib1 : ib0, sc),
                               vnni);
            }
            sums[r] = sum;
        }
        UNROLL for (int p = 0; p < (R + 1) / 2; p++) {
            const int b = 2 * p + 1 < R ? 2 * p + 1 : 2 * p;
            acc[p] = _mm512_fmadd_ps(pick2(d4, 2 * p, b), fold16x2(sums[2 * p], sums[b]), acc[p]);
        }
    }
    UNROLL for (int r = 0; r < R; r++) s[r] = hsum_ps(pair_half(acc[r / 2], r));
}

/* One column: rows two at a time (the rest one by one): two streams from
 * memory read faster than four (one thread, GB/s: 14.3-14.8 against
 * 12.4-12.8 with four rows); more columns: each row unpacked once for all
 * of them (q6k_tile_row). */
#define Q6K_TILE(NAME, VNNI)                                                                                     \
    void NAME(int n, float *s, size_t ldo, const void *x, size_t xs, int nr, const void *y, size_t ys, int nc) { \
        for (int r = 0; r < nr;) {                                                                               \
            const int g = nc > 1 ? 1 : nr - r >= 2 ? 2 : 1;                                                      \
            const uint8_t *xr = (const uint8_t *)x + xs * (size_t)r;                                             \
            if (nc > 1)                                                                                          \
                q6k_tile_cols(n, s + r, ldo, (const qt_block_q6_K *)xr, y, ys, nc, VNNI);                              \
            else if (g == 2)                                                                                     \
                q6k_rows(n, s + r, xr, xs, y, 2, VNNI);                                                          \
            else                                                                                                 \
                q6k_rows(n, s + r, xr, xs, y, 1, VNNI);                                                          \
            r += g;                                                                                              \
        }                                                                                                        \
    }
Q6K_TILE(qt_avx512_vec_dot_tile_q6_K_q8_K, 0)
Q6K_TILE(qt_avx512_vnni_vec_dot_tile_q6_K_q8_K, 1)

/* Word control for vpshufb: in every 128-bit lane of the low 256 bits the
 * zero-extended byte a, in the high 256 bits byte b (0x80: a zero byte). */
INLINE __m512i word_pick(int a, int b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16((short)(0x8000 | a))),
                              _mm256_set1_epi16((short)(0x8000 | b)), 1);
}

/* 32 bytes at p in the low half, 32 at p + off2 in the high half. */
INLINE __m512i pair256(const int8_t *p, int off2) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(load256(p)), load256(p + off2), 1);
}

/* Q4_K's 6-bit scales (bytes 0-7) and mins (bytes 8-15) from the 12
 * bytes at s, as quant/ref_k.c's scale_min_k4 unpacks them one at a time:
 * of the 32-bit words a0..a2, scales 0-3 are a0 & 0x3f, mins 0-3 a1 &
 * 0x3f, scales 4-7 (a2 & 0xf) | (a0 >> 6) << 4, mins 4-7 (a2 >> 4) | (a1
 * >> 6) << 4.  a2 broadcast from memory lines up with a0 and a1, and one
 * unpack interleaves the halves (16 bytes read: the block goes on). */
INLINE __m128i k4_sm(const uint8_t *s) {
    const __m128i a = _mm_loadu_si128((const __m128i *)s);
    uint32_t a2;
    memcpy(&a2, s + 8, sizeof a2);
    const __m128i lo = _mm_and_si128(a, _mm_set1_epi8(0x3f));
    const __m128i hi = _mm_or_si128(
        _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32((int)a2), _mm_setr_epi32(0, 4, 0, 4)), _mm_set1_epi8(0x0f)),
        _mm_and_si128(_mm_srli_epi32(a, 2), _mm_set1_epi8(0x30)));
    return _mm_unpacklo_epi32(lo, hi);
}

/* y_d times a block's d and dmin (two halves at p), in lanes 0 and 2 and
 * 1 and 3: the products vec_dot forms one at a time. */
INLINE __m128 d_dmin(const void *p, __m128 yd) {
    uint32_t h;
    memcpy(&h, p, sizeof h);
    return _mm_mul_ps(yd, _mm_cvtph_ps(_mm_set1_epi32((int)h)));
}

/* Q5_K's fifth bits: 16 added to the bytes of chunks c and c2 (low and
 * high 256 bits) whose bit c (c2) of qh is set (h: qh in both halves). */
INLINE __m512i add_bit5(__m512i q, __m512i h, int c, int c2) {
    const __m512i bits = _mm512_inserti64x4(_mm512_set1_epi8((char)(1 << c)), _mm256_set1_epi8((char)(1 << c2)), 1);
    return _mm512_mask_add_epi8(q, _mm512_test_epi8_mask(h, bits), q, _mm512_set1_epi8(16));
}

/* R rows (x, stride xs) times one column y, s[r] for r < R: Q4_K, or
 * Q5_K (Q5: the fifth bits, and its mins term summed to one float per
 * block as its vec_dot does). */
/* One Q4_K/Q5_K block's integer sums against the activation pairs y0..y3,
 * weighted by the sub-block scales sb (picked per pair by c0..c3): the 16
 * int32 lanes both one-row and four-row tiles fold into vec_dot's lanes. */
INLINE __m512i q45k_block_sums(const uint8_t *qs, const uint8_t *qh, __m512i sb, __m512i y0, __m512i y1, __m512i y2,
                               __m512i y3, __m512i c0, __m512i c1, __m512i c2, __m512i c3, const int Q5, const int vnni) {
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    const __m512i q0 = load512(qs), q1 = load512(qs + 64);
    __m512i lo0 = _mm512_and_si512(q0, m4), hi0 = _mm512_and_si512(_mm512_srli_epi16(q0, 4), m4);
    __m512i lo1 = _mm512_and_si512(q1, m4), hi1 = _mm512_and_si512(_mm512_srli_epi16(q1, 4), m4);
    if (Q5) {
        const __m512i h = _mm512_broadcast_i64x4(load256(qh));
        lo0 = add_bit5(lo0, h, 0, 2);
        hi0 = add_bit5(hi0, h, 1, 3);
        lo1 = add_bit5(lo1, h, 4, 6);
        hi1 = add_bit5(hi1, h, 5, 7);
    }
    __m512i sum = _mm512_madd_epi16(_mm512_maddubs_epi16(lo0, y0), _mm512_shuffle_epi8(sb, c0));
    sum = madd_acc(sum, _mm512_maddubs_epi16(hi0, y1), _mm512_shuffle_epi8(sb, c1), vnni);
    sum = madd_acc(sum, _mm512_maddubs_epi16(lo1, y2), _mm512_shuffle_epi8(sb, c2), vnni);
    return madd_acc(sum, _mm512_maddubs_epi16(hi1, y3), _mm512_shuffle_epi8(sb, c3), vnni);
}

INLINE void q45k_rows(int n, float *s, const uint8_t *x, size_t xs, const qt_block_q8_K *y, const int R,
                      const int vnni, const int Q5) {
    const __m512i c0 = word_pick(0, 2), c1 = word_pick(1, 3), c2 = word_pick(4, 6), c3 = word_pick(5, 7);
    const size_t bs = Q5 ? sizeof(qt_block_q5_K) : sizeof(qt_block_q4_K);
    /* where d | dmin, the scales, qh and qs start in a block */
    const size_t o_sc = 4, o_qh = 16, o_qs = Q5 ? 48 : 16;
    __m256 acc[4];
    __m128 accm[4];
    UNROLL for (int r = 0; r < R; r++) {
        acc[r] = _mm256_setzero_ps();
        accm[r] = _mm_setzero_ps();
    }
    for (int i = 0; i < n / QK; i++) {
        const qt_block_q8_K *yb = &y[i];
        /* chunk j pairs with qs[32(j/2)..] (low nibbles: even j) */
        const __m512i y0 = pair256(yb->qs, 64), y1 = pair256(yb->qs + 32, 64);
        const __m512i y2 = pair256(yb->qs + 128, 64), y3 = pair256(yb->qs + 160, 64);
        const __m256i b = load256(yb->bsums);
        const __m128i b32 = _mm_hadd_epi16(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
        const __m128 yd = _mm_set1_ps(yb->d);
        UNROLL for (int r = 0; r < R; r++) {
            const uint8_t *xb = x + xs * (size_t)r + bs * (size_t)i;
            prefetch_block_ahead(xb, bs);
            const __m128 dd = d_dmin(xb, yd);
            const __m128i sm = k4_sm(xb + o_sc);
            const __m128i prod = _mm_madd_epi16(_mm_unpackhi_epi8(sm, _mm_setzero_si128()), b32);
            /* fnmadd: vec_dot's fma with -dmin, the same rounding */
            if (Q5) {
                const __m128i p2 = _mm_add_epi32(prod, _mm_shuffle_epi32(prod, 0x4e));
                const __m128i p1 = _mm_add_epi32(p2, _mm_shuffle_epi32(p2, 0xb1));
                accm[r] = _mm_fnmadd_ss(_mm_movehdup_ps(dd), _mm_cvtepi32_ps(p1), accm[r]);
            } else {
                accm[r] = _mm_fnmadd_ps(_mm_movehdup_ps(dd), _mm_cvtepi32_ps(prod), accm[r]);
            }
            const __m512i sb = _mm512_broadcast_i32x4(sm);
            const __m512i sum = q45k_block_sums(xb + o_qs, xb + o_qh, sb, y0, y1, y2, y3, c0, c1, c2, c3, Q5, vnni);
            acc[r] = _mm256_fmadd_ps(_mm256_broadcastss_ps(dd), fold16(sum), acc[r]);
        }
    }
    UNROLL for (int r = 0; r < R; r++) {
        __m128 m = accm[r];
        if (!Q5) {
            m = _mm_add_ps(m, _mm_movehl_ps(m, m));
            m = _mm_add_ss(m, _mm_movehdup_ps(m));
        }
        s[r] = hsum_ps(acc[r]) + _mm_cvtss_f32(m);
    }
}

/* Q4_K or Q5_K, four rows times one column: q45k_rows' work, except that the
 * per-block scalars of the four rows are unpacked together, one row per
 * 128-bit lane: their 12 scale bytes as k4_sm does (a2 now comes from
 * vpshufd), their d and dmin in one vcvtph2ps, their mins times the pair
 * sums in one vpmaddwd and one FMA chain of 16 lanes, four per row, each
 * lane the same fnmadd of the same operands as q45k_rows'.  That is about
 * a third of q45k_rows' instructions per block and row. */
INLINE void q45k_rows4(int n, float *s, const uint8_t *x, size_t xs, const qt_block_q8_K *y, const int vnni,
                       const int Q5) {
    const __m512i c0 = word_pick(0, 2), c1 = word_pick(1, 3), c2 = word_pick(4, 6), c3 = word_pick(5, 7);
    const __m512i sh4 = _mm512_set_epi32(4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0);
    const __m512i pick_dmin = _mm512_set_epi32(7, 7, 7, 7, 5, 5, 5, 5, 3, 3, 3, 3, 1, 1, 1, 1);
    const size_t bs = Q5 ? sizeof(qt_block_q5_K) : sizeof(qt_block_q4_K), o_qs = Q5 ? 48 : 16;
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()}; /* rows 2p, 2p + 1 */
    __m512 accm = _mm512_setzero_ps();
    for (int i = 0; i < n / QK; i++) {
        const qt_block_q8_K *yb = &y[i];
        const __m512i y0 = pair256(yb->qs, 64), y1 = pair256(yb->qs + 32, 64);
        const __m512i y2 = pair256(yb->qs + 128, 64), y3 = pair256(yb->qs + 160, 64);
        const __m256i b = load256(yb->bsums);
        const __m512i b32 =
            _mm512_broadcast_i32x4(_mm_hadd_epi16(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1)));
        const uint8_t *xb[4];
        UNROLL for (int r = 0; r < 4; r++) {
            xb[r] = x + xs * (size_t)r + bs * (size_t)i;
            prefetch_block_ahead(xb[r], bs);
        }
        /* d, dmin of rows 0-3 in lanes 2r, 2r + 1, times y_d */
        uint32_t h[4];
        UNROLL for (int r = 0; r < 4; r++) memcpy(&h[r], xb[r], sizeof h[r]);
        const __m256 dd = _mm256_mul_ps(_mm256_set1_ps(yb->d),
                                        _mm256_cvtph_ps(_mm_setr_epi32((int)h[0], (int)h[1], (int)h[2], (int)h[3])));
        /* scales (bytes 0-7) and mins (8-15) of row r in lane r */
        __m512i a = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(xb[0] + 4)));
        a = _mm512_inserti32x4(a, _mm_loadu_si128((const __m128i *)(xb[1] + 4)), 1);
        a = _mm512_inserti32x4(a, _mm_loadu_si128((const __m128i *)(xb[2] + 4)), 2);
        a = _mm512_inserti32x4(a, _mm_loadu_si128((const __m128i *)(xb[3] + 4)), 3);
        const __m512i a2 = _mm512_shuffle_epi32(a, _MM_PERM_CCCC);
        const __m512i lo = _mm512_and_si512(a, _mm512_set1_epi8(0x3f));
        const __m512i hi = _mm512_or_si512(_mm512_and_si512(_mm512_srlv_epi32(a2, sh4), _mm512_set1_epi8(0x0f)),
                                           _mm512_and_si512(_mm512_srli_epi32(a, 2), _mm512_set1_epi8(0x30)));
        const __m512i sm = _mm512_unpacklo_epi32(lo, hi);
        __m512i prod = _mm512_madd_epi16(_mm512_unpackhi_epi8(sm, _mm512_setzero_si512()), b32);
        if (Q5) { /* summed per row, in every lane of its group */
            prod = _mm512_add_epi32(prod, _mm512_shuffle_epi32(prod, (_MM_PERM_ENUM)0x4e));
            prod = _mm512_add_epi32(prod, _mm512_shuffle_epi32(prod, (_MM_PERM_ENUM)0xb1));
        }
        /* fnmadd: vec_dot's fma with -dmin, the same rounding */
        accm = _mm512_fnmadd_ps(_mm512_permutexvar_ps(pick_dmin, _mm512_castps256_ps512(dd)), _mm512_cvtepi32_ps(prod),
                                accm);
        __m512i sums[4];
        UNROLL for (int r = 0; r < 4; r++) {
            /* (a vector index, not vshufi32x4's immediate: r need not
             * be a constant where the loop is not unrolled) */
            const __m512i sb = _mm512_permutexvar_epi32(
                _mm512_add_epi32(_mm512_set1_epi32(4 * r), _mm512_set4_epi32(3, 2, 1, 0)), sm);
            sums[r] = q45k_block_sums(xb[r] + o_qs, xb[r] + 16, sb, y0, y1, y2, y3, c0, c1, c2, c3, Q5, vnni);
        }
        acc[0] = _mm512_fmadd_ps(pick2(dd, 0, 2), fold16x2(sums[0], sums[1]), acc[0]);
        acc[1] = _mm512_fmadd_ps(pick2(dd, 4, 6), fold16x2(sums[2], sums[3]), acc[1]);
    }
    float mins[16];
    _mm512_storeu_ps(mins, accm);
    UNROLL for (int r = 0; r < 4; r++) {
        __m128 m = _mm_loadu_ps(mins + 4 * r);
        if (!Q5) {
            m = _mm_add_ps(m, _mm_movehl_ps(m, m));
            m = _mm_add_ss(m, _mm_movehdup_ps(m));
        }
        s[r] = hsum_ps(pair_half(acc[r / 2], r)) + _mm_cvtss_f32(m);
    }
}

INLINE void q4k_rows(int n, float *s, const uint8_t *x, size_t xs, const qt_block_q8_K *y, const int R,
                     const int vnni) {
    if (R == 4)
        q45k_rows4(n, s, x, xs, y, vnni, 0);
    else
        q45k_rows(n, s, x, xs, y, R, vnni, 0);
}

INLINE void q5k_rows(int n, float *s, const uint8_t *x, size_t xs, const qt_block_q8_K *y, const int R,
                     const int vnni) {
    if (R == 4)
        q45k_rows4(n, s, x, xs, y, vnni, 1);
    else
        q45k_rows(n, s, x, xs, y, R, vnni, 1);
}

/* R rows times one column, Q2_K. */
INLINE void q2k_rows(int n, float *s, const uint8_t *x, size_t xs, const qt_block_q8_K *y, const int R,
                    const int vnni) {
    const __m512i m3 = _mm512_set1_epi8(3);
    const __m128i m15 = _mm_set1_epi8(0x0f);
    /* chunk l of each 128-element half: sub-blocks 2l, 2l+1 (half 0) and
     * 8+2l, 9+2l (half 1), one per 128-bit lane */
    __m512i ctl[4];
    UNROLL for (int l = 0; l < 4; l++) {
        const short a = (short)(0x8000 | (2 * l)), b = (short)(0x8000 | (2 * l + 1));
        const short e = (short)(0x8000 | (8 + 2 * l)), f = (short)(0x8000 | (9 + 2 * l));
        ctl[l] = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_setr_m128i(_mm_set1_epi16(a), _mm_set1_epi16(b))),
            _mm256_setr_m128i(_mm_set1_epi16(e), _mm_set1_epi16(f)), 1);
    }
    __m256 acc[4];
    UNROLL for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();
    for (int i = 0; i < n / QK; i++) {
        const qt_block_q8_K *yb = &y[i];
        __m512i yv[4];
        UNROLL for (int l = 0; l < 4; l++) yv[l] = pair256(yb->qs + 32 * l, 128);
        const __m256i bs = load256(yb->bsums);
        const __m128 yd = _mm_set1_ps(yb->d);
        UNROLL for (int r = 0; r < R; r++) {
            const qt_block_q2_K *xb = (const qt_block_q2_K *)(x + xs * (size_t)r) + i;
            prefetch_block_ahead(xb, sizeof *xb);
            const __m128 dd = d_dmin(&xb->d, yd);
            const __m128i sm = _mm_loadu_si128((const __m128i *)xb->scales);
            const __m256i m16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), m15));
            const __m256 dmin = _mm256_broadcastss_ps(_mm_movehdup_ps(dd));
            acc[r] = _mm256_fnmadd_ps(dmin, _mm256_cvtepi32_ps(_mm256_madd_epi16(m16, bs)), acc[r]);
            const __m512i sb = _mm512_broadcast_i32x4(_mm_and_si128(sm, m15));
            const __m512i q = load512(xb->qs);
            __m512i sum = _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_and_si512(q, m3), yv[0]),
                                            _mm512_shuffle_epi8(sb, ctl[0]));
            UNROLL for (int l = 1; l < 4; l++) {
                const __m512i ql = _mm512_and_si512(_mm512_srli_epi16(q, 2 * l), m3);
                sum = madd_acc(sum, _mm512_maddubs_epi16(ql, yv[l]), _mm512_shuffle_epi8(sb, ctl[l]), vnni);
            }
            acc[r] = _mm256_fmadd_ps(_mm256_broadcastss_ps(dd), fold16(sum), acc[r]);
        }
    }
    UNROLL for (int r = 0; r < R; r++) s[r] = hsum_ps(acc[r]);
}

/* Q3_K's 16 signed 6-bit scales (-32..31) as bytes, as quant/ref_k.c
 * unpacks them: scale 4g + b is nibble g/2 (low or high by g & 1) of byte
 * b of word a[g & 1], with bits 2g, 2g+1 of byte b of a2 on top, less 32. */
INLINE __m128i q3k_scales(const uint8_t *s) {
    int64_t a01;
    uint32_t a2;
    memcpy(&a01, s, sizeof a01);
    memcpy(&a2, s + 8, sizeof a2);
    const __m128i lo = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi64x(a01), _mm_setr_epi32(0, 0, 4, 4)),
                                     _mm_set1_epi8(0x0f));
    const __m128i hi = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32((int)a2), _mm_setr_epi32(0, 2, 4, 6)),
                                     _mm_set1_epi8(0x03));
    return _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi32(hi, 4)), _mm_set1_epi8(32));
}

/* R rows times one column, Q3_K.  Per chunk, q + 4h (0..7) times y less
 * 4 times y's pair sums is vec_dot's (q - 4(1 - h))·y in int16, exactly;
 * the signed scales go into the high byte of each word (vpshufb cannot
 * sign-extend), so the lanes come out 256 times vec_dot's, and are
 * shifted back (|lane| < 2^28 before the shift: no overflow, no rest). */
INLINE void q3k_rows(int n, float *s, const uint8_t *x, size_t xs, const qt_block_q8_K *y, const int R,
                    const int vnni) {
    const __m512i m3 = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
    __m512i ctl[4], hb[4];
    UNROLL for (int l = 0; l < 4; l++) {
        /* sub-blocks 2l, 2l+1 (half 0) and 8+2l, 9+2l (half 1), one per
         * 128-bit lane; the high-bit plane l (half 0) and 4+l (half 1) */
        const short a = (short)(0x80 | (2 * l) << 8), b = (short)(0x80 | (2 * l + 1) << 8);
        const short e = (short)(0x80 | (8 + 2 * l) << 8), f = (short)(0x80 | (9 + 2 * l) << 8);
        ctl[l] = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_setr_m128i(_mm_set1_epi16(a), _mm_set1_epi16(b))),
            _mm256_setr_m128i(_mm_set1_epi16(e), _mm_set1_epi16(f)), 1);
        hb[l] = _mm512_inserti64x4(_mm512_set1_epi8((char)(1 << l)), _mm256_set1_epi8((char)(1 << (4 + l))), 1);
    }
    __m256 acc[4];
    UNROLL for (int r = 0; r < R; r++) acc[r] = _mm256_setzero_ps();
    for (int i = 0; i < n / QK; i++) {
        const qt_block_q8_K *yb = &y[i];
        __m512i yv[4], y4[4];
        UNROLL for (int l = 0; l < 4; l++) {
            yv[l] = pair256(yb->qs + 32 * l, 128);
            y4[l] = _mm512_maddubs_epi16(four, yv[l]);
        }
        const __m256 yd = _mm256_set1_ps(yb->d);
        UNROLL for (int r = 0; r < R; r++) {
            const qt_block_q3_K *xb = (const qt_block_q3_K *)(x + xs * (size_t)r) + i;
            prefetch_block_ahead(xb, sizeof *xb);
            uint16_t dh;
            memcpy(&dh, &xb->d, sizeof dh);
            const __m256 d = _mm256_mul_ps(yd, _mm256_cvtph_ps(_mm_set1_epi16((short)dh)));
            const __m512i sb = _mm512_broadcast_i32x4(q3k_scales(xb->scales));
            const __m512i q = load512(xb->qs);
            const __m512i h = _mm512_broadcast_i64x4(load256(xb->hmask));
            __m512i sum = _mm512_setzero_si512();
            UNROLL for (int l = 0; l < 4; l++) {
                const __m512i ql = _mm512_and_si512(l ? _mm512_srli_epi16(q, 2 * l) : q, m3);
                const __m512i u = _mm512_mask_add_epi8(ql, _mm512_test_epi8_mask(h, hb[l]), ql, four);
                const __m512i p = _mm512_sub_epi16(_mm512_maddubs_epi16(u, yv[l]), y4[l]);
                sum = madd_acc(sum, p, _mm512_shuffle_epi8(sb, ctl[l]), vnni);
            }
            const __m256i l8 = _mm256_add_epi32(_mm512_castsi512_si256(sum), _mm512_extracti64x4_epi64(sum, 1));
            acc[r] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(_mm256_srai_epi32(l8, 8)), acc[r]);
        }
    }
    UNROLL for (int r = 0; r < R; r++) s[r] = hsum_ps(acc[r]);
}

/* Rows G at a time (the rest one by one), each group times every column
 * in turn, so a group's rows (a few KB) are read from memory once and
 * from L1 for the other columns; VNNI: the AVX512-VNNI variant.  G is 2
 * where two streams read faster than four (one thread, one column, GB/s:
 * Q5_K 14.1-14.3 against 11.9-12.3, Q2_K 10.5-11.4 against 10.3-10.7),
 * 4 where the four rows' shared work pays (Q4_K's scale unpacking: the
 * same speed; Q3_K: 11.7 against 11.0). */
#define K_ROWS_TILE(NAME, ROWS, VNNI, G)                                                                         \
    void NAME(int n, float *s, size_t ldo, const void *x, size_t xs, int nr, const void *y, size_t ys, int nc) { \
        for (int r = 0; r < nr;) {                                                                               \
            const int g = nr - r >= G ? G : 1;                                                                   \
            const uint8_t *xr = (const uint8_t *)x + xs * (size_t)r;                                             \
            for (int c = 0; c < nc; c++) {                                                                       \
                const qt_block_q8_K *yc = (const qt_block_q8_K *)((const uint8_t *)y + ys * (size_t)c);          \
                if (g == G)                                                                                      \
                    ROWS(n, s + ldo * (size_t)c + r, xr, xs, yc, G, VNNI);                                       \
                else                                                                                             \
                    ROWS(n, s + ldo * (size_t)c + r, xr, xs, yc, 1, VNNI);                                       \
            }                                                                                                    \
            r += g;                                                                                              \
        }                                                                                                        \
    }
K_ROWS_TILE(qt_avx512_vec_dot_tile_q2_K_q8_K, q2k_rows, 0, 2)
K_ROWS_TILE(qt_avx512_vec_dot_tile_q3_K_q8_K, q3k_rows, 0, 4)
K_ROWS_TILE(qt_avx512_vec_dot_tile_q4_K_q8_K, q4k_rows, 0, 4)
K_ROWS_TILE(qt_avx512_vec_dot_tile_q5_K_q8_K, q5k_rows, 0, 2)
K_ROWS_TILE(qt_avx512_vnni_vec_dot_tile_q2_K_q8_K, q2k_rows, 1, 2)
K_ROWS_TILE(qt_avx512_vnni_vec_dot_tile_q3_K_q8_K, q3k_rows, 1, 4)
K_ROWS_TILE(qt_avx512_vnni_vec_dot_tile_q4_K_q8_K, q4k_rows, 1, 4)
K_ROWS_TILE(qt_avx512_vnni_vec_dot_tile_q5_K_q8_K, q5k_rows, 1, 2)

/* ---- Q8_K quantizer ------------------------------------------------------ *
 * x86_avx2_k.c's qt_avx2_quantize_q8_K 16 elements a register (its notes
 * on the reference's rounding hold here), with the 16 sums of 16 taken
 * from the int32 quants at once: each sub-block's sum by itself was a
 * chain of 7 operations, twice per 32 elements.  It quantizes every
 * K-quant matmul's activations: ~3% of a TinyLlama-shape Q4_K_M pp512. */

/* The 16 lanes' sums of q[0..15], in order: pairs of registers folded
 * by unpacks, then by 128-bit lanes. */
INLINE __m512i sums16(const __m512i q[16])
{
    __m512i t[8], u[4];
#pragma GCC unroll 8
    for (int m = 0; m < 8; m++) /* per 128-bit lane: q[2m] at dwords 0 and 2, q[2m+1] at 1 and 3 */
        t[m] = _mm512_add_epi32(_mm512_unpacklo_epi32(q[2 * m], q[2 * m + 1]),
                                _mm512_unpackhi_epi32(q[2 * m], q[2 * m + 1]));
#pragma GCC unroll 4
    for (int m = 0; m < 4; m++) /* per 128-bit lane: q[4m..4m+3] at dwords 0..3 */
        u[m] = _mm512_add_epi32(_mm512_unpacklo_epi64(t[2 * m], t[2 * m + 1]),
                                _mm512_unpackhi_epi64(t[2 * m], t[2 * m + 1]));
    const __m512i w01 = _mm512_add_epi32(_mm512_shuffle_i32x4(u[0], u[1], 0x44), _mm512_shuffle_i32x4(u[0], u[1], 0xee));
    const __m512i w23 = _mm512_add_epi32(_mm512_shuffle_i32x4(u[2], u[3], 0x44), _mm512_shuffle_i32x4(u[2], u[3], 0xee));
    return _mm512_add_epi32(_mm512_shuffle_i32x4(w01, w23, 0x88), _mm512_shuffle_i32x4(w01, w23, 0xdd));
}

void qt_avx512_quantize_q8_K(const float *src, void *dst, int64_t n)
{
    qt_block_q8_K *y = dst;
    for (int64_t i = 0; i < n / QT_QK_K; i++) {
        const float *x = src + i * QT_QK_K;
        __m512 v[16], vmax = _mm512_setzero_ps();
        __mmask16 bad = 0;
#pragma GCC unroll 16
        for (int k = 0; k < 16; k++) {
            v[k] = _mm512_loadu_ps(x + 16 * k);
            const __m512 a = _mm512_abs_ps(v[k]);
            vmax = _mm512_max_ps(vmax, a);
            bad |= _mm512_cmp_ps_mask(a, _mm512_set1_ps(FLT_MAX), _CMP_NLE_UQ);
        }
        const float amax = bad ? 0.0f : _mm512_reduce_max_ps(vmax);
        if (amax == 0.0f) { /* NaN, inf or all zero: the reference's bytes */
            qt_from_float_q8_K(x, &y[i], QT_QK_K);
            continue;
        }
        /* The sign comes from the first element of that magnitude. */
        float max = amax;
        for (int k = 0; k < 16; k++) {
            const __mmask16 hit = _mm512_cmp_ps_mask(_mm512_abs_ps(v[k]), _mm512_set1_ps(amax), _CMP_EQ_OQ);
            if (hit) {
                max = x[16 * k + __builtin_ctz((unsigned)hit)];
                break;
            }
        }
        const float iscale = -127.f / max;
        if (!(iscale >= -FLT_MAX && iscale <= FLT_MAX)) {
            qt_from_float_q8_K(x, &y[i], QT_QK_K);
            continue;
        }
        const __m512 vs = _mm512_set1_ps(iscale);
        __m512i q[16];
#pragma GCC unroll 16
        for (int k = 0; k < 16; k++) {
            q[k] = _mm512_cvtps_epi32(_mm512_mul_ps(v[k], vs));
            _mm_storeu_si128((__m128i *)(y[i].qs + 16 * k), _mm512_cvtsepi32_epi8(q[k]));
        }
        _mm256_storeu_si256((__m256i *)y[i].bsums, _mm512_cvtepi32_epi16(sums16(q)));
        y[i].d = 1 / iscale;
    }
}

#else

/* ISO C wants a declaration in every translation unit. */
typedef int qt_x86_avx512_k_unused;

#endif
