#!/usr/bin/env bash
# dev/bench/bench_llama_cpu.sh — the Llama block's CPU speed per FLOP
# against GPT-2's, side by side: --model gpt2 (124M) and --model llama-125m
# (C=768, 12 layers, 12 heads, 4 KV heads, FFN 2048, head untied), both
# random init, from the same binary, alternating gpt2, llama, gpt2, ...
#
# usage: dev/bench/bench_llama_cpu.sh [REPEATS] [B T STEPS]
#   REPEATS  pairs of runs (default 5)
#   B T      the micro-batch (default 1 1024); STEPS per run (default 4)
# Per run: the median over steps 2..STEPS of the step's wall ms and of its
# CPU ms (the log's "cpu_ms": all the process's threads), and the run's own
# "GFLOP a step" (model/flops.c, printed at start-up) over them: GFLOP/s
# (wall) and GFLOP per CPU-second. On a shared, loaded machine the wall
# figure follows the other processes' load; the CPU figure follows what the
# step itself did (spin-waits included: OMP_WAIT_POLICY is passed through).
# Reported per model: the median and min..max over runs; then the llama /
# gpt2 ratio of each pair (runs next to each other in time), its median and
# min..max.
# Environment: OMP_NUM_THREADS (default 2), TRAIN_GPT_BIN (default
# ./train_gpt), TRAIN_GPT_TOKENIZE_BIN (default ./tokenize), TINYSHAKESPEARE
# (a text file, tokenized into the runs' data), TRAIN_GPT_GPT2_DIR (the
# tokenizer's files), EXTRA (more train_gpt flags for both models, e.g.
# "--profile-ops").
set -euo pipefail
cd "$(dirname "$0")/../.."
reps=${1:-5}
B=${2:-1}
T=${3:-1024}
steps=${4:-4}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
bin=${TRAIN_GPT_BIN:-./train_gpt}
tok=${TRAIN_GPT_TOKENIZE_BIN:-./tokenize}
[ -x "$bin" ] || { echo "bench_llama_cpu.sh: $bin not built (make, or set TRAIN_GPT_BIN)" >&2; exit 1; }
[ -x "$tok" ] || { echo "bench_llama_cpu.sh: $tok not built (set TRAIN_GPT_TOKENIZE_BIN)" >&2; exit 1; }
[ -f "${TINYSHAKESPEARE:-}" ] || { echo "bench_llama_cpu.sh: set TINYSHAKESPEARE to a text file" >&2; exit 1; }
out=$(mktemp -d /tmp/bench_llama_cpu.XXXXXX)
trap 'rm -rf "$out"' EXIT
"$tok" --quiet --out "$out/ts" "$TINYSHAKESPEARE" > /dev/null
echo "command: dev/bench/bench_llama_cpu.sh $reps $B $T $steps   ($bin, $(nproc) cores," \
    "OMP_NUM_THREADS=$OMP_NUM_THREADS OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset}," \
    "EXTRA='${EXTRA:-}', load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%F %H:%M') UTC)"
for r in $(seq "$reps"); do
    for m in gpt2 llama-125m; do
        # shellcheck disable=SC2086
        "$bin" --model $m --batch "$B" --seq-len "$T" --steps "$steps" --val-every 0 \
            --sample-every 0 --recompute 0 --op-costs flops --train-data "$out/ts_train_*.bin" \
            --log "$out/$m.$r.jsonl" ${EXTRA:-} > "$out/$m.$r.txt" 2>&1 \
            || { cat "$out/$m.$r.txt" >&2; exit 1; }
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" "$reps" "$B" "$T" <<'PY'
import json, re, statistics as st, sys
d, reps, B, T = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
res = {}
for m in ("gpt2", "llama-125m"):
    rows = []
    for r in range(1, reps + 1):
        steps = [json.loads(l) for l in open(f"{d}/{m}.{r}.jsonl")]
        steps = [j for j in steps if "loss" in j and "ms" in j]
        steps = steps[1:] or steps
        txt = open(f"{d}/{m}.{r}.txt").read()
        g = float(re.search(r"speed: ([0-9.e+]+) GFLOP a step", txt).group(1))
        ms = st.median(j["ms"] for j in steps)
        cpu = st.median(j["cpu_ms"] for j in steps)
        rows.append((g, ms, cpu, g / (ms / 1e3), g / (cpu / 1e3)))
    res[m] = rows
    f = lambda i, fmt: (f"{st.median(x[i] for x in rows):{fmt}} "
                        f"({min(x[i] for x in rows):{fmt}}..{max(x[i] for x in rows):{fmt}})")
    print(f"{m:11} B={B} T={T}: {rows[0][0]:.4g} GFLOP a step | step {f(1, '.0f')} ms | "
          f"cpu {f(2, '.0f')} ms | {f(3, '.1f')} GFLOP/s | {f(4, '.1f')} GFLOP/CPU-s")
for i, name in ((3, "GFLOP/s"), (4, "GFLOP/CPU-s")):
    q = [l[i] / g[i] for l, g in zip(res["llama-125m"], res["gpt2"])]
    print(f"llama/gpt2 {name:12} per pair: median {st.median(q):.3f} ({min(q):.3f}..{max(q):.3f})"
          f"  [{', '.join(f'{x:.3f}' for x in q)}]")
PY
