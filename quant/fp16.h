/* fp16.h - IEEE half and bfloat16 conversions, portable C.
 *
 * These are the scalar definitions every kernel must agree with: the block
 * scales of every quant format are halves, so a conversion that rounds
 * differently from ggml's would change quantized bytes.  Narrowing rounds to
 * nearest, ties to even (as F16C's vcvtps2ph and ggml's scalar fallback do);
 * widening is exact.  Subnormals are kept, never flushed; NaNs stay NaNs with
 * their sign and as much payload as fits, made quiet.
 *
 * Bit patterns go through memcpy so the compiler sees no aliasing. */
#ifndef QLM_QT_FP16_H
#define QLM_QT_FP16_H

#include <stdint.h>
#include <string.h>

static inline uint32_t qt_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float qt_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float qt_f16_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) /* inf or NaN: payload moves up unchanged */
        return qt_bits_f32(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
        /* Zero or subnormal: mant * 2^-24 is exact in float (11 bits). */
        const float mag = (float)mant * 0x1p-24f;
        return qt_bits_f32(sign | qt_f32_bits(mag));
    }
    /* Rebias 15 -> 127; the mantissa widens by 13 zero bits. */
    return qt_bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

static inline uint16_t qt_f32_to_f16(float f) {
    const uint32_t u = qt_f32_bits(f);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const uint32_t a = u & 0x7fffffffu;

    if (a > 0x7f800000u) /* NaN: keep the top payload bits, force quiet */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    /* 65520 is the midpoint between 65504 (odd mantissa) and 2^16, so it
     * and everything above it round to infinity. */
    if (a >= 0x477ff000u)
        return (uint16_t)(sign | 0x7c00u);

    const uint32_t e = a >> 23;
    if (a < 0x38800000u) {
        /* Below 2^-14 the result is a half subnormal: count units of 2^-24.
         * Float subnormals (e == 0) are far below half a unit. */
        if (e < 102)
            return sign;
        const uint32_t m = (a & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126u - e; /* 14..24 */
        uint32_t q = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1u);
        const uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (q & 1u)))
            q++; /* may carry into the smallest normal: still right */
        return (uint16_t)(sign | q);
    }

    uint32_t h = ((e - 112u) << 10) | ((a >> 13) & 0x3ffu);
    const uint32_t rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        h++; /* a mantissa carry bumps the exponent, as it should */
    return (uint16_t)(sign | h);
}

static inline float qt_bf16_to_f32(uint16_t b) {
    return qt_bits_f32((uint32_t)b << 16);
}

/* Same rule as ggml_compute_fp32_to_bf16 and gguf-py: NaNs are truncated and
 * made quiet; everything else rounds to nearest even, overflowing to inf. */
static inline uint16_t qt_f32_to_bf16(float f) {
    const uint32_t u = qt_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

#endif
