/* test_kernels.c - every ISA kernel set against the scalar reference.
 *
 * For each set this CPU can run (others print a SKIP line) and each kernel
 * (x86 sets on x86-64; NEON and NEON-dotprod on aarch64, which CI runs
 * under qemu-aarch64 with and without dotprod: `make test-neon`):
 * - quantized dot products (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 weights): equal to
 *   the reference bit for bit.  The reference does llama.cpp's x86 float
 *   order and the kernels do the same, and the integer block sums are exact
 *   for every byte, so the per-type tolerance is zero.
 * - float dot products (F32, F16, BF16): the reference sums in double, the
 *   kernels in float lanes, so the tolerance is a bound on float summation
 *   error, (n/32 + 16)·FLT_EPSILON·Σ|x_i·y_i| + n·FLT_TRUE_MIN: at most
 *   n/32 + 3 additions per lane, a reduction tree of depth 6, and products
 *   that are exact (halves, bfloat16) or rounded once (f32).
 * - tile dot products (vec_dot_tile: many rows times many columns): each
 *   output equal to the same set's vec_dot bit for bit.
 * - K-quant dot products (Q2_K..Q6_K weights, Q8_K activations): equal to
 *   the reference bit for bit, for the same reason.
 * - Q8_0/Q8_1 quantizers, both roundings (from_float, quantize_act), and
 *   Q8_K's: the reference's bytes exactly, .5 ties included.
 * Inputs: random blocks, adversarial blocks (all zero, max-magnitude and
 * subnormal f16 scales, extreme quants), and many lengths, in buffers that
 * end exactly at the data (so AddressSanitizer sees any over-read) and are
 * only as aligned as their element type requires. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>

#include "quant/blocks.h"
#include "quant/cpu.h"
#include "quant/fp16.h"
#include "quant/types.h"
#include "tests/test.h"
#define TEST_RNG_SEED 0x2545f4914f6cdd1dull
#include "tests/test_rng.h"

/* ---- helpers ----------------------------------------------------------- */

static void fill_random_bytes(uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)rng_next();
}

/* A buffer whose data ends at the end of the allocation and starts `skew`
 * bytes past malloc's 16-byte alignment: as aligned as the element type
 * needs (halves, floats), no more, so the kernels' unaligned loads are
 * exercised.  Keep the base pointer to free it. */
typedef struct buf {
    uint8_t *base, *p;
} buf;

static buf buf_new(size_t n, size_t skew) {
    buf b;
    b.base = malloc(n + skew);
    if (!b.base) {
        printf("FAIL out of memory\n");
        exit(1);
    }
    b.p = b.base + skew;
    return b;
}

static const char *set_names[QT_ISA_COUNT] = {"scalar", "avx2", "avx2-vnni", "avx512", "avx512-vnni",
                                              "neon", "neon-dotprod"};

/* ---- quantized dot products -------------------------------------------- */

typedef struct qtype {
    qt_type w, a; /* weight type and its activation type */
    int has_min;  /* _1 types: m at offset 2; Q8_1: s at offset 2 */
    size_t w_size, a_size;
} qtype;

static const qtype qtypes[] = {
    {QT_Q4_0, QT_Q8_0, 0, sizeof(qt_block_q4_0), sizeof(qt_block_q8_0)},
    {QT_Q4_1, QT_Q8_1, 1, sizeof(qt_block_q4_1), sizeof(qt_block_q8_1)},
    {QT_Q5_0, QT_Q8_0, 0, sizeof(qt_block_q5_0), sizeof(qt_block_q8_0)},
    {QT_Q5_1, QT_Q8_1, 1, sizeof(qt_block_q5_1), sizeof(qt_block_q8_1)},
    {QT_Q8_0, QT_Q8_0, 0, sizeof(qt_block_q8_0), sizeof(qt_block_q8_0)},
};

static void put16(uint8_t *p, uint16_t v) {
    memcpy(p, &v, 2);
}

static uint16_t half_of(double v) {
    return qt_f32_to_f16((float)v);
}

static uint16_t random_subnormal_half(void) {
    return (uint16_t)((1 + rng_below(0x3ff)) | (rng_below(2) ? 0x8000 : 0));
}

enum { ADV_ZERO, ADV_MAX_SCALE, ADV_SUBNORMAL_SCALE, ADV_EXTREMES, ADV_COUNT };

static const char *adv_names[ADV_COUNT] = {"all-zero", "max-scale", "subnormal-scale", "extremes"};

/* Random bytes everywhere, then scales that look like real ones: weights
 * around 0.01, activations around 0.05; or, one block in four, the scales
 * of actually quantized normal data. */
static void fill_random_blocks(const qtype *t, uint8_t *x, uint8_t *y, int nb) {
    fill_random_bytes(x, t->w_size * (size_t)nb);
    fill_random_bytes(y, t->a_size * (size_t)nb);
    const qt_traits *wt = qt_get(t->w), *at = qt_get(t->a);
    for (int i = 0; i < nb; i++) {
        uint8_t *xb = x + t->w_size * (size_t)i, *yb = y + t->a_size * (size_t)i;
        if (rng_below(4) == 0) {
            float v[32];
            for (int j = 0; j < 32; j++)
                v[j] = (float)rng_normal();
            wt->from_float(v, xb, 32);
            for (int j = 0; j < 32; j++)
                v[j] = (float)(rng_normal() * 3.0);
            at->quantize_act(v, yb, 32);
            continue;
        }
        put16(xb, half_of(rng_normal() * 0.01));
        put16(yb, half_of(rng_normal() * 0.05));
        if (t->has_min) {
            put16(xb + 2, half_of(rng_normal() * 0.1));
            put16(yb + 2, half_of(rng_normal() * 2.0));
        }
    }
}

/* nb activation blocks as the activation quantizer writes them, from
 * floats of a random spread per block. */
static void fill_quantized_columns(const qtype *t, uint8_t *y, int nb) {
    const qt_traits *at = qt_get(t->a);
    for (int i = 0; i < nb; i++) {
        float v[32];
        const double spread = 0.01 + 10.0 * rng_below(100) / 100.0;
        for (int j = 0; j < 32; j++)
            v[j] = (float)(rng_normal() * spread);
        at->quantize_act(v, y + t->a_size * (size_t)i, 32);
    }
}

static void fill_adversarial_blocks(const qtype *t, int kind, uint8_t *x, uint8_t *y, int nb) {
    if (kind == ADV_ZERO) {
        memset(x, 0, t->w_size * (size_t)nb);
        memset(y, 0, t->a_size * (size_t)nb);
        return;
    }
    fill_random_bytes(x, t->w_size * (size_t)nb);
    fill_random_bytes(y, t->a_size * (size_t)nb);
    for (int i = 0; i < nb; i++) {
        uint8_t *xb = x + t->w_size * (size_t)i, *yb = y + t->a_size * (size_t)i;
        if (kind == ADV_MAX_SCALE) {
            /* +-65504, the largest half: products stay far from f32 overflow. */
            put16(xb, rng_below(2) ? 0x7bff : 0xfbff);
            put16(yb, rng_below(2) ? 0x7bff : 0xfbff);
            if (t->has_min) {
                put16(xb + 2, rng_below(2) ? 0x7bff : 0xfbff);
                put16(yb + 2, rng_below(2) ? 0x7bff : 0xfbff);
            }
        } else if (kind == ADV_SUBNORMAL_SCALE) {
            put16(xb, random_subnormal_half());
            put16(yb, random_subnormal_half());
            if (t->has_min) {
                put16(xb + 2, random_subnormal_half());
                put16(yb + 2, random_subnormal_half());
            }
        } else {
            /* Quants at the ends of their ranges: nibbles 0 or 15 (-8 or +7
             * for Q4_0), 5th bits all clear or all set, bytes -128 or 127,
             * in every combination, under ordinary scales. */
            const size_t xq = t->w_size - 32 / (t->w == QT_Q8_0 ? 1 : 2);
            const int xpat = rng_below(4), ypat = rng_below(3);
            for (size_t j = xq; j < t->w_size; j++)
                xb[j] = xpat == 0 ? 0x00 : xpat == 1 ? 0xff : xpat == 2 ? 0x80 : (j & 1 ? 0x0f : 0xf0);
            if (t->w == QT_Q5_0 || t->w == QT_Q5_1)
                memset(xb + xq - 4, rng_below(2) ? 0xff : 0x00, 4);
            for (size_t j = t->a_size - 32; j < t->a_size; j++)
                yb[j] = ypat == 0 ? 0x80 : ypat == 1 ? 0x7f : (j & 1 ? 0x80 : 0x7f);
            put16(xb, half_of(rng_normal() * 0.01));
            put16(yb, half_of(rng_normal() * 0.05));
        }
    }
}

static const int dot_lengths[] = {32, 64, 96, 256, 4096, 4128};
#define N_DOT_LENGTHS (sizeof dot_lengths / sizeof dot_lengths[0])

static void test_quant_dot(qt_isa isa, const qtype *t) {
    const qt_kernels *ref = qt_isa_kernels(QT_ISA_SCALAR), *k = qt_isa_kernels(isa);
    char name[128];
    const int max_nb = dot_lengths[N_DOT_LENGTHS - 1] / 32;
    buf bx = buf_new(t->w_size * (size_t)max_nb, 2), by = buf_new(t->a_size * (size_t)max_nb, 2);
    for (int scenario = -1; scenario < ADV_COUNT; scenario++) {
        snprintf(name, sizeof name, "%s/vec_dot_%s_%s/%s", set_names[isa], qt_get(t->w)->name,
                 qt_get(t->a)->name, scenario < 0 ? "random" : adv_names[scenario]);
        TEST_BEGIN(name);
        CHECK(k->vec_dot[t->w] != NULL, "no kernel");
        for (size_t li = 0; li < N_DOT_LENGTHS && k->vec_dot[t->w]; li++) {
            const int n = dot_lengths[li], nb = n / 32;
            /* Data at the end of the buffers, so the last block ends at the
             * end of the allocation. */
            uint8_t *x = bx.p + t->w_size * (size_t)(max_nb - nb);
            uint8_t *y = by.p + t->a_size * (size_t)(max_nb - nb);
            for (int rep = 0; rep < 8; rep++) {
                if (scenario < 0)
                    fill_random_blocks(t, x, y, nb);
                else
                    fill_adversarial_blocks(t, scenario, x, y, nb);
                float want = 0.0f, got = 0.0f;
                ref->vec_dot[t->w](n, &want, x, y);
                k->vec_dot[t->w](n, &got, x, y);
                CHECK(same_float(got, want), "n=%d: got %.9g (0x%08x), reference %.9g (0x%08x)", n, got,
                      qt_f32_bits(got), want, qt_f32_bits(want));
            }
        }
        TEST_END();
    }
    free(bx.base);
    free(by.base);
}

/* ---- tiles of rows x columns ------------------------------------------- *
 * Every output of a tile kernel (vec_dot_tile) equals the same set's
 * vec_dot of that row and column, bit for bit, for every tile shape up to
 * 9 rows by 9 columns (each micro-tile shape, and each with padding rows or
 * columns), with rows and columns at uneven strides and an output stride
 * larger than the tile, whose other elements must stay untouched. */

/* 4160: past the 128 blocks whose column scales x86_tile.inc precomputes */
static const int tile_lengths[] = {32, 96, 576, 4160};
#define N_TILE_LENGTHS (sizeof tile_lengths / sizeof tile_lengths[0])
enum { TILE_MAX_R = 9, TILE_MAX_C = 9 };

/* Every tile of up to TILE_MAX_R rows (in steps of r_step) by TILE_MAX_C
 * columns of x and y, each output against vec_dot; the output stride is
 * larger than the tile, and what lies outside it must stay untouched. */
static void check_tiles(const qt_kernels *k, qt_type t, int n, const uint8_t *x, size_t xs, const uint8_t *y,
                        size_t ys, int r_step) {
    const size_t ldo = TILE_MAX_R + 2;
    float out[TILE_MAX_C * (TILE_MAX_R + 2)];
    for (int nr = 1; nr <= TILE_MAX_R; nr += r_step)
        for (int nc = 1; nc <= TILE_MAX_C; nc++) {
            for (size_t i = 0; i < sizeof out / sizeof out[0]; i++)
                out[i] = -1234.5f;
            k->vec_dot_tile[t](n, out, ldo, x, xs, nr, y, ys, nc);
            for (int c = 0; c < TILE_MAX_C; c++)
                for (int r = 0; r < (int)ldo; r++) {
                    const float got = out[(size_t)c * ldo + (size_t)r];
                    float want = -1234.5f;
                    if (r < nr && c < nc)
                        k->vec_dot[t](n, &want, x + xs * (size_t)r, y + ys * (size_t)c);
                    CHECK(same_float(got, want),
                          "n=%d tile %dx%d, row %d column %d: got %.9g (0x%08x), vec_dot %.9g (0x%08x)", n, nr, nc,
                          r, c, got, qt_f32_bits(got), want, qt_f32_bits(want));
                }
        }
}

static void test_quant_tile(qt_isa isa, const qtype *t) {
    const qt_kernels *k = qt_isa_kernels(isa);
    /* The NEON sets have none yet: matmul loops over their vec_dot. */
    if (!k->vec_dot_tile[t->w] && (isa == QT_ISA_NEON || isa == QT_ISA_NEON_DOTPROD)) {
        printf("SKIP %s/vec_dot_tile_%s: no tile kernel in this set\n", set_names[isa], qt_get(t->w)->name);
        return;
    }
    char name[128];
    const int max_nb = tile_lengths[N_TILE_LENGTHS - 1] / 32;
    /* One spare block between rows and between columns: strides are not
     * the row length. */
    const size_t xs = t->w_size * (size_t)(max_nb + 1), ys = t->a_size * (size_t)(max_nb + 1);
    buf bx = buf_new(xs * TILE_MAX_R, 2), by = buf_new(ys * TILE_MAX_C, 2);
    buf sx = buf_new(t->w_size * (size_t)max_nb, 2), sy = buf_new(t->a_size * (size_t)max_nb, 2);
    /* -2: every column as the activation quantizer writes it (Q8_0 never
     * -128, which kernels may rely on), rows of random bytes */
    for (int scenario = -2; scenario < ADV_COUNT; scenario++) {
        snprintf(name, sizeof name, "%s/vec_dot_tile_%s_%s/%s", set_names[isa], qt_get(t->w)->name,
                 qt_get(t->a)->name,
                 scenario == -2 ? "quantized-columns" : scenario < 0 ? "random" : adv_names[scenario]);
        TEST_BEGIN(name);
        CHECK(k->vec_dot_tile[t->w] != NULL, "no kernel");
        for (size_t li = 0; li < N_TILE_LENGTHS && k->vec_dot_tile[t->w]; li++) {
            const int n = tile_lengths[li], nb = n / 32;
            /* The last row and column end at the end of their buffers. */
            uint8_t *x = bx.p + xs * TILE_MAX_R - t->w_size * (size_t)nb - xs * (TILE_MAX_R - 1);
            uint8_t *y = by.p + ys * TILE_MAX_C - t->a_size * (size_t)nb - ys * (TILE_MAX_C - 1);
            for (int r = 0; r < TILE_MAX_R; r++) {
                if (scenario < 0)
                    fill_random_blocks(t, x + xs * (size_t)r, sy.p, nb);
                else
                    fill_adversarial_blocks(t, scenario, x + xs * (size_t)r, sy.p, nb);
            }
            for (int c = 0; c < TILE_MAX_C; c++) {
                if (scenario == -2)
                    fill_quantized_columns(t, y + ys * (size_t)c, nb);
                else if (scenario < 0)
                    fill_random_blocks(t, sx.p, y + ys * (size_t)c, nb);
                else
                    fill_adversarial_blocks(t, scenario, sx.p, y + ys * (size_t)c, nb);
            }
            check_tiles(k, t->w, n, x, xs, y, ys, 1);
        }
        TEST_END();
    }
    free(bx.base);
    free(by.base);
    free(sx.base);
    free(sy.base);
}

/* Many rows by a few columns at lengths that change how the AVX2 Q8_0
 * and Q5_0 tiles chunk their rows (short rows take taller chunks: 128
 * rows below 32 blocks, 64 below 64, Q5_0's no more than its unpacked
 * chunk holds: 100 rows at 20 blocks, 48 at 40, 12 at 130, 4 at 512;
 * past 512 blocks they hand the work to the generic tile): every output
 * against vec_dot, nothing written past the tile. */
static void test_quant_tile_tall(qt_isa isa, const qtype *t) {
    const qt_kernels *k = qt_isa_kernels(isa);
    if (!k->vec_dot_tile[t->w])
        return;
    enum { ROWS = 150, COLS = 7 };
    static const int nbs[] = {20, 40, 130, 512, 513};
    char name[128];
    snprintf(name, sizeof name, "%s/vec_dot_tile_%s_%s/tall", set_names[isa], qt_get(t->w)->name,
             qt_get(t->a)->name);
    TEST_BEGIN(name);
    for (size_t li = 0; li < sizeof nbs / sizeof nbs[0]; li++) {
        const int nb = nbs[li], n = 32 * nb;
        const size_t xs = t->w_size * (size_t)nb, ys = t->a_size * (size_t)nb, ldo = ROWS + 3;
        buf bx = buf_new(xs * ROWS, 2), by = buf_new(ys * COLS, 2);
        for (int r = 0; r < ROWS; r++) fill_random_blocks(t, bx.p + xs * (size_t)r, by.p, nb);
        for (int c = 0; c < COLS; c++) fill_quantized_columns(t, by.p + ys * (size_t)c, nb);
        float *out = malloc(sizeof *out * ldo * COLS);
        for (size_t i = 0; i < ldo * COLS; i++) out[i] = -1234.5f;
        k->vec_dot_tile[t->w](n, out, ldo, bx.p, xs, ROWS, by.p, ys, COLS);
        for (int c = 0; c < COLS; c++)
            for (int r = 0; r < (int)ldo; r++) {
                float want = -1234.5f;
                if (r < ROWS) k->vec_dot[t->w](n, &want, bx.p + xs * (size_t)r, by.p + ys * (size_t)c);
                const float got = out[(size_t)c * ldo + (size_t)r];
                CHECK(same_float(got, want), "nb %d row %d column %d: got %.9g (0x%08x), vec_dot %.9g (0x%08x)", nb,
                      r, c, got, qt_f32_bits(got), want, qt_f32_bits(want));
            }
        free(out);
        free(bx.base), free(by.base);
    }
    TEST_END();
}

/* ---- K-quant dot products ---------------------------------------------- */

/* Where each K block keeps its f16 d and dmin (-1: none) and its packed
 * sub-block scales. */
typedef struct ktype {
    qt_type t;
    int d_off, dmin_off, sc_off, sc_len;
} ktype;

static const ktype ktypes[] = {
    {QT_Q2_K, 80, 82, 0, 16}, {QT_Q3_K, 108, -1, 96, 12}, {QT_Q4_K, 0, 2, 4, 12},
    {QT_Q5_K, 0, 2, 4, 12},   {QT_Q6_K, 208, -1, 192, 16},
};

static void put_halves(const ktype *t, uint8_t *xb, uint16_t d, uint16_t dmin) {
    put16(xb + t->d_off, d);
    if (t->dmin_off >= 0)
        put16(xb + t->dmin_off, dmin);
}

static void q8k_bsums(qt_block_q8_K *y) {
    for (int g = 0; g < 16; g++) {
        int s = 0;
        for (int j = 0; j < 16; j++)
            s += y->qs[16 * g + j];
        y->bsums[g] = (int16_t)s;
    }
}

/* Activations: quantized normal data, or any bytes (-128 included) with
 * their sums, under a float scale of the scenario's kind. */
static void fill_q8k(qt_block_q8_K *y, int nb, int kind) {
    for (int i = 0; i < nb; i++) {
        if (kind == ADV_ZERO) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        if (kind < 0 && rng_below(2)) {
            float v[256];
            for (int j = 0; j < 256; j++)
                v[j] = (float)(rng_normal() * 3.0);
            qt_get(QT_Q8_K)->quantize_act(v, &y[i], 256);
            continue;
        }
        if (kind == ADV_EXTREMES) {
            const int pat = rng_below(3);
            for (int j = 0; j < 256; j++)
                y[i].qs[j] = (int8_t)(pat == 0 ? -128 : pat == 1 ? 127 : (j & 1 ? -128 : 127));
        } else {
            fill_random_bytes((uint8_t *)y[i].qs, 256);
        }
        q8k_bsums(&y[i]);
        if (kind == ADV_MAX_SCALE)
            y[i].d = rng_below(2) ? 1e20f : -1e20f;
        else if (kind == ADV_SUBNORMAL_SCALE) /* d·dx is a float subnormal or underflows */
            y[i].d = (float)ldexp(rng_normal(), -100 - rng_below(40));
        else
            y[i].d = (float)(rng_normal() * 0.05);
    }
}

/* Weights: any bytes under real-looking scales, or the scenario's scales;
 * extremes: all quants at one end, every 6-bit (4-bit) scale at 0, its
 * maximum or (Q6_K) -128. */
static void fill_kblocks(const ktype *t, uint8_t *x, int nb, int kind) {
    const size_t size = qt_get(t->t)->type_size;
    if (kind == ADV_ZERO) {
        memset(x, 0, size * (size_t)nb);
        return;
    }
    fill_random_bytes(x, size * (size_t)nb);
    for (int i = 0; i < nb; i++) {
        uint8_t *xb = x + size * (size_t)i;
        if (kind == ADV_MAX_SCALE) {
            put_halves(t, xb, rng_below(2) ? 0x7bff : 0xfbff, rng_below(2) ? 0x7bff : 0xfbff);
        } else if (kind == ADV_SUBNORMAL_SCALE) {
            put_halves(t, xb, random_subnormal_half(), random_subnormal_half());
        } else {
            put_halves(t, xb, half_of(rng_normal() * 0.01), half_of(rng_normal() * 0.01));
            if (kind == ADV_EXTREMES) {
                const int qpat = rng_below(3), spat = rng_below(3);
                for (size_t j = 0; j < size; j++) {
                    const int in_scales = (int)j >= t->sc_off && (int)j < t->sc_off + t->sc_len;
                    const int is_half = (int)j == t->d_off || (int)j == t->d_off + 1 ||
                                        (t->dmin_off >= 0 && ((int)j == t->dmin_off || (int)j == t->dmin_off + 1));
                    if (is_half)
                        continue;
                    if (in_scales)
                        xb[j] = spat == 0 ? 0x00 : spat == 1 ? 0xff : (t->t == QT_Q6_K ? 0x80 : 0x3f);
                    else
                        xb[j] = qpat == 0 ? 0x00 : qpat == 1 ? 0xff : 0xaa;
                }
            }
        }
    }
}

static const int kdot_lengths[] = {256, 512, 768, 4096, 4352};
#define N_KDOT_LENGTHS (sizeof kdot_lengths / sizeof kdot_lengths[0])

static void test_kquant_dot(qt_isa isa, const ktype *t) {
    const qt_kernels *ref = qt_isa_kernels(QT_ISA_SCALAR), *k = qt_isa_kernels(isa);
    const size_t size = qt_get(t->t)->type_size;
    const int max_nb = kdot_lengths[N_KDOT_LENGTHS - 1] / 256;
    buf bx = buf_new(size * (size_t)max_nb, 2), by = buf_new(sizeof(qt_block_q8_K) * (size_t)max_nb, 4);
    char name[128];
    for (int scenario = -1; scenario < ADV_COUNT; scenario++) {
        snprintf(name, sizeof name, "%s/vec_dot_%s_q8_k/%s", set_names[isa], qt_get(t->t)->name,
                 scenario < 0 ? "random" : adv_names[scenario]);
        TEST_BEGIN(name);
        CHECK(k->vec_dot[t->t] != NULL, "no kernel");
        for (size_t li = 0; li < N_KDOT_LENGTHS && k->vec_dot[t->t]; li++) {
            const int n = kdot_lengths[li], nb = n / 256;
            uint8_t *x = bx.p + size * (size_t)(max_nb - nb);
            qt_block_q8_K *y = (qt_block_q8_K *)(by.p + sizeof(qt_block_q8_K) * (size_t)(max_nb - nb));
            for (int rep = 0; rep < 8; rep++) {
                fill_kblocks(t, x, nb, scenario);
                fill_q8k(y, nb, scenario);
                float want = 0.0f, got = 0.0f;
                ref->vec_dot[t->t](n, &want, x, y);
                k->vec_dot[t->t](n, &got, x, y);
                CHECK(same_float(got, want), "n=%d: got %.9g (0x%08x), reference %.9g (0x%08x)", n, got,
                      qt_f32_bits(got), want, qt_f32_bits(want));
            }
        }
        TEST_END();
    }
    free(bx.base);
    free(by.base);
}

/* K-quant tiles, where a set has one (else matmul loops over vec_dot):
 * the same check as test_quant_tile. */
static void test_kquant_tile(qt_isa isa, const ktype *t) {
    const qt_kernels *k = qt_isa_kernels(isa);
    if (!k->vec_dot_tile[t->t])
        return;
    const size_t size = qt_get(t->t)->type_size, ysize = sizeof(qt_block_q8_K);
    const int max_nb = 3;
    const size_t xs = size * (size_t)(max_nb + 1), ys = ysize * (size_t)(max_nb + 1);
    buf bx = buf_new(xs * TILE_MAX_R, 2), by = buf_new(ys * TILE_MAX_C, 4);
    char name[128];
    for (int scenario = -1; scenario < ADV_COUNT; scenario++) {
        snprintf(name, sizeof name, "%s/vec_dot_tile_%s_q8_k/%s", set_names[isa], qt_get(t->t)->name,
                 scenario < 0 ? "random" : adv_names[scenario]);
        TEST_BEGIN(name);
        for (int nb = 1; nb <= max_nb; nb += 2) {
            const int n = 256 * nb;
            uint8_t *x = bx.p + xs * TILE_MAX_R - size * (size_t)nb - xs * (TILE_MAX_R - 1);
            uint8_t *y = by.p + ys * TILE_MAX_C - ysize * (size_t)nb - ys * (TILE_MAX_C - 1);
            for (int r = 0; r < TILE_MAX_R; r++)
                fill_kblocks(t, x + xs * (size_t)r, nb, scenario);
            for (int c = 0; c < TILE_MAX_C; c++)
                fill_q8k((qt_block_q8_K *)(y + ys * (size_t)c), nb, scenario);
            check_tiles(k, t->t, n, x, xs, y, ys, 2);
        }
        TEST_END();
    }
    free(bx.base);
    free(by.base);
}

/* The call a one-token decode makes: a tall run of rows (here 37: groups
 * of four and a rest) of a 2048-wide weight, one column, rows a block
 * apart more than their length; each output against the set's vec_dot. */
static void test_kquant_tile_tall(qt_isa isa, const ktype *t) {
    const qt_kernels *k = qt_isa_kernels(isa);
    if (!k->vec_dot_tile[t->t])
        return;
    enum { ROWS = 37, NB = 8 };
    const size_t size = qt_get(t->t)->type_size, xs = size * (NB + 1);
    buf bx = buf_new(xs * ROWS, 2), by = buf_new(sizeof(qt_block_q8_K) * NB, 4);
    char name[128];
    for (int scenario = -1; scenario < ADV_COUNT; scenario++) {
        snprintf(name, sizeof name, "%s/vec_dot_tile_%s_q8_k/tall/%s", set_names[isa], qt_get(t->t)->name,
                 scenario < 0 ? "random" : adv_names[scenario]);
        TEST_BEGIN(name);
        for (int r = 0; r < ROWS; r++)
            fill_kblocks(t, bx.p + xs * (size_t)r, NB, scenario);
        fill_q8k((qt_block_q8_K *)by.p, NB, scenario);
        float out[ROWS + 1];
        out[ROWS] = -1234.5f;
        k->vec_dot_tile[t->t](256 * NB, out, ROWS, bx.p, xs, ROWS, by.p, 0, 1);
        for (int r = 0; r < ROWS; r++) {
            float want = 0.0f;
            k->vec_dot[t->t](256 * NB, &want, bx.p + xs * (size_t)r, by.p);
            CHECK(same_float(out[r], want), "row %d: got %.9g (0x%08x), vec_dot %.9g (0x%08x)", r, out[r],
                  qt_f32_bits(out[r]), want, qt_f32_bits(want));
        }
        CHECK(out[ROWS] == -1234.5f, "wrote past the last row");
        TEST_END();
    }
    free(bx.base);
    free(by.base);
}

/* ---- float dot products ------------------------------------------------ */

typedef struct ftype {
    qt_type t;
    size_t size;
} ftype;

static const ftype ftypes[] = {{QT_F32, 4}, {QT_F16, 2}, {QT_BF16, 2}};

static const int float_lengths[] = {1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 4096, 4099};
#define N_FLOAT_LENGTHS (sizeof float_lengths / sizeof float_lengths[0])

static void store_float(qt_type t, uint8_t *p, int i, double v) {
    if (t == QT_F32) {
        const float f = (float)v;
        memcpy(p + 4 * (size_t)i, &f, 4);
    } else {
        put16(p + 2 * (size_t)i, t == QT_F16 ? qt_f32_to_f16((float)v) : qt_f32_to_bf16((float)v));
    }
}

static double load_float(qt_type t, const uint8_t *p, int i) {
    if (t == QT_F32) {
        float f;
        memcpy(&f, p + 4 * (size_t)i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, p + 2 * (size_t)i, 2);
    return t == QT_F16 ? qt_f16_to_f32(h) : qt_bf16_to_f32(h);
}

/* Values for one element: kind -1 is normal data; the rest are the
 * adversarial kinds, kept where n·max|x·y| stays below FLT_MAX. */
static double float_value(qt_type t, int kind) {
    switch (kind) {
    case ADV_ZERO:
        return rng_below(2) ? 0.0 : -0.0;
    case ADV_MAX_SCALE: {
        const double big = t == QT_F16 ? 65504.0 : 1e16;
        return rng_below(2) ? big : -big;
    }
    case ADV_SUBNORMAL_SCALE:
        if (t == QT_F16)
            return qt_f16_to_f32(random_subnormal_half());
        /* f32 and bf16 share the exponent range: subnormal or tiny normal. */
        return ldexp(rng_normal(), -120 - rng_below(30));
    case ADV_EXTREMES:
        return (rng_below(2) ? 1.0 : -1.0) * (rng_below(2) ? 1e-3 : 1e3);
    default:
        return rng_normal();
    }
}

static void test_float_dot(qt_isa isa, const ftype *t) {
    const qt_kernels *ref = qt_isa_kernels(QT_ISA_SCALAR), *k = qt_isa_kernels(isa);
    char name[128];
    const int max_n = float_lengths[N_FLOAT_LENGTHS - 1];
    buf bx = buf_new(t->size * (size_t)max_n, t->size), by = buf_new(t->size * (size_t)max_n, t->size);
    for (int scenario = -1; scenario < ADV_COUNT; scenario++) {
        snprintf(name, sizeof name, "%s/vec_dot_%s_%s/%s", set_names[isa], qt_get(t->t)->name,
                 qt_get(t->t)->name, scenario < 0 ? "random" : adv_names[scenario]);
        TEST_BEGIN(name);
        CHECK(k->vec_dot[t->t] != NULL, "no kernel");
        for (size_t li = 0; li < N_FLOAT_LENGTHS && k->vec_dot[t->t]; li++) {
            const int n = float_lengths[li];
            uint8_t *x = bx.p + t->size * (size_t)(max_n - n);
            uint8_t *y = by.p + t->size * (size_t)(max_n - n);
            for (int rep = 0; rep < 8; rep++) {
                double bound = 0.0;
                for (int i = 0; i < n; i++) {
                    store_float(t->t, x, i, float_value(t->t, scenario));
                    store_float(t->t, y, i, float_value(t->t, scenario));
                    bound += fabs(load_float(t->t, x, i) * load_float(t->t, y, i));
                }
                const double tol = (n / 32 + 16) * (double)FLT_EPSILON * bound + n * (double)FLT_TRUE_MIN;
                float want = 0.0f, got = 0.0f;
                ref->vec_dot[t->t](n, &want, x, y);
                k->vec_dot[t->t](n, &got, x, y);
                CHECK(fabs((double)got - (double)want) <= tol, "n=%d: got %.9g, reference %.9g, tolerance %.3g", n,
                      got, want, tol);
            }
        }
        TEST_END();
    }
    free(bx.base);
    free(by.base);
}

/* ---- quantizers -------------------------------------------------------- */

enum { Q_RANDOM, Q_TIES, Q_EDGES, Q_COUNT };

static const char *q_names[Q_COUNT] = {"random", "ties", "edges"};

/* One block of 32 floats of the given flavour.  Ties: amax is 127 or 63.5,
 * so id is exactly 1 or 2 under both roundings and k + 0.5 (or its half)
 * lands exactly on .5 after scaling; neighbours one ulp either side too.
 * Edges: zeros of both signs, lone values, subnormals, FLT_MAX; with
 * non-finite values only for from_float, whose reference defines bytes for
 * them (quantize_act's casts a NaN to int8). */
static void fill_quant_block(float *v, int kind, int act) {
    if (kind == Q_RANDOM) {
        const double scale = ldexp(1.0, rng_below(40) - 20);
        for (int j = 0; j < 32; j++)
            v[j] = (float)(rng_normal() * scale);
        return;
    }
    if (kind == Q_TIES) {
        const float div = rng_below(2) ? 1.0f : 2.0f;
        for (int j = 0; j < 32; j++) {
            float t = ((float)rng_below(127) + 0.5f) * (rng_below(2) ? 1.0f : -1.0f);
            const int nudge = rng_below(4);
            if (nudge == 1)
                t = nextafterf(t, 0.0f);
            else if (nudge == 2)
                t = nextafterf(t, t > 0 ? INFINITY : -INFINITY);
            v[j] = t / div;
        }
        v[rng_below(32)] = (rng_below(2) ? 127.0f : -127.0f) / div;
        return;
    }
    const int e = rng_below(act ? 7 : 10);
    for (int j = 0; j < 32; j++)
        v[j] = 0.0f;
    switch (e) {
    case 0: /* all +0 */
        break;
    case 1: /* zeros of both signs */
        for (int j = 0; j < 32; j++)
            v[j] = rng_below(2) ? 0.0f : -0.0f;
        break;
    case 2: /* one value, the rest zero */
        v[rng_below(32)] = (float)rng_normal();
        break;
    case 3: /* subnormals only, no zeros: d underflows or 1/d overflows */
        for (int j = 0; j < 32; j++)
            v[j] = ldexpf((float)(1 + rng_below(1000)), -149) * (rng_below(2) ? 1.0f : -1.0f);
        break;
    case 4: /* tiny normals: 1/d is huge but finite */
        for (int j = 0; j < 32; j++)
            v[j] = ldexpf((float)rng_normal(), -120);
        break;
    case 5: /* FLT_MAX magnitudes */
        for (int j = 0; j < 32; j++)
            v[j] = rng_below(2) ? FLT_MAX : (float)rng_normal() * 1e37f;
        break;
    case 6: /* equal magnitudes of both signs */
        for (int j = 0; j < 32; j++)
            v[j] = rng_below(2) ? 3.0f : -3.0f;
        break;
    case 7: /* an inf */
        for (int j = 0; j < 32; j++)
            v[j] = (float)rng_normal();
        v[rng_below(32)] = rng_below(2) ? INFINITY : -INFINITY;
        break;
    case 8: /* a NaN, anywhere: the reference's max depends on where */
        for (int j = 0; j < 32; j++)
            v[j] = (float)rng_normal();
        v[rng_below(32)] = NAN;
        break;
    default: /* subnormals with zeros: 0·inf in the reference */
        for (int j = 0; j < 32; j++)
            v[j] = rng_below(2) ? 0.0f : ldexpf(1.0f, -140);
        break;
    }
}

/* In blocks of the type: one, two, and a row of 4096 elements. */
static const int quant_lengths[] = {1, 2, 0};

/* Q8_K's quantize_act is the reference quantizer itself, whose bytes are
 * defined for NaN and inf too, so it gets the non-finite edges as well. */
static void test_quantizer(qt_isa isa, qt_type t, int act) {
    const qt_kernels *ref = qt_isa_kernels(QT_ISA_SCALAR), *k = qt_isa_kernels(isa);
    const qt_from_float_fn want_fn = act ? ref->quantize_act[t] : ref->from_float[t];
    const qt_from_float_fn got_fn = act ? k->quantize_act[t] : k->from_float[t];
    const size_t bs = qt_get(t)->type_size;
    const int qk = (int)qt_get(t)->block_size;
    const int finite_only = act && t != QT_Q8_K;
    const int max_n = 4096;
    float *src = malloc(sizeof(float) * (size_t)max_n);
    /* Q8_K's float d wants 4-byte alignment, the others' halves 2. */
    const size_t skew = t == QT_Q8_K ? 4 : 2;
    buf want = buf_new(bs * (size_t)max_n / qk, skew), got = buf_new(bs * (size_t)max_n / qk, skew);
    char name[128];
    for (int kind = 0; kind < Q_COUNT; kind++) {
        snprintf(name, sizeof name, "%s/%s_%s/%s", set_names[isa], act ? "quantize_act" : "from_float",
                 qt_get(t)->name, q_names[kind]);
        TEST_BEGIN(name);
        CHECK(got_fn != NULL && want_fn != NULL, "no kernel");
        for (size_t li = 0; li < sizeof quant_lengths / sizeof quant_lengths[0] && got_fn && want_fn; li++) {
            const int n = quant_lengths[li] ? quant_lengths[li] * qk : max_n;
            for (int rep = 0; rep < 16; rep++) {
                for (int b = 0; b < n / 32; b++)
                    fill_quant_block(src + 32 * b, kind, finite_only);
                const size_t nbytes = bs * (size_t)(n / qk);
                uint8_t *w = want.p + bs * (size_t)((max_n - n) / qk), *g = got.p + bs * (size_t)((max_n - n) / qk);
                memset(w, 0xa5, nbytes);
                memset(g, 0x5a, nbytes);
                want_fn(src, w, n);
                got_fn(src, g, n);
                size_t at = 0;
                while (at < nbytes && w[at] == g[at])
                    at++;
                CHECK(at == nbytes, "n=%d: first difference in block %zu, byte %zu: got 0x%02x, reference 0x%02x",
                      n, at / bs, at % bs, at < nbytes ? g[at] : 0, at < nbytes ? w[at] : 0);
            }
        }
        TEST_END();
    }
    free(src);
    free(want.base);
    free(got.base);
}

/* ---- dispatch ---------------------------------------------------------- */

enum { N_FEATURE_BITS = 12 };

static void features_from_bits(qt_cpu_features *f, unsigned bits) {
    bool *flags[N_FEATURE_BITS] = {&f->avx2,     &f->fma,         &f->f16c,    &f->avx512f,
                                   &f->avx512bw, &f->avx512vl,    &f->avx512dq, &f->avx512vnni,
                                   &f->avxvnni,  &f->avx512bf16,  &f->neon,    &f->dotprod};
    for (unsigned i = 0; i < sizeof flags / sizeof flags[0]; i++)
        *flags[i] = (bits >> i) & 1u;
}

/* The sets QLM_ISA=request allows, as a bit mask: a level caps its own
 * architecture's sets only; an unknown name (case matters) caps nothing. */
static unsigned allowed_sets(const char *req) {
    const unsigned all = (1u << QT_ISA_COUNT) - 1;
    const unsigned neon = 1u << QT_ISA_NEON | 1u << QT_ISA_NEON_DOTPROD;
    if (strcmp(req, "scalar") == 0)
        return 1u << QT_ISA_SCALAR;
    if (strcmp(req, "avx2") == 0)
        return 1u << QT_ISA_SCALAR | 1u << QT_ISA_AVX2 | 1u << QT_ISA_AVX2_VNNI | neon;
    if (strcmp(req, "neon") == 0)
        return all & ~(1u << QT_ISA_NEON_DOTPROD);
    return all;
}

static void test_dispatch(const char *self) {
    TEST_BEGIN("dispatch/choose_never_exceeds_cpu");
    static const char *requests[] = {NULL, "scalar", "avx2", "avx512", "", "AVX2", "neon", "neon-dotprod", "NEON"};
    for (unsigned bits = 0; bits < 1u << N_FEATURE_BITS; bits++) {
        qt_cpu_features f;
        features_from_bits(&f, bits);
        for (size_t r = 0; r < sizeof requests / sizeof requests[0]; r++) {
            const qt_isa got = qt_isa_choose(&f, requests[r]);
            const char *req = requests[r] ? requests[r] : "(none)";
            CHECK(qt_isa_supported(&f, got), "features 0x%x, request %s: chose unsupported %s", bits, req,
                  set_names[got]);
            /* The spec: the fastest supported set the request allows,
             * where a level includes its VNNI set. */
            const unsigned allowed = allowed_sets(req);
            qt_isa want = QT_ISA_SCALAR;
            for (int isa = 0; isa < QT_ISA_COUNT; isa++)
                if ((allowed >> isa & 1u) && qt_isa_supported(&f, (qt_isa)isa))
                    want = (qt_isa)isa;
            CHECK(got == want, "features 0x%x, request %s: chose %s, want %s", bits, req, set_names[got],
                  set_names[want]);
        }
    }
    qt_cpu_features none;
    features_from_bits(&none, 0);
    CHECK(qt_isa_choose(&none, "avx512") == QT_ISA_SCALAR, "a featureless CPU gets scalar");
    qt_cpu_features avx512_no_os;
    features_from_bits(&avx512_no_os, 0x7); /* AVX2 only, as when the OS lacks ZMM state */
    CHECK(qt_isa_choose(&avx512_no_os, "avx512") <= QT_ISA_AVX2_VNNI, "no AVX-512 state, no AVX-512");
    qt_cpu_features a53, a76;
    features_from_bits(&a53, 1u << 10);           /* NEON, no dotprod */
    features_from_bits(&a76, 1u << 10 | 1u << 11); /* NEON and dotprod */
#if defined(__aarch64__)
    CHECK(qt_isa_choose(&a53, NULL) == QT_ISA_NEON, "Cortex-A53 features: %s", set_names[qt_isa_choose(&a53, NULL)]);
    CHECK(qt_isa_choose(&a76, NULL) == QT_ISA_NEON_DOTPROD, "Cortex-A76 features: %s",
          set_names[qt_isa_choose(&a76, NULL)]);
    CHECK(qt_isa_choose(&a76, "neon") == QT_ISA_NEON, "QLM_ISA=neon on a dotprod CPU");
    CHECK(qt_isa_choose(&a76, "avx512") == QT_ISA_NEON_DOTPROD, "an x86 level caps nothing on Arm");
#else
    CHECK(qt_isa_choose(&a76, NULL) == QT_ISA_SCALAR, "NEON sets offered by a build without them");
    (void)a53;
#endif
    TEST_END();

    TEST_BEGIN("dispatch/active_set");
    const qt_isa active = qt_isa_active();
    CHECK(qt_isa_supported(qt_cpu(), active), "active set %s is not supported here", set_names[active]);
    const char *env = getenv("QLM_ISA");
    CHECK(active == qt_isa_choose(qt_cpu(), env), "active set differs from the choice for QLM_ISA=%s",
          env ? env : "(unset)");
    CHECK(qt_isa_name() && strcmp(qt_isa_name(), set_names[active]) == 0, "qt_isa_name %s, active %s",
          qt_isa_name() ? qt_isa_name() : "(null)", set_names[active]);
    /* The traits table carries the active set's kernels, and the reference
     * where the set has none. */
    const qt_kernels *k = qt_isa_kernels(active), *ref = qt_isa_kernels(QT_ISA_SCALAR);
    for (int t = 0; t < QT_COUNT; t++) {
        const qt_traits *tr = qt_get((uint32_t)t);
        if (!tr)
            continue;
        if (ref->vec_dot[t])
            CHECK(tr->vec_dot == (k->vec_dot[t] ? k->vec_dot[t] : ref->vec_dot[t]), "%s: vec_dot not patched",
                  tr->name);
        if (ref->quantize_act[t])
            CHECK(tr->quantize_act == (k->quantize_act[t] ? k->quantize_act[t] : ref->quantize_act[t]),
                  "%s: quantize_act not patched", tr->name);
        if (ref->from_float[t])
            CHECK(tr->from_float == (k->from_float[t] ? k->from_float[t] : ref->from_float[t]),
                  "%s: from_float not patched", tr->name);
    }
    TEST_END();

    /* QLM_ISA is read once per process, so ask fresh processes. */
    static const char *levels[] = {"scalar", "avx2", "avx512", "neon", "neon-dotprod", "bogus"};
    enum { N_LEVELS = sizeof levels / sizeof levels[0] };
    char got[N_LEVELS][64];
    for (size_t i = 0; i < N_LEVELS; i++) {
        char cmd[4200];
        got[i][0] = 0;
        if (strchr(self, '\'') != NULL) {
            printf("SKIP dispatch/qlm_isa_env: cannot quote the test's path\n");
            return;
        }
        /* QLM_TEST_WRAPPER: an emulator to start the child with
         * (tests/run_qemu.sh sets it to qemu-aarch64). */
        const char *wrapper = getenv("QLM_TEST_WRAPPER");
        snprintf(cmd, sizeof cmd, "QLM_ISA=%s %s '%s' --isa-name 2>/dev/null", levels[i], wrapper ? wrapper : "",
                 self);
        FILE *p = popen(cmd, "r");
        if (p && !fgets(got[i], sizeof got[i], p))
            got[i][0] = 0;
        const int status = p ? pclose(p) : -1;
        /* 126/127: the shell could not run us at all (qemu-user without
         * binfmt, for one); that says nothing about dispatch. */
        if (!p || (WIFEXITED(status) && (WEXITSTATUS(status) == 126 || WEXITSTATUS(status) == 127))) {
            printf("SKIP dispatch/qlm_isa_env: cannot run the test binary as a child here\n");
            return;
        }
        got[i][strcspn(got[i], "\n")] = 0;
    }
    TEST_BEGIN("dispatch/qlm_isa_env");
    for (size_t i = 0; i < N_LEVELS; i++) {
        const char *want = set_names[qt_isa_choose(qt_cpu(), levels[i])];
        CHECK(strcmp(got[i], want) == 0, "QLM_ISA=%s: child runs %s, want %s", levels[i], got[i], want);
    }
    TEST_END();
}

/* /proc/cpuinfo's flags come from the same CPUID bits, cleared by the
 * kernel when it does not save the registers: they must agree. */
static void test_features(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) {
        printf("SKIP cpu/features_match_proc_cpuinfo: no /proc/cpuinfo\n");
        return;
    }
    static char line[8192];
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "flags", 5) == 0) {
            found = 1;
            break;
        }
    fclose(f);
#if defined(__x86_64__)
    if (!found) {
        printf("SKIP cpu/features_match_proc_cpuinfo: no flags line\n");
        return;
    }
    TEST_BEGIN("cpu/features_match_proc_cpuinfo");
    const qt_cpu_features *c = qt_cpu();
    const struct {
        const char *flag;
        bool have;
    } flags[] = {
        {"avx2", c->avx2},         {"fma", c->fma},           {"f16c", c->f16c},
        {"avx512f", c->avx512f},   {"avx512bw", c->avx512bw}, {"avx512vl", c->avx512vl},
        {"avx512dq", c->avx512dq}, {"avx512_vnni", c->avx512vnni}, {"avx_vnni", c->avxvnni},
        {"avx512_bf16", c->avx512bf16},
    };
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        char word[64];
        snprintf(word, sizeof word, " %s ", flags[i].flag);
        line[strcspn(line, "\n")] = ' ';
        const bool listed = strstr(line, word) != NULL;
        CHECK(listed == flags[i].have, "%s: /proc/cpuinfo says %d, qt_cpu says %d", flags[i].flag, listed,
              flags[i].have);
    }
    TEST_END();
#else
    TEST_BEGIN("cpu/no_x86_features_elsewhere");
    const qt_cpu_features *c = qt_cpu();
    CHECK(!c->avx2 && !c->avx512f, "x86 features reported off x86");
    TEST_END();
#if defined(__aarch64__)
    /* Linux on aarch64 requires Advanced SIMD.  A native kernel's
     * /proc/cpuinfo lists the same hwcaps by name ("Features" line);
     * qemu-user shows the host's file, without one. */
    TEST_BEGIN("cpu/aarch64_hwcaps");
    CHECK(c->neon, "no NEON reported on aarch64");
    CHECK(c->neon || !c->dotprod, "dotprod without NEON");
    f = fopen("/proc/cpuinfo", "r");
    found = 0;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "Features", 8) == 0) {
            found = 1;
            break;
        }
    if (f)
        fclose(f);
    if (found) {
        line[strcspn(line, "\n")] = ' ';
        CHECK((strstr(line, " asimd ") != NULL) == c->neon, "asimd: /proc/cpuinfo and hwcaps disagree");
        CHECK((strstr(line, " asimddp ") != NULL) == c->dotprod, "asimddp: /proc/cpuinfo and hwcaps disagree");
    }
    TEST_END();
#endif
    (void)found;
#endif
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--isa-name") == 0) {
        printf("%s\n", qt_isa_name());
        return 0;
    }
    test_features();
    test_dispatch(argv[0]);
    for (int isa = QT_ISA_AVX2; isa < QT_ISA_COUNT; isa++) {
        if (!qt_isa_supported(qt_cpu(), (qt_isa)isa)) {
            printf("SKIP %s: %s\n", set_names[isa],
                   qt_isa_kernels((qt_isa)isa) ? "this CPU lacks it" : "not built for this architecture");
            continue;
        }
        for (size_t i = 0; i < sizeof qtypes / sizeof qtypes[0]; i++) {
            test_quant_dot((qt_isa)isa, &qtypes[i]);
            test_quant_tile((qt_isa)isa, &qtypes[i]);
            test_quant_tile_tall((qt_isa)isa, &qtypes[i]);
        }
        for (size_t i = 0; i < sizeof ktypes / sizeof ktypes[0]; i++) {
            test_kquant_dot((qt_isa)isa, &ktypes[i]);
            test_kquant_tile((qt_isa)isa, &ktypes[i]);
            test_kquant_tile_tall((qt_isa)isa, &ktypes[i]);
        }
        for (size_t i = 0; i < sizeof ftypes / sizeof ftypes[0]; i++)
            test_float_dot((qt_isa)isa, &ftypes[i]);
        for (int act = 0; act < 2; act++) {
            test_quantizer((qt_isa)isa, QT_Q8_0, act);
            test_quantizer((qt_isa)isa, QT_Q8_1, act);
            test_quantizer((qt_isa)isa, QT_Q8_K, act);
        }
    }
    TEST_EXIT();
}
