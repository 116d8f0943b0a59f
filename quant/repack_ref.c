/* repack_ref.c - reference for llama.cpp's repacked matmul orders (see
 * repack.h), and the choice of set for this CPU. */
#include "repack.h"

#include <math.h>

#include "blocks.h"
#include "cpu.h"
#include "fp16.h"

bool qt_repack_applies(qt_type type, int64_t rows)
{
    /* ggml_repack_get_optimal_repack_type, x86 with AVX2: Q4_0 -> q4_0_8x8.
     * (Q4_K -> q4_K_8x8 and IQ4_NL -> iq4_nl_8x8 likewise, Q2_K with
     * AVX-512: not implemented here yet, so they keep vec_dot's order.) */
    return type == QT_Q4_0 && rows > 0 && rows % QT_RP_ROWS == 0;
}

/* Exact integer dot product of one Q4_0 block with one Q8_0 block. */
static int32_t isum_q4_0(const qt_block_q4_0 *x, const qt_block_q8_0 *y)
{
    int32_t s = 0;
    for (int j = 0; j < QT_QK4_0 / 2; j++) {
        s += ((x->qs[j] & 0x0f) - 8) * (int32_t)y->qs[j];
        s += ((x->qs[j] >> 4) - 8) * (int32_t)y->qs[j + QT_QK4_0 / 2];
    }
    return s;
}

/* One output element of ggml_gemv/gemm_q4_0_8x8_q8_0. */
static float dot_q4_0_lane(int n, const qt_block_q4_0 *x, const qt_block_q8_0 *y)
{
    float acc = 0.0f;
    for (int b = 0; b < n / QT_QK4_0; b++) {
        const float d = qt_f16_to_f32(x[b].d) * qt_f16_to_f32(y[b].d);
        acc = fmaf((float)isum_q4_0(&x[b], &y[b]), d, acc);
    }
    return acc;
}

static void ref_gemv_q4_0(int n, float *s, const void *w, size_t w_stride, const void *y)
{
    for (int r = 0; r < QT_RP_ROWS; r++)
        s[r] = dot_q4_0_lane(n, (const void *)((const uint8_t *)w + r * w_stride), y);
}

static void ref_gemm_q4_0(int n, float *s, size_t ldo, const void *w, size_t w_stride,
                          const void *y, size_t y_stride)
{
    for (int c = 0; c < QT_RP_COLS; c++)
        ref_gemv_q4_0(n, s + c * ldo, w, w_stride, (const uint8_t *)y + c * y_stride);
}

static const qt_repack_ops ref_ops = {
    .name = "scalar",
    .gemv = {[QT_Q4_0] = ref_gemv_q4_0},
    .gemm = {[QT_Q4_0] = ref_gemm_q4_0},
};

const qt_repack_ops *qt_repack_ref(void) { return &ref_ops; }

const qt_repack_ops *qt_repack(void)
{
#if defined(__x86_64__)
    if (qt_isa_active() != QT_ISA_SCALAR) return &qt_repack_avx2;
#endif
    return &ref_ops;
}
