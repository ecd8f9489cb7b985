/* model/opcost_measure.c — timing every op of opcost.h on a backend, at
 * the run's shape and family: the block's buffers sized by its description
 * (block_desc.h), its ops run by the description's bench_op, the rest of a
 * step here. One block's buffers and the head's are allocated apart from
 * the model's arenas, before them, and freed here. They take no more than
 * the arenas every schedule has (the plan's fixed categories and one
 * block's workspace), so the measurement never sets a run's peak: the
 * optimizer slice and the cache flush shrink to fit. */
#include "opcost.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/rng.h"
#include "base/stop.h"

#define OPT_SLICE ((size_t)1 << 22) /* elements the optimizer ops are timed on */
/* Written before a block's forward and before its backward, so that they
 * start from caches holding none of their inputs, as in a run: a block
 * reads x_l and its tape long after they were written (64 MiB: twice a
 * large CPU's last-level cache share, more than a GPU's L2). */
#define FLUSH_BYTES ((size_t)64 << 20)
#define OPT_SLICE_MIN ((size_t)1 << 14) /* the optimizer slice however tight the room */
#define FILL_ELEMS ((size_t)1 << 16)    /* fill's host staging, elements */
#define MAX_ALLOCS 96

/* config.h's slots the bench holds one layer of (wte .. fcprojb are llm.c's
 * order 0..13; the per-layer ones are 2..13), and the final norm's */
enum { SLOT_WTE = 0, SLOT_WPE = 1, SLOT_LAYER_FIRST = 2, SLOT_LAYER_LAST = 13, SLOT_LNFW = 14 };

typedef struct {
    BlockBench k; /* the block's buffers, as the description's bench_op sees them */
    const BlockDesc *bd;
    int V, Vp, rows; /* rows: the head chunk timed */
    size_t n_opt;    /* optimizer slice */
    void *hx, *hdx, *chunk;
    float *losses, *om, *ov, *omaster;
    void *op, *og;
    void *flush;
    size_t flush_bytes;
    void *alloc[MAX_ALLOCS];
    int n_alloc, failed;
    size_t bytes; /* allocated so far */
} Bench;

static void *get(Bench *b, size_t bytes)
{
    Backend *be = b->k.be;
    void *p = b->failed || b->n_alloc == MAX_ALLOCS ? NULL
                                                    : be->ops->mem_alloc(be, bytes ? bytes : 1);
    if (!p) b->failed = 1;
    else b->alloc[b->n_alloc++] = p, b->bytes += bytes;
    return p;
}

/* Random values in [-scale, scale] (+ base) through params_upload, which
 * writes the working dtype; activations share it on every backend. */
static void fill(Bench *b, void *p, size_t n, float base, float scale, uint64_t seed)
{
    Backend *be = b->k.be;
    float h[FILL_ELEMS]; /* staged in pieces: no host copy of the whole buffer */
    for (size_t i0 = 0; i0 < n; i0 += FILL_ELEMS) {
        size_t k = n - i0 < FILL_ELEMS ? n - i0 : FILL_ELEMS;
        for (size_t i = 0; i < k; i++)
            h[i] = base +
                   scale * (float)((rng_next(&seed) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
        be->ops->params_upload(be, (char *)p + i0 * (size_t)be->par_bytes, NULL, h, k);
    }
}

/* A norm's weight (filled near 1): per layer the first and second norms',
 * and the final one's (config.h's ln1w, ln2w, lnfw slots in both families) */
static int is_norm_weight(int slot) { return slot == 2 || slot == 8 || slot == SLOT_LNFW; }

/* room: the bytes the bench may take in all (see the file's head) */
static int bench_alloc(Bench *b, size_t room)
{
    BlockBench *k = &b->k;
    const BlockDesc *bd = b->bd;
    Backend *be = k->be;
    size_t ab = (size_t)be->act_bytes, pb = (size_t)be->par_bytes;
    size_t N = k->sh.N, C = k->sh.C, T = k->sh.T;
    void **act[] = {&k->x, &k->out, &k->dres};
    for (size_t i = 0; i < sizeof act / sizeof act[0]; i++) *act[i] = get(b, N * C * ab);
    k->dsmall = get(b, N * block_grad_small(&k->sh) * ab); /* d(atty): NH hs wide */
    for (int t = 0; t < bd->n_tensors; t++)
        k->act[t] = get(b, N * block_dim(&k->sh, bd->tensor[t].width) * ab);
    for (int s = 0; s < bd->n_sides; s++)
        k->f32[s] = get(b, N * block_dim(&k->sh, bd->side[s].width) * 4);
    k->dbig = get(b, N * block_grad_big(bd, &k->sh) * ab);
    /* one layer's parameters and gradients, the final norm's, the embedding
     * (the table's Vp rows and T position rows) */
    size_t all[NUM_PARAM_TENSORS], psz[NUM_PARAM_TENSORS];
    config_param_sizes(k->cfg, all);
    int L = k->cfg->num_layers > 0 ? k->cfg->num_layers : 1;
    for (int i = 0; i < NUM_PARAM_TENSORS; i++)
        psz[i] = i >= SLOT_LAYER_FIRST && i <= SLOT_LAYER_LAST ? all[i] / (size_t)L : all[i];
    psz[SLOT_WTE] = (size_t)b->Vp * C;
    psz[SLOT_WPE] = T * C;
    for (int i = 0; i < NUM_PARAM_TENSORS; i++) {
        k->par[i] = get(b, psz[i] * pb);
        k->grad[i] = get(b, psz[i] * pb);
    }
    b->hx = get(b, (size_t)b->rows * C * ab);
    b->hdx = get(b, (size_t)b->rows * C * ab);
    b->chunk = get(b, (size_t)b->rows * b->Vp * 4);
    b->losses = get(b, N * 4);
    int *tokens = get(b, N * sizeof(int));
    size_t rope = T * (k->sh.hs ? k->sh.hs : 1); /* for a family with RoPE */
    float *rope_table = get(b, rope * 4);
    k->tokens = tokens;
    k->rope = rope_table;
    /* what is left: the optimizer slice, then the flush */
    size_t left = room > b->bytes ? room - b->bytes : 0;
    size_t per_elem = 2 * pb + 8 + (be->has_master ? 4 : 0);
    if (b->n_opt > left / per_elem) b->n_opt = left / per_elem;
    if (b->n_opt < OPT_SLICE_MIN) b->n_opt = OPT_SLICE_MIN;
    left = left > b->n_opt * per_elem ? left - b->n_opt * per_elem : 0;
    b->flush_bytes = left < FLUSH_BYTES ? left : FLUSH_BYTES;
    b->op = get(b, b->n_opt * pb);
    b->og = get(b, b->n_opt * pb);
    b->om = get(b, b->n_opt * 4);
    b->ov = get(b, b->n_opt * 4);
    b->omaster = be->has_master ? get(b, b->n_opt * 4) : NULL;
    b->flush = get(b, b->flush_bytes);
    if (b->failed) return -1;
    /* contents: norm weights near 1, everything else small */
    fill(b, k->x, N * C, 0, 1, 1);
    for (int i = 0; i < NUM_PARAM_TENSORS; i++) {
        fill(b, k->par[i], psz[i], is_norm_weight(i) ? 1.0f : 0.0f, 0.02f, 10 + (uint64_t)i);
        be->ops->mem_zero(be, k->grad[i], psz[i] * pb);
    }
    fill(b, b->hx, (size_t)b->rows * C, 0, 1, 5);
    fill(b, b->op, b->n_opt, 0, 0.02f, 6);
    fill(b, b->og, b->n_opt, 0, 0.001f, 7);
    be->ops->mem_zero(be, b->om, b->n_opt * 4);
    be->ops->mem_zero(be, b->ov, b->n_opt * 4);
    if (b->omaster) be->ops->mem_zero(be, b->omaster, b->n_opt * 4);
    int *tok = malloc(N * sizeof(int));
    float *h = malloc(rope * 4);
    if (!tok || !h) {
        free(tok), free(h);
        return -1;
    }
    uint64_t seed = 9;
    for (size_t i = 0; i < N; i++) tok[i] = (int)(rng_next(&seed) % (uint64_t)b->V);
    be->ops->mem_upload(be, tokens, tok, N * sizeof(int));
    for (size_t i = 0; i < rope; i++)
        h[i] = (float)((rng_next(&seed) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
    be->ops->mem_upload(be, rope_table, h, rope * 4);
    free(tok), free(h);
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Run op i of opcost_n_ops's list once, between two syncs; returns its
 * seconds. The block's ops and the family's embedding and final norm are
 * the description's bench_op; the head, the zeroing and the optimizer are
 * every family's. */
static double run_op(Bench *b, int i)
{
    BlockBench *k = &b->k;
    Backend *be = k->be;
    const BackendOps *o = be->ops;
    const BlockDesc *bd = b->bd;
    int N = (int)k->sh.N, C = (int)k->sh.C;
    o->sync(be);
    double t0 = now_s();
    if (i < bd->n_fwd) bd->bench_op(k, BENCH_FWD, i);
    else if (i < bd->n_fwd + bd->n_bwd) bd->bench_op(k, BENCH_BWD, i - bd->n_fwd);
    else switch (i - bd->n_fwd - bd->n_bwd) {
    case OP_ENCODER: bd->bench_op(k, BENCH_EMBED_FWD, 0); break;
    case OP_LNF: bd->bench_op(k, BENCH_NORM_FWD, 0); break;
    case OP_HEAD:
        o->head_forward_backward(be, b->losses, b->hdx, k->grad[SLOT_WTE], b->hx, k->par[SLOT_WTE],
                                 k->tokens, b->chunk, b->rows, C, b->V, b->Vp, b->rows, 1.0f / N);
        break;
    case OP_ZERO_DRES: o->mem_zero(be, k->dsmall, (size_t)N * C * (size_t)be->act_bytes); break;
    case OP_LNF_BWD: bd->bench_op(k, BENCH_NORM_BWD, 0); break;
    case OP_ENCODER_BWD: bd->bench_op(k, BENCH_EMBED_BWD, 0); break;
    case OP_ZERO_GRADS: o->mem_zero(be, b->og, b->n_opt * (size_t)be->par_bytes); break;
    case OP_GRAD_NORM: (void)o->grad_norm_sq(be, b->og, b->n_opt); break;
    case OP_ADAMW:
        o->adamw_update(be, b->op, b->omaster, b->og, b->om, b->ov, b->n_opt, 1e-4f, 0.9f, 0.95f,
                        1e-8f, 0.0f, 1.0f, 1);
        break;
    }
    o->sync(be);
    return now_s() - t0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One round: every op once, in a block's order (each reads what the one
 * before wrote), FLUSH_BYTES written over the caches before the block's forward
 * and its backward. The residual gradient grows with each backward: reset.
 * A stop asked for (base/stop.h) is polled before each op, the longest of
 * which is one matmul at the run's shape; it ends the round at once and
 * returns -1. */
/* FLUSH_BYTES written: the flush buffer, and where the room made it
 * smaller, the head's logits chunk (which the head writes before it reads) */
static void flush_caches(Bench *b)
{
    Backend *be = b->k.be;
    size_t chunk = (size_t)b->rows * b->Vp * 4, short_by = FLUSH_BYTES - b->flush_bytes;
    be->ops->mem_zero(be, b->flush, b->flush_bytes);
    if (short_by) be->ops->mem_zero(be, b->chunk, chunk < short_by ? chunk : short_by);
}

static double run_round(Bench *b, double *t, int n_ops)
{
    double sum = 0.0;
    fill(b, b->k.dres, b->k.sh.N * b->k.sh.C, 0, 1, 8);
    for (int op = 0; op < n_ops; op++) {
        if (stop_requested()) return -1.0;
        if (op == 0 || op == b->bd->n_fwd) /* the block's forward, its backward */
            flush_caches(b);
        double dt = run_op(b, op);
        if (t) t[op] = dt;
        sum += dt;
    }
    return sum;
}

/* The mean of the middle 60% of n sorted values (at least one). A step is
 * a sum of calls, so its time follows the mean call, stalls included: on a
 * shared CPU a median keeps the typical call and misses how often a thread
 * is descheduled (with 2 threads under load it predicted steps 1.6x too
 * short), while a mean of all would follow one long stall. */
static double trimmed_mean(const double *v, int n)
{
    int drop = n / 5, m = n - 2 * drop;
    double s = 0.0;
    for (int i = drop; i < n - drop; i++) s += v[i];
    return s / m;
}

int opcost_measure(Backend *be, const PlanInput *in, int min_reps, OpCosts *out, char *err,
                   size_t err_len)
{
    MemoryPlan plan;
    Schedule s;
    const BlockDesc *bd = planner_block(in);
    if (!bd->bench_op) {
        snprintf(err, err_len, "--op-costs measure: block %s has no ops to time (its "
                 "description's bench_op)", bd->family);
        return -1;
    }
    if (schedule_build(&s, bd, RECOMPUTE_BLOCK, in->cfg.num_layers, err, err_len) != 0)
        return -1;
    planner_plan(in, &s, &plan); /* for the head chunk and the optimizer's element counts */
    schedule_free(&s);
    Bench b = {.k = {.be = be, .cfg = &in->cfg}, .bd = bd, .V = in->cfg.vocab_size,
               .Vp = in->cfg.padded_vocab, .rows = plan.loss_chunk};
    block_shape(bd, &in->cfg, (size_t)in->B, (size_t)in->T, &b.k.sh);
    b.n_opt = plan.padded_params < OPT_SLICE ? plan.padded_params : OPT_SLICE;
    /* every schedule's arenas hold at least the fixed categories and one
     * block's workspace: recompute 1's without its stored inputs */
    size_t room = 0;
    for (int c = 0; c < MEM_NUM_CATEGORIES; c++)
        if (c != MEM_ACTIVATIONS) room += plan.bytes[c];
    opcost_init(out, bd, OPCOST_NS);
    int n_ops = opcost_n_ops(out);
    int rc = bench_alloc(&b, room), reps = 0;
    double *t = malloc(sizeof(double) * OPCOST_MAX_REPS * (size_t)n_ops);
    if (rc != 0 || !t) {
        snprintf(err, err_len, "--op-costs measure: out of %s memory for one block's buffers "
                 "at B=%d, T=%d, C=%d", be->name, in->B, in->T, in->cfg.channels);
        rc = -1;
        goto done;
    }
    /* The first round warms up (cuBLASLt's heuristics, page faults). Then
     * at least min_reps rounds, and more, up to OPCOST_MAX_REPS, until they
     * span OPCOST_MIN_SECONDS: a median over a longer stretch is less at
     * the mercy of one moment's load on a shared machine. */
    if (min_reps < 1) min_reps = 1;
    if (min_reps > OPCOST_MAX_REPS) min_reps = OPCOST_MAX_REPS;
    double spent = run_round(&b, NULL, n_ops);
    for (spent = spent < 0 ? -1.0 : 0.0;
         spent >= 0 && (reps < min_reps || (spent < OPCOST_MIN_SECONDS && reps < OPCOST_MAX_REPS));
         reps++) {
        double dt = run_round(&b, t + (size_t)reps * n_ops, n_ops);
        spent = dt < 0 ? -1.0 : spent + dt;
    }
    if (spent < 0) {
        snprintf(err, err_len, "--op-costs measure: %s", STOP_MESSAGE);
        rc = -1;
        goto done;
    }
    out->reps = reps;
    double *v = malloc(sizeof(double) * (size_t)reps);
    if (!v) {
        snprintf(err, err_len, "--op-costs measure: out of host memory");
        rc = -1;
        goto done;
    }
    int rest0 = bd->n_fwd + bd->n_bwd;
    for (int op = 0; op < n_ops; op++) {
        double scale = 1.0;
        for (int r = 0; r < reps; r++) v[r] = t[(size_t)r * n_ops + op];
        qsort(v, (size_t)reps, sizeof *v, cmp_double);
        double mean = trimmed_mean(v, reps);
        if (op == rest0 + OP_HEAD) scale = (double)b.k.sh.N / b.rows;
        if (op == rest0 + OP_ZERO_GRADS) scale = (double)plan.padded_params / b.n_opt;
        if (op == rest0 + OP_GRAD_NORM) scale = (double)plan.num_params / b.n_opt;
        if (op == rest0 + OP_ADAMW) scale = (double)plan.shard_params / b.n_opt;
        *opcost_at(out, op) = (long long)(mean * scale * 1e9 + 0.5);
    }
    free(v);
    /* after the block's buffers are freed: the copy's own are one residual slot each */
    for (int i = 0; i < b.n_alloc; i++) be->ops->mem_free(be, b.alloc[i]);
    b.n_alloc = 0;
    rc = opcost_measure_copy(be, plan.residual_bytes, out, err, err_len);
done:
    free(t);
    for (int i = 0; i < b.n_alloc; i++) be->ops->mem_free(be, b.alloc[i]);
    return rc;
}
