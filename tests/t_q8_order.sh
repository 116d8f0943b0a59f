#!/bin/sh
# t_q8_order.sh - QLM_Q8_ORDER=i16: on the avx2 set, Q8_0 batches of 8 or
# more take the AVX2 tiles in the i16 order (quant/tiles.h).  The variable
# is read once per process, so test_tiles and test_repack (gl_matmul's
# Q8_0 outputs against the order they should take), test_group_prefill
# (qlm_ctx_same_order declines the pass sizes that straddle 8) and a
# perplexity within 1% of the default order's run again in processes that
# ask for it.  Elsewhere the variable changes nothing, which they check
# too.
BUILD=${1:-build}
QLM=${QLM:-./qlm}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for t in test_tiles test_repack test_group_prefill; do
    QLM_Q8_ORDER=i16 "$BUILD/tests/$t" >"$tmp/out" 2>&1; rc=$?
    sed -n 's/^PASS /PASS q8_i16\//p; s/^FAIL /FAIL q8_i16\//p' "$tmp/out"
    grep -q '^PASS' "$tmp/out" || echo "FAIL q8_i16/$t: no case ran (rc $rc)"
    [ "$rc" = 0 ] || echo "FAIL q8_i16/$t: exited with $rc"
done
"$BUILD/tests/test_model" --write-tiny "$tmp/tiny.gguf" || { echo "FAIL q8_i16/setup: cannot write tiny model"; exit 1; }
python3 -c 'print(" ".join("the quick brown fox %d jumps over the lazy dog %d." % (i, i * 7) for i in range(60)))' >"$tmp/text"
ppl() { "$QLM" perplexity -m "$tmp/tiny.gguf" -f "$tmp/text" -c 64 -b 64 2>/dev/null | sed -n 's/.*PPL = \([0-9.]*\).*/\1/p'; }
a=$(ppl); b=$(QLM_Q8_ORDER=i16 ppl)
if python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); assert abs(a - b) <= 0.01 * a, (a, b)' "$a" "$b" 2>"$tmp/py"
then echo "PASS q8_i16/perplexity_within_1pct ($a, $b)"
else echo "FAIL q8_i16/perplexity_within_1pct: default '$a', i16 '$b' $(tail -1 "$tmp/py")"; fi
