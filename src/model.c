/* model.c - loading: hyperparameters from metadata, then every tensor
 * found, shape-checked and type-checked before anything runs. */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    if (has_type && !gguf_str_eq(type, "none") && !gguf_str_eq(type, "linear"))
        return qlm_fail(err, QLM_ELOAD, "metadata %s: RoPE scaling '%.*s' is not supported yet", key,
                        (int)(type.len > 32 ? 32 : type.len), type.ptr);
    if ((!has_type || gguf_str_eq(type, "linear")) && factor > 0.0f && factor != 1.0f)
        hp->rope_freq_scale = 1.0f / factor;
    return QLM_OK;
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
        (rc = get_f32_vec(g, "rope_freqs.weight", hp->n_rot / 2, false, &m->rope_freqs, err)))
        return rc;
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
        if ((rc = V(attn_norm, "attn_norm")) || (rc = V(ffn_norm, "ffn_norm")) ||
            (rc = T(wq, "attn_q", E, QD)) || (rc = T(wk, "attn_k", E, KD)) ||
            (rc = T(wv, "attn_v", E, KD)) || (rc = T(wo, "attn_output", QD, E)) ||
            (rc = T(w_gate, "ffn_gate", E, F)) || (rc = T(w_up, "ffn_up", E, F)) ||
            (rc = T(w_down, "ffn_down", F, E)))
            return rc;
#undef T
#undef V
    }
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
        (rc = qlm_vocab_load(&m->vocab, m->gguf, err)))
        goto fail;
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

void qlm_model_free(qlm_model *m)
{
    if (!m) return;
    if (m->vocab) qlm_vocab_free(m->vocab);
    if (m->gguf) gguf_close(m->gguf);
    free(m->layers);
    free(m->name);
    free(m);
}
