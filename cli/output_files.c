/* cli/output_files.c — the files a run writes outside its checkpoint folder
 * (--save, --log, --dump-grads): probed and claimed at start-up
 * (cli/outputs.h), --save written (or rescued) at the end, the log closed.
 * Declared in cli/trainer.h. */
#include <stdio.h>
#include <stdlib.h>

#include "base/fileio.h"
#include "distributed/dist.h"
#include "interop/model_file.h"
#include "cli/outputs.h"
#include "cli/run_log.h"
#include "cli/trainer.h"

/* After training: every rank's parameters must be the same bits; rank 0
 * writes --save. Collective: every rank calls it. */
int trainer_save_model(Trainer *tr, char *err, size_t len)
{
    Dist *d = &tr->dist;
    if (!d->mpi && !tr->opt.save) return 0;
    size_t n = tr->model.plan.num_params;
    float *host = malloc(n * sizeof(float));
    if (!host) {
        snprintf(err, len, "out of host memory for the final parameters");
        return -1;
    }
    int rc = dist_get_params(d, host, err, len);
    if (rc == 0 && d->mpi) {
        if (!dist_replicas_agree(d, dist_hash_floats(host, n))) {
            free(host);
            dist_exit_all(d, 1, "internal error: the ranks' final parameters differ");
        }
        printf("replicas: parameters identical on all %d rank%s\n", d->world,
               d->world == 1 ? "" : "s");
    }
    if (rc == 0 && tr->opt.save && d->rank == 0) {
        rc = outputs_save_model(tr->opt.save, &tr->cfg, host,
                                tr->opt.save_dtype ? MODEL_FILE_BF16 : MODEL_FILE_FP32,
                                &tr->save_seen, stderr, err, len);
        if (rc == 0) printf("saved %s\n", tr->opt.save);
    }
    free(host);
    return rc;
}

/* After training: close the log; a lost line is an error (exit 1) unless
 * --log-errors ignore. Returns rc, or 1 when it was 0 and the log failed. */
int trainer_close_log(Trainer *tr, int rc)
{
    char err[1024];
    if (run_log_close(&tr->log, err, sizeof err) == 0) return rc;
    fprintf(stderr, "error: %s\n", err);
    return rc == 0 ? 1 : rc;
}

/* The files a run writes after its work (--save at the end, --dump-grads
 * after step 1, --log from the first line) must be writable now, not after
 * hours of training: a file name (no trailing '/') in a folder that takes a
 * new file. (What stands at the path already: trainer_claim_outputs.) --plan and
 * --generate write none of them; --save's folder is checked all the same,
 * as it always was. Rank 0 writes them. */
void trainer_check_output_paths(Trainer *tr)
{
    const TrainOptions *o = &tr->opt;
    const char *flag[] = {"--save", "--dump-grads", "--log"};
    const char *path[] = {o->save, o->dump_grads, o->log_path};
    int n = o->plan || o->generate > 0 ? 1 : 3;
    if (tr->dist.rank != 0) return;
    for (int i = 0; i < n; i++) {
        char why[4600];
        if (path[i] && io_probe_output(path[i], why, sizeof why) != 0)
            dist_fail(&tr->dist, 1, "%s %s: %s", flag[i], path[i], why);
    }
}

/* A new run's --save, --log and --dump-grads never replace a file silently
 * (cli/outputs.h); rank 0 decides, every rank learns the verdict. */
void trainer_claim_outputs(Trainer *tr, int resumed, int move)
{
    const TrainOptions *o = &tr->opt;
    Dist *d = &tr->dist;
    char err[4400] = "";
    int refused = 0;
    if (o->plan || o->generate > 0) return; /* they write none of them */
    if (d->rank == 0) {
        RunOutput outs[] = {{"--save", o->save}, {"--log", o->log_path},
                            {"--dump-grads", o->dump_grads}};
        refused = outputs_claim(outs, 3, resumed, o->overwrite_outputs, move, stdout, err,
                                sizeof err) != 0;
        /* what --save holds now (nothing, or a resumed run's model) is what
         * its write at the end may replace */
        if (move && o->save) outputs_note(o->save, &tr->save_seen);
        if (move && o->dump_grads) outputs_note(o->dump_grads, &tr->dump_seen);
    }
    dist_broadcast(d, &refused, sizeof refused);
    if (refused) dist_exit_all(d, 1, "%s", d->rank == 0 ? err : "rank 0 refused an output file");
}
