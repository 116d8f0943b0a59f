#!/usr/bin/env python3
"""Render the shared chat templates with Python's jinja2 the way Hugging Face
transformers' apply_chat_template does, and write the renders as fixtures
for tests/test_template.c.

    pip install jinja2
    python3 tools/gen_template_fixtures.py [../shared/testdata/chat-templates]

Writes, under tests/data/templates/:
    NAME.jinja             a copy of each template
    cases/NAME.N.json      the variables of one render (messages, tools, ...)
    expected/NAME.N.txt    the render, byte for byte
    expected/NAME.N.err    or, when jinja2 raises, the exception's message
    cases.txt              one "NAME N" line per case, the test's index

The environment copies transformers' (chat_template_utils.py): a sandbox
with trim_blocks=True and lstrip_blocks=True, the loopcontrols extension,
its own tojson (json.dumps with ensure_ascii=False, so no HTML escaping),
raise_exception raising TemplateError, and strftime_now -- pinned here to a
fixed date so that renders are reproducible.  Like transformers, every
render gets tools and documents (None when absent) plus the model's special
tokens, and leaves out a token the model does not have.
"""

import datetime
import json
import os
import shutil
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = datetime.datetime(2024, 7, 26, 12, 34, 56)

# Special tokens each model's tokenizer_config.json declares (None: absent).
MODELS = {
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use": ("<|begin_of_text|>", "<|im_end|>"),
    "Qwen-Qwen2.5-7B-Instruct": (None, "<|im_end|>"),
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "google-gemma-2-2b-it": ("<bos>", "<eos>"),
    "meta-llama-Llama-3.1-8B-Instruct": ("<|begin_of_text|>", "<|eot_id|>"),
    "microsoft-Phi-3.5-mini-instruct": ("<s>", "<|endoftext|>"),
    "mistralai-Mistral-Nemo-Instruct-2407": ("<s>", "</s>"),
}

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city.  ",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city, e.g. Zürich "},
                    "unit": {"type": ["string", "integer"], "enum": ["c", "f", 1],
                             "description": "Temperature unit"},
                    "days": {"type": "integer", "description": "How many days"},
                    "hourly": {"type": "array", "items": {"type": "number"},
                               "description": "Hours <to> & 'report'"},
                    "extra": {"type": "object", "additionalProperties": {"type": "boolean"},
                              "description": "Flags"},
                },
                "required": ["city"],
            },
            "return": {"type": "string", "description": "A short forecast"},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "now",
            "description": "The time now.",
            "parameters": {"type": "object", "properties": {}},
        },
    },
]

UNICODE_TEXT = ('  Héllo "wörld" — it\'s 日本語 🎉 <b>&amp;</b>\n'
                "\tsecond line with a backslash \\ and {{ braces }} {% tag %}\r\n"
                "null\x01 char, e\u0301, \u2028sep  ")


def conversations(name):
    """The cases for one template: (variables without special tokens)."""
    sys_msg = {"role": "system", "content": "You are a terse assistant."}
    u1 = {"role": "user", "content": "Hello!"}
    a1 = {"role": "assistant", "content": "Hi. How can I help?"}
    u2 = {"role": "user", "content": "What is 2+2?"}
    a2 = {"role": "assistant", "content": "4"}
    cases = [
        {"messages": [u1], "add_generation_prompt": True},
        {"messages": [u1], "add_generation_prompt": False},
        {"messages": [sys_msg, u1], "add_generation_prompt": True},
        {"messages": [u1, a1, u2], "add_generation_prompt": True},
        {"messages": [sys_msg, u1, a1, u2, a2], "add_generation_prompt": False},
        {"messages": [{"role": "system", "content": "Sys: ' \" \\ \n" + UNICODE_TEXT},
                      {"role": "user", "content": UNICODE_TEXT},
                      {"role": "assistant", "content": "<think>hmm\n</think>\n\n" + UNICODE_TEXT},
                      {"role": "user", "content": "\n\n  again  \n"}],
         "add_generation_prompt": True},
        # Roles that do not alternate: several templates refuse them.
        {"messages": [u1, u2], "add_generation_prompt": True},
    ]
    # DeepSeek's template concatenates the arguments as text; the others
    # take a dict (and turn it into JSON themselves).
    args = {"city": "Zürich", "unit": "c", "days": 2}
    if name.startswith("deepseek"):
        args = json.dumps(args, ensure_ascii=False)
    tool_conv = [
        {"role": "system", "content": "Use tools when needed."},
        {"role": "user", "content": "Weather in Zürich?"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "call12345", "type": "function",
                         "function": {"name": "get_weather", "arguments": args}}]},
        {"role": "tool", "tool_call_id": "call12345", "name": "get_weather",
         "content": '{"temp": 21, "sky": "clear"}'},
        {"role": "assistant", "content": "It is 21 °C and clear."},
        {"role": "user", "content": "Thanks"},
    ]
    cases.append({"messages": tool_conv, "tools": TOOLS, "add_generation_prompt": True})
    cases.append({"messages": [sys_msg, u1], "tools": TOOLS, "add_generation_prompt": False})
    # Without a system message, for the templates that refuse one.
    cases.append({"messages": [{"role": "user", "content": UNICODE_TEXT},
                               {"role": "assistant", "content": "'quoted' \"text\"\n\n"},
                               {"role": "user", "content": "\u00e9\u00e8 \U0001F600\t"}],
                  "add_generation_prompt": False})
    cases.append({"messages": [u1, a1, u2, a2], "add_generation_prompt": False})
    if name.startswith("NousResearch"):
        # The tool-use variant is the one transformers picks when tools are
        # given: render the plain conversations with tools too (and an
        # empty tool list), keeping case 6 without tools as the error case.
        for n, c in enumerate(cases):
            if n != 6 and "tools" not in c:
                c["tools"] = TOOLS
        cases.append({"messages": [u1], "tools": [], "add_generation_prompt": True})
        # A "null" in a type union sends its json_to_python_type macro into
        # endless recursion over the characters of "null" (the string is
        # iterable): jinja2 stops at Python's recursion limit, and so must
        # the interpreter, with the same message.
        null_tools = json.loads(json.dumps(TOOLS))
        null_tools[0]["function"]["parameters"]["properties"]["unit"]["type"] = ["string", "null"]
        cases.append({"messages": [u1], "tools": null_tools, "add_generation_prompt": True})
    return cases


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                          separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return FIXED_NOW.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    src_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        root, "..", "shared", "testdata", "chat-templates")
    out = os.path.join(root, "tests", "data", "templates")
    for sub in ("cases", "expected"):
        shutil.rmtree(os.path.join(out, sub), ignore_errors=True)
        os.makedirs(os.path.join(out, sub))
    env = make_env()
    index = []
    for fname in sorted(os.listdir(src_dir)):
        if not fname.endswith(".jinja"):
            continue
        name = fname[:-len(".jinja")]
        if name not in MODELS:
            sys.exit(f"{fname}: no special tokens known for this model; add it to MODELS")
        with open(os.path.join(src_dir, fname), "rb") as f:
            raw = f.read()
        with open(os.path.join(out, fname), "wb") as f:
            f.write(raw)
        tmpl = env.from_string(raw.decode("utf-8"))
        bos, eos = MODELS[name]
        for n, case in enumerate(conversations(name)):
            variables = {"messages": case["messages"], "tools": case.get("tools"),
                         "documents": None,
                         "add_generation_prompt": case["add_generation_prompt"]}
            if bos is not None:
                variables["bos_token"] = bos
            if eos is not None:
                variables["eos_token"] = eos
            with open(os.path.join(out, "cases", f"{name}.{n}.json"), "w",
                      encoding="utf-8") as f:
                json.dump(variables, f, ensure_ascii=False, indent=1)
                f.write("\n")
            try:
                text, ext = tmpl.render(**variables), "txt"
            except Exception as e:  # the C side must raise the same message
                text, ext = str(e), "err"
            with open(os.path.join(out, "expected", f"{name}.{n}.{ext}"), "wb") as f:
                f.write(text.encode("utf-8"))
            index.append(f"{name} {n} {ext}")
            print(f"{name}.{n}: {ext} ({len(text)} chars)")
    with open(os.path.join(out, "cases.txt"), "w") as f:
        f.write("\n".join(index) + "\n")


if __name__ == "__main__":
    main()
