/* x86_avx512_repack.c - the wide repack kernels (repack.h) for Q4_0 and
 * IQ4_NL with AVX-512, and the same with AVX512-VNNI.
 *
 * Compiled with the AVX-512 flags; helpers in x86_avx512_wide.h.
 *
 * Why this shape: the 8-row AVX2 kernels spend most of their time in
 * horizontal sums, because every row's block sum lands spread over eight
 * lanes.  Here each of 16 rows owns one int32 lane: a gather of one dword
 * per row gives 4 quant bytes of each row in its lane, and vpdpbusd against
 * 4 activation bytes broadcast from memory adds those 4 products into the
 * row's own lane.  Eight such steps are one 32-element block, exact, with
 * the block's offset correction preloaded in the accumulator; then the
 * same one multiply and one fma per block and output as the reference,
 * in block order, so the bits equal quant/repack_ref.c's.  The gathered
 * weights of a block serve up to 16 columns before the next block, so
 * the weights are read once per 16 tokens; gemv is the 1-column case.
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
#include <string.h>

#include "blocks.h"
#include "ref.h"
#include "repack.h"
#include "x86_avx512_wide.h"

/* Columns one kernel pass accumulates: 16 float accumulators plus 8 quant
 * registers and temporaries fit the 32 zmm registers. */
#define MAX_COLS 16

/* What a column contributes to every row's block b (repack.h, prep). */
typedef struct col_block {
    float d;     /* the activation block's scale, widened */
    int32_t off; /* -(offset) * sum(y): the integer correction */
} col_block;

INLINE float f16(uint16_t h)
{
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}

/* ---- per-column side data ----------------------------------------------- */

static size_t aux_bytes_q8_0(int n)
{
    return (size_t)(n / QT_QK8_0) * sizeof(col_block);
}

/* `off_scale` * sum(y) per block, negated, and the widened scale. */
INLINE void prep_q8_0(int n, void *aux, const void *vy, int off_scale)
{
    const qt_block_q8_0 *y = vy;
    col_block *a = aux;
    const __m256i bias = _mm256_set1_epi8((char)0x80);
    for (int b = 0; b < n / QT_QK8_0; b++) {
        /* y ^ 0x80 is y + 128 unsigned, which vpsadbw sums exactly */
        const __m256i s = _mm256_sad_epu8(_mm256_xor_si256(_mm256_loadu_si256((const __m256i *)y[b].qs), bias),
                                          _mm256_setzero_si256());
        const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
        const int sum = (int)(_mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1)) - 128 * QT_QK8_0;
        a[b].d = f16(y[b].d);
        a[b].off = -off_scale * sum;
    }
}

static void prep_q4_0(int n, void *aux, const void *y) { prep_q8_0(n, aux, y, 8); }
static void prep_iq4_nl(int n, void *aux, const void *y) { prep_q8_0(n, aux, y, 128); }

/* ---- the kernel ------------------------------------------------------------ */

/* Q4_0 and IQ4_NL blocks share one layout: f16 d, then 16 bytes holding
 * elements j (low nibble) and j + 16 (high nibble). */
_Static_assert(sizeof(qt_block_q4_0) == 18 && sizeof(qt_block_iq4_nl) == 18, "block layout");

/* `nc` columns (a constant after inlining) of 16 rows. */
INLINE void cols_4bit(int n, int nc, float *s, size_t ldo, const uint8_t *w, __m512i rows,
                      const uint8_t *y, size_t y_stride, const uint8_t *aux, size_t aux_stride,
                      const int vnni, const int iq4)
{
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    /* IQ4_NL's table as v + 128 (v ^ 0x80), in every 128-bit lane */
    __m128i t = _mm_loadu_si128((const __m128i *)qt_iq4nl_values);
    const __m512i table = _mm512_broadcast_i32x4(_mm_xor_si128(t, _mm_set1_epi8((char)0x80)));
    /* fully unrolled, so that acc[] and u[] live in registers */
    __m512 acc[MAX_COLS];
#pragma GCC unroll 16
    for (int c = 0; c < nc; c++) acc[c] = _mm512_setzero_ps();
    for (int b = 0; b < n / QT_QK4_0; b++) {
        const uint8_t *blk = w + (size_t)b * sizeof(qt_block_q4_0);
        __m512i u[8]; /* u[k], u[k + 4]: elements 4k..4k+3 and 16+4k..16+4k+3 */
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            const __m512i g = gather_rows(rows, blk + 2 + 4 * k);
            u[k] = _mm512_and_si512(g, m4);
            u[k + 4] = _mm512_and_si512(_mm512_srli_epi16(g, 4), m4);
            if (iq4) {
                u[k] = _mm512_shuffle_epi8(table, u[k]);
                u[k + 4] = _mm512_shuffle_epi8(table, u[k + 4]);
            }
        }
        /* the dword at the block start has d in its low half */
        const __m512 dw = halves(gather_rows(rows, blk), 0);
#pragma GCC unroll 16
        for (int c = 0; c < nc; c++) {
            const qt_block_q8_0 *yb = (const qt_block_q8_0 *)(y + c * y_stride) + b;
            const col_block *ab = (const col_block *)(aux + c * aux_stride) + b;
            __m512i is = _mm512_set1_epi32(ab->off);
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) is = dot4_bcast(is, u[k], yb->qs + 4 * (k & 3) + 16 * (k >> 2), vnni);
            const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(ab->d));
            acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is), d, acc[c]);
        }
    }
#pragma GCC unroll 16
    for (int c = 0; c < nc; c++) _mm512_storeu_ps(s + c * ldo, acc[c]);
}

/* All ncols columns, MAX_COLS at a time then in smaller constant widths;
 * Q4_0's and IQ4_NL's gemm order is their gemv order, so `gemm` is moot. */
INLINE void run_4bit(int n, int ncols, float *s, size_t ldo, const void *w, size_t w_stride, const void *y,
                     size_t y_stride, const void *aux, size_t aux_stride, const int vnni, const int iq4)
{
    const __m512i rows = row_offsets(w_stride);
    const uint8_t *yc = y, *ac = aux;
    int c = 0;
#define COLS(nc)                                                                                   \
    for (; ncols - c >= (nc); c += (nc))                                                           \
        cols_4bit(n, (nc), s + (size_t)c * ldo, ldo, w, rows, yc + c * y_stride, y_stride,         \
                  ac + c * aux_stride, aux_stride, vnni, iq4);
    COLS(MAX_COLS)
    COLS(8)
    COLS(4)
    COLS(2)
    COLS(1)
#undef COLS
}

static void run_q4_0(int n, int ncols, bool gemm, float *s, size_t ldo, const void *w, size_t w_stride,
                     const void *y, size_t y_stride, const void *aux, size_t aux_stride)
{
    (void)gemm;
    run_4bit(n, ncols, s, ldo, w, w_stride, y, y_stride, aux, aux_stride, 0, 0);
}

static void run_q4_0_vnni(int n, int ncols, bool gemm, float *s, size_t ldo, const void *w, size_t w_stride,
                          const void *y, size_t y_stride, const void *aux, size_t aux_stride)
{
    (void)gemm;
    run_4bit(n, ncols, s, ldo, w, w_stride, y, y_stride, aux, aux_stride, 1, 0);
}

static void run_iq4_nl_vnni(int n, int ncols, bool gemm, float *s, size_t ldo, const void *w, size_t w_stride,
                            const void *y, size_t y_stride, const void *aux, size_t aux_stride)
{
    (void)gemm;
    run_4bit(n, ncols, s, ldo, w, w_stride, y, y_stride, aux, aux_stride, 1, 1);
}

static const qt_rp_wide wide_q4_0 = {aux_bytes_q8_0, prep_q4_0, run_q4_0};
static const qt_rp_wide wide_q4_0_vnni = {aux_bytes_q8_0, prep_q4_0, run_q4_0_vnni};
static const qt_rp_wide wide_iq4_nl_vnni = {aux_bytes_q8_0, prep_iq4_nl, run_iq4_nl_vnni};

const qt_rp_wide *const qt_rp_wide_avx512[QT_COUNT] = {
    [QT_Q4_0] = &wide_q4_0, [QT_Q4_K] = &qt_rp_wide_q4_K_avx512, [QT_Q2_K] = &qt_rp_wide_q2_K_avx512};
const qt_rp_wide *const qt_rp_wide_avx512_vnni[QT_COUNT] = {
    [QT_Q4_0] = &wide_q4_0_vnni, [QT_IQ4_NL] = &wide_iq4_nl_vnni, [QT_Q4_K] = &qt_rp_wide_q4_K_avx512_vnni,
    [QT_Q2_K] = &qt_rp_wide_q2_K_avx512_vnni};

#endif
