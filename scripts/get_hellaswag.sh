#!/usr/bin/env bash
# scripts/get_hellaswag.sh [OUT_PREFIX] — HellaSwag's validation set as an
# llm.c eval file: OUT_PREFIX.bin (default data/hellaswag_val.bin), what
# `./train_gpt --eval-file` reads. `make hellaswag` runs it.
#
# The jsonl (10,042 examples, 12,246,618 bytes), first found of:
#   $HELLASWAG_JSONL                          when set (then it must exist)
#   ../shared/data/hellaswag/hellaswag_val.jsonl
#   ${XDG_CACHE_HOME:-~/.cache}/train_gpt/hellaswag_val.jsonl   (a previous download)
#   a download with curl from the canonical URL into that cache
# Whatever the source, its sha256 must be the published one (Hugging Face's
# datasets repository records it for this URL: datasets/hellaswag/
# dataset_infos.json). HELLASWAG_SHA256 and HELLASWAG_URL replace the
# expected checksum and the URL (a mirror; the tests).
#
# Then ./tokenize --hellaswag writes the eval file: each ending tokenized
# with a leading space, as llm.c's dev/data/hellaswag.py does.
set -euo pipefail
cd "$(dirname "$0")/.."

URL=${HELLASWAG_URL:-https://raw.githubusercontent.com/rowanz/hellaswag/master/data/hellaswag_val.jsonl}
SHA256=${HELLASWAG_SHA256:-0aa3b88843990f3f10a97b9575c94d7b71fb2205240ba04ae4884d9e9c992588}
SHARED=../shared/data/hellaswag/hellaswag_val.jsonl
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/train_gpt/hellaswag_val.jsonl
OUT=${1:-data/hellaswag_val}

die() { echo "get_hellaswag: $*" >&2; exit 1; }

if [ -n "${HELLASWAG_JSONL:-}" ]; then
    [ -f "$HELLASWAG_JSONL" ] || die "HELLASWAG_JSONL=$HELLASWAG_JSONL: no such file"
    jsonl=$HELLASWAG_JSONL
elif [ -f "$SHARED" ]; then
    jsonl=$SHARED
elif [ -f "$CACHE" ]; then
    jsonl=$CACHE
else
    hint="set HELLASWAG_JSONL=/path/to/hellaswag_val.jsonl"
    command -v curl >/dev/null || die "no HellaSwag jsonl found and no curl to download $URL; $hint"
    mkdir -p "$(dirname "$CACHE")" || die "cannot create $(dirname "$CACHE")"
    echo "get_hellaswag: downloading $URL to $CACHE" >&2
    curl -fsSL --retry 2 -o "$CACHE.part" "$URL" ||
        { rm -f "$CACHE.part"; die "download failed (offline?): $URL; $hint"; }
    got=$(sha256sum "$CACHE.part" | cut -d' ' -f1)
    [ "$got" = "$SHA256" ] ||
        { rm -f "$CACHE.part"; die "$URL: sha256 is $got, expected $SHA256; nothing kept"; }
    mv "$CACHE.part" "$CACHE"
    jsonl=$CACHE
fi

got=$(sha256sum "$jsonl" | cut -d' ' -f1)
[ "$got" = "$SHA256" ] ||
    die "$jsonl: sha256 is $got, expected $SHA256 (not HellaSwag's hellaswag_val.jsonl)"

[ -x ./tokenize ] || die "./tokenize is not built (make tokenize)"
mkdir -p "$(dirname "$OUT")"
./tokenize --hellaswag "$jsonl" --out "$OUT"
