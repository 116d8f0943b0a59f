/* test_flash_decode.c - decoding at long context with one token's rows
 * shared among the threads (decode.c's attend_split) against the same
 * steps where each KV head stays on one thread: after an 1100-token
 * prompt, every logit of three one-token steps, and of the same tokens
 * verified together as a draft is (one_by_one), bit for bit at 1, 2 and
 * 3 threads (the split applies at 2, for 3 KV heads and for 1), for the
 * fused and the unfused layers; with
 * int8 K and V, whose contract sums exactly, and f16 (never split) as a
 * control. */
#include <string.h>
#include <unistd.h>

#include "src/model.h"
#include "test.h"
#include "tiny_model.h"

enum { NP = 1100, STEPS = 3, NCTX = 1280 };

static int32_t tok_of(int i) { return (int32_t)((i * 31 + 7) % 256); }

/* The prompt, STEPS single steps (rows 0..STEPS-1 of out), then the steps
 * dropped and their tokens verified in one batch (rows STEPS..). */
static int run(const qlm_model *m, int n_threads, qlm_kv_type kvt, float *out)
{
    const qlm_ctx_params cp = {.n_ctx = NCTX, .n_batch = 128, .n_threads = n_threads, .type_k = kvt, .type_v = kvt};
    qlm_ctx *c = NULL;
    qlm_err err = {0};
    if (qlm_ctx_new(&c, m, &cp, &err)) return -1;
    const int V = m->hp.n_vocab;
    qlm_batch b;
    qlm_batch_init(&b, 128);
    int rc = 0;
    for (int i0 = 0; i0 < NP && !rc; i0 += 128) {
        b.n = 0;
        for (int i = i0; i < NP && i < i0 + 128; i++) qlm_batch_add(&b, tok_of(i), i, 0, i == NP - 1);
        rc = qlm_decode(c, &b, &err);
    }
    for (int s = 0; s < STEPS && !rc; s++) {
        b.n = 0;
        qlm_batch_add(&b, tok_of(NP + s), NP + s, 0, true);
        rc = qlm_decode(c, &b, &err);
        if (!rc) memcpy(out + (size_t)s * V, qlm_logits(c, 0), sizeof(float) * V);
    }
    qlm_kv_seq_rm(qlm_ctx_kv(c), 0, NP, -1);
    b.n = 0;
    b.one_by_one = true;
    for (int s = 0; s < STEPS; s++) qlm_batch_add(&b, tok_of(NP + s), NP + s, 0, true);
    if (!rc) rc = qlm_decode(c, &b, &err);
    for (int s = 0; s < STEPS && !rc; s++) memcpy(out + (size_t)(STEPS + s) * V, qlm_logits(c, s), sizeof(float) * V);
    qlm_batch_free(&b);
    qlm_ctx_free(c);
    return rc;
}

static void check(int n_head, int n_head_kv, qt_type wtype, qlm_kv_type kvt)
{
    char name[96], path[] = "/tmp/qlm-test-flash-XXXXXX";
    snprintf(name, sizeof name, "flash_decode_h%d_kv%d_%s_%s", n_head, n_head_kv, qt_get(wtype)->name,
             kvt == QLM_KV_I8 ? "int8" : "f16");
    TEST_BEGIN(name);
    close(mkstemp(path));
    tiny_cfg cfg = tiny_default();
    cfg.n_head = n_head;
    cfg.n_head_kv = n_head_kv;
    cfg.n_embd = 64 * n_head;
    cfg.n_ff = cfg.n_embd;
    cfg.n_ctx_train = NCTX;
    cfg.wtype = wtype;
    qlm_model *m = NULL;
    qlm_err err = {0};
    const int loaded = tiny_write(path, &cfg) == 0 && qlm_model_load(&m, path, &err) == 0;
    unlink(path);
    CHECK(loaded, "cannot write or load the model: %s", err.msg);
    if (!loaded) {
        TEST_END();
        return;
    }
    const int V = m->hp.n_vocab;
    const size_t rows = 2 * STEPS;
    float *one = test_xmalloc(sizeof(float) * rows * V), *got = test_xmalloc(sizeof(float) * rows * V);
    CHECK(run(m, 1, kvt, one) == 0, "decode failed at 1 thread");
    for (size_t r = STEPS; r < rows; r++)
        CHECK(!memcmp(one + r * V, one + (r - STEPS) * V, sizeof(float) * V),
              "1 thread: step %zu's logits differ verified and alone", r - STEPS);
    for (int t = 2; t <= 3; t++) {
        CHECK(run(m, t, kvt, got) == 0, "decode failed at %d threads", t);
        for (size_t r = 0; r < rows; r++)
            CHECK(!memcmp(one + r * V, got + r * V, sizeof(float) * V), "%d threads: %s step %zu's logits differ from 1 thread's",
                  t, r < STEPS ? "one-token" : "verified", r % STEPS);
    }
    free(one);
    free(got);
    qlm_model_free(m);
    TEST_END();
}

int main(void)
{
    /* Q8_0 runs the fused layers, Q4_0 (repacked) the unfused ones */
    check(6, 3, QT_Q8_0, QLM_KV_I8);
    check(6, 3, QT_Q4_0, QLM_KV_I8);
    check(4, 1, QT_Q8_0, QLM_KV_I8);
    check(4, 1, QT_Q4_0, QLM_KV_I8);
    check(6, 3, QT_Q8_0, QLM_KV_F16);
    TEST_EXIT();
}
