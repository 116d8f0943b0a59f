#!/bin/sh
# KV cache flags of qlm run: element types, the -v report, context shift.
BUILD=${1:-build}
QLM=${QLM:-./qlm}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$BUILD/tests/test_model" --write-tiny "$tmp/tiny.gguf" || { echo "FAIL kv_setup: cannot write tiny model"; exit 1; }
M="$tmp/tiny.gguf"
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }

$QLM run -m "$M" -p "hello" -n 4 --temp 0 -v >/dev/null 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && grep -q 'KV cache K int8 V int8, [0-9]* bytes' "$tmp/err"; then pass kv_default_int8_reported
else fail kv_default_int8_reported "rc=$rc $(head -2 "$tmp/err")"; fi

$QLM run -m "$M" -p "hello" -n 4 --temp 0 -v -ctk f16 -ctv f32 >/dev/null 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && grep -q 'KV cache K f16 V f32' "$tmp/err"; then pass kv_types_per_side
else fail kv_types_per_side "rc=$rc $(head -2 "$tmp/err")"; fi

$QLM run -m "$M" -p "hello" -n 4 --kv-type q4 >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 1 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q "^qlm: error: --kv-type: expected f32, f16 or int8" "$tmp/err"; then pass kv_type_bad_is_usage
else fail kv_type_bad_is_usage "rc=$rc $(head -2 "$tmp/err")"; fi

# Generation of 4x the context runs to the end with --keep; without it,
# it stops when the context is full.
for kv in int8 f32; do
    $QLM run -m "$M" -p "hello" -c 32 -n 128 --keep 2 --temp 0 --kv-type $kv --json >"$tmp/out" 2>"$tmp/err"; rc=$?
    if [ $rc = 0 ] && grep -q '"stop_reason":"length","tokens":{"prompt":[0-9]*,"generated":128}' "$tmp/out"; then pass context_shift_4x_$kv
    else fail context_shift_4x_$kv "rc=$rc $(head -c 300 "$tmp/out") $(head -2 "$tmp/err")"; fi
done
$QLM run -m "$M" -p "hello" -c 32 -n 128 --temp 0 --json >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && grep -q '"stop_reason":"context"' "$tmp/out"; then pass no_keep_stops_at_context
else fail no_keep_stops_at_context "rc=$rc $(head -c 300 "$tmp/out")"; fi

# --prompt-cache: the second run reuses the prompt, with the same text; a
# damaged file gets one warning line and the run goes on as without it.
P="$(printf 'abcdefghij%.0s' 1 2 3 4 5 6 7 8)"
$QLM run -m "$M" -p "$P" -n 8 --temp 0 >"$tmp/nocache" 2>/dev/null
$QLM run -m "$M" -p "$P" -n 8 --temp 0 --prompt-cache "$tmp/pc" -v >"$tmp/out1" 2>"$tmp/err1"; rc1=$?
$QLM run -m "$M" -p "$P" -n 8 --temp 0 --prompt-cache "$tmp/pc" -v >"$tmp/out2" 2>"$tmp/err2"; rc2=$?
if [ $rc1 = 0 ] && [ $rc2 = 0 ] && [ -s "$tmp/pc" ] && grep -q 'prompt cache: 0 tokens loaded' "$tmp/err1" &&
   grep -q 'prompt cache: [1-9][0-9]* tokens loaded.*reused' "$tmp/err2" && ! grep -q warning "$tmp/err1" &&
   cmp -s "$tmp/nocache" "$tmp/out1"; then pass prompt_cache_cli_reuse
else fail prompt_cache_cli_reuse "rc=$rc1/$rc2 $(grep 'prompt cache\|warning' "$tmp/err1" "$tmp/err2" | head -3)"; fi

head -c 300 "$tmp/pc" > "$tmp/pc.bad"
$QLM run -m "$M" -p "$P" -n 8 --temp 0 --prompt-cache "$tmp/pc.bad" >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q '^qlm: warning: prompt cache .*truncated.*; ignored$' "$tmp/err" &&
   cmp -s "$tmp/nocache" "$tmp/out"; then pass prompt_cache_cli_truncated_ignored
else fail prompt_cache_cli_truncated_ignored "rc=$rc $(head -2 "$tmp/err")"; fi

$QLM run -m "$M" -p "$P" -n 8 --temp 0 --kv-type f16 --prompt-cache "$tmp/pc" >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q '^qlm: warning: prompt cache .*KV types' "$tmp/err"; then
    pass prompt_cache_cli_other_kv_type
else fail prompt_cache_cli_other_kv_type "rc=$rc $(head -2 "$tmp/err")"; fi
