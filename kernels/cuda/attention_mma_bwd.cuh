/* kernels/cuda/attention_mma_bwd.cuh — the bf16 attention backward's two
 * kernels (plan: attention_mma.cuh), each the only writer of its output,
 * after the statistics (amma_rows_D_kernel): amma_dq_kernel (block = ROWS
 * query rows, key/value tiles up to the diagonal: dQ = scale dS K) and
 * amma_dkdv_kernel (block = ROWS key rows, query/dO tiles from the
 * diagonal on: dV = P^T dO, dK = scale dS^T Q). Both stream the other side
 * 16 rows at a time: a warp forms a 16 x 16 piece of S and dP, turns it
 * into P and dS in registers and feeds it at once into its accumulators
 * (mma_strip_acc), so only those and its own A operands (HOLD) stay live,
 * not 16 x BT score tiles. Templates, as attention_mma_fwd.cuh.
 * Grouped-query attention (KVH < NH): a dQ block reads its query head's
 * key/value head; a dK/dV block owns a key/value head's key rows and streams
 * the query/dO tiles of each of its G = NH / KVH query heads in turn,
 * heads in increasing order, into the same register accumulators: a fixed
 * order, one store, no atomics (G = 1: the same steps as without groups). */
#ifndef KERNELS_CUDA_ATTENTION_MMA_BWD_CUH
#define KERNELS_CUDA_ATTENTION_MMA_BWD_CUH

#include "attention_mma.cuh"

/* ---- dQ ---- */

/* Shared memory (amma_smem): ST stages of [K tile | V tile] (BK rows
 * each); own: [Q | dO] (ROWS rows each). */
template <class Cfg> static size_t amma_dq_smem()
{
    return amma_smem<Cfg>(amma_rows<Cfg>(2 * Cfg::BT), amma_rows<Cfg>(2 * Cfg::ROWS));
}

template <class Cfg, bool GQA = false> /* GQA: for KVH < NH (amma_tile_begin) */
__global__ void __launch_bounds__(Cfg::NT, Cfg::MINB) amma_dq_kernel(AmmaBwdArgs a)
{
    constexpr int HSP = Cfg::HSP, BQ = Cfg::ROWS, BK = Cfg::BT, NT = Cfg::NT, LD = Cfg::LD;
    DYN_SMEM(smem);
    bf16 *const tiles = (bf16 *)smem;
    bf16 *const Qs = (bf16 *)(smem + amma_own_at<Cfg>(amma_rows<Cfg>(2 * BK)));
    bf16 *const dOs = Qs + BQ * LD;
    const AmmaTile t = amma_tile_begin<Cfg, false, GQA>(a);
    const AmmaStat zero = {0.0f, 0.0f};
    const AmmaStat st0 = t.r0 < t.T ? t.stats[t.r0] : zero;
    const AmmaStat st1 = t.r1 < t.T ? t.stats[t.r1] : zero;

    uint32_t qf[HSP / 16][4], of[HSP / 16][4]; /* Q_w, dO_w: with HOLD only */
    amma_stage_own<Cfg, 2>(Qs, t.q, t.dout, t.row0, t.w, qf, of, [&] {
        amma_stage_pair_async<HSP, BK, NT, Cfg::VEC>(tiles, t.k, t.v, 0); /* keys 0.. */
    });

    float dq[HSP / 8][4];
    mma_strip_zero<HSP>(dq);

    for (int kt = 0; kt < t.n; kt++) {
        const int k0 = kt * BK;
        const bf16 *Ks = amma_kv_step<Cfg>(tiles, t.k, t.v, kt, t.n);
        const bf16 *Vs = Ks + BK * LD;
        if (t.idle || k0 > t.wr0 + 15) continue; /* every key after this warp's rows */

#pragma unroll
        for (int c = 0; c < BK / 16; c++) { /* keys kc0..kc0+15 */
            const int kc0 = k0 + 16 * c;
            if (kc0 > t.wr0 + 15) break;
            const bf16 *Kc = Ks + 16 * c * LD, *Vc = Vs + 16 * c * LD;
            float s[2][4], dp[2][4];
            if (Cfg::HOLD) {
                mma_strip_areg<16, HSP>(s, qf, Kc, LD);  /* S = Q_w K_c^T */
                mma_strip_areg<16, HSP>(dp, of, Vc, LD); /* dP = dO_w V_c^T */
            } else {
                mma_strip<16, HSP>(s, Qs, LD, 16 * t.w, Kc, LD);
                mma_strip<16, HSP>(dp, dOs, LD, 16 * t.w, Vc, LD);
            }
            amma_mask<16, false>(s, kc0, t.wr0, t.r0, t.r1, t.t4, t.T);
            amma_ds_rows<16>(s, dp, st0, st1, a.sl2);
            mma_strip_acc<HSP, 16>(dq, s, Kc, LD); /* dQ_w += dS K_c */
        }
    }

    amma_dq_store<HSP>(a, t, dq);
}

/* ---- dK/dV ---- */

/* Shared memory (amma_smem): ST stages of [Q tile | dO tile] (BT rows
 * each) and BT statistics; own: [K | V] (ROWS rows each). */
template <class Cfg> struct AmmaDkdvSmem {
    static constexpr size_t tiles = amma_rows<Cfg>(2 * Cfg::BT);
    static constexpr size_t stage = tiles + (size_t)Cfg::BT * sizeof(AmmaStat);
    static constexpr size_t kv = amma_rows<Cfg>(2 * Cfg::ROWS);
    static constexpr size_t kv_at = amma_own_at<Cfg>(stage), bytes = amma_smem<Cfg>(stage, kv);
    /* stage s's Q tile (its dO tile follows, BT rows on) and statistics */
    static __device__ __forceinline__ bf16 *q(unsigned char *smem, int s)
    {
        return (bf16 *)(smem + (size_t)s * stage);
    }
    static __device__ __forceinline__ AmmaStat *stats(unsigned char *smem, int s)
    {
        return (AmmaStat *)(smem + (size_t)s * stage + tiles);
    }
};

template <class Cfg, bool GQA = false> /* GQA = 0: G = 1 known, the code before groups */
__global__ void __launch_bounds__(Cfg::NT, Cfg::MINB) amma_dkdv_kernel(AmmaBwdArgs a)
{
    constexpr int HSP = Cfg::HSP, BKV = Cfg::ROWS, BQ = Cfg::BT, NT = Cfg::NT, LD = Cfg::LD;
    static_assert(Cfg::ST == 2 || BQ <= NT, "ST = 1 stages one statistic per thread");
    typedef AmmaDkdvSmem<Cfg> SM;
    DYN_SMEM(smem);
    bf16 *const Ks = (bf16 *)(smem + SM::kv_at), *const Vs = Ks + BKV * LD;
    /* rows: keys, this lane's t.r0 and t.r1; query tiles from t.first */
    const AmmaTile t = amma_tile_begin<Cfg, true, GQA>(a);
    /* query head g of the group: q, dO hs columns and stats T rows on */
    const int G = GQA ? a.NH / a.KVH : 1, steps = G * t.n;
    auto head = [&](AmmaSrc s, int g) {
        s.row += g * t.hs;
        return s;
    };

    uint32_t kf[HSP / 16][4], vf[HSP / 16][4]; /* K_w, V_w: with HOLD only */
    amma_stage_own<Cfg, 2>(Ks, t.k, t.v, t.row0, t.w, kf, vf, [&] {
        amma_stage_pair_async<HSP, BQ, NT, Cfg::VEC>(SM::q(smem, 0), t.q, t.dout, t.first);
        amma_stage_stats<BQ, NT>(SM::stats(smem, 0), t.stats, t.first, t.T);
    });

    float dk[HSP / 8][4], dv[HSP / 8][4];
    mma_strip_zero<HSP>(dk);
    mma_strip_zero<HSP>(dv);

    /* step i: query head g = i / n of the group, its query tile it = i % n */
    for (int i = 0; i < steps; i++) {
        const int g = GQA ? i / t.n : 0, it = i - g * t.n, q0 = t.first + it * BQ;
        /* the next step's tile: this head's next, or the next head's first */
        const bool same = !GQA || it + 1 < t.n;
        const int gn = same ? g : g + 1, rn = same ? q0 + BQ : t.first;
        const int cur = amma_stream_step<Cfg>(
            i, steps, q0,
            [&](int s, int) {
                amma_stage_pair_async<HSP, BQ, NT, Cfg::VEC>(SM::q(smem, s), head(t.q, gn),
                                                             head(t.dout, gn), rn);
                amma_stage_stats<BQ, NT>(SM::stats(smem, s), t.stats + (size_t)gn * t.T, rn,
                                         t.T);
            },
            [&](int r) { /* one statistic per thread < BQ */
                const int sr = threadIdx.x, q = r + sr;
                AmmaStat sv = {0.0f, 0.0f};
                if (sr < BQ && q < t.T) sv = t.stats[(size_t)g * t.T + q];
                amma_stage_pair<HSP, BQ, NT, Cfg::VEC, true>(SM::q(smem, 0), head(t.q, g),
                                                             head(t.dout, g), r);
                if (sr < BQ) SM::stats(smem, 0)[sr] = sv;
            });
        const bf16 *Qs = SM::q(smem, cur), *dOs = Qs + BQ * LD;
        const AmmaStat *sts = SM::stats(smem, cur);
        if (t.idle || q0 + BQ - 1 < t.wr0) continue; /* every query before this warp's keys */

#pragma unroll
        for (int c = 0; c < BQ / 16; c++) { /* queries qc0..qc0+15 */
            const int qc0 = q0 + 16 * c;
            if (qc0 + 15 < t.wr0) continue;
            if (qc0 >= t.T) break;
            const bf16 *Qc = Qs + 16 * c * LD, *dOc = dOs + 16 * c * LD;
            float sT[2][4], dpT[2][4];
            if (Cfg::HOLD) {
                mma_strip_areg<16, HSP>(sT, kf, Qc, LD);   /* S^T = K_w Q_c^T */
                mma_strip_areg<16, HSP>(dpT, vf, dOc, LD); /* dP^T = V_w dO_c^T */
            } else {
                mma_strip<16, HSP>(sT, Ks, LD, 16 * t.w, Qc, LD);
                mma_strip<16, HSP>(dpT, Vs, LD, 16 * t.w, dOc, LD);
            }
            /* P^T and dS^T in place; a key past T is never <= a query < T */
            amma_mask<16, true>(sT, qc0, t.wr0, t.r0, t.r1, t.t4, t.T);
            amma_pds_cols<16>(sT, dpT, sts + 16 * c, t.t4, a.sl2);
            /* dV_w += P^T dO_c, dK_w += dS^T Q_c: A operands from the registers */
            mma_strip_acc<HSP, 16>(dv, sT, dOc, LD);
            mma_strip_acc<HSP, 16>(dk, dpT, Qc, LD);
        }
    }

    amma_dkdv_store<HSP>(a, t, dk, dv);
}

/* ---- launches ---- */

template <class Cfg, bool DQ, bool GQA = false>
static void amma_bwd_launch(CudaState *st, const AmmaBwdArgs &a)
{
    if constexpr (DQ)
        amma_launch(st, amma_dq_kernel<Cfg, GQA>, a, amma_dq_smem<Cfg>(), Cfg::ROWS, a.nb, Cfg::NT,
                    Cfg::HSP, "attention_backward");
    else
        amma_launch(st, amma_dkdv_kernel<Cfg, GQA>, a, AmmaDkdvSmem<Cfg>::bytes, Cfg::ROWS, a.nb,
                    Cfg::NT, Cfg::HSP, "attention_backward", a.KVH); /* a block per key head */
}

#endif
