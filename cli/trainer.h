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
#include "interop/llmc_ckpt.h"
#include "cli/outputs.h"
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
    LlmcFiles llmc_from;     /* --resume-llmc's files (step -1: none) */
    int llmc_saved;          /* the last llm.c export's step, or the resumed one's when
                              * the export folder has it already; -1 none */
    OwnLock llmc_lock;       /* --save-checkpoint-llmc's folder, held to exit (rank 0) */
    int llmc_made;           /* that folder was absent: this run made it (rank 0) */
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

/* llm.c's checkpoints (cli/llmc_folder.c). At start-up, every rank: find
 * --resume-llmc's files; rank 0, training (not --plan, --generate): make
 * --save-checkpoint-llmc's folder and sort out the llm.c files already in
 * it (interop/llmc_claim.h), telling every rank whether the resumed step is
 * there already. Exit 1 naming the path on a fault. Collective; needs the
 * native resume located (session_locate) first. */
void trainer_llmc_start(Trainer *tr);
/* A run stopped during start-up: the --save-checkpoint-llmc folder
 * trainer_llmc_start made (nothing but its lock in it) is removed. Rank 0. */
void trainer_llmc_abandon(Trainer *tr);
/* Once the run has started: move the files trainer_llmc_start only checked
 * (another run's under --overwrite-checkpoints, the steps after the resumed
 * one) aside, so a run refused before that moves nothing. Exit 1 on a
 * fault. Rank 0 works. */
void trainer_llmc_settle(Trainer *tr);
/* An llm.c export is due after this step (--save-every, the last step). */
int trainer_llmc_due(const Trainer *tr, int step);
/* Write step's llm.c checkpoint (no-op without the flag, or when written
 * already). Collective. */
int trainer_llmc_export(Trainer *tr, int step, char *err, size_t len);
/* Load --resume-llmc's checkpoint into the built model and train loader. */
int trainer_llmc_resume(Trainer *tr, char *err, size_t len);


#endif
