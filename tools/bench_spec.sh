#!/bin/sh
# Speculative decoding against plain decoding, side by side: for each
# prompt, runs plain and speculative (FLAGS) R times at temperature 0,
# alternating which goes first.  Columns: generation tokens/s of both
# (medians); "ratio", spec/plain generation speed of each pair (median,
# lowest, highest); whether the texts are identical; acceptance rate and
# pauses; "self", the speculative run's own figure (its time per token
# against its plain decodes in the same process); "cpu", plain/spec CPU
# time of generation (each run's CPU time less that of the same command
# with -n 1, which loads, reads the prompt and makes one token), which a
# busy machine moves far less than wall time; and "cpu_all", the same for
# whole runs (loading the draft and reading the prompt with it included).
#   sh tools/bench_spec.sh MODEL "FLAGS" PROMPT_FILE... (env: N=128 R=3 T= QLM=./qlm)
#   e.g. T=1 sh tools/bench_spec.sh models/SmolLM2-135M-Instruct.Q4_1.gguf --lookup tests/data/spec-bench/*.txt
# A last line sums up over all prompts.
M=$1; FLAGS=$2; shift 2
export OMP_WAIT_POLICY=passive
exec python3 - "$M" "$FLAGS" "$@" <<'PY'
import json, os, resource, statistics as st, subprocess, sys

model, flags, files = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
N, R, qlm = os.environ.get("N", "128"), int(os.environ.get("R", "3")), os.environ.get("QLM", "./qlm")
threads = ["-t", os.environ["T"]] if os.environ.get("T") else []  # T=1: steadier on a shared machine

def run(f, extra, n):
    """(json output, CPU seconds) of one qlm run"""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([qlm, "run", "-m", model, "-f", f, "--chat", "-n", n, "--temp", "0", "--json"] + threads
                         + extra, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode:
        sys.exit("qlm failed: " + out.stderr.strip())
    return json.loads(out.stdout), after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime

def med(xs): return st.median(xs)

print("%-20s %9s %9s %7s %11s %5s %6s %6s %6s %6s %7s" % ("prompt", "plain_t/s", "spec_t/s", "ratio", "(low-high)",
      "same", "accept", "pauses", "self", "cpu", "cpu_all"))
allr, alls, allc, alla = [], [], [], []
for f in files:
    rows = []
    for r in range(R):
        order = [("p", []), ("s", flags)] if r % 2 == 0 else [("s", flags), ("p", [])]
        res = {}
        for name, extra in order:
            j, cpu = run(f, extra, N)
            _, cpu1 = run(f, extra, "1")
            res[name] = (j, cpu, cpu - cpu1)
        p, s = res["p"][0], res["s"][0]
        sp = s.get("speculative", {})
        a, b = p["timings"]["generate_tokens_per_s"], s["timings"]["generate_tokens_per_s"]
        rows.append(dict(a=a, b=b, ratio=b / a, same=p["text"] == s["text"], acc=sp.get("acceptance_rate", 0),
                         pauses=sp.get("pauses", 0), self=sp.get("speedup", 0),
                         cpu=res["p"][2] / res["s"][2] if res["s"][2] > 0 else 0, cpu_all=res["p"][1] / res["s"][1]))
    c = lambda k: med([x[k] for x in rows])
    rs = [x["ratio"] for x in rows]
    print("%-20s %9.1f %9.1f %6.2fx %11s %5s %5.0f%% %6d %5.2fx %5.2fx %6.2fx" % (
          os.path.basename(f)[:20], c("a"), c("b"), c("ratio"), "(%.2f-%.2f)" % (min(rs), max(rs)),
          "yes" if all(x["same"] for x in rows) else "NO", 100 * c("acc"), int(c("pauses")), c("self"), c("cpu"),
          c("cpu_all")), flush=True)
    allr += rs; alls += [x["self"] for x in rows]; allc += [x["cpu"] for x in rows]; alla += [x["cpu_all"] for x in rows]

def summary(name, xs):
    xs = sorted(xs)
    q = st.quantiles(xs, n=4) if len(xs) > 1 else xs * 3
    return "%s median %.3fx (quartiles %.3f-%.3f, range %.3f-%.3f)" % (name, med(xs), q[0], q[2], xs[0], xs[-1])

if allr:
    print("all %d pairs: %s; %s; %s; %s" % (len(allr), summary("ratio", allr), summary("self", alls),
          summary("cpu", allc), summary("cpu_all", alla)))
PY
