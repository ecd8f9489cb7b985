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
# The text, first found of:
#   $TINYSHAKESPEARE            when set (then it must exist)
#   ../shared/data/tinyshakespeare/input.txt
#   datasets/tinyshakespeare/input.txt   (a previous download)
#   a download, with curl or wget, of karpathy/char-rnn's input.txt into
#   datasets/tinyshakespeare/input.txt (needs the network)
# Whatever the source, its sha256 must be the known one.
set -euo pipefail
cd "$(dirname "$0")/.."

URL=https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt
SHA256=86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed
SHARED=../shared/data/tinyshakespeare/input.txt
LOCAL=datasets/tinyshakespeare/input.txt

die() { echo "prepare_data: $*" >&2; exit 1; }

if [ -n "${TINYSHAKESPEARE:-}" ]; then
    [ -f "$TINYSHAKESPEARE" ] || die "TINYSHAKESPEARE=$TINYSHAKESPEARE: no such file"
    text=$TINYSHAKESPEARE
elif [ -f "$SHARED" ]; then
    text=$SHARED
elif [ -f "$LOCAL" ]; then
    text=$LOCAL
else
    mkdir -p "$(dirname "$LOCAL")"
    echo "prepare_data: downloading $URL" >&2
    if command -v curl >/dev/null; then
        curl -fsSL --retry 2 -o "$LOCAL.part" "$URL" || { rm -f "$LOCAL.part"; die "download failed (offline?): $URL; set TINYSHAKESPEARE=/path/to/input.txt"; }
    elif command -v wget >/dev/null; then
        wget -q -O "$LOCAL.part" "$URL" || { rm -f "$LOCAL.part"; die "download failed (offline?): $URL; set TINYSHAKESPEARE=/path/to/input.txt"; }
    else
        die "no text found and neither curl nor wget to download $URL; set TINYSHAKESPEARE=/path/to/input.txt"
    fi
    mv "$LOCAL.part" "$LOCAL"
    text=$LOCAL
fi

got=$(sha256sum "$text" | cut -d' ' -f1)
[ "$got" = "$SHA256" ] || die "$text: sha256 is $got, expected $SHA256 (not tinyshakespeare's input.txt)"

[ -x ./tokenize ] || die "./tokenize is not built (make tokenize)"
mkdir -p datasets
./tokenize --split-blank-lines --val-tokens 32768 --out datasets/tinyshakespeare "$text"
