/* arch.c - the model families qlm runs, one row each.  A family whose math
 * is shared with llama differs only in this row's flags; forward() in
 * decode.c reads them.  Sizes, RoPE bases, windows and caps come from the
 * GGUF metadata (model.c), not from here. */
#include <string.h>

#include "model.h"

/* Gemma's turn format, for GGUFs converted without a template (the
 * Gemma 3 270M files are): a system message opens the first user turn,
 * the assistant's role is "model", turns must alternate. */
static const char gemma_template[] =
    "{{ bos_token }}"
    "{%- if messages[0]['role'] == 'system' -%}"
    "{%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}"
    "{%- set loop_messages = messages[1:] -%}"
    "{%- else -%}"
    "{%- set first_user_prefix = '' -%}"
    "{%- set loop_messages = messages -%}"
    "{%- endif -%}"
    "{%- for message in loop_messages -%}"
    "{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{%- endif -%}"
    "{{ '<start_of_turn>' + ('model' if message['role'] == 'assistant' else message['role']) + '\\n'"
    " + (first_user_prefix if loop.first else '') }}"
    "{{- message['content'] | trim }}"
    "{{- '<end_of_turn>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{ '<start_of_turn>model\\n' }}"
    "{%- endif -%}";

static const qlm_arch archs[] = {
    /* Also Mistral: a sliding window, when the file gives one, applies to
     * every layer (llama.cpp's llama ignores it; see README). */
    {.name = "llama", .act = QLM_ACT_SILU, .swa = QLM_SWA_ALL},
    /* Qwen2/2.5 and the DeepSeek-R1 Qwen distills: llama with Q/K/V
     * biases and NEOX-style RoPE. */
    {.name = "qwen2", .rope_neox = true, .qkv_bias = true, .act = QLM_ACT_SILU},
    /* Gemma 3: scaled embeddings, QK-norm, sandwich norms, GeGLU, five
     * sliding-window layers to each global one.  Gemma's RMSNorm multiplies
     * by (1 + w); llama.cpp's converter stores 1 + w in the GGUF, so the
     * norm itself is the plain one. */
    {.name = "gemma3", .rope_neox = true, .qk_norm = true, .post_norms = true, .embd_scale = true,
     .scale_q = true, .logit_cap = true, .act = QLM_ACT_GELU, .swa = QLM_SWA_PERIOD, .swa_period = 6,
     .chat_template = gemma_template},
    /* Phi-3: fused QKV (any family may fuse it; model.c splits it) and
     * fused gate/up, Q scaled before attention, longrope factors.  Its
     * sliding window is ignored, as llama.cpp does. */
    {.name = "phi3", .rope_neox = true, .scale_q = true, .act = QLM_ACT_SILU, .fused_up = true},
};

const qlm_arch *qlm_arch_find(const char *name)
{
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (!strcmp(archs[i].name, name)) return &archs[i];
    return NULL;
}

const char *qlm_arch_list(void)
{
    return "llama, qwen2, gemma3, phi3";
}
