#!/bin/sh
# t_amx.sh - both routings on an AMX machine.  Where AMX runs, Q4_K and Q2_K
# are not repacked and K-quant batches take the AMX kernel (quant/tiles.h);
# QLM_ISA=avx512-vnni turns AMX off, so test_tiles (the tile kernels and
# their routing) and test_repack (the repacked orders and gl_matmul's
# routing) run again in processes that ask for it: QLM_ISA is read once per
# process.  Without AMX the default run already is the VNNI one.
BUILD=${1:-build}
tmp=$(mktemp); trap 'rm -f "$tmp"' EXIT
for t in test_tiles test_repack; do
    QLM_ISA=avx512-vnni "$BUILD/tests/$t" >"$tmp" 2>&1; rc=$?
    sed -n 's/^PASS /PASS isa_vnni\//p; s/^FAIL /FAIL isa_vnni\//p; s/^SKIP /SKIP isa_vnni\//p' "$tmp"
    grep -q '^PASS\|^SKIP' "$tmp" || echo "FAIL isa_vnni/$t: no case ran (rc $rc)"
    [ "$rc" = 0 ] || echo "FAIL isa_vnni/$t: exited with $rc"
done
# Conformance: with AMX off, models with Q4_K weights match llama.cpp's
# default (repacked) fixtures too; the default run checked --no-repack's.
if [ "${QLM_CONFORMANCE:-}" = 1 ] && ${QLM:-./qlm} --version 2>/dev/null | grep -q 'amx'; then
    for only in q4_k_m gemma3; do
        QLM_ISA=avx512-vnni QLM_GREEDY_ONLY=$only "$BUILD/tests/test_greedy" >"$tmp" 2>&1; rc=$?
        sed -n 's/^PASS /PASS isa_vnni\//p; s/^FAIL /FAIL isa_vnni\//p' "$tmp"
        grep -q '^PASS' "$tmp" || echo "FAIL isa_vnni/test_greedy_$only: no case ran (rc $rc)"
        [ "$rc" = 0 ] || echo "FAIL isa_vnni/test_greedy_$only: exited with $rc"
    done
fi
