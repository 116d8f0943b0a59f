/* tok_internal.h - what tokenizer.c, tok_spm.c and tok_bpe.c share.
 * Private to those files (and white-box tests). */
#ifndef QLM_TOK_INTERNAL_H
#define QLM_TOK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

enum { QLM_TOK_SPM = 1, QLM_TOK_BPE = 2 };

/* Token attributes.  Bits, because the loader adds some (a text that
 * looks like an end-of-turn marker becomes CONTROL while staying
 * USER_DEFINED) and each consumer tests the combination it cares about. */
enum {
    QLM_ATTR_UNDEFINED = 0,
    QLM_ATTR_UNKNOWN = 1 << 0,
    QLM_ATTR_UNUSED = 1 << 1,
    QLM_ATTR_NORMAL = 1 << 2,
    QLM_ATTR_CONTROL = 1 << 3,
    QLM_ATTR_USER_DEFINED = 1 << 4,
    QLM_ATTR_BYTE = 1 << 5,
    QLM_ATTR_LSTRIP = 1 << 7, /* eat whitespace before the special text */
    QLM_ATTR_RSTRIP = 1 << 8, /* eat whitespace after it */
};

/* Pre-tokenizer families: each is one chain of splitting steps. */
typedef enum qlm_pre_kind {
    QLM_PRE_DEFAULT,
    QLM_PRE_GPT2,
    QLM_PRE_LLAMA3,
    QLM_PRE_QWEN2,
    QLM_PRE_STARCODER,
    QLM_PRE_FALCON,
    QLM_PRE_DEEPSEEK_LLM,
    QLM_PRE_DEEPSEEK_CODER,
} qlm_pre_kind;

/* Strings stored back to back, each NUL-terminated; string i is
 * buf + off[i], len[i] bytes. */
typedef struct qlm_strtab {
    char *buf;
    uint64_t *off;
    uint32_t *len;
    size_t n;
} qlm_strtab;

/* Open-addressing hash map from the strings of a qlm_strtab to their
 * index.  Lookups take the key in pieces, so callers can ask for "a b"
 * without building it. */
typedef struct qlm_strmap {
    int32_t *slot;    /* string index, -1 = empty */
    uint32_t *hash;   /* low 32 bits of the key's hash, per slot */
    size_t mask;      /* capacity - 1 (a power of two) */
    const qlm_strtab *keys;
} qlm_strmap;

int qlm_strmap_init(qlm_strmap *m, const qlm_strtab *keys, size_t n_expected);
void qlm_strmap_free(qlm_strmap *m);
/* Index of the key parts[0..np) concatenated, or -1. */
int32_t qlm_strmap_find(const qlm_strmap *m, const char *const *parts,
                        const size_t *lens, int np);
/* Inserts string index i; returns -1 when added, else the index already
 * holding the same text (nothing changes then). */
int32_t qlm_strmap_add(qlm_strmap *m, int32_t i);

struct qlm_vocab {
    int type;              /* QLM_TOK_SPM or QLM_TOK_BPE */
    qlm_pre_kind pre;
    bool ignore_merges;    /* BPE: a word that is a token is taken whole */
    bool add_bos, add_eos;
    bool add_space_prefix; /* SPM */

    int32_t n_tokens;
    qlm_strtab text;
    float *score;
    uint16_t *attr;
    uint8_t *eog;          /* per token: ends generation */
    qlm_strmap tok_map;

    qlm_strtab merges;     /* BPE: "left right", rank = index */
    qlm_strmap merge_map;

    int32_t bos, eos, unk, pad, eot, eom;

    /* Ids split out of the text before tokenizing (control, user-defined,
     * unknown), longest text first. */
    int32_t *special;
    size_t n_special;

    /* SPM byte fallback: token for each byte value, -1 if none. */
    int32_t byte_token[256];
};

/* Growable id list. */
typedef struct qlm_ids {
    int32_t *v;
    size_t n, cap;
} qlm_ids;

int qlm_ids_push(qlm_ids *ids, int32_t id); /* 0, or -1 on out of memory */

static inline const char *qlm_tok_text(const qlm_vocab *v, int32_t id, size_t *len)
{
    *len = v->text.len[id];
    return v->text.buf + v->text.off[id];
}

/* Id of the token with text s[0..n), or -1. */
int32_t qlm_tok_lookup(const qlm_vocab *v, const char *s, size_t n);

/* SentencePiece-style merge of one fragment, already space-escaped
 * (U+2581 for ' ').  0, or -1 on out of memory. */
int qlm_spm_tokenize(const qlm_vocab *v, const char *text, size_t len, qlm_ids *out);

/* Byte-level BPE of one fragment: pre-tokenize, byte-encode, merge.
 * 0, or -1 on out of memory. */
int qlm_bpe_tokenize(const qlm_vocab *v, const char *text, size_t len, qlm_ids *out);

/* Pre-tokenizer named by tokenizer.ggml.pre: false if unknown. */
bool qlm_bpe_pre_lookup(const char *name, qlm_pre_kind *kind, bool *ignore_merges,
                        bool *add_bos);

/* Splits cps[0..n) into words for kind; *lens (malloc'd) gets the word
 * lengths in code points.  0, or -1 on out of memory. */
int qlm_pre_split(qlm_pre_kind kind, const uint32_t *cps, size_t n,
                  size_t **lens, size_t *n_lens);

/* GPT-2's reversible byte <-> printable code point mapping. */
uint32_t qlm_bpe_byte_to_cp(uint8_t b);
int qlm_bpe_cp_to_byte(uint32_t cp); /* -1 if cp stands for no byte */

#endif
