#!/usr/bin/env bash
# dev/bench/bench_generate.sh — --generate with and without the KV cache.
#
# usage: dev/bench/bench_generate.sh [REPEATS] [TOKENS] [shape flags...]
# Makes a model file of the shape (default: the README's quick start,
# --layers 4 --channels 256 --heads 4 --seq-len 128, GPT-2 vocabulary) from
# a fresh initialisation (--steps 0 --save; the timings do not depend on the
# weights), then runs `--generate TOKENS` (default 200) with --kv-cache 1
# and 0 alternately REPEATS times (default 5), plus a `--generate 1` of each
# for the start-up (loading, allocating). Prints the median wall time of
# each with its spread (min..max), the tokens' part (median minus the
# start-up's median) and the ratios, uncached / cached.
# Needs ./train_gpt and ./tokenize built, the GPT-2 tokenizer files
# (TRAIN_GPT_GPT2_DIR, as make test) and $TINYSHAKESPEARE (a text to make
# the data shards --save needs).
set -euo pipefail
cd "$(dirname "$0")/../.."
for b in train_gpt tokenize; do
    [ -x ./$b ] || { echo "bench_generate.sh: ./$b not built (run make)" >&2; exit 1; }
done
[ -f "${TINYSHAKESPEARE:-}" ] || { echo "bench_generate.sh: set TINYSHAKESPEARE to a text file" >&2; exit 1; }
reps=${1:-5}
[ $# -gt 0 ] && shift
tokens=${1:-200}
[ $# -gt 0 ] && shift
[ $# -eq 0 ] && set -- --layers 4 --channels 256 --heads 4 --seq-len 128
out=$(mktemp -d /tmp/bench_generate.XXXXXX)
trap 'rm -rf "$out"' EXIT
./tokenize --quiet --out "$out/ts" "$TINYSHAKESPEARE" > /dev/null
./train_gpt "$@" --train-data "$out/ts_train_*.bin" --val-data "$out/ts_val_*.bin" --steps 0 \
    --save "$out/model.bin" > "$out/save.txt" 2>&1 || { cat "$out/save.txt" >&2; exit 1; }

# one timed run: seconds on stdout; the tokens kept for the comparison
run() { # kv n tag
    local t0 t1
    t0=$(date +%s.%N)
    ./train_gpt --init-from "$out/model.bin" --generate "$2" --stop-at-eot 0 --seed 7 \
        --kv-cache "$1" > "$out/$3.txt" 2> "$out/$3.err" || { cat "$out/$3.err" >&2; exit 1; }
    t1=$(date +%s.%N)
    echo "$t0 $t1" | awk '{printf "%.4f\n", $2 - $1}'
}
for r in $(seq "$reps"); do
    for kv in 1 0; do
        run "$kv" "$tokens" "g${kv}_$r" >> "$out/t_g$kv"
        run "$kv" 1 "s${kv}_$r" >> "$out/t_s$kv"
    done
done
cmp -s "$out/g1_1.txt" "$out/g0_1.txt" || { echo "bench_generate.sh: the cached and uncached text differ" >&2; exit 1; }
echo "command: dev/bench/bench_generate.sh $reps $tokens $*   ($(nproc) cores, $(date -u +%F))"
python3 - "$out" "$tokens" <<'PY'
import statistics, sys
d, n = sys.argv[1], int(sys.argv[2])
def load(name):
    return [float(x) for x in open(f"{d}/{name}")]
med = {}
for key, label in (("g1", f"--kv-cache 1, {n} tokens"), ("g0", f"--kv-cache 0, {n} tokens"),
                   ("s1", "--kv-cache 1, start-up (1 token)"), ("s0", "--kv-cache 0, start-up (1 token)")):
    t = load("t_" + key)
    med[key] = statistics.median(t)
    print(f"{label:36} {med[key]:8.3f} s median ({min(t):.3f} .. {max(t):.3f}, {len(t)} runs)")
print(f"whole command, uncached / cached: {med['g0'] / med['g1']:.2f}x")
c, u = med["g1"] - med["s1"], med["g0"] - med["s0"]
print(f"tokens only (median minus start-up): cached {c:.3f} s, uncached {u:.3f} s: {u / c:.2f}x")
PY
