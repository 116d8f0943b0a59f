/* test_quant.c - the quant layer's table, conversions and scalar reference.
 *
 * Conformance comes from fixtures that gguf-py wrote
 * (tools/gen_quant_fixtures.py writes tests/data/quant/NAME.bin): quantizing their
 * inputs must give gguf-py's bytes exactly, and dequantizing those bytes must
 * give gguf-py's floats bit for bit.  gguf-py's quantizers for these types
 * do the same float32 operations as ggml's C reference (checked against
 * ggml-quants.c), so one fixture pins both.  The only known difference,
 * Q5_1's clamp to 31 that ggml's C lacks, is unreachable (see quant/ref.c).
 * Q8_1 has no gguf-py quantizer; it is checked against Q8_0 and the
 * definition of s instead.
 *
 * The K-quants' fixtures are dequantization only: gguf-py has no quantizer
 * for them.  Their quantizers are held to error bounds here; byte equality
 * with ggml's C (quantize_row_q*_K_ref) was checked against llama.cpp's
 * compiled library outside the suite, which CI does not have. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/ref.h"
#include "quant/types.h"
#include "tests/test.h"
#include "tests/test_rng.h"

/* ---- helpers ----------------------------------------------------------- */

static void fill_normal(float *x, int n, double scale) {
    for (int i = 0; i < n; i++)
        x[i] = (float)(rng_normal() * scale);
}

static const char *data_dir(void) {
    static char dir[4096];
    if (dir[0])
        return dir;
    const char *env = getenv("QLM_TEST_DATA");
    snprintf(dir, sizeof dir, "%s/quant", env ? env : "tests/data");
    return dir;
}

typedef struct fixture {
    uint32_t type;
    uint32_t n, nbytes;
    int dequant_only; /* no input: gguf-py cannot quantize the type */
    float *input, *dequant;
    uint8_t *quant;
} fixture;

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int read_floats(FILE *f, float *dst, uint32_t n) {
    uint8_t b[4];
    for (uint32_t i = 0; i < n; i++) {
        if (fread(b, 1, 4, f) != 4)
            return 0;
        dst[i] = qt_bits_f32(le32(b));
    }
    return 1;
}

/* Returns an error message, or NULL with *fx filled. */
static const char *load_fixture(const char *name, fixture *fx) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.bin", data_dir(), name);
    memset(fx, 0, sizeof *fx);
    FILE *f = fopen(path, "rb");
    if (!f)
        return "cannot open fixture (run from the repository root or set QLM_TEST_DATA)";
    uint8_t hdr[24];
    const char *err = NULL;
    if (fread(hdr, 1, sizeof hdr, f) != sizeof hdr || memcmp(hdr, "QLMQFX01", 8) != 0) {
        err = "bad fixture header";
        goto out;
    }
    fx->type = le32(hdr + 8);
    fx->n = le32(hdr + 12);
    fx->nbytes = le32(hdr + 16);
    fx->dequant_only = le32(hdr + 20) & 1u;
    if (fx->n == 0 || fx->n > (1u << 20) || fx->nbytes > (1u << 22)) {
        err = "implausible fixture sizes";
        goto out;
    }
    fx->input = malloc((size_t)fx->n * sizeof(float));
    fx->dequant = malloc((size_t)fx->n * sizeof(float));
    fx->quant = malloc(fx->nbytes);
    if (!fx->input || !fx->dequant || !fx->quant) {
        err = "out of memory";
        goto out;
    }
    if ((!fx->dequant_only && !read_floats(f, fx->input, fx->n)) || fread(fx->quant, 1, fx->nbytes, f) != fx->nbytes ||
        !read_floats(f, fx->dequant, fx->n)) {
        err = "truncated fixture";
        goto out;
    }
    if (fgetc(f) != EOF)
        err = "trailing bytes in fixture";
out:
    fclose(f);
    return err;
}

static void free_fixture(fixture *fx) {
    free(fx->input);
    free(fx->dequant);
    free(fx->quant);
}

/* ---- table -------------------------------------------------------------- */

/* An independent copy of the GGML layouts (gguf-py GGML_QUANT_SIZES, with
 * Q8_1 at ggml's 36 bytes). */
static const struct {
    uint32_t id;
    const char *name;
    int64_t bs;
    size_t ts;
} expected_rows[] = {
    {0, "f32", 1, 4},         {1, "f16", 1, 2},         {2, "q4_0", 32, 18},
    {3, "q4_1", 32, 20},      {6, "q5_0", 32, 22},      {7, "q5_1", 32, 24},
    {8, "q8_0", 32, 34},      {9, "q8_1", 32, 36},      {10, "q2_k", 256, 84},
    {11, "q3_k", 256, 110},   {12, "q4_k", 256, 144},   {13, "q5_k", 256, 176},
    {14, "q6_k", 256, 210},   {15, "q8_k", 256, 292},   {16, "iq2_xxs", 256, 66},
    {17, "iq2_xs", 256, 74},  {18, "iq3_xxs", 256, 98}, {19, "iq1_s", 256, 50},
    {20, "iq4_nl", 32, 18},   {21, "iq3_s", 256, 110},  {22, "iq2_s", 256, 82},
    {23, "iq4_xs", 256, 136}, {24, "i8", 1, 1},         {25, "i16", 1, 2},
    {26, "i32", 1, 4},        {27, "i64", 1, 8},        {28, "f64", 1, 8},
    {29, "iq1_m", 256, 56},   {30, "bf16", 1, 2},       {34, "tq1_0", 256, 54},
    {35, "tq2_0", 256, 66},   {39, "mxfp4", 32, 17},
};
#define N_EXPECTED (sizeof expected_rows / sizeof expected_rows[0])

static void test_table(void) {
    TEST_BEGIN("table_rows");
    int seen[QT_COUNT] = {0};
    for (size_t i = 0; i < N_EXPECTED; i++) {
        const qt_traits *t = qt_get(expected_rows[i].id);
        CHECK(t != NULL, "no row for id %u", expected_rows[i].id);
        if (!t)
            continue;
        seen[expected_rows[i].id] = 1;
        CHECK(t->name && strcmp(t->name, expected_rows[i].name) == 0, "id %u: name %s, want %s",
              expected_rows[i].id, t->name ? t->name : "(null)", expected_rows[i].name);
        CHECK(t->block_size == expected_rows[i].bs, "%s: block_size %lld, want %lld", expected_rows[i].name,
              (long long)t->block_size, (long long)expected_rows[i].bs);
        CHECK(t->type_size == expected_rows[i].ts, "%s: type_size %zu, want %zu", expected_rows[i].name,
              t->type_size, expected_rows[i].ts);
        for (const char *c = t->name; c && *c; c++)
            CHECK((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_', "%s: not lower case",
                  t->name);
        const qt_traits *vt = qt_get(t->vec_dot_type);
        CHECK(vt != NULL, "%s: vec_dot_type %d has no row", t->name, (int)t->vec_dot_type);
        if (t->vec_dot && vt) {
            CHECK(vt->from_float != NULL, "%s: dot partner %s cannot quantize", t->name, vt->name);
            CHECK(vt->block_size == t->block_size, "%s: dot partner %s has other block size", t->name,
                  vt->name);
        }
    }
    /* Every other id, and ids past the end, have no row. */
    for (uint32_t id = 0; id < QT_COUNT + 8; id++)
        if (id >= QT_COUNT || !seen[id])
            CHECK(qt_get(id) == NULL, "id %u should have no row", id);
    CHECK(qt_get(UINT32_MAX) == NULL, "id UINT32_MAX should have no row");
    CHECK(qt_get(0x80000000u) == NULL, "id 2^31 should have no row");
    TEST_END();

    TEST_BEGIN("table_reference_functions");
    static const qt_type done[] = {QT_F32,  QT_F16,  QT_BF16, QT_Q4_0, QT_Q4_1, QT_Q5_0, QT_Q5_1,
                                   QT_Q8_0, QT_Q2_K, QT_Q3_K, QT_Q4_K, QT_Q5_K, QT_Q6_K, QT_IQ4_NL};
    for (size_t i = 0; i < sizeof done / sizeof done[0]; i++) {
        const qt_traits *t = qt_get(done[i]);
        CHECK(t && t->to_float && t->from_float && t->vec_dot, "type %d lacks a reference function",
              (int)done[i]);
    }
    const qt_traits *q81 = qt_get(QT_Q8_1);
    CHECK(q81 && q81->from_float && q81->to_float, "q8_1 must quantize (it is an activation type)");
    CHECK(qt_get(QT_Q4_0)->vec_dot_type == QT_Q8_0 && qt_get(QT_Q5_0)->vec_dot_type == QT_Q8_0 &&
              qt_get(QT_Q8_0)->vec_dot_type == QT_Q8_0,
          "_0 types pair with q8_0");
    CHECK(qt_get(QT_Q4_1)->vec_dot_type == QT_Q8_1 && qt_get(QT_Q5_1)->vec_dot_type == QT_Q8_1,
          "_1 types pair with q8_1");
    for (int t = QT_Q2_K; t <= QT_Q6_K; t++)
        CHECK(qt_get(t)->vec_dot_type == QT_Q8_K, "%s: k-quants pair with q8_k", qt_get(t)->name);
    const qt_traits *q8k = qt_get(QT_Q8_K);
    CHECK(q8k && q8k->from_float && q8k->to_float && q8k->quantize_act,
          "q8_k must quantize (it is an activation type)");
    TEST_END();

    TEST_BEGIN("row_size");
    CHECK(qt_row_size(QT_F32, 10) == 40, "f32 x10");
    CHECK(qt_row_size(QT_Q4_0, 64) == 36, "q4_0 x64");
    CHECK(qt_row_size(QT_Q6_K, 4096) == 16 * 210, "q6_k x4096");
    CHECK(qt_row_size(QT_Q8_1, 32) == 36, "q8_1 x32");
    CHECK(qt_row_size(QT_F16, 0) == 0, "empty row");
    CHECK(qt_row_size(QT_Q4_0, 33) == 0, "not a block multiple");
    CHECK(qt_row_size(QT_F32, -4) == 0, "negative count");
    CHECK(qt_row_size((qt_type)4, 32) == 0, "unused id");
    CHECK(qt_row_size(QT_COUNT, 32) == 0, "id past the end");
    CHECK(qt_row_size(QT_F64, INT64_MAX) == 0, "f64 overflow");
    CHECK(qt_row_size(QT_I64, (int64_t)(SIZE_MAX / 8) + 1) == 0, "just past SIZE_MAX");
    CHECK(qt_row_size(QT_I64, (int64_t)(SIZE_MAX / 16)) == (SIZE_MAX / 16) * 8, "large but fits");
    TEST_END();
}

/* ---- f16 / bf16 conversions --------------------------------------------- */

/* The value of a half from its definition, computed in double. */
static double f16_value(uint16_t h) {
    const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    const double sign = (h & 0x8000) ? -1.0 : 1.0;
    if (e == 0)
        return sign * ldexp(m, -24);
    if (e == 31)
        return m ? NAN : sign * INFINITY;
    return sign * ldexp(1024 + m, e - 25);
}

static void test_f16(void) {
    TEST_BEGIN("f16_to_f32_exhaustive");
    for (uint32_t h = 0; h < 65536; h++) {
        const float f = qt_f16_to_f32((uint16_t)h);
        const double want = f16_value((uint16_t)h);
        if (isnan(want)) {
            CHECK(isnan(f), "0x%04x should widen to NaN", h);
            CHECK((qt_f32_bits(f) >> 31) == (h >> 15), "0x%04x NaN sign", h);
        } else {
            CHECK((double)f == want && !signbit(f) == !signbit(want), "0x%04x widens to %.9g, want %.9g", h,
                  (double)f, want);
        }
    }
    TEST_END();

    TEST_BEGIN("f16_roundtrip_exhaustive");
    for (uint32_t h = 0; h < 65536; h++) {
        const uint16_t back = qt_f32_to_f16(qt_f16_to_f32((uint16_t)h));
        const int is_nan = ((h & 0x7c00) == 0x7c00) && (h & 0x3ff);
        if (is_nan)
            CHECK((back & 0x7c00) == 0x7c00 && (back & 0x3ff) && (back & 0x8000) == (h & 0x8000),
                  "NaN 0x%04x came back as 0x%04x", h, back);
        else
            CHECK(back == h, "0x%04x came back as 0x%04x", h, back);
    }
    TEST_END();

    /* Between every pair of adjacent halves (both signs, subnormals and the
     * step to infinity included) the midpoint rounds to the even one, and a
     * float one ulp either side rounds to the nearer one. */
    TEST_BEGIN("f16_round_to_nearest_even");
    for (uint32_t h = 0; h < 0x7c00; h++) {
        const double lo = f16_value((uint16_t)h);
        const double hi = h == 0x7bff ? 65536.0 : f16_value((uint16_t)(h + 1));
        const float mid = (float)((lo + hi) / 2);
        CHECK((double)mid == (lo + hi) / 2, "midpoint of 0x%04x not exact", h);
        const uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
        for (int s = 0; s < 2; s++) {
            const uint16_t sg = s ? 0x8000 : 0;
            const float m = s ? -mid : mid;
            const float toward_zero = nextafterf(m, 0.0f), away = nextafterf(m, s ? -INFINITY : INFINITY);
            CHECK(qt_f32_to_f16(m) == (sg | even), "midpoint above 0x%04x -> 0x%04x", h | sg,
                  qt_f32_to_f16(m));
            CHECK(qt_f32_to_f16(toward_zero) == (sg | h), "below midpoint above 0x%04x", h | sg);
            CHECK(qt_f32_to_f16(away) == (sg | (h + 1)), "above midpoint above 0x%04x", h | sg);
        }
    }
    CHECK(qt_f32_to_f16(INFINITY) == 0x7c00 && qt_f32_to_f16(-INFINITY) == 0xfc00, "infinities");
    CHECK(qt_f32_to_f16(3.4e38f) == 0x7c00 && qt_f32_to_f16(-1e6f) == 0xfc00, "overflow to inf");
    CHECK(qt_f32_to_f16(1e-40f) == 0 && qt_f32_to_f16(-1e-40f) == 0x8000, "float subnormals -> signed 0");
    CHECK(qt_f32_to_f16(NAN) == 0x7e00, "quiet NaN");
    CHECK((qt_f32_to_f16(qt_bits_f32(0x7f800001u)) & 0x7e00) == 0x7e00, "signalling NaN made quiet");
    TEST_END();
}

static void test_bf16(void) {
    TEST_BEGIN("bf16_roundtrip_exhaustive");
    for (uint32_t b = 0; b < 65536; b++) {
        const float f = qt_bf16_to_f32((uint16_t)b);
        CHECK(qt_f32_bits(f) == b << 16, "0x%04x widens wrongly", b);
        const uint16_t back = qt_f32_to_bf16(f);
        const int is_nan = ((b & 0x7f80) == 0x7f80) && (b & 0x7f);
        if (is_nan)
            CHECK(isnan(qt_bf16_to_f32(back)) && (back & 0x8000) == (b & 0x8000) && (back & 0x40),
                  "NaN 0x%04x came back as 0x%04x", b, back);
        else
            CHECK(back == b, "0x%04x came back as 0x%04x", b, back);
    }
    TEST_END();

    TEST_BEGIN("bf16_round_to_nearest_even");
    for (uint32_t b = 0; b < 0x7f80; b++) {
        const double lo = (double)qt_bf16_to_f32((uint16_t)b);
        const double hi = b == 0x7f7f ? ldexp(1.0, 128) : (double)qt_bf16_to_f32((uint16_t)(b + 1));
        const double midd = (lo + hi) / 2;
        const uint16_t even = (b & 1) ? (uint16_t)(b + 1) : (uint16_t)b;
        const float mid = (float)midd;
        CHECK((double)mid == midd, "midpoint of 0x%04x not exact", b);
        for (int s = 0; s < 2; s++) {
            const uint16_t sg = s ? 0x8000 : 0;
            const float m = s ? -mid : mid;
            const float toward_zero = nextafterf(m, 0.0f), away = nextafterf(m, s ? -INFINITY : INFINITY);
            CHECK(qt_f32_to_bf16(m) == (sg | even), "midpoint above 0x%04x", b | sg);
            CHECK(qt_f32_to_bf16(toward_zero) == (sg | b), "below midpoint above 0x%04x", b | sg);
            CHECK(qt_f32_to_bf16(away) == (sg | (b + 1)), "above midpoint above 0x%04x", b | sg);
        }
    }
    CHECK(qt_f32_to_bf16(qt_bits_f32(0x7f800001u)) == 0x7fc0, "signalling NaN made quiet");
    CHECK(qt_f32_to_bf16(qt_bits_f32(0xffc12345u)) == 0xffc1, "NaN keeps sign and payload");
    TEST_END();
}

/* ---- gguf-py conformance ------------------------------------------------ */

static void test_fixture(const char *name, qt_type type) {
    char cname[64];
    fixture fx;
    const char *err = load_fixture(name, &fx);
    const qt_traits *t = qt_get(type);

    snprintf(cname, sizeof cname, "%s_dequant_matches_gguf_py", name);
    TEST_BEGIN(cname);
    CHECK(!err, "%s: %s", name, err ? err : "");
    const int ok = !err && fx.type == (uint32_t)type && fx.n % t->block_size == 0 &&
                   qt_row_size(type, fx.n) == fx.nbytes;
    CHECK(err || ok, "fixture header disagrees with the table (type %u, n %u, %u bytes)", fx.type, fx.n,
          fx.nbytes);
    if (ok) {
        float *y = malloc(fx.n * sizeof(float));
        t->to_float(fx.quant, y, fx.n);
        for (uint32_t i = 0; i < fx.n; i++)
            if (!same_float(y[i], fx.dequant[i])) {
                CHECK(0, "element %u (block %u): got %.9g (0x%08x), gguf-py %.9g (0x%08x)", i,
                      (unsigned)(i / t->block_size), (double)y[i], qt_f32_bits(y[i]),
                      (double)fx.dequant[i], qt_f32_bits(fx.dequant[i]));
                break;
            }
        free(y);
    }
    TEST_END();
    if (ok && fx.dequant_only) {
        free_fixture(&fx);
        return;
    }

    snprintf(cname, sizeof cname, "%s_quant_matches_gguf_py", name);
    TEST_BEGIN(cname);
    CHECK(ok, "fixture unusable");
    if (ok) {
        uint8_t *q = malloc(fx.nbytes);
        memset(q, 0xa5, fx.nbytes);
        t->from_float(fx.input, q, fx.n);
        for (uint32_t i = 0; i < fx.nbytes; i++)
            if (q[i] != fx.quant[i]) {
                const uint32_t blk = i / (uint32_t)t->type_size;
                CHECK(0, "byte %u (block %u, first input %.9g): got 0x%02x, gguf-py 0x%02x", i, blk,
                      (double)fx.input[blk * t->block_size], q[i], fx.quant[i]);
                break;
            }
        free(q);
    }
    TEST_END();
    if (!err)
        free_fixture(&fx);
}

/* Q8_1 is Q8_0 plus s = f16(d * sum(q)) with the unrounded float d. */
static void test_q8_1(void) {
    TEST_BEGIN("q8_1_matches_q8_0_and_sum");
    enum { NB = 64 };
    float x[NB * 32];
    qt_block_q8_0 a[NB];
    qt_block_q8_1 b[NB];
    for (int i = 0; i < NB; i++)
        fill_normal(x + i * 32, 32, i % 8 == 0 ? 0.0 : pow(10.0, (i % 7) - 3));
    /* a block with d = 1, where every other value is a rounding tie */
    x[5 * 32] = 127.0f;
    for (int j = 1; j < 32; j++)
        x[5 * 32 + j] = (float)(j - 16) + 0.5f;
    qt_get(QT_Q8_0)->from_float(x, a, NB * 32);
    qt_get(QT_Q8_1)->from_float(x, b, NB * 32);
    for (int i = 0; i < NB; i++) {
        CHECK(a[i].d == b[i].d && memcmp(a[i].qs, b[i].qs, 32) == 0, "block %d differs from q8_0", i);
        float amax = 0.0f;
        int sum = 0;
        for (int j = 0; j < 32; j++) {
            amax = fmaxf(amax, fabsf(x[i * 32 + j]));
            sum += b[i].qs[j];
        }
        const float d = amax / 127;
        CHECK(b[i].s == qt_f32_to_f16((float)sum * d), "block %d: s 0x%04x, want f16(%d * %g)", i, b[i].s,
              sum, (double)d);
    }
    TEST_END();
}

/* Blocks of signed zeros are where gguf-py and ggml's C part ways (numpy's
 * argmax/min choose among equal zeros differently), so the fixtures avoid
 * them and this case pins ggml's C behaviour, which qlm follows: Q4_0/Q5_0
 * get d = -0 from 0.0f / -8 for any zero block; Q4_1/Q5_1 get d = +0 and m
 * equal to the first zero. */
static void test_signed_zero_blocks(void) {
    TEST_BEGIN("zero_blocks_follow_ggml_c");
    for (int kind = 0; kind < 4; kind++) {
        float x[32];
        for (int j = 0; j < 32; j++) /* all +0, all -0, -0 first, +0 first */
            x[j] = (kind == 1 || (kind == 2 && j == 0) || (kind == 3 && j > 0)) ? -0.0f : 0.0f;
        const int neg_first = kind == 1 || kind == 2;
        qt_block_q4_0 a;
        qt_block_q5_0 b;
        qt_block_q4_1 c;
        qt_block_q5_1 e;
        qt_block_q8_0 f;
        qt_get(QT_Q4_0)->from_float(x, &a, 32);
        qt_get(QT_Q5_0)->from_float(x, &b, 32);
        qt_get(QT_Q4_1)->from_float(x, &c, 32);
        qt_get(QT_Q5_1)->from_float(x, &e, 32);
        qt_get(QT_Q8_0)->from_float(x, &f, 32);
        int qs_ok = 1;
        for (int j = 0; j < 16; j++)
            qs_ok &= a.qs[j] == 0x88 && b.qs[j] == 0x00 && c.qs[j] == 0 && e.qs[j] == 0;
        for (int j = 0; j < 32; j++)
            qs_ok &= f.qs[j] == 0;
        CHECK(qs_ok, "kind %d: quants should encode zero", kind);
        CHECK(a.d == 0x8000 && b.d == 0x8000, "kind %d: q4_0/q5_0 d 0x%04x/0x%04x, ggml gives 0x8000", kind,
              a.d, b.d);
        CHECK(b.qh[0] == 0xff && b.qh[1] == 0xff && b.qh[2] == 0xff && b.qh[3] == 0xff, "kind %d: q5_0 qh",
              kind);
        CHECK(c.d == 0 && e.d == 0 && f.d == 0, "kind %d: q4_1/q5_1/q8_0 d should be +0", kind);
        const uint16_t m = neg_first ? 0x8000 : 0x0000;
        CHECK(c.m == m && e.m == m, "kind %d: m 0x%04x/0x%04x, ggml gives 0x%04x", kind, c.m, e.m, m);
        CHECK(e.qh[0] == 0 && e.qh[1] == 0 && e.qh[2] == 0 && e.qh[3] == 0, "kind %d: q5_1 qh", kind);
    }
    TEST_END();
}

/* ---- dot products -------------------------------------------------------- */

/* The float kernels sum exact (F16, BF16) or once-rounded (F32) products in
 * double, so they are within an ulp or two of the double dot.  The block
 * kernels are exact in integers per block; each block's scaling rounds about
 * twice and the float running sum once per block, so their error is below
 * (nb + 3) * 2^-24 * sum|x*y|.  The _1 kernels also add m_x * s_y, where
 * s_y = f16(d * sum q) rather than f16(d) * sum q as the dequantized y has:
 * two f16 roundings, under 2^-10 * |m_x * d_y * sum q_y| per block. */
static void test_vec_dot_type(qt_type type) {
    const qt_traits *t = qt_get(type);
    const qt_traits *vt = qt_get(t->vec_dot_type);
    char cname[64];
    snprintf(cname, sizeof cname, "%s_vec_dot", t->name);
    TEST_BEGIN(cname);
    static const int sizes[] = {32, 256, 4096};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        for (int trial = 0; trial < 6; trial++) {
            const int n = sizes[si];
            float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
            float *xd = malloc(n * sizeof(float)), *yd = malloc(n * sizeof(float));
            void *xq = malloc(qt_row_size(type, n)), *yq = malloc(qt_row_size(t->vec_dot_type, n));
            const double xs = trial < 3 ? 1.0 : 0.05, off = (trial % 3 == 2) ? 0.7 : 0.0;
            fill_normal(x, n, xs);
            fill_normal(y, n, trial % 2 ? 3.0 : 0.5);
            for (int i = 0; i < n; i++)
                x[i] += (float)off; /* an offset exercises the _1 min term */
            t->from_float(x, xq, n);
            vt->from_float(y, yq, n);
            t->to_float(xq, xd, n);
            vt->to_float(yq, yd, n);
            double ref = 0.0, mag = 0.0;
            for (int i = 0; i < n; i++) {
                ref += (double)xd[i] * (double)yd[i];
                mag += fabs((double)xd[i] * (double)yd[i]);
            }
            /* For the _1 kernels the per-block terms d*sumi and m*s can be
             * larger than the block's sum|x*y| when they cancel. */
            double msum = 0.0, sdiff = 0.0;
            if (t->vec_dot_type == QT_Q8_1) {
                const qt_block_q8_1 *yb = yq;
                for (int b = 0; b < n / 32; b++) {
                    uint16_t m16; /* m follows d in q4_1 and q5_1 */
                    memcpy(&m16, (const uint8_t *)xq + b * t->type_size + 2, 2);
                    const double m = qt_f16_to_f32(m16);
                    int sq = 0;
                    for (int j = 0; j < 32; j++)
                        sq += yb[b].qs[j];
                    msum += fabs(m * qt_f16_to_f32(yb[b].s));
                    sdiff += fabs(m) * (0x1p-9 * fabs((double)qt_f16_to_f32(yb[b].d) * sq) + 0x1p-24);
                }
            }
            const double nb = (double)(n / t->block_size);
            const double tol = t->block_size == 1 ? 0x1p-24 * (fabs(ref) + mag) + 0x1p-50 * mag + 1e-30
                                                  : (nb + 3) * 0x1p-24 * (mag + 2 * msum) + sdiff + 1e-30;
            float got = NAN;
            t->vec_dot(n, &got, xq, yq);
            CHECK(fabs((double)got - ref) <= tol, "n=%d trial %d: got %.9g, double %.9g, |err| %.3g > tol %.3g",
                  n, trial, (double)got, ref, fabs((double)got - ref), tol);
            free(x), free(y), free(xd), free(yd), free(xq), free(yq);
        }
    }
    TEST_END();
}

/* ---- K-quants ------------------------------------------------------------ */

/* Byte offsets of d and dmin (-1: none) in each K block, for the tests that
 * split a dequantized weight into its scale and min parts. */
static void k_scale_offsets(qt_type t, int *d_off, int *dmin_off) {
    switch (t) {
    case QT_Q2_K: *d_off = 80, *dmin_off = 82; return;
    case QT_Q3_K: *d_off = 108, *dmin_off = -1; return;
    case QT_Q6_K: *d_off = 208, *dmin_off = -1; return;
    default: *d_off = 0, *dmin_off = 2; return;
    }
}

/* Dequantizes with one of the two f16 fields zeroed: the d·sc·q part
 * (which = 0) or the dmin·m part (which = 1, zeros for types without one). */
static void k_dequant_part(qt_type t, const void *q, float *out, int n, int which) {
    const qt_traits *tr = qt_get(t);
    int d_off, m_off;
    k_scale_offsets(t, &d_off, &m_off);
    const int zero_off = which == 0 ? m_off : d_off;
    if (which == 1 && m_off < 0) {
        memset(out, 0, (size_t)n * sizeof(float));
        return;
    }
    uint8_t *copy = malloc(qt_row_size(t, n));
    memcpy(copy, q, qt_row_size(t, n));
    if (zero_off >= 0)
        for (int b = 0; b < n / 256; b++)
            memset(copy + b * tr->type_size + zero_off, 0, 2);
    tr->to_float(copy, out, n);
    free(copy);
}

/* The dot's error against the double dot of the dequantized rows: the
 * integer lanes are exact, and each block adds a few roundings (d = dx·dy,
 * the lane conversion, the FMA; the dequantized x and y round too) relative
 * to the magnitudes of its two terms, d·Σsc·q·y and dmin·Σm·y, which can
 * be far larger than their difference. */
static void test_vec_dot_k(qt_type type) {
    const qt_traits *t = qt_get(type), *vt = qt_get(QT_Q8_K);
    char cname[64];
    snprintf(cname, sizeof cname, "%s_vec_dot", t->name);
    TEST_BEGIN(cname);
    static const int sizes[] = {256, 512, 4096};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        for (int trial = 0; trial < 6; trial++) {
            const int n = sizes[si];
            float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
            float *xa = malloc(n * sizeof(float)), *xb = malloc(n * sizeof(float)), *yd = malloc(n * sizeof(float));
            void *xq = malloc(qt_row_size(type, n)), *yq = malloc(qt_row_size(QT_Q8_K, n));
            fill_normal(x, n, trial < 3 ? 1.0 : 0.05);
            fill_normal(y, n, trial % 2 ? 3.0 : 0.5);
            for (int i = 0; i < n; i++)
                x[i] += (trial % 3 == 2) ? 0.7f : 0.0f;
            t->from_float(x, xq, n);
            vt->quantize_act(y, yq, n);
            t->to_float(xq, x, n); /* x is now the dequantized weights */
            vt->to_float(yq, yd, n);
            k_dequant_part(type, xq, xa, n, 0);
            k_dequant_part(type, xq, xb, n, 1);
            double ref = 0.0, mag = 0.0;
            for (int i = 0; i < n; i++) {
                ref += (double)x[i] * (double)yd[i];
                mag += fabs((double)xa[i] * yd[i]) + fabs((double)xb[i] * yd[i]);
            }
            const double tol = (n / 256 + 6) * 0x1p-23 * mag + 1e-30;
            float got = NAN;
            t->vec_dot(n, &got, xq, yq);
            CHECK(fabs((double)got - ref) <= tol, "n=%d trial %d: got %.9g, double %.9g, |err| %.3g > tol %.3g", n,
                  trial, (double)got, ref, fabs((double)got - ref), tol);
            free(x), free(y), free(xa), free(xb), free(yd), free(xq), free(yq);
        }
    }
    TEST_END();
}

/* Bounds on |x - dequant(quant(x))| relative to the block's largest
 * magnitude (the coarse 4- or 6-bit sub-block scales and mins make the
 * error of a quiet sub-block depend on the loudest one), and on the RMS
 * error of normal data, which catch a quantizer that is valid but fits
 * poorly.  Measured worst cases over many shapes of data are about 70% of
 * the bounds; a wrong layout or rounding breaks them by far. */
static void test_roundtrip_k(qt_type type) {
    const qt_traits *t = qt_get(type);
    static const struct { qt_type t; double elem, rms; } lim[] = {
        {QT_Q2_K, 0.5, 0.33}, {QT_Q3_K, 0.3, 0.17}, {QT_Q4_K, 0.11, 0.08},
        {QT_Q5_K, 0.075, 0.041}, {QT_Q6_K, 0.1, 0.022},
    };
    double elem = 0, rms = 0;
    for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++)
        if (lim[i].t == type)
            elem = lim[i].elem, rms = lim[i].rms;
    char cname[64];
    snprintf(cname, sizeof cname, "%s_roundtrip_error", t->name);
    TEST_BEGIN(cname);
    enum { N = 8192 };
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    void *q = malloc(qt_row_size(type, N));
    for (int shape = 0; shape < 5; shape++) {
        for (int e = -3; e <= 3; e++) {
            const double sc = pow(10.0, e);
            fill_normal(x, N, sc);
            for (int i = 0; i < N; i++) {
                if (shape == 1) /* skewed: the min does the work */
                    x[i] = x[i] * 0.3f + (float)sc;
                else if (shape == 2 && i % 256 < 16) /* one loud sub-block */
                    x[i] *= 30.0f;
                else if (shape == 3) /* sub-blocks of four magnitudes */
                    x[i] *= (float)pow(10.0, (i / 16) % 4 - 2);
                else if (shape == 4)
                    x[i] = fabsf(x[i]);
            }
            t->from_float(x, q, N);
            t->to_float(q, y, N);
            double se = 0, sx = 0;
            for (int b = 0; b < N / 256; b++) {
                float amax = 0;
                for (int j = 0; j < 256; j++)
                    amax = fmaxf(amax, fabsf(x[b * 256 + j]));
                for (int j = 0; j < 256; j++) {
                    const int k = b * 256 + j;
                    const double err = fabs((double)x[k] - (double)y[k]);
                    CHECK(err <= elem * amax, "shape %d scale %g element %d: %.9g -> %.9g, |err| %.3g > %.3g", shape,
                          sc, k, (double)x[k], (double)y[k], err, elem * amax);
                    se += err * err;
                    sx += (double)x[k] * x[k];
                }
            }
            if (shape == 0)
                CHECK(sqrt(se / sx) < rms, "scale %g: relative RMS error %.4g >= %.4g", sc, sqrt(se / sx), rms);
        }
    }
    /* Zeros stay zeros, and a block of them dequantizes to +-0. */
    memset(x, 0, 256 * sizeof(float));
    t->from_float(x, q, 256);
    t->to_float(q, y, 256);
    for (int j = 0; j < 256; j++)
        CHECK(y[j] == 0.0f, "zero block: element %d dequantizes to %g", j, (double)y[j]);
    free(x), free(y), free(q);
    TEST_END();
}

/* Q8_K by its definition: iscale = -127 / (signed value of the first
 * largest magnitude), q = round-half-even(iscale·x), d = 1 / iscale, bsums
 * the sums of 16; and quantize_act is the same function's bytes. */
/* Activations can be NaN when a hostile file feeds garbage (a prompt cache
 * with a valid checksum, found by fuzz_prompt_cache): the activation
 * quantizer must give defined bytes, not cast NaN to int8 (UB, which the
 * sanitizer build of this test aborts on). */
static void test_quantize_act_nan(void) {
    TEST_BEGIN("q8_0 activation quantizer on NaN and infinite input");
    float x[32];
    for (int j = 0; j < 32; j++) x[j] = (float)(j - 16) / 8.0f;
    x[3] = NAN;
    x[9] = INFINITY;
    qt_block_q8_0 y;
    qt_quantize_act_q8_0(x, &y, 32); /* the reference: SIMD sets are defined by their instructions */
    CHECK(y.qs[3] == -128 && y.qs[9] == -128, "NaN and inf lanes: %d %d, want -128", y.qs[3], y.qs[9]);
    TEST_END();
}

static void test_q8_k(void) {
    TEST_BEGIN("q8_k_definition");
    enum { NB = 24 };
    float *x = malloc(NB * 256 * sizeof(float));
    qt_block_q8_K a[NB], b[NB];
    for (int i = 0; i < NB; i++)
        fill_normal(x + 256 * i, 256, pow(10.0, i % 9 - 4));
    /* ties: amax 127 makes iscale -1 or 1, so k + 0.5 stays a tie */
    for (int j = 0; j < 256; j++)
        x[3 * 256 + j] = (float)(j % 200 - 100) + 0.5f;
    x[3 * 256 + 7] = 127.0f;
    /* equal magnitudes, negative first: iscale > 0, so d > 0 */
    x[4 * 256 + 5] = -1000.0f;
    x[4 * 256 + 9] = 1000.0f;
    for (int j = 0; j < 256; j++) /* all zero */
        x[5 * 256 + j] = 0.0f;
    qt_get(QT_Q8_K)->from_float(x, a, NB * 256);
    qt_get(QT_Q8_K)->quantize_act(x, b, NB * 256);
    CHECK(memcmp(a, b, sizeof a) == 0, "quantize_act differs from from_float");
    for (int i = 0; i < NB; i++) {
        const float *v = x + 256 * i;
        float max = 0, amax = 0;
        for (int j = 0; j < 256; j++)
            if (fabsf(v[j]) > amax)
                amax = fabsf(v[j]), max = v[j];
        const float iscale = amax ? -127.f / max : 0.f;
        CHECK(amax ? a[i].d == 1 / iscale : a[i].d == 0.0f, "block %d: d %g", i, (double)a[i].d);
        for (int j = 0; j < 256; j++) {
            const float r = nearbyintf(iscale * v[j]); /* the default mode: half to even */
            CHECK(a[i].qs[j] == (int8_t)r, "block %d element %d: %d, want %g", i, j, a[i].qs[j], (double)r);
        }
        for (int g = 0; g < 16; g++) {
            int sum = 0;
            for (int j = 0; j < 16; j++)
                sum += a[i].qs[16 * g + j];
            CHECK(a[i].bsums[g] == sum, "block %d: bsums[%d] %d, want %d", i, g, a[i].bsums[g], sum);
        }
    }
    CHECK(a[3].qs[0] == 100 && a[3].qs[1] == 98 && a[3].qs[2] == 98, "ties round to even: %d %d %d", a[3].qs[0],
          a[3].qs[1], a[3].qs[2]);
    CHECK(a[4].d > 0 && a[4].qs[5] == -127 && a[4].qs[9] == 127,
          "-1000 before +1000: d %g, q %d %d, want d > 0, -127, 127", (double)a[4].d, a[4].qs[5], a[4].qs[9]);
    free(x);
    TEST_END();
}

/* ---- round-trip error bounds --------------------------------------------- */

/* Worst-case |x - dequant(quant(x))| for one block, from the format's step:
 * half a step where rounding is to nearest, a full step at the clipped end
 * of the _0 formats (the value opposite the max would need q = 2^bits), plus
 * what rounding d (and m) to f16 adds across the code range, plus float
 * slack. */
static double block_bound(qt_type type, const float *x, int bs) {
    float mn = x[0], mx = x[0], amax = 0.0f;
    for (int j = 0; j < bs; j++) {
        mn = fminf(mn, x[j]);
        mx = fmaxf(mx, x[j]);
        amax = fmaxf(amax, fabsf(x[j]));
    }
    const double h = 0x1p-11, slack = 1e-6 * amax + 1e-30;
#define F16ERR(v) fmax(h * fabs(v), 0x1p-25) /* f16 subnormals have a fixed step */
    switch (type) {
    case QT_F16: return h * amax + 0x1p-25;
    case QT_BF16: return 0x1p-8 * amax + 1e-38;
    case QT_F32: return 0.0;
    case QT_Q8_0:
    case QT_Q8_1: { const double d = amax / 127.0; return d * 0.5 + 127 * F16ERR(d) + slack; }
    case QT_Q4_0: { const double d = amax / 8.0; return d + 8 * F16ERR(d) + slack; }
    case QT_Q5_0: { const double d = amax / 16.0; return d + 16 * F16ERR(d) + slack; }
    case QT_Q4_1: { const double d = (mx - mn) / 15.0; return d * 0.5 + 15 * F16ERR(d) + F16ERR(mn) + slack; }
    case QT_Q5_1: { const double d = (mx - mn) / 31.0; return d * 0.5 + 31 * F16ERR(d) + F16ERR(mn) + slack; }
    default: return 0.0;
    }
#undef F16ERR
}

static void test_roundtrip(qt_type type) {
    const qt_traits *t = qt_get(type);
    char cname[64];
    snprintf(cname, sizeof cname, "%s_roundtrip_error", t->name);
    TEST_BEGIN(cname);
    enum { N = 8192 };
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    void *q = malloc(qt_row_size(type, N));
    static const double scales[] = {1e-3, 0.02, 1.0, 30.0, 1000.0};
    for (size_t si = 0; si < sizeof scales / sizeof scales[0]; si++) {
        fill_normal(x, N, scales[si]);
        for (int i = N / 2; i < N; i++) /* second half: skewed, for the _1 offset */
            x[i] = x[i] * 0.3f + (float)scales[si];
        t->from_float(x, q, N);
        t->to_float(q, y, N);
        double se = 0.0, sx = 0.0;
        const int bs = (int)(t->block_size == 1 ? 1 : t->block_size);
        for (int b = 0; b < N / bs; b++) {
            const double bound = block_bound(type, x + b * bs, bs);
            for (int j = 0; j < bs; j++) {
                const double e = fabs((double)x[b * bs + j] - (double)y[b * bs + j]);
                CHECK(e <= bound, "scale %g, element %d: %.9g -> %.9g, |err| %.3g > bound %.3g", scales[si],
                      b * bs + j, (double)x[b * bs + j], (double)y[b * bs + j], e, bound);
                se += e * e;
                sx += (double)x[b * bs + j] * x[b * bs + j];
            }
        }
        /* A loose sanity check on the average: catches a quantizer that is
         * within the worst-case bound everywhere yet systematically poor. */
        const double rel = sqrt(se / sx);
        const double limit = type == QT_Q4_0 || type == QT_Q4_1 ? 0.15
                           : type == QT_Q5_0 || type == QT_Q5_1 ? 0.07
                           : type == QT_Q8_0 || type == QT_Q8_1 ? 0.01
                           : type == QT_BF16 ? 0.005 : 0.001;
        CHECK(rel < limit, "scale %g: relative RMS error %.4g >= %.4g", scales[si], rel, limit);
    }
    free(x), free(y), free(q);
    TEST_END();
}

/* IQ4_NL: bytes of ggml's quantize_iq4_nl (libggml-base, no imatrix) for a
 * fixed input with an all-tiny block and a zero, and its dequantization:
 * d times the table value of each index. */
static void test_iq4_nl(void) {
    static const uint8_t want[72] = {
        0xd9, 0xa5, 0x9f, 0x4b, 0x17, 0xc2, 0x7e, 0x30, 0xe5, 0xa1, 0x5c, 0x28,
        0xd3, 0x9e, 0x4b, 0xf6, 0xb2, 0x7d, 0x26, 0xa9, 0xc2, 0x7e, 0x2a, 0xf4,
        0xb1, 0x56, 0x18, 0xd3, 0x9f, 0x3b, 0xf6, 0xc1, 0x6e, 0x29, 0xe4, 0xa0,
        0x91, 0x2b, 0x18, 0x5f, 0xb3, 0xf8, 0x2d, 0x74, 0xd4, 0x0a, 0x4e, 0x92,
        0xe6, 0x1c, 0x6f, 0xb3, 0xf9, 0x3e, 0x21, 0x83, 0x8f, 0x60, 0xb8, 0x36,
        0xeb, 0x13, 0xfe, 0x81, 0xaf, 0x58, 0xda, 0x25, 0xfd, 0x02, 0x8f, 0x60,
    };
    static const int8_t values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    TEST_BEGIN("iq4_nl_ggml_bytes");
    float x[128], y[128];
    for (int i = 0; i < 128; i++)
        x[i] = (float)((i * 37 % 29) - 14) * 0.173f * (float)(1 + i / 32) + (i % 32 == 5 ? 3.5f : 0.f);
    for (int i = 96; i < 128; i++) x[i] = (i % 2 ? 1e-3f : -1e-3f) * (float)(i % 7);
    x[64] = 0;
    uint8_t got[72];
    const qt_traits *t = qt_get(QT_IQ4_NL);
    t->from_float(x, got, 128);
    for (int i = 0; i < 72; i++) CHECK(got[i] == want[i], "byte %d: 0x%02x, ggml 0x%02x", i, got[i], want[i]);
    t->to_float(want, y, 128);
    for (int b = 0; b < 4; b++) {
        uint16_t h;
        memcpy(&h, want + 18 * b, 2);
        for (int j = 0; j < 32; j++) {
            const uint8_t q = want[18 * b + 2 + j % 16];
            const float e = qt_f16_to_f32(h) * values[j < 16 ? q & 0xf : q >> 4];
            CHECK(y[32 * b + j] == e, "dequant block %d element %d: %g, want %g", b, j, y[32 * b + j], e);
        }
    }
    TEST_END();
}

int main(void) {
    test_table();
    test_f16();
    test_bf16();

    test_fixture("f16", QT_F16);
    test_fixture("bf16", QT_BF16);
    test_fixture("q4_0", QT_Q4_0);
    test_fixture("q4_1", QT_Q4_1);
    test_fixture("q5_0", QT_Q5_0);
    test_fixture("q5_1", QT_Q5_1);
    test_fixture("q8_0", QT_Q8_0);
    test_iq4_nl();
    test_q8_1();
    test_signed_zero_blocks();
    test_fixture("q2_k", QT_Q2_K);
    test_fixture("q3_k", QT_Q3_K);
    test_fixture("q4_k", QT_Q4_K);
    test_fixture("q5_k", QT_Q5_K);
    test_fixture("q6_k", QT_Q6_K);
    test_q8_k();
    test_quantize_act_nan();

    static const qt_type dots[] = {QT_F32, QT_F16, QT_BF16, QT_Q4_0, QT_Q4_1, QT_Q5_0, QT_Q5_1, QT_Q8_0};
    for (size_t i = 0; i < sizeof dots / sizeof dots[0]; i++)
        test_vec_dot_type(dots[i]);

    static const qt_type rts[] = {QT_F16, QT_BF16, QT_Q4_0, QT_Q4_1, QT_Q5_0, QT_Q5_1, QT_Q8_0, QT_Q8_1};
    for (size_t i = 0; i < sizeof rts / sizeof rts[0]; i++)
        test_roundtrip(rts[i]);

    for (int t = QT_Q2_K; t <= QT_Q6_K; t++) {
        test_vec_dot_k((qt_type)t);
        test_roundtrip_k((qt_type)t);
    }

    TEST_EXIT();
}
