#!/bin/sh
# Model families at the command line: each generated family model runs, a
# family's own chat template is used when the GGUF has none, and an
# unknown architecture is refused with its name.
BUILD=${1:-build}
QLM=${QLM:-./qlm}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }

for a in qwen2 gemma3 phi3; do
    if ! "$BUILD/tests/test_model" --write-tiny "$tmp/$a.gguf" "$a"; then fail "arch_${a}_runs" "cannot write"; continue; fi
    $QLM run -m "$tmp/$a.gguf" -p "hello" -n 6 --temp 0 >"$tmp/out" 2>"$tmp/err"; rc=$?
    if [ $rc = 0 ] && [ -s "$tmp/out" ]; then pass "arch_${a}_runs"; else fail "arch_${a}_runs" "rc=$rc $(head -c 200 "$tmp/err")"; fi
done

# The generated gemma3 file has no tokenizer.chat_template: gemma's turn
# format applies.  Expected text rendered by Python's jinja2 from the
# template in src/arch.c (BOS is the tiny vocabulary's <|endoftext|>).
printf '<|endoftext|><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n' >"$tmp/want"
$QLM run -m "$tmp/gemma3.gguf" --chat --system "Be brief." -p " Hi " --dump-prompt >"$tmp/got" 2>"$tmp/err"
if cmp -s "$tmp/want" "$tmp/got"; then pass arch_gemma3_default_template
else fail arch_gemma3_default_template "got $(od -c "$tmp/got" | head -3)"; fi

# qlm chat takes the same family template: two piped turns, the second
# reusing the first from the cache
printf 'Hi\nAgain\n' | $QLM chat -m "$tmp/gemma3.gguf" --temp 0 -n 4 -v >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ "$(grep -c 'reused from the cache' "$tmp/err")" = 2 ]; then pass arch_gemma3_chat_default_template
else fail arch_gemma3_chat_default_template "rc=$rc $(head -c 200 "$tmp/err")"; fi

# llama has no template of its own: a GGUF without one is a clear error
"$BUILD/tests/test_model" --write-tiny "$tmp/llama.gguf"
$QLM run -m "$tmp/llama.gguf" --chat -p "Hi" --dump-prompt >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 2 ] && grep -q 'has no chat template' "$tmp/err"; then pass arch_no_template_error
else fail arch_no_template_error "rc=$rc $(cat "$tmp/err")"; fi

# an unknown architecture is refused, naming it and what qlm supports
python3 - "$tmp/llama.gguf" "$tmp/phi9.gguf" <<'PY'
import sys
b = open(sys.argv[1], "rb").read()
# same length keeps every offset valid: "llama" -> "phi9x" everywhere
open(sys.argv[2], "wb").write(b.replace(b"llama", b"phi9x"))
PY
$QLM run -m "$tmp/phi9.gguf" -p "Hi" -n 2 >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "architecture 'phi9x' is not supported (supported: llama, qwen2, gemma3, phi3)" "$tmp/err"
then pass arch_unknown_refused; else fail arch_unknown_refused "rc=$rc $(cat "$tmp/err")"; fi
