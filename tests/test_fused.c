/* test_fused.c - decode.c's fused layers (one parallel region per forward
 * pass, elementwise work shared out by token, one activation quantization
 * per shared input) against its unfused path (qlm_ctx_params.unfused):
 * every logit bit for bit, for each family and several weight types, over
 * a prompt, one token, and a batch of several sequences. */
#include <string.h>
#include <unistd.h>

#include "ggml-lite/matmul.h"
#include "src/model.h"
#include "test.h"
#include "tiny_model.h"

enum { NP = 11, NS = 5, STEPS = 3 };

/* Runs a prompt in sequence 0, copies it to the others, then STEPS steps
 * of one token per sequence; writes every logit row in order to out.
 * Returns the number of floats written, or -1. */
static int64_t run(const qlm_model *m, bool unfused, bool one_by_one, float *out)
{
    const qlm_ctx_params cp = {.n_ctx = 96, .n_batch = 16, .n_threads = 2, .unfused = unfused};
    qlm_ctx *c = NULL;
    qlm_err err = {0};
    if (qlm_ctx_new(&c, m, &cp, &err)) return -1;
    const int V = m->hp.n_vocab;
    qlm_batch b;
    qlm_batch_init(&b, NP);
    int64_t n = 0;
    for (int i = 0; i < NP; i++) {
        b.token[i] = (i * 37 + 5) % 256;
        b.pos[i] = i;
        b.seq[i] = 0;
        b.logits[i] = i >= NP - 2;
    }
    b.n = NP;
    int rc = qlm_decode(c, &b, &err);
    for (int i = 0; !rc && i < 2; i++, n += V) memcpy(out + n, qlm_logits(c, i), sizeof(float) * V);
    for (int s = 1; s < NS; s++) qlm_kv_seq_cp(qlm_ctx_kv(c), 0, s, -1, -1);
    /* one_by_one: the steps as `qlm batch` runs them (each entry in its
     * one-token order; the output head inside the fused region) */
    b.one_by_one = one_by_one;
    for (int step = 0; !rc && step < STEPS; step++) {
        /* a step of one sequence alone, then all of them together */
        b.n = step == 0 ? 1 : NS;
        for (int s = 0; s < b.n; s++) {
            b.token[s] = (step * 11 + s * 29 + 3) % 256;
            b.pos[s] = NP + step;
            b.seq[s] = step == 0 ? 0 : s;
            b.logits[s] = 1;
        }
        if (step == 0) {
            /* the others have not seen this step's token: drop it again
             * after, so each later step is at one position for all */
            rc = qlm_decode(c, &b, &err);
            for (int i = 0; !rc && i < 1; i++, n += V) memcpy(out + n, qlm_logits(c, i), sizeof(float) * V);
            qlm_kv_seq_rm(qlm_ctx_kv(c), 0, NP, -1);
            continue;
        }
        for (int s = 0; s < NS; s++) b.pos[s] = NP + step - 1;
        rc = qlm_decode(c, &b, &err);
        for (int i = 0; !rc && i < NS; i++, n += V) memcpy(out + n, qlm_logits(c, i), sizeof(float) * V);
    }
    qlm_batch_free(&b);
    qlm_ctx_free(c);
    return rc ? -1 : n;
}

/* One model's fused and unfused passes, every logit row compared (a, u:
 * rows of scratch); counts in *n_plain whether its weights take their
 * vec_dot at 1 and NS tokens. */
static void check(const char *arch, qt_type type, int n_embd, float *a, float *u, int *n_plain)
{
    const int V = TINY_VOCAB, rows = 2 + 1 + NS * (STEPS - 1);
    char name[96], path[] = "/tmp/qlm-test-fused-XXXXXX";
    snprintf(name, sizeof name, "fused_equals_unfused_%s_%s%s", arch, qt_get(type)->name, n_embd ? "_wide" : "");
    TEST_BEGIN(name);
    close(mkstemp(path));
    tiny_cfg cfg = tiny_for_arch(arch);
    cfg.wtype = type;
    cfg.n_layer = 3;
    if (n_embd) cfg.n_embd = cfg.n_ff = n_embd;
    qlm_model *m = NULL;
    qlm_err err = {0};
    const int wrote = tiny_write(path, &cfg);
    const int loaded = wrote == 0 && qlm_model_load(&m, path, &err) == 0;
    unlink(path);
    CHECK(loaded, "cannot write or load the model: %s", err.msg);
    if (loaded) {
        gl_act act;
        *n_plain += gl_matmul_plain(&m->layers[0].w_up, 1, false, &act) &&
                    gl_matmul_plain(&m->layers[0].w_up, NS, false, &act);
        for (int obo = 0; obo < 2; obo++) {
            memset(a, 0, sizeof(float) * V * rows);
            memset(u, 0, sizeof(float) * V * rows);
            const int64_t na = run(m, false, obo, a), nu = run(m, true, obo, u);
            CHECK(na == (int64_t)V * rows && nu == na, "decode failed (%lld, %lld floats)", (long long)na,
                  (long long)nu);
            for (int r = 0; r < rows && na == nu && na > 0; r++)
                if (memcmp(a + (size_t)r * V, u + (size_t)r * V, sizeof(float) * V)) {
                    CHECK(0, "logit row %d differs%s", r, obo ? " (one by one)" : "");
                    break;
                }
        }
        qlm_model_free(m);
    }
    TEST_END();
}

int main(void)
{
    static const char *const archs[] = {"llama", "qwen2", "gemma3", "phi3"};
    static const qt_type types[] = {QT_Q4_1, QT_Q8_0, QT_Q5_0, QT_F16, QT_Q4_0};
    const int V = TINY_VOCAB, rows = 2 + 1 + NS * (STEPS - 1);
    float *a = test_xmalloc(sizeof(float) * V * rows), *u = test_xmalloc(sizeof(float) * V * rows);
    int n_plain = 0;
    for (size_t ai = 0; ai < sizeof archs / sizeof archs[0]; ai++)
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) check(archs[ai], types[ti], 0, a, u, &n_plain);
    /* 64-wide heads: the prompt's int8 attention goes through
     * gl_attn_prompt in both passes (gemma3: beside its window layers) */
    for (size_t ai = 0; ai < 3; ai += 2)
        for (size_t ti = 0; ti < 2; ti++) check(archs[ai], types[ti], 256, a, u, &n_plain);
    TEST_BEGIN("fused_path_taken");
    /* the cases above exercise the fused layers only where the weights
     * take their vec_dot (gl_matmul_plain); most types must */
    CHECK(n_plain >= 8, "only %d of the models above take the fused path", n_plain);
    TEST_END();
    free(a);
    free(u);
    TEST_EXIT();
}
