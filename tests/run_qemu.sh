#!/bin/sh
# Runs cross-built test binaries under qemu-user, once per emulated CPU,
# counts PASS/FAIL case lines as tests/run.sh does, and ends with the same
# single line "N passed, N failed".
#   usage: tests/run_qemu.sh BUILD "CPU:SET ..." TEST...
# Each CPU:SET pair names a qemu CPU model (QEMU_CPU, which the children
# test_kernels starts through $QLM_TEST_WRAPPER inherit too) and the kernel set the
# tests must find active there, so a lost hwcap cannot quietly test the
# wrong set.  QEMU names the emulator (default qemu-aarch64).
BUILD=$1; CPUS=$2; shift 2
QEMU=${QEMU:-qemu-aarch64}
# test_kernels starts itself with QLM_ISA set; through qemu, not binfmt.
export QLM_TEST_WRAPPER="$QEMU"
cd "$(dirname "$0")/.." || exit 1
pass=0; fail=0
log=$(mktemp); trap 'rm -f "$log"' EXIT
for pair in $CPUS; do
    cpu=${pair%%:*}; want=${pair#*:}
    export QEMU_CPU="$cpu"
    got=$("$QEMU" "$BUILD/tests/test_kernels" --isa-name 2>&1)
    if [ "$got" = "$want" ]; then
        echo "PASS $cpu: kernels $got" >"$log"
    else
        echo "FAIL $cpu: kernels '$got', want $want" >"$log"
    fi
    for t in "$@"; do
        "$QEMU" "$BUILD/tests/$t" >>"$log" 2>&1
        rc=$?
        if [ "$rc" -ne 0 ] && ! grep -q '^FAIL ' "$log"; then
            echo "FAIL $cpu/$t: exited with status $rc" >>"$log"
            tail -5 "$log" | sed 's/^/    /'
        fi
    done
    p=$(grep -c '^PASS ' "$log"); f=$(grep -c '^FAIL ' "$log")
    grep '^FAIL ' "$log" | sed "s|^FAIL |FAIL $cpu: |"
    echo "qemu -cpu $cpu ($got): $p passed, $f failed" >&2
    pass=$((pass + p)); fail=$((fail + f))
done
unset QEMU_CPU
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
