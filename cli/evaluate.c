/* cli/evaluate.c — see cli/evaluate.h. */
#include "cli/evaluate.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/safefile.h"
#include "base/test_hooks.h"

int train_eval_open(TrainEval *te, const char *path, int vocab_size, uint64_t tokenizer_id,
                    int T, const Dist *d, int lockstep, char *err, size_t err_len)
{
    memset(te, 0, sizeof *te);
    te->path = path;
    if (eval_file_read(path, &te->es, err, err_len) != 0) return -1;
    uint64_t made = te->es.tokenizer_id;
    if (made && tokenizer_id && made != tokenizer_id) {
        snprintf(err, err_len, "%s: made with tokenizer %016llx, but the model was trained on "
                 "tokenizer %016llx: its ids would mean other text; write the eval file with "
                 "the model's tokenizer (./tokenize --hellaswag --tokenizer/--encoding)", path,
                 (unsigned long long)made, (unsigned long long)tokenizer_id);
        eval_set_free(&te->es);
        return -1;
    }
    if (eval_set_check_vocab(&te->es, vocab_size, path, err, err_len) != 0 ||
        eval_check_fit(&te->es, T, path, &te->truncated, err, err_len) != 0) {
        eval_set_free(&te->es);
        return -1;
    }
    te->lockstep = lockstep;
    eval_rank_range(te->es.num_examples, d->rank, d->world, &te->begin, &te->end);
    /* rank 0's share is the largest (eval/score.h): its examples */
    int b0, e0;
    eval_rank_range(te->es.num_examples, 0, d->world, &b0, &e0);
    te->lead = e0 - b0;
    if (d->rank == 0 && te->truncated > 0)
        printf("note: --eval-file %s: %ld of %d completions do not fit --seq-len %d with their "
               "whole context; they are scored on the context's last tokens\n", path,
               te->truncated, EVAL_COMPLETIONS * te->es.num_examples, T);
    return 0;
}

#ifdef TRAIN_GPT_TEST_HOOKS
/* The test hook's file: one line per completion of this process's examples. */
static int dump_results(const TrainEval *te, const EvalResult *r, const char *path, char *err,
                        size_t err_len)
{
    char why[4400];
    int fd = sf_create(path, why, sizeof why); /* never through a link */
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        snprintf(err, err_len, "TRAIN_GPT_TEST_EVAL_DUMP=%s: cannot open for writing", path);
        return -1;
    }
    for (int i = te->begin; i < te->end; i++)
        for (int c = 0; c < EVAL_COMPLETIONS; c++)
            fprintf(f, "%d %d %d %d %.17g %.17g\n", i, c, r[i - te->begin].ctx_used[c],
                    te->es.ex[i].comp_len[c], r[i - te->begin].sum[c], r[i - te->begin].mean[c]);
    if (fclose(f) != 0) {
        snprintf(err, err_len, "TRAIN_GPT_TEST_EVAL_DUMP=%s: write failed", path);
        return -1;
    }
    return 0;
}
#endif

static void report(const double *t, int step, RunLog *log)
{
    double acc = t[1] / t[0], acc_norm = t[2] / t[0];
    printf("step %5d | hellaswag acc %.4f acc_norm %.4f (%.0f examples)\n", step, acc, acc_norm,
           t[0]);
    fflush(stdout);
    if (!log || log->fd < 0) return;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "eval", "hellaswag");
    cJSON_AddNumberToObject(j, "acc", acc);
    cJSON_AddNumberToObject(j, "acc_norm", acc_norm);
    cJSON_AddNumberToObject(j, "n", t[0]);
    cJSON_AddNumberToObject(j, "correct", t[1]);
    cJSON_AddNumberToObject(j, "correct_norm", t[2]);
    cJSON_AddNumberToObject(j, "step", step);
    char *s = cJSON_PrintUnformatted(j);
    if (s) run_log_line(log, s);
    cJSON_free(s);
    cJSON_Delete(j);
}

int train_eval_run(TrainEval *te, GPT *g, Dist *d, int step, RunLog *log, char *err,
                   size_t err_len)
{
    const char *dump = NULL; /* the test hook (cli/evaluate.h) */
    char ranked[4200];
    TEST_HOOK(dump = getenv("TRAIN_GPT_TEST_EVAL_DUMP"));
    if (dump && d->world > 1) { /* each rank its own file: FILE.rank<r> */
        snprintf(ranked, sizeof ranked, "%s.rank%d", dump, d->rank);
        dump = ranked;
    }
    EvalResult *res = NULL;
    if (dump && te->end > te->begin &&
        !(res = calloc((size_t)(te->end - te->begin), sizeof *res))) {
        snprintf(err, err_len, "evaluation: out of host memory");
        return -1;
    }
    EvalCounts c = {0};
    int passes = te->lockstep ? eval_passes(te->lead, g->B) : 0;
    int rc = eval_run(g, &te->es, te->begin, te->end, passes, &c, res, err, err_len);
    TEST_HOOK(if (rc == 0 && dump) rc = dump_results(te, res, dump, err, err_len));
    free(res);
    /* Every rank reaches the sum, even one that failed (it then exits
     * through dist_fail after it): no rank is left waiting. */
    double t[3] = {(double)c.examples, (double)c.correct, (double)c.correct_norm};
    dist_sum(d, t, 3);
    if (rc == 0 && d->rank == 0 && !g->abandoned) report(t, step, log);
    return rc;
}

int train_eval_passes(const TrainEval *te, int B)
{
    return eval_passes(te->lockstep ? te->lead : te->end - te->begin, B);
}

void train_eval_close(TrainEval *te) { eval_set_free(&te->es); }
