#!/usr/bin/env bash
# dev/bench/bench_auto.sh — --recompute auto (by measured time) against every
# fixed mode that fits the same memory budget.
#
# usage: [REPEATS=n] [THREADS=n] [STEPS=n] [LAYERS="12 24 48"] [NBUDGETS=4] \
#            [MODES="1 2 selective"] dev/bench/bench_auto.sh [cpu|gpu] [train_gpt flags...]
#   cpu (default): C=64, NH=4, T=128, B=4, vocab 256 (byte tokens of
#       tinyshakespeare, found by ./tokenize --fetch, written to a temp
#       folder), fp32, --threads
#       ${THREADS:-1} (on a 2-core machine shared with other jobs, one
#       thread per run: two stall in OpenMP's barriers whenever either is
#       descheduled). Small enough that a 48-layer step takes about half a
#       second, and the blocks, not the head, hold the time.
#   gpu: GPT-2 124M (12 layers, C=768) and XL (48 layers, C=1600) widths at
#       T=1024, bf16, B=8 (LAYERS="12 48"); needs a CUDA build and a GPU.
# Extra flags go to every run (e.g. --batch 2; on the GPU, the data).
#
# Per shape: --plan gives the peaks of modes 0, selective, 1 and 2, and
# NBUDGETS (default 4) budgets
# are spread evenly between mode 1's peak and mode 0's (4: at 1/8, 3/8,
# 5/8 and 7/8 of the way). Then REPEATS (default 3) rounds, each running,
# per budget, one after another, the fixed modes of MODES that fit it (1
# always; 2 and selective when they fit) and auto at it, STEPS (default 6)
# steps each. Every run measures its op costs at its start
# (--op-costs measure, as a first run on a machine does), so that each
# prediction is made under the load its run meets: on a shared machine the
# load drifts over minutes. Per run: the median
# tokens/s over steps 2..STEPS, and the predicted and measured step time
# from the log's summary. Reported per budget: the median over rounds of
# each mode's tokens/s, of auto / the best fixed mode within a round (runs
# side by side, so the ratio is not at the mercy of the load drifting
# between rounds), and of auto's predicted and measured step time; then
# every fixed mode's prediction. Exits 1 when a run fails, a loss differs
# from another's at the same shape (every schedule is bitwise equal), or
# auto's plan exceeds its budget.
set -euo pipefail
cd "$(dirname "$0")/../.."
dev=${1:-cpu}
[ $# -gt 0 ] && shift
[ -x ./train_gpt ] || { echo "bench_auto.sh: ./train_gpt not built (run make)" >&2; exit 1; }
reps=${REPEATS:-3}
steps=${STEPS:-6}
out=$(mktemp -d "${TMPDIR:-/tmp}/bench_auto.XXXXXX")
trap 'rm -rf "$out"' EXIT
export TRAIN_GPT_CACHE_DIR="$out/cache"

case "$dev" in
cpu)
    # the text along ./tokenize's chain ($TINYSHAKESPEARE, the cache, a download),
    # so any clone runs this
    [ -x ./tokenize ] || { echo "bench_auto.sh: ./tokenize not built (run make)" >&2; exit 1; }
    text=$(./tokenize --fetch tinyshakespeare --quiet) || { echo "bench_auto.sh: no tinyshakespeare text (see the line above)" >&2; exit 1; }
    [ -r "$text" ] || { echo "bench_auto.sh: $text not found" >&2; exit 1; }
    python3 - "$text" "$out" <<'PY'
import struct, sys
t = open(sys.argv[1], "rb").read()
with open(f"{sys.argv[2]}/bytes_train_000000.bin", "wb") as f:
    f.write(struct.pack("<256i", 20240520, 1, len(t), *([0] * 253)))
    f.write(struct.pack(f"<{len(t)}H", *t))
PY
    common=(--device cpu --threads "${THREADS:-1}" --vocab 256 --seq-len 128 --batch 4
            --train-data "$out/bytes_train_*.bin")
    width() { echo "--channels 64 --heads 4"; }
    layers=${LAYERS:-12 24 48}
    ;;
gpu)
    common=(--device cuda --dtype bf16 --seq-len 1024 --batch 8)
    width() { case $1 in 12) echo "--channels 768 --heads 12";; *) echo "--channels 1600 --heads 25";; esac; }
    layers=${LAYERS:-12 48}
    if [ "${GPU_CHECK_REHEARSAL:-0}" = 1 ]; then
        # dev/gpu_check/gpu_check.sh's CPU rehearsal: its shapes there (T=64, B=2;
        # 124M's width C=64, XL's C=32: its section 6 saves the XL model
        # this loads), on the cpu; the rest of the gpu mode runs as it is
        common=(--device cpu --dtype fp32 --seq-len 64 --batch 2)
        width() { case $1 in 12) echo "--channels 64 --heads 4";; *) echo "--channels 32 --heads 2";; esac; }
    fi
    ;;
*) echo "usage: dev/bench/bench_auto.sh [cpu|gpu] [train_gpt flags...]" >&2; exit 1;;
esac
common+=(--steps "$steps" --val-every 0 --op-costs measure "$@")

run() { # name args...: one run, its log in $out/$name.jsonl
    local name=$1; shift
    if ! ./train_gpt "${common[@]}" "$@" --log "$out/$name.jsonl" > "$out/$name.txt" 2>&1; then
        echo "bench_auto.sh: $name failed:" >&2
        tail -5 "$out/$name.txt" >&2
        exit 1
    fi
}

for L in $layers; do
    # shellcheck disable=SC2046,SC2207 # width prints flags, split on purpose
    shape=(--layers "$L" $(width "$L"))
    ./train_gpt "${common[@]}" "${shape[@]}" --plan --memory-budget 1000GiB --op-costs flops \
        > "$out/plan$L.txt"
    read -r p0 psel p1 p2 < <(awk '$1=="0"{a=$4} $1=="selective"{b=$4} $1=="1"{c=$4}
        $1 ~ /^2,k=/{d=$4} END{print a, b, c, d}' "$out/plan$L.txt")
    budgets=()
    nb=${NBUDGETS:-4}
    # A run's baseline (what it holds before its arenas) reads up to a few
    # MiB above --plan's: it has opened its data and log, and measured its
    # op costs, by then. The budgets start 4 MiB above recompute 1's plan,
    # so the smallest is one a run can meet.
    lo=$(( p1 + 4194304 ))
    [ "$lo" -lt "$p0" ] || lo=$p1
    for i in $(seq "$nb"); do budgets+=("$(( lo + (p0 - lo) * (2 * i - 1) / (2 * nb) ))"); done
    echo "$L $p0 $psel $p1 $p2 ${budgets[*]}" > "$out/budgets$L.txt"
    for r in $(seq "$reps"); do
        for b in "${budgets[@]}"; do
            # the fixed modes that fit b, then auto at b: side by side
            fixed=(1)
            for m in ${MODES:-2 selective}; do
                case $m in
                2) [ "$p2" -le "$b" ] && fixed+=(2) ;;
                selective) [ "$psel" -le "$b" ] && fixed+=(selective) ;;
                esac
            done
            for m in "${fixed[@]}"; do
                run "L${L}_b${b}_${m}_$r" "${shape[@]}" --recompute "$m"
            done
            run "L${L}_b${b}_auto_$r" "${shape[@]}" --recompute auto --memory-budget "$b"
        done
    done
done

echo "command: dev/bench/bench_auto.sh $dev $*  (REPEATS=$reps STEPS=$steps${THREADS:+ THREADS=$THREADS}${LAYERS:+ LAYERS=\"$LAYERS\"}${NBUDGETS:+ NBUDGETS=$NBUDGETS}${MODES:+ MODES=\"$MODES\"}; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores, $(date -u +%F))"
python3 - "$out" "$reps" "$layers" <<'PY'
import glob, json, os, statistics, sys
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

med = statistics.median
print("| layers | budget (MiB) | fixed modes that fit: tok/s | auto tok/s | auto / best fixed "
      "| auto step ms: predicted / measured (ratio) | auto's tapes |")
print("|---|---|---|---|---|---|---|")
fixed_runs = {}
for L in layers:
    f = open(f"{d}/budgets{L}.txt").read().split()
    budgets = [int(x) for x in f[5:]]
    loss0 = None
    for b in budgets:
        found = glob.glob(f"{d}/L{L}_b{b}_*_1.jsonl")
        modes = sorted({os.path.basename(p).split("_")[2] for p in found} - {"auto"})
        rounds = []  # per round: auto's run and the fixed modes' runs
        for r in range(1, reps + 1):
            a = run(f"L{L}_b{b}_auto_{r}")
            fx = {m: run(f"L{L}_b{b}_{m}_{r}") for m in modes}
            rounds.append((a, fx))
            for m, x in fx.items():
                fixed_runs.setdefault((L, m), []).append(x)
            for x in [a] + list(fx.values()):
                loss0 = x[2] if loss0 is None else loss0
                if x[2] != loss0:
                    bad.append(f"L={L} budget {b}: a loss {x[2]!r} != {loss0!r}")
            if a[1]["memory"]["total"] > b:
                bad.append(f"L={L} auto at {b}: planned {a[1]['memory']['total']} > budget")
        # the ratio within each round, then the median over rounds
        ratio = med(a[0] / max(x[0] for x in fx.values()) for a, fx in rounds)
        tps = med(a[0] for a, _ in rounds)
        pred = med(a[1]["step_ms_predicted"] for a, _ in rounds)
        meas = med(a[1]["step_ms_measured"] for a, _ in rounds)
        fixed_s = ", ".join(f"{m} {med(fx[m][0] for _, fx in rounds):,.0f}" for m in modes)
        kinds, lines = "", open(f"{d}/L{L}_b{b}_auto_1.txt").read().split("\n")
        for i, line in enumerate(lines):
            if line.startswith("recompute auto: least predicted time, tape kinds"):
                kinds = line.split("tape kinds ")[1].split(" (")[0] + ": "
            if line.startswith("  kept at the head"):
                keep = lines[i + 1].strip()
                kinds += " ".join(f"{c}x{keep.count(c)}" for c in "FSABCDx-" if c in keep)
        print(f"| {L} | {b / 2**20:.1f} | {fixed_s} | {tps:,.0f} | {ratio:.3f} | "
              f"{pred:.1f} / {meas:.1f} ({meas / pred:.3f}) | {kinds} |")
print()
print("| layers | fixed mode | runs | tok/s | step ms: predicted / measured (ratio) |")
print("|---|---|---|---|---|")
for (L, m), runs in sorted(fixed_runs.items(), key=lambda x: (int(x[0][0]), x[0][1])):
    pred = med(x[1]["step_ms_predicted"] for x in runs)
    meas = med(x[1]["step_ms_measured"] for x in runs)
    print(f"| {L} | {m} | {len(runs)} | {med(x[0] for x in runs):,.0f} | "
          f"{pred:.1f} / {meas:.1f} ({meas / pred:.3f}) |")
for m in bad:
    print("bench_auto.sh: " + m, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
