/* x86_avx512_repack_k.c - the wide repack kernels (repack.h) for Q4_K and
 * Q2_K with AVX-512, and the same with AVX512-VNNI.
 *
 * As for Q4_0 (x86_avx512_repack.c), each of 16 rows owns one int32 lane.
 * A super-block of the 16 rows is first transposed into a panel: 64 vectors
 * holding quant bytes 4i..4i+3 of every row (they pair with activation
 * bytes 4i..4i+3), the per-row scales and mins, d and dmin.  The panel
 * (5 KB, in L1) then serves every column of the call before the next
 * super-block is packed, 4 columns at a time sharing each load, with the
 * float accumulators kept in the output (acc) and on the stack (accm)
 * between super-blocks.
 *
 * The integer sums are exact and the float work is the reference's: per
 * column, d_w * d_y and dmin_w * d_y once per super-block, then one fma
 * pair per group (gemm order) or per super-block (gemv order), in order,
 * and acc - accm at the end; so the bits equal quant/repack_ref.c's.
 *   Q4_K: sum(q.y) per 32-element sub-block (q <= 15: vpmaddubsw pairs
 *     stay below 2 * 15 * 128), times its 6-bit scale in int32; the mins
 *     term m0.b0 + m1.b1 per group with vpmaddwd on int16 pairs, the
 *     activation pair sums wrapped to int16 as the reference forms them.
 *   Q2_K: the 4-bit scale is folded into the quant bytes at packing
 *     (q.sc <= 45, no carry between bytes of a 16-bit multiply), so one
 *     chain of vpdpbusd gives a whole group's scaled sum (one column,
 *     with no panel to share the folding, multiplies each sub-block's
 *     sum by its scale instead); pairs of 4-bit
 *     mins times pairs of bsums, read straight from the activation block,
 *     with vpmaddwd. */
#if defined(__x86_64__)

#include <immintrin.h>
#include <stdalign.h>

#include "blocks.h"
#include "repack.h"
#include "x86_avx512_tiles.h"
#include "x86_avx512_wide.h"

/* One super-block of 16 rows, ready for the column loop. */
typedef struct panel {
    __m512i u[64];   /* quant bytes 4i..4i+3 of each row (Q2_K: times the sub-block scale) */
    __m512i sc[8];   /* Q4_K: each row's scale of sub-block j */
    __m512 scf[8];   /* the same as floats */
    __m512i mins[8]; /* int16 pairs (m_2i, m_2i+1); Q4_K uses 4 */
    __m512 d, dmin;
} panel;

/* Columns that share each panel load; their chains and accumulators fill
 * the registers. */
#define NC 4
/* Columns whose accm fits the stack array; more are taken in chunks. */
#define CHUNK 64

/* Two int32 lanes' low 16 bits as one int16 pair. */
INLINE __m512i pair16(__m512i lo, __m512i hi)
{
    return _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16));
}

/* Where a super-block's bytes come from: 16 rows `stride` apart, each
 * turned into row-per-lane form by the loads, or (x16, stride unused) a
 * super-block of a group in repack.h's x16 layout, whose quant chunks are
 * that form already and whose 16-byte row heads sit 16 bytes apart. */
INLINE size_t head_stride(size_t stride, const int x16) { return x16 ? 16 : stride; }

/* The 16 quant vectors of row bytes off..off+63 (rows), i.e. x16 chunks
 * ch..ch+15 from byte at (x16). */
INLINE void quants16(const uint8_t *blk, size_t stride, size_t off, size_t at, int ch, const int x16, __m512i v[16])
{
    if (!x16) {
        load16x16(blk + off, stride, v);
        return;
    }
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++) v[i] = _mm512_loadu_si512((const void *)(blk + at + 64 * (size_t)(ch + i)));
}

/* Q4_K's d, dmin and 6-bit scales and mins of the 16 rows, as
 * quant/repack_ref.c's q4_K_scale_min; the mins as int16 pairs. */
INLINE void scales_q4_K(panel *p, const uint8_t *blk, size_t stride, const int x16)
{
    __m512i h[4];
    load16x4(blk, head_stride(stride, x16), h); /* d | dmin, then the 12 scale bytes */
    p->d = halves(h[0], 0);
    p->dmin = halves(h[0], 1);
    __m512i m[8];
    q4_K_scales16(h[1], h[2], h[3], p->sc, m);
    for (int g = 0; g < 4; g++) p->mins[g] = pair16(m[2 * g], m[2 * g + 1]);
    for (int j = 0; j < 8; j++) p->scf[j] = _mm512_cvtepi32_ps(p->sc[j]);
}

/* x16 (repack.h): the quants' chunks start after the 16 row heads */
#define X16_Q4_K_QS 256
#define X16_Q2_K_D 256
#define X16_Q2_K_QS 320

INLINE void pack_q4_K(panel *p, const uint8_t *blk, size_t stride, const int x16)
{
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    /* qs byte 32g + 4k + t: low nibble element 64g + 4k + t, high 64g + 32 + 4k + t */
    __m512i raw[32];
    quants16(blk, stride, 16, X16_Q4_K_QS, 0, x16, raw);
    quants16(blk, stride, 80, X16_Q4_K_QS, 16, x16, raw + 16);
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++)
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            p->u[16 * g + k] = _mm512_and_si512(raw[8 * g + k], m4);
            p->u[16 * g + 8 + k] = _mm512_and_si512(_mm512_srli_epi16(raw[8 * g + k], 4), m4);
        }
    scales_q4_K(p, blk, stride, x16);
}

/* Q2_K's per-sub-block 4-bit scales, each in both int16 halves of its
 * lanes (sw), and its mins as int16 pairs (p->mins). */
INLINE void scales_q2_K(panel *p, __m512i sw[16], const uint8_t *blk, size_t stride, const int x16)
{
    __m512i m[16], h[4];
    load16x4(blk, head_stride(stride, x16), h);
#pragma GCC unroll 4
    for (int t = 0; t < 4; t++)
#pragma GCC unroll 4
        for (int b = 0; b < 4; b++) {
            const __m512i sc = _mm512_and_si512(byte_of(h[t], b), _mm512_set1_epi32(15));
            sw[4 * t + b] = pair16(sc, sc);
            m[4 * t + b] = _mm512_srli_epi32(byte_of(h[t], b), 4);
        }
    for (int i = 0; i < 8; i++) p->mins[i] = pair16(m[2 * i], m[2 * i + 1]);
}

/* Q2_K's d and dmin: the block's last 16 bytes end with d | dmin. */
INLINE void d_q2_K(panel *p, const uint8_t *blk, size_t stride, const int x16)
{
    __m512i h[4];
    if (x16)
        h[3] = _mm512_loadu_si512((const void *)(blk + X16_Q2_K_D));
    else
        load16x4(blk + 68, stride, h);
    p->d = halves(h[3], 0);
    p->dmin = halves(h[3], 1);
}

/* The 2-bit quants of qs byte 32g + 4k + t, bits 2q (element 128g + 32q +
 * 4k + t, sub-block 8g + 2q + k/4), times that sub-block's scale. */
INLINE __m512i q2_K_scaled(__m512i raw, int q, __m512i sw)
{
    const __m512i v = _mm512_and_si512(_mm512_srli_epi16(raw, 2 * q), _mm512_set1_epi8(3));
    return _mm512_mullo_epi16(v, sw);
}

INLINE void pack_q2_K(panel *p, const uint8_t *blk, size_t stride, const int x16)
{
    __m512i sw[16], raw[16]; /* per sub-block: scale in both int16 halves */
    scales_q2_K(p, sw, blk, stride, x16);
    quants16(blk, stride, 16, X16_Q2_K_QS, 0, x16, raw);
#pragma GCC unroll 2
    for (int g = 0; g < 2; g++)
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++)
#pragma GCC unroll 4
            for (int q = 0; q < 4; q++) p->u[32 * g + 8 * q + k] = q2_K_scaled(raw[8 * g + k], q, sw[8 * g + 2 * q + k / 4]);
    d_q2_K(p, blk, stride, x16);
}

/* Adds one super-block of `nc` columns (y: their blocks, y_stride apart)
 * to acc (in sa) and accm (in sm), 16 floats per column each. */
INLINE void columns(const panel *p, const int nc, const int q4k, const int gemm, const int vnni, const uint8_t *y,
                    size_t y_stride, const uint32_t *pairs, size_t pairs_stride, float *sa, float *sm)
{
    const qt_block_q8_K *yb[NC];
    __m512 acc[NC], accm[NC], d[NC], dm[NC];
    __m512i ist[NC], imt[NC];
#pragma GCC unroll 4
    for (int c = 0; c < nc; c++) {
        yb[c] = (const qt_block_q8_K *)(y + c * y_stride);
        acc[c] = _mm512_load_ps(sa + 16 * c);
        accm[c] = _mm512_loadu_ps(sm + 16 * c);
        const __m512 dy = _mm512_set1_ps(yb[c]->d);
        d[c] = _mm512_mul_ps(p->d, dy);
        dm[c] = _mm512_mul_ps(p->dmin, dy);
        ist[c] = imt[c] = _mm512_setzero_si512();
    }
    for (int g = 0; g < (q4k ? 4 : 2); g++) {
        __m512i is[NC], im[NC];
        __m512 isf[NC];
        if (q4k) {
            /* Σ sc·dot of the group's two sub-blocks in float: each
             * product (|dot| <= 32·15·127, sc <= 63) and their sum stay
             * below 2^24, so both are exact and equal the integer sum the
             * reference converts, without vpmulld's two uops each */
            __m512i dot0[NC], dot1[NC];
#pragma GCC unroll 4
            for (int c = 0; c < nc; c++) dot0[c] = dot1[c] = _mm512_setzero_si512();
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) {
                const __m512i u0 = p->u[8 * (2 * g) + k], u1 = p->u[8 * (2 * g + 1) + k];
#pragma GCC unroll 4
                for (int c = 0; c < nc; c++) {
                    dot0[c] = dot4_bcast(dot0[c], u0, yb[c]->qs + 32 * (2 * g) + 4 * k, vnni);
                    dot1[c] = dot4_bcast(dot1[c], u1, yb[c]->qs + 32 * (2 * g + 1) + 4 * k, vnni);
                }
            }
#pragma GCC unroll 4
            for (int c = 0; c < nc; c++)
                isf[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot1[c]), p->scf[2 * g + 1],
                                         _mm512_mul_ps(_mm512_cvtepi32_ps(dot0[c]), p->scf[2 * g]));
            /* the mins' bsum pairs, formed once per matmul (prep) */
#pragma GCC unroll 4
            for (int c = 0; c < nc; c++)
                im[c] = _mm512_madd_epi16(p->mins[g], _mm512_set1_epi32((int)pairs[c * pairs_stride + g]));
        } else {
            /* two chains per column, so that vpdpbusd's latency overlaps */
            __m512i e[NC], o[NC];
#pragma GCC unroll 4
            for (int c = 0; c < nc; c++) e[c] = o[c] = _mm512_setzero_si512();
#pragma GCC unroll 16
            for (int i = 32 * g; i < 32 * g + 32; i += 2) {
                const __m512i u0 = p->u[i], u1 = p->u[i + 1];
#pragma GCC unroll 4
                for (int c = 0; c < nc; c++) {
                    e[c] = dot4_bcast(e[c], u0, yb[c]->qs + 4 * i, vnni);
                    o[c] = dot4_bcast(o[c], u1, yb[c]->qs + 4 * i + 4, vnni);
                }
            }
#pragma GCC unroll 4
            for (int c = 0; c < nc; c++) {
                is[c] = _mm512_add_epi32(e[c], o[c]);
                im[c] = _mm512_setzero_si512();
            }
            /* the columns' mins side by side: one column's four in turn
             * were a 16-cycle chain, and GCC left them a loop */
#pragma GCC unroll 4
            for (int i = 4 * g; i < 4 * g + 4; i++)
#pragma GCC unroll 4
                for (int c = 0; c < nc; c++) {
                    /* vpdpwssd: the pair products and their add in one uop */
                    if (vnni)
                        __asm__("%{evex%} vpdpwssd %2%{1to16%}, %1, %0"
                                : "+v"(im[c])
                                : "v"(p->mins[i]), "m"(*(const int32_t *)(yb[c]->bsums + 2 * i)));
                    else {
                        int32_t pair;
                        memcpy(&pair, yb[c]->bsums + 2 * i, sizeof pair);
                        im[c] = _mm512_add_epi32(im[c], _mm512_madd_epi16(p->mins[i], _mm512_set1_epi32(pair)));
                    }
                }
        }
#pragma GCC unroll 4
        for (int c = 0; c < nc; c++) {
            if (gemm) {
                acc[c] = _mm512_fmadd_ps(q4k ? isf[c] : _mm512_cvtepi32_ps(is[c]), d[c], acc[c]);
                accm[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(im[c]), dm[c], accm[c]);
            } else {
                ist[c] = _mm512_add_epi32(ist[c], q4k ? _mm512_cvtps_epi32(isf[c]) : is[c]);
                imt[c] = _mm512_add_epi32(imt[c], im[c]);
            }
        }
    }
#pragma GCC unroll 4
    for (int c = 0; c < nc; c++) {
        if (!gemm) {
            acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ist[c]), d[c], acc[c]);
            accm[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(imt[c]), dm[c], accm[c]);
        }
        _mm512_store_ps(sa + 16 * c, acc[c]);
        _mm512_storeu_ps(sm + 16 * c, accm[c]);
    }
}

/* acc + u.s per 4-byte group, s from a register: columns2's broadcasts,
 * each shared by two panels. */
INLINE __m512i dot4_reg(__m512i acc, __m512i u, __m512i s, const int vnni)
{
    if (vnni) return qt_dpbusd512(acc, u, s);
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)));
}

/* acc + the int16 pair products of a and b summed per lane: vpdpwssd with
 * VNNI, else vpmaddwd and an add. */
INLINE __m512i pairs_acc(__m512i acc, __m512i a, __m512i b, const int vnni)
{
    return vnni ? qt_dpwssd512(acc, a, b) : _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
}

/* The 4 activation bytes at p in every lane. */
INLINE __m512i bcast4(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm512_set1_epi32(v);
}

/* The two panels' sums of sub-block j's quant vectors k0..k1-1 times the
 * columns' activation bytes: a chain per panel and column, each
 * broadcast loaded once for both panels. */
INLINE void chains2(const panel *const pp[2], const int nc, const int vnni, const qt_block_q8_K *const yb[NC], int j,
                    int k0, int k1, __m512i dot[2][NC])
{
#pragma GCC unroll 4
    for (int c = 0; c < nc; c++) dot[0][c] = dot[1][c] = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int k = k0; k < k1; k++) {
        const __m512i u0 = pp[0]->u[8 * j + k], u1 = pp[1]->u[8 * j + k];
#pragma GCC unroll 4
        for (int c = 0; c < nc; c++) {
            const __m512i yv = bcast4(yb[c]->qs + 32 * j + 4 * k);
            dot[0][c] = dot4_reg(dot[0][c], u0, yv, vnni);
            dot[1][c] = dot4_reg(dot[1][c], u1, yv, vnni);
        }
    }
}

/* columns2 for Q4_K in the gemv order, where each output's super-block is
 * one exact integer: the sub-block scales go in by vpdpwssd on the sums
 * of 16 elements (|sum| <= 16 * 15 * 128 fits int16, so the lane's high
 * half is its sign, which meets the scale lane's zero high half), 2 uops
 * per sub-block and output vector where the gemm order's float steps
 * take 5 per group of two, and the mins by vpdpwssd into one integer. */
INLINE void columns2_q4_K_gemv(const panel *const pp[2], const int nc, const int vnni, const uint8_t *y,
                               size_t y_stride, const uint32_t *pairs, size_t pairs_stride, float *const sa[2],
                               float *const sm[2])
{
    const qt_block_q8_K *yb[NC];
    __m512i ist[2][NC];
#pragma GCC unroll 4
    for (int c = 0; c < nc; c++) {
        yb[c] = (const qt_block_q8_K *)(y + c * y_stride);
        ist[0][c] = ist[1][c] = _mm512_setzero_si512();
    }
    for (int j = 0; j < 8; j++)
#pragma GCC unroll 2
        for (int hf = 0; hf < 2; hf++) {
            __m512i dot[2][NC];
            chains2(pp, nc, vnni, yb, j, 4 * hf, 4 * hf + 4, dot);
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
                for (int c = 0; c < nc; c++)
                    ist[h][c] = pairs_acc(ist[h][c], dot[h][c], pp[h]->sc[j], vnni);
        }
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
        for (int c = 0; c < nc; c++) {
            const __m512 d = _mm512_mul_ps(pp[h]->d, _mm512_set1_ps(yb[c]->d));
            _mm512_store_ps(sa[h] + 16 * c,
                            _mm512_fmadd_ps(_mm512_cvtepi32_ps(ist[h][c]), d, _mm512_load_ps(sa[h] + 16 * c)));
        }
    __m512i imt[2][NC];
#pragma GCC unroll 4
    for (int c = 0; c < nc; c++) imt[0][c] = imt[1][c] = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++)
#pragma GCC unroll 4
        for (int c = 0; c < nc; c++) {
            const __m512i pr = _mm512_set1_epi32((int)pairs[c * pairs_stride + g]);
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++)
                imt[h][c] = pairs_acc(imt[h][c], pp[h]->mins[g], pr, vnni);
        }
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
        for (int c = 0; c < nc; c++) {
            const __m512 dm = _mm512_mul_ps(pp[h]->dmin, _mm512_set1_ps(yb[c]->d));
            _mm512_storeu_ps(sm[h] + 16 * c,
                             _mm512_fmadd_ps(_mm512_cvtepi32_ps(imt[h][c]), dm, _mm512_loadu_ps(sm[h] + 16 * c)));
        }
}

/* columns() for two panels at once (32 rows: two groups of a matrix, or a
 * gated feed-forward's gate and up groups): each activation broadcast is
 * loaded once for both panels.  With one load per vpdpbusd the loads, not
 * the multiplies, set columns()'s pace: a loop of vpdpbusd each with its
 * own broadcast ran ~3.8 G/s on this Xeon, one broadcast per two 4.4 G/s,
 * all operands in registers 5.8.  The scale sums go first and the mins
 * after, each with its own accumulators (together they would not fit the
 * registers); every output's float steps are columns()'s, in its order,
 * so the bits are too. */
INLINE void columns2(const panel *const pp[2], const int nc, const int q4k, const int gemm, const int vnni,
                     const uint8_t *y, size_t y_stride, const uint32_t *pairs, size_t pairs_stride,
                     float *const sa[2], float *const sm[2])
{
    if (q4k && !gemm) {
        columns2_q4_K_gemv(pp, nc, vnni, y, y_stride, pairs, pairs_stride, sa, sm);
        return;
    }
    const qt_block_q8_K *yb[NC];
    alignas(64) float dd[2][NC][16]; /* d_w * d_y per panel and column */
    __m512 acc[2][NC];
    __m512i ist[2][NC];
#pragma GCC unroll 4
    for (int c = 0; c < nc; c++) {
        yb[c] = (const qt_block_q8_K *)(y + c * y_stride);
        const __m512 dy = _mm512_set1_ps(yb[c]->d);
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            acc[h][c] = _mm512_load_ps(sa[h] + 16 * c);
            _mm512_store_ps(dd[h][c], _mm512_mul_ps(pp[h]->d, dy));
            ist[h][c] = _mm512_setzero_si512();
        }
    }
    for (int g = 0; g < (q4k ? 4 : 2); g++) {
        __m512 isf[2][NC];
        __m512i is[2][NC];
        if (q4k) {
            /* the sub-blocks one after the other: sub-block 0's product
             * with its scale waits in isf while sub-block 1's chains run */
#pragma GCC unroll 2
            for (int sb = 0; sb < 2; sb++) {
                const int j = 2 * g + sb;
                __m512i dot[2][NC];
                chains2(pp, nc, vnni, yb, j, 0, 8, dot);
#pragma GCC unroll 2
                for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
                    for (int c = 0; c < nc; c++)
                        isf[h][c] = sb ? _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[h][c]), pp[h]->scf[j], isf[h][c])
                                       : _mm512_mul_ps(_mm512_cvtepi32_ps(dot[h][c]), pp[h]->scf[j]);
            }
        } else {
            __m512i e[2][NC], o[2][NC];
#pragma GCC unroll 4
            for (int c = 0; c < nc; c++) e[0][c] = e[1][c] = o[0][c] = o[1][c] = _mm512_setzero_si512();
#pragma GCC unroll 16
            for (int i = 32 * g; i < 32 * g + 32; i += 2) {
                const __m512i u0 = pp[0]->u[i], u0o = pp[0]->u[i + 1], u1 = pp[1]->u[i], u1o = pp[1]->u[i + 1];
#pragma GCC unroll 4
                for (int c = 0; c < nc; c++) {
                    const __m512i ye = bcast4(yb[c]->qs + 4 * i), yo = bcast4(yb[c]->qs + 4 * i + 4);
                    e[0][c] = dot4_reg(e[0][c], u0, ye, vnni);
                    e[1][c] = dot4_reg(e[1][c], u1, ye, vnni);
                    o[0][c] = dot4_reg(o[0][c], u0o, yo, vnni);
                    o[1][c] = dot4_reg(o[1][c], u1o, yo, vnni);
                }
            }
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
                for (int c = 0; c < nc; c++) is[h][c] = _mm512_add_epi32(e[h][c], o[h][c]);
        }
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
            for (int c = 0; c < nc; c++) {
                if (gemm)
                    acc[h][c] = _mm512_fmadd_ps(q4k ? isf[h][c] : _mm512_cvtepi32_ps(is[h][c]),
                                                _mm512_load_ps(dd[h][c]), acc[h][c]);
                else
                    ist[h][c] = _mm512_add_epi32(ist[h][c], q4k ? _mm512_cvtps_epi32(isf[h][c]) : is[h][c]);
            }
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
        for (int c = 0; c < nc; c++) {
            if (!gemm) acc[h][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ist[h][c]), _mm512_load_ps(dd[h][c]), acc[h][c]);
            _mm512_store_ps(sa[h] + 16 * c, acc[h][c]);
        }

    /* the mins: Σ m·bsum per group, as columns() forms them */
    __m512 accm[2][NC], dm[2][NC];
    __m512i imt[2][NC];
#pragma GCC unroll 4
    for (int c = 0; c < nc; c++) {
        const __m512 dy = _mm512_set1_ps(yb[c]->d);
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            accm[h][c] = _mm512_loadu_ps(sm[h] + 16 * c);
            dm[h][c] = _mm512_mul_ps(pp[h]->dmin, dy);
            imt[h][c] = _mm512_setzero_si512();
        }
    }
    for (int g = 0; g < (q4k ? 4 : 2); g++) {
        __m512i im[2][NC];
#pragma GCC unroll 4
        for (int c = 0; c < nc; c++) {
            if (q4k) {
                const __m512i pr = _mm512_set1_epi32((int)pairs[c * pairs_stride + g]);
                im[0][c] = _mm512_madd_epi16(pp[0]->mins[g], pr);
                im[1][c] = _mm512_madd_epi16(pp[1]->mins[g], pr);
                continue;
            }
            im[0][c] = im[1][c] = _mm512_setzero_si512();
#pragma GCC unroll 4
            for (int i = 4 * g; i < 4 * g + 4; i++) {
                int32_t pair;
                memcpy(&pair, yb[c]->bsums + 2 * i, sizeof pair);
                const __m512i pr = _mm512_set1_epi32(pair);
#pragma GCC unroll 2
                for (int h = 0; h < 2; h++)
                    im[h][c] = pairs_acc(im[h][c], pp[h]->mins[i], pr, vnni);
            }
        }
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
            for (int c = 0; c < nc; c++) {
                if (gemm)
                    accm[h][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(im[h][c]), dm[h][c], accm[h][c]);
                else
                    imt[h][c] = _mm512_add_epi32(imt[h][c], im[h][c]);
            }
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
        for (int c = 0; c < nc; c++) {
            if (!gemm) accm[h][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(imt[h][c]), dm[h][c], accm[h][c]);
            _mm512_storeu_ps(sm[h] + 16 * c, accm[h][c]);
        }
}

/* A super-block of the 16 rows: block b of each row, or (x16) the b-th
 * 16 block sizes of the group. */
INLINE const uint8_t *super_block(const void *w, int b, size_t bs, const int x16)
{
    return (const uint8_t *)w + (size_t)b * bs * (x16 ? 16 : 1);
}

/* Asks for the super-block `ahead` on of the 16 rows (rows: from block b
 * + ahead of each row, on into the next group's rows; x16: the group is
 * one stream, which runs on into the next group). */
INLINE void prefetch_sb(const void *w, size_t stride, int nb, int b, int ahead, size_t bs, const int x16)
{
    if (x16) {
        const uint8_t *p = super_block(w, b + ahead, bs, 1);
        for (size_t o = 0; o < 16 * bs; o += 64) _mm_prefetch((const char *)(p + o), _MM_HINT_T0);
    } else {
        prefetch_ahead(w, stride, (size_t)nb * bs, (size_t)(b + ahead) * bs, bs);
    }
}

/* np (1 or 2) groups of 16 rows, w[i]'s outputs into s[i]; two take
 * columns2, each super-block of both packed before the columns meet them. */
INLINE void run_k(int n, int ncols, const int gemm, float *const s[2], size_t ldo, const void *const w[2],
                  size_t w_stride, const void *y, size_t y_stride, const void *aux, size_t aux_stride, bool stream,
                  const int q4k, const int vnni, const int x16, const int np)
{
    const size_t ps = aux_stride / sizeof(uint32_t);
    const size_t bs = q4k ? sizeof(qt_block_q4_K) : sizeof(qt_block_q2_K);
    alignas(64) panel p[2];
    const panel *const pp[2] = {&p[0], &p[1]};
    /* acc and accm of the chunk's columns side by side: read and written
     * in s itself, ldo apart (ldo = the matrix's rows, a multiple of 4
     * KB for most), the columns' lines fell in the same few L1 sets and
     * the kernel ran at 0.8x */
    alignas(64) float sa[2][CHUNK * 16], sm[2][CHUNK * 16];
    for (int i = 0; i < np; i++) stream = qt_rp_stream_out(stream, s[i], ldo);
    for (int c0 = 0; c0 < ncols; c0 += CHUNK) {
        const int nch = ncols - c0 < CHUNK ? ncols - c0 : CHUNK;
        const uint8_t *yc = (const uint8_t *)y + (size_t)c0 * y_stride;
        for (int i = 0; i < np; i++)
            for (int c = 0; c < nch; c++) {
                _mm512_store_ps(sa[i] + 16 * c, _mm512_setzero_ps());
                _mm512_store_ps(sm[i] + 16 * c, _mm512_setzero_ps());
            }
        for (int b = 0; b < n / QT_QK_K; b++) {
            for (int i = 0; i < np; i++) {
                const uint8_t *blk = super_block(w[i], b, bs, x16);
                if (b + 2 < n / QT_QK_K) prefetch_sb(w[i], w_stride, n / QT_QK_K, b, 2, bs, x16);
                if (!stream) qt_rp_prefetch_out(s[i] + (size_t)c0 * ldo, ldo, nch, b, n / QT_QK_K);
                if (q4k)
                    pack_q4_K(&p[i], blk, w_stride, x16);
                else
                    pack_q2_K(&p[i], blk, w_stride, x16);
            }
            const uint8_t *yb = yc + (size_t)b * sizeof(qt_block_q8_K);
            const uint32_t *pairs = q4k ? (const uint32_t *)aux + 4 * b : NULL;
            int c = 0;
            if (np == 2) {
                for (; nch - c >= NC; c += NC)
                    columns2(pp, NC, q4k, gemm, vnni, yb + c * y_stride, y_stride, pairs + (c0 + c) * ps, ps,
                             (float *const[2]){sa[0] + 16 * c, sa[1] + 16 * c},
                             (float *const[2]){sm[0] + 16 * c, sm[1] + 16 * c});
                for (; c < nch; c++)
                    columns2(pp, 1, q4k, gemm, vnni, yb + c * y_stride, y_stride, pairs + (c0 + c) * ps, ps,
                             (float *const[2]){sa[0] + 16 * c, sa[1] + 16 * c},
                             (float *const[2]){sm[0] + 16 * c, sm[1] + 16 * c});
                continue;
            }
            for (; nch - c >= NC; c += NC)
                columns(&p[0], NC, q4k, gemm, vnni, yb + c * y_stride, y_stride, pairs + (c0 + c) * ps, ps,
                        sa[0] + 16 * c, sm[0] + 16 * c);
            for (; c < nch; c++)
                columns(&p[0], 1, q4k, gemm, vnni, yb + c * y_stride, y_stride, pairs + (c0 + c) * ps, ps,
                        sa[0] + 16 * c, sm[0] + 16 * c);
        }
        for (int i = 0; i < np; i++) {
            float *sc = s[i] + (size_t)c0 * ldo;
            for (int c = 0; c < nch; c++) {
                const __m512 v = _mm512_sub_ps(_mm512_load_ps(sa[i] + 16 * c), _mm512_load_ps(sm[i] + 16 * c));
                if (stream)
                    _mm512_stream_ps(sc + c * ldo, v);
                else
                    _mm512_storeu_ps(sc + c * ldo, v);
            }
        }
    }
    /* the streaming stores ordered before whatever reads s next */
    if (stream) _mm_sfence();
}

/* ---- one column (decode) ------------------------------------------------
 * Nothing else reuses the transposed quants, so they go from the shuffles
 * straight into vpdpbusd: no panel stored and loaded back (64 stores and
 * 64 loads per super-block of 16 rows), only the scales pass through one.
 * The integer sums and float operations are run_k's gemv order exactly.
 * From rows the prefetch runs GEMV_AHEAD super-blocks ahead, on into the
 * next group, so no group starts waiting on memory; from the x16 layout
 * prefetch_part spreads it over the sums. */
#define GEMV_AHEAD 4

/* One Q4_K super-block of the 16 rows against y: each row's exact
 * sum of scale.q.y (is) and mins term (im); d and dmin in p. */
INLINE void sums_q4_K(panel *p, const uint8_t *blk, size_t stride, const qt_block_q8_K *y, __m512i *is, __m512i *im,
                      const int vnni, const int x16, size_t far)
{
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    scales_q4_K(p, blk, stride, x16);
    *is = *im = _mm512_setzero_si512();
    for (int h = 0; h < 2; h++) {
        /* qs bytes 64h..64h+63: groups 2h and 2h + 1 (see pack_q4_K) */
        __m512i raw[16];
        quants16(blk, stride, 16 + 64 * h, X16_Q4_K_QS, 16 * h, x16, raw);
#pragma GCC unroll 2
        for (int gg = 0; gg < 2; gg++) {
            const int g = 2 * h + gg;
            if (far) prefetch_part(blk, 16 * sizeof(qt_block_q4_K), g, 4, far);
            __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) {
                const __m512i r = raw[8 * gg + k];
                lo = dot4_bcast(lo, _mm512_and_si512(r, m4), y->qs + 64 * g + 4 * k, vnni);
                hi = dot4_bcast(hi, _mm512_and_si512(_mm512_srli_epi16(r, 4), m4), y->qs + 64 * g + 32 + 4 * k, vnni);
            }
            *is = _mm512_add_epi32(*is, _mm512_mullo_epi32(lo, p->sc[2 * g]));
            *is = _mm512_add_epi32(*is, _mm512_mullo_epi32(hi, p->sc[2 * g + 1]));
            const int16_t b0 = (int16_t)(y->bsums[4 * g] + y->bsums[4 * g + 1]);
            const int16_t b1 = (int16_t)(y->bsums[4 * g + 2] + y->bsums[4 * g + 3]);
            const uint32_t pair = (uint16_t)b0 | (uint32_t)(uint16_t)b1 << 16;
            *im = _mm512_add_epi32(*im, _mm512_madd_epi16(p->mins[g], _mm512_set1_epi32((int)pair)));
        }
    }
}

/* vpshufb controls for the lanes' dwords of scale bytes: byte `at` of each
 * to the low byte, the rest zero (byte_at), or bytes at and at + 1 to the
 * low bytes of the two int16 halves (pair_at). */
INLINE __m512i byte_at(int at)
{
    const int z = (int)0x80808000;
    return _mm512_set4_epi32(z | (12 + at), z | (8 + at), z | (4 + at), z | at);
}

INLINE __m512i pair_at(int at)
{
    const int z = (int)0x80008000;
#define PAIR_AT(i) (z | (4 * (i) + at) | (4 * (i) + at + 1) << 16)
    return _mm512_set4_epi32(PAIR_AT(3), PAIR_AT(2), PAIR_AT(1), PAIR_AT(0));
#undef PAIR_AT
}

/* The same for Q2_K (scales folded into the quants as in pack_q2_K). */
INLINE void sums_q2_K(panel *p, const uint8_t *blk, size_t stride, const qt_block_q8_K *y, __m512i *is, __m512i *im,
                      const int vnni, const int x16, size_t far)
{
    /* the scales and min pairs taken from the four head registers where
     * used (x16_vec_dot_q2_K says why) */
    __m512i hd[4], raw[16];
    load16x4(blk, head_stride(stride, x16), hd);
    quants16(blk, stride, 16, X16_Q2_K_QS, 0, x16, raw);
    /* Each sub-block's sum of q·y (|.| <= 16·3·128: an int16) times its
     * scale in one vpmaddwd (VNNI: vpdpwssd) against the scale in the low
     * half of each lane: 16 multiplies where folding the scales into the
     * quants, as pack_q2_K does for the columns that share a panel, took
     * 64 vpmullw, on the pipes vpdpbusd needs.  Integer sums: the same. */
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    __m512i acc[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
#pragma GCC unroll 2
    for (int g = 0; g < 2; g++)
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++)
#pragma GCC unroll 2
            for (int hk = 0; hk < 2; hk++) {
                if (far && hk == 0) prefetch_part(blk, 16 * sizeof(qt_block_q2_K), 4 * g + q, 8, far);
                __m512i sub = _mm512_setzero_si512();
#pragma GCC unroll 4
                for (int k = 4 * hk; k < 4 * hk + 4; k++) {
                    const int i = 32 * g + 8 * q + k; /* pack_q2_K's u[i] */
                    const __m512i v = _mm512_and_si512(_mm512_srli_epi16(raw[8 * g + k], 2 * q), _mm512_set1_epi8(3));
                    sub = dot4_bcast(sub, v, y->qs + 4 * i, vnni);
                }
                const int j = 8 * g + 2 * q + hk;
                const __m512i sc = _mm512_and_si512(_mm512_shuffle_epi8(hd[j / 4], byte_at(j % 4)), m4);
                if (vnni)
                    acc[hk] = qt_dpwssd512(acc[hk], sub, sc);
                else
                    acc[hk] = _mm512_add_epi32(acc[hk], _mm512_madd_epi16(sub, sc));
            }
    *is = _mm512_add_epi32(acc[0], acc[1]);
    *im = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        int32_t pair;
        memcpy(&pair, y->bsums + 2 * i, sizeof pair);
        const __m512i mins = _mm512_srli_epi16(_mm512_shuffle_epi8(hd[i / 2], pair_at(2 * (i % 2))), 4);
        *im = _mm512_add_epi32(*im, _mm512_madd_epi16(mins, _mm512_set1_epi32(pair)));
    }
    d_q2_K(p, blk, stride, x16);
}

/* s[r] = W[r] . y for the 16 rows, in the gemv order. */
INLINE void gemv_k(int n, float *s, const uint8_t *w, size_t stride, const qt_block_q8_K *y, const int q4k,
                   const int vnni, const int x16)
{
    const int nb = n / QT_QK_K;
    const size_t bs = q4k ? sizeof(qt_block_q4_K) : sizeof(qt_block_q2_K);
    __m512 acc = _mm512_setzero_ps(), accm = _mm512_setzero_ps();
    for (int b = 0; b < nb; b++) {
        const uint8_t *blk = super_block(w, b, bs, x16);
        const size_t far = x16 ? X16_FAR : 0;
        if (!x16) prefetch_sb(w, stride, nb, b, GEMV_AHEAD, bs, x16);
        panel p;
        __m512i is, im;
        if (q4k)
            sums_q4_K(&p, blk, stride, y + b, &is, &im, vnni, x16, far);
        else
            sums_q2_K(&p, blk, stride, y + b, &is, &im, vnni, x16, far);
        const __m512 dy = _mm512_set1_ps(y[b].d);
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is), _mm512_mul_ps(p.d, dy), acc);
        accm = _mm512_fmadd_ps(_mm512_cvtepi32_ps(im), _mm512_mul_ps(p.dmin, dy), accm);
    }
    _mm512_storeu_ps(s, _mm512_sub_ps(acc, accm));
}

/* ---- vec_dot's order over the x16 layout (qt_x16_dot) -------------------
 * Where AMX runs Q2_K's batches, its one-token matmuls keep vec_dot's
 * order (quant/tiles.h), which the same layout serves: chunk 8h + k holds
 * bytes 4k..4k+3 of qs[32h..32h+31] of the 16 rows, one per lane, whose
 * 2-bit fields 2q are elements 128h + 32q + 4k..4k+3: vec_dot's lane k of
 * 16-element sub-block 8h + 2q + k/4 for each row.  So eight registers
 * hold the 16 rows' eight lanes: each 4-product sum (|.| <= 4·3·128, an
 * int16) times its row's 4-bit scale in one vpdpwssd against the scale in
 * the low half of each lane, exact.  The float work is vec_dot's per row:
 * the mins' lanes (lane k: sub-blocks 2k and 2k + 1) into the eight
 * chains first, then the sums, per super-block, and qt_hsum8's adds
 * between registers at the end.  Against the row layout's two-row kernel
 * (Xeon, AMX on, 2 threads): 4096 x 4096 1.03-1.08x, tl-q2_k tg128
 * 1.04-1.05x, pp32 1.05-1.10x (one stream of weights), pp512 level.
 * Q4_K's layout serves its vec_dot order the same way, but that kernel
 * ran no faster than the rows' four-row one in a model (tg128 0.96-0.99x)
 * and stays unwritten. */
INLINE void x16_vec_dot_q2_K(int nb, float *s, const uint8_t *group, const qt_block_q8_K *y)
{
    const size_t sb = QT_X16_ROWS * sizeof(qt_block_q2_K);
    const __m512i m3 = _mm512_set1_epi8(3), m4 = _mm512_set1_epi8(0x0f);
    __m512 acc[8];
    for (int k = 0; k < 8; k++) acc[k] = _mm512_setzero_ps();
    for (int b = 0; b < nb; b++) {
        const uint8_t *blk = group + (size_t)b * sb;
        const qt_block_q8_K *yb = y + b;
        /* hd[t] lane r: row r's scale bytes 4t..4t+3 (low nibble the
         * scale, high the min), each vector below taken from them where
         * it is used: all 16 scales and 8 min pairs formed up front stayed
         * live across the sums and spilled */
        __m512i hd[4];
        load16x4(blk, 16, hd);
        panel p;
        d_q2_K(&p, blk, 0, 1);
        const __m512 yd = _mm512_set1_ps(yb->d), d = _mm512_mul_ps(yd, p.d), dmin = _mm512_mul_ps(yd, p.dmin);
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            int32_t pair;
            memcpy(&pair, yb->bsums + 2 * k, sizeof pair);
            /* (m_2k, m_2k+1) as int16 halves: the bytes' high nibbles */
            const __m512i mins = _mm512_srli_epi16(_mm512_shuffle_epi8(hd[k / 2], pair_at(2 * (k % 2))), 4);
            const __m512i prod = _mm512_madd_epi16(mins, _mm512_set1_epi32(pair));
            /* fnmadd: vec_dot's fma with -dmin, the same rounding */
            acc[k] = _mm512_fnmadd_ps(dmin, _mm512_cvtepi32_ps(prod), acc[k]);
        }
        __m512i sum[8];
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) sum[k] = _mm512_setzero_si512();
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            prefetch_part(blk, sb, h, 2, X16_FAR);
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) {
                const __m512i raw = _mm512_loadu_si512((const void *)(blk + X16_Q2_K_QS + 64 * (8 * h + k)));
#pragma GCC unroll 4
                for (int q = 0; q < 4; q++) {
                    const __m512i v = _mm512_and_si512(q ? _mm512_srli_epi16(raw, 2 * q) : raw, m3);
                    const __m512i dot = dot4_bcast(_mm512_setzero_si512(), v, yb->qs + 128 * h + 32 * q + 4 * k, 1);
                    const int j = 8 * h + 2 * q + k / 4; /* the sub-block: its scale in the low half */
                    sum[k] = qt_dpwssd512(sum[k], dot, _mm512_and_si512(_mm512_shuffle_epi8(hd[j / 4], byte_at(j % 4)), m4));
                }
            }
        }
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) acc[k] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sum[k]), acc[k]);
    }
    _mm512_storeu_ps(s, hsum8_lanes(acc));
}

QT_X16_K_COLUMNS(qt_avx512_vnni_x16_dot_q2_K, x16_vec_dot_q2_K)

/* The row layout and x16 share every step; only where the bytes come
 * from differs. */
#define WIDE_K(name, q4k, vnni, aux_bytes, prep)                                                                  \
    static void run_##name(int n, int ncols, bool gemm, float *s, size_t ldo, const void *w, size_t w_stride,     \
                           const void *y, size_t y_stride, const void *aux, bool stream)                          \
    {                                                                                                             \
        float *const s2[2] = {s, NULL};                                                                           \
        const void *const w2[2] = {w, NULL};                                                                      \
        if (!gemm && ncols == 1)                                                                                  \
            gemv_k(n, s, w, w_stride, y, q4k, vnni, 0);                                                           \
        else if (gemm)                                                                                            \
            run_k(n, ncols, 1, s2, ldo, w2, w_stride, y, y_stride, aux, aux_bytes(n, 1), stream, q4k, vnni, 0, 1); \
        else                                                                                                      \
            run_k(n, ncols, 0, s2, ldo, w2, w_stride, y, y_stride, aux, aux_bytes(n, 1), stream, q4k, vnni, 0, 1); \
    }                                                                                                             \
    static void run2_##name##_x16(int n, int ncols, bool gemm, float *const s[2], size_t ldo,                     \
                                  const void *const w[2], const void *y, size_t y_stride, const void *aux,        \
                                  bool stream)                                                                    \
    {                                                                                                             \
        if (!gemm && ncols == 1)                                                                                  \
            for (int i = 0; i < 2; i++) gemv_k(n, s[i], w[i], 0, y, q4k, vnni, 1);                                \
        else if (gemm)                                                                                            \
            run_k(n, ncols, 1, s, ldo, w, 0, y, y_stride, aux, aux_bytes(n, 1), stream, q4k, vnni, 1, 2);         \
        else                                                                                                      \
            run_k(n, ncols, 0, s, ldo, w, 0, y, y_stride, aux, aux_bytes(n, 1), stream, q4k, vnni, 1, 2);         \
    }                                                                                                             \
    static void run_##name##_x16(int n, int ncols, bool gemm, float *s, size_t ldo, const void *w, const void *y, \
                                 size_t y_stride, const void *aux, bool stream)                                   \
    {                                                                                                             \
        float *const s2[2] = {s, NULL};                                                                           \
        const void *const w2[2] = {w, NULL};                                                                      \
        if (!gemm && ncols == 1)                                                                                  \
            gemv_k(n, s, w, 0, y, q4k, vnni, 1);                                                                  \
        else if (gemm)                                                                                            \
            run_k(n, ncols, 1, s2, ldo, w2, 0, y, y_stride, aux, aux_bytes(n, 1), stream, q4k, vnni, 1, 1);       \
        else                                                                                                      \
            run_k(n, ncols, 0, s2, ldo, w2, 0, y, y_stride, aux, aux_bytes(n, 1), stream, q4k, vnni, 1, 1);       \
    }                                                                                                             \
    const qt_rp_wide qt_rp_wide_##name = {aux_bytes, prep, run_##name, run_##name##_x16, false,                   \
                                          run2_##name##_x16};

WIDE_K(q4_K_avx512, 1, 0, qt_rp_aux_q4_K, qt_rp_prep_q4_K)
WIDE_K(q4_K_avx512_vnni, 1, 1, qt_rp_aux_q4_K, qt_rp_prep_q4_K)
WIDE_K(q2_K_avx512, 0, 0, qt_rp_aux_none, qt_rp_prep_none)
WIDE_K(q2_K_avx512_vnni, 0, 1, qt_rp_aux_none, qt_rp_prep_none)

#endif
