/* run/session.h — what the training loop calls to save, resume and guard a
 * run: the glue between the trainer's objects (GPT, Loader, TrainOptions)
 * and the checkpoint folders (checkpoint.h).
 *
 * Owns: RunSession (the checkpoint folder, the step of the newest save, the
 * test hooks) and the mapping of a live run to a RunState and back.
 *
 * Test-only environment variables (read once, by session_init):
 *   TRAIN_GPT_TEST_NAN_STEP=LIST   after the backward of each listed step
 *       (1-based; "3", "3,7" or "4-9"), a NaN is written into the first
 *       gradient element, to exercise the non-finite guard;
 *   TRAIN_GPT_TEST_SAVE_DELAY_MS=MS sleep between the files of a save, to
 *       widen the window a kill can land in (fileio.h). */
#ifndef RUN_SESSION_H
#define RUN_SESSION_H

#include <stddef.h>

#include "data/shard.h"
#include "dist/dist.h"
#include "model/gpt.h"
#include "model/sample.h"
#include "run_state.h"
#include "train_options.h"

#define SESSION_MAX_NAN_RANGES 32

typedef struct {
    char dir[4096];       /* where saves go; "" = no saving */
    int last_saved;       /* step of the newest save written or resumed from; -1 none */
    int rank, world_size, zero; /* from dist/ and --zero */
    int n_nan;
    int nan_lo[SESSION_MAX_NAN_RANGES], nan_hi[SESSION_MAX_NAN_RANGES];
} RunSession;

/* Checks the flags that go together, reads the test hooks, and, with
 * --checkpoint-dir, creates the folder and checks that it is writable, so a
 * bad path fails at start-up and not at the first save hours later. */
int session_init(RunSession *s, const TrainOptions *o, const Dist *d, char *err,
                 size_t err_len);

/* With --resume: the save to continue from. Returns 1 with its folder in
 * save_dir, 0 when there is nothing to resume (plain --resume and no
 * complete save yet: a new run starts, with a note), -1 on error. */
int session_locate(RunSession *s, const TrainOptions *o, char *save_dir, size_t len, char *err,
                   size_t err_len);

/* Load a save into a model and a data loader built with this run's flags:
 * parameters, AdamW m, v (this rank's range, gathered from whichever state
 * files hold it) and step, the data position, the sampler's RNG, the step. Refuses, naming every difference, when the configuration does
 * not match. */
int session_resume(RunSession *s, const TrainOptions *o, const char *save_dir, GPT *g,
                   Loader *ld, SampleRng *rng, int *step, int *bad_steps, char *err,
                   size_t err_len);

/* Save the run after `step` steps into s->dir/step_N (no-op without a
 * dir). Collective: every rank calls it. Each rank writes its optimizer
 * slice ([g->opt_begin, g->opt_end)); rank 0 writes model.bin and, when all
 * are written, COMPLETE. A failure on any rank fails it on every rank. */
int session_save(RunSession *s, const TrainOptions *o, GPT *g, Dist *d, const Loader *ld,
                 const SampleRng *rng, int step, int bad_steps, char *err, size_t err_len);

/* A save is due after this step (--save-every, the last step). */
int session_save_due(const RunSession *s, const TrainOptions *o, int step);

/* The test hook: poison the gradients when TRAIN_GPT_TEST_NAN_STEP lists step. */
void session_test_inject_nan(const RunSession *s, GPT *g, int step);

/* This run's configuration and progress as a RunState. */
void session_fill_state(const RunSession *s, const TrainOptions *o, const GPTConfig *cfg,
                        const Loader *ld, int step, int adam_t, int bad_steps, RunState *st);
/* (the sampler's RNG is set by the caller: st->sample_rng) */

#endif
