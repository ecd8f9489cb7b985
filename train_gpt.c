/* train_gpt.c — the command-line trainer's main: the flags, then --plan,
 * --generate, or a run: its start-up (cli/startup.c), its steps
 * (cli/loop.c) and its end, here: what a stop keeps (cli/stop.c), or the
 * model files (cli/outputs.c, cli/llmc_folder.c) and the end-of-run report
 * (cli/summary.c). The flags are in cli/options.c; the model, its
 * recompute schedule and the memory planner in model/; the ops in
 * kernels/; data parallelism over ranks (mpirun/srun) in distributed/.
 * Under several ranks, stdout and the --log file come from rank 0 only,
 * the loss and val loss printed are means over ranks, and rank 0 writes
 * the model files. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/safefile.h"
#include "distributed/dist.h"
#include "kernels/backend.h"
#include "kernels/blas_load.h"
#include "kernels/profile.h"
#include "model/gpt.h"
#include "cli/llmc_folder.h"
#include "cli/loop.h"
#include "cli/outputs.h"
#include "cli/startup.h"
#include "cli/stop.h"
#include "cli/summary.h"
#include "cli/trainer.h"

/* before OpenBLAS's constructor, which hangs under a low ulimit -v */
BLAS_LOAD_CHECK_FIRST;

/* The end of a run after loop_run's rc: what a stop keeps, else --save,
 * llm.c's export and the summary; then everything closed. Returns the exit
 * status; a failed save exits 1 (dist_fail). */
static int finish(Trainer *tr, int rc, char *err, size_t len)
{
    const TrainOptions *o = &tr->opt;
    Dist *d = &tr->dist;
    if (rc == TRAIN_STOPPED) rc = stop_keep(tr, err, len);
    if (rc > 0) { /* stopped by a signal, or too many non-finite steps */
        rc = outputs_close_log(&tr->files.out, rc);
        dist_finalize(d);
        return rc;
    }
    if (rc == 0)
        rc =
            outputs_save_model(&tr->files.out, o, d, &tr->cfg, tr->model.plan.num_params, err, len);
    if (rc == 0)
        rc = llmc_folder_export(&tr->files.llmc, o, o->steps, &tr->model, d, &tr->data.train,
                                &tr->sampler.rng, err, len);
    if (rc != 0) {
        outputs_close_log(&tr->files.out, rc);
        dist_fail(d, 1, "%s", err);
    }
    summary_print(tr);
    rc = outputs_close_log(&tr->files.out, 0);
    session_close(&tr->files.sess);
    free(tr->data.batch.inputs);
    free(tr->data.batch.targets);
    free(tr->perf.times.ms);
    dist_finalize(d);
    gpt_free(&tr->model);
    loader_close(&tr->data.train);
    if (tr->data.val) loader_close(tr->data.val);
    free(tr->data.val);
    if (tr->eval) train_eval_close(tr->eval);
    free(tr->eval);
    if (o->sample_every > 0 && d->rank == 0) text_sampler_close(&tr->sampler);
    if (o->profile_ops) profile_detach(&tr->perf.prof, tr->be);
    backend_close(tr->be);
    return rc;
}

/* A run whose stdout failed (/dev/full, a full disk, EIO) lost lines of
 * its report: one that otherwise ended well exits 1 saying so on stderr.
 * Other statuses stand (a stop makes a stalled stdout drop text on
 * purpose: base/signals.h). */
static int console_status(int rc)
{
    errno = 0;
    int flushed = fflush(stdout) == 0;
    if (rc != 0 || (flushed && !ferror(stdout))) return rc;
    /* A run that ignores SIGHUP (nohup) was asked to outlive its terminal:
     * writes to the hung-up terminal fail (EIO, reported by whichever write
     * came first, so errno here may be 0), and that is the loss it accepted,
     * not a failure. A full device (ENOSPC: /dev/full) still is one. */
    int e = errno;
    struct sigaction hup;
    struct stat st;
    if (e != ENOSPC && sigaction(SIGHUP, NULL, &hup) == 0 && hup.sa_handler == SIG_IGN &&
        fstat(STDOUT_FILENO, &st) == 0 && S_ISCHR(st.st_mode))
        return rc;
    errno = e;
    fprintf(stderr, "error: standard output: a write failed%s%s: lines of this run's report "
            "are lost\n", errno ? ": " : "", errno ? strerror(errno) : "");
    return 1;
}

int main(int argc, char **argv)
{
    /* before any file is opened: a closed stdout must not become the lock
     * file's fd, with the console text written into it */
    sf_guard_std_fds();
    static Trainer tr;
    char err[1024] = "";
    double t_start = progress_now_ms();
    /* Every line out as it is printed, to a terminal, a pipe or a file. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    int rc = train_options_parse(&tr.opt, argc, argv);
    if (rc) return rc == 1 ? console_status(0) : 2;
    startup_shape(&tr, argc, argv); /* validates all it can before any allocation */
    if (tr.opt.plan) return console_status(startup_plan(&tr));
    if (tr.opt.generate > 0) return console_status(startup_generate(&tr));
    startup_run(&tr, t_start);
    rc = loop_run(&tr, err, sizeof err);
    rc = finish(&tr, rc, err, sizeof err);
    /* a stop's or a non-finite abort's status stands as it is */
    return rc > 0 ? rc : console_status(rc);
}
