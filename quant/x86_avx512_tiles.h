/* x86_avx512_tiles.h - what the AVX-512 tile kernels (quant/tiles.h)
 * share.  Included only by quant/x86_avx512_*.c built with AVX-512 flags. */
#ifndef QLM_QT_X86_AVX512_TILES_H
#define QLM_QT_X86_AVX512_TILES_H

#include <immintrin.h>
#include <stddef.h>

/* The kernels gather the results of a run of rows per column (res, one
 * row of `res_stride` floats per column) because the output's columns are
 * n_out floats apart: storing each result directly would touch a line,
 * and a page, per column every time.  This writes rows [r0, r0 + n) of
 * columns [c0, c0 + nc), 16 floats per masked store, without a call. */
static inline __attribute__((always_inline)) void qt_tiles_flush(float *out, size_t out_stride, int c0, int nc,
                                                                 const float *res, int res_stride, int r0, int n)
{
    for (int c = 0; c < nc; c++)
        for (int i = 0; i < n; i += 16) {
            const __mmask16 m = (__mmask16)(n - i >= 16 ? 0xffff : (1u << (n - i)) - 1);
            _mm512_mask_storeu_ps(out + (size_t)(c0 + c) * out_stride + r0 + i, m,
                                  _mm512_maskz_loadu_ps(m, res + (size_t)c * res_stride + i));
        }
}

#endif
