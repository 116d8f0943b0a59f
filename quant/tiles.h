/* tiles.h - batch matmul kernels that work on packed tiles of activation
 * columns, many outputs at a time, in llama.cpp's batch orders.
 *
 * The per-element definitions of those orders are vec_dot's (for Q8_0,
 * which llama.cpp runs through tinyBLAS: quant/tiled.h explains why the
 * two agree; and for Q5_0, Q4_1 and Q5_1, whose vec_dots are Q8_0's on
 * their quants widened to bytes, the last two's plus a chain of m·s, so
 * the Q8_0 kernel runs them from blocks decoded on the way) and qt_tiled_dot (K-quants on
 * its tiled path, quant/tiled.h).
 * Calling them once per (row, column) re-reads and re-decodes a weight
 * row for every column and pays each block's scale work per pair.  These
 * kernels keep every output's float operations and their order, but put
 * one column in each 32-bit lane of a 16-lane register: the activations
 * of QT_TILE_COLS columns are packed once per matmul, and a weight row
 * meets all of them while it is in cache.  Only the integer sums, which
 * are exact, are formed differently.
 *
 * One set has an order of its own: Q8_0 batches on AVX2 without VNNI
 * (quant/x86_avx2_tiles_i16.c says why), the "i16 order": per output,
 *     acc = fma(float(sum of block b's 32 products), dx_b·dy_b, acc)
 * for b = 0, 1, ... from acc = 0, dx_b·dy_b one float product
 * (qt_tiles_i16_dot_ref).  Its outputs differ from vec_dot's by float
 * rounding only, but the next layer quantizes them to bytes, where that
 * rounding moves some bytes by one step: SmolLM2 Q8_0's greedy texts
 * leave llama.cpp's within 2-40 tokens (perplexity 0.05% apart), so it
 * runs only where asked for (qt_q8_i16_active: QLM_Q8_ORDER=i16).
 *
 * Packed layouts (written by portable code in tiles.c; the kernels of
 * this CPU read them).  A tile holds QT_TILE_COLS columns, the last one
 * padded with zero activations.
 *   Q8_0 activations (tinyBLAS order), per 32-element block:
 *     for each 4-byte group g = 0..7, 64 bytes: group g of columns 0..15,
 *     every byte stored as y + 128 (vpdpbusd multiplies unsigned bytes by
 *     signed ones); after all blocks, the columns' d_y as floats, per block.
 *   Q8_1 activations (Q4_1's and Q5_1's vec_dot order): the same, then the columns'
 *     s_y (d_y times the block's sum) as floats, per block.
 *   i16 order (AVX2 Q8_0), per 32-element block: each column's 32
 *     quants as int16 (64 bytes), columns 0..15 in turn; after all
 *     blocks, the columns' d_y as floats, per block.
 *   Q8_K activations (tiled K-quant order), per 256-element block: for
 *     each 4-byte group g = 0..63, 64 bytes: group g of columns 0..15 (the
 *     signed bytes as they are); then for each pair of 16-element sums
 *     j = 0..7, bsums 2j, 2j+1 of columns 0..15 as int16; then the
 *     columns' d_y as floats.
 *   Q8_K with 32-element sums (Q4_K and Q5_K weights on AVX512-VNNI): the
 *     same, but pair j < 4 of the sums holds the sums of 32-element blocks
 *     2j and 2j + 1 (bsums 4j + 4j+1 and 4j+2 + 4j+3), pairs 4..7 zero.
 *   Biased Q8_K (the same for Q3_K and Q6_K weights on AVX512-VNNI): the
 *     bytes stored as y + 128, since those kernels take the activations
 *     as vpdpbusd's unsigned operand (x86_avx512_tiled.c); flipping them
 *     once per matmul saves an xor per load of every row group. */
#ifndef QLM_QT_TILES_H
#define QLM_QT_TILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "types.h"

/* Columns per packed tile, and the fewest for which the tile kernels pay
 * (a partial tile costs what a full one does). */
#define QT_TILE_COLS 16
#define QT_TILE_MIN_COLS 8

/* out[c * out_stride + r] for rows r < nrows of w (w_stride bytes apart),
 * weight type `type`, and columns c < ncols of `packed` (tile 0 first).
 * stream: the caller's hint that the outputs will not be read from cache
 * (repack.h's qt_rp_stream_out); the AVX-512 kernels then write whole
 * aligned lines with streaming stores, the AVX2 and AMX ones ignore it. */
typedef void (*qt_tile_kernel_fn)(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *packed,
                                  int ncols, float *out, size_t out_stride, bool stream);

typedef struct qt_tiles {
    /* bytes of `ncols` packed columns of n elements (whole tiles; a
     * multiple of QT_TILE_COLS columns is where the next tile starts) */
    size_t (*pack_size)(int n, int ncols);
    /* packs tile `tile` of the activation rows y (y_stride bytes apart,
     * vec_dot_type of the weight) into `packed`, the whole buffer; tiles
     * are independent, so threads may pack different ones */
    void (*pack)(int n, const void *y, size_t y_stride, int ncols, int tile, void *packed);
    qt_tile_kernel_fn kernel;
    /* columns per pass of the caller's loop (0: its default): each
     * weight block is decoded once per pass, and a pass's packed columns
     * are read once per row group (the AVX-512 kernel takes passes that
     * outgrow L2 in bands of rows) */
    int pass_cols;
    /* pack, but from the float activations (rows of n floats), quantized
     * as the activation type's quantize_act does: the same bytes without
     * writing and re-reading the quantized rows; NULL: quantize, then pack */
    void (*pack_f32)(int n, const float *x, int ncols, int tile, void *packed);
    /* kernel's outputs, bit for bit, from weights in the x16 layout of a
     * type with a qt_x16_dot (repack.h: Q4_1, Q5_0, Q5_1, Q8_0, Q3_K, and
     * Q2_K where AMX runs; the K-quant sets turn each super-block of a group
     * back into its rows' blocks): w is a group's first byte, w_stride
     * the row size, and the nrows rows lie in whole groups; NULL: such
     * weights never take this set */
    qt_tile_kernel_fn kernel_x16;
    /* the outputs are in the i16 order (above), not in the order of the
     * path the set stands for */
    bool i16_order;
} qt_tiles;

/* The tile kernels for a matmul with weights of `type`, `rows` rows and
 * n_cols columns on this CPU (QLM_ISA caps it), or NULL: then the
 * per-element path gives the same bits.  AVX512-VNNI has them for the
 * types below; AVX2 without VNNI for Q8_0 in the i16 order (above), where
 * QLM_Q8_ORDER=i16 asks for it.
 * Elsewhere, without vpdpbusd/vpdpwssd the packed unsigned bytes would
 * need 16-bit intermediates that saturate, and narrower registers halve
 * the lanes.
 *
 * Where qt_amx_active(), Q2_K..Q6_K batches of qt_tiles_amx_min_cols()
 * or more columns take the AMX kernel, in the same tiled order (same bits).  Q4_K
 * and Q2_K are then not repacked at all (qt_repack_applies): llama.cpp's
 * repacked gemm has float steps per 64 (Q4_K) or 128 (Q2_K) elements,
 * each of which would cost AMX a tile store and a float pass where the
 * tiled order has one per 256, so on AMX qlm gives them the orders
 * llama.cpp gives them with --no-repack (Q4_0 and IQ4_NL stay repacked:
 * their AMX kernel measured no faster).  Greedy texts follow the order
 * (SmolLM2 and Gemma 3 Q4_K_M leave llama.cpp's default fixtures at top-2
 * gaps up to 0.2 in the tiled order), so tests/test_greedy.c checks such
 * models against fixtures made with --no-repack where AMX runs. */
/* AMX folds each weight block into tile operands once per call, which
 * few columns do not repay: the fewest columns for which the AMX kernel
 * takes a weight type.  Measured 1 thread, 2048 x 5632 weights, VNNI
 * kernels vs AMX in GMAC/s at 16 / 24 / 32 columns: Q6_K 74/88, 84/114,
 * 106/145; Q5_K 68/103, 90/166, 118/221; Q3_K 63/60, 76/87, 105/126;
 * Q4_K (its repacked VNNI kernel vs AMX's tiled order) 138/166, 154/172,
 * 174/238; Q2_K likewise 152/195, 142/235, 174/330: 24 for Q3_K, 16 for
 * the others. */
int qt_tiles_amx_min_cols(qt_type type);
const qt_tiles *qt_tiles_for(qt_type type, int64_t rows, int n_cols);
/* Whether qt_tiles_for gives the AMX set for this weight and batch. */
bool qt_tiles_amx_applies(qt_type type, int64_t rows, int n_cols);

/* The i16 layout's definition in portable code (tests compare the AVX2
 * packer with it). */
void qt_tiles_pack_i16_ref(int n, const void *y, size_t y_stride, int ncols, int tile, void *packed);
/* The i16 order's definition: out[c * ldo + r] for rows r < nr of the
 * Q8_0 weights w (w_stride bytes apart) and Q8_0 columns c < nc of y. */
void qt_tiles_i16_dot_ref(int n, const void *w, size_t w_stride, int nr, const void *y, size_t y_stride, int nc,
                          float *out, size_t ldo);

/* The Q8_0 layout's definition in portable code (the AVX512-VNNI set
 * packs with its own gathers; tests compare the two). */
void qt_tiles_pack_q8_0_ref(int n, const void *y, size_t y_stride, int ncols, int tile, void *packed);
void qt_tiles_pack_q8_1_ref(int n, const void *y, size_t y_stride, int ncols, int tile, void *packed);

#if defined(__x86_64__)
/* The AVX512-VNNI set for weights of `type` whatever QLM_ISA says (for
 * tests on a CPU that has it), or NULL. */
const qt_tiles *qt_tiles_avx512_vnni(qt_type type);
void qt_avx512_vnni_tb_q8_0(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *packed,
                            int ncols, float *out, size_t out_stride, bool stream);
/* The same from the x16 layout (Q4_1, Q5_0). */
void qt_avx512_vnni_tb_x16(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *packed,
                           int ncols, float *out, size_t out_stride, bool stream);
void qt_avx512_vnni_tb_pack_q8_0(int n, const void *y, size_t y_stride, int ncols, int tile, void *packed);
void qt_avx512_vnni_tb_pack_q8_1(int n, const void *y, size_t y_stride, int ncols, int tile, void *packed);
void qt_avx512_vnni_tb_pack_q8_0_f32(int n, const float *x, int ncols, int tile, void *packed);
void qt_avx512_vnni_tiled(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *packed,
                          int ncols, float *out, size_t out_stride, bool stream);
void qt_avx512_vnni_tiled_x16(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *packed,
                              int ncols, float *out, size_t out_stride, bool stream);
/* The same for Q3_K and Q6_K, from the biased Q8_K layout. */
void qt_avx512_vnni_tiled_biased(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *packed,
                                 int ncols, float *out, size_t out_stride, bool stream);
void qt_avx512_vnni_tiled_biased_x16(qt_type type, int n, const void *w, size_t w_stride, int nrows,
                                     const void *packed, int ncols, float *out, size_t out_stride, bool stream);
/* The AVX2 set (the i16 order; Q8_0 only) whatever QLM_ISA says, or NULL. */
const qt_tiles *qt_tiles_avx2(qt_type type);
size_t qt_avx2_i16_pack_size(int n, int ncols);
void qt_avx2_i16_pack_q8_0(int n, const void *y, size_t y_stride, int ncols, int tile, void *packed);
void qt_avx2_i16_q8_0(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *packed, int ncols,
                      float *out, size_t out_stride, bool stream);
/* The AMX-INT8 set for weights of `type` (the tiled order; Q2_K..Q5_K)
 * whatever QLM_ISA says, or NULL; only for a CPU whose qt_cpu()->amx is
 * set (quant/x86_amx_k.c). */
const qt_tiles *qt_tiles_amx(qt_type type);
bool qt_amx_tiled_has(qt_type type);
void qt_amx_pack_q8_K_f32(int n, const float *x, int ncols, int tile, void *packed);
void qt_amx_tiled(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *packed, int ncols,
                  float *out, size_t out_stride, bool stream);
/* The same from whole groups of the x16 layout (Q2_K, Q3_K; repack.h). */
void qt_amx_tiled_x16(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *packed, int ncols,
                      float *out, size_t out_stride, bool stream);
#endif

#endif
