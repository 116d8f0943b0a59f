/* x86_avx2_wide.c - the wide repack kernels (repack.h) with AVX2: Q4_0,
 * Q4_K and Q2_K, from rows and from the x16 layout.
 *
 * Compiled with -mavx2 -mfma -mf16c.  The shape is the AVX-512 one
 * (x86_avx512_repack.c, x86_avx512_repack_k.c): each weight row owns an
 * int32 lane, so no row's sum is ever spread over lanes and summed back
 * (the 8-row kernels of x86_avx2_repack*.c spend most of their time on
 * those horizontal sums and on scalar scale unpacking).  AVX2 has 8 lanes,
 * so the 16 rows of a call go in two halves of 8.
 *
 * Exactness: AVX2 has no vpdpbusd, so vpmaddubsw's int16 pair sums are
 * added up in int16 before one vpmaddwd widens them; every bound below
 * keeps that sum below 2^15, so the integer sums are exact and equal the
 * reference's, and the float work is quant/repack_ref.c's, in its order:
 *   Q4_0: eight pair sums of nibble (<= 15) times byte (|y| <= 128) per
 *     block: 8 * 2 * 15 * 128 = 30720.  sum((q - 8) y) = sum(q y) - 8 sum(y)
 *     with the correction per column block from prep.
 *   Q4_K: the same eight pair sums per 32-element sub-block; vpmaddwd
 *     against the sub-block's scale in both int16 halves of each lane then
 *     gives scale * sum exactly (no vpmulld).
 *   Q2_K: four pair sums of 2-bit quants per 16-element sub-block (3072),
 *     times the 4-bit scale the same way; with many columns, eight per
 *     pair of sub-blocks, one in each int16 half (6144), times the two
 *     scales by one vpmaddwd (Q2_PAIRED_COLS).
 *   Mins (both K types): int16 pairs of mins times pairs of bsums, with
 *     vpmaddwd. */
#if defined(__x86_64__)

#include <immintrin.h>
#include <stdalign.h>
#include <string.h>

#include "blocks.h"
#include "repack.h"
#include "x86_avx2_rows.h"

#define INLINE static inline __attribute__((always_inline))

/* ---- shared helpers --------------------------------------------------------- */

/* The f16 in the low (hi = 0) or high half of each lane, widened exactly. */
/* Half a line of a call's output: with `stream` (qt_rp_stream_out; s
 * aligned, so each pair of halves is one whole line) a streaming store. */
INLINE void store_out8(float *o, __m256 v, bool stream)
{
    if (stream)
        _mm256_stream_ps(o, v);
    else
        _mm256_storeu_ps(o, v);
}

INLINE __m256 halves(__m256i v, int hi)
{
    const __m256i w = hi ? _mm256_srli_epi32(v, 16) : _mm256_and_si256(v, _mm256_set1_epi32(0xffff));
    const __m128i p = _mm_packus_epi32(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
    return _mm256_cvtph_ps(p);
}

/* Byte j of each row's 16 scale bytes (v[j / 4], row-per-lane) in both
 * int16 halves of its lane, whole: one vpshufb (a shift and mask per
 * byte, then a pair, took five operations). */
INLINE __m256i scale_pair(const __m256i v[4], int j)
{
    const int b = j % 4;
    const __m256i ctl = _mm256_setr_epi8(b, -1, b, -1, 4 + b, -1, 4 + b, -1, 8 + b, -1, 8 + b, -1, 12 + b, -1, 12 + b,
                                         -1, b, -1, b, -1, 4 + b, -1, 4 + b, -1, 8 + b, -1, 8 + b, -1, 12 + b, -1,
                                         12 + b, -1);
    return _mm256_shuffle_epi8(v[j / 4], ctl);
}

/* Bytes 2i and 2i + 1 of each row's scale bytes as the int16 pair of its
 * lane, whole. */
INLINE __m256i byte_pair(const __m256i *v, int i)
{
    const int b = 2 * i % 4;
    const __m256i ctl = _mm256_setr_epi8(b, -1, b + 1, -1, 4 + b, -1, 5 + b, -1, 8 + b, -1, 9 + b, -1, 12 + b, -1,
                                         13 + b, -1, b, -1, b + 1, -1, 4 + b, -1, 5 + b, -1, 8 + b, -1, 9 + b, -1,
                                         12 + b, -1, 13 + b, -1);
    return _mm256_shuffle_epi8(v[2 * i / 4], ctl);
}

/* Q4_K's 8 scales and 8 mins of each row, from its 12 scale bytes in
 * row-per-lane form (h[1], h[2], h[3]: bytes 0-3, 4-7, 8-11), all at
 * once byte-wise: byte b of each lane of q[0] is scale b, of q[1] scale
 * 4 + b, of q[2] min b, of q[3] min 4 + b; scale_pair(q, j) and
 * byte_pair(q + 2, g) then give a scale, and the mins of group g, as
 * int16 pairs (a shift and mask per scale and a pair took about a third
 * of the one-column kernel's operations). */
INLINE void q4_K_scales(const __m256i h[4], __m256i q[4])
{
    const __m256i m6 = _mm256_set1_epi8(63), m4 = _mm256_set1_epi8(15), top = _mm256_set1_epi8(0x30);
    q[0] = _mm256_and_si256(h[1], m6);
    q[2] = _mm256_and_si256(h[2], m6);
    /* 16-bit shifts: the masks keep each byte's own bits (bytes 0-3's
     * and 4-7's top two bits go above the nibbles of bytes 8-11) */
    q[1] = _mm256_or_si256(_mm256_and_si256(h[3], m4), _mm256_and_si256(_mm256_srli_epi16(h[1], 2), top));
    q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(h[3], 4), m4),
                           _mm256_and_si256(_mm256_srli_epi16(h[2], 2), top));
}

/* Asks for `bytes` at p + r * stride of 16 rows ahead of use: 16 rows far
 * apart are more streams than the hardware prefetchers follow. */
INLINE void prefetch_rows(const uint8_t *p, size_t stride, size_t bytes)
{
    for (int r = 0; r < 16; r++)
        for (size_t o = 0; o < bytes; o += 64) _mm_prefetch((const char *)(p + r * stride + o), _MM_HINT_T0);
}

/* Share k of `parts` of the `bytes` at p (the next x16 block, or the
 * next group's first: groups are contiguous), asked for while the columns
 * run: the hardware prefetchers see a burst of lines per block with a
 * long pause between, and left the burst to wait on memory (tl-q4_k_m
 * shapes, 1 thread: ~80 GMAC/s from memory against ~95 from cache). */
INLINE void prefetch_spread(const uint8_t *p, size_t bytes, int k, int parts)
{
    const size_t lines = (bytes + 63) / 64, per = (lines + parts - 1) / parts;
    for (size_t l = per * k; l < per * (k + 1) && l < lines; l++) _mm_prefetch((const char *)(p + 64 * l), _MM_HINT_T0);
}

/* ---- Q4_0 ------------------------------------------------------------------ */

typedef qt_rp_col_block col_block;

/* off_scale * sum(y) per block, negated, and the widened scale. */
void qt_rp_prep_q8_0(int n, col_block *a, const void *vy, int off_scale)
{
    const qt_block_q8_0 *y = vy;
    const __m256i bias = _mm256_set1_epi8((char)0x80);
    for (int b = 0; b < n / QT_QK8_0; b++) {
        /* y ^ 0x80 is y + 128 unsigned, which vpsadbw sums exactly */
        const __m256i s = _mm256_sad_epu8(_mm256_xor_si256(_mm256_loadu_si256((const __m256i *)y[b].qs), bias),
                                          _mm256_setzero_si256());
        const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
        const int sum = (int)(_mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1)) - 128 * QT_QK8_0;
        a[b].d = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(y[b].d)));
        a[b].off = -off_scale * sum;
    }
}

static void prep_q4_0(int n, int col, int ncols, void *aux, const void *y)
{
    (void)ncols;
    qt_rp_prep_q8_0(n, (col_block *)((uint8_t *)aux + (size_t)col * qt_rp_aux_q8_0(n, 1)), y, 8);
}

#define BLOCK 18 /* Q4_0: f16 d, 16 bytes of nibbles (j low, j + 16 high) */
_Static_assert(sizeof(qt_block_q4_0) == BLOCK, "block layout");

/* One block of 8 rows in row-per-lane form: u[k], u[4 + k] hold elements
 * 4k..4k+3 and 16+4k..16+4k+3 of each row. */
INLINE void split_nibbles(const __m256i q[4], __m256i u[8])
{
    const __m256i m4 = _mm256_set1_epi8(0x0f);
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        u[k] = _mm256_and_si256(q[k], m4);
        u[4 + k] = _mm256_and_si256(_mm256_srli_epi16(q[k], 4), m4);
    }
}

INLINE void unpack_rows(const uint8_t *blk, size_t stride, __m256i u[8])
{
    __m256i q[4];
    load8x4(blk + 2, stride, q);
    split_nibbles(q, u);
}

/* Half h (rows 8h..8h+7) of block b of an x16 group. */
INLINE void unpack_x16(const uint8_t *g, int b, int h, __m256i u[8])
{
    __m256i q[4];
    const uint8_t *p = g + qt_x16_quants(b) + 32 * h;
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) q[k] = _mm256_loadu_si256((const __m256i *)(p + 64 * k));
    split_nibbles(q, u);
}

INLINE __m256 scales_rows(const uint8_t *blk, size_t stride)
{
    alignas(16) uint16_t d[8];
    for (int r = 0; r < 8; r++) memcpy(&d[r], blk + r * stride, 2);
    return _mm256_cvtph_ps(_mm_load_si128((const __m128i *)d));
}

INLINE __m256 scales_x16(const uint8_t *g, int b, int nb, int h)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(g + qt_x16_scales(b, nb) + 16 * h)));
}

/* The exact integer sum of 8 rows' block against one column's block,
 * with the offset correction. */
INLINE __m256i block_sum(const __m256i u[8], const int8_t *yq, int32_t off)
{
    __m256i s = _mm256_maddubs_epi16(u[0], bcast4(yq));
#pragma GCC unroll 8
    for (int k = 1; k < 8; k++) s = _mm256_add_epi16(s, _mm256_maddubs_epi16(u[k], bcast4(yq + 4 * (k & 3) + 16 * (k >> 2))));
    return _mm256_add_epi32(_mm256_madd_epi16(s, _mm256_set1_epi16(1)), _mm256_set1_epi32(off));
}

/* acc + the reference's one multiply and fma for block b of a column. */
INLINE __m256 block_fma(__m256 acc, const __m256i u[8], __m256 dw, const uint8_t *y, const uint8_t *aux, int b)
{
    const qt_block_q8_0 *yb = (const qt_block_q8_0 *)y + b;
    const col_block *ab = (const col_block *)aux + b;
    const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(ab->d));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(block_sum(u, yb->qs, ab->off)), d, acc);
}

/* One column (gemv), both halves from each block's loads.  The x16
 * groups' prefetch asks for each line twice, 1 KB ahead into L1 and 3 KB
 * ahead into L2 (as x86_avx512_repack.c's gemv_x16): tl-q4_0 tg128 at
 * QLM_ISA=avx2 on a Sapphire Rapids, 2 threads, 41.6-42.2 t/s against
 * 37.3-37.8 with the L1 one alone (not measured on a Zen). */
INLINE void gemv_q4_0(int n, float *s, const uint8_t *w, size_t stride, const uint8_t *y, const uint8_t *aux,
                      const int x16)
{
    const int nb = n / QT_QK4_0;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int b = 0; b < nb; b++) {
        __m256i u[8];
        if (x16) {
            if (b % 2 == 0)
                for (int o = 0; o < 576; o += 64) {
                    _mm_prefetch((const char *)(w + qt_x16_quants(b) + 1024 + o), _MM_HINT_T0);
                    _mm_prefetch((const char *)(w + qt_x16_quants(b) + 3072 + o), _MM_HINT_T1);
                }
            unpack_x16(w, b, 0, u);
            acc0 = block_fma(acc0, u, scales_x16(w, b, nb, 0), y, aux, b);
            unpack_x16(w, b, 1, u);
            acc1 = block_fma(acc1, u, scales_x16(w, b, nb, 1), y, aux, b);
        } else {
            const uint8_t *blk = w + (size_t)b * BLOCK;
            if (b % 4 == 0 && b + 8 < nb) prefetch_rows(blk + 8 * BLOCK, stride, 4 * BLOCK);
            unpack_rows(blk, stride, u);
            acc0 = block_fma(acc0, u, scales_rows(blk, stride), y, aux, b);
            unpack_rows(blk + 8 * stride, stride, u);
            acc1 = block_fma(acc1, u, scales_rows(blk + 8 * stride, stride), y, aux, b);
        }
    }
    _mm256_storeu_ps(s, acc0);
    _mm256_storeu_ps(s + 8, acc1);
}

/* Many columns: PANEL blocks of the 16 rows unpacked once, then every
 * column against them, 4 at a time (the asm step), one at a time past
 * the last 4. */
#define PANEL 8
/* Columns whose accumulators a call keeps on its stack at once. */
#define Q4_0_CHUNK 64
typedef struct panel_q4_0 {
    __m256i u[PANEL][2][8];
    __m256 d[PANEL][2];
} panel_q4_0;

/* 4 columns and both halves at once (the asm step), each output's float
 * work in block_fma's order. */
INLINE void columns16_q4_0(const panel_q4_0 *p, int np, int b, float *s, size_t ldo, const uint8_t *yc,
                           size_t y_stride, const uint8_t *aux, size_t aux_stride)
{
    __m256 acc[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) acc[i] = _mm256_loadu_ps(s + (i % 4) * ldo + 8 * (i / 4));
    for (int i = 0; i < np; i++) {
        const int8_t *y[4];
        const col_block *ab[4];
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            y[c] = ((const qt_block_q8_0 *)(yc + c * y_stride) + b + i)->qs;
            ab[c] = (const col_block *)(aux + c * aux_stride) + b + i;
        }
        const __m256i *u0 = p->u[i][0], *u1 = p->u[i][1];
        SUB_REGS;
        SUB_ASM_REGS(SUB_32);
        (void)w0, (void)w1, (void)b, (void)t;
        const __m256i v[8] = {a00, a01, a02, a03, a10, a11, a12, a13};
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            const __m256i off = _mm256_set1_epi32(ab[c]->off);
            const __m256 dy = _mm256_set1_ps(ab[c]->d);
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                const __m256i is = _mm256_add_epi32(_mm256_madd_epi16(v[4 * h + c], _mm256_set1_epi16(1)), off);
                acc[4 * h + c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is), _mm256_mul_ps(p->d[i][h], dy), acc[4 * h + c]);
            }
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) _mm256_storeu_ps(s + (i % 4) * ldo + 8 * (i / 4), acc[i]);
}

/* Q4_0's gemm order is its gemv order, so `gemm` is moot. */
INLINE void run_q4_0_any(int n, int ncols, float *s, size_t ldo, const uint8_t *w, size_t stride, const uint8_t *y,
                         size_t y_stride, const uint8_t *aux, size_t aux_stride, bool stream, const int x16)
{
    if (ncols == 1) {
        gemv_q4_0(n, s, w, stride, y, aux, x16);
        return;
    }
    alignas(32) panel_q4_0 p;
    const int nb = n / QT_QK4_0;
    /* the chunk's accumulators side by side (run_k, below, says why) */
    alignas(32) float sa[Q4_0_CHUNK * 16];
    stream = qt_rp_stream_out(stream, s, ldo);
    for (int c0 = 0; c0 < ncols; c0 += Q4_0_CHUNK) {
        const int nch = ncols - c0 < Q4_0_CHUNK ? ncols - c0 : Q4_0_CHUNK;
        const uint8_t *yc = y + (size_t)c0 * y_stride, *ac = aux + (size_t)c0 * aux_stride;
        for (int c = 0; c < 2 * nch; c++) _mm256_store_ps(sa + 8 * c, _mm256_setzero_ps());
        for (int b = 0; b < nb; b += PANEL) {
            const int np = nb - b < PANEL ? nb - b : PANEL;
            if (!stream) qt_rp_prefetch_out(s + (size_t)c0 * ldo, ldo, nch, b / PANEL, (nb + PANEL - 1) / PANEL);
            for (int i = 0; i < np; i++)
                for (int h = 0; h < 2; h++) {
                    if (x16) {
                        unpack_x16(w, b + i, h, p.u[i][h]);
                        p.d[i][h] = scales_x16(w, b + i, nb, h);
                    } else {
                        const uint8_t *blk = w + (size_t)(b + i) * BLOCK + 8 * h * stride;
                        unpack_rows(blk, stride, p.u[i][h]);
                        p.d[i][h] = scales_rows(blk, stride);
                    }
                }
            if (!x16 && b + 2 * PANEL < nb) prefetch_rows(w + (size_t)(b + 2 * PANEL) * BLOCK, stride, PANEL * BLOCK);
            int c = 0;
            for (; nch - c >= 4; c += 4) {
                /* blocks b + PANEL on, or the next group's first (PANEL is
                 * even: a whole number of the layout's block pairs) */
                if (x16) prefetch_spread(w + (size_t)(b + PANEL) * 16 * BLOCK, (size_t)PANEL * 16 * BLOCK, c / 4, nch / 4);
                columns16_q4_0(&p, np, b, sa + 16 * c, 16, yc + c * y_stride, y_stride, ac + c * aux_stride, aux_stride);
            }
            for (; c < nch; c++)
                for (int h = 0; h < 2; h++) {
                    float *o = sa + 16 * c + 8 * h;
                    __m256 acc = _mm256_load_ps(o);
                    for (int i = 0; i < np; i++)
                        acc = block_fma(acc, p.u[i][h], p.d[i][h], yc + c * y_stride, ac + c * aux_stride, b + i);
                    _mm256_store_ps(o, acc);
                }
        }
        for (int c = 0; c < 2 * nch; c++)
            store_out8(s + (size_t)(c0 + c / 2) * ldo + 8 * (c % 2), _mm256_load_ps(sa + 8 * c), stream);
    }
    if (stream) _mm_sfence();
}

static void run_q4_0(int n, int ncols, bool gemm, float *s, size_t ldo, const void *w, size_t w_stride, const void *y,
                     size_t y_stride, const void *aux, bool stream)
{
    (void)gemm;
    run_q4_0_any(n, ncols, s, ldo, w, w_stride, y, y_stride, aux, qt_rp_aux_q8_0(n, 1), stream, 0);
}

static void run_x16_q4_0(int n, int ncols, bool gemm, float *s, size_t ldo, const void *w, const void *y,
                         size_t y_stride, const void *aux, bool stream)
{
    (void)gemm;
    run_q4_0_any(n, ncols, s, ldo, w, 0, y, y_stride, aux, qt_rp_aux_q8_0(n, 1), stream, 1);
}

/* ---- Q4_K and Q2_K ---------------------------------------------------------- */

/* A super-block of the 16 rows is read from rows `stride` apart (blk: row
 * 0's block), or (x16) from its place in the x16 layout (repack.h), where
 * the quants are already in row-per-lane form.  Half h: rows 8h..8h+7. */
enum { X16_HEAD = 256, X16_Q2_DD = 256, X16_Q4_QS = 256, X16_Q2_QS = 320 };

/* The first 16 bytes of each row's block (Q4_K: d | dmin, 12 scale
 * bytes; Q2_K: the 16 scale bytes), row-per-lane. */
INLINE void k_head(const uint8_t *blk, size_t stride, int h, const int x16, __m256i v[4])
{
    if (x16)
        load8x4(blk + 16 * 8 * h, 16, v);
    else
        load8x4(blk + 8 * h * stride, stride, v);
}

/* Quant bytes 32g..32g+31 of each row, raw[k] = their dword k. */
INLINE void k_raw(const uint8_t *blk, size_t stride, int h, int g, const int q4k, const int x16, __m256i raw[8])
{
    if (x16) {
        const uint8_t *p = blk + (q4k ? X16_Q4_QS : X16_Q2_QS) + 32 * h;
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) raw[k] = _mm256_loadu_si256((const __m256i *)(p + (8 * g + k) * 64));
    } else {
        load8x8(blk + 8 * h * stride + 16 + 32 * g, stride, raw);
    }
}

/* Q2_K's d | dmin of each row. */
INLINE __m256i q2_K_dd(const uint8_t *blk, size_t stride, int h, const int x16)
{
    if (x16) return _mm256_loadu_si256((const __m256i *)(blk + X16_Q2_DD + 32 * h));
    __m256i e[4];
    load8x4(blk + 8 * h * stride + 68, stride, e); /* the block's last 16 bytes end with d | dmin */
    return e[3];
}


/* One super-block of 8 rows, ready for the columns. */
typedef struct half_k {
    __m256i u[64];  /* Q4_K: sub-block j's quants u[8j + k]; Q2_K: u[4j + k] */
    __m256i sw[16]; /* each row's sub-block scale in both int16 halves of its lane */
    __m256i mins[8]; /* int16 pairs (m_2i, m_2i+1); Q4_K uses 4 */
    __m256 d, dmin;
} half_k;

INLINE void pack_q4_K(half_k *p, const uint8_t *blk, size_t stride, int hf, const int x16)
{
    __m256i h[4];
    k_head(blk, stride, hf, x16, h); /* d | dmin, then the 12 scale bytes */
    p->d = halves(h[0], 0);
    p->dmin = halves(h[0], 1);
    __m256i q[4];
    q4_K_scales(h, q);
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) p->sw[j] = scale_pair(q, j);
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) p->mins[g] = byte_pair(q + 2, g);
    /* qs byte 32g + 4k + t: low nibble element 64g + 4k + t (sub-block
     * 2g), high nibble 64g + 32 + 4k + t (sub-block 2g + 1) */
    const __m256i m4 = _mm256_set1_epi8(0x0f);
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) {
        __m256i raw[8];
        k_raw(blk, stride, hf, g, 1, x16, raw);
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            p->u[16 * g + k] = _mm256_and_si256(raw[k], m4);
            p->u[16 * g + 8 + k] = _mm256_and_si256(_mm256_srli_epi16(raw[k], 4), m4);
        }
    }
}

/* Q2_K: u[4j + k] for sub-block j (16 elements) holds its quants 4k..4k+3;
 * element 128g + 32q + 4k' + t sits in
 * bits 2q of qs byte 32g + 4k' + t, sub-block 8g + 2q + k'/4. */
INLINE void pack_q2_K(half_k *p, const uint8_t *blk, size_t stride, int hf, const int x16, const int paired)
{
    __m256i h[4];
    k_head(blk, stride, hf, x16, h); /* the 16 scale bytes: low 4 bits scale, high min */
    if (paired) {
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) p->sw[i] = _mm256_and_si256(byte_pair(h, i), _mm256_set1_epi16(15));
    } else {
#pragma GCC unroll 16
        for (int j = 0; j < 16; j++) p->sw[j] = _mm256_and_si256(scale_pair(h, j), _mm256_set1_epi16(15));
    }
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) p->mins[i] = _mm256_srli_epi16(byte_pair(h, i), 4);
    const __m256i dd = q2_K_dd(blk, stride, hf, x16);
    p->d = halves(dd, 0);
    p->dmin = halves(dd, 1);
    const __m256i m3 = _mm256_set1_epi8(3);
#pragma GCC unroll 2
    for (int g = 0; g < 2; g++) {
        __m256i raw[8];
        k_raw(blk, stride, hf, g, 0, x16, raw);
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++)
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) {
                const int j = 8 * g + 2 * q + k / 4;
                p->u[4 * j + k % 4] = _mm256_and_si256(_mm256_srli_epi16(raw[k], 2 * q), m3);
            }
    }
    if (!paired) return;
    /* pair i: sub-blocks 2i (a: u[8i + m], elements 4m..4m+3) and 2i + 1
     * (b: u[8i + 4 + m]) into u[8i + 2m] = (a's 4m, 4m+1, b's 4m, 4m+1)
     * and u[8i + 2m + 1] = (a's 4m+2, 4m+3, b's 4m+2, 4m+3) */
#pragma GCC unroll 1
    for (int i = 0; i < 8; i++) {
        __m256i a[4], b[4];
#pragma GCC unroll 4
        for (int m = 0; m < 4; m++) a[m] = p->u[8 * i + m], b[m] = p->u[8 * i + 4 + m];
#pragma GCC unroll 4
        for (int m = 0; m < 4; m++) {
            p->u[8 * i + 2 * m] = _mm256_blend_epi16(a[m], _mm256_slli_epi32(b[m], 16), 0xaa);
            p->u[8 * i + 2 * m + 1] = _mm256_blend_epi16(_mm256_srli_epi32(a[m], 16), b[m], 0xaa);
        }
    }
}

/* Columns from which Q2_K's many-column calls take its sub-blocks in
 * pairs: each int32 lane's low int16 sums a sub-block's products and its
 * high int16 the next one's, so one vpmaddwd against the two scales
 * widens both, and a pair takes 8 vpmaddubsw and one vpmaddwd where two
 * sub-blocks took 8 and two, and half the int32 sums' loads and stores.
 * On a Zen 2, where vpmaddubsw and vpmaddwd share one pipe, the kernel
 * took 7% less time and tl-q2_k pp512 ran 1.035x (alternated 3 times).
 * The activations must be permuted to match (prep_q2_K), a copy of each
 * column, so calls of fewer columns (batched decoding, whose aux must fit
 * matmul.c's stack buffer) keep the sub-blocks one at a time. */
enum { Q2_PAIRED_COLS = 16 };

static size_t aux_q2_K(int n, int ncols)
{
    return ncols >= Q2_PAIRED_COLS ? (size_t)ncols * (size_t)(n / QT_QK_K) * sizeof(qt_block_q8_K) : 0;
}

/* Column col's Q8_K blocks copied whole to aux + col * (a row's bytes),
 * each 32 quants (sub-blocks 2i, 2i + 1: a, b) as 4-byte groups (a 2k,
 * a 2k+1, b 2k, b 2k+1), so the kernels read the copy alone and a pass's
 * columns take no more of the L2 than before. */
static void prep_q2_K(int n, int col, int ncols, void *aux, const void *vy)
{
    if (ncols < Q2_PAIRED_COLS) return;
    const int nb = n / QT_QK_K;
    const qt_block_q8_K *y = vy;
    qt_block_q8_K *o = (qt_block_q8_K *)aux + (size_t)col * (size_t)nb;
    for (int b = 0; b < nb; b++) {
        o[b] = y[b];
        for (int i = 0; i < 8; i++) {
            const __m128i a = _mm_loadu_si128((const __m128i *)(y[b].qs + 32 * i));
            const __m128i c = _mm_loadu_si128((const __m128i *)(y[b].qs + 32 * i + 16));
            _mm_storeu_si128((__m128i *)(o[b].qs + 32 * i), _mm_unpacklo_epi16(a, c));
            _mm_storeu_si128((__m128i *)(o[b].qs + 32 * i + 16), _mm_unpackhi_epi16(a, c));
        }
    }
}

/* Sub-block j's scale * sum(q y) for one column, exact: the int16 pair
 * sums of its quant vectors (Q4_K: 8, Q2_K: 4), widened against the scale. */
INLINE __m256i sub_sum(const half_k *p, int j, const int wide32, const int8_t *yq)
{
    const int kn = wide32 ? 8 : 4;
    __m256i s = _mm256_maddubs_epi16(p->u[kn * j], bcast4(yq));
#pragma GCC unroll 8
    for (int k = 1; k < kn; k++) s = _mm256_add_epi16(s, _mm256_maddubs_epi16(p->u[kn * j + k], bcast4(yq + 4 * k)));
    return _mm256_madd_epi16(s, p->sw[j]);
}

/* The int16 pairs the mins multiply, broadcast: Q4_K per group (formed
 * once per matmul, prep's pairs), Q2_K per pair of sub-blocks (the
 * column's bsums). */
INLINE void k_min_pairs(const int q4k, const qt_block_q8_K *yb, const uint32_t *pairs, __m256i mp[8])
{
    const int np = q4k ? 4 : 8;
#pragma GCC unroll 8
    for (int i = 0; i < np; i++) {
        int32_t pair;
        if (q4k)
            pair = (int32_t)pairs[i];
        else
            memcpy(&pair, yb->bsums + 2 * i, sizeof pair);
        mp[i] = _mm256_set1_epi32(pair);
    }
}

/* Group g's exact sum of mins times bsums, for one half. */
INLINE __m256i k_mins(const half_k *p, int g, const int q4k, const __m256i mp[8])
{
    if (q4k) return _mm256_madd_epi16(p->mins[g], mp[g]);
    __m256i im = _mm256_madd_epi16(p->mins[4 * g], mp[4 * g]);
#pragma GCC unroll 3
    for (int i = 4 * g + 1; i < 4 * g + 4; i++) im = _mm256_add_epi32(im, _mm256_madd_epi16(p->mins[i], mp[i]));
    return im;
}

/* One half and column's float step from its groups' exact sums is[g],
 * im[g]: acc (at o) and accm (at om) take one fma each per group (gemm),
 * else one for the super-block's sums. */
INLINE void k_float(const __m256i *is, const __m256i *im, const int groups, const int gemm, __m256 d, __m256 dm,
                    float *o, float *om)
{
    __m256 acc = _mm256_loadu_ps(o), accm = _mm256_loadu_ps(om);
    __m256i ist = _mm256_setzero_si256(), imt = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int g = 0; g < groups; g++) {
        if (gemm) {
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[g]), d, acc);
            accm = _mm256_fmadd_ps(_mm256_cvtepi32_ps(im[g]), dm, accm);
        } else {
            ist = _mm256_add_epi32(ist, is[g]);
            imt = _mm256_add_epi32(imt, im[g]);
        }
    }
    if (!gemm) {
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ist), d, acc);
        accm = _mm256_fmadd_ps(_mm256_cvtepi32_ps(imt), dm, accm);
    }
    _mm256_storeu_ps(o, acc);
    _mm256_storeu_ps(om, accm);
}

/* Adds one super-block of one column to acc (at s) and accm (at sm), for
 * one half (Q2_K paired: yb is prep_q2_K's copy). */
INLINE void column_k(const half_k *p, const int q4k, const int paired, const int gemm, const qt_block_q8_K *yb,
                     const uint32_t *pairs, float *s, float *sm)
{
    const int wide32 = q4k || paired, per_group = q4k ? 2 : paired ? 4 : 8, groups = q4k ? 4 : 2;
    const __m256 dy = _mm256_set1_ps(yb->d);
    __m256i mp[8], is[4], im[4];
    k_min_pairs(q4k, yb, pairs, mp);
    for (int g = 0; g < groups; g++) {
        is[g] = _mm256_setzero_si256();
        /* not unrolled: Q2_K's 8 sub-blocks unrolled spilled 124 vectors */
#pragma GCC unroll 1
        for (int j = per_group * g; j < per_group * (g + 1); j++)
            is[g] = _mm256_add_epi32(is[g], sub_sum(p, j, wide32, yb->qs + (wide32 ? 32 : 16) * j));
        im[g] = k_mins(p, g, q4k, mp);
    }
    k_float(is, im, groups, gemm, _mm256_mul_ps(p->d, dy), _mm256_mul_ps(p->dmin, dy), s, sm);
}

/* Sub-block j (wide32: 32 elements, a Q4_K sub-block or a Q2_K pair)
 * for 4 columns and both halves: is[4h + c] (first: =, else +=) the
 * sub-block's scale * sum(q y) for half h, column c, exact (the
 * products: SUB_32, SUB_16 above).  The int32 sums stay in memory,
 * is[], one load and store per sub-block. */
INLINE void sub_block_4x2(const half_k p[2], int j, const int wide32, const qt_block_q8_K *const yb[4],
                          const int first, __m256i is[8])
{
    const int sub = wide32 ? 32 : 16, kn = wide32 ? 8 : 4;
    const int8_t *y[4] = {yb[0]->qs + sub * j, yb[1]->qs + sub * j, yb[2]->qs + sub * j, yb[3]->qs + sub * j};
    const __m256i *u0 = p[0].u + kn * j, *u1 = p[1].u + kn * j, *sw0 = &p[0].sw[j], *sw1 = &p[1].sw[j];
    SUB_REGS;
    if (wide32 && first)
        SUB_ASM(SUB_32 SUB_OUT(SUB_SET));
    else if (wide32)
        SUB_ASM(SUB_32 SUB_OUT(SUB_ADD));
    else if (first)
        SUB_ASM(SUB_16 SUB_OUT(SUB_SET));
    else
        SUB_ASM(SUB_16 SUB_OUT(SUB_ADD));
}

/* Adds one super-block of both halves (p[0], p[1]) for 4 columns, in
 * column_k's order: sa[h] + 8c rows 8h..8h+7 of column c, sm[h] + 8c
 * their mins.
 * The integer sums of all groups are formed first and the float work
 * follows, per output: the same operations in the same order per
 * accumulator, without the float state living across the asm. */
INLINE void columns16_k(const half_k p[2], const int q4k, const int paired, const int gemm, const uint8_t *y,
                        size_t y_stride, const uint32_t *pairs, size_t pairs_stride, float *const sa[2],
                        float *const sm[2])
{
    const int wide32 = q4k || paired, per_group = q4k ? 2 : paired ? 4 : 8, groups = q4k ? 4 : 2;
    const qt_block_q8_K *yb[4];
    for (int c = 0; c < 4; c++) yb[c] = (const qt_block_q8_K *)(y + c * y_stride);
    alignas(32) __m256i is[4][8]; /* [group][4h + c] */
    for (int g = 0; g < groups; g++) {
        sub_block_4x2(p, per_group * g, wide32, yb, 1, is[g]);
#pragma GCC unroll 1
        for (int j = per_group * g + 1; j < per_group * (g + 1); j++) sub_block_4x2(p, j, wide32, yb, 0, is[g]);
    }
#pragma GCC unroll 1
    for (int c = 0; c < 4; c++) {
        const __m256 dy = _mm256_set1_ps(yb[c]->d);
        __m256i mp[8]; /* the column's, for both halves */
        k_min_pairs(q4k, yb[c], q4k ? pairs + c * pairs_stride : NULL, mp);
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            __m256i ish[4], im[4];
#pragma GCC unroll 4
            for (int g = 0; g < groups; g++) {
                ish[g] = is[g][4 * h + c];
                im[g] = k_mins(&p[h], g, q4k, mp);
            }
            k_float(ish, im, groups, gemm, _mm256_mul_ps(p[h].d, dy), _mm256_mul_ps(p[h].dmin, dy),
                    sa[h] + 8 * c, sm[h] + 8 * c);
        }
    }
}

/* Columns whose accm fits the stack array; more are taken in chunks. */
#define CHUNK 64

INLINE void run_k(int n, int ncols, const int gemm, float *s, size_t ldo, const void *w, size_t w_stride, const int x16,
                  const void *y, size_t y_stride, const void *aux, size_t aux_stride, bool stream, const int q4k)
{
    const size_t ps = aux_stride / sizeof(uint32_t);
    const size_t bs = q4k ? sizeof(qt_block_q4_K) : sizeof(qt_block_q2_K), step = x16 ? QT_X16_ROWS * bs : bs;
    const int nb = n / QT_QK_K, paired = !q4k && ncols >= Q2_PAIRED_COLS;
    if (paired) { /* prep_q2_K's copies */
        y = aux;
        y_stride = (size_t)nb * sizeof(qt_block_q8_K);
    }
    alignas(32) half_k p[2];
    /* acc and accm of the chunk's columns side by side: read and written
     * in s itself, ldo apart (the matrix's rows, a multiple of 4 KB for
     * most), the columns' lines fell in the same few L1 sets (AVX-512's
     * run_k ran at 0.8x that way) */
    alignas(32) float sa[2][CHUNK * 8], sm[2][CHUNK * 8];
    stream = qt_rp_stream_out(stream, s, ldo);
    for (int c0 = 0; c0 < ncols; c0 += CHUNK) {
        const int nch = ncols - c0 < CHUNK ? ncols - c0 : CHUNK;
        float *sc = s + (size_t)c0 * ldo;
        const uint8_t *yc = (const uint8_t *)y + (size_t)c0 * y_stride;
        for (int c = 0; c < nch; c++) {
            _mm256_store_ps(sa[0] + 8 * c, _mm256_setzero_ps());
            _mm256_store_ps(sa[1] + 8 * c, _mm256_setzero_ps());
            _mm256_store_ps(sm[0] + 8 * c, _mm256_setzero_ps());
            _mm256_store_ps(sm[1] + 8 * c, _mm256_setzero_ps());
        }
        for (int b = 0; b < nb; b++) {
            const uint8_t *blk = (const uint8_t *)w + (size_t)b * step;
            if (!x16 && b + 2 < nb) prefetch_rows(blk + 2 * bs, w_stride, bs);
            if (!stream) qt_rp_prefetch_out(sc, ldo, nch, b, nb);
            const uint8_t *yb = yc + (size_t)b * sizeof(qt_block_q8_K);
            const uint32_t *pairs = q4k ? (const uint32_t *)aux + 4 * b : NULL;
            for (int h = 0; h < 2; h++) {
                if (q4k)
                    pack_q4_K(&p[h], blk, w_stride, h, x16);
                else
                    pack_q2_K(&p[h], blk, w_stride, h, x16, paired);
            }
            int c = 0;
            for (; nch - c >= 4; c += 4) {
                if (x16) prefetch_spread(blk + step, step, c / 4, nch / 4);
                float *const sac[2] = {sa[0] + 8 * c, sa[1] + 8 * c}, *const smc[2] = {sm[0] + 8 * c, sm[1] + 8 * c};
                columns16_k(p, q4k, paired, gemm, yb + c * y_stride, y_stride, pairs ? pairs + (c0 + c) * ps : NULL,
                            ps, sac, smc);
            }
            for (; c < nch; c++)
                for (int h = 0; h < 2; h++)
                    column_k(&p[h], q4k, paired, gemm, (const qt_block_q8_K *)(yb + c * y_stride),
                             pairs ? pairs + (c0 + c) * ps : NULL, sa[h] + 8 * c, sm[h] + 8 * c);
        }
        for (int c = 0; c < nch; c++)
            for (int h = 0; h < 2; h++)
                store_out8(sc + c * ldo + 8 * h,
                           _mm256_sub_ps(_mm256_load_ps(sa[h] + 8 * c), _mm256_load_ps(sm[h] + 8 * c)), stream);
    }
    if (stream) _mm_sfence();
}

/* ---- one column (decode) ----------------------------------------------------
 * Nothing else reuses the transposed quants, so they go from the shuffles
 * straight into the products: no panel stored and loaded back.  The
 * integer sums and float operations are run_k's gemv order exactly. */

/* One Q4_K super-block of 8 rows `stride` apart against y: each row's
 * exact sum of scale.q.y (is) and mins term (im), and its d and dmin
 * (x16 groups: x16_sums_q4_K below). */
INLINE void sums_q4_K(const uint8_t *blk, size_t stride, int hf, const qt_block_q8_K *y,
                      const uint32_t *pairs, __m256i *is, __m256i *im, __m256 *d, __m256 *dmin)
{
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256i h[4];
    k_head(blk, stride, hf, 0, h);
    *d = halves(h[0], 0);
    *dmin = halves(h[0], 1);
    __m256i sq[4];
    q4_K_scales(h, sq);
    *is = *im = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) {
        __m256i raw[8];
        k_raw(blk, stride, hf, g, 1, 0, raw);
        const int8_t *yq = y->qs + 64 * g;
        __m256i lo = _mm256_maddubs_epi16(_mm256_and_si256(raw[0], m4), bcast4(yq));
        __m256i hi = _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(raw[0], 4), m4), bcast4(yq + 32));
#pragma GCC unroll 8
        for (int k = 1; k < 8; k++) {
            lo = _mm256_add_epi16(lo, _mm256_maddubs_epi16(_mm256_and_si256(raw[k], m4), bcast4(yq + 4 * k)));
            hi = _mm256_add_epi16(
                hi, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(raw[k], 4), m4), bcast4(yq + 32 + 4 * k)));
        }
        *is = _mm256_add_epi32(*is, _mm256_madd_epi16(lo, scale_pair(sq, 2 * g)));
        *is = _mm256_add_epi32(*is, _mm256_madd_epi16(hi, scale_pair(sq, 2 * g + 1)));
        const __m256i mp = byte_pair(sq + 2, g);
        *im = _mm256_add_epi32(*im, _mm256_madd_epi16(mp, _mm256_set1_epi32((int)pairs[g])));
    }
}

/* The same for Q2_K. */
INLINE void sums_q2_K(const uint8_t *blk, size_t stride, int hf, const qt_block_q8_K *y, __m256i *is,
                      __m256i *im, __m256 *d, __m256 *dmin)
{
    const __m256i m3 = _mm256_set1_epi8(3), m15 = _mm256_set1_epi16(15);
    __m256i h[4];
    k_head(blk, stride, hf, 0, h); /* scale byte j: byte j % 4 of h[j / 4] */
    const __m256i dd = q2_K_dd(blk, stride, hf, 0);
    *d = halves(dd, 0);
    *dmin = halves(dd, 1);
    *is = *im = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int g = 0; g < 2; g++) {
        __m256i raw[8];
        k_raw(blk, stride, hf, g, 0, 0, raw);
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++)
#pragma GCC unroll 2
            for (int half = 0; half < 2; half++) {
                const int j = 8 * g + 2 * q + half;
                const int8_t *yq = y->qs + 16 * j;
                __m256i acc = _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(raw[4 * half], 2 * q), m3), bcast4(yq));
#pragma GCC unroll 3
                for (int k = 1; k < 4; k++)
                    acc = _mm256_add_epi16(acc, _mm256_maddubs_epi16(
                                                    _mm256_and_si256(_mm256_srli_epi16(raw[4 * half + k], 2 * q), m3),
                                                    bcast4(yq + 4 * k)));
                *is = _mm256_add_epi32(*is, _mm256_madd_epi16(acc, _mm256_and_si256(scale_pair(h, j), m15)));
            }
    }
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        const __m256i mp = _mm256_srli_epi16(byte_pair(h, i), 4);
        int32_t pair;
        memcpy(&pair, y->bsums + 2 * i, sizeof pair);
        *im = _mm256_add_epi32(*im, _mm256_madd_epi16(mp, _mm256_set1_epi32(pair)));
    }
}

/* ---- x16 one column, both halves together ----------------------------------
 * Each activation broadcast serves the two halves' products, and the loop
 * keeps 16 registers' worth of live values (two halves' full sums_q4_K
 * each spill).  The integer sums are exact, so their order is free; the
 * float work is gemv_k's.  The kernels ask for the next super-block of
 * the 16 rows while they work on this one (tl-q4_k_m tg128, alternated:
 * 36.0-37.5 t/s at half a group ahead, 37.3-38.3 at one, 34.7-35.7 at
 * two). */

/* One Q4_K super-block's exact sums for both halves (h0, h1: their
 * heads): out[h] of scale * q * y, out[2 + h] of the mins term. */
INLINE void x16_sums_q4_K(const uint8_t *blk, const __m256i h0[4], const __m256i h1[4], const qt_block_q8_K *y,
                          const uint32_t *pairs, const uint8_t *ahead, size_t step, __m256i out[4])
{
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256i is0 = _mm256_setzero_si256(), is1 = is0, im0 = is0, im1 = is0;
    /* the madd operands, formed before the loop and read from memory in
     * it (kept in registers, they spilled the products' values) */
    alignas(32) __m256i sw0[8], sw1[8], mp0[4], mp1[4];
    {
        __m256i sq0[4], sq1[4];
        q4_K_scales(h0, sq0);
        q4_K_scales(h1, sq1);
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) sw0[j] = scale_pair(sq0, j), sw1[j] = scale_pair(sq1, j);
#pragma GCC unroll 4
        for (int g = 0; g < 4; g++) mp0[g] = byte_pair(sq0 + 2, g), mp1[g] = byte_pair(sq1 + 2, g);
    }
    for (int g = 0; g < 4; g++) {
        prefetch_spread(ahead, step, g, 4);
        const uint8_t *q = blk + X16_Q4_QS + (size_t)(8 * g) * 64;
        const int8_t *yq = y->qs + 64 * g;
        __m256i lo0 = _mm256_setzero_si256(), hi0 = lo0, lo1 = lo0, hi1 = lo0;
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            const __m256i r0 = _mm256_loadu_si256((const __m256i *)(q + 64 * k));
            const __m256i r1 = _mm256_loadu_si256((const __m256i *)(q + 64 * k + 32));
            const __m256i yl = bcast4(yq + 4 * k), yh = bcast4(yq + 32 + 4 * k);
            lo0 = _mm256_add_epi16(lo0, _mm256_maddubs_epi16(_mm256_and_si256(r0, m4), yl));
            lo1 = _mm256_add_epi16(lo1, _mm256_maddubs_epi16(_mm256_and_si256(r1, m4), yl));
            hi0 = _mm256_add_epi16(hi0, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(r0, 4), m4), yh));
            hi1 = _mm256_add_epi16(hi1, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(r1, 4), m4), yh));
        }
        const __m256i pair = _mm256_set1_epi32((int)pairs[g]);
        is0 = _mm256_add_epi32(is0, _mm256_add_epi32(_mm256_madd_epi16(lo0, sw0[2 * g]),
                                                     _mm256_madd_epi16(hi0, sw0[2 * g + 1])));
        im0 = _mm256_add_epi32(im0, _mm256_madd_epi16(mp0[g], pair));
        is1 = _mm256_add_epi32(is1, _mm256_add_epi32(_mm256_madd_epi16(lo1, sw1[2 * g]),
                                                     _mm256_madd_epi16(hi1, sw1[2 * g + 1])));
        im1 = _mm256_add_epi32(im1, _mm256_madd_epi16(mp1[g], pair));
    }
    out[0] = is0, out[1] = is1, out[2] = im0, out[3] = im1;
}

/* The same for Q2_K, its scales and mins by one vpshufb each.  Half by
 * half, with a shift and mask per byte, this kernel was compute-bound: 68% of
 * the memory's read rate in `qlm bench --kernels` with 2 threads, and
 * 5.4-5.9 GB/s against 6.5-8.1 now with one (alternated). */
INLINE void x16_sums_q2_K(const uint8_t *blk, const __m256i h0[4], const __m256i h1[4], const qt_block_q8_K *y,
                          const uint8_t *ahead, size_t step, __m256i out[4])
{
    const __m256i m3 = _mm256_set1_epi8(3), m15 = _mm256_set1_epi16(15);
    __m256i is0 = _mm256_setzero_si256(), is1 = is0, im0 = is0, im1 = is0;
#pragma GCC unroll 1
    for (int g = 0; g < 2; g++)
#pragma GCC unroll 1
        for (int hf = 0; hf < 2; hf++) {
            prefetch_spread(ahead, step, 2 * g + hf, 4);
            const uint8_t *q = blk + X16_Q2_QS + (size_t)(8 * g + 4 * hf) * 64;
            __m256i r0[4], r1[4];
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) {
                r0[k] = _mm256_loadu_si256((const __m256i *)(q + 64 * k));
                r1[k] = _mm256_loadu_si256((const __m256i *)(q + 64 * k + 32));
            }
#pragma GCC unroll 4
            for (int qq = 0; qq < 4; qq++) {
                const int j = 8 * g + 2 * qq + hf;
                const int8_t *yq = y->qs + 16 * j;
                __m256i a0 = _mm256_setzero_si256(), a1 = a0;
#pragma GCC unroll 4
                for (int k = 0; k < 4; k++) {
                    const __m256i yb = bcast4(yq + 4 * k);
                    a0 = _mm256_add_epi16(a0, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(r0[k], 2 * qq), m3), yb));
                    a1 = _mm256_add_epi16(a1, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(r1[k], 2 * qq), m3), yb));
                }
                is0 = _mm256_add_epi32(is0, _mm256_madd_epi16(a0, _mm256_and_si256(scale_pair(h0, j), m15)));
                is1 = _mm256_add_epi32(is1, _mm256_madd_epi16(a1, _mm256_and_si256(scale_pair(h1, j), m15)));
            }
        }
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        int32_t pair;
        memcpy(&pair, y->bsums + 2 * i, sizeof pair);
        const __m256i bp = _mm256_set1_epi32(pair);
        im0 = _mm256_add_epi32(im0, _mm256_madd_epi16(_mm256_srli_epi16(byte_pair(h0, i), 4), bp));
        im1 = _mm256_add_epi32(im1, _mm256_madd_epi16(_mm256_srli_epi16(byte_pair(h1, i), 4), bp));
    }
    out[0] = is0, out[1] = is1, out[2] = im0, out[3] = im1;
}

/* s[r] = W[r] . y for the 16 rows of an x16 group, in the gemv order. */
INLINE void gemv_k_x16(int n, float *s, const uint8_t *w, const qt_block_q8_K *y, const uint32_t *pairs,
                       const int q4k)
{
    const int nb = n / QT_QK_K;
    const size_t step = QT_X16_ROWS * (q4k ? sizeof(qt_block_q4_K) : sizeof(qt_block_q2_K));
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, accm0 = acc0, accm1 = acc0;
    for (int b = 0; b < nb; b++) {
        const uint8_t *blk = w + (size_t)b * step;
        /* The block 2 (Q4_K) or 4 (Q2_K) ahead is asked for a quarter
         * at a time, one quarter per group of the sums (x16_sums_*).
         * On a Zen 2, tl-q4_k_m tg64 alternated: 44.5-45.4 t/s against
         * 40.7 with no software prefetch and 30.0-33.1 with the whole
         * block asked for at once (36 lines in a burst, at any distance);
         * tl-q2_k 49.6-50.2 against 46.3-47.6 with the burst.  On a Zen
         * 3 the burst 4 blocks ahead measured level with none. */
        __m256i h0[4], h1[4], sums[4], dd0, dd1;
        k_head(blk, 0, 0, 1, h0);
        k_head(blk, 0, 1, 1, h1);
        if (q4k) {
            x16_sums_q4_K(blk, h0, h1, y + b, pairs + 4 * b, blk + 2 * step, step, sums);
            dd0 = h0[0], dd1 = h1[0]; /* d | dmin lead each row's head */
        } else {
            x16_sums_q2_K(blk, h0, h1, y + b, blk + 4 * step, step, sums);
            dd0 = q2_K_dd(blk, 0, 0, 1), dd1 = q2_K_dd(blk, 0, 1, 1);
        }
        const __m256 dy = _mm256_set1_ps(y[b].d);
        acc0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[0]), _mm256_mul_ps(halves(dd0, 0), dy), acc0);
        accm0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[2]), _mm256_mul_ps(halves(dd0, 1), dy), accm0);
        acc1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[1]), _mm256_mul_ps(halves(dd1, 0), dy), acc1);
        accm1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[3]), _mm256_mul_ps(halves(dd1, 1), dy), accm1);
    }
    _mm256_storeu_ps(s, _mm256_sub_ps(acc0, accm0));
    _mm256_storeu_ps(s + 8, _mm256_sub_ps(acc1, accm1));
}

/* w: rows `stride` apart. */
INLINE void gemv_k(int n, float *s, const uint8_t *w, size_t stride, const qt_block_q8_K *y, const uint32_t *pairs,
                   const int q4k)
{
    const int nb = n / QT_QK_K;
    const size_t bs = q4k ? sizeof(qt_block_q4_K) : sizeof(qt_block_q2_K);
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()}, accm[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int b = 0; b < nb; b++) {
        const uint8_t *blk = w + (size_t)b * bs;
        if (b + 2 < nb) prefetch_rows(blk + 2 * bs, stride, bs);
        const __m256 dy = _mm256_set1_ps(y[b].d);
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            __m256i is, im;
            __m256 d, dmin;
            if (q4k)
                sums_q4_K(blk, stride, h, y + b, pairs + 4 * b, &is, &im, &d, &dmin);
            else
                sums_q2_K(blk, stride, h, y + b, &is, &im, &d, &dmin);
            acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is), _mm256_mul_ps(d, dy), acc[h]);
            accm[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(im), _mm256_mul_ps(dmin, dy), accm[h]);
        }
    }
    _mm256_storeu_ps(s, _mm256_sub_ps(acc[0], accm[0]));
    _mm256_storeu_ps(s + 8, _mm256_sub_ps(acc[1], accm[1]));
}

/* Rows w_stride apart, or (x16) a group in the K-quants' x16 layout. */
INLINE void run_k_any(int n, int ncols, bool gemm, float *s, size_t ldo, const void *w, size_t w_stride,
                      const void *y, size_t y_stride, const void *aux, size_t aux_stride, bool stream, const int q4k,
                      const int x16)
{
    if (!gemm && ncols == 1 && x16)
        gemv_k_x16(n, s, w, y, aux, q4k);
    else if (!gemm && ncols == 1)
        gemv_k(n, s, w, w_stride, y, aux, q4k);
    else if (gemm)
        run_k(n, ncols, 1, s, ldo, w, w_stride, x16, y, y_stride, aux, aux_stride, stream, q4k);
    else
        run_k(n, ncols, 0, s, ldo, w, w_stride, x16, y, y_stride, aux, aux_stride, stream, q4k);
}

static void run_q4_K(int n, int ncols, bool gemm, float *s, size_t ldo, const void *w, size_t w_stride, const void *y,
                     size_t y_stride, const void *aux, bool stream)
{
    run_k_any(n, ncols, gemm, s, ldo, w, w_stride, y, y_stride, aux, qt_rp_aux_q4_K(n, 1), stream, 1, 0);
}

static void run_x16_q4_K(int n, int ncols, bool gemm, float *s, size_t ldo, const void *w, const void *y,
                         size_t y_stride, const void *aux, bool stream)
{
    run_k_any(n, ncols, gemm, s, ldo, w, 0, y, y_stride, aux, qt_rp_aux_q4_K(n, 1), stream, 1, 1);
}

static void run_q2_K(int n, int ncols, bool gemm, float *s, size_t ldo, const void *w, size_t w_stride, const void *y,
                     size_t y_stride, const void *aux, bool stream)
{
    run_k_any(n, ncols, gemm, s, ldo, w, w_stride, y, y_stride, aux, 0, stream, 0, 0);
}

static void run_x16_q2_K(int n, int ncols, bool gemm, float *s, size_t ldo, const void *w, const void *y,
                         size_t y_stride, const void *aux, bool stream)
{
    run_k_any(n, ncols, gemm, s, ldo, w, 0, y, y_stride, aux, 0, stream, 0, 1);
}

static const qt_rp_wide wide_q4_0 = {qt_rp_aux_q8_0, prep_q4_0, run_q4_0, run_x16_q4_0, true, NULL};
static const qt_rp_wide wide_q4_K = {qt_rp_aux_q4_K, qt_rp_prep_q4_K, run_q4_K, run_x16_q4_K, false, NULL};
static const qt_rp_wide wide_q2_K = {aux_q2_K, prep_q2_K, run_q2_K, run_x16_q2_K, false, NULL};

const qt_rp_wide *const qt_rp_wide_avx2[QT_COUNT] = {
    [QT_Q4_0] = &wide_q4_0, [QT_Q4_K] = &wide_q4_K, [QT_Q2_K] = &wide_q2_K};


#endif
