/* cli/trainer.h — the run's state, shared by the parts of the command that
 * need most of it: start-up (cli/startup.c), the training loop
 * (cli/loop.c), its stops (cli/stop.c), the end of a run (train_gpt.c) and
 * the end-of-run summary (cli/summary.c). The CLI's own header, not a
 * library's.
 *
 * Owns: Trainer, and its small parts declared here (the command line, the
 * host batch, the device memory, the step times, the stop record). Its
 * other parts belong to their modules: the output files to cli/outputs.h,
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

/* A stop by a signal: which, the last completed step, and when it came
 * ("after step 12"), for what cli/stop.c prints. */
typedef struct {
    int sig, step;
    char when[96];
} StopRecord;

typedef struct {
    TrainOptions opt;
    Dist dist;
    Backend *be;
    GPTConfig cfg;
    GPT model;
    Loader train;
    Loader *val;             /* --val-data; NULL without val data */
    LoaderVerify *verify;    /* a fresh run's check of the shards, running (data/loader.h) */
    TrainEval *eval;         /* --eval-file; NULL without one */
    TextSampler sampler;     /* when sampling or generating; its RNG is saved */
    Batch batch;
    Outputs out;             /* --save, --log, --dump-grads (cli/outputs.h) */
    RunSession sess;         /* saves, resume, test hooks (ckpt/session.h) */
    LlmcFolder llmc;         /* --resume-llmc, --save-checkpoint-llmc (cli/llmc_folder.h) */
    char resume_dir[4096];   /* the save resumed from; "" for a new run */
    int start_step, bad_steps;
    MemoryPlan plan;         /* the run's plan, its baseline counted (cli/recompute.h); the
                              * model's own (model.plan) has the arenas only */
    TrainCosts costs;        /* --op-costs (cli/costs.h) */
    long long step_ns_predicted; /* opcost_step of the schedule; -1 without measured costs */
    OpProfile prof;          /* --profile-ops (kernels/profile.h) */
    Progress prog;           /* step figures, the in-step line */
    DeviceMemory mem;
    StepTimes times;
    StopRecord stop;
    CommandLine cmd;
} Trainer;

#endif
