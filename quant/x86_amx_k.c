/* x86_amx_k.c - quant/tiles.h's kernel for the tiled K-quant order
 * (quant/tiled.h) with AMX-INT8 tile products, for Q2_K..Q6_K weights.
 *
 * Compiled with the AVX-512 flags plus -mamx-tile -mamx-int8; reached only
 * through qt_tiles_for() when qt_amx_active() (CPU, OS and QLM_ISA allow).
 *
 * The order needs, per output and 256-element block, two exact integers,
 * isum = Σ sc·(q - bias)·y and (types with mins) imin = Σ m·bsum, then
 * three float steps.  A tile product (TDPBUSD/TDPBSSD) costs the same for
 * K = 16, 32 or 64 bytes, so only whole 64-element chunks pay: the block's
 * scales are folded into the weight bytes, and one tile accumulates the
 * whole block (4 products) exactly in int32:
 *   - Q2_K: sc·q <= 15·3 fits an unsigned byte: one operand;
 *   - Q4_K, Q5_K: sc·q reaches 63·31, so sc = 8·sh + sl (both <= 7) gives
 *     two operands sl·q and sh·q (<= 217), isum = C_lo + 8·C_hi;
 *   - Q3_K: sc·(q - 4) spans [-124, 128]; its negation (4 - q)·sc spans
 *     [-128, 124], a signed byte: TDPBSSD gives -isum;
 *   - Q6_K: p = (q - 32)·sc lies in [-4064, 4096]; p = a1 + 64·a2 with
 *     a2 = (p + 32) >> 6 in [-63, 64] and a1 in [-32, 31]: two signed
 *     operands (build_row_q6), TDPBSSD, isum = C_1 + 64·C_2;
 *   - mins: m per element (<= 63) times y gives Σ m·y = Σ m·bsum (the
 *     bsums are the sums of the activation bytes), one more operand.
 * The weights are the A operand (16 rows x 64 bytes, built per block in
 * their natural order), the activations the B operand: quant/tiles.h's
 * packed Q8_K tile is already the VNNI layout AMX wants (4-byte groups of
 * 16 columns, 64 bytes a row), so a block's chunk c is a tile at offset
 * 1024·c with stride 64.  C[row][column] then goes through the reference's
 * float steps, 16 columns per register, so every output has qt_tiled_dot's
 * bits whatever the other columns of the call. */
#if defined(__x86_64__)

#include <float.h>
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "blocks.h"
#include "fp16.h"
#include "ref.h"
#include "tiled.h"
#include "tiles.h"
#include "x86_avx512_tiles.h"

#define INLINE static inline __attribute__((always_inline))

#define ROWS 16   /* weight rows per tile */
#define CHUNKS 4  /* 64-element tile products per block */
#define PASS_TILES 32 /* column tiles whose float sums stay in one array */
#ifndef PASS_BYTES
#define PASS_BYTES (1536 * 1024)
#endif
#define BLOCK_BYTES (QT_TILE_COLS * QT_QK_K + QT_TILE_COLS * QT_QK_K / 16 * sizeof(int16_t) + QT_TILE_COLS * sizeof(float))

/* Tile registers (literal numbers: GCC's tile intrinsics paste them into
 * the instruction): results of the operands lo, hi, min; the
 * activations; the operands. */
#define T_CLO 0
#define T_CHI 1
#define T_CMIN 2
#define T_B 3
#define T_ALO 4
#define T_AHI 5
#define T_AMIN 6
#define N_TILES 8

typedef struct tilecfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tilecfg;

/* One block of a group of 16 weight rows, as tile operands. */
typedef struct wgroup {
    uint8_t a[3][CHUNKS][ROWS][64]; /* operand (lo, hi, min; Q6_K's a1, a2); chunk; row */
    float d[ROWS], neg_dmin[ROWS];
} wgroup;

/* The 64 quants of chunk c (elements 64c..64c+63) as unsigned bytes,
 * bias not removed; element order is qt_tiled_unpack's. */
INLINE __m256i bits(__m256i v, int shift, int mask)
{
    return _mm256_and_si256(_mm256_srli_epi16(v, shift), _mm256_set1_epi8((char)mask));
}

INLINE __m256i add_if_bit(__m256i q, __m256i h, int bit, int add)
{
    return _mm256_mask_add_epi8(q, _mm256_test_epi8_mask(h, _mm256_set1_epi8((char)(1 << bit))), q,
                                _mm256_set1_epi8((char)add));
}

INLINE __m512i join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

INLINE __m512i chunk_quants(qt_type type, const uint8_t *x, int c)
{
    switch (type) {
    case QT_Q2_K:
    case QT_Q3_K: {
        /* 2-bit fields: 32 bytes per 128 elements, field 2(c%2) and the
         * next; Q3_K's hmask bits 2c, 2c+1 add 4 */
        const qt_block_q3_K *b3 = (const qt_block_q3_K *)x;
        const uint8_t *qs = type == QT_Q2_K ? ((const qt_block_q2_K *)x)->qs : b3->qs;
        const __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * (c / 2)));
        __m256i lo = bits(v, 4 * (c % 2), 3), hi = bits(v, 4 * (c % 2) + 2, 3);
        if (type == QT_Q3_K) {
            const __m256i hm = _mm256_loadu_si256((const __m256i *)b3->hmask);
            lo = add_if_bit(lo, hm, 2 * c, 4);
            hi = add_if_bit(hi, hm, 2 * c + 1, 4);
        }
        return join(lo, hi);
    }
    default: {
        /* nibbles of 32 bytes; Q5_K's qh bits 2c, 2c+1 add 16 */
        const uint8_t *qs = type == QT_Q4_K ? ((const qt_block_q4_K *)x)->qs : ((const qt_block_q5_K *)x)->qs;
        const __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
        __m256i lo = bits(v, 0, 0x0f), hi = bits(v, 4, 0x0f);
        if (type == QT_Q5_K) {
            const __m256i qh = _mm256_loadu_si256((const __m256i *)((const qt_block_q5_K *)x)->qh);
            lo = add_if_bit(lo, qh, 2 * c, 16);
            hi = add_if_bit(hi, qh, 2 * c + 1, 16);
        }
        return join(lo, hi);
    }
    }
}

/* Q6_K's chunk c as low nibbles and high 2-bit fields (unsigned). */
INLINE void chunk_q6(const qt_block_q6_K *x, int c, __m512i *ql, __m512i *qh)
{
    const int h = c / 2, nib = 4 * (c % 2), part = 2 * (c % 2);
    const __m256i v0 = _mm256_loadu_si256((const __m256i *)(x->ql + 64 * h));
    const __m256i v1 = _mm256_loadu_si256((const __m256i *)(x->ql + 64 * h + 32));
    const __m256i hb = _mm256_loadu_si256((const __m256i *)(x->qh + 32 * h));
    *ql = join(bits(v0, nib, 0x0f), bits(v1, nib, 0x0f));
    *qh = join(bits(hb, 2 * part, 3), bits(hb, 2 * part + 2, 3));
}

/* Signed 16-bit products of the 64 bytes u (as unsigned, minus `sub`) by
 * the scales in the words of sc (element word w of half h: scale
 * index lo/hi), narrowed to bytes: the values must fit int8. */
INLINE __m512i products16(__m512i u, int sub, __m512i sc, __m512i i_lo, __m512i i_hi)
{
    const __m512i e_lo = _mm512_sub_epi16(_mm512_cvtepu8_epi16(_mm512_castsi512_si256(u)), _mm512_set1_epi16((short)sub));
    const __m512i e_hi = _mm512_sub_epi16(_mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(u, 1)), _mm512_set1_epi16((short)sub));
    return join(_mm512_cvtepi16_epi8(_mm512_mullo_epi16(e_lo, _mm512_permutexvar_epi16(i_lo, sc))),
                _mm512_cvtepi16_epi8(_mm512_mullo_epi16(e_hi, _mm512_permutexvar_epi16(i_hi, sc))));
}

/* Word w of chunk c holds elements 64c + 2w, +1: scale 4c + w/8. */
INLINE __m512i pair_index(int c)
{
    return _mm512_add_epi16(_mm512_set1_epi16((short)(4 * c)),
                            _mm512_srli_epi16(_mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18,
                                                               17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2,
                                                               1, 0),
                                              3));
}

/* Row i of group g from the block at x. */
/* A block's scales as 16 words (one per 16 elements) in the low half of
 * each register: lo, hi (Q4_K/Q5_K: sc = 8·hi + lo; others: lo = sc) and
 * the min in both bytes of its word. */
typedef struct row_scales {
    __m512i lo, hi, m2;
} row_scales;

/* m in both bytes of each word, the 16 bytes of m16 (one per word) */
INLINE __m512i both_bytes(__m128i m16)
{
    return _mm512_castsi256_si512(
        _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi8(m16, m16)), _mm_unpackhi_epi8(m16, m16), 1));
}

/* Q4_K/Q5_K's 12 bytes of 6-bit scales and mins (k_scale_min's layout:
 * j < 4: low 6 bits of bytes j and j+4; j >= 4: nibbles of byte j+4 with
 * the top 2 bits of bytes j-4 and j above them), by byte shuffles; the
 * 16-byte load stays inside the block (the quants follow). */
INLINE row_scales scales_q45(const uint8_t *scales)
{
    const __m128i b = _mm_loadu_si128((const __m128i *)scales), top = _mm_set1_epi8((char)0xc0);
    const __m128i s_low = _mm_shuffle_epi8(b, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, -1, -1, -1, -1, -1, -1, -1, -1));
    const __m128i m_low = _mm_shuffle_epi8(b, _mm_setr_epi8(4, 5, 6, 7, 8, 9, 10, 11, -1, -1, -1, -1, -1, -1, -1, -1));
    const __m128i s_top = _mm_shuffle_epi8(b, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, -1, -1, -1, -1));
    const __m128i m_top = _mm_shuffle_epi8(b, _mm_setr_epi8(-1, -1, -1, -1, 4, 5, 6, 7, -1, -1, -1, -1, -1, -1, -1, -1));
    const __m128i low6 = _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m128i hi4 = _mm_setr_epi8(0, 0, 0, 0, 15, 15, 15, 15, 0, 0, 0, 0, 0, 0, 0, 0);
    /* (x & 0xc0) >> 2 in 16-bit lanes moves no bits across bytes */
    const __m128i sc = _mm_or_si128(_mm_and_si128(s_low, low6), _mm_srli_epi16(_mm_and_si128(s_top, top), 2));
    const __m128i mn = _mm_or_si128(
        _mm_or_si128(_mm_and_si128(m_low, _mm_setr_epi8(63, 63, 63, 63, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
                     _mm_and_si128(_mm_srli_epi16(m_low, 4), hi4)),
        _mm_srli_epi16(_mm_and_si128(m_top, top), 2));
    /* each of the 8 per 32 elements for its two 16-element groups */
    const __m256i sc16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(sc, sc));
    row_scales r;
    r.lo = _mm512_castsi256_si512(_mm256_and_si256(sc16, _mm256_set1_epi16(7)));
    r.hi = _mm512_castsi256_si512(_mm256_srli_epi16(sc16, 3));
    r.m2 = both_bytes(_mm_unpacklo_epi8(mn, mn));
    return r;
}

/* Q2_K: a byte per 16 elements, scale in the low nibble, min above. */
INLINE row_scales scales_q2(const uint8_t *scales)
{
    const __m128i b = _mm_loadu_si128((const __m128i *)scales), nib = _mm_set1_epi8(15);
    row_scales r;
    r.lo = _mm512_castsi256_si512(_mm256_cvtepu8_epi16(_mm_and_si128(b, nib)));
    r.hi = _mm512_setzero_si512();
    r.m2 = both_bytes(_mm_and_si128(_mm_srli_epi16(b, 4), nib));
    return r;
}

/* Q3_K: qt_tiled_unpack_scales's signed scales. */
INLINE row_scales scales_q3(const uint8_t *x)
{
    qt_tiled_block k;
    qt_tiled_unpack_scales(QT_Q3_K, x, &k);
    row_scales r;
    r.lo = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)k.sc));
    r.hi = r.m2 = _mm512_setzero_si512();
    return r;
}

INLINE void build_row(qt_type type, const uint8_t *x, wgroup *g, int i)
{
    row_scales s;
    if (type == QT_Q2_K) {
        const qt_block_q2_K *b = (const qt_block_q2_K *)x;
        s = scales_q2(b->scales);
        g->d[i] = qt_f16_to_f32(b->d);
        g->neg_dmin[i] = -qt_f16_to_f32(b->dmin);
    } else if (type == QT_Q3_K) {
        s = scales_q3(x);
        g->d[i] = qt_f16_to_f32(((const qt_block_q3_K *)x)->d);
        g->neg_dmin[i] = 0.0f;
    } else {
        const qt_block_q4_K *b4 = (const qt_block_q4_K *)x;
        const qt_block_q5_K *b5 = (const qt_block_q5_K *)x;
        s = scales_q45(type == QT_Q4_K ? b4->scales : b5->scales);
        g->d[i] = qt_f16_to_f32(type == QT_Q4_K ? b4->d : b5->d);
        g->neg_dmin[i] = -qt_f16_to_f32(type == QT_Q4_K ? b4->dmin : b5->dmin);
    }
    const bool mins = type != QT_Q3_K;
    const __m512i vlo = s.lo, vhi = s.hi, vm = s.m2;
    for (int c = 0; c < CHUNKS; c++) {
        const __m512i idx = pair_index(c);
        /* element word w of half h: scale 4c + 2h + w/16 */
        const __m512i i_lo = _mm512_add_epi16(_mm512_set1_epi16((short)(4 * c)),
                                              _mm512_srli_epi16(_mm512_sub_epi16(idx, _mm512_set1_epi16((short)(4 * c))), 1));
        const __m512i i_hi = _mm512_add_epi16(i_lo, _mm512_set1_epi16(2));
        const __m512i q = chunk_quants(type, x, c);
        if (type == QT_Q3_K) { /* (q - 4)·(-sc) */
            _mm512_storeu_si512(g->a[0][c][i], products16(q, 4, _mm512_sub_epi16(_mm512_setzero_si512(), vlo), i_lo, i_hi));
            continue;
        }
        /* both bytes of a word share a scale s and s·q < 256: one 16-bit
         * multiply gives both byte products without carries */
        _mm512_storeu_si512(g->a[0][c][i], _mm512_mullo_epi16(q, _mm512_permutexvar_epi16(idx, vlo)));
        if (type == QT_Q4_K || type == QT_Q5_K)
            _mm512_storeu_si512(g->a[1][c][i], _mm512_mullo_epi16(q, _mm512_permutexvar_epi16(idx, vhi)));
        if (mins) _mm512_storeu_si512(g->a[2][c][i], _mm512_permutexvar_epi16(idx, vm));
    }
}

/* Q6_K's row: each element's product p = (q - 32)·sc (int16: |p| <= 4096)
 * split into a2 = (p + 32) >> 6 and a1 = p - 64·a2, both signed bytes, so
 * that Σ p·y = C_1 + 64·C_2 exactly. */
INLINE void build_row_q6(const qt_block_q6_K *x, wgroup *g, int i)
{
    g->d[i] = qt_f16_to_f32(x->d);
    g->neg_dmin[i] = 0.0f;
    const __m512i vsc = _mm512_castsi256_si512(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->scales)));
    for (int c = 0; c < CHUNKS; c++) {
        /* element word w of half h: scale 4c + 2h + w/16 */
        const __m512i i_lo = _mm512_add_epi16(_mm512_set1_epi16((short)(4 * c)),
                                              _mm512_srli_epi16(_mm512_sub_epi16(pair_index(c), _mm512_set1_epi16((short)(4 * c))), 1));
        const __m512i i_hi = _mm512_add_epi16(i_lo, _mm512_set1_epi16(2));
        __m512i ql, qh;
        chunk_q6(x, c, &ql, &qh);
        /* q = ql + 16·qh: qh <= 3 shifts within its byte */
        const __m512i q = _mm512_sub_epi8(_mm512_or_si512(ql, _mm512_slli_epi16(qh, 4)), _mm512_set1_epi8(32));
        __m512i a1[2], a2[2];
        for (int h = 0; h < 2; h++) {
            const __m512i e = _mm512_cvtepi8_epi16(h ? _mm512_extracti64x4_epi64(q, 1) : _mm512_castsi512_si256(q));
            const __m512i p = _mm512_mullo_epi16(e, _mm512_permutexvar_epi16(h ? i_hi : i_lo, vsc));
            a2[h] = _mm512_srai_epi16(_mm512_add_epi16(p, _mm512_set1_epi16(32)), 6);
            a1[h] = _mm512_sub_epi16(p, _mm512_slli_epi16(a2[h], 6));
        }
        _mm512_storeu_si512(g->a[0][c][i], join(_mm512_cvtepi16_epi8(a1[0]), _mm512_cvtepi16_epi8(a1[1])));
        _mm512_storeu_si512(g->a[1][c][i], join(_mm512_cvtepi16_epi8(a2[0]), _mm512_cvtepi16_epi8(a2[1])));
    }
}

INLINE void zero_row(wgroup *g, int i)
{
    for (int p = 0; p < 3; p++)
        for (int c = 0; c < CHUNKS; c++) memset(g->a[p][c][i], 0, 64);
    g->d[i] = g->neg_dmin[i] = 0.0f;
}

/* The integer sums of one block and one column tile (tile products over
 * the 4 chunks), stored to cs. */
INLINE void block_sums(qt_type type, const wgroup *g, const uint8_t *blk, int32_t cs[3][ROWS][16])
{
    const bool two = type == QT_Q4_K || type == QT_Q5_K || type == QT_Q6_K,
               three = type != QT_Q3_K && type != QT_Q6_K;
    _tile_zero(T_CLO);
    if (two) _tile_zero(T_CHI);
    if (three) _tile_zero(T_CMIN);
    for (int c = 0; c < CHUNKS; c++) {
        _tile_loadd(T_B, blk + 1024 * c, 64);
        _tile_loadd(T_ALO, g->a[0][c], 64);
        if (two) _tile_loadd(T_AHI, g->a[1][c], 64);
        if (three) _tile_loadd(T_AMIN, g->a[2][c], 64);
        if (type == QT_Q6_K) {
            _tile_dpbssd(T_CLO, T_ALO, T_B);
            _tile_dpbssd(T_CHI, T_AHI, T_B);
            continue;
        }
        if (type == QT_Q3_K)
            _tile_dpbssd(T_CLO, T_ALO, T_B);
        else
            _tile_dpbusd(T_CLO, T_ALO, T_B);
        if (two) _tile_dpbusd(T_CHI, T_AHI, T_B);
        if (three) _tile_dpbusd(T_CMIN, T_AMIN, T_B);
    }
    _tile_stored(T_CLO, cs[0], 64);
    if (two) _tile_stored(T_CHI, cs[1], 64);
    if (three) _tile_stored(T_CMIN, cs[2], 64);
}

/* The reference's float steps on those sums into acc[i], rows i < nr;
 * the first block adds to zeros (not to a zeroed array: clearing a pass's
 * accumulators in memory cost a memset per row group). */
INLINE void block_floats(qt_type type, const wgroup *g, const uint8_t *blk, int32_t cs[3][ROWS][16],
                         __m512 acc[ROWS], int nr, bool first)
{
    const bool two = type == QT_Q4_K || type == QT_Q5_K, mins = type == QT_Q2_K || two;
    const __m512 dy =
        _mm512_loadu_ps((const float *)(blk + QT_TILE_COLS * QT_QK_K + QT_TILE_COLS * QT_QK_K / 16 * sizeof(int16_t)));
    for (int i = 0; i < nr; i++) {
        __m512i isum = _mm512_load_si512(cs[0][i]);
        if (two) isum = _mm512_add_epi32(isum, _mm512_slli_epi32(_mm512_load_si512(cs[1][i]), 3));
        if (type == QT_Q6_K) isum = _mm512_add_epi32(isum, _mm512_slli_epi32(_mm512_load_si512(cs[1][i]), 6));
        if (type == QT_Q3_K) isum = _mm512_sub_epi32(_mm512_setzero_si512(), isum);
        __m512 r = _mm512_mul_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(g->d[i]));
        if (mins)
            r = _mm512_fmadd_ps(_mm512_set1_ps(g->neg_dmin[i]), _mm512_cvtepi32_ps(_mm512_load_si512(cs[2][i])), r);
        acc[i] = _mm512_fmadd_ps(r, dy, first ? _mm512_setzero_ps() : acc[i]);
    }
}

/* The finished sums of column tile t (acc: one register per row, 16
 * columns) out: transposed in registers so that each column's 16 rows are
 * one masked store.  Done as each tile finishes, between the next tile's
 * products, so the stores (one line per column, each a miss) drain while
 * the tile unit works instead of in one burst per row group. */
INLINE void write_tile(float *out, size_t out_stride, int col, int cols, int r0, int nr, const __m512 acc[ROWS])
{
    __m512 v[ROWS];
    for (int i = 0; i < ROWS; i++) v[i] = i < nr ? acc[i] : _mm512_setzero_ps(); /* rows past nr: never summed */
    qt_transpose16(v);
    const __mmask16 m = (__mmask16)(nr == ROWS ? 0xffff : (1u << nr) - 1);
    for (int c = 0; c < cols; c++) _mm512_mask_storeu_ps(out + (size_t)(col + c) * out_stride + r0, m, v[c]);
}

/* x16: w is whole groups of repack.h's x16 layout (Q2_K, Q3_K), each
 * super-block of a group's 16 rows turned back into their blocks first */
INLINE void run(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *packed, int ncols,
                float *out, size_t out_stride, const int x16)
{
    const int nb = n / QT_QK_K;
    const size_t wbytes = qt_get(type)->type_size, tile_bytes = (size_t)nb * BLOCK_BYTES;
    _Alignas(64) wgroup g;
    _Alignas(64) uint8_t rows16[ROWS * sizeof(qt_block_q3_K)];
    /* two sets of sums: a tile's float steps run one tile behind its
     * products, so the vector loads never wait on the tile stores just
     * issued (stores do not forward to loads) */
    _Alignas(64) int32_t cs[2][3][ROWS][16];
    /* a pass's packed activations stay within L2 while its row groups go
     * by; more columns per pass fold each block's weights fewer times */
    int pass_tiles = (int)(PASS_BYTES / tile_bytes);
    pass_tiles = pass_tiles > PASS_TILES ? PASS_TILES : pass_tiles < 4 ? 4 : pass_tiles;
    for (int c0 = 0; c0 < ncols; c0 += pass_tiles * QT_TILE_COLS) {
        const int nc = ncols - c0 < pass_tiles * QT_TILE_COLS ? ncols - c0 : pass_tiles * QT_TILE_COLS;
        const int nt = (nc + QT_TILE_COLS - 1) / QT_TILE_COLS;
        const uint8_t *pass = (const uint8_t *)packed + (size_t)(c0 / QT_TILE_COLS) * tile_bytes;
        for (int r0 = 0; r0 < nrows; r0 += ROWS) {
            const int nr = nrows - r0 < ROWS ? nrows - r0 : ROWS;
            for (int i = nr; i < ROWS; i++) zero_row(&g, i);
            __m512 acc[PASS_TILES][ROWS];
            for (int b = 0; b < nb; b++) {
                /* the next block of these rows (after the last, the next
                 * group's first): rows of a few blocks are streams too
                 * short for the hardware prefetchers */
                if (x16) { /* the group is one stream, on into the next group */
                    const uint8_t *sb = (const uint8_t *)w + (size_t)r0 * w_stride + (size_t)b * ROWS * wbytes;
                    for (size_t o = 0; o < ROWS * wbytes; o += 64) _mm_prefetch((const char *)sb + ROWS * wbytes + o, _MM_HINT_T0);
                    qt_x16_k_rows(type, sb, rows16);
                } else {
                    for (int i = 0; i < ROWS; i++) {
                        const int rn = b + 1 < nb ? r0 + i : r0 + ROWS + i, bn = b + 1 < nb ? b + 1 : 0;
                        if (rn >= nrows) break;
                        const char *nx = (const char *)w + (size_t)rn * w_stride + (size_t)bn * wbytes;
                        for (size_t o = 0; o < wbytes; o += 64) _mm_prefetch(nx + o, _MM_HINT_T0);
                    }
                }
                for (int i = 0; i < nr; i++) {
                    const uint8_t *x = x16 ? rows16 + (size_t)i * wbytes
                                           : (const uint8_t *)w + (size_t)(r0 + i) * w_stride + (size_t)b * wbytes;
                    if (type == QT_Q6_K)
                        build_row_q6((const qt_block_q6_K *)x, &g, i);
                    else
                        build_row(type, x, &g, i);
                }
                const uint8_t *blk = pass + (size_t)b * BLOCK_BYTES;
                const bool last = b + 1 == nb;
                for (int t = 0; t <= nt; t++) {
                    if (t < nt) {
                        /* this group's output lines, owned by the time the
                         * last block writes them: a few per block (a burst
                         * for every column at once stalled on the fill
                         * buffers) */
                        for (int c = b * QT_TILE_COLS / nb; c < (b + 1) * QT_TILE_COLS / nb && t * QT_TILE_COLS + c < nc;
                             c++)
                            __builtin_prefetch(out + (size_t)(c0 + t * QT_TILE_COLS + c) * out_stride + r0, 1, 3);
                        block_sums(type, &g, blk + (size_t)t * tile_bytes, cs[t % 2]);
                    }
                    if (t == 0) continue;
                    block_floats(type, &g, blk + (size_t)(t - 1) * tile_bytes, cs[(t - 1) % 2], acc[t - 1], nr, b == 0);
                    if (last) {
                        const int col = (t - 1) * QT_TILE_COLS;
                        write_tile(out, out_stride, c0 + col, nc - col < QT_TILE_COLS ? nc - col : QT_TILE_COLS, r0,
                                   nr, acc[t - 1]);
                    }
                }
            }
        }
    }
}

#define RUN_TYPE(name, type, x16)                                                                                 \
    static void name(int n, const void *w, size_t w_stride, int nrows, const void *packed, int ncols, float *out, \
                     size_t out_stride)                                                                           \
    {                                                                                                             \
        run(type, n, w, w_stride, nrows, packed, ncols, out, out_stride, x16);                                    \
    }
RUN_TYPE(run_q2_K, QT_Q2_K, 0)
RUN_TYPE(run_q3_K, QT_Q3_K, 0)
RUN_TYPE(run_q4_K, QT_Q4_K, 0)
RUN_TYPE(run_q5_K, QT_Q5_K, 0)
RUN_TYPE(run_q6_K, QT_Q6_K, 0)
RUN_TYPE(run_q2_K_x16, QT_Q2_K, 1)
RUN_TYPE(run_q3_K_x16, QT_Q3_K, 1)
#undef RUN_TYPE

/* ---- activations: quantized straight into the packed tiles ------------- */

/* One column's 256 floats as qt_quantize_act_q8_K quantizes them: the
 * signed value of the first largest magnitude sets iscale = -127/max, each
 * byte is x·iscale rounded to nearest even (vcvtps2dq in the default mode,
 * as ggml's nearest_int), d = 1/iscale.  Blocks with a NaN or an infinity,
 * all zeros, or a scale that overflows take the reference itself. */
static void quantize_q8_K_block(const float *x, int8_t qs[QT_QK_K], float *d)
{
    __m512 v[16], m[4];
    __mmask16 bad = 0;
    for (int k = 0; k < 16; k++) {
        v[k] = _mm512_loadu_ps(x + 16 * k);
        const __m512 a = _mm512_abs_ps(v[k]);
        bad |= _mm512_cmp_ps_mask(a, _mm512_set1_ps(FLT_MAX), _CMP_NLE_UQ);
        m[k % 4] = k < 4 ? a : _mm512_max_ps(m[k % 4], a);
    }
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m[0], m[1]), _mm512_max_ps(m[2], m[3])));
    float max = amax;
    for (int k = 0; k < 16; k++) {
        const __mmask16 hit = _mm512_cmp_ps_mask(_mm512_abs_ps(v[k]), _mm512_set1_ps(amax), _CMP_EQ_OQ);
        if (hit) {
            max = x[16 * k + __builtin_ctz(hit)];
            break;
        }
    }
    const float iscale = -127.f / max;
    if (bad || amax == 0.0f || !(iscale >= -FLT_MAX && iscale <= FLT_MAX)) {
        qt_block_q8_K ref;
        qt_quantize_act_q8_K(x, &ref, QT_QK_K);
        memcpy(qs, ref.qs, QT_QK_K);
        *d = ref.d;
        return;
    }
    const __m512 vs = _mm512_set1_ps(iscale);
    for (int k = 0; k < 16; k++)
        _mm_store_si128((__m128i *)(qs + 16 * k), _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v[k], vs))));
    *d = 1 / iscale;
}

void qt_amx_pack_q8_K_f32(int n, const float *x, int ncols, int tile, void *packed)
{
    const int nb = n / QT_QK_K, c0 = tile * QT_TILE_COLS;
    const int cols = ncols - c0 < QT_TILE_COLS ? ncols - c0 : QT_TILE_COLS;
    uint8_t *base = (uint8_t *)packed + (size_t)tile * nb * BLOCK_BYTES;
    /* the tile's columns quantized, one block at a time; padding columns
     * stay zero (the layout's zero activations) */
    _Alignas(64) int8_t q[QT_TILE_COLS][QT_QK_K];
    _Alignas(64) float d[QT_TILE_COLS];
    memset(q, 0, sizeof q);
    memset(d, 0, sizeof d);
    const __m512i ones8 = _mm512_set1_epi8(1), ones16 = _mm512_set1_epi16(1);
    for (int b = 0; b < nb; b++) {
        for (int c = 0; c < cols; c++)
            quantize_q8_K_block(x + (size_t)(c0 + c) * n + (size_t)b * QT_QK_K, q[c], &d[c]);
        int8_t *qs = (int8_t *)(base + (size_t)b * BLOCK_BYTES);
        int32_t *bs = (int32_t *)(qs + QT_TILE_COLS * QT_QK_K); /* int16 pairs 2j, 2j+1 per column */
        __m512i sums[QT_QK_K / 16];
        for (int g0 = 0; g0 < QT_QK_K / 4; g0 += 16) {
            /* 4-byte groups g0..g0+15 of the 16 columns, turned so that
             * each register holds one group of every column */
            __m512 v[16];
            for (int c = 0; c < QT_TILE_COLS; c++) v[c] = _mm512_load_ps((const float *)(q[c] + 4 * g0));
            qt_transpose16(v);
            for (int j = 0; j < 16; j++) _mm512_storeu_ps((float *)(qs + 64 * (g0 + j)), v[j]);
            /* bsum of 16 elements = its 4 groups' byte sums, per column */
            for (int s = 0; s < 4; s++) {
                __m512i t = _mm512_setzero_si512();
                for (int j = 4 * s; j < 4 * s + 4; j++)
                    t = _mm512_add_epi32(t, _mm512_madd_epi16(_mm512_maddubs_epi16(ones8, _mm512_castps_si512(v[j])), ones16));
                sums[g0 / 4 + s] = t;
            }
        }
        for (int j = 0; j < QT_QK_K / 32; j++)
            _mm512_storeu_si512(bs + 16 * j, _mm512_or_si512(_mm512_and_si512(sums[2 * j], _mm512_set1_epi32(0xffff)),
                                                             _mm512_slli_epi32(sums[2 * j + 1], 16)));
        _mm512_storeu_ps((float *)(bs + 16 * (QT_QK_K / 32)), _mm512_load_ps(d));
    }
}

bool qt_amx_tiled_has(qt_type type)
{
    return type == QT_Q2_K || type == QT_Q3_K || type == QT_Q4_K || type == QT_Q5_K || type == QT_Q6_K;
}

/* Tiles are per-thread state: configured per call, released after so the
 * thread's context switches stay cheap. */
static void tiles_config(void)
{
    tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < N_TILES; t++) {
        cfg.rows[t] = 16;
        cfg.colsb[t] = 64;
    }
    _tile_loadconfig(&cfg);
}

void qt_amx_tiled(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *packed, int ncols,
                  float *out, size_t out_stride, bool stream)
{
    (void)stream; /* not taken: unmeasured on AMX hosts (tiles.h) */
    tiles_config();
    switch (type) {
    case QT_Q2_K: run_q2_K(n, w, w_stride, nrows, packed, ncols, out, out_stride); break;
    case QT_Q3_K: run_q3_K(n, w, w_stride, nrows, packed, ncols, out, out_stride); break;
    case QT_Q4_K: run_q4_K(n, w, w_stride, nrows, packed, ncols, out, out_stride); break;
    case QT_Q5_K: run_q5_K(n, w, w_stride, nrows, packed, ncols, out, out_stride); break;
    case QT_Q6_K: run_q6_K(n, w, w_stride, nrows, packed, ncols, out, out_stride); break;
    default: break;
    }
    _tile_release();
}

void qt_amx_tiled_x16(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *packed, int ncols,
                      float *out, size_t out_stride, bool stream)
{
    (void)stream;
    if (type != QT_Q2_K && type != QT_Q3_K) return;
    tiles_config();
    if (type == QT_Q3_K)
        run_q3_K_x16(n, w, w_stride, nrows, packed, ncols, out, out_stride);
    else
        run_q2_K_x16(n, w, w_stride, nrows, packed, ncols, out, out_stride);
    _tile_release();
}

#endif
