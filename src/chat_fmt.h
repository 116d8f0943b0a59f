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

typedef struct qlm_chat_fmt {
    const qlm_model *m;
    qlm_tmpl *tmpl;
} qlm_chat_fmt;

/* Parses the template in file path, or the model's own when path is NULL
 * (QLM_ELOAD if it has none). */
int qlm_chat_fmt_init(qlm_chat_fmt *f, const qlm_model *m, const char *path, qlm_err *err);
void qlm_chat_fmt_free(qlm_chat_fmt *f);

/* Renders msgs[0..n) (with the assistant's opening when add_gen) and
 * tokenizes the text, control tokens included.  *ids is malloc'd. */
int qlm_chat_fmt_tokens(const qlm_chat_fmt *f, const qlm_chat_msg *msgs, size_t n, bool add_gen,
                        int32_t **ids, size_t *n_ids, qlm_err *err);

/* Reads a whole file into a malloc'd NUL-terminated buffer. */
int qlm_read_file(const char *path, char **out, size_t *len, qlm_err *err);

#endif
