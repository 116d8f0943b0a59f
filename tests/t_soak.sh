#!/bin/sh
# Soak: a scripted chat of 1000 turns in a 256-token context, so the
# conversation outgrows the context on nearly every turn and its oldest
# exchanges are dropped.  RSS is sampled while it runs: after the first
# quarter (cache, buffers and allocator warm) it must not grow by more
# than 1 MiB, far less than a leak of even one rendered prompt per turn.
BUILD=${1:-build}
QLM=${QLM:-./qlm}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
"$BUILD/tests/test_model" --write-tiny "$tmp/tiny.gguf" || { echo "FAIL soak_setup: cannot write tiny model"; exit 1; }
printf '%s' '{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}' >"$tmp/t.jinja"
# The sanitizers' allocators quarantine freed memory: RSS means nothing there.
case "$QLM" in *-asan|*-tsan) exit 0 ;; esac

i=0; : >"$tmp/in.txt"
while [ $i -lt 1000 ]; do i=$((i + 1)); echo "turn $i: tell me something about the number $i and the sea" >>"$tmp/in.txt"; done
$QLM chat -m "$tmp/tiny.gguf" --chat-template "$tmp/t.jinja" --temp 0 -n 12 -c 256 --no-history -v \
    <"$tmp/in.txt" >"$tmp/out" 2>"$tmp/err" & pid=$!
: >"$tmp/rss"
while kill -0 $pid 2>/dev/null; do
    awk '/^VmRSS/ {print $2}' /proc/$pid/status >>"$tmp/rss" 2>/dev/null
    sleep 0.02
done
wait $pid; rc=$?
turns=$(grep -c 'reused from the cache' "$tmp/err")
drops=$(grep -c 'oldest messages were dropped' "$tmp/err")
if [ $rc = 0 ] && [ "$turns" = 1000 ] && [ "$drops" -ge 900 ] && python3 -c '
import sys
r = [int(x) for x in open(sys.argv[1]) if x.strip()]
assert len(r) >= 8, "only %d samples" % len(r)
q = len(r) // 4
warm, late = max(r[:q]), max(r[q:])
assert late - warm <= 1024, "RSS grew from %d KiB to %d KiB" % (warm, late)
' "$tmp/rss" 2>"$tmp/py"; then pass soak_chat_1000_turns_rss_flat
else fail soak_chat_1000_turns_rss_flat "rc=$rc turns=$turns drops=$drops $(tail -1 "$tmp/py")"; fi
