#!/usr/bin/env python3
"""Greedy-generation reference fixtures from llama.cpp.

Drives the llama.cpp built by tools/build_llamacpp.sh through the low-level
ctypes bindings shipped in the same llama-cpp-python sdist, so the bindings
and the library come from one source tree and their struct layouts agree.

The argmax is taken here over the raw logits rather than through a llama.cpp
sampler, so there is no sampler configuration to get wrong, and the top-1 /
top-2 logit gap of every step is recorded to spot near-ties where a tiny
numeric difference in qlm could legitimately flip a token.

Two configurations run for every prompt:
  f32      type_k = type_v = f32, flash attention off  -> written as fixtures
           (matches qlm's f32 KV cache)
  default  llama.cpp context defaults (f16 KV, flash attention auto)
           -> only compared against f32 and reported

Usage:
  tools/build_llamacpp.sh
  python3 tools/ref_greedy.py [--model M] [--prompts DIR] [--out DIR]
      [--only 01-short,02-story,...] [--n-predict N] [--no-repack] [--no-tiled]
      [--f32-only]

--no-repack loads the model with use_extra_bufts off, so llama.cpp does not
run Q4_0/Q4_K/IQ4_NL weights through its repacked 8x8 kernels (nor AMX).
--no-tiled sets GGML_CPU_TILED_MM=0: without it llama.cpp multiplies K-quant
and IQ weights by batches of 8 or more tokens with its tiled kernels
(ggml-cpu/tiled), which have their own summation order.  With both, every
weight goes through the plain vec_dot / tinyBLAS kernels.  The header of
each fixture says which configuration made it.
"""

import argparse
import hashlib
import os
import pathlib
import subprocess
import sys
import types

import numpy as np

REPO = pathlib.Path(__file__).resolve().parent.parent
REF_DIR = pathlib.Path(os.environ.get("QLM_REF_DIR", pathlib.Path.home() / ".cache/qlm/ref"))
REF_NAME = os.environ.get("QLM_REF_NAME", "llama_cpp_python-0.3.36")
SRC_ROOT = REF_DIR / REF_NAME
LLAMA_SRC = SRC_ROOT / "vendor" / "llama.cpp"

N_PREDICT = 64
N_CTX = 2048
N_THREADS = 2
N_TOP_DEBUG = 20


def load_bindings():
    # The bindings read LLAMA_CPP_LIB_PATH at import time to find libllama.so.
    os.environ.setdefault("LLAMA_CPP_LIB_PATH", str(REF_DIR / f"build-{REF_NAME}" / "bin"))
    # Importing the llama_cpp package runs its __init__, which pulls in the
    # high-level API and its extra dependencies (diskcache, jinja2, ...). Only
    # the low-level module is needed, so register a bare package shell first.
    pkg_dir = SRC_ROOT / "llama_cpp"
    if not (pkg_dir / "llama_cpp.py").is_file():
        sys.exit(f"error: {pkg_dir} missing; run tools/build_llamacpp.sh first")
    pkg = types.ModuleType("llama_cpp")
    pkg.__path__ = [str(pkg_dir)]
    sys.modules["llama_cpp"] = pkg
    import llama_cpp.llama_cpp as ll

    return ll


ll = load_bindings()

# ggml log levels: 3 = warn, 4 = error, 5 = continuation of the previous line.
_log_lines = []
_log_last_level = 0


@ll.llama_log_callback
def _log_cb(level, text, _user):
    global _log_last_level
    msg = text.decode("utf-8", "replace")
    if level != 5:
        _log_last_level = level
    _log_lines.append(msg)
    if _log_last_level >= 3:
        sys.stderr.write(msg)


def llama_version():
    try:
        commit = subprocess.run(
            ["git", "-C", str(LLAMA_SRC), "rev-parse", "--short=12", "HEAD"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    return f"{commit} (vendored in {REF_NAME.replace('_', '-')})"


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def tokenize(vocab, text):
    data = text.encode("utf-8")
    n_max = len(data) + 16
    buf = (ll.llama_token * n_max)()
    # add_special=True means "add BOS/EOS if the model's metadata asks for it",
    # i.e. the model default (SmolLM2: add_bos_token false -> nothing added).
    n = ll.llama_tokenize(vocab, data, len(data), buf, n_max, True, True)
    if n < 0:
        raise RuntimeError(f"tokenize failed ({n})")
    return list(buf[:n])


def make_ctx(model, kind):
    p = ll.llama_context_default_params()
    p.n_ctx = N_CTX
    p.n_threads = N_THREADS
    p.n_threads_batch = N_THREADS
    if kind == "f32":
        p.type_k = ll.GGML_TYPE_F32
        p.type_v = ll.GGML_TYPE_F32
        p.flash_attn_type = ll.LLAMA_FLASH_ATTN_TYPE_DISABLED
    ctx = ll.llama_init_from_model(model, p)
    if not ctx:
        raise RuntimeError(f"llama_init_from_model failed ({kind})")
    return ctx


def decode(ctx, toks):
    arr = (ll.llama_token * len(toks))(*toks)
    rc = ll.llama_decode(ctx, ll.llama_batch_get_one(arr, len(toks)))
    if rc != 0:
        raise RuntimeError(f"llama_decode returned {rc}")


def greedy(ctx, vocab, n_vocab, prompt_ids, want_top=0):
    """Returns (gen ids, gaps, stopped_on_eog, top-k of the first step)."""
    ll.llama_memory_clear(ll.llama_get_memory(ctx), True)
    gen, gaps, top_first = [], [], None
    eog = False
    decode(ctx, prompt_ids)
    for step in range(N_PREDICT):
        logits = np.ctypeslib.as_array(ll.llama_get_logits_ith(ctx, -1), shape=(n_vocab,)).copy()
        # argmax returns the lowest id among exact ties, same as llama.cpp's greedy sampler.
        order = np.argsort(-logits, kind="stable")
        t1, t2 = int(order[0]), int(order[1])
        if step == 0 and want_top:
            top_first = [(int(i), float(logits[i])) for i in order[:want_top]]
        gen.append(t1)
        gaps.append(float(logits[t1] - logits[t2]))
        if ll.llama_vocab_is_eog(vocab, t1):
            eog = True
            break
        if step + 1 < N_PREDICT:
            decode(ctx, [t1])
    return gen, gaps, eog, top_first


def main():
    global N_PREDICT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=str(pathlib.Path.home() / ".cache/qlm/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--prompts", default=str(REPO / "tests/data/prompts"))
    ap.add_argument("--out", default=str(REPO / "tests/data/greedy/smollm2-q4_1"))
    ap.add_argument("--only", default="", help="comma-separated prompt stems (default: all)")
    ap.add_argument("--n-predict", type=int, default=N_PREDICT)
    ap.add_argument("--no-repack", action="store_true", help="llama.cpp without weight repacking")
    ap.add_argument("--no-tiled", action="store_true", help="GGML_CPU_TILED_MM=0 (no tiled K-quant matmul)")
    ap.add_argument("--f32-only", action="store_true", help="skip the default-context comparison run")
    args = ap.parse_args()
    N_PREDICT = args.n_predict
    if args.no_tiled:
        os.environ["GGML_CPU_TILED_MM"] = "0"  # read by ggml on the first matmul

    model_path = pathlib.Path(args.model)
    prompts = sorted(pathlib.Path(args.prompts).glob("*.txt"))
    if args.only:
        want = set(args.only.split(","))
        prompts = [p for p in prompts if p.stem in want]
    if not prompts:
        sys.exit(f"error: no prompts in {args.prompts}")
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    ll.llama_log_set(_log_cb, None)
    ll.llama_backend_init()
    mp = ll.llama_model_default_params()
    if args.no_repack:
        mp.use_extra_bufts = False
    model = ll.llama_model_load_from_file(str(model_path).encode(), mp)
    if not model:
        sys.exit(f"error: cannot load {model_path}")
    vocab = ll.llama_model_get_vocab(model)
    n_vocab = ll.llama_vocab_n_tokens(vocab)

    version = llama_version()
    model_sum = sha256(model_path)
    print(f"llama.cpp {version}")
    print(f"model {model_path.name} sha256 {model_sum}, n_vocab {n_vocab}, "
          f"add_bos {bool(ll.llama_vocab_get_add_bos(vocab))}, add_eos {bool(ll.llama_vocab_get_add_eos(vocab))}")

    results = {}
    kinds = ("f32",) if args.f32_only else ("f32", "default")
    for kind in kinds:
        n_log = len(_log_lines)
        ctx = make_ctx(model, kind)
        fa = [l.strip() for l in _log_lines[n_log:] if "flash_attn" in l or "Flash Attention" in l]
        print(f"[{kind}] context log: " + " | ".join(fa))
        for p in prompts:
            ids = tokenize(vocab, p.read_text(encoding="utf-8"))
            want = N_TOP_DEBUG if (kind == "f32" and p.name.startswith("01-")) else 0
            results[(kind, p.stem)] = (ids,) + greedy(ctx, vocab, n_vocab, ids, want)
        ll.llama_free(ctx)

    header = (f"# llama.cpp {version}, {model_path.name} sha256 {model_sum}, "
              f"kv f32, greedy, n_predict {N_PREDICT}, "
              f"weight repacking {'off' if args.no_repack else 'default'}, "
              f"tiled K-quant matmul {'off' if args.no_tiled else 'default'}\n"
              f"# n_ctx {N_CTX}, threads {N_THREADS}, flash_attn off, add_special model default, "
              f"parse_special on; gen ends with the EOG id when stop is eog\n")
    print()
    print(f"{'prompt':<16} {'n_prompt':>8} {'n_gen':>5} {'stop':>6} {'min_gap':>8} {'@step':>5}  default(f16 KV, FA auto) vs f32")
    for p in prompts:
        ids, gen, gaps, eog, top = results[("f32", p.stem)]
        with open(out / f"{p.stem}.ids", "w") as f:
            f.write(header)
            f.write("prompt " + " ".join(map(str, ids)) + "\n")
            f.write("gen " + " ".join(map(str, gen)) + "\n")
            f.write("gap " + " ".join(f"{g:.4f}" for g in gaps) + "\n")
            f.write(f"stop {'eog' if eog else 'n_predict'}\n")
        if top:
            with open(out / f"logits-{p.stem.split('-')[0]}.txt", "w") as f:
                f.write(f"# llama.cpp {version}, {model_path.name}, kv f32, flash_attn off\n")
                f.write(f"# prompt {p.name}: top-{N_TOP_DEBUG} logits of the first generated step (id logit)\n")
                for i, v in top:
                    f.write(f"{i} {v:.6f}\n")

        if args.f32_only:
            cmp = "-"
        elif results[("default", p.stem)][1] == gen:
            cmp = "identical"
        else:
            d_gen = results[("default", p.stem)][1]
            # One sequence can only be a prefix of the other if one stopped on EOG.
            k = next((i for i, (a, b) in enumerate(zip(gen, d_gen)) if a != b), min(len(gen), len(d_gen)))
            f32_tok = gen[k] if k < len(gen) else "end"
            def_tok = d_gen[k] if k < len(d_gen) else "end"
            gap_k = f" (f32 gap there {gaps[k]:.4f})" if k < len(gaps) else ""
            cmp = f"DIFFER at step {k}: f32 {f32_tok} vs default {def_tok}{gap_k}"
        j = int(np.argmin(gaps))
        print(f"{p.stem:<16} {len(ids):>8} {len(gen):>5} {('eog' if eog else 'len'):>6} {gaps[j]:>8.4f} {j:>5}  {cmp}")

    ll.llama_model_free(model)
    print(f"\nfixtures written to {out}")


if __name__ == "__main__":
    main()
