#!/usr/bin/env bash
# dev/gpu_check/gpu_check.sh OUTDIR — the CUDA backend's verdict in one command
# (its time is GPU_CHECK_BUDGET's, below).
#
#   1. build (make -j16) with the CUDA backend, or unpack gpu_bundle's;
#   1b. the device probe (nvidia-smi -L, one kernel), again after any GPU
#      process timed out: a device that does not answer ends the run;
#   2. build/check_kernels: every op against the cpu backend, fp32
#      (tol 1e-5) and bf16 (tol 2e-2), small odd shapes and GPT-2 124M's;
#      then the fused ops again with TRAIN_GPT_FUSE_GELU=1 (cuBLASLt's GELU
#      epilogues against the cpu's GELU: which GELU cuBLASLt computes);
#      the variants no GPU has run (UNMEASURED: the Hopper wgmma variants) are
#      left out of that run and checked in a process of their own after it,
#      so that a fault there loses only their row;
#   3. the same tool's --time table (per-op medians, CUDA events), then its
#      bf16 table again with the GELU epilogues and again with the
#      heuristic's gemm algorithms (TRAIN_GPT_GEMM_TUNE=0), appended to
#      timing.log; rows: the head against its three gemms (target <= 1.3x),
#      fused against unfused fc GELU, timed against heuristic algorithms;
#      beside the first table, the static model's predictions for those
#      rows when the bundle carries them (dev/cuda_perf_model.py,
#      dev/notes/perf-model.md);
#   3b. the same tool's --sweep: every bf16 attention kernel variant checked
#      against the default and timed at 124M's and XL's shapes;
#   4. trainer, tiny models: GPU fp32 loss and every gradient within 1e-4
#      (relative, per tensor) of the cpu backend, after one step;
#   5. trainer: --recompute 1, 2 and selective bitwise identical to 0 on the
#      GPU (dumped gradients of step 1, losses and grad norms of 3 steps),
#      bf16 and fp32, with the heuristic's gemm algorithms (two processes
#      compared: timed choices may differ between them); then bf16 recompute
#      1 vs 0 with timed algorithms (bitwise when both runs chose alike), and
#      with TRAIN_GPT_FUSE_GELU=1 (1 vs 0 bitwise; selective, whose backward
#      rebuilds GELU unfused, reported);
#   5b. the NCCL path: a 1-rank mpirun job (dev/gpu_check/gpu_check_dist.sh) trains
#      bitwise like the plain run, with --zero 0 and 1;
#   6. throughput and MFU, bf16, median of 10 steps after 2 warm-up steps:
#      GPT-2 124M (T=1024, B = the largest power of two <= 64 that --plan
#      fits at recompute 0) and the 48-layer XL (C=1600, NH=25, B=8,
#      T=1024), each at --recompute 0 and 1, with planner-vs-measured memory
#      (a row fails when they differ by more than 2%); then the speed
#      targets as rows: 124M MFU >= 45%, XL recompute 1/0 throughput >= 0.78,
#      and the chunked head's cost <= 3% of step time at 124M; and
#      --profile-ops at 124M: the five ops that take most of a step; 124M
#      recompute 0 also with the heuristic's gemm algorithms and with the
#      GELU epilogues, as ratios, and section 3b's fastest correct attention
#      variants at its B, named as the ones to promote (./train_gpt ships one
#      configuration per kernel: a variant is tried in a step only once moved
#      into kernels/cuda/, dev/cuda/attention_variants.cu);
#   7. XL, recompute 0 and 1: the largest micro-batch `train_gpt --plan` says
#      fits its default budget (free device memory minus 512 MiB) must run;
#      one more is tried with the budget check off: it runs or stops with the
#      out-of-memory message;
#   8. 124M at recompute 1: the largest micro-batch with the chunked head
#      against the one-chunk head, both from --plan and both run for one
#      step (target: at least 3x). Section 6's one-chunk 124M row gives the
#      chunked head's cost in step time;
#   9. --recompute auto by measured time (dev/bench/bench_auto.sh gpu): 124M
#      (B=8) and the XL (B=8), T=1024, bf16, op costs measured on the GPU,
#      2 budgets between mode 1's and mode 0's peaks, modes 1 and selective
#      (when they fit) and auto side by side, one round (124M 4 steps a run,
#      XL 3, from section 6's saved XL model: about 100 s, planned from
#      section 6's start-ups and step times; run without section 6, each XL
#      run initialises the model on the host, about 30 s more); a row per
#      budget, PASS when auto >= 0.97x the best fixed mode that fits;
#      predicted and measured step time beside it;
#  8b. the Llama family (--arch llama), dev/gpu_check/gpu_check_llama.sh, after
#      6b: one step's fp32 gradients within 1e-4 of the cpu's, recompute 1
#      and 2 and the host tier bitwise recompute 0, llama-125m B8's step time,
#      MFU and planner-vs-measured memory, and the KV-cache decode's text;
#  11. the host tier (--offload), dev/gpu_check/gpu_check_offload.sh: recompute 1
#      with both offloads bitwise against recompute 0 (cmp of the dumped
#      gradients and the saved model), 124M's device and host memory against
#      --plan's device:/host: lines, throughput with and without offload at
#      124M and XL B=8 (targets: checkpoints >= 0.95x, optimizer <= 1.5x step
#      time), and 124M at T=8192 with offload (and whether it fits without);
#      about 250 s planned, never in GPU_CHECK_PLAN=first unless named.
# Data: random-token shards written by dev/gpu_check/gpu_check_tools.py (the
# trainer's numbers do not depend on the text). MFU's formula is in that file.
#
# Binaries: from gpu_bundle/bundle.tar.xz when present (dev/gpu_check/gpu_bundle.sh
# builds it on the CPU machine, for a GPU image without the project's Debian
# libraries), else built here with make.
#
# Every GPU process runs under `timeout -k 5 L` (gpu_check_lib.sh: gpu; L
# its kind's limit, GPU_CHECK_LIMIT_<KIND> to change one, cut to what is
# left of the budget) with its output appended straight to its log in
# OUTDIR as it runs: a hang FAILs its row "timed out", keeps its log up to
# the hang, and the next section starts. nvidia-smi logs the SM clock and
# power every 500 ms into clocks.csv during the speed rows (a row at the
# end). Section 6b runs compute-sanitizer's memcheck, racecheck and
# synccheck on the small attention shapes (SKIP rows without the tool or
# when it refuses the device).
#
# OUTDIR gets at most 8 files (the device tool returns no more): summary.txt
# (the table printed last), build.log, nvidia-smi.txt, kernels.log (the
# checks, the unmeasured variants, the sanitizers), timing.log (--time, the
# sweep), train.log (every train_gpt command and its output, --plan, the
# NCCL job, bench_auto), train_json.log (the runs' --log lines), clocks.csv.
# Exit status: 0 when every row passed.
# GPU_CHECK_BUDGET (seconds, default 540): no GPU process runs past it, and
# the optional rows (section 6 after its first two, 7-10) start only when
# their whole limit fits, else a SKIP row. GPU_CHECK_SECTIONS (default:
# all) names the sections to run (kernels sweep grads sample recompute nccl
# perf sanitizer llama xlmax head auto offload), for a rerun of what failed; CHECK_ARGS
# goes to check_kernels (e.g. "--only head").
# GPU_CHECK_PLAN=first: the first run after a kernel rewrite, at most 300 s
# of GPU work (dev/notes/gpu-results.md, "The next run": the commands for it
# and for the rerun, and the budget arithmetic).
# GPU_CHECK_REHEARSAL=1 (`make gpu-check-rehearsal`; CI runs it): this script
# rehearsed on a machine without a GPU, so that a shell or parsing bug shows
# there and not in a lease. Every section runs on the cpu backend at tiny
# shapes (dev/gpu_check/gpu_check_lib.sh substitutes the device, dtypes,
# shapes, budgets and targets; the GPU run keeps the defaults), the kernel
# checks and --sweep on the CPU emulator; what needs CUDA (the build,
# check_kernels --time and the rows read from its tables) is a SKIP
# "(rehearsal)" row. dev/gpu_check/gpu_check_rehearsal.py checks that every row the
# GPU run prints is there and none FAILs, then injects a hang (a kernel that
# never returns, in the emulator build only) and checks the timeouts (that
# part about 15 s), the same hang with a wedged device (the run stops at the
# re-probe), the bundle in a fresh copy of the tree: 5.5 min on 2 busy cores.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
if [ $# -ne 1 ]; then
    echo "usage: dev/gpu_check/gpu_check.sh OUTDIR" >&2
    exit 2
fi
mkdir -p "$1" || exit 2
OUT=$(cd "$1" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
PY=${PYTHON:-python3}
TOOLS="$PY dev/gpu_check/gpu_check_tools.py"
SUM=$OUT/summary.txt
TLOG=$OUT/train.log
JLOG=$OUT/train_json.log
: >"$SUM"
: >"$TLOG"
: >"$JLOG"
FAILS=0 DEVICE_NAME=
MODEL_ROW="model: median per-op error <= 25% (B=4)"
GEMM_ROW="gemm costs per shape (cuBLASLt, timed)"

# The configuration, the rehearsal's substitutions and the helpers (row,
# want, in_budget, finish, section, train).
# shellcheck source=dev/gpu_check/gpu_check_lib.sh
. dev/gpu_check/gpu_check_lib.sh

# ---- 0-1: machine and build ----
trap 'rm -rf "$WORK"; [ -n "$CLK_PID" ] && [ "$CLK_PID" != none ] && kill "$CLK_PID" 2>/dev/null' EXIT
if [ "$REHEARSAL" = 1 ]; then echo "rehearsal: no GPU, no nvidia-smi" >"$OUT/nvidia-smi.txt"
else { nvidia-smi; nvcc --version || /usr/local/cuda/bin/nvcc --version; } >"$OUT/nvidia-smi.txt" 2>&1; fi
# train_gpt opens libcublasLt and libnccl (distributed/) by soname when first
# used (kernels/cuda_libs.h), from the toolkit. Where the toolkit lacks one but
# Python's nvidia wheel has it, use the wheel's (LD_LIBRARY_PATH, which dlopen
# reads). A library that cannot be opened fails the first row that makes a
# cuda backend (the kernels) or NCCL ranks, naming the library and dlerror's reason.
: >"$OUT/build.log"
wheel_lib cublasLt nvidia.cublas
wheel_lib nccl nvidia.nccl
if [ "$REHEARSAL" = 1 ] && [ -z "$BUNDLE" ]; then
    # the binaries as built here (CPU-only or CUDA: both run --device cpu)
    if ./train_gpt --help >/dev/null 2>>"$OUT/build.log"; then
        rehearse "build (make -j16, sm_80 + sm_90a)" "./train_gpt as built here"
    else
        row "build (make -j16, sm_80 + sm_90a)" FAIL "(rehearsal) ./train_gpt does not start: build it (make)"
        finish
    fi
elif [ -f "$BUNDLE" ]; then
    # Built on the CPU machine by dev/gpu_check/gpu_bundle.sh (nothing can be
    # installed on the lent GPU image): unpack, put the binaries where the rest
    # of this script runs them, and their libraries on the loader's path.
    # OpenMPI's stay out when this machine has its own (mpirun needs its
    # own libmpi).
    # build/ is git-ignored: a tree copied to the GPU machine has none
    mkdir -p "$WORK/bundle" build
    if tar -xJf "$BUNDLE" -C "$WORK/bundle" >>"$OUT/build.log" 2>&1 &&
        cp "$WORK/bundle/bin/train_gpt" ./train_gpt &&
        cp "$WORK/bundle/bin/check_kernels" build/check_kernels; then
        libs="$WORK/bundle/lib"
        ldconfig -p 2>/dev/null | grep -q 'libmpi.so.40 ' || libs="$libs:$WORK/bundle/lib-mpi"
        export LD_LIBRARY_PATH="$libs:${LD_LIBRARY_PATH:-}"
        cat "$WORK/bundle/MANIFEST" >>"$OUT/build.log"
        ldd ./train_gpt >>"$OUT/build.log" 2>&1
        want=$(awk '$1 == "sources" {print $2}' "$WORK/bundle/MANIFEST")
        have=$(dev/gpu_check/gpu_bundle.sh --source-hash)
        if [ "$want" != "$have" ]; then
            row "build (prebuilt gpu_bundle, sm_80 + sm_90a)" FAIL "stale bundle: built from sources $want, these are $have; rerun dev/gpu_check/gpu_bundle.sh"
            finish
        elif ./train_gpt --help >/dev/null 2>>"$OUT/build.log"; then
            row "build (prebuilt gpu_bundle, sm_80 + sm_90a)" PASS "$(head -1 "$WORK/bundle/MANIFEST"); sources $want; $(grep '^nvcc' "$WORK/bundle/MANIFEST")"
        else
            row "build (prebuilt gpu_bundle, sm_80 + sm_90a)" FAIL "./train_gpt does not start: $(grep -m1 -E 'not found|error' "$OUT/build.log")"
            finish
        fi
    else
        row "build (prebuilt gpu_bundle, sm_80 + sm_90a)" FAIL "cannot unpack $BUNDLE: see build.log"
        finish
    fi
elif make -j16 all build/check_kernels >>"$OUT/build.log" 2>&1 &&
    grep -q "built with the CUDA backend" "$OUT/build.log"; then
    row "build (make -j16, sm_80 + sm_90a)" PASS "$(grep -m1 'built with' "$OUT/build.log")"
else
    row "build (make -j16, sm_80 + sm_90a)" FAIL "see build.log: $(grep -m1 -E 'error|built' "$OUT/build.log"); without the project's Debian libraries, build with dev/gpu_check/gpu_bundle.sh on the CPU machine and carry gpu_bundle"
    finish
fi

# a rehearsed bundle in a fresh tree: its checker (the stand-in's emulator)
if [ "$REHEARSAL" = 1 ] && [ -n "$BUNDLE" ] && [ ! -x "$CK" ]; then CK=./build/check_kernels; fi
# ---- 1b: the device answers (before anything is spent on it) ----
PROBE_ROW="device probe (nvidia-smi -L, one kernel)"
if probe "$OUT/build.log"; then
    DEVICE_NAME=$(grep -m1 '^GPU 0' "$OUT/build.log" | cut -c1-80)
    row "$PROBE_ROW" PASS "$DEVICE_NAME"
else
    row "$PROBE_ROW" FAIL "$PROBE_WHY (see build.log)"
    finish
fi

# ---- 2-3: kernels ----
# Every check_kernels process runs under gpu (a limit each) with its output
# straight into OUT/kernels.log or OUT/timing.log: a hang loses its own
# process, not the logs or the sections after it.
KLOG=$OUT/kernels.log
: >"$KLOG"
if want kernels; then
if [ "$REHEARSAL" = 1 ] && [ ! -x "$CK" ]; then
    rehearse "check_kernels (fp32 1e-5, bf16 2e-2)" "no $CK (make build/check_kernels_emu)"
    rehearse "check_kernels, GELU epilogues (FUSE_GELU=1)" "no $CK (make build/check_kernels_emu)"
else
# shellcheck disable=SC2086 # CHECK_ARGS: flags, split on purpose
gpu checks "$KLOG" "$CK" "${QUICK[@]}" --dtype both --skip-variants "$UNMEASURED" ${CHECK_ARGS:-}
rc=$?
detail="$(grep -E '^[0-9]+ checks' "$KLOG" | tail -1); $(grep -m1 'seed' "$KLOG")"
bad=$(grep '^FAIL' "$KLOG" | awk '{print $2}' | sort -u | head -5 | tr '\n' ' ')
[ -n "$bad" ] && detail="$detail; failing: $bad"
if [ $rc -eq 0 ]; then row "check_kernels (fp32 1e-5, bf16 2e-2)" PASS "$detail"
elif [ $rc -eq 124 ]; then row "check_kernels (fp32 1e-5, bf16 2e-2)" FAIL "$(why $rc checks) after $(grep -c -E '^(PASS|FAIL)' "$KLOG") checks; last: $(grep -E '^(PASS|FAIL)' "$KLOG" | tail -1 | cut -c1-80)"
else row "check_kernels (fp32 1e-5, bf16 2e-2)" FAIL "$(why $rc checks): $detail $(grep -v '^=== gpu_check' "$KLOG" | tail -1)"; fi
# the GELU epilogues (off by default): the fused ops against the cpu and the
# unfused gpu ops, and which GELU cuBLASLt computes (from the fp32 rows)
echo "=== TRAIN_GPT_FUSE_GELU=1 $CK${QUICK[*]:+ ${QUICK[*]}} --dtype both --only fused" >>"$KLOG"
l0=$(lines "$KLOG")
TRAIN_GPT_FUSE_GELU=1 gpu gelu "$KLOG" "$CK" "${QUICK[@]}" --dtype both --only fused
rc=$?
since "$KLOG" "$l0" >"$WORK/gelu.log"
gelu=$($TOOLS gelu "$WORK/gelu.log")
grc=$?
fails=$(grep '^FAIL' "$WORK/gelu.log" | awk '{print $2}' | sort -u | tr '\n' ' ')
if [ $rc -eq 0 ] && [ $grc -eq 0 ]; then row "check_kernels, GELU epilogues (FUSE_GELU=1)" PASS "$gelu"
else row "check_kernels, GELU epilogues (FUSE_GELU=1)" FAIL "$(why $rc gelu): $gelu${fails:+; failing: $fails}"; fi
# the unmeasured variants alone (see UNMEASURED), at the small shapes and 124M's
echo "=== $CK${QUICK[*]:+ ${QUICK[*]}} --dtype bf16 --only attention --only-variants $UNMEASURED" >>"$KLOG"
l0=$(lines "$KLOG")
gpu unmeasured "$KLOG" "$CK" "${QUICK[@]}" --dtype bf16 --only attention --only-variants "$UNMEASURED"
rc=$?
since "$KLOG" "$l0" >"$WORK/unmeasured.log"
n=$(grep -cE "^(${UNMEASURED//,/|}) " "$WORK/unmeasured.log") # their table rows
skipped=$(grep -c "skipped (this GPU cannot run it)" "$WORK/unmeasured.log")
if [ $rc -eq 0 ] && [ "$n" -gt 0 ]; then
    row "attention, unmeasured variants (bf16)" PASS "$UNMEASURED: $n rows within 2e-2, deterministic"
elif [ $rc -eq 0 ] && [ "$skipped" -gt 0 ]; then
    row "attention, unmeasured variants (bf16)" info "$UNMEASURED: skipped, not a compute capability 9.0 GPU"
else
    UNMEASURED_OK=0
    row "attention, unmeasured variants (bf16)" FAIL "$(why $rc unmeasured) ($n rows): $(grep -m2 -E '^FAIL|error|abort' "$WORK/unmeasured.log" | tr '\n' ' '); left out of the sweep"
fi
fi # the checks
if [ "$REHEARSAL" = 1 ]; then
    for r in "check_kernels --time" "encoder_backward on text (bf16, ms)" "target: head <= 1.3x its three gemms" \
        "$MODEL_ROW" "fc GELU fused vs unfused (bf16, ms)" "gemm algorithms: timed vs heuristic (bf16)"; do
        rehearse "$r" "check_kernels --time needs a GPU"
    done
else
clocks_start # the speed rows start here
: >"$OUT/timing.log"
# encoder_backward on text too (check_timing.c): the bundle's 64K ids of
# tokenized tinyshakespeare, else the shard `make data` writes
text=$WORK/bundle/text_tokens.bin
[ -f "$text" ] || text=datasets/tinyshakespeare_train_000000.bin
[ -f "$text" ] || text=
# TRAIN_GPT_GEMM_VERBOSE=1: gemm.cu prints each cuBLASLt choice with its
# timed median ("gemm algo:" lines, stderr, printed before the rows are
# timed): the gemm costs per shape that section 6a turns into gemm_cost lines
# shellcheck disable=SC2086 # CHECK_ARGS: flags, split on purpose
CHECK_TIMING_TOKENS=$text TRAIN_GPT_GEMM_VERBOSE=1 gpu time "$OUT/timing.log" ./build/check_kernels --time --dtype both ${CHECK_ARGS:-}
rc=$?
if [ $rc -eq 0 ]; then
    row "check_kernels --time" PASS "per-op medians in timing.log (bf16 table below)"
    if [ -n "$text" ]; then
        row "encoder_backward on text (bf16, ms)" info "$(awk '/^encoder_backward on text/ {on = 1} on && /^encoder_backward text B/ {printf "%s%s %s ms (longest run %s of %s)", (n++ ? "; " : ""), $3, $4, $7, $9}' "$OUT/timing.log" | tail -c 300)"
    else
        row "encoder_backward on text (bf16, ms)" SKIP "no token file (make data, or the bundle's text_tokens.bin)"
    fi
    if d=$($TOOLS headx "$OUT/timing.log" 1.3); then row "target: head <= 1.3x its three gemms" PASS "$d"
    else row "target: head <= 1.3x its three gemms" FAIL "$d"; fi
    # the static model's predictions for these rows (made by gpu_bundle.sh on
    # the CPU machine; python3 only here), appended to timing.log
    # and the row that fails when the model is wrong: the median per-op
    # |predicted - measured| / measured over the rows both have
    pred=$(pred_file)
    if [ -f "$pred" ]; then
        cp "$OUT/timing.log" "$WORK/timing_time.log"
        $PY dev/cuda_perf_model.py --compare "$WORK/timing_time.log" \
            --predictions "$pred" --max-error 0.25 >"$WORK/compare.log" 2>&1
        mrc=$?
        { echo; cat "$WORK/compare.log"; } >>"$OUT/timing.log"
        d=$(grep -m1 '^median |error|' "$WORK/compare.log")
        if [ $mrc -eq 0 ]; then row "$MODEL_ROW" PASS "$d (B=4 rows; table in timing.log)"
        else row "$MODEL_ROW" FAIL "${d:-$(tail -1 "$WORK/compare.log")} (B=4 rows; table in timing.log)"; fi
    else
        row "$MODEL_ROW" SKIP "no perf_model.json in the bundle (dev/gpu_check/gpu_bundle.sh writes it)"
    fi
else
    row "check_kernels --time" FAIL "$(why $rc time): $(grep -v '^=== gpu_check' "$OUT/timing.log" | tail -1)"
    row "$MODEL_ROW" SKIP "check_kernels --time failed: nothing to compare"
fi
if [ "$FIRST" = 1 ]; then
    for r in "fc GELU fused vs unfused (bf16, ms)" "gemm algorithms: timed vs heuristic (bf16)"; do
        row "$r" SKIP "not in the first-run plan (GPU_CHECK_PLAN=first)"
    done
else
# the bf16 table twice more, appended: GELU epilogues on; heuristic algorithms
for v in TRAIN_GPT_FUSE_GELU=1 TRAIN_GPT_GEMM_TUNE=0; do
    echo "=== $v ./build/check_kernels --time --dtype bf16" >>"$OUT/timing.log"
    l0=$(lines "$OUT/timing.log")
    gpu time "$OUT/timing.log" env "$v" ./build/check_kernels --time --dtype bf16
    since "$OUT/timing.log" "$l0" >"$WORK/timing_$v.log"
done
T=$OUT/timing.log F=$WORK/timing_TRAIN_GPT_FUSE_GELU=1.log H=$WORK/timing_TRAIN_GPT_GEMM_TUNE=0.log
ms() { $TOOLS table "$1" bf16 "$2" 2>/dev/null; }
if a=$(ms "$T" "matmul_gelu_forward fc") && b=$(ms "$F" "matmul_gelu_forward fc") &&
    c=$(ms "$T" "matmul_backward_gelu fc proj") && d=$(ms "$F" "matmul_backward_gelu fc proj"); then
    row "fc GELU fused vs unfused (bf16, ms)" info "forward $b vs $a; backward $d vs $c (fused vs unfused, B=4 T=1024)"
else row "fc GELU fused vs unfused (bf16, ms)" FAIL "timing rows missing: see timing.log"; fi
tuned=0 heur=0 n=0
for r in "matmul_forward qkv" "matmul_backward qkv" "matmul_forward attn proj" "matmul_backward attn proj" \
    "matmul_forward fc" "matmul_backward fc" "matmul_forward fc proj" "matmul_backward fc proj" \
    "its logits gemm" "its dx gemm" "its dwte gemm"; do
    if a=$(ms "$T" "$r") && b=$(ms "$H" "$r"); then
        tuned=$(awk -v x="$tuned" -v y="$a" 'BEGIN {print x + y}')
        heur=$(awk -v x="$heur" -v y="$b" 'BEGIN {print x + y}')
        n=$((n + 1))
    fi
done
if [ "$n" -gt 0 ]; then
    row "gemm algorithms: timed vs heuristic (bf16)" info "$(awk -v t="$tuned" -v h="$heur" -v n="$n" 'BEGIN {printf "%d gemm rows: %.3f ms timed vs %.3f ms heuristic (%.3fx)", n, t, h, t / h}')"
else row "gemm algorithms: timed vs heuristic (bf16)" FAIL "timing rows missing: see timing.log"; fi
fi # the --time repeats
fi # --time
torch_reference # the vendor's kernels on the same card, when torch has CUDA
fi # kernels

# ---- 3b: the bf16 attention kernels' variants (check_kernels --sweep) ----
# Every compiled variant (tile sizes, warps, stages, launch bounds;
# kernels/cuda/attention_mma.cu) at 124M's attention shape (B = 4, 16, 64)
# and XL's (B = 8): checked against the default variants' output, then
# timed. Its tables go to the end of timing.log, its verdicts in the
# summary. Planned at about 45 s (mostly host-side checks of the outputs).
if want sweep; then
t0=$SECONDS
if [ "$REHEARSAL" = 1 ] && [ ! -x "$CK" ]; then
    rehearse "attention variants sweep (bf16)" "no $CK (make build/check_kernels_emu)"
else
clocks_start
skip=()
[ "$UNMEASURED_OK" = 1 ] || skip=(--skip-variants "$UNMEASURED")
l0=$(lines "$OUT/timing.log")
gpu sweep "$OUT/timing.log" "$CK" --sweep "${QUICK[@]}" --dtype bf16 "${SWEEP_ARGS[@]}" "${skip[@]}"
rc=$?
since "$OUT/timing.log" "$l0" >"$WORK/sweep.log" # for the perf section's pick
best=$(grep '^sweep best' "$WORK/sweep.log" | sed 's/^sweep best //' | tr '\n' ';')
if [ $rc -eq 0 ]; then
    row "attention variants sweep (bf16)" PASS "$((SECONDS - t0)) s; fastest correct: $best"
else
    row "attention variants sweep (bf16)" FAIL "$(why $rc sweep) after $((SECONDS - t0)) s: $(grep -m3 -E 'FAIL|error' "$WORK/sweep.log" | tr '\n' ' ')${best:+; fastest correct before: $best}"
fi
fi # the emulator
fi # sweep

# ---- data ----
# shellcheck disable=SC2015 # either shard failing is the FAIL row
$TOOLS shard "$WORK/small_000.bin" "$SHARD_SMALL" 1000 1 &&
    $TOOLS shard "$WORK/full_000.bin" "$SHARD_FULL" "$VFULL" 2 || {
    row "random-token shards" FAIL "dev/gpu_check/gpu_check_tools.py shard failed"
    finish
}
SMALL=(--train-data "$WORK/small_*.bin" --vocab 1000 --val-every 0)
FULL=(--train-data "$WORK/full_*.bin" --vocab "$VFULL" --val-every 0)

# ---- 6a: the first speed rows: 124M at recompute 0 and its op profile ----
# (the rest of section 6 runs after the correctness sections below: in the
# first-run plan these two come right after the sweep)
# perf NAME L C NH B RECOMPUTE [extra args]: one throughput row; it starts
# only while its whole limit (TRAIN_KIND's, default train) fits the budget
perf() {
    local name=$1 L=$2 C=$3 NH=$4 B=$5 r=$6
    shift 6
    if ! in_budget "${TRAIN_KIND:-train}"; then
        row "$name" SKIP "$(budget_note)"
        return 1
    fi
    if train "$name" --device "$DEV" --dtype "${DT[bf16]}" --layers "$L" --channels "$C" --heads "$NH" \
        --seq-len "$PT" --batch "$B" --steps "$PSTEPS" --recompute "$r" "${FULL[@]}" "${PEAK[@]}" "$@"; then
        local d
        if d=$($TOOLS stats "$WORK/$name.jsonl" 2 "$L" "$C" "$VFULL" "$PT"); then row "$name" PASS "$d"
        else row "$name" FAIL "$d"; fi
    else
        row "$name" FAIL "train_gpt failed: $(section "$name" | grep -m1 -iE 'error|out of|gpu_check: stopped')"
        return 1
    fi
}
# The speed targets' 124M configuration: the largest power-of-two micro-batch, at most
# 64, that fits at recompute 0 -- by --plan's max_B for mode 0 (default
# budget: free device memory minus its margin).
B124=16
if want perf && in_budget; then
    clocks_start
    echo "=== plan124: ./train_gpt --plan (124M)" >>"$TLOG"
    l0=$(lines "$TLOG")
    gpu plan "$TLOG" ./train_gpt --plan --device "$DEV" --dtype "${DT[bf16]}" --layers 12 --channels "$C124" \
        --heads "$NH124" --seq-len "$PT" --batch 1 "${FULL[@]}"
    m=$(since "$TLOG" "$l0" | awk '$1 == "0" {print $NF}')
    if [ "${m:-0}" -ge 1 ] 2>/dev/null; then
        B124=1
        while [ $((B124 * 2)) -le "$BMAX" ] && [ $((B124 * 2)) -le "$m" ]; do B124=$((B124 * 2)); done
    fi
fi
N124="124M B$B124"
if want perf; then
perf "$N124 recompute 0" 12 "$C124" "$NH124" "$B124" 0
# where a 124M step's time goes: --profile-ops (every op synced and timed
# alone, first step left out), 4 steps; the whole table is in train.log, the
# five largest rows go in the summary
pname="$N124 recompute 0, op profile"
if ! in_budget train; then
    row "$pname" SKIP "$(budget_note)"
elif train "$pname" --device "$DEV" --dtype "${DT[bf16]}" --layers 12 --channels "$C124" --heads "$NH124" \
    --seq-len "$PT" --batch "$B124" --steps 4 --recompute 0 "${FULL[@]}" --profile-ops; then
    top=$(section "$pname" | awk '/^op profile/ {on = 1; next}
        on && !hdr {hdr = 1; next}
        on && n < 5 && !/all timed ops/ {
            name = $1; for (i = 2; i <= NF - 3; i++) name = name " " $i
            printf "%s%s %s ms %s", (n ? "; " : ""), name, $(NF - 1), $NF; n++ }')
    row "$pname" PASS "per step, largest first: $top"
else
    row "$pname" FAIL "train_gpt failed: $(section "$pname" | grep -m1 -iE 'error|out of|gpu_check: stopped')"
fi
# gemm costs per shape: the timed cuBLASLt choices of --time (B=4) and of
# the op profile (its B; --profile-ops prints them), as gemm_cost lines
# (dev/perf_model/gemm_costs.py) at the end of timing.log, which then is a
# table for `dev/cuda_perf_model.py --gemm-costs timing.log`
if [ "$REHEARSAL" = 1 ]; then
    rehearse "$GEMM_ROW" "the cpu backend prints no cuBLASLt choices"
elif $PY dev/perf_model/gemm_costs.py "$OUT/timing.log" "$TLOG" >"$WORK/gemm_costs.txt"; then
    { echo "=== gemm costs per shape (dev/perf_model/gemm_costs.py)"; cat "$WORK/gemm_costs.txt"; } >>"$OUT/timing.log"
    row "$GEMM_ROW" info "$(wc -l <"$WORK/gemm_costs.txt") timed shapes: gemm_cost lines at the end of timing.log (cuda_perf_model.py --gemm-costs timing.log)"
else
    row "$GEMM_ROW" FAIL "no timed \"gemm algo:\" line in timing.log or train.log"
fi
fi # perf, its first rows

# ---- 6b: compute-sanitizer on small attention shapes ----
# memcheck (out-of-bounds and misaligned accesses), racecheck (shared-memory
# hazards) and synccheck (barriers in divergent code): what the emulator
# models away. One process each under its limit; a tool that ran out of
# time is reported (info), not failed: the sanitizers slow kernels 10-100x.
if want sanitizer; then
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
sargs=("${SAN_ARGS[@]}")
[ "$UNMEASURED_OK" = 1 ] || sargs+=(--skip-variants "$UNMEASURED")
for tool in memcheck racecheck synccheck; do
    name="compute-sanitizer $tool (attention, small shapes)"
    if [ "$REHEARSAL" != 1 ] && [ -z "$SAN" ]; then
        row "$name" SKIP "no compute-sanitizer on this machine"
        continue
    fi
    if [ "$REHEARSAL" = 1 ] && [ ! -x "$CK" ]; then
        rehearse "$name" "no $CK (make build/check_kernels_emu)"
        continue
    fi
    cmd=("$SAN" --tool "$tool" --error-exitcode 9 --print-limit 20 "$CK" "${sargs[@]}")
    [ "$REHEARSAL" = 1 ] && cmd=("$CK" "${sargs[@]}") # the emulator has no sanitizer: the path only
    # the rehearsal's stand-in for a tool that refuses this device
    [ "${GPU_CHECK_REHEARSAL_SAN_REFUSE:-}" = 1 ] && cmd=(sh -c 'echo "========= Error: Device not supported"; exit 1')
    echo "=== sanitizer $tool: ${cmd[*]}" >>"$KLOG"
    l0=$(lines "$KLOG")
    gpu sanitizer "$KLOG" "${cmd[@]}"
    rc=$?
    since "$KLOG" "$l0" >"$WORK/san.log"
    summ=$(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$WORK/san.log")
    case $rc in
    0) row "$name" PASS "${summ:-no errors}; $(grep -E '^[0-9]+ checks' "$WORK/san.log" | tail -1)" ;;
    124) row "$name" info "incomplete: $(why $rc sanitizer); $(grep -c -E '^(PASS|FAIL)' "$WORK/san.log") checks ran, no error reported before" ;;
    125) row "$name" SKIP "$(budget_note)" ;;
    *)
        # a tool that will not run here (e.g. "Device not supported") says
        # nothing about the kernels: SKIP, with its words
        refused=$(grep -m1 -i -E 'not supported|unsupported|not available' "$WORK/san.log" | cut -c1-100)
        if [ -n "$refused" ] && ! grep -q -E '========= (Invalid|Race|Barrier)' "$WORK/san.log"; then
            row "$name" SKIP "the tool refused: $refused"
            continue
        fi
        row "$name" FAIL "exit $rc: ${summ:-see kernels.log}; $(grep -m1 -E '========= (Invalid|Race|Barrier|Error)' "$WORK/san.log" | cut -c1-120)" ;;
    esac
done
fi # sanitizer

# ---- 8b: the Llama family on the GPU (in the first-run plan) ----
# shellcheck source=dev/gpu_check/gpu_check_llama.sh
. dev/gpu_check/gpu_check_llama.sh

# ---- 4: GPU fp32 vs cpu, one step ----
if want grads; then
for shape in "2 64 4 64" "2 40 4 65"; do
    read -r L C NH T <<<"$shape"
    S=(--layers "$L" --channels "$C" --heads "$NH" --seq-len "$T" --batch 4 --steps 1)
    name="L$L C$C NH$NH T$T"
    if train "cpu_$C" --device cpu --dtype fp32 "${S[@]}" "${SMALL[@]}" --dump-grads "$WORK/cpu_$C.bin" &&
        train "gpu32_$C" --device "$DEV" --dtype fp32 "${S[@]}" "${SMALL[@]}" --dump-grads "$WORK/gpu32_$C.bin"; then
        d=$($TOOLS grads "$WORK/cpu_$C.bin" "$WORK/gpu32_$C.bin" "$L" "$C" 1000 "$T" 1e-4)
        if [ $? -eq 0 ]; then row "fp32 GPU vs cpu grads ($name)" PASS "$d"
        else row "fp32 GPU vs cpu grads ($name)" FAIL "$d"; fi
        if train "gpu16_$C" --device "$DEV" --dtype "${DT[bf16]}" "${S[@]}" "${SMALL[@]}" --dump-grads "$WORK/gpu16_$C.bin"; then
            d=$($TOOLS grads "$WORK/cpu_$C.bin" "$WORK/gpu16_$C.bin" "$L" "$C" 1000 "$T" 1e-4 | sed 's/: PASS$//; s/: FAIL$//')
            row "bf16 GPU vs cpu grads ($name)" info "$d"
        else row "bf16 GPU vs cpu grads ($name)" FAIL "train_gpt failed: see train.log"; fi
    else
        row "fp32 GPU vs cpu grads ($name)" FAIL "train_gpt failed: see train.log"
    fi
done
fi # grads

# ---- 5: recompute modes, bitwise ----
if want recompute; then
S=(--layers 4 --channels 128 --heads 4 --seq-len 256 --batch 4 --steps 3 --device "$DEV")
[ "$REHEARSAL" = 1 ] && S=(--layers 2 --channels 64 --heads 4 --seq-len 64 --batch 2 --steps 3 --device cpu)
# two processes compared: the heuristic's algorithms (timed ones may differ)
export TRAIN_GPT_GEMM_TUNE=0
for dt in bf16 fp32; do
    if ! train "r0_$dt" "${S[@]}" --dtype "${DT[$dt]}" --recompute 0 "${FULL[@]}" --dump-grads "$WORK/r0_$dt.bin"; then
        row "recompute modes bitwise ($dt)" FAIL "train_gpt --recompute 0 failed: see train.log"
        continue
    fi
    for m in 1 2 selective; do
        name="recompute $m vs 0 bitwise ($dt, L4 C128 T256)"
        if train "r${m}_$dt" "${S[@]}" --dtype "${DT[$dt]}" --recompute $m "${FULL[@]}" --dump-grads "$WORK/r${m}_$dt.bin"; then
            d=$($TOOLS same "$WORK/r0_$dt.jsonl" "$WORK/r${m}_$dt.jsonl")
            same=$?
            if cmp -s "$WORK/r0_$dt.bin" "$WORK/r${m}_$dt.bin" && [ $same -eq 0 ]; then
                row "$name" PASS "step-1 grads identical; $d"
            else
                row "$name" FAIL "grads: $(cmp "$WORK/r0_$dt.bin" "$WORK/r${m}_$dt.bin" 2>&1 | head -1); $d"
            fi
        else
            row "$name" FAIL "train_gpt failed: see train.log"
        fi
    done
done
unset TRAIN_GPT_GEMM_TUNE
# bf16, timed algorithms: bitwise whenever both runs chose the same ones
name="recompute 1 vs 0 bitwise (bf16, timed gemm algos)"
if TRAIN_GPT_GEMM_VERBOSE=1 train rt0 "${S[@]}" --dtype "${DT[bf16]}" --recompute 0 "${FULL[@]}" --dump-grads "$WORK/rt0.bin" &&
    TRAIN_GPT_GEMM_VERBOSE=1 train rt1 "${S[@]}" --dtype "${DT[bf16]}" --recompute 1 "${FULL[@]}" --dump-grads "$WORK/rt1.bin"; then
    section rt0 >"$WORK/rt0.txt"
    section rt1 >"$WORK/rt1.txt"
    a=$($TOOLS algos "$WORK/rt0.txt" "$WORK/rt1.txt")
    arc=$?
    d=$($TOOLS same "$WORK/rt0.jsonl" "$WORK/rt1.jsonl")
    same=$?
    if cmp -s "$WORK/rt0.bin" "$WORK/rt1.bin" && [ $same -eq 0 ]; then row "$name" PASS "$a; step-1 grads identical; $d"
    elif [ $arc -ne 0 ]; then row "$name" info "$a: bits not comparable"
    else row "$name" FAIL "$a, yet grads: $(cmp "$WORK/rt0.bin" "$WORK/rt1.bin" 2>&1 | head -1); $d"; fi
else
    row "$name" FAIL "train_gpt failed: see train.log"
fi
# the GELU epilogues: one fc product writes GELU and its input, so 1 vs 0
# stays bitwise; selective keeps the unfused forward (its backward rebuilds
# GELU from the stored input) and may differ from 0 in the last bits
export TRAIN_GPT_GEMM_TUNE=0 TRAIN_GPT_FUSE_GELU=1
if train rf0 "${S[@]}" --dtype "${DT[bf16]}" --recompute 0 "${FULL[@]}" --dump-grads "$WORK/rf0.bin"; then
    for m in 1 selective; do
        name="recompute $m vs 0 bitwise (bf16, FUSE_GELU=1)"
        if train "rf$m" "${S[@]}" --dtype "${DT[bf16]}" --recompute $m "${FULL[@]}" --dump-grads "$WORK/rf$m.bin"; then
            d=$($TOOLS same "$WORK/rf0.jsonl" "$WORK/rf$m.jsonl")
            same=$?
            if cmp -s "$WORK/rf0.bin" "$WORK/rf$m.bin" && [ $same -eq 0 ]; then row "$name" PASS "step-1 grads identical; $d"
            elif [ $m = selective ]; then row "$name" info "differ, as documented: $d"
            else row "$name" FAIL "grads: $(cmp "$WORK/rf0.bin" "$WORK/rf$m.bin" 2>&1 | head -1); $d"; fi
        else
            row "$name" FAIL "train_gpt failed: see train.log"
        fi
    done
else
    row "recompute 1 vs 0 bitwise (bf16, FUSE_GELU=1)" FAIL "train_gpt --recompute 0 failed: see train.log"
fi
unset TRAIN_GPT_GEMM_TUNE TRAIN_GPT_FUSE_GELU
fi # recompute

# ---- 5b: the NCCL path, one rank (mpirun -np 1) against the plain run ----
if want nccl; then
if ! command -v mpirun >/dev/null; then
    row "NCCL 1-rank vs plain run (bitwise)" SKIP "no mpirun on this machine (OpenMPI's openmpi-bin)"
else
    echo "=== dist: dev/gpu_check/gpu_check_dist.sh" >>"$TLOG"
    l0=$(lines "$TLOG")
    DEVICE=$DEV TRAIN_GPT_GEMM_TUNE=0 STEPS=5 gpu dist "$TLOG" dev/gpu_check/gpu_check_dist.sh
    rc=$?
    since "$TLOG" "$l0" >"$WORK/dist.log"
    if [ $rc -eq 0 ]; then
        row "NCCL 1-rank vs plain run (bitwise)" PASS "$(grep -m1 -iE 'identical|PASS' "$WORK/dist.log")"
    else
        row "NCCL 1-rank vs plain run (bitwise)" FAIL "$(why $rc dist): see train.log's dist block: $(grep -v '^=== gpu_check' "$WORK/dist.log" | tail -1)"
    fi
fi
fi # nccl

# ---- 6: throughput, MFU, memory (after 6a's first rows) ----
# Every row from here on starts only while its whole limit fits the budget.
if want perf; then
perf "$N124 recompute 1" 12 "$C124" "$NH124" "$B124" 1
XL_INIT=()
if TRAIN_KIND=xl perf "XL (48L C1600) B8 recompute 0" 48 "$CXL" "$NHXL" "$BXL" 0 --save "$WORK/xl.bin"; then
    XL_INIT=(--init-from "$WORK/xl.bin") # saves the 1.5B-parameter host init (~30 s) below
fi
TRAIN_KIND=xl perf "XL (48L C1600) B8 recompute 1" 48 "$CXL" "$NHXL" "$BXL" 1 "${XL_INIT[@]}"
if [ "$FIRST" = 1 ]; then
    for r in "$N124 recompute 0, heuristic gemm algos" "$N124 recompute 0, FUSE_GELU=1" \
        "$N124 recompute 1, one-chunk head"; do
        row "$r" SKIP "not in the first-run plan (GPU_CHECK_PLAN=first)"
    done
else
# the same step with the heuristic's gemm algorithms, and with the GELU
# epilogues: tokens/s ratios to the default run
TRAIN_GPT_GEMM_TUNE=0 perf "$N124 recompute 0, heuristic gemm algos" 12 "$C124" "$NH124" "$B124" 0
TRAIN_GPT_FUSE_GELU=1 perf "$N124 recompute 0, FUSE_GELU=1" 12 "$C124" "$NH124" "$B124" 0
# the sweep's fastest correct attention variants at this shape (section 3b's
# "sweep best" line for C124 and B124), when they are not the ones shipped:
# the variants to promote by moving them into kernels/cuda/ (no flag picks
# one for a run; dev/cuda/attention_variants.cu says how)
pick=$($TOOLS sweeppick "$WORK/sweep.log" "$B124" "$C124" "$SWEEP_SHAPE")
row "124M r0: sweep's pick to promote" info "$pick"
for v in "heuristic gemm algos" "FUSE_GELU=1"; do
    if [ -f "$WORK/$N124 recompute 0.jsonl" ] && [ -f "$WORK/$N124 recompute 0, $v.jsonl" ]; then
        row "124M r0: $v / default" info "$($TOOLS ratio "$WORK/$N124 recompute 0.jsonl" "$WORK/$N124 recompute 0, $v.jsonl" 2 0)"
    fi
done
# the loss head in one chunk of all B*T tokens: the chunked head's cost
perf "$N124 recompute 1, one-chunk head" 12 "$C124" "$NH124" "$B124" 1 --loss-chunk $((B124 * PT))
fi # the side rows

# the speed targets, from the runs above (medians after 2 warm-up steps)
target() { # NAME TOOL-ARGS...: a row from gpu_check_tools.py's verdict
    local name=$1 d
    shift
    if d=$($TOOLS "$@"); then row "$name" PASS "$d"; else row "$name" FAIL "$d"; fi
}
if [ -f "$WORK/$N124 recompute 0.jsonl" ]; then
    target "target: 124M recompute 0 MFU >= 45%" mfu "$WORK/$N124 recompute 0.jsonl" 2 12 "$C124" "$VFULL" "$PT" "$TGT_MFU"
fi
if [ -f "$WORK/XL (48L C1600) B8 recompute 0.jsonl" ] && [ -f "$WORK/XL (48L C1600) B8 recompute 1.jsonl" ]; then
    target "target: XL recompute 1 / 0 throughput >= 0.78" ratio "$WORK/XL (48L C1600) B8 recompute 0.jsonl" \
        "$WORK/XL (48L C1600) B8 recompute 1.jsonl" 2 "$TGT_XL"
fi
if [ -f "$WORK/$N124 recompute 1.jsonl" ] && [ -f "$WORK/$N124 recompute 1, one-chunk head.jsonl" ]; then
    target "target: 124M chunked head costs <= 3% (r1)" ratio "$WORK/$N124 recompute 1, one-chunk head.jsonl" \
        "$WORK/$N124 recompute 1.jsonl" 2 "$TGT_HEAD"
fi
model_rows # the measurements against the model's printed ranges
fi # perf

# ---- 7: XL, the largest micro-batch ----
if want xlmax; then
PLAN=(--device "$DEV" --dtype "${DT[bf16]}" --layers 48 --channels "$CXL" --heads "$NHXL" --seq-len "$PT" --batch "$BXL"
    "${FULL[@]}" "${PLAN_XL[@]}")
if in_budget plan; then
    echo "=== plan: ./train_gpt --plan ${PLAN[*]}" >>"$TLOG"
    l0=$(lines "$TLOG")
    gpu plan "$TLOG" ./train_gpt --plan "${PLAN[@]}"
    since "$TLOG" "$l0" >"$WORK/plan.txt"
fi
for r in 0 1; do
    name="XL max micro-batch (recompute $r)"
    if ! in_budget xl; then
        row "$name" SKIP "$(budget_note)"
        continue
    fi
    B=$(awk -v m="$r" '$1 == m {print $NF}' "$WORK/plan.txt")
    if ! [ "${B:-0}" -gt 0 ] 2>/dev/null; then
        row "$name" FAIL "train_gpt --plan gave no max_B: $(tail -1 "$WORK/plan.txt")"
        continue
    fi
    X=(--device "$DEV" --dtype "${DT[bf16]}" --layers 48 --channels "$CXL" --heads "$NHXL" --seq-len "$PT"
        --steps 1 --recompute "$r" "${FULL[@]}" "${XL_INIT[@]}")
    if ! TRAIN_KIND=xl train "xlmax${r}_$B" "${X[@]}" --batch "$B"; then
        row "$name" FAIL "--plan's max_B=$B failed: $(section "xlmax${r}_$B" | grep -m1 -iE 'error|out of')"
        continue
    fi
    mem=$($TOOLS mem "$WORK/xlmax${r}_$B.jsonl")
    b=$((B + 1))
    if TRAIN_KIND=xl train "xlmax${r}_$b" "${X[@]}" --batch "$b" --memory-budget 1000000GiB; then
        note="B=$b ran too (inside --plan's 512 MiB margin)"
        verdict=PASS
    elif section "xlmax${r}_$b" | grep -q "out of cuda memory"; then
        note="B=$b stopped with the out-of-memory message"
        verdict=PASS
    else
        note="B=$b failed without the out-of-memory message: see train.log"
        verdict=FAIL
    fi
    row "$name" $verdict "--plan max_B=$B ran ($mem); $note"
done
fi # xlmax

# ---- 8: 124M at recompute 1, the largest micro-batch: chunked head vs one chunk ----
if want head; then
name="124M max micro-batch, chunked vs one-chunk head"
if in_budget xl; then
    P124=(--device "$DEV" --dtype "${DT[bf16]}" --layers 12 --channels "$C124" --heads "$NH124" --seq-len "$PT"
        --batch 8 "${FULL[@]}" "${PLAN_124[@]}")
    l0=$(lines "$TLOG")
    gpu plan "$TLOG" ./train_gpt --plan "${P124[@]}"
    since "$TLOG" "$l0" >"$WORK/plan124.txt"
    l0=$(lines "$TLOG")
    gpu plan "$TLOG" ./train_gpt --plan "${P124[@]}" --loss-chunk 1073741824
    since "$TLOG" "$l0" >"$WORK/plan124u.txt"
    Bc=$(awk '$1 == 1 {print $NF}' "$WORK/plan124.txt")
    Bu=$(awk '$1 == 1 {print $NF}' "$WORK/plan124u.txt")
    M124=(--device "$DEV" --dtype "${DT[bf16]}" --layers 12 --channels "$C124" --heads "$NH124" --seq-len "$PT"
        --steps 1 --recompute 1 "${FULL[@]}")
    # both heads at their planned largest micro-batch, one step each: the
    # one-chunk head's (B*T, Vp) fp32 logits are the point of the comparison
    # (the one-chunk run is the baseline, reported either way: its (B*T, Vp)
    # logits matmul passes 2^31 elements, which cuBLASLt may refuse)
    if [ "${Bc:-0}" -gt 0 ] 2>/dev/null && [ "${Bu:-0}" -gt 0 ] 2>/dev/null &&
        TRAIN_KIND=xl train "m124_$Bc" "${M124[@]}" --batch "$Bc"; then
        if TRAIN_KIND=xl train "m124u_$Bu" "${M124[@]}" --batch "$Bu" --loss-chunk 1073741824; then
            base="one-chunk B=$Bu ran"
        else
            base="one-chunk B=$Bu failed: $(section "m124u_$Bu" | grep -m1 -iE 'error|out of')"
        fi
        ratio=$(awk -v c="$Bc" -v u="$Bu" 'BEGIN {printf "%.2f", c / u}')
        verdict=$(awk -v c="$Bc" -v u="$Bu" -v t="$TGT_HEADB" 'BEGIN {print (c >= t * u) ? "PASS" : "FAIL"}')
        row "$name" "$verdict" "max_B $Bc chunked (ran; $($TOOLS mem "$WORK/m124_$Bc.jsonl")) vs $Bu one-chunk ($base): ${ratio}x (target >= ${TGT_HEADB}x)"
    else
        row "$name" FAIL "plan gave chunked $Bc / one-chunk $Bu, or the chunked run failed: see train.log"
    fi
else
    row "$name" SKIP "time budget ($BUDGET s) used"
fi
fi # head

# ---- 9: --recompute auto by measured time, against the fixed modes ----
if want auto; then
for shape in 12 48; do
    name="auto vs fixed modes ($([ $shape = 12 ] && echo 124M || echo XL), B8)"
    if ! in_budget auto; then
        row "$name" SKIP "$(budget_note)"
        continue
    fi
    extra=("${FULL[@]}")
    [ $shape = 48 ] && extra+=("${XL_INIT[@]}")
    echo "=== bench_auto L=$shape: dev/bench/bench_auto.sh gpu ${extra[*]}" >>"$TLOG"
    l0=$(lines "$TLOG")
    LAYERS=$shape NBUDGETS=2 STEPS=$([ $shape = 12 ] && echo 4 || echo 3) REPEATS=1 \
        MODES=selective gpu auto "$TLOG" dev/bench/bench_auto.sh gpu "${extra[@]}"
    rc=$?
    since "$TLOG" "$l0" >"$WORK/auto$shape.txt"
    rows=$(grep -E "^\| $shape \| [0-9]" "$WORK/auto$shape.txt" | head -2)
    if [ $rc -ne 0 ] || [ -z "$rows" ]; then
        row "$name" FAIL "bench_auto.sh failed ($(why $rc auto)): $(grep -v '^=== gpu_check' "$WORK/auto$shape.txt" | tail -1)"
        continue
    fi
    while IFS='|' read -r _ _ budget fits tps ratio step _; do
        verdict=$(awk -v r="$ratio" -v t="$TGT_AUTO" 'BEGIN {print (r + 0 >= t) ? "PASS" : "FAIL"}')
        row "$name, budget${budget% }MiB" "$verdict" "auto/best fixed${ratio% } (target >= $TGT_AUTO); fixed:${fits% }; auto${tps% } tok/s; step ms predicted/measured${step% }"
    done <<<"$rows"
done
fi # auto

# ---- 11: the host tier (--offload): bitwise, memory, throughput, long context ----
# shellcheck source=dev/gpu_check/gpu_check_offload.sh
[ -n "${XL_INIT+x}" ] || XL_INIT=()
. dev/gpu_check/gpu_check_offload.sh

# ---- 10: a seeded sample: the same tokens from the cpu and the GPU in fp32 ----
# The draws depend only on the logits (model/sample.h); fp32 logits from the
# two backends differ in rounding, which moves a draw only when it lands
# within that rounding of a boundary, so the same text is expected.
if want sample; then
name="seeded sample, cpu vs GPU fp32 (4 x 64 tokens)"
if ! in_budget train; then
    row "$name" SKIP "$(budget_note)"
else
G=(--init-from "$WORK/sample.bin" --seq-len 64 --generate 64 --seed 7 --top-k 40 --top-p 0.95
    --num-samples 4 --prompt "1 2 3")
if train sample_model --device cpu --dtype fp32 --layers 2 --channels 64 --heads 4 --seq-len 64 \
    --batch 4 --steps 20 "${SMALL[@]}" --save "$WORK/sample.bin" &&
    timeout -k 5 "${LIMIT[train]}" ./train_gpt --device cpu "${G[@]}" >"$WORK/sample_cpu.txt" 2>>"$TLOG" &&
    timeout -k 5 "${LIMIT[train]}" ./train_gpt --device "$DEV" --dtype fp32 "${G[@]}" >"$WORK/sample_gpu.txt" 2>>"$TLOG"; then
    { echo "=== sample: cpu"; cat "$WORK/sample_cpu.txt"; echo "=== sample: GPU"; cat "$WORK/sample_gpu.txt"; } >>"$TLOG"
    if cmp -s "$WORK/sample_cpu.txt" "$WORK/sample_gpu.txt"; then
        row "$name" PASS "identical text"
    else
        row "$name" FAIL "differ: $(cmp "$WORK/sample_cpu.txt" "$WORK/sample_gpu.txt" | head -1)"
    fi
else
    row "$name" FAIL "train_gpt failed or timed out: see train.log"
fi
fi # the budget
fi # sample

finish
