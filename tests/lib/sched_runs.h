/* tests/lib/sched_runs.h — what the schedule suites in tests/unit/model/
 * (schedule_exec, llama_model, llama_options, llama_head_dim; offload_exec
 * only the record and its comparison) share to say "this schedule trains
 * exactly as recompute 0 does": a few AdamW steps of a model on the cpu
 * backend from fixed random parameters (seed 7) and tokens (seeds 10 + step,
 * 20 + step), recording each step's loss, the first step's gradients and the
 * final parameters, with the arenas asserted equal to the planner's plan;
 * and the bitwise comparison of two such records.
 *
 * Owns: a SchedRun's grads and params (sched_runs_drop frees them). */
#ifndef TESTS_SCHED_RUNS_H
#define TESTS_SCHED_RUNS_H

#include <stddef.h>

#include "model/gpt.h"

/* The most optimizer steps a run records. */
#define SCHED_RUNS_MAX_STEPS 3

/* A run's batch, sequence length and optimizer steps (1..MAX_STEPS). */
typedef struct {
    int B, T, steps;
} SchedShape;

/* loss[i]: step i's mean loss (0 past the steps run, so two records of the
 * same step count compare whole); grads: the first step's; params: after
 * the last step; peak: the plan's device total, in bytes. grads and params
 * hold num_params floats. */
typedef struct {
    double loss[SCHED_RUNS_MAX_STEPS];
    float *grads, *params;
    size_t peak;
} SchedRun;

/* sh.steps AdamW steps (lr 1e-3, betas 0.9/0.95, eps 1e-8, weight decay
 * 0.1, clip 1) of cfg on schedule s (taken over) or, when s is NULL, the
 * one gpt_init builds for `mode`. Asserts: the model opens; each arena's
 * carving equals the plan's bytes for its category, and the high-water
 * mark the plan's total, before and after the steps; num_params is
 * config_num_params(cfg); every loss is finite. */
SchedRun sched_runs_run(Schedule *s, int mode, const GPTConfig *cfg, SchedShape sh);

/* sched_runs_run on recompute 0's schedule (RECOMPUTE_NONE) for
 * block_desc_of(cfg): the record every other schedule must match. */
SchedRun sched_runs_reference(const GPTConfig *cfg, SchedShape sh);

/* a and b bitwise (memcmp): the losses, then n gradients, then n
 * parameters; each failure message starts with `what`. */
void sched_runs_expect_same(const SchedRun *a, const SchedRun *b, size_t n, const char *what);

/* --recompute auto (FLOP costs, the cpu backend's attention scratch) at
 * steps + 1 budgets evenly spaced from its minimum peak to ref's (mode
 * 0's, sched_runs_reference of the same cfg and sh): each fits its budget,
 * its predicted peak is the arenas' high-water mark, and it trains as ref
 * does ("auto at N bytes (desc)"). Returns how many different schedules
 * (schedule_describe) it chose, counting up to 32. */
int sched_runs_expect_auto_budgets(const SchedRun *ref, const GPTConfig *cfg, SchedShape sh,
                                   int steps);

/* The every-tape-kind sweeps against ref (sched_runs_reference of the
 * same cfg and sh), cfg having 8 layers, block d = block_desc_of(cfg):
 * kinds_kept: mode 0's program with block l keeping tape kind first + l
 * (LayerNorms fused where the kinds allow), first = 0, 8, ... below
 * tape_kinds(d); inputs_kept: 16 inputs-kept programs re-forwarding into
 * workspace tapes of pairs of kinds (hi (37i + 3) mod kinds, lo (53i + 5)
 * mod kinds). Each program built, validated, run and expected the same as
 * ref (messages "kinds a..b kept", "inputs kept, hi X, lo Y"). */
void sched_runs_expect_kinds_kept(const SchedRun *ref, const GPTConfig *cfg, SchedShape sh);
void sched_runs_expect_inputs_kept(const SchedRun *ref, const GPTConfig *cfg, SchedShape sh);

/* Free r's grads and params. */
void sched_runs_drop(SchedRun *r);

#endif
