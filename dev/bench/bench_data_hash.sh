#!/usr/bin/env bash
# dev/bench/bench_data_hash.sh [MB] [RUNS] — how fast ./train_gpt reads and
# hashes its train shards (SHA-256 of every shard: the data fingerprint that
# saves record and --resume checks; data/shard.h).
#
# Writes MB megabytes (default 1024) of shards of random tokens (128 MB
# each, vocabulary 65536) to a temporary folder ($TMPDIR, else /tmp), then
# runs ./train_gpt for one step with --checkpoint-dir (a fresh run without
# a dataset manifest reads every shard) RUNS times (default 3) each way:
#   warm  the shards in the page cache: the SHA-256 speed of one core
#   cold  the page cache dropped before each run (root only:
#         /proc/sys/vm/drop_caches; skipped otherwise): the disk shows
# and `sha256sum` over the same files, cold, as the reference. Prints the
# median MB/s of each (train_gpt's own "train data: read ... MB/s" line),
# the load average (wall-clock rates on a busy machine are lower), and
# OpenSSL's SHA-256 speed on one core (`openssl speed`: the CPU bound).
set -euo pipefail
cd "$(dirname "$0")/../.."
mb=${1:-1024}
runs=${2:-3}
[ -x ./train_gpt ] || { echo "bench_data_hash: build ./train_gpt first (make)" >&2; exit 1; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/bench_data_hash.XXXXXX")
trap 'rm -rf "$dir"' EXIT
per=128
n=$(( (mb + per - 1) / per ))
for ((i = 0; i < n; i++)); do
    tokens=$(( per * 1000000 / 2 ))
    python3 - "$dir/bench_train_$(printf %06d "$i").bin" "$tokens" <<'EOF'
import os, struct, sys
path, n = sys.argv[1], int(sys.argv[2])
with open(path, "wb") as f:
    f.write(struct.pack("<256i", 20240520, 1, n, *([0] * 253)))
    left = 2 * n
    while left:
        k = min(left, 1 << 24)
        f.write(os.urandom(k))
        left -= k
EOF
done
sync

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
can_drop=0
if [ -w /proc/sys/vm/drop_caches ]; then can_drop=1; fi
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }

one_run() { # prints train_gpt's MB/s
    rm -rf "$dir/ck"
    ./train_gpt --train-data "$dir/bench_train_*.bin" --layers 1 --channels 16 --heads 2 \
        --vocab 65536 --seq-len 16 --batch 1 --steps 1 --device cpu --threads 1 \
        --checkpoint-dir "$dir/ck" 2>/dev/null |
        sed -n 's/^train data: read .* (\([0-9.]*\) MB\/s)$/\1/p'
}

echo "bench_data_hash: $n shard(s), $((n * per)) MB, $runs run(s) each; load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) core(s)"
openssl speed -seconds 2 -bytes 1048576 -evp sha256 2>/dev/null |
    awk '/^sha256/ {printf "openssl speed -evp sha256 (1 MiB blocks, one core): %.0f MB/s\n", $2 / 1000}' 
cat "$dir"/bench_train_*.bin > /dev/null # into the page cache
warm=$(for ((r = 0; r < runs; r++)); do one_run; done | median)
echo "train_gpt, warm (page cache): $warm MB/s"
if [ $can_drop = 1 ]; then
    cold=$(for ((r = 0; r < runs; r++)); do drop; one_run; done | median)
    echo "train_gpt, cold (caches dropped): $cold MB/s"
    ref=$(for ((r = 0; r < runs; r++)); do
        drop
        s=$(date +%s.%N)
        sha256sum "$dir"/bench_train_*.bin >/dev/null
        e=$(date +%s.%N)
        echo "$n $per $s $e" | awk '{printf "%.0f\n", $1 * $2 / ($4 - $3)}'
    done | median)
    echo "sha256sum, cold (caches dropped): $ref MB/s"
else
    echo "cold runs skipped: /proc/sys/vm/drop_caches is not writable (not root)"
fi
