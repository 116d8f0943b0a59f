/* fgemm_ref.c - the tinyBLAS float order's definition (fgemm.h) and the
 * choice of kernel. */
#include "fgemm.h"

#include <math.h>

#include "cpu.h"
#include "f32ops.h"
#include "fp16.h"

bool qt_fgemm_applies(qt_type type, int64_t rows, int64_t n, int n_cols)
{
    /* tinyBLAS declines a row count it cannot tile by 4 and a row length
     * that is not whole vectors: llama.cpp then takes vec_dot */
    return (type == QT_F32 || type == QT_F16 || type == QT_BF16) && n_cols >= 2 && rows % 4 == 0 &&
           n % QT_FGEMM_LANES == 0;
}

static float element(qt_type type, const void *p, int i)
{
    switch (type) {
    case QT_F16: return qt_f16_to_f32(((const uint16_t *)p)[i]);
    case QT_BF16: return qt_bf16_to_f32(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

float qt_fgemm_dot(qt_type type, int n, const void *x, const void *y)
{
    float acc[QT_FGEMM_LANES] = {0};
    for (int i = 0; i < n; i++)
        acc[i % QT_FGEMM_LANES] = fmaf(element(type, x, i), element(type, y, i), acc[i % QT_FGEMM_LANES]);
    return qt_reduce16(acc);
}

static void ref_fgemm(qt_type type, int n, const void *w, size_t w_stride, int nrows, const void *y, size_t y_stride,
                      int ncols, float *out, size_t ldo)
{
    for (int c = 0; c < ncols; c++)
        for (int r = 0; r < nrows; r++)
            out[(size_t)c * ldo + (size_t)r] =
                qt_fgemm_dot(type, n, (const uint8_t *)w + (size_t)r * w_stride, (const uint8_t *)y + (size_t)c * y_stride);
}

qt_fgemm_fn qt_fgemm_ref(void) { return ref_fgemm; }

qt_fgemm_fn qt_fgemm(void)
{
#if defined(__x86_64__)
    const qt_isa isa = qt_isa_active();
    if (isa == QT_ISA_AVX512 || isa == QT_ISA_AVX512_VNNI) return qt_avx512_fgemm;
    if (isa != QT_ISA_SCALAR) return qt_avx2_fgemm;
#endif
    return ref_fgemm;
}
