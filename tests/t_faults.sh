#!/bin/sh
# Faults and limits a script meets: junk and invalid UTF-8 on stdin, a
# reader that goes away, a full disk, a context too large for memory.  Each
# ends in a documented exit code with at most one error line, never a
# signal, never silently lost output.
BUILD=${1:-build}
QLM=${QLM:-./qlm}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$BUILD/tests/test_model" --write-tiny "$tmp/tiny.gguf" || { echo "FAIL faults_setup: cannot write tiny model"; exit 1; }
M="$tmp/tiny.gguf"
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
one_error_line() { [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q '^qlm: error: ' "$tmp/err"; }

# Binary junk on stdin is a prompt like any other (bytes the tokenizer
# maps to byte tokens); with room in the context it generates.
head -c 1500 /dev/urandom >"$tmp/junk"
$QLM run -m "$M" -c 4096 -n 4 --temp 0 <"$tmp/junk" >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ ! -s "$tmp/err" ]; then pass faults_binary_stdin
else fail faults_binary_stdin "rc=$rc $(head -c 200 "$tmp/err")"; fi
# ... and with too little room it is the documented "prompt too long" error.
$QLM run -m "$M" -c 64 -n 4 <"$tmp/junk" >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 2 ] && one_error_line && grep -q 'raise -c' "$tmp/err"; then pass faults_binary_stdin_too_long
else fail faults_binary_stdin_too_long "rc=$rc $(head -c 200 "$tmp/err")"; fi

printf 'ab\377\376\303(\355\240\200 end' | $QLM run -m "$M" -n 4 --temp 0 >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ ! -s "$tmp/err" ]; then pass faults_invalid_utf8_prompt
else fail faults_invalid_utf8_prompt "rc=$rc $(head -c 200 "$tmp/err")"; fi

# A reader that closes early: qlm stops quietly with status 0.
{ $QLM run -m "$M" -p hello -n 200 -c 256 --temp 0 2>"$tmp/err"; echo $? >"$tmp/rc"; } | head -c 10 >/dev/null
rc=$(cat "$tmp/rc")
if [ "$rc" = 0 ] && [ ! -s "$tmp/err" ]; then pass faults_pipe_closed_early
else fail faults_pipe_closed_early "rc=$rc $(head -c 200 "$tmp/err")"; fi

# A full disk loses output: that is an error, not a quiet success.
if [ -w /dev/full ]; then
    for fmt in "" --json; do
        $QLM run -m "$M" -p hello -n 40 --temp 0 $fmt >/dev/full 2>"$tmp/err"; rc=$?
        if [ $rc = 3 ] && one_error_line && grep -q 'No space left' "$tmp/err"; then pass "faults_disk_full$fmt"
        else fail "faults_disk_full$fmt" "rc=$rc $(head -c 200 "$tmp/err")"; fi
    done
fi

# A context that does not fit in memory names the flag to lower.  Address
# space limits break the sanitizers' shadow memory, so plain build only.
case "$QLM" in
*-asan|*-tsan) ;;
*)
    prlimit --as=600000000 $QLM run -m "$M" -p hi -n 2 -c 8000000 >"$tmp/out" 2>"$tmp/err"; rc=$?
    if [ $rc = 3 ] && one_error_line && grep -q 'lower -c' "$tmp/err"; then pass faults_kv_out_of_memory
    else fail faults_kv_out_of_memory "rc=$rc $(head -c 200 "$tmp/err")"; fi ;;
esac

# --- qlm batch: lost output is an error, finished lines survive, resumable ---
i=0; : >"$tmp/b.jsonl"
while [ $i -lt 12 ]; do i=$((i + 1)); echo "{\"id\":$i,\"prompt\":\"hello $i\",\"n_predict\":24}" >>"$tmp/b.jsonl"; done
ids_ok() { # FILE: every line whole JSON, ids 1..12 in order, each once
    python3 -c '
import json, sys
raw = open(sys.argv[1]).read()
assert raw.endswith("\n"), "last line not whole"
ids = [json.loads(l)["id"] for l in raw.splitlines()]
assert ids == list(range(1, 13)), ids
' "$1" 2>"$tmp/py"
}
if [ -w /dev/full ]; then
    $QLM batch -m "$M" "$tmp/b.jsonl" --temp 0 >/dev/full 2>"$tmp/err"; rc=$?
    if [ $rc = 3 ] && one_error_line && grep -q 'No space left' "$tmp/err"; then pass faults_batch_disk_full
    else fail faults_batch_disk_full "rc=$rc $(head -c 200 "$tmp/err")"; fi
fi
# A file-size limit is a full disk at a known point: the run stops with an
# error, the lines before the limit are whole, and a rerun completes it.
# (ThreadSanitizer's runtime dies under the limit itself: plain and ASan only.)
case "$QLM" in
*-tsan) ;;
*)
    rm -f "$tmp/o.jsonl"
    prlimit --fsize=1500 $QLM batch -m "$M" "$tmp/b.jsonl" -o "$tmp/o.jsonl" --temp 0 >/dev/null 2>"$tmp/err"; rc=$?
    n1=$(wc -l <"$tmp/o.jsonl")
    $QLM batch -m "$M" "$tmp/b.jsonl" -o "$tmp/o.jsonl" --temp 0 >/dev/null 2>"$tmp/err2"; rc2=$?
    if [ $rc = 3 ] && one_error_line && grep -q 'resume' "$tmp/err" && [ "$n1" -ge 1 ] && [ "$n1" -lt 12 ] &&
       [ $rc2 = 0 ] && ids_ok "$tmp/o.jsonl"; then pass faults_batch_file_limit_then_resume
    else fail faults_batch_file_limit_then_resume "rc=$rc lines=$n1 rc2=$rc2 $(head -c 200 "$tmp/err") $(tail -1 "$tmp/py")"; fi ;;
esac
# SIGTERM mid-run: exit 130, the finished lines whole and in order; a
# rerun completes the file.
i=0; : >"$tmp/big.jsonl"
while [ $i -lt 12 ]; do i=$((i + 1)); echo "{\"id\":$i,\"prompt\":\"hello $i\",\"n_predict\":400}" >>"$tmp/big.jsonl"; done
rm -f "$tmp/t.jsonl"
$QLM batch -m "$M" "$tmp/big.jsonl" -o "$tmp/t.jsonl" --temp 0 -c 512 -t 1 2>"$tmp/err" & pid=$!
n=0
while [ "$(cat "$tmp/t.jsonl" 2>/dev/null | wc -l)" -lt 2 ] && [ $n -lt 1200 ] && kill -0 $pid 2>/dev/null; do
    sleep 0.05; n=$((n + 1))
done
kill -TERM $pid 2>/dev/null; wait $pid; rc=$?
n1=$(wc -l <"$tmp/t.jsonl")
$QLM batch -m "$M" "$tmp/big.jsonl" -o "$tmp/t.jsonl" --temp 0 -c 512 >/dev/null 2>"$tmp/err2"; rc2=$?
if [ $rc = 130 ] && [ "$n1" -ge 2 ] && [ "$n1" -lt 12 ] && [ $rc2 = 0 ] && ids_ok "$tmp/t.jsonl"; then
    pass faults_batch_sigterm_keeps_lines
else fail faults_batch_sigterm_keeps_lines "rc=$rc lines=$n1 rc2=$rc2 $(head -c 200 "$tmp/err") $(tail -1 "$tmp/py")"; fi
