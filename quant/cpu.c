/* cpu.c - CPU feature detection, done once per process: CPUID and XGETBV
 * on x86-64, the kernel's hwcaps (getauxval) on aarch64.
 *
 * x86 bit positions are from the Intel SDM, vol. 2A, CPUID and XGETBV; AMD
 * uses the same ones for these features.  On Arm, user space cannot read
 * the ID registers portably, so the kernel's AT_HWCAP word is the source;
 * it also means the kernel supports the registers the feature needs. */
#include "cpu.h"

#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif

static qt_cpu_features features;
static pthread_once_t features_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__)

/* XGETBV raises #UD unless CPUID.1:ECX.OSXSAVE is set, so callers check
 * that first.  Inline asm rather than _xgetbv() keeps this file free of
 * -m flags and intrinsics (rule 2). */
static uint64_t read_xcr0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}

static bool bit(unsigned reg, int n) {
    return (reg >> n) & 1u;
}

/* Linux (5.16+) hands out the 8 KiB tile data state only on request, once
 * per process; every thread, including ones created later, may then use
 * it.  Without the grant the first tile instruction kills the process. */
static bool linux_tile_permission(void) {
#if defined(__linux__) && defined(SYS_arch_prctl)
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
#else
    return false;
#endif
}

static void detect(void) {
    unsigned a, b, c, d;
    if (__get_cpuid(0, &a, &b, &c, &d)) /* the maker's name in EBX, EDX, ECX */
        features.amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return;
    /* Without OS-enabled YMM state even AVX faults, so nothing is usable. */
    if (!bit(c, 27) || !bit(c, 28)) /* OSXSAVE, AVX */
        return;
    const uint64_t xcr0 = read_xcr0();
    const bool os_ymm = (xcr0 & 0x06) == 0x06; /* XMM and YMM halves */
    /* Opmask, upper halves of ZMM0-15 and all of ZMM16-31. */
    const bool os_zmm = os_ymm && (xcr0 & 0xe0) == 0xe0;
    if (!os_ymm)
        return;
    const bool fma = bit(c, 12), f16c = bit(c, 29);

    unsigned max_sub = 0, b7 = 0, c7 = 0, d7 = 0, a71 = 0;
    if (__get_cpuid_count(7, 0, &max_sub, &b7, &c7, &d7))
        if (max_sub >= 1 && !__get_cpuid_count(7, 1, &a71, &b, &c, &d))
            a71 = 0;

    features.fma = fma;
    features.f16c = f16c;
    features.avx2 = bit(b7, 5);
    features.avxvnni = bit(a71, 4);
    if (os_zmm) {
        features.avx512f = bit(b7, 16);
        features.avx512dq = bit(b7, 17);
        features.avx512bw = bit(b7, 30);
        features.avx512vl = bit(b7, 31);
        features.avx512vnni = bit(c7, 11);
        features.avx512bf16 = bit(a71, 5);
        /* AMX-TILE, AMX-INT8; XCR0 bits 17-18: XTILECFG and XTILEDATA */
        const bool os_tiles = (xcr0 & 0x60000) == 0x60000;
        features.amx = os_tiles && bit(d7, 24) && bit(d7, 25) && linux_tile_permission();
    }
}

#elif defined(__aarch64__)

/* Bit values of the arm64 ABI (asm/hwcap.h), spelled here for libcs whose
 * headers predate them. */
#define QT_HWCAP_ASIMD (1ul << 1)
#define QT_HWCAP_ASIMDDP (1ul << 20)

static void detect(void) {
    const unsigned long hw = getauxval(AT_HWCAP);
    features.neon = (hw & QT_HWCAP_ASIMD) != 0;
    features.dotprod = features.neon && (hw & QT_HWCAP_ASIMDDP) != 0;
}

#else

static void detect(void) {
}

#endif

static void detect_all(void) {
    detect();
    long l2 = 0;
#ifdef _SC_LEVEL2_CACHE_SIZE
    l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    features.l2_bytes = l2 > 0 ? l2 : 512 * 1024;
}

const qt_cpu_features *qt_cpu(void) {
    pthread_once(&features_once, detect_all);
    return &features;
}
