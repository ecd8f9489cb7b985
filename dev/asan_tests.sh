#!/usr/bin/env bash
# dev/asan_tests.sh — run make test-asan's tests: every test of the suite but
# those tests/asan_skip.txt names, the independent ones JOBS at a time, then
# the measuring ones (TEST_SERIAL) one at a time, as make test runs them.
#
#   dev/asan_tests.sh RUN_TESTS JOBS 'TEST_SERIAL globs' [run_tests args...]
#
# (the Makefile's test-asan runs it with ASAN_ENV set). Why a script: the list
# of tests to run is the suite's own (`RUN_TESTS --list`) less the skip list,
# so a new test runs under ASan until a coverage check shows it need not; and
# Criterion 2.4.1 aborts on a --filter '@(...)' of many alternatives
# (extglobmatch.c:87, handle_operator: Assertion `tmp' failed, or a crash:
# 99 alternatives pass, 100 do not), so the tests run in chunks of CHUNK
# tests (default 12), each chunk one `RUN_TESTS --jobs 1`, JOBS at a time
# (xargs -P): one queue for the cores, no core idle at each chunk's end.
# Each chunk's output is printed when it ends.
#
# Exit 0 when every chunk passed, 1 when a test failed, 2 on a bad call or a
# skip list entry that is not SUITE/* or SUITE/TEST.
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: dev/asan_tests.sh RUN_TESTS JOBS 'TEST_SERIAL globs' [args]" >&2; exit 2; }
run=$1 jobs=$2 serial=$3
shift 3
skip_file=${ASAN_SKIP:-tests/asan_skip.txt}
chunk=${ASAN_CHUNK:-12}
[ -x "$run" ] || { echo "asan_tests: $run: not built" >&2; exit 2; }
[ -r "$skip_file" ] || { echo "asan_tests: $skip_file: cannot read" >&2; exit 2; }

# the suite: `run_tests --list` prints "suite: N tests", then a "├── test" line a test
mapfile -t all < <("$run" --list | awk '/^[A-Za-z0-9_]+: [0-9]+ tests?$/ {s = $1; sub(":", "", s); next}
                                      {print s "/" $NF}')
[ ${#all[@]} -gt 0 ] || { echo "asan_tests: $run --list: no tests" >&2; exit 2; }

declare -A skip=()
while read -r e; do
    e=${e%%#*}; e=${e//[[:space:]]/}
    [ -n "$e" ] || continue
    [[ "$e" =~ ^[A-Za-z0-9_]+/([A-Za-z0-9_]+|\*)$ ]] ||
        { echo "asan_tests: $skip_file: '$e': not SUITE/* or SUITE/TEST" >&2; exit 2; }
    skip[$e]=1
done < "$skip_file"

# shellcheck disable=SC2053 # TEST_SERIAL's entries are globs
is_serial() { local g; for g in $serial; do [[ "$1" == $g ]] && return 0; done; return 1; }

# the tests that run, the independent ones apart from the serial ones
declare -A used=()
par=() ser=()
for t in "${all[@]}"; do
    s=${t%%/*}
    if [ -n "${skip[$s/*]:-}" ]; then used[$s/*]=1; continue; fi
    if [ -n "${skip[$t]:-}" ]; then used[$t]=1; continue; fi
    if is_serial "$t"; then ser+=("$t"); else par+=("$t"); fi
done
for e in "${!skip[@]}"; do
    [ -n "${used[$e]:-}" ] ||
        echo "asan_tests: note: $skip_file: '$e' matches no test (renamed or removed?)" >&2
done
echo "asan_tests: $((${#par[@]} + ${#ser[@]})) of ${#all[@]} tests ($skip_file skips the rest):" \
     "${#ser[@]} of them serial, at most $chunk a run"

logs=$(mktemp -d "${TMPDIR:-/tmp}/asan_tests.XXXXXX")
: > "$logs/rc"
trap 'rm -rf "$logs"' EXIT
# one line a chunk: "@(a|b|...)". Dealt round-robin, chunk c gets tests c,
# c + K, c + 2K, ... (K chunks): a suite's tests spread over the chunks, so
# no chunk holds a slow suite whole and the last chunks end together (in
# alphabetical chunks one chunk held zero3eval and zero3run and ran alone).
chunks() {
    local k=$(( ($# + chunk - 1) / chunk )) c i line
    for ((c = 1; c <= k; c++)); do
        line=
        for ((i = c; i <= $#; i += k)); do line+="${line:+|}${!i}"; done
        echo "@($line)"
    done
}
# the caller's run_tests arguments, for the chunks that xargs starts
extra=
[ $# -eq 0 ] || extra=$(printf '%q ' "$@")
run_chunk() {  # run_chunk LOG FILTER: its output printed whole when it ends
    local log=$1 f=$2 rc=0
    eval "set -- $extra"
    "$run" --jobs 1 --filter "$f" "$@" > "$log" 2>&1 || rc=$?
    cat "$log"
    echo "$rc $f" >> "$logs/rc"
}
export -f run_chunk
export run logs extra
: > "$logs/par" && : > "$logs/ser"
[ ${#par[@]} -eq 0 ] || chunks "${par[@]}" > "$logs/par"
[ ${#ser[@]} -eq 0 ] || chunks "${ser[@]}" > "$logs/ser"
awk -v d="$logs" '{printf "%s/p%03d.log%c%s%c", d, NR, 0, $0, 0}' "$logs/par" |
    xargs -0 -n 2 -P "$jobs" bash -c 'run_chunk "$@"' run_chunk_
k=0
while read -r f; do
    k=$((k + 1)); run_chunk "$logs/s$k.log" "$f"
done < "$logs/ser"
k=$((k + $(wc -l < "$logs/par")))

# Criterion's line per run: "Synthesis: Tested: N | Passing: N | Failing: N | Crashing: N"
cat "$logs"/*.log | sed 's/\x1b\[[0-9;]*m//g' | awk -v runs="$k" '
    /Synthesis: Tested:/ {for (i = 1; i <= NF; i++) {
        if ($i == "Tested:") t += $(i + 1); if ($i == "Passing:") p += $(i + 1)
        if ($i == "Failing:") f += $(i + 1); if ($i == "Crashing:") c += $(i + 1)}}
    END {printf "asan_tests: %d runs: Tested: %d | Passing: %d | Failing: %d | Crashing: %d\n", runs, t, p, f, c}'
bad=$(awk '$1 != 0' "$logs/rc")
[ -z "$bad" ] || { echo "asan_tests: runs that failed (exit, filter):"; echo "$bad"; exit 1; }
[ "$(wc -l < "$logs/rc")" = "$k" ] || { echo "asan_tests: $((k - $(wc -l < "$logs/rc"))) runs gave no status" >&2; exit 1; }
