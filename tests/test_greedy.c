/* test_greedy.c - conformance: greedy generation on the default model is
 * token-for-token llama.cpp's (fixtures made by tools/ref_greedy.py).
 *
 * Slow and needs the downloaded model, so it runs under `make
 * conformance` (QLM_CONFORMANCE=1) only.  A divergence is accepted only at
 * a near-tie, where llama.cpp's own top-2 logit gap was under 1e-3, and
 * the test says so. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "src/generate.h"
#include "src/model.h"
#include "test.h"

#define PROMPTDIR "tests/data/prompts"

/* Each model with its llama.cpp fixtures.  The Q4_0 file is made from the
 * default model by `qlm quantize` (byte-identical tensors to llama-quantize,
 * which made the fixtures) and exercises llama.cpp's repacked Q4_0 order. */
static const struct { const char *model, *fixdir, *tag; } suites[] = {
    {"models/SmolLM2-135M-Instruct.Q4_1.gguf", "tests/data/greedy/smollm2-q4_1", "q4_1"},
    {"models/SmolLM2-135M-Instruct.Q4_0.gguf", "tests/data/greedy/smollm2-q4_0", "q4_0"},
    {"models/SmolLM2-135M-Instruct.Q4_K_M.gguf", "tests/data/greedy/smollm2-q4_k_m", "q4_k_m"},
    {"models/SmolLM2-135M-Instruct.Q5_K_M.gguf", "tests/data/greedy/smollm2-q5_k_m", "q5_k_m"},
    {"models/SmolLM2-135M-Instruct.Q6_K.gguf", "tests/data/greedy/smollm2-q6_k", "q6_k"},
    {"models/SmolLM2-135M-Instruct.Q2_K.gguf", "tests/data/greedy/smollm2-q2_k", "q2_k"},
};
#define NEAR_TIE 1e-3

typedef struct ids { int32_t *v; int n; } ids;
typedef struct fixture { ids prompt, gen; double *gap; int n_gap; } fixture;

static int parse_line(const char *line, const char *key, ids *out, double **dv)
{
    size_t kl = strlen(key);
    if (strncmp(line, key, kl) || (line[kl] != ' ' && line[kl] != '\n' && line[kl])) return 0;
    const char *p = line + kl;
    int cap = 64, n = 0;
    int32_t *iv = out ? malloc(sizeof *iv * cap) : NULL;
    double *d = dv ? malloc(sizeof *d * cap) : NULL;
    for (;;) {
        char *end;
        double x = strtod(p, &end);
        if (end == p) break;
        if (n == cap) {
            cap *= 2;
            if (iv) iv = realloc(iv, sizeof *iv * cap);
            if (d) d = realloc(d, sizeof *d * cap);
        }
        if (iv) iv[n] = (int32_t)x;
        if (d) d[n] = x;
        n++;
        p = end;
    }
    if (out) { out->v = iv; out->n = n; }
    if (dv) *dv = d;
    return n ? n : -1;
}

static int load_fixture(const char *path, fixture *f)
{
    memset(f, 0, sizeof *f);
    FILE *fp = fopen(path, "r");
    if (!fp) return -1;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, fp) > 0) {
        parse_line(line, "prompt", &f->prompt, NULL);
        parse_line(line, "gen", &f->gen, NULL);
        int n = parse_line(line, "gap", NULL, &f->gap);
        if (n > 0) f->n_gap = n;
    }
    free(line);
    fclose(fp);
    return f->prompt.n && f->gen.n ? 0 : -1;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    *len = fread(buf, 1, (size_t)n, f);
    fclose(f);
    return buf;
}

typedef struct collect { int32_t v[512]; int n; } collect;

static int on_tok(void *u, int32_t tok, const char *piece, size_t n)
{
    (void)piece; (void)n;
    collect *c = u;
    if (c->n < 512) c->v[c->n++] = tok;
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void run_suite(const char *MODEL, const char *FIXDIR, const char *tag)
{
    qlm_err err = {0};
    qlm_model *m = NULL;
    char lname[64];
    snprintf(lname, sizeof lname, "greedy_%s_model_loads", tag);
    TEST_BEGIN(lname);
    CHECK(qlm_model_load(&m, MODEL, &err) == 0, "%s (run `make conformance`)", err.msg);
    TEST_END();
    if (!m) return;

    DIR *d = opendir(FIXDIR);
    char *names[64];
    int n_names = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) && n_names < 64)
        if (strstr(e->d_name, ".ids")) names[n_names++] = strdup(e->d_name);
    if (d) closedir(d);
    qsort(names, (size_t)n_names, sizeof *names, cmp_names);
    snprintf(lname, sizeof lname, "greedy_%s_fixtures_present", tag);
    TEST_BEGIN(lname);
    CHECK(n_names >= 8, "found %d fixtures in %s", n_names, FIXDIR);
    TEST_END();

    for (int i = 0; i < n_names; i++) {
        char path[512], stem[256], name[300];
        snprintf(stem, sizeof stem, "%.*s", (int)(strlen(names[i]) - 4), names[i]);
        snprintf(name, sizeof name, "greedy_%s_%s", tag, stem);
        TEST_BEGIN(name);
        fixture f;
        snprintf(path, sizeof path, "%s/%s", FIXDIR, names[i]);
        CHECK(load_fixture(path, &f) == 0, "cannot parse %s", path);
        snprintf(path, sizeof path, "%s/%s.txt", PROMPTDIR, stem);
        size_t len = 0;
        char *text = read_file(path, &len);
        CHECK(text != NULL, "cannot read %s", path);
        int32_t *toks = NULL;
        size_t nt = 0;
        if (text && f.prompt.n &&
            qlm_tokenize(m->vocab, text, len, qlm_vocab_add_bos(m->vocab), true, &toks, &nt, &err) == 0) {
            int same = (int)nt == f.prompt.n;
            for (int j = 0; same && j < f.prompt.n; j++) same = toks[j] == f.prompt.v[j];
            CHECK(same, "prompt tokenization differs from llama.cpp (%zu vs %d tokens)", nt, f.prompt.n);
            /* Generate from llama.cpp's prompt ids, so a tokenizer bug shows
             * above and does not also hide a forward-pass result. */
            qlm_ctx *c = NULL;
            qlm_ctx_params cp = {.n_ctx = 2048, .type_k = QLM_KV_F32, .type_v = QLM_KV_F32}; /* llama.cpp parity */
            qlm_sampler_params sp = qlm_sampler_defaults();
            sp.temp = 0;
            qlm_sampler *s = qlm_sampler_new(&sp, m->hp.n_vocab);
            collect got = {0};
            qlm_gen_stats st;
            CHECK(qlm_ctx_new(&c, m, &cp, &err) == 0, "%s", err.msg);
            if (c && qlm_generate(c, m, f.prompt.v, f.prompt.n, 64, s, on_tok, &got, &st, &err) == 0) {
                /* fixtures end with the end-of-generation id when it stopped there */
                if (st.stop == QLM_STOP_EOG && got.n < 512) got.v[got.n++] = -2;
                if (got.n && got.v[got.n - 1] == -2 && f.gen.n && qlm_vocab_is_eog(m->vocab, f.gen.v[f.gen.n - 1]))
                    got.v[got.n - 1] = f.gen.v[f.gen.n - 1];
                int j = 0;
                while (j < got.n && j < f.gen.n && got.v[j] == f.gen.v[j]) j++;
                if (j < f.gen.n || got.n != f.gen.n) {
                    const double gap = j < f.n_gap ? f.gap[j] : 1e9;
                    if (gap < NEAR_TIE && j < f.gen.n)
                        printf("note %s: diverges at step %d where llama.cpp's top-2 gap is %.2g (near-tie, accepted)\n",
                               name, j, gap);
                    else
                        CHECK(0, "diverges at generated token %d of %d: qlm %d, llama.cpp %d (llama.cpp gap %.4f)",
                              j, f.gen.n, j < got.n ? got.v[j] : -1, j < f.gen.n ? f.gen.v[j] : -1, gap);
                }
            } else
                CHECK(0, "generation failed: %s", err.msg);
            qlm_sampler_free(s);
            qlm_ctx_free(c);
            free(toks);
        } else
            CHECK(0, "tokenize failed: %s", err.msg);
        free(text);
        free(f.prompt.v); free(f.gen.v); free(f.gap);
        free(names[i]);
        TEST_END();
    }
    qlm_model_free(m);
}

int main(void)
{
    const char *on = getenv("QLM_CONFORMANCE");
    if (!on || strcmp(on, "1")) return 0; /* fast suite: nothing to do */
    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++)
        run_suite(suites[i].model, suites[i].fixdir, suites[i].tag);
    TEST_EXIT();
}
