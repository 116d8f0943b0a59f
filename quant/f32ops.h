/* f32ops.h - float kernels in the summation order of llama.cpp's AVX-512
 * build: its vec_dot_f32, its tinyBLAS tile, its vector exp.
 *
 * They live in quant/ because they need FMA and wide vectors (only quant's
 * ISA files may use those), and they must round exactly as the reference
 * here does on every CPU: the models we match are chaotic at the ulp level
 * (see quant/ref.c).  The scalar versions are the reference; an ISA version
 * returns identical bits. */
#ifndef QLM_QT_F32OPS_H
#define QLM_QT_F32OPS_H

#include <stdint.h>

typedef enum qt_pv_order {
    QT_PV_VECDOT, /* ggml_vec_dot_f32: 4 x 16 lanes over 64-wide steps */
    QT_PV_TILE16, /* tinyBLAS: 16 lanes over 16-wide steps */
} qt_pv_order;

typedef struct qt_f32_ops {
    const char *name;
    /* ggml_vec_dot_f32 of x and y (n elements). */
    float (*dot)(int n, const float *x, const float *y);
    /* out[k] = sum_j p[j] * v[j * ldv + k] for k < d, each sum in the lane
     * order `order` over j < n (n a multiple of 64, resp. 16). */
    void (*pv)(int n, int d, const float *v, int64_t ldv, const float *p, float *out,
               qt_pv_order order);
    /* y[i] = ggml_v_expf(x[i]) for 16 values (y may be x). */
    void (*exp16)(const float *x, float *y);
    /* ggml's softmax of x in place (the reference's: max, exp of x - max
     * in 16s with the tail by expf, each 16's qt_reduce16 summed in
     * double, times the float reciprocal).  NULL: use the reference's. */
    void (*softmax)(float *x, int n);
    /* g[i] = g[i] / (1 + exp(0 - g[i])) * u[i] for n values (a multiple
     * of 16), exp being exp16's (ggml's vector SwiGLU).  NULL: the
     * reference's. */
    void (*swiglu)(float *g, const float *u, int64_t n);
    /* ggml's GeGLU through its gelu table: g[i] = y * u[i], y = 0 for g
     * <= -10, g for g >= 10, else f32(tab[f16(g)]) (tab: gelu of every
     * half, 65536 entries; f16 rounds to nearest even).  n any.  NULL:
     * the reference's. */
    void (*geglu)(float *g, const float *u, int64_t n, const uint16_t *tab);
    /* ggml's RMSNorm of nt <= QT_RMS_ROWS rows of n floats (row t at
     * x + t * n), after y's rows are added to x's (y NULL: none, and x is
     * only read; else x gets the sums, each rounded to float): each row's
     * float squares summed in double in element order, scale = 1 /
     * sqrtf((float)(sum / n) + eps), out = x * scale * w.  out may be x
     * or y.  NULL: the reference's. */
    void (*rmsnorm)(int nt, int n, float *x, const float *y, const float *w, float eps, float *out);
    /* RoPE in place of n_head heads of head_dim floats at x: pair i <
     * n_rot / 2 (elements 2i, 2i+1; neox: i, i + n_rot/2) turned by
     * cs[i] = {cos, sin} as llama.cpp's compiled loop rounds it: x0' =
     * fma(x0, cos, -(x1 * sin)), x1' = fma(x0, sin, x1 * cos).  NULL: the
     * reference's. */
    void (*rope)(float *x, int n_head, int head_dim, int n_rot, int neox, const float (*cs)[2]);
} qt_f32_ops;

/* Rows per rmsnorm call: each row's sum is one dependent chain, so the
 * kernels run the rows' chains side by side (a call of this many rows
 * costs about what one row's does). */
#define QT_RMS_ROWS 8

/* The reference (scalar) set and the one chosen for this CPU. */
const qt_f32_ops *qt_f32_ref(void);
const qt_f32_ops *qt_f32(void);

/* _mm512_reduce_add_ps as GCC expands it. */
float qt_reduce16(const float a[16]);

#if defined(__x86_64__)
extern const qt_f32_ops qt_f32_avx512;
extern const qt_f32_ops qt_f32_avx2; /* dot, exp16, softmax, swiglu; pv: the reference's */
/* AVX2's GeGLU (x86_avx2_f32.c), which the AVX-512 set takes too. */
void qt_avx2_geglu(float *g, const float *u, int64_t n, const uint16_t *tab);
#endif
#if defined(__aarch64__)
extern const qt_f32_ops qt_f32_neon; /* quant/arm_neon.c */
#endif

#endif
