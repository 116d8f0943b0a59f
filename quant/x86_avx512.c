/* x86_avx512.c - AVX-512 F/BW/VL/DQ kernels, and the same with AVX512-VNNI.
 *
 * Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c and
 * reached only through the tables at the end.  As in x86_avx2.c, each dot
 * kernel is one always-inline body with a constant `vnni`, and vpdpbusd is
 * inline asm so that the file never needs -mavx512vnni, which would let the
 * compiler use it in the plain set that Skylake-X runs.
 *
 * The quantized dots keep quant/ref.c's float order (one 8-lane FMA chain,
 * block after block), which makes them bit-identical to it, and also caps
 * them at one block per FMA latency: x86_avx2.c already runs at that cap.
 * Wider registers would only add lanes that the chain cannot use, so these
 * kernels stay 256 bits wide and take from AVX-512 what shortens a block:
 * byte masks for Q5's fifth bits, EVEX vpdpbusd, 32 registers.  The float
 * dots and the quantizers, which have no such chain, use 512 bits.
 *
 * Exactness is as in x86_avx2.c: quantized dots bit-identical, float dots
 * within float rounding of the double-precision reference, quantizer bytes
 * identical. */
#if defined(__x86_64__)

#include <float.h>
#include <immintrin.h>
#include <string.h>

#include "blocks.h"
#include "cpu.h"
#include "fp16.h"
#include "ref.h"
#include "x86_k.h"

#define INLINE static inline __attribute__((always_inline))
#define QT_X86_DPBUSD "%{evex%} vpdpbusd %2, %1, %0"
#include "x86_simd.h"

/* ---- helpers (see x86_avx2.c for the reasoning behind each) ------------ */

/* Adds 16 to each byte whose 5th bit is set: qh is already a byte mask. */
INLINE __m256i add_fifth_bits(__m256i q, const uint8_t qh[4]) {
    uint32_t bits;
    memcpy(&bits, qh, sizeof bits);
    return _mm256_mask_add_epi8(q, _cvtu32_mask32(bits), q, _mm256_set1_epi8(0x10));
}

INLINE __m256i q5_quants(const uint8_t qs[16], const uint8_t qh[4]) {
    return add_fifth_bits(nibbles(qs), qh);
}

/* ---- quantized dot products (quant/ref.c's order) ---------------------- */

#include "x86_dot_legacy.inc"

/* 32 vector registers (EVEX): 2x8 tiles fit. */
#define TILE_WIDE 1
#include "x86_tile.inc"

/* ---- float dot products ------------------------------------------------ *
 * Products of halves or bfloat16s are exact in float; four accumulators of
 * sixteen lanes, and a masked load for the tail (masked-off lanes read
 * nothing, so the tail never touches memory past the end). */

enum { F32, F16, BF16 };

INLINE __m512 widen16(__m256i h, const int kind) {
    if (kind == F16)
        return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

INLINE __m512 load16(const void *p, int64_t i, const int kind) {
    if (kind == F32)
        return _mm512_loadu_ps((const float *)p + i);
    return widen16(load256((const uint16_t *)p + i), kind);
}

INLINE __m512 load16_masked(const void *p, int64_t i, __mmask16 m, const int kind) {
    if (kind == F32)
        return _mm512_maskz_loadu_ps(m, (const float *)p + i);
    return widen16(_mm256_maskz_loadu_epi16(m, (const uint16_t *)p + i), kind);
}

INLINE void dot_float(int n, float *s, const void *x, const void *y, const int kind) {
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    __m512 a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
    int64_t i = 0;
    const size_t esize = kind == F32 ? 4 : 2;
    for (; i + 64 <= n; i += 64) {
        /* the weights' lines ahead, as the quantized rows ask (x86_simd.h) */
        for (size_t o = 0; o < 64 * esize; o += 64) prefetch_weights((const char *)x + (size_t)i * esize + o);
        a0 = _mm512_fmadd_ps(load16(x, i, kind), load16(y, i, kind), a0);
        a1 = _mm512_fmadd_ps(load16(x, i + 16, kind), load16(y, i + 16, kind), a1);
        a2 = _mm512_fmadd_ps(load16(x, i + 32, kind), load16(y, i + 32, kind), a2);
        a3 = _mm512_fmadd_ps(load16(x, i + 48, kind), load16(y, i + 48, kind), a3);
    }
    for (; i + 16 <= n; i += 16)
        a0 = _mm512_fmadd_ps(load16(x, i, kind), load16(y, i, kind), a0);
    if (i < n) {
        const __mmask16 m = _cvtu32_mask16((1u << (n - i)) - 1u);
        a1 = _mm512_fmadd_ps(load16_masked(x, i, m, kind), load16_masked(y, i, m, kind), a1);
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

static void vec_f32(int n, float *s, const void *x, const void *y) {
    dot_float(n, s, x, y, F32);
}

static void vec_f16(int n, float *s, const void *x, const void *y) {
    dot_float(n, s, x, y, F16);
}

static void vec_bf16(int n, float *s, const void *x, const void *y) {
    dot_float(n, s, x, y, BF16);
}

/* ---- Q8_0 / Q8_1 quantizers -------------------------------------------- *
 * from_float rounds like ggml's reference, quantize_act like llama.cpp's
 * SIMD activation quantizer; see x86_avx2.c for both and for when a block
 * falls back to the reference. */

enum { ROUND_AWAY, ROUND_EVEN };

/* roundf for finite |v| < 2^23 (ties away from zero); v - trunc(v) is exact. */
INLINE __m512 round_away(__m512 v) {
    const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __mmask16 up = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(v, t)), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
    const __m512 one = _mm512_or_ps(_mm512_set1_ps(1.0f), _mm512_and_ps(v, _mm512_set1_ps(-0.0f)));
    return _mm512_mask_add_ps(t, up, t, one);
}

INLINE int quantize_block(const float *x, int8_t *qs, float *d_out, int *sum_out, const int want_sum,
                          const int mode) {
    const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
    const __m512 a0 = _mm512_abs_ps(v0), a1 = _mm512_abs_ps(v1);
    const __m512 big = _mm512_set1_ps(FLT_MAX);
    if (_mm512_cmp_ps_mask(a0, big, _CMP_NLE_UQ) | _mm512_cmp_ps_mask(a1, big, _CMP_NLE_UQ))
        return 0; /* NaN or inf */
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(a0, a1));
    const float d = amax / 127;
    float id;
    if (mode == ROUND_AWAY)
        id = d != 0.0f ? 1.0f / d : 0.0f;
    else
        id = amax != 0.0f ? 127.0f / amax : 0.0f;
    if (id > FLT_MAX)
        return 0;
    const __m512 vid = _mm512_set1_ps(id);
    __m512 s0 = _mm512_mul_ps(v0, vid), s1 = _mm512_mul_ps(v1, vid);
    if (mode == ROUND_AWAY) {
        s0 = round_away(s0);
        s1 = round_away(s1);
    }
    /* vcvtps2dq rounds in the current mode, as nearbyintf does. */
    const __m512i q0 = _mm512_cvtps_epi32(s0), q1 = _mm512_cvtps_epi32(s1);
    _mm_storeu_si128((__m128i *)qs, _mm512_cvtsepi32_epi8(q0));
    _mm_storeu_si128((__m128i *)(qs + 16), _mm512_cvtsepi32_epi8(q1));
    *d_out = d;
    if (want_sum)
        *sum_out = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    return 1;
}

#define QT_X86_Q8K qt_avx512_quantize_q8_K
#include "x86_q8.inc"

/* ---- tables ------------------------------------------------------------- */

const qt_kernels qt_kernels_avx512 =
    QT_X86_TABLE("avx512", , tile_q8_0, tile_q5_0, tile_q4_1, tile_q5_1, qt_avx512_vec_dot_q6_K_q8_K, qt_avx512_vec_dot_tile_q6_K_q8_K,
                 qt_avx512_vec_dot_tile_q2_K_q8_K, qt_avx512_vec_dot_tile_q3_K_q8_K,
                 qt_avx512_vec_dot_tile_q4_K_q8_K, qt_avx512_vec_dot_tile_q5_K_q8_K);
const qt_kernels qt_kernels_avx512_vnni =
    QT_X86_TABLE("avx512-vnni", _vnni, tile_q8_0_vnni, tile_q5_0_vnni, tile_q4_1_vnni, tile_q5_1_vnni, qt_avx512_vec_dot_q6_K_q8_K, qt_avx512_vnni_vec_dot_tile_q6_K_q8_K,
                 qt_avx512_vnni_vec_dot_tile_q2_K_q8_K,
                 qt_avx512_vnni_vec_dot_tile_q3_K_q8_K, qt_avx512_vnni_vec_dot_tile_q4_K_q8_K,
                 qt_avx512_vnni_vec_dot_tile_q5_K_q8_K);

#else

/* ISO C wants a declaration in every translation unit. */
typedef int qt_x86_avx512_unused;

#endif
