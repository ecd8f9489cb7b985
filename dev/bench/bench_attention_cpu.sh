#!/usr/bin/env bash
# dev/bench/bench_attention_cpu.sh — the cpu attention, tiled against the
# previous row-at-a-time kernels: the op alone, then the 124M step.
#
# usage: dev/bench/bench_attention_cpu.sh [REPEATS] [OLD_REV]
#   REPEATS  runs of each side, alternating old and new (default 5)
#   OLD_REV  the commit whose ./train_gpt is "old" in the step runs
#            (default: the parent of the commit that added the tiles,
#            kernels/cpu/attention_tile.h)
# Part 1, the op alone: build/cpu/bench/bench_attention_cpu (from
#   dev/bench/bench_attention_cpu.c, linked with the product's attention
#   objects and dev/bench/attention_cpu_old.c, the old kernels renamed) at
#   124M's heads (B=1, NH=12, hs=64), T = 256, 1024, 4096: forward,
#   backward, both; median and min..max ms and GFLOP/s at model/flops.c's
#   count; it first checks new against old.
# Part 2, the step: ./train_gpt --model gpt2 (124M, random init) of this
#   tree and of OLD_REV (built in a temporary git worktree), alternating,
#   at B=1 T=1024 and B=4 T=64, --recompute 0: per run the median
#   tokens/s of steps 2..N from its log; reported as the median and
#   min..max of the runs, and GFLOP/s (the run's own "GFLOP a step",
#   model/flops.c, over the median step time).
# PARTS (environment): which parts, "op,step" by default ("op" or "step"
# alone); STEPS: steps per run at B=1 T=1024 (default 3; B=4 T=64 runs 8).
# Threads: OMP_NUM_THREADS (default 2). Needs make's build/cpu (run
# `make NVCC= BUILD=build/cpu` first), TRAIN_GPT_GPT2_DIR (the tokenizer)
# and $TINYSHAKESPEARE (the text tokenized into the step runs' data).
set -euo pipefail
cd "$(dirname "$0")/../.."
reps=${1:-5}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
first=$(git log --diff-filter=A --format=%H -- kernels/cpu/attention_tile.h | tail -1)
old_rev=${2:-${first}^}
B=build/cpu
[ -f $B/kernels/cpu/attention.o ] || { echo "bench_attention_cpu.sh: build first: make NVCC= BUILD=$B" >&2; exit 1; }
[ -f "${TINYSHAKESPEARE:-}" ] || { echo "bench_attention_cpu.sh: set TINYSHAKESPEARE to a text file" >&2; exit 1; }
mkdir -p $B/bench
CF="-O3 -g -std=gnu11 -fopenmp -I."
cc $CF -Dcpu_attention_forward=old_attention_forward -Dcpu_attention_backward=old_attention_backward \
    -Dcpu_attention_decode=old_attention_decode -c dev/bench/attention_cpu_old.c -o $B/bench/att_old.o
cc $CF dev/bench/bench_attention_cpu.c $B/bench/att_old.o $B/kernels/cpu/attention.o \
    $B/kernels/cpu/attention_bwd.o -lm -o $B/bench/bench_attention_cpu
parts=${PARTS:-op,step}
steps=${STEPS:-3}
echo "command: PARTS=$parts STEPS=${STEPS:-3} dev/bench/bench_attention_cpu.sh $reps $old_rev   ($(nproc) cores, OMP_NUM_THREADS=$OMP_NUM_THREADS, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F))"
[[ $parts == *op* ]] && echo "== the op alone (B=1 NH=12 hs=64)"
[[ $parts == *op* ]] && for T in 256 1024 4096; do
    r=$reps
    [ "$T" = 4096 ] && r=$(( reps < 3 ? reps : 3 )) # the old kernel takes ~30 s there
    $B/bench/bench_attention_cpu "$T" "$r"
done

[[ $parts == *step* ]] || exit 0
echo "== the 124M step (--model gpt2, recompute 0), old = $old_rev"
out=$(mktemp -d /tmp/bench_attention_cpu.XXXXXX)
trap 'git worktree remove --force "$out/old" >/dev/null 2>&1 || true; rm -rf "$out"' EXIT
git worktree add --detach "$out/old" "$old_rev" > /dev/null 2>&1
make -s -C "$out/old" -j2 NVCC= BUILD=build/cpu > "$out/old_build.txt" 2>&1 \
    || { cat "$out/old_build.txt" >&2; exit 1; }
[ -x ./train_gpt ] || { echo "bench_attention_cpu.sh: ./train_gpt not built" >&2; exit 1; }
./tokenize --quiet --out "$out/ts" "$TINYSHAKESPEARE" > /dev/null
for shape in "1 1024 $steps" "4 64 8"; do
    set -- $shape
    for r in $(seq "$reps"); do
        for side in old new; do
            bin=./train_gpt
            [ $side = old ] && bin="$out/old/train_gpt"
            $bin --model gpt2 --batch "$1" --seq-len "$2" --steps "$3" --val-every 0 \
                --recompute 0 --op-costs flops --train-data "$out/ts_train_*.bin" \
                --log "$out/$side.$1.$2.$r.jsonl" > "$out/$side.$1.$2.$r.txt" 2>&1 \
                || { cat "$out/$side.$1.$2.$r.txt" >&2; exit 1; }
        done
    done
done
python3 - "$out" "$reps" <<'PY'
import json, re, statistics, sys
d, reps = sys.argv[1], int(sys.argv[2])
for B, T in ((1, 1024), (4, 64)):
    res = {}
    for side in ("old", "new"):
        tps, gf = [], []
        for r in range(1, reps + 1):
            steps = [json.loads(l) for l in open(f"{d}/{side}.{B}.{T}.{r}.jsonl")]
            steps = [j for j in steps if "loss" in j and "tokens_per_s" in j]
            steps = steps[1:] or steps
            tps.append(statistics.median(j["tokens_per_s"] for j in steps))
            txt = open(f"{d}/{side}.{B}.{T}.{r}.txt").read()
            m = re.search(r"speed: ([0-9.]+) GFLOP a step", txt)
            g = float(m.group(1)) if m else float("nan")
            gf.append(g / (statistics.median(j["ms"] for j in steps) / 1e3))
        res[side] = (tps, gf)
        print(f"B={B} T={T} {side}: tokens/s median {statistics.median(tps):8.1f} "
              f"({min(tps):.1f}..{max(tps):.1f}), GFLOP/s median {statistics.median(gf):6.1f} "
              f"({min(gf):.1f}..{max(gf):.1f})")
    ratios = [n / o for n, o in zip(res["new"][0], res["old"][0])]
    print(f"B={B} T={T} new/old tokens/s, per pair: median {statistics.median(ratios):.3f} "
          f"({min(ratios):.3f}..{max(ratios):.3f})")
PY
