/* test_tokenizer.c - tokenizer parity with llama.cpp and robustness.
 *
 * tests/data/vocab/NAME.gguf comes with NAME.gguf.inp (inputs, each
 * followed by "\n__ggml_vocab_test__\n") and NAME.gguf.out (one line of
 * expected ids per input, made without BOS/EOS and without parsing
 * special tokens).  Every input must give exactly those ids.
 *
 * The ggml-vocab-* files from llama.cpp's test set cover SPM, GPT-2,
 * falcon, starcoder, refact and deepseek-coder.  Added here:
 *   ggml-vocab-smollm.gguf     SmolLM2-135M-Instruct's tokenizer metadata
 *                              (no tensors): pre-tokenizer "smollm";
 *   ggml-vocab-synth-PRE.gguf  GPT-2's vocab cut to its first 3000 merges
 *                              (plus a few special tokens) with
 *                              tokenizer.ggml.pre = PRE, for the
 *                              pre-tokenizers no small real vocab covers
 *                              (llama-bpe, qwen2, deepseek-llm, default).
 * Their .inp holds llama.cpp's 46 standard inputs plus 40 harder ones, and
 * their .out was written by llama.cpp's llama-tokenize (the llama.cpp in
 * llama-cpp-python 0.3.36) with --ids --no-bos --no-parse-special
 * --no-escape -- the same settings as the original fixtures, which that
 * tool reproduces exactly.
 *
 * tests/data/tokenizer/special.tsv adds cases with add_special and
 * parse_special on, from the same tool (see the file's header).  Run from
 * the repository root. */
#include <dirent.h>
#include <sys/wait.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/gguf.h"
#include "src/tok_internal.h"
#include "src/tokenizer.h"
#include "src/unicode.h"
#include "tests/test.h"

#define VOCAB_DIR "tests/data/vocab"
#define SPECIAL_TSV "tests/data/tokenizer/special.tsv"

/* ---- helpers ---- */

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    for (size_t r; buf && (r = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += r;
        if (n == cap) {
            char *nb = realloc(buf, cap * 2 + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf)
        buf[n] = '\0';
    *len = n;
    return buf;
}

/* Printable rendering of bytes for failure messages (static buffer). */
static const char *show(const char *s, size_t n)
{
    static char out[4][400];
    static int which;
    char *o = out[which++ & 3];
    size_t k = 0;
    for (size_t i = 0; i < n && k + 8 < sizeof out[0]; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\') {
            o[k++] = '\\';
            o[k++] = '\\';
        } else if (c >= 0x20 && c != 0x7F) {
            o[k++] = (char)c;
        } else {
            k += (size_t)snprintf(o + k, 8, "\\x%02x", c);
        }
    }
    if (k + 8 >= sizeof out[0])
        k += (size_t)snprintf(o + k, 8, "...");
    o[k] = '\0';
    return o;
}

static const char *show_ids(const int32_t *ids, size_t n)
{
    static char out[2][600];
    static int which;
    char *o = out[which++ & 1];
    size_t k = 0;
    o[0] = '\0';
    for (size_t i = 0; i < n && k + 16 < sizeof out[0]; i++)
        k += (size_t)snprintf(o + k, sizeof out[0] - k, "%s%d", i ? " " : "", ids[i]);
    if (k + 16 >= sizeof out[0])
        snprintf(o + k, 8, " ...");
    return o;
}

static qlm_vocab *load_vocab(const char *path, char *why, size_t why_cap)
{
    gguf_ctx *ctx;
    qlm_err err = {0};
    qlm_vocab *v = NULL;
    if (gguf_open(&ctx, path, &err)) {
        snprintf(why, why_cap, "%s", err.msg);
        return NULL;
    }
    if (qlm_vocab_load(&v, ctx, &err))
        snprintf(why, why_cap, "%s", err.msg);
    gguf_close(ctx);
    return v;
}

/* Concatenated pieces of ids into a malloc'd buffer. */
static char *detok(const qlm_vocab *v, const int32_t *ids, size_t n, size_t *len)
{
    size_t cap = 64, k = 0;
    char *buf = malloc(cap);
    for (size_t i = 0; buf && i < n; i++) {
        int m = qlm_token_to_piece(v, ids[i], buf + k, cap - k, false);
        if (m < 0)
            m = 0;
        if ((size_t)m > cap - k) {
            while ((size_t)m > cap - k)
                cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                return NULL;
            }
            buf = nb;
            m = qlm_token_to_piece(v, ids[i], buf + k, cap - k, false);
        }
        k += (size_t)m;
    }
    *len = k;
    return buf;
}

static bool valid_utf8(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t used;
        uint32_t cp = qlm_utf8_decode(s + i, n - i, &used);
        if (cp == QLM_UCP_REPLACEMENT && !(used == 3 && !memcmp(s + i, "\xef\xbf\xbd", 3)))
            return false;
        i += used;
    }
    return true;
}

/* ---- the vocab fixtures ---- */

typedef struct vocab_case {
    char **inp;
    size_t *inp_len;
    char **out; /* expected ids, one line each */
    size_t n;
} vocab_case;

static void free_case(vocab_case *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->inp[i]);
    free(c->inp);
    free(c->inp_len);
    free(c->out);
}

/* Splits .inp like llama.cpp's test: each input ends at the separator;
 * text after the last separator (normally none) is one more input. */
static bool read_case(const char *gguf, vocab_case *c, char **out_buf)
{
    static const char sep[] = "\n__ggml_vocab_test__\n";
    char path[512];
    size_t n;
    memset(c, 0, sizeof *c);
    snprintf(path, sizeof path, "%s.inp", gguf);
    char *raw = read_file(path, &n);
    snprintf(path, sizeof path, "%s.out", gguf);
    size_t on;
    char *outs = read_file(path, &on);
    if (!raw || !outs) {
        free(raw);
        free(outs);
        return false;
    }
    size_t cap = 64;
    c->inp = malloc(cap * sizeof *c->inp);
    c->inp_len = malloc(cap * sizeof *c->inp_len);
    c->out = malloc(cap * sizeof *c->out);
    for (size_t pos = 0; pos < n;) {
        char *hit = memmem(raw + pos, n - pos, sep, sizeof sep - 1);
        size_t end = hit ? (size_t)(hit - raw) : n;
        if (c->n == cap) {
            cap *= 2;
            c->inp = realloc(c->inp, cap * sizeof *c->inp);
            c->inp_len = realloc(c->inp_len, cap * sizeof *c->inp_len);
            c->out = realloc(c->out, cap * sizeof *c->out);
        }
        c->inp_len[c->n] = end - pos;
        c->inp[c->n] = malloc(end - pos + 1);
        memcpy(c->inp[c->n], raw + pos, end - pos);
        c->inp[c->n][end - pos] = '\0';
        c->n++;
        pos = hit ? end + sizeof sep - 1 : n;
    }
    size_t lines = 0;
    for (char *p = outs; *p && lines < c->n;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        c->out[lines++] = p;
        p = nl ? nl + 1 : p + strlen(p);
    }
    free(raw);
    *out_buf = outs;
    if (lines != c->n) {
        free_case(c);
        free(outs);
        return false;
    }
    return true;
}

static size_t parse_ids(const char *s, int32_t *ids, size_t cap)
{
    size_t n = 0;
    char *end;
    for (;;) {
        while (*s == ' ')
            s++;
        if (!*s || *s == '\r')
            break;
        long x = strtol(s, &end, 10);
        if (end == s)
            break;
        if (n < cap)
            ids[n] = (int32_t)x;
        n++;
        s = end;
    }
    return n;
}

static void test_vocab_file(const char *path, const char *name)
{
    char title[256], why[600];
    vocab_case c;
    char *outs = NULL;
    int32_t want[4096];

    snprintf(title, sizeof title, "vocab %s: every input gives llama.cpp's ids", name);
    TEST_BEGIN(title);
    qlm_vocab *v = load_vocab(path, why, sizeof why);
    CHECK(v, "load: %s", why);
    bool have = v && read_case(path, &c, &outs);
    CHECK(!v || have, "cannot read %s.inp/.out (or their counts differ)", path);
    for (size_t i = 0; have && i < c.n; i++) {
        int32_t *ids;
        size_t n;
        qlm_err err = {0};
        size_t nw = parse_ids(c.out[i], want, 4096);
        int rc = qlm_tokenize(v, c.inp[i], c.inp_len[i], false, false, &ids, &n, &err);
        CHECK(rc == 0, "input %zu '%s': %s", i, show(c.inp[i], c.inp_len[i]), err.msg);
        if (rc)
            continue;
        bool same = n == nw && !memcmp(ids, want, n * sizeof *ids);
        CHECK(same, "input %zu '%s': expected [%s] got [%s]", i, show(c.inp[i], c.inp_len[i]),
              show_ids(want, nw), show_ids(ids, n));
        free(ids);
    }
    TEST_END();

    /* Decoding gives the text back: for SentencePiece with the space it
     * put in front, for byte-level BPE exactly (valid UTF-8 only: BPE
     * replaces malformed bytes with U+FFFD before encoding). */
    snprintf(title, sizeof title, "vocab %s: pieces concatenate back to the input", name);
    TEST_BEGIN(title);
    CHECK(have, "no vocab");
    for (size_t i = 0; have && i < c.n; i++) {
        if (!valid_utf8(c.inp[i], c.inp_len[i]))
            continue;
        int32_t *ids;
        size_t n, dn;
        qlm_err err = {0};
        if (qlm_tokenize(v, c.inp[i], c.inp_len[i], false, false, &ids, &n, &err))
            continue;
        char *back = detok(v, ids, n, &dn);
        const char *want_s = c.inp[i];
        size_t want_n = c.inp_len[i];
        char *tmp = NULL;
        if (v->type == QLM_TOK_SPM && v->add_space_prefix && want_n) {
            tmp = malloc(want_n + 2);
            tmp[0] = ' ';
            memcpy(tmp + 1, want_s, want_n);
            want_s = tmp;
            want_n++;
        }
        CHECK(back && dn == want_n && !memcmp(back, want_s, dn),
              "input %zu '%s' decodes to '%s'", i, show(want_s, want_n),
              back ? show(back, dn) : "(oom)");
        free(tmp);
        free(back);
        free(ids);
    }
    TEST_END();

    /* Malformed UTF-8 and NUL bytes must tokenize without trouble; with
     * SentencePiece's byte fallback they must even come back intact (as
     * long as no broken sequence runs into a space: a space is escaped to
     * U+2581 first, and its bytes would then come back as U+2581). */
    snprintf(title, sizeof title, "vocab %s: malformed UTF-8 and NUL bytes", name);
    TEST_BEGIN(title);
    CHECK(v, "no vocab");
    static const struct {
        const char *s;
        size_t n;
    } bad[] = {
        {"\xff", 1}, {"\xc3", 1}, {"a\xe2\x82", 3}, {"\xf0\x9f\x98", 3},
        {"\x80\x80\x80", 3}, {"x\0y", 3}, {"\0", 1}, {"\xed\xa0\x80", 3},
        {"\xc0\xaf", 2}, {"\xf4\x90\x80\x80", 4}, {"\xf8\x88\x80\x80\x80", 5},
        {"<|endoftext|>\xff<s>", 18}, {"  \xe2\x96", 4},
        {"'s'\xc3", 4}, {"123\xff" "456", 7},
    };
    for (size_t i = 0; v && i < sizeof bad / sizeof bad[0]; i++) {
        for (int flags = 0; flags < 4; flags++) {
            int32_t *ids;
            size_t n, dn;
            qlm_err err = {0};
            int rc = qlm_tokenize(v, bad[i].s, bad[i].n, flags & 1, flags & 2, &ids, &n, &err);
            CHECK(rc == 0, "'%s': %s", show(bad[i].s, bad[i].n), err.msg);
            if (rc)
                continue;
            for (size_t j = 0; j < n; j++)
                CHECK(ids[j] >= 0 && ids[j] < qlm_vocab_size(v), "'%s': id %d out of range",
                      show(bad[i].s, bad[i].n), ids[j]);
            char *back = detok(v, ids, n, &dn);
            if (v->type == QLM_TOK_SPM && flags == 0) {
                CHECK(back && dn == bad[i].n + 1 && !memcmp(back + 1, bad[i].s, bad[i].n),
                      "'%s' decodes to '%s'", show(bad[i].s, bad[i].n), show(back, dn));
            }
            free(back);
            free(ids);
        }
    }
    TEST_END();

    if (have) {
        free_case(&c);
        free(outs);
    }
    qlm_vocab_free(v);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_vocab_dir(void)
{
    DIR *d = opendir(VOCAB_DIR);
    TEST_BEGIN("vocab fixtures present");
    CHECK(d, "cannot open %s (run from the repository root)", VOCAB_DIR);
    char *names[64];
    size_t n = 0;
    for (struct dirent *e; d && (e = readdir(d)) && n < 64;) {
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".gguf"))
            names[n++] = strdup(e->d_name);
    }
    if (d)
        closedir(d);
    CHECK(!d || n > 0, "no .gguf in %s", VOCAB_DIR);
    TEST_END();
    qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", VOCAB_DIR, names[i]);
        test_vocab_file(path, names[i]);
        free(names[i]);
    }
}

/* ---- special tokens, BOS/EOS: tests/data/tokenizer/special.tsv ----
 * Lines: vocab file, flags ("-" or any of "a" add_special, "p"
 * parse_special), input with C escapes, expected ids. */

static size_t unescape(const char *s, char *out)
{
    size_t k = 0;
    while (*s) {
        if (*s != '\\') {
            out[k++] = *s++;
            continue;
        }
        s++;
        switch (*s) {
        case 'n': out[k++] = '\n'; s++; break;
        case 't': out[k++] = '\t'; s++; break;
        case 'r': out[k++] = '\r'; s++; break;
        case '\\': out[k++] = '\\'; s++; break;
        case 'x': {
            unsigned v = 0;
            s++;
            for (int j = 0; j < 2 && *s; j++, s++)
                v = v * 16 + (unsigned)(*s <= '9' ? *s - '0' : (*s | 32) - 'a' + 10);
            out[k++] = (char)v;
            break;
        }
        default: out[k++] = *s ? *s++ : '\\'; break;
        }
    }
    return k;
}

static void test_special_tsv(void)
{
    size_t len;
    char *all = read_file(SPECIAL_TSV, &len);
    TEST_BEGIN("special tokens and BOS/EOS match llama-tokenize (" SPECIAL_TSV ")");
    CHECK(all, "cannot read %s", SPECIAL_TSV);
    char cur_path[512] = "";
    qlm_vocab *v = NULL;
    int lineno = 0, cases = 0;
    for (char *line = all, *next; all && line && *line; line = next) {
        lineno++;
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (*line == '#' || !*line)
            continue;
        char *f[4] = {line, NULL, NULL, NULL};
        for (int i = 1; i < 4; i++) {
            f[i] = f[i - 1] ? strchr(f[i - 1], '\t') : NULL;
            if (f[i])
                *f[i]++ = '\0';
        }
        if (!f[3]) {
            CHECK(0, "line %d: expected 4 tab-separated fields", lineno);
            continue;
        }
        char path[512], why[600];
        snprintf(path, sizeof path, "%s/%s", VOCAB_DIR, f[0]);
        if (strcmp(path, cur_path)) {
            qlm_vocab_free(v);
            v = load_vocab(path, why, sizeof why);
            snprintf(cur_path, sizeof cur_path, "%s", path);
            CHECK(v, "line %d: %s", lineno, why);
        }
        if (!v)
            continue;
        char *text = malloc(strlen(f[2]) + 1);
        size_t tn = unescape(f[2], text);
        int32_t want[1024], *ids;
        size_t nw = parse_ids(f[3], want, 1024), n;
        qlm_err err = {0};
        bool add = strchr(f[1], 'a'), parse = strchr(f[1], 'p');
        int rc = qlm_tokenize(v, text, tn, add, parse, &ids, &n, &err);
        CHECK(rc == 0, "line %d: %s", lineno, err.msg);
        if (!rc) {
            CHECK(n == nw && !memcmp(ids, want, n * sizeof *ids),
                  "line %d (%s, %s) '%s': expected [%s] got [%s]", lineno, f[0], f[1],
                  show(text, tn), show_ids(want, nw), show_ids(ids, n));
            free(ids);
        }
        cases++;
        free(text);
    }
    CHECK(!all || cases > 0, "no cases in %s", SPECIAL_TSV);
    qlm_vocab_free(v);
    free(all);
    TEST_END();
}

/* ---- units ---- */

static void test_utf8(void)
{
    TEST_BEGIN("utf8: decode/encode, lenient where the reference is");
    size_t used;
    CHECK(qlm_utf8_decode("A", 1, &used) == 'A' && used == 1, "ascii");
    CHECK(qlm_utf8_decode("\xc3\xa9", 2, &used) == 0xE9 && used == 2, "2-byte");
    CHECK(qlm_utf8_decode("\xe2\x96\x81", 3, &used) == 0x2581 && used == 3, "3-byte");
    CHECK(qlm_utf8_decode("\xf0\x9f\x98\x81", 4, &used) == 0x1F601 && used == 4, "4-byte");
    CHECK(qlm_utf8_decode("\xc3", 1, &used) == QLM_UCP_REPLACEMENT && used == 1, "truncated");
    CHECK(qlm_utf8_decode("\xe2\x28\xa1", 3, &used) == QLM_UCP_REPLACEMENT && used == 1, "bad cont");
    CHECK(qlm_utf8_decode("\x80", 1, &used) == QLM_UCP_REPLACEMENT && used == 1, "stray cont");
    CHECK(qlm_utf8_decode("\xff", 1, &used) == QLM_UCP_REPLACEMENT && used == 1, "0xff");
    CHECK(qlm_utf8_decode("\xc0\x80", 2, &used) == 0 && used == 2, "overlong NUL is accepted");
    CHECK(qlm_utf8_decode("\xed\xa0\x80", 3, &used) == 0xD800 && used == 3, "surrogate accepted");
    CHECK(qlm_utf8_decode("\xf4\x90\x80\x80", 4, &used) == QLM_UCP_REPLACEMENT && used == 1,
          "past U+10FFFF");
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp += 0x3F) {
        char b[4];
        size_t n = qlm_utf8_encode(cp, b);
        uint32_t back = qlm_utf8_decode(b, n, &used);
        CHECK(n >= 1 && back == cp && used == n, "round trip U+%04X", cp);
    }
    char b[4];
    CHECK(qlm_utf8_encode(0x110000, b) == 0, "encode past range");
    CHECK(qlm_utf8_len(0x41) == 1 && qlm_utf8_len(0x80) == 1 && qlm_utf8_len(0xC3) == 2 &&
              qlm_utf8_len(0xE2) == 3 && qlm_utf8_len(0xF0) == 4 && qlm_utf8_len(0xFF) == 4,
          "lead byte lengths");
    TEST_END();
}

static void test_categories(void)
{
    TEST_BEGIN("unicode categories");
    static const struct {
        uint32_t cp;
        unsigned flags;
    } cases[] = {
        {'a', QLM_UCP_LETTER}, {'Z', QLM_UCP_LETTER}, {'5', QLM_UCP_NUMBER},
        {' ', QLM_UCP_SEPARATOR | QLM_UCP_WHITESPACE}, {'\n', QLM_UCP_CONTROL | QLM_UCP_WHITESPACE},
        {'!', QLM_UCP_PUNCT}, {'$', QLM_UCP_SYMBOL}, {'`', QLM_UCP_SYMBOL}, {0, QLM_UCP_CONTROL},
        {0x1F, QLM_UCP_CONTROL}, /* not \s, unlike Python's isspace */
        {0x85, QLM_UCP_CONTROL | QLM_UCP_WHITESPACE}, {0xA0, QLM_UCP_SEPARATOR | QLM_UCP_WHITESPACE},
        {0xE9, QLM_UCP_LETTER}, {0x0301, QLM_UCP_MARK}, {0x00BD, QLM_UCP_NUMBER},
        {0x2581, QLM_UCP_SYMBOL}, {0x3000, QLM_UCP_SEPARATOR | QLM_UCP_WHITESPACE},
        {0x4E00, QLM_UCP_LETTER}, {0x200B, QLM_UCP_CONTROL}, {0xE000, QLM_UCP_CONTROL},
        {0x1F601, QLM_UCP_SYMBOL}, {0x2FFC, QLM_UCP_SYMBOL}, /* new in Unicode 15.1 */
        {0x0378, QLM_UCP_UNDEF}, {0x10FFFF, QLM_UCP_UNDEF}, {0x110000, QLM_UCP_UNDEF},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(qlm_ucp_flags(cases[i].cp) == cases[i].flags, "U+%04X: flags 0x%x, want 0x%x",
              cases[i].cp, qlm_ucp_flags(cases[i].cp), cases[i].flags);
    CHECK(qlm_ucp_ranges[0].start == 0, "table starts at 0");
    for (size_t i = 1; i < qlm_ucp_nranges; i++)
        CHECK(qlm_ucp_ranges[i].start > qlm_ucp_ranges[i - 1].start, "table sorted at %zu", i);
    TEST_END();
}

static void test_byte_map(void)
{
    TEST_BEGIN("GPT-2 byte map is a bijection");
    bool seen[512] = {0};
    for (int b = 0; b < 256; b++) {
        uint32_t cp = qlm_bpe_byte_to_cp((uint8_t)b);
        CHECK(cp < 512 && !seen[cp], "byte %d -> U+%04X", b, cp);
        if (cp < 512)
            seen[cp] = true;
        CHECK(qlm_bpe_cp_to_byte(cp) == b, "U+%04X back to %d", cp, b);
    }
    CHECK(qlm_bpe_byte_to_cp(' ') == 0x120 && qlm_bpe_byte_to_cp('\n') == 0x10A &&
              qlm_bpe_byte_to_cp('A') == 'A' && qlm_bpe_byte_to_cp(0xAD) == 0x143,
          "known points (space is U+0120 'Ġ')");
    CHECK(qlm_bpe_cp_to_byte(0x144) == -1 && qlm_bpe_cp_to_byte(0x20) == -1, "non-byte points");
    TEST_END();
}

/* Pieces of text under a pre-tokenizer, joined with '|'. */
static void pre_pieces(qlm_pre_kind kind, const char *text, char *out, size_t cap)
{
    uint32_t *cps;
    size_t n, *lens, nl, k = 0, start = 0;
    out[0] = '\0';
    if (qlm_utf8_to_cps(text, strlen(text), &cps, &n))
        return;
    if (qlm_pre_split(kind, cps, n, &lens, &nl)) {
        free(cps);
        return;
    }
    for (size_t i = 0; i < nl; i++) {
        if (i && k + 1 < cap)
            out[k++] = '|';
        for (size_t j = start; j < start + lens[i]; j++) {
            char b[4];
            size_t m = qlm_utf8_encode(cps[j], b);
            if (k + m < cap) {
                memcpy(out + k, b, m);
                k += m;
            }
        }
        start += lens[i];
    }
    out[k] = '\0';
    free(lens);
    free(cps);
}

static void test_pre_tokenizers(void)
{
    /* Expected splits follow the reference's splitters and regex
     * semantics; the id-level fixtures check the same paths end to end. */
    static const struct {
        qlm_pre_kind kind;
        const char *in, *want;
    } cases[] = {
        {QLM_PRE_GPT2, "Hello world", "Hello| world"},
        {QLM_PRE_GPT2, "I've 12345 apples!!", "I|'ve| 12345| apples|!!"},
        {QLM_PRE_GPT2, "a   b", "a|  | b"},
        {QLM_PRE_GPT2, "a  ", "a|  "},
        {QLM_PRE_GPT2, "x\n\ny", "x|\n|\n|y"},
        {QLM_PRE_LLAMA3, "I'VE 12345 apples", "I|'VE| |123|45| apples"},
        {QLM_PRE_LLAMA3, "hi!!\n\nyo", "hi|!!\n\n|yo"},
        {QLM_PRE_LLAMA3, "a \n b", "a| \n| b"},
        {QLM_PRE_LLAMA3, "$hello", "$hello"},
        {QLM_PRE_QWEN2, "x 123", "x| |1|2|3"},
        {QLM_PRE_STARCODER, "abc 123", "abc| |1|2|3"},
        {QLM_PRE_DEFAULT, "x=1234567;", "x|=|123|456|7|;"},
        {QLM_PRE_FALCON, "a`b 12345", "a|`|b| |123|45"},
        {QLM_PRE_DEEPSEEK_CODER, "foo(bar)\n 12", "foo|(|bar|)|\n| |1|2"},
        {QLM_PRE_DEEPSEEK_CODER, "\xe4\xbd\xa0\xe5\xa5\xbd abc", "\xe4\xbd\xa0\xe5\xa5\xbd| abc"},
        {QLM_PRE_DEEPSEEK_LLM, "Hi there!  \t", "Hi| there|!|  \t"},
        /* U+3000 is whitespace, so the CJK run takes only the U+3002. */
        {QLM_PRE_DEEPSEEK_LLM, "x 1234\xe3\x80\x80\xe3\x80\x82",
         "x| |1234|\xe3\x80\x80|\xe3\x80\x82"},
    };
    TEST_BEGIN("pre-tokenizer splits");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char got[256];
        pre_pieces(cases[i].kind, cases[i].in, got, sizeof got);
        CHECK(!strcmp(got, cases[i].want), "kind %d '%s': want '%s' got '%s'", cases[i].kind,
              show(cases[i].in, strlen(cases[i].in)), show(cases[i].want, strlen(cases[i].want)),
              show(got, strlen(got)));
    }
    TEST_END();
}

/* ---- loader validation on synthetic files ---- */

static int load_mem(gguf_writer *w, qlm_vocab **v, qlm_err *err)
{
    void *buf;
    size_t size;
    gguf_ctx *ctx;
    *v = NULL;
    int rc = gguf_w_to_mem(w, &buf, &size, err);
    gguf_writer_free(w);
    if (rc)
        return rc;
    if ((rc = gguf_open_mem(&ctx, buf, size, err)) == 0) {
        rc = qlm_vocab_load(v, ctx, err);
        gguf_close(ctx);
    }
    free(buf);
    return rc;
}

static gguf_writer *tiny_spm(int32_t n_types, const char *model)
{
    static const char *const toks[] = {"<unk>", "<s>", "</s>", ("\xe2\x96\x81" "a"), "a", "b",
                                       "<0x0A>", "<|im_end|>"};
    static const float scores[] = {0, 0, 0, -1, -2, -3, 0, 0};
    static const int32_t types[] = {2, 3, 3, 1, 1, 1, 6, 4};
    gguf_writer *w = gguf_writer_new();
    gguf_w_str(w, "tokenizer.ggml.model", model);
    gguf_w_arr_str(w, "tokenizer.ggml.tokens", toks, 8);
    gguf_w_arr(w, "tokenizer.ggml.scores", GGUF_FLOAT32, scores, 8);
    gguf_w_arr(w, "tokenizer.ggml.token_type", GGUF_INT32, types, (uint64_t)n_types);
    return w;
}

/* Token texts are bytes from the file: invalid UTF-8 in them (lone
 * continuation bytes, truncated sequences, 0xff) must load, tokenize and
 * print back as the same bytes, never crash, for both tokenizer kinds. */
static void test_invalid_utf8_vocab(void)
{
    static const char *const toks[] = {"<unk>", "<s>", "</s>", "\xff", "a\xc3", "\xe2\x96",
                                       "\x80\x80", "b", "\xc3\xa9", "<0xFF>"};
    static const float scores[] = {0, 0, 0, -1, -2, -3, -4, -5, -6, 0};
    static const int32_t types[] = {2, 3, 3, 1, 1, 1, 1, 1, 1, 6};
    static const char *const inputs[] = {"\xff", "a\xc3\xff b", "\x80\x80\xe2\x96", "\xc3\xa9\xc3", ""};
    static const char *const kinds[] = {"llama", "gpt2"};
    for (int k = 0; k < 2; k++) {
        TEST_BEGIN(k ? "vocab with invalid UTF-8 token texts (BPE)" : "vocab with invalid UTF-8 token texts (SPM)");
        gguf_writer *w = gguf_writer_new();
        gguf_w_str(w, "tokenizer.ggml.model", kinds[k]);
        gguf_w_arr_str(w, "tokenizer.ggml.tokens", toks, 10);
        gguf_w_arr(w, "tokenizer.ggml.scores", GGUF_FLOAT32, scores, 10);
        gguf_w_arr(w, "tokenizer.ggml.token_type", GGUF_INT32, types, 10);
        if (k) {
            static const char *const merges[] = {"a \xc3", "\x80 \x80"};
            gguf_w_arr_str(w, "tokenizer.ggml.merges", merges, 2);
        }
        qlm_vocab *v;
        qlm_err err = {0};
        int rc = load_mem(w, &v, &err);
        CHECK(rc == 0, "load: %s", err.msg);
        for (size_t i = 0; v && i < sizeof inputs / sizeof inputs[0]; i++) {
            int32_t *ids;
            size_t n;
            rc = qlm_tokenize(v, inputs[i], strlen(inputs[i]), true, true, &ids, &n, &err);
            CHECK(rc == 0, "tokenize input %zu: %s", i, err.msg);
            if (rc) continue;
            for (size_t j = 0; j < n; j++) {
                CHECK(ids[j] >= 0 && ids[j] < 10, "input %zu: id %d out of range", i, ids[j]);
                char piece[64];
                const int pn = qlm_token_to_piece(v, ids[j], piece, sizeof piece, false);
                CHECK(pn >= 0 && pn < (int)sizeof piece, "piece of %d: %d", ids[j], pn);
            }
            free(ids);
        }
        if (v && !k) {
            /* SPM token texts are the bytes themselves */
            char piece[8];
            CHECK(qlm_token_to_piece(v, 3, piece, sizeof piece, false) == 1 && (uint8_t)piece[0] == 0xff,
                  "piece of '\\xff'");
            CHECK(qlm_token_to_piece(v, 4, piece, sizeof piece, false) == 2 && !memcmp(piece, "a\xc3", 2),
                  "piece of 'a\\xc3'");
        }
        if (v) qlm_vocab_free(v);
        TEST_END();
    }
}

static void test_loader_errors(void)
{
    qlm_vocab *v;
    qlm_err err;

    TEST_BEGIN("loader: small SPM vocab, defaults and end-of-generation set");
    memset(&err, 0, sizeof err);
    int rc = load_mem(tiny_spm(8, "llama"), &v, &err);
    CHECK(rc == 0, "load: %s", err.msg);
    if (v) {
        CHECK(qlm_vocab_bos(v) == 1 && qlm_vocab_eos(v) == 2 && qlm_vocab_add_bos(v) &&
                  !qlm_vocab_add_eos(v), "SPM defaults");
        CHECK(qlm_vocab_is_eog(v, 2) && qlm_vocab_is_eog(v, 7) && !qlm_vocab_is_eog(v, 1),
              "eog: </s> and <|im_end|>");
        CHECK(qlm_vocab_is_control(v, 7), "<|im_end|> becomes control");
        CHECK(qlm_vocab_find(v, "b") == 5 && qlm_vocab_find(v, "zz") == -1, "find");
        int32_t *ids;
        size_t n;
        rc = qlm_tokenize(v, "a b\n\xc3", 5, true, false, &ids, &n, &err);
        /* A lone "\xe2\x96\x81" (the escaped space before b) and "\xc3"
         * have neither a token nor <0xNN> tokens: one unknown per byte. */
        int32_t want[] = {1, 3, 0, 0, 0, 5, 6, 0};
        CHECK(rc == 0 && n == 8 && !memcmp(ids, want, sizeof want), "got [%s]",
              rc ? err.msg : show_ids(ids, n));
        if (!rc)
            free(ids);
        char piece[8];
        CHECK(qlm_token_to_piece(v, 3, piece, sizeof piece, false) == 2 && !memcmp(piece, " a", 2),
              "piece of '\xe2\x96\x81" "a'");
        CHECK(qlm_token_to_piece(v, 6, piece, sizeof piece, false) == 1 && piece[0] == '\n',
              "byte piece");
        CHECK(qlm_token_to_piece(v, 1, piece, sizeof piece, false) == 0 &&
                  qlm_token_to_piece(v, 1, piece, sizeof piece, true) == 3,
              "control piece only when rendering specials");
        CHECK(qlm_token_to_piece(v, 1, piece, 1, true) == 3, "length past cap");
        CHECK(qlm_token_to_piece(v, 8, piece, sizeof piece, true) == -1 &&
                  qlm_token_to_piece(v, -1, piece, sizeof piece, true) == -1, "bad id");
        qlm_vocab_free(v);
    }
    TEST_END();

    TEST_BEGIN("loader: malformed metadata fails with QLM_ELOAD and a reason");
    memset(&err, 0, sizeof err);
    rc = load_mem(tiny_spm(7, "llama"), &v, &err);
    CHECK(rc == QLM_ELOAD && !v && strstr(err.msg, "token_type"), "short token_type: %d %s", rc,
          err.msg);
    memset(&err, 0, sizeof err);
    rc = load_mem(tiny_spm(8, "bert"), &v, &err);
    CHECK(rc == QLM_ELOAD && strstr(err.msg, "'bert'"), "unsupported model: %s", err.msg);

    gguf_writer *w = tiny_spm(8, "gpt2");
    gguf_w_str(w, "tokenizer.ggml.pre", "no-such-pre");
    static const char *const merges[] = {"a b"};
    gguf_w_arr_str(w, "tokenizer.ggml.merges", merges, 1);
    memset(&err, 0, sizeof err);
    rc = load_mem(w, &v, &err);
    CHECK(rc == QLM_ELOAD && strstr(err.msg, "'no-such-pre'"), "unsupported pre: %s", err.msg);

    w = tiny_spm(8, "gpt2");
    memset(&err, 0, sizeof err);
    rc = load_mem(w, &v, &err);
    CHECK(rc == QLM_ELOAD && strstr(err.msg, "merges"), "BPE without merges: %s", err.msg);

    w = tiny_spm(8, "llama");
    gguf_w_u32(w, "tokenizer.ggml.eos_token_id", 8);
    memset(&err, 0, sizeof err);
    rc = load_mem(w, &v, &err);
    CHECK(rc == QLM_ELOAD && strstr(err.msg, "eos_token_id"), "eos out of range: %s", err.msg);

    static const char *const dup[] = {"a", "b", "a"};
    w = gguf_writer_new();
    gguf_w_str(w, "tokenizer.ggml.model", "llama");
    gguf_w_arr_str(w, "tokenizer.ggml.tokens", dup, 3);
    memset(&err, 0, sizeof err);
    rc = load_mem(w, &v, &err);
    CHECK(rc == QLM_ELOAD && strstr(err.msg, "both"), "duplicate token: %s", err.msg);

    w = gguf_writer_new();
    gguf_w_str(w, "general.architecture", "llama");
    memset(&err, 0, sizeof err);
    rc = load_mem(w, &v, &err);
    CHECK(rc == QLM_ELOAD && strstr(err.msg, "tokenizer.ggml.model"), "no vocab: %s", err.msg);

    static const float short_scores[] = {0, 0};
    w = gguf_writer_new();
    gguf_w_str(w, "tokenizer.ggml.model", "llama");
    gguf_w_arr_str(w, "tokenizer.ggml.tokens", dup, 2);
    gguf_w_arr(w, "tokenizer.ggml.scores", GGUF_FLOAT32, short_scores, 1);
    memset(&err, 0, sizeof err);
    rc = load_mem(w, &v, &err);
    CHECK(rc == QLM_ELOAD && strstr(err.msg, "scores"), "short scores: %s", err.msg);
    TEST_END();
}

/* The prompt ids of the greedy-generation fixtures (made by llama.cpp on
 * the SmolLM2 GGUF the smollm vocab was taken from, add_special as the
 * model says, parse_special on).  Skipped when those fixtures are absent. */
static void test_greedy_prompts(void)
{
    static const char dir[] = "tests/data/greedy/smollm2-q4_1";
    DIR *d = opendir(dir);
    if (!d)
        return;
    TEST_BEGIN("smollm: prompt ids of " "tests/data/greedy/smollm2-q4_1 match");
    char why[600];
    qlm_vocab *v = load_vocab(VOCAB_DIR "/ggml-vocab-smollm.gguf", why, sizeof why);
    CHECK(v, "%s", why);
    int n_checked = 0;
    for (struct dirent *e; v && (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".ids"))
            continue;
        char path[600], prompt_path[600];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        snprintf(prompt_path, sizeof prompt_path, "tests/data/prompts/%.*s.txt", (int)(l - 4),
                 e->d_name);
        size_t flen, plen;
        char *fix = read_file(path, &flen), *prompt = read_file(prompt_path, &plen);
        char *line = fix ? strstr(fix, "\nprompt ") : NULL;
        if (line && prompt) {
            int32_t want[4096], *ids;
            size_t nw = parse_ids(line + 8, want, 4096), n;
            qlm_err err = {0};
            int rc = qlm_tokenize(v, prompt, plen, true, true, &ids, &n, &err);
            CHECK(rc == 0, "%s: %s", e->d_name, err.msg);
            if (!rc) {
                CHECK(n == nw && !memcmp(ids, want, n * sizeof *ids), "%s: expected [%s] got [%s]",
                      e->d_name, show_ids(want, nw), show_ids(ids, n));
                free(ids);
            }
            n_checked++;
        }
        free(fix);
        free(prompt);
    }
    closedir(d);
    CHECK(!v || n_checked > 0, "no prompt lines found in %s", dir);
    qlm_vocab_free(v);
    TEST_END();
}

/* Runs cmd through the shell; returns its exit status and its stdout. */
static int run_cmd(const char *cmd, char *out, size_t cap)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* `qlm tokenize`, when ./qlm is built (make test builds it first). */
static void test_cli(void)
{
    if (access("./qlm", X_OK))
        return;
    char out[4096];
    const char *m = "-m " VOCAB_DIR "/ggml-vocab-gpt-2.gguf";
    char cmd[1024];
    TEST_BEGIN("qlm tokenize: output formats, input sources, exit codes");
    snprintf(cmd, sizeof cmd, "./qlm tokenize %s -p 'Hello world' --ids", m);
    CHECK(run_cmd(cmd, out, sizeof out) == 0 && !strcmp(out, "15496 995\n"), "--ids: '%s'", out);
    snprintf(cmd, sizeof cmd, "./qlm tokenize %s -p 'Hello world'", m);
    CHECK(run_cmd(cmd, out, sizeof out) == 0 && !strcmp(out, "15496\t'Hello'\n995\t' world'\n"),
          "pieces: '%s'", show(out, strlen(out)));
    snprintf(cmd, sizeof cmd, "printf 'Hello world' | ./qlm tokenize %s --ids", m);
    CHECK(run_cmd(cmd, out, sizeof out) == 0 && !strcmp(out, "15496 995\n"), "stdin: '%s'", out);
    snprintf(cmd, sizeof cmd, "./qlm tokenize %s -f tests/data/prompts/01-short.txt --ids", m);
    CHECK(run_cmd(cmd, out, sizeof out) == 0 && strlen(out) > 2, "-f: '%s'", out);
    snprintf(cmd, sizeof cmd, "./qlm tokenize %s -p 'a<|endoftext|>' --ids", m);
    CHECK(run_cmd(cmd, out, sizeof out) == 0 && !strcmp(out, "64 27 91 437 1659 5239 91 29\n"),
          "special text literal by default: '%s'", out);
    snprintf(cmd, sizeof cmd, "./qlm tokenize %s -p 'a<|endoftext|>' --ids --parse-special", m);
    CHECK(run_cmd(cmd, out, sizeof out) == 0 && !strcmp(out, "64 50256\n"), "--parse-special: '%s'",
          out);
    snprintf(cmd, sizeof cmd,
             "./qlm tokenize -m " VOCAB_DIR "/ggml-vocab-llama-spm.gguf -p 'Hello' --ids --add-special");
    CHECK(run_cmd(cmd, out, sizeof out) == 0 && !strcmp(out, "1 15043\n"), "--add-special: '%s'", out);
    CHECK(run_cmd("./qlm tokenize -m /nonexistent.gguf -p x 2>&1", out, sizeof out) == 2 &&
              !strncmp(out, "qlm: error: ", 12), "missing model: '%s'", out);
    CHECK(run_cmd("./qlm tokenize -m tests/data/prompts/01-short.txt -p x 2>&1", out, sizeof out) == 2,
          "not a GGUF: '%s'", out);
    CHECK(run_cmd("./qlm tokenize -p x 2>&1", out, sizeof out) == 1 && !strncmp(out, "qlm: error: ", 12),
          "no -m: '%s'", out);
    snprintf(cmd, sizeof cmd, "./qlm tokenize %s --bogus 2>&1", m);
    CHECK(run_cmd(cmd, out, sizeof out) == 1, "unknown flag: '%s'", out);
    TEST_END();
}

/* ~100 KB of text (20k-ish tokens) tokenizes whole, into as many tokens
 * as its repeated paragraph does times the repeats (joins aside).  Speed
 * itself is a benchmark's business, not a unit test's: a timed check here
 * failed whenever the machine was busy. */
static void test_speed(void)
{
    static const char *const files[] = {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf"};
    size_t plen;
    char *para = read_file("tests/data/prompts/02-story.txt", &plen);
    TEST_BEGIN("100 KB of text tokenizes whole, in proportion to its paragraph");
    CHECK(para && plen > 0, "cannot read tests/data/prompts/02-story.txt");
    size_t target = 100000, n = 0;
    char *big = malloc(target + plen + 1);
    while (para && big && n < target) {
        memcpy(big + n, para, plen);
        n += plen;
    }
    for (size_t f = 0; para && big && f < 2; f++) {
        char path[512], why[600];
        snprintf(path, sizeof path, "%s/%s", VOCAB_DIR, files[f]);
        qlm_vocab *v = load_vocab(path, why, sizeof why);
        CHECK(v, "%s", why);
        if (!v)
            continue;
        int32_t *ids, *pids;
        size_t nid, npid;
        qlm_err err = {0};
        int rc = qlm_tokenize(v, big, n, false, true, &ids, &nid, &err);
        CHECK(rc == 0, "%s", err.msg);
        int prc = qlm_tokenize(v, para, plen, false, true, &pids, &npid, &err);
        CHECK(prc == 0, "%s", err.msg);
        if (!rc && !prc) {
            const double want = (double)npid * (double)(n / plen);
            CHECK(nid > 0.9 * want && nid < 1.1 * want, "%s: %zu bytes -> %zu tokens, paragraph x %zu = %.0f",
                  files[f], n, nid, n / plen, want);
        }
        if (!rc)
            free(ids);
        if (!prc)
            free(pids);
        qlm_vocab_free(v);
    }
    free(big);
    free(para);
    TEST_END();
}

int main(void)
{
    test_utf8();
    test_categories();
    test_byte_map();
    test_pre_tokenizers();
    test_loader_errors();
    test_invalid_utf8_vocab();
    test_vocab_dir();
    test_special_tsv();
    test_greedy_prompts();
    test_cli();
    test_speed();
    TEST_EXIT();
}
