/* x86_avx512_tinyblas.c - quant/tiles.h's Q8_0 kernel (tinyBLAS order), AVX512-VNNI,
 * which also runs Q5_0, Q4_1 and Q5_1 from blocks decoded on the way.
 *
 * Compiled with the AVX-512 flags; vpdpbusd is inline asm as in
 * x86_avx512.c, so the file needs no -mavx512vnni.  Reached only through
 * qt_tiles_for() when the active level is avx512-vnni.
 *
 * vec_dot keeps, per output, 8 float lanes (one per 4-byte group g of a
 * block).  Here a register holds lane g of 16 outputs instead: one weight
 * row against the 16 columns of a packed tile, so per (row, block, g)
 *   - a broadcast load of magic - 128·Σx_g (formed once per weight block)
 *     starts the integer sum, and vpdpbusd of the packed bytes (y + 128)
 *     by the broadcast weight group adds Σ(y+128)x, leaving magic + Σxy;
 *   - with magic = the bits of 1.5·2^23, that integer read as a float is
 *     1.5·2^23 + Σxy exactly (|Σxy| <= 4·128·128 < 2^22), and subtracting
 *     1.5·2^23 is exact: the int-to-float conversion in one subtraction
 *     that runs on either vector port, where vcvtdq2ps would queue on
 *     port 0 behind vpdpbusd;
 *   - one fma with the 16 columns' d_w * d_y (one multiply per block).
 * That is three arithmetic instructions per 16 lane updates, everything
 * else being loads.  The 8 lane accumulators are summed in qt_hsum8's
 * order at the end, so each output is vec_dot's value bit for bit.
 *
 * The floor is those three instructions on the two 512-bit ports, 1.5
 * cycles per 64 multiply-adds (on a Sapphire Rapids each of them issues
 * twice a cycle); the loop reaches about 85-90% of it with its data in L1
 * (the three instructions and the two broadcast loads alone, 12 rows'
 * chains: 1.68-1.71 cycles at 3.8 GHz, 1.81 with the weight group
 * broadcast by a vpbroadcastd of its own), the whole kernel about 65-70%
 * (2048 x 5632, 512 columns, one thread: ~105 GMAC/s).  vec_dot's order
 * needs the convert and the fma per lane and block, so this floor is the
 * order's, whatever kernel computes the integer sums (AMX could take the
 * products, not the two float steps).
 *
 * Blocking: a pass takes up to SUPER tiles (their activations, n bytes
 * per column, stay in L2) and walks this call's rows in groups of NR = 3
 * (24 accumulators: each 64-byte load of packed activations serves three
 * rows); a group's weights stay in L1 while it meets every tile of the
 * pass, so weights come from memory once per SUPER * 16 columns.  Results
 * go out 16 rows x 16 columns at a time, transposed in registers, one
 * masked store per column. */
#if defined(__x86_64__)

#include <float.h>
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "blocks.h"
#include "fp16.h"
#include "ref.h"
#include "repack.h"
#include "tiles.h"
#include "x86_avx512_tiles.h"
#include "x86_avx512_wide.h"

#define INLINE static inline __attribute__((always_inline))
#define QT_X86_DPBUSD "%{evex%} vpdpbusd %2, %1, %0"
#include "x86_simd.h"

#ifndef CHUNK
#define CHUNK 128 /* blocks whose per-row constants are formed at once */
#endif
#ifndef SUPER
#define SUPER 8   /* tiles per pass */
#endif
#ifndef NR
#define NR 3      /* rows that share each load of packed activations */
#endif
#ifndef ROWS
#define ROWS (16 * NR) /* rows whose results are written out together (whole groups of NR) */
#endif
#define MAGIC 0x4B400000

typedef struct row_consts {
    int32_t init[CHUNK * 8]; /* magic - 128·Σx_g per block and group */
    float d[CHUNK];          /* d_w per block */
} row_consts;

INLINE __m256i dpbusd256(__m256i acc, __m256i u, __m256i s)
{
    __asm__(QT_X86_DPBUSD : "+v"(acc) : "v"(u), "v"(s));
    return acc;
}

INLINE void consts_block(const int8_t *qs, uint16_t d, row_consts *k, int b)
{
    const __m256i corr = dpbusd256(_mm256_setzero_si256(), _mm256_set1_epi8((char)0x80), load256(qs));
    _mm256_storeu_si256((__m256i *)(k->init + 8 * b), _mm256_sub_epi32(_mm256_set1_epi32(MAGIC), corr));
    k->d[b] = _cvtsh_ss(d);
}

static void row_consts_fill(const qt_block_q8_0 *x, int bn, row_consts *k)
{
    for (int b = 0; b < bn; b++) consts_block(x[b].qs, x[b].d, k, b);
}

/* The same for blocks [b0, b0 + bn) of row `lane` of a Q8_0 group of nb
 * blocks in the x16 layout (repack.h). */
static void row_consts_fill_x16(const uint8_t *group, int lane, int b0, int bn, int nb, row_consts *k)
{
    const uint8_t *q = group + qt_x16_q8_0_quants(b0, nb) + 32 * lane, *d = group + qt_x16_q8_0_scales(b0) + 2 * lane;
    for (int b = 0; b < bn; b++) {
        uint16_t h;
        memcpy(&h, d + qt_x16_q8_0_scales(b), sizeof h);
        consts_block((const int8_t *)q + qt_x16_q8_0_quants(b, 0), h, k, b);
    }
}

/* nr rows (1 to NR), blocks [0, bn) of them, against one packed tile (tq,
 * tdy already at the chunk's first block); acc[i][g] carries over from
 * the previous chunk unless this is the first.  With mins (Q4_1, Q5_1)
 * also their m·s chain, sm[i], from the rows' m per block and the tile's
 * s_y (tsy): one fma per row and block among the 8 of the lanes (a
 * separate pass over the blocks had Q4_1 5% slower).  pf,
 * where not NULL, are the same blocks of the next rows: asked for now,
 * spread over this work, so that they arrive before they are needed (the
 * hardware prefetchers see a burst of loads per row pair, then none). */
INLINE void rows_chunk(const uint8_t *const x[NR], size_t xs, int bn, const row_consts *k, const uint8_t *tq,
                       const float *tdy, __m512 acc[NR][8], bool first, const uint8_t *const pf[NR],
                       const float (*m)[CHUNK], const float *tsy, __m512 sm[NR], const int nr, const int mins)
{
    const __m512 magicf = _mm512_set1_ps(12582912.0f);
    __m512 a[NR][8], ms[NR];
#pragma GCC unroll 4
    for (int i = 0; i < nr; i++) {
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++) a[i][g] = first ? _mm512_setzero_ps() : _mm512_load_ps((const float *)&acc[i][g]);
        if (mins) ms[i] = first ? _mm512_setzero_ps() : sm[i];
    }
    for (int b = 0; b < bn; b++) {
        if (mins) {
            /* the m·s chain, one fma per row and block */
            const __m512 sy = _mm512_loadu_ps(tsy + 16 * b);
#pragma GCC unroll 4
            for (int i = 0; i < nr; i++) ms[i] = _mm512_fmadd_ps(_mm512_set1_ps(m[i][b]), sy, ms[i]);
        }
        __m512 d[NR];
        if (pf[0])
            for (int i = 0; i < nr; i++) _mm_prefetch((const char *)pf[i] + (size_t)b * xs, _MM_HINT_T0);
        const __m512 dy = _mm512_loadu_ps(tdy + 16 * b);
        for (int i = 0; i < nr; i++) d[i] = _mm512_mul_ps(_mm512_set1_ps(k[i].d[b]), dy);
        const uint8_t *yq = tq + (size_t)b * QT_TILE_COLS * QT_QK8_0;
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++) {
            const __m512i y = _mm512_loadu_si512(yq + 64 * g);
#pragma GCC unroll 4
            for (int i = 0; i < nr; i++) {
                /* the weight group as vpdpbusd's broadcast operand: one
                 * micro-fused uop where a separate vpbroadcastd was two
                 * (pp512 1.02-1.05x, 1 thread) */
                __m512i t = _mm512_set1_epi32(k[i].init[8 * b + g]);
                __asm__("%{evex%} vpdpbusd %2%{1to16%}, %1, %0"
                        : "+v"(t)
                        : "v"(y), "m"(*(const int32_t *)(x[i] + (size_t)b * xs + 4 * g)));
                a[i][g] = _mm512_fmadd_ps(_mm512_sub_ps(_mm512_castsi512_ps(t), magicf), d[i], a[i][g]);
            }
        }
    }
    /* stored one register at a time: a plain copy of the array became a
     * spill of all 24 and a rep movs (~4% of this function) */
#pragma GCC unroll 4
    for (int i = 0; i < nr; i++) {
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++) _mm512_store_ps((float *)&acc[i][g], a[i][g]);
        if (mins) sm[i] = ms[i];
    }
}

#define ROWS_CHUNK_N(n, mins)                                                                                        \
    static void rows_chunk_##n##_##mins(const uint8_t *const x[NR], size_t xs, int bn, const row_consts *k,        \
                                        const uint8_t *tq, const float *tdy, __m512 acc[NR][8], bool first,         \
                                        const uint8_t *const pf[NR], const float (*m)[CHUNK], const float *tsy,     \
                                        __m512 sm[NR])                                                              \
    {                                                                                                                \
        rows_chunk(x, xs, bn, k, tq, tdy, acc, first, pf, m, tsy, sm, n, mins);                                    \
    }
ROWS_CHUNK_N(1, 0)
ROWS_CHUNK_N(2, 0)
ROWS_CHUNK_N(1, 1)
ROWS_CHUNK_N(2, 1)
#if NR > 2
ROWS_CHUNK_N(3, 0)
ROWS_CHUNK_N(3, 1)
#endif

typedef void (*rows_chunk_fn)(const uint8_t *const x[NR], size_t xs, int bn, const row_consts *k, const uint8_t *tq,
                              const float *tdy, __m512 acc[NR][8], bool first, const uint8_t *const pf[NR],
                              const float (*m)[CHUNK], const float *tsy, __m512 sm[NR]);

/* The 32 nibbles of a 4-bit block's 16 bytes q as bytes in element order
 * (low nibbles elements 0-15, high nibbles 16-31). */
INLINE __m256i nibbles_of(__m128i q)
{
    const __m128i m4 = _mm_set1_epi8(0x0f);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m4), _mm_and_si128(q, m4));
}

INLINE __m256i nibble_bytes(const uint8_t *qs) { return nibbles_of(_mm_loadu_si128((const __m128i *)qs)); }

/* The 32 five-bit values of a Q5 block (qs, qh) as bytes, less `off`. */
INLINE __m256i q5_bytes(const uint8_t *qs, const uint8_t *qh, int off)
{
    const __m256i v = nibble_bytes(qs);
    uint32_t h;
    memcpy(&h, qh, sizeof h);
    /* bit j of qh is element j's fifth bit (elements 16-31: the high nibbles) */
    const __m256i v5 = _mm256_mask_add_epi8(v, (__mmask32)h, v, _mm256_set1_epi8(16));
    return _mm256_sub_epi8(v5, _mm256_set1_epi8((char)off));
}

/* Q5_0 blocks as Q8_0 blocks: the same d, and the quants as the signed
 * bytes vec_dot unpacks them to.  vec_dot's order for Q5_0 is Q8_0's on
 * those bytes (quant/ref.c: the same 8 lanes, d = dx·dy, one fma per lane
 * and block, qt_hsum8), so this kernel gives Q5_0's bits too; Q4_1's and
 * Q5_1's add m·s in a chain of their own, added after qt_hsum8.  Decoded
 * once per chunk of a row group, they serve every tile of the pass. */
static void decode_q5_0(const qt_block_q5_0 *x, int bn, qt_block_q8_0 *out)
{
    for (int b = 0; b < bn; b++) {
        _mm256_storeu_si256((__m256i *)out[b].qs, q5_bytes(x[b].qs, x[b].qh, 16));
        out[b].d = x[b].d;
    }
}

/* Q4_1 and Q5_1 blocks the same way (their values as they are, 0..15 or
 * 0..31), and their m as floats for the separate chain vec_dot keeps
 * (rows_chunk). */
static void decode_q4_1(const qt_block_q4_1 *x, int bn, qt_block_q8_0 *out, float *m)
{
    for (int b = 0; b < bn; b++) {
        _mm256_storeu_si256((__m256i *)out[b].qs, nibble_bytes(x[b].qs));
        out[b].d = x[b].d;
        m[b] = _cvtsh_ss(x[b].m);
    }
}

/* Blocks of one row from the x16 layout (repack.h) of Q4_1, Q5_0 or Q5_1,
 * as decode_q4_1, decode_q5_0 and decode_q5_1 make them from rows: half
 * points at the first block of the half of a group that holds the row,
 * lane is the row's place in it. */
static void decode_x16(qt_type type, const uint8_t *half, int lane, int bn, qt_block_q8_0 *out, float *m)
{
    const size_t bs = type == QT_Q4_1 ? QT_X16_Q4_1_BLOCK : type == QT_Q5_0 ? QT_X16_Q5_0_BLOCK : QT_X16_Q5_1_BLOCK;
    const size_t at_d = type == QT_Q4_1 ? 128 : 160; /* Q5_x: the qh dwords first */
    for (int b = 0; b < bn; b++) {
        const uint8_t *p = half + (size_t)b * bs, *q = p + 4 * lane;
        /* the row's dwords joined in registers: four 4-byte stores read
         * back as one vector would stall store forwarding every block */
        const __m128i q01 = _mm_unpacklo_epi32(_mm_loadu_si32(q), _mm_loadu_si32(q + 32));
        const __m128i q23 = _mm_unpacklo_epi32(_mm_loadu_si32(q + 64), _mm_loadu_si32(q + 96));
        __m256i v = nibbles_of(_mm_unpacklo_epi64(q01, q23));
        if (type != QT_Q4_1) {
            uint32_t h;
            memcpy(&h, p + 128 + 4 * lane, sizeof h);
            v = _mm256_mask_add_epi8(v, (__mmask32)h, v, _mm256_set1_epi8(16));
            if (type == QT_Q5_0) v = _mm256_sub_epi8(v, _mm256_set1_epi8(16));
        }
        _mm256_storeu_si256((__m256i *)out[b].qs, v);
        memcpy(&out[b].d, p + at_d + 2 * lane, sizeof out[b].d);
        if (type != QT_Q5_0) {
            uint16_t mh;
            memcpy(&mh, p + at_d + 16 + 2 * lane, sizeof mh);
            m[b] = _cvtsh_ss(mh);
        }
    }
}

static void decode_q5_1(const qt_block_q5_1 *x, int bn, qt_block_q8_0 *out, float *m)
{
    for (int b = 0; b < bn; b++) {
        _mm256_storeu_si256((__m256i *)out[b].qs, q5_bytes(x[b].qs, x[b].qh, 0));
        out[b].d = x[b].d;
        m[b] = _cvtsh_ss(x[b].m);
    }
}

/* Rows [r0, r0 + n) of columns [c0, c0 + nc) from res[tile][row][column]:
 * 16 rows of a tile at a time, transposed so that each column's rows go
 * out in one masked store (the output's columns are out_stride apart);
 * with `stream`, whole aligned lines in streaming stores (qt_tiles_flush). */
static void flush_rows(float *out, size_t out_stride, int c0, int nc, const float (*res)[ROWS + 16][QT_TILE_COLS],
                       int r0, int n, bool stream)
{
    for (int t = 0; t * QT_TILE_COLS < nc; t++) {
        const int cols = nc - t * QT_TILE_COLS < QT_TILE_COLS ? nc - t * QT_TILE_COLS : QT_TILE_COLS;
        for (int i = 0; i < n; i += 16) {
            const __mmask16 m = (__mmask16)(n - i >= 16 ? 0xffff : (1u << (n - i)) - 1);
            __m512 v[16];
#pragma GCC unroll 16
            for (int j = 0; j < 16; j++) v[j] = _mm512_load_ps(res[t][i + j]);
            qt_transpose16(v);
            for (int c = 0; c < cols; c++) {
                float *o = out + (size_t)(c0 + t * QT_TILE_COLS + c) * out_stride + r0 + i;
                if (stream && m == 0xffff && (uintptr_t)o % 64 == 0)
                    _mm512_stream_ps(o, v[c]);
                else
                    _mm512_mask_storeu_ps(o, m, v[c]);
            }
        }
    }
}

/* Where row r's blocks start (*lane 0), or with x16 (Q4_1, Q5_0: half
 * blocks of hb bytes) the first block of the half of a group that holds
 * it, at lane *lane (Q8_0: the group, and the row in it). */
INLINE const uint8_t *row_blocks(const void *w, size_t w_stride, int nb, int r, int *lane, const int x16, size_t hb,
                                 const int q8)
{
    *lane = x16 ? r % (q8 ? QT_X16_ROWS : 8) : 0;
    if (!x16) return (const uint8_t *)w + (size_t)r * w_stride;
    if (q8) return (const uint8_t *)w + (size_t)(r / QT_X16_ROWS) * QT_X16_ROWS * w_stride;
    return (const uint8_t *)w + (size_t)(r / QT_X16_ROWS) * QT_X16_ROWS * w_stride +
           (size_t)(r % QT_X16_ROWS / 8) * nb * hb;
}

INLINE void tb_kernel(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *packed, int ncols,
                      float *out, size_t out_stride, bool stream, const int x16)
{
    /* q41: the types with an m (Q4_1, Q5_1); else Q8_0 */
    const int q5 = type == QT_Q5_0, q41 = type == QT_Q4_1 || type == QT_Q5_1, q8x = x16 && type == QT_Q8_0,
              decoded = q5 || q41;
    /* bytes from a row's block to its next (x16: the half's next; Q8_0:
     * its group's) */
    const size_t xs = !x16                  ? qt_get(type)->type_size
                      : q8x                 ? qt_x16_q8_0_quants(1, 0)
                      : q5                  ? QT_X16_Q5_0_BLOCK
                      : type == QT_Q5_1     ? QT_X16_Q5_1_BLOCK
                                            : QT_X16_Q4_1_BLOCK;
    const int nb = n / QT_QK8_0, tiles = (ncols + QT_TILE_COLS - 1) / QT_TILE_COLS;
    stream = qt_rp_stream_out(stream, out, out_stride);
    const size_t tile_qs = (size_t)nb * QT_TILE_COLS * QT_QK8_0;
    const size_t tile_bytes = tile_qs + (size_t)(1 + q41) * nb * QT_TILE_COLS * sizeof(float);
    static const rows_chunk_fn chunk_fn[2][NR] = {{rows_chunk_1_0, rows_chunk_2_0,
#if NR > 2
                                                   rows_chunk_3_0
#endif
                                                  },
                                                  {rows_chunk_1_1, rows_chunk_2_1,
#if NR > 2
                                                   rows_chunk_3_1
#endif
                                                  }};
    row_consts k[NR];
    qt_block_q8_0 dec[NR][CHUNK]; /* decoded types: a chunk of the group's rows as Q8_0 */
    float mx[NR][CHUNK];          /* Q4_1, Q5_1: their m */
    __m512 acc[SUPER][NR][8], sm[SUPER][NR];
    /* results of ROWS rows, per tile and row (flush_rows; the last 16 rows
     * only pad a partial block of 16, whose stores are masked) */
    _Alignas(64) float res[SUPER][ROWS + 16][QT_TILE_COLS];
    for (int t0 = 0; t0 < tiles; t0 += SUPER) {
        const int nt = tiles - t0 < SUPER ? tiles - t0 : SUPER;
        const int c0 = t0 * QT_TILE_COLS, nc = ncols - c0 < nt * QT_TILE_COLS ? ncols - c0 : nt * QT_TILE_COLS;
        for (int r = 0; r < nrows; r += NR) {
            const int nr = nrows - r < NR ? nrows - r : NR;
            const uint8_t *x[NR];
            int lane[NR];
            for (int i = 0; i < NR; i++) x[i] = row_blocks(w, w_stride, nb, r + i % nr, &lane[i], x16, xs, q8x);
            for (int b0 = 0; b0 < nb; b0 += CHUNK) {
                const int bn = nb - b0 < CHUNK ? nb - b0 : CHUNK;
                /* the chunk's first block's quants, the next xs bytes on */
                const uint8_t *xc[NR];
                const uint8_t *pf[NR];
                for (int i = 0; i < NR; i++) {
                    xc[i] = decoded ? (const uint8_t *)dec[i]->qs
                            : q8x   ? x[i] + qt_x16_q8_0_quants(b0, nb) + 32 * (size_t)lane[i]
                                    : (const uint8_t *)((const qt_block_q8_0 *)x[i] + b0)->qs;
                    pf[i] = NULL;
                }
                if (r + NR < nrows)
                    for (int i = 0; i < NR; i++) {
                        int l;
                        const uint8_t *p = row_blocks(w, w_stride, nb, r + NR + i % (nrows - r - NR), &l, x16, xs, q8x);
                        pf[i] = q8x ? p + qt_x16_q8_0_quants(b0, nb) + 32 * (size_t)l : p + (size_t)b0 * xs;
                    }
                for (int i = 0; i < nr; i++) {
                    if (q8x) {
                        row_consts_fill_x16(x[i], lane[i], b0, bn, nb, &k[i]);
                        continue;
                    }
                    if (x16) decode_x16(type, x[i] + (size_t)b0 * xs, lane[i], bn, dec[i], mx[i]);
                    else if (q5) decode_q5_0((const qt_block_q5_0 *)x[i] + b0, bn, dec[i]);
                    else if (type == QT_Q4_1) decode_q4_1((const qt_block_q4_1 *)x[i] + b0, bn, dec[i], mx[i]);
                    else if (type == QT_Q5_1) decode_q5_1((const qt_block_q5_1 *)x[i] + b0, bn, dec[i], mx[i]);
                    row_consts_fill(decoded ? dec[i] : (const qt_block_q8_0 *)x[i] + b0, bn, &k[i]);
                }
                for (int t = 0; t < nt; t++) {
                    const uint8_t *tq = (const uint8_t *)packed + (size_t)(t0 + t) * tile_bytes;
                    const float *tdy = (const float *)(tq + tile_qs) + (size_t)b0 * QT_TILE_COLS;
                    tq += (size_t)b0 * QT_TILE_COLS * QT_QK8_0;
                    chunk_fn[q41][nr - 1](xc, decoded ? sizeof(qt_block_q8_0) : xs, bn, k, tq, tdy, acc[t], b0 == 0, pf,
                                          (const float(*)[CHUNK])mx,
                                          tdy + (size_t)nb * QT_TILE_COLS, sm[t]);
                    pf[0] = NULL; /* once per pass is enough */
                }
            }
            for (int t = 0; t < nt; t++)
                for (int i = 0; i < nr; i++) {
                    const __m512 v = hsum8_lanes(acc[t][i]);
                    _mm512_store_ps(res[t][(r + i) % ROWS], q41 ? _mm512_add_ps(v, sm[t][i]) : v);
                }
            const int end = r + nr;
            if (end % ROWS == 0 || end == nrows) {
                const int r0 = (end - 1) / ROWS * ROWS;
                flush_rows(out, out_stride, c0, nc, (const float(*)[ROWS + 16][QT_TILE_COLS])res, r0, end - r0,
                           stream);
            }
        }
    }
    if (stream) _mm_sfence();
}

void qt_avx512_vnni_tb_q8_0(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *packed,
                            int ncols, float *out, size_t out_stride, bool stream)
{
    tb_kernel(type, n, w, w_stride, nrows, packed, ncols, out, out_stride, stream, 0);
}

/* Q4_1, Q5_0 and Q5_1 from the x16 layout: the rows' blocks decoded from their
 * lanes (4 dwords a block instead of one 16-byte load, once per pass),
 * then the same work and bits as from rows; Q8_0's read where they are. */
void qt_avx512_vnni_tb_x16(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *packed,
                           int ncols, float *out, size_t out_stride, bool stream)
{
    if (type == QT_Q8_0)
        tb_kernel(QT_Q8_0, n, w, w_stride, nrows, packed, ncols, out, out_stride, stream, 1);
    else if (type == QT_Q5_0)
        tb_kernel(QT_Q5_0, n, w, w_stride, nrows, packed, ncols, out, out_stride, stream, 1);
    else if (type == QT_Q5_1)
        tb_kernel(QT_Q5_1, n, w, w_stride, nrows, packed, ncols, out, out_stride, stream, 1);
    else
        tb_kernel(QT_Q4_1, n, w, w_stride, nrows, packed, ncols, out, out_stride, stream, 1);
}

/* tiles.c's Q8_0 (or, with_s, Q8_1) layout, 16 columns at a time: one
 * gather per 4-byte group of a block brings that group of every column of
 * the tile (columns past ncols read as zero bytes, so they pack as 0x80
 * like the portable code's), and the columns' f16 scales come with one
 * more (Q8_1: d and s in one dword). */
INLINE void pack_q8(int n, const void *y, size_t y_stride, int ncols, int tile, void *packed, const int with_s)
{
    const int nb = n / QT_QK8_0, c0 = tile * QT_TILE_COLS;
    const int cols = ncols - c0 < QT_TILE_COLS ? ncols - c0 : QT_TILE_COLS;
    const __mmask16 m = (__mmask16)(cols == 16 ? 0xffff : (1u << cols) - 1);
    const size_t bs = with_s ? sizeof(qt_block_q8_1) : sizeof(qt_block_q8_0), qs_at = with_s ? 4 : 2;
    uint8_t *qs = (uint8_t *)packed +
                  (size_t)tile * nb * (QT_TILE_COLS * QT_QK8_0 + (1 + with_s) * QT_TILE_COLS * sizeof(float));
    float *d = (float *)(qs + (size_t)nb * QT_TILE_COLS * QT_QK8_0), *sy = d + (size_t)nb * QT_TILE_COLS;
    const uint8_t *base = (const uint8_t *)y + (size_t)c0 * y_stride;
    /* byte offsets of the columns (y_stride * 15 fits: rows are far smaller) */
    const __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                           _mm512_set1_epi32((int)y_stride));
    const __m512i flip = _mm512_set1_epi8((char)0x80), lo16 = _mm512_set1_epi32(0xffff);
    for (int b = 0; b < nb; b++) {
        const uint8_t *blk = base + (size_t)b * bs;
        for (int g = 0; g < 8; g++) {
            const __m512i v = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, idx, blk + qs_at + 4 * g, 1);
            _mm512_storeu_si512(qs + (size_t)b * QT_TILE_COLS * QT_QK8_0 + 64 * g, _mm512_xor_si512(v, flip));
        }
        /* the f16 d and the next two bytes (Q8_0: quants; Q8_1: s) */
        const __m512i dh = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, idx, blk, 1);
        _mm512_storeu_ps(d + (size_t)b * QT_TILE_COLS, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_and_si512(dh, lo16))));
        if (with_s)
            _mm512_storeu_ps(sy + (size_t)b * QT_TILE_COLS, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(dh, 16))));
    }
}

void qt_avx512_vnni_tb_pack_q8_0(int n, const void *y, size_t y_stride, int ncols, int tile, void *packed)
{
    pack_q8(n, y, y_stride, ncols, tile, packed, 0);
}

void qt_avx512_vnni_tb_pack_q8_1(int n, const void *y, size_t y_stride, int ncols, int tile, void *packed)
{
    pack_q8(n, y, y_stride, ncols, tile, packed, 1);
}

/* One column's block of 32 floats as the activation quantizer
 * (quantize_act) makes it: d = amax/127 as f16, bytes x·(127/amax) rounded
 * to nearest even and saturated; blocks with a NaN or an infinity, or a
 * scale that overflows, through the reference itself.  Returns d as the
 * packed float (the f16 widened). */
static float quantize_q8_0_block(const float *x, int8_t qs[QT_QK8_0])
{
    const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
    const __m512 a0 = _mm512_abs_ps(v0), a1 = _mm512_abs_ps(v1), big = _mm512_set1_ps(FLT_MAX);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(a0, a1));
    const float d = amax / 127, id = amax != 0.0f ? 127.0f / amax : 0.0f;
    if ((_mm512_cmp_ps_mask(a0, big, _CMP_NLE_UQ) | _mm512_cmp_ps_mask(a1, big, _CMP_NLE_UQ)) || id > FLT_MAX) {
        qt_block_q8_0 ref;
        qt_quantize_act_q8_0(x, &ref, QT_QK8_0);
        memcpy(qs, ref.qs, QT_QK8_0);
        return qt_f16_to_f32(ref.d);
    }
    const __m512 vid = _mm512_set1_ps(id);
    _mm_store_si128((__m128i *)qs, _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v0, vid))));
    _mm_store_si128((__m128i *)(qs + 16), _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v1, vid))));
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(d), _MM_FROUND_TO_NEAREST_INT)));
}

/* The packed tile straight from float activations (rows of n floats):
 * the bytes quantize_act followed by the packer give, without writing and
 * re-reading the quantized rows.  Two blocks at a time: a column's 64
 * bytes are 16 groups, turned in registers into 16 rows of the layout. */
void qt_avx512_vnni_tb_pack_q8_0_f32(int n, const float *x, int ncols, int tile, void *packed)
{
    const int nb = n / QT_QK8_0, c0 = tile * QT_TILE_COLS;
    const int cols = ncols - c0 < QT_TILE_COLS ? ncols - c0 : QT_TILE_COLS;
    uint8_t *qs = (uint8_t *)packed + (size_t)tile * nb * (QT_TILE_COLS * QT_QK8_0 + QT_TILE_COLS * sizeof(float));
    float *d = (float *)(qs + (size_t)nb * QT_TILE_COLS * QT_QK8_0);
    /* padding columns: zero bytes (0x80 packed) and d = 0 */
    _Alignas(64) int8_t q[QT_TILE_COLS][2 * QT_QK8_0];
    _Alignas(64) float dq[2][QT_TILE_COLS];
    memset(q, 0, sizeof q);
    memset(dq, 0, sizeof dq);
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    for (int b = 0; b < nb; b += 2) {
        const int two = b + 1 < nb;
        for (int c = 0; c < cols; c++)
            for (int h = 0; h <= two; h++)
                dq[h][c] = quantize_q8_0_block(x + (size_t)(c0 + c) * n + (size_t)(b + h) * QT_QK8_0, q[c] + h * QT_QK8_0);
        __m512 v[16];
        for (int c = 0; c < QT_TILE_COLS; c++) v[c] = _mm512_load_ps((const float *)q[c]);
        qt_transpose16(v);
        uint8_t *dst = qs + (size_t)b * QT_TILE_COLS * QT_QK8_0;
        for (int g = 0; g < 8 + 8 * two; g++)
            _mm512_storeu_si512(dst + 64 * g, _mm512_xor_si512(_mm512_castps_si512(v[g]), flip));
        for (int h = 0; h <= two; h++) _mm512_storeu_ps(d + (size_t)(b + h) * QT_TILE_COLS, _mm512_load_ps(dq[h]));
    }
}

#endif
