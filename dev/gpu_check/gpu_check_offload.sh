#!/usr/bin/env bash
# dev/gpu_check/gpu_check_offload.sh — sourced by dev/gpu_check/gpu_check.sh, not run:
# section 11, the host tier (--offload; kernels/cuda/host_tier.cu), planned at
# about 250 s on one H200, 340 s without section 6's saved XL model (the plan
# in dev/notes/gpu-results.md, "The offload run"; not run yet), never in
# GPU_CHECK_PLAN=first unless GPU_CHECK_SECTIONS names it. Every row starts
# only while its whole limit fits the budget, else SKIP with the reason.
#   - bitwise: recompute 1 with --offload checkpoints,optimizer against
#     recompute 0 without, bf16 and fp32 (L4 C128 T256, 3 steps; the heuristic's
#     gemm algorithms, as section 5): step-1 gradients (--dump-grads) and the
#     model saved after the last step (--save) compared with cmp, the losses
#     and grad norms of every step identical;
#   - memory: 124M B8 at recompute 1 with both offloads: --plan's closing
#     "device:" and "host:" lines against the run (device: measured by
#     cudaMemGetInfo within 2%; host: the pinned arenas' high-water mark, to
#     the byte);
#   - throughput, recompute 1, bf16, median after 2 warm-up steps: 124M B8 and
#     XL B8 without offload, with checkpoints, and (XL) with optimizer, then
#     the targets: checkpoint offload >= 0.95x the throughput, optimizer
#     offload's step time <= 1.5x (tok/s ratio >= 0.667);
#   - long context: 124M at T=8192, B=1, recompute 1 with both offloads, 3
#     steps; beside it whether --plan fits recompute 0 and 1 without offload
#     in the default budget.
# Expects gpu_check.sh's helpers and variables (train, perf, row, in_budget,
# FULL, DT, DEV, WORK, TLOG, TOOLS, C124, CXL, ...).

offload_bitwise() { # DTYPE
    local dt=$1 S name
    S=(--layers 4 --channels 128 --heads 4 --seq-len 256 --batch 4 --steps 3 --device "$DEV")
    [ "$REHEARSAL" = 1 ] && S=(--layers 2 --channels 64 --heads 4 --seq-len 64 --batch 2 --steps 3 --device cpu)
    name="offload bitwise: r1 + checkpoints,optimizer vs r0 ($dt, L4 C128 T256)"
    if ! in_budget train; then
        row "$name" SKIP "$(budget_note)"
        return
    fi
    local base=(--dtype "${DT[$dt]}" "${S[@]}" "${FULL[@]}")
    if TRAIN_GPT_GEMM_TUNE=0 train "off_r0_$dt" "${base[@]}" --recompute 0 \
        --dump-grads "$WORK/off_r0_$dt.grads" --save "$WORK/off_r0_$dt.model" &&
        TRAIN_GPT_GEMM_TUNE=0 train "off_r1_$dt" "${base[@]}" --recompute 1 --offload checkpoints,optimizer \
            --dump-grads "$WORK/off_r1_$dt.grads" --save "$WORK/off_r1_$dt.model"; then
        local d same
        d=$($TOOLS same "$WORK/off_r0_$dt.jsonl" "$WORK/off_r1_$dt.jsonl")
        same=$?
        if cmp -s "$WORK/off_r0_$dt.grads" "$WORK/off_r1_$dt.grads" &&
            cmp -s "$WORK/off_r0_$dt.model" "$WORK/off_r1_$dt.model" && [ $same -eq 0 ]; then
            row "$name" PASS "step-1 grads and the saved model identical (cmp); $d"
        else
            row "$name" FAIL "grads: $(cmp "$WORK/off_r0_$dt.grads" "$WORK/off_r1_$dt.grads" 2>&1 | head -1); model: $(cmp "$WORK/off_r0_$dt.model" "$WORK/off_r1_$dt.model" 2>&1 | head -1); $d"
        fi
    else
        row "$name" FAIL "train_gpt failed: $(section "off_r1_$dt" | grep -m1 -iE 'error|out of|refus|--offload')"
    fi
}

if want offload; then
for dt in bf16 fp32; do offload_bitwise "$dt"; done

# memory against the planner, and 124M's throughput rows
N124o="offload 124M B8"
name="$N124o memory vs --plan (r1, checkpoints,optimizer)"
if ! in_budget train; then
    row "$N124o recompute 1, checkpoints,optimizer" SKIP "$(budget_note)"
    row "$name" SKIP "$(budget_note)"
else
    # shellcheck disable=SC2054 # checkpoints,optimizer is one argument
    P=(--device "$DEV" --dtype "${DT[bf16]}" --layers 12 --channels "$C124" --heads "$NH124" --seq-len "$PT"
        --batch 8 --recompute 1 --offload checkpoints,optimizer "${FULL[@]}")
    echo "=== offplan: ./train_gpt --plan ${P[*]}" >>"$TLOG"
    l0=$(lines "$TLOG")
    gpu plan "$TLOG" ./train_gpt --plan "${P[@]}"
    since "$TLOG" "$l0" >"$WORK/offplan.txt"
    if perf "$N124o recompute 1, checkpoints,optimizer" 12 "$C124" "$NH124" 8 1 --offload checkpoints,optimizer; then
        if d=$($TOOLS offmem "$WORK/offplan.txt" "$WORK/$N124o recompute 1, checkpoints,optimizer.jsonl"); then
            row "$name" PASS "$d"
        else
            row "$name" FAIL "$d"
        fi
    else
        row "$name" FAIL "the run failed: see train.log"
    fi
fi
perf "$N124o recompute 1" 12 "$C124" "$NH124" 8 1
perf "$N124o recompute 1, checkpoints" 12 "$C124" "$NH124" 8 1 --offload checkpoints

# XL B8: without offload, with checkpoints, with optimizer (from section 6's
# saved model when there is one)
NXLo="offload XL (48L C1600) B8"
TRAIN_KIND=xl perf "$NXLo recompute 1" 48 "$CXL" "$NHXL" "$BXL" 1 "${XL_INIT[@]}"
TRAIN_KIND=xl perf "$NXLo recompute 1, checkpoints" 48 "$CXL" "$NHXL" "$BXL" 1 --offload checkpoints "${XL_INIT[@]}"
TRAIN_KIND=xl perf "$NXLo recompute 1, optimizer" 48 "$CXL" "$NHXL" "$BXL" 1 --offload optimizer "${XL_INIT[@]}"
otarget() { # NAME BASE_RUN RUN TARGET
    if [ -f "$WORK/$2.jsonl" ] && [ -f "$WORK/$3.jsonl" ]; then
        local d
        if d=$($TOOLS ratio "$WORK/$2.jsonl" "$WORK/$3.jsonl" 2 "$4"); then row "$1" PASS "$d"
        else row "$1" FAIL "$d"; fi
    else
        row "$1" SKIP "a run it compares did not run or failed (rows above)"
    fi
}
otarget "target: 124M checkpoint offload >= 0.95x tok/s" "$N124o recompute 1" "$N124o recompute 1, checkpoints" "$TGT_OFFCK"
otarget "target: XL checkpoint offload >= 0.95x tok/s" "$NXLo recompute 1" "$NXLo recompute 1, checkpoints" "$TGT_OFFCK"
otarget "target: XL optimizer offload step <= 1.5x" "$NXLo recompute 1" "$NXLo recompute 1, optimizer" "$TGT_OFFOPT"

# the long-context row: does the device alone fit 124M at T=8192, B=1?
name="long context: 124M T8192 B1, r1 + checkpoints,optimizer"
if ! in_budget xl; then
    row "$name" SKIP "$(budget_note)"
else
    L=(--device "$DEV" --dtype "${DT[bf16]}" --layers 12 --channels "$C124" --heads "$NH124" --seq-len "$LCT"
        --batch 1 "${FULL[@]}" "${PLAN_LC[@]}")
    echo "=== lcplan: ./train_gpt --plan ${L[*]}" >>"$TLOG"
    l0=$(lines "$TLOG")
    gpu plan "$TLOG" ./train_gpt --plan "${L[@]}"
    since "$TLOG" "$l0" >"$WORK/lcplan.txt"
    fit=$(awk '$1 == "0" || $1 == "1" {printf "%smode %s max_B %s", (n++ ? ", " : ""), $1, $NF}' "$WORK/lcplan.txt")
    if TRAIN_KIND=xl train lc "${L[@]}" --steps 3 --recompute 1 --offload checkpoints,optimizer; then
        row "$name" PASS "ran 3 steps ($($TOOLS mem "$WORK/lc.jsonl")); without offload --plan gives ${fit:-no rows} (max_B 0: does not fit)"
    else
        row "$name" FAIL "train_gpt failed: $(section lc | grep -m1 -iE 'error|out of'); without offload --plan gives ${fit:-no rows}"
    fi
fi
fi # offload
