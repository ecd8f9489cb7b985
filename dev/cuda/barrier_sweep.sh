#!/usr/bin/env bash
# dev/cuda/barrier_sweep.sh — does the emulator checker notice a missing
# barrier? Removes each __syncthreads()/__syncwarp() and each cp.async wait
# (cp_async_wait<N>(), async_copy.cuh) of kernels/cuda/*.cu and *.cuh (the
# shared steps, e.g. attention_mma.cuh's amma_kv_step), and of the attention
# variants in dev/cuda/attention*, in turn, in a
# copy of the tree (the working tree is never touched), rebuilds
# build/check_kernels_emu and runs the op group of that file in fwd and
# rev order. Prints one line per barrier: the FAIL lines each order produced
# (0 and 0: not caught). Slow: about an hour on 2 cores. FILES (default
# kernels/cuda/*.cu kernels/cuda/*.cuh dev/cuda/attention*.cu dev/cuda/attention*.cuh)
# limits the sweep, e.g. FILES=kernels/cuda/head.cu.
set -uo pipefail
cd "$(dirname "$0")/../.."
copy=$(mktemp -d /tmp/barrier_sweep.XXXXXX)
trap 'rm -rf "$copy"' EXIT
git ls-files -co --exclude-standard | tar cf - -T - | (cd "$copy" && tar xf -)
cd "$copy"
make -s NVCC= build/check_kernels_emu >/dev/null 2>&1 || { echo "build failed" >&2; exit 1; }
sites="__syncthreads()\|__syncwarp()\|cp_async_wait<[0-9]>()"
grep -Hn "$sites" ${FILES:-kernels/cuda/*.cu kernels/cuda/*.cuh dev/cuda/attention*.cu dev/cuda/attention*.cuh} | while IFS=: read -r f line _; do
    case $f in
    *adamw*) g=optimizer ;; *attention*) g=attention ;; *encoder*) g=encoder ;;
    *head*) g=head ;; *layernorm*) g=layernorm ;; *matmul*) g=matmul ;; *) continue ;;
    esac
    cp "$f" "$f.orig"
    sed -i "${line}s/__syncthreads();\|__syncwarp();\|cp_async_wait<[0-9]>();/;/" "$f"
    res=""
    if make -s NVCC= build/check_kernels_emu >/dev/null 2>&1; then
        for o in fwd rev; do
            n=$(EMU_ORDER=$o OMP_NUM_THREADS=1 ./build/check_kernels_emu --quick --seed 9 \
                --only "$g" 2>&1 | grep -cE "^FAIL|emu:")
            res="$res $o:$n"
        done
    else
        res=" build failed"
    fi
    mv "$f.orig" "$f"
    touch "$f"
    printf '%-40s %-10s%s\n' "$f:$line" "($g)" "$res"
done
