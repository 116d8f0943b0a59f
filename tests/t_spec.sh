#!/bin/sh
# qlm run with speculative decoding: same text as without, stats in --json
# and -v, draft models checked on their token texts.
BUILD=${1:-build}
QLM=${QLM:-./qlm}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$BUILD/tests/test_model" --write-tiny "$tmp/tiny.gguf" || { echo "FAIL spec_setup: cannot write tiny model"; exit 1; }
M="$tmp/tiny.gguf"
for k in text special pad bad; do
    "$BUILD/tests/test_spec" --write-draft $k "$M" "$tmp/$k.gguf" || { echo "FAIL spec_setup: cannot write $k draft"; exit 1; }
done

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
expect_error() {
    name=$1 want=$2 pattern=$3
    if [ "$rc" != "$want" ]; then fail "$name" "exit $rc, want $want: $(head -c 300 "$tmp/err")"; return; fi
    if [ "$(wc -l < "$tmp/err")" != 1 ] || ! grep -q '^qlm: error: ' "$tmp/err"; then
        fail "$name" "stderr is not one 'qlm: error:' line: $(head -3 "$tmp/err")"; return; fi
    if [ -n "$pattern" ] && ! grep -q "$pattern" "$tmp/err"; then fail "$name" "message: $(cat "$tmp/err")"; return; fi
    if [ -s "$tmp/out" ]; then fail "$name" "stdout not empty"; return; fi
    pass "$name"
}

P="hello hello hello world, hello hello"
$QLM run -m "$M" -p "$P" -n 40 --temp 0 >"$tmp/plain" 2>/dev/null
same=1
for flags in "--lookup" "--lookup --draft 3 --draft-fixed" "-md $tmp/bad.gguf" "-md $tmp/pad.gguf --draft 4 --draft-p-min 0" "-md $M --draft-min 2 -td 1"; do
    $QLM run -m "$M" -p "$P" -n 40 --temp 0 $flags >"$tmp/spec" 2>"$tmp/err" || { same=0; echo "# $flags: $(cat "$tmp/err")"; }
    cmp -s "$tmp/plain" "$tmp/spec" || { same=0; echo "# $flags: output differs"; }
done
if [ $same = 1 ]; then pass spec_cli_greedy_identical; else fail spec_cli_greedy_identical "see above"; fi

$QLM run -m "$M" -p "$P" -n 20 --temp 0 --lookup --json >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))
s = o["speculative"]
assert s["drafter"] == "lookup", s
for k in ("drafted", "accepted", "acceptance_rate", "mean_accepted_length", "speedup", "plain_ms_per_token"):
    assert k in s, k
assert 0 <= s["accepted"] <= s["drafted"], s
' "$tmp/out" 2>"$tmp/py"; then pass spec_json_stats; else fail spec_json_stats "rc=$rc $(tail -1 "$tmp/py")"; fi

$QLM run -m "$M" -p "$P" -n 20 --temp 0 -md "$M" -v >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && grep -q "^qlm: speculative (model): drafted [0-9]*, accepted [0-9]* (" "$tmp/err"; then pass spec_verbose_stats
else fail spec_verbose_stats "rc=$rc $(tail -2 "$tmp/err")"; fi

$QLM run -m "$M" -p hi -n 4 -md "$tmp/text.gguf" >"$tmp/out" 2>"$tmp/err"; rc=$?
expect_error spec_draft_other_tokens 2 "token id 100 is"
$QLM run -m "$M" -p hi -n 4 -md "$tmp/special.gguf" >"$tmp/out" 2>"$tmp/err"; rc=$?
expect_error spec_draft_other_specials 2 "eos token"
$QLM run -m "$M" -p hi -n 4 -md "$tmp/missing.gguf" >"$tmp/out" 2>"$tmp/err"; rc=$?
expect_error spec_draft_missing 2
$QLM run -m "$M" -p hi -n 4 -md "$M" --lookup >"$tmp/out" 2>"$tmp/err"; rc=$?
expect_error spec_two_drafters 1
$QLM run -m "$M" -p hi -n 4 --lookup --draft 2 --draft-min 3 >"$tmp/out" 2>"$tmp/err"; rc=$?
expect_error spec_min_over_max 1
$QLM run -m "$M" -p hi -n 4 --lookup --draft x >"$tmp/out" 2>"$tmp/err"; rc=$?
expect_error spec_bad_number 1

# qlm draft: a derived draft loads, fits its target and changes nothing
$QLM draft "$M" "$tmp/derived.gguf" --layers 1 >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && $QLM inspect "$tmp/derived.gguf" 2>/dev/null | grep -q "block_count *uint32 *1$" \
   && ! $QLM inspect "$tmp/derived.gguf" 2>/dev/null | grep -q "blk\.1\." \
   && $QLM run -m "$M" -p "$P" -n 40 --temp 0 -md "$tmp/derived.gguf" --draft-fixed >"$tmp/spec" 2>"$tmp/err2" \
   && cmp -s "$tmp/plain" "$tmp/spec"; then pass draft_derived_works
else fail draft_derived_works "rc=$rc $(head -c 300 "$tmp/err") $(head -c 300 "$tmp/err2")"; fi
$QLM draft "$M" "$tmp/d2.gguf" --layers 1-1 --type q8_0 >/dev/null 2>&1 && $QLM inspect "$tmp/d2.gguf" 2>/dev/null | grep -q "blk.0.attn_q.weight *q8_0"
if [ $? = 0 ]; then pass draft_layer_list_and_type; else fail draft_layer_list_and_type "list/type not applied"; fi
$QLM draft "$M" "$tmp/d3.gguf" --layers 3 >"$tmp/out" 2>"$tmp/err"; rc=$?
expect_error draft_too_many_layers 1 "has 2 layers"
$QLM draft "$M" "$tmp/d3.gguf" --layers 0-x >"$tmp/out" 2>"$tmp/err"; rc=$?
expect_error draft_bad_list 1
$QLM draft "$tmp/none.gguf" "$tmp/d3.gguf" >"$tmp/out" 2>"$tmp/err"; rc=$?
expect_error draft_missing_input 2

# Conformance (real models, slow): speculative greedy output equals plain
# on every fixture prompt, through the real kernels (Q4_1, and Q4_0 with its
# repacked order, Q4_K_M with its repacked K-quant orders), with lookup and
# with another quantization as draft.
if [ "${QLM_CONFORMANCE:-0}" = 1 ]; then
    Q41=models/SmolLM2-135M-Instruct.Q4_1.gguf Q40=models/SmolLM2-135M-Instruct.Q4_0.gguf
    QK=models/SmolLM2-135M-Instruct.Q4_K_M.gguf
    if [ -f "$Q41" ] && [ -f "$Q40" ] && [ -f "$QK" ]; then
        bad=""; n=0
        for f in tests/data/prompts/*.txt; do
            for pair in "$Q41 $Q40" "$Q40 $Q41" "$QK $Q40"; do
                set -- $pair
                $QLM run -m "$1" -f "$f" -n 64 --temp 0 -c 2048 >"$tmp/plain" 2>/dev/null
                for flags in "--lookup --lookup-ngram 2 --draft-fixed" "-md $2 --draft 4 --draft-fixed"; do
                    $QLM run -m "$1" -f "$f" -n 64 --temp 0 -c 2048 $flags >"$tmp/spec" 2>/dev/null
                    n=$((n + 1))
                    cmp -s "$tmp/plain" "$tmp/spec" || bad="$bad $(basename "$f"):$(basename "$1"):${flags%% *}"
                done
            done
        done
        if [ -z "$bad" ]; then pass "spec_conformance_greedy_identical ($n runs)"
        else fail spec_conformance_greedy_identical "differs:$bad"; fi
    else
        fail spec_conformance_greedy_identical "models missing (make conformance fetches them)"
    fi
fi
