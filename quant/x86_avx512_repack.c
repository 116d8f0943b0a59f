/* x86_avx512_repack.c - the wide repack kernels (repack.h) for Q4_0 and
 * IQ4_NL with AVX-512, and the same with AVX512-VNNI.
 *
 * Compiled with the AVX-512 flags; helpers in x86_avx512_wide.h.
 *
 * Why this shape: the 8-row AVX2 kernels spend most of their time in
 * horizontal sums, because every row's block sum lands spread over eight
 * lanes.  Here each of 16 rows owns one int32 lane: a panel of 8 blocks
 * of the 16 rows is transposed so that one vector holds 4 quant bytes of
 * each row, and vpdpbusd against 4 activation bytes broadcast from memory
 * adds those 4 products into the row's own lane.  Eight such steps are one
 * 32-element block, exact, with the block's offset correction preloaded in
 * the accumulator; then the same one multiply and one fma per block and
 * output as the reference, in block order, so the bits equal
 * quant/repack_ref.c's.  A panel serves every column of the call before
 * the next is packed, so the weights are read once per call (a pass of
 * tokens in ggml-lite/matmul.c); gemv is the 1-column case.
 *
 * Exactness of the integer part:
 *   Q4_0: nibbles 0..15 are vpdpbusd's unsigned operand as they are;
 *     sum((q - 8) y) = sum(q y) - 8 sum(y).  Without VNNI vpmaddubsw pairs
 *     reach 2 * 15 * 128, far from int16 saturation.
 *   IQ4_NL: the table value v (-127..113) goes in as v + 128 (1..241),
 *     corrected by -128 sum(y).  vpmaddubsw pairs would reach 2 * 241 * 128
 *     and saturate, so only the VNNI set has it. */
#if defined(__x86_64__)

#include <immintrin.h>
#include <stdalign.h>
#include <string.h>

#include "blocks.h"
#include "ref.h"
#include "repack.h"
#include "x86_avx512_wide.h"

/* Columns that share each panel load: their chains and accumulators, plus
 * the quant vector and temporaries, fill the 32 zmm registers. */
#define MAX_COLS 8
/* Columns whose accumulators a call keeps on its stack at once. */
#define ACC_COLS 64

/* What a column contributes to every row's block b (repack.h, prep). */
typedef qt_rp_col_block col_block;

/* ---- the columns' side data (prep) ----------------------------------------- */

/* A call's columns go in groups of MAX_COLS, each group block by block:
 * the columns' 32 activation bytes, then their scales, then their offset
 * corrections.  Read from 8 columns' own blocks, a block's loads took 16
 * pointers, more than the registers left, and the spills and address
 * arithmetic cost ~12% of the 8-column step (1 thread, n = 2048, 64
 * columns); one pointer serves a group.  The columns past the last whole
 * group (and a lone gemv column) keep one col_block array each, after the
 * groups, and read their bytes from y. */
typedef struct il_block {
    int8_t qs[MAX_COLS][QT_QK8_0];
    float d[MAX_COLS];
    int32_t off[MAX_COLS];
} il_block;

static size_t aux_il(int n, int ncols)
{
    const size_t nb = (size_t)(n / QT_QK8_0);
    return (size_t)(ncols / MAX_COLS) * nb * sizeof(il_block) + (size_t)(ncols % MAX_COLS) * nb * sizeof(col_block);
}

/* Where the col_block arrays of a call's last ncols % MAX_COLS columns start. */
static const col_block *tail_blocks(const void *aux, int nb, int ncols)
{
    return (const col_block *)((const il_block *)aux + (size_t)(ncols / MAX_COLS) * nb);
}

static void prep_il(int n, int col, int ncols, void *aux, const void *y, int off_scale)
{
    const int nb = n / QT_QK8_0, whole = ncols / MAX_COLS * MAX_COLS;
    if (col >= whole) {
        qt_rp_prep_q8_0(n, (col_block *)tail_blocks(aux, nb, ncols) + (size_t)(col - whole) * nb, y, off_scale);
        return;
    }
    il_block *g = (il_block *)aux + (size_t)(col / MAX_COLS) * nb;
    const int slot = col % MAX_COLS;
    const qt_block_q8_0 *yb = y;
    enum { CHUNK = 64 };
    col_block cb[CHUNK];
    for (int b0 = 0; b0 < nb; b0 += CHUNK) {
        const int m = nb - b0 < CHUNK ? nb - b0 : CHUNK;
        qt_rp_prep_q8_0(m * QT_QK8_0, cb, yb + b0, off_scale);
        for (int i = 0; i < m; i++) {
            memcpy(g[b0 + i].qs[slot], yb[b0 + i].qs, QT_QK8_0);
            g[b0 + i].d[slot] = cb[i].d;
            g[b0 + i].off[slot] = cb[i].off;
        }
    }
}

static void prep_q4_0(int n, int col, int ncols, void *aux, const void *y) { prep_il(n, col, ncols, aux, y, 8); }
static void prep_iq4_nl(int n, int col, int ncols, void *aux, const void *y) { prep_il(n, col, ncols, aux, y, 128); }

/* ---- the kernel ------------------------------------------------------------ */

/* Q4_0 and IQ4_NL blocks share one layout: f16 d, then 16 bytes holding
 * elements j (low nibble) and j + 16 (high nibble). */
_Static_assert(sizeof(qt_block_q4_0) == 18 && sizeof(qt_block_iq4_nl) == 18, "block layout");
#define BLOCK 18

/* Blocks per panel: 8 of them (2.3 KB) serve all columns before the next. */
#define PANEL 8

/* PANEL blocks of 16 rows in row-per-lane form. */
typedef struct panel {
    __m512i u[8 * PANEL]; /* block i: u[8i + k], u[8i + 4 + k] = elements 4k..4k+3, 16+4k..16+4k+3 */
    __m512 d[PANEL];
} panel;

/* One block of the 16 rows in row-per-lane form: u[k], u[4 + k] hold
 * elements 4k..4k+3 and 16+4k..16+4k+3 of each row (IQ4_NL: as table
 * value + 128). */
INLINE void unpack(const uint8_t *blk, size_t stride, __m512i u[8], const int iq4)
{
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    /* IQ4_NL's table as v + 128 (v ^ 0x80), in every 128-bit lane */
    const __m128i t = _mm_loadu_si128((const __m128i *)qt_iq4nl_values);
    const __m512i table = _mm512_broadcast_i32x4(_mm_xor_si128(t, _mm_set1_epi8((char)0x80)));
    __m512i q[4];
    load16x4(blk + 2, stride, q);
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        u[k] = _mm512_and_si512(q[k], m4);
        u[4 + k] = _mm512_and_si512(_mm512_srli_epi16(q[k], 4), m4);
        if (iq4) {
            u[k] = _mm512_shuffle_epi8(table, u[k]);
            u[4 + k] = _mm512_shuffle_epi8(table, u[4 + k]);
        }
    }
}

INLINE __mmask64 first_bytes(int k)
{
    return k >= 64 ? ~(__mmask64)0 : k <= 0 ? 0 : ((__mmask64)1 << k) - 1;
}

/* The scales of blocks 0..nb-1 (nb <= PANEL) of the 16 rows, d[i] for
 * block i.  Transposing 2 of every 18 bytes like the quants cost a third
 * of a gemv; instead one vpermt2w picks each row's 8 scales (block i
 * starts at word 9i) out of its first 128 bytes, and two more per pair of
 * blocks turn the 16 x 8 words around.  Masked loads stay inside a row's
 * last, shorter panel. */
INLINE void scales(const uint8_t *w, size_t stride, int nb, __m512 d[PANEL])
{
    _Static_assert(PANEL == 8 && PANEL * BLOCK >= 128, "8 scales in the first 128 bytes");
    const __m512i pick = _mm512_setr_epi32(9 << 16, 27 << 16 | 18, 45 << 16 | 36, 63 << 16 | 54, 0, 0, 0, 0, 0, 0,
                                           0, 0, 0, 0, 0, 0);
    const __mmask64 m0 = first_bytes(nb * BLOCK), m1 = first_bytes(nb * BLOCK - 64);
    __m512i z[4]; /* z[q]: rows 4q..4q+3, row r's 8 scales in lane r % 4 */
#pragma GCC unroll 16
    for (int r = 0; r < 16; r++) {
        const uint8_t *row = w + r * stride;
        const __m512i v = _mm512_permutex2var_epi16(_mm512_maskz_loadu_epi8(m0, row), pick,
                                                    _mm512_maskz_loadu_epi8(m1, row + 64));
        const __m128i lo = _mm512_castsi512_si128(v);
        switch (r % 4) { /* the lane must be an immediate, even unoptimized */
        case 0: z[r / 4] = v; break;
        case 1: z[r / 4] = _mm512_inserti32x4(z[r / 4], lo, 1); break;
        case 2: z[r / 4] = _mm512_inserti32x4(z[r / 4], lo, 2); break;
        default: z[r / 4] = _mm512_inserti32x4(z[r / 4], lo, 3); break;
        }
    }
    const __m512i z0 = z[0], z1 = z[1], z2 = z[2], z3 = z[3];
    /* word j of the pair (i, i + 1): row j % 16 of block i + j / 16, i.e.
     * t word 8 (r % 8) + block within (z0, z1) for rows 0-7, (z2, z3) for 8-15 */
    alignas(64) uint16_t ix[32];
    for (int j = 0; j < 32; j++) ix[j] = (uint16_t)(8 * (j % 8) + j / 16);
    const __m512i base = _mm512_load_si512(ix);
    for (int i = 0; i < nb; i += 2) {
        const __m512i idx = _mm512_add_epi16(base, _mm512_set1_epi16((short)i));
        const __m512i lo = _mm512_permutex2var_epi16(z0, idx, z1), hi = _mm512_permutex2var_epi16(z2, idx, z3);
        const __m512i both = _mm512_mask_blend_epi16(0xff00ff00u, lo, hi);
        d[i] = _mm512_cvtph_ps(_mm512_castsi512_si256(both));
        if (i + 1 < nb) d[i + 1] = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(both, 1));
    }
}

INLINE void pack(panel *p, const uint8_t *w, size_t stride, int nb, const int iq4)
{
    scales(w, stride, nb, p->d);
    for (int i = 0; i < nb; i++) unpack(w + i * BLOCK, stride, &p->u[8 * i], iq4);
}

/* Where the columns' data for a block lies: column c's block i at
 * q + c * q_col + i * q_blk (its 32 bytes), and its scale and offset at
 * d + c * a_col + i * a_blk and off + the same.  Constants for a group
 * (il_block), strides for columns in y and col_block arrays. */
typedef struct col_src {
    const uint8_t *q, *d, *off;
    size_t q_col, q_blk, a_col, a_blk;
} col_src;

INLINE col_src group_src(const void *aux, int nb, int g, int b)
{
    const il_block *e = (const il_block *)aux + (size_t)g * nb + b;
    return (col_src){(const uint8_t *)e->qs, (const uint8_t *)e->d, (const uint8_t *)e->off,
                     QT_QK8_0, sizeof(il_block), sizeof(float), sizeof(il_block)};
}

/* Column c's blocks from b on, c counted from y's and a's first. */
INLINE col_src column_src(const uint8_t *y, size_t y_stride, const col_block *a, int nb, int c, int b)
{
    const qt_block_q8_0 *yb = (const qt_block_q8_0 *)(y + c * y_stride) + b;
    const col_block *ab = a + (size_t)c * nb + b;
    return (col_src){(const uint8_t *)yb->qs, (const uint8_t *)&ab->d, (const uint8_t *)&ab->off,
                     y_stride, sizeof(qt_block_q8_0), (size_t)nb * sizeof(col_block), sizeof(col_block)};
}

/* Adds np blocks of `nc` columns (a constant after inlining) from src to
 * their accumulators, 16 floats each in sa. */
INLINE void columns(const panel *p, int np, const int nc, col_src src, float *sa, const int vnni)
{
    __m512 acc[MAX_COLS];
#pragma GCC unroll 8
    for (int c = 0; c < nc; c++) acc[c] = _mm512_load_ps(sa + 16 * c);
    for (int i = 0; i < np; i++) {
        const int8_t *q = (const int8_t *)src.q + i * src.q_blk;
        const uint8_t *d = src.d + i * src.a_blk, *off = src.off + i * src.a_blk;
        __m512i is[MAX_COLS];
#pragma GCC unroll 8
        for (int c = 0; c < nc; c++) is[c] = _mm512_set1_epi32(*(const int32_t *)(off + c * src.a_col));
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            const __m512i u = p->u[8 * i + k];
#pragma GCC unroll 8
            for (int c = 0; c < nc; c++) is[c] = dot4_bcast(is[c], u, q + c * src.q_col + 4 * (k & 3) + 16 * (k >> 2), vnni);
        }
#pragma GCC unroll 8
        for (int c = 0; c < nc; c++) {
            const __m512 dm = _mm512_mul_ps(p->d[i], _mm512_set1_ps(*(const float *)(d + c * src.a_col)));
            acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[c]), dm, acc[c]);
        }
    }
#pragma GCC unroll 8
    for (int c = 0; c < nc; c++) _mm512_store_ps(sa + 16 * c, acc[c]);
}

/* acc + one column's block b against the 16 rows' block in row-per-lane
 * form (quants u, scales dw): the exact integer sum with its offset
 * correction, then the one multiply and fma of the reference. */
INLINE __m512 block_fma(__m512 acc, const __m512i u[8], __m512 dw, const uint8_t *y, const uint8_t *aux, int b,
                        const int vnni)
{
    const qt_block_q8_0 *yb = (const qt_block_q8_0 *)y + b;
    const col_block *ab = (const col_block *)aux + b;
    /* two chains, so that vpdpbusd's latency overlaps */
    __m512i is0 = _mm512_set1_epi32(ab->off), is1 = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        is0 = dot4_bcast(is0, u[k], yb->qs + 4 * k, vnni);
        is1 = dot4_bcast(is1, u[4 + k], yb->qs + 16 + 4 * k, vnni);
    }
    const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(ab->d));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(is0, is1)), d, acc);
}

/* One column (gemv): the same work with no panel in between, since
 * nothing else reuses the unpacked weights.  The prefetch runs GEMV_AHEAD
 * panels ahead, on into the next group of rows, so that no group starts
 * waiting on memory. */
#define GEMV_AHEAD 3
INLINE void gemv_4bit(int n, float *s, const uint8_t *w, size_t stride, const uint8_t *y, const uint8_t *aux,
                      const int vnni, const int iq4)
{
    const int nb = n / QT_QK4_0;
    __m512 acc = _mm512_setzero_ps();
    __m512 dw[PANEL];
    for (int b = 0; b < nb; b++) {
        const uint8_t *blk = w + (size_t)b * BLOCK;
        if (b % PANEL == 0) {
            prefetch_ahead(w, stride, (size_t)nb * BLOCK, (size_t)(b + GEMV_AHEAD * PANEL) * BLOCK, PANEL * BLOCK);
            scales(blk, stride, nb - b < PANEL ? nb - b : PANEL, dw);
        }
        __m512i u[8];
        unpack(blk, stride, u, iq4);
        acc = block_fma(acc, u, dw[b % PANEL], y, aux, b, vnni);
    }
    _mm512_storeu_ps(s, acc);
}

/* ---- the x16 layout (repack.h) -------------------------------------------- */

/* Block b of a group in row-per-lane form, straight from its four chunks. */
INLINE void unpack_x16(const uint8_t *g, int b, __m512i u[8], const int iq4)
{
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    const __m128i t = _mm_loadu_si128((const __m128i *)qt_iq4nl_values);
    const __m512i table = _mm512_broadcast_i32x4(_mm_xor_si128(t, _mm_set1_epi8((char)0x80)));
    const uint8_t *q = g + qt_x16_quants(b);
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        const __m512i v = _mm512_loadu_si512((const void *)(q + 64 * k));
        u[k] = _mm512_and_si512(v, m4);
        u[4 + k] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
        if (iq4) {
            u[k] = _mm512_shuffle_epi8(table, u[k]);
            u[4 + k] = _mm512_shuffle_epi8(table, u[4 + k]);
        }
    }
}

INLINE __m512 scales_x16(const uint8_t *g, int b, int nb)
{
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(g + qt_x16_scales(b, nb))));
}

/* One block of one column into acc. */
INLINE __m512 gemv_x16_block(__m512 acc, const uint8_t *g, int b, int nb, const uint8_t *y, const uint8_t *aux,
                             const int vnni, const int iq4)
{
    __m512i u[8];
    unpack_x16(g, b, u, iq4);
    return block_fma(acc, u, scales_x16(g, b, nb), y, aux, b, vnni);
}

/* One column: the gemv above without the transposes, a pair of blocks
 * (576 bytes) per step, so that each load instruction walks the group at
 * one fixed stride (the prefetchers that follow instructions want that;
 * a block per step measured slower).  Software prefetches run on into
 * the next group's start at two distances: X16_AHEAD bytes into L1 and
 * X16_AHEAD_L2 into L2, which keeps more lines on their way than the
 * L1's fill buffers hold.  Sapphire Rapids, tl-q4_0 tg128, 2 threads:
 * 1 KB alone 41.5-42.5 t/s, with 3-4 KB into L2 44.3-45.8, 6-16 KB into
 * L2 or 4 KB into L1 worse than 1 KB alone (39-42), none at all 37-38;
 * the kernel alone (qlm bench --kernels) 92-95% of the read bandwidth
 * before, 97-99% after. */
#ifndef X16_HINT
#define X16_HINT _MM_HINT_T0
#endif
#ifndef X16_AHEAD
#define X16_AHEAD 1024
#endif
#ifndef X16_AHEAD_L2
#define X16_AHEAD_L2 3072
#endif
INLINE void gemv_x16(int n, float *s, const uint8_t *g, const uint8_t *y, const uint8_t *aux, const int vnni,
                     const int iq4)
{
    const int nb = n / QT_QK4_0;
    __m512 acc = _mm512_setzero_ps();
    int b = 0;
    for (; b + 1 < nb; b += 2) {
        if (X16_AHEAD)
            for (int o = 0; o < 576; o += 64) {
                _mm_prefetch((const char *)(g + qt_x16_quants(b) + X16_AHEAD + o), X16_HINT);
                _mm_prefetch((const char *)(g + qt_x16_quants(b) + X16_AHEAD_L2 + o), _MM_HINT_T1);
            }
        acc = gemv_x16_block(acc, g, b, nb, y, aux, vnni, iq4);
        acc = gemv_x16_block(acc, g, b + 1, nb, y, aux, vnni, iq4);
    }
    if (b < nb) acc = gemv_x16_block(acc, g, b, nb, y, aux, vnni, iq4);
    _mm512_storeu_ps(s, acc);
}

/* All ncols columns, panel by panel, from w in rows w_stride apart or
 * (x16) from a group in the x16 layout; Q4_0's and IQ4_NL's gemm order is
 * their gemv order, so `gemm` is moot. */
INLINE void run_4bit(int n, int ncols, float *s, size_t ldo, const void *w, size_t w_stride, const void *y,
                     size_t y_stride, const void *aux, bool stream, const int vnni, const int iq4, const int x16)
{
    if (ncols == 1) {
        if (x16)
            gemv_x16(n, s, w, y, aux, vnni, iq4);
        else
            gemv_4bit(n, s, w, w_stride, y, aux, vnni, iq4);
        return;
    }
    alignas(64) panel p;
    const int nb = n / QT_QK4_0;
    const int whole = ncols / MAX_COLS * MAX_COLS;
    const col_block *tail = tail_blocks(aux, nb, ncols);
    const uint8_t *yt = (const uint8_t *)y + (size_t)whole * y_stride;
    /* The chunk's accumulators side by side, as in x86_avx512_repack_k.c's
     * run_k (which says why); chunks of whole 8-column groups, each
     * packing the panels anew. */
    alignas(64) float sa[ACC_COLS * 16];
    stream = qt_rp_stream_out(stream, s, ldo);
    for (int c0 = 0; c0 < ncols; c0 += ACC_COLS) {
        const int c1 = ncols - c0 < ACC_COLS ? ncols : c0 + ACC_COLS;
        for (int c = 0; c < c1 - c0; c++) _mm512_store_ps(sa + 16 * c, _mm512_setzero_ps());
        for (int b = 0; b < nb; b += PANEL) {
            const int np = nb - b < PANEL ? nb - b : PANEL;
            if (!stream) qt_rp_prefetch_out(s + (size_t)c0 * ldo, ldo, c1 - c0, b / PANEL, (nb + PANEL - 1) / PANEL);
            if (x16) {
                /* two panels on (past the group's end: the next group's
                 * start, which follows it in memory); the hardware
                 * prefetchers alone left 2048x8192 at 0.84x (1 thread,
                 * 512 columns; one or four panels on measured the same) */
                const char *ahead = (const char *)w + (size_t)(b + 2 * PANEL) / 2 * 576;
                for (int o = 0; o < PANEL / 2 * 576; o += 64) _mm_prefetch(ahead + o, _MM_HINT_T0);
                for (int i = 0; i < np; i++) {
                    unpack_x16(w, b + i, &p.u[8 * i], iq4);
                    p.d[i] = scales_x16(w, b + i, nb);
                }
            } else {
                const uint8_t *wb = (const uint8_t *)w + (size_t)b * BLOCK;
                if (b + 2 * PANEL < nb) prefetch_rows(wb + 2 * PANEL * BLOCK, w_stride, PANEL * BLOCK);
                pack(&p, wb, w_stride, np, iq4);
            }
            int c = c0;
            for (; c < (whole < c1 ? whole : c1); c += MAX_COLS)
                columns(&p, np, MAX_COLS, group_src(aux, nb, c / MAX_COLS, b), sa + 16 * (c - c0), vnni);
            for (; c1 - c >= 4; c += 4)
                columns(&p, np, 4, column_src(yt, y_stride, tail, nb, c - whole, b), sa + 16 * (c - c0), vnni);
            for (; c < c1; c++)
                columns(&p, np, 1, column_src(yt, y_stride, tail, nb, c - whole, b), sa + 16 * (c - c0), vnni);
        }
        for (int c = 0; c < c1 - c0; c++) {
            if (stream)
                _mm512_stream_ps(s + (size_t)(c0 + c) * ldo, _mm512_load_ps(sa + 16 * c));
            else
                _mm512_storeu_ps(s + (size_t)(c0 + c) * ldo, _mm512_load_ps(sa + 16 * c));
        }
    }
    if (stream) _mm_sfence(); /* as in x86_avx512_repack_k.c */
}

static void run_x16_q4_0(int n, int ncols, bool gemm, float *s, size_t ldo, const void *w, const void *y,
                         size_t y_stride, const void *aux, bool stream)
{
    (void)gemm;
    run_4bit(n, ncols, s, ldo, w, 0, y, y_stride, aux, stream, 0, 0, 1);
}

static void run_x16_q4_0_vnni(int n, int ncols, bool gemm, float *s, size_t ldo, const void *w, const void *y,
                              size_t y_stride, const void *aux, bool stream)
{
    (void)gemm;
    run_4bit(n, ncols, s, ldo, w, 0, y, y_stride, aux, stream, 1, 0, 1);
}

static void run_x16_iq4_nl_vnni(int n, int ncols, bool gemm, float *s, size_t ldo, const void *w, const void *y,
                                size_t y_stride, const void *aux, bool stream)
{
    (void)gemm;
    run_4bit(n, ncols, s, ldo, w, 0, y, y_stride, aux, stream, 1, 1, 1);
}

static void run_q4_0(int n, int ncols, bool gemm, float *s, size_t ldo, const void *w, size_t w_stride,
                     const void *y, size_t y_stride, const void *aux, bool stream)
{
    (void)gemm;
    run_4bit(n, ncols, s, ldo, w, w_stride, y, y_stride, aux, stream, 0, 0, 0);
}

static void run_q4_0_vnni(int n, int ncols, bool gemm, float *s, size_t ldo, const void *w, size_t w_stride,
                          const void *y, size_t y_stride, const void *aux, bool stream)
{
    (void)gemm;
    run_4bit(n, ncols, s, ldo, w, w_stride, y, y_stride, aux, stream, 1, 0, 0);
}

static void run_iq4_nl_vnni(int n, int ncols, bool gemm, float *s, size_t ldo, const void *w, size_t w_stride,
                            const void *y, size_t y_stride, const void *aux, bool stream)
{
    (void)gemm;
    run_4bit(n, ncols, s, ldo, w, w_stride, y, y_stride, aux, stream, 1, 1, 0);
}

static const qt_rp_wide wide_q4_0 = {aux_il, prep_q4_0, run_q4_0, run_x16_q4_0, true, NULL};
static const qt_rp_wide wide_q4_0_vnni = {aux_il, prep_q4_0, run_q4_0_vnni, run_x16_q4_0_vnni, true, NULL};
static const qt_rp_wide wide_iq4_nl_vnni = {aux_il, prep_iq4_nl, run_iq4_nl_vnni, run_x16_iq4_nl_vnni, true, NULL};

const qt_rp_wide *const qt_rp_wide_avx512[QT_COUNT] = {
    [QT_Q4_0] = &wide_q4_0, [QT_Q4_K] = &qt_rp_wide_q4_K_avx512, [QT_Q2_K] = &qt_rp_wide_q2_K_avx512};
const qt_rp_wide *const qt_rp_wide_avx512_vnni[QT_COUNT] = {
    [QT_Q4_0] = &wide_q4_0_vnni, [QT_IQ4_NL] = &wide_iq4_nl_vnni, [QT_Q4_K] = &qt_rp_wide_q4_K_avx512_vnni,
    [QT_Q2_K] = &qt_rp_wide_q2_K_avx512_vnni};

#endif
