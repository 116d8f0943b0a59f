/* fuzz_tokenizer.c - libFuzzer target: arbitrary bytes through a byte-level
 * BPE (SmolLM2) and a SentencePiece (llama) vocabulary, with and without
 * special-token parsing.  Byte-level BPE must round-trip plain ASCII
 * exactly when special text is taken literally. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/gguf.h"
#include "src/tokenizer.h"

static qlm_vocab *bpe, *spm;

/* Plain ASCII text (printable, tab, newline, return).  Beyond it the
 * byte-level tokenizer is not an exact inverse even in llama.cpp, which
 * qlm matches id for id: SmolLM2's vocabulary loses control bytes and
 * some bytes of rare 4-byte sequences.  Everything else must only not
 * crash. */
static bool plain_ascii(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] >= 0x7f || (s[i] < 0x20 && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')) return false;
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
    if (v == bpe && !special && !(mode & 4) && plain_ascii(data + 1, len) && (used != len || memcmp(out, text, len)))
        abort();
    free(out);
    free(ids);
    return 0;
}
