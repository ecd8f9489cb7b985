/* cli/trainer.h — the run's state, shared by the parts of the command that
 * need most of it: start-up (cli/startup.c), the training loop
 * (cli/loop.c), its stops (cli/stop.c), the end of a run (train_gpt.c) and
 * the end-of-run summary (cli/summary.c). The CLI's own header, not a
 * library's.
 *
 * Owns: Trainer, a few named parts (the data, the run's files, what it
 * measures, how it stops) and their small pieces declared here (the host
 * batch, the device memory, the step times, the command line). The parts'
 * own types belong to their modules: the output files to cli/outputs.h,
 * llm.c's checkpoints to cli/llmc_folder.h, the saves to ckpt/session.h;
 * the files that need only a part include only its header. */
#ifndef CLI_TRAINER_H
#define CLI_TRAINER_H

#include <stddef.h>

#include "data/loader.h"
#include "distributed/dist.h"
#include "kernels/profile.h"
#include "model/gpt.h"
#include "ckpt/session.h"
#include "cli/costs.h"
#include "cli/evaluate.h"
#include "cli/generate.h"
#include "cli/llmc_folder.h"
#include "cli/options.h"
#include "cli/outputs.h"
#include "cli/progress.h"

/* The command line as main received it, for the rollback command a
 * non-finite abort prints (cli/guard.h). */
typedef struct {
    int argc;
    char **argv;
} CommandLine;

/* One micro-batch's tokens on the host, B*T each. */
typedef struct {
    int *inputs, *targets;
} Batch;

/* The device's memory before the arenas (cuda; known = 0 on the cpu): the
 * summary's measured peak counts from it. */
typedef struct {
    size_t free_before, total;
    int known;
} DeviceMemory;

/* Each step's wall time, for the summary's step-time report. */
typedef struct {
    double *ms; /* --steps + 1 of them */
    int n;
} StepTimes;

/* The data, as cli/train_data.h opens it. */
typedef struct {
    Loader train;
    Loader *val;          /* --val-data; NULL without val data */
    LoaderVerify *verify; /* a fresh run's check of the shards, running (data/loader.h) */
    Batch batch;
} TrainData;

/* The run's files: what it writes, what it resumed from. */
typedef struct {
    Outputs out;           /* --save, --log, --dump-grads (cli/outputs.h) */
    RunSession sess;       /* saves, resume, test hooks (ckpt/session.h) */
    LlmcFolder llmc;       /* --resume-llmc, --save-checkpoint-llmc (cli/llmc_folder.h) */
    char resume_dir[4096]; /* the save resumed from; "" for a new run */
} RunFiles;

/* What the run measures and predicts of its speed and memory, for the
 * progress line and the summary (cli/summary.c). */
typedef struct {
    TrainCosts costs;            /* --op-costs (cli/costs.h) */
    long long step_ns_predicted; /* opcost_step of the schedule; -1 without measured costs */
    OpProfile prof;              /* --profile-ops (kernels/profile.h) */
    DeviceMemory mem;
    StepTimes times;
} RunPerf;

/* How the run stops before its last step (cli/stop.c): by a signal (which,
 * the last completed step, and when it came: "after step 12"), or after
 * --max-bad-steps non-finite steps in a row (bad_steps: so far; a save
 * keeps it), with the command line for the rollback command. */
typedef struct {
    int sig, step;
    char when[96];
    int bad_steps;
    CommandLine cmd;
} StopState;

typedef struct {
    TrainOptions opt;
    Dist dist;
    Backend *be;
    GPTConfig cfg;
    GPT model;
    MemoryPlan plan;      /* the run's plan, its baseline counted (cli/recompute.h); the
                           * model's own (model.plan) has the arenas only */
    TrainData data;
    TrainEval *eval;      /* --eval-file; NULL without one */
    TextSampler sampler;  /* when sampling or generating; its RNG is saved */
    RunFiles files;
    int start_step;       /* the last step done before this run: 0, or the save's */
    Progress prog;        /* step figures, the in-step line */
    RunPerf perf;
    StopState stop;
} Trainer;

#endif
