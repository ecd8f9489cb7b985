#!/usr/bin/env bash
# dev/gpu_check/cuda_resources.sh — per-kernel resources of the CUDA backend, from
# ptxas, without a GPU (`make cuda-resources`).
#
# Reads ptxas's reports of every kernels/cuda/*.cu, and of the attention
# variants of the checker's sweep (dev/cuda/attention*.cu), compiled with the
# Makefile's device flags (sm_80 and sm_90a, -O3) plus -Xptxas -v: the files
# given, NAME.ARCH.log as the Makefile writes them in build/kres/ (`make
# cuda-resources` compiles what changed first; cuda-perf-model reads the same
# build); with no argument it compiles them itself, one nvcc per file and
# architecture in parallel, into a temporary folder. Prints one
# row per kernel and architecture: registers per thread, spill stores and
# loads (bytes per thread), static shared memory (bytes per block), and the
# demangled kernel name. Dynamic shared memory (the attention tiles) is sized
# at run time and is not in this table; see attn_fwd_smem / attn_bwd_smem.
#
# Exit status: 1 when any kernel spills (local-memory traffic in a hot loop,
# and usually a sign of a register cap the code did not mean) or has more
# than 48 KiB of static shared memory (the most a block may declare
# statically); 2 when nvcc fails or a report given is not there; 0 otherwise.
#
# Environment, when it compiles: NVCC (default: nvcc on PATH, else
# /usr/local/cuda/bin/nvcc), JOBS (parallel nvcc runs, default nproc).
set -uo pipefail
cd "$(dirname "$0")/../.."
NVCC=${NVCC:-$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)}
JOBS=${JOBS:-$(nproc)}
STATIC_SMEM_MAX=49152
tmp=$(mktemp -d /tmp/cuda_resources.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
t0=$SECONDS

if [ $# -eq 0 ]; then
    if [ ! -x "$NVCC" ]; then
        echo "cuda_resources.sh: nvcc not found (set NVCC=/path/to/nvcc)" >&2
        exit 2
    fi
    # one nvcc per .cu and architecture, device code only, as the Makefile's
    # build/kres/ rules; each writes its ptxas report to $tmp/NAME.ARCH.log
    export NVCC tmp
    for f in kernels/cuda/*.cu dev/cuda/attention*.cu; do echo "$f sm_80"; echo "$f sm_90a"; done |
        xargs -P "$JOBS" -L1 sh -c '
        f=$0 a=$1 n=$(basename "$0" .cu)
        "$NVCC" -O3 -std=c++17 -I. -DHAVE_CUDA -arch="$a" -cubin -Xptxas -v "$f" \
            -o "$tmp/$n.$a.cubin" > "$tmp/$n.$a.log" 2>&1 || { echo "$f $a" >> "$tmp/failed"; }'
    if [ -s "$tmp/failed" ]; then
        while read -r f a; do
            echo "cuda_resources.sh: nvcc failed on $f ($a):" >&2
            cat "$tmp/$(basename "$f" .cu).$a.log" >&2
        done < "$tmp/failed"
        exit 2
    fi
    set -- "$tmp"/*.log
fi
for log in "$@"; do
    [ -f "$log" ] || { echo "cuda_resources.sh: $log: no such ptxas report" >&2; exit 2; }
done

# ptxas -v, per entry function:
#   Compiling entry function 'MANGLED' for 'sm_90a'
#   Function properties for MANGLED
#       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
#   Used 40 registers, used 1 barriers, 128 bytes smem, 392 bytes cmem[0]
# ("N bytes smem" is absent when the kernel declares no static shared memory)
for log in "$@"; do
    n=$(basename "$log" .log)
    awk -v file="${n%.*}.cu" '
        /Compiling entry function/ {
            split($0, q, "'\''"); name = q[2]; arch = q[4]; st = 0; ld = 0; next
        }
        name != "" && /bytes spill stores/ {
            for (i = 1; i <= NF; i++) {
                if ($(i + 1) == "bytes" && $(i + 2) == "spill" && $(i + 3) == "stores,") st = $i
                if ($(i + 1) == "bytes" && $(i + 2) == "spill" && $(i + 3) == "loads") ld = $i
            }
            next
        }
        name != "" && /Used [0-9]+ registers/ {
            regs = 0; smem = 0
            for (i = 1; i <= NF; i++) {
                if ($(i + 1) ~ /^registers/) regs = $i
                if ($(i + 1) == "bytes" && $(i + 2) ~ /^smem/) smem = $i
            }
            printf "%s\t%s\t%d\t%d\t%d\t%d\t%s\n", arch, file, regs, st, ld, smem, name
            name = ""
        }' "$log"
done > "$tmp/rows.tsv"

if [ ! -s "$tmp/rows.tsv" ]; then
    echo "cuda_resources.sh: no kernels found in the ptxas output" >&2
    exit 2
fi

# demangle the names (c++filt keeps a name it cannot read as it is), drop
# the return type and the parameter list
cut -f7 "$tmp/rows.tsv" | { c++filt 2>/dev/null || cat; } |
    sed -e 's/^void //' -e 's/(.*$//' > "$tmp/names"
paste <(cut -f1-6 "$tmp/rows.tsv") "$tmp/names" | sort -t$'\t' -k1,1 -k2,2 -k7,7 > "$tmp/table.tsv"

printf '%-6s %-22s %5s %6s %6s %7s  %s\n' arch file regs spillS spillL smem kernel
awk -F'\t' '{ printf "%-6s %-22s %5d %6d %6d %7d  %s\n", $1, $2, $3, $4, $5, $6, $7 }' \
    "$tmp/table.tsv"

awk -F'\t' -v max="$STATIC_SMEM_MAX" -v secs="$((SECONDS - t0))" '
    { n++; if ($3 > mr[$1]) mr[$1] = $3; if ($6 > ms[$1]) ms[$1] = $6
      if ($4 > 0 || $5 > 0) { bad++; print "SPILL: " $1 " " $7 > "/dev/stderr" }
      if ($6 > max) { bad++; print "STATIC SMEM > 48 KiB: " $1 " " $7 > "/dev/stderr" } }
    END {
        printf "%d kernel builds; ", n
        for (a in mr) printf "%s: max %d registers, max %d B static smem; ", a, mr[a], ms[a]
        printf "%d problem(s); %d s\n", bad, secs
        exit bad > 0
    }' "$tmp/table.tsv"
