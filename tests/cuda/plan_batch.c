/* tests/cuda/plan_batch.c — the largest micro-batch the memory planner says
 * fits on this GPU, for scripts/gpu_check.sh.
 *
 * usage: tests/cuda/plan_batch L C NH T V dtype recompute
 * Opens the CUDA backend (so its context and fixed buffers are already
 * taken, as they are in train_gpt when it plans), reads the free device
 * memory, and prints one line:
 *   max_batch B plan_total BYTES plan_total_next BYTES free BYTES
 * B is the largest batch whose planner total, plus 2 MiB of allocation
 * rounding per arena and HEADROOM_BYTES for what the driver and cuBLASLt
 * allocate on first use (kernel modules, cuBLASLt's own buffers), is at
 * most the free memory; plan_total and plan_total_next are those sums at B
 * and B + 1. The planner is the only sizing code used. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/backend.h"
#include "model/planner.h"

#define HEADROOM_BYTES ((size_t)256 << 20)

static size_t plan_total(const GPTConfig *cfg, int B, int T, DType dt, int mode)
{
    PlanInput in;
    memset(&in, 0, sizeof in);
    in.cfg = *cfg;
    in.B = B;
    in.T = T;
    in.dtype = dt;
    MemoryPlan p;
    char err[256];
    if (planner_sizes(&in, mode, &p, err, sizeof err) != 0) {
        fprintf(stderr, "plan_batch: %s\n", err);
        exit(2);
    }
    return p.total + (size_t)MEM_NUM_CATEGORIES * (2u << 20) + HEADROOM_BYTES;
}

int main(int argc, char **argv)
{
    if (argc != 8) {
        fprintf(stderr, "usage: %s L C NH T V bf16|fp32 0|1\n", argv[0]);
        return 2;
    }
    GPTConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.num_layers = atoi(argv[1]);
    cfg.channels = atoi(argv[2]);
    cfg.num_heads = atoi(argv[3]);
    int T = atoi(argv[4]);
    cfg.max_seq_len = T;
    cfg.vocab_size = atoi(argv[5]);
    cfg.padded_vocab = config_pad_vocab(cfg.vocab_size);
    DType dt = strcmp(argv[6], "bf16") == 0 ? DTYPE_BF16 : DTYPE_FP32;
    int mode = atoi(argv[7]);
    char err[256];
    if (config_validate(&cfg, err, sizeof err) != 0) {
        fprintf(stderr, "plan_batch: %s\n", err);
        return 2;
    }
    Backend *be = cuda_backend_open(argv[6], err, sizeof err);
    if (!be) {
        fprintf(stderr, "plan_batch: %s\n", err);
        return 2;
    }
    size_t free_b = 0, total_b = 0;
    be->ops->mem_info(be, &free_b, &total_b);
    int lo = 0, hi = 1; /* plan(lo) fits (lo = 0: nothing yet), plan(hi) does not */
    while (plan_total(&cfg, hi, T, dt, mode) <= free_b) {
        lo = hi;
        hi *= 2;
        if (hi > (1 << 20)) break;
    }
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        if (plan_total(&cfg, mid, T, dt, mode) <= free_b) lo = mid;
        else hi = mid;
    }
    printf("max_batch %d plan_total %zu plan_total_next %zu free %zu\n", lo,
           lo ? plan_total(&cfg, lo, T, dt, mode) : 0, plan_total(&cfg, lo + 1, T, dt, mode),
           free_b);
    cuda_backend_close(be);
    return lo > 0 ? 0 : 1;
}
