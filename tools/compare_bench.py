#!/usr/bin/env python3
"""qlm against llama.cpp, side by side on one machine, as a ratio.

Runs llama.cpp's llama-bench and `qlm bench` on the same GGUF with the same
thread count, alternating which goes first, for several rounds, and prints
per test (ppN, tgN, ppN+tgM) the mean tokens/s of each and the qlm/llama.cpp ratio
with its spread over the rounds.  Alternating rounds is what makes a ratio
trustworthy on a shared machine: a slow minute hits both sides.

It also measures memory read bandwidth (`qlm bench --bandwidth`) after
every round and prints the decode ceiling: the median bandwidth / bytes of
weights read per generated token (one probe swung from 26 to 31 GB/s
between consecutive calls; the median of one per round damps that).

llama-bench comes from tools/build_llamacpp.sh (the llama-cpp-python source
package, built outside the repository); nothing of llama.cpp lands here.
`--ref NAME[:FLAGS]` (repeatable) names the llama-bench builds to compare
with (build-NAME under the cache; default the llama.cpp one), each with
extra llama-bench flags if given: ik_llama.cpp, the fastest CPU fork,
builds the same way from its own source package (`QLM_REF_SDIST=
.../ik_llama_cpp_python-0.1.5.tar.gz tools/build_llamacpp.sh`), and
`--ref llama_cpp_python-0.3.36 --ref "ik_llama_cpp_python-0.1.5:-rtr 1"`
runs all three programs in rotation, each round in another order, with
qlm's ratio against each.

Usage:
  tools/build_llamacpp.sh
  python3 tools/compare_bench.py -m MODEL [-m MODEL2 ...] [-t 2] [-p 512] [-n 128] [-pg 512,128]
                                 [-d 0] [--rounds 3] [-r 3]

--no-mmap loads the weights into anonymous memory on both sides (qlm
--no-mmap: huge pages where the kernel grants them; llama-bench -lm none)
instead of mapping the file.  Decoding streams every weight once per token,
so how fast the weights' pages read matters: in a KVM guest, a file's page
cache pages can read well below freshly allocated memory.

The report says how much of each file a mapping gets in 2 MB pages: a file
whose page cache holds small folios (one just written, e.g. by `qlm
quantize` or cp) maps in 4 KB pages, and here those read at 0.55-0.75 of 2 MB
ones, against a probe in huge pages.  --evict drops each file's cached pages
(those no process maps) before its first round, so the first load reads it
from disk again, in large folios where the kernel and filesystem do that.

With several models, each is measured in turn and a last table puts every
model's ratios together (the README's performance table).
"""

import argparse
import json
import mmap
import os
import pathlib
import re
import statistics
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
REF_DIR = pathlib.Path(os.environ.get("QLM_REF_DIR", pathlib.Path.home() / ".cache/qlm/ref"))
REF_NAME = os.environ.get("QLM_REF_NAME", "llama_cpp_python-0.3.36")
QLM = pathlib.Path(os.environ.get("QLM_BIN", REPO / "qlm")).resolve()  # QLM_BIN: the tests' sanitizer builds


class Ref:
    """One llama-bench build (build-NAME) and the extra flags it runs with."""

    def __init__(self, spec):
        name, _, flags = spec.partition(":")
        self.name, self.flags = name, flags.split()
        self.bench = REF_DIR / f"build-{name}" / "bin" / "llama-bench"
        # ik_llama.cpp's llama-bench predates -d and -lm (it maps with -mmp)
        self.fork = "ik_llama" in name
        self.label = ("ik_llama.cpp" if self.fork else "llama.cpp") + (f" {flags}" if flags else "")


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def test_flags(a):
    """The flags every program takes alike (qlm bench takes llama-bench's)."""
    flags = ["-t", str(a.threads), "-p", str(a.p), "-n", str(a.n), "-r", str(a.reps)]
    if a.depth:
        flags += ["-d", str(a.depth)]
    for pg in a.pg or []:
        flags += ["-pg", pg]
    return flags + ["-o", "json"]


def llama_rows(ref, model, a):
    no_mmap = (["-mmp", "0"] if ref.fork else ["-lm", "none"]) if a.no_mmap else []
    rows = run_json([str(ref.bench), "-m", model] + test_flags(a) + no_mmap + ref.flags)
    res = {}
    for r in rows:
        if r["n_prompt"] and r["n_gen"]:
            test = f"pp{r['n_prompt']}+tg{r['n_gen']}"
        else:
            test = f"pp{r['n_prompt']}" if r["n_prompt"] else f"tg{r['n_gen']}"
        if r.get("n_depth"):
            test += f"@d{r['n_depth']}"  # qlm bench's name for a test after some context
        res[test] = r["avg_ts"]
    return res


def qlm_rows(model, a):
    rows = run_json([str(QLM), "bench", "-m", model] + test_flags(a) + (["--no-mmap"] if a.no_mmap else []))
    return {r["test"]: r["avg_ts"] for r in rows}


def weight_bytes_per_token(model):
    """Bytes of weights a decode step reads: every tensor except the token
    embedding, of which only one row is read, unless it is also the output."""
    out = subprocess.run([str(QLM), "inspect", model], check=True, capture_output=True,
                         text=True).stdout
    sizes, in_table = {}, False
    for line in out.splitlines():
        if line.startswith("name ") and "bytes" in line:
            in_table = True
            continue
        f = line.split()
        if in_table and len(f) >= 4 and f[-2].isdigit():
            sizes[f[0]] = int(f[-2])
    total = sum(sizes.values())
    if "output.weight" in sizes:
        total -= sizes.get("token_embd.weight", 0)
    return total


def huge_mapped(model):
    """Fraction of the file that a read-only mapping of it gets in 2 MB
    pages (smaps' FilePmdMapped over Rss, every page touched)."""
    path = os.path.realpath(model)
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
        try:
            sum(mm[i] for i in range(0, len(mm), 4096))
            rss = pmd = 0
            with open("/proc/self/smaps") as sm:
                mine = False
                for line in sm:
                    f0 = line.split()
                    if f0 and "-" in f0[0] and len(f0) >= 5:
                        mine = f0[-1] == path
                    elif mine and f0 and f0[0] == "Rss:":
                        rss += int(f0[1])
                    elif mine and f0 and f0[0] == "FilePmdMapped:":
                        pmd += int(f0[1])
        finally:
            mm.close()
    return pmd / rss if rss else 0.0


def evict(model):
    fd = os.open(model, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def bandwidth(threads, mib):
    out = subprocess.run([str(QLM), "bench", "--bandwidth", "-t", str(threads), "-r", "5",
                          "--mib", str(mib)],
                         check=True, capture_output=True, text=True).stdout
    return float(out.split(":")[1].split()[0])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-m", "--model", required=True, action="append")
    ap.add_argument("-t", "--threads", type=int, default=os.cpu_count())
    ap.add_argument("-p", type=int, default=512)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("-d", "--depth", type=int, default=0, help="tokens of context before each test (both programs' -d)")
    ap.add_argument("-pg", "--pg", action="append", metavar="PP,TG",
                    help="also a prompt of PP tokens then TG generated, timed together (repeatable)")
    ap.add_argument("-r", "--reps", type=int, default=3, help="repetitions inside each bench run")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of both programs")
    ap.add_argument("--evict", action="store_true",
                    help="drop each model's cached pages before its first round (see above)")
    ap.add_argument("--no-mmap", action="store_true",
                    help="both programs read the weights into anonymous memory instead of mapping the file")
    ap.add_argument("--dram-mib", type=int, default=1024,
                    help="the buffer of the last bandwidth probe, MiB (beyond the last-level cache)")
    ap.add_argument("--ref", action="append", metavar="NAME[:FLAGS]",
                    help=f"a llama-bench build to compare with, build-NAME (default {REF_NAME}); repeatable")
    a = ap.parse_args()
    a.refs = [Ref(spec) for spec in a.ref or [REF_NAME]]
    labels = [r.label for r in a.refs]
    for r in a.refs:  # two builds of one program: told apart by their names
        if labels.count(r.label) > 1:
            r.label += f" ({r.name})"
    if a.depth and any(r.fork for r in a.refs):
        sys.exit("error: ik_llama.cpp's llama-bench has no -d")
    for ref in a.refs:
        if not ref.bench.exists():
            sys.exit(f"error: {ref.bench} missing; run tools/build_llamacpp.sh first")
    if not QLM.exists():
        sys.exit(f"error: {QLM} missing; run make first")

    summary = []
    for model in a.model:
        summary.append((model, compare(model, a)))
    if len(summary) > 1:
        heads = " | ".join(f"{r.label} t/s" for r in a.refs)
        ratios = " | ".join(f"qlm / {r.label}" for r in a.refs)
        print(f"\n| model | test | {heads} | qlm t/s | {ratios} |")
        print("|---|---|" + "---|" * (2 * len(a.refs) + 1))
        for model, rows in summary:
            for test, refs, q, rs in rows:
                print(f"| {pathlib.Path(model).name} | {test} | " + " | ".join(f"{l:.1f}" for l in refs) +
                      f" | {q:.1f} | " + " | ".join(rs) + " |")


def compare(model, a):
    """Rounds in rotation on one model; prints its table and returns
    (test, [each reference's mean], qlm mean, [ratio text against each])
    rows."""
    refs = {r.label: {} for r in a.refs}
    ours = {}
    per_tok = weight_bytes_per_token(model)
    probes = []
    if a.evict:
        evict(model)
    progs = [(r.label, lambda m, a, r=r: llama_rows(r, m, a), refs[r.label]) for r in a.refs]
    progs.append(("qlm", qlm_rows, ours))
    for rnd in range(a.rounds):
        # each round starts with another program, so none always runs first
        k = rnd % len(progs)
        order = progs[k:] + progs[:k]
        for name, fn, acc in order:
            for test, ts in fn(model, a).items():
                acc.setdefault(test, []).append(ts)
                print(f"round {rnd + 1}: {name} {test} {ts:.2f} t/s", file=sys.stderr)
        probes.append(bandwidth(a.threads, max(1, per_tok >> 20)))
        print(f"round {rnd + 1}/{a.rounds} done (read bandwidth {probes[-1]:.1f} GB/s)", file=sys.stderr)

    print(f"model {model}, {a.threads} threads, {a.rounds} alternating rounds x {a.reps} reps"
          f"{', weights read into memory (--no-mmap)' if a.no_mmap else ''}")
    labels = [r.label for r in a.refs]
    print("| test | " + " | ".join(f"{l} t/s" for l in labels) + " | qlm t/s | " +
          " | ".join(f"qlm / {l} (min..max over rounds)" for l in labels) + " |")
    print("|---|" + "---|" * (2 * len(labels) + 1))
    rows = []
    sd = lambda v: statistics.stdev(v) if len(v) > 1 else 0.0
    first = refs[labels[0]]
    for test in sorted(first, key=lambda t: ("+" in t, t[:2], int(re.match(r"\d+", t[2:]).group()), t)):
        if test not in ours or any(test not in refs[l] for l in labels):
            continue
        texts = []
        for l in labels:
            ratios = [q / r for q, r in zip(ours[test], refs[l][test])]
            texts.append(f"{statistics.mean(ratios):.2f}x ({min(ratios):.2f}..{max(ratios):.2f})")
        print(f"| {test} | " + " | ".join(f"{statistics.mean(refs[l][test]):.1f} ± {sd(refs[l][test]):.1f}"
                                          for l in labels) +
              f" | {statistics.mean(ours[test]):.1f} ± {sd(ours[test]):.1f} | " + " | ".join(texts) + " |")
        rows.append((test, [statistics.mean(refs[l][test]) for l in labels], statistics.mean(ours[test]), texts))

    # Read bandwidth over a buffer the size of the weights is the ceiling
    # that matters: a small model can sit in a large last-level cache, and
    # then decode is bounded by cache, not DRAM, bandwidth.
    bw_dram = bandwidth(a.threads, a.dram_mib)
    bw = statistics.median(probes)
    ceiling = bw * 1e9 / per_tok if per_tok else 0
    print(f"\nread bandwidth {bw:.1f} GB/s over {per_tok / 1e6:.0f} MB (the weights read per token; median of "
          f"{len(probes)}, {min(probes):.1f}..{max(probes):.1f}), {bw_dram:.1f} GB/s over {a.dram_mib} MiB; "
          f"decode ceiling {ceiling:.0f} t/s")
    if not a.no_mmap:
        print(f"the file maps {100 * huge_mapped(model):.0f}% in 2 MB pages (the rest in 4 KB pages, which read slower)")
    # (after some context the cache's rows are read too: no ceiling from
    # the weights alone)
    tg = [t for t in ours if t.startswith("tg") and "@" not in t]
    for t in tg:
        print(f"{t}: qlm at {100 * statistics.mean(ours[t]) / ceiling:.0f}% of the ceiling, " +
              ", ".join(f"{l} at {100 * statistics.mean(refs[l][t]) / ceiling:.0f}%" for l in labels if t in refs[l]))
    return rows


if __name__ == "__main__":
    main()
