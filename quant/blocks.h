/* blocks.h - the packed block layouts of the quant formats.
 *
 * These structs are the on-disk GGUF layouts (ggml-common.h), read in place
 * from a memory-mapped file, so every size is asserted: a padding byte would
 * silently shift every later block.  Halves are stored as raw uint16_t bits
 * (convert with quant/fp16.h); multi-byte fields are little-endian on disk,
 * and qlm only targets little-endian hosts.
 *
 * Element order within a block: the legacy 4- and 5-bit formats put element
 * j in the low nibble of qs[j] and element j + 16 in the high nibble; the
 * 5th bit of element j is bit j of qh (read as a little-endian uint32). */
#ifndef QLM_QT_BLOCKS_H
#define QLM_QT_BLOCKS_H

#include <stdint.h>

#define QT_QK4_0 32
#define QT_QK4_1 32
#define QT_QK5_0 32
#define QT_QK5_1 32
#define QT_QK8_0 32
#define QT_QK8_1 32
#define QT_QK_K 256
#define QT_K_SCALE_SIZE 12

/* x = d * (q - 8) */
typedef struct {
    uint16_t d;
    uint8_t qs[QT_QK4_0 / 2];
} qt_block_q4_0;
_Static_assert(sizeof(qt_block_q4_0) == 2 + QT_QK4_0 / 2, "q4_0 block size");

/* x = d * q + m */
typedef struct {
    uint16_t d;
    uint16_t m;
    uint8_t qs[QT_QK4_1 / 2];
} qt_block_q4_1;
_Static_assert(sizeof(qt_block_q4_1) == 4 + QT_QK4_1 / 2, "q4_1 block size");

/* x = d * (q - 16); qh is bytes, not a uint32, so the block stays 2-aligned
 * and 22 bytes long. */
typedef struct {
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[QT_QK5_0 / 2];
} qt_block_q5_0;
_Static_assert(sizeof(qt_block_q5_0) == 2 + 4 + QT_QK5_0 / 2, "q5_0 block size");

/* x = d * q + m */
typedef struct {
    uint16_t d;
    uint16_t m;
    uint8_t qh[4];
    uint8_t qs[QT_QK5_1 / 2];
} qt_block_q5_1;
_Static_assert(sizeof(qt_block_q5_1) == 4 + 4 + QT_QK5_1 / 2, "q5_1 block size");

/* x = d * q */
typedef struct {
    uint16_t d;
    int8_t qs[QT_QK8_0];
} qt_block_q8_0;
_Static_assert(sizeof(qt_block_q8_0) == 2 + QT_QK8_0, "q8_0 block size");

/* x = d * q; s = d * sum(q) lets Q4_1/Q5_1 dots add their offset m without
 * summing the activations again.  36 bytes as in ggml; gguf-py's size table
 * says 40, a leftover from when d and s were floats. */
typedef struct {
    uint16_t d;
    uint16_t s;
    int8_t qs[QT_QK8_1];
} qt_block_q8_1;
_Static_assert(sizeof(qt_block_q8_1) == 4 + QT_QK8_1, "q8_1 block size");

/* IQ4_NL: 32 4-bit indices into a fixed non-linear table (qt_iq4nl_values),
 * low nibbles elements 0-15, high nibbles 16-31. */
#define QT_QK4_NL 32
typedef struct {
    uint16_t d;
    uint8_t qs[QT_QK4_NL / 2];
} qt_block_iq4_nl;
_Static_assert(sizeof(qt_block_iq4_nl) == 18, "iq4_nl block size");

/* K-quants: 256-element super-blocks of 16 or 32 sub-blocks. */

typedef struct {
    uint8_t scales[QT_QK_K / 16]; /* 4-bit scale | 4-bit min per 16 */
    uint8_t qs[QT_QK_K / 4];
    uint16_t d;
    uint16_t dmin;
} qt_block_q2_K;
_Static_assert(sizeof(qt_block_q2_K) == 84, "q2_K block size");

typedef struct {
    uint8_t hmask[QT_QK_K / 8];
    uint8_t qs[QT_QK_K / 4];
    uint8_t scales[12]; /* 16 6-bit scales */
    uint16_t d;
} qt_block_q3_K;
_Static_assert(sizeof(qt_block_q3_K) == 110, "q3_K block size");

typedef struct {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[QT_K_SCALE_SIZE]; /* 8 6-bit scales and mins */
    uint8_t qs[QT_QK_K / 2];
} qt_block_q4_K;
_Static_assert(sizeof(qt_block_q4_K) == 144, "q4_K block size");

typedef struct {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[QT_K_SCALE_SIZE];
    uint8_t qh[QT_QK_K / 8];
    uint8_t qs[QT_QK_K / 2];
} qt_block_q5_K;
_Static_assert(sizeof(qt_block_q5_K) == 176, "q5_K block size");

typedef struct {
    uint8_t ql[QT_QK_K / 2];
    uint8_t qh[QT_QK_K / 4];
    int8_t scales[QT_QK_K / 16];
    uint16_t d;
} qt_block_q6_K;
_Static_assert(sizeof(qt_block_q6_K) == 210, "q6_K block size");

/* The activation type of the K-quant dots: a float scale and per-16 sums. */
typedef struct {
    float d;
    int8_t qs[QT_QK_K];
    int16_t bsums[QT_QK_K / 16];
} qt_block_q8_K;
_Static_assert(sizeof(qt_block_q8_K) == 292, "q8_K block size");

#endif
