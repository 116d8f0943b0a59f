#!/bin/sh
# Load modes: --mmap (default), --no-mmap, --mlock give the same output;
# exactly one may be given; an mlock that the memory-lock limit forbids is
# one clear error naming the limit and the fix, exit 2.
BUILD=${1:-build}
QLM=${QLM:-./qlm}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$BUILD/tests/test_model" --write-tiny "$tmp/tiny.gguf" || { echo "FAIL load_setup: cannot write tiny model"; exit 1; }
M="$tmp/tiny.gguf"
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }

$QLM run -m "$M" -p "hello" -n 12 --temp 0 >"$tmp/default" 2>/dev/null
for mode in --mmap --no-mmap --mlock; do
    $QLM run -m "$M" -p "hello" -n 12 --temp 0 $mode >"$tmp/out" 2>"$tmp/err"; rc=$?
    if [ $rc = 0 ] && [ -s "$tmp/out" ] && cmp -s "$tmp/default" "$tmp/out"; then pass "load$mode"
    else fail "load$mode" "rc=$rc $(head -c 200 "$tmp/err")"; fi
done
# From a mapping, the streamed matrices are copied into memory of qlm's
# own (huge pages later): the text is that of the mapping itself, for the
# tiny model's types and a K-quant.
for q in "" q4_k; do
    f=$M; [ -n "$q" ] && { f="$tmp/$q.gguf"; $QLM quantize "$M" "$f" $q >/dev/null 2>&1 || { fail "load_copy_$q" "cannot quantize"; continue; }; }
    QLM_COPY=0 $QLM run -m "$f" -p "hello" -n 12 --temp 0 >"$tmp/mapped" 2>/dev/null
    $QLM run -m "$f" -p "hello" -n 12 --temp 0 >"$tmp/out" 2>"$tmp/err"; rc=$?
    if [ $rc = 0 ] && [ -s "$tmp/out" ] && cmp -s "$tmp/mapped" "$tmp/out"; then pass "load_copy${q:+_$q}"
    else fail "load_copy${q:+_$q}" "rc=$rc $(head -c 200 "$tmp/err")"; fi
done

# Q4_0 matrices are moved to the x16 layout at load where the CPU has its
# kernels (copied out of a mapping, in place in --no-mmap's copy, not under
# --mlock): the text is the same in every mode and with the layout off.
if $QLM quantize "$M" "$tmp/q4_0.gguf" q4_0 >/dev/null 2>&1; then
    QLM_X16=0 $QLM run -m "$tmp/q4_0.gguf" -p "hello" -n 12 --temp 0 >"$tmp/rows" 2>/dev/null
    for mode in --mmap --no-mmap --mlock; do
        $QLM run -m "$tmp/q4_0.gguf" -p "hello" -n 12 --temp 0 $mode >"$tmp/out" 2>"$tmp/err"; rc=$?
        if [ $rc = 0 ] && [ -s "$tmp/out" ] && cmp -s "$tmp/rows" "$tmp/out"; then pass "load_x16$mode"
        else fail "load_x16$mode" "rc=$rc $(head -c 200 "$tmp/err")"; fi
    done
else fail load_x16 "cannot quantize the tiny model to q4_0"; fi

$QLM run -m "$M" -p hi --no-mmap --mlock >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 1 ] && grep -q '^qlm: error: .*choose one load mode' "$tmp/err" && [ "$(wc -l <"$tmp/err")" = 1 ]; then
    pass load_modes_exclusive
else fail load_modes_exclusive "rc=$rc $(head -c 200 "$tmp/err")"; fi

# A limit of 16 KiB is below any model file.  root ignores RLIMIT_MEMLOCK
# through CAP_IPC_LOCK, so drop that capability first.
run_limited() {
    if [ "$(id -u)" = 0 ]; then
        setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock prlimit --memlock=16384 "$@"
    else
        prlimit --memlock=16384 "$@"
    fi
}
# The sanitizers' runtimes turn mlock into a no-op that always succeeds,
# so this check only means something on the plain build.
case "$QLM" in
*-asan|*-tsan) ;;
*)
    run_limited $QLM run -m "$M" -p hi -n 1 --mlock >"$tmp/out" 2>"$tmp/err"; rc=$?
    if [ $rc = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q 'RLIMIT_MEMLOCK is 16 KiB.*ulimit -l' "$tmp/err" && [ ! -s "$tmp/out" ]; then
        pass load_mlock_limit_explained
    else fail load_mlock_limit_explained "rc=$rc $(head -c 300 "$tmp/err")"; fi ;;
esac

# A truncated file is refused the same way in every mode.
head -c 3000 "$M" >"$tmp/cut.gguf"
for mode in --mmap --no-mmap --mlock; do
    $QLM run -m "$tmp/cut.gguf" -p hi $mode >"$tmp/out" 2>"$tmp/err"; rc=$?
    if [ $rc = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ]; then pass "load_truncated$mode"
    else fail "load_truncated$mode" "rc=$rc $(head -c 200 "$tmp/err")"; fi
done
