#!/usr/bin/env bash
# dev/bench/bench_head.sh — cost of the token-chunked loss head.
#
# usage: dev/bench/bench_head.sh [REPEATS] [train_gpt flags...]
# Runs one configuration with the planner's default --loss-chunk and with
# --loss-chunk B*T (a single chunk: the whole (B*T, Vp) logits at once),
# alternately REPEATS times (default 2). Reports the median step time of
# each (steps 2..N of every run), their ratio, and the head's bytes.
# Default: GPT-2 124M (d12), B=2, T=256, recompute 1, 4 steps, default data.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x ./train_gpt ] || { echo "bench_head.sh: ./train_gpt not built (run make)" >&2; exit 1; }
reps=${1:-2}
[ $# -gt 0 ] && shift
if [ $# -eq 0 ]; then
    set -- --model d12 --batch 2 --seq-len 256 --recompute 1 --steps 4
fi
# B*T from the flags (defaults of train_gpt otherwise).
B=4; T=1024; prev=""
for a in "$@"; do
    case "$prev" in --batch) B=$a ;; --seq-len) T=$a ;; esac
    prev=$a
done
out=$(mktemp -d /tmp/bench_head.XXXXXX)
trap 'rm -rf "$out"' EXIT
for r in $(seq "$reps"); do
    for chunk in 0 $((B * T)); do
        ./train_gpt "$@" --val-every 0 --loss-chunk "$chunk" --log "$out/c${chunk}_$r.jsonl" \
            > "$out/c${chunk}_$r.txt" 2>&1 || { cat "$out/c${chunk}_$r.txt" >&2; exit 1; }
    done
done
echo "command: dev/bench/bench_head.sh $reps $*   ($(nproc) cores, $(date -u +%F))"
python3 - "$out" "$reps" "$((B * T))" <<'PY'
import json, statistics, sys
d, reps, full = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
res = {}
for chunk in (0, full):
    ms, head = [], None
    for r in range(1, reps + 1):
        steps = []
        for line in open(f"{d}/c{chunk}_{r}.jsonl"):
            j = json.loads(line)
            if j.get("event") == "summary":
                head = j["memory"]["head"]
            elif "loss" in j:
                steps.append(j["ms"])
        ms += steps[1:] or steps
    res[chunk] = (statistics.median(ms), head)
for chunk, label in ((0, "chunked (planner default)"), (full, f"one chunk of {full} tokens")):
    t, h = res[chunk]
    print(f"{label:32} step {t:9.1f} ms (median)   head buffer {h / 2**20:8.1f} MiB")
print(f"chunked / one-chunk step time: {res[0][0] / res[full][0]:.3f}")
PY
