/* fuzz_tokenizer.c - libFuzzer target: arbitrary bytes through a byte-level
 * BPE (SmolLM2) and a SentencePiece (llama) vocabulary, with and without
 * special-token parsing.  Byte-level BPE must round-trip plain text
 * exactly when special text is taken literally (invalid bytes become
 * U+FFFD, as in llama.cpp). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/gguf.h"
#include "src/tokenizer.h"

static qlm_vocab *bpe, *spm;

/* Valid UTF-8 without C0 controls other than tab/newline/return: some
 * byte-level vocabularies (SmolLM2's among them) drop control bytes, and
 * llama.cpp does the same, so only this text must round-trip. */
static bool plain_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        const unsigned c = s[i];
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return false;
        size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
        if (!len || i + len > n) return false;
        uint32_t cp = len == 1 ? c : c & (0x7f >> len);
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return false;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
        i += len;
    }
    return true;
}

static qlm_vocab *load(const char *path)
{
    gguf_ctx *g = NULL;
    qlm_vocab *v = NULL;
    qlm_err err = {0};
    if (gguf_open(&g, path, &err) || qlm_vocab_load(&v, g, &err)) {
        fprintf(stderr, "fuzz_tokenizer: %s (run from the repository root)\n", err.msg);
        exit(1);
    }
    gguf_close(g);
    return v;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    bpe = load("tests/data/vocab/ggml-vocab-smollm.gguf");
    spm = load("tests/data/vocab/ggml-vocab-llama-spm.gguf");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const int mode = data[0];
    const char *text = (const char *)data + 1;
    const size_t len = size - 1;
    qlm_vocab *v = mode & 1 ? spm : bpe;
    const bool special = mode & 2;
    int32_t *ids = NULL;
    size_t n = 0;
    qlm_err err = {0};
    if (qlm_tokenize(v, text, len, mode & 4, special, &ids, &n, &err) != QLM_OK) abort();
    size_t cap = len * 4 + 64, used = 0;
    char *out = malloc(cap);
    for (size_t i = 0; i < n; i++) {
        int k = qlm_token_to_piece(v, ids[i], out + used, cap - used, false);
        if (k < 0) abort();
        if ((size_t)k <= cap - used) used += (size_t)k;
    }
    if (v == bpe && !special && !(mode & 4) && plain_utf8(data + 1, len) && (used != len || memcmp(out, text, len)))
        abort();
    free(out);
    free(ids);
    return 0;
}
