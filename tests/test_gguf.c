/* test_gguf.c - GGUF writer/reader round trips and a malformed-file battery.
 *
 * Malformed files are made by writing a valid file and corrupting one field
 * in memory, so each case differs from a loadable file in exactly the way
 * its name says.  Buffers handed to the reader are always exactly sized
 * mallocs, so AddressSanitizer sees any read past the end.
 *
 * `test_gguf --write-malformed DIR` writes every malformed case to
 * DIR/NAME.gguf plus DIR/valid.gguf, for tests/t_malformed.sh. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quant/types.h"
#include "src/gguf.h"
#include "tests/test.h"

typedef struct buf {
    uint8_t *p;
    size_t n;
} buf;

/* ---- helpers ---- */

static bool one_line(const char *m)
{
    if (!m[0]) return false;
    for (const char *p = m; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f) return false;
    return true;
}

/* Opens an exact-size private copy, so over-reads hit the redzone. */
static int open_copy(const uint8_t *p, size_t n, gguf_ctx **c, qlm_err *e)
{
    uint8_t *q = malloc(n ? n : 1);
    if (n) memcpy(q, p, n);
    memset(e, 0, sizeof *e);
    int rc = gguf_open_mem(c, n ? q : NULL, n, e);
    if (rc) free(q);  /* else close_copy frees it through c->base */
    return rc;
}

static void close_copy(gguf_ctx *c)
{
    if (!c) return;
    void *q = (void *)c->base;
    gguf_close(c);
    free(q);
}

static size_t find(const buf *b, const char *s)
{
    size_t l = strlen(s);
    for (size_t i = 0; i + l <= b->n; i++)
        if (!memcmp(b->p + i, s, l)) return i;
    fprintf(stderr, "test_gguf: pattern '%s' not found\n", s);
    abort();
}

static void put_le(uint8_t *p, uint64_t v, int width)
{
    for (int i = 0; i < width; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int width)
{
    uint64_t v = 0;
    for (int i = width - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Raw builder for files the writer refuses to make. */
static void rb_put(buf *b, const void *s, size_t n)
{
    b->p = realloc(b->p, b->n + n + 1);
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
}

static void rb_int(buf *b, uint64_t v, int width)
{
    uint8_t q[8];
    put_le(q, v, width);
    rb_put(b, q, (size_t)width);
}

static void rb_str(buf *b, const char *s, size_t n)
{
    rb_int(b, n, 8);
    rb_put(b, s, n);
}

static void rb_header(buf *b, uint64_t n_tensors, uint64_t n_kv)
{
    rb_put(b, "GGUF", 4);
    rb_int(b, 3, 4);
    rb_int(b, n_tensors, 8);
    rb_int(b, n_kv, 8);
}

static void rb_pad(buf *b, size_t a)
{
    while (b->n % a)
        rb_int(b, 0, 1);
}

/* ---- the valid file every malformed case starts from ---- */

static buf make_base(void)
{
    gguf_writer *w = gguf_writer_new();
    gguf_w_str(w, "general.architecture", "llama");
    gguf_w_u32(w, "general.alignment", 32);
    gguf_w_str(w, "m.str", "hello");
    gguf_w_u32(w, "m.u32", 7);
    gguf_w_bool(w, "m.bool", true);
    uint32_t a[3] = {1, 2, 3};
    gguf_w_arr(w, "m.arr", GGUF_UINT32, a, 3);
    const char *sa[2] = {"a", "bc"};
    gguf_w_arr_str(w, "m.sarr", sa, 2);
    uint8_t n0[2] = {1, 2}, n1[1] = {3};
    gguf_value inner[2] = {{.type = GGUF_ARRAY}, {.type = GGUF_ARRAY}};
    inner[0].arr.type = GGUF_UINT8, inner[0].arr.n = 2, inner[0].arr.data = n0;
    inner[1].arr.type = GGUF_UINT8, inner[1].arr.n = 1, inner[1].arr.data = n1;
    gguf_value nest = {.type = GGUF_ARRAY};
    nest.arr.type = GGUF_ARRAY, nest.arr.n = 2, nest.arr.vals = inner;
    gguf_w_value(w, "m.nest", &nest);
    gguf_w_u32(w, "m.dup1", 1);
    gguf_w_u32(w, "m.dup2", 2);
    float fa[8] = {1, 2, 3, 4, 5, 6, 7, 8}, fc[3] = {9, 10, 11};
    uint8_t q8[34];
    for (int i = 0; i < 34; i++) q8[i] = (uint8_t)i;
    gguf_w_tensor(w, "t.a", QT_F32, 2, (int64_t[]){4, 2}, fa);
    gguf_w_tensor(w, "t.b", QT_Q8_0, 1, (int64_t[]){32}, q8);
    gguf_w_tensor(w, "t.c", QT_F32, 1, (int64_t[]){3}, fc);
    buf b = {0};
    void *p;
    qlm_err e;
    if (gguf_w_to_mem(w, &p, &b.n, &e)) {
        fprintf(stderr, "test_gguf: base file: %s\n", e.msg);
        abort();
    }
    b.p = p;
    gguf_writer_free(w);
    return b;
}

/* ---- malformed cases ---- */

enum { NONE, ABS, LEN, AFTER };

typedef struct field {
    int rel;           /* ABS: offset; LEN: length field of `at`; AFTER: end of `at` + delta */
    const char *at;
    int64_t delta;
    int width;
    uint64_t value;
} field;

typedef struct mcase {
    const char *name;
    const char *expect;    /* substring of the error message */
    field f[2];
    void (*fn)(buf *b);
} mcase;

static void mk_empty(buf *b) { b->n = 0; }

static void rename_str(buf *b, const char *from, const char *to)
{
    memcpy(b->p + find(b, from), to, strlen(to));
}

static void mk_dup_key(buf *b) { rename_str(b, "m.dup2", "m.dup1"); }
static void mk_dup_tensor(buf *b) { rename_str(b, "t.c", "t.a"); }

static void mk_misaligned(buf *b)
{
    uint8_t *p = b->p + find(b, "t.c") + 3 + 16;
    put_le(p, get_le(p, 8) + 4, 8);
}

static void cut_at(buf *b, const char *s, int64_t delta)
{
    b->n = (size_t)((int64_t)find(b, s) + delta);
}

static void mk_trunc_header(buf *b) { b->n = 13; }
static void mk_trunc_kv(buf *b) { cut_at(b, "m.dup2", 8); }
static void mk_trunc_str(buf *b) { cut_at(b, "bc", 1); }
static void mk_trunc_nested(buf *b) { cut_at(b, "m.nest", 6 + 4 + 4 + 8 + 4 + 8 + 1); }
static void mk_trunc_table(buf *b) { cut_at(b, "t.c", 7); }

static void mk_trunc_data(buf *b)
{
    gguf_ctx *c;
    qlm_err e;
    open_copy(b->p, b->n, &c, &e);
    b->n = (size_t)(c->data_offset + gguf_find_tensor(c, "t.c")->offset + 6);
    close_copy(c);
}

static void mk_raw_long_key(buf *b)
{
    free(b->p);
    *b = (buf){0};
    rb_header(b, 0, 1);
    char *k = malloc(65536);
    memset(k, 'k', 65536);
    rb_str(b, k, 65536);
    free(k);
    rb_int(b, GGUF_UINT32, 4);
    rb_int(b, 1, 4);
}

static void mk_raw_deep(buf *b)
{
    free(b->p);
    *b = (buf){0};
    rb_header(b, 0, 1);
    rb_str(b, "deep", 4);
    rb_int(b, GGUF_ARRAY, 4);
    for (int i = 0; i < 100; i++) {
        rb_int(b, GGUF_ARRAY, 4);
        rb_int(b, 1, 8);
    }
    rb_int(b, GGUF_UINT8, 4);
    rb_int(b, 0, 8);
}

static void raw_tensor_file(buf *b, size_t name_len)
{
    free(b->p);
    *b = (buf){0};
    rb_header(b, 1, 0);
    char name[128];
    memset(name, 'x', sizeof name);
    rb_str(b, name, name_len);
    rb_int(b, 1, 4);
    rb_int(b, 1, 8);
    rb_int(b, QT_F32, 4);
    rb_int(b, 0, 8);
    rb_pad(b, 32);
    rb_int(b, 0x3f800000, 4);
}

static void mk_raw_long_name(buf *b) { raw_tensor_file(b, 65); }

static void mk_bool_array(buf *b)
{
    free(b->p);
    *b = (buf){0};
    rb_header(b, 0, 1);
    rb_str(b, "flags", 5);
    rb_int(b, GGUF_ARRAY, 4);
    rb_int(b, GGUF_BOOL, 4);
    rb_int(b, 3, 8);
    rb_put(b, "\1\0\7", 3);
}

#define HUGE63 (UINT64_C(1) << 63)
#define F(rel, at, d, w, v) {rel, at, d, w, v}

static const mcase cases[] = {
    {"empty", "empty", {{0}}, mk_empty},
    {"bad_magic", "not a GGUF file", {F(ABS, 0, 0, 4, 0x46554758)}, 0},
    {"version_1", "unsupported GGUF version 1", {F(ABS, 0, 4, 4, 1)}, 0},
    {"version_99", "unsupported GGUF version 99", {F(ABS, 0, 4, 4, 99)}, 0},
    {"version_0", "unsupported GGUF version 0", {F(ABS, 0, 4, 4, 0)}, 0},
    {"version_big_endian", "big-endian", {F(ABS, 0, 4, 4, 0x03000000)}, 0},
    {"tensor_count_huge", "tensor count", {F(ABS, 0, 8, 8, UINT64_C(1) << 62)}, 0},
    {"tensor_count_max", "tensor count", {F(ABS, 0, 8, 8, UINT64_MAX)}, 0},
    {"tensor_count_plus_one", "", {F(ABS, 0, 8, 8, 4)}, 0},
    {"kv_count_huge", "metadata count", {F(ABS, 0, 16, 8, UINT64_C(1) << 62)}, 0},
    {"kv_count_max", "metadata count", {F(ABS, 0, 16, 8, UINT64_MAX)}, 0},
    {"kv_count_plus_one", "", {F(ABS, 0, 16, 8, 11)}, 0},
    {"kv_count_zero", "", {F(ABS, 0, 16, 8, 0)}, 0},
    {"key_len_huge", "exceeds", {F(LEN, "general.architecture", 0, 8, HUGE63)}, 0},
    {"key_len_max", "exceeds", {F(LEN, "general.architecture", 0, 8, UINT64_MAX)}, 0},
    {"key_len_past_end", "exceeds", {F(LEN, "m.dup2", 0, 8, 100000)}, 0},
    {"key_too_long", "limit", {{0}}, mk_raw_long_key},
    {"str_len_huge", "exceeds", {F(LEN, "hello", 0, 8, HUGE63)}, 0},
    {"str_len_max", "exceeds", {F(LEN, "hello", 0, 8, UINT64_MAX)}, 0},
    {"str_len_past_end", "exceeds", {F(LEN, "hello", 0, 8, 1000000)}, 0},
    {"value_type_unknown", "unknown value type 99", {F(AFTER, "m.u32", 0, 4, 99)}, 0},
    {"value_type_13", "unknown value type 13", {F(AFTER, "m.u32", 0, 4, 13)}, 0},
    {"value_type_max", "unknown value type", {F(AFTER, "m.u32", 0, 4, UINT32_MAX)}, 0},
    {"array_elem_type_unknown", "unknown array element type 77", {F(AFTER, "m.arr", 4, 4, 77)}, 0},
    {"array_len_huge", "cannot fit", {F(AFTER, "m.arr", 8, 8, UINT64_C(1) << 62)}, 0},
    {"array_len_max", "cannot fit", {F(AFTER, "m.arr", 8, 8, UINT64_MAX)}, 0},
    {"array_len_past_end", "cannot fit", {F(AFTER, "m.arr", 8, 8, 1000000)}, 0},
    {"string_array_len_huge", "cannot fit", {F(AFTER, "m.sarr", 8, 8, UINT64_C(1) << 61)}, 0},
    {"string_array_elem_len_huge", "m.sarr'[0]", {F(AFTER, "m.sarr", 16, 8, HUGE63)}, 0},
    {"nested_array_len_huge", "m.nest'[0]", {F(AFTER, "m.nest", 20, 8, UINT64_C(1) << 60)}, 0},
    {"nested_elem_type_unknown", "unknown array element type", {F(AFTER, "m.nest", 16, 4, 42)}, 0},
    {"nested_too_deep", "nested deeper", {{0}}, mk_raw_deep},
    {"bool_value_2", "bool value 2", {F(AFTER, "m.bool", 4, 1, 2)}, 0},
    {"bool_array_value_7", "'flags'[2]: bool value 7", {{0}}, mk_bool_array},
    {"dup_key", "duplicate key", {{0}}, mk_dup_key},
    {"alignment_0", "power of two", {F(AFTER, "general.alignment", 4, 4, 0)}, 0},
    {"alignment_3", "power of two", {F(AFTER, "general.alignment", 4, 4, 3)}, 0},
    {"alignment_int32", "must be uint32", {F(AFTER, "general.alignment", 0, 4, GGUF_INT32)}, 0},
    {"tensor_name_len_huge", "exceeds", {F(LEN, "t.a", 0, 8, HUGE63)}, 0},
    {"tensor_name_too_long", "limit", {{0}}, mk_raw_long_name},
    {"tensor_ndims_5", "5 dimensions", {F(AFTER, "t.a", 0, 4, 5)}, 0},
    {"tensor_ndims_max", "dimensions", {F(AFTER, "t.a", 0, 4, UINT32_MAX)}, 0},
    {"tensor_dim_zero", "dimension 0 is 0", {F(AFTER, "t.a", 4, 8, 0)}, 0},
    {"tensor_dim_negative", "dimension 1 is -1", {F(AFTER, "t.a", 12, 8, UINT64_MAX)}, 0},
    {"tensor_nelem_overflow", "overflows int64",
     {F(AFTER, "t.a", 4, 8, UINT64_C(1) << 32), F(AFTER, "t.a", 12, 8, UINT64_C(1) << 32)}, 0},
    {"tensor_bytes_overflow", "byte size overflows",
     {F(AFTER, "t.a", 4, 8, UINT64_C(1) << 62), F(AFTER, "t.a", 12, 8, 1)}, 0},
    {"tensor_too_big_for_file", "past the end", {F(AFTER, "t.a", 4, 8, UINT64_C(1) << 40)}, 0},
    {"tensor_type_unknown", "tensor 't.a': unknown type id 77", {F(AFTER, "t.a", 20, 4, 77)}, 0},
    {"tensor_type_removed", "unknown type id 4", {F(AFTER, "t.a", 20, 4, 4)}, 0},
    {"tensor_type_max", "unknown type id", {F(AFTER, "t.a", 20, 4, UINT32_MAX)}, 0},
    {"tensor_block_mismatch", "block size", {F(AFTER, "t.b", 4, 8, 48)}, 0},
    {"tensor_offset_past_end", "past the end", {F(AFTER, "t.c", 16, 8, UINT64_C(1) << 40)}, 0},
    {"tensor_offset_overflow", "past the end", {F(AFTER, "t.c", 16, 8, UINT64_MAX - 31)}, 0},
    {"tensor_misaligned", "alignment", {{0}}, mk_misaligned},
    {"tensor_overlap", "overlaps", {F(AFTER, "t.c", 16, 8, 0)}, 0},
    {"tensor_dup_name", "duplicate tensor name", {{0}}, mk_dup_tensor},
    {"truncated_header", "truncated", {{0}}, mk_trunc_header},
    {"truncated_kv", "truncated", {{0}}, mk_trunc_kv},
    {"truncated_string", "exceeds", {{0}}, mk_trunc_str},
    {"truncated_nested", "", {{0}}, mk_trunc_nested},
    {"truncated_table", "truncated", {{0}}, mk_trunc_table},
    {"truncated_data", "past the end", {{0}}, mk_trunc_data},
};
#define N_CASES (sizeof cases / sizeof cases[0])

static buf build_case(const buf *base, const mcase *mc)
{
    buf b = {malloc(base->n), base->n};
    memcpy(b.p, base->p, base->n);
    for (int i = 0; i < 2; i++) {
        const field *f = &mc->f[i];
        size_t pos;
        if (f->rel == ABS) pos = (size_t)f->delta;
        else if (f->rel == LEN) pos = find(&b, f->at) - 8;
        else if (f->rel == AFTER) pos = find(&b, f->at) + strlen(f->at) + (size_t)f->delta;
        else continue;
        put_le(b.p + pos, f->value, f->width);
    }
    if (mc->fn) mc->fn(&b);
    return b;
}

static void test_malformed(const buf *base)
{
    for (size_t i = 0; i < N_CASES; i++) {
        char name[96];
        snprintf(name, sizeof name, "malformed %s", cases[i].name);
        TEST_BEGIN(name);
        buf b = build_case(base, &cases[i]);
        gguf_ctx *c = NULL;
        qlm_err e;
        int rc = open_copy(b.p, b.n, &c, &e);
        CHECK(rc == QLM_ELOAD, "expected QLM_ELOAD, got %d (%s)", rc, rc ? e.msg : "loaded");
        if (getenv("TEST_GGUF_SHOW")) fprintf(stderr, "%-28s %s\n", cases[i].name, rc ? e.msg : "");
        if (rc) {
            CHECK(one_line(e.msg), "message not a single printable line: '%s'", e.msg);
            CHECK(strstr(e.msg, cases[i].expect), "message '%s' lacks '%s'", e.msg, cases[i].expect);
            CHECK(c == NULL, "context set on failure");
        }
        close_copy(rc ? NULL : c);
        free(b.p);
        TEST_END();
    }
}

/* Every prefix of a valid file that cuts into the header, metadata, tensor
 * table or any tensor's bytes must be refused; longer ones only drop
 * trailing padding and must load. */
static void test_truncation(const buf *base)
{
    TEST_BEGIN("truncated at every byte");
    gguf_ctx *c;
    qlm_err e;
    CHECK(open_copy(base->p, base->n, &c, &e) == 0, "base: %s", e.msg);
    uint64_t end = 0;
    for (uint64_t i = 0; i < c->n_tensors; i++) {
        uint64_t x = c->data_offset + c->tensors[i].offset + c->tensors[i].nbytes;
        if (x > end) end = x;
    }
    close_copy(c);
    for (size_t cut = 0; cut <= base->n; cut++) {
        int rc = open_copy(base->p, cut, &c, &e);
        if (cut < end) {
            CHECK(rc == QLM_ELOAD, "cut at %zu: got %d", cut, rc);
            if (rc) CHECK(one_line(e.msg), "cut at %zu: message '%s'", cut, e.msg);
        } else {
            CHECK(rc == 0, "cut at %zu (only padding lost): %s", cut, e.msg);
        }
        close_copy(rc ? NULL : c);
    }
    TEST_END();
}

/* Random byte damage in the metadata and table: whatever loads must still
 * describe only memory inside the file. */
static void test_fuzz(const buf *base)
{
    TEST_BEGIN("random corruption");
    uint64_t s = 0x9e3779b97f4a7c15u;
    gguf_ctx *c;
    qlm_err e;
    open_copy(base->p, base->n, &c, &e);
    size_t head = (size_t)c->data_offset;
    close_copy(c);
    int loaded = 0;
    for (int it = 0; it < 4000; it++) {
        buf b = {malloc(base->n), base->n};
        memcpy(b.p, base->p, base->n);
        int flips = 1 + it % 4;
        for (int k = 0; k < flips; k++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            size_t pos = 4 + (size_t)(s % (head - 4));
            b.p[pos] = it & 1 ? (uint8_t)(s >> 32) : b.p[pos] ^ (uint8_t)(1u << (s >> 40) % 8);
        }
        int rc = open_copy(b.p, b.n, &c, &e);
        if (rc) {
            CHECK(rc == QLM_ELOAD, "iteration %d: code %d: %s", it, rc, e.msg);
            CHECK(one_line(e.msg), "iteration %d: message '%s'", it, e.msg);
        } else {
            loaded++;
            const uint8_t *lo = c->base, *hi = c->base + c->size;
            for (uint64_t i = 0; i < c->n_tensors; i++) {
                const gguf_tensor *t = &c->tensors[i];
                const uint8_t *d = t->data;
                CHECK(d >= lo && t->nbytes <= (uint64_t)(hi - d), "iteration %d: tensor out of file", it);
                char *nm = gguf_str_dup(t->name);
                CHECK(strlen(nm) != t->name.len || gguf_find_tensor(c, nm) == t,
                      "iteration %d: tensor lookup", it);
                free(nm);
            }
            for (uint64_t i = 0; i < c->n_kv; i++) {
                const gguf_value *v = &c->kv[i].val;
                if (v->type == GGUF_ARRAY && v->arr.type != GGUF_STRING && v->arr.type != GGUF_ARRAY)
                    for (uint64_t j = 0; j < v->arr.n; j++)
                        (void)gguf_arr_f64(v, j);
            }
            close_copy(c);
        }
        free(b.p);
    }
    CHECK(loaded > 0, "no corrupted file loaded at all: the mutator is too coarse");
    TEST_END();
}

/* ---- round trips ---- */

static gguf_value num_arr(gguf_vtype t, const void *data, uint64_t n)
{
    gguf_value v = {.type = GGUF_ARRAY};
    v.arr.type = t;
    v.arr.n = n;
    v.arr.data = data;
    return v;
}

static void test_roundtrip_values(void)
{
    TEST_BEGIN("round trip: scalar values");
    gguf_writer *w = gguf_writer_new();
    gguf_value v;
    v = (gguf_value){.type = GGUF_UINT8, .u64 = 200}; gguf_w_value(w, "s.u8", &v);
    v = (gguf_value){.type = GGUF_INT8, .i64 = -100}; gguf_w_value(w, "s.i8", &v);
    v = (gguf_value){.type = GGUF_UINT16, .u64 = 60000}; gguf_w_value(w, "s.u16", &v);
    v = (gguf_value){.type = GGUF_INT16, .i64 = -30000}; gguf_w_value(w, "s.i16", &v);
    gguf_w_u32(w, "s.u32", 4000000000u);
    gguf_w_i32(w, "s.i32", -2000000000);
    gguf_w_f32(w, "s.f32", 1.5e-5f);
    gguf_w_bool(w, "s.true", true);
    gguf_w_bool(w, "s.false", false);
    gguf_w_str(w, "s.str", "h\xc3\xa9llo \"q\"\n\\");
    v = (gguf_value){.type = GGUF_STRING, .str = {"a\0b", 3}}; gguf_w_value(w, "s.nul", &v);
    gguf_w_str(w, "s.empty", "");
    gguf_w_u64(w, "s.u64", UINT64_MAX);
    v = (gguf_value){.type = GGUF_INT64, .i64 = INT64_MIN}; gguf_w_value(w, "s.i64", &v);
    v = (gguf_value){.type = GGUF_FLOAT64, .f64 = 0.1}; gguf_w_value(w, "s.f64", &v);
    void *p;
    size_t n;
    qlm_err e;
    CHECK(gguf_w_to_mem(w, &p, &n, &e) == 0, "write: %s", e.msg);
    gguf_writer_free(w);
    gguf_ctx *c;
    CHECK(open_copy(p, n, &c, &e) == 0, "read: %s", e.msg);
    if (!t_case_failed) {
        const gguf_kv *kv;
        CHECK(c->version == 3 && c->n_kv == 15 && c->n_tensors == 0, "header");
        CHECK(c->alignment == 32 && c->data_offset % 32 == 0, "alignment default");
        CHECK((kv = gguf_find(c, "s.u8")) && kv->val.type == GGUF_UINT8 && kv->val.u64 == 200, "u8");
        CHECK((kv = gguf_find(c, "s.i8")) && kv->val.type == GGUF_INT8 && kv->val.i64 == -100, "i8");
        CHECK((kv = gguf_find(c, "s.u16")) && kv->val.type == GGUF_UINT16 && kv->val.u64 == 60000, "u16");
        CHECK((kv = gguf_find(c, "s.i16")) && kv->val.type == GGUF_INT16 && kv->val.i64 == -30000, "i16");
        CHECK((kv = gguf_find(c, "s.u32")) && kv->val.type == GGUF_UINT32 && kv->val.u64 == 4000000000u, "u32");
        CHECK((kv = gguf_find(c, "s.i32")) && kv->val.type == GGUF_INT32 && kv->val.i64 == -2000000000, "i32");
        CHECK((kv = gguf_find(c, "s.f32")) && kv->val.type == GGUF_FLOAT32 && (float)kv->val.f64 == 1.5e-5f, "f32");
        CHECK((kv = gguf_find(c, "s.true")) && kv->val.type == GGUF_BOOL && kv->val.b, "bool true");
        CHECK((kv = gguf_find(c, "s.false")) && kv->val.type == GGUF_BOOL && !kv->val.b, "bool false");
        CHECK((kv = gguf_find(c, "s.str")) && kv->val.type == GGUF_STRING &&
              gguf_str_eq(kv->val.str, "h\xc3\xa9llo \"q\"\n\\"), "string");
        CHECK((kv = gguf_find(c, "s.nul")) && kv->val.str.len == 3 && !memcmp(kv->val.str.ptr, "a\0b", 3),
              "string with NUL");
        CHECK((kv = gguf_find(c, "s.empty")) && kv->val.str.len == 0 && gguf_str_eq(kv->val.str, ""), "empty string");
        CHECK((kv = gguf_find(c, "s.u64")) && kv->val.type == GGUF_UINT64 && kv->val.u64 == UINT64_MAX, "u64");
        CHECK((kv = gguf_find(c, "s.i64")) && kv->val.type == GGUF_INT64 && kv->val.i64 == INT64_MIN, "i64");
        CHECK((kv = gguf_find(c, "s.f64")) && kv->val.type == GGUF_FLOAT64 && kv->val.f64 == 0.1, "f64");
        CHECK(!gguf_find(c, "s.missing") && !gguf_find(c, "s.u3") && !gguf_find(c, "s.u320"), "missing keys");
        CHECK(c->kv[0].val.type == GGUF_UINT8 && gguf_str_eq(c->kv[0].key, "s.u8"), "file order kept");

        /* typed getters: widen integers that fit, refuse the rest */
        uint32_t u;
        int64_t i;
        float f;
        bool b;
        gguf_str s;
        CHECK(gguf_get_u32(c, "s.u8", &u) && u == 200, "get_u32 from u8");
        CHECK(gguf_get_u32(c, "s.u32", &u) && u == 4000000000u, "get_u32");
        CHECK(!gguf_get_u32(c, "s.i8", &u), "get_u32 of a negative");
        CHECK(!gguf_get_u32(c, "s.u64", &u), "get_u32 of a too-big u64");
        CHECK(!gguf_get_u32(c, "s.f32", &u) && !gguf_get_u32(c, "s.str", &u), "get_u32 of non-integers");
        CHECK(!gguf_get_u32(c, "nope", &u), "get_u32 missing");
        CHECK(gguf_get_i64(c, "s.i64", &i) && i == INT64_MIN, "get_i64");
        CHECK(gguf_get_i64(c, "s.i16", &i) && i == -30000, "get_i64 from i16");
        CHECK(gguf_get_i64(c, "s.u32", &i) && i == 4000000000, "get_i64 from u32");
        CHECK(!gguf_get_i64(c, "s.u64", &i), "get_i64 of UINT64_MAX");
        CHECK(gguf_get_f32(c, "s.f32", &f) && f == 1.5e-5f, "get_f32");
        CHECK(gguf_get_f32(c, "s.f64", &f) && f == 0.1f, "get_f32 from f64");
        CHECK(!gguf_get_f32(c, "s.u8", &f), "get_f32 of an integer");
        CHECK(gguf_get_bool(c, "s.true", &b) && b, "get_bool");
        CHECK(!gguf_get_bool(c, "s.u8", &b), "get_bool of an integer");
        CHECK(gguf_get_str(c, "s.str", &s) && s.len == 12, "get_str");
        CHECK(!gguf_get_str(c, "s.u8", &s), "get_str of an integer");
        char *d = gguf_str_dup(gguf_find(c, "s.str")->val.str);
        CHECK(d && !strcmp(d, "h\xc3\xa9llo \"q\"\n\\"), "str_dup");
        free(d);
        CHECK(!gguf_get_arr(c, "s.u8", GGUF_UINT8), "get_arr of a scalar");
        CHECK(!strcmp(gguf_vtype_name(GGUF_FLOAT64), "float64") && !strcmp(gguf_vtype_name(99), "unknown"),
              "vtype names");
        close_copy(c);
    }
    free(p);
    TEST_END();
}

static void test_roundtrip_arrays(void)
{
    TEST_BEGIN("round trip: arrays, nested arrays");
    gguf_writer *w = gguf_writer_new();
    static const uint8_t u8[] = {1, 2, 255};
    static const int8_t i8[] = {-128, 0, 127};
    static const uint16_t u16[] = {0, 65535};
    static const int16_t i16[] = {-32768, 32767};
    static const uint32_t u32[] = {0, 4294967295u, 7};
    static const int32_t i32[] = {INT32_MIN, -1, INT32_MAX};
    static const float f32[] = {0.5f, -2.0f, 1e-30f};
    static const uint8_t bl[] = {1, 0, 1};
    static const uint64_t u64[] = {UINT64_MAX, 0};
    static const int64_t i64[] = {INT64_MIN, 5};
    static const double f64[] = {1e300, -0.25};
    gguf_w_arr(w, "a.u8", GGUF_UINT8, u8, 3);
    gguf_w_arr(w, "a.i8", GGUF_INT8, i8, 3);
    gguf_w_arr(w, "a.u16", GGUF_UINT16, u16, 2);
    gguf_w_arr(w, "a.i16", GGUF_INT16, i16, 2);
    gguf_w_arr(w, "a.u32", GGUF_UINT32, u32, 3);
    gguf_w_arr(w, "a.i32", GGUF_INT32, i32, 3);
    gguf_w_arr(w, "a.f32", GGUF_FLOAT32, f32, 3);
    gguf_w_arr(w, "a.bool", GGUF_BOOL, bl, 3);
    gguf_w_arr(w, "a.u64", GGUF_UINT64, u64, 2);
    gguf_w_arr(w, "a.i64", GGUF_INT64, i64, 2);
    gguf_w_arr(w, "a.f64", GGUF_FLOAT64, f64, 2);
    gguf_w_arr(w, "a.empty", GGUF_UINT32, NULL, 0);
    const char *strs[] = {"hello", "", "w\xc3\xb6rld\n"};
    gguf_w_arr_str(w, "a.str", strs, 3);
    gguf_w_arr_str(w, "a.str_empty", NULL, 0);
    /* [[1,2,3],[4]] */
    static const uint32_t n0[] = {1, 2, 3}, n1[] = {4};
    gguf_value in[2] = {num_arr(GGUF_UINT32, n0, 3), num_arr(GGUF_UINT32, n1, 1)};
    gguf_value nest = num_arr(GGUF_ARRAY, NULL, 2);
    nest.arr.vals = in;
    gguf_w_value(w, "n.u32", &nest);
    /* [["a","b"],[]] */
    gguf_str sv[2] = {{"a", 1}, {"b", 1}};
    gguf_value sin[2] = {num_arr(GGUF_STRING, NULL, 2), num_arr(GGUF_STRING, NULL, 0)};
    sin[0].arr.strs = sv;
    gguf_value snest = num_arr(GGUF_ARRAY, NULL, 2);
    snest.arr.vals = sin;
    gguf_w_value(w, "n.str", &snest);
    /* [[[7]]] */
    static const int16_t seven[] = {7};
    gguf_value l2 = num_arr(GGUF_INT16, seven, 1);
    gguf_value l1 = num_arr(GGUF_ARRAY, NULL, 1);
    l1.arr.vals = &l2;
    gguf_value l0 = num_arr(GGUF_ARRAY, NULL, 1);
    l0.arr.vals = &l1;
    gguf_w_value(w, "n.deep", &l0);
    gguf_value enest = num_arr(GGUF_ARRAY, NULL, 0);
    gguf_w_value(w, "n.empty", &enest);

    void *p;
    size_t n;
    qlm_err e;
    CHECK(gguf_w_to_mem(w, &p, &n, &e) == 0, "write: %s", e.msg);
    gguf_writer_free(w);
    gguf_ctx *c;
    CHECK(open_copy(p, n, &c, &e) == 0, "read: %s", e.msg);
    if (!t_case_failed) {
        const gguf_value *a;
        CHECK((a = gguf_get_arr(c, "a.u8", GGUF_UINT8)) && a->arr.n == 3 && gguf_arr_i64(a, 2) == 255, "u8");
        CHECK((a = gguf_get_arr(c, "a.i8", GGUF_INT8)) && gguf_arr_i64(a, 0) == -128 && gguf_arr_i64(a, 2) == 127, "i8");
        CHECK((a = gguf_get_arr(c, "a.u16", GGUF_UINT16)) && gguf_arr_i64(a, 1) == 65535, "u16");
        CHECK((a = gguf_get_arr(c, "a.i16", GGUF_INT16)) && gguf_arr_i64(a, 0) == -32768, "i16");
        CHECK((a = gguf_get_arr(c, "a.u32", GGUF_UINT32)) && gguf_arr_i64(a, 1) == 4294967295, "u32");
        CHECK((a = gguf_get_arr(c, "a.i32", GGUF_INT32)) && gguf_arr_i64(a, 0) == INT32_MIN &&
              gguf_arr_i64(a, 1) == -1, "i32");
        CHECK((a = gguf_get_arr(c, "a.f32", GGUF_FLOAT32)) && gguf_arr_f64(a, 1) == -2.0 &&
              (float)gguf_arr_f64(a, 2) == 1e-30f && gguf_arr_i64(a, 1) == -2, "f32");
        CHECK((a = gguf_get_arr(c, "a.bool", GGUF_BOOL)) && gguf_arr_i64(a, 0) == 1 && gguf_arr_i64(a, 1) == 0, "bool");
        CHECK((a = gguf_get_arr(c, "a.u64", GGUF_UINT64)) && gguf_arr_i64(a, 0) == INT64_MAX &&
              gguf_arr_f64(a, 0) == 18446744073709551615.0, "u64 (saturating)");
        CHECK((a = gguf_get_arr(c, "a.i64", GGUF_INT64)) && gguf_arr_i64(a, 0) == INT64_MIN, "i64");
        CHECK((a = gguf_get_arr(c, "a.f64", GGUF_FLOAT64)) && gguf_arr_f64(a, 0) == 1e300 &&
              gguf_arr_i64(a, 0) == INT64_MAX, "f64");
        CHECK((a = gguf_get_arr(c, "a.empty", GGUF_UINT32)) && a->arr.n == 0 && gguf_arr_i64(a, 0) == 0, "empty");
        CHECK(!gguf_get_arr(c, "a.u8", GGUF_INT8), "element type must match");
        a = gguf_get_arr(c, "a.u32", GGUF_UINT32);
        CHECK(gguf_arr_i64(a, 3) == 0 && gguf_arr_f64(a, UINT64_MAX) == 0, "index past the end reads nothing");
        CHECK((a = gguf_get_arr(c, "a.str", GGUF_STRING)) && a->arr.n == 3 && gguf_str_eq(a->arr.strs[0], "hello") &&
              gguf_str_eq(a->arr.strs[1], "") && gguf_str_eq(a->arr.strs[2], "w\xc3\xb6rld\n"), "strings");
        CHECK(gguf_arr_i64(a, 0) == 0, "numeric read of a string array");
        CHECK((a = gguf_get_arr(c, "a.str_empty", GGUF_STRING)) && a->arr.n == 0, "empty strings");
        CHECK((a = gguf_get_arr(c, "n.u32", GGUF_ARRAY)) && a->arr.n == 2 && a->arr.vals[0].arr.type == GGUF_UINT32 &&
              a->arr.vals[0].arr.n == 3 && gguf_arr_i64(&a->arr.vals[0], 2) == 3 &&
              gguf_arr_i64(&a->arr.vals[1], 0) == 4 && a->arr.vals[1].arr.n == 1, "nested u32");
        CHECK((a = gguf_get_arr(c, "n.str", GGUF_ARRAY)) && a->arr.vals[0].arr.type == GGUF_STRING &&
              gguf_str_eq(a->arr.vals[0].arr.strs[1], "b") && a->arr.vals[1].arr.n == 0, "nested strings");
        CHECK((a = gguf_get_arr(c, "n.deep", GGUF_ARRAY)) && a->arr.vals[0].arr.type == GGUF_ARRAY &&
              a->arr.vals[0].arr.vals[0].arr.type == GGUF_INT16 &&
              gguf_arr_i64(&a->arr.vals[0].arr.vals[0], 0) == 7, "three levels");
        CHECK((a = gguf_get_arr(c, "n.empty", GGUF_ARRAY)) && a->arr.n == 0, "empty nested");

        /* copying every value into a second file reproduces the first */
        gguf_writer *w2 = gguf_writer_new();
        for (uint64_t i = 0; i < c->n_kv; i++) {
            char *k = gguf_str_dup(c->kv[i].key);
            gguf_w_value(w2, k, &c->kv[i].val);
            free(k);
        }
        void *p2;
        size_t n2;
        CHECK(gguf_w_to_mem(w2, &p2, &n2, &e) == 0, "copy: %s", e.msg);
        CHECK(n2 == n && !memcmp(p, p2, n), "copy differs from the original");
        free(p2);
        gguf_writer_free(w2);
        close_copy(c);
    }
    free(p);
    TEST_END();
}

typedef struct tdesc {
    const char *name;
    uint32_t type, n_dims;
    int64_t ne[4];
} tdesc;

static const tdesc tens[] = {
    {"token_embd.weight", QT_F32, 2, {7, 3}},
    {"blk.0.f16", QT_F16, 1, {16}},
    {"blk.0.attn_q.weight", QT_Q8_0, 2, {64, 2}},
    {"blk.0.ffn.q4k", QT_Q4_K, 4, {256, 1, 1, 2}},
    {"ids", QT_I32, 1, {5}},
};
#define N_TENS (sizeof tens / sizeof tens[0])

static uint64_t tens_bytes(const tdesc *t)
{
    const qt_traits *q = qt_get(t->type);
    int64_t nel = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) nel *= t->ne[d];
    return (uint64_t)(nel / q->block_size) * q->type_size;
}

static gguf_writer *tensor_writer(uint32_t alignment, uint8_t salt)
{
    gguf_writer *w = gguf_writer_new();
    gguf_w_str(w, "general.architecture", "test");
    if (alignment) gguf_w_u32(w, "general.alignment", alignment);
    for (size_t i = 0; i < N_TENS; i++) {
        size_t nb = (size_t)tens_bytes(&tens[i]);
        uint8_t *d = malloc(nb);
        for (size_t k = 0; k < nb; k++) d[k] = (uint8_t)(k * 7 + i + salt);
        gguf_w_tensor(w, tens[i].name, tens[i].type, tens[i].n_dims, tens[i].ne, d);
        free(d);  /* the writer copied it */
    }
    return w;
}

static void check_tensors(gguf_ctx *c, uint64_t alignment, uint8_t salt)
{
    CHECK(c->n_tensors == N_TENS, "tensor count %llu", (unsigned long long)c->n_tensors);
    CHECK(c->alignment == alignment, "alignment %llu", (unsigned long long)c->alignment);
    CHECK(c->data_offset % alignment == 0, "data section not aligned");
    for (size_t i = 0; i < N_TENS && !t_case_failed; i++) {
        const gguf_tensor *t = gguf_find_tensor(c, tens[i].name);
        CHECK(t == &c->tensors[i], "%s: not found in file order", tens[i].name);
        if (!t) continue;
        CHECK(t->type == tens[i].type && t->n_dims == tens[i].n_dims, "%s: type/dims", tens[i].name);
        for (uint32_t d = 0; d < 4; d++)
            CHECK(t->ne[d] == (d < tens[i].n_dims ? tens[i].ne[d] : 1), "%s: ne[%u]", tens[i].name, d);
        uint64_t nb = tens_bytes(&tens[i]);
        int64_t nel = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        CHECK(t->nbytes == nb && nb == qt_row_size(t->type, nel), "%s: nbytes", tens[i].name);
        CHECK(t->offset % alignment == 0, "%s: offset", tens[i].name);
        CHECK((uint64_t)((const uint8_t *)t->data - c->base) == c->data_offset + t->offset, "%s: data", tens[i].name);
        const uint8_t *d = t->data;
        bool same = true;
        for (size_t k = 0; k < nb; k++) same &= d[k] == (uint8_t)(k * 7 + i + salt);
        CHECK(same, "%s: data bytes differ", tens[i].name);
    }
    CHECK(!gguf_find_tensor(c, "nope") && !gguf_find_tensor(c, "ids2") && !gguf_find_tensor(c, NULL), "missing");
}

static void test_roundtrip_tensors(void)
{
    static const uint32_t aligns[] = {0, 1, 8, 64, 4096};
    for (size_t a = 0; a < sizeof aligns / sizeof aligns[0]; a++) {
        char name[64];
        snprintf(name, sizeof name, "round trip: tensors, alignment %u", aligns[a] ? aligns[a] : 32);
        TEST_BEGIN(name);
        gguf_writer *w = tensor_writer(aligns[a], 0);
        void *p;
        size_t n;
        qlm_err e;
        CHECK(gguf_w_to_mem(w, &p, &n, &e) == 0, "write: %s", e.msg);
        gguf_writer_free(w);
        gguf_ctx *c;
        CHECK(open_copy(p, n, &c, &e) == 0, "read: %s", e.msg);
        if (!t_case_failed) {
            check_tensors(c, aligns[a] ? aligns[a] : 32, 0);
            close_copy(c);
        }
        free(p);
        TEST_END();
    }
}

static void test_id(void)
{
    TEST_BEGIN("id covers header and table, not data");
    uint64_t ids[4];
    for (int k = 0; k < 4; k++) {
        gguf_writer *w = tensor_writer(0, k == 2 ? 9 : 0);
        if (k == 3) gguf_w_u32(w, "extra", 1);
        void *p;
        size_t n;
        qlm_err e;
        gguf_ctx *c;
        gguf_w_to_mem(w, &p, &n, &e);
        gguf_writer_free(w);
        ids[k] = open_copy(p, n, &c, &e) == 0 ? c->id : 0;
        if (ids[k]) close_copy(c);
        free(p);
    }
    CHECK(ids[0] && ids[0] == ids[1], "same file, different ids");
    CHECK(ids[0] == ids[2], "tensor data changed the id");
    CHECK(ids[0] != ids[3], "metadata change kept the id");
    TEST_END();
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) n++;
    if (d) closedir(d);
    return n;
}

static void test_files(void)
{
    TEST_BEGIN("save, open, errors on paths");
    char dir[] = "/tmp/test_gguf.XXXXXX";
    CHECK(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    char path[128], empty[128], bad[160];
    snprintf(path, sizeof path, "%s/m.gguf", dir);
    snprintf(empty, sizeof empty, "%s/empty.gguf", dir);
    snprintf(bad, sizeof bad, "%s/no/such/dir/m.gguf", dir);
    qlm_err e = {0};
    gguf_ctx *c = NULL;
    for (int round = 0; round < 2; round++) {  /* the second save replaces the file */
        gguf_writer *w = tensor_writer(64, (uint8_t)round);
        CHECK(gguf_w_save(w, path, &e) == 0, "save: %s", e.msg);
        gguf_writer_free(w);
        CHECK(gguf_open(&c, path, &e) == 0, "open: %s", e.msg);
        if (c) {
            CHECK(c->mapped, "not mapped");
            check_tensors(c, 64, (uint8_t)round);
            gguf_close(c);
        }
    }
    CHECK(count_entries(dir) == 1, "temporary files left behind");

    gguf_writer *w = tensor_writer(0, 0);
    CHECK(gguf_w_save(w, bad, &e) == QLM_ERUNTIME && strstr(e.msg, bad) && one_line(e.msg),
          "save into a missing folder: %s", e.msg);
    gguf_writer_free(w);
    CHECK(count_entries(dir) == 1, "failed save left a file");

    CHECK(gguf_open(&c, bad, &e) == QLM_ELOAD && strstr(e.msg, bad) && one_line(e.msg) && !c,
          "open missing: %s", e.msg);
    CHECK(gguf_open(&c, dir, &e) == QLM_ELOAD && strstr(e.msg, "not a regular file"), "open dir: %s", e.msg);
    FILE *f = fopen(empty, "w");
    if (f) fclose(f);
    CHECK(gguf_open(&c, empty, &e) == QLM_ELOAD && strstr(e.msg, "empty"), "open empty: %s", e.msg);
    f = fopen(empty, "w");
    if (f) {
        fwrite("GGUF\x63\0\0\0", 1, 8, f);
        fclose(f);
    }
    CHECK(gguf_open(&c, empty, &e) == QLM_ELOAD && strstr(e.msg, empty) && strstr(e.msg, "truncated"),
          "file error names the path: %s", e.msg);
    CHECK(gguf_open(&c, empty, NULL) == QLM_ELOAD, "NULL err");
    unlink(empty);
    unlink(path);
    rmdir(dir);
    TEST_END();
}

static void test_writer_refuses(void)
{
    TEST_BEGIN("writer refuses what the reader would");
    struct {
        const char *expect;
        int what;
    } cases[] = {
        {"duplicate key", 0}, {"power of two", 1}, {"unknown type id 77", 2}, {"block size", 3},
        {"duplicate tensor", 4}, {"bad shape", 5}, {"dimensions", 6}, {"does not fit uint8", 7},
        {"bool array", 8}, {"longer than", 9}, {"NULL string", 10}, {"nested deeper", 11},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        gguf_writer *w = gguf_writer_new();
        float d[64] = {0};
        int64_t ne1[1] = {16};
        gguf_w_u32(w, "x", 1);
        gguf_w_tensor(w, "t", QT_F32, 1, ne1, d);
        switch (cases[k].what) {
        case 0: gguf_w_str(w, "x", "again"); break;
        case 1: gguf_w_u32(w, "general.alignment", 48); break;
        case 2: gguf_w_tensor(w, "u", 77, 1, ne1, d); break;
        case 3: gguf_w_tensor(w, "u", QT_Q8_0, 1, ne1, d); break;
        case 4: gguf_w_tensor(w, "t", QT_F32, 1, ne1, d); break;
        case 5: gguf_w_tensor(w, "u", QT_F32, 2, (int64_t[]){4, 0}, d); break;
        case 6: gguf_w_tensor(w, "u", QT_F32, 5, (int64_t[]){1, 1, 1, 1, 1}, d); break;
        case 7: gguf_w_value(w, "y", &(gguf_value){.type = GGUF_UINT8, .u64 = 256}); break;
        case 8: gguf_w_arr(w, "y", GGUF_BOOL, "\2", 1); break;
        case 9: gguf_w_tensor(w, "0123456789012345678901234567890123456789012345678901234567890123",
                              QT_F32, 1, ne1, d); break;
        case 10: gguf_w_str(w, "y", NULL); break;
        case 11: {
            gguf_value lv[10];
            lv[9] = num_arr(GGUF_UINT8, d, 1);
            for (int i = 8; i >= 0; i--) {
                lv[i] = num_arr(GGUF_ARRAY, NULL, 1);
                lv[i].arr.vals = &lv[i + 1];
            }
            gguf_w_value(w, "y", &lv[0]);
            break;
        }
        }
        gguf_w_u32(w, "later", 2);  /* ignored after the first error */
        void *p = (void *)1;
        size_t n = 1;
        qlm_err e = {0};
        int rc = gguf_w_to_mem(w, &p, &n, &e);
        CHECK(rc == QLM_ERUNTIME && p == NULL && n == 0, "case %zu: rc %d", k, rc);
        CHECK(strstr(e.msg, cases[k].expect) && one_line(e.msg), "case %zu: message '%s'", k, e.msg);
        CHECK(gguf_w_status(w, NULL) == QLM_ERUNTIME, "case %zu: status", k);
        gguf_writer_free(w);
    }
    qlm_err e;
    void *p;
    size_t n;
    gguf_w_u32(NULL, "x", 1);
    gguf_w_tensor(NULL, "t", QT_F32, 0, NULL, NULL);
    CHECK(gguf_w_to_mem(NULL, &p, &n, &e) == QLM_ERUNTIME, "NULL writer");
    gguf_writer_free(NULL);
    gguf_close(NULL);

    /* a scalar tensor (no dims) and an empty file are fine */
    gguf_writer *w = gguf_writer_new();
    float one = 1;
    gguf_w_tensor(w, "scalar", QT_F32, 0, NULL, &one);
    CHECK(gguf_w_to_mem(w, &p, &n, &e) == 0, "scalar: %s", e.msg);
    gguf_ctx *c;
    CHECK(open_copy(p, n, &c, &e) == 0, "scalar read: %s", e.msg);
    if (!t_case_failed) {
        CHECK(c->tensors[0].n_dims == 0 && c->tensors[0].nbytes == 4, "scalar shape");
        close_copy(c);
    }
    free(p);
    gguf_writer_free(w);
    w = gguf_writer_new();
    CHECK(gguf_w_to_mem(w, &p, &n, &e) == 0 && n == 32, "empty file: %zu bytes", n);
    CHECK(open_copy(p, n, &c, &e) == 0 && c->n_kv == 0 && c->n_tensors == 0, "empty read: %s", e.msg);
    close_copy(c);
    free(p);
    gguf_writer_free(w);
    TEST_END();
}

/* Files the writer will not make but the spec allows. */
static void test_raw_valid(void)
{
    TEST_BEGIN("raw files at the spec limits load");
    buf b = {0};
    raw_tensor_file(&b, 64);  /* names may be 64 bytes */
    gguf_ctx *c;
    qlm_err e;
    CHECK(open_copy(b.p, b.n, &c, &e) == 0, "64-byte name: %s", e.msg);
    close_copy(c);
    free(b.p);

    /* version 2, a data section cut short with no tensors, bool array */
    b = (buf){0};
    rb_put(&b, "GGUF", 4);
    rb_int(&b, 2, 4);
    rb_int(&b, 0, 8);
    rb_int(&b, 1, 8);
    rb_str(&b, "flags", 5);
    rb_int(&b, GGUF_ARRAY, 4);
    rb_int(&b, GGUF_BOOL, 4);
    rb_int(&b, 2, 8);
    rb_put(&b, "\1\0", 2);
    CHECK(open_copy(b.p, b.n, &c, &e) == 0, "v2: %s", e.msg);
    if (c) {
        CHECK(c->version == 2 && gguf_get_arr(c, "flags", GGUF_BOOL), "v2 contents");
        close_copy(c);
    }
    free(b.p);
    TEST_END();
}

/* Real files written by llama.cpp's converters: they must load, and
 * copying their metadata through the writer must reproduce their bytes. */
static void test_real_files(void)
{
    const char *dir = "tests/data/vocab";
    DIR *d = opendir(dir);
    if (!d) return;  /* run from somewhere other than the repo root */
    TEST_BEGIN("real vocab files load and re-write byte for byte");
    struct dirent *de;
    int seen = 0;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 5, ".gguf")) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        gguf_ctx *c;
        qlm_err e;
        CHECK(gguf_open(&c, path, &e) == 0, "%s", e.msg);
        if (!c) continue;
        seen++;
        CHECK(gguf_get_arr(c, "tokenizer.ggml.tokens", GGUF_STRING), "%s: no tokens", path);
        gguf_writer *w = gguf_writer_new();
        for (uint64_t i = 0; i < c->n_kv; i++) {
            char *k = gguf_str_dup(c->kv[i].key);
            gguf_w_value(w, k, &c->kv[i].val);
            free(k);
        }
        for (uint64_t i = 0; i < c->n_tensors; i++) {
            const gguf_tensor *t = &c->tensors[i];
            char *k = gguf_str_dup(t->name);
            gguf_w_tensor_ref(w, k, t->type, t->n_dims, t->ne, t->data);
            free(k);
        }
        void *p;
        size_t n;
        CHECK(gguf_w_to_mem(w, &p, &n, &e) == 0, "%s: rewrite: %s", path, e.msg);
        /* llama.cpp may leave off the final padding; we always write it */
        if (p) CHECK(n >= c->size && !memcmp(p, c->base, c->size), "%s: rewrite differs", path);
        free(p);
        gguf_writer_free(w);
        gguf_close(c);
    }
    closedir(d);
    CHECK(seen > 0, "no .gguf files in %s", dir);
    TEST_END();
}

static bool write_file(const char *dir, const char *name, const buf *b)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.gguf", dir, name);
    FILE *f = fopen(path, "wb");
    bool ok = f && (!b->n || fwrite(b->p, 1, b->n, f) == b->n);
    if (f && fclose(f) != 0) ok = false;
    if (!ok) fprintf(stderr, "test_gguf: %s: %s\n", path, strerror(errno));
    return ok;
}

static int write_malformed(const char *dir)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "test_gguf: %s: %s\n", dir, strerror(errno));
        return 1;
    }
    buf base = make_base();
    bool ok = write_file(dir, "valid", &base);
    for (size_t i = 0; i < N_CASES && ok; i++) {
        buf b = build_case(&base, &cases[i]);
        ok = write_file(dir, cases[i].name, &b);
        free(b.p);
    }
    free(base.p);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--write-malformed")) return write_malformed(argv[2]);
    if (argc != 1) {
        fprintf(stderr, "usage: test_gguf [--write-malformed DIR]\n");
        return 2;
    }
    buf base = make_base();
    test_roundtrip_values();
    test_roundtrip_arrays();
    test_roundtrip_tensors();
    test_id();
    test_files();
    test_writer_refuses();
    test_raw_valid();
    test_real_files();
    test_malformed(&base);
    test_truncation(&base);
    test_fuzz(&base);
    free(base.p);
    TEST_EXIT();
}
