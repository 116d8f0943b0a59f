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

# llama.cpp's -ngl is taken (scripts pass it), with one warning line when
# it asks for GPU layers this qlm does not have; the text is the CPU's.
$QLM run -m "$M" -p "hello" -n 8 --temp 0 -ngl 99 >"$tmp/out" 2>"$tmp/err"; rc=$?
$QLM run -m "$M" -p "hello" -n 8 --temp 0 >"$tmp/out2" 2>/dev/null
if [ $rc = 0 ] && cmp -s "$tmp/out" "$tmp/out2" && [ "$(wc -l < "$tmp/err")" = 1 ] \
    && grep -q '^qlm: warning: -ngl 99: .*no GPU offload' "$tmp/err"; then pass run_ngl_cpu_warning
else fail run_ngl_cpu_warning "rc=$rc stderr=$(head -c 200 "$tmp/err")"; fi
$QLM run -m "$M" -p "hello" -n 8 --temp 0 --n-gpu-layers 0 >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ ! -s "$tmp/err" ] && cmp -s "$tmp/out" "$tmp/out2"; then pass run_ngl_zero_quiet
else fail run_ngl_zero_quiet "rc=$rc stderr=$(head -c 200 "$tmp/err")"; fi
$QLM run -m "$M" -p hi -ngl lots >"$tmp/out" 2>"$tmp/err"; rc=$?
expect_error run_ngl_bad_value 1

# -b and -ub (llama.cpp's logical and physical batch) both bound a
# forward pass, the smaller winning in either order; the text is the same.
$QLM run -m "$M" -p "hello" -n 8 --temp 0 -v -b 64 -ub 8 >"$tmp/out" 2>"$tmp/err"; rc=$?
$QLM run -m "$M" -p "hello" -n 8 --temp 0 -v --ubatch-size 8 --batch-size 64 >"$tmp/out3" 2>"$tmp/err3"; rc3=$?
if [ $rc = 0 ] && [ $rc3 = 0 ] && grep -q 'forward passes of up to 8 prompt tokens' "$tmp/err" \
    && grep -q 'forward passes of up to 8 prompt tokens' "$tmp/err3" && cmp -s "$tmp/out" "$tmp/out2" \
    && cmp -s "$tmp/out3" "$tmp/out2"; then pass run_batch_ubatch
else fail run_batch_ubatch "rc=$rc/$rc3 $(grep forward "$tmp/err" "$tmp/err3")"; fi
$QLM run -m "$M" -p hi -ub 0 >"$tmp/out" 2>"$tmp/err"; rc=$?
expect_error run_ubatch_bad_value 1

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

# --- prompt from -p and stdin together ---
printf 'file text\nsecond line\n' > "$tmp/notes.txt"
cat "$tmp/notes.txt" | $QLM run -m "$M" -p "Summarise:" --dump-prompt >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ "$(cat "$tmp/out")" = "$(printf 'Summarise:\nfile text\nsecond line')" ] && [ "$(tail -c 1 "$tmp/out" | od -An -c | tr -d ' ')" = e ]
then pass run_p_plus_piped_stdin; else fail run_p_plus_piped_stdin "rc=$rc out=$(cat "$tmp/out")"; fi
$QLM run -m "$M" -p "Summarise:" --dump-prompt <"$tmp/notes.txt" >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ "$(cat "$tmp/out")" = "$(printf 'Summarise:\nfile text\nsecond line')" ]
then pass run_p_plus_redirected_file; else fail run_p_plus_redirected_file "rc=$rc out=$(cat "$tmp/out")"; fi
$QLM run -m "$M" -f "$tmp/notes.txt" --dump-prompt </dev/null >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ "$(cat "$tmp/out")" = "$(printf 'file text\nsecond line')" ]
then pass run_f_with_dev_null; else fail run_f_with_dev_null "rc=$rc out=$(cat "$tmp/out")"; fi
timeout 20 $QLM run -m "$M" -p "only this" --dump-prompt <&- >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ "$(cat "$tmp/out")" = "only this" ]; then pass run_p_closed_stdin
else fail run_p_closed_stdin "rc=$rc out=$(cat "$tmp/out") $(head -1 "$tmp/err")"; fi
# A `while read` loop's input is the loop's, not qlm's.
printf 'one\ntwo\nthree\n' > "$tmp/list"
while read -r l; do timeout 20 $QLM run -m "$M" -p "$l" --dump-prompt; echo; done <"$tmp/list" >"$tmp/out" 2>"$tmp/err"
if [ "$(cat "$tmp/out")" = "$(printf 'one\ntwo\nthree')" ]; then pass run_while_read_loop_keeps_stdin
else fail run_while_read_loop_keeps_stdin "out=$(cat "$tmp/out" | tr '\n' '|')"; fi

# --- stdout is exactly the generated text: no banner, no newline added ---
$QLM run -m "$M" -p "hello" -n 12 --temp 0 >"$tmp/plain" 2>"$tmp/err"
$QLM run -m "$M" -p "hello" -n 12 --temp 0 --json >"$tmp/json" 2>/dev/null
if [ ! -s "$tmp/err" ] && python3 -c '
import json, sys
text = json.load(open(sys.argv[1]))["text"]
raw = open(sys.argv[2], "rb").read()
# --json writes each byte of an invalid UTF-8 sequence as U+FFFD
out, i = "", 0
while i < len(raw):
    for n in (1, 2, 3, 4):
        try:
            out += raw[i:i + n].decode("utf-8"); i += n; break
        except UnicodeDecodeError:
            pass
    else:
        out += "\ufffd"; i += 1
assert out == text and len(raw) > 0, (raw, text)' "$tmp/json" "$tmp/plain" 2>"$tmp/py"
then pass run_stdout_exact; else fail run_stdout_exact "$(tail -1 "$tmp/py") $(head -1 "$tmp/err")"; fi

# --- exit codes: write failure 3, reader gone 0, SIGINT 130 ---
$QLM run -m "$M" -p hello -n 8 >/dev/full 2>"$tmp/err"; rc=$?
if [ $rc = 3 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q '^qlm: error: writing the output' "$tmp/err"; then pass run_write_error_exit_3
else fail run_write_error_exit_3 "rc=$rc $(head -2 "$tmp/err")"; fi
$QLM run -m "$M" -p hello -n 2000 -c 4096 --temp 0 2>"$tmp/err" | head -c 1 >/dev/null
if [ ! -s "$tmp/err" ]; then pass run_broken_pipe_quiet; else fail run_broken_pipe_quiet "$(head -2 "$tmp/err")"; fi
# emptied first: the background job's own truncation may come after the
# first poll, and an earlier test's output would pass for qlm's
: > "$tmp/out"
$QLM run -m "$M" -p hello -n 1000000 -c 65536 --temp 0 >"$tmp/out" 2>"$tmp/err" &
pid=$!
# Output shows the SIGINT handler is in place (a background job of a
# script starts with SIGINT ignored until qlm installs its own); a watchdog
# keeps a lost signal from hanging the suite.
n=0; while [ ! -s "$tmp/out" ] && [ $n -lt 2400 ]; do sleep 0.05; n=$((n + 1)); done
kill -INT $pid; ( sleep 60; kill -9 $pid 2>/dev/null ) & dog=$!
wait $pid; rc=$?
kill $dog 2>/dev/null
if [ $rc = 130 ] && [ -s "$tmp/out" ]; then pass run_sigint_exit_130; else fail run_sigint_exit_130 "rc=$rc, $(wc -c < "$tmp/out") bytes out"; fi

# --- a terminal on stdin: with -p it is ignored, without it is refused;
# neither waits (tmux gives qlm a real terminal) ---
if command -v tmux >/dev/null; then
    S="$tmp/tmux.sock"
    Qabs=$QLM; case "$Qabs" in /*) ;; *) Qabs="$(pwd)/$Qabs" ;; esac
    tmux -S "$S" -f /dev/null new-session -d -x 120 -y 20 \
        "$Qabs run -m $M -p hi -n 4 --temp 0 >/dev/null 2>&1; echo __P=\$?; $Qabs run -m $M -n 4 2>&1; echo __NOP=\$?; sleep 600"
    n=0; while [ $n -lt 600 ] && ! tmux -S "$S" capture-pane -p | grep -q '^__NOP='; do sleep 0.1; n=$((n + 1)); done
    pane=$(tmux -S "$S" capture-pane -p)
    tmux -S "$S" kill-server 2>/dev/null
    if echo "$pane" | grep -q '^__P=0' && echo "$pane" | grep -q '^__NOP=1' && echo "$pane" | grep -q 'qlm: error: no prompt'
    then pass run_terminal_stdin_never_waits; else fail run_terminal_stdin_never_waits "$(echo "$pane" | grep -v '^$' | tail -3)"; fi
else fail run_terminal_stdin_never_waits "tmux is not installed"; fi

# --ignore-eos: the tiny model ends "hi" early at temperature 0; banned,
# the end never comes and -n decides (greedy and sampled alike).
eos=$($QLM run -m $M -p hi -n 100 --temp 0 --json </dev/null | tail -1)
all=$($QLM run -m $M -p hi -n 100 --temp 0 --json --ignore-eos </dev/null | tail -1)
hot=$($QLM run -m $M -p hi -n 100 --temp 1.5 --top-k 0 --min-p 0 -s 3 --json --ignore-eos </dev/null | tail -1)
if python3 -c 'import json, sys
e, a, h = (json.loads(x) for x in sys.argv[1:4])
assert e["stop_reason"] == "eos" and e["tokens"]["generated"] < 100, e
for x in a, h: assert x["stop_reason"] == "length" and x["tokens"]["generated"] == 100, x
assert a["text"].startswith(e["text"]), (a["text"][:80], e["text"][:80])' "$eos" "$all" "$hot" 2>"$tmp/py"
then pass run_ignore_eos; else fail run_ignore_eos "$(tail -1 "$tmp/py" | cut -c1-200)"; fi

$QLM nonsense >"$tmp/out" 2>"$tmp/err"; rc=$?
expect_error unknown_command 1
exit 0
