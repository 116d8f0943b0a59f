/* ref_iq4.c - IQ4_NL reference: dequantization and the two float orders
 * llama.cpp's x86 build gives its dot product with Q8_0.
 *
 * ggml_vec_dot_iq4_nl_q8_0 (one activation column): pairs of blocks go to
 * two 8-lane accumulators, even blocks to the first, odd to the second,
 * acc = fma(dy·dx, lanes, acc) (lane k: elements 4k..4k+3 of the block),
 * then the 8-lane sum of their lane-wise sum; an odd last block is added
 * as sumf = fma(dy·dx, isum, sumf) (its compiler fuses that).
 * tinyBLAS (llamafile_sgemm, two or more columns, weights not repacked):
 * one 8-lane accumulator over all blocks, then the 8-lane sum. */
#include <math.h>
#include <stdint.h>

#include "blocks.h"
#include "fp16.h"
#include "ref.h"

const int8_t qt_iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

void qt_to_float_iq4_nl(const void *src, float *dst, int64_t n)
{
    const qt_block_iq4_nl *x = src;
    for (int64_t i = 0; i < n / QT_QK4_NL; i++) {
        const float d = qt_f16_to_f32(x[i].d);
        for (int j = 0; j < QT_QK4_NL / 2; j++) {
            dst[i * QT_QK4_NL + j] = d * qt_iq4nl_values[x[i].qs[j] & 0xf];
            dst[i * QT_QK4_NL + j + 16] = d * qt_iq4nl_values[x[i].qs[j] >> 4];
        }
    }
}

/* Lane k = Σ of elements 4k..4k+3 of one block's products. */
static void lanes_iq4_nl(int32_t lane[8], const qt_block_iq4_nl *x, const qt_block_q8_0 *y)
{
    for (int k = 0; k < 8; k++) lane[k] = 0;
    for (int j = 0; j < QT_QK4_NL / 2; j++) {
        lane[j / 4] += qt_iq4nl_values[x->qs[j] & 0xf] * (int32_t)y->qs[j];
        lane[(j + 16) / 4] += qt_iq4nl_values[x->qs[j] >> 4] * (int32_t)y->qs[j + 16];
    }
}

void qt_vec_dot_iq4_nl_q8_0(int n, float *s, const void *vx, const void *vy)
{
    const qt_block_iq4_nl *x = vx;
    const qt_block_q8_0 *y = vy;
    const int nb = n / QT_QK4_NL;
    float acc[2][8] = {{0}};
    int ib = 0;
    for (; ib + 1 < nb; ib += 2)
        for (int h = 0; h < 2; h++) {
            int32_t lane[8];
            lanes_iq4_nl(lane, &x[ib + h], &y[ib + h]);
            const float d = qt_f16_to_f32(y[ib + h].d) * qt_f16_to_f32(x[ib + h].d);
            for (int k = 0; k < 8; k++) acc[h][k] = fmaf(d, (float)lane[k], acc[h][k]);
        }
    float sum[8];
    for (int k = 0; k < 8; k++) sum[k] = acc[0][k] + acc[1][k];
    float sumf = qt_hsum8(sum);
    for (; ib < nb; ib++) {
        int32_t lane[8], isum = 0;
        lanes_iq4_nl(lane, &x[ib], &y[ib]);
        for (int k = 0; k < 8; k++) isum += lane[k];
        sumf = fmaf(qt_f16_to_f32(y[ib].d) * qt_f16_to_f32(x[ib].d), (float)isum, sumf);
    }
    *s = sumf;
}

void qt_tinyblas_dot_iq4_nl_q8_0(int n, float *s, const void *vx, const void *vy)
{
    const qt_block_iq4_nl *x = vx;
    const qt_block_q8_0 *y = vy;
    float acc[8] = {0};
    for (int ib = 0; ib < n / QT_QK4_NL; ib++) {
        int32_t lane[8];
        lanes_iq4_nl(lane, &x[ib], &y[ib]);
        const float d = qt_f16_to_f32(x[ib].d) * qt_f16_to_f32(y[ib].d);
        for (int k = 0; k < 8; k++) acc[k] = fmaf(d, (float)lane[k], acc[k]);
    }
    *s = qt_hsum8(acc);
}

/* ggml's best_index_int8: the table entry nearest x (the lower on ties). */
static int best_index(float x)
{
    const int8_t *v = qt_iq4nl_values;
    if (x <= v[0]) return 0;
    if (x >= v[15]) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (x < v[mid]) hi = mid;
        else lo = mid;
    }
    return x - v[hi - 1] < v[hi] - x ? hi - 1 : hi;
}

/* Σ w·q·x and Σ w·q² with w = x² for the indices x·id picks. */
static void iq4_sums(const float *x, float id, float *sumqx, float *sumq2, uint8_t *L)
{
    float sx = 0, s2 = 0;
    for (int j = 0; j < QT_QK4_NL; j++) {
        const int l = best_index(id * x[j]);
        if (L) L[j] = (uint8_t)l;
        const float q = qt_iq4nl_values[l], w = x[j] * x[j];
        sx += w * q * x[j];
        s2 += w * q * q;
    }
    *sumqx = sx, *sumq2 = s2;
}

/* ggml's quantize_iq4_nl without an importance matrix (what llama-quantize
 * does without --imatrix): per block, the scale from the largest magnitude,
 * refined by a least-squares fit over 15 trial scales; plain float order
 * (ggml-base is built without FMA, as this file is). */
void qt_from_float_iq4_nl(const float *src, void *dst, int64_t n)
{
    qt_block_iq4_nl *y = dst;
    for (int64_t i = 0; i < n / QT_QK4_NL; i++) {
        const float *x = src + i * QT_QK4_NL;
        const float max = qt_signed_absmax(x, QT_QK4_NL);
        float d = 0;
        if (fabsf(max) >= 1e-15f) {
            float sumqx, sumq2;
            iq4_sums(x, 1 / (-max / qt_iq4nl_values[0]), &sumqx, &sumq2, NULL);
            d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
            float best = d * sumqx;
            for (int itry = -7; itry <= 7; itry++) {
                iq4_sums(x, (itry + qt_iq4nl_values[0]) / max, &sumqx, &sumq2, NULL);
                if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                    d = sumqx / sumq2;
                    best = d * sumqx;
                }
            }
        }
        y[i].d = qt_f32_to_f16(d);
        uint8_t L[QT_QK4_NL];
        const float id = d ? 1 / d : 0;
        for (int j = 0; j < QT_QK4_NL; j++) L[j] = (uint8_t)best_index(id * x[j]);
        for (int j = 0; j < QT_QK4_NL / 2; j++) y[i].qs[j] = (uint8_t)(L[j] | L[j + 16] << 4);
    }
}
