#!/bin/sh
# Conformance (QLM_CONFORMANCE=1, `make conformance`): perplexity of the
# default model on tests/data/ppl/python311-reference.txt over the first
# CHUNKS chunks of 512: int8 KV within +0.5% of f32 KV, and f16 KV within
# 1% of llama-perplexity's -ctk f16 -ctv f16 (tests/data/ppl/llama-f16-c512.txt).
BUILD=${1:-build}
QLM=${QLM:-./qlm}
[ -n "$QLM_CONFORMANCE" ] || exit 0
M=models/SmolLM2-135M-Instruct.Q4_1.gguf
T=tests/data/ppl/python311-reference.txt
CHUNKS=${PPL_CHUNKS:-6}
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
[ -f "$M" ] || { fail ppl_model "$M missing (make model)"; exit 0; }
ppl() { # kv type -> running PPL after CHUNKS chunks
    $QLM perplexity -m "$M" -f "$T" -c 512 --chunks "$CHUNKS" --kv-type "$1" 2>/dev/null |
        tr ',' '\n' | sed -n "s/^\[$CHUNKS\]\([0-9.]*\).*/\1/p"
}
f32=$(ppl f32); i8=$(ppl int8); f16=$(ppl f16)
ref=$(sed -n '3p' tests/data/ppl/llama-f16-c512.txt | tr ' ' '\n' | sed -n "s/^\[$CHUNKS\]\([0-9.]*\)$/\1/p")
if [ -n "$f32" ] && [ -n "$i8" ] && awk -v a="$i8" -v b="$f32" 'BEGIN { exit !(a <= b * 1.005) }'; then
    pass "ppl_int8_within_0.5pct_of_f32 ($i8 vs $f32)"
else fail ppl_int8_within_0.5pct_of_f32 "int8 '$i8' f32 '$f32'"; fi
if [ -n "$f16" ] && [ -n "$ref" ] && awk -v a="$f16" -v b="$ref" 'BEGIN { d = a / b - 1; exit !(d < 0.01 && d > -0.01) }'; then
    pass "ppl_f16_within_1pct_of_llama_cpp ($f16 vs $ref)"
else fail ppl_f16_within_1pct_of_llama_cpp "qlm f16 '$f16' llama.cpp '$ref'"; fi
