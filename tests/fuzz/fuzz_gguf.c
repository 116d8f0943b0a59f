/* fuzz_gguf.c - libFuzzer target: any bytes through the GGUF reader, and
 * through the vocabulary loader and tokenizer when they parse, since
 * tokenizer metadata comes from the same untrusted file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/gguf.h"
#include "src/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gguf_ctx *g = NULL;
    qlm_err err = {0};
    if (gguf_open_mem(&g, data, size, &err) != QLM_OK) {
        /* the contract: a one-line message */
        if (!err.msg[0] || strchr(err.msg, '\n')) abort();
        return 0;
    }
    for (uint64_t i = 0; i < g->n_kv; i++) (void)gguf_find(g, g->kv[i].key.ptr ? "general.name" : "");
    uint32_t u;
    (void)gguf_get_u32(g, "llama.block_count", &u);
    qlm_vocab *v = NULL;
    if (qlm_vocab_load(&v, g, &err) == QLM_OK) {
        int32_t *ids = NULL;
        size_t n = 0;
        static const char text[] = "Hello <|im_start|> world\n\t 123 \xe4\xb8\xad\xff";
        if (qlm_tokenize(v, text, sizeof text - 1, true, true, &ids, &n, &err) == QLM_OK) {
            char buf[64];
            for (size_t i = 0; i < n; i++) qlm_token_to_piece(v, ids[i], buf, sizeof buf, true);
        }
        free(ids);
        qlm_vocab_free(v);
    }
    gguf_close(g);
    return 0;
}
