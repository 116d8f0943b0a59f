#include "prompt_cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

static const char MAGIC[8] = "QLMPC\0\0\1";

/* Fixed header, little-endian as the machines qlm runs on. */
typedef struct pc_header {
    char magic[8];
    uint64_t model_id;
    uint32_t type_k, type_v, n_layer, n_head_kv, head_dim, n_tok;
} pc_header;

void qlm_pc_block_hashes(uint64_t model_id, int type_k, int type_v, const int32_t *toks, int n,
                         uint64_t *hashes)
{
    uint64_t h = model_id ^ ((uint64_t)type_k << 32 | (uint32_t)type_v);
    for (int b = 0; b * QLM_PC_BLOCK < n; b++) {
        const int len = n - b * QLM_PC_BLOCK < QLM_PC_BLOCK ? n - b * QLM_PC_BLOCK : QLM_PC_BLOCK;
        h = XXH3_64bits_withSeed(toks + b * QLM_PC_BLOCK, sizeof(int32_t) * (size_t)len, h);
        hashes[b] = h;
    }
}

/* Bytes of the K (V) data of one cell in one layer, scales included. */
static size_t side_bytes(const qlm_kv *kv, qlm_kv_type t)
{
    return (size_t)kv->kv_dim * qlm_kv_elem_size(t) + (t == QLM_KV_I8 ? kv->n_head_kv * sizeof(float) : 0);
}

static size_t file_bytes(const qlm_kv *kv, size_t n_tok)
{
    const size_t n_blocks = (n_tok + QLM_PC_BLOCK - 1) / QLM_PC_BLOCK;
    return sizeof(pc_header) + n_tok * sizeof(int32_t) + n_blocks * sizeof(uint64_t) +
           n_tok * kv->n_layer * (side_bytes(kv, kv->type_k) + side_bytes(kv, kv->type_v)) + sizeof(uint64_t);
}

/* Copies one cell's K or V (row then scales) to or from p. */
static char *cell_io(qlm_kv *kv, int layer, int cell, bool is_k, char *p, bool save)
{
    const qlm_kv_type t = is_k ? kv->type_k : kv->type_v;
    const size_t rb = (size_t)kv->head_dim * qlm_kv_elem_size(t);
    for (int h = 0; h < kv->n_head_kv; h++) {
        void *row = is_k ? qlm_kv_k_at(kv, layer, h, cell) : qlm_kv_v_at(kv, layer, h, cell);
        if (save) memcpy(p, row, rb); else memcpy(row, p, rb);
        p += rb;
    }
    for (int h = 0; t == QLM_KV_I8 && h < kv->n_head_kv; h++) {
        float *sc = is_k ? qlm_kv_k_scale(kv, layer, h, cell) : qlm_kv_v_scale(kv, layer, h, cell);
        if (save) memcpy(p, sc, sizeof *sc); else memcpy(sc, p, sizeof *sc);
        p += sizeof *sc;
    }
    return p;
}

int qlm_prompt_cache_save(qlm_ctx *c, const qlm_model *m, const char *path, int n, qlm_err *err)
{
    qlm_kv *kv = qlm_ctx_kv(c);
    int *cell = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    int32_t *toks = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    const size_t n_blocks = ((size_t)n + QLM_PC_BLOCK - 1) / QLM_PC_BLOCK, size = file_bytes(kv, (size_t)n);
    char *buf = malloc(size);
    int rc = QLM_OK;
    if (!cell || !toks || !buf) {
        rc = qlm_fail(err, QLM_ERUNTIME, "prompt cache: out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) cell[i] = -1;
    for (int j = 0; j < kv->n_top; j++)
        if (kv->pos[j] >= 0 && kv->pos[j] < n && (kv->seqs[j] & 1)) cell[kv->pos[j]] = j;
    for (int i = 0; i < n; i++) {
        if (cell[i] < 0) {
            rc = qlm_fail(err, QLM_ERUNTIME, "prompt cache: position %d is not in the cache", i);
            goto done;
        }
        toks[i] = kv->tok[cell[i]];
    }
    pc_header h = {.model_id = m->gguf->id, .type_k = kv->type_k, .type_v = kv->type_v, .n_layer = kv->n_layer,
                   .n_head_kv = kv->n_head_kv, .head_dim = kv->head_dim, .n_tok = (uint32_t)n};
    memcpy(h.magic, MAGIC, sizeof MAGIC);
    char *p = buf;
    memcpy(p, &h, sizeof h);
    p += sizeof h;
    memcpy(p, toks, sizeof(int32_t) * (size_t)n);
    p += sizeof(int32_t) * (size_t)n;
    qlm_pc_block_hashes(h.model_id, kv->type_k, kv->type_v, toks, n, (uint64_t *)(void *)p);
    p += n_blocks * sizeof(uint64_t);
    for (int l = 0; l < kv->n_layer; l++)
        for (int side = 0; side < 2; side++)
            for (int i = 0; i < n; i++) p = cell_io(kv, l, cell[i], side == 0, p, true);
    const uint64_t sum = XXH3_64bits(buf, (size_t)(p - buf));
    memcpy(p, &sum, sizeof sum);

    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(buf, 1, size, f) != size || fclose(f)) {
        const int e = errno;
        if (f) remove(tmp);
        rc = qlm_fail(err, QLM_ERUNTIME, "prompt cache: cannot write %s: %s", path, strerror(e));
        goto done;
    }
    if (rename(tmp, path)) {
        const int e = errno;
        remove(tmp);
        rc = qlm_fail(err, QLM_ERUNTIME, "prompt cache: cannot write %s: %s", path, strerror(e));
    }
done:
    free(cell);
    free(toks);
    free(buf);
    return rc;
}

int qlm_prompt_cache_load(qlm_ctx *c, const qlm_model *m, const char *path, const int32_t *prompt,
                          int n_prompt, int *n_loaded, qlm_err *err)
{
    *n_loaded = 0;
    qlm_kv *kv = qlm_ctx_kv(c);
    FILE *f = fopen(path, "rb");
    if (!f) return qlm_fail(err, QLM_ELOAD, "prompt cache %s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            char *nb = realloc(buf, cap = cap ? cap * 2 : 1 << 16);
            if (!nb) {
                free(buf);
                fclose(f);
                return qlm_fail(err, QLM_ELOAD, "prompt cache %s: out of memory", path);
            }
            buf = nb;
        }
        const size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (!got) break;
    }
    const bool rerr = ferror(f);
    fclose(f);
    int rc = QLM_OK;
    pc_header h;
    int32_t *toks = NULL;
    uint64_t *hashes = NULL, *mine = NULL;
#define BAD(...) do { rc = qlm_fail(err, QLM_ELOAD, __VA_ARGS__); goto done; } while (0)
    if (rerr) BAD("prompt cache %s: read error", path);
    if (len < sizeof h + sizeof(uint64_t)) BAD("prompt cache %s: truncated (%zu bytes)", path, len);
    memcpy(&h, buf, sizeof h);
    if (memcmp(h.magic, MAGIC, sizeof MAGIC)) BAD("prompt cache %s: not a qlm prompt cache", path);
    if (h.n_tok > (uint32_t)kv->n_ctx)
        BAD("prompt cache %s: %u tokens do not fit a %d-token context", path, h.n_tok, kv->n_ctx);
    /* sizes from this run's cache shape; a file of another shape fails
     * here or at the shape check below, after the checksum */
    const bool same_shape = h.type_k == (uint32_t)kv->type_k && h.type_v == (uint32_t)kv->type_v &&
                            h.n_layer == (uint32_t)kv->n_layer && h.n_head_kv == (uint32_t)kv->n_head_kv &&
                            h.head_dim == (uint32_t)kv->head_dim;
    uint64_t sum;
    memcpy(&sum, buf + len - sizeof sum, sizeof sum);
    if (XXH3_64bits(buf, len - sizeof sum) != sum) {
        if (same_shape && len < file_bytes(kv, h.n_tok))
            BAD("prompt cache %s: truncated (%zu of %zu bytes)", path, len, file_bytes(kv, h.n_tok));
        BAD("prompt cache %s: checksum mismatch (corrupted or truncated)", path);
    }
    if (h.model_id != m->gguf->id) BAD("prompt cache %s: made with another model", path);
    if (h.type_k != (uint32_t)kv->type_k || h.type_v != (uint32_t)kv->type_v)
        BAD("prompt cache %s: KV types K %s V %s, this run uses K %s V %s", path,
            h.type_k <= QLM_KV_I8 ? qlm_kv_type_name((qlm_kv_type)h.type_k) : "?",
            h.type_v <= QLM_KV_I8 ? qlm_kv_type_name((qlm_kv_type)h.type_v) : "?",
            qlm_kv_type_name(kv->type_k), qlm_kv_type_name(kv->type_v));
    if (!same_shape) BAD("prompt cache %s: cache shape differs from this model's", path);
    if (len != file_bytes(kv, h.n_tok)) BAD("prompt cache %s: size %zu, expected %zu", path, len, file_bytes(kv, h.n_tok));

    const int n = (int)h.n_tok, n_blocks = (n + QLM_PC_BLOCK - 1) / QLM_PC_BLOCK;
    toks = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    hashes = malloc(sizeof(uint64_t) * (size_t)(n_blocks ? n_blocks : 1));
    mine = calloc((size_t)(n_blocks ? n_blocks : 1), sizeof(uint64_t));
    if (!toks || !hashes || !mine) BAD("prompt cache %s: out of memory", path);
    const char *p = buf + sizeof h;
    memcpy(toks, p, sizeof(int32_t) * (size_t)n);
    p += sizeof(int32_t) * (size_t)n;
    memcpy(hashes, p, sizeof(uint64_t) * (size_t)n_blocks);
    p += sizeof(uint64_t) * (size_t)n_blocks;
    qlm_pc_block_hashes(m->gguf->id, kv->type_k, kv->type_v, toks, n, mine);
    if (n_blocks && memcmp(hashes, mine, sizeof(uint64_t) * (size_t)n_blocks))
        BAD("prompt cache %s: block hashes do not match its tokens", path);
    for (int i = 0; i < n; i++)
        if (toks[i] < 0 || toks[i] >= m->hp.n_vocab) BAD("prompt cache %s: token %d out of range", path, toks[i]);

    /* whole blocks by hash, then the tokens of the first differing block */
    const int nb_prompt = (n_prompt + QLM_PC_BLOCK - 1) / QLM_PC_BLOCK;
    uint64_t *ph = malloc(sizeof(uint64_t) * (size_t)(nb_prompt ? nb_prompt : 1));
    if (!ph) BAD("prompt cache %s: out of memory", path);
    qlm_pc_block_hashes(m->gguf->id, kv->type_k, kv->type_v, prompt, n_prompt, ph);
    int use = 0;
    for (int b = 0; b < n_blocks && b < nb_prompt && hashes[b] == ph[b]; b++)
        use = (b + 1) * QLM_PC_BLOCK;
    free(ph);
    if (use > n) use = n;
    if (use > n_prompt) use = n_prompt;
    while (use < n && use < n_prompt && toks[use] == prompt[use]) use++;

    qlm_kv_seq_rm(kv, 0, 0, -1);
    if (use > 0) {
        int *cells = malloc(sizeof(int) * (size_t)use);
        int32_t *pos = malloc(sizeof(int32_t) * (size_t)use), *seq = calloc((size_t)use, sizeof(int32_t));
        if (!cells || !pos || !seq) {
            free(cells); free(pos); free(seq);
            BAD("prompt cache %s: out of memory", path);
        }
        for (int i = 0; i < use; i++) pos[i] = i;
        rc = qlm_kv_claim(kv, use, toks, pos, seq, cells, err);
        if (!rc) {
            char *q = (char *)p;
            for (int l = 0; l < kv->n_layer; l++)
                for (int side = 0; side < 2; side++) {
                    const size_t sb = side_bytes(kv, side == 0 ? kv->type_k : kv->type_v);
                    for (int i = 0; i < use; i++) cell_io(kv, l, cells[i], side == 0, q + (size_t)i * sb, false);
                    q += (size_t)n * sb;
                }
            *n_loaded = use;
        }
        free(cells); free(pos); free(seq);
    }
#undef BAD
done:
    free(toks);
    free(hashes);
    free(mine);
    free(buf);
    return rc;
}
