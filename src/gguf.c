/* gguf.c - GGUF v2/v3 reader.
 *
 * The file is hostile until proven otherwise: each read is checked against
 * the bytes left, each count is checked against what those bytes could hold
 * before anything is allocated (so memory stays linear in the file size),
 * and every arithmetic step on file values is overflow-checked.  Values are
 * decoded byte by byte, so neither host endianness nor alignment matters. */
#include "gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "ggml-lite/arena.h"
#include "quant/types.h"

#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_HEADER_SIZE 24     /* magic, version, n_tensors, n_kv */
#define GGUF_MAX_KEY 65535      /* spec: keys are at most 2^16-1 bytes */
#define GGUF_MAX_NAME 64        /* spec: tensor names are at most 64 bytes */
#define GGUF_MAX_DEPTH 8        /* arrays of arrays; real files use 0 or 1 */
#define GGUF_MIN_KV 13          /* key length + type + smallest value */
#define GGUF_MIN_TENSOR 24      /* name length + n_dims + type + offset */

/* What callers see is pub; the lookup indexes stay private. */
typedef struct gguf_priv {
    gguf_ctx pub;
    const gguf_kv **kv_sorted;          /* by key, for dup checks and find */
    const gguf_tensor **t_sorted;       /* by name */
} gguf_priv;

typedef struct reader {
    const uint8_t *p;
    uint64_t size, pos;
    qlm_err *err;
    char what[112];                     /* "key 'x'" / "tensor 'y'" prefix */
    int nidx;                           /* array indices for the prefix */
    uint64_t idx[GGUF_MAX_DEPTH + 1];
} reader;

static const uint8_t vtype_size[] = {
    [GGUF_UINT8] = 1, [GGUF_INT8] = 1, [GGUF_UINT16] = 2, [GGUF_INT16] = 2,
    [GGUF_UINT32] = 4, [GGUF_INT32] = 4, [GGUF_FLOAT32] = 4, [GGUF_BOOL] = 1,
    [GGUF_STRING] = 0, [GGUF_ARRAY] = 0, [GGUF_UINT64] = 8, [GGUF_INT64] = 8,
    [GGUF_FLOAT64] = 8,
};

const char *gguf_vtype_name(gguf_vtype t)
{
    static const char *const names[] = {
        "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
        "bool", "string", "array", "uint64", "int64", "float64",
    };
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

static bool vtype_valid(uint32_t t) { return t <= GGUF_FLOAT64; }

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static int64_t sext(uint64_t v, int bytes)
{
    if (bytes == 8) return (int64_t)v;
    uint64_t sign = (uint64_t)1 << (bytes * 8 - 1);
    v &= (sign << 1) - 1;
    /* two's complement without relying on implementation-defined casts */
    return v & sign ? -(int64_t)((sign << 1) - v) : (int64_t)v;
}

static double f32_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static double f64_bits(uint64_t u)
{
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* Names from the file go into one-line messages: escape anything that is
 * not printable ASCII and cap the length. */
static const char *show(gguf_str s, char *buf, size_t cap)
{
    size_t o = 0;
    for (uint64_t i = 0; i < s.len; i++) {
        if (o + 8 >= cap) {
            memcpy(buf + o, "...", 4);
            return buf;
        }
        unsigned char c = (unsigned char)s.ptr[i];
        if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\')
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
    }
    buf[o] = 0;
    return buf;
}

static void set_what(reader *r, const char *kind, gguf_str name)
{
    char b[72];
    snprintf(r->what, sizeof r->what, "%s '%s'", kind, show(name, b, sizeof b));
    r->nidx = 0;
}

static bool fail(reader *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool fail(reader *r, int code, const char *fmt, ...)
{
    char prefix[200], msg[300];
    size_t o = (size_t)snprintf(prefix, sizeof prefix, "%s", r->what);
    for (int i = 0; i < r->nidx && o < sizeof prefix; i++)
        o += (size_t)snprintf(prefix + o, sizeof prefix - o, "[%llu]",
                              (unsigned long long)r->idx[i]);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (prefix[0])
        qlm_fail(r->err, code, "%s: %s", prefix, msg);
    else
        qlm_fail(r->err, code, "%s", msg);
    return false;
}

#define BAD(r, ...) fail((r), QLM_ELOAD, __VA_ARGS__)
#define OOM(r) fail((r), QLM_ERUNTIME, "out of memory")

static uint64_t left(const reader *r) { return r->size - r->pos; }

/* Hands out the next n bytes or reports which field ran off the end. */
static const uint8_t *take(reader *r, uint64_t n, const char *field)
{
    if (n > left(r)) {
        BAD(r, "truncated: %s needs %llu bytes at offset %llu, file has %llu left",
            field, (unsigned long long)n, (unsigned long long)r->pos,
            (unsigned long long)left(r));
        return NULL;
    }
    const uint8_t *q = r->p + r->pos;
    r->pos += n;
    return q;
}

static bool rd_u32(reader *r, uint32_t *v, const char *field)
{
    const uint8_t *q = take(r, 4, field);
    if (!q) return false;
    *v = (uint32_t)le(q, 4);
    return true;
}

static bool rd_u64(reader *r, uint64_t *v, const char *field)
{
    const uint8_t *q = take(r, 8, field);
    if (!q) return false;
    *v = le(q, 8);
    return true;
}

static bool rd_str(reader *r, gguf_str *s, uint64_t limit, const char *field)
{
    uint64_t n;
    if (!rd_u64(r, &n, field)) return false;
    if (n > left(r))
        return BAD(r, "%s length %llu exceeds the %llu bytes left in the file", field,
                   (unsigned long long)n, (unsigned long long)left(r));
    if (n > limit)
        return BAD(r, "%s length %llu exceeds the limit of %llu bytes", field,
                   (unsigned long long)n, (unsigned long long)limit);
    s->ptr = (const char *)r->p + r->pos;
    s->len = n;
    r->pos += n;
    return true;
}

/* Fewest bytes one element of type t can occupy: bounds array lengths
 * before we allocate for them. */
static uint64_t min_elem_size(gguf_vtype t)
{
    if (t == GGUF_STRING) return 8;
    if (t == GGUF_ARRAY) return 12;
    return vtype_size[t];
}

static bool read_array(reader *r, gguf_value *v, int depth);

/* Scalars are widened into the value; strings point into the file. */
static bool read_scalar(reader *r, gguf_vtype t, gguf_value *v)
{
    v->type = t;
    if (t == GGUF_STRING) return rd_str(r, &v->str, UINT64_MAX, "string");
    const uint8_t *q = take(r, vtype_size[t], gguf_vtype_name(t));
    if (!q) return false;
    uint64_t u = le(q, vtype_size[t]);
    switch (t) {
    case GGUF_UINT8: case GGUF_UINT16: case GGUF_UINT32: case GGUF_UINT64:
        v->u64 = u;
        break;
    case GGUF_INT8: case GGUF_INT16: case GGUF_INT32: case GGUF_INT64:
        v->i64 = sext(u, vtype_size[t]);
        break;
    case GGUF_FLOAT32: v->f64 = f32_bits((uint32_t)u); break;
    case GGUF_FLOAT64: v->f64 = f64_bits(u); break;
    case GGUF_BOOL:
        /* spec: anything but 0 or 1 is invalid */
        if (u > 1) return BAD(r, "bool value %llu is not 0 or 1", (unsigned long long)u);
        v->b = u != 0;
        break;
    default:
        return BAD(r, "unknown value type %u", (unsigned)t);
    }
    return true;
}

/* Reads an array body (element type, length, elements) into v. */
static bool read_array(reader *r, gguf_value *v, int depth)
{
    v->type = GGUF_ARRAY;
    if (depth > GGUF_MAX_DEPTH)
        return BAD(r, "arrays nested deeper than %d levels", GGUF_MAX_DEPTH);
    uint32_t et;
    uint64_t n;
    if (!rd_u32(r, &et, "array element type")) return false;
    if (!vtype_valid(et)) return BAD(r, "unknown array element type %u", et);
    if (!rd_u64(r, &n, "array length")) return false;
    uint64_t min = min_elem_size((gguf_vtype)et);
    if (n > left(r) / min)
        return BAD(r, "array of %llu %s elements cannot fit in the %llu bytes left",
                   (unsigned long long)n, gguf_vtype_name((gguf_vtype)et),
                   (unsigned long long)left(r));
    v->arr.type = (gguf_vtype)et;
    if (et != GGUF_STRING && et != GGUF_ARRAY) {
        const uint8_t *q = r->p + r->pos;
        if (et == GGUF_BOOL) {
            for (uint64_t i = 0; i < n; i++)
                if (q[i] > 1) {
                    r->idx[r->nidx++] = i;
                    return BAD(r, "bool value %u is not 0 or 1", q[i]);
                }
        }
        v->arr.data = q;
        v->arr.n = n;
        r->pos += n * min;
        return true;
    }
    if (n == 0) return true;
    if (n > SIZE_MAX / sizeof(gguf_value)) return OOM(r);
    int slot = r->nidx++;
    if (et == GGUF_STRING) {
        v->arr.strs = calloc((size_t)n, sizeof *v->arr.strs);
        if (!v->arr.strs) return OOM(r);
        v->arr.n = n;
        for (uint64_t i = 0; i < n; i++) {
            r->idx[slot] = i;
            if (!rd_str(r, &v->arr.strs[i], UINT64_MAX, "string")) return false;
        }
    } else {
        v->arr.vals = calloc((size_t)n, sizeof *v->arr.vals);
        if (!v->arr.vals) return OOM(r);
        v->arr.n = n;
        for (uint64_t i = 0; i < n; i++) {
            r->idx[slot] = i;
            if (!read_array(r, &v->arr.vals[i], depth + 1)) return false;
        }
    }
    r->nidx--;
    return true;
}

/* Also frees partly read values: calloc left untouched slots as UINT8. */
static void free_value(gguf_value *v)
{
    if (v->type != GGUF_ARRAY) return;
    if (v->arr.type == GGUF_STRING) free(v->arr.strs);
    if (v->arr.type == GGUF_ARRAY && v->arr.vals) {
        for (uint64_t i = 0; i < v->arr.n; i++)
            free_value(&v->arr.vals[i]);
        free(v->arr.vals);
    }
    v->arr.strs = NULL;
    v->arr.vals = NULL;
}

static int str_cmp(gguf_str a, gguf_str b)
{
    uint64_t n = a.len < b.len ? a.len : b.len;
    int c = n ? memcmp(a.ptr, b.ptr, (size_t)n) : 0;
    if (c) return c;
    return a.len < b.len ? -1 : a.len > b.len;
}

static int kv_cmp(const void *a, const void *b)
{
    return str_cmp((*(const gguf_kv *const *)a)->key, (*(const gguf_kv *const *)b)->key);
}

static int tensor_name_cmp(const void *a, const void *b)
{
    return str_cmp((*(const gguf_tensor *const *)a)->name, (*(const gguf_tensor *const *)b)->name);
}

static int tensor_off_cmp(const void *a, const void *b)
{
    const gguf_tensor *x = *(const gguf_tensor *const *)a, *y = *(const gguf_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static bool read_header(reader *r, gguf_ctx *c, uint64_t *n_kv, uint64_t *n_tensors)
{
    if (r->size >= 4 && memcmp(r->p, "GGUF", 4) != 0)
        return BAD(r, "not a GGUF file (magic %02x %02x %02x %02x)", r->p[0], r->p[1],
                   r->p[2], r->p[3]);
    if (r->size < GGUF_HEADER_SIZE)
        return BAD(r, "truncated: %llu bytes is too small for a GGUF header",
                   (unsigned long long)r->size);
    r->pos = 4;
    rd_u32(r, &c->version, "version");
    if (c->version != 2 && c->version != 3) {
        /* a byte-swapped small version has its low half zero */
        if (c->version >= 0x10000 && (c->version & 0xffff) == 0)
            return BAD(r, "unsupported GGUF version %u (big-endian file?)", c->version);
        return BAD(r, "unsupported GGUF version %u", c->version);
    }
    rd_u64(r, n_tensors, "tensor count");
    rd_u64(r, n_kv, "metadata count");
    if (*n_kv > left(r) / GGUF_MIN_KV)
        return BAD(r, "metadata count %llu is more than the %llu bytes left could hold",
                   (unsigned long long)*n_kv, (unsigned long long)left(r));
    if (*n_tensors > left(r) / GGUF_MIN_TENSOR)
        return BAD(r, "tensor count %llu is more than the %llu bytes left could hold",
                   (unsigned long long)*n_tensors, (unsigned long long)left(r));
    return true;
}

static bool read_kvs(reader *r, gguf_priv *P, uint64_t n)
{
    gguf_ctx *c = &P->pub;
    if (n == 0) return true;
    c->kv = calloc((size_t)n, sizeof *c->kv);
    P->kv_sorted = malloc((size_t)n * sizeof *P->kv_sorted);
    if (!c->kv || !P->kv_sorted) return OOM(r);
    for (uint64_t i = 0; i < n; i++) {
        gguf_kv *kv = &c->kv[i];
        uint32_t t;
        snprintf(r->what, sizeof r->what, "metadata entry %llu", (unsigned long long)i);
        r->nidx = 0;
        if (!rd_str(r, &kv->key, GGUF_MAX_KEY, "key")) return false;
        c->n_kv = i + 1;
        set_what(r, "key", kv->key);
        if (!rd_u32(r, &t, "value type")) return false;
        if (!vtype_valid(t)) return BAD(r, "unknown value type %u", t);
        bool ok = t == GGUF_ARRAY ? read_array(r, &kv->val, 1)
                                  : read_scalar(r, (gguf_vtype)t, &kv->val);
        if (!ok) return false;
        P->kv_sorted[i] = kv;
    }
    r->what[0] = 0;
    r->nidx = 0;
    if (n > 1) qsort(P->kv_sorted, (size_t)n, sizeof *P->kv_sorted, kv_cmp);
    for (uint64_t i = 1; i < n; i++)
        if (!str_cmp(P->kv_sorted[i - 1]->key, P->kv_sorted[i]->key)) {
            set_what(r, "key", P->kv_sorted[i]->key);
            return BAD(r, "duplicate key");
        }
    return true;
}

static bool read_alignment(reader *r, gguf_ctx *c)
{
    c->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_kv *kv = gguf_find(c, "general.alignment");
    if (!kv) return true;
    snprintf(r->what, sizeof r->what, "key 'general.alignment'");
    if (kv->val.type != GGUF_UINT32)
        return BAD(r, "must be uint32, not %s", gguf_vtype_name(kv->val.type));
    uint64_t a = kv->val.u64;
    if (a == 0 || (a & (a - 1)))
        return BAD(r, "alignment %llu is not a nonzero power of two", (unsigned long long)a);
    c->alignment = a;
    r->what[0] = 0;
    return true;
}

static bool read_tensor_info(reader *r, gguf_tensor *t, uint64_t i)
{
    snprintf(r->what, sizeof r->what, "tensor %llu", (unsigned long long)i);
    r->nidx = 0;
    if (!rd_str(r, &t->name, GGUF_MAX_NAME, "name")) return false;
    set_what(r, "tensor", t->name);
    if (!rd_u32(r, &t->n_dims, "dimension count")) return false;
    if (t->n_dims > GGUF_MAX_DIMS)
        return BAD(r, "%u dimensions (at most %d)", t->n_dims, GGUF_MAX_DIMS);
    int64_t nel = 1;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) {
        t->ne[d] = 1;
        if ((uint32_t)d >= t->n_dims) continue;
        uint64_t u;
        if (!rd_u64(r, &u, "dimension")) return false;
        /* llama.cpp stores dims as int64 and divides by them: 0 and
         * negatives are never meaningful */
        if (u == 0 || u > INT64_MAX)
            return BAD(r, "dimension %d is %lld (must be >= 1)", d, (long long)sext(u, 8));
        t->ne[d] = (int64_t)u;
        if (__builtin_mul_overflow(nel, t->ne[d], &nel))
            return BAD(r, "element count overflows int64");
    }
    if (!rd_u32(r, &t->type, "type")) return false;
    const qt_traits *q = qt_get(t->type);
    if (!q || !q->name || q->block_size <= 0 || q->type_size == 0)
        return BAD(r, "unknown type id %u", t->type);
    if (t->ne[0] % q->block_size)
        return BAD(r, "row of %lld elements is not a multiple of %s's block size %lld",
                   (long long)t->ne[0], q->name, (long long)q->block_size);
    uint64_t nb;
    if (__builtin_mul_overflow((uint64_t)(nel / q->block_size), (uint64_t)q->type_size, &nb))
        return BAD(r, "byte size overflows");
    t->nbytes = nb;
    if (!rd_u64(r, &t->offset, "offset")) return false;
    return true;
}

static bool check_tensors(reader *r, gguf_priv *P)
{
    gguf_ctx *c = &P->pub;
    uint64_t n = c->n_tensors;
    uint64_t room = c->data_offset <= c->size ? c->size - c->data_offset : 0;
    for (uint64_t i = 0; i < n; i++) {
        gguf_tensor *t = &c->tensors[i];
        set_what(r, "tensor", t->name);
        if (t->offset % c->alignment)
            return BAD(r, "offset %llu is not a multiple of the alignment %llu",
                       (unsigned long long)t->offset, (unsigned long long)c->alignment);
        if (t->offset > room || t->nbytes > room - t->offset)
            return BAD(r, "data at offset %llu + %llu bytes lies past the end of the file "
                          "(data section holds %llu bytes)",
                       (unsigned long long)t->offset, (unsigned long long)t->nbytes,
                       (unsigned long long)room);
        t->data = c->base + c->data_offset + t->offset;
    }
    r->what[0] = 0;
    if (n < 2) return true;
    qsort(P->t_sorted, (size_t)n, sizeof *P->t_sorted, tensor_name_cmp);
    for (uint64_t i = 1; i < n; i++)
        if (!str_cmp(P->t_sorted[i - 1]->name, P->t_sorted[i]->name)) {
            set_what(r, "tensor", P->t_sorted[i]->name);
            return BAD(r, "duplicate tensor name");
        }
    const gguf_tensor **by_off = malloc((size_t)n * sizeof *by_off);
    if (!by_off) return OOM(r);
    memcpy(by_off, P->t_sorted, (size_t)n * sizeof *by_off);
    qsort(by_off, (size_t)n, sizeof *by_off, tensor_off_cmp);
    bool ok = true;
    for (uint64_t i = 1; i < n && ok; i++) {
        const gguf_tensor *a = by_off[i - 1], *b = by_off[i];
        if (a->offset + a->nbytes > b->offset) {  /* both bounded by room: no overflow */
            char bn[72];
            set_what(r, "tensor", b->name);
            ok = BAD(r, "data overlaps tensor '%s'", show(a->name, bn, sizeof bn));
        }
    }
    free(by_off);
    return ok;
}

static bool parse(reader *r, gguf_priv *P)
{
    gguf_ctx *c = &P->pub;
    uint64_t n_kv, n_tensors;
    if (!read_header(r, c, &n_kv, &n_tensors)) return false;
    if (!read_kvs(r, P, n_kv)) return false;
    if (!read_alignment(r, c)) return false;
    /* recheck now that the metadata has used up part of the file */
    if (n_tensors > left(r) / GGUF_MIN_TENSOR)
        return BAD(r, "tensor count %llu is more than the %llu bytes left could hold",
                   (unsigned long long)n_tensors, (unsigned long long)left(r));
    if (n_tensors) {
        c->tensors = calloc((size_t)n_tensors, sizeof *c->tensors);
        P->t_sorted = malloc((size_t)n_tensors * sizeof *P->t_sorted);
        if (!c->tensors || !P->t_sorted) return OOM(r);
    }
    for (uint64_t i = 0; i < n_tensors; i++) {
        if (!read_tensor_info(r, &c->tensors[i], i)) return false;
        P->t_sorted[i] = &c->tensors[i];
        c->n_tensors = i + 1;
    }
    r->what[0] = 0;
    c->id = XXH3_64bits(r->p, (size_t)r->pos);
    /* pos <= size and alignment <= 2^31, so this cannot overflow */
    c->data_offset = (r->pos + c->alignment - 1) / c->alignment * c->alignment;
    return check_tensors(r, P);
}

void gguf_close(gguf_ctx *ctx)
{
    if (!ctx) return;
    gguf_priv *P = (gguf_priv *)ctx;
    for (uint64_t i = 0; i < ctx->n_kv; i++)
        free_value(&ctx->kv[i].val);
    free(ctx->kv);
    free(ctx->tensors);
    free(P->kv_sorted);
    free(P->t_sorted);
    if (ctx->locked) munlock(ctx->base, ctx->size);
    if (ctx->mapped && ctx->size) munmap((void *)ctx->base, ctx->size);
    if (ctx->owned) gl_arena_free((void *)ctx->base, ctx->size);
    free(P);
}

int gguf_open_mem(gguf_ctx **out, const void *buf, size_t size, qlm_err *err)
{
    qlm_err local;
    reader r = {.p = buf, .size = size, .err = err ? err : &local};
    *out = NULL;
    if (!buf && size) return qlm_fail(err, QLM_ELOAD, "no data");
    gguf_priv *P = calloc(1, sizeof *P);
    if (!P) return qlm_fail(err, QLM_ERUNTIME, "out of memory");
    P->pub.base = buf;
    P->pub.size = size;
    if (size == 0) {
        gguf_close(&P->pub);
        return qlm_fail(err, QLM_ELOAD, "empty file");
    }
    if (!parse(&r, P)) {
        int code = r.err->code;
        gguf_close(&P->pub);
        return code;
    }
    *out = &P->pub;
    return QLM_OK;
}

const char *gguf_load_mode_name(gguf_load_mode m)
{
    switch (m) {
    case GGUF_LOAD_MMAP: return "mmap";
    case GGUF_LOAD_READ: return "read";
    case GGUF_LOAD_MLOCK: return "mlock";
    }
    return "?";
}

/* Reads all of fd, in large sequential chunks, into --no-mmap's copy:
 * anonymous memory, asked for in transparent huge pages.  Decoding streams every weight once per token, and here (a KVM guest) a
 * 1 GB copy read 1.20x as fast as the same bytes through the file mapping
 * (Q8_0 matmuls of one token, one thread, CPU time), 1.05x as fast as a
 * copy in 4 KB pages; with the ask ignored it is an ordinary copy. */
static void *read_whole(int fd, size_t size, int *e)
{
    uint8_t *buf = gl_stream_alloc(size);
    if (!buf) { *e = ENOMEM; return NULL; }
#ifdef POSIX_FADV_SEQUENTIAL
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    size_t n = 0;
    while (n < size) {
        const size_t want = size - n < ((size_t)64 << 20) ? size - n : ((size_t)64 << 20);
        ssize_t r = read(fd, buf + n, want);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            *e = r < 0 ? errno : EIO; /* EOF early: the file shrank under us */
            gl_arena_free(buf, size);
            return NULL;
        }
        n += (size_t)r;
    }
    return buf;
}

/* Why mlock failed, and what to do about it. */
static int mlock_failure(qlm_err *err, const char *path, size_t size, int e)
{
    struct rlimit rl;
    if ((e == ENOMEM || e == EPERM) && getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < size)
        return qlm_fail(err, QLM_ELOAD,
                        "%s: --mlock: cannot lock %zu MiB: RLIMIT_MEMLOCK is %llu KiB "
                        "(raise it with `ulimit -l unlimited`, or memlock in /etc/security/limits.conf; "
                        "or drop --mlock)",
                        path, size >> 20, (unsigned long long)(rl.rlim_cur >> 10));
    return qlm_fail(err, QLM_ELOAD, "%s: --mlock: cannot lock %zu MiB: %s (or drop --mlock)", path,
                    size >> 20, strerror(e));
}

int gguf_open(gguf_ctx **out, const char *path, qlm_err *err)
{
    return gguf_open_mode(out, path, GGUF_LOAD_MMAP, err);
}

int gguf_open_mode(gguf_ctx **out, const char *path, gguf_load_mode mode, qlm_err *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return qlm_fail(err, QLM_ELOAD, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return qlm_fail(err, QLM_ELOAD, "%s: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return qlm_fail(err, QLM_ELOAD, "%s: not a regular file", path);
    }
    if (st.st_size == 0) {
        close(fd);
        return qlm_fail(err, QLM_ELOAD, "%s: empty file", path);
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        return qlm_fail(err, QLM_ELOAD, "%s: file too large to map", path);
    }
    size_t size = (size_t)st.st_size;
    int e = 0;
    void *m;
    if (mode == GGUF_LOAD_READ) {
        m = read_whole(fd, size, &e);
        close(fd);
        if (!m)
            return e == ENOMEM ? qlm_fail(err, QLM_ERUNTIME, "%s: out of memory reading %zu MiB (use the default mmap)",
                                          path, size >> 20)
                               : qlm_fail(err, QLM_ELOAD, "%s: read: %s", path, strerror(e));
    } else {
        m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        e = errno;
        close(fd);
        if (m == MAP_FAILED) return qlm_fail(err, QLM_ELOAD, "%s: mmap: %s", path, strerror(e));
    }
    qlm_err local;
    qlm_err *pe = err ? err : &local;
    int rc = gguf_open_mem(out, m, size, pe);
    if (rc) {
        munmap(m, size);
        char why[sizeof pe->msg];
        memcpy(why, pe->msg, sizeof why);
        return qlm_fail(err, rc, "%s: %s", path, why);
    }
    (*out)->mapped = mode != GGUF_LOAD_READ;
    (*out)->owned = mode == GGUF_LOAD_READ;
    /* Locked only after validation, so a bad file costs no locked memory. */
    if (mode == GGUF_LOAD_MLOCK) {
        if (mlock(m, size) != 0) {
            e = errno;
            gguf_close(*out);
            *out = NULL;
            return mlock_failure(err, path, size, e);
        }
        (*out)->locked = true;
    }
    return QLM_OK;
}

static gguf_str cstr(const char *s)
{
    gguf_str g = {s, s ? strlen(s) : 0};
    return g;
}

const gguf_kv *gguf_find(const gguf_ctx *ctx, const char *key)
{
    if (!ctx || !key || !ctx->n_kv) return NULL;
    const gguf_priv *P = (const gguf_priv *)ctx;
    gguf_kv probe = {.key = cstr(key)};
    const gguf_kv *pp = &probe;
    const gguf_kv **hit = bsearch(&pp, P->kv_sorted, (size_t)ctx->n_kv, sizeof *P->kv_sorted, kv_cmp);
    return hit ? *hit : NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_ctx *ctx, const char *name)
{
    if (!ctx || !name || !ctx->n_tensors) return NULL;
    const gguf_priv *P = (const gguf_priv *)ctx;
    gguf_tensor probe = {.name = cstr(name)};
    const gguf_tensor *pp = &probe;
    const gguf_tensor **hit = bsearch(&pp, P->t_sorted, (size_t)ctx->n_tensors,
                                      sizeof *P->t_sorted, tensor_name_cmp);
    return hit ? *hit : NULL;
}

static bool is_unsigned(gguf_vtype t)
{
    return t == GGUF_UINT8 || t == GGUF_UINT16 || t == GGUF_UINT32 || t == GGUF_UINT64;
}

static bool is_signed(gguf_vtype t)
{
    return t == GGUF_INT8 || t == GGUF_INT16 || t == GGUF_INT32 || t == GGUF_INT64;
}

bool gguf_get_u32(const gguf_ctx *ctx, const char *key, uint32_t *out)
{
    const gguf_kv *kv = gguf_find(ctx, key);
    if (!kv) return false;
    const gguf_value *v = &kv->val;
    if (is_unsigned(v->type) && v->u64 <= UINT32_MAX) *out = (uint32_t)v->u64;
    else if (is_signed(v->type) && v->i64 >= 0 && v->i64 <= UINT32_MAX) *out = (uint32_t)v->i64;
    else return false;
    return true;
}

bool gguf_get_i64(const gguf_ctx *ctx, const char *key, int64_t *out)
{
    const gguf_kv *kv = gguf_find(ctx, key);
    if (!kv) return false;
    const gguf_value *v = &kv->val;
    if (is_unsigned(v->type) && v->u64 <= INT64_MAX) *out = (int64_t)v->u64;
    else if (is_signed(v->type)) *out = v->i64;
    else return false;
    return true;
}

bool gguf_get_f32(const gguf_ctx *ctx, const char *key, float *out)
{
    const gguf_kv *kv = gguf_find(ctx, key);
    if (!kv || (kv->val.type != GGUF_FLOAT32 && kv->val.type != GGUF_FLOAT64)) return false;
    *out = (float)kv->val.f64;
    return true;
}

bool gguf_get_bool(const gguf_ctx *ctx, const char *key, bool *out)
{
    const gguf_kv *kv = gguf_find(ctx, key);
    if (!kv || kv->val.type != GGUF_BOOL) return false;
    *out = kv->val.b;
    return true;
}

bool gguf_get_str(const gguf_ctx *ctx, const char *key, gguf_str *out)
{
    const gguf_kv *kv = gguf_find(ctx, key);
    if (!kv || kv->val.type != GGUF_STRING) return false;
    *out = kv->val.str;
    return true;
}

const gguf_value *gguf_get_arr(const gguf_ctx *ctx, const char *key, gguf_vtype elem)
{
    const gguf_kv *kv = gguf_find(ctx, key);
    if (!kv || kv->val.type != GGUF_ARRAY || kv->val.arr.type != elem) return NULL;
    return &kv->val;
}

/* Raw element i of a packed numeric/bool array, or false when there is
 * none: callers are told to check i < n, but a miss must not read past
 * the array. */
static bool arr_elem(const gguf_value *a, uint64_t i, uint64_t *u)
{
    if (!a || a->type != GGUF_ARRAY || i >= a->arr.n || !a->arr.data) return false;
    gguf_vtype t = a->arr.type;
    if (!vtype_valid(t) || t == GGUF_STRING || t == GGUF_ARRAY) return false;
    int sz = vtype_size[t];
    *u = le((const uint8_t *)a->arr.data + i * (uint64_t)sz, sz);
    return true;
}

int64_t gguf_arr_i64(const gguf_value *arr, uint64_t i)
{
    uint64_t u;
    if (!arr_elem(arr, i, &u)) return 0;
    gguf_vtype t = arr->arr.type;
    if (is_signed(t)) return sext(u, vtype_size[t]);
    if (is_unsigned(t) || t == GGUF_BOOL) return u > INT64_MAX ? INT64_MAX : (int64_t)u;
    double d = t == GGUF_FLOAT32 ? f32_bits((uint32_t)u) : f64_bits(u);
    /* out-of-range float to int conversion is undefined: saturate */
    if (isnan(d)) return 0;
    if (d >= 9223372036854775807.0) return INT64_MAX;
    if (d <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)d;
}

double gguf_arr_f64(const gguf_value *arr, uint64_t i)
{
    uint64_t u;
    if (!arr_elem(arr, i, &u)) return 0;
    gguf_vtype t = arr->arr.type;
    if (t == GGUF_FLOAT32) return f32_bits((uint32_t)u);
    if (t == GGUF_FLOAT64) return f64_bits(u);
    if (is_signed(t)) return (double)sext(u, vtype_size[t]);
    return (double)u;
}

bool gguf_str_eq(gguf_str s, const char *c)
{
    if (!c) return false;
    size_t n = strlen(c);
    return s.len == n && (n == 0 || memcmp(s.ptr, c, n) == 0);
}

char *gguf_str_dup(gguf_str s)
{
    if (s.len >= SIZE_MAX) return NULL;
    char *d = malloc((size_t)s.len + 1);
    if (!d) return NULL;
    if (s.len) memcpy(d, s.ptr, (size_t)s.len);
    d[s.len] = 0;
    return d;
}
