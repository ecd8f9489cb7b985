#!/usr/bin/env bash
# scripts/memory_report.sh — device and host memory and throughput against
# depth, per recompute mode, with and without the host tier.
#
# usage: [REPEATS=n] [LAYERS="6 12 24 48"] scripts/memory_report.sh [cpu|gpu] [OUT_PREFIX]
#   cpu (default): C=64, NH=4, T=128, B=4, 6 steps, one thread, fp32, the
#       GPT-2 vocabulary (tinyshakespeare's GPT-2 tokens from `make data`),
#       so that the loss head is chunked (166 of the 512 tokens a chunk).
#   gpu: GPT-2 widths at T=1024 in bf16 (6 and 12 layers: C=768, NH=12;
#       24: C=1024, NH=16; 48: C=1600, NH=25), B=4, 6 steps; needs a build
#       with the CUDA backend and a GPU.
# Sweeps layers {6, 12, 24, 48} x modes {0, selective, 1, 2, auto, 1off};
# 2 keeps every round(sqrt L)-th input (the default --checkpoint-every);
# 1off is --recompute 1 --offload checkpoints (the stored inputs in the host
# tier, the device keeps a ring of two); auto runs at the budget halfway
# between mode 1's and mode 0's predicted peaks (from --plan). Writes
# OUT_PREFIX.csv (default out/memory_report_<dev>,
# git-ignored, so a run never overwrites the figures committed in docs/)
# with, per run: the stored activations (planner), the planner's peak, the arenas' high-water mark, the
# measured peak (cpu: process peak RSS; gpu: device memory the run used per
# cudaMemGetInfo), re-forwards, recompute (% of a step's FLOPs, from
# --plan), tokens/s, the last loss, the workspace and the host tier's bytes
# (planned, and its arenas' high-water mark). tokens/s is the median over steps
# 2..6 of a run; the six modes run REPEATS times in turn (default 3:
# 0,selective,1,2,auto,1off,0,...) at each depth, and the CSV has the median of
# the runs with their min and max, and scripts/speed_verdict.py says per
# depth which modes differ from mode 0 beyond that spread. And
# OUT_PREFIX.png (gnuplot), three panels against layers, one colour per
# mode: the activations on the device, stored and workspace (what recompute
# and offload save: O(L) at modes 0, selective and 1, O(sqrt L) at 2, O(1)
# at 1off), with 1off's host bytes dashed; the whole
# peak, predicted (solid) beside measured (dashed), with the baseline the
# process holds before its arenas (the build's fixed memory) drawn and
# labelled; and tokens/s relative to recompute 0 at the same depth, from
# 0, with min-max bars. The legends sit below the panels. PLOT_ONLY=1 draws
# OUT_PREFIX.png again from an existing OUT_PREFIX.csv, running nothing. The title
# carries the shape and the backend. Exits 1 if a run fails, if the arenas' high-
# water (device or host) differs from the plan, or if a mode's last loss
# differs from mode 0's at the same depth.
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
    ls datasets/tinyshakespeare_train_*.bin > /dev/null 2>&1 ||
        { echo "memory_report.sh: datasets/tinyshakespeare_train_*.bin not found (run make data)" >&2; exit 1; }
    common=(--device cpu --threads 1 --seq-len 128 --batch 4 --steps 6 --val-every 0
            --train-data "datasets/tinyshakespeare_train_*.bin"
            --val-data "datasets/tinyshakespeare_val_*.bin")
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
if [ "${PLOT_ONLY:-0}" = 1 ]; then
    # draw the picture again from OUT_PREFIX.csv (same LAYERS), running nothing
    [ -r "$prefix.csv" ] || { echo "memory_report.sh: PLOT_ONLY=1: $prefix.csv not found" >&2; exit 1; }
else
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
    for r in $(seq "${REPEATS:-3}"); do
        for mode in 0 selective 1 2 auto 1off; do
            extra=()
            [ "$mode" = auto ] && extra=(--memory-budget "$budget")
            [ "$mode" = 1off ] && extra=(--offload checkpoints)
            if ! ./train_gpt "${common[@]}" "${shape[@]}" --recompute "${mode%off}" "${extra[@]}" \
                --log "$out/L${L}_${mode}_$r.jsonl" > "$out/L${L}_${mode}_$r.txt" 2>&1; then
                echo "memory_report.sh: L=$L --recompute $mode failed:" >&2
                tail -5 "$out/L${L}_${mode}_$r.txt" >&2
                exit 1
            fi
        done
    done
done

python3 - "$out" "$dev" "$prefix.csv" "${REPEATS:-3}" "$layers" <<'PY'
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
    pct["1off"] = pct["1"]  # the same schedule, its inputs on the host
    budget = next(l.split("budget ")[1].split()[0] for l in open(f"{d}/planmid{L}.txt")
                  if l.startswith("plan:"))
    loss0 = None
    for mode in ("0", "selective", "1", "2", "auto", "1off"):
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
        tps_lo, tps_hi = min(r[1] for r in runs), max(r[1] for r in runs)
        with open(f"{d}/tps{L}.txt", "a") as t:
            t.writelines(f"{mode} {r[1]}\n" for r in runs)
        for s_, _, l_ in runs[1:]:
            # auto's schedule fills the budget less the measured baseline, which
            # may differ between runs by a MiB; the fixed modes' plans may not
            plan_differs = mode != "auto" and s_["memory"]["total"] != m["total"]
            if plan_differs or l_ != loss:
                bad.append(f"L={L} {mode}: repeats differ in plan or loss")
        if mode == "0":
            loss0 = loss
        if m["arena_high_water"] != m["total"]:  # "total": the arenas' plan
            bad.append(f"L={L} {mode}: arenas' high-water {m['arena_high_water']} != plan {m['total']}")
        if m.get("host_high_water", 0) != m.get("host_total", 0):
            bad.append(f"L={L} {mode}: host high-water {m['host_high_water']} != plan {m['host_total']}")
        if mode == "1off" and not m.get("host_total"):
            bad.append(f"L={L} 1off: no host tier in the summary")
        if loss != loss0:
            bad.append(f"L={L} {mode}: last loss {loss!r} != mode 0's {loss0!r}")
        rows.append([dev, L, mode, budget if mode == "auto" else "", int(m["activations"]),
                     int(m.get("process_total", m["total"])),
                     int(m["arena_high_water"]), int(m["peak_measured"]),
                     "device_used" if dev == "gpu" else "peak_rss", summ["reforwards"],
                     f"{pct[mode]:.3f}", f"{tps:.0f}", f"{loss:.6f}",
                     int(m.get("baseline", 0)), f"{tps_lo:.0f}", f"{tps_hi:.0f}",
                     int(m["workspace"]), int(m.get("host_total", 0)),
                     int(m.get("host_high_water", 0))])
hdr = ("device,layers,mode,budget_bytes,stored_activations_bytes,planner_peak_bytes,"
       "arena_high_water_bytes,"
       "measured_peak_bytes,measured_kind,reforwards,recompute_pct,tokens_per_s_median,last_loss,"
       "baseline_bytes,tokens_per_s_min,tokens_per_s_max,workspace_bytes,host_planned_bytes,"
       "host_high_water_bytes")
with open(csv, "w") as f:
    f.write(hdr + "\n")
    for r in rows:
        f.write(",".join(str(x) for x in r) + "\n")
print(open(csv).read(), end="")
for b in bad:
    print("memory_report.sh: " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY

# the verdicts: per depth, each mode's tokens/s against mode 0's spread
for L in $layers; do
    echo "L=$L:"
    scripts/speed_verdict.py --label "  tokens/s --recompute" < "$out/tps$L.txt"
done
fi
# one data file per mode for gnuplot: layers, stored activations MiB,
# planner peak MiB, measured peak MiB, tokens/s relative to mode 0 (median,
# min, max), baseline MiB, device activations (stored + workspace) MiB, host MiB
for mode in 0 selective 1 2 auto 1off; do
    awk -F, -v m="$mode" 'NR>1 && $3=="0"{t0[$2]=$12}
        NR>1 && $3==m{rows[$2]=$5/1048576" "$6/1048576" "$8/1048576" "$12" "$15" "$16" "$14/1048576" "($5+$17)/1048576" "$18/1048576}
        END{for (L in rows) {split(rows[L], r, " ");
            print L, r[1], r[2], r[3], r[4]/t0[L], r[5]/t0[L], r[6]/t0[L], r[7], r[8], r[9]}}' \
        "$prefix.csv" | sort -n > "$out/plot_$mode.dat"
done
base_mib=$(awk '{print $8; exit}' "$out/plot_0.dat")
desc="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores"
[ "$dev" = gpu ] && desc=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if [ "$dev" = gpu ]; then
    shape="C=768..1600 (GPT-2 widths), T=1024, B=4, bf16"
else
    shape="C=64, NH=4, T=128, B=4, V=50257 (GPT-2; head in chunks of 166 tokens), fp32, 1 thread"
fi
gnuplot <<GP
set terminal pngcairo size 1600,620 font ",10" noenhanced
set output "$prefix.png"
set multiplot layout 1,3 title "train_gpt memory report: $shape; backend $dev ($desc)"
modes = "0 selective 1 2 auto 1off"
titles = "0 selective 1 2(k=round(sqrtL)) auto 1+offload"
f(i) = "$out/plot_".word(modes, i).".dat"
# dark, distinct colours that print (no yellow), one per mode
set linetype 1 lc rgb "#000000" lw 2 pt 7
set linetype 2 lc rgb "#1f4e9e" lw 2 pt 5
set linetype 3 lc rgb "#c0392b" lw 2 pt 9
set linetype 4 lc rgb "#1e8449" lw 2 pt 11
set linetype 5 lc rgb "#7d3c98" lw 2 pt 13
set linetype 6 lc rgb "#d35400" lw 2 pt 15
set xlabel "layers"
set xtics ($xtics)
set grid
set key outside below horizontal maxcols 3 box
# log-log: O(L) rises with slope 1, O(sqrt L) with slope 1/2, O(1) is flat
set logscale xy
lmin = word("$layers", 1) + 0.0
lmax = word("$layers", words("$layers")) + 0.0
set xrange [lmin * 0.9:lmax * 1.1]
set yrange [0.5:*]
set ylabel "activations on the device: stored + workspace, planner (MiB, log scale)"
plot for [i=1:6] f(i) using 1:9 with linespoints lt i title "--recompute ".word(titles, i), \
     f(6) using 1:10 with linespoints lt 6 dt 2 title "host tier: --recompute 1+offload"
unset logscale xy
set autoscale x
set yrange [0:*]
set ylabel "whole peak (MiB): predicted solid, measured dashed"
set arrow 1 from graph 0, first $base_mib to graph 1, first $base_mib nohead lc rgb "#555555" dt 3
set label 1 sprintf("baseline (the process before its arenas): %.1f MiB", $base_mib) at graph 0.02, first $base_mib offset 0,0.7 tc rgb "#555555"
plot for [i=1:6] f(i) using 1:3 with linespoints lt i title "predicted ".word(titles, i), \
     for [i=1:6] f(i) using 1:4 with linespoints lt i dt 2 title "measured ".word(titles, i)
unset arrow 1
unset label 1
set ylabel "tokens/s relative to --recompute 0 (median, min-max of ${REPEATS:-3} runs)"
plot for [i=1:6] f(i) using 1:5:6:7 with yerrorlines lt i title "--recompute ".word(titles, i)
unset multiplot
GP
if [ "${PLOT_ONLY:-0}" = 1 ]; then
    echo "drew $prefix.png from $prefix.csv (PLOT_ONLY=1)"
    exit 0
fi
# the command that makes these files again (LAYERS and OUT_PREFIX included when given)
echo "wrote $prefix.csv and $prefix.png (command: REPEATS=${REPEATS:-3}${LAYERS:+ LAYERS=\"$LAYERS\"} scripts/memory_report.sh $dev${2:+ $2}; $(date -u +%F))"
