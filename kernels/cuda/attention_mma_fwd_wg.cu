/* kernels/cuda/attention_mma_fwd_wg.cu — the bf16 attention forward on
 * Hopper's warpgroup products (wgmma.cuh, sm_90a only): one more variant
 * of attention_mma_fwd.cu's kernel (its table names it; never the
 * default), same plan and same exactness contract (out within the bf16
 * check's tolerance, lse, two runs bitwise equal: no atomics, a fixed
 * order of every sum).
 *
 * A block is one warpgroup (4 warps, 64 query rows; warp w owns rows
 * 16w..16w+15 as in the mma.sync kernel) and streams key/value tiles of BK
 * rows through two cp.async stages. Per tile, two warpgroup products of
 * m64n64k16 steps: S = Q K^T (HSP / 16 steps, Q from registers, K by
 * descriptor) and O += P V (BK / 16 steps, P from the score registers
 * rounded to bf16, V by descriptor, N-major). Their accumulators are laid
 * out as mma.sync's, so the mask and the online softmax are the mma.sync
 * kernel's (amma_mask, amma_softmax_step in attention_mma.cuh).
 *
 * What changes against attention_mma_fwd.cu: K and V are staged in the
 * core-matrix layout wgmma reads (wgmma.cuh) rather than padded rows; Q
 * stays in padded rows (read once into registers by ldmatrix); and the
 * whole warpgroup takes part in every product, so a warp whose rows all
 * precede a tile's keys masks the tile to p = 0 instead of skipping it
 * (p = 2^-inf = 0 adds exact zeros; the row maxima stay finite because key
 * 0 is valid for every row). Unmeasured on a GPU (dev/notes/attention-kernels.md). */
#include "attention_mma_wg.cuh"

/* Shared memory: two stages of [K | V] (BK x HSP each, core layout), then
 * Q (64 padded rows). */
template <class Cfg> static size_t amma_fwd_wg_smem()
{
    return attn_round((size_t)2 * 2 * Cfg::BT * Cfg::HSP * sizeof(bf16)) +
           (size_t)Cfg::ROWS * Cfg::LD * sizeof(bf16);
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::NT, Cfg::MINB) amma_fwd_wg_kernel(AmmaFwdArgs a)
{
#if WGMMA_OK
    constexpr int HSP = Cfg::HSP, BQ = Cfg::ROWS, BK = Cfg::BT, NT = Cfg::NT, LD = Cfg::LD;
    static_assert(HSP == 64 && BK == 64 && BQ == 64 && Cfg::ST == 2 && Cfg::VEC,
                  "one warpgroup, m64n64k16 products, cp.async stages");
    constexpr int TILE = BK * HSP; /* elements of one K or V tile */
    DYN_SMEM(smem);
    bf16 *const tiles = (bf16 *)smem; /* stage s: K at 2 s TILE, V after it */
    auto stage = [&](int s) { return tiles + (size_t)s * 2 * TILE; };
    bf16 *const Qs = (bf16 *)(smem + attn_round((size_t)4 * TILE * sizeof(bf16)));

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
    const float sl2 = a.sl2;

    amma_stage_async<HSP, BQ, NT, 1>(Qs, Qsrc, q0);
    amma_stage_core_pair_async<HSP, BK, NT>(tiles, Ksrc, Vsrc, 0);
    cp_async_commit();
    amma_wg_landed();
    __syncthreads();
    uint32_t qf[HSP / 16][4];
    mma_load_a_strip<HSP>(qf, Qs, LD, 16 * w);

    float o[HSP / 8][4];
    mma_strip_zero<HSP>(o);
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f; /* rows r0, r1 */

    for (int kt = 0; kt < nK; kt++) {
        const int k0 = kt * BK;
        const bf16 *Ks = amma_wg_kv_step<Cfg>(stage, Ksrc, Vsrc, kt, nK), *Vs = Ks + TILE;

        float s[BK / 8][4]; /* S = Q_w K^T: K-major B, k = head dim */
        wgmma_fence();
        amma_wg_product<HSP, true, false>(s, qf, Ks);
        wgmma_commit();
        wgmma_wait<0>();
        wgmma_hold<BK / 2>(&s[0][0]);
        wgmma_hold<HSP / 4>(&qf[0][0]);

        /* mask where a key can be past a row of the warp or past T (whole
         * tiles past the warp's rows included: p = 0 there) */
        amma_mask<BK, false>(s, k0, wq0, r0, r1, t4, T_);
        amma_softmax_step<BK, HSP>(s, o, m0, m1, l0, l1, sl2);
        /* O_w += P V: P (bf16) from the score registers, V N-major, k = key */
        amma_wg_acc_c<HSP, BK>(o, s, Vs);
    }

    amma_fwd_finish<HSP>(a, blk, T_, hs, r0, r1, t4, o, m0, m1, l0, l1, sl2);
#else
    (void)a; /* not sm_90a: the host refuses the launch (amma_fwd_wg_launch) */
#endif
}

/* The launch: refused, with the reason, on a device other than compute
 * capability 9.0 or off the 16-byte path at other head sizes (amma_wg_check). */
template <class Cfg> static void amma_fwd_wg_launch_cfg(CudaState *st, const AmmaFwdArgs &a)
{
    amma_wg_check(st, a.vec, a.C, a.NH, "attention_forward", AMMA_FWD_WG_NAME);
    amma_launch(st, amma_fwd_wg_kernel<Cfg>, a, amma_fwd_wg_smem<Cfg>(), Cfg::ROWS, a.B, Cfg::NT,
                Cfg::HSP, "attention_forward");
}

void amma_fwd_wg_launch(CudaState *st, const AmmaFwdArgs &a)
{
    amma_fwd_wg_launch_cfg<AmmaCfg<64, 4, 64, 2, 3>>(st, a);
}
