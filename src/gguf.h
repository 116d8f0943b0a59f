/* gguf.h - GGUF v2/v3 reader over mmap (zero-copy) and a writer.
 *
 * The reader trusts nothing in the file: every count, length, offset,
 * dimension and byte size is checked against the file size and for
 * overflow before use.  Strings point into the mapping and are NOT
 * NUL-terminated; use gguf_str_eq / gguf_str_dup. */
#ifndef QLM_GGUF_H
#define QLM_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

typedef enum gguf_vtype {
    GGUF_UINT8 = 0, GGUF_INT8 = 1, GGUF_UINT16 = 2, GGUF_INT16 = 3,
    GGUF_UINT32 = 4, GGUF_INT32 = 5, GGUF_FLOAT32 = 6, GGUF_BOOL = 7,
    GGUF_STRING = 8, GGUF_ARRAY = 9, GGUF_UINT64 = 10, GGUF_INT64 = 11,
    GGUF_FLOAT64 = 12,
} gguf_vtype;

typedef struct gguf_str {
    const char *ptr; /* into the file; not NUL-terminated */
    uint64_t len;
} gguf_str;

typedef struct gguf_value gguf_value;
struct gguf_value {
    gguf_vtype type;
    union {
        uint64_t u64;  /* all unsigned integer types, widened */
        int64_t i64;   /* all signed integer types, widened */
        double f64;    /* FLOAT32 and FLOAT64, widened */
        bool b;
        gguf_str str;
        struct {
            gguf_vtype type;   /* element type */
            uint64_t n;        /* element count */
            const void *data;  /* numeric/bool elements: packed little-endian,
                                  possibly unaligned (use gguf_arr_* getters) */
            gguf_str *strs;    /* STRING elements (owned by the context) */
            gguf_value *vals;  /* ARRAY elements, nested (owned) */
        } arr;
    };
};

typedef struct gguf_kv {
    gguf_str key;
    gguf_value val;
} gguf_kv;

#define GGUF_MAX_DIMS 4

typedef struct gguf_tensor {
    gguf_str name;
    uint32_t n_dims;
    int64_t ne[GGUF_MAX_DIMS]; /* elements per dim, ne[0] fastest; unused = 1 */
    uint32_t type;             /* qt_type id (validated: known to quant/types) */
    uint64_t offset;           /* from the start of the data section */
    uint64_t nbytes;
    const void *data;          /* into the mapping */
} gguf_tensor;

typedef struct gguf_ctx {
    const uint8_t *base;   /* whole file */
    size_t size;
    bool mapped;           /* base is an mmap we own (else caller's memory) */
    bool owned;            /* base is an anonymous copy we own (--no-mmap) */
    bool locked;           /* base is mlock'ed (--mlock) */
    uint32_t version;
    uint64_t n_kv;
    gguf_kv *kv;
    uint64_t n_tensors;
    gguf_tensor *tensors;
    uint64_t alignment;
    uint64_t data_offset;  /* file offset of the data section (aligned; may
                              lie past size in a file without tensors) */
    uint64_t id;           /* XXH3-64 of header + metadata + tensor table */
} gguf_ctx;

/* Maps and validates path. On failure returns QLM_ELOAD with a message
 * naming the file and what is wrong ("m.gguf: tensor 'x': unknown type id
 * 77"); QLM_ERUNTIME only when memory runs out.  Beyond the layout, files
 * are refused for: versions other than 2 and 3, duplicate keys or tensor
 * names, general.alignment not a uint32 power of two, keys over 65535 bytes,
 * tensor names over 64, arrays nested over 8 deep, bools other than 0/1,
 * more than 4 dims or a dim < 1, rows not a multiple of the type's block
 * size, misaligned or overlapping tensor data. */
int gguf_open(gguf_ctx **out, const char *path, qlm_err *err);

/* How the file's bytes get into memory; exactly one is in force.
 *   MMAP   map the file (default): instant start, pages come in on first use
 *   READ   read it whole into memory with large sequential reads: the fastest
 *          cold load from a slow disk, and no page faults later
 *   MLOCK  map it and lock every page in RAM, so it is never swapped out;
 *          fails with the reason and the fix when RLIMIT_MEMLOCK is too low */
typedef enum gguf_load_mode { GGUF_LOAD_MMAP, GGUF_LOAD_READ, GGUF_LOAD_MLOCK } gguf_load_mode;
const char *gguf_load_mode_name(gguf_load_mode m);
int gguf_open_mode(gguf_ctx **out, const char *path, gguf_load_mode mode, qlm_err *err);
/* Same over caller-owned memory that must outlive the context (messages
 * then start at what is wrong). */
int gguf_open_mem(gguf_ctx **out, const void *buf, size_t size, qlm_err *err);
void gguf_close(gguf_ctx *ctx);

const gguf_kv *gguf_find(const gguf_ctx *ctx, const char *key);
const gguf_tensor *gguf_find_tensor(const gguf_ctx *ctx, const char *name);

/* Typed getters: return false if the key is missing or of an incompatible
 * type.  Integer getters accept any integer type whose value fits. */
bool gguf_get_u32(const gguf_ctx *ctx, const char *key, uint32_t *out);
bool gguf_get_i64(const gguf_ctx *ctx, const char *key, int64_t *out);
bool gguf_get_f32(const gguf_ctx *ctx, const char *key, float *out);
bool gguf_get_bool(const gguf_ctx *ctx, const char *key, bool *out);
bool gguf_get_str(const gguf_ctx *ctx, const char *key, gguf_str *out);
/* Array of elements of type `elem` (GGUF_ARRAY values only). */
const gguf_value *gguf_get_arr(const gguf_ctx *ctx, const char *key, gguf_vtype elem);

/* Element i of a numeric/bool array value, widened; caller checks i < n
 * (past the end, or on a string/array array, they return 0 and read
 * nothing).  gguf_arr_i64 saturates uint64 above INT64_MAX and truncates
 * floats toward zero, saturating. */
int64_t gguf_arr_i64(const gguf_value *arr, uint64_t i);
double gguf_arr_f64(const gguf_value *arr, uint64_t i);

bool gguf_str_eq(gguf_str s, const char *c);
char *gguf_str_dup(gguf_str s);  /* malloc'd, NUL-terminated; NULL on OOM */
const char *gguf_vtype_name(gguf_vtype t);

/* ---- writer (tests and tools) ---- */
typedef struct gguf_writer gguf_writer;

gguf_writer *gguf_writer_new(void);
void gguf_writer_free(gguf_writer *w);
void gguf_w_u32(gguf_writer *w, const char *key, uint32_t v);
void gguf_w_i32(gguf_writer *w, const char *key, int32_t v);
void gguf_w_u64(gguf_writer *w, const char *key, uint64_t v);
void gguf_w_f32(gguf_writer *w, const char *key, float v);
void gguf_w_bool(gguf_writer *w, const char *key, bool v);
void gguf_w_str(gguf_writer *w, const char *key, const char *v);
/* Array of n strings / of n numeric elements of type elem (packed LE). */
void gguf_w_arr_str(gguf_writer *w, const char *key, const char *const *v, uint64_t n);
void gguf_w_arr(gguf_writer *w, const char *key, gguf_vtype elem, const void *data, uint64_t n);
/* Any value, including nested arrays, laid out as the reader returns it
 * (numeric array elements packed little-endian in arr.data), so metadata
 * read from one file can be copied into another. */
void gguf_w_value(gguf_writer *w, const char *key, const gguf_value *v);
/* Adds a tensor; data (qt_row_size bytes) is copied. ne has n_dims entries. */
void gguf_w_tensor(gguf_writer *w, const char *name, uint32_t type,
                   uint32_t n_dims, const int64_t *ne, const void *data);
/* Same without the copy: data must stay valid until the file is written
 * (for tools that write tensors bigger than they want to hold twice). */
void gguf_w_tensor_ref(gguf_writer *w, const char *name, uint32_t type,
                       uint32_t n_dims, const int64_t *ne, const void *data);
/* The gguf_w_* calls above return nothing: the first misuse (duplicate key
 * or tensor, bad shape, unknown type, out of memory) is kept and reported
 * by gguf_w_save / gguf_w_to_mem, or here (QLM_OK while none). */
int gguf_w_status(const gguf_writer *w, qlm_err *err);
/* Writes a v3 file (alignment 32 unless general.alignment was set) through
 * a temporary file in the same folder renamed over path, so a failed write
 * never leaves a partial file.  Errors are QLM_ERUNTIME. */
int gguf_w_save(gguf_writer *w, const char *path, qlm_err *err);
/* Same into a malloc'd buffer the caller frees (tests corrupt it before
 * gguf_open_mem). */
int gguf_w_to_mem(gguf_writer *w, void **buf, size_t *size, qlm_err *err);

#endif
