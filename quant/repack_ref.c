/* repack_ref.c - reference for llama.cpp's repacked matmul orders (see
 * repack.h), and the choice of set for this CPU. */
#include "repack.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "blocks.h"
#include "cpu.h"
#include "fp16.h"
#include "ref.h"

bool qt_repack_applies(qt_type type, int64_t rows)
{
    /* ggml_repack_get_optimal_repack_type on the reference build (x86 with
     * AVX-512): Q4_0 -> q4_0_8x8, Q4_K -> q4_K_8x8, IQ4_NL -> iq4_nl_8x8,
     * Q2_K -> q2_K_8x8 (the last only with AVX-512), all for ne[1] % 8 == 0.
     * (MXFP4 -> mxfp4_8x8 too; qlm does not run MXFP4.) */
    if (rows <= 0 || rows % QT_RP_ROWS) return false;
    /* Where AMX runs, Q4_K and Q2_K take llama.cpp's order without
     * repacking (its --no-repack: vec_dot one token at a time, the tiled
     * order for batches), because AMX makes that order 1.6-2x faster for
     * prompts and cannot give the repacked gemm's bits cheaply
     * (quant/tiles.h).  The greedy fixtures made that way are in
     * tests/data/greedy/ *-norepack. */
    if ((type == QT_Q4_K || type == QT_Q2_K) && qt_amx_active()) return false;
    return type == QT_Q4_0 || type == QT_Q4_K || type == QT_Q2_K || type == QT_IQ4_NL;
}

/* ---- Q4_0 x Q8_0: one fma per block ----------------------------------- */

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

/* ---- IQ4_NL x Q8_0: Q4_0's order with table values ---------------------- */

static float dot_iq4_nl_lane(int n, const qt_block_iq4_nl *x, const qt_block_q8_0 *y)
{
    float acc = 0.0f;
    for (int b = 0; b < n / QT_QK4_NL; b++) {
        int32_t s = 0;
        for (int j = 0; j < QT_QK4_NL / 2; j++) {
            s += qt_iq4nl_values[x[b].qs[j] & 0xf] * (int32_t)y[b].qs[j];
            s += qt_iq4nl_values[x[b].qs[j] >> 4] * (int32_t)y[b].qs[j + QT_QK4_NL / 2];
        }
        acc = fmaf((float)s, qt_f16_to_f32(x[b].d) * qt_f16_to_f32(y[b].d), acc);
    }
    return acc;
}

/* ---- K-quants x Q8_K: a scale chain and a min chain -------------------- */

/* Exact integer sums of one super-block, split into the groups the gemm
 * kernel converts to float one at a time: isum[g] = Σ sc·q·y and
 * imin[g] = Σ m·bsum over the sub-blocks of group g. */
typedef struct {
    int groups;
    void (*sums)(const void *x, const qt_block_q8_K *y, int32_t *isum, int32_t *imin);
    float (*d)(const void *x);
    float (*dmin)(const void *x);
    size_t block_bytes;
} k_layout;

/* The 6-bit scale and min of sub-block j of a Q4_K block. */
static void q4_K_scale_min(int j, const uint8_t *q, int *sc, int *m)
{
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

/* Q4_K: 4 groups of two 32-element sub-blocks.  The pair sums of y's bsums
 * are formed in int16 (vphaddw), so inconsistent bsums wrap as there. */
static void sums_q4_K(const void *vx, const qt_block_q8_K *y, int32_t *isum, int32_t *imin)
{
    const qt_block_q4_K *x = vx;
    for (int g = 0; g < 4; g++) {
        isum[g] = imin[g] = 0;
        for (int h = 0; h < 2; h++) {
            const int j = 2 * g + h;
            int sc, m;
            q4_K_scale_min(j, x->scales, &sc, &m);
            int32_t dot = 0;
            for (int e = 0; e < 32; e++)
                dot += ((x->qs[32 * g + e] >> (4 * h)) & 0xf) * (int32_t)y->qs[32 * j + e];
            isum[g] += sc * dot;
            imin[g] += m * (int16_t)(y->bsums[2 * j] + y->bsums[2 * j + 1]);
        }
    }
}

/* Q2_K: 2 groups of eight 16-element sub-blocks. */
static void sums_q2_K(const void *vx, const qt_block_q8_K *y, int32_t *isum, int32_t *imin)
{
    const qt_block_q2_K *x = vx;
    for (int g = 0; g < 2; g++) {
        isum[g] = imin[g] = 0;
        for (int j = 8 * g; j < 8 * g + 8; j++) {
            int32_t dot = 0;
            for (int e = 16 * j; e < 16 * j + 16; e++)
                dot += ((x->qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3) * (int32_t)y->qs[e];
            isum[g] += (x->scales[j] & 0xf) * dot;
            imin[g] += (x->scales[j] >> 4) * y->bsums[j];
        }
    }
}

static float d_q4_K(const void *x) { return qt_f16_to_f32(((const qt_block_q4_K *)x)->d); }
static float dmin_q4_K(const void *x) { return qt_f16_to_f32(((const qt_block_q4_K *)x)->dmin); }
static float d_q2_K(const void *x) { return qt_f16_to_f32(((const qt_block_q2_K *)x)->d); }
static float dmin_q2_K(const void *x) { return qt_f16_to_f32(((const qt_block_q2_K *)x)->dmin); }

static const k_layout layout_q4_K = {4, sums_q4_K, d_q4_K, dmin_q4_K, sizeof(qt_block_q4_K)};
static const k_layout layout_q2_K = {2, sums_q2_K, d_q2_K, dmin_q2_K, sizeof(qt_block_q2_K)};

/* One output element of ggml_gemv/gemm_q{4,2}_K_8x8_q8_K:
 *     acc  = fma((float)isum, d_w * d_y, acc)
 *     accm = fma((float)imin, dmin_w * d_y, accm)      result acc - accm
 * once per super-block in the gemv, once per group in the gemm. */
static float dot_k_lane(int n, const k_layout *L, const uint8_t *x, const qt_block_q8_K *y, bool gemm)
{
    float acc = 0.0f, accm = 0.0f;
    for (int b = 0; b < n / QT_QK_K; b++, x += L->block_bytes) {
        int32_t isum[4], imin[4];
        L->sums(x, &y[b], isum, imin);
        const float d = L->d(x) * y[b].d, dm = L->dmin(x) * y[b].d;
        if (gemm) {
            for (int g = 0; g < L->groups; g++) {
                acc = fmaf((float)isum[g], d, acc);
                accm = fmaf((float)imin[g], dm, accm);
            }
        } else {
            int32_t is = 0, im = 0;
            for (int g = 0; g < L->groups; g++) {
                is += isum[g];
                im += imin[g];
            }
            acc = fmaf((float)is, d, acc);
            accm = fmaf((float)im, dm, accm);
        }
    }
    return acc - accm;
}

/* ---- the gemv/gemm entry points ----------------------------------------- */

#define ROW(w, r, stride) ((const void *)((const uint8_t *)(w) + (size_t)(r) * (stride)))

static void ref_gemv_q4_0(int n, float *s, const void *w, size_t w_stride, const void *y)
{
    for (int r = 0; r < QT_RP_ROWS; r++) s[r] = dot_q4_0_lane(n, ROW(w, r, w_stride), y);
}

static void ref_gemv_q4_K(int n, float *s, const void *w, size_t w_stride, const void *y)
{
    for (int r = 0; r < QT_RP_ROWS; r++) s[r] = dot_k_lane(n, &layout_q4_K, ROW(w, r, w_stride), y, false);
}

static void ref_gemv_q2_K(int n, float *s, const void *w, size_t w_stride, const void *y)
{
    for (int r = 0; r < QT_RP_ROWS; r++) s[r] = dot_k_lane(n, &layout_q2_K, ROW(w, r, w_stride), y, false);
}

static void ref_gemv_iq4_nl(int n, float *s, const void *w, size_t w_stride, const void *y)
{
    for (int r = 0; r < QT_RP_ROWS; r++) s[r] = dot_iq4_nl_lane(n, ROW(w, r, w_stride), y);
}

static void ref_gemm_iq4_nl(int n, float *s, size_t ldo, const void *w, size_t w_stride,
                            const void *y, size_t y_stride)
{
    for (int c = 0; c < QT_RP_COLS; c++) ref_gemv_iq4_nl(n, s + c * ldo, w, w_stride, ROW(y, c, y_stride));
}

/* Q4_0's and IQ4_NL's gemm give every element gemv's order; the K-quants' do not. */
static void ref_gemm_q4_0(int n, float *s, size_t ldo, const void *w, size_t w_stride,
                          const void *y, size_t y_stride)
{
    for (int c = 0; c < QT_RP_COLS; c++) ref_gemv_q4_0(n, s + c * ldo, w, w_stride, ROW(y, c, y_stride));
}

static void ref_gemm_k(const k_layout *L, int n, float *s, size_t ldo, const void *w, size_t w_stride,
                       const void *y, size_t y_stride)
{
    for (int c = 0; c < QT_RP_COLS; c++)
        for (int r = 0; r < QT_RP_ROWS; r++)
            s[c * ldo + r] = dot_k_lane(n, L, ROW(w, r, w_stride), ROW(y, c, y_stride), true);
}

static void ref_gemm_q4_K(int n, float *s, size_t ldo, const void *w, size_t w_stride,
                          const void *y, size_t y_stride)
{
    ref_gemm_k(&layout_q4_K, n, s, ldo, w, w_stride, y, y_stride);
}

static void ref_gemm_q2_K(int n, float *s, size_t ldo, const void *w, size_t w_stride,
                          const void *y, size_t y_stride)
{
    ref_gemm_k(&layout_q2_K, n, s, ldo, w, w_stride, y, y_stride);
}

static const qt_repack_ops ref_ops = {
    .name = "scalar",
    .gemv = {[QT_Q4_0] = ref_gemv_q4_0, [QT_Q4_K] = ref_gemv_q4_K, [QT_Q2_K] = ref_gemv_q2_K,
             [QT_IQ4_NL] = ref_gemv_iq4_nl},
    .gemm = {[QT_Q4_0] = ref_gemm_q4_0, [QT_Q4_K] = ref_gemm_q4_K, [QT_Q2_K] = ref_gemm_q2_K,
             [QT_IQ4_NL] = ref_gemm_iq4_nl},
};

const qt_repack_ops *qt_repack_ref(void) { return &ref_ops; }

const qt_repack_ops *qt_repack(void)
{
#if defined(__x86_64__)
    if (qt_isa_active() != QT_ISA_SCALAR) return &qt_repack_avx2;
#endif
    return &ref_ops;
}

const qt_rp_wide *qt_repack_wide(qt_type type)
{
    if (type < 0 || type >= QT_COUNT) return NULL;
#if defined(__x86_64__)
    if (qt_isa_active() == QT_ISA_AVX512_VNNI) return qt_rp_wide_avx512_vnni[type];
    if (qt_isa_active() == QT_ISA_AVX512) return qt_rp_wide_avx512[type];
    if (qt_isa_active() == QT_ISA_AVX2 || qt_isa_active() == QT_ISA_AVX2_VNNI) return qt_rp_wide_avx2[type];
#endif
    return NULL;
}

size_t qt_rp_aux_q8_0(int n, int ncols) { return (size_t)ncols * (size_t)(n / QT_QK8_0) * sizeof(qt_rp_col_block); }

size_t qt_rp_aux_q4_K(int n, int ncols) { return (size_t)ncols * (size_t)(n / QT_QK_K) * 4 * sizeof(uint32_t); }

void qt_rp_prep_q4_K(int n, int col, int ncols, void *aux, const void *y)
{
    (void)ncols;
    const qt_block_q8_K *yb = y;
    uint32_t *pairs = (uint32_t *)((uint8_t *)aux + (size_t)col * qt_rp_aux_q4_K(n, 1));
    for (int b = 0; b < n / QT_QK_K; b++)
        for (int g = 0; g < 4; g++) {
            const int16_t b0 = (int16_t)(yb[b].bsums[4 * g] + yb[b].bsums[4 * g + 1]);
            const int16_t b1 = (int16_t)(yb[b].bsums[4 * g + 2] + yb[b].bsums[4 * g + 3]);
            pairs[4 * b + g] = (uint16_t)b0 | (uint32_t)(uint16_t)b1 << 16;
        }
}

size_t qt_rp_aux_none(int n, int ncols)
{
    (void)n, (void)ncols;
    return 0;
}

void qt_rp_prep_none(int n, int col, int ncols, void *aux, const void *y)
{
    (void)n, (void)col, (void)ncols, (void)aux, (void)y;
}

qt_x16_dot_fn qt_x16_dot(qt_type type)
{
#if defined(__x86_64__)
    if (type == QT_Q4_1) {
        switch (qt_isa_active()) {
        case QT_ISA_AVX2: return qt_avx2_x16_dot_q4_1;
        case QT_ISA_AVX2_VNNI: return qt_avx2_vnni_x16_dot_q4_1;
        case QT_ISA_AVX512: return qt_avx512_x16_dot_q4_1;
        case QT_ISA_AVX512_VNNI: return qt_avx512_vnni_x16_dot_q4_1;
        default: break;
        }
    }
    if (type == QT_Q5_1) {
        switch (qt_isa_active()) {
        case QT_ISA_AVX2: return qt_avx2_x16_dot_q5_1;
        case QT_ISA_AVX2_VNNI: return qt_avx2_vnni_x16_dot_q5_1;
        case QT_ISA_AVX512: return qt_avx512_x16_dot_q5_1;
        case QT_ISA_AVX512_VNNI: return qt_avx512_vnni_x16_dot_q5_1;
        default: break;
        }
    }
    if (type == QT_Q8_0 && qt_isa_active() == QT_ISA_AVX512_VNNI) return qt_avx512_vnni_x16_dot_q8_0;
    /* only where Q2_K is not repacked for AMX's sake (qt_repack_applies):
     * elsewhere its x16 layout serves the repacked orders */
    if (type == QT_Q2_K && qt_isa_active() == QT_ISA_AVX512_VNNI && qt_amx_active())
        return qt_avx512_vnni_x16_dot_q2_K;
    if (type == QT_Q3_K && qt_isa_active() == QT_ISA_AVX512_VNNI) return qt_avx512_vnni_x16_dot_q3_K;
    if (type == QT_Q5_0) {
        switch (qt_isa_active()) {
        case QT_ISA_AVX2: return qt_avx2_x16_dot_q5_0;
        case QT_ISA_AVX2_VNNI: return qt_avx2_vnni_x16_dot_q5_0;
        case QT_ISA_AVX512: return qt_avx512_x16_dot_q5_0;
        case QT_ISA_AVX512_VNNI: return qt_avx512_vnni_x16_dot_q5_0;
        default: break;
        }
    }
#endif
    (void)type;
    return NULL;
}

bool qt_x16_available(qt_type type)
{
    const qt_rp_wide *w = qt_repack_wide(type);
    return (w && w->run_x16) || qt_x16_dot(type);
}

_Static_assert(sizeof(qt_block_q4_0) == 18 && sizeof(qt_block_iq4_nl) == 18, "x16: one block layout");
_Static_assert(QT_X16_Q4_1_BLOCK == 8 * sizeof(qt_block_q4_1), "x16: Q4_1 halves take their rows' bytes");
_Static_assert(QT_X16_Q5_0_BLOCK == 8 * sizeof(qt_block_q5_0), "x16: Q5_0 halves take their rows' bytes");
_Static_assert(QT_X16_Q5_1_BLOCK == 8 * sizeof(qt_block_q5_1), "x16: Q5_1 halves take their rows' bytes");

/* The K-quants' x16 layout: a super-block of the 16 rows at a time. */
static bool x16_by_blocks(qt_type type) { return type == QT_Q4_K || type == QT_Q2_K || type == QT_Q3_K; }

/* Copies row r's block to (to_x16) or from its places in a K-quant
 * super-block of the x16 layout (repack.h). */
static void x16_k_block(qt_type type, int r, uint8_t *blk, uint8_t *grp, bool to_x16)
{
    enum { HEAD = 16 * QT_X16_ROWS };
    const size_t qs_at = type == QT_Q4_K ? HEAD : HEAD + 4 * QT_X16_ROWS, qs_len = type == QT_Q4_K ? 128 : 64;
#define X16_MOVE(at, off, len) (to_x16 ? memcpy(grp + (at), blk + (off), (len)) : memcpy(blk + (off), grp + (at), (len)))
    if (type == QT_Q3_K) { /* every part in chunks of dwords */
        const size_t at = 4 * (size_t)r;
        for (size_t i = 0; i < 16; i++) X16_MOVE(QT_X16_Q3_K_QS + 64 * i + at, offsetof(qt_block_q3_K, qs) + 4 * i, 4);
        for (size_t i = 0; i < 8; i++) X16_MOVE(QT_X16_Q3_K_HM + 64 * i + at, offsetof(qt_block_q3_K, hmask) + 4 * i, 4);
        for (size_t i = 0; i < 3; i++)
            X16_MOVE(QT_X16_Q3_K_SC + 64 * i + at, offsetof(qt_block_q3_K, scales) + 4 * i, 4);
        X16_MOVE(QT_X16_Q3_K_D + 2 * (size_t)r, offsetof(qt_block_q3_K, d), 2);
        return;
    }
    X16_MOVE(16 * (size_t)r, 0, 16);
    if (type == QT_Q2_K) X16_MOVE(HEAD + 4 * (size_t)r, 80, 4);
    for (size_t q = 0; q < qs_len; q += 4) X16_MOVE(qs_at + (q / 32 * 8 + q % 32 / 4) * 64 + 4 * (size_t)r, 16 + q, 4);
#undef X16_MOVE
}

/* The types whose x16 layout goes in halves of 8 rows (repack.h). */
static bool x16_by_halves(qt_type type) { return type == QT_Q4_1 || type == QT_Q5_0 || type == QT_Q5_1; }

/* Copies row r's block b (blk) to (to_x16) or from its places in a Q4_1,
 * Q5_0 or Q5_1 group of nb blocks (repack.h). */
static void x16_half_block(qt_type type, int r, int b, int nb, uint8_t *blk, uint8_t *grp, bool to_x16)
{
    const size_t bs = type == QT_Q4_1 ? QT_X16_Q4_1_BLOCK : type == QT_Q5_0 ? QT_X16_Q5_0_BLOCK : QT_X16_Q5_1_BLOCK;
    uint8_t *p = grp + ((size_t)(r / 8) * nb + b) * bs;
    const size_t at = 4 * (size_t)(r % 8);
#define X16_MOVE(at, src, len) (to_x16 ? memcpy(p + (at), (src), (len)) : memcpy((src), p + (at), (len)))
    if (type == QT_Q4_1) {
        qt_block_q4_1 *x = (qt_block_q4_1 *)blk;
        for (int k = 0; k < 4; k++) X16_MOVE(32 * k + at, x->qs + 4 * k, 4);
        X16_MOVE(128 + at / 2, &x->d, 2);
        X16_MOVE(144 + at / 2, &x->m, 2);
    } else if (type == QT_Q5_0) {
        qt_block_q5_0 *x = (qt_block_q5_0 *)blk;
        for (int k = 0; k < 4; k++) X16_MOVE(32 * k + at, x->qs + 4 * k, 4);
        X16_MOVE(128 + at, x->qh, 4);
        X16_MOVE(160 + at / 2, &x->d, 2);
    } else {
        qt_block_q5_1 *x = (qt_block_q5_1 *)blk;
        for (int k = 0; k < 4; k++) X16_MOVE(32 * k + at, x->qs + 4 * k, 4);
        X16_MOVE(128 + at, x->qh, 4);
        X16_MOVE(160 + at / 2, &x->d, 2);
        X16_MOVE(176 + at / 2, &x->m, 2);
    }
#undef X16_MOVE
}

/* Copies row r's Q8_0 block b (blk) to (to_x16) or from its places in a
 * group of nb blocks (repack.h). */
static void x16_q8_0_block(int r, int b, int nb, qt_block_q8_0 *blk, uint8_t *grp, bool to_x16)
{
    uint8_t *q = grp + qt_x16_q8_0_quants(b, nb) + 32 * (size_t)r, *d = grp + qt_x16_q8_0_scales(b) + 2 * (size_t)r;
    if (to_x16) {
        memcpy(q, blk->qs, sizeof blk->qs);
        memcpy(d, &blk->d, sizeof blk->d);
    } else {
        memcpy(blk->qs, q, sizeof blk->qs);
        memcpy(&blk->d, d, sizeof blk->d);
    }
}

void qt_x16_interleave(qt_type type, int n, const void *rows, size_t row_stride, void *dst)
{
    if (type == QT_Q8_0) {
        for (int r = 0; r < QT_X16_ROWS; r++)
            for (int b = 0; b < n / QT_QK8_0; b++)
                x16_q8_0_block(r, b, n / QT_QK8_0, (qt_block_q8_0 *)((uint8_t *)rows + (size_t)r * row_stride) + b, dst,
                               true);
        return;
    }
    if (x16_by_halves(type)) {
        const size_t bs = qt_get(type)->type_size;
        for (int r = 0; r < QT_X16_ROWS; r++)
            for (int b = 0; b < n / 32; b++)
                x16_half_block(type, r, b, n / 32, (uint8_t *)rows + (size_t)r * row_stride + b * bs, dst, true);
        return;
    }
    if (x16_by_blocks(type)) {
        const size_t bs = qt_get(type)->type_size;
        for (int r = 0; r < QT_X16_ROWS; r++)
            for (int b = 0; b < n / QT_QK_K; b++)
                x16_k_block(type, r, (uint8_t *)rows + (size_t)r * row_stride + b * bs,
                            (uint8_t *)dst + (size_t)b * QT_X16_ROWS * bs, true);
        return;
    }
    /* Q4_0 and IQ4_NL blocks are alike: f16 d, then 16 bytes */
    const int nb = n / QT_QK4_0;
    uint8_t *g = dst;
    for (int r = 0; r < QT_X16_ROWS; r++) {
        const qt_block_q4_0 *x = (const qt_block_q4_0 *)((const uint8_t *)rows + (size_t)r * row_stride);
        for (int b = 0; b < nb; b++) {
            memcpy(g + qt_x16_scales(b, nb) + 2 * r, &x[b].d, 2);
            for (int k = 0; k < 4; k++) memcpy(g + qt_x16_quants(b) + 64 * k + 4 * r, x[b].qs + 4 * k, 4);
        }
    }
}

void qt_x16_row(qt_type type, int n, const void *src, int r, void *row)
{
    if (type == QT_Q8_0) {
        for (int b = 0; b < n / QT_QK8_0; b++) x16_q8_0_block(r, b, n / QT_QK8_0, (qt_block_q8_0 *)row + b, (uint8_t *)src, false);
        return;
    }
    if (x16_by_halves(type)) {
        const size_t bs = qt_get(type)->type_size;
        for (int b = 0; b < n / 32; b++) x16_half_block(type, r, b, n / 32, (uint8_t *)row + b * bs, (uint8_t *)src, false);
        return;
    }
    if (x16_by_blocks(type)) {
        const size_t bs = qt_get(type)->type_size;
        for (int b = 0; b < n / QT_QK_K; b++)
            x16_k_block(type, r, (uint8_t *)row + b * bs, (uint8_t *)src + (size_t)b * QT_X16_ROWS * bs, false);
        return;
    }
    const int nb = n / QT_QK4_0;
    const uint8_t *g = src;
    qt_block_q4_0 *x = row;
    for (int b = 0; b < nb; b++) {
        memcpy(&x[b].d, g + qt_x16_scales(b, nb) + 2 * r, 2);
        for (int k = 0; k < 4; k++) memcpy(x[b].qs + 4 * k, g + qt_x16_quants(b) + 64 * k + 4 * r, 4);
    }
}

void qt_x16_deinterleave(qt_type type, int n, const void *src, void *rows, size_t row_stride)
{
    for (int r = 0; r < QT_X16_ROWS; r++) qt_x16_row(type, n, src, r, (uint8_t *)rows + (size_t)r * row_stride);
}
