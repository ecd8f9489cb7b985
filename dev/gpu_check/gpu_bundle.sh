#!/usr/bin/env bash
# dev/gpu_check/gpu_bundle.sh — build here, run on the lent GPU machine.
#
# The lent GPU machine has the CUDA toolkit (nvcc 13, cuBLASLt), OpenMPI's
# runtime and NCCL (seen 2026-11-29), but nothing can be installed there,
# and whether it has this project's other Debian libraries and headers
# (OpenBLAS, PCRE2, cJSON, OpenSSL) was never established. This script
# builds ./train_gpt and build/check_kernels here with the CUDA backend
# (same nvcc major version, sm_80 + sm_90a) and packs them, stripped, with
# the shared libraries they need that are not glibc, libstdc++ or CUDA's
# into gpu_bundle/bundle.tar.xz (about 8.4 MB; git-ignored), with the static
# performance model's per-op predictions (perf_model.json). Carry the folder
# to the GPU machine; dev/gpu_check/gpu_check.sh uses the bundle when it finds it
# and builds from source otherwise.
#
#   dev/gpu_check/gpu_bundle.sh            then, on the device: carry ["gpu_bundle"],
#                                    command: dev/gpu_check/gpu_check.sh $OUT
#
# glibc: the binaries need the glibc they were linked against (2.36 here,
# Debian 12) or newer; the GPU image's is newer.
#
#   dev/gpu_check/gpu_bundle.sh --source-hash
#                                    prints the hash of the sources a bundle is
#                                    built from (every .c .h .cu .cuh .cpp and
#                                    the Makefile, outside build/ and .git/):
#                                    gpu_check.sh compares it with the bundle's
#                                    so a stale bundle is not run.
set -euo pipefail
cd "$(dirname "$0")/../.."
source_hash() {
    find . \( -path ./build -o -path ./.git -o -path ./gpu_bundle \) -prune -o -type f \
        \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cpp' \
        -o -name Makefile \) -print | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16
}
if [ "${1:-}" = --source-hash ]; then
    source_hash
    exit 0
fi
make -j"$(nproc)" train_gpt build/check_kernels
./train_gpt --help >/dev/null
if [ "$(nm train_gpt | grep -c cuda_backend_open)" -eq 0 ]; then
    echo "gpu_bundle.sh: ./train_gpt was built without the CUDA backend (nvcc not found)" >&2
    exit 1
fi

stage=$(mktemp -d /tmp/gpu_bundle.XXXXXX)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/lib-mpi"
strip -o "$stage/bin/train_gpt" train_gpt
strip -o "$stage/bin/check_kernels" build/check_kernels

# Libraries the GPU machine provides itself: glibc's, the compiler's C++
# runtime (the image's is newer) and CUDA's (from its toolkit or wheels).
system_lib='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libcudart|libcublas|libcublasLt|libnccl)\.so'
ldd train_gpt build/check_kernels | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
    while read -r name path; do
        if [[ "$name" =~ $system_lib ]]; then continue; fi
        # OpenMPI's libraries go apart: the GPU machine's own are used when it
        # has an mpirun (its launcher and libmpi must match).
        case "$name" in
        libmpi.so* | libopen-rte.so* | libopen-pal.so* | libhwloc.so* | libevent* | libudev.so*)
            cp -L "$path" "$stage/lib-mpi/$name" ;;
        *) cp -L "$path" "$stage/lib/$name" ;;
        esac
    done

# The static model's per-op predictions at check_timing's shape (PREDICTIONS,
# dev/cuda_perf_model.py): gpu_check.sh prints them beside the measured
# timing rows. The bundle is useful without them, so a failure only warns.
# One file per parameter set (dev/perf_model/hw.py DEVICES): gpu_check.sh
# takes the one for the card the probe names (perf_model_h100.json on an H100).
if ! python3 dev/cuda_perf_model.py --write-predictions "$stage/perf_model.json" ||
    ! python3 dev/cuda_perf_model.py --device H100 --write-predictions "$stage/perf_model_h100.json"; then
    echo "gpu_bundle.sh: warning: no model predictions in the bundle (cuda_perf_model.py failed)" >&2
    rm -f "$stage/perf_model.json" "$stage/perf_model_h100.json"
fi

# 64K ids of tokenized tinyshakespeare (the first of `make data`'s train
# shard) for check_kernels --time's encoder_backward-on-text rows
# (CHECK_TIMING_TOKENS, dev/cuda/check_timing.c); without the shard, a warning.
shard=datasets/tinyshakespeare_train_000000.bin
if [ -f "$shard" ]; then
    python3 - "$shard" "$stage/text_tokens.bin" <<'PY'
import struct, sys
src = open(sys.argv[1], "rb").read()
head = list(struct.unpack("<256i", src[:1024]))
n = min(head[2], 65536)
head[2] = n
open(sys.argv[2], "wb").write(struct.pack("<256i", *head) + src[1024:1024 + 2 * n])
PY
else
    echo "gpu_bundle.sh: warning: no $shard (make data): no text ids for the encoder rows" >&2
fi

{
    echo "commit $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
    echo "sources $(source_hash)"
    echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME"), glibc $(ldd --version | head -1 | awk '{print $NF}')"
    nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    echo "nvcc $("$nvcc" --version | grep -o 'release [0-9.]*')"
    echo "libraries: $(cd "$stage" && for f in lib/*.so* lib-mpi/*.so*; do [ -e "$f" ] && printf '%s ' "${f#*/}"; done)"
    echo "model predictions: $([ -f "$stage/perf_model.json" ] && echo "perf_model.json (H200), perf_model_h100.json" || echo none)"
    echo "text ids: $([ -f "$stage/text_tokens.bin" ] && echo "text_tokens.bin (64K of $shard)" || echo none)"
} >"$stage/MANIFEST"

mkdir -p gpu_bundle
tar -cJf gpu_bundle/bundle.tar.xz -C "$stage" .
cat "$stage/MANIFEST"
echo "gpu_bundle.sh: gpu_bundle/bundle.tar.xz ($(du -h gpu_bundle/bundle.tar.xz | cut -f1)); carry [\"gpu_bundle\"] to the GPU machine"
