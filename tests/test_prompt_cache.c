/* test_prompt_cache.c - saving a prompt's KV and loading it back: exact
 * bytes, prefix matching, and every kind of bad file detected and
 * ignored (truncated, bit-flipped, another model, other KV types). */
#include <string.h>
#include <unistd.h>

#include "src/model.h"
#include "src/prompt_cache.h"
#include "test.h"
#include "tiny_model.h"

enum { NP = 70 };
static int32_t prompt[NP];

static qlm_ctx *new_ctx(const qlm_model *m, qlm_kv_type t)
{
    qlm_ctx *c = NULL;
    qlm_err err;
    qlm_ctx_params cp = {.n_ctx = 128, .n_threads = 2, .type_k = t, .type_v = t};
    return qlm_ctx_new(&c, m, &cp, &err) ? NULL : c;
}

static int decode(qlm_ctx *c, const int32_t *tk, int p0, int n)
{
    qlm_batch b;
    qlm_err err;
    qlm_batch_init(&b, n);
    for (int i = 0; i < n; i++) qlm_batch_add(&b, tk[i], p0 + i, 0, i == n - 1);
    const int rc = qlm_decode(c, &b, &err);
    qlm_batch_free(&b);
    return rc;
}

static long file_size(const char *p)
{
    FILE *f = fopen(p, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fclose(f);
    return n;
}

static int copy_mangled(const char *src, const char *dst, long keep, long flip)
{
    FILE *f = fopen(src, "rb");
    if (!f) return -1;
    const long n = file_size(src);
    char *buf = malloc((size_t)n);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) { fclose(f); free(buf); return -1; }
    fclose(f);
    if (flip >= 0) buf[flip] ^= 0x10;
    f = fopen(dst, "wb");
    fwrite(buf, 1, (size_t)(keep >= 0 ? keep : n), f);
    fclose(f);
    free(buf);
    return 0;
}

/* Loading must fail with `want` in the message and leave the cache as it was. */
static void expect_rejected(const char *name, qlm_ctx *c, const qlm_model *m, const char *path, const char *want)
{
    TEST_BEGIN(name);
    qlm_err err = {0};
    int n = -1;
    const int before = qlm_kv_seq_count(qlm_ctx_kv(c), 0);
    const int rc = qlm_prompt_cache_load(c, m, path, prompt, NP, &n, &err);
    CHECK(rc == QLM_ELOAD, "rc %d (%s)", rc, err.msg);
    CHECK(strstr(err.msg, want) != NULL, "message '%s' lacks '%s'", err.msg, want);
    CHECK(!strchr(err.msg, '\n'), "message is not one line");
    CHECK(n == 0 && qlm_kv_seq_count(qlm_ctx_kv(c), 0) == before, "cache touched: loaded %d", n);
    TEST_END();
}

int main(void)
{
    for (int i = 0; i < NP; i++) prompt[i] = (i * 53 + 5) % 256;
    char mpath[] = "/tmp/qlm-pc-model-XXXXXX", m2path[] = "/tmp/qlm-pc-model2-XXXXXX";
    char cpath[] = "/tmp/qlm-pc-cache-XXXXXX", bpath[] = "/tmp/qlm-pc-bad-XXXXXX";
    close(mkstemp(mpath));
    close(mkstemp(m2path));
    close(mkstemp(cpath));
    close(mkstemp(bpath));
    tiny_cfg cfg = tiny_default();
    tiny_write(mpath, &cfg);
    cfg.seed = 2; /* another model: other weights and identity */
    cfg.n_ff = 128;
    tiny_write(m2path, &cfg);
    qlm_model *m = NULL, *m2 = NULL;
    qlm_err err = {0};

    TEST_BEGIN("prompt_cache_round_trip");
    CHECK(qlm_model_load(&m, mpath, &err) == 0 && qlm_model_load(&m2, m2path, &err) == 0, "load: %s", err.msg);
    qlm_ctx *a = m ? new_ctx(m, QLM_KV_I8) : NULL, *b = m ? new_ctx(m, QLM_KV_I8) : NULL;
    CHECK(a && b, "contexts");
    if (a && b) {
        CHECK(decode(a, prompt, 0, NP) == 0, "decode");
        CHECK(qlm_prompt_cache_save(a, m, cpath, NP, &err) == 0, "save: %s", err.msg);
        int n = 0;
        CHECK(qlm_prompt_cache_load(b, m, cpath, prompt, NP, &n, &err) == 0, "load: %s", err.msg);
        CHECK(n == NP, "loaded %d of %d", n, NP);
        const qlm_kv *ka = qlm_ctx_kv(a), *kb = qlm_ctx_kv(b);
        int same = 1;
        for (int l = 0; l < ka->n_layer; l++)
            for (int h = 0; h < ka->n_head_kv; h++)
                for (int i = 0; i < NP; i++)
                    same &= !memcmp(qlm_kv_k_at(ka, l, h, i), qlm_kv_k_at(kb, l, h, i), (size_t)ka->head_dim) &&
                            !memcmp(qlm_kv_v_at(ka, l, h, i), qlm_kv_v_at(kb, l, h, i), (size_t)ka->head_dim) &&
                            *qlm_kv_k_scale(ka, l, h, i) == *qlm_kv_k_scale(kb, l, h, i) &&
                            *qlm_kv_v_scale(ka, l, h, i) == *qlm_kv_v_scale(kb, l, h, i);
        CHECK(same, "loaded K/V differ from the saved ones");
        /* the next token decodes to the same logits from either cache */
        const int32_t next = 42;
        CHECK(decode(a, &next, NP, 1) == 0 && decode(b, &next, NP, 1) == 0, "decode next");
        CHECK(!memcmp(qlm_logits(a, 0), qlm_logits(b, 0), sizeof(float) * m->hp.n_vocab), "logits after reload differ");
    }
    TEST_END();

    TEST_BEGIN("prompt_cache_prefix_match");
    if (a && b) {
        int32_t other[NP];
        memcpy(other, prompt, sizeof other);
        other[45] = (other[45] + 1) % 256; /* differs inside the second block */
        int n = 0;
        CHECK(qlm_prompt_cache_load(b, m, cpath, other, NP, &n, &err) == 0, "load: %s", err.msg);
        CHECK(n == 45 && qlm_kv_seq_count(qlm_ctx_kv(b), 0) == 45, "loaded %d, want the 45-token common prefix", n);
        other[0] = (other[0] + 1) % 256;
        CHECK(qlm_prompt_cache_load(b, m, cpath, other, NP, &n, &err) == 0 && n == 0, "nothing shared: loaded %d", n);
    }
    TEST_END();

    if (a && b) {
        qlm_kv_clear(qlm_ctx_kv(b));
        const long size = file_size(cpath);
        copy_mangled(cpath, bpath, size - 100, -1);
        expect_rejected("prompt_cache_truncated", b, m, bpath, "truncated");
        copy_mangled(cpath, bpath, 20, -1);
        expect_rejected("prompt_cache_truncated_header", b, m, bpath, "truncated");
        copy_mangled(cpath, bpath, -1, size / 2);
        expect_rejected("prompt_cache_bit_flip_data", b, m, bpath, "checksum");
        copy_mangled(cpath, bpath, -1, 12);
        expect_rejected("prompt_cache_bit_flip_header", b, m, bpath, "checksum");
        copy_mangled(cpath, bpath, -1, 0);
        expect_rejected("prompt_cache_not_a_cache", b, m, bpath, "not a qlm prompt cache");
        expect_rejected("prompt_cache_missing", b, m, "/nonexistent/qlm.pc", "No such file");
        if (m2) {
            qlm_ctx *c2 = new_ctx(m2, QLM_KV_I8);
            expect_rejected("prompt_cache_other_model", c2, m2, cpath, "another model");
            qlm_ctx_free(c2);
        }
        qlm_ctx *c16 = new_ctx(m, QLM_KV_F16);
        expect_rejected("prompt_cache_other_kv_type", c16, m, cpath, "KV types K int8 V int8, this run uses K f16 V f16");
        /* a rejected file leaves an already filled cache alone too */
        CHECK(decode(c16, prompt, 0, 10) == 0, "decode");
        expect_rejected("prompt_cache_rejected_keeps_cache", c16, m, cpath, "KV types");
        qlm_ctx_free(c16);
    }
    qlm_ctx_free(a);
    qlm_ctx_free(b);
    qlm_model_free(m);
    qlm_model_free(m2);
    unlink(mpath); unlink(m2path); unlink(cpath); unlink(bpath);
    TEST_EXIT();
}
