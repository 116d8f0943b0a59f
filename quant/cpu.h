/* cpu.h - what this CPU can run, and the kernel table of each ISA level.
 *
 * quant/cpu.c fills the feature table once (CPUID and XGETBV on x86-64,
 * the kernel's hwcaps on aarch64); it is the one
 * piece of global mutable state in qlm, written before anything reads it.
 * quant/dispatch.c picks the best level the CPU and OS support, and
 * quant/types.c patches the traits table with that level's kernels, so
 * callers never see this header unless they want to (tests, `qlm --version`).
 *
 * A level's table holds only the kernels it speeds up; a NULL entry means
 * "the scalar reference is used".  Every kernel obeys the contract of the
 * reference it replaces (quant/ref.h): quantizers give the same bytes, dot
 * products the same value up to the order of float additions. */
#ifndef QLM_QT_CPU_H
#define QLM_QT_CPU_H

#include <stdbool.h>

#include "types.h"

/* Each flag is true only when the CPU has the instructions AND the OS saves
 * their registers on a context switch (XCR0); either alone is not enough to
 * run them. */
typedef struct qt_cpu_features {
    bool avx2, fma, f16c;                      /* Haswell, Zen 1 */
    bool avx512f, avx512bw, avx512vl, avx512dq; /* Skylake-X, Zen 4 */
    bool avx512vnni;                           /* Cascade Lake, Ice Lake, Zen 4 */
    bool avxvnni;                              /* VEX-coded VNNI: Alder Lake */
    bool avx512bf16;                           /* detected for later kernels */
    /* AuthenticAMD: where the same kernels' best use differs by maker
     * (qt_traits.one_row_min_bytes, x86_tile.inc's tile_micro2i) */
    bool amd;
    /* AMX-TILE + AMX-INT8 (Sapphire Rapids), the OS saving tile state, and
     * Linux's per-process permission to use it granted (arch_prctl) */
    bool amx;
    bool neon;    /* aarch64 Advanced SIMD (HWCAP_ASIMD) */
    bool dotprod; /* sdot/udot, Armv8.2+ (HWCAP_ASIMDDP): Cortex-A55/A76, Neoverse */
    /* one core's L2 in bytes as the C library reports it, 512 KB when it
     * does not: how many activation rows a batch kernel's pass may hold */
    long l2_bytes;
} qt_cpu_features;

/* The features of the running CPU; the other architecture's are all
 * false. Thread-safe. */
const qt_cpu_features *qt_cpu(void);

/* Kernel sets from slowest to fastest within each architecture; dispatch
 * takes the last one the CPU supports.  The _VNNI sets are the same level
 * with vpdpbusd for the byte products, so QLM_ISA names levels, not sets;
 * NEON and NEON with dotprod are two levels, as Cortex-A53/A72 lack sdot. */
typedef enum qt_isa {
    QT_ISA_SCALAR,
    QT_ISA_AVX2,
    QT_ISA_AVX2_VNNI,
    QT_ISA_AVX512,
    QT_ISA_AVX512_VNNI,
    QT_ISA_NEON,
    QT_ISA_NEON_DOTPROD,
    QT_ISA_COUNT
} qt_isa;

typedef struct qt_kernels {
    const char *name; /* "avx512-vnni", as qt_isa_name reports it */
    qt_vec_dot_fn vec_dot[QT_COUNT];       /* by weight type */
    qt_vec_dot_tile_fn vec_dot_tile[QT_COUNT]; /* likewise; the same values as vec_dot */
    qt_from_float_fn from_float[QT_COUNT]; /* by type quantized to */
    qt_from_float_fn quantize_act[QT_COUNT]; /* likewise (qt_traits) */
} qt_kernels;

/* ---- dispatch.c --------------------------------------------------------- */

/* The kernels of one set, or NULL when this build has none for it (the x86
 * sets on other architectures).  QT_ISA_SCALAR's table is the reference. */
const qt_kernels *qt_isa_kernels(qt_isa isa);

/* Whether `cpu` can run `isa`'s kernels and this build has them. */
bool qt_isa_supported(const qt_cpu_features *cpu, qt_isa isa);

/* The set to use on `cpu`: the fastest supported one at or below the level
 * `request` names ("scalar", "avx2", "avx512", "neon", "neon-dotprod";
 * NULL, anything else, or the other architecture's level: no cap).  A
 * request above what the CPU has gives the best it does have, so the
 * answer is always safe to run. */
qt_isa qt_isa_choose(const qt_cpu_features *cpu, const char *request);

/* The set chosen for this process from qt_cpu() and env QLM_ISA, once. */
qt_isa qt_isa_active(void);

/* Its name, for `qlm --version` and benchmarks. */
const char *qt_isa_name(void);

/* Whether the AMX-INT8 batch kernels run on top of the avx512-vnni set:
 * the CPU and OS allow it, and QLM_ISA is unset, "amx", or a name that
 * caps nothing.  Any level name ("avx512", "avx512-vnni", "avx2",
 * "scalar") turns AMX off, so QLM_ISA=avx512-vnni compares without it. */
bool qt_amx_allowed(const qt_cpu_features *cpu, qt_isa active, const char *request);
bool qt_amx_active(void);

/* Whether Q8_0 batches on the avx2 set take the AVX2 tiles in the i16
 * order (quant/tiles.h): env QLM_Q8_ORDER=i16, read once.  Off by
 * default: any other order than llama.cpp's changes the rounding of the
 * activations that the next layer quantizes, and greedy texts then leave
 * llama.cpp's within a few dozen tokens. */
bool qt_q8_i16_active(void);

/* ---- the ISA files (built for their architecture only) ----------------- */

#if defined(__x86_64__)
extern const qt_kernels qt_kernels_avx2;
extern const qt_kernels qt_kernels_avx2_vnni;
extern const qt_kernels qt_kernels_avx512;
extern const qt_kernels qt_kernels_avx512_vnni;
#endif
#if defined(__aarch64__)
extern const qt_kernels qt_kernels_neon;
extern const qt_kernels qt_kernels_neon_dotprod;
#endif

#endif
