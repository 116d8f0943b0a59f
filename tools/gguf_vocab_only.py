#!/usr/bin/env python3
"""Writes a vocab-only GGUF: the header and metadata of IN with no tensors.

    python3 tools/gguf_vocab_only.py IN OUT

IN may be truncated anywhere after its metadata (a model shipped in chunks
of which only the first arrived): the tensor table and data are dropped,
every metadata byte is copied unchanged.  llama.cpp (vocab_only) and
`qlm tokenize` both load such a file, which is how a tokenizer is compared
on a model whose weights are not available.
"""
import struct
import sys

SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
STRING, ARRAY = 8, 9


def skip_value(buf, off, vtype):
    if vtype in SIZES:
        return off + SIZES[vtype]
    if vtype == STRING:
        (n,) = struct.unpack_from("<Q", buf, off)
        return off + 8 + n
    if vtype == ARRAY:
        etype, n = struct.unpack_from("<IQ", buf, off)
        off += 12
        if etype in SIZES:
            return off + SIZES[etype] * n
        for _ in range(n):
            off = skip_value(buf, off, etype)
        return off
    raise ValueError(f"unknown GGUF value type {vtype}")


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src, "rb") as f:
        buf = f.read()
    magic, version, n_tensors, n_kv = struct.unpack_from("<4sIQQ", buf, 0)
    if magic != b"GGUF" or version not in (2, 3):
        sys.exit(f"{src}: not a GGUF v2/v3 file")
    off = 24
    for _ in range(n_kv):
        (klen,) = struct.unpack_from("<Q", buf, off)
        off += 8 + klen
        (vtype,) = struct.unpack_from("<I", buf, off)
        off = skip_value(buf, off + 4, vtype)
    if off > len(buf):
        sys.exit(f"{src}: truncated inside its metadata")
    with open(dst, "wb") as f:
        f.write(struct.pack("<4sIQQ", magic, version, 0, n_kv))
        f.write(buf[24:off])
        f.write(b"\0" * (-off % 32))
    print(f"{dst}: {n_kv} metadata keys, {n_tensors} tensors dropped", file=sys.stderr)


if __name__ == "__main__":
    main()
