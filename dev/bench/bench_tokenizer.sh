#!/usr/bin/env bash
# dev/bench/bench_tokenizer.sh — ./tokenize throughput on one core.
#
#   dev/bench/bench_tokenizer.sh [COPIES] [RUNS]      (defaults 20 and 5)
#
# Times the whole program, `taskset -c 0 ./tokenize --quiet ...` (vocabulary
# load with sha256, reading, pre-tokenizing, BPE, spooling, writing shards),
# RUNS times per input, and prints medians. Inputs, from tinyshakespeare
# (found by ./tokenize --fetch tinyshakespeare: $TINYSHAKESPEARE, the cache, a download):
#   empty   no text: the fixed cost (vocabulary load), subtracted below
#   x1      the file once, 1.1 MB: nearly every word is new to the piece cache
#   xCOPIES the file COPIES times: after the first copy every piece is cached
# MB/s = input MB (10^6 bytes) / (median time - median empty time).
set -euo pipefail
cd "$(dirname "$0")/../.."
COPIES=${1:-20}
RUNS=${2:-5}
TEXT=$(./tokenize --fetch tinyshakespeare --quiet)
[ -f "$TEXT" ] || { echo "bench_tokenizer: no tinyshakespeare text (set TINYSHAKESPEARE)" >&2; exit 1; }
[ -x ./tokenize ] || { echo "bench_tokenizer: ./tokenize is not built (make tokenize)" >&2; exit 1; }
PIN=()
command -v taskset >/dev/null && PIN=(taskset -c 0)

tmp=$(mktemp -d /tmp/bench_tokenizer.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
: > "$tmp/empty.txt"
cp "$TEXT" "$tmp/x1.txt"
for _ in $(seq "$COPIES"); do cat "$TEXT"; done > "$tmp/xN.txt"

# median wall seconds of RUNS runs on one input
median_time() {
    local t=()
    for _ in $(seq "$RUNS"); do
        local a b
        a=$(date +%s%N)
        "${PIN[@]}" ./tokenize --quiet --overwrite --out "$tmp/out" "$1"
        b=$(date +%s%N)
        t+=("$(( b - a ))")
    done
    printf '%s\n' "${t[@]}" | sort -n | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.4f\n", m/1e9}'
}

echo "tokenize throughput, one core (${PIN[*]:-not pinned}), median of $RUNS runs; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
t0=$(median_time "$tmp/empty.txt")
printf '%-8s %10s %9s %9s\n' input MB seconds MB/s
printf '%-8s %10s %9s %9s\n' empty 0 "$t0" "-"
for name in x1 xN; do
    f=$tmp/$name.txt
    bytes=$(stat -c %s "$f")
    t=$(median_time "$f")
    label=$name; [ "$name" = xN ] && label=x$COPIES
    awk -v n="$label" -v b="$bytes" -v t="$t" -v t0="$t0" \
        'BEGIN { printf "%-8s %10.1f %9.4f %9.1f\n", n, b/1e6, t, b/1e6/(t-t0) }'
done
