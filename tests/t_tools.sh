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

# llama-bench's test shapes: -pg pairs and -d lists, every combination,
# each row naming its prompt, generated and context tokens.
$QLM bench -m "$M" -p 16 -n 4 -pg 8,2 -d 0,4 -r 1 -o csv >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && python3 -c '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
got = [(r["test"], r["n_tokens"], r["n_prompt"], r["n_gen"], r["n_depth"]) for r in rows]
want = [("pp16", "16", "16", "0", "0"), ("tg4", "4", "0", "4", "0"), ("pp8+tg2", "10", "8", "2", "0"),
        ("pp16@d4", "16", "16", "0", "4"), ("tg4@d4", "4", "0", "4", "4"), ("pp8+tg2@d4", "10", "8", "2", "4")]
assert got == want, got
assert all(float(r["avg_ts"]) > 0 for r in rows), rows
' "$tmp/out" 2>"$tmp/py"; then pass bench_pg_depths; else fail bench_pg_depths "rc=$rc $(tail -1 "$tmp/py") $(head -1 "$tmp/err")"; fi

# -b calls and -ub forward passes: the context takes min(b, ub) a pass;
# jsonl is one object per line, each with its samples.
$QLM bench -m "$M" -p 32 -n 0 -b 64 -ub 8,16,128 -r 2 -o jsonl >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [(r["n_batch"], r["n_ubatch"]) for r in rows] == [(64, 8), (64, 16), (64, 64)], rows
assert all(len(r["samples_ts"]) == 2 and min(r["samples_ts"]) <= r["avg_ts"] <= max(r["samples_ts"]) for r in rows), rows
' "$tmp/out" 2>"$tmp/py"; then pass bench_ubatch_jsonl; else fail bench_ubatch_jsonl "rc=$rc $(tail -1 "$tmp/py")"; fi

# Flags a llama-bench command line carries for GPUs and attention: one
# warning each where qlm cannot do what they ask, silence where it does.
$QLM bench -m "$M" -p 8 -n 0 -r 1 -ngl 99 -fa off -o csv >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ "$(wc -l < "$tmp/err")" = 2 ] && grep -q '^qlm: warning: -ngl 99' "$tmp/err" \
    && grep -q '^qlm: warning: -fa off' "$tmp/err" && [ "$(wc -l < "$tmp/out")" = 2 ]; then pass bench_ngl_fa_warn
else fail bench_ngl_fa_warn "rc=$rc $(cat "$tmp/err")"; fi
$QLM bench -m "$M" -p 8 -n 0 -r 1 -ngl 0 -fa on,auto -mmp 0 -o md >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ ! -s "$tmp/err" ] && head -1 "$tmp/out" | grep -q '^| model' && grep -q '| pp8 ' "$tmp/out"; then pass bench_ngl0_quiet_md
else fail bench_ngl0_quiet_md "rc=$rc $(cat "$tmp/err")"; fi

# --progress: a stderr line per run; --no-warmup drops the untimed one.
$QLM bench -m "$M" -p 8 -n 4 -r 2 --progress -o csv >"$tmp/out" 2>"$tmp/err"; rc=$?
$QLM bench -m "$M" -p 8 -n 4 -r 2 --progress --no-warmup -o csv >"$tmp/out2" 2>"$tmp/err2"; rc2=$?
if [ $rc = 0 ] && [ $rc2 = 0 ] && [ "$(grep -c ': warm-up$' "$tmp/err")" = 2 ] && [ "$(grep -c ': run [12]/2$' "$tmp/err")" = 4 ] \
    && [ "$(grep -c ': warm-up$' "$tmp/err2")" = 0 ] && [ "$(grep -c ': run [12]/2$' "$tmp/err2")" = 4 ] \
    && grep -q '^qlm bench: test 2/2 (tg4, ' "$tmp/err2"; then pass bench_progress_warmup
else fail bench_progress_warmup "rc=$rc/$rc2 $(head -3 "$tmp/err")"; fi

for bad in "-pg 16" "-pg 16,0" "-fa maybe" "-fa ," "-lm dio" "-ngl lots" "-ngl ," "-ub 0"; do
    # shellcheck disable=SC2086
    $QLM bench -m "$M" $bad >"$tmp/out" 2>"$tmp/err"; rc=$?
    name=bench_bad$(printf '%s' "$bad" | tr -c 'a-z0-9' '_')
    if [ $rc = 1 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q '^qlm: error: ' "$tmp/err"; then pass "$name"
    else fail "$name" "'$bad' rc=$rc $(cat "$tmp/err")"; fi
done

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
# tools/compare_bench.py with two stand-in llama-bench builds (a plain one
# and an ik_llama one with its own flags): every program runs each round,
# each round starting with the next one, the fork gets its flags and no
# -d, and each reference's ratio is qlm's mean over its fixed 100 t/s
# (pp) and 10 t/s (tg).
mkdir -p "$tmp/ref/build-plain/bin" "$tmp/ref/build-ik_llama_x/bin"
for b in plain ik_llama_x; do
    cat > "$tmp/ref/build-$b/bin/llama-bench" <<EOB
#!/usr/bin/env python3
import json, sys
a = sys.argv[1:]
open("$tmp/ref/$b.log", "a").write(" ".join(a) + "\n")
p, n = int(a[a.index("-p") + 1]), int(a[a.index("-n") + 1])
print(json.dumps([{"n_prompt": p, "n_gen": 0, "avg_ts": 100.0}, {"n_prompt": 0, "n_gen": n, "avg_ts": 10.0}]))
EOB
    chmod +x "$tmp/ref/build-$b/bin/llama-bench"
done
QLM_REF_DIR="$tmp/ref" QLM_BIN="$QLM" python3 tools/compare_bench.py -m "$M" -t 1 -p 16 -n 4 -r 1 --rounds 3 --dram-mib 8 --ref plain \
    --ref "ik_llama_x:-rtr 1" >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && python3 -c '
import re, sys
out, err, ik = (open(f).read() for f in sys.argv[1:4])
order = [m.group(1) for m in re.finditer(r"round \d+: (.+?) pp16 ", err)]
ik_ = "ik_llama.cpp -rtr 1"
assert order == ["llama.cpp", ik_, "qlm", ik_, "qlm", "llama.cpp", "qlm", "llama.cpp", ik_], order
assert ik.count("-rtr 1") == 3 and " -d " not in ik, ik
ours = {t: [float(l.split()[-2]) for l in err.splitlines() if re.match(r"round \d+: qlm %s " % t, l)] for t in ("pp16", "tg4")}
for t, ref in (("pp16", 100.0), ("tg4", 10.0)):
    row = [l for l in out.splitlines() if l.startswith("| %s |" % t)]
    assert len(row) == 1, out
    ratios = re.findall(r"([0-9.]+)x \(", row[0])
    # The log rounds each speed to 0.01 t/s; the tool averages the exact
    # ones, so the two-decimal ratios may differ by one in the last place.
    want = sum(q / ref for q in ours[t]) / len(ours[t])
    assert len(ratios) == 2 and all(abs(float(r) - want) <= 0.0051 + 0.01 / ref for r in ratios), (row, want)
assert "qlm / llama.cpp" in out and "qlm / ik_llama.cpp -rtr 1" in out, out
' "$tmp/out" "$tmp/err" "$tmp/ref/ik_llama_x.log" 2>"$tmp/py"; then pass compare_bench_refs
else fail compare_bench_refs "rc=$rc $(tail -1 "$tmp/py") $(tail -2 "$tmp/err")"; fi
exit 0
