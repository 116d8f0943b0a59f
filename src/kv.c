#include "kv.h"

#include <stdlib.h>
#include <string.h>

#include "ggml-lite/arena.h"
#include "quant/fp16.h"
#include "quant/kv_ops.h"

const char *qlm_kv_type_name(qlm_kv_type t)
{
    switch (t) {
    case QLM_KV_F32: return "f32";
    case QLM_KV_F16: return "f16";
    case QLM_KV_DEFAULT:
    case QLM_KV_I8: return "int8";
    }
    return "?";
}

int qlm_kv_type_parse(const char *s)
{
    if (!strcmp(s, "f32")) return QLM_KV_F32;
    if (!strcmp(s, "f16")) return QLM_KV_F16;
    if (!strcmp(s, "int8") || !strcmp(s, "i8") || !strcmp(s, "q8_0") || !strcmp(s, "q8")) return QLM_KV_I8;
    return -1;
}

size_t qlm_kv_elem_size(qlm_kv_type t)
{
    return t == QLM_KV_F32 ? 4 : t == QLM_KV_F16 ? 2 : 1;
}

static size_t side_bytes(const qlm_kv *kv, qlm_kv_type t)
{
    const size_t rows = (size_t)kv->n_layer * (size_t)kv->n_ctx;
    return rows * kv->kv_dim * qlm_kv_elem_size(t) + (t == QLM_KV_I8 ? rows * kv->n_head_kv * sizeof(float) : 0);
}

size_t qlm_kv_bytes(const qlm_kv *kv)
{
    return side_bytes(kv, kv->type_k) + side_bytes(kv, kv->type_v);
}

int qlm_kv_init(qlm_kv *kv, int n_layer, int n_ctx, int n_head_kv, int head_dim,
                qlm_kv_type type_k, qlm_kv_type type_v, qlm_err *err)
{
    memset(kv, 0, sizeof *kv);
    kv->n_layer = n_layer;
    kv->n_ctx = n_ctx;
    kv->n_head_kv = n_head_kv;
    kv->head_dim = head_dim;
    kv->kv_dim = n_head_kv * head_dim;
    kv->type_k = type_k == QLM_KV_DEFAULT ? QLM_KV_I8 : type_k;
    kv->type_v = type_v == QLM_KV_DEFAULT ? QLM_KV_I8 : type_v;
    const size_t rows = (size_t)n_layer * (size_t)n_ctx, n = rows * (size_t)kv->kv_dim;
    /* zeroed: finite even where never written (attention may multiply an
     * unwritten row by a zero weight) */
    kv->k = gl_arena_alloc(n * qlm_kv_elem_size(kv->type_k));
    kv->v = gl_arena_alloc(n * qlm_kv_elem_size(kv->type_v));
    bool ok = kv->k && kv->v;
    if (kv->type_k == QLM_KV_I8) ok = ok && (kv->k_scale = gl_arena_alloc(rows * n_head_kv * sizeof(float)));
    if (kv->type_v == QLM_KV_I8) ok = ok && (kv->v_scale = gl_arena_alloc(rows * n_head_kv * sizeof(float)));
    kv->pos = malloc((size_t)n_ctx * sizeof *kv->pos);
    kv->seqs = malloc((size_t)n_ctx * sizeof *kv->seqs);
    kv->tok = malloc((size_t)n_ctx * sizeof *kv->tok);
    if (!ok || !kv->pos || !kv->seqs || !kv->tok) {
        const double mib = qlm_kv_bytes(kv) / (double)(1 << 20);
        qlm_kv_free(kv);
        return qlm_fail(err, QLM_ERUNTIME,
                        "KV cache: cannot allocate %.1f MiB for %d tokens of context (lower -c)", mib, n_ctx);
    }
    qlm_kv_clear(kv);
    return QLM_OK;
}

void qlm_kv_free(qlm_kv *kv)
{
    const size_t rows = (size_t)kv->n_layer * (size_t)kv->n_ctx, n = rows * (size_t)kv->kv_dim;
    gl_arena_free(kv->k, n * qlm_kv_elem_size(kv->type_k));
    gl_arena_free(kv->v, n * qlm_kv_elem_size(kv->type_v));
    gl_arena_free(kv->k_scale, rows * kv->n_head_kv * sizeof(float));
    gl_arena_free(kv->v_scale, rows * kv->n_head_kv * sizeof(float));
    free(kv->pos);
    free(kv->seqs);
    free(kv->tok);
    memset(kv, 0, sizeof *kv);
}

int qlm_kv_place(qlm_kv *kv, hwloc_topology_t topo, const gl_numa_plan *plan)
{
    if (!plan->bound) return 0;
    int bad = 0;
    const size_t nc = (size_t)kv->n_ctx, hd = (size_t)kv->head_dim;
    for (int l = 0; l < kv->n_layer; l++)
        for (int h = 0; h < kv->n_head_kv; h++) {
            const int nd = plan->head_node[h < plan->n_heads ? h : 0];
            bad |= gl_numa_bind_area(topo, plan, nd, qlm_kv_k_at(kv, l, h, 0), nc * hd * qlm_kv_elem_size(kv->type_k));
            bad |= gl_numa_bind_area(topo, plan, nd, qlm_kv_v_at(kv, l, h, 0), nc * hd * qlm_kv_elem_size(kv->type_v));
            if (kv->k_scale) bad |= gl_numa_bind_area(topo, plan, nd, qlm_kv_k_scale(kv, l, h, 0), nc * sizeof(float));
            if (kv->v_scale) bad |= gl_numa_bind_area(topo, plan, nd, qlm_kv_v_scale(kv, l, h, 0), nc * sizeof(float));
        }
    return bad ? -1 : 0;
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

/* One token's row of one side (K or V) to and from its heads. */
static void side_io(qlm_kv *kv, bool is_k, int layer, int cell, float *x, bool store)
{
    const qlm_kv_type t = is_k ? kv->type_k : kv->type_v;
    const int hd = kv->head_dim;
    for (int h = 0; h < kv->n_head_kv; h++) {
        void *row = is_k ? qlm_kv_k_at(kv, layer, h, cell) : qlm_kv_v_at(kv, layer, h, cell);
        float *xh = x + h * hd;
        if (t == QLM_KV_F32) {
            if (store) memcpy(row, xh, sizeof(float) * (size_t)hd);
            else memcpy(xh, row, sizeof(float) * (size_t)hd);
        } else if (t == QLM_KV_F16) {
            uint16_t *r = row;
            for (int i = 0; i < hd; i++) {
                if (store) r[i] = qt_f32_to_f16(xh[i]);
                else xh[i] = qt_f16_to_f32(r[i]);
            }
        } else {
            float *sc = is_k ? qlm_kv_k_scale(kv, layer, h, cell) : qlm_kv_v_scale(kv, layer, h, cell);
            int8_t *q = row;
            if (store) *sc = qt_kv_quantize_i8(hd, xh, q);
            else for (int i = 0; i < hd; i++) xh[i] = *sc * q[i];
        }
    }
}

void qlm_kv_store(qlm_kv *kv, int layer, int cell, const float *k, const float *v)
{
    side_io(kv, true, layer, cell, (float *)k, true);
    side_io(kv, false, layer, cell, (float *)v, true);
}

void qlm_kv_store_k(qlm_kv *kv, int layer, int cell, const float *k)
{
    side_io(kv, true, layer, cell, (float *)k, true);
}

void qlm_kv_load_k(const qlm_kv *kv, int layer, int cell, float *out)
{
    side_io((qlm_kv *)kv, true, layer, cell, out, false);
}

void qlm_kv_load_v(const qlm_kv *kv, int layer, int cell, float *out)
{
    side_io((qlm_kv *)kv, false, layer, cell, out, false);
}

static void recount_top(qlm_kv *kv)
{
    while (kv->n_top > 0 && kv->pos[kv->n_top - 1] < 0) kv->n_top--;
}

int qlm_kv_claim(qlm_kv *kv, int n, const int32_t *tok, const int32_t *pos, const int32_t *seq,
                 int *cells, qlm_err *err)
{
    if (n > kv->n_ctx - kv->n_used)
        return qlm_fail(err, QLM_ERUNTIME, "KV cache full: %d of %d cells used, %d more needed",
                        kv->n_used, kv->n_ctx, n);
    /* Lowest free cells first keeps the scanned range [0, n_top) tight. */
    int c = 0;
    for (int i = 0; i < n; i++) {
        while (kv->pos[c] >= 0) c++;
        kv->pos[c] = pos[i];
        kv->tok[c] = tok[i];
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

static void free_cell(qlm_kv *kv, int c)
{
    kv->pos[c] = -1;
    kv->seqs[c] = 0;
    kv->n_used--;
}

void qlm_kv_seq_rm(qlm_kv *kv, int seq, int32_t p0, int32_t p1)
{
    const uint64_t mask = seq < 0 ? ~0ull : 1ull << seq;
    for (int c = 0; c < kv->n_top; c++) {
        if (kv->pos[c] < 0 || !(kv->seqs[c] & mask) || !in_range(kv->pos[c], p0, p1)) continue;
        kv->seqs[c] &= ~mask;
        if (!kv->seqs[c]) free_cell(kv, c);
    }
    recount_top(kv);
}

void qlm_kv_seq_cp(qlm_kv *kv, int src, int dst, int32_t p0, int32_t p1)
{
    for (int c = 0; c < kv->n_top; c++)
        if (kv->pos[c] >= 0 && (kv->seqs[c] >> src & 1) && in_range(kv->pos[c], p0, p1))
            kv->seqs[c] |= 1ull << dst;
}

int qlm_kv_seq_add(qlm_kv *kv, int seq, int32_t p0, int32_t p1, int32_t delta, int32_t *moved)
{
    int n = 0;
    for (int c = 0; c < kv->n_top; c++) {
        if (kv->pos[c] < 0 || !(kv->seqs[c] >> seq & 1) || !in_range(kv->pos[c], p0, p1)) continue;
        if ((int64_t)kv->pos[c] + delta < 0) {
            free_cell(kv, c);
            continue;
        }
        kv->pos[c] += delta;
        if (moved) moved[n] = c;
        n++;
    }
    recount_top(kv);
    return n;
}

int32_t qlm_kv_seq_pos_max(const qlm_kv *kv, int seq)
{
    int32_t m = -1;
    for (int c = 0; c < kv->n_top; c++)
        if (kv->pos[c] > m && (kv->seqs[c] >> seq & 1)) m = kv->pos[c];
    return m;
}

int qlm_kv_seq_prefix(const qlm_kv *kv, int seq, const int32_t *toks, int n)
{
    if (n <= 0) return 0;
    uint8_t *have = calloc((size_t)n, 1);
    if (!have) return 0; /* no reuse is always correct */
    for (int c = 0; c < kv->n_top; c++) {
        const int32_t p = kv->pos[c];
        if (p >= 0 && p < n && (kv->seqs[c] >> seq & 1) && kv->tok[c] == toks[p]) have[p] = 1;
    }
    int k = 0;
    while (k < n && have[k]) k++;
    free(have);
    return k;
}

int qlm_kv_seq_count(const qlm_kv *kv, int seq)
{
    int n = 0;
    for (int c = 0; c < kv->n_top; c++) n += kv->pos[c] >= 0 && (kv->seqs[c] >> seq & 1);
    return n;
}
