/* repack.h - llama.cpp's "repacked" matmul orders, for weight types it
 * interleaves at load on x86 CPUs.
 *
 * llama.cpp (ggml-cpu/repack.cpp, ggml_repack_get_optimal_repack_type)
 * repacks a 2-D weight with ne[1] % 8 == 0 at load when the CPU has AVX2:
 * Q4_0 into block_q4_0x8, Q4_K into block_q4_Kx8 (and IQ4_NL, MXFP4), and
 * with AVX-512 also Q2_K into block_q2_Kx8.  Their matmuls then run
 * ggml_gemv_<type>_8x8_<act> (one activation column) and
 * ggml_gemm_<type>_8x8_<act> (four columns at a time; a batch of n columns
 * runs gemm on the first n - n % 4 and gemv on the rest).  Those kernels
 * give every output element its own float lane, summed in block order with
 * no 8-lane split and no horizontal sum, which is a different float order
 * from vec_dot's (quant/ref.c, quant/ref_k.c):
 *
 *   Q4_0:  acc = fma((float)isum_b, dw_b * dy_b, acc) per 32-block b
 *          (gemv and gemm alike);
 *   Q4_K, Q2_K:  acc  = fma((float)isum, d_w * d_y, acc)
 *                accm = fma((float)imin, dmin_w * d_y, accm),
 *          result acc - accm, where isum = Σ scale·q·y and imin = Σ min·bsum
 *          are exact integers over the whole super-block in the gemv, but
 *          over each group of sub-blocks in the gemm (Q4_K: 64 elements,
 *          Q2_K: 128), one fma pair per group.
 *
 * The gemm columns' activations come from ggml_quantize_mat_*_4x8.  For
 * Q8_0 it rounds as quantize_row_q8_0.  For Q8_K its AVX2 code differs
 * from quantize_row_q8_K (which the gemv columns use) only when +amax and
 * -amax both occur in a block: it takes the positive one, the reference the
 * first one.  That negates the block's quants, bsums and d together, which
 * cancels exactly in every product above, so qlm quantizes all columns with
 * the activation type's quantize_act (checked against llama.cpp).
 *
 * qlm's definition: a matmul over a weight that the reference llama.cpp
 * build (x86, AVX-512) repacks (qt_repack_applies) uses these orders on
 * every CPU, scalar included, so the bits depend on the model only; the
 * one exception is Q4_K and Q2_K where AMX runs, which take llama.cpp's
 * --no-repack orders there (quant/tiles.h says why).
 * The reference code and the x86 kernels were checked bit for bit against
 * llama.cpp's own kernels (libggml-cpu.so) on random blocks; fixtures made
 * that way are in tests/data/repack.
 *
 * Not matched: Q4_0 activation bytes of -128, which llama.cpp's sign trick
 * multiplies wrongly and which its quantizers never produce; this code
 * computes exact products there.
 *
 * The kernels read qlm's ordinary row-major blocks; interleaving the memory
 * is a possible speed-up, not needed for the bits.
 *
 * Q4_1, which llama.cpp does not repack, has no wide kernel of these
 * orders on purpose: an order of one fma per block, as Q4_0's here, ran
 * twice as fast, but SmolLM2's outputs follow the summation order of
 * these dots: its greedy texts left llama.cpp's on 10 of 11 fixtures, at
 * top-2 gaps up to 0.2.  It keeps vec_dot's eight lanes, each needing a
 * convert and an fma per block and output, and gets the x16 layout only
 * for what the row-per-lane form shares among 8 rows (the nibble split,
 * the scales; qt_x16_dot). */
#ifndef QLM_QT_REPACK_H
#define QLM_QT_REPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "types.h"

/* Rows of weights handled together, and activation columns per gemm call. */
#define QT_RP_ROWS 8
#define QT_RP_COLS 4

/* s[r] = W[r] . y for r < 8: w points at row 0 of a group of 8 rows,
 * w_stride bytes apart; y is one quantized activation row (n elements). */
typedef void (*qt_rp_gemv_fn)(int n, float *s, const void *w, size_t w_stride, const void *y);
/* s[c * ldo + r] = W[r] . y_c for r < 8, c < 4; y_c at y + c * y_stride. */
typedef void (*qt_rp_gemm_fn)(int n, float *s, size_t ldo, const void *w, size_t w_stride,
                              const void *y, size_t y_stride);

/* Wide kernels (AVX-512): QT_RP_WIDE_ROWS rows per call, every row in its
 * own int32 lane, so there is no horizontal sum, and any number of columns.
 * Each output keeps the order above: `gemm` picks the gemm order for all
 * ncols columns (the K-quants' differs from gemv's), and the caller keeps
 * llama.cpp's split of which columns get which.  What a kernel needs of
 * the activation columns that does not depend on the weights (Q4_0: the
 * f32 scale and -8 * sum(y) per block) is computed once per matmul by
 * `prep`, not once per row group.  Its arrangement is the set's own: a
 * call's aux is what prep wrote for that call's columns, column `col` of
 * `ncols` at a time, in aux_bytes(n, ncols) bytes.  A set may interleave
 * the columns there (the AVX-512 Q4_0 kernels copy groups of 8 columns'
 * quants block by block, so that one pointer walks them all); the driver
 * then must not split a batch into calls, which one_order allows. */
#define QT_RP_WIDE_ROWS 16
typedef struct qt_rp_wide {
    /* aux for a call of ncols columns; for a split at a multiple of 8
     * columns, the parts' sum is at most the whole's */
    size_t (*aux_bytes)(int n, int ncols);
    void (*prep)(int n, int col, int ncols, void *aux, const void *y);
    /* s[c * ldo + r] = W[r] . y_c for r < 16, c < ncols; stream: the
     * caller's hint that s will not be read from cache (qt_rp_stream_out) */
    void (*run)(int n, int ncols, bool gemm, float *s, size_t ldo, const void *w, size_t w_stride,
                const void *y, size_t y_stride, const void *aux, bool stream);
    /* The same outputs, bit for bit, from one group of 16 rows in the x16
     * layout below (w: the group's first byte); NULL: the type has none. */
    void (*run_x16)(int n, int ncols, bool gemm, float *s, size_t ldo, const void *w, const void *y,
                    size_t y_stride, const void *aux, bool stream);
    /* gemm's order is gemv's (Q4_0, IQ4_NL): `gemm` is moot, and a batch
     * goes in calls of whole passes, never split where llama.cpp would
     * switch to its gemv */
    bool one_order;
    /* run_x16 on two groups of 16 rows at once, w[i]'s outputs in s[i]
     * (two groups of one matrix, or a gated feed-forward's gate and up),
     * each output bit for bit run_x16's; NULL: the set has none */
    void (*run2_x16)(int n, int ncols, bool gemm, float *const s[2], size_t ldo, const void *const w[2],
                     const void *y, size_t y_stride, const void *aux, bool stream);
} qt_rp_wide;

/* The x16 layout: 16 rows of Q4_0 or IQ4_NL blocks interleaved at load so
 * that the wide kernels read one stream in the order they use it, instead
 * of 16 rows 16 bytes at a time with a transpose per block (which held
 * Q4_0's one-token matmul to ~65% of the memory's read rate).  A group
 * takes exactly the bytes its 16 rows took (16 x 18 per block), so group g
 * of a matrix starts where its row 16 g did.  Blocks go in pairs: pair p
 * (blocks 2p and 2p + 1, or only 2p when it is the last of an odd count)
 * starts at byte 576 p and holds each block's 256 quant bytes, then each
 * block's 16 f16 scales (row r's at word r).  A block's quant bytes are
 * four 64-byte chunks: chunk k holds bytes 4k..4k+3 of the row's qs[] for
 * rows 0..15 in turn, i.e. the row-per-lane form the kernels compute in.
 * Q4_K and Q2_K: super-block b of the 16 rows takes 16 block
 * sizes from 16 b block sizes on: each row's first 16 bytes (Q4_K: d,
 * dmin and the scales; Q2_K: the scales) at 16 r; Q2_K then each row's d
 * and dmin at 256 + 4 r; then the quants, the 4-byte groups k of bytes
 * 32g..32g+31 of qs[] at 64 (8g + k) from there, row r's at 4 r.
 * Where AMX runs, Q2_K is not repacked (qt_repack_applies) and the same
 * layout serves vec_dot's order (qt_x16_dot): chunk 8h + k is lane k of
 * four sub-blocks for all 16 rows; its batches' tile kernels turn each
 * super-block back into the rows' blocks (tiles.h: kernel_x16).  Q4_K
 * keeps its rows there (x86_avx512_repack_k.c says why).
 * Q3_K, which llama.cpp does not repack, keeps vec_dot's order over a
 * layout of its own at AVX-512 VNNI: super-block b of the 16 rows takes
 * its 16 blocks' bytes from 16 b block sizes on, every part in chunks of
 * 64 bytes, chunk i holding dword i of that part of each row (row r's at
 * 4 r): the 16 chunks of qs[] at QT_X16_Q3_K_QS, the 8 of hmask[] at
 * QT_X16_Q3_K_HM, the 3 of scales[] at QT_X16_Q3_K_SC, then the 16 rows'
 * d at QT_X16_Q3_K_D + 2 r.
 * Q4_1, which llama.cpp does not repack, keeps vec_dot's order over its own
 * x16 layout (qt_x16_dot, below): the group's rows 0-7, then rows 8-15,
 * each half its blocks in turn, QT_X16_Q4_1_BLOCK bytes a block: four
 * 32-byte chunks (chunk k: bytes 4k..4k+3 of qs[] of the half's rows,
 * row r's at 4 r), then the 8 rows' d, then their m (f16 each).  Q5_0
 * and Q5_1 likewise (QT_X16_Q5_0_BLOCK, QT_X16_Q5_1_BLOCK bytes a block):
 * the four chunks, then the 8 rows' qh (4 bytes each), then their d
 * (and Q5_1's m).
 * Q8_0, also in vec_dot's order (qt_x16_dot), has each block's 16 f16
 * scales (row r's at 2 r), 32 bytes a block, then each block's 16 rows'
 * quants, 512 bytes a block (qt_x16_q8_0_scales, _quants): row r's 32
 * bytes of qs[] as they are at 32 r, so that one 64-byte vector holds
 * rows 2j and 2j + 1 (the same eight 4-byte sums per row as vec_dot's
 * lanes).  The tile kernels read a row's block as one 32-byte run, both
 * strides constant (in Q4_0's pairs of blocks their address arithmetic
 * cost them 9%); the one-token kernel reads the group front to back, the
 * scales it needs first first.
 * The layout changes where bytes are, never a result. */
#define QT_X16_ROWS 16
#define QT_X16_Q4_1_BLOCK (8 * 20)
#define QT_X16_Q5_0_BLOCK (8 * 22)
#define QT_X16_Q5_1_BLOCK (8 * 24)
#define QT_X16_Q3_K_QS 0
#define QT_X16_Q3_K_HM 1024
#define QT_X16_Q3_K_SC 1536
#define QT_X16_Q3_K_D 1728
/* Where block b's quant bytes and scales sit in a Q4_0 or IQ4_NL group of
 * nb blocks, and in a Q8_0 one. */
static inline size_t qt_x16_quants(int b) { return (size_t)(b / 2) * 576 + (size_t)(b % 2) * 256; }
static inline size_t qt_x16_scales(int b, int nb)
{
    const int in_pair = nb - b / 2 * 2 < 2 ? 1 : 2;
    return (size_t)(b / 2) * 576 + (size_t)in_pair * 256 + (size_t)(b % 2) * 32;
}
static inline size_t qt_x16_q8_0_scales(int b) { return (size_t)b * 32; }
static inline size_t qt_x16_q8_0_quants(int b, int nb) { return (size_t)nb * 32 + (size_t)b * 512; }
/* A wide call writes each column's 16 outputs once, at the end of a chunk
 * of columns, ldo floats apart: lines of a matrix larger than the caches,
 * whose reads for ownership then held the stores back (6% of Q4_K's
 * kernel at 2048x5632, 512 columns).  This asks for column c's line while
 * step `step` of `steps` runs, the columns spread over the last 8 steps,
 * late enough that they are still in L1 at the store. */
static inline void qt_rp_prefetch_out(const float *s, size_t ldo, int ncols, int step, int steps)
{
    const int first = steps > 8 ? steps - 8 : 0, span = steps - first;
    if (step < first) return;
    for (int c = (step - first) * ncols / span; c < (step - first + 1) * ncols / span; c++) {
        const float *o = s + (size_t)c * ldo;
        __builtin_prefetch(o, 1, 3);
        if ((uintptr_t)o % 64) __builtin_prefetch(o + 15, 1, 3);
    }
}
/* Whether a kernel writes its outputs with streaming (non-temporal)
 * stores: where the caller says they will not be read from cache (a
 * matmul's outputs larger than the cores' L2s: ggml-lite/matmul.c), and
 * the lines are whole and aligned.  Columns ldo floats apart with ldo a
 * multiple of 1024 all fall in one or two L1 sets, where the prefetched
 * output lines evicted each other and the panel, and the reads for
 * ownership of lines long gone from cache held the stores back; streaming
 * stores read nothing.  tl-q4_k_m's Q4_K kernel 1.09x at 2048 x 65536,
 * 128 columns; pp512 1.03-1.06x, pp256 1.06-1.09x (2 threads, Xeon
 * without AMX).  Outputs that fit in cache stay cached: streamed, pp64
 * ran 0.94-0.96x, its next op reading them back from memory. */
static inline bool qt_rp_stream_out(bool stream, const float *s, size_t ldo)
{
    return stream && (uintptr_t)s % 64 == 0 && ldo % 16 == 0;
}
/* Per-column side data the wide kernels share across ISAs (prep), one
 * column after another (column col at aux + col * aux_bytes(n, 1)):
 * Q4_0/IQ4_NL blocks: the widened activation scale and -(offset) *
 * sum(y) (qt_rp_prep_q8_0, AVX2 code: x86 only); Q4_K: per super-block
 * and group g the int16 pair (b0, b1) the mins multiply, b0 = bsums 4g +
 * 4g+1, b1 = bsums 4g+2 + 4g+3, wrapped to int16 as the reference forms
 * them; Q2_K: none (Q8_K carries its scale and bsums). */
typedef struct qt_rp_col_block {
    float d;
    int32_t off;
} qt_rp_col_block;
size_t qt_rp_aux_q8_0(int n, int ncols);
/* One column's blocks into a (n / 32 of them). */
void qt_rp_prep_q8_0(int n, qt_rp_col_block *a, const void *y, int off_scale);
size_t qt_rp_aux_q4_K(int n, int ncols);
void qt_rp_prep_q4_K(int n, int col, int ncols, void *aux, const void *y);
size_t qt_rp_aux_none(int n, int ncols);
void qt_rp_prep_none(int n, int col, int ncols, void *aux, const void *y);

/* Whether this type has the x16 layout and this CPU a kernel for it. */
bool qt_x16_available(qt_type type);
/* For a type whose x16 layout keeps vec_dot's order (Q4_1, Q5_0, Q5_1, Q8_0, Q3_K; Q2_K where AMX runs): s[c * ldo + r]
 * = vec_dot(row r of the group, column c) for r < 16, c < nc, bit for bit;
 * column c at y + c * y_stride. */
typedef void (*qt_x16_dot_fn)(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride, int nc);
/* This CPU's kernel, or NULL where the type has none here (then its
 * weights keep their rows).  The AVX2 levels have one (Zen 2: SmolLM2
 * pp512 and tg128 1.2x; a Sapphire Rapids capped at AVX2-VNNI: a 1.1B
 * shape's pp512 1.1-1.3x, tg64 within its noise), and the AVX-512 levels
 * one of 16 rows per vector (that Sapphire Rapids: tg64 1.25-1.57x); Q5_0
 * and Q5_1 likewise (a Xeon, 1.1B shape in Q5_0: tg64 1.21-1.24x at
 * AVX-512 VNNI); Q8_0 at AVX-512 VNNI only (that Xeon: tg128 1.06-1.22x;
 * its rows at AVX2-VNNI ran as fast as this layout at AVX-512 VNNI,
 * 25.0-26.7 against 24.5-26.9 t/s, and without VNNI the work per row is
 * the same in either layout).
 * At AVX-512 VNNI, batches of QT_TILE_MIN_COLS or more
 * columns still take
 * the tile kernels, which take them with fewer operations a product and
 * read the groups as they are (tiles.h: kernel_x16). */
qt_x16_dot_fn qt_x16_dot(qt_type type);
/* Writes the group of 16 rows (row r at rows + r * row_stride, n elements
 * each) to dst in the x16 layout; dst takes 16 row sizes. */
void qt_x16_interleave(qt_type type, int n, const void *rows, size_t row_stride, void *dst);
/* Row r (< 16) of the group at src, as the file had it. */
void qt_x16_row(qt_type type, int n, const void *src, int r, void *row);
/* The inverse: the group at src back into 16 rows. */
void qt_x16_deinterleave(qt_type type, int n, const void *src, void *rows, size_t row_stride);

typedef struct qt_repack_ops {
    const char *name;
    qt_rp_gemv_fn gemv[QT_COUNT]; /* by weight type; NULL: not repacked */
    qt_rp_gemm_fn gemm[QT_COUNT];
} qt_repack_ops;

/* Whether the reference llama.cpp build repacks a 2-D weight of this type
 * with `rows` rows (ne[1]), i.e. whether qlm uses the orders above for it
 * (not for Q4_K and Q2_K where qt_amx_active()). */
bool qt_repack_applies(qt_type type, int64_t rows);

/* The reference (scalar) set and the one chosen for this CPU (QLM_ISA caps
 * it as it does the other kernels). */
const qt_repack_ops *qt_repack_ref(void);
const qt_repack_ops *qt_repack(void);

/* The wide kernel for this weight type on this CPU (x86 levels; QLM_ISA
 * caps it), or NULL: then the 8-row set above does all rows. */
const qt_rp_wide *qt_repack_wide(qt_type type);

#if defined(__x86_64__)
extern const qt_repack_ops qt_repack_avx2;
/* Q4_1's x16 kernels, without and with AVX-VNNI (x86_avx2_x16_dot.c). */
void qt_avx2_x16_dot_q4_1(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride, int nc);
void qt_avx2_vnni_x16_dot_q4_1(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride, int nc);
/* The same with AVX-512, without and with VNNI (x86_avx512_x16_dot.c). */
void qt_avx512_x16_dot_q4_1(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride, int nc);
void qt_avx512_vnni_x16_dot_q4_1(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride,
                                 int nc);
/* Q5_0's, with AVX2 (without and with AVX-VNNI) and AVX-512 (without and
 * with VNNI): x86_avx2_x16_dot.c, x86_avx512_x16_dot.c. */
void qt_avx2_x16_dot_q5_0(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride, int nc);
void qt_avx2_vnni_x16_dot_q5_0(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride, int nc);
void qt_avx512_x16_dot_q5_0(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride, int nc);
void qt_avx512_vnni_x16_dot_q5_0(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride,
                                 int nc);
/* Q8_0's, with AVX512-VNNI (x86_avx512_x16_dot.c). */
void qt_avx512_vnni_x16_dot_q8_0(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride,
                                 int nc);
/* Q2_K's in vec_dot's order, with AVX512-VNNI (x86_avx512_repack_k.c): where
 * AMX runs its batches (the Q2_K layout above serves that order too). */
void qt_avx512_vnni_x16_dot_q2_K(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride,
                                 int nc);
/* Q3_K's, with AVX512-VNNI (x86_avx512_x16_k.c). */
void qt_avx512_vnni_x16_dot_q3_K(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride,
                                 int nc);
/* Q5_1's likewise (x86_avx2_x16_dot.c, x86_avx512_x16_dot.c). */
void qt_avx2_x16_dot_q5_1(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride, int nc);
void qt_avx2_vnni_x16_dot_q5_1(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride, int nc);
void qt_avx512_x16_dot_q5_1(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride, int nc);
void qt_avx512_vnni_x16_dot_q5_1(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride,
                                 int nc);
/* The wide kernels by weight type, without and with AVX512-VNNI. */
extern const qt_rp_wide *const qt_rp_wide_avx512[QT_COUNT];
extern const qt_rp_wide *const qt_rp_wide_avx512_vnni[QT_COUNT];
/* The same with AVX2, 16 rows in two halves (quant/x86_avx2_wide.c). */
extern const qt_rp_wide *const qt_rp_wide_avx2[QT_COUNT];
/* Their K-quant entries (quant/x86_avx512_repack_k.c). */
extern const qt_rp_wide qt_rp_wide_q4_K_avx512, qt_rp_wide_q4_K_avx512_vnni;
extern const qt_rp_wide qt_rp_wide_q2_K_avx512, qt_rp_wide_q2_K_avx512_vnni;
/* The K-quant entries of that table (quant/x86_avx2_repack_k.c). */
void qt_avx2_rp_gemv_q4_K(int n, float *s, const void *w, size_t w_stride, const void *y);
void qt_avx2_rp_gemm_q4_K(int n, float *s, size_t ldo, const void *w, size_t w_stride, const void *y,
                          size_t y_stride);
void qt_avx2_rp_gemv_q2_K(int n, float *s, const void *w, size_t w_stride, const void *y);
void qt_avx2_rp_gemm_q2_K(int n, float *s, size_t ldo, const void *w, size_t w_stride, const void *y,
                          size_t y_stride);
#endif

#endif
