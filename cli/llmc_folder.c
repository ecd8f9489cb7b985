/* cli/llmc_folder.c — the trainer's side of llm.c's checkpoints
 * (cli/llmc_folder.h). */
#include "cli/llmc_folder.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "interop/llmc_claim.h"

/* Rank 0: --save-checkpoint-llmc's folder, made now so that a bad path
 * fails at start-up, not at the first save. */
static void make_folder(LlmcFolder *f, const Dist *d, const char *dir)
{
    char why[4400];
    struct stat st;
    if (stat(dir, &st) != 0) {
        char up[4096];
        io_dirname(dir, up, sizeof up);
        if (io_probe_writable(up, why, sizeof why) != 0)
            dist_fail(d, 1, "--save-checkpoint-llmc %s: its parent folder must exist "
                      "and be writable: %s", dir, why);
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            dist_fail(d, 1, "--save-checkpoint-llmc %s: cannot create: %s", dir,
                      strerror(errno));
        f->made = 1;
    }
    if (io_probe_writable(dir, why, sizeof why) != 0)
        dist_fail(d, 1, "--save-checkpoint-llmc %s", why);
}

/* Rank 0: the folder's lock, one run at a time as in --checkpoint-dir
 * (whose lock covers a folder given to both flags: a second flock of the
 * same file would fail), and the llm.c files already there: another
 * run's refused, this run's later ones moved aside (interop/llmc_claim.h).
 * Returns the resumed step when the folder has it already, else -1. */
static int claim_folder(LlmcFolder *f, const TrainOptions *o, const Dist *d,
                        const char *ckpt_dir, int resumed_step, const char *dir, int move)
{
    char err[4600];
    struct stat a, b;
    int shared = ckpt_dir[0] && stat(ckpt_dir, &a) == 0 && stat(dir, &b) == 0 &&
                 a.st_dev == b.st_dev && a.st_ino == b.st_ino;
    if (!move && !shared &&
        own_lock(&f->lock, "--save-checkpoint-llmc", dir, err, sizeof err) != 0)
        dist_fail(d, 1, "%s", err);
    int resumed = o->llmc_resume ? f->from.step : resumed_step;
    int kept;
    if (llmc_claim(dir, resumed, o->overwrite_checkpoints, move, &kept, err, sizeof err) != 0)
        dist_fail(d, 1, "%s", err);
    if (kept >= 0 && !o->llmc_resume && !move)
        printf("note: --save-checkpoint-llmc %s: step %d, where this run resumes, is there "
               "already: not written again\n", dir, kept);
    return kept;
}

void llmc_folder_start(LlmcFolder *f, const TrainOptions *o, Dist *d, const char *ckpt_dir,
                       int resumed_step)
{
    char err[4600];
    f->saved = -1;
    f->lock.fd = -1;
    f->from.step = -1;
    if (o->llmc_resume &&
        llmc_ckpt_locate(o->llmc_resume, d->rank, &f->from, err, sizeof err) != 0)
        dist_fail(d, 1, "%s", err);
    /* before the export folder is claimed (its later files moved aside) and
     * the train data read; llmc_folder_resume checks the imported step again */
    if (o->llmc_resume && !o->plan && o->generate == 0 && f->from.step > o->steps)
        dist_fail(d, 1, "cannot resume from %s: it is at step %d, beyond --steps %d "
                  "(--steps is the run's total)", f->from.state, f->from.step, o->steps);
    /* --plan and --generate write no checkpoint: the folder is left alone,
     * as --checkpoint-dir's is (ckpt/session.h) */
    if (!o->llmc_save_dir || o->plan || o->generate > 0) return;
    int kept = -1;
    if (d->rank == 0) {
        make_folder(f, d, o->llmc_save_dir);
        kept = claim_folder(f, o, d, ckpt_dir, resumed_step, o->llmc_save_dir, 0);
    }
    /* every rank skips that step's export alike: it is collective */
    dist_broadcast(d, &kept, sizeof kept);
    f->saved = kept;
}

void llmc_folder_abandon(LlmcFolder *f, const TrainOptions *o, const Dist *d)
{
    const char *dir = o->llmc_save_dir;
    if (!dir || !f->made || d->rank != 0) return;
    if (f->lock.fd >= 0) { /* its own lock (not --checkpoint-dir's folder) */
        char p[4200];
        io_err(p, sizeof p, "%s/%s", dir, OWN_LOCK_FILE);
        unlink(p); /* while still held */
        own_unlock(&f->lock);
    }
    rmdir(dir); /* fails, leaving it, if anything else is in it */
}

void llmc_folder_settle(LlmcFolder *f, const TrainOptions *o, Dist *d, const char *ckpt_dir,
                        int resumed_step)
{
    if (!o->llmc_save_dir || o->plan || o->generate > 0 || d->rank != 0) return;
    /* a failure aborts every rank */
    claim_folder(f, o, d, ckpt_dir, resumed_step, o->llmc_save_dir, 1);
}

int llmc_folder_due(const LlmcFolder *f, const TrainOptions *o, int step)
{
    if (!o->llmc_save_dir || step == f->saved) return 0;
    return (o->save_every > 0 && step % o->save_every == 0) || step == o->steps;
}

int llmc_folder_export(LlmcFolder *f, const TrainOptions *o, int step, GPT *g, Dist *d,
                       const Loader *train, const SampleRng *rng, char *err, size_t len)
{
    if (!o->llmc_save_dir || step == f->saved) return 0;
    if (llmc_ckpt_export(o->llmc_save_dir, step, o->save_dtype ? 5 : 3, g, d, train, rng, err,
                         len) != 0)
        return -1;
    f->saved = step;
    return 0;
}

int llmc_folder_resume(LlmcFolder *f, const TrainOptions *o, GPT *g, Dist *d, Loader *train,
                       SampleRng *rng, int *start_step, char *err, size_t len)
{
    if (llmc_ckpt_import(&f->from, g, d, train, rng, start_step, err, len) != 0) return -1;
    if (*start_step > o->steps) {
        snprintf(err, len, "cannot resume from %s: it is at step %d, beyond --steps %d (--steps "
                 "is the run's total)", f->from.state, *start_step, o->steps);
        return -1;
    }
    /* step R is not exported again where the export folder has it already
     * (claim_folder set f->saved); into another folder, --steps R writes it */
    return 0;
}
