/* types.h - the one table of tensor element types.
 *
 * Every GGML/GGUF type id has a row, so the GGUF reader can size any tensor
 * and name any type, even ones qlm cannot compute with yet; rows without
 * to_float/vec_dot are "known but unsupported" and are refused at model
 * load with their name.  Weight types pair with the activation type their
 * dot product consumes (vec_dot_type), as in ggml: Q4_0·Q8_0, Q4_1·Q8_1. */
#ifndef QLM_QT_TYPES_H
#define QLM_QT_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Values are the GGUF on-disk type ids. */
typedef enum qt_type {
    QT_F32 = 0,
    QT_F16 = 1,
    QT_Q4_0 = 2,
    QT_Q4_1 = 3,
    /* 4 and 5 (Q4_2, Q4_3) were removed from the format */
    QT_Q5_0 = 6,
    QT_Q5_1 = 7,
    QT_Q8_0 = 8,
    QT_Q8_1 = 9,
    QT_Q2_K = 10,
    QT_Q3_K = 11,
    QT_Q4_K = 12,
    QT_Q5_K = 13,
    QT_Q6_K = 14,
    QT_Q8_K = 15,
    QT_IQ2_XXS = 16,
    QT_IQ2_XS = 17,
    QT_IQ3_XXS = 18,
    QT_IQ1_S = 19,
    QT_IQ4_NL = 20,
    QT_IQ3_S = 21,
    QT_IQ2_S = 22,
    QT_IQ4_XS = 23,
    QT_I8 = 24,
    QT_I16 = 25,
    QT_I32 = 26,
    QT_I64 = 27,
    QT_F64 = 28,
    QT_IQ1_M = 29,
    QT_BF16 = 30,
    /* 31..33 were Q4_0_4_4 etc., removed */
    QT_TQ1_0 = 34,
    QT_TQ2_0 = 35,
    /* 36..38 were IQ4_NL_4_4 etc., removed */
    QT_MXFP4 = 39,
    QT_COUNT
} qt_type;

/* Converts n elements (a multiple of block_size) of packed blocks to f32. */
typedef void (*qt_to_float_fn)(const void *src, float *dst, int64_t n);
/* Quantizes n floats (a multiple of block_size) into packed blocks. */
typedef void (*qt_from_float_fn)(const float *src, void *dst, int64_t n);
/* *s = dot(x, y) over n elements; x is this type, y is vec_dot_type. */
typedef void (*qt_vec_dot_fn)(int n, float *s, const void *x, const void *y);
/* s[c*ldo + r] = dot(x + r*x_stride, y + c*y_stride) for r < nr, c < nc
 * (nr, nc >= 1), each bit-identical to the type's vec_dot: many rows times
 * many columns with each block unpacked once (batched decoding). */
typedef void (*qt_vec_dot_tile_fn)(int n, float *s, size_t ldo, const void *x, size_t x_stride, int nr,
                                   const void *y, size_t y_stride, int nc);

typedef struct qt_traits {
    const char *name;        /* "q4_0", as GGUF tools spell it; NULL: no such id */
    int64_t block_size;      /* elements per block */
    size_t type_size;        /* bytes per block */
    qt_to_float_fn to_float;     /* NULL: cannot dequantize yet */
    qt_from_float_fn from_float; /* NULL: cannot quantize yet */
    qt_vec_dot_fn vec_dot;       /* NULL: no dot product yet */
    qt_type vec_dot_type;        /* activation type vec_dot expects for y */
    /* Activation types only: how matmul quantizes activations (rounding as
     * llama.cpp's x86 kernels do); NULL: use from_float. */
    qt_from_float_fn quantize_act;
    /* Weight types: vec_dot over a tile of rows and columns, the same
     * values; NULL: loop over vec_dot (the ISA set has none). */
    qt_vec_dot_tile_fn vec_dot_tile;
    /* One token's matmul over weights in 2 MB pages reads faster one row
     * at a time through vec_dot than through vec_dot_tile's rows in
     * parallel (the same bits): qlm bench --kernels, avx512-vnni, 2
     * threads, GB/s: Q8_0 33.1 against 28.1, Q5_0 24.5 / 22.2, Q4_1
     * 26.1 / 25.1; in tl-q8_0, tg128 27.7-27.9 against 25.6-26.0 t/s.
     * Over 4 KB pages the tile's several streams are faster (Q8_0 decode
     * 20% slower row by row), so the caller knows which (gl_tensor.huge).
     * Short rows stay on the tile: a call and horizontal sum per row cost
     * more than the stream saves (SmolLM2's 360-byte Q4_1 rows: 270 t/s
     * row by row against 332-344 through the tile).  On the Xeon the
     * K-quants' tiles stay faster either way; on Zen 5 (AMD, avx512-vnni)
     * Q6_K's 1680-byte rows of a 2048-wide matrix read faster one at a
     * time (tl-q6_k tg128 1.33x, 1.10-1.63x over 6 alternated rounds).
     * Rows of at least this many bytes go one at a time; 0: never. */
    uint32_t one_row_min_bytes;
} qt_traits;

/* Row for a type id, or NULL if the id is outside the table or unused.
 * Takes a raw integer because ids come straight from untrusted files. */
const qt_traits *qt_get(uint32_t type);

/* Bytes for n elements of type t; n must be a multiple of the block size
 * (callers validate that first). Returns 0 on overflow. */
size_t qt_row_size(qt_type t, int64_t n);

#endif
