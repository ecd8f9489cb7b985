#!/usr/bin/env bash
# dev/bench/check_llmc_compat.sh LLMC_DIR — this project's token shards and fp32
# model file run through llm.c's own CPU trainer (LLMC_DIR/train_gpt2.c, a
# checkout of https://github.com/karpathy/llm.c), and its losses set against
# ./train_gpt's on the same model, windows and steps. `make llmc-compat
# LLMC_DIR=...` runs it; it is not part of `make test` or CI (no llm.c there).
#
# What it does, in a fresh temporary folder (removed on PASS, kept on FAIL):
# 1. reads llm.c's hard-coded run from its main(): the model file name, the
#    tinyshakespeare shard paths, B, T, the val batches and cadence, and the
#    AdamW arguments (llm.c's CPU trainer has no flags);
# 2. builds train_gpt2.c with the flags of llm.c's Makefile for its CPU target
#    (-Ofast -march=native -fopenmp -DOMP ... -lm -lgomp; LLMC_CFLAGS replaces
#    the optimisation flags, e.g. LLMC_CFLAGS=-O3);
# 3. writes the shards with ./tokenize (tinyshakespeare, llm.c's split) and a
#    GPT-2 124M model with ./train_gpt --save (3 steps from the init, so the
#    weights are trained ones; LLMC_MODEL="--layers 2 ..." picks another shape);
# 4. runs llm.c where its paths point at those files. Its training loader
#    shuffles with its own generator, so its train shard is one window long
#    (./tokenize --shard-size B*T+1): every step then reads that window in
#    both programs. llm.c is stopped after its second val loss (after as many
#    steps as its val cadence, 10); a second short run on the whole train
#    shard only reads its num_batches line;
# 5. runs ./train_gpt --init-from the model with llm.c's B, T, val batches and
#    AdamW settings (--grad-clip 0: llm.c's CPU trainer does not clip) and
#    compares: the val losses before and after the steps, every step's train
#    loss, and the batch counts llm.c's loader reports for each shard.
#
# Tolerance: |llm.c - ours| <= LLMC_TOL (default 1e-4) for every loss. llm.c
# prints 6 decimals; the two programs sum in different orders in fp32 (its
# -Ofast loops against OpenBLAS), which moves a loss near 8 by a few 1e-6.
# Measured here: at most 2e-6 (dev/notes/llmc-compat.md).
#
# Prints a table and one last line: "PASS: ..." (exit 0), or "FAIL: ..."
# (exit 1: a loss or a batch count differs, or llm.c refused or crashed on our
# files; exit 2: the check could not run: LLMC_DIR missing or not llm.c, an
# llm.c main() this script does not know, a failed build, no ./train_gpt).
set -euo pipefail

prog=check_llmc_compat
# fail CODE MSG: the last line, then the exit status (1 disagreement, 2 not run)
fail() { echo "FAIL: $2"; exit "$1"; }
setup_fail() { echo "$prog: $*" >&2; fail 2 "not checked ($prog could not run the comparison)"; }

if [ $# -ne 1 ] || [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
    echo "usage: dev/bench/check_llmc_compat.sh LLMC_DIR   (an llm.c checkout, with train_gpt2.c and llmc/)" >&2
    [ $# -eq 1 ] && exit 0
    fail 2 "not checked: LLMC_DIR (the llm.c checkout) was not given"
fi
[ -n "$1" ] || setup_fail "LLMC_DIR is empty: give the llm.c checkout (make llmc-compat LLMC_DIR=path)"
[ -d "$1" ] || setup_fail "LLMC_DIR $1: no such folder"
LLMC_DIR=$(cd "$1" && pwd)
src=$LLMC_DIR/train_gpt2.c
[ -f "$src" ] || setup_fail "LLMC_DIR $1: no train_gpt2.c in it (is it an llm.c checkout?)"
[ -f "$LLMC_DIR/llmc/dataloader.h" ] || setup_fail "LLMC_DIR $1: no llmc/dataloader.h (an llm.c older than its llmc/ folder)"
grep -q 20240520 "$LLMC_DIR/llmc/dataloader.h" ||
    setup_fail "$LLMC_DIR/llmc/dataloader.h: does not read shards with magic 20240520 (an older llm.c)"

cd "$(dirname "$0")/../.."
root=$(pwd)
TRAIN_GPT=${TRAIN_GPT_BIN:-$root/train_gpt}
TOKENIZE=${TRAIN_GPT_TOKENIZE_BIN:-$root/tokenize}
[ -x "$TRAIN_GPT" ] || setup_fail "$TRAIN_GPT is not built (make train_gpt)"
[ -x "$TOKENIZE" ] || setup_fail "$TOKENIZE is not built (make tokenize)"
command -v stdbuf > /dev/null || setup_fail "stdbuf (coreutils) not found: needed to read llm.c's output as it runs"
command -v python3 > /dev/null || setup_fail "python3 not found"

# ---- 1. llm.c's hard-coded run, from its main() -------------------------
# grab WHAT ERE: the first capture group of the first line of train_gpt2.c
# matching ERE (sed -E), or a setup failure naming what was looked for.
grab() {
    local v
    v=$(sed -nE "s/$2/\\1/p" "$src" | head -1)
    [ -n "$v" ] || setup_fail "$src: no $1 found (this script knows llm.c's CPU trainer of mid-2024 on; its main() differs)"
    printf '%s\n' "$v"
}
model_name=$(grab "model file (gpt2_build_from_checkpoint(&model, \"...\"))" \
    '.*gpt2_build_from_checkpoint\(&model, "([^"]+)"\).*')
train_path=$(grab "tiny_shakespeare_train path" '.*tiny_shakespeare_train = "([^"]+)".*')
val_path=$(grab "tiny_shakespeare_val path" '.*tiny_shakespeare_val = "([^"]+)".*')
B=$(grab "batch size (int B = N;)" '^ *int B = ([0-9]+);.*')
T=$(grab "sequence length (int T = N;)" '^ *int T = ([0-9]+);.*')
val_batches=$(grab "val batches (int val_num_batches = N;)" '^ *int val_num_batches = ([0-9]+);.*')
val_every=$(grab "val cadence (if (step % N == 0))" '^ *if \(step % ([0-9]+) == 0\).*')
update=$(grab "AdamW call (gpt2_update(&model, lr, b1, b2, eps, wd, step+1))" \
    '.*gpt2_update\(&model, ([^)]*), step ?\+ ?1\);.*')
IFS=', ' read -r lr beta1 beta2 eps wd <<< "${update//f/}"
for v in "$lr" "$beta1" "$beta2" "$eps" "$wd"; do
    [[ $v =~ ^[0-9.eE+-]+$ ]] || setup_fail "$src: gpt2_update's arguments '$update' are not five numbers"
done
# this project decays 2-D tensors only, llm.c's CPU trainer every parameter:
# equal only when the decay is 0 (as llm.c has it)
python3 -c "import sys; sys.exit(float('$wd') != 0.0)" ||
    setup_fail "$src: gpt2_update's weight decay is $wd; the comparison needs 0 (decay here applies to 2-D tensors only)"
steps=$val_every
echo "llm.c ($src): model $model_name, train $train_path, val $val_path, B=$B T=$T," \
     "val $val_batches batches every $val_every steps, AdamW lr $lr betas $beta1 $beta2 eps $eps wd $wd"

work=$(mktemp -d "${TMPDIR:-/tmp}/check_llmc_compat.XXXXXX")
llmc_pid=
cleanup() {
    local rc=$?
    if [ -n "$llmc_pid" ]; then kill "$llmc_pid" 2>/dev/null || true; wait "$llmc_pid" 2>/dev/null || true; fi
    if [ "$rc" -eq 0 ]; then rm -rf "$work"; else echo "$prog: files kept in $work" >&2; fi
}
trap cleanup EXIT
# a signal ends the script through exit, so cleanup stops llm.c and keeps the files
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- 2. build llm.c's CPU trainer --------------------------------------
mkdir -p "$work/llmc"
cp "$src" "$work/llmc/"
cp -r "$LLMC_DIR/llmc" "$work/llmc/llmc"
CC=${CC:-cc}
read -r -a opt_flags <<< "${LLMC_CFLAGS:--Ofast}"
cflags=("${opt_flags[@]}" -Wno-unused-result -Wno-ignored-pragmas -Wno-unknown-attributes)
if [ -z "${LLMC_CFLAGS:-}" ] && echo 'int main(void){return 0;}' | "$CC" -march=native -x c - -o /dev/null 2>/dev/null; then
    cflags+=(-march=native)
fi
cflags+=(-fopenmp -DOMP)
echo "build: $CC ${cflags[*]} train_gpt2.c -lm -lgomp"
(cd "$work/llmc" && "$CC" "${cflags[@]}" train_gpt2.c -lm -lgomp -o train_gpt2) > "$work/build.txt" 2>&1 ||
    { tail -20 "$work/build.txt" >&2; setup_fail "building $src failed (output above)"; }

# ---- 3. our shards and model -------------------------------------------
text=$("$TOKENIZE" --fetch tinyshakespeare) || setup_fail "no tinyshakespeare text (./tokenize --fetch, see above)"
mkdir -p "$work/data" "$work/one"
"$TOKENIZE" --quiet --split-blank-lines --val-tokens 32768 --out "$work/data/ts" "$text" ||
    setup_fail "./tokenize failed"
"$TOKENIZE" --quiet --split-blank-lines --val-tokens 32768 --shard-size $((B * T + 1)) \
    --out "$work/one/ts" "$text" || setup_fail "./tokenize --shard-size failed"
full_train=$work/data/ts_train_000000.bin
val=$work/data/ts_val_000000.bin
one_train=$work/one/ts_train_000000.bin
read -r -a model_flags <<< "${LLMC_MODEL:---model d12}"
echo "model: ./train_gpt ${model_flags[*]} --max-seq-len 1024 --seq-len $T --batch $B --steps 3 --lr 6e-4 --save (fp32, version 3)"
"$TRAIN_GPT" "${model_flags[@]}" --max-seq-len 1024 --seq-len "$T" --batch "$B" --steps 3 --lr 6e-4 \
    --train-data "$full_train" --val-every 0 --save "$work/model.bin" > "$work/model.txt" 2>&1 ||
    { tail -5 "$work/model.txt" >&2; setup_fail "./train_gpt --save failed (output above)"; }

# ---- 4. llm.c on them ----------------------------------------------------
run=$work/run
# place NAME TARGET: a link at llm.c's relative path NAME in its run folder
place() { mkdir -p "$(dirname "$run/$1")"; ln -sfn "$2" "$run/$1"; }
place "$model_name" "$work/model.bin"
place "$val_path" "$val"
# run_llmc OUT STOP_ERE N: run llm.c in $run until N lines match STOP_ERE
# (then stop it), or it exits; the exit status when it ended by itself, else 0
run_llmc() {
    local out=$1 ere=$2 n=$3 limit=${LLMC_TIMEOUT:-1800} t=0 rc=0
    (cd "$run" && exec stdbuf -oL "$work/llmc/train_gpt2") > "$out" 2>&1 &
    llmc_pid=$!
    while kill -0 "$llmc_pid" 2>/dev/null; do
        if [ "$(grep -cE "$ere" "$out" || true)" -ge "$n" ]; then
            kill "$llmc_pid" 2>/dev/null || true
            wait "$llmc_pid" 2>/dev/null || true
            llmc_pid=
            return 0
        fi
        [ "$t" -lt "$limit" ] || setup_fail "llm.c ran past LLMC_TIMEOUT=$limit s ($out)"
        sleep 1
        t=$((t + 1))
    done
    wait "$llmc_pid" || rc=$?
    llmc_pid=
    [ "$(grep -cE "$ere" "$out" || true)" -ge "$n" ] || return $((rc == 0 ? 1 : rc))
}
place "$train_path" "$one_train"
echo "llm.c: $steps steps on the one-window train shard (stops after its second val loss)"
run_llmc "$work/llmc_steps.txt" '^val loss ' 2 ||
    { tail -15 "$work/llmc_steps.txt" >&2; fail 1 "llm.c's train_gpt2 stopped before its second val loss on our files (output above)"; }
place "$train_path" "$full_train"
run_llmc "$work/llmc_full.txt" '^val dataset num_batches: ' 1 ||
    { tail -15 "$work/llmc_full.txt" >&2; fail 1 "llm.c's train_gpt2 refused the full train shard (output above)"; }

# ---- 5. ours on the same model, windows and steps -------------------------
ours_cmd=("$TRAIN_GPT" --init-from "$work/model.bin" --seq-len "$T" --batch "$B" --steps "$steps"
    --lr "$lr" --beta1 "$beta1" --beta2 "$beta2" --eps "$eps" --weight-decay 0 --grad-clip 0
    --train-data "$one_train" --val-data "$val" --val-batches "$val_batches" --val-every "$val_every"
    --log "$work/ours.jsonl")
echo "ours: ./train_gpt ${ours_cmd[*]:1}" | sed "s|$work/||g"
"${ours_cmd[@]}" > "$work/ours.txt" 2>&1 ||
    { tail -5 "$work/ours.txt" >&2; setup_fail "./train_gpt failed (output above)"; }

python3 - "$work" "$B" "$T" "$steps" "${LLMC_TOL:-1e-4}" <<'PY' || exit $?
import json, os, re, sys
work, B, T, steps, tol = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
def ntok(path):  # our shard's header [2], checked against its size
    with open(path, "rb") as f:
        head = f.read(12)
    magic, version, n = (int.from_bytes(head[i:i + 4], "little", signed=True) for i in (0, 4, 8))
    assert (magic, version) == (20240520, 1) and os.path.getsize(path) == 1024 + 2 * n, path
    return n
steps_txt = open(f"{work}/llmc_steps.txt").read()
full_txt = open(f"{work}/llmc_full.txt").read()
llmc_val = [float(x) for x in re.findall(r"^val loss (\S+)$", steps_txt, re.M)]
llmc_train = {int(k): float(v) for k, v in re.findall(r"^step (\d+): train loss (\S+) ", steps_txt, re.M)}
def batches(txt, which):
    m = re.search(rf"^{which} dataset num_batches: (\d+)$", txt, re.M)
    return int(m.group(1)) if m else None
ours_val, ours_train = {}, {}
for line in open(f"{work}/ours.jsonl"):
    j = json.loads(line)
    if "val_loss" in j:
        ours_val[j["step"]] = j["val_loss"]
    elif "loss" in j:
        ours_train[j["step"]] = j["loss"]
rows, bad = [], []
def row(what, a, b):
    if a is None or b is None:
        bad.append(f"{what}: missing (llm.c {a}, ours {b})")
        rows.append((what, a, b, None))
        return
    d = abs(a - b)
    rows.append((what, a, b, d))
    if not d <= tol:
        bad.append(f"{what}: llm.c {a:.6f}, ours {b:.6f}, |diff| {d:.2e} > {tol:g}")
row("val loss, before step 1", llmc_val[0] if llmc_val else None, ours_val.get(0))
for k in range(steps):  # llm.c's step k is our step k+1 (the loss before update k+1)
    row(f"train loss, step {k + 1}", llmc_train.get(k), ours_train.get(k + 1))
row(f"val loss, after step {steps}", llmc_val[1] if len(llmc_val) > 1 else None, ours_val.get(steps))
print(f"{'':28}{'llm.c':>12}{'ours':>14}{'|diff|':>10}")
for what, a, b, d in rows:
    f = lambda x, p: "-" if x is None else f"{x:.{p}f}"
    print(f"{what:28}{f(a, 6):>12}{f(b, 9):>14}{'-' if d is None else f'{d:.1e}':>10}")
counts = [("one-window train shard", "train", steps_txt, f"{work}/one/ts_train_000000.bin"),
          ("val shard", "val", steps_txt, f"{work}/data/ts_val_000000.bin"),
          ("full train shard", "train", full_txt, f"{work}/data/ts_train_000000.bin")]
for what, which, txt, path in counts:
    n, got = ntok(path), batches(txt, which)
    ok = got == n // (B * T)
    print(f"{what}: {n} tokens in our header (= its size); llm.c's loader accepts it and counts "
          f"{got} batches of {B}x{T} ({'=' if ok else '!='} {n} // {B * T})")
    if not ok:
        bad.append(f"{what}: llm.c counts {got} batches, expected {n // (B * T)}")
if bad:
    more = f"; and {len(bad) - 3} more (table above)" if len(bad) > 3 else ""
    print(f"FAIL: {len(bad)} disagreement(s) with llm.c: " + "; ".join(bad[:3]) + more)
    sys.exit(1)
worst = max(d for *_, d in rows)
print(f"PASS: llm.c's train_gpt2 (CPU) and ./train_gpt agree on {len(rows)} losses within {tol:g} "
      f"(largest |diff| {worst:.1e}); llm.c read our model file and all 3 shards")
PY
