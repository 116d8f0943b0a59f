/* kv.h - the KV cache: cells holding one token's K and V rows per layer.
 *
 * Like llama.cpp's unified cache, a cell carries its position and the set
 * of sequences that see it, so one cache serves prefill, decode, batches
 * of sequences and shared prefixes.  Elements are f32 for now; the INT8
 * and F16 types of the KV issue slot in behind the same interface. */
#ifndef QLM_KV_H
#define QLM_KV_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"

#define QLM_MAX_SEQ 64 /* a cell's sequence set is a 64-bit mask */

typedef struct qlm_kv {
    int n_layer, n_ctx, kv_dim; /* kv_dim = n_head_kv * head_dim */
    float *k, *v;    /* [n_layer][n_ctx][kv_dim] */
    int32_t *pos;    /* [n_ctx] position of the token in a cell, -1 if free */
    uint64_t *seqs;  /* [n_ctx] bit s set: sequence s sees this cell */
    int n_used;      /* cells in use */
    int n_top;       /* 1 + highest used cell: attention scans [0, n_top) */
} qlm_kv;

int qlm_kv_init(qlm_kv *kv, int n_layer, int n_ctx, int kv_dim, qlm_err *err);
void qlm_kv_free(qlm_kv *kv);
void qlm_kv_clear(qlm_kv *kv);

static inline float *qlm_kv_k(const qlm_kv *kv, int layer, int cell)
{
    return kv->k + ((int64_t)layer * kv->n_ctx + cell) * kv->kv_dim;
}
static inline float *qlm_kv_v(const qlm_kv *kv, int layer, int cell)
{
    return kv->v + ((int64_t)layer * kv->n_ctx + cell) * kv->kv_dim;
}
static inline bool qlm_kv_visible(const qlm_kv *kv, int cell, int seq, int32_t pos)
{
    return kv->pos[cell] >= 0 && kv->pos[cell] <= pos && (kv->seqs[cell] >> seq & 1);
}

/* Claims n free cells, writing their indices to cells[]; each is given
 * pos[i] and sequence seq[i].  QLM_ERUNTIME when the cache is full. */
int qlm_kv_claim(qlm_kv *kv, int n, const int32_t *pos, const int32_t *seq, int *cells,
                 qlm_err *err);

/* Removes sequence seq (all sequences if seq < 0) from cells with position
 * in [p0, p1) (p1 < 0: no upper bound); cells left with no sequence are freed. */
void qlm_kv_seq_rm(qlm_kv *kv, int seq, int32_t p0, int32_t p1);
/* Makes dst see every cell of src with position in [p0, p1). */
void qlm_kv_seq_cp(qlm_kv *kv, int src, int dst, int32_t p0, int32_t p1);
/* Highest position in seq, or -1 if it has no cells. */
int32_t qlm_kv_seq_pos_max(const qlm_kv *kv, int seq);

#endif
