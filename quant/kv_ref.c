/* kv_ref.c - the scalar reference of kv_ops.h and the choice of set. */
#include "kv_ops.h"

#include <math.h>
#include <string.h>

#include "cpu.h"
#include "f32ops.h"
#include "fp16.h"

static float ref_quantize_i8(int n, const float *x, int8_t *q)
{
    float amax = 0.0f;
    for (int i = 0; i < n; i++) amax = fmaxf(amax, fabsf(x[i]));
    const float d = amax / 127.0f, id = amax > 0.0f ? 127.0f / amax : 0.0f;
    for (int i = 0; i < n; i++) {
        long v = lrintf(x[i] * id);
        q[i] = (int8_t)(v > 127 ? 127 : v < -127 ? -127 : v);
    }
    return d;
}

static void ref_qk_i8(int n, int d, const int8_t *q, float qd, const int8_t *k, int64_t ldk,
                      const float *kd, int64_t lds, const int32_t *idx, float *s)
{
    for (int r = 0; r < n; r++) {
        const int64_t c = idx ? idx[r] : r;
        const int8_t *kr = k + c * ldk;
        int32_t sum = 0;
        for (int e = 0; e < d; e++) sum += (int32_t)q[e] * kr[e];
        s[r] = (float)sum * (qd * kd[c * lds]);
    }
}

static void ref_qk_f16(int n, int d, const float *q, float scale, const uint16_t *k, int64_t ldk,
                       const int32_t *idx, float *s)
{
    for (int r = 0; r < n; r++) {
        const uint16_t *kr = k + (idx ? idx[r] : r) * ldk;
        float acc[16] = {0};
        for (int e = 0; e < d; e++) acc[e % 16] = fmaf(q[e], qt_f16_to_f32(kr[e]), acc[e % 16]);
        s[r] = qt_reduce16(acc) * scale;
    }
}

static void ref_pv_f16(int n, int d, const uint16_t *v, int64_t ldv, const int32_t *idx,
                       const float *p, float *out)
{
    for (int e = 0; e < d; e++) {
        float acc[2] = {0.0f, 0.0f};
        for (int r = 0; r < n; r++) {
            const int64_t c = idx ? idx[r] : r;
            acc[r & 1] = fmaf(p[r], qt_f16_to_f32(v[c * ldv + e]), acc[r & 1]);
        }
        out[e] = acc[0] + acc[1];
    }
}

static void ref_qk_i8_causal(int d, int nq, const int *n, const int8_t *q, const float *qd, const int8_t *k,
                             int64_t ldk, const float *kd, int64_t lds, float *s, int64_t ld_s)
{
    for (int h = 0; h < nq; h++) ref_qk_i8(n[h], d, q + (int64_t)h * d, qd[h], k, ldk, kd, lds, NULL, s + h * ld_s);
}

static float ref_max_f32(int n, const float *x)
{
    float m = -INFINITY;
    for (int i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

/* lrintf(x) clamped to [0, hi]; NaN (LONG_MIN) gives 0 */
static int32_t clamp_rint(float x, int32_t hi)
{
    const long q = lrintf(x);
    return (int32_t)(q > hi ? hi : q < 0 ? 0 : q);
}

static void ref_pv_i8_sum(int d, int nq, const int *n, const int8_t *v, int64_t ldv, const float *vd, int64_t lds,
                          const int32_t *idx, float *s, int64_t ld_s, const float *mx, const float *kw, double *acc,
                          int64_t ld_acc, double *z)
{
    const qt_f32_ops *f32 = qt_f32_ref();
    for (int h = 0; h < nq; h++) {
        float *w = s + h * ld_s;
        double *a = acc + h * ld_acc;
        const int nh = n[h];
        for (int r0 = 0; r0 < nh; r0 += 16) {
            float e[16];
            for (int l = 0; l < 16; l++) e[l] = r0 + l < nh ? w[r0 + l] - mx[h] : 0.0f;
            f32->exp16(e, e);
            for (int l = 0; l < 16 && r0 + l < nh; l++) {
                const int r = r0 + l;
                const int64_t c = idx ? idx[r] : r;
                const int32_t W = clamp_rint((e[l] * vd[c * lds]) * kw[h], 32767);
                z[h] += (double)clamp_rint(e[l] * 0x1p24f, 1 << 24);
                const int8_t *vr = v + c * ldv;
                for (int j = 0; j < d; j++) a[j] += (double)(W * vr[j]);
            }
        }
    }
}

static const qt_kv_ops ref_ops = {.name = "scalar", .qk_i8 = ref_qk_i8, .qk_f16 = ref_qk_f16,
                                  .pv_f16 = ref_pv_f16, .quantize_i8 = ref_quantize_i8, .max_f32 = ref_max_f32,
                                  .qk_i8_causal = ref_qk_i8_causal, .pv_i8_sum = ref_pv_i8_sum};

const qt_kv_ops *qt_kv_ref(void) { return &ref_ops; }

const qt_kv_ops *qt_kv(void)
{
#if defined(__x86_64__)
    switch (qt_isa_active()) {
    case QT_ISA_AVX512_VNNI: return &qt_kv_avx512_vnni;
    case QT_ISA_AVX512: return &qt_kv_avx512;
    case QT_ISA_AVX2_VNNI: return &qt_kv_avx2_vnni;
    case QT_ISA_AVX2: return &qt_kv_avx2;
    default: break;
    }
#endif
    return &ref_ops;
}

float qt_kv_quantize_i8(int n, const float *x, int8_t *q)
{
    const qt_kv_ops *ops = qt_kv();
    return ops->quantize_i8 ? ops->quantize_i8(n, x, q) : ref_quantize_i8(n, x, q);
}

void qt_kv_pv_out(int d, const double *acc, double z, float kw, float *out)
{
    const double g = kw > 0.0f && z > 0.0 ? 16777216.0 / ((double)kw * z) : 0.0;
    int j = 0;
    for (; j + 4 <= d; j += 4) /* in fours, which the compiler turns into vector steps */
        for (int i = 0; i < 4; i++) out[j + i] = (float)(acc[j + i] * g);
    for (; j < d; j++) out[j] = (float)(acc[j] * g);
}
