/* decode.c - the forward pass of a llama-family transformer over a batch.
 *
 * Read top to bottom: embed, then per layer attention and feed-forward
 * with residuals, then the output head for the rows that want logits.
 * Shapes use T = tokens in the micro-batch, E = n_embd, QD = n_head *
 * head_dim, KD = n_head_kv * head_dim, F = n_ff, V = n_vocab. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "ggml-lite/attn.h"
#include "ggml-lite/matmul.h"
#include "ggml-lite/promote.h"
#include "ggml-lite/ops.h"
#include "ggml-lite/threads.h"
#include "ggml-lite/vec.h"

struct qlm_ctx {
    const qlm_model *m;
    qlm_kv kv;
    int n_batch, n_threads;
    float *x;       /* [T][E] residual stream */
    float *xn;      /* [T][max(E, QD)] normed input / projection output */
    float *q;       /* [T][QD] */
    float *k, *v;   /* [T][KD] */
    float *att;     /* [T][QD] attention output */
    float *g, *u;   /* [T][F] feed-forward gate and up */
    float *scores;  /* [n_threads][n_head / n_head_kv][window] attention weights */
    int32_t *vis;   /* [n_threads][n_ctx] visible cells of a query, in order */
    int *vis_tok;   /* [n_threads][3] token whose list vis holds (-1: none), its length,
                       whether it is cells 0..n-1 in order */
    int8_t *q8;     /* [n_threads][head_dim] int8 query */
    float *vrows;   /* [n_threads][n_ctx][head_dim] gathered f32 V rows */
    float *krow;    /* [n_threads][KD] a key being re-rotated */
    void *mm;       /* activation quantization scratch */
    int *cells;     /* [T] KV cells of the micro-batch */
    int *out_row;   /* [T] a token's row of logits in this micro-batch, -1: none */
    int8_t *tiled;  /* [T] p.v in tinyBLAS order (see attention) */
    int *n_rows;    /* [T] positions 0..n-1 a prompt token sees, when its sequence holds all of them; else 0 */
    int *blocks;    /* [T + 1] starts of the runs of such tokens that attend together */
    float *aw;      /* [n_threads][aw_len] gl_attn_prompt's work */
    /* Flash-Decoding (attend_split), int8 K and V only: one token's
     * scores, and its parts' (up to n_threads per KV head) largest scores
     * and V scales and their sums */
    float *sp_s;    /* [n_head][window] */
    float *sp_mx;   /* [n_head_kv][n_threads][group] */
    float *sp_vmax; /* [n_head_kv][n_threads] */
    double *sp_acc; /* [n_head_kv][n_threads][group][head_dim] */
    double *sp_z;   /* [n_head_kv][n_threads][group] */
    uint8_t *gath;  /* [n_threads][gath_len] a block's K and V rows and scales gathered in position order */
    size_t gath_len;
    size_t aw_len;
    float *logits;  /* [n_logits][V] */
    int n_logits, logits_cap;
    int shift_keep; /* qlm_ctx_shift_keep */
    bool unfused;   /* qlm_ctx_params.unfused */
    gl_barrier bar; /* layers_fused's */
    char numa[96];  /* qlm_ctx_numa */
};

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

/* Tokens of a prompt that attend together (gl_attn_prompt): enough that
 * each K and V row's rearranging is spread over many queries, few enough
 * that their scores stay in L2. */
enum { PROMPT_BLOCK = 16 };
static size_t prompt_block(size_t group)
{
    const size_t most = GL_ATTN_PROMPT_MAXQ / (group ? group : 1);
    return most < PROMPT_BLOCK ? (most ? most : 1) : PROMPT_BLOCK;
}

/* The activation buffers on cache-line boundaries: malloc's large blocks
 * start 16 bytes into a page, so every 64-byte vector load and store of
 * the kernels (the tile kernels' output rows above all) split two lines. */
static void *alloc64(size_t n) { return aligned_alloc(64, (n + 63) / 64 * 64); }

int qlm_ctx_new(qlm_ctx **out, const qlm_model *m, const qlm_ctx_params *p, qlm_err *err)
{
    *out = NULL;
    const qlm_hparams *hp = &m->hp;
    qlm_ctx *c = calloc(1, sizeof *c);
    if (!c) return qlm_fail(err, QLM_ERUNTIME, "out of memory");
    c->m = m;
    int n_ctx = p && p->n_ctx > 0 ? p->n_ctx : (hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096);
    c->n_batch = p && p->n_batch > 0 ? p->n_batch : 512;
    c->shift_keep = p && p->ctx_shift ? (p->n_keep < 0 ? -1 : p->n_keep) : -2;
    c->unfused = p && p->unfused;
    c->n_threads = p && p->n_threads > 0 ? p->n_threads : gl_physical_cores();
    gl_set_threads(c->n_threads);
    gl_barrier_init(&c->bar, c->n_threads); /* whole after every round: one for all passes */
    int rc = qlm_kv_init(&c->kv, hp->n_layer, n_ctx, hp->n_head_kv, hp->head_dim,
                         p ? p->type_k : QLM_KV_DEFAULT, p ? p->type_v : QLM_KV_DEFAULT, err);
    if (rc) {
        free(c);
        return rc;
    }
    qlm_kv_numa_place(&c->kv, p ? (gl_numa_mode)p->numa : GL_NUMA_DISTRIBUTE, c->n_threads, hp->n_head,
                      c->numa, sizeof c->numa);
    const size_t T = (size_t)c->n_batch, E = hp->n_embd, QD = (size_t)hp->n_head * hp->head_dim,
                 KD = (size_t)hp->n_head_kv * hp->head_dim, F = hp->n_ff;
    size_t mm = 0;
    for (int l = 0; l < hp->n_layer; l++) {
        const qlm_layer *L = &m->layers[l];
        const gl_tensor *ws[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) mm = max_sz(mm, gl_matmul_scratch(ws[i], (int)T));
    }
    mm = max_sz(mm, gl_matmul_scratch(&m->output, (int)T));
    /* layers_fused: gate/up's quantized input and down's side by side */
    for (int l = 0; l < hp->n_layer; l++)
        mm = max_sz(mm, 64 + gl_matmul_scratch(&m->layers[l].w_gate, (int)T) +
                            gl_matmul_scratch(&m->layers[l].w_down, (int)T));
    c->x = alloc64(T * E * sizeof(float));
    c->xn = alloc64(T * max_sz(E, QD) * sizeof(float));
    c->q = alloc64(T * QD * sizeof(float));
    c->k = alloc64(T * KD * sizeof(float));
    c->v = alloc64(T * KD * sizeof(float));
    c->att = alloc64(T * QD * sizeof(float));
    c->g = alloc64(T * F * sizeof(float));
    c->u = alloc64(T * F * sizeof(float));
    const size_t NT = (size_t)c->n_threads, win = (size_t)(n_ctx + 255) / 256 * 256;
    const size_t group = (size_t)(hp->n_head_kv > 0 ? hp->n_head / hp->n_head_kv : 1);
    c->scores = alloc64(NT * (group > 1 ? group : 1) * win * sizeof(float));
    c->vis = malloc(NT * n_ctx * sizeof(int32_t));
    c->vis_tok = malloc(3 * NT * sizeof(int));
    c->q8 = malloc(NT * hp->head_dim);
    c->krow = malloc(NT * KD * sizeof(float));
    c->vrows = c->kv.type_v == QLM_KV_F32 ? malloc(NT * n_ctx * hp->head_dim * sizeof(float)) : malloc(1);
    c->mm = alloc64(mm ? mm : 1);
    c->cells = malloc(T * sizeof(int));
    c->out_row = malloc(T * sizeof(int));
    c->tiled = malloc(T);
    c->n_rows = malloc(T * sizeof(int));
    c->blocks = malloc((T + 1) * sizeof(int));
    /* a prompt's blocks of PROMPT_BLOCK tokens up to 1024 rows, fewer
     * tokens further in, one token's heads at any depth */
    c->aw_len = max_sz(gl_attn_prompt_work(hp->head_dim, (int)group, n_ctx),
                       gl_attn_prompt_work(hp->head_dim, (int)(prompt_block(group) * group), n_ctx < 1024 ? n_ctx : 1024));
    c->aw_len = (c->aw_len + 15) / 16 * 16;
    c->aw = alloc64(NT * c->aw_len * sizeof(float));
    c->gath_len = ((size_t)n_ctx * (hp->head_dim + sizeof(float)) * 2 + 63) / 64 * 64;
    c->gath = alloc64(NT * c->gath_len);
    const bool split = c->kv.type_k == QLM_KV_I8 && c->kv.type_v == QLM_KV_I8;
    const size_t H = (size_t)hp->n_head, HKV = (size_t)hp->n_head_kv, D = (size_t)hp->head_dim;
    c->sp_s = split ? alloc64(H * win * sizeof(float)) : NULL;
    c->sp_mx = split ? malloc(H * NT * sizeof(float)) : NULL;
    c->sp_vmax = split ? malloc(HKV * NT * sizeof(float)) : NULL;
    c->sp_acc = split ? alloc64(H * NT * D * sizeof(double)) : NULL;
    c->sp_z = split ? malloc(H * NT * sizeof(double)) : NULL;
    if (!c->tiled || !c->x || !c->xn || !c->q || !c->k || !c->v || !c->att || !c->g || !c->u || !c->scores ||
        !c->vis || !c->vis_tok || !c->q8 || !c->krow || !c->vrows || !c->mm || !c->cells || !c->out_row ||
        !c->n_rows || !c->blocks || !c->aw || !c->gath ||
        (split && (!c->sp_s || !c->sp_mx || !c->sp_vmax || !c->sp_acc || !c->sp_z))) {
        qlm_ctx_free(c);
        return qlm_fail(err, QLM_ERUNTIME, "out of memory allocating scratch for a %d-token batch",
                        c->n_batch);
    }
    *out = c;
    return QLM_OK;
}

void qlm_ctx_free(qlm_ctx *c)
{
    if (!c) return;
    qlm_kv_free(&c->kv);
    free(c->x); free(c->xn); free(c->q); free(c->k); free(c->v); free(c->att);
    free(c->g); free(c->u); free(c->scores); free(c->mm); free(c->cells); free(c->out_row); free(c->tiled); free(c->logits);
    free(c->n_rows); free(c->blocks); free(c->aw); free(c->gath);
    free(c->sp_s); free(c->sp_mx); free(c->sp_vmax); free(c->sp_acc); free(c->sp_z);
    free(c->vis); free(c->vis_tok); free(c->q8); free(c->krow); free(c->vrows);
    free(c);
}

int qlm_ctx_n_ctx(const qlm_ctx *c) { return c->kv.n_ctx; }
int qlm_ctx_n_threads(const qlm_ctx *c) { return c->n_threads; }
int qlm_ctx_n_batch(const qlm_ctx *c) { return c->n_batch; }
qlm_kv *qlm_ctx_kv(qlm_ctx *c) { return &c->kv; }
int qlm_ctx_shift_keep(const qlm_ctx *c) { return c->shift_keep; }
const char *qlm_ctx_numa(const qlm_ctx *c) { return c->numa; }

/* Layer l's RoPE: its own base (sliding-window layers have theirs), and
 * longrope's factors chosen by the context this cache was made for. */
static gl_rope layer_rope(const qlm_ctx *c, int l)
{
    const qlm_model *m = c->m;
    const qlm_hparams *hp = &m->hp;
    const float *factors = m->rope_long ? (c->kv.n_ctx > hp->n_ctx_orig ? m->rope_long : m->rope_short)
                                        : m->rope_freqs;
    return (gl_rope){.n_rot = hp->n_rot, .freq_base = m->layers[l].rope_base,
                     .freq_scale = m->layers[l].rope_freq_scale, .freq_factors = factors,
                     .neox = m->arch->rope_neox, .mscale = hp->rope_mscale};
}

int qlm_ctx_seq_shift(qlm_ctx *c, int seq, int32_t p0, int32_t p1, int32_t delta)
{
    qlm_kv *kv = &c->kv;
    int32_t *moved = c->vis; /* attention's scratch, free between passes */
    const int n = qlm_kv_seq_add(kv, seq, p0, p1, delta, moved);
    const int32_t d = delta;
    #pragma omp parallel for collapse(2) schedule(static) num_threads(c->n_threads)
    for (int l = 0; l < kv->n_layer; l++)
        for (int i = 0; i < n; i++) {
            /* a pure rotation by delta: the keys already carry mscale */
            gl_rope rope = layer_rope(c, l);
            rope.mscale = 1.0f;
            float *row = c->krow + (size_t)omp_get_thread_num() * kv->kv_dim;
            qlm_kv_load_k(kv, l, moved[i], row);
            gl_rope_apply(row, &d, 1, kv->n_head_kv, kv->head_dim, &rope);
            qlm_kv_store_k(kv, l, moved[i], row);
        }
    return n;
}

int qlm_ctx_context_shift(qlm_ctx *c, int seq, int n_keep)
{
    const int n_past = qlm_kv_seq_pos_max(&c->kv, seq) + 1;
    const int n_discard = (n_past - n_keep) / 2;
    if (n_keep < 0 || n_discard <= 0) return 0;
    qlm_kv_seq_rm(&c->kv, seq, n_keep, n_keep + n_discard);
    qlm_ctx_seq_shift(c, seq, n_keep + n_discard, -1, -n_discard);
    return n_discard;
}

const float *qlm_logits(const qlm_ctx *c, int i)
{
    if (i < 0 || i >= c->n_logits) return NULL;
    return c->logits + (size_t)i * c->m->hp.n_vocab;
}

/* The barrier of a parallel region of the context's threads (the fused
 * layers, attention): its own (gl_barrier: spins a short while before it
 * sleeps) where the team has the size it was made for.  pf:
 * the weight rows this thread reads first in the next matmul, which it
 * asks for while it waits (gl_barrier_wait_pf). */
static void sync_team(qlm_ctx *c, bool own, gl_prefetch pf)
{
    if (own) {
        gl_barrier_wait_pf(&c->bar, pf);
        return;
    }
    #pragma omp barrier
}

/* Causal attention of each batch token over the cells its sequence sees,
 * grouped-query: query head h reads KV head h / (n_head / n_head_kv).
 *
 * The visible cells are listed in cell order and attention works on that
 * list by rank (ggml-lite/attn.h), so a sequence's result is the same
 * whether its cells are contiguous (alone) or interleaved with other
 * sequences' (a batch of many).  Alone, rank = cell index, and f32 KV
 * keeps llama.cpp's arithmetic exactly: its window padded to 256 cells,
 * ggml's dot and softmax orders, and for p.v the tinyBLAS order when
 * several tokens are processed at once, ggml's vec_dot order for one.
 *
 * "Several tokens at once" is decided per sequence (c->tiled): a token
 * decoded next to tokens of other sequences gets the one-token order, so
 * a prompt's result does not depend on what else shares its batch, and a
 * batch marked one_by_one (speculative verification) reproduces token by
 * token decoding exactly. */
static gl_kv_elem elem_of(qlm_kv_type t)
{
    return t == QLM_KV_F32 ? GL_KV_F32 : t == QLM_KV_F16 ? GL_KV_F16 : GL_KV_I8;
}

static bool in_pos_order(const int32_t *cells, int n, const int32_t *pos)
{
    for (int i = 1; i < n; i++)
        if (pos[cells[i]] < pos[cells[i - 1]]) return false;
    return true;
}

static int pos_cmp(const void *a, const void *b, void *pos)
{
    const int32_t pa = ((const int32_t *)pos)[*(const int32_t *)a], pb = ((const int32_t *)pos)[*(const int32_t *)b];
    return (pa > pb) - (pa < pb);
}

/* Token t's visible cells in rank order, in thread th's slot (c->vis),
 * kept for the token's next heads; returns their number, and whether
 * they are cells 0..n-1 in order (*contiguous: attention then reads the
 * cache without the list). */
static int visible(qlm_ctx *c, int t, int th, const int32_t *pos, const int32_t *seq, bool *contiguous)
{
    const qlm_kv *kv = &c->kv;
    int32_t *vis = c->vis + (size_t)th * kv->n_ctx;
    if (c->vis_tok[3 * th] != t) {
        int n = 0;
        for (int j = 0; j < kv->n_top; j++)
            if (qlm_kv_visible(kv, j, seq[t], pos[t])) vis[n++] = j;
        c->vis_tok[3 * th] = t;
        c->vis_tok[3 * th + 1] = n;
        c->vis_tok[3 * th + 2] = n == 0 || vis[n - 1] == n - 1;
        /* Ranks follow positions, as they do alone: a sequence
         * whose later positions took lower free cells (freed by
         * other sequences, or by rejected drafts) would otherwise
         * be summed in another order. */
        if (!in_pos_order(vis, n, kv->pos)) {
            qsort_r(vis, (size_t)n, sizeof *vis, pos_cmp, kv->pos);
            c->vis_tok[3 * th + 2] = 0;
        }
    }
    *contiguous = c->vis_tok[3 * th + 2];
    return c->vis_tok[3 * th + 1];
}

/* KV head kvh's K and V columns of layer l. */
static void kv_views(const qlm_ctx *c, int layer, int kvh, gl_kv_view *kview, gl_kv_view *vview)
{
    const qlm_kv *kv = &c->kv;
    const int D = c->m->hp.head_dim;
    *kview = (gl_kv_view){.type = elem_of(kv->type_k), .ld = D, .lds = 1, .data = qlm_kv_k_at(kv, layer, kvh, 0),
                          .scale = kv->k_scale ? qlm_kv_k_scale(kv, layer, kvh, 0) : NULL};
    *vview = (gl_kv_view){.type = elem_of(kv->type_v), .ld = D, .lds = 1, .data = qlm_kv_v_at(kv, layer, kvh, 0),
                          .scale = kv->v_scale ? qlm_kv_v_scale(kv, layer, kvh, 0) : NULL};
}

/* Query head h of batch token t; runs on thread th, whose scratch slots it
 * uses (its cached visible-cell list included).  by_group: the first head
 * of each KV head's group may do the whole group (gl_attn_group, same
 * bits), the others then return at once (a static split of the heads
 * among threads would then be unbalanced: such callers pass false). */
static void attend(qlm_ctx *c, int layer, int t, int h, int th, const int32_t *pos, const int32_t *seq,
                   bool by_group)
{
    const qlm_hparams *hp = &c->m->hp;
    const qlm_kv *kv = &c->kv;
    const int D = hp->head_dim, H = hp->n_head, group = hp->n_head / hp->n_head_kv;
    const int QD = H * D, n_ctx = kv->n_ctx;
    const size_t win = (size_t)(n_ctx + 255) / 256 * 256;
    /* families that scale Q itself (forward) score with a factor of 1 */
    const float scale = c->m->arch->scale_q ? 1.0f : hp->attn_scale;
    /* sliding-window layers see the last `window` positions only: rows
     * further back are masked (exact zeros), not dropped, so the float
     * order stays llama.cpp's */
    const int window = c->m->layers[layer].swa ? hp->n_swa : 0;
    bool contiguous;
    const int n = visible(c, t, th, pos, seq, &contiguous);
    const int32_t *vis = contiguous ? NULL : c->vis + (size_t)th * n_ctx;
    gl_kv_view kview, vview;
    kv_views(c, layer, h / group, &kview, &vview);
    gl_attn_scratch sc = {.s = c->scores + (size_t)th * group * win, .n_win = group, .q8 = c->q8 + (size_t)th * D,
                          .vrows = c->vrows + (kv->type_v == QLM_KV_F32 ? (size_t)th * n_ctx * D : 0)};
    if (by_group && group > 1 && gl_attn_group_applies(D, &kview, &vview)) {
        if (h % group) return;
        int r0 = 0;
        if (window) {
            /* kv_ops.h's int8 contract gives masked rows exact zeros and
             * takes kw from the others: the rows in the window alone give
             * the same bits, and in rank (position) order they are the
             * list's last ones */
            const int min_pos = pos[t] - window + 1;
            r0 = n;
            while (r0 > 0 && kv->pos[vis ? vis[r0 - 1] : r0 - 1] >= min_pos) r0--;
            if (!vis) {
                kview.data = (const int8_t *)kview.data + (size_t)r0 * (size_t)kview.ld;
                kview.scale += (size_t)r0 * (size_t)kview.lds;
                vview.data = (const int8_t *)vview.data + (size_t)r0 * (size_t)vview.ld;
                vview.scale += (size_t)r0 * (size_t)vview.lds;
            }
        }
        gl_attn_group(D, group, c->q + (size_t)t * QD + (size_t)h * D, scale, &kview, &vview, n - r0,
                      vis ? vis + r0 : NULL, n_ctx, &sc, c->att + (size_t)t * QD + (size_t)h * D);
        return;
    }
    const gl_attn_mask mask = {.row_pos = window ? kv->pos : NULL, .min_pos = pos[t] - window + 1};
    gl_attn_head(D, c->q + (size_t)t * QD + (size_t)h * D, scale, &kview, &vview, n, vis, &mask, n_ctx, c->tiled[t],
                 &sc, c->att + (size_t)t * QD + (size_t)h * D);
}

static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }

/* Flash-Decoding (gl_attn_split_*): one token's attention over a long
 * context with its rows shared among the threads, where its KV heads
 * alone would leave some idle (SmolLM2's 3 KV heads or Gemma 3's 1 on 2
 * threads; 4 KV heads on 8).  Each KV head's rows go in P parts, P * KV
 * heads a multiple of the threads, at least SPLIT_ROWS rows each (3 KV
 * heads of 3 queries on 2 threads, one layer: 1024 rows 51 -> 45 us, 2048
 * 64-81 -> 55-74 us; 512 rows gained nothing); every
 * thread of the team calls this and meets the others at two barriers.
 * kv_ops.h's int8 contract sums exactly, so the bits are gl_attn_group's
 * whatever P is: a token decodes alike at any thread count, and as it
 * does inside a verified draft.  Returns false (nothing done) where it
 * does not apply. */
enum { SPLIT_ROWS = 512 };
static bool attend_split(qlm_ctx *c, int layer, int t, int th, bool own, const int32_t *pos, const int32_t *seq)
{
    const qlm_hparams *hp = &c->m->hp;
    const int D = hp->head_dim, H = hp->n_head, HKV = hp->n_head_kv, group = H / HKV, QD = H * D;
    const int P = c->n_threads / gcd(HKV, c->n_threads);
    gl_kv_view kview, vview;
    kv_views(c, layer, 0, &kview, &vview);
    if (P < 2 || !c->sp_s || c->m->layers[layer].swa || !gl_attn_split_applies(D, group, &kview, &vview)) return false;
    bool contiguous;
    const int n = visible(c, t, th, pos, seq, &contiguous);
    if (n < P * SPLIT_ROWS) return false;
    const int32_t *vis = contiguous ? NULL : c->vis + (size_t)th * c->kv.n_ctx;
    const int64_t ld_s = (int64_t)(c->kv.n_ctx + 255) / 256 * 256;
    const float scale = c->m->arch->scale_q ? 1.0f : hp->attn_scale;
    /* part p of a KV head: ranks r0..r1-1, cut on whole V tiles */
#define PART_ROWS(p) ((p) == P ? n : (int)((int64_t)n * (p) / P) / 64 * 64)
    #pragma omp for schedule(static) nowait
    for (int u = 0; u < HKV * P; u++) {
        const int kvh = u / P, p = u % P;
        kv_views(c, layer, kvh, &kview, &vview);
        gl_attn_split_scores(D, group, c->q + (size_t)t * QD + (size_t)kvh * group * D, scale, &kview, &vview,
                             PART_ROWS(p), PART_ROWS(p + 1), vis, c->sp_s + (size_t)kvh * group * ld_s, ld_s,
                             c->sp_mx + (size_t)u * group, c->sp_vmax + u);
    }
    sync_team(c, own, (gl_prefetch){0});
    /* the same static split: a thread sums the parts it scored */
    #pragma omp for schedule(static) nowait
    for (int u = 0; u < HKV * P; u++) {
        const int kvh = u / P, p = u % P;
        float mx[GL_ATTN_SPLIT_MAXQ], vmax = 0.0f;
        for (int h = 0; h < group; h++) mx[h] = -INFINITY;
        for (int i = kvh * P; i < kvh * P + P; i++) {
            for (int h = 0; h < group; h++) mx[h] = c->sp_mx[(size_t)i * group + h] > mx[h] ? c->sp_mx[(size_t)i * group + h] : mx[h];
            vmax = c->sp_vmax[i] > vmax ? c->sp_vmax[i] : vmax;
        }
        kv_views(c, layer, kvh, &kview, &vview);
        gl_attn_split_sums(D, group, &vview, PART_ROWS(p), PART_ROWS(p + 1), vis, c->sp_s + (size_t)kvh * group * ld_s,
                           ld_s, mx, vmax, c->sp_acc + (size_t)u * group * D, c->sp_z + (size_t)u * group);
    }
#undef PART_ROWS
    sync_team(c, own, (gl_prefetch){0});
    #pragma omp for schedule(static) nowait
    for (int kvh = 0; kvh < HKV; kvh++) {
        float vmax = 0.0f;
        for (int i = kvh * P; i < kvh * P + P; i++) vmax = c->sp_vmax[i] > vmax ? c->sp_vmax[i] : vmax;
        gl_attn_split_out(D, group, P, c->sp_acc + (size_t)kvh * P * group * D, (int64_t)group * D,
                          c->sp_z + (size_t)kvh * P * group, vmax, c->att + (size_t)t * QD + (size_t)kvh * group * D);
    }
    return true;
}

/* Which tokens take gl_attn_prompt (c->n_rows) and in which runs
 * (c->blocks, n_blocks returned): tokens of a sequence processed several
 * at once (c->tiled, so never a one-token step or speculative
 * verification, which attend token by token) whose sequence holds every
 * position up to theirs, as a prompt's does; a run is one sequence's.
 * A token's result depends on its rows alone (block_rows), not on its
 * run, its batch or where its cells lie. */
static int prompt_blocks(qlm_ctx *c, int layer, int T, const int32_t *pos, const int32_t *seq)
{
    const qlm_hparams *hp = &c->m->hp;
    const qlm_kv *kv = &c->kv;
    const int D = hp->head_dim, group = hp->n_head / hp->n_head_kv;
    const gl_kv_view kview = {.type = elem_of(kv->type_k)}, vview = {.type = elem_of(kv->type_v)};
    if (T < 2 || c->m->layers[layer].swa || !gl_attn_prompt_applies(D, &kview, &vview) ||
        group > GL_ATTN_PROMPT_MAXQ)
        return 0;
    if (layer == 0 || c->m->layers[layer - 1].swa) { /* the same for every layer without a window */
        #pragma omp parallel for schedule(static) if (T >= 64) num_threads(c->n_threads)
        for (int t = 0; t < T; t++) {
            int n = 0;
            if (c->tiled[t])
                for (int j = 0; j < kv->n_top; j++) n += qlm_kv_visible(kv, j, seq[t], pos[t]);
            /* a sequence's positions are distinct: all of 0..pos[t] */
            c->n_rows[t] = n == pos[t] + 1 ? n : 0;
        }
    }
    const int most = (int)prompt_block((size_t)group);
    int n_blocks = 0;
    for (int t = 0; t < T;) {
        if (!c->n_rows[t]) {
            t++;
            continue;
        }
        int t1 = t + 1, n_max = c->n_rows[t];
        while (t1 < T && t1 - t < most && c->n_rows[t1] && seq[t1] == seq[t]) {
            const int nm = c->n_rows[t1] > n_max ? c->n_rows[t1] : n_max;
            if (gl_attn_prompt_work(D, (t1 + 1 - t) * group, nm) > c->aw_len) break;
            n_max = nm;
            t1++;
        }
        c->blocks[n_blocks++] = t;
        t = t1;
        c->blocks[n_blocks] = t1;
    }
    return n_blocks;
}

/* The K and V rows of KV head kvh that a block of sequence sq's prompt
 * tokens sees (n[0..n_tok) positions each), in position order: in place
 * where the sequence's cells for them are consecutive (always so alone),
 * else gathered into thread th's scratch.  The rows' values and order are
 * the same either way, so a token's bits do not depend on the cache's
 * layout (another sequence's cells between its own, a prefix shared from
 * one). */
static void block_rows(qlm_ctx *c, int layer, int kvh, int th, int sq, const int *n, int n_tok, gl_kv_view *kview,
                       gl_kv_view *vview)
{
    const qlm_kv *kv = &c->kv;
    const int D = kv->head_dim;
    int n_max = 0;
    for (int j = 0; j < n_tok; j++) n_max = n[j] > n_max ? n[j] : n_max;
    int32_t *cell = c->vis + (size_t)th * kv->n_ctx; /* attend()'s list: this thread's lists are reset after */
    c->vis_tok[3 * th] = -1;
    for (int j = 0; j < kv->n_top; j++)
        if (kv->pos[j] >= 0 && kv->pos[j] < n_max && (kv->seqs[j] >> sq & 1)) cell[kv->pos[j]] = j;
    bool run = true;
    for (int i = 1; i < n_max && run; i++) run = cell[i] == cell[0] + i;
    *kview = (gl_kv_view){.type = elem_of(kv->type_k), .ld = D, .lds = 1};
    *vview = (gl_kv_view){.type = elem_of(kv->type_v), .ld = D, .lds = 1};
    if (run) {
        kview->data = qlm_kv_k_at(kv, layer, kvh, cell[0]);
        kview->scale = qlm_kv_k_scale(kv, layer, kvh, cell[0]);
        vview->data = qlm_kv_v_at(kv, layer, kvh, cell[0]);
        vview->scale = qlm_kv_v_scale(kv, layer, kvh, cell[0]);
        return;
    }
    /* int8 rows (gl_attn_prompt_applies): D bytes and one scale each */
    int8_t *gk = (int8_t *)(c->gath + (size_t)th * c->gath_len), *gv = gk + (size_t)kv->n_ctx * D;
    float *gks = (float *)(gv + (size_t)kv->n_ctx * D), *gvs = gks + kv->n_ctx;
    for (int i = 0; i < n_max; i++) {
        memcpy(gk + (size_t)i * D, qlm_kv_k_at(kv, layer, kvh, cell[i]), (size_t)D);
        memcpy(gv + (size_t)i * D, qlm_kv_v_at(kv, layer, kvh, cell[i]), (size_t)D);
        gks[i] = *qlm_kv_k_scale(kv, layer, kvh, cell[i]);
        gvs[i] = *qlm_kv_v_scale(kv, layer, kvh, cell[i]);
    }
    kview->data = gk;
    kview->scale = gks;
    vview->data = gv;
    vview->scale = gvs;
}

/* One layer's attention for the T tokens, inside a parallel region, as
 * worksharing loops without a barrier: the n_blocks prompt blocks
 * (prompt_blocks) through gl_attn_prompt, the deepest in the cache first,
 * then the tokens outside them head by head.  Both the fused and the
 * unfused layers attend this way, so a prompt token's bits do not depend
 * on which of them ran it.  Dynamic: a prompt's later tokens see more
 * rows, and a static split gave the last thread most of the work. */
static void attend_tokens(qlm_ctx *c, int layer, int T, const int32_t *pos, const int32_t *seq, int n_blocks, int th,
                          bool own)
{
    const qlm_hparams *hp = &c->m->hp;
    const int H = hp->n_head, HKV = hp->n_head_kv, D = hp->head_dim, group = H / HKV, QD = H * D;
    const float scale = c->m->arch->scale_q ? 1.0f : hp->attn_scale;
    #pragma omp for schedule(dynamic, 1) nowait
    for (int u = 0; u < n_blocks * HKV; u++) {
        const int b = n_blocks - 1 - u / HKV, kvh = u % HKV, t0 = c->blocks[b];
        gl_kv_view kview, vview;
        block_rows(c, layer, kvh, th, seq[t0], c->n_rows + t0, c->blocks[b + 1] - t0, &kview, &vview);
        const size_t at = (size_t)t0 * QD + (size_t)kvh * group * D;
        gl_attn_prompt(D, c->blocks[b + 1] - t0, group, c->q + at, QD, scale, &kview, &vview, c->n_rows + t0,
                       c->aw + (size_t)th * c->aw_len, c->att + at, QD);
    }
    /* one decoding step's token at long context: its rows shared out */
    if (T == 1 && attend_split(c, layer, 0, th, own, pos, seq)) return;
    /* the rest head by head (a whole prompt in blocks: nothing), a KV
     * head's query heads together (gl_attn_group, the same bits) where it
     * applies, one-token decoding included: each K and V row read and
     * widened once for the group (tl-q4_0 tg256: attention 2.1% -> 1.2%
     * of samples; tg32 after 1024 tokens 17.1-17.4 -> 18.9-20.5 t/s) */
    #pragma omp for collapse(2) schedule(dynamic, group) nowait
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++)
            if (!n_blocks || !c->n_rows[t]) attend(c, layer, t, h, th, pos, seq, true);
}

static void attention(qlm_ctx *c, int layer, int T, const int32_t *pos, const int32_t *seq)
{
    for (int i = 0; i < c->n_threads; i++) c->vis_tok[3 * i] = -1;
    const int n_blocks = prompt_blocks(c, layer, T, pos, seq);
    /* num_threads: the scratch has n_threads slots, whatever another
     * context set as the process default */
    #pragma omp parallel num_threads(c->n_threads)
    attend_tokens(c, layer, T, pos, seq, n_blocks, omp_get_thread_num(), omp_get_num_threads() == c->n_threads);
}

/* Whether every matmul of every layer computes with its vec_dot for this
 * micro-batch (gl_matmul_plain) and the weights that share an input
 * (Q, K, V; gate, up) take the same quantized activations: then
 * layers_fused may run the layers. */
static bool fusable(const qlm_ctx *c, int T, bool each)
{
    const qlm_model *m = c->m;
    if (c->unfused) return false;
    for (int l = 0; l < m->hp.n_layer; l++) {
        const qlm_layer *L = &m->layers[l];
        gl_act q, k, v, o, g, u, d;
        if (!gl_matmul_plain(&L->wq, T, each, &q) || !gl_matmul_plain(&L->wk, T, each, &k) ||
            !gl_matmul_plain(&L->wv, T, each, &v) || !gl_matmul_plain(&L->wo, T, each, &o) ||
            !gl_matmul_plain(&L->w_gate, T, each, &g) || !gl_matmul_plain(&L->w_up, T, each, &u) ||
            !gl_matmul_plain(&L->w_down, T, each, &d) || q.type != k.type || q.type != v.type ||
            g.type != u.type)
            return false;
    }
    return true;
}

/* Token t's Q, K and V after their matmuls: biases, QK-norm, RoPE, the
 * Q scale, then K and V into the cache. */
static void qkv_finish(qlm_ctx *c, int l, int t, const gl_rope *rope, const int32_t *pos)
{
    const qlm_model *m = c->m;
    const qlm_arch *a = m->arch;
    const qlm_hparams *hp = &m->hp;
    const qlm_layer *L = &m->layers[l];
    const int D = hp->head_dim, QD = hp->n_head * D, KD = hp->n_head_kv * D;
    float *q = c->q + (size_t)t * QD, *k = c->k + (size_t)t * KD, *v = c->v + (size_t)t * KD;
    if (L->bq) gl_add_bias(q, L->bq, 1, QD);
    if (L->bk) gl_add_bias(k, L->bk, 1, KD);
    if (L->bv) gl_add_bias(v, L->bv, 1, KD);
    if (a->qk_norm) {
        gl_rmsnorm(q, q, L->q_norm, hp->n_head, D, hp->norm_eps);
        gl_rmsnorm(k, k, L->k_norm, hp->n_head_kv, D, hp->norm_eps);
    }
    gl_rope_apply_qk(q, hp->n_head, k, hp->n_head_kv, pos[t], D, rope);
    if (a->scale_q) gl_scale(q, hp->attn_scale, QD);
    qlm_kv_store(&c->kv, l, c->cells[t], k, v);
}

/* g = act(g) * u over n elements: the family's gated activation. */
static void gate(const qlm_model *m, float *g, const float *u, int64_t n)
{
    if (m->arch->act == QLM_ACT_GELU)
        gl_geglu(g, u, n, m->gelu);
    else
        gl_swiglu(g, u, n);
}

/* What a thread of the fused region reads first in layer l's matmuls;
 * first_pf: in the first of them, or in the output head for
 * l == n_layer.  gu_piece: the rows of gate and up per thread where
 * they go in pieces (layers_fused), else 0. */
typedef struct {
    gl_prefetch qkv, o, gu, down;
} layer_pf;

static gl_prefetch first_pf(const qlm_model *m, int l, int T, int n_out)
{
    if (l == m->hp.n_layer) {
        const gl_tensor *wh[] = {&m->output};
        return n_out ? gl_matmul_rows_next(1, wh, n_out) : (gl_prefetch){0};
    }
    const qlm_layer *L = &m->layers[l];
    const gl_tensor *wqkv[] = {&L->wq, &L->wk, &L->wv};
    return gl_matmul_rows_next(3, wqkv, T);
}

static layer_pf layer_next(const qlm_model *m, int l, int T, int64_t gu_piece)
{
    const qlm_layer *L = &m->layers[l];
    const gl_tensor *wo[] = {&L->wo}, *wgu[] = {&L->w_gate, &L->w_up}, *wd[] = {&L->w_down};
    layer_pf pf = {.qkv = first_pf(m, l, T, 0), .o = gl_matmul_rows_next(1, wo, T),
                   .down = gl_matmul_rows_next(1, wd, T)};
    if (gu_piece) {
        const int64_t r0 = (int64_t)omp_get_thread_num() * gu_piece, F = L->w_gate.ne[1];
        pf.gu = gl_matmul_rows_range_next(&L->w_gate, r0, F - r0 < gu_piece ? F - r0 : gu_piece);
    } else {
        pf.gu = gl_matmul_rows_next(2, wgu, T);
    }
    return pf;
}

/* The layers of forward() in one parallel region.  Between matmuls the
 * threads share the tokens of the elementwise work (norms, activation
 * quantization, RoPE, KV stores, residual adds) instead of one thread
 * doing it while the other waits, each activation row is quantized once
 * for all the weights that read it, and the rows of those weights are
 * shared out together.  Every step computes each token's row exactly as
 * the unfused path does (the same functions on one row at a time), so
 * the bits are the same; only who computes which row, and when, differs. */
static void layers_fused(qlm_ctx *c, int T, bool each, bool by_token, const int32_t *pos, const int32_t *seq,
                         const int8_t *want, const int *out_row, int n_out, float *lg)
{
    const qlm_model *m = c->m;
    const qlm_arch *a = m->arch;
    const qlm_hparams *hp = &m->hp;
    const int E = hp->n_embd, D = hp->head_dim, QD = hp->n_head * D, F = hp->n_ff;
    uint8_t *xq = c->mm;
    /* Batched decoding (one token per sequence) with enough tokens to go
     * round: a thread takes a token from its KV store through attention
     * to its quantized output, where otherwise it would wait at two more
     * barriers.  A cell of this batch is visible only to its own
     * sequence's token (by_token: no two tokens share a sequence). */
    by_token &= T >= 2 * c->n_threads;
    /* Tokens per unit of the loops with norms: a thread's tokens
     * together, up to GL_RMSNORM_ROWS (a call then costs about one row's
     * time) and within the ops' serial size. */
    int U = (T + c->n_threads - 1) / c->n_threads;
    if (U > GL_RMSNORM_ROWS) U = GL_RMSNORM_ROWS;
    while (U > 1 && (int64_t)U * E > GL_OPS_SERIAL) U--;
    gl_act head = {0};
    if (n_out) gl_matmul_plain(&m->output, n_out, each, &head); /* forward() asked: it applies */
    /* the prompt blocks, the same for every layer without a window (the
     * first such layer finds them) */
    int n_blocks = 0;
    for (int l = 0; l < hp->n_layer && !by_token; l++)
        if (!m->layers[l].swa) {
            n_blocks = prompt_blocks(c, l, T, pos, seq);
            break;
        }
    /* Every worksharing loop below is nowait: the threads meet at
     * sync_team instead of libgomp's barrier. */
    #pragma omp parallel num_threads(c->n_threads)
    {
        const int th = omp_get_thread_num();
        const bool own = omp_get_num_threads() == c->n_threads;
        for (int l = 0; l < hp->n_layer; l++) {
            const qlm_layer *L = &m->layers[l];
            const gl_rope rope = layer_rope(c, l);
            gl_act qkv, o, gu, dn;
            gl_matmul_plain(&L->wq, T, each, &qkv); /* fusable() said yes to all four */
            gl_matmul_plain(&L->wo, T, each, &o);
            gl_matmul_plain(&L->w_gate, T, each, &gu);
            gl_matmul_plain(&L->w_down, T, each, &dn);
            /* gate and up in pieces of whole blocks of down's activation
             * type, a piece per thread (below) */
            const int64_t blk = qt_get(dn.type)->block_size, P0 = (32 + blk - 1) / blk * blk,
                          n_p0 = (F + P0 - 1) / P0, P = (n_p0 + c->n_threads - 1) / c->n_threads * P0;
            const layer_pf pf = layer_next(m, l, T, dn.by_blocks ? P : 0);
            /* the previous layer's feed-forward residual, then this one's norm */
            #pragma omp for schedule(static) nowait
            for (int t0 = 0; t0 < T; t0 += U) {
                const int nt = T - t0 < U ? T - t0 : U;
                float *x = c->x + (size_t)t0 * E, *xn = c->xn + (size_t)t0 * E;
                if (l > 0) {
                    const qlm_layer *P = &m->layers[l - 1];
                    if (a->post_norms) gl_rmsnorm(xn, xn, P->ffn_post_norm, nt, E, hp->norm_eps);
                    gl_add_rmsnorm(x, xn, L->attn_norm, nt, E, hp->norm_eps);
                } else {
                    gl_rmsnorm(xn, x, L->attn_norm, nt, E, hp->norm_eps);
                }
                for (int t = t0; t < t0 + nt; t++)
                    qkv.quantize(c->xn + (size_t)t * E, xq + (size_t)t * qkv.row_bytes, E);
            }
            const gl_tensor *wqkv[] = {&L->wq, &L->wk, &L->wv};
            float *const yqkv[] = {c->q, c->k, c->v};
            sync_team(c, own, pf.qkv);
            gl_matmul_rows(3, wqkv, yqkv, xq, qkv.row_bytes, T);
            sync_team(c, own, pf.o);
            c->vis_tok[3 * th] = -1; /* this thread's cached list is stale */
            if (by_token) {
                /* each token attends to its own new cell only: no thread
                 * waits for another's KV stores */
                #pragma omp for schedule(dynamic, 1) nowait
                for (int t = 0; t < T; t++) {
                    qkv_finish(c, l, t, &rope, pos);
                    /* head by head: gl_attn_group over the token's cell
                     * list read the same rows but measured slower here
                     * (SmolLM2, 40-140 cells: 8.1-9.0% of a batch run's
                     * samples against 6.5-7.4%) */
                    for (int h = 0; h < hp->n_head; h++) attend(c, l, t, h, th, pos, seq, false);
                    o.quantize(c->att + (size_t)t * QD, xq + (size_t)t * o.row_bytes, QD);
                }
            } else {
                #pragma omp for schedule(static) nowait
                for (int t = 0; t < T; t++) qkv_finish(c, l, t, &rope, pos);
                sync_team(c, own, pf.o);
                /* as the unfused pass attends: prompt blocks, then the
                 * rest by KV head as threads come */
                attend_tokens(c, l, T, pos, seq, L->swa ? 0 : n_blocks, th, own);
                sync_team(c, own, pf.o);
                #pragma omp for schedule(static) nowait
                for (int t = 0; t < T; t++)
                    o.quantize(c->att + (size_t)t * QD, xq + (size_t)t * o.row_bytes, QD);
            }
            const gl_tensor *wo[] = {&L->wo};
            float *const yo[] = {c->xn};
            sync_team(c, own, pf.o);
            gl_matmul_rows(1, wo, yo, xq, o.row_bytes, T);
            sync_team(c, own, pf.gu);
            #pragma omp for schedule(static) nowait
            for (int t0 = 0; t0 < T; t0 += U) {
                const int nt = T - t0 < U ? T - t0 : U;
                float *x = c->x + (size_t)t0 * E, *xn = c->xn + (size_t)t0 * E;
                if (a->post_norms) gl_rmsnorm(xn, xn, L->attn_post_norm, nt, E, hp->norm_eps);
                gl_add_rmsnorm(x, xn, L->ffn_norm, nt, E, hp->norm_eps);
                for (int t = t0; t < t0 + nt; t++)
                    gu.quantize(c->xn + (size_t)t * E, xq + (size_t)t * gu.row_bytes, E);
            }
            sync_team(c, own, pf.gu);
            /* down's quantized input goes after gate/up's, which other
             * threads may still be reading */
            uint8_t *xd = xq + ((size_t)T * gu.row_bytes + 63) / 64 * 64;
            if (dn.by_blocks) {
                /* Gate and up rows in pieces of whole blocks of down's
                 * activation type: a thread that made a piece's gate and
                 * up rows for every token gates them and quantizes those
                 * blocks at once (the ops work element by element, the
                 * quantizer block by block, so the bits are the whole
                 * rows'), where otherwise it would wait at one more
                 * barrier. */
                #pragma omp for schedule(static) nowait
                for (int64_t r0 = 0; r0 < F; r0 += P) {
                    const int64_t n = F - r0 < P ? F - r0 : P;
                    gl_matmul_rows_range(&L->w_gate, c->g, xq, gu.row_bytes, T, r0, n);
                    gl_matmul_rows_range(&L->w_up, c->u, xq, gu.row_bytes, T, r0, n);
                    for (int t = 0; t < T; t++) {
                        float *g = c->g + (size_t)t * F + r0;
                        gate(c->m, g, c->u + (size_t)t * F + r0, n);
                        dn.quantize(g, xd + (size_t)t * dn.row_bytes + qt_row_size(dn.type, r0), n);
                    }
                }
            } else {
                const gl_tensor *wgu[] = {&L->w_gate, &L->w_up};
                float *const ygu[] = {c->g, c->u};
                gl_matmul_rows(2, wgu, ygu, xq, gu.row_bytes, T);
                sync_team(c, own, pf.down);
                #pragma omp for schedule(static) nowait
                for (int t = 0; t < T; t++) {
                    gate(c->m, c->g + (size_t)t * F, c->u + (size_t)t * F, F);
                    dn.quantize(c->g + (size_t)t * F, xd + (size_t)t * dn.row_bytes, F);
                }
            }
            const gl_tensor *wd[] = {&L->w_down};
            float *const yd[] = {c->xn};
            sync_team(c, own, pf.down);
            gl_matmul_rows(1, wd, yd, xd, dn.row_bytes, T);
            sync_team(c, own, first_pf(m, l + 1, T, n_out));
        }
        #pragma omp for schedule(static) nowait
        for (int t0 = 0; t0 < T; t0 += U) {
            const int nt = T - t0 < U ? T - t0 : U;
            float *x = c->x + (size_t)t0 * E, *xn = c->xn + (size_t)t0 * E;
            if (a->post_norms) gl_rmsnorm(xn, xn, m->layers[hp->n_layer - 1].ffn_post_norm, nt, E, hp->norm_eps);
            for (int t = 0; t < nt; t++) gl_add(x + (size_t)t * E, xn + (size_t)t * E, E);
            /* the output head's norm and quantized input, for the rows
             * that want logits, in forward()'s row order; the norm goes
             * to the token's own xn row, which no other thread reads now */
            for (int t = t0; t < t0 + nt && n_out; t++)
                if (want[t]) {
                    float *xt = c->xn + (size_t)t * E;
                    gl_rmsnorm(xt, c->x + (size_t)t * E, m->output_norm, 1, E, hp->norm_eps);
                    head.quantize(xt, xq + (size_t)out_row[t] * head.row_bytes, E);
                }
        }
        if (n_out) {
            /* the head inside the region: no second team to wake, and
             * its norm and quantization shared out too */
            sync_team(c, own, first_pf(m, hp->n_layer, T, n_out));
            const gl_tensor *wh[] = {&m->output};
            float *const yh[] = {lg};
            gl_matmul_rows(1, wh, yh, xq, head.row_bytes, n_out);
        }
    }
}

/* The layers one step at a time, each matmul in its own parallel region
 * (gl_matmul picks its order): for weights without a plain vec_dot path,
 * and the reference the fused layers are tested against. */
static void layers(qlm_ctx *c, int T, bool each, const int32_t *pos, const int32_t *seq)
{
    const qlm_model *m = c->m;
    const qlm_arch *a = m->arch;
    const qlm_hparams *hp = &m->hp;
    const int E = hp->n_embd, QD = hp->n_head * hp->head_dim, KD = hp->n_head_kv * hp->head_dim,
              F = hp->n_ff;
    /* each (one_by_one): every matmul too in its one-token order */
    int (*const mul)(const gl_tensor *, const float *, float *, int, void *) = each ? gl_matmul_each : gl_matmul;
    for (int l = 0; l < hp->n_layer; l++) {
        const qlm_layer *L = &m->layers[l];
        const gl_rope rope = layer_rope(c, l);
        /* attention block; after the first layer, the previous one's
         * feed-forward residual goes in with this norm */
        if (l == 0)
            gl_rmsnorm(c->xn, c->x, L->attn_norm, T, E, hp->norm_eps);
        else
            gl_add_rmsnorm(c->x, c->xn, L->attn_norm, T, E, hp->norm_eps);
        if (each) {
            mul(&L->wq, c->xn, c->q, T, c->mm);              /* [T][QD] */
            mul(&L->wk, c->xn, c->k, T, c->mm);              /* [T][KD] */
            mul(&L->wv, c->xn, c->v, T, c->mm);              /* [T][KD] */
        } else { /* one quantized (and packed) input for the three */
            const gl_tensor *const wqkv[3] = {&L->wq, &L->wk, &L->wv};
            float *const yqkv[3] = {c->q, c->k, c->v};
            gl_matmul_shared(3, wqkv, c->xn, yqkv, T, c->mm);
        }
        if (L->bq) gl_add_bias(c->q, L->bq, T, QD);
        if (L->bk) gl_add_bias(c->k, L->bk, T, KD);
        if (L->bv) gl_add_bias(c->v, L->bv, T, KD);
        if (a->qk_norm) { /* each head's row of head_dim */
            gl_rmsnorm(c->q, c->q, L->q_norm, T * hp->n_head, hp->head_dim, hp->norm_eps);
            gl_rmsnorm(c->k, c->k, L->k_norm, T * hp->n_head_kv, hp->head_dim, hp->norm_eps);
        }
        /* RoPE, the Q scale and the KV store token by token, in one
         * region (a prompt's tokens go to distinct cells) */
        #pragma omp parallel for schedule(static) if (T >= 64) num_threads(c->n_threads)
        for (int t = 0; t < T; t++) {
            float *q = c->q + (size_t)t * QD, *k = c->k + (size_t)t * KD;
            gl_rope_apply_qk(q, hp->n_head, k, hp->n_head_kv, pos[t], hp->head_dim, &rope);
            if (a->scale_q) gl_scale(q, hp->attn_scale, QD);
            qlm_kv_store(&c->kv, l, c->cells[t], k, c->v + (size_t)t * KD);
        }
        attention(c, l, T, pos, seq);                               /* [T][QD] */
        mul(&L->wo, c->att, c->xn, T, c->mm);                 /* [T][E] */
        if (a->post_norms) gl_rmsnorm(c->xn, c->xn, L->attn_post_norm, T, E, hp->norm_eps);
        /* the residual, then the feed-forward block's norm */
        gl_add_rmsnorm(c->x, c->xn, L->ffn_norm, T, E, hp->norm_eps);
        if (each) {
            mul(&L->w_gate, c->xn, c->g, T, c->mm);           /* [T][F] */
            mul(&L->w_up, c->xn, c->u, T, c->mm);             /* [T][F] */
            gate(c->m, c->g, c->u, (int64_t)T * F);
        } else { /* the same, in one pass where the kernels allow */
            gl_matmul_glu(&L->w_gate, &L->w_up, c->xn, c->g, c->u, T, c->mm,
                          c->m->arch->act == QLM_ACT_GELU ? c->m->gelu : NULL);
        }
        mul(&L->w_down, c->g, c->xn, T, c->mm);               /* [T][E] */
        if (a->post_norms) gl_rmsnorm(c->xn, c->xn, L->ffn_post_norm, T, E, hp->norm_eps);
    }
    if (hp->n_layer > 0) gl_add(c->x, c->xn, (int64_t)T * E); /* the last layer's residual */

}

/* One micro-batch through the model.  The family's row (arch.c) switches
 * the steps that differ: embedding scale, Q/K/V biases, QK-norm, which
 * tensor the attention scale multiplies, sliding-window layers with their
 * own RoPE base, sandwich norms, the FFN gate activation, logit capping. */
static int forward(qlm_ctx *c, const qlm_batch *b, int off, int T, qlm_err *err)
{
    const qlm_model *m = c->m;
    const qlm_arch *a = m->arch;
    const qlm_hparams *hp = &m->hp;
    const int E = hp->n_embd;
    const int32_t *tok = b->token + off, *pos = b->pos + off, *seq = b->seq + off;


    for (int t = 0; t < T; t++) gl_get_row(&m->tok_embd, tok[t], c->x + (size_t)t * E);
    if (a->embd_scale) gl_scale(c->x, sqrtf((float)E), (int64_t)T * E);
    int rc = qlm_kv_claim(&c->kv, T, tok, pos, seq, c->cells, err);
    if (rc) return rc;
    int per_seq[QLM_MAX_SEQ] = {0};
    for (int t = 0; t < T; t++) per_seq[seq[t]]++;
    bool one_per_seq = true;
    for (int t = 0; t < T; t++) {
        c->tiled[t] = !b->one_by_one && per_seq[seq[t]] > 1;
        one_per_seq &= per_seq[seq[t]] == 1;
    }
    const int8_t *want = b->logits + off;
    float *lg = c->logits + (size_t)c->n_logits * hp->n_vocab; /* [rows wanting logits][V] */
    if (fusable(c, T, b->one_by_one)) {
        /* the head too, where matmul would take its vec_dot order */
        int n_want = 0;
        for (int t = 0; t < T; t++) c->out_row[t] = want[t] ? n_want++ : -1;
        gl_act head;
        const bool inside = n_want && gl_matmul_plain(&m->output, n_want, b->one_by_one, &head);
        layers_fused(c, T, b->one_by_one, one_per_seq, pos, seq, want, c->out_row, inside ? n_want : 0, lg);
        if (inside) {
            if (hp->logit_softcap > 0) gl_softcap(lg, hp->logit_softcap, (int64_t)n_want * hp->n_vocab);
            c->n_logits += n_want;
            return QLM_OK;
        }
    } else
        layers(c, T, b->one_by_one, pos, seq);
    int (*const mul)(const gl_tensor *, const float *, float *, int, void *) =
        b->one_by_one ? gl_matmul_each : gl_matmul;

    /* output head, only for rows that asked for logits */
    int n_out = 0;
    for (int t = 0; t < T;) { /* runs of such rows: one norm call each (up to 4 rows cost one) */
        int t1 = t;
        while (t1 < T && b->logits[off + t1]) t1++;
        if (t1 > t) {
            gl_rmsnorm(c->xn + (size_t)n_out * E, c->x + (size_t)t * E, m->output_norm, t1 - t, E, hp->norm_eps);
            n_out += t1 - t;
        }
        t = t1 + 1;
    }
    if (n_out) {
        mul(&m->output, c->xn, lg, n_out, c->mm);
        if (hp->logit_softcap > 0) gl_softcap(lg, hp->logit_softcap, (int64_t)n_out * hp->n_vocab);
        c->n_logits += n_out;
    }
    return QLM_OK;
}

bool qlm_ctx_same_order(const qlm_ctx *c, int n_a, int rows_a, int n_b, int rows_b)
{
    const qlm_model *m = c->m;
    /* the fused and the unfused layers attend alike (attend_tokens) */
    for (int l = 0; l < m->hp.n_layer; l++) {
        const qlm_layer *L = &m->layers[l];
        const gl_tensor *ws[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
            if (!gl_matmul_same_order(ws[i], n_a, n_b)) return false;
    }
    return !rows_a || !rows_b || gl_matmul_same_order(&m->output, rows_a, rows_b);
}

int qlm_decode(qlm_ctx *c, const qlm_batch *b, qlm_err *err)
{
    const qlm_hparams *hp = &c->m->hp;
    int want = 0;
    for (int i = 0; i < b->n; i++) {
        if (b->token[i] < 0 || b->token[i] >= hp->n_vocab)
            return qlm_fail(err, QLM_EUSAGE, "batch entry %d: token %d outside vocabulary of %d", i,
                            b->token[i], hp->n_vocab);
        if (b->seq[i] < 0 || b->seq[i] >= QLM_MAX_SEQ)
            return qlm_fail(err, QLM_EUSAGE, "batch entry %d: sequence id %d outside [0, %d)", i,
                            b->seq[i], QLM_MAX_SEQ);
        if (b->pos[i] < 0)
            return qlm_fail(err, QLM_EUSAGE, "batch entry %d: negative position", i);
        want += b->logits[i] != 0;
    }
    if (want > c->logits_cap) {
        float *nl = realloc(c->logits, (size_t)want * hp->n_vocab * sizeof(float));
        if (!nl) return qlm_fail(err, QLM_ERUNTIME, "out of memory for %d rows of logits", want);
        c->logits = nl;
        c->logits_cap = want;
    }
    c->n_logits = 0;
    for (int off = 0; off < b->n; off += c->n_batch) {
        const int T = b->n - off < c->n_batch ? b->n - off : c->n_batch;
        int rc = forward(c, b, off, T, err);
        if (rc) return rc;
    }
    gl_promote_go(c->m->promoter); /* ggml-lite/promote.h says why here */
    return QLM_OK;
}

int qlm_batch_init(qlm_batch *b, int cap)
{
    memset(b, 0, sizeof *b);
    b->token = malloc(sizeof *b->token * (size_t)cap);
    b->pos = malloc(sizeof *b->pos * (size_t)cap);
    b->seq = malloc(sizeof *b->seq * (size_t)cap);
    b->logits = malloc((size_t)cap);
    if (!b->token || !b->pos || !b->seq || !b->logits) {
        qlm_batch_free(b);
        return -1;
    }
    return 0;
}

void qlm_batch_free(qlm_batch *b)
{
    free(b->token); free(b->pos); free(b->seq); free(b->logits);
    memset(b, 0, sizeof *b);
}
