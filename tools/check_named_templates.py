#!/usr/bin/env python3
"""Cross-check qlm's built-in chat templates (src/tmpl_named.c) with
Python's jinja2, in the environment tools/gen_template_fixtures.py copies
from transformers:

  1. each built-in's source, rendered by jinja2, gives the hand-written
     expected text in tests/data/named-templates.json (what
     tests/test_tmpl_named.c checks qlm's engine against);
  2. where a model's reference template is in ../shared/testdata/
     chat-templates (copied to tests/data/templates), it renders the same conversation to the same text
     (after removing what the reference adds on purpose: Qwen's default
     system message, Llama 3.1's dates; listed in the JSON).

    pip install jinja2
    python3 tools/check_named_templates.py [DIR of reference .jinja files]

Prints one line per check and exits 1 if any differs.
"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_template_fixtures import make_env  # noqa: E402


def builtin_sources(path):
    """name -> Jinja source, read from the C file's string literals."""
    c = open(path, encoding="utf-8").read()
    sources = {}
    for var, body in re.findall(r'static const char (\w+)\[\] =((?:\s*"(?:[^"\\]|\\.)*")+);', c):
        lits = re.findall(r'"((?:[^"\\]|\\.)*)"', body)
        # the sources use only \\ and \" escapes
        sources[var] = "".join(re.sub(r'\\(.)', r'\1', lit) for lit in lits)
    table = re.findall(r'\{"([\w-]+)", "(?:[^"\\]|\\.)*", (\w+)\}', c)
    return {name: sources[var] for name, var in table}


def render(env, source, conv, spec):
    variables = {"messages": conv["messages"], "tools": None, "documents": None,
                 "add_generation_prompt": conv["add_generation_prompt"]}
    for k in ("bos_token", "eos_token"):
        if spec.get(k) is not None:
            variables[k] = spec[k]
    return env.from_string(source).render(**variables)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # the reference templates: gen_template_fixtures.py keeps copies here
    ref_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "tests", "data", "templates")
    data = json.load(open(os.path.join(root, "tests", "data", "named-templates.json"), encoding="utf-8"))
    built = builtin_sources(os.path.join(root, "src", "tmpl_named.c"))
    env = make_env()
    bad = 0
    if set(built) != set(data["templates"]):
        print(f"FAIL built-ins {sorted(built)} != expected {sorted(data['templates'])}")
        bad += 1
    for name, spec in data["templates"].items():
        for key, conv in data["conversations"].items():
            got = render(env, built[name], conv, spec) if name in built else None
            ok = got == spec[key]
            bad += not ok
            print(f"{'PASS' if ok else 'FAIL'} jinja2 renders built-in {name} ({key}) as expected"
                  + ("" if ok else f": {got!r} != {spec[key]!r}"))
    for name, refs in data["references"].items():
        spec = data["templates"][name]
        for ref, key, added in refs:
            src = open(os.path.join(ref_dir, ref + ".jinja"), encoding="utf-8").read()
            got = render(env, src, data["conversations"][key], spec)
            ok = added in got and got.replace(added, "", 1) == spec[key]
            bad += not ok
            print(f"{'PASS' if ok else 'FAIL'} {ref} renders {key} as built-in {name}"
                  + (f" (less {added!r})" if added else "") + ("" if ok else f": {got!r}"))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
