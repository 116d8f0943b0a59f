/* x86_avx2.c - AVX2 + FMA + F16C kernels, and the same with AVX-VNNI.
 *
 * Compiled with -mavx2 -mfma -mf16c and reached only through the tables at
 * the end, which dispatch hands out when the CPU has those features.
 *
 * Each dot kernel is one always-inline body taking a constant `vnni`; the
 * two tables get one instantiation each.  The VNNI instruction is written as
 * inline asm, not as an intrinsic, because an intrinsic would need the whole
 * file built with -mavxvnni, and then the compiler could use it in the plain
 * AVX2 set too, which must run on Haswell.
 *
 * Exactness: the quantized dot products are bit-identical to quant/ref.c
 * (same integer lane sums, exact for every byte value including -128, and
 * the same float operations in the same order); the float dot products
 * differ from its double-precision sums only by float rounding; the Q8
 * quantizers give its bytes exactly (see quantize_block). */
#if defined(__x86_64__)

#include <float.h>
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "blocks.h"
#include "cpu.h"
#include "fp16.h"
#include "ref.h"
#include "x86_k.h"

#define INLINE static inline __attribute__((always_inline))
#define QT_X86_DPBUSD "%{vex%} vpdpbusd %2, %1, %0"
#include "x86_simd.h"
#include "x86_avx2_q5.h"

/* ---- quantized dot products (quant/ref.c's order) ---------------------- */

#include "x86_dot_legacy.inc"

/* 16 vector registers: tiles of at most 8 accumulators. */
#define TILE_WIDE 0
#include "x86_tile.inc"

/* Without VNNI, Q8_0's tiles have their own kernel (x86_avx2_tile_q8.c),
 * the generic one taking what it cannot.  One column (a token's matvec)
 * goes row by row through vec_dot: the tiles' set-up is for several, and
 * 4 rows streamed side by side read slower than one at a time (Gemma 3's
 * 262144-row output, tg64 with 2 threads: 35 t/s through the 4x3 tile, 38
 * through 4-row tiles of one column, 55-60 row by row). */
static void tile_q8_0_avx2(int n, float *s, size_t ldo, const void *x, size_t xs, int nr, const void *y, size_t ys,
                           int nc) {
    if (nc == 1) {
        for (int r = 0; r < nr; r++) vec_q8_0(n, s + r, (const uint8_t *)x + xs * (size_t)r, y);
        return;
    }
    qt_avx2_tile_q8_0(n, s, ldo, x, xs, nr, y, ys, nc, tile_q8_0);
}

/* Q5_0's, Q4_1's and Q5_1's tiles unpack their rows for the same kernel
 * (one column: the generic tile, as before). */
#define UNPACKED_TILE(T)                                                                                        \
    static void tile_##T##_avx2(int n, float *s, size_t ldo, const void *x, size_t xs, int nr, const void *y,   \
                                size_t ys, int nc) {                                                            \
        if (nc == 1)                                                                                            \
            tile_##T(n, s, ldo, x, xs, nr, y, ys, nc);                                                          \
        else                                                                                                    \
            qt_avx2_tile_##T(n, s, ldo, x, xs, nr, y, ys, nc, tile_##T);                                        \
    }
UNPACKED_TILE(q5_0)
UNPACKED_TILE(q4_1)
UNPACKED_TILE(q5_1)
#undef UNPACKED_TILE

/* ---- float dot products ------------------------------------------------ *
 * Products of two halves (11-bit significands) or two bfloat16s are exact
 * in float, so only the sums round: four accumulators of eight lanes. */

enum { F32, F16, BF16 };

INLINE __m256 load8(const void *p, int64_t i, const int kind) {
    if (kind == F32)
        return _mm256_loadu_ps((const float *)p + i);
    const __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + i));
    if (kind == F16)
        return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* The last r < 8 elements, zero-padded: the padding adds 0·0. */
INLINE __m256 load8_tail(const void *p, int64_t i, int r, const int kind) {
    const size_t size = kind == F32 ? 4 : 2;
    unsigned char buf[32] = {0};
    memcpy(buf, (const unsigned char *)p + (size_t)i * size, (size_t)r * size);
    return load8(buf, 0, kind);
}

INLINE void dot_float(int n, float *s, const void *x, const void *y, const int kind) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    int64_t i = 0;
    const size_t esize = kind == F32 ? 4 : 2;
    for (; i + 32 <= n; i += 32) {
        /* the weights' lines ahead, as the quantized rows ask (x86_simd.h) */
        for (size_t o = 0; o < 32 * esize; o += 64) prefetch_weights((const char *)x + (size_t)i * esize + o);
        a0 = _mm256_fmadd_ps(load8(x, i, kind), load8(y, i, kind), a0);
        a1 = _mm256_fmadd_ps(load8(x, i + 8, kind), load8(y, i + 8, kind), a1);
        a2 = _mm256_fmadd_ps(load8(x, i + 16, kind), load8(y, i + 16, kind), a2);
        a3 = _mm256_fmadd_ps(load8(x, i + 24, kind), load8(y, i + 24, kind), a3);
    }
    for (; i + 8 <= n; i += 8)
        a0 = _mm256_fmadd_ps(load8(x, i, kind), load8(y, i, kind), a0);
    if (i < n)
        a1 = _mm256_fmadd_ps(load8_tail(x, i, (int)(n - i), kind), load8_tail(y, i, (int)(n - i), kind), a1);
    *s = hsum_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
}

static void vec_f32(int n, float *s, const void *x, const void *y) {
    dot_float(n, s, x, y, F32);
}

static void vec_f16(int n, float *s, const void *x, const void *y) {
    dot_float(n, s, x, y, F16);
}

/* bfloat16 x to floats: 16 at p widened by interleaving zero halves below
 * them, elements 0-3, 8-11 in *lo and 4-7, 12-15 in *hi (one load and a
 * shuffle per 8, where vpmovzxwd and a shift took a load, a shuffle and a
 * shift); the dot takes x and y in the same order, so it does not care. */
INLINE void bf16x16(const void *p, int64_t i, __m256 *lo, __m256 *hi) {
    const __m256i v = _mm256_loadu_si256((const __m256i *)((const uint16_t *)p + i)), z = _mm256_setzero_si256();
    *lo = _mm256_castsi256_ps(_mm256_unpacklo_epi16(z, v));
    *hi = _mm256_castsi256_ps(_mm256_unpackhi_epi16(z, v));
}

static void vec_bf16(int n, float *s, const void *x, const void *y) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256 x0, x1, x2, x3, y0, y1, y2, y3;
        prefetch_weights((const uint16_t *)x + i);
        bf16x16(x, i, &x0, &x1), bf16x16(x, i + 16, &x2, &x3);
        bf16x16(y, i, &y0, &y1), bf16x16(y, i + 16, &y2, &y3);
        a0 = _mm256_fmadd_ps(x0, y0, a0);
        a1 = _mm256_fmadd_ps(x1, y1, a1);
        a2 = _mm256_fmadd_ps(x2, y2, a2);
        a3 = _mm256_fmadd_ps(x3, y3, a3);
    }
    for (; i + 8 <= n; i += 8)
        a0 = _mm256_fmadd_ps(load8(x, i, BF16), load8(y, i, BF16), a0);
    if (i < n)
        a1 = _mm256_fmadd_ps(load8_tail(x, i, (int)(n - i), BF16), load8_tail(y, i, (int)(n - i), BF16), a1);
    *s = hsum_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
}

/* ---- Q8_0 / Q8_1 quantizers -------------------------------------------- *
 * Two references, two roundings (quant/ref.c): from_float is ggml's
 * quantize_row_q8_*_ref (id = 1/d, roundf: ties away from zero), and
 * quantize_act is llama.cpp's SIMD activation quantizer (id = 127/amax,
 * nearest-even).  One body serves both, with the reference's float
 * operations in the reference's order; only max, which is exact, is taken
 * in another order. */

enum { ROUND_AWAY, ROUND_EVEN };

/* roundf for finite |v| < 2^23: ties away from zero, where vroundps's
 * nearest mode would round them to even (2.5 -> 2, not 3).  v - trunc(v) is
 * exact, so the tie test sees the true fraction. */
INLINE __m256 round_away(__m256 v) {
    const __m256 sign_bit = _mm256_set1_ps(-0.0f);
    const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 frac = _mm256_andnot_ps(sign_bit, _mm256_sub_ps(v, t));
    const __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    const __m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(v, sign_bit));
    return _mm256_add_ps(t, _mm256_and_ps(up, one));
}

/* Quantizes one block and returns 1, or returns 0 having written nothing
 * when only the reference can reproduce its own bytes: a block holding NaN
 * or inf (the reference's scalar max lets a NaN's position matter), or one
 * whose scale overflows to inf (x·inf and 0·inf go through the reference's
 * clamps and casts).  Otherwise |x·id| <= 127·(1 + 2^-20), so no value
 * reaches the packs' saturation or the reference's clamp, and the int32 sum
 * is the sum of the stored bytes. */
INLINE int quantize_block(const float *x, int8_t *qs, float *d_out, int *sum_out, const int want_sum,
                          const int mode) {
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 big = _mm256_set1_ps(FLT_MAX);
    __m256 v[4], vmax = _mm256_setzero_ps(), bad = _mm256_setzero_ps();
    for (int k = 0; k < 4; k++) {
        v[k] = _mm256_loadu_ps(x + 8 * k);
        const __m256 a = _mm256_and_ps(v[k], abs_mask);
        vmax = _mm256_max_ps(vmax, a);
        bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, big, _CMP_NLE_UQ)); /* NaN or inf */
    }
    if (_mm256_movemask_ps(bad))
        return 0;
    const float amax = hmax_ps(vmax);
    const float d = amax / 127;
    float id;
    if (mode == ROUND_AWAY)
        id = d != 0.0f ? 1.0f / d : 0.0f;
    else
        id = amax != 0.0f ? 127.0f / amax : 0.0f;
    if (id > FLT_MAX)
        return 0;
    const __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    for (int k = 0; k < 4; k++) {
        const __m256 scaled = _mm256_mul_ps(v[k], vid);
        /* vcvtps2dq rounds in the current mode, as nearbyintf does. */
        q[k] = _mm256_cvtps_epi32(mode == ROUND_AWAY ? round_away(scaled) : scaled);
    }
    /* The packs interleave groups of four; the permute puts them back. */
    const __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    _mm256_storeu_si256((__m256i *)qs, _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    *d_out = d;
    if (want_sum)
        *sum_out = hsum_epi32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
    return 1;
}

#include "x86_q8.inc"

/* ---- tables ------------------------------------------------------------- */

const qt_kernels qt_kernels_avx2 =
    QT_X86_TABLE("avx2", , tile_q8_0_avx2, tile_q5_0_avx2, tile_q4_1_avx2, tile_q5_1_avx2, qt_avx2_vec_dot_q6_K_q8_K, NULL, NULL, NULL, NULL,
                 NULL);
const qt_kernels qt_kernels_avx2_vnni =
    QT_X86_TABLE("avx2-vnni", _vnni, tile_q8_0_vnni, tile_q5_0_vnni, tile_q4_1_vnni, tile_q5_1_vnni, qt_avx2_vec_dot_q6_K_q8_K, NULL, NULL, NULL, NULL,
                 NULL);

#else

/* ISO C wants a declaration in every translation unit. */
typedef int qt_x86_avx2_unused;

#endif
