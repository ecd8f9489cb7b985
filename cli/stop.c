/* cli/stop.c — what a stopped run keeps, and what it says it kept
 * (cli/stop.h). */
#include "cli/stop.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/signals.h"
#include "ckpt/checkpoint.h"
#include "cli/guard.h"
#include "cli/llmc_folder.h"
#include "cli/outputs.h"

/* The check sits between the test delay and the drawing, so that a signal
 * landed during the delay abandons the pass without a last line drawn. */
static int on_block(void *ctx, const GPT *g, int done)
{
    Progress *p = ctx;
    progress_block_delay(p);
    if (signals_pending()) return 1;
    progress_block_draw(p, g, done);
    return 0;
}

void stop_install_block_hook(GPT *g, Progress *p) { gpt_set_block_hook(g, on_block, p); }

/* A signal reaches the ranks at different moments: a rank without one
 * takes SIGTERM. */
int stop_agreed_signal(Dist *d)
{
    int sig = signals_pending();
    if (d->world > 1 && dist_mean(d, sig != 0) > 0 && !sig) sig = SIGTERM;
    return sig;
}

void stop_check_startup(Trainer *tr, const char *phase)
{
    int sig = stop_agreed_signal(&tr->dist);
    if (!sig) return;
    /* Before session_settle and the output claims: nothing of the user's
     * was moved, no log or save written; only the checkpoint folders this
     * run made are there, and they go too. */
    int code = TRAIN_EXIT_STOPPED_NOTHING;
    char what[4600];
    if (tr->files.resume_dir[0]) {
        code = TRAIN_EXIT_STOPPED_RESUMABLE;
        snprintf(what, sizeof what, "no step had run since the save, %s, which is still there "
                 "(the same command resumes it)", tr->files.resume_dir);
    } else if (tr->opt.llmc_resume) {
        code = TRAIN_EXIT_STOPPED_RESUMABLE;
        snprintf(what, sizeof what, "no step had run since llm.c's checkpoint %s, which is still "
                 "there (the same command resumes it)", tr->files.llmc.from.state);
    } else {
        snprintf(what, sizeof what, "nothing saved: no step had run");
    }
    llmc_folder_abandon(&tr->files.llmc, &tr->opt, &tr->dist);
    session_abandon(&tr->files.sess);
    printf("stopped by signal %d during start-up (%s); %s; no file was written or moved\n", sig,
           phase, what);
    dist_finalize(&tr->dist);
    exit(code);
}

enum { KEPT_CHECKPOINT = 1, KEPT_MODEL = 2 };

/* --save's model file now (cli/outputs.h). Collective. */
static int save_model(Trainer *tr, char *err, size_t len)
{
    return outputs_save_model(&tr->files.out, &tr->opt, &tr->dist, &tr->cfg,
                              tr->model.plan.num_params, err, len);
}

/* llm.c's checkpoint of `step` now (cli/llmc_folder.h). Collective. */
static int llmc_export(Trainer *tr, int step, char *err, size_t len)
{
    return llmc_folder_export(&tr->files.llmc, &tr->opt, step, &tr->model, &tr->dist,
                              &tr->data.train, &tr->sampler.rng, err, len);
}

/* The weights after the failed save exist only in memory. */
void stop_after_failed_save(Trainer *tr, int step, char *err, size_t len)
{
    if (!tr->opt.save) return;
    char why[4400];
    size_t n = strlen(err);
    if (save_model(tr, why, sizeof why) == 0)
        snprintf(err + n, len - n, "; the model after step %d is in %s (not resumable)", step,
                 tr->opt.save);
    else
        snprintf(err + n, len - n, "; %s", why);
}

/* Keep what the flags ask for after `step` completed steps: the checkpoint
 * (--checkpoint-dir) and the model file (--save). Writes a description of
 * what was kept into what; returns a mask of KEPT_*, or -1 with err.
 * Collective. */
static int keep_run(Trainer *tr, int step, char *what, size_t wlen, char *err, size_t len)
{
    if (step == tr->start_step) { /* this process finished no step */
        if (tr->files.resume_dir[0]) {
            snprintf(what, wlen, "no step finished since the resume: %s is still the newest "
                     "save; resume with --resume", tr->files.resume_dir);
            return KEPT_CHECKPOINT;
        }
        if (tr->files.llmc.from.step >= 0) {
            snprintf(what, wlen, "no step finished since the resume: llm.c's checkpoint of step "
                     "%d in %s is still the newest; resume with --resume-llmc",
                     tr->files.llmc.from.step, tr->files.llmc.from.dir);
            return KEPT_CHECKPOINT;
        }
        snprintf(what, wlen, "nothing saved: no step had finished");
        return 0;
    }
    int kept = 0;
    what[0] = 0;
    if (tr->files.sess.dir[0]) {
        if (session_save(&tr->files.sess, &tr->model, &tr->dist, &tr->data.train, &tr->sampler.rng,
                         step, tr->stop.bad_steps, err, len) != 0) {
            stop_after_failed_save(tr, step, err, len);
            return -1;
        }
        char sd[4200];
        ckpt_step_dir(sd, sizeof sd, tr->files.sess.dir, step);
        snprintf(what, wlen, "step %d is saved in %s (resume with --resume)", step, sd);
        kept |= KEPT_CHECKPOINT;
    }
    if (tr->opt.save) {
        if (save_model(tr, err, len) != 0) return -1;
        size_t n = strlen(what);
        snprintf(what + n, wlen - n, "%sthe model after step %d is in %s%s", n ? "; " : "", step,
                 tr->opt.save, kept ? "" : " (a model file only: not resumable)");
        kept |= KEPT_MODEL;
    }
    if (tr->opt.llmc_save_dir) { /* resumable too, with --resume-llmc */
        if (llmc_export(tr, step, err, len) != 0) return -1;
        size_t n = strlen(what);
        snprintf(what + n, wlen - n, "%sllm.c's checkpoint of step %d is in %s (resume with "
                 "--resume-llmc)", n ? "; " : "", step, tr->opt.llmc_save_dir);
        kept |= KEPT_CHECKPOINT;
    }
    if (!kept)
        snprintf(what, wlen, "nothing saved (no --checkpoint-dir or --save): the %d step%s "
                 "trained are lost", step - tr->start_step, step - tr->start_step == 1 ? "" : "s");
    return kept;
}

int stop_keep(Trainer *tr, char *err, size_t len)
{
    char what[9000];
    int kept = keep_run(tr, tr->stop.step, what, sizeof what, err, len);
    if (kept < 0) return -1;
    printf("stopped by signal %d %s; %s\n", tr->stop.sig, tr->stop.when, what);
    return kept & KEPT_CHECKPOINT ? TRAIN_EXIT_STOPPED_RESUMABLE
           : kept & KEPT_MODEL    ? TRAIN_EXIT_STOPPED_MODEL
                                  : TRAIN_EXIT_STOPPED_NOTHING;
}

/* Every rank gets here at the same step (the loss and the gradient norm
 * are reduced over the ranks), so rank 0 alone says it; a failed save is
 * said by each rank that saw it. */
int stop_nonfinite(Trainer *tr, int step, char *err, size_t len)
{
    int says = tr->dist.rank == 0;
    if (says)
        fprintf(stderr, "error: %d consecutive steps (up to step %d) had a non-finite loss or "
                "gradient norm (--max-bad-steps %d): aborting\n", tr->stop.bad_steps, step,
                tr->opt.max_bad_steps);
    char what[9000];
    if (keep_run(tr, step, what, sizeof what, err, len) < 0)
        fprintf(stderr, "error: %s\n", err); /* a save's fault may be this rank's alone */
    else if (says)
        fprintf(stderr, "aborted after step %d: %s\n", step, what);
    if (says)
        guard_print_rollback(&tr->files.sess, tr->stop.cmd.argc, tr->stop.cmd.argv, step,
                             tr->stop.bad_steps);
    return TRAIN_EXIT_NONFINITE;
}
