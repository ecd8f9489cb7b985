/* cli/trainer.h — the trainer's state, shared by the command's two halves:
 * set-up, the end of a run and --generate (train_gpt.c), and the training
 * loop with its stops (cli/loop.c). The CLI's own header, not a library's.
 *
 * Owns: Trainer, and what a stopped run keeps. On a stop (a signal, or
 * --max-bad-steps non-finite steps) the run keeps what its flags ask for,
 * as of its last completed step: a resumable checkpoint with
 * --checkpoint-dir, the model file with --save; and says plainly what it
 * kept, or that nothing was. */
#ifndef TRAIN_GPT_H
#define TRAIN_GPT_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "data/loader.h"
#include "distributed/dist.h"
#include "kernels/profile.h"
#include "model/gpt.h"
#include "cli/outputs.h"
#include "cli/llmc_folder.h"
#include "ckpt/session.h"
#include "cli/costs.h"
#include "cli/evaluate.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/generate.h"

typedef struct {
    TrainOptions opt;
    Dist dist;
    Backend *be;
    GPTConfig cfg;
    GPT model;
    Loader train, val;
    int have_val;
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
    long long step_ns_predicted; /* opcost_step of the schedule; -1 without measured costs */
    double *step_ms;         /* each step's wall time, for the summary */
    int n_step_ms;
    Progress prog;           /* step figures, in-step line, stops at blocks */
    /* a stop by a signal: which, the last completed step, and when it came */
    int stop_sig, stop_step;
    char stop_when[96];
} Trainer;

/* train_loop's return when a signal stopped the run (tr->stop_*). */
#define TRAIN_STOPPED 1000

/* Steps start_step+1 .. --steps, with val losses, samples, saves, and the
 * final val loss. Returns 0, -1 with err, TRAIN_EXIT_NONFINITE (after
 * keeping what the flags ask), or TRAIN_STOPPED. Collective. */
int train_loop(Trainer *tr, char *err, size_t len);

/* Start-up's stop point, after each long phase (`phase` names it: "initialising
 * the parameters"): when any rank has a stop signal (base/signals.h), every rank prints
 * what a stop before the first step keeps (nothing; a resume's save is still
 * there) and exits with TRAIN_EXIT_STOPPED_NOTHING, or _RESUMABLE when
 * resuming. The phases give up early on the flag (base/stop.h), so a stop
 * lands here within a fraction of a second. Collective; before
 * session_settle only (nothing moved yet). (cli/loop.c) */
void trainer_check_startup(Trainer *tr, const char *phase);

/* After TRAIN_STOPPED: keep what the flags ask, print what was kept, and
 * return the exit status (base/signals.h's TRAIN_EXIT_STOPPED_*), or -1 with
 * err when a save failed. Collective. */
int train_stop(Trainer *tr, char *err, size_t len);


#endif
