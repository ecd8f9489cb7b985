#!/usr/bin/env bash
# dev/bench/bench_tokenize_jsonl.sh — ./tokenize --jsonl against plain text, per byte of text.
#
#   dev/bench/bench_tokenize_jsonl.sh [COPIES] [RUNS]      (defaults 10 and 5)
#
# The same text three ways, from tinyshakespeare (./tokenize --fetch
# tinyshakespeare) repeated COPIES times:
#   plain   the text, --split-blank-lines (a document after each "\n\n")
#   jsonl   one {"text": ...} line per such document (JSON-escaped)
#   gzip    that jsonl, gzip -6
# The three must give the same shards (cmp; else exit 1). Each is timed RUNS
# times, the three alternating within each round (so drift hits all alike),
# pinned to one core (taskset), with the vocabulary's fixed cost included
# alike. Prints per input the median wall seconds, min..max, and MB/s of
# text (10^6 bytes of the plain text, the same for all three).
set -euo pipefail
cd "$(dirname "$0")/../.."
COPIES=${1:-10}
RUNS=${2:-5}
TEXT=$(./tokenize --fetch tinyshakespeare --quiet)
[ -x ./tokenize ] || { echo "bench_tokenize_jsonl: ./tokenize is not built (make tokenize)" >&2; exit 1; }
PIN=()
command -v taskset >/dev/null && PIN=(taskset -c 0)
tmp=$(mktemp -d /tmp/bench_tokenize_jsonl.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for _ in $(seq "$COPIES"); do cat "$TEXT"; done > "$tmp/plain.txt"
python3 - "$tmp/plain.txt" "$tmp/docs.jsonl" <<'PY'
import json, sys
text = open(sys.argv[1], encoding="utf-8").read()
docs, start = [], 0
while True:  # as --split-blank-lines: the "\n\n" stays with the document before it
    k = text.find("\n\n", start)
    if k < 0:
        docs.append(text[start:])
        break
    docs.append(text[start:k + 2])
    start = k + 2
with open(sys.argv[2], "w", encoding="utf-8") as f:
    for d in docs:
        f.write(json.dumps({"text": d}) + "\n")
PY
gzip -6 -k -c "$tmp/docs.jsonl" > "$tmp/docs.jsonl.gz"
bytes=$(stat -c %s "$tmp/plain.txt")
run() { # NAME ARGS...: one timed run, nanoseconds on stdout
    local name=$1 a b
    shift
    a=$(date +%s%N)
    "${PIN[@]}" ./tokenize --quiet --overwrite --val-fraction 0 --out "$tmp/$name" "$@"
    b=$(date +%s%N)
    echo $(( b - a ))
}
: > "$tmp/times"
for r in $(seq "$RUNS"); do
    echo "plain $(run plain --split-blank-lines "$tmp/plain.txt")" >> "$tmp/times"
    echo "jsonl $(run jsonl --jsonl "$tmp/docs.jsonl")" >> "$tmp/times"
    echo "gzip $(run gzip --jsonl "$tmp/docs.jsonl.gz")" >> "$tmp/times"
done
for n in jsonl gzip; do
    cmp -s "$tmp/plain_train_000000.bin" "$tmp/${n}_train_000000.bin" ||
        { echo "bench_tokenize_jsonl: $n's shard differs from plain text's" >&2; exit 1; }
done
echo "text: $bytes bytes (tinyshakespeare x$COPIES), $RUNS runs each, alternating; same shards (cmp)"
for n in plain jsonl gzip; do
    grep "^$n " "$tmp/times" | awk '{print $2}' | sort -n | awk -v n="$n" -v B="$bytes" '
        {v[NR] = $1} END {
            m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf "%-6s median %.3f s (min %.3f, max %.3f)  %.2f MB/s of text\n",
                   n, m / 1e9, v[1] / 1e9, v[NR] / 1e9, B / 1e6 / (m / 1e9)
        }'
done
