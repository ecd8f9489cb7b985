/* eval/score.h — multiple-choice evaluation of a model (HellaSwag in llm.c's
 * eval format, eval/eval_file.h), scored as llm.c scores it.
 *
 * Owns: how examples become batch rows, how a completion is scored, and
 * which examples a rank evaluates. Forward passes go through
 * gpt_eval_token_losses, so every backend runs the same ops.
 *
 * Rows. Completion c of example e is row 4e + c of one stream of rows:
 * the context, then the completion, left-aligned in a row of T tokens.
 * Each forward pass takes the next B rows, so with B a multiple of 4 a
 * batch holds B/4 whole examples (llm.c's packing); with any other B
 * (1, 2, 3, 5, ...) an example's rows continue in the next batch and no
 * row is wasted but in the last batch. Position t predicts token t+1, so
 * completion token j is scored at position ctx_used - 1 + j; the positions
 * after the completion hold token 0 with target 0 and are not read (under
 * causal attention they cannot change earlier positions).
 *
 * Truncation. A row needs ctx_used + len - 1 <= T positions (the last
 * completion token is only a target). When the whole context does not fit,
 * its first tokens are dropped: ctx_used = min(ctx_len, T + 1 - len), so
 * the model sees the end of the context. llm.c instead refuses files with
 * ctx_len + len >= T; where llm.c's check passes, nothing is dropped and
 * the rows are the same. A completion longer than T cannot be scored:
 * eval_check_fit refuses the file.
 *
 * Scores. S_c = the sum, in double, of the losses -log p(token) over
 * completion c's own tokens; M_c = S_c / len_c.
 *   acc       counts the examples whose argmin S_c is the label (summed
 *             log-likelihood: lm-evaluation-harness's "acc", and the "acc"
 *             of llm.c's dev/data/hellaswag.py);
 *   acc_norm  counts those whose argmin M_c is the label (mean over the
 *             completion's tokens: llm.c's "acc_norm", the only score its C
 *             trainer reports. lm-evaluation-harness's acc_norm divides by
 *             the completion's length in bytes instead, so its figures
 *             differ).
 * Ties go to the lowest index, as in llm.c.
 *
 * Ranks. Rank r of W evaluates examples [r*q, min(n, (r+1)*q)) with
 * q = ceil(n / W), llm.c's split; the caller sums the counts. Under
 * ZeRO-3 each forward pass gathers the parameters block by block, a
 * collective, so every rank must make as many passes as rank 0 (whose
 * share, q examples or n, is the largest): the others pad with passes
 * on rows of token 0 whose losses are not read. */
#ifndef EVAL_SCORE_H
#define EVAL_SCORE_H

#include <stddef.h>

#include "eval/eval_file.h"
#include "model/gpt.h"

typedef struct {
    long examples;     /* scored */
    long correct;      /* acc */
    long correct_norm; /* acc_norm */
} EvalCounts;

/* One example's scores (for tests and the eval dump). */
typedef struct {
    double sum[EVAL_COMPLETIONS];  /* S_c, nats */
    double mean[EVAL_COMPLETIONS]; /* M_c, nats per token */
    int ctx_used[EVAL_COMPLETIONS];
    int pred, pred_norm;           /* argmin S_c, argmin M_c */
} EvalResult;

/* Every completion of es must fit a row of T tokens with at least one
 * context token: len <= T. Returns 0 and sets *truncated to the number of
 * completions whose context is cut, or -1 with "<path>: example i
 * completion c has n tokens; --seq-len T scores at most T". */
int eval_check_fit(const EvalSet *es, int T, const char *path, long *truncated, char *err,
                   size_t err_len);

/* The examples rank r of W evaluates: [*begin, *end). */
void eval_rank_range(int n, int rank, int world, int *begin, int *end);

/* The forward passes of B rows that `examples` examples take
 * (EVAL_COMPLETIONS rows each, B at a time). */
int eval_passes(int examples, int B);

/* Evaluate examples [begin, end) of es with g (its B rows of T tokens),
 * making at least `passes` forward passes (0: just those the examples
 * take; ZeRO-3's padding, see Ranks above). Adds to *counts; fills
 * results[0 .. end - begin) when non-NULL. Returns 0, or -1 with a
 * message (out of host memory). */
int eval_run(GPT *g, const EvalSet *es, int begin, int end, int passes, EvalCounts *counts,
             EvalResult *results, char *err, size_t err_len);

#endif
