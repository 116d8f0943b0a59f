/* draft_compat.c - may this draft model propose tokens to that target?
 *
 * Drafts travel as token ids, so an id must mean the same text in both
 * vocabularies.  Comparing sizes is not enough (two tokenizers of equal
 * size can disagree everywhere) and too strict (converters pad a
 * vocabulary to a multiple of 64 or 128 with unused tokens), so the check
 * is on the texts themselves: same tokenizer family, same special tokens,
 * identical texts over the shared id range, and only padding beyond it.
 * It reads the tokenizer's internals, which are the facts being compared. */
#include <stdio.h>
#include <string.h>

#include "spec.h"
#include "tok_internal.h"

/* Padding as converters write it: type UNUSED, or "[PAD123]" text. */
static bool is_padding(const qlm_vocab *v, int32_t id)
{
    if (v->attr[id] & QLM_ATTR_UNUSED) return true;
    const char *t = qlm_vocab_text(v, id);
    unsigned n;
    char close;
    return sscanf(t, "[PAD%u%c", &n, &close) == 2 && close == ']';
}

/* A token's text for an error message: quoted, control bytes escaped,
 * cut short when long. */
static void show(char *buf, size_t cap, const char *t)
{
    size_t o = 0;
    buf[o++] = '"';
    for (; *t && o + 8 < cap; t++) {
        const unsigned char ch = (unsigned char)*t;
        if (ch < 0x20 || ch == '"' || ch == '\\') o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", ch);
        else buf[o++] = (char)ch;
    }
    if (*t) { memcpy(buf + o, "...", 3); o += 3; }
    buf[o++] = '"';
    buf[o] = 0;
}

static const char *family(const qlm_vocab *v) { return v->type == QLM_TOK_SPM ? "llama (SentencePiece)" : "gpt2 (BPE)"; }

int qlm_draft_compat(const qlm_model *target, const qlm_model *draft, int *n_shared, qlm_err *err)
{
    const qlm_vocab *t = target->vocab, *d = draft->vocab;
    *n_shared = 0;
    if (t->type != d->type)
        return qlm_fail(err, QLM_ELOAD, "draft model %s does not fit target %s: tokenizer %s vs %s",
                        draft->name, target->name, family(d), family(t));
    const struct { const char *name; int32_t a, b; } sp[] = {
        {"bos", t->bos, d->bos}, {"eos", t->eos, d->eos}, {"eot", t->eot, d->eot}, {"eom", t->eom, d->eom},
    };
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++)
        if (sp[i].a != sp[i].b)
            return qlm_fail(err, QLM_ELOAD, "draft model %s does not fit target %s: %s token is id %d in the "
                            "target but %d in the draft", draft->name, target->name, sp[i].name, sp[i].a, sp[i].b);
    const int32_t nt = t->n_tokens, nd = d->n_tokens, n = nt < nd ? nt : nd;
    char a[96], b[96];
    for (int32_t id = 0; id < n; id++) {
        const char *x = qlm_vocab_text(t, id), *y = qlm_vocab_text(d, id);
        if (strcmp(x, y)) {
            show(a, sizeof a, x);
            show(b, sizeof b, y);
            return qlm_fail(err, QLM_ELOAD, "draft model %s does not fit target %s: token id %d is %s in the "
                            "target but %s in the draft", draft->name, target->name, id, a, b);
        }
    }
    const qlm_vocab *big = nt > nd ? t : d;
    for (int32_t id = n; id < big->n_tokens; id++)
        if (!is_padding(big, id)) {
            show(a, sizeof a, qlm_vocab_text(big, id));
            return qlm_fail(err, QLM_ELOAD, "draft model %s does not fit target %s: token id %d (%s) exists "
                            "only in the %s and is not padding", draft->name, target->name, id, a,
                            big == t ? "target" : "draft");
        }
    /* both models' output rows past their vocabularies are never proposed */
    *n_shared = n;
    return QLM_OK;
}
