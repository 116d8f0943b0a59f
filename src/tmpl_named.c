/* tmpl_named.c - chat templates built into qlm, chosen by name with
 * --chat-template NAME: for GGUFs converted without a template, or with
 * one that is wrong.
 *
 * Each is a Jinja source written for qlm's engine from its family's
 * documented turn layout (the token strings and where the newlines go);
 * they render through the same engine as a GGUF's own template, so a
 * name is only a shorthand for a file.  Where a family's reference
 * template has a quirk that changes the text the model saw in training,
 * it is kept (Phi-3 ends a conversation without a generation prompt with
 * the eos token); what such templates do for tools is left out: these
 * render plain conversations.  tests/test_tmpl_named.c checks each one
 * against hand-written expected text, tools/check_named_templates.py
 * against Python's jinja2 and the reference templates. */
#include <stddef.h>
#include <string.h>

#include "chat_fmt.h"

/* ChatML (Qwen, Hermes, SmolLM2 ...): every message in an
 * <|im_start|>ROLE ... <|im_end|> block. */
static const char chatml[] =
    "{%- for m in messages -%}"
    "{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}";

/* Llama 2 chat: each exchange is BOS [INST] user [/INST] reply EOS, the
 * system message inside the first [INST] between <<SYS>> markers; the
 * model's turn opens by itself after [/INST]. */
static const char llama2[] =
    "{%- if messages and messages[0].role == 'system' -%}"
    "{%- set sys = '<<SYS>>\\n' + messages[0].content | trim + '\\n<</SYS>>\\n\\n' -%}"
    "{%- set turns = messages[1:] -%}"
    "{%- else -%}{%- set sys = '' -%}{%- set turns = messages -%}{%- endif -%}"
    "{%- for m in turns -%}"
    "{%- if m.role == 'user' -%}"
    "{{- bos_token + '[INST] ' + (sys if loop.first else '') + m.content | trim + ' [/INST]' -}}"
    "{%- elif m.role == 'assistant' -%}"
    "{{- ' ' + m.content | trim + ' ' + eos_token -}}"
    "{%- endif -%}"
    "{%- endfor -%}";

/* Llama 3: a header per message, the content trimmed, <|eot_id|> after. */
static const char llama3[] =
    "{{- bos_token -}}"
    "{%- for m in messages -%}"
    "{{- '<|start_header_id|>' + m.role + '<|end_header_id|>\\n\\n' + m.content | trim + '<|eot_id|>' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}"
    "{%- endif -%}";

/* Mistral (the v3 "tekken" layout of Mistral Nemo and later): no spaces
 * around [INST]; the system message goes in front of the LAST user
 * message, where the model reads it just before answering. */
static const char mistral[] =
    "{%- if messages and messages[0].role == 'system' -%}"
    "{%- set sys = messages[0].content + '\\n\\n' -%}{%- set turns = messages[1:] -%}"
    "{%- else -%}{%- set sys = '' -%}{%- set turns = messages -%}{%- endif -%}"
    "{%- set ns = namespace(last=-1) -%}"
    "{%- for m in turns -%}{%- if m.role == 'user' -%}{%- set ns.last = loop.index0 -%}{%- endif -%}{%- endfor -%}"
    "{{- bos_token -}}"
    "{%- for m in turns -%}"
    "{%- if m.role == 'user' -%}"
    "{{- '[INST]' + (sys if loop.index0 == ns.last else '') + m.content + '[/INST]' -}}"
    "{%- elif m.role == 'assistant' -%}"
    "{{- m.content + eos_token -}}"
    "{%- endif -%}"
    "{%- endfor -%}";

/* Gemma: <start_of_turn>user / model, content trimmed; Gemma has no
 * system role, so a system message opens the first turn (as Gemma 3's
 * template does). */
static const char gemma[] =
    "{{- bos_token -}}"
    "{%- if messages and messages[0].role == 'system' -%}"
    "{%- set sys = messages[0].content + '\\n\\n' -%}{%- set turns = messages[1:] -%}"
    "{%- else -%}{%- set sys = '' -%}{%- set turns = messages -%}{%- endif -%}"
    "{%- for m in turns -%}"
    "{{- '<start_of_turn>' + ('model' if m.role == 'assistant' else m.role) + '\\n'"
    " + (sys if loop.first else '') + m.content | trim + '<end_of_turn>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<start_of_turn>model\\n' -}}{%- endif -%}";

/* Phi-3 / 3.5: <|role|> on its own line, <|end|> after each message; an
 * empty system message is left out. */
static const char phi3[] =
    "{%- for m in messages -%}"
    "{%- if m.role in ['user', 'assistant'] or (m.role == 'system' and m.content) -%}"
    "{{- '<|' + m.role + '|>\\n' + m.content + '<|end|>\\n' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|assistant|>\\n' -}}{%- else -%}{{- eos_token -}}{%- endif -%}";

/* Zephyr: <|role|> on its own line, the eos token ends each message. */
static const char zephyr[] =
    "{%- for m in messages -%}"
    "{{- '<|' + m.role + '|>\\n' + m.content + eos_token + '\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|assistant|>\\n' -}}{%- endif -%}";

/* DeepSeek-R1 (and its Qwen/Llama distills): the system text right after
 * BOS, then <｜User｜> / <｜Assistant｜> markers; earlier replies lose
 * their reasoning (up to </think>), and the model's turn opens with
 * <think>. */
static const char deepseek[] =
    "{%- set ns = namespace(sys='') -%}"
    "{%- for m in messages -%}{%- if m.role == 'system' -%}{%- set ns.sys = m.content -%}{%- endif -%}{%- endfor -%}"
    "{{- bos_token + ns.sys -}}"
    "{%- for m in messages -%}"
    "{%- if m.role == 'user' -%}"
    "{{- '<｜User｜>' + m.content -}}"
    "{%- elif m.role == 'assistant' -%}"
    "{{- '<｜Assistant｜>' + m.content.split('</think>')[-1] + '<｜end▁of▁sentence｜>' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<｜Assistant｜><think>\\n' -}}{%- endif -%}";

static const qlm_named_tmpl named[] = {
    {"chatml", "<|im_start|>role ... <|im_end|> (Qwen, Hermes, SmolLM2, ...)", chatml},
    {"llama2", "[INST] <<SYS>> ... <</SYS>> ... [/INST] (Llama 2 chat)", llama2},
    {"llama3", "<|start_header_id|>role<|end_header_id|> ... <|eot_id|> (Llama 3)", llama3},
    {"mistral", "[INST]...[/INST] without spaces, system before the last user turn (Mistral v3 tekken, Nemo)", mistral},
    {"gemma", "<start_of_turn>user / model ... <end_of_turn> (Gemma 2, 3)", gemma},
    {"phi3", "<|user|> ... <|end|> (Phi-3, Phi-3.5)", phi3},
    {"zephyr", "<|user|> ... </s> (Zephyr)", zephyr},
    {"deepseek", "<｜User｜> ... <｜Assistant｜> (DeepSeek-R1 and its distills)", deepseek},
};

const qlm_named_tmpl *qlm_named_tmpl_find(const char *name)
{
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (!strcmp(named[i].name, name)) return &named[i];
    return NULL;
}

const qlm_named_tmpl *qlm_named_tmpl_all(size_t *n)
{
    *n = sizeof named / sizeof named[0];
    return named;
}
