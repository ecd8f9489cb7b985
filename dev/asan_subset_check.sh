#!/usr/bin/env bash
# dev/asan_subset_check.sh — is `make test-asan`'s subset (the suite less the
# tests tests/asan_skip.txt names) enough? ASan and UBSan see only the product
# code a test runs, so the subset must run every product source line that the
# whole suite runs. This builds the
# suite with gcc --coverage (CPU-only, -Og for exact line numbers) in
# build/cov, runs each test on its own with its counters in a folder of its
# own (GCOV_PREFIX=build/cov/units/SUITE/@TEST; the programs the test starts
# inherit it), and then dev/asan_subset_cov.py compares, file by file and
# function by function, the lines the whole suite covered with the lines the
# subset's tests covered (dev/notes/suite-speed.md has the numbers).
# Exit 0 when the subset covers every line the suite does, 1 otherwise (the
# missing lines and the tests that cover them, cheapest first, are printed),
# 2 when it cannot run.
#
#   make train_gpt tokenize        # some tests run the plain programs
#   dev/asan_subset_check.sh            # build, run every test, compare (about
#                                       # 40 min on 2 shared cores)
#   dev/asan_subset_check.sh --compare  # only compare again (after editing the skip list)
#   COV_SUITES="decode schedule" dev/asan_subset_check.sh --run   # (re)run some suites
#
# The environment is make test-asan's (the Makefile's ASAN_ENV) without the
# sanitizers: the suite's inputs (TINYSHAKESPEARE, TRAIN_GPT_GPT2_DIR) as for
# make test. COV_JOBS tests run at a time (default: the machine's cores); the
# TEST_SERIAL suites run after them, one test at a time.
set -euo pipefail
cd "$(dirname "$0")/.."
cov=build/cov
out=$cov/units
mode=${1:-all}
if [ "$mode" != --compare ]; then
    # as under make test-asan, the tests that run the plain ./train_gpt and
    # ./tokenize (mpirun's ranks, scripts/) run them uninstrumented: ASan sees
    # none of it, and neither does this count
    for p in train_gpt tokenize; do
        [ -x "$p" ] || { echo "asan_subset_check: ./$p not built (make train_gpt tokenize): the suite runs it" >&2; exit 2; }
    done
    jobs=${COV_JOBS:-$(nproc)}
    # WERROR off: -Og warns (maybe-uninitialized) where -O3 does not; the
    # product's own build keeps -Werror.
    make -j"$jobs" NVCC= BUILD=$cov SANITIZE="--coverage -Og" \
        $cov/train_gpt $cov/tokenize $cov/test/train_gpt $cov/test/tokenize $cov/run_tests
    # the same flags as the build: another make of build/cov rewrites its flags
    # stamp, and the next build recompiles everything (new .gcno stamps)
    serial=$(make -s --no-print-directory NVCC= BUILD=$cov SANITIZE="--coverage -Og" print-test-serial)
    mkdir -p "$out"
    # `run_tests --list`: "suite: N tests", then one "├── test" line a test
    "$cov/run_tests" --list | awk '/^[A-Za-z0-9_]+: [0-9]+ tests?$/ {s = $1; sub(":", "", s); next}
                                   {print s "/" $NF}' > "$out/tests.txt"
    if [ "$mode" = --run ]; then
        sel=" ${COV_SUITES:?--run needs COV_SUITES} "
    else
        rm -rf "${out:?}"/*/ "$out"/times.txt
        sel=
    fi
    export TRAIN_GPT_BIN=$cov/test/train_gpt TRAIN_GPT_TOKENIZE_BIN=$cov/test/tokenize \
        TRAIN_GPT_PRODUCT_DIR=$cov OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE
    run_one() {  # run_one SUITE/TEST: its counters in $out/SUITE/@TEST, log and wall time beside
        local d="$out/${1%%/*}/@${1#*/}" t0=$SECONDS rc=0
        rm -rf "$d"; mkdir -p "$d"
        GCOV_PREFIX="$PWD/$d" "$cov/run_tests" --jobs 1 --verbose --filter "$1" > "$d.log" 2>&1 || rc=$?
        echo "$1 $((SECONDS - t0)) $rc" >> "$out/times.txt"
    }
    export -f run_one
    export cov out
    is_serial() { local s; for s in $serial; do [[ "$1" == $s ]] && return 0; done; return 1; }
    : > "$out/par.txt"; : > "$out/ser.txt"
    while read -r t; do
        [ -z "$sel" ] || [[ "$sel" == *" ${t%%/*} "* ]] || continue
        if is_serial "$t"; then echo "$t" >> "$out/ser.txt"; else echo "$t" >> "$out/par.txt"; fi
    done < "$out/tests.txt"
    xargs -P "$jobs" -I{} bash -c 'run_one {}' < "$out/par.txt"
    xargs -P 1 -I{} bash -c 'run_one {}' < "$out/ser.txt"
    # A test killed by Criterion's timeout (-Og, a loaded machine) writes no
    # counters: a failed test runs once more, alone. A failure left after
    # that is reported (its code still counted as far as it ran: this is not
    # make test).
    awk '$3 != 0 {print $1}' "$out/times.txt" | sort -u > "$out/retry.txt"
    while read -r t; do run_one "$t"; done < "$out/retry.txt"
    awk '{rc[$1] = $3} END {for (t in rc) if (rc[t] != 0) print "asan_subset_check: " t \
        " failed (exit " rc[t] "): " ENVIRON["out"] "/" t ".log"}' "$out/times.txt" | sed 's|/\([^/]*\)\.log$|/@\1.log|' >&2
fi
python3 dev/asan_subset_cov.py --build "$cov" --units "$out" --skip tests/asan_skip.txt
