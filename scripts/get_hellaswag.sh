#!/usr/bin/env bash
# scripts/get_hellaswag.sh [OUT_PREFIX [--tokenizer FILE | --encoding NAME]] — HellaSwag's validation set as an
# llm.c eval file: OUT_PREFIX.bin (default datasets/hellaswag_val.bin, git-
# ignored), what `./train_gpt --eval-file` reads. `make hellaswag` runs it.
#
# The jsonl (10,042 examples, 12,246,618 bytes) comes from `./tokenize
# --fetch hellaswag`, which looks in this order and checks the sha256
# whatever the source (data/source.h): $HELLASWAG_JSONL (a file); the cache ($XDG_DATA_HOME/train_gpt/hellaswag/, else
# ~/.local/share/train_gpt/hellaswag/); a download of
# https://raw.githubusercontent.com/rowanz/hellaswag/master/data/hellaswag_val.jsonl
# with curl into that cache (not with TRAIN_GPT_OFFLINE=1). It prints which
# one served. The expected sha256 is the one Hugging Face's datasets
# repository records for that URL (datasets/hellaswag/dataset_infos.json).
#
# Then ./tokenize --hellaswag writes the eval file: the context as it is and
# each ending with a leading space, as llm.c's dev/data/hellaswag.py does.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-datasets/hellaswag_val}
shift || true  # the rest: a tokenizer choice for ./tokenize (--tokenizer FILE | --encoding NAME)
die() { echo "get_hellaswag: $*" >&2; exit 1; }

[ -x ./tokenize ] || die "./tokenize is not built (make tokenize)"
jsonl=$(./tokenize --fetch hellaswag) || die "no HellaSwag validation jsonl (see the line above)"
mkdir -p "$(dirname "$OUT")"
./tokenize --overwrite --hellaswag "$jsonl" --out "$OUT" "$@"
