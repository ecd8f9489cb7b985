/* kernels/cuda/attention_mma_fwd.cu — the bf16 attention forward (plan and
 * staging: attention_mma.cuh): out = softmax_causal(Q K^T / sqrt(hs)) V per
 * (sequence, head), and lse per query row. A block owns ROWS query rows and
 * streams key/value tiles of BK = BT rows up to its last row; warp w keeps
 * its 16 rows' Q operands, scores (16 x BK), running max m and sum l (the
 * lane's two rows) and output accumulator (16 x HSP) in registers. */
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

    const int T_ = a.T, hs = a.C / a.NH, C3 = 3 * a.C;
    const AmmaBlock blk = amma_block((T_ + BQ - 1) / BQ, a.NH, a.B, true);
    const int q0 = blk.tile * BQ;
    const bf16 *seq = a.qkv + (size_t)blk.b * T_ * C3 + blk.h * hs;
    const AmmaSrc Qsrc = {seq, C3, T_, hs}, Ksrc = {seq + a.C, C3, T_, hs},
                  Vsrc = {seq + 2 * a.C, C3, T_, hs};
    const int w = threadIdx.x / 32, g = threadIdx.x % 32 / 4, t4 = threadIdx.x % 4;
    const int wq0 = q0 + 16 * w, r0 = wq0 + g, r1 = r0 + 8;
    const int last = q0 + BQ < T_ ? q0 + BQ : T_;
    const int nK = (last + BK - 1) / BK;
    const bool idle = wq0 >= T_; /* all 16 rows past T: nothing to compute */
    const float sl2 = a.sl2;

    /* Q (with ST = 2, the first key/value tile too) */
    if (Cfg::ST == 2) {
        amma_stage_async<HSP, BQ, NT, Cfg::VEC>(Qs, Qsrc, q0);
        amma_stage_pair_async<HSP, BK, NT, Cfg::VEC>(tiles, Ksrc, Vsrc, 0);
        cp_async_commit();
        cp_async_wait<0>();
    } else if (Cfg::VEC) {
        AmmaRegTile<HSP, BQ, NT> rq;
        rq.load(Qsrc, q0);
        rq.store(Qs);
    } else {
        amma_stage_scalar<HSP, BQ, NT>(Qs, Qsrc, q0);
    }
    __syncthreads();
    uint32_t qf[HSP / 16][4]; /* Q_w: with HOLD only */
    if (Cfg::HOLD) mma_load_a_strip<HSP>(qf, Qs, LD, 16 * w);

    float o[HSP / 8][4];
    mma_strip_zero<HSP>(o);
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f; /* rows r0, r1 */

    for (int kt = 0; kt < nK; kt++) {
        const int k0 = kt * BK;
        const bf16 *Ks = amma_kv_step<Cfg>(tiles, Ksrc, Vsrc, kt, nK);
        const bf16 *Vs = Ks + BK * LD;
        if (idle || k0 > wq0 + 15) continue; /* every key after this warp's rows */

        float s[BK / 8][4]; /* raw scores S = Q_w K^T, then P */
        if (Cfg::HOLD) mma_strip_areg<BK, HSP>(s, qf, Ks, LD);
        else mma_strip<BK, HSP>(s, Qs, LD, 16 * w, Ks, LD);
        /* mask only where a key can be past a row of the warp or past T; key
         * k0 <= wq0 is valid for every row, so both maxima are finite */
        amma_mask<BK, false>(s, k0, wq0, r0, r1, t4, T_);
        amma_softmax_step<BK, HSP>(s, o, m0, m1, l0, l1, sl2);
        /* O_w += P V, P (rounded to bf16) straight from the score registers */
        mma_strip_acc<HSP, BK>(o, s, Vs, LD);
    }

    amma_fwd_finish<HSP>(a, blk, T_, hs, r0, r1, t4, o, m0, m1, l0, l1, sl2);
}

template <class Cfg> static void amma_fwd_launch(CudaState *st, const AmmaFwdArgs &a)
{
    amma_launch(st, amma_fwd_kernel<Cfg>, a, amma_fwd_smem<Cfg>(), Cfg::ROWS, a.B, Cfg::NT,
                Cfg::HSP, "attention_forward");
}

/* Named warps, key tile, stages, launch-bound blocks per SM; the device
 * they need (0: any). Entry 0 is the default. */
const AmmaFwdVariant amma_fwd_variants[] = {
    {"fwd-w4-k64-s2-b4", amma_fwd_launch<AmmaCfg<64, 4, 64, 2, 4>>, 0, 0},
    {"fwd-w4-k64-s2-b3", amma_fwd_launch<AmmaCfg<64, 4, 64, 2, 3>>, 0, 0},
    {"fwd-w4-k64-s1-b3", amma_fwd_launch<AmmaCfg<64, 4, 64, 1, 3>>, 0, 0},
    {"fwd-w8-k64-s2-b2", amma_fwd_launch<AmmaCfg<64, 8, 64, 2, 2>>, 0, 0},
    {"fwd-w4-k32-s2-b4", amma_fwd_launch<AmmaCfg<64, 4, 32, 2, 4>>, 0, 0},
    {"fwd-w4-k128-s2-b2", amma_fwd_launch<AmmaCfg<64, 4, 128, 2, 2>>, 0, 0},
    {AMMA_FWD_WG_NAME, amma_fwd_wg_launch, 90, 0}, /* Hopper only; unmeasured */
    /* 32 query rows per warp (attention_mma_fa2.cu); unmeasured */
    {"fwd-fa2-w4-k64-b2", amma_fa2_fwd_k64, 0, 0},
    {"fwd-fa2-w4-k32-b2", amma_fa2_fwd_k32, 0, 0},
};
const int amma_fwd_nvariants = (int)(sizeof amma_fwd_variants / sizeof amma_fwd_variants[0]);

void amma_fwd_run(CudaState *st, int variant, const AmmaFwdArgs &a)
{
    if (!a.vec) { /* element-by-element staging: one configuration per head size */
        switch (attn_hsp(a.C / a.NH)) {
        case 16: amma_fwd_launch<AmmaCfg<16, 4, 64, 1, 1, 1, 0>>(st, a); return;
        case 32: amma_fwd_launch<AmmaCfg<32, 4, 64, 1, 1, 1, 0>>(st, a); return;
        case 64: amma_fwd_launch<AmmaCfg<64, 4, 64, 1, 1, 1, 0>>(st, a); return;
        case 128: amma_fwd_launch<AmmaCfg<128, 4, 64, 1, 1, 1, 0>>(st, a); return;
        }
    }
    switch (attn_hsp(a.C / a.NH)) {
    case 16: amma_fwd_launch<AmmaCfg<16, 4, 64, 2, 4>>(st, a); break;
    case 32: amma_fwd_launch<AmmaCfg<32, 4, 64, 2, 4>>(st, a); break;
    case 64: amma_fwd_variants[variant].launch(st, a); break;
    case 128: amma_fwd_launch<AmmaCfg<128, 4, 64, 2, 2>>(st, a); break;
    default: CUDA_FATAL("attention_forward: head size %d > 128 is not supported", a.C / a.NH);
    }
}
