/* test_group_prefill.c - several sequences' prompts in one forward pass
 * (qlm batch prefills the prompts that take slots together so) against
 * each prompt in a pass of its own: wherever qlm_ctx_same_order says the
 * two pass sizes keep a token's bits, every logit of each prompt's last
 * token and of the next one-token step is the same bit for bit; and it
 * says no where the weights' order depends on the batch (repacked Q4_0,
 * the K-quants' tiled order from 8 tokens). */
#include <string.h>
#include <unistd.h>

#include "ggml-lite/attn.h"
#include "quant/tiles.h"
#include "src/model.h"
#include "test.h"
#include "tiny_model.h"

enum { NS = 8, STEP_TOK = 77 };
static const int LEN0[NS] = {2, 3, 5, 9, 4, 7, 11, 6};

static int32_t tok_of(int s, int i) { return (int32_t)((s * 53 + i * 31 + 7) % 256); }

static qlm_ctx *new_ctx(const qlm_model *m)
{
    const qlm_ctx_params cp = {.n_ctx = 256, .n_batch = 128, .n_threads = 2};
    qlm_ctx *c = NULL;
    qlm_err err = {0};
    return qlm_ctx_new(&c, m, &cp, &err) ? NULL : c;
}

/* Prompt logits of the sequences seqs[0..n) (LEN[s] tokens each), all in one pass,
 * then one token each in a one_by_one step; rows to out[seq][2][V]. */
static int run(const qlm_model *m, const int *LEN, const int *seqs, int n, float *out)
{
    const int V = m->hp.n_vocab;
    qlm_ctx *c = new_ctx(m);
    if (!c) return -1;
    qlm_batch b;
    qlm_batch_init(&b, 128);
    qlm_err err = {0};
    for (int k = 0; k < n; k++)
        for (int i = 0; i < LEN[seqs[k]]; i++) qlm_batch_add(&b, tok_of(seqs[k], i), i, seqs[k], i == LEN[seqs[k]] - 1);
    int rc = qlm_decode(c, &b, &err);
    for (int k = 0; !rc && k < n; k++) memcpy(out + (size_t)seqs[k] * 2 * V, qlm_logits(c, k), sizeof(float) * V);
    b.n = 0;
    b.one_by_one = true;
    for (int k = 0; k < n; k++) qlm_batch_add(&b, STEP_TOK + seqs[k], LEN[seqs[k]], seqs[k], true);
    if (!rc) rc = qlm_decode(c, &b, &err);
    for (int k = 0; !rc && k < n; k++) memcpy(out + ((size_t)seqs[k] * 2 + 1) * V, qlm_logits(c, k), sizeof(float) * V);
    qlm_batch_free(&b);
    qlm_ctx_free(c);
    return rc;
}

/* Whether the pass of all NS prompts keeps each one's bits. */
static bool group_same_order(const qlm_model *m, const int *LEN)
{
    qlm_ctx *c = new_ctx(m);
    int total = 0;
    bool same = c != NULL;
    for (int s = 0; s < NS; s++) total += LEN[s];
    for (int s = 0; s < NS && same; s++) same = qlm_ctx_same_order(c, LEN[s], 1, total, NS);
    qlm_ctx_free(c);
    return same;
}

/* extra: tokens added to every prompt (8: none under the 8 tokens where
 * Q8_0 batches take the tile kernels, and with them the unfused layers) */
static void check(const char *arch, qt_type type, int n_embd, int extra, bool expect_same)
{
    char name[96], path[] = "/tmp/qlm-test-group-XXXXXX";
    snprintf(name, sizeof name, "group_prefill_%s_%s%s%s", arch, qt_get(type)->name, n_embd == 64 ? "" : "_wide",
             extra ? "_long" : "");
    int LEN[NS];
    for (int s = 0; s < NS; s++) LEN[s] = LEN0[s] + extra;
    TEST_BEGIN(name);
    close(mkstemp(path));
    tiny_cfg cfg = tiny_for_arch(arch);
    cfg.wtype = type;
    cfg.n_embd = n_embd;
    cfg.n_ff = n_embd == 64 ? 96 : n_embd;
    qlm_model *m = NULL;
    qlm_err err = {0};
    const int loaded = tiny_write(path, &cfg) == 0 && qlm_model_load(&m, path, &err) == 0;
    unlink(path);
    CHECK(loaded, "cannot write or load the model: %s", err.msg);
    if (!loaded) { TEST_END(); return; }
    const bool same = group_same_order(m, LEN);
    CHECK(same == expect_same, "qlm_ctx_same_order says %s for %d prompts in one pass", same ? "yes" : "no", NS);
    const int V = m->hp.n_vocab;
    float *alone = test_xmalloc(sizeof(float) * NS * 2 * V), *group = test_xmalloc(sizeof(float) * NS * 2 * V);
    int rc = 0;
    for (int s = 0; s < NS && !rc; s++) rc = run(m, LEN, &s, 1, alone);
    int all[NS];
    for (int s = 0; s < NS; s++) all[s] = s;
    if (!rc) rc = run(m, LEN, all, NS, group);
    CHECK(!rc, "decode failed");
    for (int s = 0; s < NS && !rc && same; s++)
        for (int r = 0; r < 2; r++)
            if (memcmp(alone + ((size_t)s * 2 + r) * V, group + ((size_t)s * 2 + r) * V, sizeof(float) * V)) {
                CHECK(0, "prompt %d (%d tokens): %s logits differ alone and in the group", s, LEN[s],
                      r ? "the next step's" : "its last token's");
                break;
            }
    free(alone);
    free(group);
    qlm_model_free(m);
    TEST_END();
}

int main(void)
{
    /* Q8_0 batches of 8 or more in the i16 order (AVX2 with
     * QLM_Q8_ORDER=i16, quant/tiles.h; t_q8_order.sh runs this so):
     * the group's output rows (one per prompt, 8) and each prompt's one
     * row take different orders, so the pass sizes never share one */
    const qt_tiles *q8 = qt_tiles_for(QT_Q8_0, 1 << 20, QT_TILE_MIN_COLS);
    const bool q8_same = !(q8 && q8->i16_order);
    static const char *const archs[] = {"llama", "qwen2", "gemma3"};
    for (size_t a = 0; a < sizeof archs / sizeof archs[0]; a++) {
        check(archs[a], QT_Q4_1, 64, 0, true);
        check(archs[a], QT_Q8_0, 64, 8, q8_same);
    }
    /* 64-wide heads: prompts take gl_attn_prompt, whose rows come from
     * another place in the cache in the group (block_rows) */
    check("llama", QT_Q8_0, 256, 8, q8_same);
    check("llama", QT_Q5_0, 64, 0, true);
    check("llama", QT_F16, 64, 0, true);
    /* the batch decides these orders: never merged */
    check("llama", QT_Q4_0, 64, 0, false);
    check("llama", QT_Q4_K, 256, 0, false);
    /* a 2-token prompt alone and the group's 47 tokens: where Q8_0
     * batches take tile kernels from 8 tokens (AVX-512), one runs the
     * fused layers and the other the unfused ones, and both attend alike:
     * the bits must match */
    check("llama", QT_Q8_0, 256, 0, q8_same);
    TEST_EXIT();
}
