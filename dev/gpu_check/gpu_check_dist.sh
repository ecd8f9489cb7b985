#!/usr/bin/env bash
# dev/gpu_check/gpu_check_dist.sh — the NCCL path end to end on one GPU.
#
# A 1-rank job under mpirun (MPI bootstrap, ncclUniqueId broadcast,
# ncclCommInitRank, the comm stream's events; at one rank no gradient is
# sent: the rank-order sums of distributed/dist_nccl.c start at 2 ranks)
# and the same job with --zero 1 (ncclAllGather), --zero 2 (each block's
# gradients taken as backward makes them) and --zero 3 (each block's
# parameters gathered on their own communicator and stream, again before
# each recomputed block) must train exactly like the run without a
# launcher (no MPI, no NCCL): a sum over one rank changes nothing, so the
# model files must be bitwise equal and the per-step losses the same.
# Prints the losses side by side; exits non-zero on any difference.
#
# Usage: dev/gpu_check/gpu_check_dist.sh            (after `make`, on a GPU machine)
#        DEVICE=cpu dev/gpu_check/gpu_check_dist.sh (the same check through MPI on the cpu)
#        NP=4 dev/gpu_check/gpu_check_dist.sh       (a machine with 4 GPUs: below)
# Two ranks cannot share one GPU (NCCL refuses it), so one rank is what a
# one-GPU machine can check. With NP > 1 the reference is the same job at
# --zero 0 under mpirun -np NP: --zero 1, 2 and 3 must give its model file
# bit for bit, since every stage adds the ranks in rank order itself
# (ncclSend/ncclRecv and a kernel; docs/multi-gpu.md, "Order of sums";
# dev/cuda/check_nccl_emu.py shows it at 2 and 4 ranks on the emulator,
# whose own reductions add in another order). A difference is reported
# with the losses beside it.
set -euo pipefail
cd "$(dirname "$0")/../.."

DEVICE=${DEVICE:-cuda}
STEPS=${STEPS:-10}
NP=${NP:-1}
MPIRUN=(mpirun --allow-run-as-root -np "$NP" --bind-to none)
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
extra=(); if [ "$NP" = 1 ]; then run plain env; else run plain "${MPIRUN[@]}"; fi
extra=(); run nccl0 "${MPIRUN[@]}"
for z in 1 2 3; do extra=(--zero "$z"); run "nccl$z" "${MPIRUN[@]}"; done

want="collectives $([ "$DEVICE" = cuda ] && echo nccl || echo mpi)"
ranks="$NP rank$([ "$NP" = 1 ] || echo s)"
for tag in nccl0 nccl1 nccl2 nccl3; do
    grep -q "data parallel: $ranks, $want" "$work/$tag.out" ||
        { cat "$work/$tag.out"; echo "FAIL: $tag did not use $want"; exit 1; }
done

status=0
losses() { grep -o '"loss":[^,]*' "$work/$1.log" | cut -d: -f2; }
echo "step  $([ "$NP" = 1 ] && echo "no launcher " || echo "zero 0 again")  zero 0 (np $NP)  zero 1  zero 2  zero 3"
paste <(seq 1 "$STEPS") <(losses plain) <(losses nccl0) <(losses nccl1) <(losses nccl2) \
      <(losses nccl3) | awk '{printf "%4s  %s  %s  %s  %s  %s\n", $1, $2, $3, $4, $5, $6}'
for tag in nccl0 nccl1 nccl2 nccl3; do
    if ! diff -q <(losses plain) <(losses "$tag") > /dev/null; then
        echo "FAIL: $tag losses differ from the run without a launcher"; status=1
    fi
    if ! cmp -s "$work/plain.bin" "$work/$tag.bin"; then
        echo "FAIL: $tag model file differs from the run without a launcher"; status=1
    fi
done
[ $status -eq 0 ] && echo "PASS: the $ranks $want job trains bit for bit like the plain run at --zero 0 to 3"
exit $status
