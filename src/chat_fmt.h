/* chat_fmt.h - a conversation to prompt tokens through a chat template.
 *
 * Shared by qlm chat (the whole conversation re-rendered each turn) and
 * qlm batch ("messages" lines): the template comes from the GGUF's
 * tokenizer.chat_template or a file, and a rendered prompt that already
 * starts with BOS text gets no second BOS. */
#ifndef QLM_CHAT_FMT_H
#define QLM_CHAT_FMT_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "template.h"

/* A chat template built into qlm (tmpl_named.c). */
typedef struct qlm_named_tmpl {
    const char *name, *about, *source;
} qlm_named_tmpl;

/* The built-in template called name, or NULL. */
const qlm_named_tmpl *qlm_named_tmpl_find(const char *name);
/* All of them (*n of them), in the order --chat-template list shows. */
const qlm_named_tmpl *qlm_named_tmpl_all(size_t *n);

typedef struct qlm_chat_fmt {
    const qlm_model *m;
    qlm_tmpl *tmpl;
} qlm_chat_fmt;

/* Parses the template given by --chat-template: a built-in's name, else a
 * file; or the model's own when name_or_path is NULL (QLM_ELOAD if it has
 * none).  A name wins over a file of that name in the current directory
 * (write ./NAME for the file). */
int qlm_chat_fmt_init(qlm_chat_fmt *f, const qlm_model *m, const char *name_or_path, qlm_err *err);
void qlm_chat_fmt_free(qlm_chat_fmt *f);

/* Renders msgs[0..n) (with the assistant's opening when add_gen), with
 * the model's BOS and EOS texts as bos_token and eos_token.  *text is
 * malloc'd. */
int qlm_chat_fmt_render(const qlm_chat_fmt *f, const qlm_chat_msg *msgs, size_t n, bool add_gen, char **text,
                        size_t *len, qlm_err *err);

/* Renders msgs[0..n) and tokenizes the text, control tokens included.
 * *ids is malloc'd. */
int qlm_chat_fmt_tokens(const qlm_chat_fmt *f, const qlm_chat_msg *msgs, size_t n, bool add_gen,
                        int32_t **ids, size_t *n_ids, qlm_err *err);

/* Reads a whole file into a malloc'd NUL-terminated buffer. */
int qlm_read_file(const char *path, char **out, size_t *len, qlm_err *err);

#endif
