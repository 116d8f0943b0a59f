#!/bin/sh
# t_malformed.sh - malformed GGUF files through the real CLI.
#
# Usage: sh tests/t_malformed.sh [BUILD_DIR]   (from the repo root)
#
# build/tests/test_gguf --write-malformed makes one file per corruption;
# `qlm inspect F` and `qlm run -m F` must each exit with status 2 (not 0,
# not a signal), print nothing on stdout and exactly one line on stderr
# starting "qlm: error:" and naming the file.  QLM=path overrides ./qlm.
BUILD=${1:-build}
QLM=${QLM:-./qlm}
GEN="$BUILD/tests/test_gguf"
fails=0

if [ ! -x "$QLM" ]; then
    echo "FAIL t_malformed: $QLM is not built"; exit 1
fi
if [ ! -x "$GEN" ]; then
    echo "FAIL t_malformed: $GEN is not built"; exit 1
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
mkdir "$tmp/files"
if ! "$GEN" --write-malformed "$tmp/files" >"$tmp/gen" 2>&1 || [ -s "$tmp/gen" ]; then
    echo "FAIL t_malformed: $GEN --write-malformed failed or printed: $(head -c 200 "$tmp/gen")"
    exit 1
fi

# A hung loader must not hang the suite.
if command -v timeout >/dev/null 2>&1; then T="timeout 60"; else T=""; fi

# check NAME WANT_STATUS MUST_MENTION CMD... : the error contract above
# (WANT_STATUS 0: success, some stdout, silent stderr).
check() {
    name=$1; want=$2; mention=$3; shift 3
    $T "$@" <"/dev/null" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    nl=$(wc -l <"$tmp/err" | tr -d ' ')
    nr=$(awk 'END { print NR }' "$tmp/err")
    first=$(head -n 1 "$tmp/err" | cut -c1-200)
    why=""
    if [ "$rc" -ne "$want" ]; then
        if [ "$rc" -gt 128 ] && [ "$rc" -lt 160 ]; then
            why="killed by signal $((rc - 128))"
        else
            why="exit status $rc, expected $want"
        fi
    elif [ "$want" -eq 0 ]; then
        [ -s "$tmp/out" ] || why="nothing on stdout"
        [ -s "$tmp/err" ] && why="stderr not empty: $first"
    elif [ -s "$tmp/out" ]; then
        why="wrote to stdout: $(head -c 80 "$tmp/out" | tr '\n' ' ')"
    elif [ "$nl" != 1 ] || [ "$nr" != 1 ]; then
        why="stderr has $nr lines, expected 1"
    elif ! printf '%s\n' "$first" | grep -q '^qlm: error: .'; then
        why="stderr does not start with 'qlm: error:'"
    elif [ -n "$mention" ] && ! grep -qF -- "$mention" "$tmp/err"; then
        why="error does not name '$mention'"
    fi
    if [ -n "$why" ]; then
        echo "FAIL $name: $why ($first)"
        fails=$((fails + 1))
    else
        echo "PASS $name"
    fi
}

n=0
for f in "$tmp"/files/*.gguf; do
    base=$(basename "$f" .gguf)
    [ "$base" = valid ] && continue
    n=$((n + 1))
    check "inspect $base" 2 "$f" "$QLM" inspect "$f"
    check "run $base" 2 "$f" "$QLM" run -m "$f" -p hi -n 1
done
if [ "$n" -lt 40 ]; then
    echo "FAIL t_malformed: only $n malformed files were generated"
    fails=$((fails + 1))
fi

check "inspect valid" 0 "" "$QLM" inspect "$tmp/files/valid.gguf"
check "inspect --no-kv --no-tensors" 0 "" "$QLM" inspect --no-kv --no-tensors "$tmp/files/valid.gguf"
check "inspect --help" 0 "" "$QLM" inspect --help
missing="$tmp/no-such-model.gguf"
check "inspect missing file" 2 "$missing" "$QLM" inspect "$missing"
check "run missing file" 2 "$missing" "$QLM" run -m "$missing" -p hi -n 1
check "inspect directory" 2 "$tmp" "$QLM" inspect "$tmp"
check "inspect without FILE" 1 "" "$QLM" inspect
check "inspect bad option" 1 "--bogus" "$QLM" inspect --bogus "$tmp/files/valid.gguf"

[ "$fails" -eq 0 ]
