/* model/llama_cost.c — what the Llama block's ops cost (llama_block.h):
 * their FLOPs counted (model/flops.h's convention) and each op run once on
 * a bench's buffers for opcost_measure to time, with the kernels and
 * operands llama_run.c calls. LLAMA_BLOCK and LLAMA_QKNORM_BLOCK point at
 * them. */
#include "gpt_tensors.h"
#include "kernels/ops.h"
#include "llama_block.h"

/* Per element: RMSNorm ~5 (square-sum 2, scale 2, rstd), RoPE ~6 a rotated
 * element (q and k: Q + NKV hs a row, Q = NH hs), SwiGLU ~6 an element of F (sigmoid
 * counted as 3, two products). */
void llama_op_flops(const BlockShape *sh, long long *fwd, long long *bwd, long long *norm)
{
    long long N = (long long)sh->N, C = (long long)sh->C, B = (long long)sh->B;
    long long T = (long long)sh->T, F = (long long)sh->F, kv = (long long)(sh->NKV * sh->hs);
    long long Q = (long long)(sh->NH * sh->hs);
    long long ln = 5 * N * C, add = N * C, qkv = 2 * N * C * (Q + 2 * kv);
    long long rope = 6 * N * (Q + kv), attn = 2 * B * T * T * Q, wo = 2 * N * Q * C;
    long long gateup = 2 * N * C * 2 * F, swiglu = 6 * N * F, down = 2 * N * F * C;
    long long f[LLAMA_FWD_OPS] = {ln, qkv, rope, attn, wo, add, ln, gateup, swiglu, down, add};
    for (int i = 0; i < LLAMA_FWD_OPS; i++) fwd[i] = f[i];
    /* backward: twice the forward, attention 2.5 times; each residual add's
     * backward (2 per add) is counted with the RMSNorm that follows it */
    bwd[LLAMA_BWD_DOWN] = 2 * down;
    bwd[LLAMA_BWD_SWIGLU] = 2 * swiglu;
    bwd[LLAMA_BWD_GATEUP] = 2 * gateup;
    bwd[LLAMA_BWD_RMS2] = 2 * ln + 2 * add;
    bwd[LLAMA_BWD_WO] = 2 * wo;
    bwd[LLAMA_BWD_ATTN] = attn * 5 / 2;
    bwd[LLAMA_BWD_ROPE] = 2 * rope;
    bwd[LLAMA_BWD_QKV] = 2 * qkv;
    bwd[LLAMA_BWD_RMS1] = 2 * ln + 2 * add;
    *norm = ln;
}

void llama_bench_op(const BlockBench *b, int part, int op)
{
    Backend *be = b->be;
    const BackendOps *o = be->ops;
    int B = (int)b->sh.B, T = (int)b->sh.T, C = (int)b->sh.C, NH = (int)b->sh.NH;
    int KVH = (int)b->sh.NKV, N = (int)b->sh.N, F = (int)b->sh.F;
    int Q = NH * (int)b->sh.hs, QKV = Q + 2 * KVH * (int)b->sh.hs; /* llama_run.c's dims */
    float eps = config_norm_eps(b->cfg);
    size_t NC = (size_t)N * C;
    void *const *a = b->act, *const *p = b->par, *const *g = b->grad;
    float *const *f = b->f32;
    /* llama_run.c's dbig: d(gate/up) (N,2F), d(swiglu) (N,F) after it */
    void *dswi = (char *)b->dbig + (size_t)N * 2 * F * be->act_bytes;
    if (part == BENCH_FWD) switch (op) {
        case LLAMA_FWD_RMS1: o->rmsnorm_forward(be, a[LLAMA_RMS1], f[LLAMA_RMS1_RSTD], b->x, p[LN1W], N, C, eps); break;
        case LLAMA_FWD_QKV: o->matmul_forward(be, a[LLAMA_QKV], a[LLAMA_RMS1], p[QKVW], NULL, N, C, QKV); break;
        case LLAMA_FWD_ROPE: o->rope_forward(be, a[LLAMA_QKV], a[LLAMA_QKV], b->rope, B, T, Q, NH, KVH); break;
        case LLAMA_FWD_ATTN: o->attention_forward(be, a[LLAMA_ATTY], f[LLAMA_LSE], a[LLAMA_QKV], B, T, Q, NH, KVH); break;
        case LLAMA_FWD_WO: o->matmul_forward(be, a[LLAMA_RES2], a[LLAMA_ATTY], p[ATTPROJW], NULL, N, Q, C); break;
        case LLAMA_FWD_RESID1: o->residual_forward(be, a[LLAMA_RES2], a[LLAMA_RES2], b->x, NC); break;
        case LLAMA_FWD_RMS2: o->rmsnorm_forward(be, a[LLAMA_RMS2], f[LLAMA_RMS2_RSTD], a[LLAMA_RES2], p[LN2W], N, C, eps); break;
        case LLAMA_FWD_GATEUP: o->matmul_forward(be, a[LLAMA_GATEUP], a[LLAMA_RMS2], p[FCW], NULL, N, C, 2 * F); break;
        case LLAMA_FWD_SWIGLU: o->swiglu_forward(be, a[LLAMA_SWI], a[LLAMA_GATEUP], N, F); break;
        case LLAMA_FWD_DOWN: o->matmul_forward(be, b->out, a[LLAMA_SWI], p[FCPROJW], NULL, N, F, C); break;
        case LLAMA_FWD_RESID2: o->residual_forward(be, b->out, b->out, a[LLAMA_RES2], NC); break;
        }
    else if (part == BENCH_BWD) switch (op) {
        case LLAMA_BWD_DOWN: o->matmul_backward(be, dswi, g[FCPROJW], NULL, b->dres, a[LLAMA_SWI], p[FCPROJW], N, F, C); break;
        case LLAMA_BWD_SWIGLU: o->swiglu_backward(be, b->dbig, a[LLAMA_GATEUP], dswi, N, F); break;
        case LLAMA_BWD_GATEUP: o->matmul_backward(be, b->dsmall, g[FCW], NULL, b->dbig, a[LLAMA_RMS2], p[FCW], N, C, 2 * F); break;
        case LLAMA_BWD_RMS2: o->rmsnorm_backward(be, b->dres, g[LN2W], b->dsmall, a[LLAMA_RES2], p[LN2W], f[LLAMA_RMS2_RSTD], N, C); break;
        case LLAMA_BWD_WO: o->matmul_backward(be, b->dsmall, g[ATTPROJW], NULL, b->dres, a[LLAMA_ATTY], p[ATTPROJW], N, Q, C); break;
        case LLAMA_BWD_ATTN: o->attention_backward(be, b->dbig, b->dsmall, a[LLAMA_QKV], a[LLAMA_ATTY], f[LLAMA_LSE], B, T, Q, NH, KVH); break;
        case LLAMA_BWD_ROPE: o->rope_backward(be, b->dbig, b->dbig, b->rope, B, T, Q, NH, KVH); break;
        case LLAMA_BWD_QKV: o->matmul_backward(be, b->dsmall, g[QKVW], NULL, b->dbig, a[LLAMA_RMS1], p[QKVW], N, C, QKV); break;
        case LLAMA_BWD_RMS1: o->rmsnorm_backward(be, b->dres, g[LN1W], b->dsmall, b->x, p[LN1W], f[LLAMA_RMS1_RSTD], N, C); break;
        }
    /* no position table; the final RMSNorm writes rms1's buffers (free
     * between two blocks) */
    else if (part == BENCH_EMBED_FWD) o->encoder_forward(be, b->out, b->tokens, p[WTE], NULL, B, T, C);
    else if (part == BENCH_NORM_FWD) o->rmsnorm_forward(be, a[LLAMA_RMS1], f[LLAMA_RMS1_RSTD], b->out, p[LNFW], N, C, eps);
    else if (part == BENCH_NORM_BWD) o->rmsnorm_backward(be, b->dres, g[LNFW], b->dsmall, b->out, p[LNFW], f[LLAMA_RMS1_RSTD], N, C);
    else if (part == BENCH_EMBED_BWD) o->encoder_backward(be, g[WTE], NULL, b->dres, b->tokens, B, T, C);
}

/* With qk-norm (LLAMA_QKNORM_BLOCK): the RoPE op norms q and k first, an
 * RMSNorm (~5 an element) over the Q + NKV hs rotated elements of a row. */
void llama_qknorm_op_flops(const BlockShape *sh, long long *fwd, long long *bwd, long long *norm)
{
    llama_op_flops(sh, fwd, bwd, norm);
    long long qk = 5 * (long long)sh->N * (long long)((sh->NH + sh->NKV) * sh->hs);
    fwd[LLAMA_FWD_ROPE] += qk;
    bwd[LLAMA_BWD_ROPE] += 2 * qk;
}
