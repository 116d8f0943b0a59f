/* quant_recipe.c - llama.cpp's tensor type choices as a table.
 *
 * Source of the rules: llama.cpp src/llama-quant.cpp (as vendored in
 * llama-cpp-python 0.3.36), llama_tensor_get_type_impl and
 * tensor_type_fallback, restricted to the file types qlm can write (no
 * i-quants, no imatrix, no overrides). */
#include "tools/quant_recipe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* llama.h's LLAMA_FTYPE_* values for the types below. */
enum {
    FT_F32 = 0, FT_F16 = 1, FT_Q4_0 = 2, FT_Q4_1 = 3, FT_Q8_0 = 7, FT_Q5_0 = 8, FT_Q5_1 = 9,
    FT_Q2_K = 10, FT_Q3_K_S = 11, FT_Q3_K_M = 12, FT_Q3_K_L = 13, FT_Q4_K_S = 14,
    FT_Q4_K_M = 15, FT_Q5_K_S = 16, FT_Q5_K_M = 17, FT_Q6_K = 18, FT_BF16 = 32,
};

static const qr_ftype ftypes[] = {
    {"F32", FT_F32, QT_F32},       {"F16", FT_F16, QT_F16},       {"BF16", FT_BF16, QT_BF16},
    {"Q4_0", FT_Q4_0, QT_Q4_0},    {"Q4_1", FT_Q4_1, QT_Q4_1},    {"Q5_0", FT_Q5_0, QT_Q5_0},
    {"Q5_1", FT_Q5_1, QT_Q5_1},    {"Q8_0", FT_Q8_0, QT_Q8_0},    {"Q2_K", FT_Q2_K, QT_Q2_K},
    {"Q3_K_S", FT_Q3_K_S, QT_Q3_K}, {"Q3_K_M", FT_Q3_K_M, QT_Q3_K}, {"Q3_K_L", FT_Q3_K_L, QT_Q3_K},
    {"Q4_K_S", FT_Q4_K_S, QT_Q4_K}, {"Q4_K_M", FT_Q4_K_M, QT_Q4_K}, {"Q5_K_S", FT_Q5_K_S, QT_Q5_K},
    {"Q5_K_M", FT_Q5_K_M, QT_Q5_K}, {"Q6_K", FT_Q6_K, QT_Q6_K},
};
#define N_FTYPES (int)(sizeof ftypes / sizeof ftypes[0])

const qr_ftype *qr_find(const char *name)
{
    /* llama-quantize's aliases: the bare K name means the _M mix */
    static const char *const alias[][2] = {{"Q3_K", "Q3_K_M"}, {"Q4_K", "Q4_K_M"}, {"Q5_K", "Q5_K_M"}};
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (!strcasecmp(name, alias[i][0])) name = alias[i][1];
    for (int i = 0; i < N_FTYPES; i++)
        if (!strcasecmp(name, ftypes[i].name)) return &ftypes[i];
    return NULL;
}

const char *qr_names(void)
{
    static char buf[256];
    if (!buf[0])
        for (int i = 0; i < N_FTYPES; i++)
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? ", " : "", ftypes[i].name);
    return buf;
}

/* ---- tensor categories (llama.cpp's tensor_get_category, same order) ---- */
enum { CAT_TOKEN_EMBD, CAT_OUTPUT, CAT_ATTN_V, CAT_ATTN_K, CAT_ATTN_Q, CAT_ATTN_OUT,
       CAT_FFN_UP, CAT_FFN_GATE, CAT_FFN_DOWN, CAT_OTHER };

static int category(const char *name)
{
    if (!strcmp(name, "output.weight")) return CAT_OUTPUT;
    if (!strcmp(name, "token_embd.weight") || !strcmp(name, "per_layer_token_embd.weight"))
        return CAT_TOKEN_EMBD;
    /* fused qkv and MLA's kv_b are as sensitive as attn_v and share its
     * rules and counter */
    if (strstr(name, "attn_qkv.weight") || strstr(name, "attn_kv_b.weight") || strstr(name, "attn_v.weight"))
        return CAT_ATTN_V;
    if (strstr(name, "attn_k.weight")) return CAT_ATTN_K;
    if (strstr(name, "attn_q.weight")) return CAT_ATTN_Q;
    if (strstr(name, "attn_output.weight")) return CAT_ATTN_OUT;
    if (strstr(name, "ffn_up")) return CAT_FFN_UP;
    if (strstr(name, "ffn_gate")) return CAT_FFN_GATE;
    if (strstr(name, "ffn_down")) return CAT_FFN_DOWN;
    return CAT_OTHER;
}

/* ggml_n_dims: trailing dimensions of 1 do not count. */
static int n_dims(const qr_tensor *t)
{
    int n = 4;
    while (n > 1 && t->ne[n - 1] == 1) n--;
    return n;
}

/* llama.cpp's tensor_allows_quantization for the tensors of the
 * architectures it lists: small or precision-critical matrices stay as
 * they are. */
static bool allows_quantization(const qr_tensor *t)
{
    static const char *const keep[] = {
        "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel",
        "per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight",
        "indexer.q_proj.weight", "time_mix_first.weight", "time_mix_w0.weight",
        "time_mix_w1.weight", "time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight",
        "time_mix_v2.weight", "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight",
        "time_mix_g1.weight", "time_mix_g2.weight", "time_mix_decay_w1.weight",
        "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight", "attn_rel_b.weight",
        ".position_embd", "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos", ".patch_embd",
        ".patch_merger", "a.rvq.codebook", "mm.a.code_embd",
    };
    if (n_dims(t) < 2) return false;
    size_t len = strlen(t->name);
    if (len < 6 || strcmp(t->name + len - 6, "weight")) return false;
    if (!strcmp(t->name, "position_embd.weight") || !strcmp(t->name, "token_types.weight")) return false;
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
        if (strstr(t->name, keep[i])) return false;
    return true;
}

/* ---- the rules ----
 * A row applies when the file type is in its mask, the tensor is in its
 * category and every condition bit holds; the first row that applies gives
 * the type, none leaves the file type's base type.  Rows are in the order
 * of llama.cpp's if/else chains, which is what makes first-match right. */
enum {
    C_MORE_BITS = 1 << 0,  /* use_more_bits(i, n): first and last eighth, every third between */
    C_FIRST_8TH = 1 << 1,  /* i < n/8 */
    C_FIRST_16TH = 1 << 2, /* i < n/16 */
    C_I_LT_2 = 1 << 3,     /* the first two attn_v */
    C_I_LT_4 = 1 << 4,
    C_GQA4 = 1 << 5,       /* n_head / n_head_kv >= 4 */
    C_FALCON = 1 << 6,
    C_NOT_FALCON = 1 << 7,
    C_EXPERT8 = 1 << 8,    /* exactly 8 experts (Mixtral) */
    C_NOT_EXPERT8 = 1 << 9,
};

#define M(ft) (1u << (ft))
#define M_ALL_Q (M(FT_Q4_0) | M(FT_Q4_1) | M(FT_Q5_0) | M(FT_Q5_1) | M(FT_Q8_0) | M(FT_Q2_K) | \
                 M(FT_Q3_K_S) | M(FT_Q3_K_M) | M(FT_Q3_K_L) | M(FT_Q4_K_S) | M(FT_Q4_K_M) |   \
                 M(FT_Q5_K_S) | M(FT_Q5_K_M) | M(FT_Q6_K))

static const struct rule {
    uint32_t ftypes;
    int cat;
    unsigned cond;
    qt_type type;
} rules[] = {
    {M(FT_Q2_K), CAT_ATTN_V, C_GQA4, QT_Q4_K},
    {M(FT_Q2_K), CAT_ATTN_V, 0, QT_Q3_K},
    {M(FT_Q3_K_M), CAT_ATTN_V, C_I_LT_2, QT_Q5_K},
    {M(FT_Q3_K_M), CAT_ATTN_V, 0, QT_Q4_K},
    {M(FT_Q3_K_L), CAT_ATTN_V, 0, QT_Q5_K},
    {M(FT_Q4_K_M) | M(FT_Q5_K_M), CAT_ATTN_V, C_MORE_BITS, QT_Q6_K},
    {M(FT_Q4_K_S), CAT_ATTN_V, C_I_LT_4, QT_Q5_K},

    {M_ALL_Q, CAT_ATTN_K, C_EXPERT8, QT_Q8_0},

    {M(FT_Q2_K), CAT_FFN_DOWN, 0, QT_Q3_K},
    {M(FT_Q3_K_M), CAT_FFN_DOWN, C_FIRST_16TH, QT_Q5_K},
    {M(FT_Q3_K_M), CAT_FFN_DOWN, C_NOT_FALCON, QT_Q4_K},
    {M(FT_Q3_K_M), CAT_FFN_DOWN, C_MORE_BITS, QT_Q4_K},
    {M(FT_Q3_K_L), CAT_FFN_DOWN, C_FALCON, QT_Q4_K},
    {M(FT_Q3_K_L), CAT_FFN_DOWN, 0, QT_Q5_K},
    {M(FT_Q4_K_M), CAT_FFN_DOWN, C_FALCON | C_FIRST_16TH, QT_Q6_K},
    {M(FT_Q4_K_M), CAT_FFN_DOWN, C_FALCON | C_MORE_BITS, QT_Q5_K},
    {M(FT_Q4_K_M), CAT_FFN_DOWN, C_FALCON, QT_Q4_K},
    {M(FT_Q4_K_M) | M(FT_Q5_K_M), CAT_FFN_DOWN, C_MORE_BITS, QT_Q6_K},
    {M(FT_Q4_K_S), CAT_FFN_DOWN, C_NOT_FALCON | C_FIRST_8TH, QT_Q5_K},

    {M(FT_Q2_K) | M(FT_Q3_K_S) | M(FT_Q3_K_M) | M(FT_Q4_K_S) | M(FT_Q4_K_M), CAT_ATTN_OUT,
     C_NOT_FALCON | C_EXPERT8, QT_Q5_K},
    {M(FT_Q2_K), CAT_ATTN_OUT, C_NOT_FALCON | C_NOT_EXPERT8, QT_Q3_K},
    {M(FT_Q3_K_M), CAT_ATTN_OUT, C_NOT_FALCON | C_NOT_EXPERT8, QT_Q4_K},
    {M(FT_Q3_K_L), CAT_ATTN_OUT, C_NOT_FALCON | C_NOT_EXPERT8, QT_Q5_K},
    {M(FT_Q3_K_L), CAT_ATTN_OUT, C_FALCON, QT_Q4_K},
};

static bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

static bool holds(unsigned cond, const qr_model *m, int i, int n)
{
    const int gqa = m->n_head_kv > 0 ? m->n_head / m->n_head_kv : 0;
    return (!(cond & C_MORE_BITS) || use_more_bits(i, n)) && (!(cond & C_FIRST_8TH) || i < n / 8)
        && (!(cond & C_FIRST_16TH) || i < n / 16) && (!(cond & C_I_LT_2) || i < 2)
        && (!(cond & C_I_LT_4) || i < 4) && (!(cond & C_GQA4) || gqa >= 4)
        && (!(cond & C_FALCON) || m->falcon) && (!(cond & C_NOT_FALCON) || !m->falcon)
        && (!(cond & C_EXPERT8) || m->n_expert == 8) && (!(cond & C_NOT_EXPERT8) || m->n_expert != 8);
}

static int64_t block_of(qt_type t) { return qt_get(t)->block_size; }

/* A rule's type whose block does not divide the row falls back as in
 * llama.cpp: 256-blocks to a 32-block type of similar size, and to F16
 * when even 32 does not divide. */
static qt_type fallback(qt_type t, int64_t ncols, bool *fell)
{
    if (ncols % block_of(t) == 0) return t;
    *fell = true;
    qt_type r = t;
    switch (t) {
    case QT_Q2_K: case QT_Q3_K: r = QT_Q4_0; break;
    case QT_Q4_K: r = QT_Q5_0; break;
    case QT_Q5_K: r = QT_Q5_1; break;
    case QT_Q6_K: r = QT_Q8_0; break;
    default: break;
    }
    return ncols % block_of(r) == 0 ? r : QT_F16;
}

typedef struct counters {
    int i_attn_v, n_attn_v, i_ffn_down;
    bool tied; /* no output.weight: token_embd doubles as the output matrix */
} counters;

static qt_type choose(const qr_ftype *ft, const qr_model *m, counters *c, const qr_tensor *t)
{
    const int cat = category(t->name);
    qt_type type = ft->base;
    if (cat == CAT_OUTPUT || (c->tied && cat == CAT_TOKEN_EMBD)) {
        /* the logits matrix is the most sensitive one: Q6_K unless the row
         * does not fit the base type's block */
        if (m->falcon || t->ne[0] % block_of(type)) type = QT_Q8_0;
        else if (type != QT_Q8_0) type = QT_Q6_K;
        return type;
    }
    int i = 0, n = 0;
    if (cat == CAT_ATTN_V) i = c->i_attn_v++, n = c->n_attn_v;
    if (cat == CAT_FFN_DOWN) {
        i = c->i_ffn_down++, n = m->n_layer;
        /* experts of one layer are not consecutive in Mixtral files */
        if (m->n_expert > 1) sscanf(t->name, "blk.%d.", &i);
    }
    for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++)
        if ((rules[r].ftypes & M(ft->ftype)) && rules[r].cat == cat && holds(rules[r].cond, m, i, n)) {
            type = rules[r].type;
            break;
        }
    if (cat == CAT_ATTN_V) {
        /* attn_v is 8x smaller than attn_q in these models: more bits are cheap */
        if (m->is_70b && (type == QT_Q3_K || type == QT_Q4_K)) type = QT_Q5_K;
        if (m->n_expert == 8) type = QT_Q8_0;
    }
    return type;
}

static int layer_of(const char *name)
{
    int l = -1;
    sscanf(name, "blk.%d.", &l);
    return l;
}

/* llama.cpp's weight_name_comparer: by layer number (non-layer tensors
 * first), then by name. */
static int cmp_llama_order(const void *a, const void *b)
{
    const qr_tensor *x = *(qr_tensor *const *)a, *y = *(qr_tensor *const *)b;
    int lx = layer_of(x->name), ly = layer_of(y->name);
    if (lx != ly) return lx < ly ? -1 : 1;
    return strcmp(x->name, y->name);
}

bool qr_plan(const qr_ftype *ft, const qr_model *m, qr_tensor *t, int64_t n)
{
    qr_tensor **order = malloc(sizeof *order * (size_t)(n ? n : 1));
    if (!order) return false;
    counters c = {.tied = true};
    for (int64_t k = 0; k < n; k++) {
        order[k] = &t[k];
        int cat = category(t[k].name);
        if (cat == CAT_ATTN_V) c.n_attn_v++;
        if (cat == CAT_OUTPUT) c.tied = false;
    }
    qsort(order, (size_t)n, sizeof *order, cmp_llama_order);
    const bool quantized = ft->base != QT_F32 && ft->base != QT_F16 && ft->base != QT_BF16;
    for (int64_t k = 0; k < n; k++) {
        qr_tensor *x = order[k];
        x->fallback = false;
        if (!allows_quantization(x)) x->new_type = x->type;
        else if (!quantized) x->new_type = ft->base;
        else x->new_type = fallback(choose(ft, m, &c, x), x->ne[0], &x->fallback);
    }
    free(order);
    return true;
}
