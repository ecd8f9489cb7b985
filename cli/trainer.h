/* cli/trainer.h — the run's state, shared by the parts of the command that
 * need most of it: start-up and the end of a run (train_gpt.c), the
 * training loop (cli/loop.c), its stops (cli/stop.c) and the end-of-run
 * summary (cli/summary.c). The CLI's own header, not a library's.
 *
 * Owns: Trainer. Its parts belong to their modules: the output files to
 * cli/outputs.h, llm.c's checkpoints to cli/llmc_folder.h, the saves to
 * ckpt/session.h; the files that need only a part include only its
 * header. */
#ifndef TRAIN_TRAINER_H
#define TRAIN_TRAINER_H

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

typedef struct {
    TrainOptions opt;
    Dist dist;
    Backend *be;
    GPTConfig cfg;
    GPT model;
    Loader train, val;
    int have_val;
    LoaderVerify *verify; /* a fresh run's check of the shards, running (data/loader.h) */
    Outputs out;             /* --save, --log, --dump-grads (cli/outputs.h) */
    int argc;                /* the command line, for the rollback command */
    char **argv;
    int *inputs, *targets; /* host, B*T */
    size_t mem_free_before;  /* device bytes free before the arenas (cuda) */
    size_t mem_total;        /* device bytes in all (cuda) */
    int have_mem_info;
    TextSampler sampler;     /* when sampling or generating; its RNG is saved */
    TrainEval eval;          /* --eval-file */
    int have_eval;
    RunSession sess;         /* saves, resume, test hooks (ckpt/session.h) */
    char resume_dir[4096];   /* the save resumed from; "" for a new run */
    int start_step, bad_steps;
    LlmcFolder llmc;         /* --resume-llmc, --save-checkpoint-llmc (cli/llmc_folder.h) */
    OpProfile prof;          /* --profile-ops (kernels/profile.h) */
    TrainCosts costs;        /* --op-costs (cli/costs.h) */
    MemoryPlan plan;         /* the run's plan, its baseline counted (cli/recompute.h); the
                              * model's own (model.plan) has the arenas only */
    long long step_ns_predicted; /* opcost_step of the schedule; -1 without measured costs */
    double *step_ms;         /* each step's wall time, for the summary */
    int n_step_ms;
    Progress prog;           /* step figures, in-step line, stops at blocks */
    /* a stop by a signal: which, the last completed step, and when it came */
    int stop_sig, stop_step;
    char stop_when[96];
} Trainer;

#endif
