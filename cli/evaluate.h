/* cli/evaluate.h — --eval-file / --eval-every: HellaSwag-style accuracy during
 * training and at the end, on every backend and rank.
 *
 * Owns: opening the eval file for this run (checked against the model's
 * vocabulary and --seq-len before any allocation), this rank's share of
 * the examples, summing the counts over ranks, and the report: a line on
 * stdout and a JSON line in the --log,
 *   {"eval":"hellaswag","acc":A,"acc_norm":An,"n":N,"step":S}
 * (acc and acc_norm as defined in eval/score.h).
 *
 * Test hook (the test build only, base/test_hooks.h): with
 * TRAIN_GPT_TEST_EVAL_DUMP=FILE, every evaluation rewrites FILE (with
 * ranks each rank FILE.rank<r>) with one line per completion of the
 * examples it scored,
 *   example completion ctx_used len sum mean
 * (sum and mean in nats, %.17g), for comparison with the PyTorch
 * reference (dev/reference/gpt2_reference.py --eval). */
#ifndef CLI_EVALUATE_H
#define CLI_EVALUATE_H

#include <stdio.h>

#include "eval/eval_file.h"
#include "distributed/dist.h"
#include "cli/run_log.h"
#include "model/gpt.h"
#include "eval/score.h"

typedef struct {
    const char *path;
    EvalSet es;
    int begin, end;  /* this rank's examples */
    long truncated;  /* completions whose context is cut at this T */
    int lockstep;    /* 1 (ZeRO-3): every rank makes rank 0's number of passes */
    int lead;        /* rank 0's examples, the most any rank has */
} TrainEval;

/* Read and check path for a model of vocab_size and rows of T tokens.
 * Rank 0 prints a note when contexts are cut. Each rank scores its share
 * of the examples (eval/score.h) and the counts are summed; with lockstep
 * (ZeRO-3, whose forward gathers are collectives) a rank with fewer
 * examples than rank 0 pads to rank 0's number of forward passes.
 * A version-2 file recording another tokenizer than the model's
 * (tokenizer_id, GPTConfig's; both non-zero) is refused naming both.
 * Returns 0, or -1 with a message naming the file. */
int train_eval_open(TrainEval *te, const char *path, int vocab_size, uint64_t tokenizer_id,
                    int T, const Dist *d, int lockstep, char *err, size_t err_len);

/* Score the model (collective: every rank calls it), print the result and
 * log it (rank 0; log may be NULL or closed). Returns 0, or -1 with a message. */
int train_eval_run(TrainEval *te, GPT *g, Dist *d, int step, RunLog *log, char *err,
                   size_t err_len);

/* The forward passes of B rows one score takes on this rank (each example's
 * EVAL_COMPLETIONS rows, B at a time; ZeRO-3's padding included), for the ETA. */
int train_eval_passes(const TrainEval *te, int B);

void train_eval_close(TrainEval *te);

#endif
