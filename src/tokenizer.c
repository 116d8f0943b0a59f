/* tokenizer.c - vocabulary loading, special-token splitting, detokenizing.
 *
 * The behaviour to match is llama.cpp's (llama-vocab.cpp): which tokens
 * count as special, which end generation, the per-family defaults and the
 * order in which special texts are cut out of a prompt all follow it, so
 * that the same GGUF and prompt give the same ids. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"
#include "unicode.h"

/* GGUF token types (tokenizer.ggml.token_type). */
enum {
    TT_UNDEFINED = 0, TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3,
    TT_USER_DEFINED = 4, TT_UNUSED = 5, TT_BYTE = 6,
};

/* ---- string table and hash map ---- */

static uint64_t hash_bytes(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ULL; /* FNV-1a */
    }
    return h;
}

#define HASH_SEED 0xcbf29ce484222325ULL

/* Builds a table of n strings; get(i) gives string i. */
static int strtab_build(qlm_strtab *t, size_t n, void *ctx,
                        const char *(*get)(void *ctx, size_t i, size_t *len))
{
    memset(t, 0, sizeof *t);
    t->off = malloc((n ? n : 1) * sizeof *t->off);
    t->len = malloc((n ? n : 1) * sizeof *t->len);
    if (!t->off || !t->len)
        return -1;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        get(ctx, i, &len);
        if (len > UINT32_MAX - 1)
            return -1;
        total += len + 1;
    }
    if (total > SIZE_MAX - 1 || !(t->buf = malloc((size_t)total + 1)))
        return -1;
    uint64_t pos = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *s = get(ctx, i, &len);
        if (len)
            memcpy(t->buf + pos, s, len);
        t->buf[pos + len] = '\0';
        t->off[i] = pos;
        t->len[i] = (uint32_t)len;
        pos += len + 1;
    }
    t->n = n;
    return 0;
}

static void strtab_free(qlm_strtab *t)
{
    free(t->buf);
    free(t->off);
    free(t->len);
    memset(t, 0, sizeof *t);
}

int qlm_strmap_init(qlm_strmap *m, const qlm_strtab *keys, size_t n_expected)
{
    size_t cap = 16;
    while (cap < n_expected * 2)
        cap *= 2;
    m->slot = malloc(cap * sizeof *m->slot);
    m->hash = malloc(cap * sizeof *m->hash);
    if (!m->slot || !m->hash) {
        free(m->slot);
        free(m->hash);
        m->slot = NULL;
        m->hash = NULL;
        return -1;
    }
    memset(m->slot, 0xFF, cap * sizeof *m->slot);
    m->mask = cap - 1;
    m->keys = keys;
    return 0;
}

void qlm_strmap_free(qlm_strmap *m)
{
    free(m->slot);
    free(m->hash);
    m->slot = NULL;
    m->hash = NULL;
}

static bool key_equals(const qlm_strtab *t, int32_t i, const char *const *parts,
                       const size_t *lens, int np)
{
    const char *k = t->buf + t->off[i];
    size_t klen = t->len[i], pos = 0;
    for (int p = 0; p < np; p++) {
        if (lens[p] > klen - pos || memcmp(k + pos, parts[p], lens[p]))
            return false;
        pos += lens[p];
    }
    return pos == klen;
}

int32_t qlm_strmap_find(const qlm_strmap *m, const char *const *parts,
                        const size_t *lens, int np)
{
    if (!m->slot)
        return -1;
    uint64_t h = HASH_SEED;
    for (int p = 0; p < np; p++)
        h = hash_bytes(h, parts[p], lens[p]);
    for (size_t s = (size_t)h & m->mask;; s = (s + 1) & m->mask) {
        int32_t i = m->slot[s];
        if (i < 0)
            return -1;
        if (m->hash[s] == (uint32_t)h && key_equals(m->keys, i, parts, lens, np))
            return i;
    }
}

int32_t qlm_strmap_add(qlm_strmap *m, int32_t i)
{
    const char *k = m->keys->buf + m->keys->off[i];
    size_t klen = m->keys->len[i];
    uint64_t h = hash_bytes(HASH_SEED, k, klen);
    for (size_t s = (size_t)h & m->mask;; s = (s + 1) & m->mask) {
        int32_t j = m->slot[s];
        if (j < 0) {
            m->slot[s] = i;
            m->hash[s] = (uint32_t)h;
            return -1;
        }
        if (m->hash[s] == (uint32_t)h && key_equals(m->keys, j, &k, &klen, 1))
            return j;
    }
}

int32_t qlm_tok_lookup(const qlm_vocab *v, const char *s, size_t n)
{
    return qlm_strmap_find(&v->tok_map, &s, &n, 1);
}

int qlm_ids_push(qlm_ids *ids, int32_t id)
{
    if (ids->n == ids->cap) {
        size_t cap = ids->cap ? ids->cap * 2 : 64;
        int32_t *nv = realloc(ids->v, cap * sizeof *nv);
        if (!nv)
            return -1;
        ids->v = nv;
        ids->cap = cap;
    }
    ids->v[ids->n++] = id;
    return 0;
}

/* ---- loading ---- */

typedef struct load_ctx {
    const gguf_value *arr;
    char empty[32]; /* replacement text for an empty token */
} load_ctx;

/* An empty token text would be unreachable and would collide with other
 * empty ones in the map; llama.cpp renames them the same way. */
static const char *token_text_at(void *p, size_t i, size_t *len)
{
    load_ctx *c = p;
    gguf_str s = c->arr->arr.strs[i];
    if (s.len == 0) {
        snprintf(c->empty, sizeof c->empty, "[EMPTY_%zu]", i);
        *len = strlen(c->empty);
        return c->empty;
    }
    *len = (size_t)s.len;
    return s.ptr;
}

static const char *merge_text_at(void *p, size_t i, size_t *len)
{
    load_ctx *c = p;
    gguf_str s = c->arr->arr.strs[i];
    *len = (size_t)s.len;
    return s.ptr;
}

static int32_t find_text(const qlm_vocab *v, const char *s)
{
    return qlm_tok_lookup(v, s, strlen(s));
}

/* Reads an id key.  A present key must hold an id inside the vocab for
 * the ids tokenizing depends on (strict); for the others an unusable
 * value is ignored, as llama.cpp does with a warning. */
static int read_id(qlm_vocab *v, const gguf_ctx *ctx, const char *key, int32_t *id,
                   bool strict, qlm_err *err)
{
    if (!gguf_find(ctx, key))
        return 0;
    uint32_t u;
    if (!gguf_get_u32(ctx, key, &u) || u >= (uint32_t)v->n_tokens) {
        if (!strict)
            return 0;
        return qlm_fail(err, QLM_ELOAD, "%s: not a token id of this vocab (%d tokens)", key,
                        v->n_tokens);
    }
    *id = (int32_t)u;
    return 0;
}

static int read_bool(const gguf_ctx *ctx, const char *key, bool *out, qlm_err *err)
{
    if (!gguf_find(ctx, key))
        return 0;
    if (!gguf_get_bool(ctx, key, out))
        return qlm_fail(err, QLM_ELOAD, "%s: expected a bool", key);
    return 0;
}

/* The first id (lowest) whose text is in list, or -1.  llama.cpp takes
 * whichever its hash map yields first; lowest id is the deterministic
 * choice and agrees whenever only one candidate exists. */
static int32_t first_with_text(const qlm_vocab *v, const char *const *list)
{
    int32_t best = -1;
    for (; *list; list++) {
        int32_t id = find_text(v, *list);
        if (id >= 0 && (best < 0 || id < best))
            best = id;
    }
    return best;
}

static const char *const eot_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
    "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
    "<end_of_utterance>", NULL,
};
static const char *const eom_texts[] = {"<|eom_id|>", NULL};
static const char *const fim_pre_texts[] = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>",
    "<PRE>", "\xe2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>", NULL,
};
static const char *const fim_suf_texts[] = {
    "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81hole\xef\xbd\x9c>",
    "<SUF>", "\xe2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>", NULL,
};
static const char *const fim_mid_texts[] = {
    "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>",
    "<MID>", "\xe2\x96\x81<MID>", "<|code_middle|>", "<|middle|>", NULL,
};
static const char *const fim_pad_texts[] = {
    "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL,
};
static const char *const fim_rep_texts[] = {
    "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", NULL,
};
static const char *const fim_sep_texts[] = {"<|file_sep|>", NULL};

/* Texts that end generation wherever they appear in a vocab. */
static const char *const eog_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
    "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>",
    "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>",
    "<turn|>", "<|tool_response>",
    "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>", "[e~[", NULL,
};

/* Tokens recognised by their text are control tokens whatever the file
 * says (converters sometimes mark them normal), so that parse_special cuts
 * them out of a prompt and plain detokenizing hides them. */
static void make_control(qlm_vocab *v, int32_t id)
{
    if (id >= 0)
        v->attr[id] |= QLM_ATTR_CONTROL;
}

static void detect_by_text(qlm_vocab *v, int32_t *id, const char *const *texts)
{
    if (*id < 0) {
        *id = first_with_text(v, texts);
        make_control(v, *id);
    }
}

static void build_eog(qlm_vocab *v, int32_t fim_pad, int32_t fim_rep, int32_t fim_sep)
{
    int32_t ids[] = {fim_pad, fim_rep, fim_sep, v->eos, v->eot, v->eom};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if (ids[i] >= 0)
            v->eog[ids[i]] = 1;
    for (const char *const *t = eog_texts; *t; t++) {
        int32_t id = find_text(v, *t);
        if (id >= 0) {
            v->eog[id] = 1;
            make_control(v, id);
        }
    }
    /* gpt-oss's channel markers are part of the visible output: treat them
     * like added tokens, not control tokens. */
    static const char *const render_always[] = {
        "<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", NULL,
    };
    for (const char *const *t = render_always; *t; t++) {
        int32_t id = find_text(v, *t);
        if (id >= 0)
            v->attr[id] = QLM_ATTR_USER_DEFINED;
    }
    /* In harmony-style vocabs (<|return|>+<|call|>, or solar's
     * <|calls|>+<|flush|>) "<|end|>" closes a message, not the turn. */
    int32_t end = find_text(v, "<|end|>");
    int32_t r = find_text(v, "<|return|>"), c1 = find_text(v, "<|call|>"),
            c2 = find_text(v, "<|calls|>"), fl = find_text(v, "<|flush|>");
    bool ret = r >= 0 && v->eog[r];
    bool call = (c1 >= 0 && v->eog[c1]) || (c2 >= 0 && v->eog[c2]);
    bool flush = fl >= 0 && v->eog[fl];
    if (end >= 0 && v->eog[end] && ((ret && call) || (call && flush))) {
        v->eog[end] = 0;
        v->attr[end] = QLM_ATTR_USER_DEFINED;
    }
    /* Where a vocab has its own end marker of this kind, "</s>" is text. */
    int32_t s = find_text(v, "</s>"), tr = find_text(v, "<|tool_response>"),
            pe = find_text(v, "<|plamo:eos|>");
    if (s >= 0 && v->eog[s] && ((tr >= 0 && v->eog[tr]) || (pe >= 0 && v->eog[pe]))) {
        v->eog[s] = 0;
        v->attr[s] = QLM_ATTR_NORMAL;
    }
}

typedef struct len_id {
    uint32_t len;
    int32_t id;
} len_id;

static int by_len_desc(const void *a, const void *b)
{
    const len_id *x = a, *y = b;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int build_special_cache(qlm_vocab *v)
{
    size_t n = 0;
    for (int32_t i = 0; i < v->n_tokens; i++)
        if (v->attr[i] & (QLM_ATTR_CONTROL | QLM_ATTR_USER_DEFINED | QLM_ATTR_UNKNOWN))
            n++;
    len_id *tmp = malloc((n ? n : 1) * sizeof *tmp);
    v->special = malloc((n ? n : 1) * sizeof *v->special);
    if (!tmp || !v->special) {
        free(tmp);
        return -1;
    }
    n = 0;
    for (int32_t i = 0; i < v->n_tokens; i++)
        if (v->attr[i] & (QLM_ATTR_CONTROL | QLM_ATTR_USER_DEFINED | QLM_ATTR_UNKNOWN))
            tmp[n++] = (len_id){v->text.len[i], i};
    qsort(tmp, n, sizeof *tmp, by_len_desc);
    for (size_t i = 0; i < n; i++)
        v->special[i] = tmp[i].id;
    v->n_special = n;
    free(tmp);
    return 0;
}

/* Phi-3's tokenizer strips the whitespace after its chat markers; that
 * is known only from the model name in the reference too. */
static void apply_name_rules(qlm_vocab *v, const gguf_ctx *ctx)
{
    gguf_str name;
    if (!gguf_get_str(ctx, "general.name", &name))
        return;
    char low[256];
    size_t n = name.len < sizeof low - 1 ? (size_t)name.len : sizeof low - 1;
    for (size_t i = 0; i < n; i++)
        low[i] = (char)tolower((unsigned char)name.ptr[i]);
    low[n] = '\0';
    if (!strstr(low, "phi-3") && !strstr(low, "phi3"))
        return;
    for (size_t i = 0; i < v->n_special; i++)
        v->attr[v->special[i]] |= QLM_ATTR_RSTRIP;
    int32_t id = find_text(v, "</s>");
    if (id >= 0)
        v->attr[id] |= QLM_ATTR_RSTRIP;
    static const char *const keep[] = {"<unk>", "<s>", "<|endoftext|>", NULL};
    for (const char *const *t = keep; *t; t++)
        if ((id = find_text(v, *t)) >= 0)
            v->attr[id] &= (uint16_t)~QLM_ATTR_RSTRIP;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* "<0xNN>" -> NN, or -1. */
static int byte_token_value(const qlm_vocab *v, int32_t id)
{
    size_t n;
    const char *t = qlm_tok_text(v, id, &n);
    if (n != 6 || memcmp(t, "<0x", 3) || t[5] != '>' || hexval(t[3]) < 0 || hexval(t[4]) < 0)
        return -1;
    return hexval(t[3]) * 16 + hexval(t[4]);
}

static const gguf_value *get_array(const gguf_ctx *ctx, const char *key, qlm_err *err,
                                   bool required)
{
    const gguf_kv *kv = gguf_find(ctx, key);
    if (!kv) {
        if (required)
            qlm_fail(err, QLM_ELOAD, "missing %s", key);
        return NULL;
    }
    if (kv->val.type != GGUF_ARRAY) {
        qlm_fail(err, QLM_ELOAD, "%s: expected an array, got %s", key,
                 gguf_vtype_name(kv->val.type));
        return NULL;
    }
    return &kv->val;
}

static int load_tokens(qlm_vocab *v, const gguf_ctx *ctx, qlm_err *err)
{
    const gguf_value *toks = get_array(ctx, "tokenizer.ggml.tokens", err, true);
    if (!toks)
        return QLM_ELOAD;
    if (toks->arr.type != GGUF_STRING)
        return qlm_fail(err, QLM_ELOAD, "tokenizer.ggml.tokens: expected strings, got %s",
                        gguf_vtype_name(toks->arr.type));
    if (toks->arr.n == 0 || toks->arr.n > INT32_MAX / 2)
        return qlm_fail(err, QLM_ELOAD, "tokenizer.ggml.tokens: bad token count %llu",
                        (unsigned long long)toks->arr.n);
    int32_t n = (int32_t)toks->arr.n;
    v->n_tokens = n;

    const gguf_value *scores = NULL, *types = NULL;
    if (gguf_find(ctx, "tokenizer.ggml.scores")) {
        if (!(scores = get_array(ctx, "tokenizer.ggml.scores", err, false)))
            return QLM_ELOAD;
        if (scores->arr.type != GGUF_FLOAT32 && scores->arr.type != GGUF_INT32)
            return qlm_fail(err, QLM_ELOAD, "tokenizer.ggml.scores: expected float32, got %s",
                            gguf_vtype_name(scores->arr.type));
        if (scores->arr.n != (uint64_t)n)
            return qlm_fail(err, QLM_ELOAD, "tokenizer.ggml.scores: %llu entries for %d tokens",
                            (unsigned long long)scores->arr.n, n);
    }
    if (gguf_find(ctx, "tokenizer.ggml.token_type")) {
        if (!(types = get_array(ctx, "tokenizer.ggml.token_type", err, false)))
            return QLM_ELOAD;
        if (types->arr.type != GGUF_INT32)
            return qlm_fail(err, QLM_ELOAD, "tokenizer.ggml.token_type: expected int32, got %s",
                            gguf_vtype_name(types->arr.type));
        if (types->arr.n != (uint64_t)n)
            return qlm_fail(err, QLM_ELOAD, "tokenizer.ggml.token_type: %llu entries for %d tokens",
                            (unsigned long long)types->arr.n, n);
    }

    load_ctx lc = {.arr = toks};
    v->score = calloc((size_t)n, sizeof *v->score);
    v->attr = calloc((size_t)n, sizeof *v->attr);
    v->eog = calloc((size_t)n, 1);
    if (!v->score || !v->attr || !v->eog || strtab_build(&v->text, (size_t)n, &lc, token_text_at) ||
        qlm_strmap_init(&v->tok_map, &v->text, (size_t)n))
        return qlm_fail(err, QLM_ERUNTIME, "out of memory loading the vocab");

    for (int32_t i = 0; i < n; i++) {
        int32_t dup = qlm_strmap_add(&v->tok_map, i);
        if (dup >= 0)
            return qlm_fail(err, QLM_ELOAD, "tokenizer.ggml.tokens: tokens %d and %d are both '%.64s'",
                            dup, i, qlm_vocab_text(v, i));
        if (scores)
            v->score[i] = (float)gguf_arr_f64(scores, (uint64_t)i);
        uint16_t attr = QLM_ATTR_NORMAL;
        if (types) {
            switch (gguf_arr_i64(types, (uint64_t)i)) {
            case TT_NORMAL: attr = QLM_ATTR_NORMAL; break;
            case TT_UNKNOWN: attr = QLM_ATTR_UNKNOWN; break;
            case TT_CONTROL: attr = QLM_ATTR_CONTROL; break;
            case TT_USER_DEFINED: attr = QLM_ATTR_USER_DEFINED; break;
            case TT_UNUSED: attr = QLM_ATTR_UNUSED; break;
            case TT_BYTE: attr = QLM_ATTR_BYTE; break;
            default: attr = QLM_ATTR_UNDEFINED; break;
            }
        }
        v->attr[i] = attr;
        if ((attr & QLM_ATTR_BYTE) && byte_token_value(v, i) < 0)
            return qlm_fail(err, QLM_ELOAD, "token %d is typed byte but its text '%.64s' is not <0xNN>",
                            i, qlm_vocab_text(v, i));
    }
    return 0;
}

static int load_merges(qlm_vocab *v, const gguf_ctx *ctx, qlm_err *err)
{
    const gguf_value *m = get_array(ctx, "tokenizer.ggml.merges", err, true);
    if (!m)
        return QLM_ELOAD;
    if (m->arr.type != GGUF_STRING)
        return qlm_fail(err, QLM_ELOAD, "tokenizer.ggml.merges: expected strings, got %s",
                        gguf_vtype_name(m->arr.type));
    if (m->arr.n > INT32_MAX / 2)
        return qlm_fail(err, QLM_ELOAD, "tokenizer.ggml.merges: too many merges");
    load_ctx lc = {.arr = m};
    if (strtab_build(&v->merges, (size_t)m->arr.n, &lc, merge_text_at) ||
        qlm_strmap_init(&v->merge_map, &v->merges, (size_t)m->arr.n))
        return qlm_fail(err, QLM_ERUNTIME, "out of memory loading merges");
    /* A repeated merge keeps its first (best) rank. */
    for (size_t i = 0; i < m->arr.n; i++)
        qlm_strmap_add(&v->merge_map, (int32_t)i);
    return 0;
}

int qlm_vocab_load(qlm_vocab **out, const gguf_ctx *ctx, qlm_err *err)
{
    *out = NULL;
    qlm_vocab *v = calloc(1, sizeof *v);
    if (!v)
        return qlm_fail(err, QLM_ERUNTIME, "out of memory");
    int rc;
    gguf_str model, pre = {0};
    if (!gguf_find(ctx, "tokenizer.ggml.model")) {
        rc = qlm_fail(err, QLM_ELOAD, "missing tokenizer.ggml.model (no vocabulary in this file)");
        goto fail;
    }
    if (!gguf_get_str(ctx, "tokenizer.ggml.model", &model)) {
        rc = qlm_fail(err, QLM_ELOAD, "tokenizer.ggml.model: expected a string");
        goto fail;
    }
    if (gguf_find(ctx, "tokenizer.ggml.pre") && !gguf_get_str(ctx, "tokenizer.ggml.pre", &pre)) {
        rc = qlm_fail(err, QLM_ELOAD, "tokenizer.ggml.pre: expected a string");
        goto fail;
    }

    if (gguf_str_eq(model, "llama")) {
        v->type = QLM_TOK_SPM;
        v->add_bos = true;
        v->add_space_prefix = true;
    } else if (gguf_str_eq(model, "gpt2")) {
        v->type = QLM_TOK_BPE;
        v->pre = QLM_PRE_DEFAULT;
        if (pre.len) {
            char name[64];
            size_t n = pre.len < sizeof name - 1 ? (size_t)pre.len : sizeof name - 1;
            memcpy(name, pre.ptr, n);
            name[n] = '\0';
            if (pre.len >= sizeof name || memchr(name, '\0', n) ||
                !qlm_bpe_pre_lookup(name, &v->pre, &v->ignore_merges, &v->add_bos)) {
                rc = qlm_fail(err, QLM_ELOAD, "unsupported pre-tokenizer '%.*s' (tokenizer.ggml.pre)",
                              (int)n, pre.ptr);
                goto fail;
            }
        }
    } else {
        rc = qlm_fail(err, QLM_ELOAD, "unsupported tokenizer model '%.*s' (tokenizer.ggml.model)",
                      (int)(model.len > 64 ? 64 : model.len), model.ptr);
        goto fail;
    }

    if ((rc = read_bool(ctx, "tokenizer.ggml.add_space_prefix", &v->add_space_prefix, err)) ||
        (rc = load_tokens(v, ctx, err)) ||
        (v->type == QLM_TOK_BPE && (rc = load_merges(v, ctx, err))))
        goto fail;

    /* Family defaults, dropped when outside this vocab. */
    v->bos = v->type == QLM_TOK_SPM ? 1 : 11;
    v->eos = v->type == QLM_TOK_SPM ? 2 : 11;
    v->unk = v->type == QLM_TOK_SPM ? 0 : -1;
    v->pad = v->eot = v->eom = -1;
    if (v->bos >= v->n_tokens) v->bos = -1;
    if (v->eos >= v->n_tokens) v->eos = -1;
    if (v->unk >= v->n_tokens) v->unk = -1;

    int32_t fim_pre = -1, fim_suf = -1, fim_mid = -1, fim_pad = -1, fim_rep = -1, fim_sep = -1;
    if ((rc = read_id(v, ctx, "tokenizer.ggml.bos_token_id", &v->bos, true, err)) ||
        (rc = read_id(v, ctx, "tokenizer.ggml.eos_token_id", &v->eos, true, err)) ||
        (rc = read_id(v, ctx, "tokenizer.ggml.eot_token_id", &v->eot, true, err)) ||
        (rc = read_id(v, ctx, "tokenizer.ggml.eom_token_id", &v->eom, true, err)) ||
        (rc = read_id(v, ctx, "tokenizer.ggml.unknown_token_id", &v->unk, true, err)) ||
        (rc = read_id(v, ctx, "tokenizer.ggml.padding_token_id", &v->pad, false, err)) ||
        (rc = read_id(v, ctx, "tokenizer.ggml.fim_pre_token_id", &fim_pre, false, err)) ||
        (rc = read_id(v, ctx, "tokenizer.ggml.fim_suf_token_id", &fim_suf, false, err)) ||
        (rc = read_id(v, ctx, "tokenizer.ggml.fim_mid_token_id", &fim_mid, false, err)) ||
        (rc = read_id(v, ctx, "tokenizer.ggml.fim_pad_token_id", &fim_pad, false, err)) ||
        (rc = read_id(v, ctx, "tokenizer.ggml.fim_rep_token_id", &fim_rep, false, err)) ||
        (rc = read_id(v, ctx, "tokenizer.ggml.fim_sep_token_id", &fim_sep, false, err)) ||
        (rc = read_id(v, ctx, "tokenizer.ggml.prefix_token_id", &fim_pre, false, err)) ||
        (rc = read_id(v, ctx, "tokenizer.ggml.suffix_token_id", &fim_suf, false, err)) ||
        (rc = read_id(v, ctx, "tokenizer.ggml.middle_token_id", &fim_mid, false, err)) ||
        (rc = read_bool(ctx, "tokenizer.ggml.add_bos_token", &v->add_bos, err)) ||
        (rc = read_bool(ctx, "tokenizer.ggml.add_eos_token", &v->add_eos, err)))
        goto fail;

    detect_by_text(v, &v->eot, eot_texts);
    detect_by_text(v, &v->eom, eom_texts);
    detect_by_text(v, &fim_pre, fim_pre_texts);
    detect_by_text(v, &fim_suf, fim_suf_texts);
    detect_by_text(v, &fim_mid, fim_mid_texts);
    detect_by_text(v, &fim_pad, fim_pad_texts);
    detect_by_text(v, &fim_rep, fim_rep_texts);
    detect_by_text(v, &fim_sep, fim_sep_texts);
    build_eog(v, fim_pad, fim_rep, fim_sep);

    if (build_special_cache(v)) {
        rc = qlm_fail(err, QLM_ERUNTIME, "out of memory");
        goto fail;
    }
    apply_name_rules(v, ctx);

    for (int b = 0; b < 256; b++) {
        char hex[7];
        snprintf(hex, sizeof hex, "<0x%02X>", b);
        int32_t id = find_text(v, hex);
        if (id < 0) {
            char c = (char)b;
            id = qlm_tok_lookup(v, &c, 1);
        }
        v->byte_token[b] = id;
    }
    *out = v;
    return 0;

fail:
    qlm_vocab_free(v);
    return rc;
}

void qlm_vocab_free(qlm_vocab *v)
{
    if (!v)
        return;
    strtab_free(&v->text);
    strtab_free(&v->merges);
    qlm_strmap_free(&v->tok_map);
    qlm_strmap_free(&v->merge_map);
    free(v->score);
    free(v->attr);
    free(v->eog);
    free(v->special);
    free(v);
}

/* ---- accessors ---- */

int32_t qlm_vocab_size(const qlm_vocab *v) { return v->n_tokens; }
int32_t qlm_vocab_bos(const qlm_vocab *v) { return v->bos; }
int32_t qlm_vocab_eos(const qlm_vocab *v) { return v->eos; }
bool qlm_vocab_add_bos(const qlm_vocab *v) { return v->add_bos; }
bool qlm_vocab_add_eos(const qlm_vocab *v) { return v->add_eos; }

bool qlm_vocab_is_eog(const qlm_vocab *v, int32_t id)
{
    return id >= 0 && id < v->n_tokens && v->eog[id];
}

bool qlm_vocab_is_control(const qlm_vocab *v, int32_t id)
{
    return id >= 0 && id < v->n_tokens && (v->attr[id] & QLM_ATTR_CONTROL);
}

int32_t qlm_vocab_find(const qlm_vocab *v, const char *s) { return find_text(v, s); }

const char *qlm_vocab_text(const qlm_vocab *v, int32_t id)
{
    if (id < 0 || id >= v->n_tokens)
        return "";
    return v->text.buf + v->text.off[id];
}

/* ---- special-token splitting ---- */

typedef struct frag {
    size_t off, len;
    int32_t tok; /* -1: raw text */
} frag;

typedef struct frags {
    frag *v;
    size_t n, cap;
} frags;

static int frags_push(frags *f, size_t off, size_t len, int32_t tok)
{
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        frag *nv = realloc(f->v, cap * sizeof *nv);
        if (!nv)
            return -1;
        f->v = nv;
        f->cap = cap;
    }
    f->v[f->n++] = (frag){off, len, tok};
    return 0;
}

/* The C locale's isspace, whatever the current locale. */
static bool ascii_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* Cuts every occurrence of special token id out of the raw fragments of
 * *in into *out, left to right. */
static int cut_token(const qlm_vocab *v, int32_t id, const char *text, const frags *in,
                     frags *out)
{
    size_t tlen;
    const char *t = qlm_tok_text(v, id, &tlen);
    uint16_t attr = v->attr[id];
    out->n = 0;
    for (size_t i = 0; i < in->n; i++) {
        frag f = in->v[i];
        if (f.tok >= 0 || f.len < tlen) {
            if (frags_push(out, f.off, f.len, f.tok))
                return -1;
            continue;
        }
        size_t cur = f.off, end = f.off + f.len;
        for (;;) {
            const char *hit = memmem(text + cur, end - cur, t, tlen);
            if (!hit)
                break;
            size_t at = (size_t)(hit - text), left = at - cur;
            if (attr & QLM_ATTR_LSTRIP)
                while (left > 0 && ascii_space(text[cur + left - 1]))
                    left--;
            if ((left && frags_push(out, cur, left, -1)) || frags_push(out, at, tlen, id))
                return -1;
            cur = at + tlen;
            if (attr & QLM_ATTR_RSTRIP)
                while (cur < end && ascii_space(text[cur]))
                    cur++;
        }
        if (cur < end && frags_push(out, cur, end - cur, -1))
            return -1;
    }
    return 0;
}

/* Splits text into raw stretches and special tokens.  Each special text
 * is cut everywhere before the next, longest texts first -- not the
 * longest match at each position -- which is the reference's order. */
static int partition(const qlm_vocab *v, const char *text, size_t len, bool parse_special,
                     frags *out)
{
    frags a = {0}, b = {0};
    int rc = -1;
    if (len && frags_push(&a, 0, len, -1))
        goto done;

    /* Which byte pairs occur at all: most special texts never appear, and
     * this skips their search through the whole text. */
    uint8_t *pairs = calloc(65536 / 8, 1);
    bool bytes[256] = {0};
    if (!pairs)
        goto done;
    for (size_t i = 0; i < len; i++) {
        bytes[(unsigned char)text[i]] = true;
        if (i + 1 < len) {
            unsigned p = (unsigned char)text[i] << 8 | (unsigned char)text[i + 1];
            pairs[p >> 3] |= (uint8_t)(1u << (p & 7));
        }
    }

    for (size_t s = 0; s < v->n_special && a.n; s++) {
        int32_t id = v->special[s];
        /* Without parse_special only user-defined tokens are cut, as
         * Hugging Face's added tokens are. */
        if (!parse_special && (v->attr[id] & (QLM_ATTR_CONTROL | QLM_ATTR_UNKNOWN)))
            continue;
        size_t tlen;
        const char *t = qlm_tok_text(v, id, &tlen);
        if (tlen == 0 || tlen > len || !bytes[(unsigned char)t[0]])
            continue;
        if (tlen >= 2) {
            unsigned p = (unsigned char)t[0] << 8 | (unsigned char)t[1];
            if (!(pairs[p >> 3] & (1u << (p & 7))))
                continue;
        }
        if (cut_token(v, id, text, &a, &b)) {
            free(pairs);
            goto done;
        }
        frags tmp = a;
        a = b;
        b = tmp;
    }
    free(pairs);
    *out = a;
    a.v = NULL;
    rc = 0;
done:
    free(a.v);
    free(b.v);
    return rc;
}

/* ---- tokenize ---- */

/* SentencePiece sees spaces as U+2581, with one more in front of a
 * fragment that starts the text or follows a special token. */
static int spm_fragment(const qlm_vocab *v, const char *s, size_t n, bool prefix, qlm_ids *out)
{
    size_t spaces = prefix;
    for (size_t i = 0; i < n; i++)
        spaces += s[i] == ' ';
    char *buf = malloc(n + spaces * 2 + 1);
    if (!buf)
        return -1;
    size_t k = 0;
    if (prefix) {
        memcpy(buf, "\xe2\x96\x81", 3);
        k = 3;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') {
            memcpy(buf + k, "\xe2\x96\x81", 3);
            k += 3;
        } else {
            buf[k++] = s[i];
        }
    }
    int rc = qlm_spm_tokenize(v, buf, k, out);
    free(buf);
    return rc;
}

int qlm_tokenize(const qlm_vocab *v, const char *text, size_t len, bool add_special,
                 bool parse_special, int32_t **ids, size_t *n_ids, qlm_err *err)
{
    *ids = NULL;
    *n_ids = 0;
    if (len > (size_t)INT32_MAX / 4)
        return qlm_fail(err, QLM_ELOAD, "text too long to tokenize (%zu bytes)", len);
    bool bos = add_special && v->add_bos, eos = add_special && v->add_eos;
    if (bos && v->bos < 0)
        return qlm_fail(err, QLM_ELOAD, "the vocab asks for a BOS token but has none");
    if (eos && v->eos < 0)
        return qlm_fail(err, QLM_ELOAD, "the vocab asks for an EOS token but has none");

    frags fr = {0};
    qlm_ids out = {0};
    if (partition(v, text, len, parse_special, &fr) || (bos && qlm_ids_push(&out, v->bos)))
        goto oom;

    bool after_special = true;
    for (size_t i = 0; i < fr.n; i++) {
        const frag *f = &fr.v[i];
        if (f->tok >= 0) {
            if (qlm_ids_push(&out, f->tok))
                goto oom;
            after_special = true;
            continue;
        }
        int rc = v->type == QLM_TOK_SPM
                     ? spm_fragment(v, text + f->off, f->len, v->add_space_prefix && after_special, &out)
                     : qlm_bpe_tokenize(v, text + f->off, f->len, &out);
        if (rc)
            goto oom;
        after_special = false;
    }
    if (eos && qlm_ids_push(&out, v->eos))
        goto oom;
    /* Never NULL, so callers may memcpy/memcmp an empty result. */
    if (!out.v && !(out.v = malloc(sizeof *out.v)))
        goto oom;
    free(fr.v);
    *ids = out.v;
    *n_ids = out.n;
    return 0;
oom:
    free(fr.v);
    free(out.v);
    return qlm_fail(err, QLM_ERUNTIME, "out of memory while tokenizing");
}

/* ---- detokenize ---- */

/* Copies what fits and counts everything, like snprintf. */
static void put(char *buf, size_t cap, size_t *k, const char *s, size_t n)
{
    if (*k < cap)
        memcpy(buf + *k, s, n < cap - *k ? n : cap - *k);
    *k += n;
}

int qlm_token_to_piece(const qlm_vocab *v, int32_t id, char *buf, size_t cap,
                       bool render_special)
{
    if (id < 0 || id >= v->n_tokens)
        return -1;
    uint16_t attr = v->attr[id];
    size_t n, k = 0;
    const char *t = qlm_tok_text(v, id, &n);

    if (attr & (QLM_ATTR_CONTROL | QLM_ATTR_UNKNOWN)) {
        if (!render_special)
            return 0;
        put(buf, cap, &k, t, n);
    } else if (attr & QLM_ATTR_USER_DEFINED) {
        put(buf, cap, &k, t, n);
    } else if (attr & QLM_ATTR_NORMAL) {
        if (v->type == QLM_TOK_SPM) {
            for (size_t i = 0; i < n;) {
                if (n - i >= 3 && !memcmp(t + i, "\xe2\x96\x81", 3)) {
                    put(buf, cap, &k, " ", 1);
                    i += 3;
                } else {
                    put(buf, cap, &k, t + i, 1);
                    i++;
                }
            }
        } else {
            for (size_t i = 0; i < n;) {
                size_t used;
                uint32_t cp = qlm_utf8_decode(t + i, n - i, &used);
                int b = qlm_bpe_cp_to_byte(cp);
                if (b >= 0) {
                    char c = (char)b;
                    put(buf, cap, &k, &c, 1);
                } else {
                    /* Not a GPT-2 byte character: show it, marked, the
                     * way the reference does. */
                    char mark[64], u[4];
                    size_t nu = qlm_utf8_encode(cp, u);
                    int m = snprintf(mark, sizeof mark, "[UNK_BYTE_0x");
                    for (size_t j = 0; j < nu; j++)
                        m += snprintf(mark + m, sizeof mark - (size_t)m, "%02x",
                                      (unsigned char)u[j]);
                    put(buf, cap, &k, mark, (size_t)m);
                    put(buf, cap, &k, t, n);
                    put(buf, cap, &k, "]", 1);
                }
                i += used;
            }
        }
    } else if (attr & QLM_ATTR_BYTE) {
        char c = (char)byte_token_value(v, id);
        put(buf, cap, &k, &c, 1);
    }
    return k > INT32_MAX ? INT32_MAX : (int)k;
}
