/* model.c - loading: hyperparameters from metadata, then every tensor
 * found, shape-checked and type-checked before anything runs. */
#include "model.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ggml-lite/arena.h"
#include "ggml-lite/layout.h"
#include "ggml-lite/promote.h"
#include "ggml-lite/ops.h"

/* Reads "<arch>.<suffix>" as a u32 into *out; missing is an error unless
 * a default was given (def >= 0). */
static int hp_u32(const gguf_ctx *g, const char *arch, const char *suffix, long def, int *out,
                  qlm_err *err)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    uint32_t v;
    if (gguf_get_u32(g, key, &v)) {
        if (v > (1u << 30)) return qlm_fail(err, QLM_ELOAD, "metadata %s: value %u is out of range", key, v);
        *out = (int)v;
        return QLM_OK;
    }
    if (gguf_find(g, key)) return qlm_fail(err, QLM_ELOAD, "metadata %s: expected an unsigned integer", key);
    if (def < 0) return qlm_fail(err, QLM_ELOAD, "metadata %s is missing", key);
    *out = (int)def;
    return QLM_OK;
}

static int hp_f32(const gguf_ctx *g, const char *arch, const char *suffix, float def, float *out,
                  qlm_err *err)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    if (gguf_get_f32(g, key, out)) return QLM_OK;
    if (gguf_find(g, key)) return qlm_fail(err, QLM_ELOAD, "metadata %s: expected a float", key);
    *out = def;
    return QLM_OK;
}

/* Finds name and checks its shape (ne0 x ne1; ne1 = 0 for 1-D) and that
 * qlm can compute with its type.  Optional tensors leave t zeroed. */
static int get_tensor(const gguf_ctx *g, const char *name, int64_t ne0, int64_t ne1, bool required,
                      bool need_dot, gl_tensor *t, qlm_err *err)
{
    memset(t, 0, sizeof *t);
    const gguf_tensor *gt = gguf_find_tensor(g, name);
    if (!gt) return required ? qlm_fail(err, QLM_ELOAD, "tensor '%s' is missing", name) : QLM_OK;
    const int64_t want1 = ne1 ? ne1 : 1;
    if (gt->ne[0] != ne0 || gt->ne[1] != want1 || gt->ne[2] != 1 || gt->ne[3] != 1)
        return qlm_fail(err, QLM_ELOAD,
                        "tensor '%s' has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld]", name,
                        (long long)gt->ne[0], (long long)gt->ne[1], (long long)gt->ne[2],
                        (long long)gt->ne[3], (long long)ne0, (long long)want1);
    const qt_traits *tr = qt_get(gt->type);
    if (!tr || !tr->to_float || (need_dot && !tr->vec_dot))
        return qlm_fail(err, QLM_ELOAD, "tensor '%s': quant type %s is not supported yet", name,
                        tr && tr->name ? tr->name : "unknown");
    if (ne0 % tr->block_size)
        return qlm_fail(err, QLM_ELOAD, "tensor '%s': row of %lld is not a whole number of %s blocks",
                        name, (long long)ne0, tr->name);
    t->type = (qt_type)gt->type;
    t->ne[0] = gt->ne[0];
    t->ne[1] = gt->ne[1];
    t->ne[2] = t->ne[3] = 1;
    t->row_bytes = qt_row_size(t->type, ne0);
    t->data = gt->data;
    return QLM_OK;
}

/* Norm weights and other small vectors are used as plain float arrays. */
static int get_f32_vec(const gguf_ctx *g, const char *name, int64_t n, bool required,
                       const float **out, qlm_err *err)
{
    gl_tensor t;
    int rc = get_tensor(g, name, n, 0, required, false, &t, err);
    if (rc) return rc;
    if (t.data && t.type != QT_F32)
        return qlm_fail(err, QLM_ELOAD, "tensor '%s': expected f32, found %s", name, qt_get(t.type)->name);
    if (t.data && (uintptr_t)t.data % sizeof(float))
        return qlm_fail(err, QLM_ELOAD, "tensor '%s': data is not 4-byte aligned", name);
    *out = t.data;
    return QLM_OK;
}

/* Sliding-window attention: the window, which layers use it (an explicit
 * per-layer bool array, or a period n where every n-th layer is global and
 * 0 means all, or the family's default), and their RoPE base. */
static int load_swa(qlm_model *m, const char *arch, qlm_err *err)
{
    const gguf_ctx *g = m->gguf;
    qlm_hparams *hp = &m->hp;
    int rc;
    for (int l = 0; l < hp->n_layer; l++) {
        m->layers[l].swa = false;
        m->layers[l].rope_base = hp->rope_base;
        m->layers[l].rope_freq_scale = hp->rope_freq_scale;
    }
    hp->n_swa = 0;
    if (m->arch->swa == QLM_SWA_IGNORED) return QLM_OK;
    if ((rc = hp_u32(g, arch, "attention.sliding_window", 0, &hp->n_swa, err)) ||
        (rc = hp_f32(g, arch, "rope.freq_base_swa", m->arch->swa == QLM_SWA_ALL ? hp->rope_base : 10000.0f,
                     &hp->rope_base_swa, err)))
        return rc;
    if (hp->n_swa == 0) return QLM_OK;
    if (!(hp->rope_base_swa > 0))
        return qlm_fail(err, QLM_ELOAD, "metadata %s.rope.freq_base_swa must be positive", arch);
    char key[128];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", arch);
    const gguf_kv *kv = gguf_find(g, key);
    int period = m->arch->swa == QLM_SWA_PERIOD ? m->arch->swa_period : 0;
    if (kv && kv->val.type == GGUF_ARRAY) {
        const gguf_value *arr = gguf_get_arr(g, key, GGUF_BOOL);
        if (!arr || arr->arr.n != (uint64_t)hp->n_layer)
            return qlm_fail(err, QLM_ELOAD, "metadata %s: expected %d bools", key, hp->n_layer);
        for (int l = 0; l < hp->n_layer; l++) m->layers[l].swa = gguf_arr_i64(arr, (uint64_t)l) != 0;
    } else {
        if ((rc = hp_u32(g, arch, "attention.sliding_window_pattern", period, &period, err))) return rc;
        for (int l = 0; l < hp->n_layer; l++) m->layers[l].swa = period == 0 || l % period < period - 1;
    }
    for (int l = 0; l < hp->n_layer; l++)
        if (m->layers[l].swa) {
            m->layers[l].rope_base = hp->rope_base_swa;
            /* a family with global layers scales only their RoPE */
            if (m->arch->swa == QLM_SWA_PERIOD) m->layers[l].rope_freq_scale = 1.0f;
        }
    return QLM_OK;
}

static int load_hparams(qlm_model *m, const char *arch, qlm_err *err)
{
    const gguf_ctx *g = m->gguf;
    qlm_hparams *hp = &m->hp;
    int rc;
    if ((rc = hp_u32(g, arch, "embedding_length", -1, &hp->n_embd, err)) ||
        (rc = hp_u32(g, arch, "block_count", -1, &hp->n_layer, err)) ||
        (rc = hp_u32(g, arch, "feed_forward_length", -1, &hp->n_ff, err)) ||
        (rc = hp_u32(g, arch, "attention.head_count", -1, &hp->n_head, err)) ||
        (rc = hp_u32(g, arch, "context_length", 2048, &hp->n_ctx_train, err)))
        return rc;
    if ((rc = hp_u32(g, arch, "attention.head_count_kv", hp->n_head, &hp->n_head_kv, err))) return rc;
    if (hp->n_embd < 1 || hp->n_layer < 1 || hp->n_ff < 1 || hp->n_head < 1 || hp->n_head_kv < 1 ||
        hp->n_ctx_train < 1)
        return qlm_fail(err, QLM_ELOAD, "metadata: sizes must be positive");
    if (hp->n_head % hp->n_head_kv)
        return qlm_fail(err, QLM_ELOAD, "metadata: %d heads is not a multiple of %d KV heads",
                        hp->n_head, hp->n_head_kv);
    if ((rc = hp_u32(g, arch, "attention.key_length", hp->n_embd / hp->n_head, &hp->head_dim, err)))
        return rc;
    int v_len;
    if ((rc = hp_u32(g, arch, "attention.value_length", hp->head_dim, &v_len, err))) return rc;
    if (v_len != hp->head_dim)
        return qlm_fail(err, QLM_ELOAD, "metadata: key length %d != value length %d is not supported",
                        hp->head_dim, v_len);
    if ((rc = hp_u32(g, arch, "rope.dimension_count", hp->head_dim, &hp->n_rot, err))) return rc;
    if (hp->head_dim < 2 || hp->head_dim % 2 || hp->n_rot % 2 || hp->n_rot > hp->head_dim ||
        hp->n_rot > GL_ROPE_MAX_DIM)
        return qlm_fail(err, QLM_ELOAD, "metadata: head size %d with %d rotary dims is not supported",
                        hp->head_dim, hp->n_rot);
    if ((rc = hp_f32(g, arch, "rope.freq_base", 10000.0f, &hp->rope_base, err)) ||
        (rc = hp_f32(g, arch, "attention.layer_norm_rms_epsilon", 1e-5f, &hp->norm_eps, err)))
        return rc;
    if (!(hp->rope_base > 0) || !(hp->norm_eps >= 0))
        return qlm_fail(err, QLM_ELOAD, "metadata: rope base and norm epsilon must be positive");

    /* RoPE scaling: linear is a plain angle factor; others need code qlm
     * does not have yet, and running without them would be silently wrong. */
    hp->rope_freq_scale = 1.0f;
    char key[128];
    gguf_str type = {0};
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    bool has_type = gguf_get_str(g, key, &type);
    float factor = 0.0f;
    if ((rc = hp_f32(g, arch, "rope.scaling.factor", 0.0f, &factor, err))) return rc;
    if (factor == 0.0f && (rc = hp_f32(g, arch, "rope.scale_linear", 0.0f, &factor, err))) return rc;
    /* longrope (Phi-3): per-dimension factors from tensors, chosen by
     * context size, and a cos/sin multiplier; no angle scale. */
    hp->n_ctx_orig = hp->n_ctx_train;
    hp->rope_mscale = 1.0f;
    if ((rc = hp_u32(g, arch, "rope.scaling.original_context_length", hp->n_ctx_train, &hp->n_ctx_orig, err)) ||
        (rc = hp_f32(g, arch, "rope.scaling.attn_factor", 1.0f, &hp->rope_mscale, err)))
        return rc;
    if (!(hp->rope_mscale > 0))
        return qlm_fail(err, QLM_ELOAD, "metadata %s.rope.scaling.attn_factor must be positive", arch);
    if (has_type && gguf_str_eq(type, "longrope")) factor = 0.0f;
    else if (has_type && !gguf_str_eq(type, "none") && !gguf_str_eq(type, "linear"))
        return qlm_fail(err, QLM_ELOAD, "metadata %s: RoPE scaling '%.*s' is not supported yet", key,
                        (int)(type.len > 32 ? 32 : type.len), type.ptr);
    if ((!has_type || gguf_str_eq(type, "linear")) && factor > 0.0f && factor != 1.0f)
        hp->rope_freq_scale = 1.0f / factor;

    /* Attention scale 1/sqrt(head size); Gemma 3 uses its
     * query_pre_attn_scalar, the head size except for the 27B model (62
     * layers), where it is n_embd / n_head, as llama.cpp decides it.  The
     * final logit cap is read by the families whose llama.cpp reads it. */
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    if (!strcmp(m->arch->name, "gemma3") && hp->n_layer == 62)
        hp->attn_scale = 1.0f / sqrtf((float)(hp->n_embd / hp->n_head));
    hp->logit_softcap = 0.0f;
    if (m->arch->logit_cap && (rc = hp_f32(g, arch, "final_logit_softcapping", 0.0f, &hp->logit_softcap, err)))
        return rc;
    if (!(hp->logit_softcap >= 0))
        return qlm_fail(err, QLM_ELOAD, "metadata %s.final_logit_softcapping must be positive", arch);
    char cap_key[128];
    snprintf(cap_key, sizeof cap_key, "%s.attn_logit_softcapping", arch);
    if (gguf_find(g, cap_key))
        return qlm_fail(err, QLM_ELOAD, "metadata %s: attention logit soft-capping is not supported "
                        "yet", cap_key);
    return QLM_OK;
}

/* Rows [r0, r0 + n) of a 2-D tensor, as a tensor of its own. */
static gl_tensor row_range(const gl_tensor *t, int64_t r0, int64_t n)
{
    gl_tensor v = *t;
    v.ne[1] = n;
    v.data = (const uint8_t *)t->data + (size_t)r0 * t->row_bytes;
    return v;
}

static int load_tensors(qlm_model *m, qlm_err *err)
{
    const gguf_ctx *g = m->gguf;
    qlm_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, QD = (int64_t)hp->n_head * hp->head_dim,
                  KD = (int64_t)hp->n_head_kv * hp->head_dim, F = hp->n_ff;
    int rc;
    const gguf_tensor *te = gguf_find_tensor(g, "token_embd.weight");
    if (!te) return qlm_fail(err, QLM_ELOAD, "tensor 'token_embd.weight' is missing");
    if (te->ne[1] < 1 || te->ne[1] > (1 << 24))
        return qlm_fail(err, QLM_ELOAD, "tensor 'token_embd.weight': vocabulary of %lld rows",
                        (long long)te->ne[1]);
    hp->n_vocab = (int)te->ne[1];
    if ((rc = get_tensor(g, "token_embd.weight", E, hp->n_vocab, true, false, &m->tok_embd, err)) ||
        (rc = get_tensor(g, "output.weight", E, hp->n_vocab, false, true, &m->output, err)) ||
        (rc = get_f32_vec(g, "output_norm.weight", E, true, &m->output_norm, err)) ||
        (rc = get_f32_vec(g, "rope_freqs.weight", hp->n_rot / 2, false, &m->rope_freqs, err)) ||
        (rc = get_f32_vec(g, "rope_factors_long.weight", hp->n_rot / 2, false, &m->rope_long, err)) ||
        (rc = get_f32_vec(g, "rope_factors_short.weight", hp->n_rot / 2, false, &m->rope_short, err)))
        return rc;
    if (!m->rope_long != !m->rope_short)
        return qlm_fail(err, QLM_ELOAD, "tensors rope_factors_long/short: one is missing");
    if (!m->output.data) { /* tied embeddings */
        const qt_traits *tr = qt_get(m->tok_embd.type);
        if (!tr->vec_dot)
            return qlm_fail(err, QLM_ELOAD, "tensor 'token_embd.weight' (tied output): quant type %s "
                            "has no dot product yet", tr->name);
        m->output = m->tok_embd;
    }
    m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->layers) return qlm_fail(err, QLM_ERUNTIME, "out of memory");
    for (int l = 0; l < hp->n_layer; l++) {
        qlm_layer *L = &m->layers[l];
        char n[96];
#define T(field, suffix, ne0, ne1) \
    (snprintf(n, sizeof n, "blk.%d.%s.weight", l, suffix), \
     get_tensor(g, n, ne0, ne1, true, true, &L->field, err))
#define V(field, suffix) \
    (snprintf(n, sizeof n, "blk.%d.%s.weight", l, suffix), get_f32_vec(g, n, E, true, &L->field, err))
#define W(field, suffix, len, required) \
    (snprintf(n, sizeof n, "blk.%d.%s", l, suffix), get_f32_vec(g, n, len, required, &L->field, err))
        if ((rc = V(attn_norm, "attn_norm")) || (rc = V(ffn_norm, "ffn_norm")) ||
            (rc = T(wo, "attn_output", QD, E)) || (rc = T(w_down, "ffn_down", F, E)))
            return rc;
        /* Q, K and V as three tensors or one fused attn_qkv; gate and up
         * as two, or (phi3) one ffn_up of 2 * n_ff rows, gate first.  The
         * fused ones are used as row ranges, so each output row is the
         * same dot product either way. */
        snprintf(n, sizeof n, "blk.%d.attn_qkv.weight", l);
        if (gguf_find_tensor(g, n)) {
            gl_tensor qkv;
            if ((rc = get_tensor(g, n, E, QD + 2 * KD, true, true, &qkv, err))) return rc;
            L->wq = row_range(&qkv, 0, QD);
            L->wk = row_range(&qkv, QD, KD);
            L->wv = row_range(&qkv, QD + KD, KD);
            snprintf(n, sizeof n, "blk.%d.attn_qkv.bias", l);
            if (gguf_find_tensor(g, n))
                return qlm_fail(err, QLM_ELOAD, "tensor '%s': a fused Q/K/V bias is not supported yet", n);
        } else if ((rc = T(wq, "attn_q", E, QD)) || (rc = T(wk, "attn_k", E, KD)) ||
                   (rc = T(wv, "attn_v", E, KD)))
            return rc;
        if (m->arch->fused_up) {
            gl_tensor up;
            if ((rc = T(w_up, "ffn_up", E, 2 * F))) return rc;
            up = L->w_up;
            L->w_gate = row_range(&up, 0, F);
            L->w_up = row_range(&up, F, F);
        } else if ((rc = T(w_gate, "ffn_gate", E, F)) || (rc = T(w_up, "ffn_up", E, F)))
            return rc;
        /* The family's extra tensors are required; biases are also read
         * where present in other families, as llama.cpp does. */
        const qlm_arch *a = m->arch;
        if ((rc = W(q_norm, "attn_q_norm.weight", hp->head_dim, a->qk_norm)) ||
            (rc = W(k_norm, "attn_k_norm.weight", hp->head_dim, a->qk_norm)) ||
            (rc = W(attn_post_norm, "post_attention_norm.weight", E, a->post_norms)) ||
            (rc = W(ffn_post_norm, "post_ffw_norm.weight", E, a->post_norms)) ||
            (rc = W(bq, "attn_q.bias", QD, a->qkv_bias)) || (rc = W(bk, "attn_k.bias", KD, a->qkv_bias)) ||
            (rc = W(bv, "attn_v.bias", KD, a->qkv_bias)))
            return rc;
#undef T
#undef V
#undef W
    }
    return QLM_OK;
}

/* The model's matrices, the output head unless it is the embedding
 * table (which is read by rows). */
static int weight_list(qlm_model *m, gl_tensor **w)
{
    int n = 0;
    for (int l = 0; l < m->hp.n_layer; l++) {
        qlm_layer *L = &m->layers[l];
        gl_tensor *const mine[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++) w[n++] = mine[i];
    }
    /* a tied output is the embedding table: it streams every token all the same */
    w[n++] = &m->output;
    return n;
}

/* Gives the pages of [p, p + n) in the file mapping back: their bytes now
 * live in the model's copy, and RSS should count them once. */
static void release_mapped(const void *p, size_t n)
{
    const uintptr_t page = 4096, a = ((uintptr_t)p + page - 1) & ~(page - 1),
                    b = ((uintptr_t)p + n) & ~(page - 1);
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older headers lack the name */
#endif

/* Faults in [p, p + n) ahead of the copies, a share per OpenMP thread:
 * the kernel does it in one call each, where the copies would take a
 * fault per 4 KB page (1.1 GB, tl-q8_0's load plus first token: 0.35-0.39 s
 * against 0.39-0.61 s).  A hint: on a kernel without it, the copies fault
 * as before. */
static void populate(uint8_t *p, size_t n)
{
    if (!p || !n) return;
    #pragma omp parallel
    {
        const size_t page = 4096, nt = (size_t)omp_get_num_threads(), th = (size_t)omp_get_thread_num(),
                     per = (n / nt + page - 1) & ~(page - 1), a = per * th, b = a + per < n ? a + per : n;
        if (a < b) madvise(p + a, b - a, MADV_POPULATE_WRITE);
    }
}

/* The bytes of t's rows, by the OpenMP threads, into dst; with release,
 * each piece's pages of the mapping are given back as soon as it is
 * copied, so that a large tensor (Gemma 3's 178 MB tied output) is never
 * resident twice (peak RSS 419 MiB against 266 before the copy). */
static void copy_rows(gl_tensor *t, uint8_t *dst, bool release)
{
    const size_t n = (size_t)t->ne[1] * t->row_bytes, piece = (size_t)1 << 20;
    const uint8_t *src = t->data;
    #pragma omp parallel for schedule(dynamic, 1)
    for (size_t i = 0; i < n; i += piece) {
        const size_t len = n - i < piece ? n - i : piece;
        memcpy(dst + i, src + i, len);
        if (release) release_mapped(src + i, len);
    }
    t->data = dst;
}

/* The matrices every token streams (not the embedding table, whose rows
 * are read a few at a time) in memory of the model's own: from a file
 * mapping, into one allocation whose pages replace the mapping's (RSS
 * counts them once), and which a thread then moves into huge pages after
 * the first forward pass (ggml-lite/promote.h).  Decoding reads them
 * faster from 2 MB pages, and a mapped file sits in them only where the
 * page cache happens to hold it in large folios: tg128 with 2 threads,
 * copied (--no-mmap) against mapped, alternated, tl-q4_k_m 43.7-44.8
 * against 37.8-38.6 t/s, tl-q8_0 25.0-25.5 against 22.7-23.0, tl-q6_k
 * 32.6 against 29.8-30.3.  Each matrix with an x16 layout on this CPU
 * (ggml-lite/layout.h) takes it on the way, and in place in --no-mmap's
 * copy, which is in huge pages already.  Never under --mlock (the locked
 * mapping is what was asked for).  QLM_X16=0 keeps the row layout,
 * QLM_COPY=0 the mapping, to compare. */
static int own_weights(qlm_model *m, qlm_err *err)
{
    const char *x16_env = getenv("QLM_X16"), *copy_env = getenv("QLM_COPY");
    const bool x16 = !(x16_env && !strcmp(x16_env, "0")), in_place = m->gguf->owned;
    bool copy = m->gguf->mapped && !in_place && !(copy_env && !strcmp(copy_env, "0"));
    if (m->gguf->locked) return QLM_OK;
    gl_tensor **w = malloc(sizeof *w * (7 * (size_t)m->hp.n_layer + 1));
    if (!w) return qlm_fail(err, QLM_ERUNTIME, "out of memory");
    const int n = weight_list(m, w);
    /* Rows of a tied output are also the embedding's, read one at a time:
     * it is copied as it is, never interleaved. */
    const bool tied = m->output.data == m->tok_embd.data;
    /* --no-mmap's copy asked for huge pages (gl_stream_alloc) */
    atomic_store(&m->owned_huge, in_place);
    for (int i = 0; i < n && in_place; i++) w[i]->huge = &m->owned_huge;
    size_t total = 0, streamed = 0;
    for (int i = 0; i < n; i++)
        streamed += w[i]->data ? (size_t)w[i]->ne[1] * w[i]->row_bytes : 0;
    /* The copy sits in memory beside the file's page cache: a model that
     * needs a good part of what the system has keeps its mapping, which
     * the page cache can hold or drop as memory runs short. */
    const size_t avail = gl_mem_available();
    if (copy && avail && streamed > avail / 2) copy = false;
    for (int i = 0; i < n; i++)
        if (w[i]->data && ((x16 && !(tied && w[i] == &m->output) && gl_x16_wanted(w[i])) || copy))
            total += ((size_t)w[i]->ne[1] * w[i]->row_bytes + 63) & ~(size_t)63;
    if (total && !in_place && !(m->own = gl_promotable_alloc(total))) {
        free(w);
        return qlm_fail(err, QLM_ERUNTIME, "out of memory for %zu MiB of weights", total >> 20);
    }
    m->own_bytes = in_place ? 0 : total;
    populate(m->own, m->own_bytes);
    size_t at = 0;
    for (int i = 0; i < n && total; i++) {
        const bool layout = x16 && !(tied && w[i] == &m->output) && gl_x16_wanted(w[i]);
        if (!w[i]->data || !(layout || copy)) continue;
        const void *old = w[i]->data;
        const size_t bytes = (size_t)w[i]->ne[1] * w[i]->row_bytes;
        uint8_t *dst = in_place ? (uint8_t *)old : m->own + at;
        if (!layout) {
            copy_rows(w[i], dst, m->gguf->mapped && !in_place);
        } else if (gl_x16_relayout(w[i], dst)) {
            free(w);
            return qlm_fail(err, QLM_ERUNTIME, "out of memory interleaving weights");
        }
        if (m->gguf->mapped && !in_place) release_mapped(old, bytes);
        at += (bytes + 63) & ~(size_t)63;
    }
    /* the copy reads as 2 MB pages once the promoter has moved all of it */
    m->promoter = gl_promote_new(m->own, m->own_bytes);
    for (int i = 0; i < n && m->own; i++)
        if ((const uint8_t *)w[i]->data >= m->own && (const uint8_t *)w[i]->data < m->own + m->own_bytes)
            w[i]->huge = gl_promote_flag(m->promoter);
    if (tied) {
        m->tok_embd.data = m->output.data;
        m->tok_embd.huge = m->output.huge;
    }
    free(w);
    return QLM_OK;
}

int qlm_model_load(qlm_model **out, const char *path, qlm_err *err)
{
    return qlm_model_load_mode(out, path, GGUF_LOAD_MMAP, err);
}

int qlm_model_load_mode(qlm_model **out, const char *path, gguf_load_mode mode, qlm_err *err)
{
    *out = NULL;
    qlm_model *m = calloc(1, sizeof *m);
    if (!m) return qlm_fail(err, QLM_ERUNTIME, "out of memory");
    int rc = gguf_open_mode(&m->gguf, path, mode, err);
    if (rc) goto fail;
    gguf_str arch;
    if (!gguf_get_str(m->gguf, "general.architecture", &arch)) {
        rc = qlm_fail(err, QLM_ELOAD, "%s: metadata general.architecture is missing", path);
        goto fail;
    }
    char arch_name[64];
    snprintf(arch_name, sizeof arch_name, "%.*s", (int)(arch.len < 63 ? arch.len : 63), arch.ptr);
    m->arch = qlm_arch_find(arch_name);
    if (!m->arch) {
        rc = qlm_fail(err, QLM_ELOAD, "%s: architecture '%s' is not supported (supported: %s)", path,
                      arch_name, qlm_arch_list());
        goto fail;
    }
    gguf_str name;
    m->name = gguf_get_str(m->gguf, "general.name", &name) ? gguf_str_dup(name) : strdup(path);
    if ((rc = load_hparams(m, arch_name, err)) || (rc = load_tensors(m, err)) ||
        (rc = load_swa(m, arch_name, err)) || (rc = own_weights(m, err)) ||
        (rc = qlm_vocab_load(&m->vocab, m->gguf, err)))
        goto fail;
    if (m->arch->act == QLM_ACT_GELU) {
        if (!(m->gelu = malloc(sizeof *m->gelu * GL_GELU_ENTRIES))) {
            rc = qlm_fail(err, QLM_ERUNTIME, "out of memory");
            goto fail;
        }
        gl_gelu_table(m->gelu);
    }
    if (qlm_vocab_size(m->vocab) > m->hp.n_vocab) {
        rc = qlm_fail(err, QLM_ELOAD, "vocabulary has %d tokens but the embedding only %d rows",
                      qlm_vocab_size(m->vocab), m->hp.n_vocab);
        goto fail;
    }
    *out = m;
    return QLM_OK;
fail:
    if (err && rc == QLM_ELOAD && strncmp(err->msg, path, strlen(path))) {
        char tmp[sizeof err->msg];
        snprintf(tmp, sizeof tmp, "%.200s: %.300s", path, err->msg);
        memcpy(err->msg, tmp, sizeof tmp);
    }
    qlm_model_free(m);
    return rc;
}

void qlm_model_settle(qlm_model *m)
{
    if (m) gl_promote_wait(m->promoter);
}

void qlm_model_free(qlm_model *m)
{
    if (!m) return;
    if (m->vocab) qlm_vocab_free(m->vocab);
    if (m->gguf) gguf_close(m->gguf);
    gl_promote_stop(m->promoter);
    if (m->own) gl_arena_free(m->own, m->own_bytes);
    free(m->layers);
    free(m->gelu);
    free(m->name);
    free(m);
}
