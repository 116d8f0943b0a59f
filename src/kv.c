#include "kv.h"

#include <stdlib.h>
#include <string.h>

int qlm_kv_init(qlm_kv *kv, int n_layer, int n_ctx, int kv_dim, qlm_err *err)
{
    memset(kv, 0, sizeof *kv);
    const size_t n = (size_t)n_layer * (size_t)n_ctx * (size_t)kv_dim;
    kv->n_layer = n_layer;
    kv->n_ctx = n_ctx;
    kv->kv_dim = kv_dim;
    kv->k = calloc(n, sizeof(float)); /* finite even where never written */
    kv->v = calloc(n, sizeof(float));
    kv->pos = malloc((size_t)n_ctx * sizeof *kv->pos);
    kv->seqs = malloc((size_t)n_ctx * sizeof *kv->seqs);
    if (!kv->k || !kv->v || !kv->pos || !kv->seqs) {
        qlm_kv_free(kv);
        return qlm_fail(err, QLM_ERUNTIME,
                        "KV cache: cannot allocate %.1f MiB for %d tokens of context (lower -c)",
                        2.0 * n * sizeof(float) / (1 << 20), n_ctx);
    }
    qlm_kv_clear(kv);
    return QLM_OK;
}

void qlm_kv_free(qlm_kv *kv)
{
    free(kv->k);
    free(kv->v);
    free(kv->pos);
    free(kv->seqs);
    memset(kv, 0, sizeof *kv);
}

void qlm_kv_clear(qlm_kv *kv)
{
    for (int i = 0; i < kv->n_ctx; i++) {
        kv->pos[i] = -1;
        kv->seqs[i] = 0;
    }
    kv->n_used = 0;
    kv->n_top = 0;
}

static void recount_top(qlm_kv *kv)
{
    while (kv->n_top > 0 && kv->pos[kv->n_top - 1] < 0) kv->n_top--;
}

int qlm_kv_claim(qlm_kv *kv, int n, const int32_t *pos, const int32_t *seq, int *cells,
                 qlm_err *err)
{
    if (n > kv->n_ctx - kv->n_used)
        return qlm_fail(err, QLM_ERUNTIME, "KV cache full: %d of %d cells used, %d more needed",
                        kv->n_used, kv->n_ctx, n);
    /* Lowest free cells first keeps the scanned range [0, n_top) tight. */
    int c = 0;
    for (int i = 0; i < n; i++) {
        while (kv->pos[c] >= 0) c++;
        kv->pos[c] = pos[i];
        kv->seqs[c] = 1ull << seq[i];
        cells[i] = c;
        if (c + 1 > kv->n_top) kv->n_top = c + 1;
        c++;
    }
    kv->n_used += n;
    return QLM_OK;
}

static bool in_range(int32_t p, int32_t p0, int32_t p1)
{
    return p >= p0 && (p1 < 0 || p < p1);
}

void qlm_kv_seq_rm(qlm_kv *kv, int seq, int32_t p0, int32_t p1)
{
    const uint64_t mask = seq < 0 ? ~0ull : 1ull << seq;
    for (int c = 0; c < kv->n_top; c++) {
        if (kv->pos[c] < 0 || !(kv->seqs[c] & mask) || !in_range(kv->pos[c], p0, p1)) continue;
        kv->seqs[c] &= ~mask;
        if (!kv->seqs[c]) {
            kv->pos[c] = -1;
            kv->n_used--;
        }
    }
    recount_top(kv);
}

void qlm_kv_seq_cp(qlm_kv *kv, int src, int dst, int32_t p0, int32_t p1)
{
    for (int c = 0; c < kv->n_top; c++)
        if (kv->pos[c] >= 0 && (kv->seqs[c] >> src & 1) && in_range(kv->pos[c], p0, p1))
            kv->seqs[c] |= 1ull << dst;
}

int32_t qlm_kv_seq_pos_max(const qlm_kv *kv, int seq)
{
    int32_t m = -1;
    for (int c = 0; c < kv->n_top; c++)
        if (kv->pos[c] > m && (kv->seqs[c] >> seq & 1)) m = kv->pos[c];
    return m;
}
