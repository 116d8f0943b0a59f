/* x86_avx512_x16_k.c - Q3_K times Q8_K in vec_dot's order from the x16
 * layout (repack.h), row per lane, with AVX512-VNNI.
 *
 * Q3_K's vec_dot keeps, per row, 8 int32 lanes per super-block: lane k
 * sums elements 128h + 32q + 4k..4k+3 (h < 2, q < 4) times y, each
 * 4-product sum times its 16-element sub-block's signed 6-bit scale
 * (sub-block 8h + 2q + k/4), exactly; then one fma per lane with d_w·d_y
 * and qt_hsum8's adds at the end.  In the layout, qs chunk 8h + k holds
 * bytes 4k..4k+3 of qs[32h..32h+31] of the 16 rows, whose 2-bit fields
 * 2q are those four elements, and hmask chunk k the same elements' high
 * bits (bit 4h + q).  So eight registers hold the 16 rows' eight lanes,
 * as for Q2_K (x86_avx512_repack_k.c), and per chunk and field:
 *   - u = q + 4·high (0..7) as unsigned bytes (the high bit shifted to
 *     bit 2 and merged by a vpternlogd: a vptestmb and a masked add
 *     measured the same, with a register copy more), and vpdpbusd of u by the
 *     four y bytes starting from -4·(their sum): vec_dot's
 *     (q - 4·(1 - high))·y sum, |.| <= 4·4·128, exactly;
 *   - vpdpwssd of that int16 with the row's scale taken by a vpshufb into
 *     the high byte of the lane's low half (vpshufb cannot sign-extend;
 *     the sums come out 256 times vec_dot's and are shifted back before
 *     the conversion, |.| < 2^28: no overflow, no rest).
 * Six vector instructions per 64 elements of 16 rows against the row
 * kernel's twelve per 64 of one (x86_avx512_k.c).  Bit for bit vec_dot's.
 * From L2 it runs ~23 GB/s a core on a Sapphire Rapids (~4 cycles per 64
 * elements of 16 rows), so the matrix-vector product still shares its
 * time between the vector ports and memory: 4096 x 4096, 2 threads,
 * 76-80% of the read rate against the rows' 72-76%; the loop order
 * (fields outer) and the distance of the L2 prefetch (3, 6, 12 KB)
 * measured level or slower. */
#if defined(__x86_64__)

#include <immintrin.h>
#include <stdalign.h>
#include <stdint.h>
#include <string.h>

#include "blocks.h"
#include "repack.h"
#include "x86_avx512_tiles.h"
#include "x86_avx512_wide.h"

/* vpshufb control: byte `at` of each dword to byte 1 (the high byte of
 * the low int16 half), the rest zero. */
INLINE __m512i high_byte_at(int at)
{
    const int z = (int)0x80800080;
    return _mm512_set4_epi32(z | (12 + at) << 8, z | (8 + at) << 8, z | (4 + at) << 8, z | at << 8);
}

INLINE void x16_vec_dot_q3_K(int nb, float *s, const uint8_t *group, const qt_block_q8_K *y)
{
    const size_t sb = QT_X16_ROWS * sizeof(qt_block_q3_K);
    const __m512i m3 = _mm512_set1_epi8(3), four = _mm512_set1_epi8(4);
    __m512 acc[8];
    for (int k = 0; k < 8; k++) acc[k] = _mm512_setzero_ps();
    for (int b = 0; b < nb; b++) {
        const uint8_t *blk = group + (size_t)b * sb;
        const qt_block_q8_K *yb = y + b;
        /* -4 times each four y bytes' sum: dword i for elements 4i..4i+3 */
        alignas(64) int32_t bias[64];
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) {
            const __m512i t = qt_dpbusd512(_mm512_setzero_si512(), four, _mm512_loadu_si512((const void *)(yb->qs + 64 * v)));
            _mm512_store_si512((void *)(bias + 16 * v), _mm512_sub_epi32(_mm512_setzero_si512(), t));
        }
        /* read back from memory: each start of a sum is then a broadcast
         * load, where the compiler, knowing the values, had extracted
         * them from registers with two shuffles each */
        __asm__ volatile("" : : "r"(bias) : "memory");
        __m512i sc[4];
        qt_x16_scales_q3_K(blk, sc);
        const __m512 d = _mm512_mul_ps(_mm512_set1_ps(yb->d),
                                       _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(blk + QT_X16_Q3_K_D))));
        __m512i sum[8];
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) sum[k] = _mm512_setzero_si512();
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            prefetch_part(blk, sb, h, 2, X16_FAR);
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) {
                const __m512i raw = _mm512_loadu_si512((const void *)(blk + QT_X16_Q3_K_QS + 64 * (8 * h + k)));
                const __m512i hm = _mm512_loadu_si512((const void *)(blk + QT_X16_Q3_K_HM + 64 * k));
#pragma GCC unroll 4
                for (int q = 0; q < 4; q++) {
                    const __m512i v = _mm512_and_si512(q ? _mm512_srli_epi16(raw, 2 * q) : raw, m3);
                    /* the high bit (4h + q) moved to bit 2 (in 16-bit
                     * lanes: the byte's own bits, bit 2 only kept) */
                    const int at = 4 * h + q;
                    const __m512i hs = at > 2 ? _mm512_srli_epi16(hm, at - 2) : at < 2 ? _mm512_slli_epi16(hm, 2 - at) : hm;
                    const __m512i u = _mm512_ternarylogic_epi32(v, hs, four, 0xf8); /* v | (hs & 4) */
                    const int i = 32 * h + 8 * q + k; /* the four y bytes' dword */
                    const __m512i dot = dot4_bcast(_mm512_set1_epi32(bias[i]), u, yb->qs + 4 * i, 1);
                    const int j = 8 * h + 2 * q + k / 4; /* the sub-block */
                    sum[k] = qt_dpwssd512(sum[k], dot, _mm512_shuffle_epi8(sc[j / 4], high_byte_at(j % 4)));
                }
            }
        }
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++)
            acc[k] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(_mm512_srai_epi32(sum[k], 8)), acc[k]);
    }
    _mm512_storeu_ps(s, hsum8_lanes(acc));
}

QT_X16_K_COLUMNS(qt_avx512_vnni_x16_dot_q3_K, x16_vec_dot_q3_K)

#else

/* ISO C wants a declaration in every translation unit. */
typedef int qt_x86_avx512_x16_k_unused;

#endif
