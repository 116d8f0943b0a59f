/* x86_avx512_wide.h - what the wide repack kernels (repack.h) share: one
 * int32 lane per weight row (the int8 attention kernels use the same
 * transposes for K rows).  Included only by quant/x86_avx512_*.c files
 * compiled with the AVX-512 flags; as in x86_avx512.c, vpdpbusd is inline
 * asm behind a constant `vnni`, so those files never need -mavx512vnni. */
#ifndef QLM_QT_X86_AVX512_WIDE_H
#define QLM_QT_X86_AVX512_WIDE_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifndef INLINE
#define INLINE static inline __attribute__((always_inline))
#endif

/* acc + sum of u.s over each group of 4 bytes, u unsigned from a register,
 * s the 4 signed bytes at p in every lane.  Without VNNI, vpmaddubsw first
 * adds byte pairs into int16 with saturation: callers keep u.s pairs small
 * enough that it never saturates. */
INLINE __m512i dot4_bcast(__m512i acc, __m512i u, const int8_t *p, const int vnni)
{
    if (vnni) {
        __asm__("%{evex%} vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*(const int32_t *)p));
        return acc;
    }
    int32_t s;
    memcpy(&s, p, sizeof s);
    const __m512i pairs = _mm512_maddubs_epi16(u, _mm512_set1_epi32(s));
    return _mm512_add_epi32(acc, _mm512_madd_epi16(pairs, _mm512_set1_epi16(1)));
}

/* Loads turned into row-per-lane form: v[k] lane r = dword k of the bytes
 * at p + r * stride.  Shuffles, because gathers are microcoded slowly on
 * CPUs with the Gather Data Sampling fix (they took 85% of a packing). */

/* The 16 bytes at p, p + step, p + 2 step, p + 3 step as the four 128-bit
 * lanes (the lane number must be an immediate, even unoptimized). */
INLINE __m512i lanes4(const uint8_t *p, size_t step)
{
    const __m512i a = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)p));
    const __m512i b = _mm512_inserti32x4(a, _mm_loadu_si128((const __m128i *)(p + step)), 1);
    const __m512i c = _mm512_inserti32x4(b, _mm_loadu_si128((const __m128i *)(p + 2 * step)), 2);
    return _mm512_inserti32x4(c, _mm_loadu_si128((const __m128i *)(p + 3 * step)), 3);
}

/* 16 bytes per row, k < 4: rows 4L + i sit in lane L of a[i], then a 4x4
 * dword transpose inside each 128-bit lane. */
INLINE void load16x4(const uint8_t *p, size_t stride, __m512i v[4])
{
    __m512i a[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) a[i] = lanes4(p + i * stride, 4 * stride);
    const __m512i t0 = _mm512_unpacklo_epi32(a[0], a[1]), t1 = _mm512_unpackhi_epi32(a[0], a[1]);
    const __m512i t2 = _mm512_unpacklo_epi32(a[2], a[3]), t3 = _mm512_unpackhi_epi32(a[2], a[3]);
    v[0] = _mm512_unpacklo_epi64(t0, t2);
    v[1] = _mm512_unpackhi_epi64(t0, t2);
    v[2] = _mm512_unpacklo_epi64(t1, t3);
    v[3] = _mm512_unpackhi_epi64(t1, t3);
}

/* 64 bytes per row, k < 16: the usual 16x16 dword transpose (dwords, then
 * qwords inside 128-bit lanes, then the lanes themselves). */
INLINE void load16x16(const uint8_t *p, size_t stride, __m512i v[16])
{
    __m512i r[16], t[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_si512((const void *)(p + i * stride));
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    /* r[4i + j], lane L: dword 4L + j of rows 4i..4i+3 */
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        const __m512i lo01 = _mm512_shuffle_i32x4(r[j], r[4 + j], 0x44), lo23 = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0x44);
        const __m512i hi01 = _mm512_shuffle_i32x4(r[j], r[4 + j], 0xee), hi23 = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0xee);
        v[j] = _mm512_shuffle_i32x4(lo01, lo23, 0x88);
        v[4 + j] = _mm512_shuffle_i32x4(lo01, lo23, 0xdd);
        v[8 + j] = _mm512_shuffle_i32x4(hi01, hi23, 0x88);
        v[12 + j] = _mm512_shuffle_i32x4(hi01, hi23, 0xdd);
    }
}

/* Asks for `bytes` at p + r * stride of the 16 rows ahead of use: 16 rows
 * far apart are more streams than the hardware prefetchers follow, and the
 * packing otherwise waits on memory for most of its time. */
INLINE void prefetch_rows(const uint8_t *p, size_t stride, size_t bytes)
{
    for (int r = 0; r < 16; r++)
        for (size_t o = 0; o < bytes; o += 64) _mm_prefetch((const char *)(p + r * stride + o), _MM_HINT_T0);
}

/* prefetch_rows of `bytes` at byte `off` of 16 rows whose blocks take
 * `len` bytes: past the end it goes on into the next 16 rows, so that a
 * one-column caller streaming group after group finds the start of the
 * next group on its way (past the last group it asks for what follows in
 * memory, a few KB per matrix; prefetches never fault). */
INLINE void prefetch_ahead(const uint8_t *p, size_t stride, size_t len, size_t off, size_t bytes)
{
    prefetch_rows(off < len ? p + off : p + 16 * stride + (off - len), stride, bytes);
}

/* Byte b of each lane, zero-extended. */
INLINE __m512i byte_of(__m512i v, int b)
{
    return _mm512_and_si512(_mm512_srli_epi32(v, 8 * b), _mm512_set1_epi32(0xff));
}

/* The 6-bit scales and mins of 16 Q4_K/Q5_K blocks, one per lane, from
 * their scale bytes 0-3, 4-7 and 8-11 in s0, s1, s2 (load16x4 of the
 * blocks' first 16 bytes gives them as its v[1..3]): sc[j] and m[j] lane
 * r are row r's scale and min of 32-element sub-block j, as
 * quant/repack_ref.c's q4_K_scale_min unpacks them. */
INLINE void q4_K_scales16(__m512i s0, __m512i s1, __m512i s2, __m512i sc[8], __m512i m[8])
{
    const __m512i m63 = _mm512_set1_epi32(63), m15 = _mm512_set1_epi32(15);
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        sc[j] = _mm512_and_si512(byte_of(s0, j), m63);
        m[j] = _mm512_and_si512(byte_of(s1, j), m63);
        const __m512i hs = _mm512_slli_epi32(_mm512_srli_epi32(byte_of(s0, j), 6), 4);
        const __m512i hm = _mm512_slli_epi32(_mm512_srli_epi32(byte_of(s1, j), 6), 4);
        sc[j + 4] = _mm512_or_si512(_mm512_and_si512(byte_of(s2, j), m15), hs);
        m[j + 4] = _mm512_or_si512(_mm512_srli_epi32(byte_of(s2, j), 4), hm);
    }
}

/* The f16 in the low (hi = 0) or high half of each lane, widened exactly. */
INLINE __m512 halves(__m512i v, int hi)
{
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(hi ? _mm512_srli_epi32(v, 16) : v));
}

/* Eight registers holding vec_dot's eight float lanes of 16 outputs
 * (lane k in a[k]) summed as qt_hsum8 sums one output's: (a0 + a4) +
 * (a2 + a6), then (a1 + a5) + (a3 + a7), then the two. */
INLINE __m512 hsum8_lanes(const __m512 a[8])
{
    const __m512 lo = _mm512_add_ps(_mm512_add_ps(a[0], a[4]), _mm512_add_ps(a[2], a[6]));
    const __m512 hi = _mm512_add_ps(_mm512_add_ps(a[1], a[5]), _mm512_add_ps(a[3], a[7]));
    return _mm512_add_ps(lo, hi);
}

/* qt_x16_dot_fn `name` (repack.h) from a one-column kernel
 * one(nb, s, group, y) of nb super-blocks, one column after another. */
#define QT_X16_K_COLUMNS(name, one)                                                                         \
    void name(int n, float *s, size_t ldo, const void *group, const void *y, size_t y_stride, int nc)     \
    {                                                                                                    \
        for (int c = 0; c < nc; c++)                                                                     \
            one(n / QT_QK_K, s + (size_t)c * ldo, (const uint8_t *)group,                                \
                (const qt_block_q8_K *)((const uint8_t *)y + (size_t)c * y_stride));                     \
    }

/* Part `part` of `parts` of the lines of an x16 super-block of `bytes`
 * (the one being summed): each asked for 1 KB ahead into L1 and `far`
 * bytes ahead into L2, spread over the sums' steps.  The group is one
 * stream, so past its end these are the next group's lines.  As the x16
 * Q4_0 gemv asks (x86_avx512_repack.c); the whole super-block 4 ahead in
 * one burst of T0 requests, as before, held a 4096 x 4096 matrix-vector
 * product to 74-76% of the read bandwidth for Q4_K and 52-53% for Q2_K
 * (2 threads, Sapphire Rapids with AMX off, as a Zen 4 or an Ice Lake
 * runs them): 97% and 82-85% this way (6 and 12 KB into L2: 89-96%,
 * 81-87%).  tl-q4_k_m tg64 37.0-37.7 t/s against 31.0-31.2, tl-q2_k
 * 47.0-48.9 against 43.0-44.0. */
#define X16_FAR 3072
INLINE void prefetch_part(const uint8_t *blk, size_t bytes, int part, int parts, size_t far)
{
    const size_t lines = (bytes + 63) / 64, l0 = lines * (size_t)part / (size_t)parts,
                 l1 = lines * (size_t)(part + 1) / (size_t)parts;
    for (size_t l = l0; l < l1; l++) {
        _mm_prefetch((const char *)blk + 64 * l + 1024, _MM_HINT_T0);
        _mm_prefetch((const char *)blk + 64 * l + far, _MM_HINT_T1);
    }
}

#endif
