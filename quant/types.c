/* types.c - the type-traits table.
 *
 * Block sizes and bytes per block are the GGML layouts (ggml-common.h's
 * asserted struct sizes, which gguf-py's GGML_QUANT_SIZES repeats), except
 * that Q8_1 is 36 bytes as in ggml where gguf-py says 40.  Names are
 * gguf-py's enum names in lower case.
 *
 * vec_dot_type is ggml's pairing for every type that has (or will have) a
 * dot product, so filling in a kernel later never changes the table's
 * shape.  Integer and F64 rows have no dot product and name themselves. */
#include "types.h"

#include <pthread.h>
#include <string.h>

#include "blocks.h"
#include "cpu.h"
#include "ref.h"

#define ROW(id, nm, bs, ts, vdt) [id] = { .name = nm, .block_size = bs, .type_size = ts, .vec_dot_type = vdt }

static const qt_traits ref_table[QT_COUNT] = {
    [QT_F32] = { "f32", 1, 4, qt_to_float_f32, qt_from_float_f32, qt_vec_dot_f32_f32, QT_F32, NULL, NULL, 0 },
    [QT_F16] = { "f16", 1, 2, qt_to_float_f16, qt_from_float_f16, qt_vec_dot_f16_f16, QT_F16, NULL, NULL, 0 },
    [QT_BF16] = { "bf16", 1, 2, qt_to_float_bf16, qt_from_float_bf16, qt_vec_dot_bf16_bf16, QT_BF16, NULL, NULL, 0 },
    [QT_Q4_0] = { "q4_0", QT_QK4_0, sizeof(qt_block_q4_0), qt_to_float_q4_0, qt_from_float_q4_0,
                  qt_vec_dot_q4_0_q8_0, QT_Q8_0, NULL, NULL, 0 },
    [QT_Q4_1] = { "q4_1", QT_QK4_1, sizeof(qt_block_q4_1), qt_to_float_q4_1, qt_from_float_q4_1,
                  qt_vec_dot_q4_1_q8_1, QT_Q8_1, NULL, NULL, 0 },
    [QT_Q5_0] = { "q5_0", QT_QK5_0, sizeof(qt_block_q5_0), qt_to_float_q5_0, qt_from_float_q5_0,
                  qt_vec_dot_q5_0_q8_0, QT_Q8_0, NULL, NULL, 0 },
    [QT_Q5_1] = { "q5_1", QT_QK5_1, sizeof(qt_block_q5_1), qt_to_float_q5_1, qt_from_float_q5_1,
                  qt_vec_dot_q5_1_q8_1, QT_Q8_1, NULL, NULL, 0 },
    [QT_Q8_0] = { "q8_0", QT_QK8_0, sizeof(qt_block_q8_0), qt_to_float_q8_0, qt_from_float_q8_0,
                  qt_vec_dot_q8_0_q8_0, QT_Q8_0, qt_quantize_act_q8_0, NULL, 0 },
    /* An activation type only: ggml has no Q8_1 weight dot either. */
    [QT_Q8_1] = { "q8_1", QT_QK8_1, sizeof(qt_block_q8_1), qt_to_float_q8_1, qt_from_float_q8_1,
                  NULL, QT_Q8_1, qt_quantize_act_q8_1, NULL, 0 },

    [QT_Q2_K] = { "q2_k", QT_QK_K, sizeof(qt_block_q2_K), qt_to_float_q2_K, qt_from_float_q2_K,
                  qt_vec_dot_q2_K_q8_K, QT_Q8_K, NULL, NULL, 0 },
    [QT_Q3_K] = { "q3_k", QT_QK_K, sizeof(qt_block_q3_K), qt_to_float_q3_K, qt_from_float_q3_K,
                  qt_vec_dot_q3_K_q8_K, QT_Q8_K, NULL, NULL, 0 },
    [QT_Q4_K] = { "q4_k", QT_QK_K, sizeof(qt_block_q4_K), qt_to_float_q4_K, qt_from_float_q4_K,
                  qt_vec_dot_q4_K_q8_K, QT_Q8_K, NULL, NULL, 0 },
    [QT_Q5_K] = { "q5_k", QT_QK_K, sizeof(qt_block_q5_K), qt_to_float_q5_K, qt_from_float_q5_K,
                  qt_vec_dot_q5_K_q8_K, QT_Q8_K, NULL, NULL, 0 },
    [QT_Q6_K] = { "q6_k", QT_QK_K, sizeof(qt_block_q6_K), qt_to_float_q6_K, qt_from_float_q6_K,
                  qt_vec_dot_q6_K_q8_K, QT_Q8_K, NULL, NULL, 0 },
    /* Like Q8_1, an activation type only: ggml has no Q8_K weight dot. */
    [QT_Q8_K] = { "q8_k", QT_QK_K, sizeof(qt_block_q8_K), qt_to_float_q8_K, qt_from_float_q8_K,
                  NULL, QT_Q8_K, qt_quantize_act_q8_K, NULL, 0 },

    /* i-quants: sizes from ggml-common.h's block structs. */
    ROW(QT_IQ2_XXS, "iq2_xxs", 256, 2 + 64, QT_Q8_K),
    ROW(QT_IQ2_XS, "iq2_xs", 256, 2 + 64 + 8, QT_Q8_K),
    ROW(QT_IQ3_XXS, "iq3_xxs", 256, 2 + 64 + 32, QT_Q8_K),
    ROW(QT_IQ1_S, "iq1_s", 256, 2 + 32 + 16, QT_Q8_K),
    [QT_IQ4_NL] = { "iq4_nl", QT_QK4_NL, sizeof(qt_block_iq4_nl), qt_to_float_iq4_nl, qt_from_float_iq4_nl,
                    qt_vec_dot_iq4_nl_q8_0, QT_Q8_0, NULL, NULL, 0 },
    ROW(QT_IQ3_S, "iq3_s", 256, 2 + 64 + 32 + 8 + 4, QT_Q8_K),
    ROW(QT_IQ2_S, "iq2_s", 256, 2 + 64 + 16, QT_Q8_K),
    ROW(QT_IQ4_XS, "iq4_xs", 256, 2 + 2 + 128 + 4, QT_Q8_K),
    ROW(QT_IQ1_M, "iq1_m", 256, 32 + 16 + 8, QT_Q8_K),

    ROW(QT_I8, "i8", 1, 1, QT_I8),
    ROW(QT_I16, "i16", 1, 2, QT_I16),
    ROW(QT_I32, "i32", 1, 4, QT_I32),
    ROW(QT_I64, "i64", 1, 8, QT_I64),
    ROW(QT_F64, "f64", 1, 8, QT_F64),

    /* Ternary: 5 trits per byte (48 bytes) + 4 per byte (4 bytes) + d. */
    ROW(QT_TQ1_0, "tq1_0", 256, 48 + 4 + 2, QT_Q8_K),
    ROW(QT_TQ2_0, "tq2_0", 256, 64 + 2, QT_Q8_K),
    /* One E8M0 exponent byte + 16 bytes of 4-bit E2M1 codes. */
    ROW(QT_MXFP4, "mxfp4", 32, 1 + 16, QT_Q8_0),
};

/* The rows handed out: ref_table with the chosen ISA's kernels patched in
 * once, before the first qt_get returns, so callers always see one
 * consistent set.  Only rows that already have a reference function take a
 * kernel: an ISA table cannot make a type computable that the reference
 * cannot check. */
static qt_traits table[QT_COUNT];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void patch_table(void) {
    memcpy(table, ref_table, sizeof table);
    const qt_kernels *k = qt_isa_kernels(qt_isa_active());
    for (int t = 0; t < QT_COUNT; t++) {
        if (table[t].vec_dot && k->vec_dot[t])
            table[t].vec_dot = k->vec_dot[t];
        /* A tile kernel matches its own set's vec_dot only. */
        if (k->vec_dot[t] && table[t].vec_dot == k->vec_dot[t])
            table[t].vec_dot_tile = k->vec_dot_tile[t];
        const bool legacy = t == QT_Q4_0 || t == QT_Q4_1 || t == QT_Q5_0 || t == QT_Q5_1 || t == QT_Q8_0;
        const bool zen_q6_K = t == QT_Q6_K && qt_cpu()->amd && qt_isa_active() == QT_ISA_AVX512_VNNI;
        table[t].one_row_min_bytes = !table[t].vec_dot_tile ? 0 : legacy ? 2048 : zen_q6_K ? 1024 : 0;
        if (table[t].from_float && k->from_float[t])
            table[t].from_float = k->from_float[t];
        if (table[t].quantize_act && k->quantize_act[t])
            table[t].quantize_act = k->quantize_act[t];
    }
}

const qt_traits *qt_get(uint32_t type) {
    pthread_once(&table_once, patch_table);
    if (type >= QT_COUNT || table[type].name == NULL)
        return NULL;
    return &table[type];
}

size_t qt_row_size(qt_type t, int64_t n) {
    const qt_traits *tr = qt_get((uint32_t)t);
    if (tr == NULL || n < 0 || n % tr->block_size != 0)
        return 0;
    const uint64_t blocks = (uint64_t)(n / tr->block_size);
    if (blocks > SIZE_MAX / tr->type_size)
        return 0;
    return (size_t)blocks * tr->type_size;
}
