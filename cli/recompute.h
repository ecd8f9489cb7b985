/* cli/recompute.h — the trainer's memory flags, asked of the planner.
 *
 * Owns: turning --recompute, --checkpoint-every, --memory-budget,
 * --host-budget and --offload into a PlanRequest for planner_choose
 * (model/plan_choose.h, which decides the schedule and whether it fits),
 * the baseline the process holds and --memory-budget's default, printing
 * the verdict and its refusals, and the --plan dry run. */
#ifndef CLI_RECOMPUTE_H
#define CLI_RECOMPUTE_H

#include <stddef.h>

#include "kernels/ops.h"
#include "model/config.h"
#include "model/gpt.h"
#include "model/schedule.h"
#include "cli/costs.h"
#include "cli/options.h"

/* --memory-budget's default, printed: the device's free memory minus 512
 * MiB (cuBLAS workspaces and allocator granularity; the CUDA context is
 * already outside "free"), or on the cpu the host's available memory
 * (MemAvailable) minus 10% (host-side buffers), plus the baseline the
 * process already holds (outside both). Returns 0, or -1 with err. */
int recompute_budget(Backend *be, size_t baseline, size_t *budget, char *err, size_t len);

/* What the process holds before its arenas, which --memory-budget and the
 * plan count as their baseline row: on a device backend (be with
 * mem_info), the device memory in use (this process's context and the
 * backend's fixed buffers, and any other process's); on the cpu, the
 * resident set (/proc/self/status VmRSS: program, libraries, the CUDA
 * runtime's mapped pages in a CUDA build) read after the BLAS has touched
 * its packing buffers at the run's matmul shapes (BackendOps.
 * matmul_prepare, from o's batch, seq-len and loss chunk and cfg), plus 1
 * MiB they may still grow by. Test build only (base/test_hooks.h):
 * TRAIN_GPT_TEST_BASELINE=BYTES replaces the measurement. */
size_t recompute_baseline(Backend *be, const TrainOptions *o, const GPTConfig *cfg);

/* Checks that need the model's shape (--checkpoint-every <= layers),
 * before anything is opened. Returns 0, or 2 with a one-line message in
 * err. */
int recompute_check(const TrainOptions *o, const GPTConfig *cfg, char *err, size_t len);

/* The schedule --recompute asks for (planner_choose), planned on be's
 * dtype for this rank (shard: world size and ZeRO-1, which change the
 * optimizer's bytes), and the op costs (--op-costs, cli/costs.h) into
 * *tc, with the predicted time of one optimizer step under the schedule
 * in *step_ns (-1 without measured costs). auto: the least predicted time
 * (or, with FLOP costs, recompute) within the budget (the solver up to 64
 * layers, a restricted search past it, which is named in what is
 * printed); when nothing fits, prints the schedule with the smallest
 * achievable peak to stderr and returns 2 with that peak in err. Other
 * modes: returns 2 with err when --memory-budget or --host-budget is
 * given and the plan exceeds it. Expects recompute_check to have passed.
 * *plan is the schedule's plan with the baseline (recompute_baseline,
 * measured first) counted, for printing before anything is allocated.
 * Returns 0, 2 (exit 2) or -1, with err. */
int recompute_schedule(const TrainOptions *o, const GPTConfig *cfg, Backend *be,
                          const GPTShard *shard, Schedule *s, MemoryPlan *plan,
                          TrainCosts *tc, long long *step_ns, char *err, size_t len);

/* --plan: prints the table of recompute modes (planner_print_modes) for
 * this shape and --batch/--seq-len, with predicted step times when op
 * costs are at hand (--op-costs: a file, the cache, or measure, which
 * opens the backend; then the costs are printed first). With
 * --memory-budget nothing else is opened; without it the backend is
 * opened only to ask for its free memory, and the dtype is the backend's.
 * A CUDA device this process cannot open (--plan-device, a CUDA build
 * that sees no GPU, or a build without CUDA asked for bf16 or --device
 * cuda) is planned for instead of the cpu backend: bf16 unless --dtype
 * fp32, the card's memory (kernels/device_info.h) less a run's margin as
 * the budget, and op costs only from a FILE (--op-costs measure: exit 2).
 * Returns the exit status (TRAIN_EXIT_STOPPED_NOTHING when a signal stopped
 * the measurement). */
int recompute_plan(const TrainOptions *o, const GPTConfig *cfg, const GPTShard *shard);

#endif
