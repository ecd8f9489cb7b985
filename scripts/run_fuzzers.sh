#!/usr/bin/env bash
# scripts/run_fuzzers.sh SECONDS — build the libFuzzer targets (make fuzz)
# and run each for SECONDS (default 30), one after another. Seeds come from
# fuzz/corpus/<target>/; what a run adds is kept in build/fuzz/corpus/<target>
# so a later, longer run continues from it. A crash, leak, sanitizer report
# or timeout leaves its input in build/fuzz/artifacts/ and makes the script
# exit non-zero. Needs clang with libFuzzer (Debian: clang, libclang-rt-dev).
#
#   scripts/run_fuzzers.sh 30          # what CI runs: ~4 minutes in all (8 targets)
#   scripts/run_fuzzers.sh 3600        # an hour each, to look harder
#   build/fuzz/fuzz_shard build/fuzz/artifacts/crash-...   # replay one input
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
make -s fuzz
mkdir -p build/fuzz/artifacts
status=0
for src in fuzz/fuzz_*.c; do
    name=$(basename "$src" .c)
    bin=build/fuzz/$name
    work=build/fuzz/corpus/$name
    mkdir -p "$work"
    echo "== $name: ${secs}s"
    if ! "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
            -artifact_prefix=build/fuzz/artifacts/"$name"- "$work" "fuzz/corpus/$name" \
            > "build/fuzz/$name.log" 2>&1; then
        echo "$name: FAILED (see build/fuzz/$name.log and build/fuzz/artifacts/)"
        tail -30 "build/fuzz/$name.log"
        status=1
    else
        grep -E "stat::number_of_executed_units|cov:" "build/fuzz/$name.log" | tail -2
    fi
done
exit $status
