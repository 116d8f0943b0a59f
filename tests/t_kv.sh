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
