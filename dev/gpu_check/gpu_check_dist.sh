#!/usr/bin/env bash
# dev/gpu_check/gpu_check_dist.sh — the NCCL path end to end on one GPU.
#
# A 1-rank job under mpirun (MPI bootstrap, ncclUniqueId broadcast,
# ncclCommInitRank, per-layer ncclAllReduce on the comm stream, including
# the recomputed blocks) and the same job with --zero 1 (ncclReduceScatter,
# ncclAllGather) must train exactly like the run without a launcher (no
# MPI, no NCCL): a sum over one rank changes nothing, so the model files
# must be bitwise equal and the per-step losses the same. Prints the losses
# side by side; exits non-zero on any difference.
#
# Usage: dev/gpu_check/gpu_check_dist.sh            (after `make`, on a GPU machine)
#        DEVICE=cpu dev/gpu_check/gpu_check_dist.sh (the same check through MPI on the cpu)
# Two ranks cannot share one GPU (NCCL refuses it), so one rank is what a
# one-GPU machine can check.
set -euo pipefail
cd "$(dirname "$0")/../.."

DEVICE=${DEVICE:-cuda}
STEPS=${STEPS:-10}
MPIRUN=(mpirun --allow-run-as-root -np 1 --bind-to none)
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check_dist.XXXXXX")
trap 'rm -rf "$work"' EXIT

# 300K random GPT-2 token ids: the check needs identical runs, not real text.
python3 - "$work/train.bin" <<'EOF'
import random, struct, sys
random.seed(0)
n = 300_000
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<256i", 20240520, 1, n, *([0] * 253)))
    f.write(struct.pack("<%dH" % n, *(random.randrange(50257) for _ in range(n))))
EOF

if [ "$DEVICE" = cuda ]; then
    shape=(--model d12 --seq-len 256 --batch 4)
else
    shape=(--layers 2 --channels 64 --heads 4 --seq-len 32 --vocab 50257 --batch 2 --threads 2)
fi
flags=("${shape[@]}" --device "$DEVICE" --recompute 1 --steps "$STEPS" --lr 3e-4
       --train-data "$work/train.bin" --val-every 0 --val-batches 1)

run() { # tag launcher...
    local tag=$1; shift
    "$@" ./train_gpt "${flags[@]}" "${extra[@]}" --log "$work/$tag.log" --save "$work/$tag.bin" \
        < /dev/null > "$work/$tag.out" 2>&1 || { cat "$work/$tag.out"; echo "FAIL: $tag run"; exit 1; }
}
extra=(); run plain env
extra=(); run nccl0 "${MPIRUN[@]}"
extra=(--zero 1); run nccl1 "${MPIRUN[@]}"

want="collectives $([ "$DEVICE" = cuda ] && echo nccl || echo mpi)"
for tag in nccl0 nccl1; do
    grep -q "data parallel: 1 rank, $want" "$work/$tag.out" ||
        { cat "$work/$tag.out"; echo "FAIL: $tag did not use $want"; exit 1; }
done

status=0
losses() { grep -o '"loss":[^,]*' "$work/$1.log" | cut -d: -f2; }
echo "step  no launcher          mpirun -np 1 (zero 0)  mpirun -np 1 (zero 1)"
paste <(seq 1 "$STEPS") <(losses plain) <(losses nccl0) <(losses nccl1) |
    awk '{printf "%4s  %-20s %-22s %-22s\n", $1, $2, $3, $4}'
for tag in nccl0 nccl1; do
    if ! diff -q <(losses plain) <(losses "$tag") > /dev/null; then
        echo "FAIL: $tag losses differ from the run without a launcher"; status=1
    fi
    if ! cmp -s "$work/plain.bin" "$work/$tag.bin"; then
        echo "FAIL: $tag model file differs from the run without a launcher"; status=1
    fi
done
[ $status -eq 0 ] && echo "PASS: the 1-rank $want job trains bit for bit like the plain run"
exit $status
