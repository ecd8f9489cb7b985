#!/usr/bin/env bash
# dev/run_fuzzers.sh SECONDS — build the libFuzzer targets (make fuzz)
# and run each for SECONDS (default 30), FUZZ_JOBS at a time (default: the
# machine's cores; each target is one process on one core, so N at a time
# gives each the same SECONDS in 1/N of the wall time). Seeds come from
# tests/fuzz/corpus/<target>/; what a run adds is kept in build/fuzz/corpus/<target>
# so a later, longer run continues from it. A crash, leak, sanitizer report
# or timeout leaves its input in build/fuzz/artifacts/ and makes the script
# exit non-zero. Needs clang with libFuzzer (Debian: clang, libclang-rt-dev).
#
#   dev/run_fuzzers.sh 30          # what CI runs: 9 targets, ~2.5 minutes on 2 cores
#   dev/run_fuzzers.sh 3600        # an hour each, to look harder
#   build/fuzz/fuzz_shard build/fuzz/artifacts/crash-...   # replay one input
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
jobs=${FUZZ_JOBS:-$(nproc)}
make -s -j"$jobs" fuzz
mkdir -p build/fuzz/artifacts

# one target: its log in build/fuzz/NAME.log, exit status 0 when clean
fuzz_one() {
    local name=$1 bin=build/fuzz/$1 work=build/fuzz/corpus/$1
    mkdir -p "$work"
    "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix=build/fuzz/artifacts/"$name"- "$work" "tests/fuzz/corpus/$name" \
        > "build/fuzz/$name.log" 2>&1
}

names=()
for src in tests/fuzz/fuzz_*.c; do names+=("$(basename "$src" .c)"); done
status=0
for ((i = 0; i < ${#names[@]}; i += jobs)); do
    batch=("${names[@]:i:jobs}")
    pids=()
    for name in "${batch[@]}"; do
        echo "== $name: ${secs}s"
        fuzz_one "$name" &
        pids+=($!)
    done
    # report in the batch's order, whatever order they end in
    for k in "${!batch[@]}"; do
        name=${batch[$k]}
        if ! wait "${pids[$k]}"; then
            echo "$name: FAILED (see build/fuzz/$name.log and build/fuzz/artifacts/)"
            tail -30 "build/fuzz/$name.log"
            status=1
        else
            echo "$name: $(grep -E "stat::number_of_executed_units|cov:" "build/fuzz/$name.log" | tail -2 | tr '\n' ' ')"
        fi
    done
done
exit $status
