/* dev/cuda/attention_mma_fwd_wg.cu — the bf16 attention forward on
 * Hopper's warpgroup products (wgmma.cuh, sm_90a only): one more variant
 * of attention_mma_fwd.cuh's kernel (the sweep's table names it; never the
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
 * What changes against attention_mma_fwd.cuh: K and V are staged in the
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

    const AmmaTile t = amma_tile_begin<Cfg>(a);

    amma_stage_async<HSP, BQ, NT, 1>(Qs, t.q, t.row0);
    amma_stage_core_pair_async<HSP, BK, NT>(tiles, t.k, t.v, 0);
    cp_async_commit();
    amma_wg_landed();
    __syncthreads();
    uint32_t qf[HSP / 16][4];
    mma_load_a_strip<HSP>(qf, Qs, LD, 16 * t.w);

    float o[HSP / 8][4];
    mma_strip_zero<HSP>(o);
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f; /* rows r0, r1 */

    for (int kt = 0; kt < t.n; kt++) {
        const int k0 = kt * BK;
        const bf16 *Ks = amma_wg_kv_step<Cfg>(stage, t.k, t.v, kt, t.n), *Vs = Ks + TILE;

        float s[BK / 8][4]; /* S = Q_w K^T: K-major B, k = head dim */
        wgmma_fence();
        amma_wg_product<HSP, true, false>(s, qf, Ks);
        wgmma_commit();
        wgmma_wait<0>();
        wgmma_hold<BK / 2>(&s[0][0]);
        wgmma_hold<HSP / 4>(&qf[0][0]);

        /* mask where a key can be past a row of the warp or past T (whole
         * tiles past the warp's rows included: p = 0 there) */
        amma_mask<BK, false>(s, k0, t.wr0, t.r0, t.r1, t.t4, t.T);
        amma_softmax_step<BK, HSP>(s, o, m0, m1, l0, l1, a.sl2);
        /* O_w += P V: P (bf16) from the score registers, V N-major, k = key */
        amma_wg_acc_c<HSP, BK>(o, s, Vs);
    }

    amma_fwd_finish<HSP>(a, t, o, m0, m1, l0, l1);
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
