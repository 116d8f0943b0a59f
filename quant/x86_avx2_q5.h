/* x86_avx2_q5.h - a Q5 block's 32 five-bit values as bytes with AVX2,
 * shared by the dot products (x86_avx2.c) and the Q5_0 tiles
 * (x86_avx2_tile_q8.c); included after x86_simd.h (its nibbles), only
 * by files compiled with -mavx2. */
#ifndef QLM_QT_X86_AVX2_Q5_H
#define QLM_QT_X86_AVX2_Q5_H

/* 0x10 in byte j where bit j of qh is set: each byte fetches the qh byte
 * holding its bit, then tests it. */
INLINE __m256i fifth_bits(const uint8_t qh[4]) {
    uint32_t bits;
    memcpy(&bits, qh, sizeof bits);
    const __m256i which = _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303);
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), which);
    const __m256i sel = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, sel), sel);
    return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

/* The 32 five-bit values of a Q5 block as bytes, in element order. */
INLINE __m256i q5_quants(const uint8_t qs[16], const uint8_t qh[4]) {
    return _mm256_or_si256(nibbles(qs), fifth_bits(qh));
}

#endif
