/* kernels/cuda/attention_mma.cu — the bf16 attention (attention.cu and
 * attention_backward.cu send bf16 runs here): the backward's row
 * statistics, each kernel's launch in its one configuration per head size
 * and the entry points. Plan and configurations: attention_mma.cuh. */
#include "attention_mma_bwd.cuh"
#include "attention_mma_fwd.cuh"

/* ---- D and lse in log2 units, one warp per row ---- */

__global__ void amma_rows_D_kernel(AmmaStat *stats, const bf16 *dout, const bf16 *out,
                                   const float *lse, int B, int T_, int C, int NH)
{
    const int hs = C / NH, lane = threadIdx.x % 32;
    const size_t rows = (size_t)B * NH * T_, warps = (size_t)gridDim.x * blockDim.x / 32;
    for (size_t i = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; i < rows; i += warps) {
        const size_t t = i % T_, h = i / T_ % NH, b = i / T_ / NH;
        const size_t off = (b * T_ + t) * C + h * hs;
        float s = 0.0f;
        for (int d = lane; d < hs; d += 32) s += to_f(dout[off + d]) * to_f(out[off + d]);
        s = warp_sum(s);
        if (lane == 0) {
            AmmaStat r;
            r.lse2 = lse[i] * AMMA_LOG2E;
            r.D = s;
            stats[i] = r;
        }
    }
}

/* ---- each kernel by padded head size (fatal past 128) ---- */

void amma_fwd_run(CudaState *st, const AmmaFwdArgs &a)
{
    attn_hsp_dispatch("attention_forward", a.C / a.NH, [&](auto hsp) {
        constexpr int HSP = decltype(hsp)::value;
        if (a.KVH == a.NH)
            (a.vec ? amma_fwd_launch<AmmaFwdCfg<HSP>> : amma_fwd_launch<AmmaScalarCfg<HSP>>)(st, a);
        else
            (a.vec ? amma_fwd_launch<AmmaFwdGqaCfg<HSP>, true>
                   : amma_fwd_launch<AmmaScalarCfg<HSP>, true>)(st, a);
    });
}

void amma_dq_run(CudaState *st, const AmmaBwdArgs &a)
{
    attn_hsp_dispatch("attention_backward", a.C / a.NH, [&](auto hsp) {
        constexpr int HSP = decltype(hsp)::value;
        if (a.KVH == a.NH)
            (a.vec ? amma_bwd_launch<AmmaDqCfg<HSP>, true>
                   : amma_bwd_launch<AmmaScalarCfg<HSP>, true>)(st, a);
        else /* the forward's GQA configuration: AmmaDqCfg's but 3 blocks at hs 64 */
            (a.vec ? amma_bwd_launch<AmmaFwdGqaCfg<HSP>, true, true>
                   : amma_bwd_launch<AmmaScalarCfg<HSP>, true, true>)(st, a);
    });
}

void amma_dkdv_run(CudaState *st, const AmmaBwdArgs &a)
{
    attn_hsp_dispatch("attention_backward", a.C / a.NH, [&](auto hsp) {
        constexpr int HSP = decltype(hsp)::value;
        if (a.KVH == a.NH)
            (a.vec ? amma_bwd_launch<AmmaDkdvCfg<HSP>, false>
                   : amma_bwd_launch<AmmaScalarCfg<HSP, HSP != 128>, false>)(st, a);
        else
            (a.vec ? amma_bwd_launch<AmmaDkdvCfg<HSP>, false, true>
                   : amma_bwd_launch<AmmaScalarCfg<HSP, HSP != 128>, false, true>)(st, a);
    });
}

/* ---- the entry points ---- */

void amma_forward(CudaState *st, AmmaFwdLaunch fwd, bf16 *out, float *lse, const bf16 *qkv, int B,
                  int T, int C, int NH, int KVH)
{
    const int hs = C / NH;
    fwd(st, {out, lse, qkv, B, T, C, NH, KVH, C + 2 * KVH * hs, KVH * hs,
             AMMA_LOG2E / sqrtf((float)hs), amma_vec_ok(qkv, C, hs)});
}

void amma_backward(CudaState *st, AmmaBwdLaunch dq, AmmaBwdLaunch dkdv, bf16 *dqkv,
                   const bf16 *dout, const bf16 *qkv, const bf16 *out, const float *lse, int B,
                   int T, int C, int NH, int KVH)
{
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    /* the rows' statistics for a slice of sequences live in the scratch:
     * slices of at most that many sequences */
    const size_t per_seq = (size_t)NH * T;
    const size_t fit = CUDA_SCRATCH_BYTES / sizeof(AmmaStat) / per_seq;
    if (fit < 1)
        CUDA_FATAL("attention_backward: NH * T = %zu row statistics do not fit the %zu-byte "
                   "scratch",
                   per_seq, (size_t)CUDA_SCRATCH_BYTES);
    const int slice = fit < (size_t)B ? (int)fit : B;
    AmmaStat *stats = (AmmaStat *)st->scratch;
    for (int b0 = 0; b0 < B; b0 += slice) {
        const int nb = B - b0 < slice ? B - b0 : slice;
        /* qkv and dqkv rows: C + 2 KVH hs wide */
        const size_t o1 = (size_t)b0 * T * C, o3 = (size_t)b0 * T * (C + 2 * KVH * hs);
        const size_t ol = (size_t)b0 * per_seq;
        LAUNCH(amma_rows_D_kernel, elementwise_grid((size_t)nb * per_seq * 32, 256), 256, 0,
               st->stream, stats, dout + o1, out + o1, lse + ol, nb, T, C, NH);
        const AmmaBwdArgs a = {dqkv + o3, dout + o1, qkv + o3, stats, nb, T, C, NH, KVH,
                               C + 2 * KVH * hs, KVH * hs,
                               AMMA_LOG2E * scale, scale,
                               amma_vec_ok(qkv + o3, C, hs) && amma_vec_ok(dout + o1, C, hs)};
        dkdv(st, a);
        if (dq) dq(st, a);
    }
}
