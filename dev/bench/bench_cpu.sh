#!/usr/bin/env bash
# dev/bench/bench_cpu.sh — CPU throughput and peak RSS at --recompute 0 and 1.
#
# usage: dev/bench/bench_cpu.sh [REPEATS] [train_gpt flags...]
# Fixed small configuration (override with flags): 12 layers, C=256, NH=8,
# B=4, T=256, 6 steps, on the default dataset (make data). The two modes run
# alternately REPEATS times (default 3) in one invocation, so the ratio is
# measured side by side. Per run: median tokens/s over steps 2..N. Reported:
# the median over runs, per mode, and peak RSS from the run's summary line.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x ./train_gpt ] || { echo "bench_cpu.sh: ./train_gpt not built (run make)" >&2; exit 1; }
reps=${1:-3}
[ $# -gt 0 ] && shift
if [ $# -eq 0 ]; then
    set -- --layers 12 --channels 256 --heads 8 --batch 4 --seq-len 256 --steps 6
fi
out=$(mktemp -d /tmp/bench_cpu.XXXXXX)
trap 'rm -rf "$out"' EXIT
for r in $(seq "$reps"); do
    for mode in 0 1; do
        ./train_gpt "$@" --val-every 0 --recompute "$mode" --log "$out/r${mode}_$r.jsonl" \
            > "$out/r${mode}_$r.txt" 2>&1 || { cat "$out/r${mode}_$r.txt" >&2; exit 1; }
    done
done
echo "command: dev/bench/bench_cpu.sh $reps $*   ($(nproc) cores, $(date -u +%F))"
python3 - "$out" "$reps" <<'PY'
import glob, json, statistics, sys
d, reps = sys.argv[1], int(sys.argv[2])
res = {}
for mode in (0, 1):
    tps, peak = [], []
    for r in range(1, reps + 1):
        steps = []
        for line in open(f"{d}/r{mode}_{r}.jsonl"):
            j = json.loads(line)
            if j.get("event") == "summary":
                peak.append(j["memory"]["peak_measured"])
            elif "loss" in j:
                steps.append(j["tokens_per_s"])
        tps.append(statistics.median(steps[1:] or steps))
    res[mode] = (statistics.median(tps), max(peak), tps)
print(f"{'mode':12}{'tokens/s (median)':>20}{'peak RSS':>14}   per-run medians")
for mode in (0, 1):
    t, p, runs = res[mode]
    print(f"recompute {mode:<2}{t:>20,.0f}{p / 2**20:>10,.1f} MiB   {', '.join(f'{x:,.0f}' for x in runs)}")
print(f"recompute 1 / recompute 0 throughput: {res[1][0] / res[0][0]:.3f}")
PY
