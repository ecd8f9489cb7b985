#!/usr/bin/env bash
# dev/bench/bench_auto_offload.sh — --recompute auto --offload checkpoints (keep, offload
# or rebuild each stored block input, by measured op and copy time) against every fixed
# choice that fits the same device budget: --recompute 0, selective, 1 and 2 with the
# inputs on the device, and each with --offload checkpoints (the inputs on the host,
# through the copy thread on the cpu backend).
#
# usage: [REPEATS=n] [THREADS=n] [STEPS=n] [LAYERS="12"] [NBUDGETS=3] \
#            dev/bench/bench_auto_offload.sh [train_gpt flags...]
#   the cpu: C=64, NH=4, T=128, B=4, vocab 256 (byte tokens of tinyshakespeare, found by
#   ./tokenize --fetch, written to a temp folder), fp32, --threads ${THREADS:-1}: one
#   compute thread per run, so that the copy thread has a core of its own on a 2-core
#   machine. Extra flags go to every run.
#
# Per depth: two --plan tables (inputs on the device, and offloaded) give the eight fixed
# choices' device peaks, and NBUDGETS budgets are spread evenly between the smallest of
# them and mode 0's on the device (3: at 1/6, 1/2 and 5/6 of the way), where keeping
# every input on the device does not fit. Then REPEATS (default 3) rounds, each running,
# per budget, one after another, the fixed choices that fit it and auto at it, STEPS
# (default 6) steps each; every run measures its op and copy costs at its start
# (--op-costs measure), so that each prediction is made under the load its run meets.
# Per run: the median tokens/s over steps 2..STEPS, and auto's predicted and measured
# step time from the log's summary. Reported per budget: the median over rounds of each
# choice's tokens/s with its min-max, of auto / the best fixed choice within a round
# (runs side by side), and what auto chose. Exits 1 when a run fails, a loss differs
# from another's at the same depth (every choice is bitwise equal), or auto's plan
# exceeds its budget.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x ./train_gpt ] || { echo "bench_auto_offload.sh: ./train_gpt not built (run make)" >&2; exit 1; }
[ -x ./tokenize ] || { echo "bench_auto_offload.sh: ./tokenize not built (run make)" >&2; exit 1; }
reps=${REPEATS:-3}
steps=${STEPS:-6}
layers=${LAYERS:-12}
nb=${NBUDGETS:-3}
out=$(mktemp -d "${TMPDIR:-/tmp}/bench_auto_offload.XXXXXX")
trap 'rm -rf "$out"' EXIT
export TRAIN_GPT_CACHE_DIR="$out/cache"

text=$(./tokenize --fetch tinyshakespeare --quiet) || {
    echo "bench_auto_offload.sh: no tinyshakespeare text (see the line above)" >&2; exit 1; }
python3 - "$text" "$out" <<'PY'
import struct, sys
t = open(sys.argv[1], "rb").read()
with open(f"{sys.argv[2]}/bytes_train_000000.bin", "wb") as f:
    f.write(struct.pack("<256i", 20240520, 1, len(t), *([0] * 253)))
    f.write(struct.pack(f"<{len(t)}H", *t))
PY
common=(--device cpu --threads "${THREADS:-1}" --vocab 256 --seq-len 128 --batch 4
        --channels 64 --heads 4 --train-data "$out/bytes_train_*.bin"
        --steps "$steps" --val-every 0 --op-costs measure "$@")

run() { # name args...: one run, its log in $out/$name.jsonl
    local name=$1; shift
    if ! ./train_gpt "${common[@]}" "$@" --log "$out/$name.jsonl" > "$out/$name.txt" 2>&1; then
        echo "bench_auto_offload.sh: $name failed:" >&2
        tail -5 "$out/$name.txt" >&2
        exit 1
    fi
}

peaks() { # plan file: "0 selective 1 2" device peaks
    awk '$1=="0"{a=$4} $1=="selective"{b=$4} $1=="1"{c=$4} $1 ~ /^2,k=/{d=$4}
         END{print a, b, c, d}' "$1"
}

for L in $layers; do
    ./train_gpt "${common[@]}" --layers "$L" --plan --memory-budget 1000GiB --op-costs flops \
        > "$out/plan$L.txt"
    ./train_gpt "${common[@]}" --layers "$L" --plan --memory-budget 1000GiB --op-costs flops \
        --offload checkpoints > "$out/planoff$L.txt"
    read -r d0 dsel d1 d2 < <(peaks "$out/plan$L.txt")
    read -r o0 osel o1 o2 < <(peaks "$out/planoff$L.txt")
    declare -A peak=([0]=$d0 [selective]=$dsel [1]=$d1 [2]=$d2
                     [0off]=$o0 [selectiveoff]=$osel [1off]=$o1 [2off]=$o2)
    lo=$(printf '%s\n' "${peak[@]}" | sort -n | head -1)
    budgets=()
    for i in $(seq "$nb"); do budgets+=("$(( lo + (d0 - lo) * (2 * i - 1) / (2 * nb) ))"); done
    echo "${budgets[*]}" > "$out/budgets$L.txt"
    for r in $(seq "$reps"); do
        for b in "${budgets[@]}"; do
            for c in 0 selective 1 2 0off selectiveoff 1off 2off; do
                [ "${peak[$c]}" -le "$b" ] || continue
                m=${c%off}
                off=()
                [ "$m" != "$c" ] && off=(--offload checkpoints)
                run "L${L}_b${b}_${c}_$r" --layers "$L" --recompute "$m" "${off[@]}"
            done
            run "L${L}_b${b}_auto_$r" --layers "$L" --recompute auto --offload checkpoints \
                --memory-budget "$b"
        done
    done
    unset peak
done

echo "command: dev/bench/bench_auto_offload.sh $*  (REPEATS=$reps STEPS=$steps LAYERS=\"$layers\" NBUDGETS=$nb${THREADS:+ THREADS=$THREADS}; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F))"
python3 - "$out" "$reps" "$layers" <<'PY'
import glob, json, os, statistics, sys
d, reps, layers = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
med = statistics.median
bad = []

def run(name):
    steps, summ = [], None
    for line in open(f"{d}/{name}.jsonl"):
        j = json.loads(line)
        if j.get("event") == "summary":
            summ = j
        elif "loss" in j:
            steps.append(j)
    return med(s["tokens_per_s"] for s in steps[1:] or steps), summ, steps[-1]["loss"]

def name(c):
    return c[:-3] + "+offload" if c.endswith("off") else c

print("| layers | budget (MiB) | fixed choices that fit: tok/s median (min-max) | auto tok/s "
      "median (min-max) | auto / best fixed: median (min-max) | auto step ms: predicted / "
      "measured | auto chose |")
print("|---|---|---|---|---|---|---|")
for L in layers:
    loss0 = None
    for b in [int(x) for x in open(f"{d}/budgets{L}.txt").read().split()]:
        found = glob.glob(f"{d}/L{L}_b{b}_*_1.jsonl")
        choices = sorted({os.path.basename(p).split("_")[2] for p in found} - {"auto"})
        rounds = []
        for r in range(1, reps + 1):
            a = run(f"L{L}_b{b}_auto_{r}")
            fx = {c: run(f"L{L}_b{b}_{c}_{r}") for c in choices}
            rounds.append((a, fx))
            for x in [a] + list(fx.values()):
                loss0 = x[2] if loss0 is None else loss0
                if x[2] != loss0:
                    bad.append(f"L={L} budget {b}: a loss {x[2]!r} != {loss0!r}")
            if a[1]["memory"]["total"] > b:
                bad.append(f"L={L} auto at {b}: planned {a[1]['memory']['total']} > budget")
        ratios = [a[0] / max(x[0] for x in fx.values()) for a, fx in rounds]
        tps = [a[0] for a, _ in rounds]
        pred = med(a[1]["step_ms_predicted"] for a, _ in rounds)
        meas = med(a[1]["step_ms_measured"] for a, _ in rounds)
        def span(v):
            return f"{med(v):,.0f} ({min(v):,.0f}-{max(v):,.0f})"
        fixed_s = ", ".join(f"{name(c)} {span([fx[c][0] for _, fx in rounds])}"
                            for c in choices)
        text = open(f"{d}/L{L}_b{b}_auto_1.txt").read()
        chose = "offloaded" if "stored block inputs offloaded to the host" in text else "kept"
        for line in text.split("\n"):
            if line.startswith("  offload: ") and " of the " in line:
                n, m = line.split()[1], line.split()[4]
                chose += f" ({n} of {m} inputs out)"
            if line.startswith("schedule auto:"):
                chose += ": " + line.split(": ", 1)[1]
        print(f"| {L} | {b / 2**20:.2f} | {fixed_s} | {span(tps)} | {med(ratios):.3f} "
              f"({min(ratios):.3f}-{max(ratios):.3f}) | {pred:.1f} / {meas:.1f} | {chose} |")
for m in bad:
    print("bench_auto_offload.sh: " + m, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
