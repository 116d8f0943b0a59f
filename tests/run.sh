#!/bin/sh
# Runs every test binary and shell test, counts PASS/FAIL case lines, and
# ends with the single line "N passed, N failed".  A test program that dies
# or exits non-zero without reporting a FAIL counts as one failure.
BUILD=${1:-build}
cd "$(dirname "$0")/.." || exit 1
pass=0; fail=0
log=$(mktemp); trap 'rm -f "$log"' EXIT
# every failing program's whole output, kept for an intermittent failure
# whose summary line scrolled away
failures="$BUILD/test-failures.log"; : > "$failures"
run_one() {
    name=$1; shift
    "$@" >"$log" 2>&1
    rc=$?
    p=$(grep -c '^PASS ' "$log"); f=$(grep -c '^FAIL ' "$log")
    grep -E '^X?FAIL ' "$log"   # expected failures are shown, not counted
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $name: exited with status $rc"; tail -5 "$log" | sed 's/^/    /'
        f=1
    fi
    [ "$f" -gt 0 ] && { echo "== $name (status $rc)"; cat "$log"; } >> "$failures"
    echo "$name: $p passed, $f failed" >&2
    pass=$((pass + p)); fail=$((fail + f))
}
for t in "$BUILD"/tests/test_*; do
    case "$t" in *.d) continue ;; esac
    [ -x "$t" ] || continue
    run_one "$(basename "$t")" "$t"
done
for t in tests/t_*.sh; do
    [ -f "$t" ] || continue
    run_one "$(basename "$t")" sh "$t" "$BUILD"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
