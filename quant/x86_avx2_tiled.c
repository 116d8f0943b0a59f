/* x86_avx2_tiled.c - AVX2 version of quant/tiled_ref.c's order.
 *
 * Compiled with -mavx2 -mfma; reached through qt_tiled_row().  One weight
 * row against many activation columns: each super-block is unpacked once
 * (qt_tiled_unpack) and its exact integer sums are formed per column with
 * maddubs (unsigned quants below 64 times signed bytes: no saturation) and
 * a 16-bit scale per 16 elements; the float work is the reference's. */
#if defined(__x86_64__)

#include <immintrin.h>
#include <stdalign.h>
#include <math.h>
#include <string.h>

#include "blocks.h"
#include "fp16.h"
#include "tiled.h"
#include "x86_avx2_rows.h"

#define INLINE static inline __attribute__((always_inline))

INLINE int32_t hsum_epi32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

void qt_avx2_tiled_row(qt_type type, int n, const void *vx, const void *vy, size_t y_stride, int ncols, float *out,
                       size_t out_stride)
{
    const uint8_t *x = vx;
    for (int c = 0; c < ncols; c++) out[c * out_stride] = 0.0f;
    for (int b = 0; b < n / QT_QK_K; b++) {
        qt_tiled_block k;
        const size_t size = qt_tiled_unpack(type, x, &k);
        if (!size) {
            for (int c = 0; c < ncols; c++) out[c * out_stride] = NAN;
            return;
        }
        x += size;
        __m256i q[8], scv[8];
        for (int i = 0; i < 8; i++) {
            q[i] = _mm256_loadu_si256((const __m256i *)(k.q + 32 * i));
            scv[i] = _mm256_setr_m128i(_mm_set1_epi16(k.sc[2 * i]), _mm_set1_epi16(k.sc[2 * i + 1]));
        }
        for (int c = 0; c < ncols; c++) {
            const qt_block_q8_K *y = (const qt_block_q8_K *)((const uint8_t *)vy + c * y_stride) + b;
            __m256i acc = _mm256_setzero_si256();
            for (int i = 0; i < 8; i++) {
                const __m256i p = _mm256_maddubs_epi16(q[i], _mm256_loadu_si256((const __m256i *)(y->qs + 32 * i)));
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, scv[i]));
            }
            int32_t isum = hsum_epi32(acc), imin = 0;
            if (k.bias) {
                int32_t corr = 0;
                for (int j = 0; j < 16; j++) corr += k.sc[j] * y->bsums[j];
                isum -= k.bias * corr;
            }
            float r = (float)isum * k.d;
            if (k.has_min) {
                for (int j = 0; j < 16; j++) imin += k.m[j] * y->bsums[j];
                r = fmaf(-k.dmin, (float)imin, r);
            }
            out[c * out_stride] = fmaf(r, y->d, out[c * out_stride]);
        }
    }
}

/* ---- 8 rows at a time ------------------------------------------------------
 * The same outputs for 8 weight rows, each in its own int32 lane: a
 * super-block of the 8 rows is unpacked once and turned into row-per-lane
 * form, then every column's block is read once for the 8 rows (the row
 * kernel above reads every column's activations again per row, which at
 * a prompt's 512 columns streams them from L3 for each row).  Integer
 * sums exact as above: unsigned quants below 64 times |y| <= 128, two
 * vpmaddubsw pair sums added in int16 (2 * 2 * 63 * 128 = 32256) before
 * vpmaddwd against the scale; the float work per lane is the reference's. */

/* The low (hi = 0) or high int16 of each lane in both halves. */
INLINE __m256i both16(__m256i v, int hi)
{
    const __m256i w = hi ? _mm256_srli_epi32(v, 16) : _mm256_and_si256(v, _mm256_set1_epi32(0xffff));
    return _mm256_or_si256(w, _mm256_slli_epi32(w, 16));
}

typedef struct rows8 {
    __m256i u[64];   /* quants 4i..4i+3 of each row */
    __m256i sp[8];   /* scale pairs (sc_2i, sc_2i+1) */
    __m256i mp[8];   /* min pairs */
    __m256 d, dmin;
    int bias, bias_shift; /* bias = 1 << bias_shift, or bias_shift -1 */
    bool has_min;
} rows8;

/* qt_tiled_unpack's quants of a Q6_K block, 32 at a time: element
 * 128h + 32part + l is ql[64h + 32(part & 1) + l]'s low (parts 0, 1) or
 * high nibble, with bits 2part, 2part + 1 of qh[32h + l] above it. */
static void quants_q6_K(const qt_block_q6_K *x, uint8_t q[256])
{
    const __m256i lo4 = _mm256_set1_epi8(0x0f), hi2 = _mm256_set1_epi8(0x30);
    for (int h = 0; h < 2; h++) {
        const __m256i l0 = _mm256_loadu_si256((const __m256i *)(x->ql + 64 * h));
        const __m256i l1 = _mm256_loadu_si256((const __m256i *)(x->ql + 64 * h + 32));
        const __m256i qh = _mm256_loadu_si256((const __m256i *)(x->qh + 32 * h));
        __m256i *o = (__m256i *)(q + 128 * h);
        _mm256_storeu_si256(o, _mm256_or_si256(_mm256_and_si256(l0, lo4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), hi2)));
        _mm256_storeu_si256(o + 1, _mm256_or_si256(_mm256_and_si256(l1, lo4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), hi2)));
        _mm256_storeu_si256(o + 2, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), lo4), _mm256_and_si256(qh, hi2)));
        _mm256_storeu_si256(o + 3, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), lo4),
                                                   _mm256_and_si256(_mm256_srli_epi16(qh, 2), hi2)));
    }
}

/* The same for Q3_K: element 32t + l (t = 4h + part) is bits 2part,
 * 2part + 1 of qs[32h + l], plus 4 where bit t of hmask[l] is set. */
static void quants_q3_K(const qt_block_q3_K *x, uint8_t q[256])
{
    const __m256i m3 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    const __m256i hm = _mm256_loadu_si256((const __m256i *)x->hmask);
    for (int h = 0; h < 2; h++) {
        const __m256i qs = _mm256_loadu_si256((const __m256i *)(x->qs + 32 * h));
        for (int part = 0; part < 4; part++) {
            const int t = 4 * h + part;
            /* 16-bit shifts: the masks keep each byte's own bits */
            const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * part), m3);
            const __m256i hi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, t), one), 2);
            _mm256_storeu_si256((__m256i *)(q + 32 * t), _mm256_or_si256(lo, hi));
        }
    }
}

/* The same for Q4_K (qh NULL) and Q5_K: element 64g + 32p + l is the low
 * (p = 0) or high nibble of qs[32g + l], with Q5_K's bit 2g + p of qh[l]
 * as its fifth.  Per element, as the reference does it, this took a
 * quarter of a Q5_K_M prompt. */
static void quants_q45_K(const uint8_t *qs, const uint8_t *qh, uint8_t q[256])
{
    const __m256i lo4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
    const __m256i hm = qh ? _mm256_loadu_si256((const __m256i *)qh) : _mm256_setzero_si256();
    for (int g = 0; g < 4; g++) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * g));
        __m256i lo = _mm256_and_si256(v, lo4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), lo4);
        if (qh) {
            /* 16-bit shifts: the masks keep each byte's own bits */
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, 2 * g), one), 4));
            hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, 2 * g + 1), one), 4));
        }
        _mm256_storeu_si256((__m256i *)(q + 64 * g), lo);
        _mm256_storeu_si256((__m256i *)(q + 64 * g + 32), hi);
    }
}

/* qt_tiled_unpack_scales' sc, bias and d for Q6_K (its int8 scales
 * widened) and Q3_K (a 6-bit scale j is the low (j < 8) or high nibble
 * of byte j % 8, with bits 2(j / 4), 2(j / 4) + 1 of byte 8 + j % 4
 * above it, less 32).  Per scale, as the reference does it, this took 14%
 * of the Q6_K kernel at 128 columns. */
static size_t scales_q36_K(qt_type type, const void *vx, qt_tiled_block *k)
{
    __m128i sc8;
    if (type == QT_Q6_K) {
        const qt_block_q6_K *x = vx;
        sc8 = _mm_loadu_si128((const __m128i *)x->scales);
        k->bias = 32;
        k->d = qt_f16_to_f32(x->d);
    } else {
        const qt_block_q3_K *x = vx;
        const __m128i m4 = _mm_set1_epi8(0x0f);
        const __m128i lo = _mm_loadl_epi64((const __m128i *)x->scales);
        const __m128i low = _mm_unpacklo_epi64(_mm_and_si128(lo, m4), _mm_and_si128(_mm_srli_epi16(lo, 4), m4));
        int32_t hi;
        memcpy(&hi, x->scales + 8, sizeof hi);
        /* dword t of the broadcast: bytes 8..11 shifted by 2t, so byte
         * 4t + i holds byte 8 + i's bits 2t, 2t + 1 at the bottom */
        const __m128i high = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(hi), _mm_setr_epi32(0, 2, 4, 6)),
                                           _mm_set1_epi8(3));
        sc8 = _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi16(high, 4)), _mm_set1_epi8(32));
        k->bias = 4;
        k->d = qt_f16_to_f32(x->d);
    }
    _mm256_storeu_si256((__m256i *)k->sc, _mm256_cvtepi8_epi16(sc8));
    k->has_min = false;
    k->dmin = 0.0f;
    return type == QT_Q6_K ? sizeof(qt_block_q6_K) : sizeof(qt_block_q3_K);
}

/* qt_tiled_unpack, with the types above unpacked here. */
static size_t unpack(qt_type type, const void *x, qt_tiled_block *k)
{
    if (type == QT_Q4_K || type == QT_Q5_K) {
        const size_t size = qt_tiled_unpack_scales(type, x, k);
        if (type == QT_Q4_K)
            quants_q45_K(((const qt_block_q4_K *)x)->qs, NULL, k->q);
        else
            quants_q45_K(((const qt_block_q5_K *)x)->qs, ((const qt_block_q5_K *)x)->qh, k->q);
        return size;
    }
    if (type != QT_Q6_K && type != QT_Q3_K) return qt_tiled_unpack(type, x, k);
    const size_t size = scales_q36_K(type, x, k);
    if (type == QT_Q6_K)
        quants_q6_K(x, k->q);
    else
        quants_q3_K(x, k->q);
    return size;
}

/* Super-block b of the 8 rows (x: row 0, rows x_stride apart); 0 where
 * the type is not a K-quant. */
static size_t pack_rows8(qt_type type, const uint8_t *x, size_t x_stride, int b, rows8 *p)
{
    qt_tiled_block k[8];
    size_t size = 0;
    float d[8], dmin[8];
    for (int r = 0; r < 8; r++) {
        size = unpack(type, x + r * x_stride + b * qt_get(type)->type_size, &k[r]);
        if (!size) return 0;
        d[r] = k[r].d;
        dmin[r] = k[r].dmin;
    }
    for (int i = 0; i < 8; i++) load8x8(k[0].q + 32 * i, sizeof k[0], &p->u[8 * i]);
    __m256i v[8];
    load8x8((const uint8_t *)k[0].sc, sizeof k[0], v);
    for (int i = 0; i < 8; i++) p->sp[i] = v[i];
    if (k[0].has_min) {
        load8x8((const uint8_t *)k[0].m, sizeof k[0], v);
        for (int i = 0; i < 8; i++) p->mp[i] = v[i];
    }
    p->d = _mm256_loadu_ps(d);
    p->dmin = _mm256_loadu_ps(dmin);
    p->bias = k[0].bias;
    p->bias_shift = p->bias > 0 && (p->bias & (p->bias - 1)) == 0 ? __builtin_ctz((unsigned)p->bias) : -1;
    p->has_min = k[0].has_min;
    return size;
}

/* The exact integer sums of NC columns' blocks (y[c]: their quants)
 * against the 8 rows of p (scales sw per 16 elements, both int16 halves):
 * the rows' quants are loaded once for all of them. */
INLINE void col_isums(const rows8 *p, const __m256i sw[16], const int8_t *const y[], __m256i is[], const int NC)
{
    for (int c = 0; c < NC; c++) is[c] = _mm256_setzero_si256();
    /* not unrolled: unrolled, the compiler forms many products before it
     * sums them and spills (130 stores per block pair at 2 columns) */
#pragma GCC unroll 1
    for (int j = 0; j < 16; j++) {
        const __m256i u0 = p->u[4 * j], u1 = p->u[4 * j + 1], u2 = p->u[4 * j + 2], u3 = p->u[4 * j + 3];
#pragma GCC unroll 4
        for (int c = 0; c < NC; c++) {
            const int8_t *q = y[c] + 16 * j;
            const __m256i s0 = _mm256_add_epi16(_mm256_maddubs_epi16(u0, bcast4(q)), _mm256_maddubs_epi16(u1, bcast4(q + 4)));
            const __m256i s1 =
                _mm256_add_epi16(_mm256_maddubs_epi16(u2, bcast4(q + 8)), _mm256_maddubs_epi16(u3, bcast4(q + 12)));
            is[c] = _mm256_add_epi32(is[c], _mm256_add_epi32(_mm256_madd_epi16(s0, sw[j]), _mm256_madd_epi16(s1, sw[j])));
        }
    }
}

/* The column's float step for block y of the 8 rows, from its exact sums
 * is: out = fma(r, d_y, out), r as the reference forms it. */
INLINE void bsum_pairs(const qt_block_q8_K *y, __m256i pr[8])
{
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        int32_t pair;
        memcpy(&pair, y->bsums + 2 * i, sizeof pair);
        pr[i] = _mm256_set1_epi32(pair);
    }
}

/* pr: the column's bsum pairs (bsum_pairs; every K-quant has a bias or
 * mins). */
INLINE void col_finish_pairs(const rows8 *p, const qt_block_q8_K *y, __m256i is, const __m256i pr[8], float *o)
{
    __m256 r;
    if (p->bias || p->has_min) {
        /* Σ scale·bsum for the bias, or Σ min·bsum; no type has both
         * (exact integer sums: two chains for latency) */
        const __m256i *w = p->has_min ? p->mp : p->sp;
        __m256i c0 = _mm256_madd_epi16(w[0], pr[0]), c1 = _mm256_madd_epi16(w[1], pr[1]);
#pragma GCC unroll 3
        for (int i = 2; i < 8; i += 2) {
            c0 = _mm256_add_epi32(c0, _mm256_madd_epi16(w[i], pr[i]));
            c1 = _mm256_add_epi32(c1, _mm256_madd_epi16(w[i + 1], pr[i + 1]));
        }
        const __m256i corr = _mm256_add_epi32(c0, c1);
        if (p->has_min) {
            r = _mm256_fnmadd_ps(p->dmin, _mm256_cvtepi32_ps(corr), _mm256_mul_ps(_mm256_cvtepi32_ps(is), p->d));
        } else {
            /* the biases (Q3_K 4, Q6_K 32) are powers of two: a shift,
             * not vpmulld's 10-cycle latency on each column's path */
            const __m256i bc = p->bias_shift >= 0 ? _mm256_sll_epi32(corr, _mm_cvtsi32_si128(p->bias_shift))
                                                  : _mm256_mullo_epi32(corr, _mm256_set1_epi32(p->bias));
            is = _mm256_sub_epi32(is, bc);
            r = _mm256_mul_ps(_mm256_cvtepi32_ps(is), p->d);
        }
    } else {
        r = _mm256_mul_ps(_mm256_cvtepi32_ps(is), p->d);
    }
    _mm256_storeu_ps(o, _mm256_fmadd_ps(r, _mm256_set1_ps(y->d), _mm256_loadu_ps(o)));
}

INLINE void col_finish(const rows8 *p, const qt_block_q8_K *y, __m256i is, float *o)
{
    __m256i pr[8];
    bsum_pairs(y, pr);
    col_finish_pairs(p, y, is, pr, o);
}

/* columns per pass over the 8 rows' quants */
enum { COLS = 4 };

void qt_avx2_tiled_rows8(qt_type type, int n, const void *vx, size_t x_stride, const void *vy, size_t y_stride,
                         int ncols, float *out, size_t out_stride)
{
    const uint8_t *x = vx;
    for (int c = 0; c < ncols; c++) _mm256_storeu_ps(out + c * out_stride, _mm256_setzero_ps());
    for (int b = 0; b < n / QT_QK_K; b++) {
        rows8 p;
        if (!pack_rows8(type, x, x_stride, b, &p)) {
            for (int c = 0; c < ncols; c++) _mm256_storeu_ps(out + c * out_stride, _mm256_set1_ps(NAN));
            return;
        }
        __m256i sw[16];
        for (int j = 0; j < 16; j++) sw[j] = both16(p.sp[j / 2], j % 2);
        int c = 0;
        for (; c + COLS <= ncols; c += COLS) {
            const qt_block_q8_K *yb[COLS];
            const int8_t *yq[COLS];
            for (int i = 0; i < COLS; i++) {
                yb[i] = (const qt_block_q8_K *)((const uint8_t *)vy + (c + i) * y_stride) + b;
                yq[i] = yb[i]->qs;
            }
            __m256i is[COLS];
            col_isums(&p, sw, yq, is, COLS);
            for (int i = 0; i < COLS; i++) col_finish(&p, yb[i], is[i], out + (c + i) * out_stride);
        }
        for (; c < ncols; c++) {
            const qt_block_q8_K *y0 = (const qt_block_q8_K *)((const uint8_t *)vy + c * y_stride) + b;
            const int8_t *yq[1] = {y0->qs};
            __m256i is[1];
            col_isums(&p, sw, yq, is, 1);
            col_finish(&p, y0, is[0], out + c * out_stride);
        }
    }
}

/* ---- 16 rows at a time -----------------------------------------------------
 * Two 8-row halves against 4 columns through the asm step that the wide
 * kernels use (x86_avx2_rows.h): each activation broadcast serves both
 * halves and each quant vector all 4 columns.  The integer sums are the
 * same exact totals (a 16-element sub-block's 4 steps add in one int16
 * sum for quants up to 31: Q2_K-Q5_K; Q6_K's up to 63 take two sums of
 * two steps) and col_finish does each column's float step. */
INLINE void sub_4x2(const rows8 p[2], const __m256i sw[2][16], int j, const qt_block_q8_K *const yb[4],
                    const int first, const int split, __m256i is[8])
{
    const int8_t *y[4] = {yb[0]->qs + 16 * j, yb[1]->qs + 16 * j, yb[2]->qs + 16 * j, yb[3]->qs + 16 * j};
    const __m256i *u0 = p[0].u + 4 * j, *u1 = p[1].u + 4 * j, *sw0 = &sw[0][j], *sw1 = &sw[1][j];
    SUB_REGS;
    if (split && first)
        SUB_ASM(SUB_SPLIT(SUB_SET));
    else if (split)
        SUB_ASM(SUB_SPLIT(SUB_ADD));
    else if (first)
        SUB_ASM(SUB_16 SUB_OUT(SUB_SET));
    else
        SUB_ASM(SUB_16 SUB_OUT(SUB_ADD));
}

/* Q6_K's split sums through the 2-column step, which keeps the int32 sums
 * in registers (x86_avx2_rows.h): 1.04-1.09x the 4-column step's speed
 * (median of 60-100 alternated passes, 16 rows x 64-512 columns, same
 * bits); for the unsplit types the two measured level (0.96-0.99x). */
INLINE void sub_2x2_split(const rows8 p[2], const __m256i sw[2][16], const qt_block_q8_K *const yb[2], __m256i is[4])
{
    __m256i i00 = _mm256_setzero_si256(), i01 = i00, i10 = i00, i11 = i00;
#pragma GCC unroll 1
    for (int j = 0; j < 16; j++) {
        const int8_t *y0 = yb[0]->qs + 16 * j, *y1 = yb[1]->qs + 16 * j;
        const __m256i *u0 = p[0].u + 4 * j, *u1 = p[1].u + 4 * j, *sw0 = &sw[0][j], *sw1 = &sw[1][j];
        S2_REGS;
        S2_ASM(S2_SPLIT);
        (void)a00, (void)a01, (void)a10, (void)a11, (void)w0, (void)w1, (void)b, (void)t, (void)s0, (void)s1;
    }
    is[0] = i00, is[1] = i01, is[2] = i10, is[3] = i11;
}

/* The float steps of nc columns against both halves, is[nc * h + column]. */
INLINE void finish_columns(const rows8 p[2], const qt_block_q8_K *const yb[], const __m256i is[], const int nc,
                           float *out, size_t out_stride)
{
    for (int i = 0; i < nc; i++) {
        __m256i pr[8]; /* one column's pairs for both halves */
        bsum_pairs(yb[i], pr);
        for (int h = 0; h < 2; h++) col_finish_pairs(&p[h], yb[i], is[nc * h + i], pr, out + i * out_stride + 8 * h);
    }
}

void qt_avx2_tiled_rows16(qt_type type, int n, const void *vx, size_t x_stride, const void *vy, size_t y_stride,
                          int ncols, float *out, size_t out_stride)
{
    const uint8_t *x = vx;
    const int split = !(type == QT_Q2_K || type == QT_Q3_K || type == QT_Q4_K || type == QT_Q5_K);
    for (int c = 0; c < ncols; c++) {
        _mm256_storeu_ps(out + c * out_stride, _mm256_setzero_ps());
        _mm256_storeu_ps(out + c * out_stride + 8, _mm256_setzero_ps());
    }
    for (int b = 0; b < n / QT_QK_K; b++) {
        rows8 p[2];
        if (!pack_rows8(type, x, x_stride, b, &p[0]) || !pack_rows8(type, x + 8 * x_stride, x_stride, b, &p[1])) {
            for (int c = 0; c < ncols; c++) {
                _mm256_storeu_ps(out + c * out_stride, _mm256_set1_ps(NAN));
                _mm256_storeu_ps(out + c * out_stride + 8, _mm256_set1_ps(NAN));
            }
            return;
        }
        alignas(32) __m256i sw[2][16];
        for (int h = 0; h < 2; h++)
            for (int j = 0; j < 16; j++) sw[h][j] = both16(p[h].sp[j / 2], j % 2);
        int c = 0;
        for (; split && c + 2 <= ncols; c += 2) {
            const qt_block_q8_K *yb[2];
            for (int i = 0; i < 2; i++) yb[i] = (const qt_block_q8_K *)((const uint8_t *)vy + (c + i) * y_stride) + b;
            __m256i is[4]; /* [2h + column] */
            sub_2x2_split(p, sw, yb, is);
            finish_columns(p, yb, is, 2, out + c * out_stride, out_stride);
        }
        for (; c + 4 <= ncols; c += 4) {
            const qt_block_q8_K *yb[4];
            for (int i = 0; i < 4; i++) yb[i] = (const qt_block_q8_K *)((const uint8_t *)vy + (c + i) * y_stride) + b;
            alignas(32) __m256i is[8]; /* [4h + column] */
            sub_4x2(p, sw, 0, yb, 1, split, is);
#pragma GCC unroll 1
            for (int j = 1; j < 16; j++) sub_4x2(p, sw, j, yb, 0, split, is);
            finish_columns(p, yb, is, 4, out + c * out_stride, out_stride);
        }
        for (; c < ncols; c++) {
            const qt_block_q8_K *y0 = (const qt_block_q8_K *)((const uint8_t *)vy + c * y_stride) + b;
            const int8_t *yq[1] = {y0->qs};
            for (int h = 0; h < 2; h++) {
                __m256i is[1];
                col_isums(&p[h], sw[h], yq, is, 1);
                col_finish(&p[h], y0, is[0], out + c * out_stride + 8 * h);
            }
        }
    }
}

#endif
