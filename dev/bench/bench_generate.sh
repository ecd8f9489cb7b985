#!/usr/bin/env bash
# dev/bench/bench_generate.sh — --generate with and without the KV cache.
#
# usage: dev/bench/bench_generate.sh [REPEATS] [TOKENS] [shape flags...]
# Makes a model file of the shape (default: the README's quick start,
# --layers 4 --channels 256 --heads 4 --seq-len 128, GPT-2 vocabulary) from
# a fresh initialisation (--steps 0 --save; the timings do not depend on the
# weights), then runs `--generate TOKENS` (default 200) with --kv-cache 1
# and 0 alternately REPEATS times (default 5), plus a `--generate 1` of each
# for the start-up (loading, allocating). Prints the median wall and CPU
# time of each with its spread (min..max), the tokens' part (median minus
# the start-up's median), the ratios uncached / cached, and the median of
# each repeat's own ratio (neighbouring runs share the machine's load).
# GEN_FLAGS (environment): more flags for the --generate runs, e.g.
# GEN_FLAGS='--threads 1' on a machine other jobs share (a decode step is
# many small parallel regions, each a wait for a descheduled thread there).
# Needs ./train_gpt and ./tokenize built, the GPT-2 tokenizer files
# (TRAIN_GPT_GPT2_DIR, as make test) and $TINYSHAKESPEARE (a text to make
# the data shards --save needs).
set -euo pipefail
GEN_FLAGS=${GEN_FLAGS:-}
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

# one timed run: "wall user+sys" seconds on stdout (the CPU time moves less
# than the wall time when other jobs share the cores); its text is kept
run() { # kv n tag
    local TIMEFORMAT='%R %U %S'
    { time ./train_gpt --init-from "$out/model.bin" --generate "$2" --stop-at-eot 0 --seed 7 \
        --kv-cache "$1" $GEN_FLAGS > "$out/$3.txt" 2> "$out/$3.err"; } 2> "$out/$3.time" \
        || { cat "$out/$3.err" >&2; exit 1; }
    awk '{printf "%s %.3f\n", $1, $2 + $3}' "$out/$3.time"
}
for r in $(seq "$reps"); do
    for kv in 1 0; do
        run "$kv" "$tokens" "g${kv}_$r" >> "$out/t_g$kv"
        run "$kv" 1 "s${kv}_$r" >> "$out/t_s$kv"
    done
done
cmp -s "$out/g1_1.txt" "$out/g0_1.txt" || { echo "bench_generate.sh: the cached and uncached text differ" >&2; exit 1; }
echo "command: ${GEN_FLAGS:+GEN_FLAGS='$GEN_FLAGS' }dev/bench/bench_generate.sh $reps $tokens $*   ($(nproc) cores, $(date -u +%F))"
python3 - "$out" "$tokens" <<'PY'
import statistics, sys
d, n = sys.argv[1], int(sys.argv[2])
def load(name, col):
    return [float(line.split()[col]) for line in open(f"{d}/{name}")]
keys = (("g1", f"--kv-cache 1, {n} tokens"), ("g0", f"--kv-cache 0, {n} tokens"),
        ("s1", "--kv-cache 1, start-up (1 token)"), ("s0", "--kv-cache 0, start-up (1 token)"))
med = {}
for col, what in ((0, "wall"), (1, "cpu (user+sys)")):
    print(f"{what}:")
    for key, label in keys:
        t = load("t_" + key, col)
        med[key, col] = statistics.median(t)
        print(f"  {label:34} {med[key, col]:8.3f} s median ({min(t):.3f} .. {max(t):.3f}, {len(t)} runs)")
    c, u = med["g1", col] - med["s1", col], med["g0", col] - med["s0", col]
    print(f"  whole command, uncached / cached: {med['g0', col] / med['g1', col]:.2f}x; tokens only"
          f" (minus start-up): {u:.3f} / {c:.3f} s = {u / c:.2f}x")
# each repeat's uncached and cached runs are neighbours in time: their ratio
# shares most of the load the machine had then
pairs = [u / c for u, c in zip(load("t_g0", 0), load("t_g1", 0))]
print(f"per-repeat wall ratio uncached / cached: median {statistics.median(pairs):.2f}x "
      f"({min(pairs):.2f} .. {max(pairs):.2f})")
PY
