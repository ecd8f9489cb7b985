#!/usr/bin/env bash
# scripts/bench_auto.sh — --recompute auto (by measured time) against every
# fixed mode that fits the same memory budget.
#
# usage: [REPEATS=n] [THREADS=n] [STEPS=n] [LAYERS="12 24 48"] [NBUDGETS=4] \
#            [MODES="1 2 selective"] scripts/bench_auto.sh [cpu|gpu] [train_gpt flags...]
#   cpu (default): C=64, NH=4, T=128, B=4, vocab 256 (byte tokens of
#       tinyshakespeare, written to a temp folder), fp32, --threads
#       ${THREADS:-2}. Small enough that a 48-layer step takes about half a
#       second on 2 cores, and the blocks, not the head, hold the time.
#   gpu: GPT-2 124M (12 layers, C=768) and XL (48 layers, C=1600) widths at
#       T=1024, bf16, B=8 (LAYERS="12 48"); needs a CUDA build and a GPU.
# Extra flags go to every run (e.g. --batch 2; on the GPU, the data).
#
# Per shape: the op costs are measured once (--op-costs measure, cached in a
# temp folder, so every auto run reads the same costs), --plan gives the
# peaks of modes 0, selective, 1 and 2, and NBUDGETS (default 4) budgets
# are spread evenly between mode 1's peak and mode 0's (4: at 1/8, 3/8,
# 5/8 and 7/8 of the way). Then REPEATS (default 3) rounds, each running,
# one after another, the fixed modes of MODES that fit the largest budget
# (1 always; 2 and selective when they fit) and auto at each budget, STEPS
# (default 6) steps each. Per run: the median
# tokens/s over steps 2..STEPS, and the predicted and measured step time
# from the log's summary. Reported per budget: the median over rounds of
# each mode that fits, auto / the best of them, and auto's predicted and
# measured step time. Exits 1 when a run fails or a loss differs from
# mode 1's at the same shape (every schedule is bitwise equal).
set -euo pipefail
cd "$(dirname "$0")/.."
dev=${1:-cpu}
[ $# -gt 0 ] && shift
[ -x ./train_gpt ] || { echo "bench_auto.sh: ./train_gpt not built (run make)" >&2; exit 1; }
reps=${REPEATS:-3}
steps=${STEPS:-6}
out=$(mktemp -d /tmp/bench_auto.XXXXXX)
trap 'rm -rf "$out"' EXIT
export TRAIN_GPT_CACHE_DIR="$out/cache"

case "$dev" in
cpu)
    text=../shared/data/tinyshakespeare/input.txt
    [ -r "$text" ] || { echo "bench_auto.sh: $text not found" >&2; exit 1; }
    python3 - "$text" "$out" <<'PY'
import struct, sys
t = open(sys.argv[1], "rb").read()
with open(f"{sys.argv[2]}/bytes_train_000000.bin", "wb") as f:
    f.write(struct.pack("<256i", 20240520, 1, len(t), *([0] * 253)))
    f.write(struct.pack(f"<{len(t)}H", *t))
PY
    common=(--device cpu --threads "${THREADS:-2}" --vocab 256 --seq-len 128 --batch 4
            --train-data "$out/bytes_train_*.bin")
    width() { echo "--channels 64 --heads 4"; }
    layers=${LAYERS:-12 24 48}
    ;;
gpu)
    common=(--device cuda --dtype bf16 --seq-len 1024 --batch 8)
    width() { case $1 in 12) echo "--channels 768 --heads 12";; *) echo "--channels 1600 --heads 25";; esac; }
    layers=${LAYERS:-12 48}
    ;;
*) echo "usage: scripts/bench_auto.sh [cpu|gpu] [train_gpt flags...]" >&2; exit 1;;
esac
common+=(--steps "$steps" --val-every 0 "$@")

run() { # name args...: one run, its log in $out/$name.jsonl
    local name=$1; shift
    if ! ./train_gpt "${common[@]}" "$@" --log "$out/$name.jsonl" > "$out/$name.txt" 2>&1; then
        echo "bench_auto.sh: $name failed:" >&2
        tail -5 "$out/$name.txt" >&2
        exit 1
    fi
}

for L in $layers; do
    # shellcheck disable=SC2046
    shape=(--layers "$L" $(width "$L"))
    ./train_gpt "${common[@]}" "${shape[@]}" --plan --memory-budget 1000GiB --op-costs measure \
        > "$out/plan$L.txt"
    read -r p0 psel p1 p2 < <(awk '$1=="0"{a=$4} $1=="selective"{b=$4} $1=="1"{c=$4}
        $1 ~ /^2,k=/{d=$4} END{print a, b, c, d}' "$out/plan$L.txt")
    budgets=()
    nb=${NBUDGETS:-4}
    for i in $(seq "$nb"); do budgets+=($(( p1 + (p0 - p1) * (2 * i - 1) / (2 * nb) ))); done
    echo "$L $p0 $psel $p1 $p2 ${budgets[*]}" > "$out/budgets$L.txt"
    top=${budgets[$((nb - 1))]}
    fixed=(1)
    for m in ${MODES:-2 selective}; do
        case $m in
        2) [ "$p2" -le "$top" ] && fixed+=(2) ;;
        selective) [ "$psel" -le "$top" ] && fixed+=(selective) ;;
        esac
    done
    for r in $(seq "$reps"); do
        for m in "${fixed[@]}"; do run "L${L}_${m}_$r" "${shape[@]}" --recompute "$m"; done
        for b in "${budgets[@]}"; do
            run "L${L}_auto${b}_$r" "${shape[@]}" --recompute auto --memory-budget "$b"
        done
    done
done

echo "command: scripts/bench_auto.sh $dev $*  (REPEATS=$reps STEPS=$steps; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores, $(date -u +%F))"
python3 - "$out" "$reps" "$layers" <<'PY'
import json, statistics, sys
d, reps, layers = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
bad = []

def run(name):
    steps, summ = [], None
    for line in open(f"{d}/{name}.jsonl"):
        j = json.loads(line)
        if j.get("event") == "summary":
            summ = j
        elif "loss" in j:
            steps.append(j)
    return (statistics.median(s["tokens_per_s"] for s in steps[1:] or steps), summ,
            steps[-1]["loss"])

def median_of(prefix):
    runs = [run(f"{prefix}_{r}") for r in range(1, reps + 1)]
    return runs, statistics.median(x[0] for x in runs)

print("| layers | budget (MiB) | fixed modes that fit: tok/s | auto tok/s | auto / best fixed "
      "| auto step ms: predicted / measured (ratio) | auto's tapes |")
print("|---|---|---|---|---|---|---|")
for L in layers:
    f = open(f"{d}/budgets{L}.txt").read().split()
    peaks = dict(zip(("0", "selective", "1", "2"), map(int, f[1:5])))
    budgets = [int(x) for x in f[5:]]
    fixed = {}
    for m in ("1", "2", "selective"):
        try:
            fixed[m] = median_of(f"L{L}_{m}")
        except FileNotFoundError:
            pass
    loss1 = fixed["1"][0][0][2]
    for b in budgets:
        runs, tps = median_of(f"L{L}_auto{b}")
        fits = {m: v[1] for m, v in fixed.items() if peaks[m] <= b}
        best = max(fits.values())
        pred = statistics.median(x[1]["step_ms_predicted"] for x in runs)
        meas = statistics.median(x[1]["step_ms_measured"] for x in runs)
        for x in runs:
            if x[2] != loss1:
                bad.append(f"L={L} auto at {b}: loss {x[2]!r} != mode 1's {loss1!r}")
            if x[1]["memory"]["total"] > b:
                bad.append(f"L={L} auto at {b}: planned {x[1]['memory']['total']} > budget")
        kinds, lines = "", open(f"{d}/L{L}_auto{b}_1.txt").read().split("\n")
        for i, line in enumerate(lines):
            if line.startswith("recompute auto: least predicted time, tape kinds"):
                kinds = line.split("tape kinds ")[1].split(" (")[0] + ": "
            if line.startswith("  kept at the head"):
                keep = lines[i + 1].strip()
                kinds += " ".join(f"{c}x{keep.count(c)}" for c in "FSABCDx-" if c in keep)
        fixed_s = ", ".join(f"{m} {v:,.0f}" for m, v in sorted(fits.items()))
        print(f"| {L} | {b / 2**20:.1f} | {fixed_s} | {tps:,.0f} | {tps / best:.3f} | "
              f"{pred:.1f} / {meas:.1f} ({meas / pred:.3f}) | {kinds} |")
print()
print("| layers | fixed mode | tok/s | step ms: predicted / measured (ratio) |")
print("|---|---|---|---|")
for L in layers:
    for m in ("1", "2", "selective"):
        try:
            runs, tps = median_of(f"L{L}_{m}")
        except FileNotFoundError:
            continue
        pred = statistics.median(x[1]["step_ms_predicted"] for x in runs)
        meas = statistics.median(x[1]["step_ms_measured"] for x in runs)
        print(f"| {L} | {m} | {tps:,.0f} | {pred:.1f} / {meas:.1f} ({meas / pred:.3f}) |")
for m in bad:
    print("bench_auto.sh: " + m, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
