/* kernels/cuda/attention_mma_fwd.cuh — the bf16 attention forward's kernel
 * (plan: attention_mma.cuh): out = softmax_causal(Q K^T / sqrt(hs)) V and
 * lse per query row. A block owns ROWS query rows and streams key/value
 * tiles of BT rows up to its last row; warp w keeps its 16 rows' Q, scores,
 * running max and sum and output in registers. A template over its
 * configuration: attention_mma.cu instantiates the shipped ones, the
 * checker's sweep (dev/cuda/attention_variants.cu) the others. */
#ifndef KERNELS_CUDA_ATTENTION_MMA_FWD_CUH
#define KERNELS_CUDA_ATTENTION_MMA_FWD_CUH

#include "attention_mma.cuh"

/* Shared memory (amma_smem): ST stages of [K tile | V tile] (BK rows
 * each); own: Q (ROWS rows). */
template <class Cfg> static size_t amma_fwd_smem()
{
    return amma_smem<Cfg>(amma_rows<Cfg>(2 * Cfg::BT), amma_rows<Cfg>(Cfg::ROWS));
}

template <class Cfg, bool GQA = false>
__global__ void __launch_bounds__(Cfg::NT, Cfg::MINB) amma_fwd_kernel(AmmaFwdArgs a)
{
    constexpr int HSP = Cfg::HSP, BK = Cfg::BT, NT = Cfg::NT, LD = Cfg::LD;
    DYN_SMEM(smem);
    bf16 *const tiles = (bf16 *)smem;
    bf16 *const Qs = (bf16 *)(smem + amma_own_at<Cfg>(amma_rows<Cfg>(2 * BK)));
    const AmmaTile t = amma_tile_begin<Cfg, GQA>(a);

    uint32_t qf[HSP / 16][4]; /* Q_w: with HOLD only; with ST = 2, key/value tile 0 too */
    amma_stage_own<Cfg, 1>(Qs, t.q, t.q, t.row0, t.w, qf, qf, [&] {
        amma_stage_pair_async<HSP, BK, NT, Cfg::VEC>(tiles, t.k, t.v, 0);
    });

    float o[HSP / 8][4];
    mma_strip_zero<HSP>(o);
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f; /* rows r0, r1 */

    for (int kt = 0; kt < t.n; kt++) {
        const int k0 = kt * BK;
        const bf16 *Ks = amma_kv_step<Cfg>(tiles, t.k, t.v, kt, t.n);
        const bf16 *Vs = Ks + BK * LD;
        if (t.idle || k0 > t.wr0 + 15) continue; /* every key after this warp's rows */

        float s[BK / 8][4]; /* raw scores S = Q_w K^T, then P */
        if (Cfg::HOLD) mma_strip_areg<BK, HSP>(s, qf, Ks, LD);
        else mma_strip<BK, HSP>(s, Qs, LD, 16 * t.w, Ks, LD);
        /* mask only where a key can be past a row of the warp or past T; key
         * k0 <= wr0 is valid for every row, so both maxima are finite */
        amma_mask<BK, false>(s, k0, t.wr0, t.r0, t.r1, t.t4, t.T);
        amma_softmax_step<BK, HSP>(s, o, m0, m1, l0, l1, a.sl2);
        /* O_w += P V, P (rounded to bf16) straight from the score registers */
        mma_strip_acc<HSP, BK>(o, s, Vs, LD);
    }

    amma_fwd_finish<HSP>(a, t, o, m0, m1, l0, l1);
}

/* GQA: the kernel for KVH < NH (amma_tile_begin). Its configuration:
 * AmmaFwdCfg's but 3 resident blocks at HSP = 64, where the row width and
 * head offsets as parameters spilled at the 128-register cap of 4 (ptxas,
 * sm_80 and sm_90a). */
template <int HSP>
using AmmaFwdGqaCfg = AmmaCfg<HSP, 4, 64, 2, HSP == 128 ? 2 : HSP == 64 ? 3 : 4>;
template <class Cfg, bool GQA = false>
static void amma_fwd_launch(CudaState *st, const AmmaFwdArgs &a)
{
    amma_launch(st, amma_fwd_kernel<Cfg, GQA>, a, amma_fwd_smem<Cfg>(), Cfg::ROWS, a.B, Cfg::NT,
                Cfg::HSP, "attention_forward");
}

#endif
