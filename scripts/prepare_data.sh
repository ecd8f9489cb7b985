#!/usr/bin/env bash
# scripts/prepare_data.sh — the default dataset (`make data`): tinyshakespeare
# as GPT-2 tokens in datasets/tinyshakespeare_val_000000.bin and
# datasets/tinyshakespeare_train_000000.bin (datasets/ is git-ignored: generated
# files stay out of the source folders).
#
# Split as llm.c's dev/data/tinyshakespeare.py does it (a document ends after
# each blank line, EOT before each document, the first 32,768 tokens are val),
# so the shards hold the same tokens: 32,768 val and 305,260 train.
#
# The text comes from `./tokenize --fetch tinyshakespeare`, which looks in
# this order and checks the sha256 whatever the source (data/source.h):
#   $TINYSHAKESPEARE (a file); the cache
#   ($XDG_DATA_HOME/train_gpt/tinyshakespeare/, else
#   ~/.local/share/train_gpt/tinyshakespeare/); a download of its public URL
#   with curl into that cache. It prints which one served.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "prepare_data: $*" >&2; exit 1; }

[ -x ./tokenize ] || die "./tokenize is not built (make tokenize)"
text=$(./tokenize --fetch tinyshakespeare) || die "no tinyshakespeare text (see the line above)"
mkdir -p datasets
./tokenize --overwrite --split-blank-lines --val-tokens 32768 --out datasets/tinyshakespeare "$text"
