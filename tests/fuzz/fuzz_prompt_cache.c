/* fuzz_prompt_cache.c - libFuzzer target: any bytes as a --prompt-cache
 * file, loaded into a tiny model's cache and then decoded from.
 *
 * The file is checksummed and names the model it was made with, so random
 * bytes would never get past those two checks.  The input's first byte is
 * therefore not file content but flags for the harness: bit 0 writes this
 * model's identity into the header, bit 1 recomputes the checksum over the
 * rest, so mutations reach the parser behind them.  Errors are fine (one
 * line, the cache left usable); crashes and reads out of bounds are not. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xxhash.h>

#include "src/model.h"
#include "src/prompt_cache.h"
#include "tests/tiny_model.h"

static qlm_model *model;
static qlm_ctx *ctx;
static int fd = -1;
static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char mpath[] = "/tmp/qlm-fuzz-pc-XXXXXX";
    int mfd = mkstemp(mpath);
    tiny_cfg cfg = tiny_default();
    cfg.wtype = QT_Q8_0;
    qlm_err err = {0};
    qlm_ctx_params cp = {.n_ctx = 96, .n_threads = 1};
    if (mfd < 0 || tiny_write(mpath, &cfg) || qlm_model_load(&model, mpath, &err) ||
        qlm_ctx_new(&ctx, model, &cp, &err)) {
        fprintf(stderr, "fuzz_prompt_cache: setup failed: %s\n", err.msg);
        exit(1);
    }
    close(mfd);
    unlink(mpath); /* mapped already */
    fd = memfd_create("qlm-pc", 0);
    if (fd < 0) exit(1);
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const uint8_t flags = data[0];
    size_t n = size - 1;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) return 0;
    memcpy(buf, data + 1, n);
    if ((flags & 1) && n >= 16) memcpy(buf + 8, &model->gguf->id, 8);
    if ((flags & 2) && n >= 8) {
        const uint64_t sum = XXH3_64bits(buf, n - 8);
        memcpy(buf + n - 8, &sum, 8);
    }
    if (ftruncate(fd, 0) || pwrite(fd, buf, n, 0) != (ssize_t)n) abort();
    free(buf);

    int32_t prompt[48];
    for (int i = 0; i < 48; i++) prompt[i] = (i * 37 + 5) % TINY_VOCAB;
    int n_loaded = -1;
    qlm_err err = {0};
    const int rc = qlm_prompt_cache_load(ctx, model, path, prompt, 48, &n_loaded, &err);
    if (rc && (!err.msg[0] || strchr(err.msg, '\n'))) abort();
    if (!rc && (n_loaded < 0 || n_loaded > 48)) abort();
    /* whatever was loaded must be safe to attend over */
    if (!rc && n_loaded < 48) {
        qlm_batch b;
        if (!qlm_batch_init(&b, 1)) {
            qlm_batch_add(&b, prompt[n_loaded], n_loaded, 0, true);
            if (qlm_decode(ctx, &b, &err) == 0 && !qlm_logits(ctx, 0)) abort();
            qlm_batch_free(&b);
        }
    }
    qlm_kv_clear(qlm_ctx_kv(ctx));
    return 0;
}
