#!/bin/sh
# qlm quantize on a generated tiny model (Q8_0 projections, f32 embeddings,
# 64-wide rows): the per-tensor types are llama-quantize's (checked against
# it by hand on this model: same types and bytes), the output loads and
# runs, and bad input is refused with the documented codes.
BUILD=${1:-build}
QLM=${QLM:-./qlm}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$BUILD/tests/test_model" --write-tiny "$tmp/tiny.gguf" || { echo "FAIL quantize_setup: cannot write tiny model"; exit 1; }
M="$tmp/tiny.gguf"
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }

# "name type" for every tensor of a file, sorted.
types_of() { $QLM inspect "$1" | awk 'f && NF >= 2 { print $1, $2 } /^name +type/ { f = 1 }' | sort; }

# Expected types: $1 for 2-D weights by default, then "name type" overrides.
expect() {
    def=$1; shift
    for n in token_embd output; do echo "$n.weight $def"; done
    echo "output_norm.weight f32"
    for l in 0 1; do
        for n in attn_norm ffn_norm; do echo "blk.$l.$n.weight f32"; done
        for n in attn_q attn_k attn_v attn_output ffn_gate ffn_up ffn_down; do echo "blk.$l.$n.weight $def"; done
    done
    for o in "$@"; do echo "$o"; done
}
# Applies overrides (later lines for a name win) and sorts.
resolve() { awk '{ t[$1] = $2 } END { for (n in t) print n, t[n] }' | sort; }

check_type() { # ftype, file_type value, default type, overrides...
    ft=$1; fv=$2; shift 2
    out="$tmp/out-$ft.gguf"
    $QLM quantize "$M" "$out" "$ft" >"$tmp/stdout" 2>"$tmp/err"; rc=$?
    if [ $rc != 0 ]; then fail "quantize_$ft" "rc=$rc $(head -1 "$tmp/err")"; return; fi
    expect "$@" | resolve > "$tmp/want"
    types_of "$out" > "$tmp/got"
    if ! diff "$tmp/want" "$tmp/got" >"$tmp/diff"; then fail "quantize_$ft" "types differ: $(grep '^[<>]' "$tmp/diff" | head -4 | tr '\n' ' ')"; return; fi
    if ! $QLM inspect "$out" | grep -q "^general.file_type  *uint32  *$fv\$"; then fail "quantize_$ft" "general.file_type is not $fv"; return; fi
    if ! $QLM inspect "$out" | grep -q '^general.quantization_version  *uint32  *2$'; then fail "quantize_$ft" "no general.quantization_version 2"; return; fi
    if [ -s "$tmp/stdout" ]; then fail "quantize_$ft" "wrote to stdout"; return; fi
    $QLM run -m "$out" -p "hello" -n 8 --temp 0 >"$tmp/gen" 2>"$tmp/err"; rc=$?
    if [ $rc != 0 ]; then fail "quantize_$ft" "qlm run: rc=$rc $(head -1 "$tmp/err")"; return; fi
    pass "quantize_$ft"
}

# token_embd is f32 here and untied (output.weight exists): it takes the base type.
check_type f16 1 f16
check_type q8_0 7 q8_0
# output.weight wants Q6_K, whose 256-block does not fit a 64-wide row: Q8_0.
check_type q4_0 2 q4_0 "output.weight q8_0"
# Q4_K does not fit 64 (or ffn_down's 96): Q5_0; the layers use_more_bits
# picks (the last of two) want Q6_K and fall back to Q8_0.
check_type Q4_K_M 15 q5_0 "output.weight q8_0" "blk.1.attn_v.weight q8_0" "blk.1.ffn_down.weight q8_0"

# Rows are split across threads: the bytes must not depend on how many.
$QLM quantize "$M" "$tmp/t1.gguf" q4_k_m -t 1 2>"$tmp/err" && $QLM quantize "$M" "$tmp/t3.gguf" q4_k_m --threads 3 2>>"$tmp/err"
if cmp -s "$tmp/t1.gguf" "$tmp/t3.gguf"; then pass quantize_threads_same_bytes
else fail quantize_threads_same_bytes "outputs differ $(head -1 "$tmp/err")"; fi

$QLM quantize "$M" "$tmp/x.gguf" q4_k_x >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 1 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q "^qlm: error: unknown type 'q4_k_x'" "$tmp/err" && [ ! -e "$tmp/x.gguf" ]
then pass quantize_bad_type; else fail quantize_bad_type "rc=$rc $(head -1 "$tmp/err")"; fi

$QLM quantize "$M" "$tmp/x.gguf" >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 1 ] && [ "$(wc -l < "$tmp/err")" = 1 ]; then pass quantize_missing_args; else fail quantize_missing_args "rc=$rc"; fi

$QLM quantize "$tmp/nope.gguf" "$tmp/x.gguf" q4_0 >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q '^qlm: error: .*nope.gguf' "$tmp/err" && [ ! -e "$tmp/x.gguf" ]
then pass quantize_missing_input; else fail quantize_missing_input "rc=$rc $(head -1 "$tmp/err")"; fi

head -c 1000 "$M" > "$tmp/trunc.gguf"
$QLM quantize "$tmp/trunc.gguf" "$tmp/x.gguf" q4_0 >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && [ ! -e "$tmp/x.gguf" ]; then pass quantize_truncated_input
else fail quantize_truncated_input "rc=$rc $(head -1 "$tmp/err")"; fi

# The same file under two spellings is still the same file.
cp "$M" "$tmp/same.gguf"; sum=$(cksum < "$tmp/same.gguf")
mkdir "$tmp/d"
$QLM quantize "$tmp/same.gguf" "$tmp/d/../same.gguf" q4_0 >"$tmp/out" 2>"$tmp/err"; rc=$?
$QLM quantize "$tmp/same.gguf" "$tmp/same.gguf" q4_0 >>"$tmp/out" 2>>"$tmp/err"; rc2=$?
if [ $rc = 1 ] && [ $rc2 = 1 ] && [ "$(wc -l < "$tmp/err")" = 2 ] && [ "$(cksum < "$tmp/same.gguf")" = "$sum" ]
then pass quantize_in_equals_out; else fail quantize_in_equals_out "rc=$rc/$rc2 $(head -1 "$tmp/err")"; fi

# A failed write (no such folder) is a runtime error and leaves no file.
$QLM quantize "$M" "$tmp/nodir/x.gguf" q4_0 >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 3 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && [ ! -e "$tmp/nodir" ]; then pass quantize_unwritable_out
else fail quantize_unwritable_out "rc=$rc $(head -1 "$tmp/err")"; fi
ls "$tmp" | grep -q '\.tmp\.' && fail quantize_no_temp_files "$(ls "$tmp" | grep '\.tmp\.')" || pass quantize_no_temp_files
exit 0
