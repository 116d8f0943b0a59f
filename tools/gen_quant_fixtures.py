#!/usr/bin/env python3
"""Writes the quant conformance fixtures in tests/data/quant/ from gguf-py.

For each type, a set of seeded random and adversarial float inputs, the bytes
gguf-py's reference quantizer (gguf.quants.quantize) turns them into, and the
floats gguf-py's dequantizer (gguf.quants.dequantize) turns those bytes back
into.  tests/test_quant.c checks qlm's scalar reference against these bytes
and floats; the tests read only the committed files, so CI needs no Python.

The K-quants (Q2_K..Q6_K) are dequantization fixtures only: gguf-py (0.19)
dequantizes them but raises NotImplementedError for their quantize, so
their files hold seeded random and adversarial blocks (extreme, zero,
subnormal and infinite f16 scales, extreme 6-bit scales) and gguf-py's
floats for them, and no input.  qlm's K quantizers are tested for error
bounds in tests/test_quant.c and were compared byte for byte with ggml's C.

    pip install gguf numpy
    python3 tools/gen_quant_fixtures.py [outdir]

File format (all little-endian), one file per type, <name>.bin:
    char     magic[8]   "QLMQFX01"
    uint32   type       GGUF type id
    uint32   n          number of float elements (a multiple of block size)
    uint32   nbytes     size of the quantized data
    uint32   flags      bit 0: dequantization only (no input)
    float32  input[n]   absent when flags bit 0 is set
    uint8    quant[nbytes]
    float32  dequant[n]  gguf-py's dequantization of quant
"""

import os
import struct
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

MAGIC = b"QLMQFX01"
SEED = 20240613


def f32(values):
    return np.asarray(values, dtype=np.float32)


def from_bits(bits):
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def nudged(values):
    """Each value, and the floats one ulp either side: probes tie-breaking."""
    v = f32(values)
    up = np.nextafter(v, np.float32(np.inf))
    down = np.nextafter(v, np.float32(-np.inf))
    return np.stack([down, v, up], axis=-1).ravel()


def fit_block(values, bs, rng, fill_scale=0.0):
    """Pads or truncates a 1-D list to exactly one block."""
    v = f32(values)[:bs]
    if v.size < bs:
        pad = rng.uniform(-fill_scale, fill_scale, bs - v.size).astype(np.float32)
        v = np.concatenate([v, pad])
    return v


def random_blocks(rng, bs):
    """Ordinary data at many scales, as weights and activations look."""
    out = []
    for scale in (1e-3, 0.02, 0.5, 1.0, 3.0, 50.0, 1000.0):
        out.append(rng.normal(0.0, scale, bs))
    # heavy tails: one outlier dominating the block
    b = rng.normal(0.0, 0.1, bs)
    b[rng.integers(bs)] = 25.0
    out.append(b)
    b = rng.normal(0.0, 0.1, bs)
    b[rng.integers(bs)] = -25.0
    out.append(b)
    # all of one sign (the _1 formats' offset does the work)
    out.append(np.abs(rng.normal(2.0, 0.5, bs)))
    out.append(-np.abs(rng.normal(2.0, 0.5, bs)))
    return [f32(b) for b in out]


def adversarial_blocks(rng, bs):
    out = [
        np.zeros(bs),                                   # d = 0, id = 0
        np.full(bs, 3.7),                               # max == min
        np.full(bs, -0.125),
        rng.uniform(-5e5, 5e5, bs),                     # large, scale near f16 max
        rng.uniform(-2e6, 2e6, bs),                     # scale overflows f16: inf d
        rng.normal(0.0, 1e-6, bs),                      # scale is an f16 subnormal
        rng.normal(0.0, 1e-9, bs),                      # scale rounds to f16 zero
        rng.normal(0.0, 1e-30, bs),
        np.where(np.arange(bs) % 2 == 0, 1.0, -1.0) * rng.uniform(0.5, 2.0, bs),
    ]
    # equal magnitudes of both signs: the first one sets the sign of d
    b = rng.uniform(-4.0, 4.0, bs); b[3] = -5.0; b[9] = 5.0
    out.append(b)
    b = rng.uniform(-4.0, 4.0, bs); b[3] = 5.0; b[9] = -5.0
    out.append(b)
    # -0.0 and +0.0 mixed in
    b = rng.normal(0.0, 1.0, bs); b[::4] = -0.0; b[1::4] = 0.0
    out.append(b)
    return [f32(b) for b in out]


def boundary_blocks(qtype, rng, bs):
    """Blocks whose scale is exactly 1, so values at k + 0.5 land exactly on
    the quantizer's rounding boundaries (and one ulp either side)."""
    if qtype == T.Q8_0:
        anchors = [[127.0], [-127.0]]
        halves = np.arange(-126.5, 127.0, 1.0)
    elif qtype == T.Q4_0:
        anchors = [[-8.0], [8.0]]           # d = 1 and d = -1 (clipped end)
        halves = np.arange(-7.5, 8.0, 1.0)
    elif qtype == T.Q5_0:
        anchors = [[-16.0], [16.0]]
        halves = np.arange(-15.5, 16.0, 1.0)
    elif qtype == T.Q4_1:
        anchors = [[0.0, 15.0]]             # min 0, max 15: d = 1
        halves = np.arange(0.5, 15.0, 1.0)
    elif qtype == T.Q5_1:
        anchors = [[0.0, 31.0]]
        halves = np.arange(0.5, 31.0, 1.0)
    else:
        raise ValueError(qtype)
    out = []
    for a in anchors:
        vals = rng.permutation(halves)
        for start in range(0, len(vals), bs - len(a)):
            out.append(fit_block(a + list(vals[start:start + bs - len(a)]), bs, rng, 0.0))
        nud = nudged(rng.choice(halves, (bs - len(a)) // 3 + 1))
        out.append(fit_block(a + list(nud), bs, rng, 0.0))
    # a block scale that is itself an f16 tie: d = 1 + 2^-11 rounds to 1.0
    # (even), d = 1 + 3 * 2^-11 rounds up
    for eps in (2.0 ** -11, 3 * 2.0 ** -11):
        b = rng.uniform(-1.0, 1.0, bs)
        if qtype == T.Q8_0:
            b = b * 100; b[0] = 127.0 * (1 + eps)
        elif qtype == T.Q4_0:
            b = b * 7; b[0] = -8.0 * (1 + eps)
        elif qtype == T.Q5_0:
            b = b * 15; b[0] = -16.0 * (1 + eps)
        elif qtype == T.Q4_1:
            b = 7 + b * 7; b[0] = 0.0; b[1] = 15.0 * (1 + eps)
        else:
            b = 15 + b * 15; b[0] = 0.0; b[1] = 31.0 * (1 + eps)
        out.append(f32(b))
    return out


def block_inputs(qtype):
    bs, _ = quants.GGML_QUANT_SIZES[qtype]
    rng = np.random.default_rng(SEED + int(qtype))
    blocks = random_blocks(rng, bs) + adversarial_blocks(rng, bs) + boundary_blocks(qtype, rng, bs)
    return np.concatenate(blocks).astype(np.float32)


def f16_neighbours_mid(rng, count):
    """Midpoints between adjacent finite halves, and one ulp either side."""
    h = rng.integers(0, 0x7bff, count).astype(np.uint16)   # below max finite
    lo = h.view(np.float16).astype(np.float64)
    hi = (h + 1).view(np.float16).astype(np.float64)
    mid = ((lo + hi) / 2).astype(np.float32)                # exact: 12 bits
    sign = np.where(rng.integers(0, 2, count) == 1, -1.0, 1.0).astype(np.float32)
    return nudged(mid * sign)


def bf16_neighbours_mid(rng, count):
    b = rng.integers(0, 0x7f7f, count).astype(np.uint32)
    lo = (b << 16).view(np.float32).astype(np.float64)
    hi = ((b + 1) << 16).view(np.float32).astype(np.float64)
    mid = ((lo + hi) / 2).astype(np.float32)                # exact: 9 bits
    sign = np.where(rng.integers(0, 2, count) == 1, -1.0, 1.0).astype(np.float32)
    return nudged(mid * sign)


def log_uniform(rng, count, lo_exp, hi_exp):
    mag = 10.0 ** rng.uniform(lo_exp, hi_exp, count)
    sign = np.where(rng.integers(0, 2, count) == 1, -1.0, 1.0)
    return f32(mag * sign)


def float_inputs(qtype):
    rng = np.random.default_rng(SEED + int(qtype))
    fmax = np.finfo(np.float32).max
    specials = f32([
        0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 0.5, 1.5,
        fmax, -fmax, 1e-40, -1e-40, 1.4e-45,
    ])
    if qtype == T.F16:
        edges = f32([
            65504.0, 65519.0, 65519.996, 65520.0, 65536.0, 1e5, 1e10, -65520.0,
            2.0 ** -14, 2.0 ** -24, 2.0 ** -25, 1.5 * 2.0 ** -25, 2.0 ** -26,
            3 * 2.0 ** -25, 2.0 ** -14 - 2.0 ** -25, 6e-8, 5.96e-8, 3e-8,
        ])
        parts = [specials, nudged(edges), f16_neighbours_mid(rng, 200),
                 log_uniform(rng, 400, -9, 5.5), f32(rng.normal(0, 1, 128))]
    else:
        edges = f32([
            3.3895e38, 3.39e38, 1e38, -3.4e38, 1.1754944e-38, 1e-39,
            (2.0 - 2.0 ** -8) * 2.0 ** 127,
        ])
        nans = from_bits([0x7f800001, 0xff812345, 0x7fffffff, 0x7fc00001, 0xffbfffff])
        parts = [specials, nans, nudged(edges), bf16_neighbours_mid(rng, 200),
                 log_uniform(rng, 400, -44, 38), f32(rng.normal(0, 1, 128))]
        # bf16 keeps float subnormals: random ones of both signs
        parts.append(from_bits(rng.integers(1, 0x007fffff, 64, dtype=np.uint32)
                               | (rng.integers(0, 2, 64, dtype=np.uint32) << 31)))
    return np.concatenate(parts).astype(np.float32)


# Byte offsets of the f16 scales and the packed 4-/6-bit sub-block scales in
# each K-quant block (ggml-common.h's block_q*_K).
K_LAYOUT = {
    T.Q2_K: dict(d=80, dmin=82, scales=(0, 16)),
    T.Q3_K: dict(d=108, dmin=None, scales=(96, 108)),
    T.Q4_K: dict(d=0, dmin=2, scales=(4, 16)),
    T.Q5_K: dict(d=0, dmin=2, scales=(4, 16)),
    T.Q6_K: dict(d=208, dmin=None, scales=(192, 208)),
}


def half_bits(values):
    return np.asarray(values, dtype=np.float32).astype(np.float16).view(np.uint16)


def k_blocks(qtype, rng):
    """Random and adversarial blocks as raw bytes, one row per block."""
    _, size = quants.GGML_QUANT_SIZES[qtype]
    lay = K_LAYOUT[qtype]
    fields = [f for f in (lay["d"], lay["dmin"]) if f is not None]

    def block(fill=None, halves=None, scales=None):
        b = rng.integers(0, 256, size, dtype=np.uint8) if fill is None else np.full(size, fill, np.uint8)
        if halves is None:  # scales like real ones, of many magnitudes
            mag = 10.0 ** rng.uniform(-5, 1)
            halves = half_bits(rng.normal(0, mag, len(fields)))
        for off, h in zip(fields, np.asarray(halves, dtype=np.uint16)):
            b[off:off + 2] = np.frombuffer(np.uint16(h).tobytes(), np.uint8)
        if scales is not None:
            b[lay["scales"][0]:lay["scales"][1]] = scales
        return b

    out = [block() for _ in range(12)]
    out.append(np.zeros(size, np.uint8))                        # all zero
    out.append(block(fill=0xff, halves=half_bits([0.01, 0.02])))  # every quant and scale at its top
    out.append(block(scales=0xff))                              # extreme 6-bit scales (Q6_K: -1)
    out.append(block(scales=0x00))
    out.append(block(scales=0x80 if qtype == T.Q6_K else 0x3f))  # Q6_K: -128
    out.append(block(halves=[0x7bff, 0xfbff]))                  # largest halves
    out.append(block(halves=[0xfbff, 0x7bff], fill=0xff))
    sub = rng.integers(1, 0x400, 2).astype(np.uint16) | np.array([0, 0x8000], np.uint16)
    out.append(block(halves=sub))                               # subnormal d, dmin
    out.append(block(halves=[0x0001, 0x8001]))                  # the smallest ones
    out.append(block(halves=[0x8000, 0x0000]))                  # signed zeros
    out.append(block(halves=[0x7c00, 0x3c00]))                  # inf d: inf and NaN out
    out.append(block(halves=[0x3c00, 0xfc00]))
    return np.stack(out)


def write_k_fixture(outdir, qtype):
    rng = np.random.default_rng(SEED + int(qtype))
    qb = k_blocks(qtype, rng).ravel()
    with np.errstate(all="ignore"):
        y = np.asarray(quants.dequantize(qb.copy(), qtype), dtype=np.float32).ravel()
    n = y.size
    path = os.path.join(outdir, qtype.name.lower() + ".bin")
    with open(path, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<IIII", int(qtype), n, qb.size, 1))
        f.write(qb.tobytes())
        f.write(y.astype("<f4").tobytes())
    return path, n, qb.size


def write_fixture(outdir, qtype):
    if qtype in (T.F16, T.BF16):
        x = float_inputs(qtype)
    else:
        x = block_inputs(qtype)
    with np.errstate(all="ignore"):
        q = np.asarray(quants.quantize(x, qtype))
        qb = np.frombuffer(q.tobytes(), dtype=np.uint8)
        y = np.asarray(quants.dequantize(qb.copy(), qtype), dtype=np.float32).ravel()
    assert y.size == x.size, (qtype.name, y.size, x.size)
    path = os.path.join(outdir, qtype.name.lower() + ".bin")
    with open(path, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<IIII", int(qtype), x.size, qb.size, 0))
        f.write(x.astype("<f4").tobytes())
        f.write(qb.tobytes())
        f.write(y.astype("<f4").tobytes())
    return path, x.size, qb.size


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "tests", "data", "quant")
    os.makedirs(outdir, exist_ok=True)
    for qtype in (T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0):
        path, n, nb = write_fixture(outdir, qtype)
        print(f"{os.path.relpath(path)}: {n} floats, {nb} bytes")
    for qtype in (T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K):
        path, n, nb = write_k_fixture(outdir, qtype)
        print(f"{os.path.relpath(path)}: {nb} bytes, {n} floats (dequantization only)")


if __name__ == "__main__":
    main()
