/* model/opcost_measure.c — timing every op of opcost.h on a backend, at
 * the run's shape and family (opcost_measure: GPT-2's block, or the Llama
 * block's ops in the same slots, run_llama_op). One block's buffers and the head's are
 * allocated apart from the model's arenas, before them, and freed here.
 * They take no more than the arenas every schedule has (the plan's fixed
 * categories and one block's workspace), so the measurement never sets a
 * run's peak: the optimizer slice and the cache flush shrink to fit. */
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

enum { LNW, LNB, QKVW, QKVB, APW, APB, FCW, FCB, FPW, FPB, NPAR }; /* one block's params */

typedef struct {
    Backend *be;
    int B, T, C, NH, N, V, Vp, rows; /* rows: the head chunk timed */
    /* the block's widths (GPT-2: KVH = NH, QKV 3C, FC 4C, ACT 4C; the
     * Llama family: QKV C + 2 KVH hs, FC [gate|up] 2F, ACT SwiGLU's F) */
    int llama, KVH, QKV, FC, ACT;
    float eps;
    float *rope; /* the Llama family: a RoPE table, T rows of hs (values do not set the time) */
    size_t n_opt;                    /* optimizer slice */
    /* act: x, the seven tape tensors, the block output, gradients */
    void *x, *ln1, *qkv, *atty, *res2, *ln2, *fch, *gelu, *out, *dres, *dsmall, *dbig;
    float *m1, *r1, *m2, *r2, *lse;
    void *par[NPAR], *grad[NPAR];
    /* the rest of a step */
    void *wte, *wpe, *dwte, *dwpe, *hx, *hdx, *chunk;
    float *losses, *om, *ov, *omaster;
    void *op, *og;
    int *tokens;
    void *flush;
    size_t flush_bytes;
    void *alloc[64];
    int n_alloc, failed;
    size_t bytes; /* allocated so far */
} Bench;

static void *get(Bench *b, size_t bytes)
{
    void *p = b->failed || b->n_alloc == 64 ? NULL
                                             : b->be->ops->mem_alloc(b->be, bytes ? bytes : 1);
    if (!p) b->failed = 1;
    else b->alloc[b->n_alloc++] = p, b->bytes += bytes;
    return p;
}

/* Random values in [-scale, scale] (+ base) through params_upload, which
 * writes the working dtype; activations share it on every backend. */
static void fill(Bench *b, void *p, size_t n, float base, float scale, uint64_t seed)
{
    float h[FILL_ELEMS]; /* staged in pieces: no host copy of the whole buffer */
    for (size_t i0 = 0; i0 < n; i0 += FILL_ELEMS) {
        size_t k = n - i0 < FILL_ELEMS ? n - i0 : FILL_ELEMS;
        for (size_t i = 0; i < k; i++)
            h[i] = base +
                   scale * (float)((rng_next(&seed) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
        b->be->ops->params_upload(b->be, (char *)p + i0 * (size_t)b->be->par_bytes, NULL, h, k);
    }
}

/* room: the bytes the bench may take in all (see the file's head) */
static int bench_alloc(Bench *b, size_t room)
{
    size_t ab = (size_t)b->be->act_bytes, pb = (size_t)b->be->par_bytes;
    size_t N = (size_t)b->N, C = (size_t)b->C;
    void **act[] = {&b->x, &b->ln1, &b->atty, &b->res2, &b->ln2, &b->out, &b->dres, &b->dsmall};
    for (size_t i = 0; i < sizeof act / sizeof act[0]; i++) *act[i] = get(b, N * C * ab);
    size_t QKV = (size_t)b->QKV, FC = (size_t)b->FC, ACT = (size_t)b->ACT;
    b->qkv = get(b, N * QKV * ab);
    b->fch = get(b, N * FC * ab);
    b->gelu = get(b, N * ACT * ab);
    /* d(fch) with d(gelu) beside it (Llama: 2F + F), or d(qkv) */
    size_t big = b->llama ? FC + ACT : FC;
    b->dbig = get(b, N * (big > QKV ? big : QKV) * ab);
    float **f32[] = {&b->m1, &b->r1, &b->m2, &b->r2};
    for (size_t i = 0; i < 4; i++) *f32[i] = get(b, N * 4);
    b->lse = get(b, (size_t)b->B * b->NH * b->T * 4);
    size_t psz[NPAR] = {C, C, QKV * C, QKV, C * C, C, FC * C, FC, ACT * C, C};
    for (int i = 0; i < NPAR; i++) {
        b->par[i] = get(b, psz[i] * pb);
        b->grad[i] = get(b, psz[i] * pb);
    }
    b->wte = get(b, (size_t)b->Vp * C * pb);
    b->dwte = get(b, (size_t)b->Vp * C * pb);
    b->wpe = get(b, (size_t)b->T * C * pb);
    b->dwpe = get(b, (size_t)b->T * C * pb);
    b->hx = get(b, (size_t)b->rows * C * ab);
    b->hdx = get(b, (size_t)b->rows * C * ab);
    b->chunk = get(b, (size_t)b->rows * b->Vp * 4);
    b->losses = get(b, N * 4);
    b->tokens = get(b, N * sizeof(int));
    size_t rope = b->llama ? (size_t)b->T * (C / (size_t)b->NH) : 0;
    if (rope) b->rope = get(b, rope * 4);
    /* what is left: the optimizer slice, then the flush */
    size_t left = room > b->bytes ? room - b->bytes : 0;
    size_t per_elem = 2 * pb + 8 + (b->be->has_master ? 4 : 0);
    if (b->n_opt > left / per_elem) b->n_opt = left / per_elem;
    if (b->n_opt < OPT_SLICE_MIN) b->n_opt = OPT_SLICE_MIN;
    left = left > b->n_opt * per_elem ? left - b->n_opt * per_elem : 0;
    b->flush_bytes = left < FLUSH_BYTES ? left : FLUSH_BYTES;
    b->op = get(b, b->n_opt * pb);
    b->og = get(b, b->n_opt * pb);
    b->om = get(b, b->n_opt * 4);
    b->ov = get(b, b->n_opt * 4);
    b->omaster = b->be->has_master ? get(b, b->n_opt * 4) : NULL;
    b->flush = get(b, b->flush_bytes);
    if (b->failed) return -1;
    /* contents: LayerNorm weights near 1, everything else small */
    fill(b, b->x, N * C, 0, 1, 1);
    for (int i = 0; i < NPAR; i++) {
        fill(b, b->par[i], psz[i], i == LNW ? 1.0f : 0.0f, 0.02f, 10 + (uint64_t)i);
        b->be->ops->mem_zero(b->be, b->grad[i], psz[i] * pb);
    }
    fill(b, b->wte, (size_t)b->Vp * C, 0, 0.02f, 3);
    fill(b, b->wpe, (size_t)b->T * C, 0, 0.02f, 4);
    fill(b, b->hx, (size_t)b->rows * C, 0, 1, 5);
    fill(b, b->op, b->n_opt, 0, 0.02f, 6);
    fill(b, b->og, b->n_opt, 0, 0.001f, 7);
    b->be->ops->mem_zero(b->be, b->om, b->n_opt * 4);
    b->be->ops->mem_zero(b->be, b->ov, b->n_opt * 4);
    if (b->omaster) b->be->ops->mem_zero(b->be, b->omaster, b->n_opt * 4);
    int *tok = malloc((size_t)b->N * sizeof(int));
    if (!tok) return -1;
    uint64_t seed = 9;
    for (int i = 0; i < b->N; i++) tok[i] = (int)(rng_next(&seed) % (uint64_t)b->V);
    b->be->ops->mem_upload(b->be, b->tokens, tok, (size_t)b->N * sizeof(int));
    free(tok);
    if (rope) {
        float *h = malloc(rope * 4);
        if (!h) return -1;
        for (size_t i = 0; i < rope; i++)
            h[i] = (float)((rng_next(&seed) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
        b->be->ops->mem_upload(b->be, b->rope, h, rope * 4);
        free(h);
    }
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The Llama family's block in the same op slots (flops.c counts it so):
 * RMSNorm in the LayerNorms', the qkv matmul with RoPE on q and k, GQA
 * attention, wo, gate/up in fc's, SwiGLU in GELU's, down in fcproj's; no
 * biases; RoPE's backward with qkv's. The ops and operands are those of
 * model/llama_run.c's forward and backward. Returns 0 for an op that is
 * not the block's (the rest of a step is run as for GPT-2, wpe none). */
static int run_llama_op(Bench *b, int op)
{
    Backend *be = b->be;
    const BackendOps *o = be->ops;
    int B = b->B, T = b->T, C = b->C, NH = b->NH, KVH = b->KVH, N = b->N, F = b->ACT;
    size_t NC = (size_t)N * C;
    void *dswi = (char *)b->dbig + (size_t)N * b->FC * be->act_bytes;
    switch (op) {
    case OP_LN1: o->rmsnorm_forward(be, b->ln1, b->r1, b->x, b->par[LNW], N, C, b->eps); break;
    case OP_QKV:
        o->matmul_forward(be, b->qkv, b->ln1, b->par[QKVW], NULL, N, C, b->QKV);
        o->rope_forward(be, b->qkv, b->qkv, b->rope, B, T, C, NH, KVH);
        break;
    case OP_ATTN: o->attention_forward(be, b->atty, b->lse, b->qkv, B, T, C, NH, KVH); break;
    case OP_ATTPROJ: o->matmul_forward(be, b->res2, b->atty, b->par[APW], NULL, N, C, C); break;
    case OP_RESID1: o->residual_forward(be, b->res2, b->res2, b->x, NC); break;
    case OP_LN2: o->rmsnorm_forward(be, b->ln2, b->r2, b->res2, b->par[LNW], N, C, b->eps); break;
    case OP_FC: o->matmul_forward(be, b->fch, b->ln2, b->par[FCW], NULL, N, C, b->FC); break;
    case OP_GELU: o->swiglu_forward(be, b->gelu, b->fch, N, F); break;
    case OP_FCPROJ: o->matmul_forward(be, b->out, b->gelu, b->par[FPW], NULL, N, F, C); break;
    case OP_RESID2: o->residual_forward(be, b->out, b->out, b->res2, NC); break;
    case OP_FCPROJ_BWD: o->matmul_backward(be, dswi, b->grad[FPW], NULL, b->dres, b->gelu, b->par[FPW], N, F, C); break;
    case OP_GELU_BWD: o->swiglu_backward(be, b->dbig, b->fch, dswi, N, F); break;
    case OP_FC_BWD: o->matmul_backward(be, b->dsmall, b->grad[FCW], NULL, b->dbig, b->ln2, b->par[FCW], N, C, b->FC); break;
    case OP_LN2_BWD: o->rmsnorm_backward(be, b->dres, b->grad[LNW], b->dsmall, b->res2, b->par[LNW], b->r2, N, C); break;
    case OP_ATTPROJ_BWD: o->matmul_backward(be, b->dsmall, b->grad[APW], NULL, b->dres, b->atty, b->par[APW], N, C, C); break;
    case OP_ATTN_BWD: o->attention_backward(be, b->dbig, b->dsmall, b->qkv, b->atty, b->lse, B, T, C, NH, KVH); break;
    case OP_QKV_BWD:
        o->rope_backward(be, b->dbig, b->dbig, b->rope, B, T, C, NH, KVH);
        o->matmul_backward(be, b->dsmall, b->grad[QKVW], NULL, b->dbig, b->ln1, b->par[QKVW], N, C, b->QKV);
        break;
    case OP_LN1_BWD: o->rmsnorm_backward(be, b->dres, b->grad[LNW], b->dsmall, b->x, b->par[LNW], b->r1, N, C); break;
    case OP_ENCODER: o->encoder_forward(be, b->out, b->tokens, b->wte, NULL, B, T, C); break;
    case OP_LNF: o->rmsnorm_forward(be, b->ln1, b->r1, b->out, b->par[LNW], N, C, b->eps); break;
    case OP_LNF_BWD: o->rmsnorm_backward(be, b->dres, b->grad[LNW], b->dsmall, b->out, b->par[LNW], b->r1, N, C); break;
    case OP_ENCODER_BWD: o->encoder_backward(be, b->dwte, NULL, b->dres, b->tokens, B, T, C); break;
    default: return 0;
    }
    return 1;
}

/* Run op `op` once, between two syncs; returns its seconds. */
static double run_op(Bench *b, int op)
{
    Backend *be = b->be;
    const BackendOps *o = be->ops;
    int B = b->B, T = b->T, C = b->C, NH = b->NH, N = b->N;
    size_t NC = (size_t)N * C;
    o->sync(be);
    double t0 = now_s();
    switch (b->llama && run_llama_op(b, op) ? -1 : op) {
    case OP_LN1: o->layernorm_forward(be, b->ln1, b->m1, b->r1, b->x, b->par[LNW], b->par[LNB], N, C); break;
    case OP_QKV: o->matmul_forward(be, b->qkv, b->ln1, b->par[QKVW], b->par[QKVB], N, C, 3 * C); break;
    case OP_ATTN: o->attention_forward(be, b->atty, b->lse, b->qkv, B, T, C, NH, NH); break;
    case OP_ATTPROJ: o->matmul_forward(be, b->res2, b->atty, b->par[APW], b->par[APB], N, C, C); break;
    case OP_RESID1: o->residual_forward(be, b->res2, b->res2, b->x, NC); break;
    case OP_LN2: o->layernorm_forward(be, b->ln2, b->m2, b->r2, b->res2, b->par[LNW], b->par[LNB], N, C); break;
    case OP_FC: o->matmul_forward(be, b->fch, b->ln2, b->par[FCW], b->par[FCB], N, C, 4 * C); break;
    case OP_GELU: o->gelu_forward(be, b->gelu, b->fch, 4 * NC); break;
    case OP_FCPROJ: o->matmul_forward(be, b->out, b->gelu, b->par[FPW], b->par[FPB], N, 4 * C, C); break;
    case OP_RESID2: o->residual_forward(be, b->out, b->out, b->res2, NC); break;
    case OP_FCPROJ_BWD: o->matmul_backward(be, b->dbig, b->grad[FPW], b->grad[FPB], b->dres, b->gelu, b->par[FPW], N, 4 * C, C); break;
    case OP_GELU_BWD: o->gelu_backward(be, b->dbig, b->fch, b->dbig, 4 * NC); break;
    case OP_FC_BWD: o->matmul_backward(be, b->dsmall, b->grad[FCW], b->grad[FCB], b->dbig, b->ln2, b->par[FCW], N, C, 4 * C); break;
    case OP_LN2_BWD: o->layernorm_backward(be, b->dres, b->grad[LNW], b->grad[LNB], b->dsmall, b->res2, b->par[LNW], b->m2, b->r2, N, C); break;
    case OP_ATTPROJ_BWD: o->matmul_backward(be, b->dsmall, b->grad[APW], b->grad[APB], b->dres, b->atty, b->par[APW], N, C, C); break;
    case OP_ATTN_BWD: o->attention_backward(be, b->dbig, b->dsmall, b->qkv, b->atty, b->lse, B, T, C, NH, NH); break;
    case OP_QKV_BWD: o->matmul_backward(be, b->dsmall, b->grad[QKVW], b->grad[QKVB], b->dbig, b->ln1, b->par[QKVW], N, C, 3 * C); break;
    case OP_LN1_BWD: o->layernorm_backward(be, b->dres, b->grad[LNW], b->grad[LNB], b->dsmall, b->x, b->par[LNW], b->m1, b->r1, N, C); break;
    case OP_ENCODER: o->encoder_forward(be, b->out, b->tokens, b->wte, b->wpe, B, T, C); break;
    case OP_LNF: o->layernorm_forward(be, b->ln1, b->m1, b->r1, b->out, b->par[LNW], b->par[LNB], N, C); break;
    case OP_HEAD:
        o->head_forward_backward(be, b->losses, b->hdx, b->dwte, b->hx, b->wte, b->tokens, b->chunk,
                                 b->rows, C, b->V, b->Vp, b->rows, 1.0f / N);
        break;
    case OP_ZERO_DRES: o->mem_zero(be, b->dsmall, NC * (size_t)be->act_bytes); break;
    case OP_LNF_BWD: o->layernorm_backward(be, b->dres, b->grad[LNW], b->grad[LNB], b->dsmall, b->out, b->par[LNW], b->m1, b->r1, N, C); break;
    case OP_ENCODER_BWD: o->encoder_backward(be, b->dwte, b->dwpe, b->dres, b->tokens, B, T, C); break;
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
    size_t chunk = (size_t)b->rows * b->Vp * 4, short_by = FLUSH_BYTES - b->flush_bytes;
    b->be->ops->mem_zero(b->be, b->flush, b->flush_bytes);
    if (short_by) b->be->ops->mem_zero(b->be, b->chunk, chunk < short_by ? chunk : short_by);
}

static double run_round(Bench *b, double *t)
{
    double sum = 0.0;
    fill(b, b->dres, (size_t)b->N * b->C, 0, 1, 8);
    for (int op = 0; op < OP_COUNT; op++) {
        if (stop_requested()) return -1.0;
        if (op == OP_BLOCK_FWD_FIRST || op == OP_BLOCK_BWD_FIRST)
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
    if (schedule_build(&s, planner_block(in), RECOMPUTE_BLOCK, in->cfg.num_layers, err, err_len) !=
        0)
        return -1;
    planner_plan(in, &s, &plan); /* for the head chunk and the optimizer's element counts */
    schedule_free(&s);
    Bench b = {.be = be, .B = in->B, .T = in->T, .C = in->cfg.channels,
               .NH = in->cfg.num_heads, .N = in->B * in->T, .V = in->cfg.vocab_size,
               .Vp = in->cfg.padded_vocab, .rows = plan.loss_chunk,
               .llama = in->cfg.arch == ARCH_LLAMA, .KVH = config_kv_heads(&in->cfg),
               .QKV = 3 * in->cfg.channels, .FC = 4 * in->cfg.channels,
               .ACT = 4 * in->cfg.channels, .eps = config_norm_eps(&in->cfg)};
    if (b.llama) {
        int hs = b.C / b.NH, F = config_ffn(&in->cfg);
        b.QKV = b.C + 2 * b.KVH * hs, b.FC = 2 * F, b.ACT = F;
    }
    b.n_opt = plan.padded_params < OPT_SLICE ? plan.padded_params : OPT_SLICE;
    /* every schedule's arenas hold at least the fixed categories and one
     * block's workspace: recompute 1's without its stored inputs */
    size_t room = 0;
    for (int c = 0; c < MEM_NUM_CATEGORIES; c++)
        if (c != MEM_ACTIVATIONS) room += plan.bytes[c];
    int rc = bench_alloc(&b, room), reps = 0;
    double *t = malloc(sizeof(double) * OPCOST_MAX_REPS * OP_COUNT);
    if (rc != 0 || !t) {
        snprintf(err, err_len, "--op-costs measure: out of %s memory for one block's buffers "
                 "at B=%d, T=%d, C=%d", be->name, b.B, b.T, b.C);
        rc = -1;
        goto done;
    }
    /* The first round warms up (cuBLASLt's heuristics, page faults). Then
     * at least min_reps rounds, and more, up to OPCOST_MAX_REPS, until they
     * span OPCOST_MIN_SECONDS: a median over a longer stretch is less at
     * the mercy of one moment's load on a shared machine. */
    if (min_reps < 1) min_reps = 1;
    if (min_reps > OPCOST_MAX_REPS) min_reps = OPCOST_MAX_REPS;
    double spent = run_round(&b, NULL);
    for (spent = spent < 0 ? -1.0 : 0.0;
         spent >= 0 && (reps < min_reps || (spent < OPCOST_MIN_SECONDS && reps < OPCOST_MAX_REPS));
         reps++) {
        double dt = run_round(&b, t + (size_t)reps * OP_COUNT);
        spent = dt < 0 ? -1.0 : spent + dt;
    }
    if (spent < 0) {
        snprintf(err, err_len, "--op-costs measure: %s", STOP_MESSAGE);
        rc = -1;
        goto done;
    }
    memset(out, 0, sizeof *out);
    out->unit = OPCOST_NS;
    out->reps = reps;
    double *v = malloc(sizeof(double) * (size_t)reps);
    if (!v) {
        snprintf(err, err_len, "--op-costs measure: out of host memory");
        rc = -1;
        goto done;
    }
    for (int op = 0; op < OP_COUNT; op++) {
        double scale = 1.0;
        for (int r = 0; r < reps; r++) v[r] = t[(size_t)r * OP_COUNT + op];
        qsort(v, (size_t)reps, sizeof *v, cmp_double);
        double mean = trimmed_mean(v, reps);
        if (op == OP_HEAD) scale = (double)b.N / b.rows;
        if (op == OP_ZERO_GRADS) scale = (double)plan.padded_params / b.n_opt;
        if (op == OP_GRAD_NORM) scale = (double)plan.num_params / b.n_opt;
        if (op == OP_ADAMW) scale = (double)plan.shard_params / b.n_opt;
        out->c[op] = (long long)(mean * scale * 1e9 + 0.5);
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
