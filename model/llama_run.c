/* model/llama_run.c — the Llama family's block, run by the schedule
 * interpreter (gpt.c's run_steps) as gpt.c's block code runs GPT-2's: the
 * forward ops of its description (llama_block.c) in order, each tensor's
 * rebuild by the same ops (so the same bits), and the backward with the
 * rebuilds tape_rebuilds_before asks for; and a block of a KV-cache decode
 * pass (llama_block_decode). Entry points: gpt_tensors.h.
 *
 * Parameters (config.h's Llama slots, per layer; hs the head size, Q = NH
 * hs, which is C unless --head-dim): LN1W rms1 (C), QKVW wqkv (Q + 2 NKV
 * hs, C), ATTPROJW wo (C, Q), LN2W rms2 (C), FCW w_gateup (2F, C), FCPROJW
 * w_down (C, F); with --qkv-bias QKVB bqkv (Q + 2 NKV hs),
 * with --qk-norm LN1B q_norm (hs) and LN2B k_norm (hs); no other biases.
 * The block's description is the config's (block_desc_of: LLAMA_BLOCK, or
 * LLAMA_QKNORM_BLOCK with qk-norm, whose ops keep the same indices). The
 * kernels' attention, RoPE and qk-norm take the query width Q for their
 * C argument (kernels/ops.h), so their head size is Q / NH = hs. */
#include "gpt_tensors.h"
#include "llama_block.h"

#define OPS (g->be->ops)

/* The shape of one block at the model's micro-batch. */
typedef struct {
    int B, T, N, C, NH, KVH, F, QKV;
    int hs, Q; /* head size, query width NH hs (C unless --head-dim) */
    float eps;
    int qkn; /* qk-norm: the matmul writes qkr, the norm qkv */
} LlamaDims;

static LlamaDims dims(const GPT *g)
{
    LlamaDims d;
    d.B = g->B;
    d.T = g->T;
    d.N = g->B * g->T;
    d.C = g->cfg.channels;
    d.NH = g->cfg.num_heads;
    d.KVH = config_kv_heads(&g->cfg);
    d.F = config_ffn(&g->cfg);
    d.hs = config_head_dim(&g->cfg);
    d.Q = d.NH * d.hs;
    d.QKV = d.Q + 2 * d.KVH * d.hs;
    d.eps = config_norm_eps(&g->cfg);
    d.qkn = g->cfg.qk_norm;
    return d;
}

/* The qkv bias of block l and its gradient, or NULL without --qkv-bias;
 * through P and G like every other slice (ZeRO-3's gather buffer, ZeRO-2's
 * one-block gradient buffer). */
static const void *qkv_bias(const GPT *g, int l)
{
    return g->cfg.qkv_bias ? P(QKVB, l) : NULL;
}
static void *qkv_bias_grad(const GPT *g, int l)
{
    return g->cfg.qkv_bias ? G(QKVB, l) : NULL;
}

/* Forward op `op` of LLAMA_BLOCK.fwd (the same index) of block l; out is
 * the block output (only the output-only ops write it). */
static void fwd_op(GPT *g, int l, const void *x, BlockTape *tp, void *out, int op)
{
    LlamaDims d = dims(g);
    void **a = tp->act;
    float **f = tp->f32;
    size_t NC = (size_t)d.N * d.C;
    switch (op) {
    case 0: /* x (N,C) -> rms1 (N,C), its rstd (N) f32 */
        OPS->rmsnorm_forward(g->be, a[LLAMA_RMS1], f[LLAMA_RMS1_RSTD], x, P(LN1W, l), d.N, d.C,
                             d.eps);
        break;
    case 1: /* rms1 (N,C) -> qkv (N, Q + 2 NKV hs) (qkr with qk-norm), + bias */
        OPS->matmul_forward(g->be, a[d.qkn ? LLAMA_QKR : LLAMA_QKV], a[LLAMA_RMS1], P(QKVW, l),
                            qkv_bias(g, l), d.N, d.C, d.QKV);
        break;
    case 2: /* [qk-norm: qkr -> qkv, q and k heads normed, rstd (N, NH+NKV) f32;]
             * q and k of qkv turned by RoPE, in place (row (b,t): position t) */
        if (d.qkn)
            OPS->qknorm_forward(g->be, a[LLAMA_QKV], f[LLAMA_QK_RSTD], a[LLAMA_QKR], P(LN1B, l),
                                P(LN2B, l), d.N, d.Q, d.NH, d.KVH, d.eps);
        OPS->rope_forward(g->be, a[LLAMA_QKV], a[LLAMA_QKV], g->rope, d.B, d.T, d.Q, d.NH,
                          d.KVH);
        break;
    case 3: /* qkv -> atty (N,Q), lse (B,NH,T) f32; grouped-query */
        gpt_attn_scratch(g);
        OPS->attention_forward(g->be, a[LLAMA_ATTY], f[LLAMA_LSE], a[LLAMA_QKV], d.B, d.T, d.Q,
                               d.NH, d.KVH);
        break;
    case 4: /* atty (N,Q) -> res2 (N,C) */
        OPS->matmul_forward(g->be, a[LLAMA_RES2], a[LLAMA_ATTY], P(ATTPROJW, l), NULL, d.N, d.Q,
                            d.C);
        break;
    case 5: /* res2 += x: x's last read, so out may be x */
        OPS->residual_forward(g->be, a[LLAMA_RES2], a[LLAMA_RES2], x, NC);
        break;
    case 6: /* res2 -> rms2 (N,C), its rstd (N) f32 */
        OPS->rmsnorm_forward(g->be, a[LLAMA_RMS2], f[LLAMA_RMS2_RSTD], a[LLAMA_RES2], P(LN2W, l),
                             d.N, d.C, d.eps);
        break;
    case 7: /* rms2 (N,C) -> [gate | up] (N,2F) */
        OPS->matmul_forward(g->be, a[LLAMA_GATEUP], a[LLAMA_RMS2], P(FCW, l), NULL, d.N, d.C,
                            2 * d.F);
        break;
    case 8: /* gate/up (N,2F) -> silu(gate) * up (N,F) */
        OPS->swiglu_forward(g->be, a[LLAMA_SWI], a[LLAMA_GATEUP], d.N, d.F);
        break;
    case 9: /* swiglu (N,F) -> out (N,C) */
        OPS->matmul_forward(g->be, out, a[LLAMA_SWI], P(FCPROJW, l), NULL, d.N, d.F, d.C);
        break;
    case 10: /* out += res2 */
        OPS->residual_forward(g->be, out, out, a[LLAMA_RES2], NC);
        break;
    }
}

void llama_block_forward(GPT *g, int l, const void *x, BlockTape *tp, void *out)
{
    const BlockDesc *bd = block_desc_of(&g->cfg);
    for (int op = 0; op < bd->n_fwd; op++)
        if (out || !bd->fwd[op].out_only) fwd_op(g, l, x, tp, out, op);
}

void llama_make_tensor(GPT *g, int l, const void *x, BlockTape *tp, int t)
{
    const BlockDesc *bd = block_desc_of(&g->cfg);
    for (int op = 0; op < bd->n_fwd; op++)
        if (bd->fwd[op].makes == t) fwd_op(g, l, x, tp, NULL, op);
}

/* Rebuild what backward op `op` (LLAMA_BWD_*) reads of what the tape
 * dropped; *built: what this backward has rebuilt so far. */
static void rebuild_for(GPT *g, int l, const void *x, BlockTape *tp, TensorSet *built, int op)
{
    int list[BLOCK_MAX_TENSORS];
    int n = tape_rebuilds_before(block_desc_of(&g->cfg), tp->kind, op, built, list);
    for (int i = 0; i < n; i++) llama_make_tensor(g, l, x, tp, list[i]);
}

/* dbig (N, max(3F, Q + 2 NKV hs)) carries d(gate/up) (N,2F) with d(swiglu)
 * (N,F) after it, then d(qkv) (N, Q + 2 NKV hs), which RoPE's backward
 * turns back in place (and qk-norm's backward into d(qkr), in place);
 * dsmall (N, max(C, Q): block_grad_small) carries d(rms2), d(atty) (N,Q),
 * d(rms1). */
void llama_block_backward(GPT *g, int l, const void *x, BlockTape *tp)
{
    LlamaDims d = dims(g);
    void **a = tp->act;
    float **f = tp->f32;
    void *dres = g->dres, *dsmall = g->dsmall, *dbig = g->dbig;
    void *dswi = (char *)dbig + (size_t)d.N * 2 * d.F * g->be->act_bytes;
    TensorSet built = 0;
    rebuild_for(g, l, x, tp, &built, LLAMA_BWD_DOWN);
    OPS->matmul_backward(g->be, dswi, G(FCPROJW, l), NULL, dres, a[LLAMA_SWI], P(FCPROJW, l),
                         d.N, d.F, d.C);
    rebuild_for(g, l, x, tp, &built, LLAMA_BWD_SWIGLU);
    OPS->swiglu_backward(g->be, dbig, a[LLAMA_GATEUP], dswi, d.N, d.F);
    rebuild_for(g, l, x, tp, &built, LLAMA_BWD_GATEUP);
    OPS->matmul_backward(g->be, dsmall, G(FCW, l), NULL, dbig, a[LLAMA_RMS2], P(FCW, l), d.N,
                         d.C, 2 * d.F);
    rebuild_for(g, l, x, tp, &built, LLAMA_BWD_RMS2);
    OPS->rmsnorm_backward(g->be, dres, G(LN2W, l), dsmall, a[LLAMA_RES2], P(LN2W, l),
                          f[LLAMA_RMS2_RSTD], d.N, d.C);
    rebuild_for(g, l, x, tp, &built, LLAMA_BWD_WO);
    OPS->matmul_backward(g->be, dsmall, G(ATTPROJW, l), NULL, dres, a[LLAMA_ATTY],
                         P(ATTPROJW, l), d.N, d.Q, d.C);
    rebuild_for(g, l, x, tp, &built, LLAMA_BWD_ATTN);
    gpt_attn_scratch(g);
    OPS->attention_backward(g->be, dbig, dsmall, a[LLAMA_QKV], a[LLAMA_ATTY], f[LLAMA_LSE], d.B,
                            d.T, d.Q, d.NH, d.KVH);
    rebuild_for(g, l, x, tp, &built, LLAMA_BWD_ROPE);
    OPS->rope_backward(g->be, dbig, dbig, g->rope, d.B, d.T, d.Q, d.NH, d.KVH);
    if (d.qkn)
        OPS->qknorm_backward(g->be, dbig, G(LN1B, l), G(LN2B, l), dbig, a[LLAMA_QKR], P(LN1B, l),
                             P(LN2B, l), f[LLAMA_QK_RSTD], d.N, d.Q, d.NH, d.KVH);
    rebuild_for(g, l, x, tp, &built, LLAMA_BWD_QKV);
    OPS->matmul_backward(g->be, dsmall, G(QKVW, l), qkv_bias_grad(g, l), dbig, a[LLAMA_RMS1],
                         P(QKVW, l), d.N, d.C, d.QKV);
    rebuild_for(g, l, x, tp, &built, LLAMA_BWD_RMS1);
    OPS->rmsnorm_backward(g->be, dres, G(LN1W, l), dsmall, x, P(LN1W, l), f[LLAMA_RMS1_RSTD],
                          d.N, d.C);
}

/* Block l of a decode pass (gpt.h's GPTDecode) over n rows at positions
 * t .. t+n-1: x (n,C) in, x_{l+1} out in place; atty (n,Q). The forward's ops in the
 * forward's order with B = 1, T = n (fwd_op's, the same operands at n
 * rows), but RoPE from table row t (the rows' positions) and attention
 * against the cache, row by row: row i appends its k and v (KVH heads) at
 * t+i before it attends, so it sees rows t..t+i of this pass. The cache of
 * layer l: (KVH, maxT, hs) for k and for v. With qk-norm the heads are
 * normed in place before RoPE, their rstds in d->mean (the Llama family
 * has no means; gpt_decode_open sizes it (NH + KVH) a row with qk-norm). */
void llama_block_decode(GPT *g, GPTDecode *d, int l, int t, int n)
{
    LlamaDims dm = dims(g);
    int hs = dm.hs;
    size_t ab = g->be->act_bytes, nc = (size_t)n * dm.C;
    size_t layer = (size_t)l * dm.KVH * g->T * hs * ab;
    OPS->rmsnorm_forward(g->be, d->ln, d->rstd, d->x, P(LN1W, l), n, dm.C, dm.eps);
    OPS->matmul_forward(g->be, d->qkv, d->ln, P(QKVW, l), qkv_bias(g, l), n, dm.C, dm.QKV);
    if (dm.qkn)
        OPS->qknorm_forward(g->be, d->qkv, d->mean, d->qkv, P(LN1B, l), P(LN2B, l), n, dm.Q,
                            dm.NH, dm.KVH, dm.eps);
    OPS->rope_forward(g->be, d->qkv, d->qkv, g->rope + (size_t)t * hs, 1, n, dm.Q, dm.NH,
                      dm.KVH);
    gpt_attn_scratch(g);
    for (int i = 0; i < n; i++)
        OPS->attention_decode(g->be, (char *)d->atty + (size_t)i * dm.Q * ab,
                              (char *)d->k + layer, (char *)d->v + layer,
                              (const char *)d->qkv + (size_t)i * dm.QKV * ab, t + i, g->T, dm.Q,
                              dm.NH, dm.KVH);
    OPS->matmul_forward(g->be, d->res2, d->atty, P(ATTPROJW, l), NULL, n, dm.Q, dm.C);
    OPS->residual_forward(g->be, d->res2, d->res2, d->x, nc);
    OPS->rmsnorm_forward(g->be, d->ln, d->rstd, d->res2, P(LN2W, l), n, dm.C, dm.eps);
    OPS->matmul_forward(g->be, d->fch, d->ln, P(FCW, l), NULL, n, dm.C, 2 * dm.F);
    OPS->swiglu_forward(g->be, d->fch_gelu, d->fch, n, dm.F);
    OPS->matmul_forward(g->be, d->x, d->fch_gelu, P(FCPROJW, l), NULL, n, dm.F, dm.C);
    OPS->residual_forward(g->be, d->x, d->x, d->res2, nc);
}
