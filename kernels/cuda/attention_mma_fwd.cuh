/* kernels/cuda/attention_mma_fwd.cuh — the bf16 attention forward's kernel
 * (plan and staging: attention_mma.cuh): out = softmax_causal(Q K^T /
 * sqrt(hs)) V per (sequence, head), and lse per query row. A block owns
 * ROWS query rows and streams key/value tiles of BK = BT rows up to its
 * last row; warp w keeps its 16 rows' Q operands, scores (16 x BK),
 * running max m and sum l (the lane's two rows) and output accumulator
 * (16 x HSP) in registers. A template over its configuration, so that
 * attention_mma.cu instantiates the shipped ones and the checker's sweep
 * (dev/cuda/attention_variants.cu) the others. */
#ifndef KERNELS_CUDA_ATTENTION_MMA_FWD_CUH
#define KERNELS_CUDA_ATTENTION_MMA_FWD_CUH

#include "attention_mma.cuh"

/* Shared memory: ST stages of [K tile | V tile] (BK rows each). Q (ROWS
 * rows): with HOLD, staged into the last stage (enlarged if needed) and
 * read into registers before that stage is first refilled; without, a
 * region of its own after the stages, read for every tile. */
template <class Cfg> static size_t amma_fwd_smem()
{
    constexpr int BK = Cfg::BT;
    const size_t rows = Cfg::HOLD ? (size_t)(Cfg::ST - 1) * 2 * BK + AmmaMax<2 * BK, Cfg::ROWS>::v
                                  : (size_t)Cfg::ST * 2 * BK + Cfg::ROWS;
    return rows * Cfg::LD * sizeof(bf16);
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::NT, Cfg::MINB) amma_fwd_kernel(AmmaFwdArgs a)
{
    constexpr int HSP = Cfg::HSP, BQ = Cfg::ROWS, BK = Cfg::BT, NT = Cfg::NT, LD = Cfg::LD;
    constexpr int STAGE = 2 * BK * LD; /* elements of one [K | V] stage */
    DYN_SMEM(smem);
    bf16 *const tiles = (bf16 *)smem;
    bf16 *const Qs = tiles + (size_t)(Cfg::HOLD ? Cfg::ST - 1 : Cfg::ST) * STAGE;
    const AmmaTile t = amma_tile_begin<Cfg>(a);

    /* Q (with ST = 2, the first key/value tile too) */
    if (Cfg::ST == 2) {
        amma_stage_async<HSP, BQ, NT, Cfg::VEC>(Qs, t.q, t.row0);
        amma_stage_pair_async<HSP, BK, NT, Cfg::VEC>(tiles, t.k, t.v, 0);
        cp_async_commit();
        cp_async_wait<0>();
    } else if (Cfg::VEC) {
        AmmaRegTile<HSP, BQ, NT> rq;
        rq.load(t.q, t.row0);
        rq.store(Qs);
    } else {
        amma_stage_scalar<HSP, BQ, NT>(Qs, t.q, t.row0);
    }
    __syncthreads();
    uint32_t qf[HSP / 16][4]; /* Q_w: with HOLD only */
    if (Cfg::HOLD) mma_load_a_strip<HSP>(qf, Qs, LD, 16 * t.w);

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

template <class Cfg> static void amma_fwd_launch(CudaState *st, const AmmaFwdArgs &a)
{
    amma_launch(st, amma_fwd_kernel<Cfg>, a, amma_fwd_smem<Cfg>(), Cfg::ROWS, a.B, Cfg::NT,
                Cfg::HSP, "attention_forward");
}

#endif
