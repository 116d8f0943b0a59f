#!/bin/sh
# qlm chat end to end: in a real terminal (tmux) with keys typed into it,
# and with piped input.  A tiny generated model keeps it fast; its replies
# are random bytes, so the checks read the conversation back from /save
# and the -v lines ("prompt N tokens: K reused from the cache").  Nothing
# is timed: every wait polls the pane for the text it expects, with a
# generous deadline.
BUILD=${1:-build}
QLM=${QLM:-./qlm}
case "$QLM" in /*) ;; *) QLM="$(pwd)/$QLM" ;; esac
tmp=$(mktemp -d)
S="$tmp/tmux.sock"
# A long reply (random bytes, newlines included) must not push the start
# of the conversation out of the pane's history: the checks read all of it.
# The pane runs /bin/sh whatever $SHELL is; the wrapper traps SIGINT (a
# non-interactive sh would die of the Ctrl-C meant for qlm, taking the pane
# with it), and qlm, started with SIGINT at its default, installs its own.
printf 'set -g history-limit 1000000\nset -g default-shell /bin/sh\n' > "$tmp/tmux.conf"
tm() { tmux -S "$S" -f "$tmp/tmux.conf" "$@"; }
trap 'tm kill-server 2>/dev/null; rm -rf "$tmp"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }

"$BUILD/tests/test_model" --write-tiny "$tmp/tiny.gguf" || { echo "FAIL chat_setup: cannot write tiny model"; exit 1; }
printf '%s' '{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}' > "$tmp/t.jinja"
CHAT="$QLM chat -m $tmp/tiny.gguf --chat-template $tmp/t.jinja --temp 0 -v"

# --- piped input: each line a turn, stdout only the replies ---
printf 'hello\nagain\n/save %s\n' "$tmp/p.json" | $CHAT -n 6 >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ "$(grep -c 'reused from the cache' "$tmp/err")" = 2 ] && python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))["messages"]
assert [x["role"] for x in m] == ["user", "assistant"] * 2, m
assert m[0]["content"] == "hello" and m[2]["content"] == "again", m
' "$tmp/p.json" 2>"$tmp/py"; then pass chat_piped_turns
else fail chat_piped_turns "rc=$rc $(tail -1 "$tmp/py") $(head -3 "$tmp/err")"; fi

# The second turn's prompt holds the first exchange, and the first prompt
# is not decoded again.  (The tiny model's replies are random bytes, often
# invalid UTF-8, which tokenizes differently when re-rendered: with a real
# model the reply's tokens are reused too.)
first=$(sed -n 's/.*prompt \([0-9]*\) tokens:.*generated \([0-9]*\) tokens.*/\1 \2/p' "$tmp/err" | head -1)
second=$(sed -n 's/.*prompt \([0-9]*\) tokens: \([0-9]*\) reused.*/\1 \2/p' "$tmp/err" | sed -n 2p)
if [ -n "$first" ] && [ -n "$second" ] && python3 -c '
import sys
p1, g1, p2, r2 = map(int, sys.argv[1:5])
assert r2 >= p1 and p2 > p1 + g1 // 2, (p1, g1, p2, r2)' $first $second 2>"$tmp/py"; then pass chat_prefix_reused
else fail chat_prefix_reused "turn 1 (prompt, generated): $first; turn 2 (prompt, reused): $second"; fi

printf '/load %s\nonce more\n' "$tmp/p.json" | $CHAT -n 4 >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && grep -q 'loaded 4 messages' "$tmp/err" && grep -q 'reused from the cache' "$tmp/err"; then pass chat_load_resumes
else fail chat_load_resumes "rc=$rc $(head -3 "$tmp/err")"; fi

# A conversation longer than the context drops its oldest exchanges (the
# system message stays, and stays reused from the cache) and goes on.
printf 'first message here\nsecond message is here\nthird message comes now\nfourth one\n/save %s\n' "$tmp/sw.json" |
    $CHAT -c 128 -n 16 --system "be brief" >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ "$(grep -c 'reused from the cache' "$tmp/err")" = 4 ] && grep -q 'oldest messages were dropped' "$tmp/err" &&
   ! grep -q 'error' "$tmp/err" && python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))["messages"]
assert m[0] == {"role": "system", "content": "be brief"} and m[-2]["content"] == "fourth one" and len(m) < 9, m
' "$tmp/sw.json" 2>"$tmp/py"; then pass chat_context_drops_oldest
else fail chat_context_drops_oldest "rc=$rc $(tail -1 "$tmp/py") $(head -3 "$tmp/err")"; fi

# A bad transcript given to /load is one error line; the chat goes on.
printf '{"messages": [{"role": "user"}]}' > "$tmp/bad.json"
printf '/load %s\n/nonsense\nhello\n' "$tmp/bad.json" | $CHAT -n 3 >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ "$(grep -c '^qlm: error: ' "$tmp/err")" = 2 ] && grep -q 'bad.json: each message needs' "$tmp/err" &&
   grep -q 'reused from the cache' "$tmp/err"; then pass chat_bad_load_and_command_go_on
else fail chat_bad_load_and_command_go_on "rc=$rc $(head -3 "$tmp/err")"; fi

$CHAT --load "$tmp/missing.json" </dev/null >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q '^qlm: error: ' "$tmp/err"; then pass chat_load_missing
else fail chat_load_missing "rc=$rc $(head -2 "$tmp/err")"; fi

# Speculative replies (-md, a deliberately bad draft included, and
# --lookup) are the plain replies at temperature 0, turn after turn: each
# turn starts from caches a stopped reply left (-n ends replies mid-round,
# as Ctrl-C does), reusing the earlier turns in the target's and the
# draft's cache.  A repetitive system message gives lookup something to
# continue.
"$BUILD/tests/test_spec" --write-draft bad "$tmp/tiny.gguf" "$tmp/bad.gguf" || echo "FAIL chat_setup: cannot write a bad draft"
printf 'hello hello world\nagain hello world hello\nand a third one\n/save %s\n' "$tmp/plain.json" > "$tmp/in"
SYS="say hello world hello world hello world"
$CHAT -n 24 --system "$SYS" <"$tmp/in" >"$tmp/plain.out" 2>"$tmp/err"; rc=$?
same=1; [ $rc = 0 ] || { same=0; echo "# plain: rc=$rc $(head -2 "$tmp/err")"; }
# (--draft-fixed: adaptive mode would pause a draft as big as the target)
for flags in "-md $tmp/tiny.gguf --draft-fixed" "-md $tmp/bad.gguf --draft 3 --draft-fixed" "--lookup" "--lookup --draft 2 --draft-fixed"; do
    sed "s|$tmp/plain.json|$tmp/spec.json|" "$tmp/in" | $CHAT -n 24 --system "$SYS" $flags >"$tmp/spec.out" 2>"$tmp/err"; rc=$?
    if [ $rc != 0 ]; then same=0; echo "# $flags: rc=$rc $(head -2 "$tmp/err")"; continue; fi
    cmp -s "$tmp/plain.out" "$tmp/spec.out" || { same=0; echo "# $flags: replies differ"; }
    cmp -s "$tmp/plain.json" "$tmp/spec.json" || { same=0; echo "# $flags: saved conversations differ"; }
    [ "$(grep -c '^qlm: speculative (' "$tmp/err")" = 3 ] || { same=0; echo "# $flags: no stats line per reply"; }
    [ "$(grep -c 'reused from the cache' "$tmp/err")" = 3 ] || { same=0; echo "# $flags: no cache line per reply"; }
    # the target as its own draft: every reply has accepted drafts
    case $flags in "-md $tmp/tiny.gguf"*) [ "$(grep -c 'accepted [1-9]' "$tmp/err")" = 3 ] ||
        { same=0; echo "# $flags: drafts not accepted: $(grep speculative "$tmp/err" | head -1)"; } ;; esac
done
if [ $same = 1 ]; then pass chat_spec_greedy_identical; else fail chat_spec_greedy_identical "see above"; fi
$CHAT -md "$tmp/tiny.gguf" --lookup </dev/null >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 1 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q '^qlm: error: .*choose one' "$tmp/err"; then pass chat_spec_two_drafters
else fail chat_spec_two_drafters "rc=$rc $(head -2 "$tmp/err")"; fi

# --chat-template NAME|FILE: the built-ins by name for run and chat (batch:
# t_batch.sh), a list, and a usage error naming them for anything else.
$QLM run --chat-template list >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ ! -s "$tmp/err" ] && [ "$(cut -d' ' -f1 "$tmp/out" | tr '\n' ' ')" = "chatml llama2 llama3 mistral gemma phi3 zephyr deepseek " ]
then pass template_list; else fail template_list "rc=$rc $(head -3 "$tmp/out")"; fi
for cmd in "run --chat -p hi" "chat"; do
    $QLM $cmd -m "$tmp/tiny.gguf" --chat-template no-such </dev/null >"$tmp/out" 2>"$tmp/err"; rc=$?
    if [ $rc = 1 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q "^qlm: error: --chat-template no-such: not a built-in template (chatml, llama2, .*deepseek) nor a readable file" "$tmp/err" &&
       [ ! -s "$tmp/out" ]; then pass "template_unknown_name_usage_error_${cmd%% *}"
    else fail "template_unknown_name_usage_error_${cmd%% *}" "rc=$rc $(head -2 "$tmp/err")"; fi
done
$QLM run -m "$tmp/tiny.gguf" --chat --chat-template chatml --system "Be brief." -p "hi" --dump-prompt >"$tmp/out" 2>"$tmp/err"; rc=$?
printf '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n' > "$tmp/want"
if [ $rc = 0 ] && cmp -s "$tmp/out" "$tmp/want"; then pass template_name_run; else fail template_name_run "rc=$rc $(head -c 300 "$tmp/out")"; fi
# a path wins when it is one: a file called chatml is read, not the built-in
printf '%s' '{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}' > "$tmp/chatml"
$QLM run -m "$tmp/tiny.gguf" --chat --chat-template "$tmp/chatml" -p "hi" --dump-prompt >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ "$(cat "$tmp/out")" = "[user]hi" ]; then pass template_file_path; else fail template_file_path "rc=$rc $(head -c 300 "$tmp/out")"; fi
# a chat with a built-in: its turns render through it (the second turn
# reuses the first from the cache, so the rendering is stable)
printf 'hello\nagain\n' | $QLM chat -m "$tmp/tiny.gguf" --chat-template llama3 --temp 0 -n 4 -v >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ "$(grep -c 'reused from the cache' "$tmp/err")" = 2 ]; then pass template_name_chat
else fail template_name_chat "rc=$rc $(head -3 "$tmp/err")"; fi
# the built-ins against Python's jinja2 and the reference templates
if python3 -c 'import jinja2' 2>/dev/null; then python3 tools/check_named_templates.py
else echo "# template_jinja2_crosscheck skipped: python3 has no jinja2 (pip install jinja2)"; fi

# Ctrl-C while a write to the terminal waits (the terminal stopped its
# output: XOFF, Ctrl-S, which blocks the next write at once however few
# bytes the reply has): the reply stops and the chat goes on.  Once, such
# an interrupted write ended the chat with status 0.  A pty of our own,
# because tmux cannot be told to stop its output.
python3 - "$tmp" $CHAT -n 100000 -c 32768 --no-history --ignore-eos <<'PY' >"$tmp/py" 2>&1
import os, pty, select, signal, sys, time
tmp, argv = sys.argv[1], sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.environ["HOME"] = tmp
    os.execvp(argv[0], argv)
def read_until(text, secs=60, buf=b""):
    end = time.time() + secs
    while text not in buf and time.time() < end:
        if select.select([fd], [], [], 0.1)[0]:
            try: buf += os.read(fd, 65536)
            except OSError: break
    return buf
def cpu():   # utime + stime of the whole process
    return sum(map(int, open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[11:13]))
try:
    assert b">>> " in read_until(b">>> "), "no prompt"
    os.write(fd, b"hello\r")
    # once the reply has begun (the terminal is out of the line editor's
    # raw mode, so IXON holds again), stop the output; the reply then
    # blocks in write: no CPU time for a while
    end_line = b"\x1b[?2004l\r\n"   # the line editor is done with the line
    out = read_until(end_line)
    while end_line in out and not out.split(end_line, 1)[1] and select.select([fd], [], [], 60)[0]:
        out += os.read(fd, 65536)
    assert end_line in out and out.split(end_line, 1)[1], "no reply: %r" % out[-200:]
    os.write(fd, b"\x13")
    end, last, still = time.time() + 60, -1, 0
    while still < 3 and time.time() < end:
        time.sleep(0.2)
        now = cpu()
        still = still + 1 if now == last else 0
        last = now
    assert still >= 3, "the reply never blocked on the terminal"
    os.write(fd, b"\x03")
    out = read_until(b"stop: interrupted")
    assert b"stop: interrupted" in out, "no stop line: %r" % out[-200:]
    out = read_until(b">>> ", buf=out.split(b"stop: interrupted", 1)[1])
    assert b">>> " in out and not os.waitpid(pid, os.WNOHANG)[0], "the chat ended: %r" % out[-200:]
    os.write(fd, b"\x04")
    read_until(b"never", 2)
    _, st = os.waitpid(pid, 0)
    assert os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0, "exit status %r" % st
finally:
    try: os.kill(pid, signal.SIGKILL)
    except OSError: pass
PY
if [ $? = 0 ]; then pass chat_tty_ctrl_c_blocked_write; else fail chat_tty_ctrl_c_blocked_write "$(tail -1 "$tmp/py")"; fi

# --- in a terminal ---
if ! command -v tmux >/dev/null; then fail chat_tmux "tmux is not installed"; exit 0; fi

# start NAME ARGS: a chat in a detached tmux session; when it exits the
# pane shows "__EXIT=<status>" and stays open for the checks.
start() {
    name=$1; shift
    tm new-session -d -s "$name" -x 160 -y 50 \
        "trap : INT; env HOME=$tmp XDG_STATE_HOME= $CHAT $*; echo __EXIT=\$?; sleep 600"
}
pane() { tm capture-pane -p -J -S - -t "$1" 2>/dev/null; }
# wait_for NAME PATTERN [COUNT]: until the pane has COUNT lines matching
# PATTERN (grep -E), at most 60 s.  Returns 1 on timeout.
wait_for() {
    n=0
    while [ $n -lt 600 ]; do
        [ "$(pane "$1" | grep -cE -- "$2")" -ge "${3:-1}" ] && return 0
        sleep 0.1; n=$((n + 1))
    done
    return 1
}
# reply_started NAME MSG: the pane shows reply text after the ">>> MSG" line
# (not the "(reading N tokens" note a long prompt gets first).
reply_started() {
    n=0
    while [ $n -lt 600 ]; do
        pane "$1" | awk -v m=">>> $2" 'f && /[^ ]/ && !/^\(reading / { ok = 1 } index($0, m) == 1 { f = 1 } END { exit !ok }' && return 0
        sleep 0.1; n=$((n + 1))
    done
    return 1
}
keys() { s=$1; shift; tm send-keys -t "$s" "$@"; }
# what the pane's processes are doing (for a failure's message): state and
# kernel wait channel of each thread below the pane's shell
procs() {
    for p in $(pgrep -P "$(tm display -p -t "$1" '#{pane_pid}' 2>/dev/null)" 2>/dev/null); do
        for t in /proc/$p/task/*; do
            printf '%s:%s:%s ' "$(cut -d' ' -f2 $t/stat 2>/dev/null)" "$(cut -d' ' -f3 $t/stat 2>/dev/null)" "$(cat $t/wchan 2>/dev/null)"
        done
    done
}
saved() { # saved FILE PYTHON-ASSERTS: checks the /save'd messages list m
    f=$1; shift
    n=0; while [ ! -s "$f" ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
    python3 -c "import json, sys
m = json.load(open(sys.argv[1]))['messages']
$1" "$f" 2>"$tmp/py"
}

# Two turns, then Ctrl-D.
start two -n 8 --no-history
if wait_for two '^>>> ' && keys two 'hello' Enter && wait_for two 'stop: ' 1 &&
   keys two 'again' Enter && wait_for two 'stop: ' 2 && keys two "/save $tmp/two.json" Enter &&
   saved "$tmp/two.json" 'assert [x["content"] for x in m[::2]] == ["hello", "again"] and len(m) == 4, m'
then pass chat_tty_two_turns
else fail chat_tty_two_turns "$(tail -1 "$tmp/py") $(pane two | tail -5)"; fi
keys two C-d
if wait_for two '^__EXIT=0'; then pass chat_tty_ctrl_d_exits; else fail chat_tty_ctrl_d_exits "$(pane two | tail -3)"; fi

# Ctrl-C in the middle of a long reply: the reply stops, the prompt comes
# back, and the next turn is decoded on top of the whole history (the
# partial reply included).  Then Ctrl-C at the empty prompt quits.  Again
# with speculative replies (_spec): the stop lands mid-round, and both
# caches are reused by the next turn.  --ignore-eos: the tiny model must
# not end a reply before the Ctrl-C lands, however slow the machine is.
for sfx in "" _spec; do
extra=; [ -n "$sfx" ] && extra="-md $tmp/tiny.gguf --draft-fixed"
cc=cc$sfx
start $cc -n 100000 -c 32768 --no-history --ignore-eos $extra
if wait_for $cc '^>>> ' && keys $cc 'hello' Enter && reply_started $cc hello && keys $cc C-c &&
   wait_for $cc 'stop: interrupted' && wait_for $cc '^>>> ' 2; then pass chat_tty_ctrl_c_stops_reply$sfx
else fail chat_tty_ctrl_c_stops_reply$sfx "$(pane $cc | grep -v "^ *$" | tail -6 | cut -c1-150) [$(procs $cc)]"; fi
keys $cc 'more' Enter
if reply_started $cc more && keys $cc C-c && wait_for $cc 'stop: interrupted' 2 && keys $cc "/save $tmp/$cc.json" Enter &&
   saved "$tmp/$cc.json" '
assert [x["role"] for x in m] == ["user", "assistant"] * 2, m
assert m[0]["content"] == "hello" and m[2]["content"] == "more" and m[1]["content"], m'; then
    first=$(pane $cc | sed -n 's/.*prompt \([0-9]*\) tokens:.*generated \([0-9]*\) tokens.*/\1 \2/p' | head -1)
    second=$(pane $cc | sed -n 's/.*prompt \([0-9]*\) tokens: \([0-9]*\) reused.*/\1 \2/p' | sed -n 2p)
    if [ -n "$first" ] && [ -n "$second" ] && python3 -c '
import sys
p1, g1, p2, r2 = map(int, sys.argv[1:5])
assert r2 >= p1 and p2 > p1 + g1 // 2, (p1, g1, p2, r2)' $first $second 2>"$tmp/py"; then pass chat_tty_history_after_ctrl_c$sfx
    else fail chat_tty_history_after_ctrl_c$sfx "turn 1 (prompt, partial reply): $first; turn 2 (prompt, reused): $second"; fi
else fail chat_tty_history_after_ctrl_c$sfx "$(tail -1 "$tmp/py") $(pane $cc | grep -v "^ *$" | tail -6 | cut -c1-150)"; fi
# Ctrl-C at an empty prompt after other input asks first, then quits.
wait_for $cc '^>>> ' 4 && keys $cc C-c
if wait_for $cc 'Ctrl-C again' && keys $cc C-c && wait_for $cc '^__EXIT=0'; then pass chat_tty_ctrl_c_twice_exits$sfx
else fail chat_tty_ctrl_c_twice_exits$sfx "$(pane $cc | grep -v "^ *$" | tail -6 | cut -c1-150)"; fi

if [ -n "$sfx" ] && [ "$(pane $cc | grep -c '^qlm: speculative (model)')" -ge 2 ]; then pass chat_tty_spec_stats_per_reply
elif [ -n "$sfx" ]; then fail chat_tty_spec_stats_per_reply "$(pane $cc | grep -v "^ *$" | tail -6 | cut -c1-150)"; fi
done

# The Ctrl-C that stops a reply counts as the first: one more at the empty
# prompt quits.
start cc2 -n 100000 -c 32768 --no-history --ignore-eos
if wait_for cc2 '^>>> ' && keys cc2 'hi' Enter && reply_started cc2 hi && keys cc2 C-c &&
   wait_for cc2 'stop: interrupted' && wait_for cc2 '^>>> ' 2 && keys cc2 C-c && wait_for cc2 '^__EXIT=0'
then pass chat_tty_ctrl_c_after_stop_exits; else fail chat_tty_ctrl_c_after_stop_exits "$(pane cc2 | grep -v "^ *$" | tail -6 | cut -c1-150) [$(procs cc2)]"; fi

# Ctrl-C while a long prompt is being read (a loaded transcript of 30000
# tokens): the read stops, the message is dropped, the chat goes on.
python3 -c '
import json, sys
json.dump({"messages": [{"role": "user", "content": "he " * 15000}, {"role": "assistant", "content": "ok"}]},
          open(sys.argv[1], "w"))' "$tmp/big.json"
start pp -n 4 -c 65536 --no-history --load "$tmp/big.json"
if wait_for pp '^>>> ' && keys pp 'hello' Enter && wait_for pp 'reading [0-9]* tokens' && keys pp C-c &&
   wait_for pp '\(stopped\)' && wait_for pp '^>>> ' 2 && keys pp "/save $tmp/pp.json" Enter &&
   saved "$tmp/pp.json" 'assert [x["role"] for x in m] == ["user", "assistant"] and m[1]["content"] == "ok", m' &&
   ! pane pp | grep -q 'reused from the cache'
then pass chat_tty_ctrl_c_during_prompt; else fail chat_tty_ctrl_c_during_prompt "$(tail -1 "$tmp/py") $(pane pp | tail -4)"; fi
keys pp C-d

# /reset, line editing, history recall, a """ block and a bracketed paste.
start ed -n 4
ok=1
wait_for ed '^>>> ' || ok=0
keys ed 'first' Enter; wait_for ed 'stop: ' 1 || ok=0
keys ed '/reset' Enter; wait_for ed 'conversation cleared' || ok=0
keys ed 'wrld' Home 'hello ' End '!' Left Left Left Left 'o' Enter; wait_for ed 'stop: ' 2 || ok=0
keys ed Up Enter; wait_for ed 'stop: ' 3 || ok=0
keys ed '"""' Enter 'line one' Enter 'line two"""' Enter; wait_for ed 'stop: ' 4 || ok=0
tm set-buffer -b p "$(printf 'pasted\nlines')"
tm paste-buffer -p -b p -t ed; keys ed Enter; wait_for ed 'stop: ' 5 || ok=0
keys ed 'abc def' C-w 'xyz' C-a C-k 'kept' Enter; wait_for ed 'stop: ' 6 || ok=0
keys ed "/save $tmp/ed.json" Enter
if [ $ok = 1 ] && saved "$tmp/ed.json" '
u = [x["content"] for x in m if x["role"] == "user"]
assert u == ["hello world!", "hello world!", "line one\nline two", "pasted\nlines", "kept"], u'
then pass chat_tty_reset_editing_multiline
else fail chat_tty_reset_editing_multiline "ok=$ok $(tail -1 "$tmp/py") $(pane ed | tail -4)"; fi
if grep -qx 'hello world!' "$tmp/.local/state/qlm/chat_history" && grep -qx 'line one\\nline two' "$tmp/.local/state/qlm/chat_history"
then pass chat_tty_history_file; else fail chat_tty_history_file "$(head -5 "$tmp/.local/state/qlm/chat_history" 2>&1)"; fi
keys ed '/exit' Enter
if wait_for ed '^__EXIT=0'; then pass chat_tty_exit_command; else fail chat_tty_exit_command "$(pane ed | tail -3)"; fi

# --- the default model (make conformance): two turns in the terminal; the
# second decodes only the new text, the first exchange (all but the reply's
# last token, which was sampled but never decoded) comes from the cache ---
DM=$(pwd)/models/SmolLM2-135M-Instruct.Q4_1.gguf
if [ "${QLM_CONFORMANCE:-0}" = 1 ] && [ -f "$DM" ]; then
    tm new-session -d -s sm -x 160 -y 50 \
        "trap : INT; env HOME=$tmp $QLM chat -m $DM --temp 0 -v -n 32 -c 1024 --no-history; echo __EXIT=\$?; sleep 600"
    if wait_for sm '^>>> ' && keys sm 'What is the capital of France?' Enter && wait_for sm 'stop: ' 1 &&
       keys sm 'And of Germany?' Enter && wait_for sm 'stop: ' 2; then
        first=$(pane sm | sed -n 's/.*prompt \([0-9]*\) tokens:.*generated \([0-9]*\) tokens.*/\1 \2/p' | head -1)
        second=$(pane sm | sed -n 's/.*prompt \([0-9]*\) tokens: \([0-9]*\) reused.*/\1 \2/p' | sed -n 2p)
        if [ -n "$first" ] && [ -n "$second" ] && python3 -c '
import sys
p1, g1, p2, r2 = map(int, sys.argv[1:5])
assert r2 >= p1 + g1 - 1 and p2 > r2, (p1, g1, p2, r2)' $first $second 2>"$tmp/py"; then pass chat_default_model_reuses_turns
        else fail chat_default_model_reuses_turns "turn 1 (prompt, generated): $first; turn 2 (prompt, reused): $second"; fi
    else fail chat_default_model_reuses_turns "$(pane sm | tail -4)"; fi
    keys sm C-d
fi
exit 0
