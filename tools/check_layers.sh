#!/bin/sh
# Includes point down only: tools -> src -> ggml-lite -> quant.  A file may
# include headers of its own layer (plain "x.h") or of layers below it.
cd "$(dirname "$0")/.." || exit 1
bad=0
check() { # layer, allowed include prefixes
    layer=$1; shift
    for f in "$layer"/*.c "$layer"/*.h; do
        [ -f "$f" ] || continue
        grep -n '^#include "' "$f" | while IFS= read -r line; do
            inc=$(echo "$line" | sed 's/.*#include "\([^"]*\)".*/\1/')
            case "$inc" in */*) ;; *) continue ;; esac
            ok=0
            for p in "$@"; do case "$inc" in "$p"/*) ok=1 ;; esac; done
            [ $ok = 1 ] || echo "$f: includes $inc (not allowed from $layer/)"
        done
    done
}
out=$( { check quant quant; check ggml-lite ggml-lite quant; check src src ggml-lite quant; \
         check tools tools src ggml-lite quant; } )
# Only quant's ISA files may use intrinsics.
intr=$(grep -ln 'immintrin\|arm_neon' quant/*.c ggml-lite/*.c src/*.c tools/*.c 2>/dev/null | grep -v '^quant/\(x86_\|arm_\)')
[ -n "$intr" ] && out="$out
$(echo "$intr" | sed 's/$/: uses intrinsics outside quant ISA files/')"
if [ -n "$out" ]; then echo "$out"; exit 1; fi
echo "layers ok"
