#!/bin/sh
# qlm batch: input order kept, resume after kill -9, malformed lines, and
# a prompt's greedy result independent of what shares its batch.
BUILD=${1:-build}
QLM=${QLM:-./qlm}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
# How many of two 8-line outputs' lines have the same id and text (-1:
# not 8 lines each).
same_texts() {
    python3 -c '
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]; b = [json.loads(l) for l in open(sys.argv[2])]
print(sum(x["id"] == y["id"] and x["text"] == y["text"] for x, y in zip(a, b)) if len(a) == len(b) == 8 else -1)
' "$1" "$2"
}
"$BUILD/tests/test_model" --write-tiny "$tmp/tiny.gguf" || { echo "FAIL batch_setup: cannot write tiny model"; exit 1; }
M="$tmp/tiny.gguf"

# 1 since attention gives bit-identical results for a sequence
# whether or not other sequences' cells are interleaved with its own (the
# KV-cache work, main dc5a247); 0 would report a difference as XFAIL.
KV_BITEXACT=1

# gen FILE N TOKENS: N prompt lines; the earlier lines ask for more tokens,
# so later ones finish first.
gen() {
    python3 - "$@" <<'EOF'
import json, sys
path, n, tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
words = ["hello", "the sky", "once upon", "abc", "1 2 3", "he he", "zzz", "fox", "lorem", "x y"]
with open(path, "w") as f:
    for i in range(n):
        f.write(json.dumps({"id": f"p{i}", "prompt": words[i % 10] + " " + str(i),
                            "n_predict": max(1, tokens - 3 * i)}) + "\n")
EOF
}

# --- input order, with later lines finishing first ---
gen "$tmp/in.jsonl" 12 40
$QLM batch -m "$M" "$tmp/in.jsonl" --temp 0 --parallel 4 >"$tmp/out.jsonl" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ ! -s "$tmp/err" ] && python3 -c '
import json, sys
inp = [json.loads(l) for l in open(sys.argv[1])]
out = [json.loads(l) for l in open(sys.argv[2])]
assert [o["id"] for o in out] == [i["id"] for i in inp], [o["id"] for o in out]
for i, o in zip(inp, out):
    assert o["finish_reason"] in ("length", "eos"), o
    assert o["tokens"]["generated"] <= i["n_predict"] and set(o) >= {"text", "tokens", "timings"}, o
' "$tmp/in.jsonl" "$tmp/out.jsonl" 2>"$tmp/py"; then pass batch_order_preserved
else fail batch_order_preserved "rc=$rc $(tail -1 "$tmp/py") $(head -2 "$tmp/err")"; fi

# --- progress bar: on a terminal only (the runs above had stderr in a file
# and it stayed empty); tmux gives stderr a terminal ---
if command -v tmux >/dev/null; then
    S="$tmp/tmux.sock"
    Qabs=$QLM; case "$Qabs" in /*) ;; *) Qabs="$(pwd)/$Qabs" ;; esac
    tmux -S "$S" -f /dev/null new-session -d -x 120 -y 20 \
        "$Qabs batch -m $M $tmp/in.jsonl --temp 0 -o $tmp/tty.jsonl; echo __EXIT=\$?; sleep 600"
    n=0; while [ $n -lt 600 ] && ! tmux -S "$S" capture-pane -p | grep -q '^__EXIT='; do sleep 0.1; n=$((n + 1)); done
    pane=$(tmux -S "$S" capture-pane -p)
    tmux -S "$S" kill-server 2>/dev/null
    if echo "$pane" | grep -q '^__EXIT=0' && echo "$pane" | grep -qE '^\[#+\] 12/12 .*tok/s' && [ "$(wc -l < "$tmp/tty.jsonl")" = 12 ]
    then pass batch_progress_bar_on_terminal; else fail batch_progress_bar_on_terminal "$(echo "$pane" | grep -v '^$' | tail -3)"; fi
else fail batch_progress_bar_on_terminal "tmux is not installed"; fi

# --- malformed lines: one stderr line each (with its line number) and an
# error record in place; the other lines still run; exit status 2 ---
python3 - "$tmp/bad.jsonl" <<'EOF'
import json, sys
lines = [json.dumps({"id": 1, "prompt": "hello", "n_predict": 3}),
         '{"id": 2, "prompt": "unterminated',
         '',
         '[1, 2]',
         json.dumps({"id": 3}),
         json.dumps({"id": 4, "prompt": "x", "n_predict": "many"}),
         json.dumps({"id": 5, "messages": [{"role": "user", "content": "hi"}]}),
         json.dumps({"id": 6, "prompt": "fine", "n_predict": 2, "stop": ["zz"]}),
         '\xff\xfe garbage']
with open(sys.argv[1], "w", encoding="utf-8", errors="surrogateescape") as f:
    f.write("\n".join(lines) + "\n")
EOF
$QLM batch -m "$M" "$tmp/bad.jsonl" --temp 0 >"$tmp/out.jsonl" 2>"$tmp/err"; rc=$?
if [ $rc = 2 ] && [ "$(wc -l < "$tmp/err")" = 6 ] && [ "$(grep -c "^qlm: error: .*bad.jsonl:[0-9]*: " "$tmp/err")" = 6 ] && python3 -c '
import json, sys
out = [json.loads(l) for l in open(sys.argv[1])]
assert len(out) == 8, len(out)                 # the blank line has no record
assert [o.get("line") for o in out if "error" in o] == [2, 4, 5, 6, 7, 9], out
assert "text" in out[0] and out[0]["id"] == 1 and "text" in out[6] and out[6]["id"] == 6, out
assert out[1]["id"] is None and out[3]["id"] == 3, out
' "$tmp/out.jsonl" 2>"$tmp/py"; then pass batch_malformed_lines
else fail batch_malformed_lines "rc=$rc $(tail -1 "$tmp/py") $(head -8 "$tmp/err")"; fi

# --- resume after kill -9: every id exactly once, in input order ---
gen "$tmp/big.jsonl" 120 200
$QLM batch -m "$M" "$tmp/big.jsonl" -o "$tmp/res.jsonl" --temp 0 --parallel 2 -t 1 2>/dev/null &
pid=$!
n=0
while [ "$(cat "$tmp/res.jsonl" 2>/dev/null | wc -l)" -lt 3 ] && [ $n -lt 1200 ] && kill -0 $pid 2>/dev/null; do
    sleep 0.05; n=$((n + 1))
done
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
before=$(wc -l < "$tmp/res.jsonl")
# A kill can land mid-write: make sure a partial last line is there.
printf '{"id":"p99","text":"half a li' >> "$tmp/res.jsonl"
$QLM batch -m "$M" "$tmp/big.jsonl" -o "$tmp/res.jsonl" --temp 0 --parallel 4 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && [ "$before" -lt 120 ] && python3 -c '
import json, sys
inp = [json.loads(l)["id"] for l in open(sys.argv[1])]
raw = open(sys.argv[2]).read()
assert raw.endswith("\n"), "last line not whole"
out = [json.loads(l)["id"] for l in raw.splitlines()]
assert out == inp, (len(out), len(inp), [i for i in set(out) if out.count(i) > 1])
' "$tmp/big.jsonl" "$tmp/res.jsonl" 2>"$tmp/py"; then pass batch_resume_after_kill
else fail batch_resume_after_kill "rc=$rc lines before=$before $(tail -1 "$tmp/py") $(head -2 "$tmp/err")"; fi

# Rerunning a finished output does nothing.
cp "$tmp/res.jsonl" "$tmp/res0.jsonl"
$QLM batch -m "$M" "$tmp/big.jsonl" -o "$tmp/res.jsonl" --resume --temp 0 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && cmp -s "$tmp/res.jsonl" "$tmp/res0.jsonl"; then pass batch_resume_complete_is_noop
else fail batch_resume_complete_is_noop "rc=$rc $(head -2 "$tmp/err")"; fi

# --- usage and load errors ---
$QLM batch -m "$M" >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 1 ] && [ "$(wc -l < "$tmp/err")" = 1 ]; then pass batch_no_input_usage; else fail batch_no_input_usage "rc=$rc"; fi
$QLM batch -m "$M" "$tmp/none.jsonl" >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && [ ! -s "$tmp/out" ]; then pass batch_missing_input; else fail batch_missing_input "rc=$rc"; fi
echo "not json" > "$tmp/notres.jsonl"
$QLM batch -m "$M" "$tmp/in.jsonl" -o "$tmp/notres.jsonl" >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 2 ] && [ "$(cat "$tmp/notres.jsonl")" = "not json" ]; then pass batch_refuses_foreign_output
else fail batch_refuses_foreign_output "rc=$rc $(head -1 "$tmp/err")"; fi

# --- a shared prompt prefix is computed once and changes no result: one
# slot, so the lines share the previous line's cells (no interleaving) ---
python3 - "$tmp/pre.jsonl" <<'EOF'
import json, sys
pre = "You are a careful assistant. Answer briefly, and say so when unsure. "
with open(sys.argv[1], "w") as f:
    for i, q in enumerate(["hello", "the sky", "why?", "abc def", "1 2 3"]):
        f.write(json.dumps({"id": i, "prompt": pre + q, "n_predict": 30}) + "\n")
EOF
$QLM batch -m "$M" "$tmp/pre.jsonl" --temp 0 --parallel 1 >"$tmp/pre.out" 2>"$tmp/err"; rc=$?
ok=$rc; why="rc=$rc $(head -1 "$tmp/err")"
for i in 1 2 3 4 5; do
    sed -n "${i}p" "$tmp/pre.jsonl" > "$tmp/one.jsonl"
    $QLM batch -m "$M" "$tmp/one.jsonl" --temp 0 >"$tmp/one.out" 2>/dev/null
    python3 -c '
import json, sys
a = json.loads(open(sys.argv[1]).read()); b = [json.loads(l) for l in open(sys.argv[2])][int(sys.argv[3]) - 1]
assert a["tokens"]["cached"] == 0 and (b["tokens"]["cached"] >= 60 or sys.argv[3] == "1"), (a["tokens"], b["tokens"])
assert a["text"] == b["text"], (a["text"], b["text"])' "$tmp/one.out" "$tmp/pre.out" $i 2>"$tmp/py" || { ok=1; why="line $i: $(tail -1 "$tmp/py")"; }
done
if [ $ok = 0 ]; then pass batch_shared_prefix_same_results; else fail batch_shared_prefix_same_results "$why"; fi

# --- the same lines taking 5 slots at once: the first line's prompt is
# computed alone, the other four wait for its prefix, then share it and
# are computed together in one pass (2 passes in all), same texts ---
$QLM batch -m "$M" "$tmp/pre.jsonl" --temp 0 --parallel 5 -v >"$tmp/pre5.out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && grep -q 'the rest in 2 passes;' "$tmp/err" && python3 -c '
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]; b = [json.loads(l) for l in open(sys.argv[2])]
assert len(a) == len(b) == 5, (len(a), len(b))
for x, y in zip(a, b):
    assert x["text"] == y["text"] and x["tokens"] == y["tokens"], (x, y)' "$tmp/pre.out" "$tmp/pre5.out" 2>"$tmp/py"
then pass batch_shared_prefix_waits_then_group_prefill
else fail batch_shared_prefix_waits_then_group_prefill "rc=$rc $(tail -1 "$tmp/py") $(tail -1 "$tmp/err")"; fi

# --- greedy: a prompt alone, and in a batch of 8, and through qlm run ---
gen "$tmp/eight.jsonl" 8 60
# (the 8 prompts are computed in one pass: -v counts the passes)
$QLM batch -m "$M" "$tmp/eight.jsonl" --temp 0 --parallel 8 -v >"$tmp/b8.jsonl" 2>"$tmp/err"
ok=1; why=""
grep -q 'the rest in 1 passes;' "$tmp/err" || { ok=0; why="not one prefill pass: $(tail -1 "$tmp/err")"; }
for i in 1 4 8; do
    sed -n "${i}p" "$tmp/eight.jsonl" > "$tmp/one.jsonl"
    $QLM batch -m "$M" "$tmp/one.jsonl" --temp 0 --parallel 1 >"$tmp/b1.jsonl" 2>/dev/null
    python3 -c '
import json, sys
a = json.loads(open(sys.argv[1]).read())
b = [json.loads(l) for l in open(sys.argv[2])][int(sys.argv[3]) - 1]
assert a["id"] == b["id"] and a["text"] == b["text"] and a["tokens"] == b["tokens"], (a, b)
' "$tmp/b1.jsonl" "$tmp/b8.jsonl" $i 2>"$tmp/py" || { ok=0; why="line $i: $(tail -1 "$tmp/py")"; }
done
if [ $ok = 1 ]; then
    [ $KV_BITEXACT = 1 ] && pass batch_alone_equals_batch_of_8 ||
        pass "batch_alone_equals_batch_of_8 (XPASS: marked expected to fail until bit-exact attention across sequences lands; set KV_BITEXACT=1)"
elif [ $KV_BITEXACT = 1 ]; then fail batch_alone_equals_batch_of_8 "$why"
else echo "XFAIL batch_alone_equals_batch_of_8: expected failure until attention is bit-exact across interleaved sequences (KV-cache work): $why"; fi

p=$(sed -n 1p "$tmp/eight.jsonl" | python3 -c 'import json, sys; print(json.load(sys.stdin)["prompt"])')
$QLM run -m "$M" -p "$p" -n 60 --temp 0 --json >"$tmp/run.json" 2>/dev/null
if python3 -c '
import json, sys
a = json.load(open(sys.argv[1])); b = json.loads(open(sys.argv[2]).readline())
assert a["text"] == b["text"], (a["text"], b["text"])' "$tmp/run.json" "$tmp/b8.jsonl" 2>"$tmp/py"
then pass batch_equals_run
elif [ $KV_BITEXACT = 1 ]; then fail batch_equals_run "$(tail -1 "$tmp/py")"
else echo "XFAIL batch_equals_run: expected failure until attention is bit-exact across interleaved sequences: $(tail -1 "$tmp/py")"; fi

# --- speculative decoding: greedy texts with -md (the target itself, a
# deliberately bad draft) and --lookup are those without, one sequence at
# a time and with several sequences' drafts checked in one batch; each
# record counts its drafted and accepted tokens ---
"$BUILD/tests/test_spec" --write-draft bad "$M" "$tmp/bad.gguf" || echo "FAIL batch_setup: cannot write a bad draft"
python3 - "$tmp/spec.jsonl" <<'EOF'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(8):
        line = {"id": i, "prompt": "hello world hello world " * (i % 3 + 1) + str(i), "n_predict": 20 + 5 * i}
        if i == 5: line["stop"] = "o"
        if i == 6: line["n_predict"] = 0
        if i == 7: line["n_predict"] = 100000   # runs into the end of its context
        f.write(json.dumps(line) + "\n")
EOF
ok=1
for np in 1 4; do
    $QLM batch -m "$M" "$tmp/spec.jsonl" --temp 0 --parallel $np >"$tmp/plain.jsonl" 2>"$tmp/err" || { ok=0; echo "# plain -np $np: $(head -2 "$tmp/err")"; }
    # (--draft-fixed: adaptive mode rarely probes a draft as big as the target)
    for flags in "-md $M --draft-fixed" "-md $tmp/bad.gguf --draft 3 --draft-fixed" "--lookup" "--lookup --draft 2 --draft-min 2"; do
        $QLM batch -m "$M" "$tmp/spec.jsonl" --temp 0 --parallel $np $flags -v >"$tmp/sp.jsonl" 2>"$tmp/err" ||
            { ok=0; echo "# -np $np $flags: $(head -2 "$tmp/err")"; continue; }
        grep -q '^qlm: speculative ([a-z]*): drafted [0-9]*, accepted' "$tmp/err" || { ok=0; echo "# -np $np $flags: no summary"; }
        python3 -c '
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]; b = [json.loads(l) for l in open(sys.argv[2])]
assert len(a) == len(b) == 8, (len(a), len(b))
for x, y in zip(a, b):
    assert (x["id"], x["text"], x["finish_reason"]) == (y["id"], y["text"], y["finish_reason"]), (x, y)
    t = y["tokens"]
    assert t["generated"] == x["tokens"]["generated"] and 0 <= t["accepted"] <= t["drafted"], t
    assert "draft_ms" in y["timings"], y
if sys.argv[3].startswith("-md") and "bad" not in sys.argv[3]:   # the target as its own draft
    assert all(y["tokens"]["accepted"] > 0 for y in b if y["tokens"]["generated"] > 2), [y["tokens"] for y in b]
assert sum(y["tokens"]["drafted"] for y in b) > 0, "nothing drafted"
assert b[7]["finish_reason"] == "context" and b[6]["tokens"]["generated"] == 0, (b[6], b[7])
' "$tmp/plain.jsonl" "$tmp/sp.jsonl" "$flags" 2>"$tmp/py" || { ok=0; echo "# -np $np $flags: $(tail -1 "$tmp/py")"; }
    done
done
if [ $ok = 1 ]; then pass batch_spec_greedy_identical; else fail batch_spec_greedy_identical "see above"; fi
$QLM batch -m "$M" "$tmp/spec.jsonl" -md "$M" --lookup >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 1 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && [ ! -s "$tmp/out" ]; then pass batch_spec_two_drafters
else fail batch_spec_two_drafters "rc=$rc $(head -2 "$tmp/err")"; fi

# --- --chat-template NAME: "messages" lines render through the built-in
# (the same text as the prompt it stands for); an unknown name is a usage
# error before anything runs ---
printf '%s\n' '{"id": "m", "messages": [{"role": "user", "content": "hi"}], "n_predict": 8}' \
    '{"id": "p", "prompt": "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", "n_predict": 8}' > "$tmp/tm.jsonl"
$QLM batch -m "$M" "$tmp/tm.jsonl" --temp 0 --chat-template chatml >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 0 ] && python3 -c '
import json, sys
a, b = [json.loads(l) for l in open(sys.argv[1])]
assert a["text"] == b["text"] and a["tokens"]["prompt"] == b["tokens"]["prompt"], (a, b)' "$tmp/out" 2>"$tmp/py"
then pass batch_template_name; else fail batch_template_name "rc=$rc $(tail -1 "$tmp/py") $(head -2 "$tmp/err")"; fi
$QLM batch -m "$M" "$tmp/tm.jsonl" --chat-template chatmlx >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc = 1 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q 'not a built-in template (chatml' "$tmp/err" && [ ! -s "$tmp/out" ]
then pass batch_template_unknown_name; else fail batch_template_unknown_name "rc=$rc $(head -2 "$tmp/err")"; fi

# --- the same on the default model (make conformance): 8 chat prompts,
# each alone and all 8 together, greedy ---
DM=models/SmolLM2-135M-Instruct.Q4_1.gguf
if [ "${QLM_CONFORMANCE:-0}" = 1 ] && [ -f "$DM" ]; then
    python3 - "$tmp/sm.jsonl" <<'EOF'
import json, sys
qs = ["Write a poem about the sea.", "Explain photosynthesis.", "What is a black hole?",
      "Tell me a story about a dragon.", "How do computers work?", "Describe Paris.",
      "Why do cats purr?", "What is the meaning of life?"]
with open(sys.argv[1], "w") as f:
    for i, q in enumerate(qs):
        f.write(json.dumps({"id": i, "messages": [{"role": "user", "content": q}], "n_predict": 48}) + "\n")
EOF
    $QLM batch -m "$DM" "$tmp/sm.jsonl" --temp 0 --parallel 8 -c 512 >"$tmp/sm8.jsonl" 2>/dev/null
    $QLM batch -m "$DM" "$tmp/sm.jsonl" --temp 0 --parallel 1 -c 512 >"$tmp/sm1.jsonl" 2>/dev/null
    same=$(same_texts "$tmp/sm1.jsonl" "$tmp/sm8.jsonl")
    if [ "$same" = 8 ]; then pass batch_default_model_alone_equals_batch_of_8
    elif [ $KV_BITEXACT = 1 ]; then fail batch_default_model_alone_equals_batch_of_8 "$same of 8 identical"
    else echo "XFAIL batch_default_model_alone_equals_batch_of_8: $same of 8 prompts identical; expected until attention is bit-exact across interleaved sequences"; fi
    # Q8_0 runs its prompts through the unfused layers (tile kernels from
    # 8 tokens), whose attention differs from the fused layers': the same
    # contract there
    Q8=models/SmolLM2-135M-Instruct.Q8_0.gguf
    if [ -f "$Q8" ]; then
        $QLM batch -m "$Q8" "$tmp/sm.jsonl" --temp 0 --parallel 8 -c 512 >"$tmp/q8.8.jsonl" 2>/dev/null
        $QLM batch -m "$Q8" "$tmp/sm.jsonl" --temp 0 --parallel 1 -c 512 >"$tmp/q8.1.jsonl" 2>/dev/null
        same=$(same_texts "$tmp/q8.1.jsonl" "$tmp/q8.8.jsonl")
        if [ "$same" = 8 ]; then pass batch_q8_0_alone_equals_batch_of_8
        else fail batch_q8_0_alone_equals_batch_of_8 "$same of 8 identical"; fi
    fi
    # 8 prompts in 4 slots (refilled as lines finish), plain and with
    # drafts checked across sequences: the texts of one slot alone
    for flags in "" "--lookup" "-md $DM --draft 4 --draft-p-min 0 --draft-fixed"; do
        $QLM batch -m "$DM" "$tmp/sm.jsonl" --temp 0 --parallel 4 -c 512 $flags >"$tmp/sm4.jsonl" 2>/dev/null
        same=$(same_texts "$tmp/sm1.jsonl" "$tmp/sm4.jsonl")
        name="batch_default_model_4_slots_equal_alone${flags:+_$(echo "$flags" | cut -d' ' -f1 | tr -d -)}"
        if [ "$same" = 8 ]; then pass "$name"; else fail "$name" "$same of 8 identical"; fi
    done
fi
# ignore_eos per line (and --ignore-eos for all): "hi" ends early at
# temperature 0 on the tiny model; banned, the end never comes.
printf '%s\n' '{"id": "a", "prompt": "hi", "n_predict": 100}' '{"id": "b", "prompt": "hi", "n_predict": 100, "ignore_eos": true}' \
    '{"id": "c", "prompt": "hi", "ignore_eos": "yes"}' >"$tmp/ie.jsonl"
$QLM batch -m "$M" "$tmp/ie.jsonl" --temp 0 >"$tmp/ie1.jsonl" 2>/dev/null
$QLM batch -m "$M" "$tmp/ie.jsonl" --temp 0 --ignore-eos >"$tmp/ie2.jsonl" 2>/dev/null
if python3 -c 'import json, sys
a, b, c = [json.loads(l) for l in open(sys.argv[1])]
assert a["finish_reason"] == "eos" and a["tokens"]["generated"] < 100, a
assert b["finish_reason"] == "length" and b["tokens"]["generated"] == 100 and b["text"].startswith(a["text"]), b
assert "ignore_eos" in c["error"], c
a2 = [json.loads(l) for l in open(sys.argv[2])][0]
assert a2["finish_reason"] == "length" and a2["text"] == b["text"], a2' "$tmp/ie1.jsonl" "$tmp/ie2.jsonl" 2>"$tmp/py"
then pass batch_ignore_eos; else fail batch_ignore_eos "$(tail -1 "$tmp/py" | cut -c1-200)"; fi

exit 0
