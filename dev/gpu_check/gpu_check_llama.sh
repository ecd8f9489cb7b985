#!/usr/bin/env bash
# dev/gpu_check/gpu_check_llama.sh — sourced by dev/gpu_check/gpu_check.sh, not run:
# section "llama", the Llama family (--arch llama: RMSNorm, RoPE, SwiGLU,
# grouped-query attention, untied head) trained on the GPU, in the first-run
# plan (about 45 s there; 75 s with the rows the first run leaves out). Every
# row starts only while its whole limit fits the budget, else SKIP.
#   - one step against the cpu backend: fp32 loss and every gradient within
#     1e-4 (per tensor, relative; gpu_check_tools.py lgrads), bf16's error
#     printed (L2 C64 NH4 KVH2 F160 T64 B4, random tokens of 1000 ids);
#   - recompute 1 and 2 bitwise recompute 0 (the step-1 gradients, every
#     step's loss and grad norm; L4 C128 NH4 KVH2 T256 B4, 3 steps, the
#     heuristic's gemm algorithms as in section 5), bf16; fp32 too outside
#     the first run;
#   - the host tier: recompute 1 with --offload checkpoints,optimizer bitwise
#     recompute 0 (gradients, the saved model, losses), bf16;
#   - llama-125m (C768, 12 layers, 12 heads, 4 KV heads, F2048, GPT-2's
#     vocabulary, untied head) at B=8, T=1024, bf16, recompute 0: median step
#     time and tok/s after 2 warm-up steps, train_gpt's MFU (the family's
#     FLOPs, model/flops.c), the planner's total against the measured device
#     memory (within 2%) and the arenas' high-water mark against the plan
#     (equal); recompute 1 too outside the first run;
#   - decode (outside the first run): --generate through the KV cache writes
#     the text of the uncached forward on the GPU and of the cpu, fp32.
# Expects gpu_check.sh's helpers and variables (train, row, in_budget, want,
# section, SMALL, FULL, DT, DEV, WORK, TOOLS, FIRST, REHEARSAL, PT, PSTEPS).

if want llama; then
LLT=(--arch llama --kv-heads 2 --ffn 160 --layers 2 --channels 64 --heads 4 --seq-len 64 --batch 4 --steps 1)
LLR=(--arch llama --kv-heads 2 --layers 4 --channels 128 --heads 4 --seq-len 256 --batch 4 --steps 3 --device "$DEV")
LL125=(--model llama-125m --seq-len "$PT" --batch 8)
if [ "$REHEARSAL" = 1 ]; then
    LLR=(--arch llama --kv-heads 2 --layers 2 --channels 64 --heads 4 --seq-len 64 --batch 2 --steps 3 --device cpu)
    LL125=(--arch llama --kv-heads 2 --ffn 128 --layers 2 --channels 64 --heads 4 --seq-len "$PT" --batch 2)
fi
llama_first_skip() { row "$1" SKIP "not in the first-run plan (GPU_CHECK_PLAN=first)"; }

# one step against the cpu
name="llama fp32 GPU vs cpu grads (L2 C64 NH4 KVH2 T64)"
if ! in_budget train; then
    row "$name" SKIP "$(budget_note)"
elif train llama_cpu --device cpu --dtype fp32 "${LLT[@]}" "${SMALL[@]}" --dump-grads "$WORK/llama_cpu.bin" \
    --save "$WORK/llama_tiny.bin" &&
    train llama_gpu32 --device "$DEV" --dtype fp32 "${LLT[@]}" "${SMALL[@]}" --dump-grads "$WORK/llama_gpu32.bin"; then
    d=$($TOOLS lgrads "$WORK/llama_cpu.bin" "$WORK/llama_gpu32.bin" 2 64 1000 4 2 160 1e-4)
    if [ $? -eq 0 ]; then row "$name" PASS "$d"; else row "$name" FAIL "$d"; fi
    name="llama bf16 GPU vs cpu grads (L2 C64 NH4 KVH2 T64)"
    if train llama_gpu16 --device "$DEV" --dtype "${DT[bf16]}" "${LLT[@]}" "${SMALL[@]}" --dump-grads "$WORK/llama_gpu16.bin"; then
        d=$($TOOLS lgrads "$WORK/llama_cpu.bin" "$WORK/llama_gpu16.bin" 2 64 1000 4 2 160 1e-4 | sed 's/: PASS$//; s/: FAIL$//')
        row "$name" info "$d"
    else row "$name" FAIL "train_gpt failed: $(section llama_gpu16 | grep -m1 -iE 'error|refus|out of')"; fi
else
    row "$name" FAIL "train_gpt failed: $(section llama_gpu32 | grep -m1 -iE 'error|refus|out of')"
fi

# recompute modes and the host tier, bitwise (the heuristic's gemm algorithms)
export TRAIN_GPT_GEMM_TUNE=0
for dt in bf16 fp32; do
    if [ "$FIRST" = 1 ] && [ $dt = fp32 ]; then
        for m in 1 2; do llama_first_skip "llama recompute $m vs 0 bitwise (fp32, L4 C128 T256)"; done
        continue
    fi
    base=llama_r0_$dt
    verdict=
    if ! in_budget train; then verdict="SKIP $(budget_note)"
    elif ! train "$base" "${LLR[@]}" --dtype "${DT[$dt]}" --recompute 0 "${FULL[@]}" \
        --dump-grads "$WORK/$base.bin" --save "$WORK/$base.model"; then
        verdict="FAIL recompute 0 failed: $(section "$base" | grep -m1 -iE 'error|refus|out of')"
    fi
    if [ -n "$verdict" ]; then
        for m in 1 2; do row "llama recompute $m vs 0 bitwise ($dt, L4 C128 T256)" "${verdict%% *}" "${verdict#* }"; done
        [ $dt = bf16 ] && row "llama offload bitwise: r1 + checkpoints,optimizer vs r0 (bf16)" "${verdict%% *}" "${verdict#* }"
        continue
    fi
    for m in 1 2; do
        name="llama recompute $m vs 0 bitwise ($dt, L4 C128 T256)"
        if ! in_budget train; then row "$name" SKIP "$(budget_note)"; continue; fi
        if train "llama_r${m}_$dt" "${LLR[@]}" --dtype "${DT[$dt]}" --recompute $m "${FULL[@]}" \
            --dump-grads "$WORK/llama_r${m}_$dt.bin"; then
            d=$($TOOLS same "$WORK/$base.jsonl" "$WORK/llama_r${m}_$dt.jsonl")
            same=$?
            if cmp -s "$WORK/$base.bin" "$WORK/llama_r${m}_$dt.bin" && [ $same -eq 0 ]; then
                row "$name" PASS "step-1 grads identical; $d"
            else row "$name" FAIL "grads: $(cmp "$WORK/$base.bin" "$WORK/llama_r${m}_$dt.bin" 2>&1 | head -1); $d"; fi
        else row "$name" FAIL "train_gpt failed: $(section "llama_r${m}_$dt" | grep -m1 -iE 'error|refus|out of')"; fi
    done
    [ $dt = bf16 ] || continue
    name="llama offload bitwise: r1 + checkpoints,optimizer vs r0 (bf16)"
    if ! in_budget train; then
        row "$name" SKIP "$(budget_note)"
    elif train llama_off_bf16 "${LLR[@]}" --dtype "${DT[bf16]}" --recompute 1 --offload checkpoints,optimizer \
        "${FULL[@]}" --dump-grads "$WORK/llama_off_bf16.bin" --save "$WORK/llama_off_bf16.model"; then
        d=$($TOOLS same "$WORK/$base.jsonl" "$WORK/llama_off_bf16.jsonl")
        same=$?
        if cmp -s "$WORK/$base.bin" "$WORK/llama_off_bf16.bin" && cmp -s "$WORK/$base.model" "$WORK/llama_off_bf16.model" &&
            [ $same -eq 0 ]; then row "$name" PASS "step-1 grads and the saved model identical (cmp); $d"
        else row "$name" FAIL "grads: $(cmp "$WORK/$base.bin" "$WORK/llama_off_bf16.bin" 2>&1 | head -1); model: $(cmp "$WORK/$base.model" "$WORK/llama_off_bf16.model" 2>&1 | head -1); $d"; fi
    else row "$name" FAIL "train_gpt failed: $(section llama_off_bf16 | grep -m1 -iE 'error|refus|out of|--offload')"; fi
done
unset TRAIN_GPT_GEMM_TUNE

# llama-125m's step: time, MFU, the planner against the measured peak
for r in 0 1; do
    name="llama-125m B8 recompute $r"
    if [ "$FIRST" = 1 ] && [ $r = 1 ]; then llama_first_skip "$name"; continue; fi
    if ! in_budget train; then row "$name" SKIP "$(budget_note)"; continue; fi
    if train "llama125_r$r" --device "$DEV" --dtype "${DT[bf16]}" "${LL125[@]}" --steps "$PSTEPS" --recompute $r \
        "${FULL[@]}" "${PEAK[@]}"; then
        if d=$($TOOLS lstats "$WORK/llama125_r$r.jsonl" 2); then row "$name" PASS "$d"; else row "$name" FAIL "$d"; fi
    else row "$name" FAIL "train_gpt failed: $(section "llama125_r$r" | grep -m1 -iE 'error|refus|out of')"; fi
done

# decode: the KV cache's text against the uncached forward's and the cpu's
name="llama fp32 --generate: GPU kv-cache 1 = 0 = cpu"
if [ "$FIRST" = 1 ]; then
    llama_first_skip "$name"
elif ! in_budget train || [ ! -f "$WORK/llama_tiny.bin" ]; then
    row "$name" SKIP "$(budget_note), or no model from the first llama row"
else
    G=(--arch llama --init-from "$WORK/llama_tiny.bin" --seq-len 64 --generate 48 --seed 7 --num-samples 2 --prompt "1 2 3")
    ok=1
    for v in "gpu1 $DEV 1" "gpu0 $DEV 0" "cpu cpu 1"; do
        read -r tag dev kv <<<"$v"
        echo "=== llama_gen_$tag: ./train_gpt --device $dev --dtype fp32 --kv-cache $kv ${G[*]}" >>"$TLOG"
        timeout -k 5 "${LIMIT[train]}" ./train_gpt --device "$dev" --dtype fp32 --kv-cache "$kv" "${G[@]}" \
            >"$WORK/llama_gen_$tag.txt" 2>>"$TLOG" || ok=0
        sed -n '/^sample 1/,$p' "$WORK/llama_gen_$tag.txt" >"$WORK/llama_gen_$tag.s"
        cat "$WORK/llama_gen_$tag.txt" >>"$TLOG"
    done
    if [ $ok = 0 ]; then row "$name" FAIL "a --generate run failed: see train.log"
    elif [ -s "$WORK/llama_gen_gpu1.s" ] && cmp -s "$WORK/llama_gen_gpu1.s" "$WORK/llama_gen_gpu0.s" &&
        cmp -s "$WORK/llama_gen_gpu1.s" "$WORK/llama_gen_cpu.s"; then row "$name" PASS "identical samples (2 x 48 tokens)"
    else row "$name" FAIL "differ: $(cmp "$WORK/llama_gen_gpu1.s" "$WORK/llama_gen_gpu0.s" 2>&1 | head -1); $(cmp "$WORK/llama_gen_gpu1.s" "$WORK/llama_gen_cpu.s" 2>&1 | head -1)"; fi
fi
fi # llama
