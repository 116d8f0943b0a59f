/* x86_avx2_tiled.c - AVX2 version of quant/tiled_ref.c's order.
 *
 * Compiled with -mavx2 -mfma; reached through qt_tiled_row().  One weight
 * row against many activation columns: each super-block is unpacked once
 * (qt_tiled_unpack) and its exact integer sums are formed per column with
 * maddubs (unsigned quants below 64 times signed bytes: no saturation) and
 * a 16-bit scale per 16 elements; the float work is the reference's. */
#if defined(__x86_64__)

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "blocks.h"
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
    int bias;
    bool has_min;
} rows8;

/* Super-block b of the 8 rows (x: row 0, rows x_stride apart); 0 where
 * the type is not a K-quant. */
static size_t pack_rows8(qt_type type, const uint8_t *x, size_t x_stride, int b, rows8 *p)
{
    qt_tiled_block k[8];
    size_t size = 0;
    float d[8], dmin[8];
    for (int r = 0; r < 8; r++) {
        size = qt_tiled_unpack(type, x + r * x_stride + b * qt_get(type)->type_size, &k[r]);
        if (!size) return 0;
        d[r] = k[r].d;
        dmin[r] = k[r].dmin;
    }
    for (int i = 0; i < 8; i++) load8x8(k[0].q + 32 * i, sizeof k[0], &p->u[8 * i]);
    __m256i v[8];
    load8x8((const uint8_t *)k[0].sc, sizeof k[0], v);
    for (int i = 0; i < 8; i++) p->sp[i] = v[i];
    load8x8((const uint8_t *)k[0].m, sizeof k[0], v);
    for (int i = 0; i < 8; i++) p->mp[i] = v[i];
    p->d = _mm256_loadu_ps(d);
    p->dmin = _mm256_loadu_ps(dmin);
    p->bias = k[0].bias;
    p->has_min = k[0].has_min;
    return size;
}

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
        for (int c = 0; c < ncols; c++) {
            const qt_block_q8_K *y = (const qt_block_q8_K *)((const uint8_t *)vy + c * y_stride) + b;
            __m256i is = _mm256_setzero_si256();
            for (int j = 0; j < 16; j++) {
                const int8_t *yq = y->qs + 16 * j;
                const __m256i s0 = _mm256_add_epi16(_mm256_maddubs_epi16(p.u[4 * j], bcast4(yq)),
                                                    _mm256_maddubs_epi16(p.u[4 * j + 1], bcast4(yq + 4)));
                const __m256i s1 = _mm256_add_epi16(_mm256_maddubs_epi16(p.u[4 * j + 2], bcast4(yq + 8)),
                                                    _mm256_maddubs_epi16(p.u[4 * j + 3], bcast4(yq + 12)));
                is = _mm256_add_epi32(is, _mm256_add_epi32(_mm256_madd_epi16(s0, sw[j]), _mm256_madd_epi16(s1, sw[j])));
            }
            __m256i bsp[8];
            for (int i = 0; i < 8; i++) {
                int32_t pair;
                memcpy(&pair, y->bsums + 2 * i, sizeof pair);
                bsp[i] = _mm256_set1_epi32(pair);
            }
            if (p.bias) {
                __m256i corr = _mm256_setzero_si256();
                for (int i = 0; i < 8; i++) corr = _mm256_add_epi32(corr, _mm256_madd_epi16(p.sp[i], bsp[i]));
                is = _mm256_sub_epi32(is, _mm256_mullo_epi32(corr, _mm256_set1_epi32(p.bias)));
            }
            __m256 r = _mm256_mul_ps(_mm256_cvtepi32_ps(is), p.d);
            if (p.has_min) {
                __m256i imin = _mm256_setzero_si256();
                for (int i = 0; i < 8; i++) imin = _mm256_add_epi32(imin, _mm256_madd_epi16(p.mp[i], bsp[i]));
                r = _mm256_fnmadd_ps(p.dmin, _mm256_cvtepi32_ps(imin), r);
            }
            float *o = out + c * out_stride;
            _mm256_storeu_ps(o, _mm256_fmadd_ps(r, _mm256_set1_ps(y->d), _mm256_loadu_ps(o)));
        }
    }
}

#endif
