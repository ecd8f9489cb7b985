/* dev/cuda/attention_mma_bwd_wg.cu — the bf16 attention backward's dQ
 * and dK/dV on Hopper's warpgroup products (wgmma.cuh, sm_90a only): one
 * more variant of each of attention_mma_bwd.cuh's kernels (the sweep names
 * them; never the default), same plan (attention_mma.cuh), same exactness
 * contract (within the bf16 check's tolerance; each kernel the only writer
 * of its output, no atomics, a fixed order of every sum: two runs bitwise
 * equal). The statistics (lse in log2 units, D) come from
 * amma_rows_D_kernel as for the mma.sync kernels.
 *
 * A block is one warpgroup (4 warps, 64 rows of its own side; warp w owns
 * rows 16w..16w+15 and holds their A operands in registers) and streams
 * 64-row tiles of the other side through two cp.async stages, stored in
 * the core-matrix layout wgmma reads (wgmma.cuh). Per tile, four
 * warpgroup products of m64n64k16 steps, 4 steps each (k = head dim or
 * tile row), with the 16 x 64 score and dP pieces of a warp turned into P
 * and dS in registers in between:
 *   dK/dV (block rows = keys; tiles: Q and dO, from the diagonal on)
 *     S^T = K_w Q^T, dP^T = V_w dO^T   (B = Q, dO tile, K-major: k = d)
 *     dV_w += P^T dO, dK_w += dS^T Q   (A = P^T, dS^T from the registers;
 *                                       B = dO, Q tile, N-major: k = query)
 *   dQ (block rows = queries; tiles: K and V, up to the diagonal)
 *     S = Q_w K^T, dP = dO_w V^T       (B = K, V tile, K-major)
 *     dQ_w += dS K                     (A = dS; B = K tile, N-major)
 * One core layout serves a tile both ways, so each tile is staged once.
 *
 * What changes against the mma.sync kernels: the whole warpgroup takes
 * part in every product, so a warp whose rows the causal mask leaves
 * without any pair in a tile (mma.sync: skipped) computes it masked to
 * p = 0: P and dS are exact zeros there and add +0 to the accumulators;
 * the same for rows past T (zero operands, masked columns). Unmeasured on
 * a GPU (dev/notes/attention-kernels.md). */
#include "attention_mma_wg.cuh"

/* Shared memory: two stages, each two BT x HSP core-layout tiles of the
 * streamed side and, with STATS (dK/dV), their BT statistics; then the
 * block's own two tiles in padded rows. */
template <class Cfg, bool STATS> struct AmmaWgSmem {
    static constexpr size_t tile = (size_t)Cfg::BT * Cfg::HSP * sizeof(bf16);
    static constexpr size_t stats = STATS ? (size_t)Cfg::BT * sizeof(AmmaStat) : 0;
    /* own: the block's two padded 64-row tiles (read once into registers) */
    static constexpr size_t own = (size_t)2 * Cfg::ROWS * Cfg::LD * sizeof(bf16);
    static constexpr size_t stage = attn_round(2 * tile + stats);
    static constexpr size_t bytes = 2 * stage + own;
};

/* ---- dK/dV ---- */

template <class Cfg>
__global__ void __launch_bounds__(Cfg::NT, Cfg::MINB) amma_dkdv_wg_kernel(AmmaBwdArgs a)
{
#if WGMMA_OK
    constexpr int HSP = Cfg::HSP, BKV = Cfg::ROWS, BQ = Cfg::BT, NT = Cfg::NT, LD = Cfg::LD;
    static_assert(HSP == 64 && BKV == 64 && BQ == 64 && Cfg::ST == 2 && Cfg::VEC,
                  "one warpgroup, m64n64k16 products, cp.async stages");
    typedef AmmaWgSmem<Cfg, true> SM;
    DYN_SMEM(smem);
    /* stage s: Q tile, dO tile (core layout), BQ statistics; then K, V */
    auto qt = [&](int s) { return (bf16 *)(smem + s * SM::stage); };
    auto stt = [&](int s) { return (AmmaStat *)(smem + s * SM::stage + 2 * SM::tile); };
    bf16 *const Ks = (bf16 *)(smem + 2 * SM::stage), *const Vs = Ks + BKV * LD;

    /* rows: keys; BQ = BKV, so the query tiles start at the block's first key */
    const AmmaTile t = amma_tile_begin<Cfg, true>(a);

    amma_stage_pair_async<HSP, BKV, NT, 1>(Ks, t.k, t.v, t.row0); /* [K | V], padded rows */
    amma_stage_core_pair_async<HSP, BQ, NT>(qt(0), t.q, t.dout, t.first);
    amma_stage_stats<BQ, NT>(stt(0), t.stats, t.first, t.T);
    cp_async_commit();
    amma_wg_landed();
    __syncthreads();
    uint32_t kf[HSP / 16][4], vf[HSP / 16][4]; /* K_w, V_w */
    mma_load_a_strip<HSP>(kf, Ks, LD, 16 * t.w);
    mma_load_a_strip<HSP>(vf, Vs, LD, 16 * t.w);

    float dk[HSP / 8][4], dv[HSP / 8][4];
    mma_strip_zero<HSP>(dk);
    mma_strip_zero<HSP>(dv);

    for (int it = 0; it < t.n; it++) {
        const int q0 = t.first + it * BQ;
        if (it > 0) amma_wg_landed(); /* this thread's part of tile it */
        __syncthreads(); /* tile it complete; every warp done with it - 1 */
        if (it + 1 < t.n) {
            const int nx = (it + 1) & 1;
            amma_stage_core_pair_async<HSP, BQ, NT>(qt(nx), t.q, t.dout, q0 + BQ);
            amma_stage_stats<BQ, NT>(stt(nx), t.stats, q0 + BQ, t.T);
            cp_async_commit();
        }
        const bf16 *Qs = qt(it & 1), *dOs = Qs + BQ * HSP;
        const AmmaStat *sts = stt(it & 1);

        float sT[BQ / 8][4], dpT[BQ / 8][4]; /* S^T = K_w Q^T, dP^T = V_w dO^T */
        amma_wg_scores2<HSP, BQ>(sT, kf, Qs, dpT, vf, dOs);

        /* P^T and dS^T in place; mask where a query can precede a key of
         * the warp or be past T (a key past T is never <= a query < T) */
        amma_mask<BQ, true>(sT, q0, t.wr0, t.r0, t.r1, t.t4, t.T);
        amma_pds_cols<BQ>(sT, dpT, sts, t.t4, a.sl2);
        /* dV_w += P^T dO, dK_w += dS^T Q: A (bf16) from the registers */
        uint32_t pa[BQ / 16][4], sa[BQ / 16][4];
        amma_wg_a_from_c<BQ>(pa, sT);
        amma_wg_a_from_c<BQ>(sa, dpT);
        wgmma_fence();
        amma_wg_product<HSP, false, true>(dv, pa, dOs);
        amma_wg_product<HSP, false, true>(dk, sa, Qs);
        wgmma_commit();
        wgmma_wait<0>();
        wgmma_hold<HSP / 2>(&dv[0][0]);
        wgmma_hold<HSP / 2>(&dk[0][0]);
        wgmma_hold<BQ / 4>(&pa[0][0]);
        wgmma_hold<BQ / 4>(&sa[0][0]);
    }

    amma_dkdv_store<HSP>(a, t, dk, dv);
#else
    (void)a; /* not sm_90a: the host refuses the launch (amma_wg_check) */
#endif
}

/* ---- dQ ---- */

template <class Cfg>
__global__ void __launch_bounds__(Cfg::NT, Cfg::MINB) amma_dq_wg_kernel(AmmaBwdArgs a)
{
#if WGMMA_OK
    constexpr int HSP = Cfg::HSP, BQ = Cfg::ROWS, BK = Cfg::BT, NT = Cfg::NT, LD = Cfg::LD;
    static_assert(HSP == 64 && BQ == 64 && BK == 64 && Cfg::ST == 2 && Cfg::VEC,
                  "one warpgroup, m64n64k16 products, cp.async stages");
    typedef AmmaWgSmem<Cfg, false> SM;
    DYN_SMEM(smem);
    /* stage s: K tile, V tile (core layout); then Q, dO */
    auto kt_at = [&](int s) { return (bf16 *)(smem + s * SM::stage); };
    bf16 *const Qs = (bf16 *)(smem + 2 * SM::stage), *const dOs = Qs + BQ * LD;

    const AmmaTile t = amma_tile_begin<Cfg, false>(a);
    const AmmaStat zero = {0.0f, 0.0f};
    const AmmaStat st0 = t.r0 < t.T ? t.stats[t.r0] : zero;
    const AmmaStat st1 = t.r1 < t.T ? t.stats[t.r1] : zero;

    amma_stage_pair_async<HSP, BQ, NT, 1>(Qs, t.q, t.dout, t.row0); /* [Q | dO], padded rows */
    amma_stage_core_pair_async<HSP, BK, NT>(kt_at(0), t.k, t.v, 0);
    cp_async_commit();
    amma_wg_landed();
    __syncthreads();
    uint32_t qf[HSP / 16][4], of[HSP / 16][4]; /* Q_w, dO_w */
    mma_load_a_strip<HSP>(qf, Qs, LD, 16 * t.w);
    mma_load_a_strip<HSP>(of, dOs, LD, 16 * t.w);

    float dq[HSP / 8][4];
    mma_strip_zero<HSP>(dq);

    for (int kt = 0; kt < t.n; kt++) {
        const int k0 = kt * BK;
        const bf16 *Ks = amma_wg_kv_step<Cfg>(kt_at, t.k, t.v, kt, t.n), *Vs = Ks + BK * HSP;

        float s[BK / 8][4], dp[BK / 8][4]; /* S = Q_w K^T, dP = dO_w V^T */
        amma_wg_scores2<HSP, BK>(s, qf, Ks, dp, of, Vs);

        /* mask where a key can be past a row of the warp or past T (whole
         * tiles past the warp's rows included: p = 0 there) */
        amma_mask<BK, false>(s, k0, t.wr0, t.r0, t.r1, t.t4, t.T);
        amma_ds_rows<BK>(s, dp, st0, st1, a.sl2);
        /* dQ_w += dS K: dS (bf16) from the registers, K N-major, k = key */
        amma_wg_acc_c<HSP, BK>(dq, s, Ks);
    }

    amma_dq_store<HSP>(a, t, dq);
#else
    (void)a; /* not sm_90a: the host refuses the launch (amma_wg_check) */
#endif
}

/* ---- launches ---- */

template <class Cfg, bool DQ> static void amma_bwd_wg_launch(CudaState *st, const AmmaBwdArgs &a)
{
    amma_wg_check(st, a.vec, a.C, a.NH, "attention_backward",
                  DQ ? AMMA_DQ_WG_NAME : AMMA_DKDV_WG_NAME);
    void (*kern)(AmmaBwdArgs);
    if constexpr (DQ) kern = amma_dq_wg_kernel<Cfg>;
    else kern = amma_dkdv_wg_kernel<Cfg>;
    amma_launch(st, kern, a, AmmaWgSmem<Cfg, !DQ>::bytes, Cfg::ROWS, a.nb, Cfg::NT, Cfg::HSP,
                "attention_backward");
}

void amma_dq_wg_launch(CudaState *st, const AmmaBwdArgs &a)
{
    amma_bwd_wg_launch<AmmaCfg<64, 4, 64, 2, 3>, true>(st, a);
}

void amma_dkdv_wg_launch(CudaState *st, const AmmaBwdArgs &a)
{
    amma_bwd_wg_launch<AmmaCfg<64, 4, 64, 2, 2>, false>(st, a);
}
