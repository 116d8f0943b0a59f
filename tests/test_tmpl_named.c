/* test_tmpl_named.c - qlm's built-in chat templates (--chat-template NAME)
 * render the expected text.
 *
 * tests/data/named-templates.json holds two conversations (a system
 * message and two user turns with the generation prompt; one exchange
 * without it) and, for every built-in, the text each must render to,
 * written by hand from the format's token layout (and cross-checked
 * with Python's jinja2 by tools/check_named_templates.py).  Every
 * built-in must be there, and render byte for byte. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/chat_fmt.h"
#include "src/jsonl.h"
#include "tests/test.h"

#define EXPECTED "tests/data/named-templates.json"

static const char *str_or_null(const qlm_jval *v)
{
    return v && v->type == QLM_JSTR ? v->str : NULL;
}

/* Renders conversation conv (from the file) with template t. */
static int render(const qlm_tmpl *t, const qlm_jval *conv, const qlm_jval *spec, char **out, qlm_err *err)
{
    const qlm_jval *ms = qlm_json_get(conv, "messages"), *gen = qlm_json_get(conv, "add_generation_prompt");
    qlm_chat_msg msgs[8];
    size_t n = 0;
    for (size_t i = 0; ms && i < ms->n && n < 8; i++)
        msgs[n++] = (qlm_chat_msg){.role = str_or_null(qlm_json_get(&ms->items[i], "role")),
                                   .content = str_or_null(qlm_json_get(&ms->items[i], "content"))};
    const qlm_chat_opts co = {.add_generation_prompt = gen && gen->type == QLM_JBOOL && gen->b,
                              .bos_token = str_or_null(qlm_json_get(spec, "bos_token")),
                              .eos_token = str_or_null(qlm_json_get(spec, "eos_token"))};
    return qlm_tmpl_render_chat(t, msgs, n, &co, out, NULL, err);
}

int main(void)
{
    qlm_err err = {0};
    char *text = NULL;
    size_t len = 0;
    qlm_jval *doc = NULL;
    TEST_BEGIN("named_templates_expected_file");
    CHECK(!qlm_read_file(EXPECTED, &text, &len, &err) && !qlm_json_parse(text, len, &doc, &err),
          "cannot read " EXPECTED ": %s", err.msg);
    TEST_END();
    free(text);
    if (!doc) TEST_EXIT();
    const qlm_jval *convs = qlm_json_get(doc, "conversations"), *specs = qlm_json_get(doc, "templates");
    size_t n;
    const qlm_named_tmpl *all = qlm_named_tmpl_all(&n);
    for (size_t i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "named_template_%s", all[i].name);
        TEST_BEGIN(name);
        CHECK(qlm_named_tmpl_find(all[i].name) == &all[i], "not found by its name");
        const qlm_jval *spec = qlm_json_get(specs, all[i].name);
        qlm_tmpl *t = NULL;
        CHECK(spec, "no expected renders in " EXPECTED);
        CHECK(!qlm_tmpl_parse(all[i].source, strlen(all[i].source), &t, &err), "does not parse: %s", err.msg);
        for (size_t c = 0; spec && t && convs && c < convs->n; c++) {
            const char *key = convs->keys[c], *want = str_or_null(qlm_json_get(spec, key));
            char *got = NULL;
            CHECK(want, "no expected render of conversation %s", key);
            if (!want) continue;
            CHECK(!render(t, &convs->items[c], spec, &got, &err), "conversation %s: %s", key, err.msg);
            CHECK(got && !strcmp(got, want), "conversation %s renders\n%s\nwant\n%s", key, got ? got : "", want);
            free(got);
        }
        qlm_tmpl_free(t);
        TEST_END();
    }
    TEST_BEGIN("named_templates_unknown_name");
    CHECK(!qlm_named_tmpl_find("no-such-template") && !qlm_named_tmpl_find(""), "an unknown name was found");
    TEST_END();
    qlm_jval_free(doc);
    TEST_EXIT();
}
