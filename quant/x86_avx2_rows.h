/* x86_avx2_rows.h - 8 weight rows turned into row-per-lane form with
 * AVX2 (lane r of a vector holds 4 bytes of row r), the 4 activation
 * bytes those lanes multiply, broadcast, and the asm step that multiplies
 * two such halves by 4 columns.  Shared by the AVX2 kernels that
 * give each row an int32 lane (x86_avx2_wide.c, x86_avx2_tiled.c, and
 * x86_avx2_kv.c's K tiles); included only by files compiled with -mavx2. */
#ifndef QLM_QT_X86_AVX2_ROWS_H
#define QLM_QT_X86_AVX2_ROWS_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifndef INLINE
#define INLINE static inline __attribute__((always_inline))
#endif

INLINE __m256i bcast4(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm256_set1_epi32(v);
}

/* Loads turned into row-per-lane form: v[k] lane r = dword k of the 16
 * bytes at p + r * stride, for 8 rows.  Rows i and i + 4 share a register
 * (one per 128-bit lane), then a 4x4 dword transpose inside each lane. */
INLINE void load8x4(const uint8_t *p, size_t stride, __m256i v[4])
{
    __m256i a[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
        a[i] = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(p + i * stride))),
                                       _mm_loadu_si128((const __m128i *)(p + (i + 4) * stride)), 1);
    const __m256i t0 = _mm256_unpacklo_epi32(a[0], a[1]), t1 = _mm256_unpackhi_epi32(a[0], a[1]);
    const __m256i t2 = _mm256_unpacklo_epi32(a[2], a[3]), t3 = _mm256_unpackhi_epi32(a[2], a[3]);
    v[0] = _mm256_unpacklo_epi64(t0, t2);
    v[1] = _mm256_unpackhi_epi64(t0, t2);
    v[2] = _mm256_unpacklo_epi64(t1, t3);
    v[3] = _mm256_unpackhi_epi64(t1, t3);
}

/* 32 bytes per row: v[k], k < 8. */
INLINE void load8x8(const uint8_t *p, size_t stride, __m256i v[8])
{
    load8x4(p, stride, v);
    load8x4(p + 16, stride, v + 4);
}

/* ---- the products of 4 columns and 16 rows ---------------------------------
 * One 32-element step (a Q4_0 block, a Q4_K sub-block; a 16-element
 * sub-block takes half the steps) for 4 columns and both halves: ahc
 * the int16 pair sums of half h against column c.  Each quant vector is
 * loaded once for the 4 columns and each activation broadcast serves both
 * halves, so a product costs 1/4 load, 1/2 broadcast and its add, near
 * the vector pipes' limit on Zen 3 (0.22-0.26 ns per product measured
 * alone, 0.17-0.19 without the adds).  Written as asm: compiled from
 * intrinsics, GCC loaded each quant vector once per column and kept one
 * broadcast per half (two loads per product), and spilled the int32 sums
 * it kept across the products.  u0, u1: the halves' 8 (SUB_16: 4) quant
 * vectors; y[c]: the column's 32 (16) bytes.  Each int16 lane adds 8 (4)
 * vpmaddubsw pair sums: the caller's quants keep that below 2^15 (Q4_0,
 * Q4_K: 8 * 2 * 15 * 128; Q5_K: 4 * 2 * 31 * 128; Q6_K needs two steps
 * per sum, SUB_SPLIT). */
#define SUB_FIRST(K, Y, A0, A1)                               \
    "vpbroadcastd " #K "*4(%[" Y "]), %[b]\n\t"               \
    "vpmaddubsw %[b], %[w0], %[" A0 "]\n\t"                   \
    "vpmaddubsw %[b], %[w1], %[" A1 "]\n\t"
#define SUB_NEXT(K, Y, A0, A1)                                \
    "vpbroadcastd " #K "*4(%[" Y "]), %[b]\n\t"               \
    "vpmaddubsw %[b], %[w0], %[t]\n\t"                        \
    "vpaddw %[t], %[" A0 "], %[" A0 "]\n\t"                   \
    "vpmaddubsw %[b], %[w1], %[t]\n\t"                        \
    "vpaddw %[t], %[" A1 "], %[" A1 "]\n\t"
#define SUB_STEP(M, K)                                        \
    "vmovdqa " #K "*32(%[u0]), %[w0]\n\t"                     \
    "vmovdqa " #K "*32(%[u1]), %[w1]\n\t"                     \
    M(K, "y0", "a00", "a10") M(K, "y1", "a01", "a11") M(K, "y2", "a02", "a12") M(K, "y3", "a03", "a13")
#define SUB_SET(A, SW, I)                                     \
    "vpmaddwd (%[" SW "]), %[" A "], %[" A "]\n\t"            \
    "vmovdqa %[" A "], " #I "*32(%[is])\n\t"
#define SUB_ADD(A, SW, I)                                     \
    "vpmaddwd (%[" SW "]), %[" A "], %[" A "]\n\t"            \
    "vpaddd " #I "*32(%[is]), %[" A "], %[" A "]\n\t"         \
    "vmovdqa %[" A "], " #I "*32(%[is])\n\t"
#define SUB_OUT(M)                                            \
    M("a00", "sw0", 0) M("a01", "sw0", 1) M("a02", "sw0", 2) M("a03", "sw0", 3)              \
    M("a10", "sw1", 4) M("a11", "sw1", 5) M("a12", "sw1", 6) M("a13", "sw1", 7)
#define SUB_32 SUB_STEP(SUB_FIRST, 0) SUB_STEP(SUB_NEXT, 1) SUB_STEP(SUB_NEXT, 2) SUB_STEP(SUB_NEXT, 3) \
    SUB_STEP(SUB_NEXT, 4) SUB_STEP(SUB_NEXT, 5) SUB_STEP(SUB_NEXT, 6) SUB_STEP(SUB_NEXT, 7)
#define SUB_16 SUB_STEP(SUB_FIRST, 0) SUB_STEP(SUB_NEXT, 1) SUB_STEP(SUB_NEXT, 2) SUB_STEP(SUB_NEXT, 3)
/* a 16-element sub-block in two sums of two steps (quants up to 63) */
#define SUB_SPLIT(M) SUB_STEP(SUB_FIRST, 0) SUB_STEP(SUB_NEXT, 1) SUB_OUT(M) \
    SUB_STEP(SUB_FIRST, 2) SUB_STEP(SUB_NEXT, 3) SUB_OUT(SUB_ADD)
/* volatile with a memory clobber: the asm reads u, sw and y and writes
 * is[] (operands for all of them would pass asm's limit of 30).  SUB_REGS
 * names the asm's registers, one variable each (an array of them was
 * stored to the stack after every step); ahc: the int16 sums of half h,
 * column c after SUB_32/SUB_16. */
#define SUB_REGS __m256i a00, a01, a02, a03, a10, a11, a12, a13, w0, w1, b, t
#define SUB_OUTS                                                                                               \
    [a00] "=&x"(a00), [a01] "=&x"(a01), [a02] "=&x"(a02), [a03] "=&x"(a03), [a10] "=&x"(a10), [a11] "=&x"(a11), \
        [a12] "=&x"(a12), [a13] "=&x"(a13), [w0] "=&x"(w0), [w1] "=&x"(w1), [b] "=&x"(b), [t] "=&x"(t)
#define SUB_INS [u0] "r"(u0), [u1] "r"(u1), [y0] "r"(y[0]), [y1] "r"(y[1]), [y2] "r"(y[2]), [y3] "r"(y[3])
#define SUB_ASM_REGS(CODE) __asm__ volatile(CODE : SUB_OUTS : SUB_INS : "memory")
#define SUB_ASM(CODE)                                                                                          \
    __asm__ volatile(CODE : SUB_OUTS : SUB_INS, [sw0] "r"(sw0), [sw1] "r"(sw1), [is] "r"(is) : "memory")

/* ---- the products of 2 columns and 16 rows, sums in registers --------------
 * For Q6_K's 16-element sub-blocks, whose quants (up to 63) need two int16
 * sums each, the 4-column step's int32 sums (one load, add and store per
 * sum and half) were most of its memory operations.  With 2 columns the
 * int32 sums (ihc) stay in registers across a whole super-block: 14
 * registers, ahc the int16 pair sums as above, s0 and s1 the halves'
 * scales.  llvm-mca -mcpu=znver3: 24 cycles per 1024 products against
 * the 4-column step's 38 (measured: 1.04-1.09x; for one int16 sum per
 * sub-block, 23 against 26 in the model but 0.96-1.0x measured, so those
 * keep the 4-column step).  The caller keeps ihc in variables passed as
 * "+x" operands, so they live in registers between the asm statements
 * (volatile with a memory clobber, as SUB_ASM). */
#define S2_FIRST(K, Y, A0, A1)                                \
    "vpbroadcastd " #K "*4(%[" Y "]), %[b]\n\t"               \
    "vpmaddubsw %[b], %[w0], %[" A0 "]\n\t"                   \
    "vpmaddubsw %[b], %[w1], %[" A1 "]\n\t"
#define S2_NEXT(K, Y, A0, A1)                                 \
    "vpbroadcastd " #K "*4(%[" Y "]), %[b]\n\t"               \
    "vpmaddubsw %[b], %[w0], %[t]\n\t"                        \
    "vpaddw %[t], %[" A0 "], %[" A0 "]\n\t"                   \
    "vpmaddubsw %[b], %[w1], %[t]\n\t"                        \
    "vpaddw %[t], %[" A1 "], %[" A1 "]\n\t"
#define S2_STEP(M, K)                                         \
    "vmovdqa " #K "*32(%[u0]), %[w0]\n\t"                     \
    "vmovdqa " #K "*32(%[u1]), %[w1]\n\t"                     \
    M(K, "y0", "a00", "a10") M(K, "y1", "a01", "a11")
#define S2_OUT                                                                                  \
    "vpmaddwd %[s0], %[a00], %[a00]\n\t" "vpaddd %[a00], %[i00], %[i00]\n\t"                    \
    "vpmaddwd %[s0], %[a01], %[a01]\n\t" "vpaddd %[a01], %[i01], %[i01]\n\t"                    \
    "vpmaddwd %[s1], %[a10], %[a10]\n\t" "vpaddd %[a10], %[i10], %[i10]\n\t"                    \
    "vpmaddwd %[s1], %[a11], %[a11]\n\t" "vpaddd %[a11], %[i11], %[i11]\n\t"
#define S2_SCALES "vmovdqa (%[sw0]), %[s0]\n\t" "vmovdqa (%[sw1]), %[s1]\n\t"
/* a 16-element sub-block in two int16 sums of two steps */
#define S2_SPLIT S2_SCALES S2_STEP(S2_FIRST, 0) S2_STEP(S2_NEXT, 1) S2_OUT \
    S2_STEP(S2_FIRST, 2) S2_STEP(S2_NEXT, 3) S2_OUT
#define S2_REGS __m256i a00, a01, a10, a11, w0, w1, b, t, s0, s1
#define S2_ASM(CODE)                                                                                            \
    __asm__ volatile(CODE                                                                                       \
            : [a00] "=&x"(a00), [a01] "=&x"(a01), [a10] "=&x"(a10), [a11] "=&x"(a11), [w0] "=&x"(w0),          \
              [w1] "=&x"(w1), [b] "=&x"(b), [t] "=&x"(t), [s0] "=&x"(s0), [s1] "=&x"(s1), [i00] "+x"(i00),      \
              [i01] "+x"(i01), [i10] "+x"(i10), [i11] "+x"(i11)                                            \
            : [u0] "r"(u0), [u1] "r"(u1), [y0] "r"(y0), [y1] "r"(y1), [sw0] "r"(sw0), [sw1] "r"(sw1)            \
            : "memory")

#endif
