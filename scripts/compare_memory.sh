#!/usr/bin/env bash
# scripts/compare_memory.sh — one configuration at --recompute 0 and 1.
#
# usage: [ROUNDS=n] scripts/compare_memory.sh [train_gpt flags...]
# Default shape: 48 layers, C=128, NH=4, B=8, T=256, 3 steps, on the default
# dataset (run `make data` first) or whatever --train-data you pass; each of
# those flags that is not given keeps its default (so `--arch llama` alone
# compares the Llama block at that shape), and --model replaces the shape.
# Runs the two modes alternately, 0,1,0,1,... for ROUNDS rounds (default 3),
# so that a machine's slow spell falls on both. Prints stored-activation
# bytes, workspace, the plan's baseline and total, the measured peak (the
# first round's), the tokens/s of each run (median of its steps after the
# first) as a median with its min-max over the rounds, a verdict that says
# "within noise" unless the ranges are apart (scripts/speed_verdict.py),
# and the last loss per mode; checks that every run's last loss is the
# same. Exits 1 if they are not. Beside the memory saved, its time cost:
# the forward FLOPs each mode recomputes (model/flops.h, from the log's
# summary), the predicted step-time increase (from the op costs when they
# are cached for this shape, else from the FLOPs, said to be a rough
# guess) and the measured one, per round, as a median with its min-max.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x ./train_gpt ] || { echo "compare_memory.sh: ./train_gpt not built (run make)" >&2; exit 1; }
given=" $* "
defaults=()
if [[ "$given" != *" --model "* && "$given" != *" --model="* ]]; then
    for kv in "--layers 48" "--channels 128" "--heads 4"; do
        [[ "$given" == *" ${kv% *} "* || "$given" == *" ${kv% *}="* ]] || defaults+=($kv)
    done
fi
for kv in "--batch 8" "--seq-len 256" "--steps 3"; do
    [[ "$given" == *" ${kv% *} "* || "$given" == *" ${kv% *}="* ]] || defaults+=($kv)
done
set -- "${defaults[@]}" "$@"
rounds=${ROUNDS:-3}
out=$(mktemp -d /tmp/compare_memory.XXXXXX)
trap 'rm -rf "$out"' EXIT
t0=$(date +%s)
for r in $(seq "$rounds"); do
    for mode in 0 1; do
        if ! ./train_gpt "$@" --val-every 0 --recompute "$mode" --log "$out/r${mode}_$r.jsonl" \
            > "$out/r${mode}_$r.txt" 2>&1; then
            echo "compare_memory.sh: ./train_gpt --recompute $mode failed:" >&2
            tail -5 "$out/r${mode}_$r.txt" >&2
            exit 1
        fi
    done
done
echo "command: ./train_gpt $* --val-every 0 --recompute {0,1}, alternated over $rounds round(s) in $(( $(date +%s) - t0 )) s"
rc=0
python3 - "$out" "$rounds" > "$out/table.txt" <<'PY' || rc=$?
import json, statistics, sys
d, rounds = sys.argv[1], int(sys.argv[2])
rows, tps, losses, ms = {}, [], set(), {0: [], 1: []}
for r in range(1, rounds + 1):
    for mode in (0, 1):
        steps, summary = [], None
        for line in open(f"{d}/r{mode}_{r}.jsonl"):
            j = json.loads(line)
            if j.get("event") == "summary":
                summary = j
            elif "loss" in j:
                steps.append(j)
        run = [s["tokens_per_s"] for s in steps[1:]] or [steps[0]["tokens_per_s"]]
        tps.append(f"{mode} {statistics.median(run)}")
        losses.add(steps[-1]["loss"])
        ms[mode].append(summary["step_ms_measured"])
        if r == 1:
            rows[mode] = (summary["memory"], steps[-1]["loss"], summary)
mib = lambda b: f"{b / 2**20:,.1f} MiB"
print(f"{'':24}{'recompute 0':>18}{'recompute 1':>18}")
for key, label in [("activations", "stored activations"), ("workspace", "workspace"),
                   ("head", "loss head"), ("baseline", "baseline (process)"),
                   ("process_total", "planner total"), ("peak_measured", "measured peak")]:
    print(f"{label:24}{mib(rows[0][0][key]):>18}{mib(rows[1][0][key]):>18}")
print(f"{'loss at last step':24}{rows[0][1]:>18.6f}{rows[1][1]:>18.6f}")
a0, a1 = rows[0][0]["activations"], rows[1][0]["activations"]
print(f"stored activations: recompute 1 keeps {a1 / a0:.1%} of recompute 0's ({a0 / a1:.1f}x less)")
# what the saving costs in time: FLOPs repeated, predicted and measured step time
s0, s1 = rows[0][2], rows[1][2]
rec = lambda s: s["flops_recomputed"] / s["flops_step"]
print(f"{'forward FLOPs recomputed':24}{rec(s0):>18.2%}{rec(s1):>18.2%}")
if "step_ms_predicted" in s0 and "step_ms_predicted" in s1:
    p0, p1 = s0["step_ms_predicted"], s1["step_ms_predicted"]
    print(f"{'step time predicted':24}{p0:>15.1f} ms{p1:>15.1f} ms")
    pred = f"{p1 / p0 - 1:+.1%} (from the op costs)"
else:
    pred = (f"{(1 + rec(s1)) / (1 + rec(s0)) - 1:+.1%} (from the FLOPs: a rough guess; "
            "no op costs cached for this shape)")
med = lambda xs: statistics.median(xs)
print(f"{'step time measured':24}{med(ms[0]):>15.1f} ms{med(ms[1]):>15.1f} ms")
inc = sorted(b / a - 1 for a, b in zip(ms[0], ms[1]))
print(f"step time: recompute 1 predicted {pred}; measured {med(inc):+.1%} (median of "
      f"{len(inc)} round(s), min-max {inc[0]:+.1%}..{inc[-1]:+.1%}; each run's step time is "
      f"the median of its steps after the first)")
open(f"{d}/tps.txt", "w").write("\n".join(tps) + "\n")
if len(losses) == 1:
    print(f"losses: identical in all {2 * rounds} runs (recompute 1 reproduces recompute 0 bit for bit)")
else:
    print(f"losses: DIFFER ({sorted(losses)}) — recompute 1 must reproduce recompute 0 exactly")
    sys.exit(1)
PY
cat "$out/table.txt"
scripts/speed_verdict.py --label "tokens/s --recompute" < "$out/tps.txt"
exit $rc
