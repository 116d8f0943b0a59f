/* x86_avx512_tiled.c - quant/tiles.h's kernel for the tiled K-quant order
 * (quant/tiled.h), AVX512-VNNI.
 *
 * Compiled with the AVX-512 flags; vpdpwssd is inline asm, as vpdpbusd is
 * in x86_avx512.c, so the file needs no -mavx512vnni.  Reached only
 * through qt_tiles_for() when the active level is avx512-vnni.
 *
 * The order's float work per output is three operations per 256-element
 * block on two exact integer sums, isum = Σ sc·(q - bias)·y and (types
 * with mins) imin = Σ m·bsum.  Here a register holds one of those for 16
 * columns (one per lane), so the float work is done 16 outputs at a time
 * with the reference's operations, and the integer sums become:
 *   - each weight block's quants unpacked once per pass to unsigned bytes;
 *   - per scale's span of elements, vpdpbusd of a broadcast 4-byte group
 *     of quants by the packed signed activations (4 products per lane, 64
 *     per instruction, exact in int32), then one vpdpwssd by the scale
 *     (block_tiles says how; against vpmulld's two uops and an add, or
 *     vpmaddwd and an add: Q3_K 1.1x, Q6_K 1.2x); Q3_K needs none: its
 *     scales are folded into its quants, -sc·(q - 4) being an int8
 *     (fold_q3_K), so one chain of vpdpbusd gives a row's whole isum;
 *   - the types with a bias (Q3_K, Q6_K) take q - bias as the signed
 *     operand and the activations + 128 (a flipped sign bit, packed so:
 *     tiles.h's biased layout) as the
 *     unsigned one, so the bias costs nothing per column: what the +128
 *     adds, 128·Σ sc·(q - bias), is one constant per row and block
 *     (decode).  Taking -Σ bias·sc·bsum instead with 8 vpdpwssd per row
 *     and tile measured 6-20% slower on Zen 5, whose vpdpbusd, vpdpwssd,
 *     vpmulld and FMAs share two pipes;
 *   - the mins as Σ m·bsum, 8 vpdpwssd on the packed int16 bsum pairs
 *     (the bsums are the sums of the activation bytes, as quantize_q8_K
 *     makes them); Q4_K's and Q5_K's, one per 32 elements, 4 on pairs of
 *     32-element sums (tiles.h's sums32 layout).
 * vpdpwssd on int16 sc·(q - bias) pairs instead needs no multiplies but
 * does 2 products per lane: measured 12-25 % slower.  A group of 4 rows
 * meets 3 tiles at a time: each activation load serves 4 rows and each
 * weight broadcast 3 tiles, 12 chains and 12 sums in registers (against 2
 * tiles: Q3_K and Q6_K 1.05x on a Xeon, 128 columns, one thread), and a
 * band of 4 groups meets each 3 tiles in turn (BAND). */
#if defined(__x86_64__)

#include <immintrin.h>
#include <stdalign.h>
#include <stdbool.h>
#include <string.h>

#include "blocks.h"
#include "fp16.h"
#include "tiled.h"
#include "tiles.h"
#include "x86_avx512_tiles.h"
#include "x86_avx512_wide.h"

#define INLINE static inline __attribute__((always_inline))
#define QT_X86_DPBUSD "%{evex%} vpdpbusd %2, %1, %0"
#include "x86_simd.h"

#define GROUP 4   /* rows decoded and computed together */
#define MAX_TILES 16
#define ROWS 32   /* rows whose results are written out together */
#define GROUPS (QT_QK_K / 4)
#define BLOCK_BYTES (QT_TILE_COLS * QT_QK_K + QT_TILE_COLS * QT_QK_K / 16 * sizeof(int16_t) + QT_TILE_COLS * sizeof(float))

/* One weight block, decoded. */
typedef struct wblock {
    uint8_t q[QT_QK_K];   /* unsigned quants; with a bias, q - bias as int8 */
    int32_t sc[16];       /* scale per 16 elements as vpdpwssd's int16 pair: (sc, 0) for Q2_K and
                           * Q3_K, (sc, 256 sc) for the others (block_tiles) */
    int32_t corr;         /* with a bias: 128 Σ sc_j Σ (q - bias) over sub-block j (Q3_K: 128 Σ t) */
    const uint8_t *t;     /* the quants as block_tiles reads them (q, Q3_K's folded ones, or a
                           * band's), elements 4g..4g+3 at t + g·tstep (4 from a row's decode, 64
                           * from a band's: fold_q3_K_x16, band_rows) */
    int32_t m[8];         /* int16 mins of sums 2j, 2j+1: 16-element sums (Q2_K), 32-element ones
                           * for Q4_K and Q5_K (tiles.h's sums32 layout; j < 4); the types with a
                           * bias (Q3_K, Q6_K) have none, the others all have them */
    float d, neg_dmin;
} wblock;

/* The quants of each type with byte shifts and masks, 32 at a time:
 * qt_tiled_unpack's per-element loops would cost more than the products
 * they feed.  Element order is qt_tiled_unpack's. */
INLINE __m256i low_bits(__m256i v, int shift, int mask)
{
    return _mm256_and_si256(_mm256_srli_epi16(v, shift), _mm256_set1_epi8((char)mask));
}

/* adds `add` to the bytes of q whose bit `bit` of h is set */
INLINE __m256i high_bit(__m256i q, __m256i h, int bit, int add)
{
    return _mm256_mask_add_epi8(q, _mm256_test_epi8_mask(h, _mm256_set1_epi8((char)(1 << bit))), q,
                                _mm256_set1_epi8((char)add));
}

static void quants(qt_type type, const uint8_t *x, uint8_t *q)
{
    switch (type) {
    case QT_Q2_K:
    case QT_Q3_K: {
        /* 2-bit fields of 32 bytes per 128 elements; Q3_K adds hmask bit
         * e/32 of byte e%32 as 4 */
        const uint8_t *qs = type == QT_Q2_K ? ((const qt_block_q2_K *)x)->qs : ((const qt_block_q3_K *)x)->qs;
        const __m256i hm = type == QT_Q3_K ? load256(((const qt_block_q3_K *)x)->hmask) : _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i v = load256(qs + 32 * h);
            for (int part = 0; part < 4; part++) {
                __m256i e = low_bits(v, 2 * part, 3);
                if (type == QT_Q3_K) e = high_bit(e, hm, 4 * h + part, 4);
                _mm256_storeu_si256((__m256i *)(q + 128 * h + 32 * part), e);
            }
        }
        break;
    }
    case QT_Q4_K:
    case QT_Q5_K: {
        /* nibbles of 32 bytes per 64 elements; Q5_K adds qh bit e/32 of
         * byte e%32 as 16 */
        const uint8_t *qs = type == QT_Q4_K ? ((const qt_block_q4_K *)x)->qs : ((const qt_block_q5_K *)x)->qs;
        const __m256i qh = type == QT_Q5_K ? load256(((const qt_block_q5_K *)x)->qh) : _mm256_setzero_si256();
        for (int c = 0; c < 4; c++) {
            const __m256i v = load256(qs + 32 * c);
            __m256i lo = low_bits(v, 0, 0x0f), hi = low_bits(v, 4, 0x0f);
            if (type == QT_Q5_K) {
                lo = high_bit(lo, qh, 2 * c, 16);
                hi = high_bit(hi, qh, 2 * c + 1, 16);
            }
            _mm256_storeu_si256((__m256i *)(q + 64 * c), lo);
            _mm256_storeu_si256((__m256i *)(q + 64 * c + 32), hi);
        }
        break;
    }
    default: {
        /* Q6_K: low nibbles of ql, two bits of qh above them */
        const qt_block_q6_K *b = (const qt_block_q6_K *)x;
        for (int h = 0; h < 2; h++) {
            const __m256i ql0 = load256(b->ql + 64 * h), ql1 = load256(b->ql + 64 * h + 32), qh = load256(b->qh + 32 * h);
            for (int part = 0; part < 4; part++) {
                const __m256i lo = low_bits(part & 1 ? ql1 : ql0, 4 * (part >> 1), 0x0f);
                const __m256i hi = _mm256_slli_epi16(low_bits(qh, 2 * part, 3), 4);
                _mm256_storeu_si256((__m256i *)(q + 128 * h + 32 * part), _mm256_or_si256(lo, hi));
            }
        }
        break;
    }
    }
}

/* Byte indices that pick, in every byte of 128-bit lane L, byte 4m + L of
 * a lane: chunk m's sub-blocks' scales. */
INLINE __m512i lane_index(int m)
{
    const long long b = 0x0101010101010101ll;
    return _mm512_set_epi64((4 * m + 3) * b, (4 * m + 3) * b, (4 * m + 2) * b, (4 * m + 2) * b, (4 * m + 1) * b,
                            (4 * m + 1) * b, (4 * m) * b, (4 * m) * b);
}

/* Q3_K's 16 6-bit scales, less 32, as int32: the low nibbles are bytes
 * 0-7's low then high halves, the top 2 bits of scale j are bits 2(j/4)
 * of byte 8 + j%4.  qt_tiled_unpack_scales' per-scale loop took ~13% of
 * this kernel's time on Q3_K (n = 5632, 128 columns). */
INLINE __m512i scales_q3_K(const uint8_t *scales)
{
    const __m128i x = _mm_maskz_loadu_epi8(0x0fff, scales), m4 = _mm_set1_epi8(0x0f);
    const __m128i low = _mm_unpacklo_epi64(_mm_and_si128(x, m4), _mm_and_si128(_mm_srli_epi16(x, 4), m4));
    const __m128i top = _mm_shuffle_epi8(x, _mm_setr_epi8(8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11));
    const __m512i shift = _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6);
    const __m512i hi = _mm512_and_si512(_mm512_srlv_epi32(_mm512_cvtepu8_epi32(top), shift), _mm512_set1_epi32(3));
    return _mm512_sub_epi32(_mm512_or_si512(_mm512_cvtepu8_epi32(low), _mm512_slli_epi32(hi, 4)), _mm512_set1_epi32(32));
}

/* Q3_K's quants with their scales folded in: t = -sc·(q - 4), which is
 * in [-128, 124] for sc in [-32, 31] and q in [0, 7], an int8 (sc·(q - 4)
 * itself reaches 128), so block_tiles' products need no scale step.
 * Each 128-bit lane of quant vector m is sub-block 4m + lane; a lane of
 * the words sc·(4 - k), k = 0..7, is that sub-block's table, read by
 * vpshufb at byte 2q.  corr = 128 Σ t: what the activations' +128 adds. */
INLINE void fold_q3_K(wblock *wb, __m512i sc)
{
    /* words 4, 3, 2, 1, 0, -1, -2, -3 */
    const __m512i four_less_k = _mm512_set4_epi32((int)0xfffdfffe, (int)0xffff0000, 0x00010002, 0x00030004);
    const __m512i low_word = _mm512_set4_epi32(0x01000100, 0x01000100, 0x01000100, 0x01000100);
    __m512i tsum = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int m = 0; m < 4; m++) {
        const __m512i lane_sc = _mm512_permutexvar_epi32(
            _mm512_set_epi32(4 * m + 3, 4 * m + 3, 4 * m + 3, 4 * m + 3, 4 * m + 2, 4 * m + 2, 4 * m + 2, 4 * m + 2,
                             4 * m + 1, 4 * m + 1, 4 * m + 1, 4 * m + 1, 4 * m, 4 * m, 4 * m, 4 * m),
            sc);
        const __m512i table = _mm512_mullo_epi16(_mm512_shuffle_epi8(lane_sc, low_word), four_less_k);
        const __m512i q = _mm512_loadu_si512((const void *)(wb->q + 64 * m));
        const __m512i t = _mm512_shuffle_epi8(table, _mm512_add_epi8(q, q));
        _mm512_storeu_si512((void *)(wb->q + 64 * m), t);
        tsum = qt_dpbusd512(tsum, _mm512_set1_epi8(1), t);
    }
    wb->corr = 128 * _mm512_reduce_add_epi32(tsum);
    wb->t = wb->q;
}

/* fold_q3_K for the 16 rows of a super-block in the x16 layout at once,
 * read as it is (no turning back into rows): t[64 g + 4 r] holds row r's
 * folded quants 4g..4g+3, as the layout's chunks hold its quants, and
 * wb[r] points into it.  Elements 4g..4g+3, g = 32h + 8q + k, are field
 * 2q of qs chunk 8h + k with bit 4h + q of hmask chunk k above it, in
 * sub-block g / 4 (repack.h, x86_avx512_x16_k.c); so, as the bits say,
 *     t = -sc·(q2 + 4 high - 4) = (high ? 0 : 4 sc) - (bit0 ? sc : 0) - (bit1 ? 2 sc : 0),
 * wrapping bytes whose sum is exact (t fits int8).  Against turning the
 * block into rows and folding each row (1 thread, 2048 x 2048): 32
 * columns 124 -> 178 GMAC/s, 256 columns 246 -> 269. */
INLINE void fold_q3_K_x16(const uint8_t *sb, uint8_t *t, wblock wb[QT_X16_ROWS])
{
    __m512i sc[4];
    qt_x16_scales_q3_K(sb, sc);
    __m512i tsum = _mm512_setzero_si512();
    for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++)
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) {
                const int g = 32 * h + 8 * q + k, j = g / 4;
                /* the sub-block's scale in every byte of its row's lane */
                const int at = (j % 4) * 0x01010101;
                const __m512i sc1 =
                    _mm512_shuffle_epi8(sc[j / 4], _mm512_set4_epi32(0x0c0c0c0c + at, 0x08080808 + at, 0x04040404 + at, at));
                const __m512i sc2 = _mm512_add_epi8(sc1, sc1), sc4 = _mm512_add_epi8(sc2, sc2);
                const __m512i qs = _mm512_loadu_si512((const void *)(sb + QT_X16_Q3_K_QS + 64 * (8 * h + k)));
                const __m512i hm = _mm512_loadu_si512((const void *)(sb + QT_X16_Q3_K_HM + 64 * k));
                __m512i v = _mm512_maskz_mov_epi8(_mm512_testn_epi8_mask(hm, _mm512_set1_epi8((char)(1 << (4 * h + q)))), sc4);
                v = _mm512_mask_sub_epi8(v, _mm512_test_epi8_mask(qs, _mm512_set1_epi8((char)(1 << 2 * q))), v, sc1);
                v = _mm512_mask_sub_epi8(v, _mm512_test_epi8_mask(qs, _mm512_set1_epi8((char)(2 << 2 * q))), v, sc2);
                _mm512_store_si512((void *)(t + 64 * g), v);
                tsum = qt_dpbusd512(tsum, _mm512_set1_epi8(1), v);
            }
    alignas(64) int32_t corr[QT_X16_ROWS];
    _mm512_store_si512((void *)corr, _mm512_slli_epi32(tsum, 7));
    for (int r = 0; r < QT_X16_ROWS; r++) {
        uint16_t d;
        memcpy(&d, sb + QT_X16_Q3_K_D + 2 * r, sizeof d);
        wb[r].d = qt_f16_to_f32(d);
        wb[r].corr = corr[r];
        wb[r].t = t + 4 * r;
    }
}

/* Each scale as vpdpwssd's int16 pair (sc, 256 sc) (block_tiles). */
INLINE __m512i scale_pair(__m512i sc)
{
    return _mm512_or_si512(_mm512_and_si512(sc, _mm512_set1_epi32(0xffff)), _mm512_slli_epi32(sc, 24));
}

/* Types with a bias (Q3_K, Q6_K) take their quants signed, q - bias, and
 * the activations unsigned, y + 128 (block_tiles): Σ (y + 128)(q - bias)
 * = Σ y (q - bias) + 128 Σ (q - bias), and the last term, times the
 * scales, is the row's own constant (corr), where Σ bias·sc·bsum took 8
 * vpdpwssd per row and tile.  Those two types' scales are read here
 * directly; the others' through qt_tiled_unpack_scales. */
static void decode(qt_type type, const uint8_t *x, wblock *wb)
{
    __m512i sc;
    int bias;
    quants(type, x, wb->q);
    wb->t = wb->q;
    if (type == QT_Q3_K) {
        const qt_block_q3_K *b = (const qt_block_q3_K *)x;
        sc = scales_q3_K(b->scales);
        bias = 4;
        wb->d = qt_f16_to_f32(b->d);
    } else if (type == QT_Q6_K) {
        const qt_block_q6_K *b = (const qt_block_q6_K *)x;
        sc = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)b->scales));
        bias = 32;
        wb->d = qt_f16_to_f32(b->d);
    } else {
        qt_tiled_block k;
        qt_tiled_unpack_scales(type, x, &k);
        sc = _mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)k.sc));
        bias = k.bias;
        if (type == QT_Q2_K)
            memcpy(wb->m, k.m, sizeof wb->m);
        else /* one min per 32 elements: k.m[2j] = k.m[2j + 1] */
            for (int j = 0; j < 4; j++) wb->m[j] = (int32_t)((uint32_t)(uint16_t)k.m[4 * j] | (uint32_t)k.m[4 * j + 2] << 16);
        wb->d = k.d;
        wb->neg_dmin = -k.dmin;
    }
    const bool small = type == QT_Q2_K || type == QT_Q3_K;
    _mm512_storeu_si512((void *)wb->sc, small ? _mm512_and_si512(sc, _mm512_set1_epi32(0xffff)) : scale_pair(sc));
    wb->corr = 0;
    if (type == QT_Q3_K) {
        fold_q3_K(wb, sc);
        return;
    }
    if (bias) {
        /* Σ_e sc[e/16]·q[e] as vpdpbusd of the quants by their scales'
         * bytes (each 128-bit lane of chunk m is sub-block 4m + lane) */
        const __m512i scl = _mm512_broadcast_i32x4(_mm512_cvtepi32_epi8(sc)); /* int8 scales */
        const __m512i bias8 = _mm512_set1_epi8((char)bias);
        __m512i dot = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int m = 0; m < 4; m++) {
            const __m512i q = _mm512_loadu_si512((const void *)(wb->q + 64 * m));
            dot = qt_dpbusd512(dot, q, _mm512_shuffle_epi8(scl, lane_index(m)));
            _mm512_storeu_si512((void *)(wb->q + 64 * m), _mm512_sub_epi8(q, bias8));
        }
        wb->corr = 128 * (_mm512_reduce_add_epi32(dot) - 16 * bias * _mm512_reduce_add_epi32(sc));
    }
}

/* Rows decoded together, whose groups meet each few tiles in turn while
 * the tiles' activation blocks are in L1.  Group after group, every group
 * streamed the whole pass's blocks again: from L3 where a pass outgrows
 * L2 (the 18944-wide down projection of a 7B model, 2.7 MB a pass, ran at
 * 0.79x the rate of narrower ones), and from L2 elsewhere, whose bandwidth
 * then set the pace (bands, 1 thread, 2048 rows by 256 columns: Q6_K
 * 1.06-1.09x, Q3_K 1.06x, Q5_K 1.02x). */
#define BAND 16
_Static_assert(BAND % GROUP == 0 && ROWS % BAND == 0, "bands are whole groups and never straddle a flush");
_Static_assert(BAND == 16, "a band of an x16 matrix is one group");

/* ---- a band's 16 rows decoded together (Q4_K, Q5_K, Q6_K) -------------
 * As fold_q3_K_x16 does from the x16 layout, but from rows: each part of
 * the 16 blocks goes through a 16 x 16 transpose (load16x16) into
 * row-per-lane form, where the quants of elements 4g..4g+3 of all 16 rows
 * are one vector, unpacked with 512-bit steps straight to t[64 g + 4 r]
 * (block_tiles reads them at stride 64), and the scales of all 16 rows
 * take a few vector steps and one transpose into the wblocks.  The values
 * are decode's, so the sums and bits are too. */

/* v[j] lane r (row r's value j) into wb[r].sc[j], or (mins, j < 8)
 * wb[r].m[j]: one 16 x 16 transpose. */
INLINE void lanes_to_rows(const __m512i v[16], wblock wb[BAND], const int mins)
{
    __m512 f[16];
#pragma GCC unroll 16
    for (int j = 0; j < 16; j++) f[j] = _mm512_castsi512_ps(v[j]);
    qt_transpose16(f);
#pragma GCC unroll 16
    for (int r = 0; r < BAND; r++) {
        if (mins)
            _mm256_storeu_ps((float *)wb[r].m, _mm512_castps512_ps256(f[r]));
        else
            _mm512_storeu_ps((float *)wb[r].sc, f[r]);
    }
}

/* A lane's float or int32 per row into the wblocks. */
INLINE void lanes_to_fields(__m512 d, __m512 neg_dmin, __m512i corr, uint8_t *t, wblock wb[BAND])
{
    alignas(64) float dv[16], nv[16];
    alignas(64) int32_t cv[16];
    _mm512_store_ps(dv, d);
    _mm512_store_ps(nv, neg_dmin);
    _mm512_store_si512((void *)cv, corr);
    for (int r = 0; r < BAND; r++) {
        wb[r].d = dv[r];
        wb[r].neg_dmin = nv[r];
        wb[r].corr = cv[r];
        wb[r].t = t + 4 * r;
    }
}

/* Q4_K (q5 = 0) and Q5_K: quants q in [0, 31] unsigned, no bias.  Element
 * 64c + 32n + i (n: nibble) is nibble n of qs[32c + i], plus 16 where bit
 * 2c + n of qh[i] is set (Q5_K); so qs dword 8c + k gives elements 4g..4g+3
 * for g = 16c + 8n + k, with qh dword k. */
INLINE void band_q45_K(const uint8_t *blk, size_t stride, const int q5, uint8_t *t, wblock wb[BAND])
{
    __m512i h[4], v[16];
    load16x4(blk, stride, h); /* d | dmin, then the 12 scale bytes */
    __m512i sc[8], m[8];
    q4_K_scales16(h[1], h[2], h[3], sc, m);
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) v[2 * j] = v[2 * j + 1] = scale_pair(sc[j]);
    lanes_to_rows(v, wb, 0);
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) /* (m_2j, m_2j+1): the sums32 layout's pair j */
        v[j] = j < 4 ? _mm512_or_si512(m[2 * j], _mm512_slli_epi32(m[2 * j + 1], 16)) : _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int j = 8; j < 16; j++) v[j] = _mm512_setzero_si512();
    lanes_to_rows(v, wb, 1);
    const __m512 dmin = halves(h[0], 1);
    lanes_to_fields(halves(h[0], 0), _mm512_xor_ps(dmin, _mm512_set1_ps(-0.0f)), _mm512_setzero_si512(), t, wb);

    const __m512i m4 = _mm512_set1_epi8(0x0f), b16 = _mm512_set1_epi8(16);
    __m512i qh[8], qs[16];
    if (q5) { /* qh's 8 dwords: the first half of the 64 bytes at 16 */
        load16x16(blk + offsetof(qt_block_q5_K, qh), stride, qs);
        for (int k = 0; k < 8; k++) qh[k] = qs[k];
    }
    const size_t at = q5 ? offsetof(qt_block_q5_K, qs) : offsetof(qt_block_q4_K, qs);
    for (int half = 0; half < 2; half++) {
        load16x16(blk + at + 64 * half, stride, qs); /* qs dwords 16 half .. 16 half + 15 */
        for (int e = 0; e < 16; e++) {
            const int i = 16 * half + e, c = i / 8, k = i % 8;
            const __m512i raw = qs[e];
            __m512i lo = _mm512_and_si512(raw, m4), hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), m4);
            if (q5) {
                lo = _mm512_mask_add_epi8(lo, _mm512_test_epi8_mask(qh[k], _mm512_set1_epi8((char)(1 << (2 * c)))), lo, b16);
                hi = _mm512_mask_add_epi8(hi, _mm512_test_epi8_mask(qh[k], _mm512_set1_epi8((char)(2 << (2 * c)))), hi, b16);
            }
            _mm512_store_si512((void *)(t + 64 * (16 * c + k)), lo);
            _mm512_store_si512((void *)(t + 64 * (16 * c + 8 + k)), hi);
        }
    }
}

/* Q6_K: q - 32 signed (the activations biased, tiles.h).  Element 128h +
 * 32p + i is nibble p/2 of ql[64h + 32(p % 2) + i] with bits 2p, 2p + 1
 * of qh[32h + i] above it: ql dword 16h + 8(p % 2) + k and qh dword 8h + k
 * give elements 4g..4g+3 for g = 32h + 8p + k.  corr, as decode's, from
 * vpdpbusd of the unsigned quants by each row's scale bytes. */
INLINE void band_q6_K(const uint8_t *blk, size_t stride, uint8_t *t, wblock wb[BAND])
{
    __m512i h[4], v[16];
    load16x4(blk + offsetof(qt_block_q6_K, scales), stride, h); /* h[q] lane r: row r's scales 4q..4q+3 */
    __m512i scsum = _mm512_setzero_si512();
#pragma GCC unroll 16
    for (int j = 0; j < 16; j++) {
        const int b = j % 4;
        v[j] = scale_pair(_mm512_srai_epi32(_mm512_slli_epi32(h[j / 4], 24 - 8 * b), 24));
    }
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) scsum = qt_dpbusd512(scsum, _mm512_set1_epi8(1), h[q]);
    lanes_to_rows(v, wb, 0);

    const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30), b32 = _mm512_set1_epi8(32);
    __m512i dot = _mm512_setzero_si512(), qh[16], ql[16];
    load16x16(blk + offsetof(qt_block_q6_K, qh), stride, qh);
    for (int hh = 0; hh < 2; hh++) {
        load16x16(blk + 64 * hh, stride, ql);
#pragma GCC unroll 4
        for (int p = 0; p < 4; p++) {
            /* the part's two sub-blocks: row r's scale in every byte of its lane */
            const int j0 = (32 * hh + 8 * p) / 4;
            __m512i scb[2];
#pragma GCC unroll 2
            for (int s2 = 0; s2 < 2; s2++) {
                const int j = j0 + s2, at = (j % 4) * 0x01010101;
                scb[s2] = _mm512_shuffle_epi8(h[j / 4], _mm512_set4_epi32(0x0c0c0c0c + at, 0x08080808 + at,
                                                                          0x04040404 + at, at));
            }
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) {
                const int g = 32 * hh + 8 * p + k;
                const __m512i raw = ql[8 * (p % 2) + k];
                const __m512i lo = _mm512_and_si512(p / 2 ? _mm512_srli_epi16(raw, 4) : raw, m4);
                const __m512i hb = qh[8 * hh + k];
                /* bits 2p, 2p + 1 of each byte to bits 4, 5 (16-bit shifts:
                 * the mask keeps only bits from the same byte) */
                const __m512i up = p < 2 ? _mm512_slli_epi16(hb, 4 - 2 * p) : p == 2 ? hb : _mm512_srli_epi16(hb, 2);
                const __m512i q = _mm512_ternarylogic_epi32(up, m30, lo, 0xea); /* (up & 0x30) | lo */
                dot = qt_dpbusd512(dot, q, scb[g / 4 - j0]);
                _mm512_store_si512((void *)(t + 64 * g), _mm512_sub_epi8(q, b32));
            }
        }
    }
    /* decode's 128 (Σ sc·q - 16·32 Σ sc) */
    const __m512i corr = _mm512_slli_epi32(_mm512_sub_epi32(dot, _mm512_slli_epi32(scsum, 9)), 7);
    alignas(64) float dv[16];
    for (int r = 0; r < BAND; r++) {
        uint16_t d;
        memcpy(&d, blk + (size_t)r * stride + offsetof(qt_block_q6_K, d), sizeof d);
        dv[r] = qt_f16_to_f32(d);
    }
    lanes_to_fields(_mm512_load_ps(dv), _mm512_setzero_ps(), corr, t, wb);
}

/* Whether a band of this type is decoded together (band_rows). */
INLINE bool band_type(qt_type type) { return type == QT_Q4_K || type == QT_Q5_K || type == QT_Q6_K; }

INLINE void band_rows(qt_type type, const uint8_t *blk, size_t stride, uint8_t *t, wblock wb[BAND])
{
    if (type == QT_Q6_K)
        band_q6_K(blk, stride, t, wb);
    else
        band_q45_K(blk, stride, type == QT_Q5_K, t, wb);
}

/* nr rows x nt tiles (constants) of one block: the integer sums, then the
 * reference's float steps into acc[i][t].  tstep: where Q3_K's folded
 * quants lie (wblock.t), a compile-time stride: read at run time it cost
 * its loop ~10%. */
INLINE void block_tiles(const wblock *wb, const uint8_t *const blk[3], __m512 acc[GROUP][MAX_TILES], int t0,
                        const int nr, const int nt, const int span, const int small, const int sgn, const int tstep)
{
    __m512i is[GROUP][3];
#pragma GCC unroll 4
    for (int i = 0; i < nr; i++)
#pragma GCC unroll 3
        for (int t = 0; t < nt; t++) is[i][t] = _mm512_setzero_si512();
    /* Q3_K (small, with a bias): scales folded into the quants (fold_q3_K),
     * one chain of products per row and tile */
    const int folded = small && sgn;
    if (folded) {
        /* with a single tile, two chains per row (even and odd groups of
         * 4): four chains alone wait on vpdpbusd's latency */
        const int two = nt == 1;
        __m512i odd[GROUP];
#pragma GCC unroll 4
        for (int i = 0; i < nr; i++) odd[i] = _mm512_setzero_si512();
        /* (two: the odd group in the same step, where a test of g's
         * parity per group had GCC copying the chains around the loop) */
#pragma GCC unroll 4
        for (int g = 0; g < GROUPS; g += 1 + two) {
            __m512i y[3];
#pragma GCC unroll 3
            for (int t = 0; t < nt; t++) y[t] = _mm512_loadu_si512(blk[t] + 64 * g);
#pragma GCC unroll 4
            for (int i = 0; i < nr; i++) {
                int32_t qg;
                memcpy(&qg, wb[i].t + g * tstep, sizeof qg);
                const __m512i u = _mm512_set1_epi32(qg);
#pragma GCC unroll 3
                for (int t = 0; t < nt; t++) is[i][t] = qt_dpbusd512(is[i][t], y[t], u);
            }
            if (!two) continue;
            const __m512i y1 = _mm512_loadu_si512(blk[0] + 64 * (g + 1));
#pragma GCC unroll 4
            for (int i = 0; i < nr; i++) {
                int32_t qg;
                memcpy(&qg, wb[i].t + (g + 1) * tstep, sizeof qg);
                odd[i] = qt_dpbusd512(odd[i], y1, _mm512_set1_epi32(qg));
            }
        }
        if (two)
#pragma GCC unroll 4
            for (int i = 0; i < nr; i++) is[i][0] = _mm512_add_epi32(is[i][0], odd[i]);
    }
    /* with a single tile, two scale spans at a time: four chains alone
     * waited on vpdpbusd's latency (the 1-tile step ending each 16-tile
     * pass took 10% of Q6_K's time for 1/16 of its products) */
    const int par = nt == 1 ? 2 : 1;
    for (int j = 0; j < (folded ? 0 : 16); j += span * par) {
        __m512i sj[2][GROUP][3];
#pragma GCC unroll 2
        for (int p = 0; p < par; p++)
#pragma GCC unroll 4
            for (int i = 0; i < nr; i++)
#pragma GCC unroll 3
                for (int t = 0; t < nt; t++) sj[p][i][t] = _mm512_setzero_si512();
        /* a constant trip count: from 4 j to 4 (j + span) GCC made a
         * remainder dispatch around the unrolled steps */
#pragma GCC unroll 8
        for (int gs = 0; gs < 4 * span; gs++) {
            const int g = 4 * j + gs;
            __m512i y[2][3];
#pragma GCC unroll 2
            for (int p = 0; p < par; p++)
#pragma GCC unroll 3
                for (int t = 0; t < nt; t++) /* sgn: packed as y + 128 */
                    y[p][t] = _mm512_loadu_si512(blk[t] + 64 * (g + 4 * span * p));
#pragma GCC unroll 4
            for (int i = 0; i < nr; i++)
#pragma GCC unroll 2
                for (int p = 0; p < par; p++) {
                    int32_t qg;
                    memcpy(&qg, wb[i].t + tstep * (g + 4 * span * p), sizeof qg);
                    const __m512i u = _mm512_set1_epi32(qg);
#pragma GCC unroll 3
                    for (int t = 0; t < nt; t++)
                        sj[p][i][t] = sgn ? qt_dpbusd512(sj[p][i][t], y[p][t], u) : qt_dpbusd512(sj[p][i][t], u, y[p][t]);
                }
        }
        /* sc·sj exactly in one vpdpwssd (vpmulld is two uops, then an
         * add).  Small types: |sj| <= 16·3·128 (Q3_K biased: 16·4·255)
         * is the lane's low int16, against the pair (sc, 0).  The others'
         * |sj| < 2^17 (Q6_K biased: 16·32·255) goes in as the int16 pair
         * (sj & 255, sj >> 8), one byte shuffle, against (sc, 256 sc),
         * which fits int16 for |sc| <= 128. */
        const __m512i split = _mm512_set4_epi32(0x0e0d800c, 0x0a098008, 0x06058004, 0x02018000);
#pragma GCC unroll 2
        for (int p = 0; p < par; p++)
#pragma GCC unroll 4
            for (int i = 0; i < nr; i++) {
                const __m512i sc = _mm512_set1_epi32(wb[i].sc[j + span * p]);
#pragma GCC unroll 3
                for (int t = 0; t < nt; t++)
                    is[i][t] = qt_dpwssd512(is[i][t], small ? sj[p][i][t] : _mm512_shuffle_epi8(sj[p][i][t], split), sc);
            }
    }
#pragma GCC unroll 3
    for (int t = 0; t < nt; t++) {
        const int16_t *bs = (const int16_t *)(blk[t] + 64 * GROUPS);
        const __m512 dy = _mm512_loadu_ps(bs + QT_TILE_COLS * QT_QK_K / 16);
#pragma GCC unroll 4
        for (int i = 0; i < nr; i++) {
            /* exact in int32: |is| <= 16·128·16·255·32 (Q6_K) */
            const __m512i corr = _mm512_set1_epi32(wb[i].corr);
            const __m512i isum = folded ? _mm512_sub_epi32(corr, is[i][t]) : sgn ? _mm512_sub_epi32(is[i][t], corr) : is[i][t];
            __m512 r = _mm512_mul_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(wb[i].d));
            if (!sgn) { /* the types without a bias have mins, those with one none */
                __m512i im = _mm512_setzero_si512();
                /* span 2 (Q4_K, Q5_K): pairs of 32-element sums */
                for (int j = 0; j < (span == 2 ? 4 : 8); j++)
                    im = qt_dpwssd512(im, _mm512_loadu_si512(bs + 2 * QT_TILE_COLS * j), _mm512_set1_epi32(wb[i].m[j]));
                r = _mm512_fmadd_ps(_mm512_set1_ps(wb[i].neg_dmin), _mm512_cvtepi32_ps(im), r);
            }
            acc[i][t0 + t] = _mm512_fmadd_ps(r, dy, acc[i][t0 + t]);
        }
    }
}

/* span: 16-element sums per scale (2 for Q4_K and Q5_K, whose scales
 * cover 32 elements: half the scale multiplies); sgn: a type with a bias
 * (decode). */
#define BLOCK_TILES(nr, nt, span, small, sgn, tstep)                                                                \
    static void block_tiles_##nr##_##nt##_##span##_##small##_##sgn##_##tstep(const wblock *wb,                    \
                                                                             const uint8_t *const blk[3],         \
                                                                   __m512 acc[GROUP][MAX_TILES], int t0)         \
    {                                                                                                            \
        block_tiles(wb, blk, acc, t0, nr, nt, span, small, sgn, tstep);                                          \
    }
#define BLOCK_TILES4(span, small, sgn, tstep)                                                                      \
    BLOCK_TILES(1, 1, span, small, sgn, tstep)                                                                   \
    BLOCK_TILES(1, 2, span, small, sgn, tstep)                                                                   \
    BLOCK_TILES(4, 1, span, small, sgn, tstep)                                                                   \
    BLOCK_TILES(4, 2, span, small, sgn, tstep)                                                                   \
    BLOCK_TILES(4, 3, span, small, sgn, tstep)
BLOCK_TILES4(1, 0, 1, 4)  /* Q6_K */
BLOCK_TILES4(2, 0, 0, 4)  /* Q4_K, Q5_K */
BLOCK_TILES4(1, 1, 0, 4)  /* Q2_K */
BLOCK_TILES4(1, 1, 1, 4)  /* Q3_K */
BLOCK_TILES4(1, 1, 1, 64) /* Q3_K from x16 (fold_q3_K_x16) */
BLOCK_TILES4(1, 0, 1, 64) /* Q6_K, a band (band_rows) */
BLOCK_TILES4(2, 0, 0, 64) /* Q4_K, Q5_K, a band */
#undef BLOCK_TILES4
#undef BLOCK_TILES

/* Tile t of a group's 4 rows into res (res[c * ROWS + i]: column c, row
 * i), each column's 4 rows in one 16-byte store: a 4x4 transpose in each
 * 128-bit lane.  Storing each float alone took ~3% of the kernel. */
_Static_assert(GROUP == 4 && ROWS % GROUP == 0, "a group's rows are 4 consecutive floats of res");
INLINE void store_group(__m512 acc[GROUP][MAX_TILES], int t, float *res)
{
    const __m512 t0 = _mm512_unpacklo_ps(acc[0][t], acc[1][t]), t1 = _mm512_unpackhi_ps(acc[0][t], acc[1][t]);
    const __m512 t2 = _mm512_unpacklo_ps(acc[2][t], acc[3][t]), t3 = _mm512_unpackhi_ps(acc[2][t], acc[3][t]);
    /* col[k] lane L: column 4L + k's 4 rows */
    const __m512 col[4] = {
        _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2))),
        _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2))),
        _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3))),
        _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)))};
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        _mm_storeu_ps(res + (size_t)k * ROWS, _mm512_castps512_ps128(col[k]));
        _mm_storeu_ps(res + (size_t)(4 + k) * ROWS, _mm512_extractf32x4_ps(col[k], 1));
        _mm_storeu_ps(res + (size_t)(8 + k) * ROWS, _mm512_extractf32x4_ps(col[k], 2));
        _mm_storeu_ps(res + (size_t)(12 + k) * ROWS, _mm512_extractf32x4_ps(col[k], 3));
    }
}

typedef void (*block_tiles_fn)(const wblock *, const uint8_t *const[3], __m512[GROUP][MAX_TILES], int);

/* Groups in the next band of `left` rows: 0 for a single row. */
INLINE int band_groups(int left)
{
    const int g = left / GROUP;
    return g < BAND / GROUP ? g : BAND / GROUP;
}

/* x16: w is whole groups of repack.h's x16 layout (Q2_K, Q3_K): bands of
 * a group's 16 rows, each super-block turned back into the rows' blocks
 * once per pass. */
INLINE void tiled(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *packed, int ncols,
                  float *out, size_t out_stride, bool stream, const int x16)
{
    const int nb = n / QT_QK_K;
    const size_t wbytes = qt_get(type)->type_size;
    const size_t tile_bytes = (size_t)nb * BLOCK_BYTES;
    /* [kind]: 0 scales per 16 elements (Q6_K), 1 per 32 (Q4_K, Q5_K), 2
     * per 16 with quants below 8 (Q2_K; 16-element sums fit int16), 3 the
     * same with a bias (Q3_K), 4 Q3_K from x16, 5 and 6 kinds 0 and 1
     * from a band decoded together (band_rows); then [4 rows?][tiles - 1] (a single row
     * steps 2 tiles at most: its third slot is never taken) */
#define BLOCK_FNS(span, small, sgn, tstep)                                                                        \
    {{block_tiles_1_1_##span##_##small##_##sgn##_##tstep, block_tiles_1_2_##span##_##small##_##sgn##_##tstep,  \
      block_tiles_1_2_##span##_##small##_##sgn##_##tstep},                                                       \
     {block_tiles_4_1_##span##_##small##_##sgn##_##tstep, block_tiles_4_2_##span##_##small##_##sgn##_##tstep,  \
      block_tiles_4_3_##span##_##small##_##sgn##_##tstep}}
    static const block_tiles_fn fns[7][2][3] = {BLOCK_FNS(1, 0, 1, 4),  BLOCK_FNS(2, 0, 0, 4),  BLOCK_FNS(1, 1, 0, 4),
                                                BLOCK_FNS(1, 1, 1, 4),  BLOCK_FNS(1, 1, 1, 64), BLOCK_FNS(1, 0, 1, 64),
                                                BLOCK_FNS(2, 0, 0, 64)};
#undef BLOCK_FNS
    const int wide = type == QT_Q4_K || type == QT_Q5_K ? 1 : type == QT_Q2_K ? 2 : type == QT_Q3_K ? (x16 ? 4 : 3) : 0;
    stream = qt_rp_stream_out(stream, out, out_stride);
    /* Passes of up to MAX_TILES tiles (the caller's are no wider) keep the
     * float accumulators of a row group in one array. */
    for (int c0 = 0; c0 < ncols; c0 += MAX_TILES * QT_TILE_COLS) {
        const int nc = ncols - c0 < MAX_TILES * QT_TILE_COLS ? ncols - c0 : MAX_TILES * QT_TILE_COLS;
        const int nt = (nc + QT_TILE_COLS - 1) / QT_TILE_COLS;
        const uint8_t *pass = (const uint8_t *)packed + (size_t)(c0 / QT_TILE_COLS) * tile_bytes;
        /* results of ROWS rows (qt_tiles_flush) */
        float res[MAX_TILES * QT_TILE_COLS][ROWS];
        _Alignas(64) uint8_t rows16[BAND * sizeof(qt_block_q3_K)], folded[BAND * QT_QK_K];
        for (int r = 0; r < nrows;) {
            /* a band of whole groups, or one row */
            const int ng = band_groups(nrows - r), nr = ng ? GROUP * ng : 1;
            __m512 acc[BAND][MAX_TILES];
            for (int i = 0; i < nr; i++)
                for (int t = 0; t < nt; t++) acc[i][t] = _mm512_setzero_ps();
            /* Weights one block ahead of their use: rows of a few blocks
             * are streams too short for the hardware prefetchers, and
             * each block's first touch waited on memory.  A group asks
             * for the next group's block b (what measured best); a band,
             * whose rows are too long for that to stay in cache, for
             * its own next block, or after its last the next band's first. */
            const int nr_next = nrows - r - nr < nr ? nrows - r - nr : nr;
            for (int b = 0; b < nb; b++) {
                const uint8_t *sb = (const uint8_t *)w + (size_t)r * w_stride + (size_t)b * BAND * wbytes;
                if (x16) { /* the group is one stream, on into the next group */
                    for (size_t o = 0; o < BAND * wbytes; o += 64) _mm_prefetch((const char *)sb + BAND * wbytes + o, _MM_HINT_T0);
                    if (type != QT_Q3_K) qt_x16_k_rows(type, sb, rows16);
                } else {
                    const bool own = ng > 1 && b + 1 < nb;
                    const int pr0 = own ? r : r + nr, pn = own ? nr : nr_next, pb = own ? b + 1 : ng > 1 ? 0 : b;
                    for (int i = 0; i < pn; i++) {
                        const char *nx = (const char *)w + (size_t)(pr0 + i) * w_stride + (size_t)pb * wbytes;
                        for (size_t o = 0; o < wbytes; o += 64) _mm_prefetch(nx + o, _MM_HINT_T0);
                    }
                }
                wblock wb[BAND];
                const bool together = !x16 && ng == BAND / GROUP && band_type(type);
                if (x16 && type == QT_Q3_K)
                    fold_q3_K_x16(sb, folded, wb);
                else if (together)
                    band_rows(type, (const uint8_t *)w + (size_t)r * w_stride + (size_t)b * wbytes, w_stride, folded, wb);
                else
                    for (int i = 0; i < nr; i++)
                        decode(type,
                               x16 ? rows16 + (size_t)i * wbytes
                                   : (const uint8_t *)w + (size_t)(r + i) * w_stride + (size_t)b * wbytes,
                               &wb[i]);
                /* the band's groups meet each few tiles in turn, while
                 * their activation blocks are in L1 */
                for (int t = 0; t < nt;) {
                    const int most = ng ? 3 : 2, k = nt - t < most ? nt - t : most;
                    const uint8_t *blk[3] = {pass + (size_t)t * tile_bytes + (size_t)b * BLOCK_BYTES,
                                             pass + (size_t)(t + 1) * tile_bytes + (size_t)b * BLOCK_BYTES,
                                             pass + (size_t)(t + 2) * tile_bytes + (size_t)b * BLOCK_BYTES};
                    const int kind = together ? (type == QT_Q6_K ? 5 : 6) : wide;
                    for (int g = 0; g < (ng ? ng : 1); g++) fns[kind][ng > 0][k - 1](&wb[GROUP * g], blk, &acc[GROUP * g], t);
                    t += k;
                }
            }
            if (ng)
                for (int g = 0; g < ng; g++)
                    for (int t = 0; t < nt; t++)
                        store_group(&acc[GROUP * g], t, &res[t * QT_TILE_COLS][(r + GROUP * g) % ROWS]);
            else
                for (int t = 0; t < nt; t++) {
                    float s[QT_TILE_COLS];
                    _mm512_storeu_ps(s, acc[0][t]);
                    for (int c = 0; c < QT_TILE_COLS; c++) res[t * QT_TILE_COLS + c][r % ROWS] = s[c];
                }
            r += nr;
            if (r % ROWS == 0 || r == nrows) {
                const int r0 = (r - 1) / ROWS * ROWS;
                qt_tiles_flush(out, out_stride, c0, nc, res[0], ROWS, r0, r - r0, stream);
            }
        }
    }
    if (stream) _mm_sfence();
}

/* Q3_K and Q6_K read the biased layout (tiles.h), the others the plain
 * one: each entry takes only its own types. */
INLINE bool biased(qt_type type) { return type == QT_Q3_K || type == QT_Q6_K; }

void qt_avx512_vnni_tiled(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *packed,
                          int ncols, float *out, size_t out_stride, bool stream)
{
    if (biased(type)) return;
    tiled(type, n, w, w_stride, nrows, packed, ncols, out, out_stride, stream, 0);
}

void qt_avx512_vnni_tiled_biased(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *packed,
                                 int ncols, float *out, size_t out_stride, bool stream)
{
    if (!biased(type)) return;
    tiled(type, n, w, w_stride, nrows, packed, ncols, out, out_stride, stream, 0);
}

/* x16: the K-quants with a qt_x16_dot */
void qt_avx512_vnni_tiled_x16(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *packed,
                              int ncols, float *out, size_t out_stride, bool stream)
{
    if (type != QT_Q2_K) return;
    tiled(type, n, w, w_stride, nrows, packed, ncols, out, out_stride, stream, 1);
}

void qt_avx512_vnni_tiled_biased_x16(qt_type type, int n, const void *w, size_t w_stride, int nrows,
                                     const void *packed, int ncols, float *out, size_t out_stride, bool stream)
{
    if (type != QT_Q3_K) return;
    tiled(type, n, w, w_stride, nrows, packed, ncols, out, out_stride, stream, 1);
}

#endif
