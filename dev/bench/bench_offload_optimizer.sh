#!/usr/bin/env bash
# dev/bench/bench_offload_optimizer.sh — the step time with --offload optimizer
# (AdamW in the host tier, deferred into the next forward: model/gpt_optim.c) against
# the on-device optimizer, on the cpu backend.
#
# usage: [REPEATS=n] [THREADS=n] [STEPS=n] [LAYERS=n] [CHANNELS=n] \
#            dev/bench/bench_offload_optimizer.sh [train_gpt flags...]
#   byte tokens of tinyshakespeare (vocab 256, found by ./tokenize --fetch, written to a
#   temp folder), fp32, T=64, B=2, LAYERS (default 12) blocks of width CHANNELS (default
#   256, 4 heads): wide enough that AdamW is a sizeable part of a step. --threads
#   ${THREADS:-1}: the ops run on one core, the copy thread (copies and the host AdamW)
#   on another. Extra flags go to every run.
#
# REPEATS (default 5) rounds, each running the two side by side, none then optimizer,
# STEPS (default 8) steps each. Per run: the median of the log's step times over steps
# 2..STEPS (step 1 touches the memory first; with offload its AdamW lands in step 2's
# forward, so steps 2.. hold every step's whole cost). Reported: per setting the median
# over rounds, with the min and max, and the median of the per-round ratio
# optimizer/none. Exits 1 when a run fails or the two runs' final losses differ (the
# deferred update is bitwise the on-device one).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x ./train_gpt ] || { echo "bench_offload_optimizer.sh: ./train_gpt not built (run make)" >&2; exit 1; }
[ -x ./tokenize ] || { echo "bench_offload_optimizer.sh: ./tokenize not built (run make)" >&2; exit 1; }
reps=${REPEATS:-5}
steps=${STEPS:-8}
out=$(mktemp -d "${TMPDIR:-/tmp}/bench_offload_optimizer.XXXXXX")
trap 'rm -rf "$out"' EXIT
text=$(./tokenize --fetch tinyshakespeare --quiet) ||
    { echo "bench_offload_optimizer.sh: no tinyshakespeare text (see the line above)" >&2; exit 1; }
python3 - "$text" "$out" <<'PY'
import struct, sys
t = open(sys.argv[1], "rb").read()
with open(f"{sys.argv[2]}/bytes_train_000000.bin", "wb") as f:
    f.write(struct.pack("<256i", 20240520, 1, len(t), *([0] * 253)))
    f.write(struct.pack(f"<{len(t)}H", *t))
PY
common=(--device cpu --threads "${THREADS:-1}" --vocab 256 --seq-len 64 --batch 2
        --layers "${LAYERS:-12}" --channels "${CHANNELS:-256}" --heads 4
        --steps "$steps" --val-every 0 --train-data "$out/bytes_train_*.bin" "$@")

run() { # name offload: one run; prints its median step time over steps 2..
    local name=$1
    if ! ./train_gpt "${common[@]}" --offload "$2" --log "$out/$name.jsonl" > "$out/$name.txt" 2>&1; then
        echo "bench_offload_optimizer.sh: $name failed:" >&2
        tail -5 "$out/$name.txt" >&2
        exit 1
    fi
    python3 - "$out/$name.jsonl" <<'PY'
import json, statistics, sys
ms = [r["ms"] for r in map(json.loads, open(sys.argv[1])) if "ms" in r and r.get("step", 0) >= 2]
print(f"{statistics.median(ms):.3f}")
PY
}

final_loss() { python3 -c '
import json, sys
print([r["loss"] for r in map(json.loads, open(sys.argv[1])) if "ms" in r][-1])' "$1"; }

: > "$out/rounds"
for r in $(seq "$reps"); do
    a=$(run "none_$r" none)
    b=$(run "optimizer_$r" optimizer)
    if [ "$(final_loss "$out/none_$r.jsonl")" != "$(final_loss "$out/optimizer_$r.jsonl")" ]; then
        echo "bench_offload_optimizer.sh: round $r: the final losses differ" >&2
        exit 1
    fi
    echo "$a $b" >> "$out/rounds"
    echo "round $r: none $a ms, optimizer $b ms"
done
python3 - "$out/rounds" <<'PY'
import statistics, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
for i, name in enumerate(("none", "optimizer")):
    v = [r[i] for r in rows]
    print(f"--offload {name:9s}: step {statistics.median(v):8.2f} ms (min {min(v):.2f}, max {max(v):.2f})")
ratio = [r[1] / r[0] for r in rows]
print(f"optimizer/none: {statistics.median(ratio):.3f} (min {min(ratio):.3f}, max {max(ratio):.3f})")
PY
echo "command: dev/bench/bench_offload_optimizer.sh $*  (REPEATS=$reps STEPS=$steps${THREADS:+ THREADS=$THREADS}${LAYERS:+ LAYERS=$LAYERS}${CHANNELS:+ CHANNELS=$CHANNELS}; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores, $(date -u +%F))"
