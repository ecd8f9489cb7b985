#!/usr/bin/env bash
# scripts/memory_report.sh — peak memory and throughput against depth, per
# recompute mode.
#
# usage: [REPEATS=n] [LAYERS="6 12 24 48"] scripts/memory_report.sh [cpu|gpu] [OUT_PREFIX]
#   cpu (default): C=64, NH=4, T=128, B=4, 6 steps, one thread, vocab 256
#       (byte tokens of tinyshakespeare, written to a temp folder), fp32.
#   gpu: GPT-2 widths at T=1024 in bf16 (6 and 12 layers: C=768, NH=12;
#       24: C=1024, NH=16; 48: C=1600, NH=25), B=4, 6 steps; needs a build
#       with the CUDA backend and a GPU.
# Sweeps layers {6, 12, 24, 48} x modes {0, selective, 1, 2, auto}; auto
# runs at the budget halfway between mode 1's and mode 0's predicted peaks
# (from --plan). Writes OUT_PREFIX.csv (default out/memory_report_<dev>,
# git-ignored, so a run never overwrites the figures committed in docs/)
# with, per run: the stored activations (planner), the planner's peak, the arenas' high-water mark, the
# measured peak (cpu: process peak RSS; gpu: device memory the run used per
# cudaMemGetInfo), re-forwards, recompute (% of a step's FLOPs, from
# --plan), tokens/s and the last loss. tokens/s is the median over steps
# 2..6 of a run; with REPEATS=n (default 1) the five modes run n times in
# turn at each depth and the CSV has the median of the n runs. And
# OUT_PREFIX.png (gnuplot), three panels against layers, one colour per
# mode: the stored activations alone (what recompute saves); the whole
# peak, predicted (solid) beside measured (dashed); and tokens/s relative
# to recompute 0 at the same depth. The title carries the shape and the
# backend. Exits 1 if a run fails, if the arenas' high-
# water differs from the plan, or if a mode's last loss differs from mode
# 0's at the same depth.
set -euo pipefail
cd "$(dirname "$0")/.."
dev=${1:-cpu}
prefix=${2:-out/memory_report_$dev}
mkdir -p "$(dirname "$prefix")"
[ -x ./train_gpt ] || { echo "memory_report.sh: ./train_gpt not built (run make)" >&2; exit 1; }
command -v gnuplot > /dev/null || { echo "memory_report.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
out=$(mktemp -d /tmp/memory_report.XXXXXX)
trap 'rm -rf "$out"' EXIT
export TRAIN_GPT_CACHE_DIR="$out/cache"

case "$dev" in
cpu)
    text=$(./tokenize --fetch tinyshakespeare --quiet)
    [ -r "$text" ] || { echo "memory_report.sh: $text not found" >&2; exit 1; }
    # byte-token shards (llm.c format): first 10% val, the rest train
    python3 - "$text" "$out" <<'PY'
import struct, sys
t = open(sys.argv[1], "rb").read()
n = len(t) // 10
for name, toks in (("val", t[:n]), ("train", t[n:])):
    with open(f"{sys.argv[2]}/bytes_{name}_000000.bin", "wb") as f:
        f.write(struct.pack("<256i", 20240520, 1, len(toks), *([0] * 253)))
        f.write(struct.pack(f"<{len(toks)}H", *toks))
PY
    common=(--device cpu --threads 1 --vocab 256 --seq-len 128 --batch 4 --steps 6 --val-every 0
            --train-data "$out/bytes_train_*.bin" --val-data "$out/bytes_val_*.bin")
    width() { echo "--channels 64 --heads 4"; }
    ;;
gpu)
    common=(--device cuda --dtype bf16 --seq-len 1024 --batch 4 --steps 6 --val-every 0)
    width() { case $1 in 6|12) echo "--channels 768 --heads 12";; 24) echo "--channels 1024 --heads 16";;
              *) echo "--channels 1600 --heads 25";; esac; }
    ;;
*) echo "usage: scripts/memory_report.sh [cpu|gpu] [OUT_PREFIX]" >&2; exit 1;;
esac

layers=${LAYERS:-6 12 24 48}
xtics=$(echo "$layers" | tr " " ",")
for L in $layers; do
    # shellcheck disable=SC2046
    shape=(--layers "$L" $(width "$L"))
    # mode 1's and mode 0's peaks from the plan; auto gets the midpoint
    ./train_gpt "${common[@]}" "${shape[@]}" --plan --memory-budget 1000GiB > "$out/plan$L.txt"
    budget=$(awk '$1=="0"{p0=$4} $1=="1"{p1=$4} END{printf "%d", (p0+p1)/2}' "$out/plan$L.txt")
    # auto's op costs measured once (cached in the temp folder): the plan's
    # auto row and the auto run make the same schedule
    ./train_gpt "${common[@]}" "${shape[@]}" --plan --memory-budget "$budget" --op-costs measure \
        > "$out/planmid$L.txt"
    for r in $(seq "${REPEATS:-1}"); do
        for mode in 0 selective 1 2 auto; do
            extra=()
            [ "$mode" = auto ] && extra=(--memory-budget "$budget")
            if ! ./train_gpt "${common[@]}" "${shape[@]}" --recompute "$mode" "${extra[@]}" \
                --log "$out/L${L}_${mode}_$r.jsonl" > "$out/L${L}_${mode}_$r.txt" 2>&1; then
                echo "memory_report.sh: L=$L --recompute $mode failed:" >&2
                tail -5 "$out/L${L}_${mode}_$r.txt" >&2
                exit 1
            fi
        done
    done
done

python3 - "$out" "$dev" "$prefix.csv" "${REPEATS:-1}" "$layers" <<'PY'
import json, statistics, sys
d, dev, csv, reps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rows, bad = [], []
for L in [int(x) for x in sys.argv[5].split()]:
    pct = {}
    for plan in (f"{d}/plan{L}.txt", f"{d}/planmid{L}.txt"):
        for line in open(plan):
            f = line.split()
            if f and f[0] in ("0", "selective", "1", "auto") or (f and f[0].startswith("2,k=")):
                key = "2" if f[0].startswith("2,") else f[0]
                if key == "auto" and plan.endswith(f"plan{L}.txt"):
                    continue  # auto at the midpoint budget only
                pct[key] = float(f[6])
    budget = next(l.split("budget ")[1].split()[0] for l in open(f"{d}/planmid{L}.txt")
                  if l.startswith("plan:"))
    loss0 = None
    for mode in ("0", "selective", "1", "2", "auto"):
        runs = []
        for r in range(1, reps + 1):
            steps, summ = [], None
            for line in open(f"{d}/L{L}_{mode}_{r}.jsonl"):
                j = json.loads(line)
                if j.get("event") == "summary":
                    summ = j
                elif "loss" in j:
                    steps.append(j)
            runs.append((summ, statistics.median(s["tokens_per_s"] for s in steps[1:]),
                         steps[-1]["loss"]))
        summ, loss = runs[0][0], runs[0][2]
        m = summ["memory"]
        tps = statistics.median(r[1] for r in runs)
        for s_, _, l_ in runs[1:]:
            if s_["memory"]["total"] != m["total"] or l_ != loss:
                bad.append(f"L={L} {mode}: repeats differ in plan or loss")
        if mode == "0":
            loss0 = loss
        if m["arena_high_water"] != m["total"]:
            bad.append(f"L={L} {mode}: arenas' high-water {m['arena_high_water']} != plan {m['total']}")
        if loss != loss0:
            bad.append(f"L={L} {mode}: last loss {loss!r} != mode 0's {loss0!r}")
        rows.append([dev, L, mode, budget if mode == "auto" else "", int(m["activations"]),
                     int(m["total"]),
                     int(m["arena_high_water"]), int(m["peak_measured"]),
                     "device_used" if dev == "gpu" else "peak_rss", summ["reforwards"],
                     f"{pct[mode]:.3f}", f"{tps:.0f}", f"{loss:.6f}"])
hdr = ("device,layers,mode,budget_bytes,stored_activations_bytes,planner_peak_bytes,"
       "arena_high_water_bytes,"
       "measured_peak_bytes,measured_kind,reforwards,recompute_pct,tokens_per_s_median,last_loss")
with open(csv, "w") as f:
    f.write(hdr + "\n")
    for r in rows:
        f.write(",".join(str(x) for x in r) + "\n")
print(open(csv).read(), end="")
for b in bad:
    print("memory_report.sh: " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY

# one data file per mode for gnuplot: layers, stored activations MiB,
# planner peak MiB, measured peak MiB, tokens/s relative to mode 0
for mode in 0 selective 1 2 auto; do
    awk -F, -v m="$mode" 'NR>1 && $3=="0"{t0[$2]=$12} NR>1 && $3==m{rows[$2]=$5/1048576" "$6/1048576" "$8/1048576" "$12}
        END{for (L in rows) {split(rows[L], r, " "); print L, r[1], r[2], r[3], r[4]/t0[L]}}' \
        "$prefix.csv" | sort -n > "$out/plot_$mode.dat"
done
desc="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores"
[ "$dev" = gpu ] && desc=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if [ "$dev" = gpu ]; then
    shape="C=768..1600 (GPT-2 widths), T=1024, B=4, bf16"
else
    shape="C=64, NH=4, T=128, B=4, V=256, fp32, 1 thread"
fi
gnuplot <<GP
set terminal pngcairo size 1600,500 font ",10" noenhanced
set output "$prefix.png"
set multiplot layout 1,3 title "train_gpt memory report: $shape; backend $dev ($desc)"
modes = "0 selective 1 2 auto"
f(i) = "$out/plot_".word(modes, i).".dat"
set xlabel "layers"
set xtics ($xtics)
set grid
set key top left
set ylabel "stored activations, planner (MiB)"
plot for [i=1:5] f(i) using 1:2 with linespoints lc i title "--recompute ".word(modes, i)
set ylabel "whole peak (MiB): predicted solid, measured dashed"
plot for [i=1:5] f(i) using 1:3 with linespoints lc i title "predicted ".word(modes, i), \
     for [i=1:5] f(i) using 1:4 with linespoints lc i dt 2 title "measured ".word(modes, i)
set ylabel "tokens/s relative to --recompute 0 (median of ${REPEATS:-1} runs)"
set key bottom left
plot for [i=1:5] f(i) using 1:5 with linespoints lc i title "--recompute ".word(modes, i)
unset multiplot
GP
# the command that makes these files again (LAYERS and OUT_PREFIX included when given)
echo "wrote $prefix.csv and $prefix.png (command: REPEATS=${REPEATS:-1}${LAYERS:+ LAYERS=\"$LAYERS\"} scripts/memory_report.sh $dev${2:+ $2}; $(date -u +%F))"
