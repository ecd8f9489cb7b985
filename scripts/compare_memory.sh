#!/usr/bin/env bash
# scripts/compare_memory.sh — one configuration at --recompute 0 and 1.
#
# usage: scripts/compare_memory.sh [train_gpt flags...]
# Default shape: 48 layers, C=128, NH=4, B=8, T=256, 3 steps, on the default
# dataset (run `make data` first) or whatever --train-data you pass.
# Prints stored-activation bytes, workspace, planner total, measured peak,
# median tokens/s (steps after the first) and the last loss per mode, and
# checks that the two losses are identical. Exits 1 if they are not.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x ./train_gpt ] || { echo "compare_memory.sh: ./train_gpt not built (run make)" >&2; exit 1; }
if [ $# -eq 0 ]; then
    set -- --layers 48 --channels 128 --heads 4 --batch 8 --seq-len 256 --steps 3
fi
out=$(mktemp -d /tmp/compare_memory.XXXXXX)
trap 'rm -rf "$out"' EXIT
for mode in 0 1; do
    if ! ./train_gpt "$@" --val-every 0 --recompute "$mode" --log "$out/r$mode.jsonl" \
        > "$out/r$mode.txt" 2>&1; then
        echo "compare_memory.sh: ./train_gpt --recompute $mode failed:" >&2
        tail -5 "$out/r$mode.txt" >&2
        exit 1
    fi
done
echo "command: ./train_gpt $* --val-every 0 --recompute {0,1}"
python3 - "$out" <<'PY'
import json, statistics, sys
d = sys.argv[1]
rows = {}
for mode in (0, 1):
    steps, summary = [], None
    for line in open(f"{d}/r{mode}.jsonl"):
        j = json.loads(line)
        if j.get("event") == "summary":
            summary = j
        elif "loss" in j:
            steps.append(j)
    tps = [s["tokens_per_s"] for s in steps[1:]] or [steps[0]["tokens_per_s"]]
    rows[mode] = (summary["memory"], statistics.median(tps), steps[-1]["loss"])
mib = lambda b: f"{b / 2**20:,.1f} MiB"
print(f"{'':24}{'recompute 0':>18}{'recompute 1':>18}")
for key, label in [("activations", "stored activations"), ("workspace", "workspace"),
                   ("head", "loss head"), ("total", "planner total"),
                   ("peak_measured", "measured peak")]:
    print(f"{label:24}{mib(rows[0][0][key]):>18}{mib(rows[1][0][key]):>18}")
print(f"{'tokens/s (median)':24}{rows[0][1]:>18,.0f}{rows[1][1]:>18,.0f}")
print(f"{'loss at last step':24}{rows[0][2]:>18.6f}{rows[1][2]:>18.6f}")
a0, a1 = rows[0][0]["activations"], rows[1][0]["activations"]
print(f"stored activations: recompute 1 keeps {a1 / a0:.1%} of recompute 0's ({a0 / a1:.1f}x less)")
if rows[0][2] == rows[1][2]:
    print("losses: identical (recompute 1 reproduces recompute 0 bit for bit)")
else:
    print("losses: DIFFER — recompute 1 must reproduce recompute 0 exactly")
    sys.exit(1)
PY
