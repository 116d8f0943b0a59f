/* x86_avx512_wide.h - what the wide repack kernels (repack.h) share: one
 * int32 lane per weight row.  Included only by quant/x86_avx512_repack*.c,
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

/* Byte offsets of the 16 rows, for gathers of one dword per row. */
INLINE __m512i row_offsets(size_t w_stride)
{
    return _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                              _mm512_set1_epi32((int)w_stride));
}

/* The dword at p + row offset, per row. */
INLINE __m512i gather_rows(__m512i rows, const uint8_t *p)
{
    return _mm512_i32gather_epi32(rows, p, 1);
}

/* The f16 in the low (hi = 0) or high half of each lane, widened exactly. */
INLINE __m512 halves(__m512i v, int hi)
{
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(hi ? _mm512_srli_epi32(v, 16) : v));
}

#endif
