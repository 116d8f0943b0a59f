#!/bin/sh
# Speculative decoding against plain decoding, side by side: for each
# prompt, runs plain and speculative (FLAGS) alternately R times at
# temperature 0 and prints generation tokens/s of both, their ratio
# (median over the repetitions), whether the texts are identical, and the
# acceptance rate; "self" is the speculative run's own figure, its time per
# token against its plain decodes measured in the same process.  A noisy
# machine moves both columns; read the ratios.
#   sh tools/bench_spec.sh MODEL "FLAGS" PROMPT_FILE... (env: N=128 R=3 T= QLM=./qlm)
#   e.g. T=1 sh tools/bench_spec.sh models/SmolLM2-135M-Instruct.Q4_1.gguf --lookup tests/data/spec-bench/*.txt
M=$1; FLAGS=$2; shift 2
N=${N:-128}; R=${R:-3}; QLM=${QLM:-./qlm}
# T=1: one thread each, steadier on a machine shared with other work
TF=${T:+-t $T}
export OMP_WAIT_POLICY=passive
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf '%-20s %9s %9s %7s %5s %6s %6s %s\n' prompt plain_t/s spec_t/s ratio same accept pauses self
for f in "$@"; do
    : > "$tmp/rows"
    for r in $(seq "$R"); do
        $QLM run -m "$M" -f "$f" --chat -n "$N" --temp 0 --json $TF > "$tmp/p.json" 2>/dev/null
        $QLM run -m "$M" -f "$f" --chat -n "$N" --temp 0 --json $TF $FLAGS > "$tmp/s.json" 2>/dev/null
        python3 - "$tmp/p.json" "$tmp/s.json" >> "$tmp/rows" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); s = json.load(open(sys.argv[2]))
sp = s.get("speculative", {})
a, b = p["timings"]["generate_tokens_per_s"], s["timings"]["generate_tokens_per_s"]
print(a, b, b / a if a else 0, int(p["text"] == s["text"]), sp.get("acceptance_rate", 0), sp.get("pauses", 0),
      sp.get("speedup", 0))
PY
    done
    python3 - "$tmp/rows" "$(basename "$f")" <<'PY'
import sys, statistics as st
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
col = lambda i: st.median(r[i] for r in rows)
print("%-20s %9.1f %9.1f %6.2fx %5s %5.0f%% %6d %5.2fx" % (sys.argv[2][:20], col(0), col(1), col(2),
      "yes" if all(r[3] for r in rows) else "NO", 100 * col(4), int(col(5)), col(6)))
PY
done
