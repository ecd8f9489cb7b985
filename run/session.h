/* run/session.h — what the training loop calls to save, resume and guard a
 * run: the glue between the trainer's objects (GPT, Loader) and the
 * checkpoint folders (checkpoint.h).
 *
 * Owns: RunConfig (what this layer needs to know of a run; the CLI fills it
 * from its flags, so run/ knows nothing of the command line), RunSession
 * (the checkpoint folder, the step of the newest save, the test hooks) and
 * the mapping of a live run to a RunState and back.
 *
 * Test-only environment variables (read once, by session_init):
 *   TRAIN_GPT_TEST_NAN_STEP=LIST   after the backward of each listed step
 *       (1-based; "3", "3,7" or "4-9"), a NaN is written into the first
 *       gradient element, to exercise the non-finite guard;
 *   TRAIN_GPT_TEST_SAVE_DELAY_MS=MS sleep between the files of a save, to
 *       widen the window a kill can land in (base/fileio.h). */
#ifndef RUN_SESSION_H
#define RUN_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "data/shard.h"
#include "distributed/dist.h"
#include "model/gpt.h"
#include "model/sample.h"
#include "run_state.h"

#define SESSION_MAX_NAN_RANGES 32

/* What run/ needs to know of a run. The CLI fills it from its flags
 * (train_gpt.c); strings point into the caller's storage (argv). */
typedef struct {
    /* checkpoints */
    const char *checkpoint_dir;   /* --checkpoint-dir; NULL = no saves */
    const char *resume_path;      /* --resume=PATH; NULL = newest in checkpoint_dir */
    int resume;                   /* --resume given (with or without a path) */
    int save_every, keep;         /* --save-every (0 = end only), --keep (0 = all) */
    /* what fixes the run's trajectory: stored in every save and compared
     * on resume (run_state.h says which may change) */
    int batch, seq_len, grad_accum, steps, zero, shuffle;
    int lr_schedule, warmup;      /* LrKind (model/lr_schedule.h), steps */
    int recompute, loss_chunk;    /* RecomputeMode (model/schedule.h), tokens */
    uint64_t seed;
    float lr, lr_min_frac, beta1, beta2, eps, weight_decay, grad_clip;
} RunConfig;

typedef struct {
    RunConfig cfg;        /* a copy, taken by session_init */
    char dir[4096];       /* where saves go; "" = no saving */
    int last_saved;       /* step of the newest save written or resumed from; -1 none */
    int rank, world_size; /* from distributed/ */
    int n_nan;
    int nan_lo[SESSION_MAX_NAN_RANGES], nan_hi[SESSION_MAX_NAN_RANGES];
} RunSession;

/* Takes a copy of c, checks the settings that go together, reads the test hooks, and, with
 * --checkpoint-dir, creates the folder and checks that it is writable, so a
 * bad path fails at start-up and not at the first save hours later. */
int session_init(RunSession *s, const RunConfig *c, const Dist *d, char *err,
                 size_t err_len);

/* With --resume: the save to continue from. Returns 1 with its folder in
 * save_dir, 0 when there is nothing to resume (plain --resume and no
 * complete save yet: a new run starts, with a note), -1 on error. */
int session_locate(RunSession *s, char *save_dir, size_t len, char *err,
                   size_t err_len);

/* Load a save into a model and a data loader built with this run's flags:
 * parameters, AdamW m, v (this rank's range, gathered from whichever state
 * files hold it) and step, the data position, the sampler's RNG, the step. Refuses, naming every difference, when the configuration does
 * not match. */
int session_resume(RunSession *s, const char *save_dir, GPT *g,
                   Loader *ld, SampleRng *rng, int *step, int *bad_steps, char *err,
                   size_t err_len);

/* Save the run after `step` steps into s->dir/step_N (no-op without a
 * dir). Collective: every rank calls it. Each rank writes its optimizer
 * slice ([g->opt_begin, g->opt_end)); rank 0 writes model.bin and, when all
 * are written, COMPLETE. A failure on any rank fails it on every rank. */
int session_save(RunSession *s, GPT *g, Dist *d, const Loader *ld,
                 const SampleRng *rng, int step, int bad_steps, char *err, size_t err_len);

/* A save is due after this step (--save-every, the last step). */
int session_save_due(const RunSession *s, int step);

/* The test hook: poison the gradients when TRAIN_GPT_TEST_NAN_STEP lists step. */
void session_test_inject_nan(const RunSession *s, GPT *g, int step);

/* This run's configuration and progress as a RunState. The train data is
 * recorded by content hash when the loader has them (loader_hash, which
 * the caller runs before saving or resuming), else by token counts; st
 * owns the hashes (run_state_free). */
void session_fill_state(const RunSession *s, const GPTConfig *cfg,
                        const Loader *ld, int step, int adam_t, int bad_steps, RunState *st);
/* (the sampler's RNG is set by the caller: st->sample_rng) */

#endif
