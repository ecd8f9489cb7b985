#!/usr/bin/env bash
# scripts/plot_log.sh — loss curves from train_gpt's --log files.
#
# usage: scripts/plot_log.sh [-o OUT.png] RUN.jsonl [RUN2.jsonl ...]
#
# Draws, with every run overlaid (one colour per file, named by the file):
#   1. train loss (line) and val loss (points) against step;
#   2. the same against tokens seen (each step's tokens = tokens_per_s * ms,
#      summed; a skipped step's tokens count too, as they were read);
#   3. tokens/s against step.
# Reads the step lines ({"step","loss","tokens_per_s","ms",...}) and the val
# lines ({"step","val_loss"}); other lines (the summary, evals) are ignored.
# A resumed run's log holds the steps after the resume once more when the
# run was killed after its last save: the last line for a step wins.
# Writes OUT.png (default: out/loss.png; out/ is git-ignored); with
# PLOT_LOG_DATA=DIR the plotted columns are kept there too (train<k>.dat:
# step tokens loss tok_s; val<k>.dat: step tokens val_loss). Exits 1 with
# a message naming the file when a log cannot be read or holds no step.
set -euo pipefail
out=out/loss.png
if [ "${1:-}" = -o ]; then
    [ $# -ge 2 ] || { echo "plot_log.sh: -o needs a file name" >&2; exit 2; }
    out=$2
    shift 2
fi
[ $# -ge 1 ] || { echo "usage: scripts/plot_log.sh [-o OUT.png] RUN.jsonl [RUN2.jsonl ...]" >&2; exit 2; }
command -v gnuplot > /dev/null || { echo "plot_log.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/plot_log.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$(dirname "$out")"

# One data file per run: "step tokens loss tok_s" (train) and "step tokens
# val_loss" (val).
python3 - "$tmp" "$@" <<'PY'
import json, sys
tmp, logs = sys.argv[1], sys.argv[2:]
for k, path in enumerate(logs):
    train, val = {}, {}
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError as e:
        sys.exit(f"plot_log.sh: {path}: {e.strerror}")
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            j = json.loads(line)
        except ValueError:
            sys.exit(f"plot_log.sh: {path}:{n}: not a JSON line")
        if "loss" in j and "step" in j:
            train[int(j["step"])] = j
        elif "val_loss" in j and "step" in j:
            val[int(j["step"])] = j["val_loss"]
    if not train:
        sys.exit(f"plot_log.sh: {path}: no step lines (is it a train_gpt --log file?)")
    tokens, seen = {}, 0.0
    with open(f"{tmp}/train{k}.dat", "w") as f:
        for s in sorted(train):
            j = train[s]
            seen += j.get("tokens_per_s", 0) * j.get("ms", 0) / 1000.0
            tokens[s] = seen
            f.write(f"{s} {seen:.0f} {j['loss']} {j.get('tokens_per_s', 0)}\n")
    with open(f"{tmp}/val{k}.dat", "w") as f:
        for s in sorted(val):
            t = tokens.get(s, max((v for st, v in tokens.items() if st <= s), default=0))
            f.write(f"{s} {t:.0f} {val[s]}\n")
PY

n=$#
titles=""
for f in "$@"; do titles="$titles $(basename "$f" .jsonl | tr ' ' _)"; done
gnuplot <<GP
set terminal pngcairo size 1500,450 font ",10" noenhanced
set output "$out"
set multiplot layout 1,3 title "train_gpt runs: $(echo $titles)"
names = "$titles"
tr(i) = sprintf("$tmp/train%d.dat", i)
va(i) = sprintf("$tmp/val%d.dat", i)
set grid
set key top right
set xlabel "step"
set ylabel "loss (line: train, points: val)"
plot for [i=0:$((n - 1))] tr(i) using 1:3 with lines lc i+1 title word(names, i+1), \
     for [i=0:$((n - 1))] va(i) using 1:3 with points pt 7 lc i+1 notitle
set xlabel "tokens"
plot for [i=0:$((n - 1))] tr(i) using 2:3 with lines lc i+1 title word(names, i+1), \
     for [i=0:$((n - 1))] va(i) using 2:3 with points pt 7 lc i+1 notitle
set xlabel "step"
set ylabel "tokens/s"
set key bottom right
plot for [i=0:$((n - 1))] tr(i) using 1:4 with lines lc i+1 title word(names, i+1)
unset multiplot
GP
[ -n "${PLOT_LOG_DATA:-}" ] && mkdir -p "$PLOT_LOG_DATA" && cp "$tmp"/*.dat "$PLOT_LOG_DATA"/
echo "wrote $out"
