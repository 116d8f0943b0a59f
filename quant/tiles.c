/* tiles.c - the packed activation layouts of quant/tiles.h, and the
 * choice of tile kernels. */
#include "tiles.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "blocks.h"
#include "cpu.h"
#include "fp16.h"
#include "repack.h"
#include "tiled.h"

/* ---- Q8_0 (tinyBLAS order) and Q8_1 ------------------------------------- */

/* A tile's blocks: the quants, the d's, and (Q8_1) the s's. */
static size_t q8_tile_bytes(int nb, int with_s)
{
    return (size_t)nb * (QT_TILE_COLS * QT_QK8_0 + (1 + with_s) * QT_TILE_COLS * sizeof(float));
}

#if defined(__x86_64__) /* the packed sizes and the Q8_K packer serve the x86 sets only */
static size_t q8_0_pack_size(int n, int ncols)
{
    const int tiles = (ncols + QT_TILE_COLS - 1) / QT_TILE_COLS;
    return (size_t)tiles * q8_tile_bytes(n / QT_QK8_0, 0);
}

static size_t q8_1_pack_size(int n, int ncols)
{
    const int tiles = (ncols + QT_TILE_COLS - 1) / QT_TILE_COLS;
    return (size_t)tiles * q8_tile_bytes(n / QT_QK8_1, 1);
}
#endif

/* Q8_0 or (with_s) Q8_1 rows: the blocks differ only in Q8_1's f16 s
 * between d and the quants. */
static void pack_q8_ref(int n, const void *y, size_t y_stride, int ncols, int tile, void *packed, int with_s)
{
    const int nb = n / QT_QK8_0, c0 = tile * QT_TILE_COLS;
    const size_t bs = with_s ? sizeof(qt_block_q8_1) : sizeof(qt_block_q8_0), qs_at = with_s ? 4 : 2;
    uint8_t *qs = (uint8_t *)packed + (size_t)tile * q8_tile_bytes(nb, with_s);
    float *d = (float *)(qs + (size_t)nb * QT_TILE_COLS * QT_QK8_0), *sy = d + (size_t)nb * QT_TILE_COLS;
    for (int c = 0; c < QT_TILE_COLS; c++) {
        const uint8_t *row = c0 + c < ncols ? (const uint8_t *)y + (size_t)(c0 + c) * y_stride : NULL;
        for (int b = 0; b < nb; b++) {
            uint8_t *dst = qs + (size_t)b * QT_TILE_COLS * QT_QK8_0 + 4 * c;
            for (int g = 0; g < 8; g++) {
                /* + 128 on each byte of a group is a flip of its top bit */
                uint32_t group = 0;
                if (row) memcpy(&group, row + b * bs + qs_at + 4 * g, sizeof group);
                group ^= 0x80808080u;
                memcpy(dst + 4 * QT_TILE_COLS * g, &group, sizeof group);
            }
            uint16_t h[2] = {0, 0};
            if (row) memcpy(h, row + b * bs, with_s ? 4 : 2);
            d[b * QT_TILE_COLS + c] = row ? qt_f16_to_f32(h[0]) : 0.0f;
            if (with_s) sy[b * QT_TILE_COLS + c] = row ? qt_f16_to_f32(h[1]) : 0.0f;
        }
    }
}

void qt_tiles_pack_q8_0_ref(int n, const void *y, size_t y_stride, int ncols, int tile, void *packed)
{
    pack_q8_ref(n, y, y_stride, ncols, tile, packed, 0);
}

void qt_tiles_pack_q8_1_ref(int n, const void *y, size_t y_stride, int ncols, int tile, void *packed)
{
    pack_q8_ref(n, y, y_stride, ncols, tile, packed, 1);
}

/* ---- Q8_K (tiled K-quant order) ----------------------------------------- */

#if defined(__x86_64__)
#define Q8K_BLOCK_BYTES (QT_TILE_COLS * QT_QK_K + QT_TILE_COLS * QT_QK_K / 16 * sizeof(int16_t) + QT_TILE_COLS * sizeof(float))

static size_t q8_K_pack_size(int n, int ncols)
{
    const int tiles = (ncols + QT_TILE_COLS - 1) / QT_TILE_COLS;
    return (size_t)tiles * (size_t)(n / QT_QK_K) * Q8K_BLOCK_BYTES;
}

/* flip: 0, or 0x80808080 for the biased layout (y + 128 in each byte);
 * sums32: the 32-element sums' pairs in place of the 16-element ones */
static void q8_K_pack_as(int n, const void *y, size_t y_stride, int ncols, int tile, void *packed, uint32_t flip,
                         bool sums32)
{
    const int nb = n / QT_QK_K, c0 = tile * QT_TILE_COLS;
    uint8_t *base = (uint8_t *)packed + (size_t)tile * nb * Q8K_BLOCK_BYTES;
    for (int b = 0; b < nb; b++) {
        int8_t *qs = (int8_t *)(base + (size_t)b * Q8K_BLOCK_BYTES);
        int16_t *bs = (int16_t *)(qs + QT_TILE_COLS * QT_QK_K);
        float *d = (float *)(bs + QT_TILE_COLS * QT_QK_K / 16);
        for (int c = 0; c < QT_TILE_COLS; c++) {
            const qt_block_q8_K *row = c0 + c < ncols ? (const qt_block_q8_K *)((const uint8_t *)y + (size_t)(c0 + c) * y_stride) + b : NULL;
            /* 4-byte groups: the layout moves whole groups */
            for (int g = 0; g < QT_QK_K / 4; g++) {
                uint32_t group = 0;
                if (row) memcpy(&group, row->qs + 4 * g, sizeof group);
                group ^= flip;
                memcpy(qs + g * 4 * QT_TILE_COLS + 4 * c, &group, sizeof group);
            }
            for (int j = 0; j < QT_QK_K / 16; j++) {
                /* sums32: pair j/2 < 4 holds the sums of 32-element blocks
                 * j and j + 1 (exact in int16: |sum| <= 32·128), the rest 0 */
                int16_t v = row ? row->bsums[j] : 0;
                if (sums32) v = j < QT_QK_K / 32 && row ? (int16_t)(row->bsums[2 * j] + row->bsums[2 * j + 1]) : 0;
                bs[(j / 2) * 2 * QT_TILE_COLS + 2 * c + j % 2] = v;
            }
            d[c] = row ? row->d : 0.0f;
        }
    }
}

static void q8_K_pack(int n, const void *y, size_t y_stride, int ncols, int tile, void *packed)
{
    q8_K_pack_as(n, y, y_stride, ncols, tile, packed, 0, false);
}

static void q8_K_pack_biased(int n, const void *y, size_t y_stride, int ncols, int tile, void *packed)
{
    q8_K_pack_as(n, y, y_stride, ncols, tile, packed, 0x80808080u, false);
}

static void q8_K_pack_sums32(int n, const void *y, size_t y_stride, int ncols, int tile, void *packed)
{
    q8_K_pack_as(n, y, y_stride, ncols, tile, packed, 0, true);
}
#endif

/* ---- the i16 order ------------------------------------------------------ */

void qt_tiles_pack_i16_ref(int n, const void *y, size_t y_stride, int ncols, int tile, void *packed)
{
    const int nb = n / QT_QK8_0, c0 = tile * QT_TILE_COLS;
    const size_t block_bytes = QT_TILE_COLS * QT_QK8_0 * sizeof(int16_t);
    uint8_t *base = (uint8_t *)packed + (size_t)tile * nb * (block_bytes + QT_TILE_COLS * sizeof(float));
    float *d = (float *)(base + (size_t)nb * block_bytes);
    for (int c = 0; c < QT_TILE_COLS; c++) {
        const qt_block_q8_0 *row = c0 + c < ncols ? (const qt_block_q8_0 *)((const uint8_t *)y + (size_t)(c0 + c) * y_stride) : NULL;
        for (int b = 0; b < nb; b++) {
            int16_t q[QT_QK8_0];
            for (int k = 0; k < QT_QK8_0; k++) q[k] = row ? row[b].qs[k] : 0;
            memcpy(base + (size_t)b * block_bytes + (size_t)c * sizeof q, q, sizeof q);
            d[b * QT_TILE_COLS + c] = row ? qt_f16_to_f32(row[b].d) : 0.0f;
        }
    }
}

void qt_tiles_i16_dot_ref(int n, const void *w, size_t w_stride, int nr, const void *y, size_t y_stride, int nc,
                          float *out, size_t ldo)
{
    const int nb = n / QT_QK8_0;
    for (int c = 0; c < nc; c++)
        for (int r = 0; r < nr; r++) {
            const qt_block_q8_0 *x = (const qt_block_q8_0 *)((const uint8_t *)w + (size_t)r * w_stride);
            const qt_block_q8_0 *v = (const qt_block_q8_0 *)((const uint8_t *)y + (size_t)c * y_stride);
            float acc = 0.0f;
            for (int b = 0; b < nb; b++) {
                int32_t sum = 0;
                for (int k = 0; k < QT_QK8_0; k++) sum += (int32_t)x[b].qs[k] * v[b].qs[k];
                const float d = qt_f16_to_f32(x[b].d) * qt_f16_to_f32(v[b].d);
                acc = fmaf((float)sum, d, acc);
            }
            out[(size_t)c * ldo + r] = acc;
        }
}

/* ---- choice ------------------------------------------------------------- */

#if defined(__x86_64__)
const qt_tiles *qt_tiles_avx512_vnni(qt_type type)
{
    static const qt_tiles q8_0 = {.pack_size = q8_0_pack_size, .pack = qt_avx512_vnni_tb_pack_q8_0,
                                   .kernel = qt_avx512_vnni_tb_q8_0, .kernel_x16 = qt_avx512_vnni_tb_x16,
                                   .pack_f32 = qt_avx512_vnni_tb_pack_q8_0_f32};
    /* Passes of 256 columns: each weight block is decoded once per pass,
     * and at 128 columns decoding took ~27% of the kernel (Q6_K, Zen 5,
     * n = 2048; 256: 1.08x, Q3_K 1.13x, 1 thread, same bits).  Inputs
     * whose 256-column pass outgrows L2 once kept 128 (n = 5632: 256
     * measured within the noise); since the kernel takes such passes in
     * bands of rows, 256 runs 1.12x there (Q3_K and Q6_K), 8192-wide
     * 1.05-1.10x and 18944-wide 1.07-1.09x (512 columns for all: 0.95x
     * in stop 27). */
    static const qt_tiles q8_1 = {.pack_size = q8_1_pack_size, .pack = qt_avx512_vnni_tb_pack_q8_1,
                                   .kernel = qt_avx512_vnni_tb_q8_0, .kernel_x16 = qt_avx512_vnni_tb_x16};
    static const qt_tiles k = {.pack_size = q8_K_pack_size, .pack = q8_K_pack, .kernel = qt_avx512_vnni_tiled,
                               .pass_cols = 256, .kernel_x16 = qt_avx512_vnni_tiled_x16};
    /* Q3_K and Q6_K: each row group xor-ed every activation load with
     * 0x80, a fifth of the SIMD work beside the products (Q3_K 1.1x with
     * the layout flipped once per matmul) */
    static const qt_tiles k_biased = {.pack_size = q8_K_pack_size, .pack = q8_K_pack_biased,
                                      .kernel = qt_avx512_vnni_tiled_biased, .pass_cols = 256,
                                      .kernel_x16 = qt_avx512_vnni_tiled_biased_x16};
    /* Q4_K and Q5_K: one min per 32 elements, so the mins take 4
     * vpdpwssd on the 32-element sums' pairs per row and tile, not 8 */
    static const qt_tiles k32 = {.pack_size = q8_K_pack_size, .pack = q8_K_pack_sums32,
                                 .kernel = qt_avx512_vnni_tiled, .pass_cols = 256};
    switch (type) {
    case QT_Q8_0: case QT_Q5_0: return &q8_0;
    case QT_Q4_1: case QT_Q5_1: return &q8_1;
    case QT_Q2_K: return &k;
    case QT_Q4_K: case QT_Q5_K: return &k32;
    case QT_Q3_K: case QT_Q6_K: return &k_biased;
    default: return NULL;
    }
}

const qt_tiles *qt_tiles_avx2(qt_type type)
{
    static const qt_tiles q8_0 = {.pack_size = qt_avx2_i16_pack_size, .pack = qt_avx2_i16_pack_q8_0,
                                   .kernel = qt_avx2_i16_q8_0, .i16_order = true};
    return type == QT_Q8_0 ? &q8_0 : NULL;
}

/* Passes of 256 columns: a block's weights are folded into tile operands
 * once per pass, so wider passes fold less often. */
const qt_tiles *qt_tiles_amx(qt_type type)
{
    static const qt_tiles k = {.pack_size = q8_K_pack_size, .pack = q8_K_pack, .kernel = qt_amx_tiled,
                               .pass_cols = 512, .pack_f32 = qt_amx_pack_q8_K_f32, .kernel_x16 = qt_amx_tiled_x16};
    return qt_amx_tiled_has(type) ? &k : NULL;
}
#endif

int qt_tiles_amx_min_cols(qt_type type) { return type == QT_Q3_K ? 24 : 16; }

bool qt_tiles_amx_applies(qt_type type, int64_t rows, int n_cols)
{
#if defined(__x86_64__)
    return n_cols >= qt_tiles_amx_min_cols(type) && qt_isa_active() == QT_ISA_AVX512_VNNI && qt_amx_active() &&
           qt_amx_tiled_has(type) && !qt_repack_applies(type, rows);
#else
    (void)type, (void)rows, (void)n_cols;
    return false;
#endif
}

const qt_tiles *qt_tiles_for(qt_type type, int64_t rows, int n_cols)
{
    if (n_cols < QT_TILE_MIN_COLS) return NULL;
#if defined(__x86_64__)
    if (qt_isa_active() == QT_ISA_AVX2) return qt_q8_i16_active() ? qt_tiles_avx2(type) : NULL;
    if (qt_isa_active() != QT_ISA_AVX512_VNNI) return NULL;
    if (qt_tiles_amx_applies(type, rows, n_cols)) return qt_tiles_amx(type);
    if (type == QT_Q8_0 || type == QT_Q5_0 || type == QT_Q4_1 || type == QT_Q5_1 ||
        qt_tiled_applies(type, rows, n_cols))
        return qt_tiles_avx512_vnni(type);
#else
    (void)type, (void)rows;
#endif
    return NULL;
}
