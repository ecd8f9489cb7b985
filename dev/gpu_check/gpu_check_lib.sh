#!/usr/bin/env bash
# dev/gpu_check/gpu_check_lib.sh — sourced by dev/gpu_check/gpu_check.sh, not run: the
# GPU runs' configuration (devices, dtypes, shapes, targets), the CPU
# rehearsal's substitutions for it (GPU_CHECK_REHEARSAL=1), and the helpers
# every section uses: row (a summary line), want (GPU_CHECK_SECTIONS),
# in_budget, gpu (every GPU process, under timeout), clocks_start, finish,
# section and train. It expects OUT, WORK, SUM, TLOG, JLOG, TOOLS and FAILS
# set by gpu_check.sh; it sets BUDGET.
# shellcheck disable=SC2034 # the configuration is read by gpu_check.sh

# The device, dtypes, shapes and targets of the GPU runs, as variables so that
# GPU_CHECK_REHEARSAL=1 can substitute CPU-sized ones (the block below); the
# GPU run uses these values.
REHEARSAL=${GPU_CHECK_REHEARSAL:-0}
DEV=cuda                        # --device of every run the GPU takes
declare -A DT=([bf16]=bf16 [fp32]=fp32) # --dtype, by the dtype a row names
CK=./build/check_kernels QUICK=() # sections 2-3b
BUNDLE=gpu_bundle/bundle.tar.xz # dev/gpu_check/gpu_bundle.sh's output, when present
SHARD_SMALL=1000000 SHARD_FULL=8000000 # tokens in the random shards
VFULL=50257                     # GPT-2's vocabulary: sections 5-9's runs
PT=1024 PSTEPS=12               # sections 6-9: T; section 6: steps a run (2 warm-up)
BMAX=64                         # section 6: 124M's micro-batch at most
C124=768 NH124=12               # GPT-2 124M's width (12 layers)
CXL=1600 NHXL=25 BXL=8          # GPT-2 XL's width (48 layers), section 6's B
PLAN_XL=() PLAN_124=()          # sections 7, 8: --plan's default budget
PEAK=()                         # section 6: train_gpt's MFU against the device table's peak
SWEEP_SHAPE=1                   # section 6: the sweep's pick at 124M's B and C only
TGT_MFU=0.45 TGT_XL=0.78 TGT_HEAD=0.97 TGT_HEADB=3 TGT_AUTO=0.97 # the speed targets (gpu_check.sh's header)
TGT_OFFCK=0.95 TGT_OFFOPT=0.667 # section 11: checkpoint offload's tok/s ratio, optimizer offload's (1/1.5)
LCT=8192 PLAN_LC=()             # section 11's long-context row: T; --plan's budget
# Attention variants no GPU has run yet (Hopper's wgmma: sm_90a descriptors
# and layouts only the hardware confirms; the FlashAttention-2-shaped ones of
# dev/cuda/attention_mma_fa2.cu, _fa2_bwd.cu and _fused.cu, new code). Checked in a process of
# their own after the other kernels, so that a fault there (a sticky CUDA
# error ends the process) loses only their row; left out of the sweep when
# it failed.
UNMEASURED=fwd-wgmma-w4-k64-s2-b3,dq-wgmma-w4-k64-s2-b3,dkdv-wgmma-w4-q64-s2-b2
UNMEASURED=$UNMEASURED,fwd-fa2-w4-k64-b2,fwd-fa2-w4-k32-b2,dq-fa2-w4-k64-b2,dq-fa2-w4-k32-b2
UNMEASURED=$UNMEASURED,dkdv-fused-w4-q64-b2,dkdv-fused-w4-q32-b3
UNMEASURED=$UNMEASURED,dkdv-fa2-w4-q64-b2,dkdv-fa2-w4-q32-b2,dkdv-fa2-ds-w4-q64-b2
UNMEASURED_OK=1
# Every GPU process runs under `timeout -k 5 LIMIT` (gpu, below), LIMIT in
# seconds by the kind of process; GPU_CHECK_LIMIT_<KIND> (upper case)
# overrides one, e.g. GPU_CHECK_LIMIT_CHECKS=4 in the hang rehearsal. The
# estimates beside them are from runs 1-3 (dev/notes/gpu-results.md, "The
# first-run plan"), the limits about twice that: a hang costs its limit,
# not the lease.
declare -A LIMIT=(
    [checks]=120    # check_kernels, every op (est. 55 s)
    [gelu]=40       # check_kernels --only fused, GELU epilogues (est. 10 s)
    [unmeasured]=40 # check_kernels, the wgmma variants alone (est. 10 s)
    [time]=45       # check_kernels --time, one table pair (est. 12 s)
    [sweep]=90      # check_kernels --sweep (est. 25 s at B=4 and 64, 45 s all four shapes)
    [sanitizer]=30  # compute-sanitizer, each of its three tools (est. 10-15 s)
    [plan]=30       # train_gpt --plan (est. 3 s)
    [train]=60      # one train_gpt run at 124M or smaller (est. 8-20 s)
    [xl]=100        # one train_gpt run at the 48-layer XL (est. 40-50 s, runs 1 and 3)
    [dist]=90       # gpu_check_dist.sh, three 1-rank runs (est. 20 s)
    [auto]=120      # dev/bench/bench_auto.sh gpu, one shape (est. 50 s)
    [torchref]=90   # dev/gpu_check/torch_reference.py: SDPA and matmul (est. 20 s, most of it torch's import)
    [probe]=30      # the device probe: nvidia-smi -L, then one small check_kernels run (est. 3 s)
)
for k in "${!LIMIT[@]}"; do
    v=GPU_CHECK_LIMIT_${k^^}
    if [ -n "${!v:-}" ]; then LIMIT[$k]=${!v}; fi
done
# GPU_CHECK_PLAN=first: the first run after a kernel rewrite (in the
# order dev/notes/gpu-results.md gives): the sections below unless
# GPU_CHECK_SECTIONS names others, the sweep at 124M's B=4 and B=64 only,
# no --time repeats (GELU epilogues, heuristic algorithms), no perf
# side rows (those and the one-chunk head) and the Llama section's core
# only; the 350 s budget.
FIRST=0 SWEEP_ARGS=()
if [ "${GPU_CHECK_PLAN:-}" = first ]; then
    FIRST=1 SWEEP_ARGS=(--sweep-b "4,64")
    : "${GPU_CHECK_SECTIONS:=kernels sweep perf sanitizer llama auto sample}"
    : "${GPU_CHECK_BUDGET:=350}"
elif [ -n "${GPU_CHECK_PLAN:-}" ]; then
    echo "gpu_check.sh: GPU_CHECK_PLAN: expected first or nothing, got '$GPU_CHECK_PLAN'" >&2
    exit 2
fi
BUDGET=${GPU_CHECK_BUDGET:-540}
# compute-sanitizer's pass: the default attention variants and the
# unmeasured ones, bf16, the small shapes (on the emulator: the encoder)
SAN_ARGS=(--quick --dtype bf16 --only attention
    --only-variants "fwd-w4-k64-s2-b4,dq-w4-k64-s2-b4,dkdv-w4-q64-s2-b3,$UNMEASURED")
if [ "$REHEARSAL" = 1 ]; then
    # The CPU rehearsal (dev/gpu_check/gpu_check_rehearsal.py): every section's shell
    # and parsing on the cpu backend at tiny shapes, in about a minute. Only what
    # needs CUDA is skipped (rows SKIP "(rehearsal)"): nvidia-smi, the build,
    # check_kernels --time and everything read from its tables; the kernel
    # checks and --sweep run on the CPU emulator (build/check_kernels_emu,
    # --quick) when it is built, else SKIP too. The GPU-only fields the runs
    # lack on the cpu: measured memory is the process's peak RSS (not within
    # 2% of the planner: the tolerance is lifted), no context_overhead, no
    # "gemm algo:" lines (TRAIN_GPT_GEMM_VERBOSE), no out-of-memory stop, no
    # device peak for the --log lines' "mfu" (the GPU's comes from
    # kernels/device_info.c's table; here --peak-tflops gives one, and
    # gpu_check_tools.py's MFU takes the same peak); the speed targets are 0
    # (the rows and their parsing run, the cpu's speed is no verdict).
    # GPU_CHECK_REHEARSAL_BUNDLE=1 rehearses the bundle's unpacking too (it
    # replaces ./train_gpt and check_kernels with the bundle's, as on the
    # GPU; the bundle's CUDA-built train_gpt runs --device cpu).
    DEV=cpu
    DT[bf16]=fp32 # the cpu backend computes in fp32 only
    CK=./build/check_kernels_emu
    QUICK=(--quick) # the emulator: the small shapes only
    if [ -z "${GPU_CHECK_REHEARSAL_BUNDLE:-}" ]; then BUNDLE=
    elif [ ! -f "$BUNDLE" ]; then echo "gpu_check.sh: no $BUNDLE to rehearse (dev/gpu_check/gpu_bundle.sh)" >&2; exit 2; fi
    SHARD_SMALL=100000 SHARD_FULL=100000
    VFULL=2000 # at 50257 the head would take most of every cpu step
    PT=64 PSTEPS=4 BMAX=4
    C124=64 NH124=4 CXL=32 NHXL=2 BXL=2
    # budgets that keep --plan's largest micro-batches small on the cpu
    # (XL: 2 at recompute 0, 18 at 1; 124M: 8)
    # (the budgets are the arenas'; the baseline the process holds before
    # them, which --plan measures for this binary, comes on top: a CUDA
    # build's libraries alone are about 160 MiB)
    base=$(./train_gpt --plan --device cpu --layers 2 --channels 32 --heads 4 --vocab 256 \
           --seq-len 16 --batch 1 2>/dev/null | sed -n 's/^baseline: \([0-9]*\) bytes.*/\1/p')
    base=${base:-0}
    PLAN_XL=(--memory-budget $((base + 30 * 1048576)))
    PLAN_124=(--memory-budget $((base + 20 * 1048576)))
    PEAK=(--peak-tflops 0.05) # about a third of a shared core's fp32 rate
    SWEEP_SHAPE=0 # the emulator's sweep is at its own shapes: take its first pick
    TGT_MFU=0 TGT_XL=0 TGT_HEAD=0 TGT_HEADB=0 TGT_AUTO=0 TGT_OFFCK=0 TGT_OFFOPT=0
    LCT=256
    SAN_ARGS=(--quick --dtype fp32 --only encoder) # the path, not the tool: no sanitizer here
    export GPU_CHECK_MEM_TOL_PCT=inf     # gpu_check_tools.py: RSS is not device memory
    export GPU_CHECK_PEAK_TFLOPS=0.05    # gpu_check_tools.py's MFU: PEAK's peak
    export GPU_CHECK_REHEARSAL=1     # bench_auto.sh gpu: its cpu shapes
    export OMP_NUM_THREADS=1         # tiny runs on a shared machine: no barrier stalls
fi
# wheel_lib LIB MODULE (e.g. nccl nvidia.nccl): when the toolkit at cuda_lib
# lacks libLIB but Python's nvidia wheel has it, link and load the wheel's
cuda_lib=$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")/lib64
wheel_lib() { # LIB MODULE: e.g. nccl nvidia.nccl
    ls "$cuda_lib/lib$1.so" >/dev/null 2>&1 && return 0
    ldconfig -p 2>/dev/null | grep -q "lib$1.so " && return 0
    local dir
    dir=$($PY -c "import $2 as m; print(list(m.__path__)[0])" 2>/dev/null) || return 0
    [ -d "$dir/lib" ] || return 0
    mkdir -p "$WORK/lib"
    # shellcheck disable=SC2012,SC2086 # the first of lib$1.so*, a glob on purpose
    ln -sf "$(ls "$dir"/lib/lib$1.so* | head -1)" "$WORK/lib/lib$1.so"
    export LIBRARY_PATH="$WORK/lib:${LIBRARY_PATH:-}" CPATH="$dir/include:${CPATH:-}"
    export LD_LIBRARY_PATH="$dir/lib:${LD_LIBRARY_PATH:-}"
    echo "gpu_check: lib$1 from the Python wheel at $dir" >>"$OUT/build.log"
}
# torch_reference: PyTorch's SDPA (flash, cuDNN) and matmul timed into
# timing.log beside check_kernels --time's rows; SKIP when torch or its
# CUDA is missing (the rehearsal's case), with torch's own reason.
TORCH_ROW="reference: torch SDPA and matmul (bf16)"
torch_reference() {
    local l0 rc why pre=
    [ "$REHEARSAL" = 1 ] && pre="(rehearsal) "
    echo "=== $PY dev/gpu_check/torch_reference.py" >>"$OUT/timing.log"
    l0=$(lines "$OUT/timing.log")
    gpu torchref "$OUT/timing.log" "$PY" dev/gpu_check/torch_reference.py
    rc=$?
    why=$(since "$OUT/timing.log" "$l0" | sed -n 's/^SKIP: //p' | head -1)
    case $rc in
    0) row "$TORCH_ROW" info "$(since "$OUT/timing.log" "$l0" | sed -n 's/^torchref summary: //p' | cut -c1-200)" ;;
    3) row "$TORCH_ROW" SKIP "$pre$why" ;;
    125) row "$TORCH_ROW" SKIP "$(budget_note)" ;;
    *) row "$TORCH_ROW" FAIL "$(why $rc torchref): see timing.log" ;;
    esac
}
# pred_file: the bundle's model predictions for this card: the H200's set,
# the H100's when the probe named an H100 (dev/perf_model/hw.py DEVICES)
pred_file() {
    if [[ "$DEVICE_NAME" == *H100* ]] && [ -f "$WORK/bundle/perf_model_h100.json" ]; then
        echo "$WORK/bundle/perf_model_h100.json"
    else echo "$WORK/bundle/perf_model.json"; fi
}
# model_rows: FAIL rows when a measurement falls outside the range the
# model printed (cuda_perf_model.py's hw.band): the default attention
# kernels at 124M B=64 from the sweep (out of sample: the fit saw B=4
# only), the 124M B=64 recompute 0 step, the XL recompute 1 / 0 ratio
model_rows() {
    local pred d rc name i ma xl="$WORK/XL (48L C1600) B8 recompute"
    pred=$(pred_file)
    local -a mrows=("model: attention B=64, out of sample (sweep)" "model: 124M B=64 recompute 0 step"
        "model: XL recompute 1 / 0 throughput")
    local -a margs=("attn|$WORK/sweep.log|64" "step|$WORK/$N124 recompute 0.jsonl|2|$B124"
        "xl|$xl 0.jsonl|$xl 1.jsonl|2")
    for i in 0 1 2; do
        name=${mrows[$i]}
        if [ ! -f "$pred" ]; then
            if [ "$REHEARSAL" = 1 ]; then rehearse "$name" "no model predictions (gpu_bundle)"
            else row "$name" SKIP "no perf_model.json in the bundle"; fi
            continue
        fi
        IFS='|' read -r -a ma <<<"${margs[$i]}"
        d=$($TOOLS modelrange "$pred" "${ma[@]}")
        rc=$?
        case $rc in
        0) row "$name" PASS "$d" ;;
        1) row "$name" FAIL "$d" ;;
        *) row "$name" SKIP "$d" ;;
        esac
    done
}
# rehearse NAME: a row the rehearsal cannot run (it needs CUDA)
rehearse() { row "$1" SKIP "(rehearsal) ${2:-needs a GPU}"; }

row() { # NAME RESULT DETAIL
    printf '%-46s %-5s %s\n' "$1" "$2" "$3" | tee -a "$SUM"
    if [ "$2" = FAIL ]; then FAILS=$((FAILS + 1)); fi
}
# in_budget [KIND]: whether a row may start: with KIND, whether its whole
# limit still fits in GPU_CHECK_BUDGET (the optional rows); without, whether
# any of the budget is left
in_budget() {
    if [ $# -eq 0 ]; then [ "$SECONDS" -lt "$BUDGET" ]; else [ $((SECONDS + LIMIT[$1])) -le "$BUDGET" ]; fi
}
# GPU_CHECK_SECTIONS: run only these sections (default: all), e.g. "kernels
# head" for a rerun inside a short lease. Names: kernels sweep grads sample
# recompute nccl perf sanitizer llama xlmax head auto offload. The build and the data
# always run.
want() { [ -z "${GPU_CHECK_SECTIONS:-}" ] || [[ " $GPU_CHECK_SECTIONS " == *" $1 "* ]]; }
budget_note() { echo "time budget ($BUDGET s) used"; }
# gpu KIND LOG CMD...: CMD under `timeout -k 5 L`, L = LIMIT[KIND] cut to
# what is left of the budget (so that no process runs past it), stdout and
# stderr appended to LOG as they come (line-buffered through stdbuf where
# it exists: a killed process loses no buffered lines). Exit: CMD's, 124
# when it was stopped at its limit (a line in LOG says so), 125 when less
# than 5 s of the budget was left to start it (not run; a line says so).
STDBUF=()
if command -v stdbuf >/dev/null; then STDBUF=(stdbuf -oL -eL); fi
GPU_TIMEOUTS=0
gpu() {
    local kind=$1 log=$2 lim=${LIMIT[$1]}
    shift 2
    local left=$((BUDGET - SECONDS))
    if [ "$left" -lt "$lim" ] && [ "$left" -lt 5 ]; then
        echo "=== gpu_check: not run, $(budget_note): $*" >>"$log"
        return 125
    fi
    [ "$left" -lt "$lim" ] && lim=$left
    local t0=$SECONDS
    timeout -k 5 "$lim" "${STDBUF[@]}" "$@" >>"$log" 2>&1
    local rc=$?
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        echo "=== gpu_check: stopped at its limit, $lim s (timeout -k 5 $lim; ${kind}): $*" >>"$log"
        GPU_TIMEOUTS=$((GPU_TIMEOUTS + 1))
        # a killed kernel can leave the device wedged: every later row would
        # then spend its whole limit; stop at once with the logs so far
        if ! probe "$log"; then
            row "device probe after a timeout ($kind)" FAIL "the device is wedged after $kind timed out: $PROBE_WHY; stopped here, logs so far kept"
            finish
        fi
        return 124
    fi
    echo "=== gpu_check: exit $rc after $((SECONDS - t0)) s (limit $lim s): $*" >>"$log"
    return $rc
}
# probe LOG: whether the device answers: nvidia-smi -L, then one kernel
# launch (check_kernels, the encoder at the small shapes), each under
# `timeout -k 5 LIMIT[probe]`, output appended to LOG; PROBE_WHY says what
# failed. Not cut to the budget: it decides whether anything more runs. The
# rehearsal's device is wedged when GPU_CHECK_REHEARSAL_WEDGE=1: its re-probes
# keep CHECK_KERNELS_TEST_HANG (the emulator's never-returning kernel);
# otherwise the probe's launch runs without it.
PROBE_WHY=
PROBES=0
probe() {
    local log=$1 lim=${LIMIT[probe]} rc smi=(nvidia-smi -L) hang=(env -u CHECK_KERNELS_TEST_HANG)
    PROBES=$((PROBES + 1))
    if [ "$REHEARSAL" = 1 ]; then
        smi=(echo "GPU 0: rehearsal (the cpu backend, no GPU)")
        [ "${GPU_CHECK_REHEARSAL_WEDGE:-}" = 1 ] && [ "$PROBES" -gt 1 ] && hang=(env)
    fi
    echo "=== gpu_check: device probe $PROBES: ${smi[*]}" >>"$log"
    timeout -k 5 "$lim" "${smi[@]}" >>"$log" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
        PROBE_WHY="nvidia-smi -L: $( [ $rc -eq 124 ] || [ $rc -eq 137 ] && echo "no answer in $lim s" || echo "exit $rc")"
        return 1
    fi
    if [ ! -x "$CK" ]; then
        echo "=== gpu_check: no $CK: no kernel launched" >>"$log"
        return 0
    fi
    echo "=== gpu_check: device probe $PROBES: $CK --quick --dtype fp32 --only encoder" >>"$log"
    timeout -k 5 "$lim" "${hang[@]}" "${STDBUF[@]}" "$CK" --quick --dtype fp32 --only encoder >>"$log" 2>&1
    rc=$?
    case $rc in
    0) return 0 ;;
    124 | 137) PROBE_WHY="one kernel launch ($CK --only encoder) did not return in $lim s" ;;
    *) PROBE_WHY="one kernel launch ($CK --only encoder): exit $rc" ;;
    esac
    return 1
}
# why RC KIND: the reason a gpu run failed, for a row
why() {
    case $1 in
    124) echo "timed out (limit ${LIMIT[$2]} s or the budget's end; partial log kept)" ;;
    125) budget_note ;;
    *) echo "exit $1" ;;
    esac
}
# since LOG LINES: LOG after its first LINES lines (what one run appended)
since() { tail -n +$(($2 + 1)) "$1"; }
lines() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }
# The SM clock and power, every 500 ms, in the background into
# OUT/clocks.csv during the speed rows (nvidia-smi; in the rehearsal a
# stand-in that prints the same columns); clocks_stop ends it and gives its
# row.
CLK_PID=
clocks_start() {
    [ -n "$CLK_PID" ] && return 0
    if [ "$REHEARSAL" = 1 ]; then
        { echo "timestamp, clocks.sm [MHz], power.draw [W]"
          while :; do echo "$(date -u '+%Y/%m/%d %H:%M:%S.000'), 1980 MHz, 500.00 W"; sleep 0.5; done
        } >"$OUT/clocks.csv" 2>&1 &
        CLK_PID=$!
    elif command -v nvidia-smi >/dev/null; then
        nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv -lms 500 >"$OUT/clocks.csv" 2>&1 &
        CLK_PID=$!
    else
        CLK_PID=none
    fi
}
clocks_stop() {
    local name="SM clock and power (nvidia-smi -lms 500)"
    case $CLK_PID in
    "") return 0 ;;
    none) row "$name" SKIP "no nvidia-smi on this machine" ;;
    *)
        kill "$CLK_PID" 2>/dev/null
        wait "$CLK_PID" 2>/dev/null
        row "$name" info "$($TOOLS clocks "$OUT/clocks.csv")" ;;
    esac
    CLK_PID=
}
finish() {
    clocks_stop
    echo
    echo "==== gpu_check summary ($SECONDS s; logs in $OUT) ===="
    cat "$SUM"
    if [ -s "$OUT/timing.log" ]; then
        echo
        # the bf16 table and the model's predictions beside it; the sweep's
        # tables (appended last) stay in the file
        awk '/^attention variants/ {exit} /timing \(bf16\)/ {on = 1} /^=== / {on = 0} on' "$OUT/timing.log"
    fi
    echo
    if [ "$FAILS" -eq 0 ]; then echo "gpu_check: all PASS"; else echo "gpu_check: $FAILS FAIL"; fi
    exit $((FAILS > 0))
}

# section NAME: the output of run NAME in train.log
section() { awk -v h="=== $1: ./train_gpt" 'index($0, h) == 1 {on = 1} on {print} /^=== / && index($0, h) != 1 {on = 0}' "$TLOG"; }

# train NAME ARGS...: ./train_gpt ARGS --log WORK/NAME.jsonl under gpu
# (TRAIN_KIND's limit, default train); output to train.log
train() {
    local name=$1
    shift
    echo "=== $name: ./train_gpt $* --log $WORK/$name.jsonl" >>"$TLOG"
    local t0=$SECONDS
    gpu "${TRAIN_KIND:-train}" "$TLOG" ./train_gpt "$@" --log "$WORK/$name.jsonl"
    local rc=$?
    echo "=== $name: exit $rc after $((SECONDS - t0)) s" >>"$TLOG"
    if [ -f "$WORK/$name.jsonl" ]; then
        echo "=== $name" >>"$JLOG"
        cat "$WORK/$name.jsonl" >>"$JLOG"
    fi
    return $rc
}
