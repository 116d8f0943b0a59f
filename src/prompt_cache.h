/* prompt_cache.h - the KV of a prompt saved to disk and loaded again, so
 * that a later run whose prompt starts the same way skips that prefill
 * (`qlm run --prompt-cache FILE`).
 *
 * A file is trusted only when all of it checks out: its magic and size,
 * an XXH3 checksum over every byte, the model's identity (gguf id), the
 * KV element types and shapes.  Its tokens are kept in blocks of
 * QLM_PC_BLOCK, each identified by an XXH3 chained from the model's
 * identity through the blocks before it, so equal hashes mean an equal
 * prefix for the same model. */
#ifndef QLM_PROMPT_CACHE_H
#define QLM_PROMPT_CACHE_H

#include <stdint.h>

#include "err.h"
#include "model.h"

#define QLM_PC_BLOCK 32

/* Chained block hashes of toks[0..n): hashes[i] covers blocks 0..i
 * (ceil(n / QLM_PC_BLOCK) of them), seeded by the model identity and the
 * KV types. */
void qlm_pc_block_hashes(uint64_t model_id, int type_k, int type_v, const int32_t *toks, int n,
                         uint64_t *hashes);

/* Writes positions [0, n) of sequence 0 (tokens, K and V as stored) to
 * path, through a temporary file renamed into place.  QLM_ERUNTIME if
 * sequence 0 does not hold all of them or the file cannot be written. */
int qlm_prompt_cache_save(qlm_ctx *c, const qlm_model *m, const char *path, int n, qlm_err *err);

/* Reads path and, if it is a valid cache for this model and KV types,
 * replaces sequence 0 with the part of it that is a prefix of
 * prompt[0..n_prompt), setting *n_loaded.  Any problem with the file
 * (missing, truncated, corrupted, another model, other KV types) is
 * QLM_ELOAD with the reason and leaves the cache untouched. */
int qlm_prompt_cache_load(qlm_ctx *c, const qlm_model *m, const char *path, const int32_t *prompt,
                          int n_prompt, int *n_loaded, qlm_err *err);

#endif
