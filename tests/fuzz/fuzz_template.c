/* fuzz_template.c - libFuzzer target: any bytes as a chat template, parsed
 * and rendered with a small conversation.  Errors are fine; crashes, hangs
 * and multi-line messages are not. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    qlm_tmpl *t = NULL;
    qlm_err err = {0};
    if (qlm_tmpl_parse((const char *)data, size, &t, &err) != QLM_OK) {
        if (!err.msg[0] || strchr(err.msg, '\n')) abort();
        return 0;
    }
    const qlm_chat_msg msgs[] = {
        {.role = "system", .content = "Be brief."},
        {.role = "user", .content = "Hi \"there\"\n\xe4\xb8\xad"},
        {.role = "assistant", .content = "Hello."},
        {.role = "user", .content = "Again?"},
    };
    const qlm_chat_opts opts = {.add_generation_prompt = true, .bos_token = "<s>", .eos_token = "</s>"};
    char *out = NULL;
    size_t n = 0;
    if (qlm_tmpl_render_chat(t, msgs, 4, &opts, &out, &n, &err) != QLM_OK && (!err.msg[0] || strchr(err.msg, '\n')))
        abort();
    free(out);
    qlm_tmpl_free(t);
    return 0;
}
