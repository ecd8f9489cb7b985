/* model/gpt.c — the schedule interpreter and the parameter and gradient entry points
 * (see gpt.h); the buffers it runs on are carved in gpt_alloc.c, the optimizer step is
 * gpt_optim.c's. */
#include "gpt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/test_hooks.h"
#include "gpt2_block.h"
#include "gpt_tensors.h"


#define OPS (g->be->ops)

#define attn_scratch gpt_attn_scratch

static int is_llama(const GPT *g) { return g->cfg.arch == ARCH_LLAMA; }

/* The head's weight (base: param_t) or its gradient (grad_t): the token
 * embedding when tied, the Llama family's lm_head (wpe's slot) when not. */
static void *head_weight(const GPT *g, void *const *base)
{
    return is_llama(g) && g->cfg.untied ? base[WPE] : base[WTE];
}

void gpt_set_grad_hook(GPT *g, GradReadyFn fn, void *ctx)
{
    g->grad_ready = fn;
    g->grad_ready_ctx = ctx;
}

void gpt_set_grad_scatter(GPT *g, GradScatterFn fn, void *ctx)
{
    g->grad_scatter = fn;
    g->grad_scatter_ctx = ctx;
}

void gpt_grads_shard_add(GPT *g, size_t flat, const void *src, size_t n)
{
    /* an elementwise add, in place: the first micro-batch adds to zeros,
     * which leaves the reduced bits as they are */
    void *dst = gpt_grad_at(g, flat);
    OPS->residual_forward(g->be, dst, dst, src, n);
}

void gpt_set_block_hook(GPT *g, BlockHookFn fn, void *ctx)
{
    g->block_hook = fn;
    g->block_hook_ctx = ctx;
}

/* Ask the block hook whether to go on after `done` schedule steps; 0 = go on. */
static int block_done(GPT *g, int done)
{
    if (g->block_hook && g->block_hook(g->block_hook_ctx, g, done)) g->abandoned = 1;
    return g->abandoned;
}

/* 1 when the master copy covers only part of the vector (ZeRO-1). */
static int master_sharded(const GPT *g)
{
    return g->master && (g->opt_begin != 0 || g->opt_end != g->plan.num_params);
}

size_t gpt_arena_high_water(const GPT *g)
{
    size_t used = 0;
    for (int c = 0; c < MEM_NUM_CATEGORIES; c++) used += g->arenas[c].used;
    return used;
}

size_t gpt_host_high_water(const GPT *g)
{
    size_t used = 0;
    for (int c = 0; c < HOST_NUM_CATEGORIES; c++) used += g->host_arenas[c].used;
    return used;
}

void gpt_set_params(GPT *g, const float *host)
{
    gpt_params_settle(g); /* no upload of a deferred update may land after these */
    size_t n = g->plan.num_params, b = g->opt_begin, e = g->opt_end;
    if (g->param_blocks) { /* ZeRO-3: the shard alone */
        if (e > b) OPS->params_upload(g->be, g->params, g->master, host + b, e - b);
        return;
    }
    if (!master_sharded(g)) {
        OPS->params_upload(g->be, g->params, g->master, host, n);
        return;
    }
    OPS->params_upload(g->be, g->params, NULL, host, n);
    OPS->params_upload(g->be, gpt_par_at(g, g->params, b), g->master, host + b, e - b);
}

void gpt_get_params(GPT *g, float *host)
{
    gpt_params_settle(g);
    size_t n = g->plan.num_params, b = g->opt_begin, e = g->opt_end;
    if (g->param_blocks) { /* ZeRO-3: the shard alone */
        if (e > b) OPS->params_download(g->be, host + b, g->params, g->master, e - b);
        return;
    }
    if (!master_sharded(g)) {
        OPS->params_download(g->be, host, g->params, g->master, n);
        return;
    }
    OPS->params_download(g->be, host, g->params, NULL, n);
    OPS->params_download(g->be, host + b, gpt_par_at(g, g->params, b), g->master, e - b);
}

void gpt_get_grads(GPT *g, float *host)
{
    if (g->grad_layer) { /* ZeRO-2: this rank's range only */
        if (g->opt_end > g->opt_begin)
            OPS->params_download(g->be, host + g->opt_begin, g->grads, NULL,
                                 g->opt_end - g->opt_begin);
        return;
    }
    OPS->params_download(g->be, host, g->grads, NULL, g->plan.num_params);
}

void gpt_zero_grads(GPT *g)
{
    gpt_opt_grads_taken(g);
    size_t n = g->grad_layer ? g->plan.shard_params : g->plan.padded_params;
    OPS->mem_zero(g->be, g->grads, n * g->be->par_bytes);
}

/* ZeRO-2: reduce the full-size buffers' ranges into the shard, through the
 * hook (ranks) or here (one process: the shard is the whole vector). */
static void grads_scatter(GPT *g, void *const *src, const size_t *offs, const size_t *counts,
                          int n)
{
    if (g->counting)
        for (int k = 0; k < n; k++) g->scattered += counts[k];
    if (g->grad_scatter) {
        g->grad_scatter(g->grad_scatter_ctx, src, offs, counts, n);
        return;
    }
    for (int k = 0; k < n; k++) {
        size_t lo = offs[k] > g->opt_begin ? offs[k] : g->opt_begin;
        size_t hi = offs[k] + counts[k] < g->opt_end ? offs[k] + counts[k] : g->opt_end;
        if (lo < hi) gpt_grads_shard_add(g, lo, gpt_par_at(g, src[k], lo - offs[k]), hi - lo);
    }
}

/* Tell the gradient hook that tensors t[0..n) (slice `layer` of the
 * per-layer ones, the whole tensor of the others) are final. */
static void grads_ready(GPT *g, const int *t, int n, int layer)
{
    if (!g->grad_ready && !g->deferred.early && !g->grad_layer) return;
    size_t start[NUM_PARAM_TENSORS], offs[NUM_PARAM_TENSORS], counts[NUM_PARAM_TENSORS], o = 0;
    for (int i = 0; i < NUM_PARAM_TENSORS; i++) {
        start[i] = o;
        o += g->param_sizes[i];
    }
    for (int k = 0; k < n; k++) {
        size_t sz = g->param_sizes[t[k]];
        if (layer < 0) {
            offs[k] = start[t[k]];
            counts[k] = sz;
        } else {
            counts[k] = sz / (size_t)g->cfg.num_layers;
            offs[k] = start[t[k]] + (size_t)layer * counts[k];
        }
    }
    if (g->grad_layer) {
        void *src[NUM_PARAM_TENSORS];
        for (int k = 0; k < n; k++) src[k] = g->grad_t[t[k]];
        grads_scatter(g, src, offs, counts, n);
    }
    if (g->grad_ready) g->grad_ready(g->grad_ready_ctx, offs, counts, n);
    gpt_opt_grads_final(g, offs, counts, n);
    TEST_HOOK(if (g->deferred.early && layer >= 0) gpt_trace(g, GPT_TRACE_STAGED(layer)));
}

/* ---- one block ---- */

/* Make tape tensor t of block l (gpt2_block.h) from x and its inputs:
 * the forward's ops, so a rebuild gives the forward's bits. The
 * LayerNorms write their mean and rstd too (kept: rewritten equal). */
static void make_tensor(GPT *g, int l, const void *x, BlockTape *tp, int t)
{
    int B = g->B, T = g->T, C = g->cfg.channels, NH = g->cfg.num_heads, N = B * T;
    switch (t) {
    case GPT2_LN1:
        OPS->layernorm_forward(g->be, tp->ln1, tp->ln1_mean, tp->ln1_rstd, x, P(LN1W, l), P(LN1B, l), N, C);
        break;
    case GPT2_QKV:
        OPS->matmul_forward(g->be, tp->qkv, tp->ln1, P(QKVW, l), P(QKVB, l), N, C, 3 * C);
        break;
    case GPT2_ATTY:
        attn_scratch(g);
        OPS->attention_forward(g->be, tp->atty, tp->lse, tp->qkv, B, T, C, NH, NH);
        break;
    case GPT2_RES2:
        OPS->matmul_forward(g->be, tp->res2, tp->atty, P(ATTPROJW, l), P(ATTPROJB, l), N, C, C);
        OPS->residual_forward(g->be, tp->res2, tp->res2, x, (size_t)N * C);
        break;
    case GPT2_LN2:
        OPS->layernorm_forward(g->be, tp->ln2, tp->ln2_mean, tp->ln2_rstd, tp->res2, P(LN2W, l), P(LN2B, l), N, C);
        break;
    case GPT2_FCH:
        OPS->matmul_forward(g->be, tp->fch, tp->ln2, P(FCW, l), P(FCB, l), N, C, 4 * C);
        break;
    case GPT2_GELU:
        OPS->gelu_forward(g->be, tp->fch_gelu, tp->fch, (size_t)N * 4 * C);
        break;
    }
}

/* A LayerNorm's output, statistics and parameters: where a block's closing
 * residual add also writes the LayerNorm that reads its output next. */
typedef struct {
    void *out;
    float *mean, *rstd;
    const void *w, *b;
} LnOut;

/* The fc layer's GELU may be fused into its matmul only when no tape of the
 * schedule drops fch or its GELU: a backward rebuilds them with the
 * unfused ops (make_tensor), and a fused epilogue (cuda,
 * TRAIN_GPT_FUSE_GELU=1) takes GELU before fch is rounded, with another
 * cuBLASLt kernel, so the two could differ in the last bits. On the cpu
 * both are the same calls. */
static int fc_gelu_fusable(const GPT *g)
{
    for (int j = 0; j < g->sched.n_tape_slots; j++)
        if (g->sched.tape_kind[j] & g->sched.block->inexact_fused) return 0;
    return 1;
}

/* FORWARD(l): x (B,T,C) -> tape; when out != NULL also out = x_{l+1}.
 * out may be x: x is last read by the mid-block residual add, before out
 * is written. Tensors the tape's kind drops go to the tape workspace,
 * where tape.h's layout keeps each clear of the others alive with it.
 * The op order is gpt2_block.c's, from which tape.c computes lifetimes.
 * The mid-block residual add writes LN2 in the same op (the same bits as
 * make_tensor's two, which a rebuild runs); ln1_done: the previous step's
 * closing residual add already wrote this block's LN1; next (or NULL):
 * the LayerNorm the closing residual add writes too. */
static void block_forward(GPT *g, int l, const void *x, BlockTape *tp, void *out, int ln1_done,
                          const LnOut *next)
{
    int B = g->B, T = g->T, C = g->cfg.channels, NH = g->cfg.num_heads, N = B * T;
    /* x (B,T,C) -> ln1 (B,T,C), mean and rstd (B,T) f32 */
    if (!ln1_done)
        OPS->layernorm_forward(g->be, tp->ln1, tp->ln1_mean, tp->ln1_rstd, x, P(LN1W, l), P(LN1B, l), N, C);
    /* ln1 (B,T,C) -> qkv (B,T,3C) */
    OPS->matmul_forward(g->be, tp->qkv, tp->ln1, P(QKVW, l), P(QKVB, l), N, C, 3 * C);
    /* qkv (B,T,3C) -> atty (B,T,C), lse (B,NH,T) f32 */
    attn_scratch(g);
    OPS->attention_forward(g->be, tp->atty, tp->lse, tp->qkv, B, T, C, NH, NH);
    /* atty (B,T,C) -> res2 (B,T,C) */
    OPS->matmul_forward(g->be, tp->res2, tp->atty, P(ATTPROJW, l), P(ATTPROJB, l), N, C, C);
    /* res2 += x (B,T,C); res2 -> ln2 (B,T,C), mean and rstd (B,T) f32 */
    OPS->residual_layernorm_forward(g->be, tp->res2, tp->ln2, tp->ln2_mean, tp->ln2_rstd, tp->res2, x, P(LN2W, l), P(LN2B, l), N, C);
    if (fc_gelu_fusable(g)) {
        /* ln2 (B,T,C) -> fch (B,T,4C) -> fch_gelu (B,T,4C), in one op */
        OPS->matmul_gelu_forward(g->be, tp->fch_gelu, tp->fch, tp->ln2, P(FCW, l), P(FCB, l), N, C, 4 * C);
    } else {
        /* ln2 (B,T,C) -> fch (B,T,4C) */
        OPS->matmul_forward(g->be, tp->fch, tp->ln2, P(FCW, l), P(FCB, l), N, C, 4 * C);
        /* fch (B,T,4C) -> fch_gelu (B,T,4C) */
        OPS->gelu_forward(g->be, tp->fch_gelu, tp->fch, (size_t)N * 4 * C);
    }
    if (!out) return; /* a re-forward: backward never reads the block output */
    /* fch_gelu (B,T,4C) -> out (B,T,C) */
    OPS->matmul_forward(g->be, out, tp->fch_gelu, P(FCPROJW, l), P(FCPROJB, l), N, 4 * C, C);
    /* out += res2 (B,T,C); with next, also out -> next->out (B,T,C), mean and rstd (B,T) */
    gpt_gather_wait(g); /* ZeRO-3: next->w, next->b may be on their way */
    if (next)
        OPS->residual_layernorm_forward(g->be, out, next->out, next->mean, next->rstd, out, tp->res2, next->w, next->b, N, C);
    else
        OPS->residual_forward(g->be, out, out, tp->res2, (size_t)N * C);
}

/* Rebuild what backward op `op` (gpt2_block.h's GPT2_BWD_*) needs of what
 * the tape dropped; *built: what this backward has rebuilt so far. */
static void rebuild_for(GPT *g, int l, const void *x, BlockTape *tp, TensorSet *built, int op)
{
    int list[BLOCK_MAX_TENSORS];
    int n = tape_rebuilds_before(g->sched.block, tp->kind, op, built, list);
    for (int i = 0; i < n; i++) make_tensor(g, l, x, tp, list[i]);
}

/* BACKWARD(l): dres holds dL/dx_{l+1} on entry and dL/dx_l on exit.
 * dbig (N,4C) carries d(gelu), d(fch) in place, then d(qkv) (N,3C);
 * dsmall (N,C) carries d(ln2), d(atty), d(ln1) in turn. Before each op,
 * the tensors it reads that the tape dropped are rebuilt. */
static void block_backward(GPT *g, int l, const void *x, BlockTape *tp)
{
    int B = g->B, T = g->T, C = g->cfg.channels, NH = g->cfg.num_heads, N = B * T;
    void *dres = g->dres, *dsmall = g->dsmall, *dbig = g->dbig;
    TensorSet built = 0;
    rebuild_for(g, l, x, tp, &built, GPT2_BWD_FCPROJ);
    /* fch too, a step early: the fused op reads both (only fch and its
     * GELU can be alive in the workspace at this point) */
    rebuild_for(g, l, x, tp, &built, GPT2_BWD_GELU);
    OPS->matmul_backward_gelu(g->be, dbig, G(FCPROJW, l), G(FCPROJB, l), dres, tp->fch_gelu, P(FCPROJW, l), tp->fch, N, 4 * C, C);
    rebuild_for(g, l, x, tp, &built, GPT2_BWD_FC);
    OPS->matmul_backward(g->be, dsmall, G(FCW, l), G(FCB, l), dbig, tp->ln2, P(FCW, l), N, C, 4 * C);
    rebuild_for(g, l, x, tp, &built, GPT2_BWD_LN2);
    OPS->layernorm_backward(g->be, dres, G(LN2W, l), G(LN2B, l), dsmall, tp->res2, P(LN2W, l), tp->ln2_mean, tp->ln2_rstd, N, C);
    rebuild_for(g, l, x, tp, &built, GPT2_BWD_ATTPROJ);
    OPS->matmul_backward(g->be, dsmall, G(ATTPROJW, l), G(ATTPROJB, l), dres, tp->atty, P(ATTPROJW, l), N, C, C);
    rebuild_for(g, l, x, tp, &built, GPT2_BWD_ATTN);
    attn_scratch(g);
    OPS->attention_backward(g->be, dbig, dsmall, tp->qkv, tp->atty, tp->lse, B, T, C, NH, NH);
    rebuild_for(g, l, x, tp, &built, GPT2_BWD_QKV);
    OPS->matmul_backward(g->be, dsmall, G(QKVW, l), G(QKVB, l), dbig, tp->ln1, P(QKVW, l), N, C, 3 * C);
    OPS->layernorm_backward(g->be, dres, G(LN1W, l), G(LN1B, l), dsmall, x, P(LN1W, l), tp->ln1_mean, tp->ln1_rstd, N, C);
}

/* The LayerNorm forward step k's closing residual add writes too, where
 * the schedule fuses it (fuse_next_ln, schedule_fuse_layernorms): LN_f
 * after the last block before the head, else the LN1 of step k+1's block,
 * into step k+1's tape. */
static LnOut next_layernorm(GPT *g, int k)
{
    const ScheduleStep *st = &g->sched.steps[k];
    if (st->out_slot == SLOT_FINAL)
        return (LnOut){g->lnf, g->lnf_mean, g->lnf_rstd, g->param_t[LNFW], g->param_t[LNFB]};
    const ScheduleStep *nx = &g->sched.steps[k + 1];
    const BlockTape *tn = &g->tapes[nx->tape_slot];
    return (LnOut){tn->ln1, tn->ln1_mean, tn->ln1_rstd, P(LN1W, nx->block), P(LN1B, nx->block)};
}

/* 1 when the forward steps fuse LN_f into the last block's residual add. */
static int lnf_fused(const GPT *g)
{
    int k = g->sched.n_forward - 1;
    return k >= 0 && g->sched.steps[k].fuse_next_ln;
}

/* Offloaded checkpoints: the copies and waits at position pos of the
 * schedule's OffloadProgram (schedule.h); none without offload. */
static void offload_at(GPT *g, int pos)
{
    const OffloadProgram *op = &g->off;
    if (!op->n_ring) return;
    size_t bytes = (size_t)g->B * g->T * g->cfg.channels * g->be->act_bytes;
    for (int i = op->first[pos]; i < op->first[pos + 1]; i++) {
        const OffloadAct *a = &op->acts[i];
        if (a->kind == OFF_WAIT) OPS->event_wait(g->be, a->ring);
        else if (a->kind == OFF_OUT) OPS->copy_async(g->be, g->host_res[a->host], g->ring[a->ring], bytes, a->ring);
        else OPS->copy_async(g->be, g->ring[a->ring], g->host_res[a->host], bytes, a->ring);
    }
}

/* The buffer standing for residual slot `slot` at step k: its ring slot when
 * the slot is an offloaded stored one (ring >= 0), else its own. */
static void *res_at(GPT *g, int slot, int ring)
{
    return ring >= 0 ? g->ring[ring] : g->res_slots[slot];
}

/* Run schedule steps [k0, k1); 0, or -1 when the block hook abandoned the pass. */
static int run_steps(GPT *g, int k0, int k1)
{
    const OffloadProgram *op = &g->off;
    for (int k = k0; k < k1; k++) {
        const ScheduleStep *st = &g->sched.steps[k];
        offload_at(g, OFFLOAD_BEFORE(k));
        /* ZeRO-3: this block's parameters, and the next block's when the
         * closing add writes its LN1 (one block ahead, the other buffer) */
        int b = st->block, nb = k + 1 < k1 ? g->sched.steps[k + 1].block : -1;
        int fuse = st->kind == STEP_FORWARD && st->fuse_next_ln && st->out_slot != SLOT_FINAL;
        gpt_gather_block(g, b);
        if (fuse && nb != b + 1) gpt_gather_block(g, b + 1);
        /* the next step's block into the other buffer while this one runs
         * (not across the head: k1 ends the forward part); block_forward
         * waits for it before the closing add reads its LN1 */
        if (nb >= 0 && nb != b && (nb & 1) != (b & 1) && (!fuse || nb == b + 1))
            gpt_gather_prefetch(g, nb);
        const void *x = res_at(g, st->in_slot, op->n_ring ? op->in_ring[k] : -1);
        BlockTape *tp = &g->tapes[st->tape_slot];
        if (st->kind == STEP_FORWARD) {
            void *out = st->out_slot == SLOT_FINAL ? g->final_res
                        : st->out_slot == SLOT_NONE ? NULL
                                                    : res_at(g, st->out_slot,
                                                             op->n_ring ? op->out_ring[k] : -1);
            /* the previous step's closing add wrote this block's LN1 */
            const ScheduleStep *prev = k > k0 ? st - 1 : NULL;
            int ln1_done = prev && prev->fuse_next_ln && prev->out_slot != SLOT_FINAL;
            /* a deferred update: this block's weights, and the next block's when
             * the closing add writes its LN1 (LN_f's are in the last block's unit) */
            gpt_opt_wait_unit(g, GPT_UNIT_BLOCK(st->block + (st->fuse_next_ln ? 1 : 0)));
            LnOut next = st->fuse_next_ln ? next_layernorm(g, k) : (LnOut){0};
            if (is_llama(g)) /* its schedule fuses no closing add (llama_block.c) */
                llama_block_forward(g, st->block, x, tp, out);
            else
                block_forward(g, st->block, x, tp, out, ln1_done, st->fuse_next_ln ? &next : NULL);
            TEST_HOOK(gpt_trace(g, GPT_TRACE_FORWARD(st->block)));
        } else {
            static const int block_tensors[12] = {LN1W, LN1B, QKVW, QKVB, ATTPROJW, ATTPROJB,
                                                  LN2W, LN2B, FCW, FCB, FCPROJW, FCPROJB};
            /* ZeRO-2: the block buffer holds only this block's gradients */
            if (g->grad_layer)
                OPS->mem_zero(g->be, g->grad_layer, g->plan.grad_layer_bytes);
            if (is_llama(g))
                llama_block_backward(g, st->block, x, tp);
            else
                block_backward(g, st->block, x, tp);
            TEST_HOOK(gpt_trace(g, GPT_TRACE_BACKWARD(st->block)));
            grads_ready(g, block_tensors, 12, st->block);
        }
        offload_at(g, OFFLOAD_AFTER(k));
        if (block_done(g, k + 1)) return -1;
    }
    return 0;
}

/* Embedding, the forward part of the schedule, and the final LayerNorm.
 * Starts a pass (clears g->abandoned); -1 when the block hook abandoned it. */
static int forward_to_lnf(GPT *g, const int *inputs)
{
    int N = g->B * g->T, C = g->cfg.channels;
    g->abandoned = 0;
    OPS->mem_upload(g->be, g->tokens, inputs, (size_t)N * sizeof(int));
    offload_at(g, OFFLOAD_BEFORE(-1));
    gpt_opt_wait_unit(g, GPT_UNIT_EMBED);
    gpt_gather_begin(g); /* ZeRO-3: wte, wpe and LN_f for the whole pass */
    OPS->encoder_forward(g->be, res_at(g, g->sched.embed_slot, g->off.n_ring ? g->off.embed_ring : -1),
                         g->tokens, g->param_t[WTE], is_llama(g) ? NULL : g->param_t[WPE], g->B,
                         g->T, C);
    offload_at(g, OFFLOAD_AFTER(-1));
    if (run_steps(g, 0, g->sched.n_forward) != 0) return -1;
    gpt_params_settle(g); /* the head, LN_f and backward read every unit */
    if (is_llama(g))
        OPS->rmsnorm_forward(g->be, g->lnf, g->lnf_rstd, g->final_res, g->param_t[LNFW], N, C,
                             config_norm_eps(&g->cfg));
    else if (!lnf_fused(g))
        OPS->layernorm_forward(g->be, g->lnf, g->lnf_mean, g->lnf_rstd, g->final_res,
                               g->param_t[LNFW], g->param_t[LNFB], N, C);
    return 0;
}

static double mean_loss(GPT *g)
{
    int N = g->B * g->T;
    OPS->mem_download(g->be, g->host_losses, g->losses, (size_t)N * sizeof(float));
    double s = 0.0;
    for (int n = 0; n < N; n++) s += g->host_losses[n];
    return s / N;
}

static double forward_backward(GPT *g, const int *inputs, const int *targets, float dloss);

double gpt_forward_backward(GPT *g, const int *inputs, const int *targets, float dloss)
{
    g->counting = 1; /* the collectives of training passes (gpt.h) */
    double loss = forward_backward(g, inputs, targets, dloss);
    g->counting = 0;
    g->passes++;
    return loss;
}

static double forward_backward(GPT *g, const int *inputs, const int *targets, float dloss)
{
    int N = g->B * g->T, C = g->cfg.channels;
    gpt_opt_pass_begins(g);
    if (forward_to_lnf(g, inputs) != 0) return NAN;
    OPS->mem_upload(g->be, g->targets, targets, (size_t)N * sizeof(int));
    /* ZeRO-2: the outer tensors' buffer holds this micro-batch's alone */
    if (g->grad_outer) OPS->mem_zero(g->be, g->grad_outer, g->plan.grad_outer_bytes);
    /* Head forward and backward in one chunked pass: dsmall = dL/d(lnf out). */
    OPS->head_forward_backward(g->be, g->losses, g->dsmall, head_weight(g, g->grad_t), g->lnf,
                               head_weight(g, g->param_t), g->targets, g->chunk_buf, N, C,
                               g->cfg.vocab_size, g->cfg.padded_vocab, g->plan.loss_chunk, dloss);
    g->past_head = 1; /* ZeRO-3: the gathers from here on are re-gathers */
    if (block_done(g, g->sched.n_forward)) return NAN;
    OPS->mem_zero(g->be, g->dres, (size_t)N * C * g->be->act_bytes);
    if (is_llama(g))
        OPS->rmsnorm_backward(g->be, g->dres, g->grad_t[LNFW], g->dsmall, g->final_res,
                              g->param_t[LNFW], g->lnf_rstd, N, C);
    else
        OPS->layernorm_backward(g->be, g->dres, g->grad_t[LNFW], g->grad_t[LNFB], g->dsmall,
                                g->final_res, g->param_t[LNFW], g->lnf_mean, g->lnf_rstd, N, C);
    static const int lnf_tensors[2] = {LNFW, LNFB}, embed_tensors[2] = {WTE, WPE};
    grads_ready(g, lnf_tensors, 2, -1);
    if (run_steps(g, g->sched.n_forward, g->sched.n_steps) != 0) return NAN;
    OPS->encoder_backward(g->be, g->grad_t[WTE], is_llama(g) ? NULL : g->grad_t[WPE], g->dres,
                          g->tokens, g->B, g->T, C);
    grads_ready(g, embed_tensors, 2, -1);
    return mean_loss(g);
}

/* Forward, and the head's forward half into g->losses (device). -1 when
 * the block hook abandoned the forward (g->abandoned; losses not written). */
static int eval_forward(GPT *g, const int *inputs, const int *targets)
{
    int N = g->B * g->T, C = g->cfg.channels;
    if (forward_to_lnf(g, inputs) != 0) return -1;
    OPS->mem_upload(g->be, g->targets, targets, (size_t)N * sizeof(int));
    OPS->head_forward_backward(g->be, g->losses, NULL, NULL, g->lnf, head_weight(g, g->param_t),
                               g->targets,
                               g->chunk_buf, N, C, g->cfg.vocab_size, g->cfg.padded_vocab,
                               g->plan.loss_chunk, 0.0f);
    return 0;
}

double gpt_eval_loss(GPT *g, const int *inputs, const int *targets)
{
    if (eval_forward(g, inputs, targets) != 0) return NAN;
    return mean_loss(g);
}

const float *gpt_eval_token_losses(GPT *g, const int *inputs, const int *targets)
{
    if (eval_forward(g, inputs, targets) != 0) return g->host_losses; /* stale: g->abandoned */
    OPS->mem_download(g->be, g->host_losses, g->losses, (size_t)g->B * g->T * sizeof(float));
    return g->host_losses;
}

void gpt_logits_at(GPT *g, const int *inputs, int pos, float *logits)
{
    int C = g->cfg.channels, Vp = g->cfg.padded_vocab;
    if (forward_to_lnf(g, inputs) != 0) return;
    /* chunk_buf holds at least one row of Vp floats. */
    const char *row = (const char *)g->lnf + (size_t)pos * C * g->be->act_bytes;
    OPS->head_logits(g->be, g->chunk_buf, row, head_weight(g, g->param_t), 1, C, Vp);
    OPS->mem_download(g->be, logits, g->chunk_buf, (size_t)Vp * sizeof(float));
}

/* ---- incremental decoding (gpt.h's GPTDecode) ---- */

/* Block l over n rows at positions t .. t+n-1: x (n,C) in, x_{l+1} out in
 * place. On entry d->ln holds LN1(x) (the previous block's closing add
 * wrote it); on exit it holds `next` of x_{l+1}: block l+1's LN1, or LN_f
 * after the last block. The forward's ops in the forward's order with
 * N = n, and attention against the cache, row by row: row i appends its K
 * and V at t+i before it attends, so it sees rows t..t+i of this pass. */
static void block_decode(GPT *g, GPTDecode *d, int l, int t, int n, const LnOut *next)
{
    int C = g->cfg.channels, NH = g->cfg.num_heads, T = g->T;
    size_t ab = g->be->act_bytes, layer = (size_t)l * T * C * ab;
    /* ln (n,C) -> qkv (n,3C) */
    OPS->matmul_forward(g->be, d->qkv, d->ln, P(QKVW, l), P(QKVB, l), n, C, 3 * C);
    /* k, v of qkv row i -> cache row t+i; qkv row i, cache rows [0, t+i] -> atty row i */
    attn_scratch(g);
    for (int i = 0; i < n; i++)
        OPS->attention_decode(g->be, (char *)d->atty + (size_t)i * C * ab, (char *)d->k + layer,
                              (char *)d->v + layer, (const char *)d->qkv + (size_t)i * 3 * C * ab,
                              t + i, T, C, NH, NH);
    /* atty (n,C) -> res2 (n,C) */
    OPS->matmul_forward(g->be, d->res2, d->atty, P(ATTPROJW, l), P(ATTPROJB, l), n, C, C);
    /* res2 += x; res2 -> ln (n,C) = LN2 */
    OPS->residual_layernorm_forward(g->be, d->res2, d->ln, d->mean, d->rstd, d->res2, d->x, P(LN2W, l), P(LN2B, l), n, C);
    if (fc_gelu_fusable(g)) {
        /* ln (n,C) -> fch (n,4C) -> fch_gelu (n,4C), in one op */
        OPS->matmul_gelu_forward(g->be, d->fch_gelu, d->fch, d->ln, P(FCW, l), P(FCB, l), n, C, 4 * C);
    } else {
        OPS->matmul_forward(g->be, d->fch, d->ln, P(FCW, l), P(FCB, l), n, C, 4 * C);
        OPS->gelu_forward(g->be, d->fch_gelu, d->fch, (size_t)n * 4 * C);
    }
    /* fch_gelu (n,4C) -> x (n,C) */
    OPS->matmul_forward(g->be, d->x, d->fch_gelu, P(FCPROJW, l), P(FCPROJB, l), n, 4 * C, C);
    /* x += res2; x -> next->out (n,C) */
    OPS->residual_layernorm_forward(g->be, d->x, next->out, d->mean, d->rstd, d->x, d->res2, next->w, next->b, n, C);
}

/* One pass of n <= d->rows rows at positions d->len ..; 0, or -1 when the
 * block hook abandoned it. */
static int decode_pass(GPT *g, GPTDecode *d, const int *tokens, int n)
{
    int C = g->cfg.channels, L = g->cfg.num_layers, t = d->len;
    OPS->mem_upload(g->be, d->token, tokens, (size_t)n * sizeof *tokens);
    if (is_llama(g)) { /* no position table (RoPE, in the block); each block norms its x */
        OPS->encoder_forward(g->be, d->x, d->token, g->param_t[WTE], NULL, 1, n, C);
        for (int l = 0; l < L; l++) {
            gpt_gather_block(g, l); /* ZeRO-3: block l into buffer l & 1 */
            llama_block_decode(g, d, l, t, n);
            if (block_done(g, 0)) return -1;
        }
        OPS->rmsnorm_forward(g->be, d->lnf, d->rstd, d->x, g->param_t[LNFW], n, C,
                             config_norm_eps(&g->cfg));
        d->len += n;
        return 0;
    }
    /* x (n,C) = wte[token] + wpe[t + i]: the encoder over one row of n, wpe from row t */
    const char *wpe_t = (const char *)g->param_t[WPE] + (size_t)t * C * g->be->par_bytes;
    OPS->encoder_forward(g->be, d->x, d->token, g->param_t[WTE], wpe_t, 1, n, C);
    gpt_gather_block(g, 0);
    OPS->layernorm_forward(g->be, d->ln, d->mean, d->rstd, d->x, P(LN1W, 0), P(LN1B, 0), n, C);
    for (int l = 0; l < L; l++) {
        gpt_gather_block(g, l); /* ZeRO-3: block l and the LN1 of l + 1 */
        gpt_gather_block(g, l + 1);
        LnOut next = l + 1 < L ? (LnOut){d->ln, NULL, NULL, P(LN1W, l + 1), P(LN1B, l + 1)}
                               : (LnOut){d->lnf, NULL, NULL, g->param_t[LNFW], g->param_t[LNFB]};
        block_decode(g, d, l, t, n, &next);
        if (block_done(g, 0)) return -1;
    }
    d->len += n;
    return 0;
}

void gpt_decode_feed(GPT *g, GPTDecode *d, const int *tokens, int n, float *logits)
{
    int C = g->cfg.channels, Vp = g->cfg.padded_vocab, m = 0;
    g->abandoned = 0;
    gpt_params_settle(g); /* every upload of a deferred update: decoding waits per unit nowhere */
    gpt_gather_begin(g);  /* ZeRO-3: wte, wpe, LN_f; the blocks' in decode_pass */
    for (int done = 0; done < n; done += m) {
        m = n - done < d->rows ? n - done : d->rows;
        if (decode_pass(g, d, tokens + done, m) != 0) return;
    }
    if (!logits) return;
    /* the head for the last row only: a sample needs no other */
    const char *last = (const char *)d->lnf + (size_t)(m - 1) * C * g->be->act_bytes;
    OPS->head_logits(g->be, g->chunk_buf, last, head_weight(g, g->param_t), 1, C, Vp);
    OPS->mem_download(g->be, logits, g->chunk_buf, (size_t)Vp * sizeof(float));
}

void gpt_decode_step(GPT *g, GPTDecode *d, int token, float *logits)
{
    gpt_decode_feed(g, d, &token, 1, logits);
}
