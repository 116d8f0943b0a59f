/* test_kv.c - the KV cache on its own: int8/f16 attention kernels of every
 * ISA bit-identical to the scalar reference (and the reference equal to
 * the math it claims), element types round-tripping, sizes, and the
 * sequence operations remove/copy/shift. */
#include <math.h>
#include <string.h>

#include "quant/cpu.h"
#include "quant/fp16.h"
#include "quant/kv_ops.h"
#include "src/kv.h"
#include "test.h"

static float frand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*s >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}


enum { NR = 300, LD = 200 };

static void check_set(const qt_kv_ops *ops)
{
    const qt_kv_ops *ref = qt_kv_ref();
    uint64_t seed = 5;
    char name[96];
    static int8_t k8[NR * LD], q8[LD];
    static uint16_t k16[NR * LD];
    static float kd[NR * 3], q[LD], p[NR], s1[NR], s2[NR], o1[LD], o2[LD];
    static int32_t idx[NR];
    for (int i = 0; i < NR * LD; i++) {
        k8[i] = (int8_t)(frand(&seed) * 127.4f);
        k16[i] = qt_f32_to_f16(frand(&seed) * 3);
    }
    for (int i = 0; i < NR * 3; i++) kd[i] = fabsf(frand(&seed)) * 0.01f;
    for (int i = 0; i < LD; i++) { q[i] = frand(&seed); q8[i] = (int8_t)(frand(&seed) * 127.4f); }
    for (int r = 0; r < NR; r++) { p[r] = fabsf(frand(&seed)); idx[r] = (r * 7 + 3) % NR; }
    /* the extreme bytes that break naive sign tricks */
    k8[0] = 127; k8[1] = -127; q8[0] = -127; q8[1] = -127;
    const int ds[] = {1, 16, 31, 32, 33, 64, 80, 128, 200};

    snprintf(name, sizeof name, "kv_%s/qk_i8", ops->name);
    TEST_BEGIN(name);
    /* row counts with every remainder of the kernels' 16-row blocks */
    const int qk_ns[] = {1, 5, 15, 16, 17, 38, 97, 110, 127};
    for (size_t t = 0; t < sizeof ds / sizeof ds[0]; t++)
        for (size_t ni = 0; ni < sizeof qk_ns / sizeof qk_ns[0]; ni++)
            for (int use_idx = 0; use_idx < 2; use_idx++) {
                const int d = ds[t], n = qk_ns[ni];
                for (int r = 0; r <= n; r++) s1[r] = s2[r] = 7.0f;
                ops->qk_i8(n, d, q8, 0.37f, k8, LD, kd, 3, use_idx ? idx : NULL, s1);
                ref->qk_i8(n, d, q8, 0.37f, k8, LD, kd, 3, use_idx ? idx : NULL, s2);
                for (int r = 0; r <= n; r++)
                    CHECK(same_bits(s1[r], s2[r]), "d=%d n=%d r=%d: %.9g vs %.9g", d, n, r, s1[r], s2[r]);
            }
    TEST_END();

    snprintf(name, sizeof name, "kv_%s/qk_f16", ops->name);
    TEST_BEGIN(name);
    for (size_t t = 0; t < sizeof ds / sizeof ds[0]; t++) {
        const int d = ds[t], n = 97;
        ops->qk_f16(n, d, q, 0.125f, k16, LD, idx, s1);
        ref->qk_f16(n, d, q, 0.125f, k16, LD, idx, s2);
        for (int r = 0; r < n; r++) CHECK(same_bits(s1[r], s2[r]), "d=%d r=%d: %.9g vs %.9g", d, r, s1[r], s2[r]);
    }
    TEST_END();

    if (ops->quantize_i8) {
        snprintf(name, sizeof name, "kv_%s/quantize_i8", ops->name);
        TEST_BEGIN(name);
        static float x[LD];
        int8_t a[LD], b[LD];
        /* kind 0 random, 1 a NaN, 2 an infinity, 3 zeros and -0, 4 tiny
         * (127 / amax overflows), 5 subnormals, 6 values at the rounding
         * ties of the scaled grid */
        for (int kind = 0; kind < 7; kind++)
            for (size_t t = 0; t < sizeof ds / sizeof ds[0]; t++) {
                const int d = ds[t];
                for (int i = 0; i < d; i++) {
                    const float r = frand(&seed);
                    x[i] = kind == 3 ? (i % 2 ? -0.0f : 0.0f)
                         : kind == 4 ? r * 1e-38f
                         : kind == 5 ? r * 1e-42f
                         : kind == 6 ? (float)((int)(r * 254.0f) - 127) * 0.5f
                                     : r * 4.0f;
                }
                if (kind == 1) x[d / 2] = NAN;
                if (kind == 2) x[d - 1] = -INFINITY;
                memset(a, 0x55, sizeof a);
                memset(b, 0x55, sizeof b);
                const float da = ops->quantize_i8(d, x, a), db = ref->quantize_i8(d, x, b);
                CHECK(same_bits(da, db), "kind %d d=%d: scale %.9g vs %.9g", kind, d, da, db);
                CHECK(!memcmp(a, b, sizeof a), "kind %d d=%d: the int8 values (or bytes past them) differ", kind, d);
            }
        TEST_END();
    }

    snprintf(name, sizeof name, "kv_%s/pv", ops->name);
    TEST_BEGIN(name);
    for (size_t t = 0; t < sizeof ds / sizeof ds[0]; t++)
        for (int n = 1; n <= NR; n += 149) {
            const int d = ds[t];
            /* int8: the contract's sums from scores (p as scores) */
            static double a1[LD], a2[LD];
            double z1 = 0.0, z2 = 0.0;
            const float mx = 0.75f, kw = 32767.0f / 0.9f;
            memset(a1, 0, sizeof a1);
            memset(a2, 0, sizeof a2);
            memcpy(s1, p, sizeof(float) * (size_t)n);
            memcpy(s2, p, sizeof(float) * (size_t)n);
            ops->pv_i8_sum(d, 1, &n, k8, LD, kd, 3, idx, s1, 0, &mx, &kw, a1, d, &z1);
            ref->pv_i8_sum(d, 1, &n, k8, LD, kd, 3, idx, s2, 0, &mx, &kw, a2, d, &z2);
            CHECK(z1 == z2, "i8 d=%d n=%d: z %.17g vs %.17g", d, n, z1, z2);
            for (int e = 0; e < d; e++) CHECK(a1[e] == a2[e], "i8 d=%d n=%d e=%d: %.17g vs %.17g", d, n, e, a1[e], a2[e]);
            ops->pv_f16(n, d, k16, LD, n > 100 ? NULL : idx, p, o1);
            ref->pv_f16(n, d, k16, LD, n > 100 ? NULL : idx, p, o2);
            for (int e = 0; e < d; e++) CHECK(same_bits(o1[e], o2[e]), "f16 d=%d n=%d e=%d: %.9g vs %.9g", d, n, e, o1[e], o2[e]);
        }
    TEST_END();
}

/* The reference against sums written from the definitions, in double. */
static void check_reference_math(void)
{
    TEST_BEGIN("kv_reference_math");
    const qt_kv_ops *ref = qt_kv_ref();
    uint64_t seed = 9;
    int8_t k[4 * 64], q[64];
    float kd[4], s[4], p[4] = {0.1f, 0.2f, 0.3f, 0.4f}, o[64];
    for (int i = 0; i < 4 * 64; i++) k[i] = (int8_t)(frand(&seed) * 127);
    for (int i = 0; i < 64; i++) q[i] = (int8_t)(frand(&seed) * 127);
    for (int r = 0; r < 4; r++) kd[r] = 0.5f + r;
    ref->qk_i8(4, 64, q, 0.25f, k, 64, kd, 1, NULL, s);
    for (int r = 0; r < 4; r++) {
        long sum = 0;
        for (int e = 0; e < 64; e++) sum += q[e] * k[r * 64 + e];
        CHECK(fabs(s[r] - sum * 0.25 * kd[r]) <= 1e-6 * fabs(sum * 0.25 * kd[r]) + 1e-9, "qk r=%d", r);
    }
    /* int8 p.v: softmax(log p) = p / sum(p) = p (they add up to 1), so
     * out = sum p[r] * kd[r] * k_r within the 15-bit weights' rounding */
    float sp[4], mx = -INFINITY;
    for (int r = 0; r < 4; r++) mx = fmaxf(mx, sp[r] = logf(p[r]));
    const int n4 = 4;
    const float kw = 32767.0f / kd[3];
    double acc[64] = {0}, z = 0.0;
    ref->pv_i8_sum(64, 1, &n4, k, 64, kd, 1, NULL, sp, 0, &mx, &kw, acc, 64, &z);
    qt_kv_pv_out(64, acc, z, kw, o);
    for (int e = 0; e < 64; e++) {
        double want = 0;
        for (int r = 0; r < 4; r++) want += (double)p[r] * kd[r] * k[r * 64 + e];
        CHECK(fabs(o[e] - want) <= 4 * 127 * kd[3] / 32767 + 1e-5 * fabs(want), "pv e=%d: %g vs %g", e, o[e], want);
    }
    /* quantizer: round trip within half a step, max element exact */
    float x[64], y[64];
    int8_t xq[64];
    for (int i = 0; i < 64; i++) x[i] = frand(&seed) * 5;
    x[7] = -6.5f;
    const float d = qt_kv_quantize_i8(64, x, xq);
    CHECK(xq[7] == -127 && fabsf(d - 6.5f / 127) < 1e-9f, "amax element: q=%d d=%g", xq[7], d);
    for (int i = 0; i < 64; i++) y[i] = d * xq[i];
    for (int i = 0; i < 64; i++) CHECK(fabsf(y[i] - x[i]) <= 0.5f * d * 1.0001f, "i=%d: %g vs %g", i, y[i], x[i]);
    float zeros[8] = {0};
    CHECK(qt_kv_quantize_i8(8, zeros, xq) == 0.0f && xq[0] == 0, "all-zero row");
    TEST_END();
}

static void check_types(void)
{
    TEST_BEGIN("kv_types_round_trip_and_size");
    const qlm_kv_type types[] = {QLM_KV_F32, QLM_KV_F16, QLM_KV_I8};
    size_t bytes[3];
    uint64_t seed = 3;
    float k[2 * 64], v[2 * 64], back[2 * 64];
    for (int i = 0; i < 128; i++) { k[i] = frand(&seed) * 4; v[i] = frand(&seed); }
    for (int t = 0; t < 3; t++) {
        qlm_kv kv;
        qlm_err err = {0};
        CHECK(qlm_kv_init(&kv, 3, 40, 2, 64, types[t], types[t], &err) == 0, "%s", err.msg);
        bytes[t] = qlm_kv_bytes(&kv);
        qlm_kv_store(&kv, 2, 39, k, v);
        const double tol = types[t] == QLM_KV_F32 ? 0 : types[t] == QLM_KV_F16 ? 1e-3 : 1.0 / 127;
        qlm_kv_load_k(&kv, 2, 39, back);
        for (int i = 0; i < 128; i++) CHECK(fabs(back[i] - k[i]) <= tol * 4 * 0.51 + 1e-7, "%s k[%d]", qlm_kv_type_name(types[t]), i);
        qlm_kv_load_v(&kv, 2, 39, back);
        for (int i = 0; i < 128; i++) CHECK(fabs(back[i] - v[i]) <= tol * 0.51 + 1e-7, "%s v[%d]", qlm_kv_type_name(types[t]), i);
        qlm_kv_free(&kv);
    }
    CHECK(bytes[0] == 2 * bytes[1], "f32 %zu vs f16 %zu", bytes[0], bytes[1]);
    CHECK(bytes[2] <= 0.54 * bytes[1], "int8 %zu bytes is more than 0.54x f16's %zu", bytes[2], bytes[1]);
    CHECK(qlm_kv_type_parse("int8") == QLM_KV_I8 && qlm_kv_type_parse("f16") == QLM_KV_F16 &&
          qlm_kv_type_parse("f32") == QLM_KV_F32 && qlm_kv_type_parse("q4_0") < 0, "type names");
    TEST_END();
}

static int claim1(qlm_kv *kv, int32_t pos, int32_t seq)
{
    int cell;
    qlm_err err;
    const int32_t tok = 100 + pos;
    return qlm_kv_claim(kv, 1, &tok, &pos, &seq, &cell, &err) ? -1 : cell;
}

static void check_seq_ops(void)
{
    qlm_kv kv;
    qlm_err err = {0};
    TEST_BEGIN("kv_seq_rm_cp_add");
    CHECK(qlm_kv_init(&kv, 1, 16, 1, 4, QLM_KV_F32, QLM_KV_F32, &err) == 0, "%s", err.msg);
    for (int i = 0; i < 6; i++) claim1(&kv, i, 0);
    for (int i = 0; i < 4; i++) claim1(&kv, i, 1);
    CHECK(kv.n_used == 10 && kv.n_top == 10, "used %d top %d", kv.n_used, kv.n_top);
    /* prefix: tokens 100+p at positions p */
    const int32_t want[8] = {100, 101, 102, 103, 104, 999, 106, 107};
    CHECK(qlm_kv_seq_prefix(&kv, 0, want, 8) == 5, "seq 0 prefix %d", qlm_kv_seq_prefix(&kv, 0, want, 8));
    CHECK(qlm_kv_seq_prefix(&kv, 1, want, 8) == 4, "seq 1 prefix %d", qlm_kv_seq_prefix(&kv, 1, want, 8));
    CHECK(qlm_kv_seq_prefix(&kv, 5, want, 8) == 0, "empty seq prefix");
    /* copy: seq 2 shares seq 0's first three cells, no new cells */
    qlm_kv_seq_cp(&kv, 0, 2, 0, 3);
    CHECK(qlm_kv_seq_count(&kv, 2) == 3 && kv.n_used == 10, "cp: %d cells, %d used", qlm_kv_seq_count(&kv, 2), kv.n_used);
    CHECK(qlm_kv_seq_pos_max(&kv, 2) == 2, "cp max pos %d", qlm_kv_seq_pos_max(&kv, 2));
    /* remove seq 0 entirely: the shared cells stay for seq 2 */
    qlm_kv_seq_rm(&kv, 0, 0, -1);
    CHECK(qlm_kv_seq_count(&kv, 0) == 0 && kv.n_used == 7, "rm: seq0 %d, used %d", qlm_kv_seq_count(&kv, 0), kv.n_used);
    CHECK(qlm_kv_seq_count(&kv, 2) == 3, "seq 2 lost cells");
    /* freed cells are reused lowest first */
    CHECK(claim1(&kv, 9, 3) == 3, "claim after rm reuses cell 3");
    /* shift: seq 1 positions [2, 4) move by -2; [0,2) are untouched */
    int32_t moved[16];
    const int n = qlm_kv_seq_add(&kv, 1, 2, -1, -2, moved);
    CHECK(n == 2, "moved %d cells", n);
    int at0 = 0;
    for (int c = 0; c < kv.n_top; c++) at0 += (kv.seqs[c] >> 1 & 1) && kv.pos[c] == 0;
    CHECK(at0 == 2 && qlm_kv_seq_pos_max(&kv, 1) == 1, "after shift: %d cells at 0, max %d", at0, qlm_kv_seq_pos_max(&kv, 1));
    /* shifting below zero frees */
    const int before = kv.n_used;
    qlm_kv_seq_add(&kv, 1, 0, -1, -1, NULL);
    CHECK(kv.n_used == before - 2 && qlm_kv_seq_pos_max(&kv, 1) == 0, "below-zero cells freed: used %d", kv.n_used);
    /* rm of everything */
    qlm_kv_seq_rm(&kv, -1, 0, -1);
    CHECK(kv.n_used == 0 && kv.n_top == 0, "clear via rm: used %d top %d", kv.n_used, kv.n_top);
    /* full cache is an error, not an overrun */
    for (int i = 0; i < 16; i++) claim1(&kv, i, 0);
    CHECK(claim1(&kv, 16, 0) == -1, "claim in a full cache must fail");
    qlm_kv_free(&kv);
    TEST_END();
}

int main(void)
{
    check_reference_math();
#if defined(__x86_64__)
    const struct { qt_isa isa; const qt_kv_ops *ops; } sets[] = {
        {QT_ISA_AVX2, &qt_kv_avx2}, {QT_ISA_AVX2_VNNI, &qt_kv_avx2_vnni},
        {QT_ISA_AVX512, &qt_kv_avx512}, {QT_ISA_AVX512_VNNI, &qt_kv_avx512_vnni}};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        if (qt_isa_supported(qt_cpu(), sets[i].isa)) check_set(sets[i].ops);
#endif
    check_types();
    check_seq_ops();
    TEST_EXIT();
}
