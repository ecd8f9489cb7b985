#!/usr/bin/env bash
# dev/gpu_check/gpu_check_lib.sh — sourced by dev/gpu_check/gpu_check.sh, not run: the
# GPU runs' configuration (devices, dtypes, shapes, targets), the CPU
# rehearsal's substitutions for it (GPU_CHECK_REHEARSAL=1), and the helpers
# every section uses: row (a summary line), want (GPU_CHECK_SECTIONS),
# in_budget, finish, section and train. It expects OUT, WORK, SUM, TLOG,
# JLOG, BUDGET and FAILS set by gpu_check.sh.
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
# Attention variants no GPU has run yet (Hopper's wgmma: sm_90a descriptors
# and layouts only the hardware confirms). Checked in a process of their own
# after the other kernels, so that a fault there (a sticky CUDA error ends
# the process) loses only their row; left out of the sweep when it failed.
UNMEASURED=fwd-wgmma-w4-k64-s2-b3,dq-wgmma-w4-k64-s2-b3,dkdv-wgmma-w4-q64-s2-b2
UNMEASURED_OK=1
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
    PLAN_XL=(--memory-budget 30MiB) PLAN_124=(--memory-budget 20MiB)
    PEAK=(--peak-tflops 0.05) # about a third of a shared core's fp32 rate
    SWEEP_SHAPE=0 # the emulator's sweep is at its own shapes: take its first pick
    TGT_MFU=0 TGT_XL=0 TGT_HEAD=0 TGT_HEADB=0 TGT_AUTO=0
    export GPU_CHECK_MEM_TOL_PCT=inf     # gpu_check_tools.py: RSS is not device memory
    export GPU_CHECK_PEAK_TFLOPS=0.05    # gpu_check_tools.py's MFU: PEAK's peak
    export GPU_CHECK_REHEARSAL=1     # bench_auto.sh gpu: its cpu shapes
    export OMP_NUM_THREADS=1         # tiny runs on a shared machine: no barrier stalls
fi
# rehearse NAME: a row the rehearsal cannot run (it needs CUDA)
rehearse() { row "$1" SKIP "(rehearsal) ${2:-needs a GPU}"; }

row() { # NAME RESULT DETAIL
    printf '%-46s %-5s %s\n' "$1" "$2" "$3" | tee -a "$SUM"
    if [ "$2" = FAIL ]; then FAILS=$((FAILS + 1)); fi
}
in_budget() { [ "$SECONDS" -lt "$BUDGET" ]; }
# GPU_CHECK_SECTIONS: run only these sections (default: all), e.g. "kernels
# head" for a rerun inside a short lease. Names: kernels sweep grads sample
# recompute nccl perf xlmax head auto. The build and the data always run.
want() { [ -z "${GPU_CHECK_SECTIONS:-}" ] || [[ " $GPU_CHECK_SECTIONS " == *" $1 "* ]]; }
finish() {
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

# train NAME ARGS...: ./train_gpt ARGS --log WORK/NAME.jsonl; output to train.log
train() {
    local name=$1
    shift
    echo "=== $name: ./train_gpt $* --log $WORK/$name.jsonl" >>"$TLOG"
    local t0=$SECONDS
    ./train_gpt "$@" --log "$WORK/$name.jsonl" >>"$TLOG" 2>&1
    local rc=$?
    echo "=== $name: exit $rc after $((SECONDS - t0)) s" >>"$TLOG"
    if [ -f "$WORK/$name.jsonl" ]; then
        echo "=== $name" >>"$JLOG"
        cat "$WORK/$name.jsonl" >>"$JLOG"
    fi
    return $rc
}
