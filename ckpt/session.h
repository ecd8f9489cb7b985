/* ckpt/session.h — what the training loop calls to save, resume and guard a
 * run: the glue between the trainer's objects (GPT, Loader) and the
 * checkpoint folders (checkpoint.h).
 *
 * Owns: RunConfig (what this layer needs to know of a run; the CLI fills it
 * from its flags, so ckpt/ knows nothing of the command line), RunSession
 * (the checkpoint folder, its lock and the run's identity, the step of the
 * newest save, the test hooks) and the mapping of a live run to a RunState
 * and back. Which save a run continues from, and its rollback point, are
 * in rollback.c; the folder's lock and the claim on it in ownership.h.
 *
 * Start-up, in this order (every rank calls each; rank 0 alone touches
 * the folder and tells the others):
 *   session_init     checks, creates the folder, takes its lock (training)
 *   session_check_shared  every rank sees the folder rank 0 writes (several)
 *   session_locate   the save to resume, if any
 *   session_claim    the run id; another run's saves refused or moved
 *                    aside; this run's newer saves moved to abandoned/
 *   session_resume   (after the model and data are built)
 *
 * Test-only environment variables (read once, by session_init, in the test
 * build only: base/test_hooks.h):
 *   TRAIN_GPT_TEST_NAN_STEP=LIST   after the backward of each listed step
 *       (1-based; "3", "3,7" or "4-9"), a NaN is written into the first
 *       gradient element, to exercise the non-finite guard;
 *   TRAIN_GPT_TEST_SAVE_DELAY_MS=MS sleep between the files of a save, to
 *       widen the window a kill can land in (base/fileio.h);
 *   TRAIN_GPT_TEST_STALL=RANK:STEP:SECONDS  rank RANK sleeps before step
 *       STEP, so the others wait on it in a collective (the watchdog test);
 *   TRAIN_GPT_TEST_CLOCK_JUMP=RANK:STEP:SECONDS  before step STEP the clock
 *       rank RANK paces --save-minutes by moves SECONDS on, with no sleep
 *       (no other rank waits, and no other clock moves). */
#ifndef CKPT_SESSION_H
#define CKPT_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "data/loader.h"
#include "distributed/dist.h"
#include "model/gpt.h"
#include "model/sample.h"
#include "checkpoint.h"
#include "ownership.h"
#include "run_state.h"

#define SESSION_MAX_NAN_RANGES 32

/* What ckpt/ needs to know of a run. The CLI fills it from its flags
 * (train_options_run_config, cli/options.h); strings point into the
 * caller's storage (argv). */
typedef struct {
    /* checkpoints */
    const char *checkpoint_dir;   /* --checkpoint-dir; NULL = no saves */
    const char *resume_path;      /* --resume=PATH; NULL = newest in checkpoint_dir */
    int resume;                   /* --resume given (with or without a path) */
    int save_every, keep;         /* --save-every (0 = end only), --keep (0 = all) */
    float save_minutes;           /* --save-minutes: also save by time (0 = off) */
    int overwrite;                /* --overwrite-checkpoints: move another run's saves aside */
    int exclusive;                /* training: make, lock, claim the folder (not --plan, --generate) */
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
    double last_save_ms;  /* when that save ended (or the session began), monotonic ms */
    int rank, world_size; /* from distributed/ */
    OwnLock lock;         /* the folder's lock (rank 0, training) */
    int made_dir;         /* the folder was absent at start-up: this run made it
                           * (agreed over ranks by session_claim) */
    uint64_t run_id;      /* this run's identity, kept across resumes (session_claim) */
    CkptEntry resumed;    /* the save session_locate chose (step -1: none) */
    int n_nan;
    int nan_lo[SESSION_MAX_NAN_RANGES], nan_hi[SESSION_MAX_NAN_RANGES];
    int stall[3];         /* TRAIN_GPT_TEST_STALL: rank, step (0 = off), seconds */
    int clock_jump[3];    /* TRAIN_GPT_TEST_CLOCK_JUMP: rank, step (0 = off), seconds */
    double clock_jumped_ms; /* the jumps made so far (the pace's clock is this ahead) */
} RunSession;

/* Takes a copy of c, checks the settings that go together, reads the test
 * hooks, and, with --checkpoint-dir and c->exclusive (a training run),
 * creates the folder and checks that it is writable, so a bad path fails
 * at start-up and not at the first save hours later, and rank 0 takes the
 * folder's lock. Without c->exclusive (--plan, --generate) the folder is
 * left untouched: neither made nor written. */
int session_init(RunSession *s, const RunConfig *c, const Dist *d, char *err,
                 size_t err_len);

/* Several ranks training with a checkpoint folder: every rank must see the
 * folder rank 0 writes (each writes its state file into a save, rank 0
 * lists them all; a resume reads them). Rank 0 writes a file with a fresh
 * token, every rank reads it back, rank 0 removes it. -1 on every rank
 * when any did not see it, rank 0's err naming the rank and its host
 * (the other ranks remove the folder they made, when empty); else 0. Collective; a no-op with one rank, without a folder, or for
 * --plan and --generate. */
int session_check_shared(RunSession *s, Dist *d, char *err, size_t err_len);

/* With --resume: the save to continue from. --resume=DIR/step_N is taken
 * as given. Otherwise (plain --resume, --resume=DIR) rank 0 checks the
 * newest complete save whole (every file's size and crc32, as the resume
 * will read it) and, when it is corrupt, says so and falls back to the
 * previous one; the ranks take its choice. Returns 1 with its folder in
 * save_dir, 0 when there is nothing to resume (no complete save yet: a
 * new run starts, with a note), -1 on error (one when every save found is
 * corrupt). Collective. */
int session_locate(RunSession *s, Dist *d, char *save_dir, size_t len, char *err,
                   size_t err_len);

/* A run stopped before it trained (a signal during start-up): the folder
 * session_init made for it (holding nothing but the lock file) is removed
 * with its lock, so a stopped start leaves the disk as it was; a folder
 * that existed keeps its lock file, as after every run. Rank 0. */
void session_abandon(RunSession *s);

/* Decide the run id (the resumed save's, or a new one) and, training with
 * a folder, check its step folders (own_claim without moving anything:
 * session_settle moves): rank 0 works, every rank gets the outcome.
 * Collective. */
int session_claim(RunSession *s, Dist *d, char *err, size_t err_len);

/* Once the run has started (its resume accepted): move what session_claim
 * only checked (another run's saves under --overwrite-checkpoints, this
 * run's saves newer than the one resumed) aside. Collective. */
int session_settle(RunSession *s, Dist *d, char *err, size_t err_len);

/* The rollback point: the newest save of this run made outside a
 * non-finite streak. 1 with its folder in out, 0 when there is none. */
int session_rollback_point(const RunSession *s, char *out, size_t len);

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

/* A save is due after this step: --save-every, the last step, or
 * --save-minutes since the last save by rank 0's clock. Collective when
 * --save-minutes is on and there are several ranks (every rank calls it
 * after every step), so that the ranks save together. */
int session_save_due(const RunSession *s, Dist *d, int step);

#ifdef TRAIN_GPT_TEST_HOOKS
/* The test hooks (the test build only; callers wrap them in TEST_HOOK):
 * poison the gradients when TRAIN_GPT_TEST_NAN_STEP lists step; sleep
 * before step when TRAIN_GPT_TEST_STALL names it and this rank, and move
 * the pace's clock on when TRAIN_GPT_TEST_CLOCK_JUMP does. */
void session_test_inject_nan(const RunSession *s, GPT *g, int step);
void session_test_stall(RunSession *s, int step);
#endif

/* Release the folder's lock (at exit; the kernel also drops it). */
void session_close(RunSession *s);

/* The training data's fingerprint, as saves record it (RunState): by
 * content when the loader has its hashes (loader_hash), else by token
 * counts. */
uint64_t session_data_fingerprint(const Loader *ld);

/* This run's configuration and progress as a RunState. The train data is
 * recorded by content hash when the loader has them (loader_hash, which
 * the caller runs before saving or resuming), else by token counts; st
 * owns the hashes (run_state_free). */
void session_fill_state(const RunSession *s, const GPTConfig *cfg,
                        const Loader *ld, int step, int adam_t, int bad_steps, RunState *st);
/* (the sampler's RNG is set by the caller: st->sample_rng) */

#endif
