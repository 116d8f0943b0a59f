/* arm_neon_dotprod.c - the NEON kernel set with sdot (Armv8.2-A dotprod:
 * Cortex-A55/A76 and later, Neoverse, Apple M).
 *
 * Compiled with -march=armv8.2-a+dotprod and reached only through its
 * table, which dispatch hands out when the kernel reports HWCAP_ASIMDDP;
 * the flag is confined to this file so the plain set still runs on
 * Cortex-A53.  sdot forms exactly the int32 lanes of four products that
 * the kernels need, so the dot bodies (arm_neon_dot.inc) are the plain
 * set's with one instruction for five, and give the same bits.  The Q8
 * quantizers and float dots have no byte products: this table takes
 * quant/arm_neon.c's. */
#if defined(__aarch64__)

#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "arm_neon_sets.h"
#include "blocks.h"
#include "cpu.h"

#if !defined(__ARM_FEATURE_DOTPROD)
#error "arm_neon_dotprod.c needs -march=armv8.2-a+dotprod (see the Makefile's ISAFLAGS)"
#endif

#define INLINE static inline __attribute__((always_inline))

INLINE int32x4_t dot4(int8x16_t a, int8x16_t b) {
    return vdotq_s32(vdupq_n_s32(0), a, b);
}

#define QT_NEON_SET qt_kernels_neon_dotprod
#define QT_NEON_NAME "neon-dotprod"
#include "arm_neon_dot.inc"

#else

/* ISO C wants a declaration in every translation unit. */
typedef int qt_arm_neon_dotprod_unused;

#endif
