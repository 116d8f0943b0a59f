#!/usr/bin/env python3
"""Tokenizer reference fixtures from llama.cpp for a model's vocabulary.

    python3 tools/ref_tokens.py MODEL.gguf OUT_STEM

Reads OUT_STEM.inp (inputs, each followed by "\\n__ggml_vocab_test__\\n", the
format of llama.cpp's vocab tests) and writes OUT_STEM.out: one line of ids
per input, tokenized by the llama.cpp built by tools/build_llamacpp.sh with
add_special and parse_special on (the model's BOS, control-token text as
the token), as `qlm run` tokenizes a prompt.  MODEL may be vocab-only
(tools/gguf_vocab_only.py).
"""
import importlib.util
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("ref_greedy", HERE / "ref_greedy.py")
rg = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rg)
ll = rg.ll

SEP = "\n__ggml_vocab_test__\n"


def main():
    model, stem = sys.argv[1], sys.argv[2]
    texts = pathlib.Path(stem + ".inp").read_text(encoding="utf-8").split(SEP)[:-1]
    ll.llama_backend_init()
    mp = ll.llama_model_default_params()
    mp.vocab_only = True
    m = ll.llama_model_load_from_file(model.encode(), mp)
    if not m:
        sys.exit(f"error: cannot load {model}")
    vocab = ll.llama_model_get_vocab(m)
    with open(stem + ".out", "w") as f:
        for t in texts:
            f.write(" ".join(map(str, rg.tokenize(vocab, t))) + "\n")
    print(f"{stem}.out: {len(texts)} inputs", file=sys.stderr)


if __name__ == "__main__":
    main()
