/* tokenizer.h - text <-> token ids from a GGUF's tokenizer.ggml.* metadata.
 *
 * Two families: SentencePiece-style (tokenizer.ggml.model = "llama") and
 * byte-level BPE ("gpt2") with the pre-tokenizer named by
 * tokenizer.ggml.pre.  Works on vocab-only GGUF files. */
#ifndef QLM_TOKENIZER_H
#define QLM_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "gguf.h"

typedef struct qlm_vocab qlm_vocab;

/* Builds the vocabulary from ctx (which may be closed afterwards: the
 * vocab copies what it keeps). QLM_ELOAD on missing/malformed metadata or
 * an unsupported tokenizer model / pre-tokenizer (named in the message). */
int qlm_vocab_load(qlm_vocab **out, const gguf_ctx *ctx, qlm_err *err);
void qlm_vocab_free(qlm_vocab *v);

int32_t qlm_vocab_size(const qlm_vocab *v);
int32_t qlm_vocab_bos(const qlm_vocab *v);   /* -1 if none */
int32_t qlm_vocab_eos(const qlm_vocab *v);   /* -1 if none */
bool qlm_vocab_add_bos(const qlm_vocab *v);  /* tokenizer.ggml.add_bos_token or family default */
bool qlm_vocab_add_eos(const qlm_vocab *v);
/* End of generation: eos, eot, eom and other end-of-turn control tokens. */
bool qlm_vocab_is_eog(const qlm_vocab *v, int32_t id);
/* Control/special token (never produced by plain text without parse_special). */
bool qlm_vocab_is_control(const qlm_vocab *v, int32_t id);
/* Id of the token whose text is exactly s, or -1. */
int32_t qlm_vocab_find(const qlm_vocab *v, const char *s);

/* Tokenizes len bytes of text (need not be valid UTF-8, need not be
 * NUL-terminated).  add_special: prepend BOS / append EOS as the vocab's
 * flags say.  parse_special: text of control tokens ("<|im_start|>") maps
 * to those tokens; otherwise it is tokenized as plain text (user-defined
 * tokens, like Hugging Face's added tokens, are matched either way).
 * *ids is malloc'd (caller frees), non-NULL on success even when *n_ids
 * is 0.  Malformed UTF-8 is not an error. */
int qlm_tokenize(const qlm_vocab *v, const char *text, size_t len,
                 bool add_special, bool parse_special,
                 int32_t **ids, size_t *n_ids, qlm_err *err);

/* The bytes token id stands for (byte-level BPE decoded, SentencePiece
 * "▁" turned to spaces, <0xNN> to the byte).  Control tokens (and the
 * unknown token) give their text only when render_special is true, else
 * nothing.  Writes up to cap bytes and returns the full length (like
 * snprintf, but no NUL); returns -1 for an out-of-range id. */
int qlm_token_to_piece(const qlm_vocab *v, int32_t id, char *buf, size_t cap,
                       bool render_special);

/* Raw vocabulary text of id (as stored in the GGUF), NUL-terminated. */
const char *qlm_vocab_text(const qlm_vocab *v, int32_t id);

#endif
