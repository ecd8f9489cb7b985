#!/usr/bin/env bash
# dev/bench/bench_zero3_prefetch.sh — what ZeRO-3's prefetch of the next block
# (MPI_Iallgatherv while a block runs, model/gpt_gather.c) saves against gathering
# each block when it is needed (--zero-prefetch off), on the cpu backend, 2 ranks.
#
# usage: [REPEATS=n] [STEPS=n] [LAYERS=n] [CHANNELS=n] [NP=n] \
#            dev/bench/bench_zero3_prefetch.sh [train_gpt flags...]
#   byte tokens of tinyshakespeare (vocab 256, found by ./tokenize --fetch, written to a
#   temp folder), fp32, T=64, B=2, LAYERS (default 12) blocks of width CHANNELS (default
#   256, 4 heads), --zero 3 --recompute 0 on NP (default 2) ranks of --threads 1 each.
#   Extra flags go to every run.
#
# REPEATS (default 5) rounds, each running the two one after the other, on then off,
# STEPS (default 6) steps each. Per run, rank 0's figures: the median of the log's
# step times over steps 2..STEPS, and the summary's wait for parameter gathers per
# micro-batch (every step's; the time the compute stood in MPI_Allgatherv or in the
# prefetch's MPI_Waitall). Reported: per setting the median over rounds with the min
# and max, and the median of the per-round differences off - on. Exits 1 when a run
# fails or the two runs' final losses differ (the prefetch changes no bit).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x ./train_gpt ] || { echo "bench_zero3_prefetch.sh: ./train_gpt not built (run make)" >&2; exit 1; }
[ -x ./tokenize ] || { echo "bench_zero3_prefetch.sh: ./tokenize not built (run make)" >&2; exit 1; }
reps=${REPEATS:-5}
steps=${STEPS:-6}
np=${NP:-2}
out=$(mktemp -d "${TMPDIR:-/tmp}/bench_zero3_prefetch.XXXXXX")
trap 'rm -rf "$out"' EXIT
text=$(./tokenize --fetch tinyshakespeare --quiet) ||
    { echo "bench_zero3_prefetch.sh: no tinyshakespeare text (see the line above)" >&2; exit 1; }
python3 - "$text" "$out" <<'PY'
import struct, sys
t = open(sys.argv[1], "rb").read()
with open(f"{sys.argv[2]}/bytes_train_000000.bin", "wb") as f:
    f.write(struct.pack("<256i", 20240520, 1, len(t), *([0] * 253)))
    f.write(struct.pack(f"<{len(t)}H", *t))
PY
mpi=(mpirun --oversubscribe --bind-to none --mca btl self,vader
     --mca btl_vader_single_copy_mechanism none -np "$np")
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
common=(--device cpu --threads 1 --vocab 256 --seq-len 64 --batch 2
        --layers "${LAYERS:-12}" --channels "${CHANNELS:-256}" --heads 4 --zero 3 --recompute 0
        --steps "$steps" --val-every 0 --train-data "$out/bytes_train_*.bin" "$@")

run() { # name on|off: one run; prints "step_ms wait_ms" (rank 0's)
    local name=$1
    if ! "${mpi[@]}" ./train_gpt "${common[@]}" --zero-prefetch "$2" --log "$out/$name.jsonl" \
            > "$out/$name.txt" 2>&1; then
        echo "bench_zero3_prefetch.sh: $name failed:" >&2
        tail -5 "$out/$name.txt" >&2
        exit 1
    fi
    python3 - "$out/$name.jsonl" "$out/$name.txt" <<'PY'
import json, re, statistics, sys
ms = [r["ms"] for r in map(json.loads, open(sys.argv[1])) if "ms" in r and r.get("step", 0) >= 2]
w = re.search(r"waited ([0-9.]+) ms a micro-batch for parameter gathers", open(sys.argv[2]).read())
print(f"{statistics.median(ms):.3f} {float(w.group(1)):.3f}")
PY
}

final_loss() { python3 -c '
import json, sys
print([r["loss"] for r in map(json.loads, open(sys.argv[1])) if "ms" in r][-1])' "$1"; }

: > "$out/rounds"
for r in $(seq "$reps"); do
    a=$(run "on_$r" on)
    b=$(run "off_$r" off)
    if [ "$(final_loss "$out/on_$r.jsonl")" != "$(final_loss "$out/off_$r.jsonl")" ]; then
        echo "bench_zero3_prefetch.sh: round $r: the final losses differ" >&2
        exit 1
    fi
    echo "$a $b" >> "$out/rounds"
    echo "round $r: on (step ms, wait ms) $a; off $b"
done
python3 - "$out/rounds" <<'PY'
import statistics, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
def line(name, v):
    return f"{name}: median {statistics.median(v):8.2f} ms (min {min(v):.2f}, max {max(v):.2f})"
for i, name in enumerate(("on ", "off")):
    print(line(f"--zero-prefetch {name} step          ", [r[2 * i] for r in rows]))
    print(line(f"--zero-prefetch {name} gather wait   ", [r[2 * i + 1] for r in rows]))
print(line("off - on, step (per round)          ", [r[2] - r[0] for r in rows]))
print(line("off - on, gather wait (per round)   ", [r[3] - r[1] for r in rows]))
PY
echo "command: dev/bench/bench_zero3_prefetch.sh $*  (REPEATS=$reps STEPS=$steps NP=$np${LAYERS:+ LAYERS=$LAYERS}${CHANNELS:+ CHANNELS=$CHANNELS}; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F))"
