/* kv.h - the KV cache: cells holding one token's K and V rows per layer.
 *
 * Like llama.cpp's unified cache, a cell carries its position and the set
 * of sequences that see it, so one cache serves prefill, decode, batches
 * of sequences and shared prefixes.
 *
 * K and V each have an element type: f32 (llama.cpp's exact order, for
 * parity work), f16, or int8 with one float scale per (cell, KV head) --
 * the default.  A head is the unit attention reads, so one scale per head
 * costs one multiply per score and keeps rows 64-byte aligned; see
 * README "KV cache" for the measured quality. */
#ifndef QLM_KV_H
#define QLM_KV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "ggml-lite/numa.h"

#define QLM_MAX_SEQ 64 /* a cell's sequence set is a 64-bit mask */

typedef enum qlm_kv_type {
    QLM_KV_DEFAULT = 0, /* int8 */
    QLM_KV_F32,
    QLM_KV_F16,
    QLM_KV_I8,
} qlm_kv_type;

/* "f32", "f16", "int8" (also "q8_0"/"i8" on input); parse returns -1 if unknown. */
const char *qlm_kv_type_name(qlm_kv_type t);
int qlm_kv_type_parse(const char *s);

typedef struct qlm_kv {
    int n_layer, n_ctx, n_head_kv, head_dim, kv_dim; /* kv_dim = n_head_kv * head_dim */
    qlm_kv_type type_k, type_v;                      /* never QLM_KV_DEFAULT */
    /* Head-major, so that attention streams one head's rows contiguously
     * and a head's memory can live on the NUMA node of the threads that
     * read it. */
    void *k, *v;          /* [n_layer][n_head_kv][n_ctx][head_dim] of type_k / type_v */
    float *k_scale, *v_scale; /* int8: [n_layer][n_head_kv][n_ctx], else NULL */
    int32_t *pos;    /* [n_ctx] position of the token in a cell, -1 if free */
    int32_t *tok;    /* [n_ctx] its token id (prefix reuse compares them) */
    uint64_t *seqs;  /* [n_ctx] bit s set: sequence s sees this cell */
    int n_used;      /* cells in use */
    int n_top;       /* 1 + highest used cell: attention scans [0, n_top) */
} qlm_kv;

int qlm_kv_init(qlm_kv *kv, int n_layer, int n_ctx, int n_head_kv, int head_dim,
                qlm_kv_type type_k, qlm_kv_type type_v, qlm_err *err);
void qlm_kv_free(qlm_kv *kv);
void qlm_kv_clear(qlm_kv *kv);

/* Binds each KV head's slabs (all layers, K, V, scales) to the plan's
 * node for that head; nothing when the plan is not bound.  The pages are
 * still untouched, so they are placed on first use.  0, or -1 if the OS
 * refused some binding (the cache works either way). */
int qlm_kv_place(qlm_kv *kv, hwloc_topology_t topo, const gl_numa_plan *plan);

/* Plans placement on this machine's topology for n_threads threads and
 * n_q query heads, pins the threads and binds each KV head to its node
 * (qlm_kv_place); describes the outcome in desc.  Failing to place is not
 * an error: the cache works anywhere, only slower. */
void qlm_kv_numa_place(qlm_kv *kv, gl_numa_mode mode, int n_threads, int n_q, char *desc, size_t desc_len);

/* Bytes of K and V data (scales included) for the whole cache. */
size_t qlm_kv_bytes(const qlm_kv *kv);
/* Bytes of one element of t (int8: 1; its scales are counted apart). */
size_t qlm_kv_elem_size(qlm_kv_type t);

/* The head_dim elements of KV head `head` of cell in layer, in the
 * cache's type; cell + 1 follows at head_dim elements.  int8 scales:
 * one float per (layer, head, cell). */
static inline int64_t qlm_kv_slot(const qlm_kv *kv, int layer, int head, int cell)
{
    return ((int64_t)layer * kv->n_head_kv + head) * kv->n_ctx + cell;
}
static inline void *qlm_kv_k_at(const qlm_kv *kv, int layer, int head, int cell)
{
    return (char *)kv->k + qlm_kv_slot(kv, layer, head, cell) * kv->head_dim * (int64_t)qlm_kv_elem_size(kv->type_k);
}
static inline void *qlm_kv_v_at(const qlm_kv *kv, int layer, int head, int cell)
{
    return (char *)kv->v + qlm_kv_slot(kv, layer, head, cell) * kv->head_dim * (int64_t)qlm_kv_elem_size(kv->type_v);
}
static inline float *qlm_kv_k_scale(const qlm_kv *kv, int layer, int head, int cell)
{
    return kv->k_scale + qlm_kv_slot(kv, layer, head, cell);
}
static inline float *qlm_kv_v_scale(const qlm_kv *kv, int layer, int head, int cell)
{
    return kv->v_scale + qlm_kv_slot(kv, layer, head, cell);
}
static inline bool qlm_kv_visible(const qlm_kv *kv, int cell, int seq, int32_t pos)
{
    return kv->pos[cell] >= 0 && kv->pos[cell] <= pos && (kv->seqs[cell] >> seq & 1);
}

/* Stores one token's K and V rows (kv_dim floats each), converted to the
 * cache's types. */
void qlm_kv_store(qlm_kv *kv, int layer, int cell, const float *k, const float *v);
/* Stores only the K row (a key re-rotated in place by a context shift). */
void qlm_kv_store_k(qlm_kv *kv, int layer, int cell, const float *k);
/* Reads a cell's K (V) row back as floats. */
void qlm_kv_load_k(const qlm_kv *kv, int layer, int cell, float *out);
void qlm_kv_load_v(const qlm_kv *kv, int layer, int cell, float *out);

/* Claims n free cells, writing their indices to cells[]; each is given
 * token tok[i], pos[i] and sequence seq[i].  QLM_ERUNTIME when the cache
 * is full. */
int qlm_kv_claim(qlm_kv *kv, int n, const int32_t *tok, const int32_t *pos, const int32_t *seq,
                 int *cells, qlm_err *err);

/* Removes sequence seq (all sequences if seq < 0) from cells with position
 * in [p0, p1) (p1 < 0: no upper bound); cells left with no sequence are freed. */
void qlm_kv_seq_rm(qlm_kv *kv, int seq, int32_t p0, int32_t p1);
/* Makes dst see every cell of src with position in [p0, p1). */
void qlm_kv_seq_cp(qlm_kv *kv, int src, int dst, int32_t p0, int32_t p1);
/* Adds delta to the position of seq's cells in [p0, p1) and returns how
 * many moved; their cell indices go to moved[] when it is not NULL (room
 * for n_ctx).  Only positions change: re-rotating the keys is the model's
 * part (qlm_ctx_seq_shift).  A cell shared with other sequences moves for
 * all of them.  Cells pushed below position 0 are freed. */
int qlm_kv_seq_add(qlm_kv *kv, int seq, int32_t p0, int32_t p1, int32_t delta, int32_t *moved);
/* Highest position in seq, or -1 if it has no cells. */
int32_t qlm_kv_seq_pos_max(const qlm_kv *kv, int seq);
/* Length of the longest prefix toks[0..k) (k <= n) that seq holds as
 * positions 0..k-1: the prompt tokens whose KV can be reused. */
int qlm_kv_seq_prefix(const qlm_kv *kv, int seq, const int32_t *toks, int n);
/* Cells seq sees. */
int qlm_kv_seq_count(const qlm_kv *kv, int seq);

#endif
