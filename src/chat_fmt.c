#include "chat_fmt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int qlm_read_file(const char *path, char **out, size_t *len, qlm_err *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return qlm_fail(err, QLM_ELOAD, "cannot read %s: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - 1 - n, f);
        if (n < cap - 1) break;
        char *nb = realloc(buf, cap *= 2);
        if (!nb) { free(buf); buf = NULL; break; }
        buf = nb;
    }
    const int bad = ferror(f);
    fclose(f);
    if (!buf) return qlm_fail(err, QLM_ERUNTIME, "out of memory reading %s", path);
    if (bad) {
        free(buf);
        return qlm_fail(err, QLM_ELOAD, "cannot read %s: I/O error", path);
    }
    buf[n] = 0;
    *out = buf;
    *len = n;
    return QLM_OK;
}

int qlm_chat_fmt_init(qlm_chat_fmt *f, const qlm_model *m, const char *path, qlm_err *err)
{
    *f = (qlm_chat_fmt){.m = m};
    char *src = NULL;
    size_t len = 0;
    const qlm_named_tmpl *named = path ? qlm_named_tmpl_find(path) : NULL;
    if (named) {
        if (!(src = strdup(named->source))) return qlm_fail(err, QLM_ERUNTIME, "out of memory");
        len = strlen(src);
    } else if (path) {
        int rc = qlm_read_file(path, &src, &len, err);
        if (rc) return rc;
    } else {
        gguf_str t;
        if (gguf_get_str(m->gguf, "tokenizer.chat_template", &t)) {
            src = gguf_str_dup(t);
            len = t.len;
        } else if (m->arch->chat_template) { /* the family's own turn format (Gemma) */
            src = strdup(m->arch->chat_template);
            len = src ? strlen(src) : 0;
        } else
            return qlm_fail(err, QLM_ELOAD, "the model has no chat template (pass --chat-template NAME|FILE; "
                            "--chat-template list shows the names)");
        if (!src) return qlm_fail(err, QLM_ERUNTIME, "out of memory");
    }
    int rc = qlm_tmpl_parse(src, len, &f->tmpl, err);
    free(src);
    return rc;
}

void qlm_chat_fmt_free(qlm_chat_fmt *f)
{
    qlm_tmpl_free(f->tmpl);
    f->tmpl = NULL;
}

int qlm_chat_fmt_render(const qlm_chat_fmt *f, const qlm_chat_msg *msgs, size_t n, bool add_gen, char **text,
                        size_t *len, qlm_err *err)
{
    const qlm_vocab *v = f->m->vocab;
    const int32_t bos = qlm_vocab_bos(v), eos = qlm_vocab_eos(v);
    qlm_chat_opts co = {.add_generation_prompt = add_gen, .bos_token = bos >= 0 ? qlm_vocab_text(v, bos) : NULL,
                        .eos_token = eos >= 0 ? qlm_vocab_text(v, eos) : NULL};
    return qlm_tmpl_render_chat(f->tmpl, msgs, n, &co, text, len, err);
}

int qlm_chat_fmt_tokens(const qlm_chat_fmt *f, const qlm_chat_msg *msgs, size_t n, bool add_gen,
                        int32_t **ids, size_t *n_ids, qlm_err *err)
{
    const qlm_vocab *v = f->m->vocab;
    const int32_t bos = qlm_vocab_bos(v);
    const char *bt = bos >= 0 ? qlm_vocab_text(v, bos) : NULL;
    char *text = NULL;
    size_t len = 0;
    int rc = qlm_chat_fmt_render(f, msgs, n, add_gen, &text, &len, err);
    if (rc) return rc;
    bool add_bos = qlm_vocab_add_bos(v);
    if (add_bos && bt && *bt && !strncmp(text, bt, strlen(bt))) add_bos = false;
    rc = qlm_tokenize(v, text, len, add_bos, true, ids, n_ids, err);
    free(text);
    return rc;
}
