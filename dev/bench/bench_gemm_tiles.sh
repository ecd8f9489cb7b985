#!/usr/bin/env bash
# dev/bench/bench_gemm_tiles.sh — two ./train_gpt binaries' GPT-2 124M step on
# the cpu, alternating, wall and CPU time: made for the products in tiles
# fixed by the shape (kernels/cpu/gemm_tiles.c) against OpenBLAS's own
# threading (dev/notes/openblas-threads.md).
#
# usage: dev/bench/bench_gemm_tiles.sh OLD_BIN NEW_BIN [REPEATS]
#   REPEATS  runs of each side per shape, alternating old and new (default 5)
# Runs --model gpt2 (124M, random init) --recompute 0 --op-costs flops at
# B=1 T=1024 (STEPS steps, default 3) and B=4 T=64 (STEPS4, default 8), at --threads
# $THREADS (default 2), on datasets/tinyshakespeare_train_*.bin. Per run:
# the median step ms of steps 2..N from its --log (wall), and the process's
# user+sys CPU seconds over its steps' count (from /usr/bin/time: start-up
# is the same for both sides and is included); reported as the median and
# min..max of the runs, and new/old per alternating pair.
set -euo pipefail
cd "$(dirname "$0")/../.."
old=$1 new=$2 reps=${3:-5}
threads=${THREADS:-2}
steps=${STEPS:-3}
steps4=${STEPS4:-8}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
out=$(mktemp -d /tmp/bench_gemm_tiles.XXXXXX)
trap 'rm -rf "$out"' EXIT
echo "command: THREADS=$threads STEPS=$steps STEPS4=$steps4 dev/bench/bench_gemm_tiles.sh $old $new $reps   ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ))"
for shape in "1 1024 $steps" "4 64 $steps4"; do
    set -- $shape
    for r in $(seq "$reps"); do
        for side in old new; do
            bin=$new
            [ $side = old ] && bin=$old
            /usr/bin/time -f "%U %S %e" -o "$out/$side.$1.$2.$r.time" \
                "$bin" --model gpt2 --batch "$1" --seq-len "$2" --steps "$3" --val-every 0 \
                --recompute 0 --op-costs flops --device cpu --threads "$threads" \
                --train-data 'datasets/tinyshakespeare_train_*.bin' \
                --log "$out/$side.$1.$2.$r.jsonl" > "$out/$side.$1.$2.$r.txt" 2>&1 \
                || { cat "$out/$side.$1.$2.$r.txt" >&2; exit 1; }
        done
    done
done
python3 - "$out" "$reps" "$steps" "$steps4" <<'PY'
import json, statistics, sys
d, reps, steps, steps4 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def med(xs): return f"{statistics.median(xs):8.1f} ({min(xs):.1f}..{max(xs):.1f})"
for B, T, n in ((1, 1024, steps), (4, 64, steps4)):
    res = {}
    for side in ("old", "new"):
        ms, cpu = [], []
        for r in range(1, reps + 1):
            js = [json.loads(l) for l in open(f"{d}/{side}.{B}.{T}.{r}.jsonl")]
            js = [j for j in js if "loss" in j and "ms" in j]
            ms.append(statistics.median(j["ms"] for j in (js[1:] or js)))
            u, s, e = open(f"{d}/{side}.{B}.{T}.{r}.time").read().split()[-3:]
            cpu.append((float(u) + float(s)) * 1e3 / n)
        res[side] = (ms, cpu)
        print(f"B={B} T={T} {side}: step ms median {med(ms)}; process CPU ms/step median {med(cpu)}")
    for k, name in ((0, "step ms"), (1, "CPU ms/step")):
        q = [a / b for a, b in zip(res["new"][k], res["old"][k])]
        print(f"B={B} T={T} new/old {name}, per pair: median {statistics.median(q):.3f} "
              f"({min(q):.3f}..{max(q):.3f})")
PY
