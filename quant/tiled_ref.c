/* tiled_ref.c - llama.cpp's tiled K-quant order (see tiled.h), scalar. */
#include "tiled.h"

#include <math.h>

#include "blocks.h"
#include "cpu.h"
#include "fp16.h"
#include "ref.h"
#include "repack.h"

bool qt_tiled_applies(qt_type type, int64_t rows, int n_cols)
{
    if (n_cols < QT_TILED_MIN_COLS || qt_repack_applies(type, rows)) return false;
    return type == QT_Q2_K || type == QT_Q3_K || type == QT_Q4_K || type == QT_Q5_K || type == QT_Q6_K;
}

typedef qt_tiled_block kblock;

static void k_scale_min(int j, const uint8_t *q, int *sc, int *m)
{
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

/* Scales, mins, bias and d of each type: what qt_tiled_unpack_scales
 * fills; the quants are the *_quants functions. */
static void scales_q2_K(const qt_block_q2_K *x, kblock *k)
{
    for (int j = 0; j < 16; j++) {
        k->sc[j] = x->scales[j] & 0xf;
        k->m[j] = x->scales[j] >> 4;
    }
    k->has_min = true;
    k->bias = 0;
    k->d = qt_f16_to_f32(x->d);
    k->dmin = qt_f16_to_f32(x->dmin);
}

static void quants_q2_K(const qt_block_q2_K *x, kblock *k)
{
    for (int e = 0; e < QT_QK_K; e++) k->q[e] = (x->qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}

static void scales_q3_K(const qt_block_q3_K *x, kblock *k)
{
    /* 16 6-bit scales: low nibbles in bytes 0-7, high 2 bits in bytes 8-11 */
    for (int j = 0; j < 16; j++) {
        const int low = j < 8 ? x->scales[j] & 0xf : x->scales[j - 8] >> 4;
        const int high = (x->scales[8 + j % 4] >> (2 * (j / 4))) & 3;
        k->sc[j] = (low | high << 4) - 32;
    }
    k->has_min = false;
    k->bias = 4;
    k->d = qt_f16_to_f32(x->d);
}

static void quants_q3_K(const qt_block_q3_K *x, kblock *k)
{
    for (int e = 0; e < QT_QK_K; e++) {
        const int lo = (x->qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
        const int hi = (x->hmask[e % 32] >> (e / 32)) & 1;
        k->q[e] = (uint8_t)(lo + (hi ? 4 : 0));
    }
}

/* Q4_K and Q5_K share the scale layout: 8 6-bit scales and mins, each
 * for 32 elements (two of the order's 16-element groups). */
static void scales_q45_K(const uint8_t *scales, uint16_t d, uint16_t dmin, kblock *k)
{
    for (int j = 0; j < 8; j++) {
        int sc, m;
        k_scale_min(j, scales, &sc, &m);
        k->sc[2 * j] = k->sc[2 * j + 1] = sc;
        k->m[2 * j] = k->m[2 * j + 1] = m;
    }
    k->has_min = true;
    k->bias = 0;
    k->d = qt_f16_to_f32(d);
    k->dmin = qt_f16_to_f32(dmin);
}

static void quants_q4_K(const qt_block_q4_K *x, kblock *k)
{
    for (int e = 0; e < QT_QK_K; e++) k->q[e] = (x->qs[32 * (e / 64) + e % 32] >> (4 * ((e / 32) % 2))) & 0xf;
}

static void quants_q5_K(const qt_block_q5_K *x, kblock *k)
{
    for (int e = 0; e < QT_QK_K; e++)
        k->q[e] = ((x->qs[32 * (e / 64) + e % 32] >> (4 * ((e / 32) % 2))) & 0xf) |
                  (((x->qh[e % 32] >> (e / 32)) & 1) << 4);
}

static void scales_q6_K(const qt_block_q6_K *x, kblock *k)
{
    for (int j = 0; j < 16; j++) k->sc[j] = x->scales[j];
    k->has_min = false;
    k->bias = 32;
    k->d = qt_f16_to_f32(x->d);
}

static void quants_q6_K(const qt_block_q6_K *x, kblock *k)
{
    for (int e = 0; e < QT_QK_K; e++) {
        const int h = e / 128, l = e % 32, part = (e % 128) / 32; /* 0..3 */
        const uint8_t ql = x->ql[64 * h + l + 32 * (part & 1)];
        const int low = part < 2 ? ql & 0xf : ql >> 4;
        const int high = (x->qh[32 * h + l] >> (2 * part)) & 3;
        k->q[e] = (uint8_t)(low | high << 4);
    }
}

size_t qt_tiled_unpack_scales(qt_type type, const void *vx, qt_tiled_block *k)
{
    switch (type) {
    case QT_Q2_K: scales_q2_K(vx, k); return sizeof(qt_block_q2_K);
    case QT_Q3_K: scales_q3_K(vx, k); return sizeof(qt_block_q3_K);
    case QT_Q4_K: {
        const qt_block_q4_K *x = vx;
        scales_q45_K(x->scales, x->d, x->dmin, k);
        return sizeof(qt_block_q4_K);
    }
    case QT_Q5_K: {
        const qt_block_q5_K *x = vx;
        scales_q45_K(x->scales, x->d, x->dmin, k);
        return sizeof(qt_block_q5_K);
    }
    case QT_Q6_K: scales_q6_K(vx, k); return sizeof(qt_block_q6_K);
    default: return 0;
    }
}

size_t qt_tiled_unpack(qt_type type, const void *vx, qt_tiled_block *k)
{
    const size_t size = qt_tiled_unpack_scales(type, vx, k);
    switch (type) {
    case QT_Q2_K: quants_q2_K(vx, k); break;
    case QT_Q3_K: quants_q3_K(vx, k); break;
    case QT_Q4_K: quants_q4_K(vx, k); break;
    case QT_Q5_K: quants_q5_K(vx, k); break;
    case QT_Q6_K: quants_q6_K(vx, k); break;
    default: break;
    }
    return size;
}

float qt_tiled_dot(qt_type type, int n, const void *vx, const void *vy)
{
    const uint8_t *x = vx;
    const qt_block_q8_K *y = vy;
    float acc = 0.0f;
    for (int b = 0; b < n / QT_QK_K; b++) {
        kblock k;
        const size_t size = qt_tiled_unpack(type, x, &k);
        if (!size) return NAN;
        x += size;
        int32_t isum = 0, imin = 0;
        for (int e = 0; e < QT_QK_K; e++) isum += k.sc[e / 16] * (k.q[e] - k.bias) * (int32_t)y[b].qs[e];
        float r = (float)isum * k.d;
        if (k.has_min) {
            for (int j = 0; j < QT_QK_K / 16; j++) imin += k.m[j] * (int32_t)y[b].bsums[j];
            r = fmaf(-k.dmin, (float)imin, r);
        }
        acc = fmaf(r, y[b].d, acc);
    }
    return acc;
}

static void ref_tiled_row(qt_type type, int n, const void *x, const void *y, size_t y_stride, int ncols, float *out,
                          size_t out_stride)
{
    for (int c = 0; c < ncols; c++) out[c * out_stride] = qt_tiled_dot(type, n, x, (const uint8_t *)y + c * y_stride);
}

qt_tiled_row_fn qt_tiled_row_ref(void) { return ref_tiled_row; }

qt_tiled_row_fn qt_tiled_row(void)
{
#if defined(__x86_64__)
    if (qt_isa_active() != QT_ISA_SCALAR) return qt_avx2_tiled_row;
#endif
    return ref_tiled_row;
}

qt_tiled_rows8_fn qt_tiled_rows8(void)
{
#if defined(__x86_64__)
    if (qt_isa_active() != QT_ISA_SCALAR) return qt_avx2_tiled_rows8;
#endif
    return NULL;
}

qt_tiled_rows8_fn qt_tiled_rows16(void)
{
#if defined(__x86_64__)
    if (qt_isa_active() != QT_ISA_SCALAR) return qt_avx2_tiled_rows16;
#endif
    return NULL;
}

qt_vec_dot_fn qt_tinyblas_dot(qt_type type, int64_t rows, int n_cols)
{
    if (type != QT_IQ4_NL || n_cols < 2 || qt_repack_applies(type, rows)) return NULL;
    return qt_tinyblas_dot_iq4_nl_q8_0;
}
