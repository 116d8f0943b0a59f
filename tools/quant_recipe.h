/* quant_recipe.h - which type each tensor of a model gets when it is
 * quantized to a llama.cpp file type (Q4_K_M etc.).
 *
 * The choices follow llama.cpp's llama-quant.cpp (llama_tensor_get_type and
 * its shape fallback) so that `qlm quantize` and `llama-quantize` produce
 * the same tensor types, and therefore, with the same reference
 * quantizers, the same bytes.  No importance matrix is involved. */
#ifndef QLM_QUANT_RECIPE_H
#define QLM_QUANT_RECIPE_H

#include <stdbool.h>
#include <stdint.h>

#include "quant/types.h"

typedef struct qr_ftype {
    const char *name;  /* as llama-quantize spells it: "Q4_K_M" */
    int ftype;         /* llama.h's LLAMA_FTYPE_*: goes into general.file_type */
    qt_type base;      /* the type most weight tensors get */
} qr_ftype;

/* Case-insensitive, with llama-quantize's aliases (Q4_K = Q4_K_M); NULL if
 * the name is not a supported file type. */
const qr_ftype *qr_find(const char *name);
/* Supported names, comma-separated, for error messages and --help. */
const char *qr_names(void);

/* What the rules look at besides the tensor itself. */
typedef struct qr_model {
    int n_layer;        /* {arch}.block_count */
    int n_head, n_head_kv;
    int n_expert;       /* {arch}.expert_count, 0 if absent */
    bool falcon;        /* llama.cpp special-cases this architecture */
    bool is_70b;        /* llama.cpp's LLM_TYPE_70B: gets more bits in attn_v */
} qr_model;

typedef struct qr_tensor {
    const char *name;   /* NUL-terminated */
    int64_t ne[4];      /* unused dims = 1 */
    uint32_t type;      /* current type */
    uint32_t new_type;  /* out: the type to write */
    bool fallback;      /* out: row length forced a type other than the rule's */
} qr_tensor;

/* Fills new_type for all n tensors.  The per-layer counters llama.cpp uses
 * advance in its tensor order (by layer number, then name), not the file's,
 * so the plan needs the whole list at once.  Returns false only when out
 * of memory. */
bool qr_plan(const qr_ftype *ft, const qr_model *m, qr_tensor *t, int64_t n);

#endif
