#!/usr/bin/env bash
# dev/bench/bench_tokenizer_family.sh — tokens/s of Llama 3's tokenizer (and
# tiktoken's) beside GPT-2's, and beside GPT-2's of an earlier commit:
# alternating runs on one core, medians (dev/bench/bench_tokenizer_family.c
# says what is timed: the CPU time of one encode of the whole text, cold
# piece cache, the load not timed).
#
#   dev/bench/bench_tokenizer_family.sh [ROUNDS] [BASE_REV] [NAME...]
#       defaults: 7, cbb3b4c (GPT-2's tokenizer before the family), gpt2 llama3
#
# Each round runs, in turn, base:gpt2 (BASE_REV's data/ and base/ built in a
# temporary folder) and every NAME with this tree's build/cpu objects; one
# process per run. Needs make's build/cpu (make NVCC= BUILD=build/cpu), the
# files in the cache (scripts/fetch_tokenizers.sh) and tinyshakespeare
# ($TINYSHAKESPEARE or the cache).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-7}
BASE=${2:-cbb3b4c}
shift 2 || shift $# || true
NAMES=("$@")
[ ${#NAMES[@]} -gt 0 ] || NAMES=(gpt2 llama3)
B=build/cpu
[ -f $B/data/tokenizer_hf.o ] || { echo "bench_tokenizer_family.sh: build first: make NVCC= BUILD=$B" >&2; exit 1; }
TEXT=${TINYSHAKESPEARE:-$(./tokenize --fetch tinyshakespeare --quiet)}
LIBS=(-lcjson -lpcre2-8 -lutf8proc -lcrypto -lz -lm)
tmp=$(mktemp -d /tmp/bench_tokenizer_family.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -std=gnu11 -I. dev/bench/bench_tokenizer_family.c $B/data/tokenizer*.o $B/data/source.o \
    $B/base/fileio.o $B/base/safefile.o -o "$tmp/bench" "${LIBS[@]}"
mkdir "$tmp/base_src"
git archive "$BASE" data base | tar -x -C "$tmp/base_src"
cc -O3 -std=gnu11 -DBENCH_GPT2_ONLY -I"$tmp/base_src" dev/bench/bench_tokenizer_family.c \
    "$tmp"/base_src/data/tokenizer*.c "$tmp/base_src/data/source.c" "$tmp/base_src/base/fileio.c" \
    "$tmp/base_src/base/safefile.c" -o "$tmp/bench_base" "${LIBS[@]}"
PIN=()
command -v taskset > /dev/null && PIN=(taskset -c 0)
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); ${PIN[*]:-not pinned}; $TEXT; base $BASE"
: > "$tmp/runs"
for r in $(seq "$ROUNDS"); do
    "${PIN[@]}" "$tmp/bench_base" "$TEXT" 1 gpt2 | awk -v r="$r" '/^gpt2 /{print "base:gpt2", $2, $3}' >> "$tmp/runs"
    for n in "${NAMES[@]}"; do
        "${PIN[@]}" "$tmp/bench" "$TEXT" 1 "$n" | awk -v n="$n" '$1 == n {print n, $2, $3}' >> "$tmp/runs"
    done
done
bytes=$(stat -c %s "$TEXT")
printf '%-10s %5s %9s %9s %9s %10s %8s\n' tokenizer runs median min max tokens Mtok/s
for n in base:gpt2 "${NAMES[@]}"; do
    awk -v n="$n" '$1 == n {print $2, $3}' "$tmp/runs" | sort -n | awk -v n="$n" -v b="$bytes" '
        {t[NR] = $1; tok = $2}
        END {m = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2;
             printf "%-10s %5d %9.4f %9.4f %9.4f %10d %8.3f\n", n, NR, m, t[1], t[NR], tok, tok / m / 1e6}'
done
