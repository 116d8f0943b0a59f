#!/bin/sh
# t_amx.sh - QLM_ISA=amx: the AMX kernel also takes the K-quants llama.cpp
# repacks, in the tiled order (quant/tiles.h).  QLM_ISA is read once per
# process, so test_tiles (which checks that routing and its bits) and
# test_repack (whose routing cases then expect the tiled order) run again
# in processes that ask for it.  Without AMX, test_tiles says it skipped.
BUILD=${1:-build}
tmp=$(mktemp); trap 'rm -f "$tmp"' EXIT
for t in test_tiles test_repack; do
    QLM_ISA=amx "$BUILD/tests/$t" >"$tmp" 2>&1; rc=$?
    sed -n 's/^PASS /PASS isa_amx\//p; s/^FAIL /FAIL isa_amx\//p' "$tmp"
    grep -q '^PASS' "$tmp" || echo "FAIL isa_amx/$t: no case ran (rc $rc)"
    [ "$rc" = 0 ] || echo "FAIL isa_amx/$t: exited with $rc"
done
