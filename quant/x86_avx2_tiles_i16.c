/* x86_avx2_tiles_i16.c - batches of Q8_0 weights times Q8_0 activation
 * columns on AVX2 without VNNI, in qlm's own order (quant/tiles.h:
 * "the i16 order"), rows in the lanes of int16 products.
 *
 * Compiled with -mavx2 -mfma -mf16c; reached through qt_tiles_for where
 * QLM_Q8_ORDER=i16 asks for it (quant/cpu.h: qt_q8_i16_active says why
 * it is not the default).
 *
 * Why an order of its own: llama.cpp's (tinyBLAS's, vec_dot's) keeps 8
 * float lanes per output, one per 4 products of a block, so each block of
 * each output costs a sign, a vpmaddubsw, a vpmaddwd, a conversion and an
 * FMA for 32 products.  On a Zen 3 the three integer steps and the FMA
 * share two pipes, and that loop runs at ~13 products a cycle from L1 (29
 * cycles a 4x3 tile block), which bounds llama.cpp there too.  Here each
 * lane is a row: a block's 32 products of 8 rows and one column are 16
 * vpmaddwd of int16 pairs, each added to an int32 accumulator, and the
 * float work (one conversion and FMA per 8 rows) comes once per block
 * instead of once per 32 products of one row: ~19 products a cycle from
 * L1 in the same test.  Each output is then
 *     acc = fma(float(sum of the block's 32 products), dx·dy, acc)
 * block after block from 0, the integer sums exact (|w|, |y| <= 128: a
 * pair is at most 2^15, a block 2^19), dx·dy rounded once as vec_dot
 * rounds it; qt_tiles_i16_dot_ref (tiles.c) is that definition.  Against
 * vec_dot's order an output differs by float rounding only (its 8 lane
 * chains and final sum against one chain of exact block sums).
 *
 * Layouts.  Activations (packed once per matmul, a tile of QT_TILE_COLS
 * columns at a time): per block, each column's 32 quants sign-extended to
 * int16 (64 bytes), columns side by side; after all blocks the columns'
 * d_y, per block.  Weights: a panel of 16 rows is widened per chunk of
 * blocks into, per block and pair k of quants (2k, 2k+1), two vectors of
 * 8 rows' int16 pairs (one int32 lane each), then every column group of
 * the pass runs over it while it sits in L1. */
#if defined(__x86_64__)

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "blocks.h"
#include "tiles.h"

#define INLINE static inline __attribute__((always_inline))
#define QT_X86_DPBUSD "%{vex%} vpdpbusd %2, %1, %0"
#include "x86_simd.h"

enum {
    PR = 16,                        /* rows of a panel: two vectors of 8 lanes */
    PC = 3,                         /* columns of the micro tile */
    PAIRS = QT_QK8_0 / 2,           /* int16 pairs per block */
    COL_BYTES = QT_QK8_0 * 2,       /* a block of one column, as int16 */
    BLOCK_BYTES = QT_TILE_COLS * COL_BYTES, /* a block of a tile's columns */
    PANEL_BLOCK = PAIRS * 64,       /* a block of a panel: per pair, 2 x 8 lanes */
    KCH = 32,                       /* blocks per widened chunk: 16 KB, in L1 with a group's columns */
    MAXC = 128,                     /* columns a call accumulates at once */
};
_Static_assert(PANEL_BLOCK == BLOCK_BYTES, "one stride for panel and columns");

static size_t tile_bytes(int nb) { return (size_t)nb * (BLOCK_BYTES + QT_TILE_COLS * sizeof(float)); }

size_t qt_avx2_i16_pack_size(int n, int ncols)
{
    return (size_t)((ncols + QT_TILE_COLS - 1) / QT_TILE_COLS) * tile_bytes(n / QT_QK8_0);
}

void qt_avx2_i16_pack_q8_0(int n, const void *y, size_t y_stride, int ncols, int tile, void *packed)
{
    const int nb = n / QT_QK8_0, c0 = tile * QT_TILE_COLS;
    uint8_t *base = (uint8_t *)packed + (size_t)tile * tile_bytes(nb);
    float *d = (float *)(base + (size_t)nb * BLOCK_BYTES);
    for (int c = 0; c < QT_TILE_COLS; c++) {
        const uint8_t *row = c0 + c < ncols ? (const uint8_t *)y + (size_t)(c0 + c) * y_stride : NULL;
        for (int b = 0; b < nb; b++) {
            __m256i *dst = (__m256i *)(base + (size_t)b * BLOCK_BYTES + (size_t)c * COL_BYTES);
            if (!row) {
                _mm256_storeu_si256(dst, _mm256_setzero_si256());
                _mm256_storeu_si256(dst + 1, _mm256_setzero_si256());
                d[b * QT_TILE_COLS + c] = 0.0f;
                continue;
            }
            const qt_block_q8_0 *blk = (const qt_block_q8_0 *)row + b;
            const __m256i q = _mm256_loadu_si256((const __m256i *)blk->qs);
            _mm256_storeu_si256(dst, _mm256_cvtepi8_epi16(_mm256_castsi256_si128(q)));
            _mm256_storeu_si256(dst + 1, _mm256_cvtepi8_epi16(_mm256_extracti128_si256(q, 1)));
            d[b * QT_TILE_COLS + c] = half_at(blk);
        }
    }
}

/* Columns 0..7 of the 8 rows r[] (each 8 int32 lanes): col[j] lane i = r[i] lane j. */
INLINE void transpose8(const __m256i r[8], __m256i col[8])
{
    __m256i t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        u[4 * i + 0] = _mm256_unpacklo_epi64(t[4 * i + 0], t[4 * i + 2]);
        u[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i + 0], t[4 * i + 2]);
        u[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int j = 0; j < 4; j++) {
        col[j] = _mm256_permute2x128_si256(u[j], u[4 + j], 0x20);
        col[4 + j] = _mm256_permute2x128_si256(u[j], u[4 + j], 0x31);
    }
}

/* Blocks [b0, b0 + kb) of the 16 rows at rows[] into the panel layout
 * (wp) and their scales (dx, 16 a block). */
static void widen(const uint8_t *const rows[PR], int b0, int kb, uint8_t *wp, float *dx)
{
    for (int b = 0; b < kb; b++) {
        uint8_t *dst = wp + (size_t)b * PANEL_BLOCK;
        for (int h = 0; h < 2; h++) {
            __m256i lo[8], hi[8], col[8];
            for (int i = 0; i < 8; i++) {
                const qt_block_q8_0 *blk = (const qt_block_q8_0 *)rows[8 * h + i] + b0 + b;
                const __m256i q = _mm256_loadu_si256((const __m256i *)blk->qs);
                lo[i] = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(q));
                hi[i] = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(q, 1));
                dx[b * PR + 8 * h + i] = half_at(blk);
            }
            transpose8(lo, col);
            for (int j = 0; j < 8; j++) _mm256_store_si256((__m256i *)(dst + 64 * j + 32 * h), col[j]);
            transpose8(hi, col);
            for (int j = 0; j < 8; j++) _mm256_store_si256((__m256i *)(dst + 64 * (8 + j) + 32 * h), col[j]);
        }
    }
}

/* One pair k of a block for the three columns: int32 lanes += w pair ·
 * y pair (the first pair writes the accumulators instead).  Column j's
 * quants are at y0 + s_j (s_0 = 0), the panel's at y0 + wo. */
#define PAIR_OP(K, OP)                                                                                              \
    "vmovdqa " #K "*64(%[y0],%[wo]), %[w0]\n\t"                                                                     \
    "vmovdqa " #K "*64+32(%[y0],%[wo]), %[w1]\n\t"                                                                  \
    "vpbroadcastd " #K "*4(%[y0]), %[b]\n\t" OP("i00", "i10")                                                       \
    "vpbroadcastd " #K "*4(%[y0],%[s1]), %[b]\n\t" OP("i01", "i11")                                                 \
    "vpbroadcastd " #K "*4(%[y0],%[s2]), %[b]\n\t" OP("i02", "i12")
#define FIRST(A, B) "vpmaddwd %[b], %[w0], %[" A "]\n\t" "vpmaddwd %[b], %[w1], %[" B "]\n\t"
#define NEXT(A, B)                                                                                                  \
    "vpmaddwd %[b], %[w0], %[t]\n\t" "vpaddd %[t], %[" A "], %[" A "]\n\t"                                           \
    "vpmaddwd %[b], %[w1], %[t]\n\t" "vpaddd %[t], %[" B "], %[" B "]\n\t"
/* f += float(i) · dx·dy for one column (its d_y at DY) and both halves
 * of the rows (their dx at dy0 + dxo) */
#define SCALE(DY, IA, IB, FA, FB)                                                                                   \
    "vbroadcastss " DY ", %[b]\n\t"                                                                                 \
    "vcvtdq2ps %[" IA "], %[" IA "]\n\t"                                                                            \
    "vmulps (%[dy0],%[dxo]), %[b], %[t]\n\t"                                                                        \
    "vfmadd231ps %[" IA "], %[t], %[" FA "]\n\t"                                                                    \
    "vcvtdq2ps %[" IB "], %[" IB "]\n\t"                                                                            \
    "vmulps 32(%[dy0],%[dxo]), %[b], %[t]\n\t"                                                                      \
    "vfmadd231ps %[" IB "], %[t], %[" FB "]\n\t"

/* kb blocks of the panel chunk (wp, its scales dx) times three columns:
 * y[j] their block 0 in the packed layout, dy[j] its scale; the sums
 * accumulate into f[0..48) (16 rows a column).  The block stride is one
 * for all: BLOCK_BYTES for quants and panel, 16 floats for the scales. */
static void micro_16x3(int kb, const uint8_t *wp, const float *dx, const uint8_t *const y[PC],
                       const float *const dy[PC], float *f)
{
    __m256 f00, f01, f02, f10, f11, f12;
    __m256i i00, i01, i02, i10, i11, i12, w0, w1, b, t;
    const uint8_t *y0 = y[0];
    const float *dy0 = dy[0];
    const ptrdiff_t s1 = y[1] - y0, s2 = y[2] - y0, wo = wp - y0;
    const ptrdiff_t sd1 = (const char *)dy[1] - (const char *)dy0, sd2 = (const char *)dy[2] - (const char *)dy0;
    const ptrdiff_t dxo = (const char *)dx - (const char *)dy0;
    __asm__ volatile(
        "vmovaps (%[f]), %[f00]\n\t" "vmovaps 32(%[f]), %[f10]\n\t"
        "vmovaps 64(%[f]), %[f01]\n\t" "vmovaps 96(%[f]), %[f11]\n\t"
        "vmovaps 128(%[f]), %[f02]\n\t" "vmovaps 160(%[f]), %[f12]\n\t"
        ".p2align 4\n"
        "1:\n\t"
        PAIR_OP(0, FIRST) PAIR_OP(1, NEXT) PAIR_OP(2, NEXT) PAIR_OP(3, NEXT)
        PAIR_OP(4, NEXT) PAIR_OP(5, NEXT) PAIR_OP(6, NEXT) PAIR_OP(7, NEXT)
        PAIR_OP(8, NEXT) PAIR_OP(9, NEXT) PAIR_OP(10, NEXT) PAIR_OP(11, NEXT)
        PAIR_OP(12, NEXT) PAIR_OP(13, NEXT) PAIR_OP(14, NEXT) PAIR_OP(15, NEXT)
        SCALE("(%[dy0])", "i00", "i10", "f00", "f10")
        SCALE("(%[dy0],%[sd1])", "i01", "i11", "f01", "f11")
        SCALE("(%[dy0],%[sd2])", "i02", "i12", "f02", "f12")
        "add $1024, %[y0]\n\t"
        "add $64, %[dy0]\n\t"
        "dec %[kb]\n\t"
        "jnz 1b\n\t"
        "vmovaps %[f00], (%[f])\n\t" "vmovaps %[f10], 32(%[f])\n\t"
        "vmovaps %[f01], 64(%[f])\n\t" "vmovaps %[f11], 96(%[f])\n\t"
        "vmovaps %[f02], 128(%[f])\n\t" "vmovaps %[f12], 160(%[f])\n\t"
        : [f00] "=&x"(f00), [f01] "=&x"(f01), [f02] "=&x"(f02), [f10] "=&x"(f10), [f11] "=&x"(f11),
          [f12] "=&x"(f12), [i00] "=&x"(i00), [i01] "=&x"(i01), [i02] "=&x"(i02), [i10] "=&x"(i10),
          [i11] "=&x"(i11), [i12] "=&x"(i12), [w0] "=&x"(w0), [w1] "=&x"(w1), [b] "=&x"(b), [t] "=&x"(t),
          [kb] "+r"(kb), [y0] "+r"(y0), [dy0] "+r"(dy0)
        : [s1] "r"(s1), [s2] "r"(s2), [sd1] "r"(sd1), [sd2] "r"(sd2), [dxo] "r"(dxo), [wo] "r"(wo), [f] "r"(f)
        : "memory", "cc");
    _Static_assert(PANEL_BLOCK == 1024 && BLOCK_BYTES == 1024 && QT_TILE_COLS * sizeof(float) == 64 &&
                       PR * sizeof(float) == 64,
                   "the asm's strides");
}
#undef SCALE
#undef NEXT
#undef FIRST
#undef PAIR_OP

void qt_avx2_i16_q8_0(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *packed, int ncols,
                      float *out, size_t out_stride, bool stream)
{
    (void)type, (void)stream; /* not taken (tiles.h) */
    const int nb = n / QT_QK8_0;
    const size_t tb = tile_bytes(nb);
    uint8_t wp[KCH * PANEL_BLOCK] __attribute__((aligned(32)));
    float dx[KCH * PR] __attribute__((aligned(32)));
    /* each column's 16 sums, and a sink for the micro tile's columns past ncols */
    float acc[MAXC + PC - 1][PR] __attribute__((aligned(32)));
    for (int cs = 0; cs < ncols; cs += MAXC) { /* column slices of at most MAXC */
        const int nc = ncols - cs < MAXC ? ncols - cs : MAXC;
        for (int r0 = 0; r0 < nrows; r0 += PR) {
            const int pr = nrows - r0 < PR ? nrows - r0 : PR;
            const uint8_t *rows[PR];
            for (int i = 0; i < PR; i++) rows[i] = (const uint8_t *)w + w_stride * (size_t)(r0 + (i < pr ? i : pr - 1));
            memset(acc, 0, sizeof acc[0] * (size_t)(nc + PC - 1));
            for (int k0 = 0; k0 < nb; k0 += KCH) {
                const int kb = nb - k0 < KCH ? nb - k0 : KCH;
                widen(rows, k0, kb, wp, dx);
                for (int c = 0; c < nc; c += PC) {
                    const uint8_t *yq[PC];
                    const float *dy[PC];
                    for (int j = 0; j < PC; j++) {
                        const int cc = cs + (c + j < nc ? c + j : nc - 1); /* past nc: the last column again */
                        const uint8_t *tile = (const uint8_t *)packed + (size_t)(cc / QT_TILE_COLS) * tb;
                        yq[j] = tile + (size_t)k0 * BLOCK_BYTES + (size_t)(cc % QT_TILE_COLS) * COL_BYTES;
                        dy[j] = (const float *)(tile + (size_t)nb * BLOCK_BYTES) + (size_t)k0 * QT_TILE_COLS +
                                cc % QT_TILE_COLS;
                    }
                    micro_16x3(kb, wp, dx, yq, dy, acc[c]);
                }
            }
            for (int c = 0; c < nc; c++) {
                float *o = out + (size_t)(cs + c) * out_stride + r0;
                if (pr == PR)
                    memcpy(o, acc[c], sizeof acc[c]);
                else
                    memcpy(o, acc[c], sizeof acc[c][0] * (size_t)pr);
            }
        }
    }
}

#else

/* ISO C wants a declaration in every translation unit. */
typedef int qt_x86_avx2_tiles_i16_unused;

#endif
