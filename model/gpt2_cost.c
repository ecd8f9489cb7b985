/* model/gpt2_cost.c — what GPT-2's block ops cost (gpt2_block.h): their
 * FLOPs counted (model/flops.h's convention) and each op run once on a
 * bench's buffers for opcost_measure to time, with the kernels and
 * operands gpt.c's block code calls (its fused steps timed as their parts).
 * GPT2_BLOCK points at both. */
#include "gpt2_block.h"
#include "gpt_tensors.h"
#include "kernels/ops.h"

void gpt2_op_flops(const BlockShape *sh, long long *fwd, long long *bwd, long long *norm)
{
    long long N = (long long)sh->N, C = (long long)sh->C, B = (long long)sh->B;
    long long T = (long long)sh->T;
    long long ln = 8 * N * C, add = N * C, gelu = 9 * N * 4 * C;
    long long qkv = 2 * N * C * 3 * C, attn = 2 * B * T * T * C, attproj = 2 * N * C * C;
    long long fc = 2 * N * C * 4 * C, fcproj = 2 * N * 4 * C * C;
    long long f[GPT2_FWD_OPS] = {ln, qkv, attn, attproj, add, ln, fc, gelu, fcproj, add};
    for (int i = 0; i < GPT2_FWD_OPS; i++) fwd[i] = f[i];
    /* backward: twice the forward, attention 2.5 times; each residual add's
     * backward (2 per add) is counted with the LayerNorm that follows it */
    bwd[GPT2_BWD_FCPROJ] = 2 * fcproj;
    bwd[GPT2_BWD_GELU] = 2 * gelu;
    bwd[GPT2_BWD_FC] = 2 * fc;
    bwd[GPT2_BWD_LN2] = 2 * ln + 2 * add;
    bwd[GPT2_BWD_ATTPROJ] = 2 * attproj;
    bwd[GPT2_BWD_ATTN] = attn * 5 / 2;
    bwd[GPT2_BWD_QKV] = 2 * qkv;
    bwd[GPT2_BWD_LN1] = 2 * ln + 2 * add;
    *norm = ln;
}

void gpt2_bench_op(const BlockBench *b, int part, int op)
{
    Backend *be = b->be;
    const BackendOps *o = be->ops;
    int B = (int)b->sh.B, T = (int)b->sh.T, C = (int)b->sh.C, NH = (int)b->sh.NH;
    int N = (int)b->sh.N;
    size_t NC = (size_t)N * C;
    void *const *a = b->act, *const *p = b->par, *const *g = b->grad;
    float *const *f = b->f32;
    if (part == BENCH_FWD) switch (op) {
        case GPT2_FWD_LN1: o->layernorm_forward(be, a[GPT2_LN1], f[GPT2_LN1_MEAN], f[GPT2_LN1_RSTD], b->x, p[LN1W], p[LN1B], N, C); break;
        case GPT2_FWD_QKV: o->matmul_forward(be, a[GPT2_QKV], a[GPT2_LN1], p[QKVW], p[QKVB], N, C, 3 * C); break;
        case GPT2_FWD_ATTN: o->attention_forward(be, a[GPT2_ATTY], f[GPT2_LSE], a[GPT2_QKV], B, T, C, NH, NH); break;
        case GPT2_FWD_ATTPROJ: o->matmul_forward(be, a[GPT2_RES2], a[GPT2_ATTY], p[ATTPROJW], p[ATTPROJB], N, C, C); break;
        case GPT2_FWD_RESID1: o->residual_forward(be, a[GPT2_RES2], a[GPT2_RES2], b->x, NC); break;
        case GPT2_FWD_LN2: o->layernorm_forward(be, a[GPT2_LN2], f[GPT2_LN2_MEAN], f[GPT2_LN2_RSTD], a[GPT2_RES2], p[LN2W], p[LN2B], N, C); break;
        case GPT2_FWD_FC: o->matmul_forward(be, a[GPT2_FCH], a[GPT2_LN2], p[FCW], p[FCB], N, C, 4 * C); break;
        case GPT2_FWD_GELU: o->gelu_forward(be, a[GPT2_GELU], a[GPT2_FCH], 4 * NC); break;
        case GPT2_FWD_FCPROJ: o->matmul_forward(be, b->out, a[GPT2_GELU], p[FCPROJW], p[FCPROJB], N, 4 * C, C); break;
        case GPT2_FWD_RESID2: o->residual_forward(be, b->out, b->out, a[GPT2_RES2], NC); break;
        }
    else if (part == BENCH_BWD) switch (op) {
        case GPT2_BWD_FCPROJ: o->matmul_backward(be, b->dbig, g[FCPROJW], g[FCPROJB], b->dres, a[GPT2_GELU], p[FCPROJW], N, 4 * C, C); break;
        case GPT2_BWD_GELU: o->gelu_backward(be, b->dbig, a[GPT2_FCH], b->dbig, 4 * NC); break;
        case GPT2_BWD_FC: o->matmul_backward(be, b->dsmall, g[FCW], g[FCB], b->dbig, a[GPT2_LN2], p[FCW], N, C, 4 * C); break;
        case GPT2_BWD_LN2: o->layernorm_backward(be, b->dres, g[LN2W], g[LN2B], b->dsmall, a[GPT2_RES2], p[LN2W], f[GPT2_LN2_MEAN], f[GPT2_LN2_RSTD], N, C); break;
        case GPT2_BWD_ATTPROJ: o->matmul_backward(be, b->dsmall, g[ATTPROJW], g[ATTPROJB], b->dres, a[GPT2_ATTY], p[ATTPROJW], N, C, C); break;
        case GPT2_BWD_ATTN: o->attention_backward(be, b->dbig, b->dsmall, a[GPT2_QKV], a[GPT2_ATTY], f[GPT2_LSE], B, T, C, NH, NH); break;
        case GPT2_BWD_QKV: o->matmul_backward(be, b->dsmall, g[QKVW], g[QKVB], b->dbig, a[GPT2_LN1], p[QKVW], N, C, 3 * C); break;
        case GPT2_BWD_LN1: o->layernorm_backward(be, b->dres, g[LN1W], g[LN1B], b->dsmall, b->x, p[LN1W], f[GPT2_LN1_MEAN], f[GPT2_LN1_RSTD], N, C); break;
        }
    /* the final LayerNorm writes ln1's buffers (free between two blocks) */
    else if (part == BENCH_EMBED_FWD) o->encoder_forward(be, b->out, b->tokens, p[WTE], p[WPE], B, T, C);
    else if (part == BENCH_NORM_FWD) o->layernorm_forward(be, a[GPT2_LN1], f[GPT2_LN1_MEAN], f[GPT2_LN1_RSTD], b->out, p[LNFW], p[LNFB], N, C);
    else if (part == BENCH_NORM_BWD) o->layernorm_backward(be, b->dres, g[LNFW], g[LNFB], b->dsmall, b->out, p[LNFW], f[GPT2_LN1_MEAN], f[GPT2_LN1_RSTD], N, C);
    else if (part == BENCH_EMBED_BWD) o->encoder_backward(be, g[WTE], g[WPE], b->dres, b->tokens, B, T, C);
}
