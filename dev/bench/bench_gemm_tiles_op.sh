#!/usr/bin/env bash
# dev/bench/bench_gemm_tiles_op.sh — the 124M step's products alone:
# OpenBLAS's own threading against kernels/cpu/gemm_tiles.c's tiles, in one
# process, alternating (dev/bench/bench_gemm_tiles.c): CPU and wall seconds
# of one block's products and the loss head's, per round.
# usage: dev/bench/bench_gemm_tiles_op.sh [ROUNDS]   (default 5)
# Rows N = 256 (B=4 T=64) and 1024 (B=1 T=1024), at THREADS (default 2).
# Needs make's build/ (./train_gpt built: build/kernels/cpu/gemm_tiles.o).
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-5}
threads=${THREADS:-2}
[ -f build/kernels/cpu/gemm_tiles.o ] || { echo "bench_gemm_tiles_op.sh: make train_gpt first" >&2; exit 1; }
blas=/usr/lib/$(gcc -print-multiarch)/openblas-openmp
mkdir -p build/bench
cc -O3 -std=gnu11 -fopenmp -I. dev/bench/bench_gemm_tiles.c build/kernels/cpu/gemm_tiles.o \
    -L"$blas" -Wl,-rpath,"$blas" -lopenblas -o build/bench/bench_gemm_tiles
echo "command: THREADS=$threads dev/bench/bench_gemm_tiles_op.sh $rounds   ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ))"
for n in 256 1024; do
    OMP_WAIT_POLICY=PASSIVE build/bench/bench_gemm_tiles "$n" "$rounds" "$threads"
done
