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
#
# When $TINYSHAKESPEARE served, a copy goes into that cache (written to a
# temporary name, compared byte for byte with the sha256-checked original,
# then renamed), so that later `make test`, scripts/memory_report.sh and
# `make data` find the text without the variable. A cached file that is
# already the same bytes is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "prepare_data: $*" >&2; exit 1; }

[ -x ./tokenize ] || die "./tokenize is not built (make tokenize)"
text=$(./tokenize --fetch tinyshakespeare) || die "no tinyshakespeare text (see the line above)"

# The cache folder as data/source.c names it: $XDG_DATA_HOME when absolute.
cache_text() {
    local src=$1 base dir dest tmp xdg=${XDG_DATA_HOME:-}
    if [ -n "$xdg" ] && [ "${xdg#/}" != "$xdg" ]; then base=$xdg
    elif [ -n "${HOME:-}" ]; then base=$HOME/.local/share
    else return 0; fi
    dir=$base/train_gpt/tinyshakespeare
    dest=$dir/input.txt
    [ -f "$dest" ] && cmp -s "$src" "$dest" && return 0
    mkdir -p "$dir" || { echo "prepare_data: note: cannot make the cache folder $dir; the text is not kept" >&2; return 0; }
    tmp=$(mktemp "$dir/input.txt.XXXXXX") || return 0
    if cp "$src" "$tmp" && cmp -s "$src" "$tmp" && sync "$tmp" 2>/dev/null && mv -f "$tmp" "$dest"; then
        echo "prepare_data: kept a copy of \$TINYSHAKESPEARE ($src) in the cache: $dest"
    else
        rm -f "$tmp"
        echo "prepare_data: note: could not copy $src into $dir; the text is not kept" >&2
    fi
}
if [ -n "${TINYSHAKESPEARE:-}" ] && [ "$text" -ef "$TINYSHAKESPEARE" ]; then
    cache_text "$text"
fi
mkdir -p datasets
./tokenize --overwrite --split-blank-lines --val-tokens 32768 --out datasets/tinyshakespeare "$text"
