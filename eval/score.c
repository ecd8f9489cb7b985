/* eval/score.c — multiple-choice evaluation (eval.h). */
#include "score.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fileio.h"

/* Context tokens a row of T positions keeps in front of a completion of len tokens. */
static int ctx_kept(int ctx_len, int len, int T)
{
    int room = T + 1 - len;
    return ctx_len < room ? ctx_len : room;
}

int eval_check_fit(const EvalSet *es, int T, const char *path, long *truncated, char *err,
                   size_t err_len)
{
    long cut = 0;
    for (int i = 0; i < es->num_examples; i++) {
        const EvalExample *e = &es->ex[i];
        for (int c = 0; c < EVAL_COMPLETIONS; c++) {
            if (e->comp_len[c] > T) {
                io_err(err, err_len, "%s: example %d completion %d has %d tokens; --seq-len %d "
                       "scores completions of at most %d", path, i, c, e->comp_len[c], T, T);
                return -1;
            }
            cut += ctx_kept(e->ctx_len, e->comp_len[c], T) < e->ctx_len;
        }
    }
    *truncated = cut;
    return 0;
}

void eval_rank_range(int n, int rank, int world, int *begin, int *end)
{
    int q = (n + world - 1) / world;
    long b = (long)q * rank, e = b + q;
    *begin = b < n ? (int)b : n;
    *end = e < n ? (int)e : n;
}

/* Where a row's completion losses are: positions [start, start + len). */
typedef struct {
    int example, completion, start, len, ctx_used;
} RowRef;

/* Fill one row (T inputs and targets, zeroed by the caller) with the tail
 * of the context and completion c of example e. */
static RowRef fill_row(const EvalSet *es, int e, int c, int T, int *in, int *tg)
{
    const EvalExample *x = &es->ex[e];
    int len = x->comp_len[c], used = ctx_kept(x->ctx_len, len, T), m = used + len;
    const uint32_t *ctx = es->tokens + x->ctx_off + (x->ctx_len - used);
    const uint32_t *comp = es->tokens + x->comp_off[c];
    /* sequence s = ctx[0..used) ++ comp[0..len), m <= T + 1 tokens */
    for (int t = 0; t < m; t++) {
        int tok = (int)(t < used ? ctx[t] : comp[t - used]);
        if (t < T) in[t] = tok;
        if (t > 0) tg[t - 1] = tok;
    }
    return (RowRef){e, c, used - 1, len, used};
}

/* argmin over the completions; the lowest index on ties (llm.c). */
static int argmin(const double *v)
{
    int best = 0;
    for (int c = 1; c < EVAL_COMPLETIONS; c++)
        if (v[c] < v[best]) best = c;
    return best;
}

int eval_passes(int examples, int B)
{
    long rows = (long)(examples > 0 ? examples : 0) * EVAL_COMPLETIONS;
    return (int)((rows + B - 1) / B);
}

int eval_run(GPT *g, const EvalSet *es, int begin, int end, int passes, EvalCounts *counts,
             EvalResult *results, char *err, size_t err_len)
{
    int B = g->B, T = g->T, n = end - begin;
    if (n <= 0 && passes <= 0) return 0;
    if (n < 0) n = 0;
    size_t N = (size_t)B * T;
    int *in = malloc(N * sizeof *in), *tg = malloc(N * sizeof *tg);
    RowRef *rows = malloc((size_t)B * sizeof *rows);
    EvalResult *res = results ? results : malloc((size_t)(n ? n : 1) * sizeof *res);
    if (!in || !tg || !rows || !res) {
        snprintf(err, err_len, "evaluation: out of host memory");
        free(in), free(tg), free(rows);
        if (!results) free(res);
        return -1;
    }
    long total = (long)n * EVAL_COMPLETIONS;
    for (long r0 = 0; r0 < total; r0 += B) {
        int nr = total - r0 < B ? (int)(total - r0) : B;
        memset(in, 0, N * sizeof *in);
        memset(tg, 0, N * sizeof *tg);
        for (int k = 0; k < nr; k++) {
            long r = r0 + k;
            rows[k] = fill_row(es, begin + (int)(r / EVAL_COMPLETIONS),
                               (int)(r % EVAL_COMPLETIONS), T, in + (size_t)k * T,
                               tg + (size_t)k * T);
        }
        const float *loss = gpt_eval_token_losses(g, in, tg);
        if (g->abandoned) break; /* a signal: the caller stops */
        for (int k = 0; k < nr; k++) {
            const RowRef *rr = &rows[k];
            const float *l = loss + (size_t)k * T + rr->start;
            double s = 0.0;
            for (int j = 0; j < rr->len; j++) s += l[j];
            EvalResult *x = &res[rr->example - begin];
            x->sum[rr->completion] = s;
            x->mean[rr->completion] = s / rr->len;
            x->ctx_used[rr->completion] = rr->ctx_used;
        }
    }
    /* ZeRO-3's padding: rows of token 0, their losses unread; the pass
     * only keeps this rank's gathers in step with the others' */
    memset(in, 0, N * sizeof *in);
    memset(tg, 0, N * sizeof *tg);
    for (int k = eval_passes(n, B); k < passes && !g->abandoned; k++)
        gpt_eval_token_losses(g, in, tg);
    for (int i = 0; i < n && !g->abandoned; i++) {
        EvalResult *x = &res[i];
        int label = es->ex[begin + i].label;
        x->pred = argmin(x->sum);
        x->pred_norm = argmin(x->mean);
        counts->examples++;
        counts->correct += x->pred == label;
        counts->correct_norm += x->pred_norm == label;
    }
    free(in), free(tg), free(rows);
    if (!results) free(res);
    return 0;
}
