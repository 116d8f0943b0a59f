/* x86_avx2_tile_q8.c - Q8_0, Q5_0, Q4_1 and Q5_1 weights times many Q8_0
 * (Q8_1) activation columns on AVX2 without VNNI, each output
 * bit-identical to the AVX2 vec_dot.
 *
 * Compiled with -mavx2 -mfma -mf16c; reached through x86_avx2.c's table
 * (its tile_q8_0, tile_q5_0, tile_q4_1 and tile_q5_1).  Prompt processing
 * of a Q8_0 model is almost all this, and so is that of the Q4_1 SmolLM2
 * and of Gemma 3's Q5_0 matrices.
 *
 * vec_dot's order per output: per block, the 8 exact int32 sums of
 * products 4k..4k+3, d = dx·dy rounded once, acc = fma(d, lanes, acc),
 * hsum_ps at the end; the _1 types add a chain of their own, summs =
 * fma(m, s, summs) block after block, to that hsum.  x86_tile.inc's
 * generic tile keeps that order but pays, per block of a 2x4 tile, a
 * scalar gather and conversion of both sides' scales and a sign extension
 * of every column: more than the products themselves.  Here the rows'
 * scales are converted once per chunk of rows, each group of 3 columns is
 * copied once (aligned, with its scales) for all of them, the tile is 4
 * rows by 3 columns (12 accumulators, a row's w and |w| and 2 temporaries
 * fill the 16 registers), and each pair costs five vector operations:
 * vpsignb, vpmaddubsw, vpmaddwd, cvt, fma.  On a Zen 3 (2 threads, tl-q8_0
 * pp512, alternated with llama.cpp) that took qlm from 0.6x llama.cpp's
 * speed to about 1.0x; llama.cpp's tinyBLAS does the same float work per
 * pair, which bounds both.
 *
 * Q8_0's products are maddubs(|w|, sign(y, w)): |w| <= 128 unsigned, and
 * sign(y, w) is exact while y != -128, so each int16 pair sum is at most
 * 2·128·127 and never saturates; the lanes equal the exact sums.  qlm's Q8
 * quantizers never write -128, but a column holding it (tests do) goes to
 * the exact-in-every-case kernel the caller passes.
 *
 * The other types' rows are unpacked a chunk at a time into 32-byte
 * blocks as their unsigned q (<= 31), which vpmaddubsw takes as they are,
 * exact for every activation byte: four operations a pair for Q4_1 and
 * Q5_1.  Q5_0's value is q - 16, so its pair sums take off 16 (y + y'),
 * which depends on the column alone and is formed once per column group
 * (pair sums at most 2·31·128 and 2·16·128: exact in int16, and the lanes
 * are vec_dot's): a vpsubw in place of the sign trick's vpsignb, which
 * on a Zen 2 took the 4x3 tile from 8.8 to 9.4 products a cycle (Gemma 3
 * 270M pp512 1.03-1.04x, alternated), and no -128 fallback.  The _1
 * types' summs chains run 4 rows at once in the lanes of one register,
 * each lane its row's chain, and are added to the lanes' hsum as vec_dot
 * adds them. */
#if defined(__x86_64__)

#include <immintrin.h>
#include <assert.h>
#include <string.h>

#include "blocks.h"
#include "x86_k.h"

#define INLINE static inline __attribute__((always_inline))
#define QT_X86_DPBUSD "%{vex%} vpdpbusd %2, %1, %0"
#include "x86_simd.h"
#include "x86_avx2_q5.h"

enum {
    TR = 4,            /* rows per tile */
    TC = 3,            /* columns per tile */
    CHUNK_ROWS = 32,   /* rows whose scales are converted together */
    MAX_BLOCKS = 512,  /* rows of up to 16384 values; longer go to `exact` */
    UNPACKED_BYTES = 64 << 10, /* an unpacked chunk's quants */
};

/* The weight types, and what the tiles need to know of each. */
typedef enum { KIND_Q8_0, KIND_Q5_0, KIND_Q4_1, KIND_Q5_1 } kind;

typedef struct kind_info {
    size_t wblk;   /* bytes of a weight block */
    size_t ablk;   /* and of an activation block (Q8_0 or Q8_1) */
    size_t aqs;    /* where an activation block's quants start */
    int has_min;   /* _1 types: m at byte 2 of a weight block, s at byte 2 of an activation block */
    int uns;       /* quants unpacked unsigned (else signed, with the sign trick and its -128 check) */
    int off16;     /* unsigned quants are q + 16: 16 y is taken off each pair sum (Q5_0) */
} kind_info;

static const kind_info kinds[] = {
    [KIND_Q8_0] = {sizeof(qt_block_q8_0), sizeof(qt_block_q8_0), offsetof(qt_block_q8_0, qs), 0, 0, 0},
    [KIND_Q5_0] = {sizeof(qt_block_q5_0), sizeof(qt_block_q8_0), offsetof(qt_block_q8_0, qs), 0, 1, 1},
    [KIND_Q4_1] = {sizeof(qt_block_q4_1), sizeof(qt_block_q8_1), offsetof(qt_block_q8_1, qs), 1, 1, 0},
    [KIND_Q5_1] = {sizeof(qt_block_q5_1), sizeof(qt_block_q8_1), offsetof(qt_block_q8_1, qs), 1, 1, 0},
};

/* A group of up to TC columns as the tiles read it: block b's quants of
 * column c at q[b][c] (aligned: a block's 32 bytes at a 34-byte stride
 * straddle cache lines half the time, and each straddling load costs two),
 * its scale at d[b][c] and, for Q8_1, its s at s[b][c]. */
typedef struct group {
    uint8_t q[MAX_BLOCKS][TC][32] __attribute__((aligned(32)));
    /* off16 kinds: 16 (y_2i + y_2i+1), the int16 pair sums of 16 y */
    int16_t o[MAX_BLOCKS][TC][16] __attribute__((aligned(32)));
    float d[MAX_BLOCKS][4] __attribute__((aligned(16)));
    float s[MAX_BLOCKS][4] __attribute__((aligned(16)));
} group;

/* Packs columns yc[0..TC) (the last repeated past nc); returns whether
 * any of them holds the byte -128 (checked for the signed kinds only). */
static int pack_group(const kind_info *k, const uint8_t *const yc[TC], int nb, group *g)
{
    const __m256i m = _mm256_set1_epi8((char)0x80);
    __m256i any = _mm256_setzero_si256();
    for (int b = 0; b < nb; b++)
        for (int c = 0; c < TC; c++) {
            const uint8_t *blk = yc[c] + (size_t)b * k->ablk;
            const __m256i v = load256(blk + k->aqs);
            if (!k->uns) any = _mm256_or_si256(any, _mm256_cmpeq_epi8(v, m));
            _mm256_store_si256((__m256i *)g->q[b][c], v);
            if (k->off16) _mm256_store_si256((__m256i *)g->o[b][c], _mm256_maddubs_epi16(_mm256_set1_epi8(16), v));
            g->d[b][c] = half_at(blk);
            if (k->has_min) g->s[b][c] = half_at(blk + 2);
        }
    return !_mm256_testz_si256(any, any);
}

/* Tile of 4 rows (xq: their block 0's quants, block b at + b * bs; their
 * scales dx[b][4]) by C columns of g; rows past nr and columns past nc
 * repeat real ones and are not stored.  uns: the weights are unsigned. */
INLINE void micro(int nb, const uint8_t *const xq[TR], size_t bs, const float *dx, const group *g, float *s,
                  size_t ldo, int nr, int nc, const int C, const int uns, const int off16)
{
    __m256 acc[TR][TC];
#pragma GCC unroll 4
    for (int r = 0; r < TR; r++)
#pragma GCC unroll 3
        for (int c = 0; c < C; c++) acc[r][c] = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1);
    for (int b = 0; b < nb; b++) {
        const size_t o = (size_t)b * bs;
        /* prod[c][r] = dx_r·dy_c, rounded once as vec_dot's scalar product */
        float prod[TC][TR] __attribute__((aligned(16)));
        const __m128 dxv = _mm_load_ps(dx + 4 * (size_t)b);
#pragma GCC unroll 3
        for (int c = 0; c < C; c++) _mm_store_ps(prod[c], _mm_mul_ps(_mm_broadcast_ss(&g->d[b][c]), dxv));
#pragma GCC unroll 4
        for (int r = 0; r < TR; r++) {
            const __m256i w = load256(xq[r] + o);
            const __m256i aw = _mm256_abs_epi8(w); /* -128 stays 0x80: 128 unsigned */
#pragma GCC unroll 3
            for (int c = 0; c < C; c++) {
                const __m256i y = _mm256_load_si256((const __m256i *)g->q[b][c]);
                __m256i t = uns ? _mm256_maddubs_epi16(w, y) : _mm256_maddubs_epi16(aw, _mm256_sign_epi8(y, w));
                if (off16) t = _mm256_sub_epi16(t, _mm256_load_si256((const __m256i *)g->o[b][c]));
                t = _mm256_madd_epi16(t, ones);
                acc[r][c] = _mm256_fmadd_ps(_mm256_broadcast_ss(&prod[c][r]), _mm256_cvtepi32_ps(t), acc[r][c]);
            }
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < TR; r++)
#pragma GCC unroll 3
        for (int c = 0; c < C; c++)
            if (r < nr && c < nc) s[(size_t)c * ldo + (size_t)r] = hsum_ps(acc[r][c]);
}

/* One pair of micro_4x3's loop, then acc += prod · cvt(madd(t, 1)).
 * Signed: t = y; t = sign(t, w); t = maddubs(|w|, t), the ones read from
 * memory with the products (no register is left).  Unsigned: t =
 * maddubs(w, y), the ones in the register |w| takes in the signed loop:
 * loads bound this loop on Zen 3 (2 a cycle), and that saves 12 of 47. */
#define FMA_PAIR(ONES, P, A)                                  \
    "vpmaddwd " ONES ", %[t], %[t]\n\t"                        \
    "vcvtdq2ps %[t], %[t]\n\t"                                \
    "vbroadcastss " P "(%[pr]), %[d]\n\t"                     \
    "vfmadd231ps %[t], %[d], %[" A "]\n\t"
#define PAIR_S(Y, P, A)                                       \
    "vmovdqa " Y "(%[y]), %[t]\n\t"                           \
    "vpsignb %[w], %[t], %[t]\n\t"                            \
    "vpmaddubsw %[t], %[aw], %[t]\n\t" FMA_PAIR("64(%[pr])", P, A)
#define PAIR_U(Y, P, A) "vpmaddubsw " Y "(%[y]), %[w], %[t]\n\t" FMA_PAIR("%[aw]", P, A)
/* Q5_0's: unsigned q + 16 against y, less the column's 16 y pair sums
 * (group.o, O_OFF bytes past its quants) */
#define O_OFF "49152"
#define PAIR_O(Y, P, A)                                       \
    "vpmaddubsw " Y "(%[y]), %[w], %[t]\n\t"                  \
    "vpsubw " Y "+" O_OFF "(%[y]), %[t], %[t]\n\t" FMA_PAIR("%[aw]", P, A)
#define ROW_S(W, P0, A0, A1, A2)                              \
    "vmovdqu " W ", %[w]\n\t"                                 \
    "vpabsb %[w], %[aw]\n\t"                                  \
    PAIR_S("0", P0, A0) PAIR_S("32", "16+" P0, A1) PAIR_S("64", "32+" P0, A2)
#define ROW_U(W, P0, A0, A1, A2)                              \
    "vmovdqu " W ", %[w]\n\t"                                 \
    PAIR_U("0", P0, A0) PAIR_U("32", "16+" P0, A1) PAIR_U("64", "32+" P0, A2)
#define ROW_O(W, P0, A0, A1, A2)                              \
    "vmovdqu " W ", %[w]\n\t"                                 \
    PAIR_O("0", P0, A0) PAIR_O("32", "16+" P0, A1) PAIR_O("64", "32+" P0, A2)
#define ZERO(A) "vxorps %[" A "], %[" A "], %[" A "]\n\t"

/* micro for 4 whole rows (x0 and x0 + xs, x2 and x2 + xs, at block 0's
 * quants, block b at + b * bs) by 3 columns, the rows' quants signed
 * (ROW_S) or unsigned (ROW_U, whose INIT puts the ones in aw).  Written as asm:
 * compiled from intrinsics, the 12 accumulators, |w|, w, the pair's
 * temporaries and the constant spilled, and the products' addresses took
 * general registers of their own.  Here the constant is read from memory
 * with the products. */
#define MICRO_4X3(NAME, ROW, INIT)                                                                                  \
    static void NAME(int nb, const uint8_t *x0, const uint8_t *x2, size_t xs, size_t bs, const float *dx,          \
                     const group *g, float *s, size_t ldo)                                                          \
    {                                                                                                               \
        __m256 a00, a01, a02, a10, a11, a12, a20, a21, a22, a30, a31, a32, t, d, aw, w;                             \
        /* prod[c][r] (c < 3) = dy_c · dx_r, then 16 int16 ones at byte 64 */                                       \
        float prod[24] __attribute__((aligned(32)));                                                                \
        _mm256_store_si256((__m256i *)&prod[16], _mm256_set1_epi16(1));                                             \
        float *pr = prod;                                                                                           \
        const uint8_t *y = &g->q[0][0][0];                                                                          \
        /* dx and dy both advance 16 bytes a block: one pointer and the gap                                         \
         * (asm takes at most 30 operands) */                                                                       \
        const ptrdiff_t dyoff = (const char *)&g->d[0][0] - (const char *)dx;                                       \
        __asm__ volatile(                                                                                           \
            ZERO("a00") ZERO("a01") ZERO("a02") ZERO("a10") ZERO("a11") ZERO("a12")                                 \
            ZERO("a20") ZERO("a21") ZERO("a22") ZERO("a30") ZERO("a31") ZERO("a32")                                 \
            INIT                                                                                                    \
            ".p2align 4\n"                                                                                          \
            "1:\n\t"                                                                                                \
            "vmovaps (%[dx]), %x[t]\n\t"                                                                            \
            "vbroadcastss (%[dx],%[dyoff]), %x[d]\n\t"                                                              \
            "vmulps %x[t], %x[d], %x[d]\n\t"                                                                        \
            "vmovaps %x[d], (%[pr])\n\t"                                                                            \
            "vbroadcastss 4(%[dx],%[dyoff]), %x[d]\n\t"                                                             \
            "vmulps %x[t], %x[d], %x[d]\n\t"                                                                        \
            "vmovaps %x[d], 16(%[pr])\n\t"                                                                          \
            "vbroadcastss 8(%[dx],%[dyoff]), %x[d]\n\t"                                                             \
            "vmulps %x[t], %x[d], %x[d]\n\t"                                                                        \
            "vmovaps %x[d], 32(%[pr])\n\t"                                                                          \
            ROW("(%[x0])", "0", "a00", "a01", "a02")                                                                \
            ROW("(%[x0],%[xs])", "4", "a10", "a11", "a12")                                                          \
            ROW("(%[x2])", "8", "a20", "a21", "a22")                                                                \
            ROW("(%[x2],%[xs])", "12", "a30", "a31", "a32")                                                         \
            "add %[bs], %[x0]\n\t"                                                                                  \
            "add %[bs], %[x2]\n\t"                                                                                  \
            "add $96, %[y]\n\t"                                                                                     \
            "add $16, %[dx]\n\t"                                                                                    \
            "dec %[nb]\n\t"                                                                                         \
            "jnz 1b\n\t"                                                                                            \
            : [a00] "=&x"(a00), [a01] "=&x"(a01), [a02] "=&x"(a02), [a10] "=&x"(a10), [a11] "=&x"(a11),             \
              [a12] "=&x"(a12), [a20] "=&x"(a20), [a21] "=&x"(a21), [a22] "=&x"(a22), [a30] "=&x"(a30),             \
              [a31] "=&x"(a31), [a32] "=&x"(a32), [t] "=&x"(t), [d] "=&x"(d), [aw] "=&x"(aw), [w] "=&x"(w),         \
              [nb] "+r"(nb), [x0] "+r"(x0), [x2] "+r"(x2), [y] "+r"(y), [dx] "+r"(dx)                               \
            : [xs] "r"(xs), [bs] "r"(bs), [pr] "r"(pr), [dyoff] "r"(dyoff)                                          \
            : "memory", "cc");                                                                                      \
        (void)aw;                                                                                                   \
        /* the 4 rows of a column are adjacent in s */                                                              \
        _mm_storeu_ps(s, hsum4_ps(a00, a10, a20, a30));                                                             \
        _mm_storeu_ps(s + ldo, hsum4_ps(a01, a11, a21, a31));                                                       \
        _mm_storeu_ps(s + 2 * ldo, hsum4_ps(a02, a12, a22, a32));                                                   \
    }
MICRO_4X3(micro_4x3_s, ROW_S, "")
/* the ones: all bits set, each int16 shifted down to 1 */
#define ONES_IN_AW "vpcmpeqw %[aw], %[aw], %[aw]\n\tvpsrlw $15, %[aw], %[aw]\n\t"
MICRO_4X3(micro_4x3_u, ROW_U, ONES_IN_AW)
MICRO_4X3(micro_4x3_o, ROW_O, ONES_IN_AW)
#undef ONES_IN_AW
_Static_assert(offsetof(group, o) - offsetof(group, q) == 49152, "O_OFF");
#undef MICRO_4X3
#undef ZERO
#undef ROW_U
#undef ROW_O
#undef PAIR_O
#undef O_OFF
#undef ROW_S
#undef PAIR_U
#undef PAIR_S
#undef FMA_PAIR

/* The quants of `rows` rows of x (row i at x + i * xs) as the kind's
 * tiles read them, row i at u + i * nb * 32, 32 bytes a block. */
static void unpack_rows(kind kd, const uint8_t *x, size_t xs, int rows, int nb, uint8_t *u)
{
    for (int i = 0; i < rows; i++) {
        const uint8_t *row = x + xs * (size_t)i;
        __m256i *dst = (__m256i *)(u + (size_t)i * (size_t)nb * 32);
        for (int b = 0; b < nb; b++) {
            const uint8_t *blk = row + kinds[kd].wblk * (size_t)b;
            __m256i q;
            if (kd == KIND_Q5_0)
                q = q5_quants(((const qt_block_q5_0 *)blk)->qs, ((const qt_block_q5_0 *)blk)->qh);
            else if (kd == KIND_Q4_1)
                q = nibbles(((const qt_block_q4_1 *)blk)->qs);
            else
                q = q5_quants(((const qt_block_q5_1 *)blk)->qs, ((const qt_block_q5_1 *)blk)->qh);
            _mm256_store_si256(dst + b, q);
        }
    }
}

/* The _1 types' chains of a tile, added to its outputs: summs =
 * fma(m, s, summs) block after block from 0, 4 rows in the lanes (mx:
 * the rows' m, 4 a block), then out += summs as vec_dot adds them. */
static void add_min_terms(int nb, const float *mx, const group *g, float *o, size_t ldo, int nr, int nc)
{
    /* all TC chains (g repeats its last real column), in registers */
    __m128 s0 = _mm_setzero_ps(), s1 = s0, s2 = s0;
    for (int b = 0; b < nb; b++) {
        const __m128 m4 = _mm_load_ps(mx + 4 * (size_t)b);
        s0 = _mm_fmadd_ps(m4, _mm_broadcast_ss(&g->s[b][0]), s0);
        s1 = _mm_fmadd_ps(m4, _mm_broadcast_ss(&g->s[b][1]), s1);
        s2 = _mm_fmadd_ps(m4, _mm_broadcast_ss(&g->s[b][2]), s2);
    }
    float lanes[TC][4] __attribute__((aligned(16)));
    _mm_store_ps(lanes[0], s0);
    _mm_store_ps(lanes[1], s1);
    _mm_store_ps(lanes[2], s2);
    for (int c = 0; c < nc; c++)
        for (int r = 0; r < nr; r++) o[(size_t)c * ldo + (size_t)r] += lanes[c][r];
}

static void tiles(const kind kd, int n, float *s, size_t ldo, const void *vx, size_t xs, int nr, const void *vy,
                  size_t ys, int nc, qt_vec_dot_tile_fn exact)
{
    const kind_info *k = &kinds[kd];
    const int nb = n / QT_QK8_0;
    /* an unpacked chunk: as many whole tiles as UNPACKED_BYTES hold, up
     * to `want` rows: CHUNK_ROWS, 2x or 4x for rows under 64 or 32
     * blocks, whose column copies per chunk weigh more (nb <= MAX_BLOCKS
     * keeps it at TR or more) */
    const int fit = nb > 0 ? UNPACKED_BYTES / (nb * 32) / TR * TR : CHUNK_ROWS;
    const int want = CHUNK_ROWS * (nb >= 64 ? 1 : nb >= 32 ? 2 : 4);
    const int chunk = kd == KIND_Q8_0 || fit > want ? want : fit;
    if (nb > MAX_BLOCKS || nb < 1) {
        exact(n, s, ldo, vx, xs, nr, vy, ys, nc);
        return;
    }
    static_assert(UNPACKED_BYTES >= TR * MAX_BLOCKS * 32, "a tile's rows at any length");
    _Static_assert(CHUNK_ROWS % TR == 0, "whole tiles per chunk");
    _Static_assert(TC == 3, "add_min_terms's chains");
    const uint8_t *x = vx, *y = vy;
    /* dx[tile][b][r] (mx likewise): row 4·tile + r of the chunk, block b */
    float dx[want / TR][nb][TR] __attribute__((aligned(16)));
    float mx[k->has_min ? want / TR : 1][nb][TR] __attribute__((aligned(16)));
    uint8_t unpacked[kd == KIND_Q8_0 ? 1 : UNPACKED_BYTES] __attribute__((aligned(32)));
    /* the quants: row r of the chunk at q + r * rs, block b at + b * bs */
    const size_t rs = kd == KIND_Q8_0 ? xs : (size_t)nb * 32, bs = kd == KIND_Q8_0 ? k->wblk : 32;
    group g;
    for (int r0 = 0; r0 < nr; r0 += chunk) {
        const int rows = nr - r0 < chunk ? nr - r0 : chunk, tiles = (rows + TR - 1) / TR;
        for (int t = 0; t < tiles; t++)
            for (int r = 0; r < TR; r++) {
                const uint8_t *row = x + xs * (size_t)(r0 + (TR * t + r < rows ? TR * t + r : rows - 1));
                for (int b = 0; b < nb; b++) {
                    dx[t][b][r] = half_at(row + (size_t)b * k->wblk);
                    if (k->has_min) mx[t][b][r] = half_at(row + (size_t)b * k->wblk + 2);
                }
            }
        const uint8_t *q = x + xs * (size_t)r0 + offsetof(qt_block_q8_0, qs);
        if (kd != KIND_Q8_0) {
            unpack_rows(kd, x + xs * (size_t)r0, xs, rows, nb, unpacked);
            q = unpacked;
        }
        for (int c0 = 0; c0 < nc; c0 += TC) {
            const int cols = nc - c0 < TC ? nc - c0 : TC;
            const uint8_t *yc[TC];
            for (int c = 0; c < TC; c++) yc[c] = y + ys * (size_t)(c0 + (c < cols ? c : cols - 1));
            if (pack_group(k, yc, nb, &g)) {
                exact(n, s + (size_t)c0 * ldo + r0, ldo, x + xs * (size_t)r0, xs, rows, yc[0], ys, cols);
                continue;
            }
            for (int t = 0; t < tiles; t++) {
                const int tr = rows - TR * t < TR ? rows - TR * t : TR;
                const uint8_t *xq[TR];
                for (int r = 0; r < TR; r++) xq[r] = q + rs * (size_t)(TR * t + (r < tr ? r : tr - 1));
                float *o = s + (size_t)c0 * ldo + (size_t)(r0 + TR * t);
                if (cols == 3 && tr == TR && k->off16)
                    micro_4x3_o(nb, xq[0], xq[2], rs, bs, dx[t][0], &g, o, ldo);
                else if (cols == 3 && tr == TR && k->uns)
                    micro_4x3_u(nb, xq[0], xq[2], rs, bs, dx[t][0], &g, o, ldo);
                else if (cols == 3 && tr == TR)
                    micro_4x3_s(nb, xq[0], xq[2], rs, bs, dx[t][0], &g, o, ldo);
                else if (cols == 3)
                    micro(nb, xq, bs, dx[t][0], &g, o, ldo, tr, cols, 3, k->uns, k->off16);
                else if (cols == 2)
                    micro(nb, xq, bs, dx[t][0], &g, o, ldo, tr, cols, 2, k->uns, k->off16);
                else
                    micro(nb, xq, bs, dx[t][0], &g, o, ldo, tr, cols, 1, k->uns, k->off16);
                if (k->has_min) add_min_terms(nb, mx[t][0], &g, o, ldo, tr, cols);
            }
        }
    }
}

#define TILE_FN(NAME, KIND)                                                                                         \
    void NAME(int n, float *s, size_t ldo, const void *vx, size_t xs, int nr, const void *vy, size_t ys, int nc,   \
              qt_vec_dot_tile_fn exact)                                                                             \
    {                                                                                                               \
        tiles(KIND, n, s, ldo, vx, xs, nr, vy, ys, nc, exact);                                                      \
    }
TILE_FN(qt_avx2_tile_q8_0, KIND_Q8_0)
TILE_FN(qt_avx2_tile_q5_0, KIND_Q5_0)
TILE_FN(qt_avx2_tile_q4_1, KIND_Q4_1)
TILE_FN(qt_avx2_tile_q5_1, KIND_Q5_1)
#undef TILE_FN

#else

/* ISO C wants a declaration in every translation unit. */
typedef int qt_x86_avx2_tile_q8_unused;

#endif
