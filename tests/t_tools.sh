#!/bin/sh
# qlm bench and qlm perplexity on a generated tiny model: they run, print
# what their users parse, and refuse bad input with the documented codes.
BUILD=${1:-build}
QLM=${QLM:-./qlm}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$BUILD/tests/test_model" --write-tiny "$tmp/tiny.gguf" || { echo "FAIL tools_setup: cannot write tiny model"; exit 1; }
M="$tmp/tiny.gguf"
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }

i=0; while [ $i -lt 40 ]; do echo "the quick brown fox jumps over the lazy dog $i"; i=$((i+1)); done > "$tmp/text.txt"
$QLM perplexity -m "$M" -f "$tmp/text.txt" -c 64 -t 1 >"$tmp/out" 2>"$tmp/err"; rc=$?
ppl=$(sed -n 's/^Final estimate: PPL = \([0-9.]*\) +\/- [0-9.]*$/\1/p' "$tmp/out")
# A random model is near-uniform over 258 tokens: perplexity within a few x of that.
if [ $rc = 0 ] && [ -n "$ppl" ] && awk -v p="$ppl" 'BEGIN { exit !(p > 20 && p < 5000) }'; then pass perplexity_runs
else fail perplexity_runs "rc=$rc ppl='$ppl' $(head -2 "$tmp/err")"; fi

$QLM perplexity -m "$M" -f "$tmp/text.txt" -c 100000 >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 2 ] && grep -q '^qlm: error: .*less than one chunk' "$tmp/err"; then pass perplexity_text_too_short
else fail perplexity_text_too_short "rc=$rc $(head -1 "$tmp/err")"; fi

$QLM bench -m "$M" -p 32 -n 8 -r 2 -o json >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && python3 -c '
import json, sys
rows = json.load(open(sys.argv[1]))
assert [r["test"] for r in rows] == ["pp32", "tg8"], rows
assert all(r["avg_ts"] > 0 and r["reps"] == 2 for r in rows), rows
' "$tmp/out" 2>"$tmp/py"; then pass bench_json; else fail bench_json "rc=$rc $(tail -1 "$tmp/py")"; fi

$QLM bench -m "$M" -p 16,32 -n 0 -r 1 -o csv >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ "$(wc -l < "$tmp/out")" = 3 ] && grep -q ',pp16,' "$tmp/out" && grep -q ',pp32,' "$tmp/out"; then pass bench_csv_lists
else fail bench_csv_lists "rc=$rc $(cat "$tmp/out" | head -3)"; fi

$QLM bench -m "$M" -p x >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 1 ] && [ "$(wc -l < "$tmp/err")" = 1 ]; then pass bench_bad_list; else fail bench_bad_list "rc=$rc"; fi
# Kernel microbenchmark: a row per requested type with a figure for every
# ISA level of the header (speeds themselves are not tested).
$QLM bench --kernels -r 1 --mib 8 --types q4_0,q6_k >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && grep -q '^memory read bandwidth: [0-9.]* GB/s' "$tmp/out" && python3 -c '
import sys
rows = [l.split("|")[1:-1] for l in open(sys.argv[1]) if l.startswith("|")]
head, body = rows[0], rows[2:]
assert head[1].strip() == "scalar", head
assert [r[0].strip() for r in body] == ["q4_0", "q6_k"], body
for r in body:
    assert len(r) == len(head), (r, head)
    assert all(float(c.split()[0]) >= 0 for c in r[1:]) and any(float(c.split()[0]) > 0 for c in r[1:]), r
' "$tmp/out" 2>"$tmp/py"; then pass bench_kernels
else fail bench_kernels "rc=$rc $(tail -1 "$tmp/py") $(head -c 200 "$tmp/err")"; fi
$QLM bench --kernels --types q4_0,nope >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 1 ] && grep -q "'nope'" "$tmp/err"; then pass bench_kernels_bad_type; else fail bench_kernels_bad_type "rc=$rc"; fi
# qlm synth: a family shape in a chosen weight type; unknown types refused.
$QLM synth qwen2 tests/data/vocab/ggml-vocab-llama-spm.gguf "$tmp/syn.gguf" 7 --type f16 >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && $QLM inspect "$tmp/syn.gguf" >"$tmp/insp" 2>&1 && grep -q '^blk.0.attn_q.weight  *f16 ' "$tmp/insp" &&
   grep -q '^token_embd.weight  *f16 ' "$tmp/insp" && grep -q '^blk.0.attn_q.bias  *f32 ' "$tmp/insp"; then pass synth_type
else fail synth_type "rc=$rc $(head -c 200 "$tmp/err")"; fi
$QLM synth qwen2 tests/data/vocab/ggml-vocab-llama-spm.gguf "$tmp/syn2.gguf" --type q9_9 >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 1 ] && grep -q "q9_9" "$tmp/err" && [ ! -e "$tmp/syn2.gguf" ]; then pass synth_bad_type; else fail synth_bad_type "rc=$rc"; fi
exit 0
