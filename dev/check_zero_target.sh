#!/usr/bin/env bash
# dev/check_zero_target.sh [TRAIN_GPT] — ZeRO-2 and ZeRO-3 at the size
# docs/multi-gpu.md quotes, once by hand (the suite runs the same checks at
# L=4 C=24: tests/e2e/ranks/test_zero2.c, test_zero3_run.c).
#
# A 12-layer C=256 GPT-2 (4 heads, T=64, B=2 a rank, 5 steps, fp32, cpu) on
# tinyshakespeare's shards (make data), at 2 and 4 ranks:
#   - --zero 3 against --zero 2 and --zero 2 against --zero 1: every
#     logged loss equal as printed (17 significant digits) and the saved
#     models byte for byte (cmp);
#   - --zero 1 against --zero 0: the same, losses and model file: every
#     sum over ranks is added in rank order by train_gpt at every stage
#     (distributed/dist.h, Order of sums; before that, Open MPI's
#     algorithms added in other orders at 4 ranks:
#     dev/notes/zero-12-layers.md);
#   - --zero 3 with --recompute 1, 2 and selective against --recompute 0:
#     model files identical;
#   - every run's "memory: arenas planned N bytes; their high-water mark M"
#     with N = M, and no rank "differs from the plan".
# Exits 1 on any difference; prints one line a check.
set -euo pipefail
bin=${1:-./train_gpt}
data=datasets
[ -f "$data/tinyshakespeare_val_000000.bin" ] || { echo "no $data/tinyshakespeare_*.bin: make data" >&2; exit 2; }
work=$(mktemp -d /tmp/zero_target.XXXXXX)
trap 'rm -rf "$work"' EXIT
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl "self,vader" --mca btl_vader_single_copy_mechanism none)
shape=(--train-data "$data/tinyshakespeare_train_*.bin" --val-data "$data/tinyshakespeare_val_000000.bin"
       --layers 12 --channels 256 --heads 4 --seq-len 64 --batch 2 --steps 5 --val-every 0
       --val-batches 1 --lr 1e-3 --weight-decay 0.1 --device cpu --threads 1)
fail=0
run() { # np tag flags...
    local np=$1 tag=$2; shift 2
    OMP_NUM_THREADS=1 "${mpi[@]}" -np "$np" "$bin" "${shape[@]}" "$@" --save "$work/$tag.bin" \
        --log "$work/$tag.jsonl" > "$work/$tag.out" 2>&1 || { echo "FAIL $tag: exit $?"; tail -5 "$work/$tag.out"; exit 1; }
    local m
    m=$(grep -o 'memory: arenas planned [0-9]* bytes; their high-water mark [0-9]*' "$work/$tag.out" | head -1)
    if [ -z "$m" ] || [ "$(awk '{print $4}' <<< "$m")" != "$(awk '{print $NF}' <<< "$m")" ] ||
       grep -q 'differ from the plan' "$work/$tag.out"; then
        echo "FAIL $tag: arenas against the plan: ${m:-no memory line}"; fail=1
    else echo "ok   $tag: ${m#memory: }"; fi
}
losses() { python3 -c 'import json,sys
print(" ".join(repr(json.loads(l)["loss"]) for l in open(sys.argv[1]) if "\"loss\"" in l and "step" in json.loads(l)))' "$1"; }
same() { # a b what
    if cmp -s "$work/$1.bin" "$work/$2.bin"; then echo "ok   $2 = $1: model file byte for byte ($3)"
    else echo "FAIL $2 != $1: model files differ ($3)"; fail=1; fi
}
same_losses() { # a b [tolerance]: bitwise, or within a relative tolerance
    local a b; a=$(losses "$work/$1.jsonl"); b=$(losses "$work/$2.jsonl")
    if [ -n "$a" ] && [ "$a" = "$b" ]; then echo "ok   $2 = $1: losses $a"; return; fi
    if [ -n "${3:-}" ] && python3 -c 'import sys
a=[float(x) for x in sys.argv[1].split()]; b=[float(x) for x in sys.argv[2].split()]
w=max(abs(x-y)/abs(x) for x,y in zip(a,b)) if len(a)==len(b)==5 else 1
print(f"     worst relative difference {w:.2e}"); sys.exit(w > float(sys.argv[3]))' "$a" "$b" "$3"
    then echo "ok   $2 ~ $1: losses within $3 relative"
    else echo "FAIL $2 != $1: losses [$a] against [$b]"; fail=1; fi
}
for np in 2 4; do
    for z in 0 1 2 3; do run "$np" "z${z}n$np" --zero "$z"; done
    for z in 1 2 3; do same_losses "z$((z - 1))n$np" "z${z}n$np"; same "z$((z - 1))n$np" "z${z}n$np" "$np ranks"; done
done
for r in 1 2 selective; do
    run 2 "z3r${r}" --zero 3 --recompute "$r"
    same z3n2 "z3r${r}" "--recompute $r"
done
exit $fail
