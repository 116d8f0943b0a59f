/* x86_avx512_tiles.h - what the AVX-512 tile kernels (quant/tiles.h)
 * share.  Included only by quant/x86_avx512_*.c built with AVX-512 flags. */
#ifndef QLM_QT_X86_AVX512_TILES_H
#define QLM_QT_X86_AVX512_TILES_H

#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "repack.h"

/* The kernels gather the results of a run of rows per column (res, one
 * row of `res_stride` floats per column) because the output's columns are
 * n_out floats apart: storing each result directly would touch a line,
 * and a page, per column every time.  This writes rows [r0, r0 + n) of
 * columns [c0, c0 + nc), 16 floats per masked store, without a call;
 * with `stream` (qt_rp_stream_out), whole aligned lines with streaming
 * stores, which the caller orders with an sfence before it returns. */
static inline __attribute__((always_inline)) void qt_tiles_flush(float *out, size_t out_stride, int c0, int nc,
                                                                 const float *res, int res_stride, int r0, int n,
                                                                 bool stream)
{
    for (int c = 0; c < nc; c++)
        for (int i = 0; i < n; i += 16) {
            const __mmask16 m = (__mmask16)(n - i >= 16 ? 0xffff : (1u << (n - i)) - 1);
            float *o = out + (size_t)(c0 + c) * out_stride + r0 + i;
            const __m512 v = _mm512_maskz_loadu_ps(m, res + (size_t)c * res_stride + i);
            if (stream && m == 0xffff && (uintptr_t)o % 64 == 0)
                _mm512_stream_ps(o, v);
            else
                _mm512_mask_storeu_ps(o, m, v);
        }
}

/* acc + the sums of u (unsigned bytes) times s (signed) over each 4-byte
 * group: vpdpbusd as inline asm, so the files need no -mavx512vnni (only
 * run at the AVX512-VNNI level). */
static inline __attribute__((always_inline)) __m512i qt_dpbusd512(__m512i acc, __m512i u, __m512i s)
{
    __asm__("%{evex%} vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(s));
    return acc;
}

/* acc + the sums of a times b (int16 pairs) over each 32-bit lane:
 * vpdpwssd, likewise. */
static inline __attribute__((always_inline)) __m512i qt_dpwssd512(__m512i acc, __m512i a, __m512i b)
{
    __asm__("%{evex%} vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
    return acc;
}

/* 16 registers of 16 floats transposed in place: v[j] lane c -> v[c] lane
 * j.  A kernel whose register i holds row i of 16 columns then has each
 * column's 16 rows in one register, one store to the output. */
static inline __attribute__((always_inline)) void qt_transpose16(__m512 v[16])
{
    __m512 t[16];
#pragma GCC unroll 8
    for (int j = 0; j < 16; j += 2) {
        t[j] = _mm512_unpacklo_ps(v[j], v[j + 1]);
        t[j + 1] = _mm512_unpackhi_ps(v[j], v[j + 1]);
    }
#pragma GCC unroll 4
    for (int j = 0; j < 16; j += 4)
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            const __m512d lo = _mm512_castps_pd(t[j + h]), hi = _mm512_castps_pd(t[j + 2 + h]);
            v[j + 2 * h] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo, hi));
            v[j + 2 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo, hi));
        }
#pragma GCC unroll 2
    for (int j = 0; j < 16; j += 8)
#pragma GCC unroll 4
        for (int h = 0; h < 4; h++) {
            t[j + h] = _mm512_shuffle_f32x4(v[j + h], v[j + 4 + h], 0x88);
            t[j + 4 + h] = _mm512_shuffle_f32x4(v[j + h], v[j + 4 + h], 0xdd);
        }
#pragma GCC unroll 8
    for (int h = 0; h < 8; h++) {
        v[h] = _mm512_shuffle_f32x4(t[h], t[8 + h], 0x88);
        v[8 + h] = _mm512_shuffle_f32x4(t[h], t[8 + h], 0xdd);
    }
}

/* 16 chunks of 64 bytes at src (chunk i: dword i of each of 16 rows, row
 * r's at 4 r) back as the rows' 64 bytes, row r's at dst + r * row_bytes:
 * one 16 x 16 transpose. */
static inline __attribute__((always_inline)) void qt_x16_chunks_rows(const uint8_t *src, uint8_t *dst,
                                                                     size_t row_bytes)
{
    __m512 v[16];
#pragma GCC unroll 16
    for (int k = 0; k < 16; k++) v[k] = _mm512_loadu_ps((const void *)(src + 64 * k));
    qt_transpose16(v);
#pragma GCC unroll 16
    for (int r = 0; r < 16; r++) _mm512_storeu_ps((void *)(dst + row_bytes * r), v[r]);
}

/* The 16 rows' blocks of one super-block of a Q2_K group in repack.h's
 * x16 layout (sb), as the file had them: row r's block at dst + 84 r.
 * The kernels that read rows take a group's super-block this way, once
 * per super-block and pass: one 16 x 16 transpose of the quant chunks,
 * whose chunk i holds bytes 4i..4i+3 of each row's qs[]. */
static inline __attribute__((always_inline)) void qt_x16_q2_K_rows(const uint8_t *sb, uint8_t *dst)
{
    enum { BS = 84, QS = 16, DM = 80, X16_DM = 256, X16_QS = 320 }; /* block size; where qs and d|dmin sit */
    for (int r = 0; r < 16; r++) {
        memcpy(dst + BS * r, sb + 16 * r, 16); /* the scales */
        memcpy(dst + BS * r + DM, sb + X16_DM + 4 * r, 4);
    }
    qt_x16_chunks_rows(sb + X16_QS, dst + QS, BS);
}

/* The same for Q3_K (repack.h): the quant chunks in one 16 x 16
 * transpose, the 8 hmask and 3 scale chunks in another. */
static inline __attribute__((always_inline)) void qt_x16_q3_K_rows(const uint8_t *sb, uint8_t *dst)
{
    enum { BS = 110, HM = 0, QS = 32, SC = 96, D = 108 }; /* block size; where its parts sit */
    qt_x16_chunks_rows(sb + QT_X16_Q3_K_QS, dst + QS, BS);
    __m512 v[16];
#pragma GCC unroll 16
    for (int k = 0; k < 16; k++)
        v[k] = k < 8    ? _mm512_loadu_ps((const void *)(sb + QT_X16_Q3_K_HM + 64 * k))
               : k < 11 ? _mm512_loadu_ps((const void *)(sb + QT_X16_Q3_K_SC + 64 * (k - 8)))
                        : _mm512_setzero_ps();
    qt_transpose16(v);
#pragma GCC unroll 16
    for (int r = 0; r < 16; r++) {
        _mm512_mask_storeu_ps((void *)(dst + BS * r + HM), 0xff, v[r]);
        _mm_mask_storeu_epi32((void *)(dst + BS * r + SC), 0x7, _mm512_extracti32x4_epi32(_mm512_castps_si512(v[r]), 2));
        memcpy(dst + BS * r + D, sb + QT_X16_Q3_K_D + 2 * r, 2);
    }
}

/* The 16 rows' 16 scales as signed bytes: sc[t] lane r holds scales
 * 4t..4t+3 of row r, unpacked as quant/ref_k.c does (scale 4t + b: nibble
 * t / 2 of scales[] byte 4(t % 2) + b, with bits 2t, 2t+1 of byte 8 + b on
 * top, less 32). */
static inline __attribute__((always_inline)) void qt_x16_scales_q3_K(const uint8_t *blk, __m512i sc[4])
{
    const __m512i m15 = _mm512_set1_epi8(0x0f), m3 = _mm512_set1_epi8(3), b32 = _mm512_set1_epi8(32);
    const __m512i a0 = _mm512_loadu_si512((const void *)(blk + QT_X16_Q3_K_SC));
    const __m512i a1 = _mm512_loadu_si512((const void *)(blk + QT_X16_Q3_K_SC + 64));
    const __m512i a2 = _mm512_loadu_si512((const void *)(blk + QT_X16_Q3_K_SC + 128));
#pragma GCC unroll 4
    for (int t = 0; t < 4; t++) {
        const __m512i lo = _mm512_and_si512(t < 2 ? (t ? a1 : a0) : _mm512_srli_epi16(t == 3 ? a1 : a0, 4), m15);
        const __m512i hi = _mm512_slli_epi16(_mm512_and_si512(t ? _mm512_srli_epi16(a2, 2 * t) : a2, m3), 4);
        sc[t] = _mm512_sub_epi8(_mm512_or_si512(lo, hi), b32);
    }
}

/* A super-block of a Q2_K or Q3_K group as its rows' blocks. */
static inline __attribute__((always_inline)) void qt_x16_k_rows(qt_type type, const uint8_t *sb, uint8_t *dst)
{
    if (type == QT_Q3_K)
        qt_x16_q3_K_rows(sb, dst);
    else
        qt_x16_q2_K_rows(sb, dst);
}

#endif
