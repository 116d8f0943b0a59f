/* gguf_write.c - builds GGUF v3 files for tools and tests.
 *
 * Metadata is serialised as it is added; tensors are kept (copied or by
 * reference) until the file is emitted.  The writer refuses anything the
 * reader would refuse, so every file it produces loads back. */
#include "gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quant/types.h"

#define W_MAX_KEY 65535
#define W_MAX_NAME 63   /* llama.cpp refuses names of GGML_MAX_NAME (64) bytes */
#define W_MAX_DEPTH 8   /* the reader's nesting limit */

typedef struct wbuf {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} wbuf;

typedef struct wtensor {
    char *name;
    uint32_t type, n_dims;
    int64_t ne[GGUF_MAX_DIMS];
    uint64_t nbytes, offset;
    const void *data;
    void *owned;
} wtensor;

struct gguf_writer {
    wbuf meta;             /* serialised key/value pairs, in order */
    uint64_t n_kv;
    char **keys;           /* for the duplicate check */
    size_t cap_keys;
    wtensor *t;
    size_t n_t, cap_t;
    uint64_t alignment;
    qlm_err err;           /* first failure; code QLM_OK while none */
};

static void wfail(gguf_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void wfail(gguf_writer *w, const char *fmt, ...)
{
    if (w->err.code) return;  /* the first error is the useful one */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err.msg, sizeof w->err.msg, fmt, ap);
    va_end(ap);
    w->err.code = QLM_ERUNTIME;
}

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2 / elem) return false;
        c *= 2;
    }
    void *q = realloc(*p, c * elem);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

static void put(wbuf *b, const void *src, size_t n)
{
    if (b->oom || n == 0) return;
    if (n > SIZE_MAX - b->n || !grow((void **)&b->p, &b->cap, b->n + n, 1)) {
        b->oom = true;
        return;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void put_le(wbuf *b, uint64_t v, int bytes)
{
    uint8_t q[8];
    for (int i = 0; i < bytes; i++)
        q[i] = (uint8_t)(v >> (8 * i));
    put(b, q, (size_t)bytes);
}

static void put_str(wbuf *b, const char *s, uint64_t n)
{
    put_le(b, n, 8);
    put(b, s, (size_t)n);
}

gguf_writer *gguf_writer_new(void)
{
    gguf_writer *w = calloc(1, sizeof *w);
    if (w) w->alignment = 32;
    return w;
}

void gguf_writer_free(gguf_writer *w)
{
    if (!w) return;
    for (uint64_t i = 0; i < w->n_kv; i++)
        free(w->keys[i]);
    free(w->keys);
    for (size_t i = 0; i < w->n_t; i++) {
        free(w->t[i].name);
        free(w->t[i].owned);
    }
    free(w->t);
    free(w->meta.p);
    free(w);
}

int gguf_w_status(const gguf_writer *w, qlm_err *err)
{
    if (!w) return qlm_fail(err, QLM_ERUNTIME, "gguf writer: out of memory");
    if (w->err.code) return qlm_fail(err, w->err.code, "%s", w->err.msg);
    if (w->meta.oom) return qlm_fail(err, QLM_ERUNTIME, "gguf writer: out of memory");
    return QLM_OK;
}

static const uint8_t elem_size[] = {
    [GGUF_UINT8] = 1, [GGUF_INT8] = 1, [GGUF_UINT16] = 2, [GGUF_INT16] = 2,
    [GGUF_UINT32] = 4, [GGUF_INT32] = 4, [GGUF_FLOAT32] = 4, [GGUF_BOOL] = 1,
    [GGUF_STRING] = 0, [GGUF_ARRAY] = 0, [GGUF_UINT64] = 8, [GGUF_INT64] = 8,
    [GGUF_FLOAT64] = 8,
};

static bool valid_type(gguf_vtype t) { return (unsigned)t <= GGUF_FLOAT64; }

/* Checks a value before any byte of it is serialised, so a refused value
 * leaves no half-written pair behind. */
static bool value_ok(gguf_writer *w, const char *key, const gguf_value *v, int depth)
{
    if (!valid_type(v->type)) {
        wfail(w, "key '%s': unknown value type %d", key, (int)v->type);
        return false;
    }
    uint64_t u = v->u64;
    int64_t i = v->i64;
    bool fits = true;
    switch (v->type) {
    case GGUF_UINT8: fits = u <= UINT8_MAX; break;
    case GGUF_UINT16: fits = u <= UINT16_MAX; break;
    case GGUF_UINT32: fits = u <= UINT32_MAX; break;
    case GGUF_INT8: fits = i >= INT8_MIN && i <= INT8_MAX; break;
    case GGUF_INT16: fits = i >= INT16_MIN && i <= INT16_MAX; break;
    case GGUF_INT32: fits = i >= INT32_MIN && i <= INT32_MAX; break;
    case GGUF_FLOAT32: fits = !isfinite(v->f64) || fabs(v->f64) <= FLT_MAX; break;
    case GGUF_STRING:
        if (v->str.len && !v->str.ptr) {
            wfail(w, "key '%s': string without data", key);
            return false;
        }
        break;
    case GGUF_ARRAY: {
        if (depth >= W_MAX_DEPTH) {
            wfail(w, "key '%s': arrays nested deeper than %d levels", key, W_MAX_DEPTH);
            return false;
        }
        gguf_vtype et = v->arr.type;
        if (!valid_type(et)) {
            wfail(w, "key '%s': unknown array element type %d", key, (int)et);
            return false;
        }
        if (v->arr.n == 0) break;
        if (et == GGUF_STRING) {
            if (!v->arr.strs) fits = false;
            for (uint64_t k = 0; fits && k < v->arr.n; k++)
                fits = !v->arr.strs[k].len || v->arr.strs[k].ptr;
        } else if (et == GGUF_ARRAY) {
            if (!v->arr.vals) fits = false;
            for (uint64_t k = 0; fits && k < v->arr.n; k++) {
                if (v->arr.vals[k].type != GGUF_ARRAY) {
                    wfail(w, "key '%s': element %llu of an array of arrays is a %s", key,
                          (unsigned long long)k, gguf_vtype_name(v->arr.vals[k].type));
                    return false;
                }
                if (!value_ok(w, key, &v->arr.vals[k], depth + 1)) return false;
            }
        } else {
            if (!v->arr.data || v->arr.n > SIZE_MAX / elem_size[et]) fits = false;
            /* the reader refuses bools other than 0 and 1 */
            const uint8_t *q = v->arr.data;
            for (uint64_t k = 0; fits && et == GGUF_BOOL && k < v->arr.n; k++)
                fits = q[k] <= 1;
        }
        if (!fits) {
            wfail(w, "key '%s': malformed %s array", key, gguf_vtype_name(et));
            return false;
        }
        return true;
    }
    default:
        break;
    }
    if (!fits) wfail(w, "key '%s': value does not fit %s", key, gguf_vtype_name(v->type));
    return fits;
}

static void put_value(wbuf *b, const gguf_value *v, bool with_type)
{
    if (with_type) put_le(b, (uint64_t)v->type, 4);
    switch (v->type) {
    case GGUF_UINT8: case GGUF_UINT16: case GGUF_UINT32: case GGUF_UINT64:
        put_le(b, v->u64, elem_size[v->type]);
        break;
    case GGUF_INT8: case GGUF_INT16: case GGUF_INT32: case GGUF_INT64:
        put_le(b, (uint64_t)v->i64, elem_size[v->type]);
        break;
    case GGUF_FLOAT32: {
        float f = (float)v->f64;
        uint32_t u;
        memcpy(&u, &f, 4);
        put_le(b, u, 4);
        break;
    }
    case GGUF_FLOAT64: {
        uint64_t u;
        memcpy(&u, &v->f64, 8);
        put_le(b, u, 8);
        break;
    }
    case GGUF_BOOL: put_le(b, v->b ? 1 : 0, 1); break;
    case GGUF_STRING: put_str(b, v->str.ptr, v->str.len); break;
    case GGUF_ARRAY:
        put_le(b, (uint64_t)v->arr.type, 4);
        put_le(b, v->arr.n, 8);
        if (v->arr.type == GGUF_STRING) {
            for (uint64_t k = 0; k < v->arr.n; k++)
                put_str(b, v->arr.strs[k].ptr, v->arr.strs[k].len);
        } else if (v->arr.type == GGUF_ARRAY) {
            for (uint64_t k = 0; k < v->arr.n; k++)
                put_value(b, &v->arr.vals[k], false);
        } else {
            put(b, v->arr.data, (size_t)(v->arr.n * elem_size[v->arr.type]));
        }
        break;
    }
}

/* Registers key (refusing duplicates) and handles general.alignment, which
 * changes the layout of the file being built. */
static bool add_key(gguf_writer *w, const char *key, const gguf_value *v)
{
    if (!key) {
        wfail(w, "metadata key is NULL");
        return false;
    }
    size_t len = strlen(key);
    if (len > W_MAX_KEY) {
        wfail(w, "key '%.40s...': longer than %d bytes", key, W_MAX_KEY);
        return false;
    }
    for (uint64_t i = 0; i < w->n_kv; i++)
        if (!strcmp(w->keys[i], key)) {
            wfail(w, "key '%s': duplicate key", key);
            return false;
        }
    if (!value_ok(w, key, v, 0)) return false;
    if (!strcmp(key, "general.alignment")) {
        if (v->type != GGUF_UINT32 || v->u64 == 0 || (v->u64 & (v->u64 - 1))) {
            wfail(w, "key 'general.alignment': must be a uint32 power of two");
            return false;
        }
        w->alignment = v->u64;
    }
    char *k = strdup(key);
    if (!k || !grow((void **)&w->keys, &w->cap_keys, w->n_kv + 1, sizeof *w->keys)) {
        free(k);
        wfail(w, "out of memory");
        return false;
    }
    w->keys[w->n_kv++] = k;
    return true;
}

void gguf_w_value(gguf_writer *w, const char *key, const gguf_value *v)
{
    if (!w || w->err.code) return;
    if (!v) {
        wfail(w, "key '%s': NULL value", key ? key : "(null)");
        return;
    }
    if (!add_key(w, key, v)) return;
    put_str(&w->meta, key, strlen(key));
    put_value(&w->meta, v, true);
}

static void w_scalar(gguf_writer *w, const char *key, gguf_value v)
{
    gguf_w_value(w, key, &v);
}

void gguf_w_u32(gguf_writer *w, const char *key, uint32_t v)
{
    w_scalar(w, key, (gguf_value){.type = GGUF_UINT32, .u64 = v});
}

void gguf_w_i32(gguf_writer *w, const char *key, int32_t v)
{
    w_scalar(w, key, (gguf_value){.type = GGUF_INT32, .i64 = v});
}

void gguf_w_u64(gguf_writer *w, const char *key, uint64_t v)
{
    w_scalar(w, key, (gguf_value){.type = GGUF_UINT64, .u64 = v});
}

void gguf_w_f32(gguf_writer *w, const char *key, float v)
{
    w_scalar(w, key, (gguf_value){.type = GGUF_FLOAT32, .f64 = v});
}

void gguf_w_bool(gguf_writer *w, const char *key, bool v)
{
    w_scalar(w, key, (gguf_value){.type = GGUF_BOOL, .b = v});
}

void gguf_w_str(gguf_writer *w, const char *key, const char *v)
{
    if (w && !v) {
        wfail(w, "key '%s': NULL string", key ? key : "(null)");
        return;
    }
    w_scalar(w, key, (gguf_value){.type = GGUF_STRING, .str = {v, v ? strlen(v) : 0}});
}

void gguf_w_arr(gguf_writer *w, const char *key, gguf_vtype elem, const void *data, uint64_t n)
{
    if (w && (elem == GGUF_STRING || elem == GGUF_ARRAY)) {
        wfail(w, "key '%s': gguf_w_arr takes numeric or bool elements, not %s",
              key ? key : "(null)", gguf_vtype_name(elem));
        return;
    }
    gguf_value v = {.type = GGUF_ARRAY};
    v.arr.type = elem;
    v.arr.n = n;
    v.arr.data = data;
    gguf_w_value(w, key, &v);
}

void gguf_w_arr_str(gguf_writer *w, const char *key, const char *const *v, uint64_t n)
{
    if (!w || w->err.code) return;
    if (n && !v) {
        wfail(w, "key '%s': NULL string array", key ? key : "(null)");
        return;
    }
    for (uint64_t i = 0; i < n; i++)
        if (!v[i]) {
            wfail(w, "key '%s': string %llu is NULL", key ? key : "(null)", (unsigned long long)i);
            return;
        }
    /* validation of the key happens on a string-free stand-in so that a
     * vocabulary is not copied into gguf_str form just to be checked */
    gguf_value probe = {.type = GGUF_ARRAY};
    probe.arr.type = GGUF_STRING;
    if (!add_key(w, key, &probe)) return;
    put_str(&w->meta, key, strlen(key));
    put_le(&w->meta, GGUF_ARRAY, 4);
    put_le(&w->meta, GGUF_STRING, 4);
    put_le(&w->meta, n, 8);
    for (uint64_t i = 0; i < n; i++)
        put_str(&w->meta, v[i], strlen(v[i]));
}

static void add_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                       const int64_t *ne, const void *data, bool copy)
{
    if (!w || w->err.code) return;
    if (!name || !*name) {
        wfail(w, "tensor name is empty");
        return;
    }
    if (strlen(name) > W_MAX_NAME) {
        wfail(w, "tensor '%s': name longer than %d bytes", name, W_MAX_NAME);
        return;
    }
    for (size_t i = 0; i < w->n_t; i++)
        if (!strcmp(w->t[i].name, name)) {
            wfail(w, "tensor '%s': duplicate tensor name", name);
            return;
        }
    if (n_dims > GGUF_MAX_DIMS || (n_dims && !ne)) {
        wfail(w, "tensor '%s': %u dimensions (at most %d)", name, n_dims, GGUF_MAX_DIMS);
        return;
    }
    wtensor t = {.type = type, .n_dims = n_dims};
    int64_t nel = 1;
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) {
        t.ne[d] = d < n_dims ? ne[d] : 1;
        if (t.ne[d] < 1 || __builtin_mul_overflow(nel, t.ne[d], &nel)) {
            wfail(w, "tensor '%s': bad shape (dimension %u is %lld)", name, d, (long long)t.ne[d]);
            return;
        }
    }
    const qt_traits *q = qt_get(type);
    if (!q || !q->name || q->block_size <= 0 || q->type_size == 0) {
        wfail(w, "tensor '%s': unknown type id %u", name, type);
        return;
    }
    if (t.ne[0] % q->block_size) {
        wfail(w, "tensor '%s': row of %lld elements is not a multiple of %s's block size %lld",
              name, (long long)t.ne[0], q->name, (long long)q->block_size);
        return;
    }
    if (__builtin_mul_overflow((uint64_t)(nel / q->block_size), (uint64_t)q->type_size, &t.nbytes)
        || t.nbytes > SIZE_MAX / 2) {
        wfail(w, "tensor '%s': too large", name);
        return;
    }
    if (!data) {
        wfail(w, "tensor '%s': no data", name);
        return;
    }
    t.name = strdup(name);
    if (copy) {
        t.owned = malloc((size_t)t.nbytes);
        if (t.owned) memcpy(t.owned, data, (size_t)t.nbytes);
        data = t.owned;
    }
    t.data = data;
    if (!t.name || !t.data || !grow((void **)&w->t, &w->cap_t, w->n_t + 1, sizeof *w->t)) {
        free(t.name);
        free(t.owned);
        wfail(w, "tensor '%s': out of memory", name);
        return;
    }
    w->t[w->n_t++] = t;
}

void gguf_w_tensor(gguf_writer *w, const char *name, uint32_t type,
                   uint32_t n_dims, const int64_t *ne, const void *data)
{
    add_tensor(w, name, type, n_dims, ne, data, true);
}

void gguf_w_tensor_ref(gguf_writer *w, const char *name, uint32_t type,
                       uint32_t n_dims, const int64_t *ne, const void *data)
{
    add_tensor(w, name, type, n_dims, ne, data, false);
}

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/* Everything before the data section, with tensor offsets assigned; sets
 * *total to the size of the whole file. */
static bool build_head(gguf_writer *w, wbuf *h, uint64_t *total)
{
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        w->t[i].offset = off;
        off = align_up(off + w->t[i].nbytes, w->alignment);
        if (off > SIZE_MAX / 2) {
            wfail(w, "file too large");
            return false;
        }
    }
    put(h, "GGUF", 4);
    put_le(h, 3, 4);
    put_le(h, w->n_t, 8);
    put_le(h, w->n_kv, 8);
    put(h, w->meta.p, w->meta.n);
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        put_str(h, t->name, strlen(t->name));
        put_le(h, t->n_dims, 4);
        for (uint32_t d = 0; d < t->n_dims; d++)
            put_le(h, (uint64_t)t->ne[d], 8);
        put_le(h, t->type, 4);
        put_le(h, t->offset, 8);
    }
    /* the data section starts aligned even when there are no tensors,
     * which is what llama.cpp writes too */
    static const uint8_t zeros[256];
    size_t pad = (size_t)(align_up(h->n, w->alignment) - h->n);
    while (pad) {
        size_t k = pad < sizeof zeros ? pad : sizeof zeros;
        put(h, zeros, k);
        pad -= k;
    }
    if (h->oom) {
        wfail(w, "out of memory");
        return false;
    }
    *total = h->n + off;
    return true;
}

/* Writes the data section through fn (a memory copy or a FILE). */
typedef bool (*sink_fn)(void *ctx, const void *p, size_t n);

static bool emit_data(gguf_writer *w, sink_fn fn, void *ctx)
{
    static const uint8_t zeros[256];
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        if (!fn(ctx, t->data, (size_t)t->nbytes)) return false;
        size_t pad = (size_t)(align_up(t->nbytes, w->alignment) - t->nbytes);
        while (pad) {
            size_t k = pad < sizeof zeros ? pad : sizeof zeros;
            if (!fn(ctx, zeros, k)) return false;
            pad -= k;
        }
    }
    return true;
}

typedef struct memsink {
    uint8_t *p;
    size_t pos;
} memsink;

static bool mem_put(void *ctx, const void *p, size_t n)
{
    memsink *m = ctx;
    if (n) memcpy(m->p + m->pos, p, n);
    m->pos += n;
    return true;
}

static bool file_put(void *ctx, const void *p, size_t n)
{
    return fwrite(p, 1, n, ctx) == n;
}

int gguf_w_to_mem(gguf_writer *w, void **buf, size_t *size, qlm_err *err)
{
    *buf = NULL;
    *size = 0;
    int rc = gguf_w_status(w, err);
    if (rc) return rc;
    wbuf h = {0};
    uint64_t total;
    if (!build_head(w, &h, &total)) {
        free(h.p);
        return gguf_w_status(w, err);
    }
    memsink m = {malloc((size_t)total ? (size_t)total : 1), 0};
    if (!m.p) {
        free(h.p);
        return qlm_fail(err, QLM_ERUNTIME, "gguf writer: out of memory (%llu bytes)",
                        (unsigned long long)total);
    }
    mem_put(&m, h.p, h.n);
    free(h.p);
    emit_data(w, mem_put, &m);
    *buf = m.p;
    *size = (size_t)total;
    return QLM_OK;
}

/* A fresh name next to path: rename() is only atomic within a filesystem. */
static int open_temp(const char *path, char *tmp, size_t cap)
{
    static unsigned counter;
    for (int tries = 0; tries < 100; tries++) {
        snprintf(tmp, cap, "%s.tmp.%ld.%u", path, (long)getpid(), counter++);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    return -1;
}

int gguf_w_save(gguf_writer *w, const char *path, qlm_err *err)
{
    int rc = gguf_w_status(w, err);
    if (rc) return rc;
    wbuf h = {0};
    uint64_t total;
    if (!build_head(w, &h, &total)) {
        free(h.p);
        return gguf_w_status(w, err);
    }
    size_t cap = strlen(path) + 64;
    char *tmp = malloc(cap);
    if (!tmp) {
        free(h.p);
        return qlm_fail(err, QLM_ERUNTIME, "%s: out of memory", path);
    }
    int fd = open_temp(path, tmp, cap);
    if (fd < 0) {
        int e = errno;
        free(h.p);
        free(tmp);
        return qlm_fail(err, QLM_ERUNTIME, "%s: cannot create: %s", path, strerror(e));
    }
    FILE *f = fdopen(fd, "wb");
    const char *step = "write";
    bool ok = f != NULL;
    if (!f) close(fd);
    ok = ok && file_put(f, h.p, h.n) && emit_data(w, file_put, f);
    ok = ok && fflush(f) == 0;
    /* the rename must not reach the disk before the data does */
    if (ok && fsync(fileno(f)) != 0) {
        ok = false;
        step = "fsync";
    }
    int e = errno;
    if (f && fclose(f) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = false;
        step = "rename";
        e = errno;
    }
    if (!ok) unlink(tmp);
    free(h.p);
    free(tmp);
    if (!ok) return qlm_fail(err, QLM_ERUNTIME, "%s: %s failed: %s", path, step, strerror(e ? e : EIO));
    return QLM_OK;
}
