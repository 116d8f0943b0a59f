#!/bin/sh
# qlm run as scripts use it: stdout is only the generated text, errors are
# one line with the documented exit code, nothing waits on stdin.
BUILD=${1:-build}
QLM=${QLM:-./qlm}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$BUILD/tests/test_model" --write-tiny "$tmp/tiny.gguf" || { echo "FAIL run_setup: cannot write tiny model"; exit 1; }
M="$tmp/tiny.gguf"

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
# expect NAME STATUS: checks $rc and that stderr is one "qlm: error:" line
expect_error() {
    name=$1 want=$2
    if [ "$rc" != "$want" ]; then fail "$name" "exit $rc, want $want"; return; fi
    if [ "$(wc -l < "$tmp/err")" != 1 ] || ! grep -q '^qlm: error: ' "$tmp/err"; then
        fail "$name" "stderr is not one 'qlm: error:' line: $(head -3 "$tmp/err")"; return; fi
    if [ -s "$tmp/out" ]; then fail "$name" "stdout not empty"; return; fi
    pass "$name"
}

echo "hello" | $QLM run -m "$M" -n 8 --temp 0 >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ ! -s "$tmp/err" ] && [ -s "$tmp/out" ]; then pass run_stdin_quiet
else fail run_stdin_quiet "rc=$rc stderr=$(head -c 200 "$tmp/err")"; fi

$QLM run -m "$M" -p "hello" -n 8 --temp 0 >"$tmp/out2" 2>/dev/null
if cmp -s "$tmp/out" "$tmp/out2"; then pass run_p_equals_stdin; else fail run_p_equals_stdin "outputs differ"; fi

$QLM run -m "$M" -p "hello" -n 8 --temp 0.9 -s 5 >"$tmp/a" 2>/dev/null
$QLM run -m "$M" -p "hello" -n 8 --temp 0.9 -s 5 >"$tmp/b" 2>/dev/null
if cmp -s "$tmp/a" "$tmp/b"; then pass run_seed_repeatable; else fail run_seed_repeatable "same seed, different text"; fi

$QLM run -m "$M" -p "hello" -n 5 --temp 0 --json >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))
assert set(o) >= {"text", "stop_reason", "tokens", "timings"}, o
assert o["tokens"]["generated"] <= 5 and o["tokens"]["prompt"] >= 1, o
assert o["stop_reason"] in ("length", "eos"), o
' "$tmp/out" 2>"$tmp/py"; then pass run_json; else fail run_json "rc=$rc $(cat "$tmp/py" | tail -1)"; fi

$QLM run -m "$tmp/nope.gguf" -p hi >"$tmp/out" 2>"$tmp/err"; rc=$?
expect_error run_missing_model 2

$QLM run -m "$M" -p hi --bogus >"$tmp/out" 2>"$tmp/err"; rc=$?
expect_error run_unknown_flag 1

$QLM run -m "$M" -p hi -n abc >"$tmp/out" 2>"$tmp/err"; rc=$?
expect_error run_bad_number 1

$QLM run -m "$M" -f "$tmp/missing.txt" >"$tmp/out" 2>"$tmp/err"; rc=$?
expect_error run_missing_prompt_file 2

head -c 3000 /dev/zero | tr '\0' 'x' > "$tmp/long.txt"
$QLM run -m "$M" -f "$tmp/long.txt" -c 64 >"$tmp/out" 2>"$tmp/err"; rc=$?
expect_error run_prompt_longer_than_context 2

# Closed stdin must not block or crash: it is an unreadable input.
timeout 20 $QLM run -m "$M" -n 4 <&- >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 124 ]; then fail run_closed_stdin "blocked"; else expect_error run_closed_stdin 2; fi

# Empty stdin: the tiny model adds no BOS, so the prompt is empty.
timeout 20 $QLM run -m "$M" -n 4 </dev/null >"$tmp/out" 2>"$tmp/err"; rc=$?
expect_error run_empty_prompt 1

# --stop matches generated text: output is everything before the first
# occurrence, whichever tokens the stop string straddles.
$QLM run -m "$M" -p "hello" -n 40 --temp 0 >"$tmp/full" 2>/dev/null
python3 -c '
import sys
t = open(sys.argv[1], "rb").read()
i = len(t) // 2
while i < len(t) - 3 and (0 in t[i:i+3] or 10 in t[i:i+3]): i += 1
open(sys.argv[2], "wb").write(t[i:i+3])' "$tmp/full" "$tmp/stopstr"
$QLM run -m "$M" -p "hello" -n 40 --temp 0 --stop "$(cat "$tmp/stopstr")" >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && python3 -c '
import sys
full, out, stop = (open(f, "rb").read() for f in sys.argv[1:4])
assert len(stop) == 3 and out == full[:full.index(stop)], (out, full, stop)
' "$tmp/full" "$tmp/out" "$tmp/stopstr" 2>"$tmp/py"; then pass run_stop_string; else fail run_stop_string "rc=$rc $(tail -1 "$tmp/py")"; fi

# --chat: the tiny model has no template of its own; a file can supply one.
$QLM run -m "$M" -p hi --chat >"$tmp/out" 2>"$tmp/err"; rc=$?
expect_error run_chat_without_template 2
printf '%s' '{% for m in messages %}<|{{ m.role }}|>{{ m.content | trim }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}' > "$tmp/t.jinja"
$QLM run -m "$M" -p "  hi there " --chat --system "be brief" --chat-template "$tmp/t.jinja" --dump-prompt >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ "$(cat "$tmp/out")" = "<|system|>be brief<|user|>hi there<|assistant|>" ]; then pass run_chat_template_file
else fail run_chat_template_file "rc=$rc out=$(cat "$tmp/out") err=$(head -1 "$tmp/err")"; fi
$QLM run -m "$M" -p hi --chat --chat-template "$tmp/t.jinja" -n 4 --temp 0 >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ ! -s "$tmp/err" ]; then pass run_chat_generates; else fail run_chat_generates "rc=$rc $(head -1 "$tmp/err")"; fi
printf '%s' '{% if messages[0].role == "user" %}{{ raise_exception("need a system turn") }}{% endif %}' > "$tmp/bad.jinja"
$QLM run -m "$M" -p hi --chat --chat-template "$tmp/bad.jinja" >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 1 ] && grep -q '^qlm: error: .*need a system turn' "$tmp/err" && [ "$(wc -l < "$tmp/err")" = 1 ]; then pass run_chat_template_raises
else fail run_chat_template_raises "rc=$rc $(head -2 "$tmp/err")"; fi

$QLM nonsense >"$tmp/out" 2>"$tmp/err"; rc=$?
expect_error unknown_command 1
exit 0
