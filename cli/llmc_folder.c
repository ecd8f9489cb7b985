/* cli/llmc_folder.c — the trainer's side of llm.c's checkpoints
 * (--save-checkpoint-llmc, --resume-llmc): when they are written and read;
 * the format and the mapping are interop/llmc_ckpt.h's. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "interop/llmc_ckpt.h"
#include "interop/llmc_claim.h"
#include "ckpt/ownership.h"
#include "cli/trainer.h"

/* Rank 0: --save-checkpoint-llmc's folder, made now so that a bad path
 * fails at start-up, not at the first save. */
static void make_folder(Trainer *tr, const char *dir)
{
    char why[4400];
    struct stat st;
    if (stat(dir, &st) != 0) {
        char up[4096];
        io_dirname(dir, up, sizeof up);
        if (io_probe_writable(up, why, sizeof why) != 0)
            dist_fail(&tr->dist, 1, "--save-checkpoint-llmc %s: its parent folder must exist "
                      "and be writable: %s", dir, why);
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            dist_fail(&tr->dist, 1, "--save-checkpoint-llmc %s: cannot create: %s", dir,
                      strerror(errno));
        tr->llmc_made = 1;
    }
    if (io_probe_writable(dir, why, sizeof why) != 0)
        dist_fail(&tr->dist, 1, "--save-checkpoint-llmc %s", why);
}

/* Rank 0: the folder's lock, one run at a time as in --checkpoint-dir
 * (whose lock covers a folder given to both flags: a second flock of the
 * same file would fail), and the llm.c files already there: another
 * run's refused, this run's later ones moved aside (interop/llmc_claim.h).
 * Returns the resumed step when the folder has it already, else -1. */
static int claim_folder(Trainer *tr, const char *dir, int move)
{
    const TrainOptions *o = &tr->opt;
    char err[4600];
    struct stat a, b;
    int shared = tr->sess.dir[0] && stat(tr->sess.dir, &a) == 0 && stat(dir, &b) == 0 &&
                 a.st_dev == b.st_dev && a.st_ino == b.st_ino;
    if (!move && !shared &&
        own_lock(&tr->llmc_lock, "--save-checkpoint-llmc", dir, err, sizeof err) != 0)
        dist_fail(&tr->dist, 1, "%s", err);
    int resumed = o->llmc_resume ? tr->llmc_from.step
                  : tr->resume_dir[0] ? tr->sess.resumed.step : -1;
    int kept;
    if (llmc_claim(dir, resumed, o->overwrite_checkpoints, move, &kept, err, sizeof err) != 0)
        dist_fail(&tr->dist, 1, "%s", err);
    if (kept >= 0 && !o->llmc_resume && !move)
        printf("note: --save-checkpoint-llmc %s: step %d, where this run resumes, is there "
               "already: not written again\n", dir, kept);
    return kept;
}

void trainer_llmc_start(Trainer *tr)
{
    const TrainOptions *o = &tr->opt;
    char err[4600];
    tr->llmc_saved = -1;
    tr->llmc_lock.fd = -1;
    tr->llmc_from.step = -1;
    if (o->llmc_resume &&
        llmc_ckpt_locate(o->llmc_resume, tr->dist.rank, &tr->llmc_from, err, sizeof err) != 0)
        dist_fail(&tr->dist, 1, "%s", err);
    /* before the export folder is claimed (its later files moved aside) and
     * the train data read; trainer_llmc_resume checks the imported step again */
    if (o->llmc_resume && !o->plan && o->generate == 0 && tr->llmc_from.step > o->steps)
        dist_fail(&tr->dist, 1, "cannot resume from %s: it is at step %d, beyond --steps %d "
                  "(--steps is the run's total)", tr->llmc_from.state, tr->llmc_from.step,
                  o->steps);
    /* --plan and --generate write no checkpoint: the folder is left alone,
     * as --checkpoint-dir's is (ckpt/session.h) */
    if (!o->llmc_save_dir || o->plan || o->generate > 0) return;
    int kept = -1;
    if (tr->dist.rank == 0) {
        make_folder(tr, o->llmc_save_dir);
        kept = claim_folder(tr, o->llmc_save_dir, 0);
    }
    /* every rank skips that step's export alike: it is collective */
    dist_broadcast(&tr->dist, &kept, sizeof kept);
    tr->llmc_saved = kept;
}

void trainer_llmc_abandon(Trainer *tr)
{
    const char *dir = tr->opt.llmc_save_dir;
    if (!dir || !tr->llmc_made || tr->dist.rank != 0) return;
    if (tr->llmc_lock.fd >= 0) { /* its own lock (not --checkpoint-dir's folder) */
        char p[4200];
        io_err(p, sizeof p, "%s/%s", dir, OWN_LOCK_FILE);
        unlink(p); /* while still held */
        own_unlock(&tr->llmc_lock);
    }
    rmdir(dir); /* fails, leaving it, if anything else is in it */
}

void trainer_llmc_settle(Trainer *tr)
{
    const TrainOptions *o = &tr->opt;
    if (!o->llmc_save_dir || o->plan || o->generate > 0 || tr->dist.rank != 0) return;
    claim_folder(tr, o->llmc_save_dir, 1); /* a failure aborts every rank */
}

int trainer_llmc_due(const Trainer *tr, int step)
{
    const TrainOptions *o = &tr->opt;
    if (!o->llmc_save_dir || step == tr->llmc_saved) return 0;
    return (o->save_every > 0 && step % o->save_every == 0) || step == o->steps;
}

int trainer_llmc_export(Trainer *tr, int step, char *err, size_t len)
{
    const TrainOptions *o = &tr->opt;
    if (!o->llmc_save_dir || step == tr->llmc_saved) return 0;
    if (llmc_ckpt_export(o->llmc_save_dir, step, o->save_dtype ? 5 : 3, &tr->model, &tr->dist,
                         &tr->train, &tr->sampler.rng, err, len) != 0)
        return -1;
    tr->llmc_saved = step;
    return 0;
}

int trainer_llmc_resume(Trainer *tr, char *err, size_t len)
{
    if (llmc_ckpt_import(&tr->llmc_from, &tr->model, &tr->dist, &tr->train, &tr->sampler.rng,
                         &tr->start_step, err, len) != 0)
        return -1;
    if (tr->start_step > tr->opt.steps) {
        snprintf(err, len, "cannot resume from %s: it is at step %d, beyond --steps %d (--steps "
                 "is the run's total)", tr->llmc_from.state, tr->start_step, tr->opt.steps);
        return -1;
    }
    /* step R is not exported again where the export folder has it already
     * (claim_folder set llmc_saved); into another folder, --steps R writes it */
    return 0;
}
