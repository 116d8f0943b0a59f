/* dispatch.c - which kernel set this process runs, chosen once.
 *
 * The choice needs both the CPU's features and the build's tables: a set is
 * only offered where its file was compiled (x86 sets on x86-64, NEON sets
 * on aarch64), so no build asks for kernels it lacks.  QLM_ISA can only lower the level (for comparisons
 * and for working around a suspect kernel), never raise it past the CPU. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "ref.h"

static const qt_kernels scalar_kernels = {
    .name = "scalar",
    .vec_dot = {
        [QT_F32] = qt_vec_dot_f32_f32,
        [QT_F16] = qt_vec_dot_f16_f16,
        [QT_BF16] = qt_vec_dot_bf16_bf16,
        [QT_Q4_0] = qt_vec_dot_q4_0_q8_0,
        [QT_Q4_1] = qt_vec_dot_q4_1_q8_1,
        [QT_Q5_0] = qt_vec_dot_q5_0_q8_0,
        [QT_Q5_1] = qt_vec_dot_q5_1_q8_1,
        [QT_Q8_0] = qt_vec_dot_q8_0_q8_0,
        [QT_Q2_K] = qt_vec_dot_q2_K_q8_K,
        [QT_Q3_K] = qt_vec_dot_q3_K_q8_K,
        [QT_Q4_K] = qt_vec_dot_q4_K_q8_K,
        [QT_Q5_K] = qt_vec_dot_q5_K_q8_K,
        [QT_Q6_K] = qt_vec_dot_q6_K_q8_K,
        [QT_IQ4_NL] = qt_vec_dot_iq4_nl_q8_0,
    },
    .from_float = {
        [QT_Q8_0] = qt_from_float_q8_0,
        [QT_Q8_1] = qt_from_float_q8_1,
        [QT_Q8_K] = qt_from_float_q8_K,
    },
    .quantize_act = {
        [QT_Q8_0] = qt_quantize_act_q8_0,
        [QT_Q8_1] = qt_quantize_act_q8_1,
        [QT_Q8_K] = qt_quantize_act_q8_K,
    },
};

const qt_kernels *qt_isa_kernels(qt_isa isa) {
    switch (isa) {
    case QT_ISA_SCALAR:
        return &scalar_kernels;
#if defined(__x86_64__)
    case QT_ISA_AVX2:
        return &qt_kernels_avx2;
    case QT_ISA_AVX2_VNNI:
        return &qt_kernels_avx2_vnni;
    case QT_ISA_AVX512:
        return &qt_kernels_avx512;
    case QT_ISA_AVX512_VNNI:
        return &qt_kernels_avx512_vnni;
#endif
#if defined(__aarch64__)
    case QT_ISA_NEON:
        return &qt_kernels_neon;
    case QT_ISA_NEON_DOTPROD:
        return &qt_kernels_neon_dotprod;
#endif
    default:
        return NULL;
    }
}

bool qt_isa_supported(const qt_cpu_features *cpu, qt_isa isa) {
    if (qt_isa_kernels(isa) == NULL)
        return false;
    /* The AVX-512 file is compiled with -mfma -mf16c and may use AVX2
     * forms too, so each level includes the one below. */
    const bool avx2 = cpu->avx2 && cpu->fma && cpu->f16c;
    const bool avx512 = avx2 && cpu->avx512f && cpu->avx512bw && cpu->avx512vl && cpu->avx512dq;
    switch (isa) {
    case QT_ISA_SCALAR:
        return true;
    case QT_ISA_AVX2:
        return avx2;
    case QT_ISA_AVX2_VNNI:
        return avx2 && cpu->avxvnni;
    case QT_ISA_AVX512:
        return avx512;
    case QT_ISA_AVX512_VNNI:
        return avx512 && cpu->avx512vnni;
    case QT_ISA_NEON:
        return cpu->neon;
    case QT_ISA_NEON_DOTPROD:
        return cpu->neon && cpu->dotprod;
    default:
        return false;
    }
}

/* The architecture a set belongs to, named by its lowest set. */
static qt_isa family(qt_isa isa) {
    return isa >= QT_ISA_NEON ? QT_ISA_NEON : isa >= QT_ISA_AVX2 ? QT_ISA_AVX2 : QT_ISA_SCALAR;
}

/* The levels a request can name, each the highest set it allows. */
static const struct {
    const char *name;
    qt_isa cap;
} levels[] = {
    {"scalar", QT_ISA_SCALAR},
    {"avx2", QT_ISA_AVX2_VNNI},
    {"avx512", QT_ISA_AVX512_VNNI},
    {"avx512-vnni", QT_ISA_AVX512_VNNI},
    {"neon", QT_ISA_NEON},
    {"neon-dotprod", QT_ISA_NEON_DOTPROD},
};

/* A level caps its own architecture's sets only: "avx512" on an Arm CPU
 * leaves the NEON sets alone, a no-op like an unknown name. */
static bool allowed(qt_isa isa, const char *request) {
    if (request == NULL)
        return true;
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        if (strcmp(request, levels[i].name) != 0)
            continue;
        if (levels[i].cap == QT_ISA_SCALAR)
            return isa == QT_ISA_SCALAR;
        return family(isa) != family(levels[i].cap) || isa <= levels[i].cap;
    }
    return true;
}

qt_isa qt_isa_choose(const qt_cpu_features *cpu, const char *request) {
    for (int isa = QT_ISA_COUNT - 1; isa > QT_ISA_SCALAR; isa--)
        if (allowed((qt_isa)isa, request) && qt_isa_supported(cpu, (qt_isa)isa))
            return (qt_isa)isa;
    return QT_ISA_SCALAR;
}

static qt_isa active;
static pthread_once_t active_once = PTHREAD_ONCE_INIT;

static void choose_active(void) {
    active = qt_isa_choose(qt_cpu(), getenv("QLM_ISA"));
}

qt_isa qt_isa_active(void) {
    pthread_once(&active_once, choose_active);
    return active;
}

bool qt_amx_allowed(const qt_cpu_features *cpu, qt_isa active, const char *request) {
    if (active != QT_ISA_AVX512_VNNI || !cpu->amx)
        return false;
    if (request == NULL || strcmp(request, "amx") == 0)
        return true;
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
        if (strcmp(request, levels[i].name) == 0)
            return false;
    return true;
}

static bool amx;
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;

static void choose_amx(void) {
    const char *request = getenv("QLM_ISA");
    amx = qt_amx_allowed(qt_cpu(), qt_isa_active(), request);
}

bool qt_amx_active(void) {
    pthread_once(&amx_once, choose_amx);
    return amx;
}

static bool q8_i16;
static pthread_once_t q8_i16_once = PTHREAD_ONCE_INIT;

static void choose_q8_i16(void) {
    const char *order = getenv("QLM_Q8_ORDER");
    q8_i16 = order && strcmp(order, "i16") == 0;
}

bool qt_q8_i16_active(void) {
    pthread_once(&q8_i16_once, choose_q8_i16);
    return q8_i16;
}

const char *qt_isa_name(void) {
    return qt_isa_kernels(qt_isa_active())->name;
}
