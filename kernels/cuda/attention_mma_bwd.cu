/* kernels/cuda/attention_mma_bwd.cu — the bf16 attention backward (plan and
 * staging: attention_mma.cuh), three kernels per slice of sequences:
 *   amma_rows_D_kernel  stats[row] = {lse log2 e, D = sum_d dO O}, once per
 *                       query row (not in every block that reads it);
 *   amma_dq_kernel      block = ROWS query rows, key/value tiles of BT
 *                       up to the diagonal: dQ = scale dS K;
 *   amma_dkdv_kernel    block = ROWS key rows, query/dO tiles of BT from
 *                       the diagonal on: dV = P^T dO, dK = scale dS^T Q.
 * Both main kernels stream the other side 16 rows at a time: a warp forms
 * a 16 x 16 piece of S and dP, turns it into P and dS in registers, and
 * feeds it at once into its accumulators (mma_strip_acc), so only the
 * accumulators (2 x 16 x HSP for dK/dV) and the warp's own A operands
 * (HOLD) stay live, not 16 x BT score tiles. */
#include "attention_mma.cuh"

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

void amma_rows_D_run(CudaState *st, AmmaStat *stats, const bf16 *dout, const bf16 *out,
                     const float *lse, int nb, int T, int C, int NH)
{
    const size_t rows = (size_t)nb * NH * T;
    LAUNCH(amma_rows_D_kernel, elementwise_grid(rows * 32, 256), 256, 0, st->stream, stats, dout,
           out, lse, nb, T, C, NH);
}

/* ---- dQ ---- */

/* Shared memory: ST stages of [K tile | V tile] (BK rows each). Q and dO
 * (ROWS rows each): with HOLD, staged into the last stage (enlarged if
 * needed) and read into registers before it is first refilled; without,
 * a region of their own that stays. */
template <class Cfg> static size_t amma_dq_smem()
{
    constexpr int BK = Cfg::BT, R = Cfg::ROWS;
    const size_t rows = Cfg::HOLD ? (size_t)(Cfg::ST - 1) * 2 * BK + AmmaMax<2 * BK, 2 * R>::v
                                  : (size_t)Cfg::ST * 2 * BK + 2 * R;
    return rows * Cfg::LD * sizeof(bf16);
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::NT, Cfg::MINB) amma_dq_kernel(AmmaBwdArgs a)
{
    constexpr int HSP = Cfg::HSP, BQ = Cfg::ROWS, BK = Cfg::BT, NT = Cfg::NT, LD = Cfg::LD;
    constexpr int STAGE = 2 * BK * LD;
    DYN_SMEM(smem);
    bf16 *const tiles = (bf16 *)smem;
    bf16 *const Qs = tiles + (size_t)(Cfg::HOLD ? Cfg::ST - 1 : Cfg::ST) * STAGE;
    bf16 *const dOs = Qs + BQ * LD;

    const int T_ = a.T, C = a.C, hs = C / a.NH, C3 = 3 * C;
    const AmmaBlock blk = amma_block((T_ + BQ - 1) / BQ, a.NH, a.nb, true);
    const int q0 = blk.tile * BQ;
    const bf16 *seq = a.qkv + (size_t)blk.b * T_ * C3 + blk.h * hs;
    const AmmaSrc Qsrc = {seq, C3, T_, hs}, Ksrc = {seq + C, C3, T_, hs},
                  Vsrc = {seq + 2 * C, C3, T_, hs},
                  dOsrc = {a.dout + (size_t)blk.b * T_ * C + blk.h * hs, C, T_, hs};
    const int w = threadIdx.x / 32, g = threadIdx.x % 32 / 4, t4 = threadIdx.x % 4;
    const int wq0 = q0 + 16 * w, r0 = wq0 + g, r1 = r0 + 8;
    const int last = q0 + BQ < T_ ? q0 + BQ : T_;
    const int nK = (last + BK - 1) / BK;
    const bool idle = wq0 >= T_;
    const float sl2 = a.sl2;
    const AmmaStat *rs = a.stats + ((size_t)blk.b * a.NH + blk.h) * T_;
    const AmmaStat zero = {0.0f, 0.0f};
    const AmmaStat st0 = r0 < T_ ? rs[r0] : zero, st1 = r1 < T_ ? rs[r1] : zero;

    if (Cfg::ST == 2) {
        amma_stage_pair_async<HSP, BQ, NT, Cfg::VEC>(Qs, Qsrc, dOsrc, q0); /* [Q | dO] */
        amma_stage_pair_async<HSP, BK, NT, Cfg::VEC>(tiles, Ksrc, Vsrc, 0);
        cp_async_commit();
        cp_async_wait<0>();
    } else {
        amma_stage_pair<HSP, BQ, NT, Cfg::VEC, false>(Qs, Qsrc, dOsrc, q0);
    }
    __syncthreads();
    uint32_t qf[HSP / 16][4], of[HSP / 16][4]; /* Q_w, dO_w: with HOLD only */
    if (Cfg::HOLD) {
        mma_load_a_strip<HSP>(qf, Qs, LD, 16 * w);
        mma_load_a_strip<HSP>(of, dOs, LD, 16 * w);
    }

    float dq[HSP / 8][4];
    mma_strip_zero<HSP>(dq);

    for (int kt = 0; kt < nK; kt++) {
        const int k0 = kt * BK;
        const bf16 *Ks = amma_kv_step<Cfg>(tiles, Ksrc, Vsrc, kt, nK);
        const bf16 *Vs = Ks + BK * LD;
        if (idle || k0 > wq0 + 15) continue; /* every key after this warp's rows */

#pragma unroll
        for (int c = 0; c < BK / 16; c++) { /* keys kc0..kc0+15 */
            const int kc0 = k0 + 16 * c;
            if (kc0 > wq0 + 15) break;
            const bf16 *Kc = Ks + 16 * c * LD, *Vc = Vs + 16 * c * LD;
            float s[2][4], dp[2][4];
            if (Cfg::HOLD) {
                mma_strip_areg<16, HSP>(s, qf, Kc, LD);  /* S = Q_w K_c^T */
                mma_strip_areg<16, HSP>(dp, of, Vc, LD); /* dP = dO_w V_c^T */
            } else {
                mma_strip<16, HSP>(s, Qs, LD, 16 * w, Kc, LD);
                mma_strip<16, HSP>(dp, dOs, LD, 16 * w, Vc, LD);
            }
            amma_mask<16, false>(s, kc0, wq0, r0, r1, t4, T_);
            amma_ds_rows<16>(s, dp, st0, st1, sl2);
            mma_strip_acc<HSP, 16>(dq, s, Kc, LD); /* dQ_w += dS K_c */
        }
    }

    amma_dq_store<HSP>(a, blk, T_, hs, r0, dq);
}

/* ---- dK/dV ---- */

/* One stage: [Q tile | dO tile] (BQ rows each), then BQ statistics. K and V
 * (ROWS rows each): with HOLD, staged into the last stage (enlarged if
 * needed) and read into registers before it is first refilled; without, a
 * region of their own after the stages. */
template <class Cfg> struct AmmaDkdvSmem {
    static constexpr size_t tiles = (size_t)2 * Cfg::BT * Cfg::LD * sizeof(bf16);
    static constexpr size_t stage = tiles + (size_t)Cfg::BT * sizeof(AmmaStat);
    static constexpr size_t kv = (size_t)2 * Cfg::ROWS * Cfg::LD * sizeof(bf16);
    static constexpr size_t kv_at = (Cfg::HOLD ? Cfg::ST - 1 : Cfg::ST) * stage;
    static constexpr size_t bytes =
        Cfg::HOLD ? (Cfg::ST - 1) * stage + (stage > kv ? stage : kv) : Cfg::ST * stage + kv;
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

template <class Cfg>
__global__ void __launch_bounds__(Cfg::NT, Cfg::MINB) amma_dkdv_kernel(AmmaBwdArgs a)
{
    constexpr int HSP = Cfg::HSP, BKV = Cfg::ROWS, BQ = Cfg::BT, NT = Cfg::NT, LD = Cfg::LD;
    static_assert(Cfg::ST == 2 || BQ <= NT, "ST = 1 stages one statistic per thread");
    typedef AmmaDkdvSmem<Cfg> SM;
    DYN_SMEM(smem);
    bf16 *const Ks = (bf16 *)(smem + SM::kv_at), *const Vs = Ks + BKV * LD;

    const int T_ = a.T, C = a.C, hs = C / a.NH, C3 = 3 * C;
    const AmmaBlock blk = amma_block((T_ + BKV - 1) / BKV, a.NH, a.nb, false);
    const int k0 = blk.tile * BKV;
    const bf16 *seq = a.qkv + (size_t)blk.b * T_ * C3 + blk.h * hs;
    const AmmaSrc Qsrc = {seq, C3, T_, hs}, Ksrc = {seq + C, C3, T_, hs},
                  Vsrc = {seq + 2 * C, C3, T_, hs},
                  dOsrc = {a.dout + (size_t)blk.b * T_ * C + blk.h * hs, C, T_, hs};
    const AmmaStat *rs = a.stats + ((size_t)blk.b * a.NH + blk.h) * T_;
    const int w = threadIdx.x / 32, g = threadIdx.x % 32 / 4, t4 = threadIdx.x % 4;
    const int wk0 = k0 + 16 * w, kr0 = wk0 + g, kr1 = kr0 + 8; /* this lane's two key rows */
    const int qstart = k0 / BQ * BQ, nQ = (T_ - qstart + BQ - 1) / BQ;
    const bool idle = wk0 >= T_;
    const float sl2 = a.sl2;

    if (Cfg::ST == 2) {
        amma_stage_pair_async<HSP, BKV, NT, Cfg::VEC>(Ks, Ksrc, Vsrc, k0); /* [K | V] */
        amma_stage_pair_async<HSP, BQ, NT, Cfg::VEC>(SM::q(smem, 0), Qsrc, dOsrc, qstart);
        amma_stage_stats<BQ, NT>(SM::stats(smem, 0), rs, qstart, T_);
        cp_async_commit();
        cp_async_wait<0>();
    } else {
        amma_stage_pair<HSP, BKV, NT, Cfg::VEC, false>(Ks, Ksrc, Vsrc, k0);
    }
    __syncthreads();
    uint32_t kf[HSP / 16][4], vf[HSP / 16][4]; /* K_w, V_w: with HOLD only */
    if (Cfg::HOLD) {
        mma_load_a_strip<HSP>(kf, Ks, LD, 16 * w);
        mma_load_a_strip<HSP>(vf, Vs, LD, 16 * w);
    }

    float dk[HSP / 8][4], dv[HSP / 8][4];
    mma_strip_zero<HSP>(dk);
    mma_strip_zero<HSP>(dv);

    for (int it = 0; it < nQ; it++) {
        const int q0 = qstart + it * BQ;
        int cur = 0;
        if (Cfg::ST == 2) {
            if (it > 0) cp_async_wait<0>();
            __syncthreads(); /* tile it complete; every warp done with it - 1 (and K, V) */
            if (it + 1 < nQ) {
                const int nx = (it + 1) & 1;
                amma_stage_pair_async<HSP, BQ, NT, Cfg::VEC>(SM::q(smem, nx), Qsrc, dOsrc, q0 + BQ);
                amma_stage_stats<BQ, NT>(SM::stats(smem, nx), rs, q0 + BQ, T_);
                cp_async_commit();
            }
            cur = it & 1;
        } else {
            AmmaRegTile<HSP, BQ, NT> rq, ro;
            const int sr = threadIdx.x, t = q0 + sr; /* one statistic per thread < BQ */
            AmmaStat sv = {0.0f, 0.0f};
            if (Cfg::VEC) {
                rq.load(Qsrc, q0);
                ro.load(dOsrc, q0);
            }
            if (sr < BQ && t < T_) sv = rs[t];
            __syncthreads(); /* every warp done with the previous tile (and K, V) */
            if (Cfg::VEC) {
                rq.store(SM::q(smem, 0));
                ro.store(SM::q(smem, 0) + BQ * LD);
            } else {
                amma_stage_scalar<HSP, BQ, NT>(SM::q(smem, 0), Qsrc, q0);
                amma_stage_scalar<HSP, BQ, NT>(SM::q(smem, 0) + BQ * LD, dOsrc, q0);
            }
            if (sr < BQ) SM::stats(smem, 0)[sr] = sv;
            __syncthreads();
        }
        const bf16 *Qs = SM::q(smem, cur), *dOs = Qs + BQ * LD;
        const AmmaStat *sts = SM::stats(smem, cur);
        if (idle || q0 + BQ - 1 < wk0) continue; /* every query before this warp's keys */

#pragma unroll
        for (int c = 0; c < BQ / 16; c++) { /* queries qc0..qc0+15 */
            const int qc0 = q0 + 16 * c;
            if (qc0 + 15 < wk0) continue;
            if (qc0 >= T_) break;
            const bf16 *Qc = Qs + 16 * c * LD, *dOc = dOs + 16 * c * LD;
            float sT[2][4], dpT[2][4];
            if (Cfg::HOLD) {
                mma_strip_areg<16, HSP>(sT, kf, Qc, LD);   /* S^T = K_w Q_c^T */
                mma_strip_areg<16, HSP>(dpT, vf, dOc, LD); /* dP^T = V_w dO_c^T */
            } else {
                mma_strip<16, HSP>(sT, Ks, LD, 16 * w, Qc, LD);
                mma_strip<16, HSP>(dpT, Vs, LD, 16 * w, dOc, LD);
            }
            /* P^T and dS^T in place; a key past T is never <= a query < T */
            amma_mask<16, true>(sT, qc0, wk0, kr0, kr1, t4, T_);
            amma_pds_cols<16>(sT, dpT, sts + 16 * c, t4, sl2);
            /* dV_w += P^T dO_c, dK_w += dS^T Q_c: A operands from the registers */
            mma_strip_acc<HSP, 16>(dv, sT, dOc, LD);
            mma_strip_acc<HSP, 16>(dk, dpT, Qc, LD);
        }
    }

    amma_dkdv_store<HSP>(a, blk, T_, hs, kr0, dk, dv);
}

/* ---- launches and variants ---- */

template <class Cfg, bool DQ> static void amma_bwd_launch(CudaState *st, const AmmaBwdArgs &a)
{
    if constexpr (DQ)
        amma_launch(st, amma_dq_kernel<Cfg>, a, amma_dq_smem<Cfg>(), Cfg::ROWS, a.nb, Cfg::NT,
                    Cfg::HSP, "attention_backward");
    else
        amma_launch(st, amma_dkdv_kernel<Cfg>, a, AmmaDkdvSmem<Cfg>::bytes, Cfg::ROWS, a.nb,
                    Cfg::NT, Cfg::HSP, "attention_backward");
}

/* dQ: warps, key tile, stages, launch-bound blocks per SM, "-r": Q_w and
 * dO_w reread from shared memory; the device they need (0: any). Entry 0
 * is the default. */
const AmmaBwdVariant amma_dq_variants[] = {
    {"dq-w4-k64-s2-b4", amma_bwd_launch<AmmaCfg<64, 4, 64, 2, 4, 1>, true>, 0, 0, 0},
    {"dq-w4-k64-s1-b4", amma_bwd_launch<AmmaCfg<64, 4, 64, 1, 4, 1>, true>, 0, 0, 0},
    {"dq-w8-k64-s2-b2", amma_bwd_launch<AmmaCfg<64, 8, 64, 2, 2, 1>, true>, 0, 0, 0},
    {"dq-w4-k32-s2-b4", amma_bwd_launch<AmmaCfg<64, 4, 32, 2, 4, 1>, true>, 0, 0, 0},
    {"dq-w4-k64-s2-b4-r", amma_bwd_launch<AmmaCfg<64, 4, 64, 2, 4, 0>, true>, 0, 0, 0},
    {AMMA_DQ_WG_NAME, amma_dq_wg_launch, 90, 0, 0}, /* Hopper only; unmeasured */
    /* 32 query rows per warp (attention_mma_fa2.cu); unmeasured */
    {"dq-fa2-w4-k64-b2", amma_fa2_dq_k64, 0, 0, 0},
    {"dq-fa2-w4-k32-b2", amma_fa2_dq_k32, 0, 0, 0},
};
const int amma_dq_nvariants = (int)(sizeof amma_dq_variants / sizeof amma_dq_variants[0]);

/* dK/dV: warps, query tile, stages, launch-bound blocks per SM, "-r": K_w
 * and V_w reread from shared memory; the device they need. Entry 0 is the
 * default. */
const AmmaBwdVariant amma_dkdv_variants[] = {
    {"dkdv-w4-q64-s2-b3", amma_bwd_launch<AmmaCfg<64, 4, 64, 2, 3, 1>, false>, 0, 0, 0},
    {"dkdv-w4-q64-s1-b3", amma_bwd_launch<AmmaCfg<64, 4, 64, 1, 3, 1>, false>, 0, 0, 0},
    {"dkdv-w4-q64-s2-b4-r", amma_bwd_launch<AmmaCfg<64, 4, 64, 2, 4, 0>, false>, 0, 0, 0},
    {"dkdv-w8-q64-s2-b2-r", amma_bwd_launch<AmmaCfg<64, 8, 64, 2, 2, 0>, false>, 0, 0, 0},
    {"dkdv-w4-q32-s2-b3", amma_bwd_launch<AmmaCfg<64, 4, 32, 2, 3, 1>, false>, 0, 0, 0},
    {AMMA_DKDV_WG_NAME, amma_dkdv_wg_launch, 90, 0, 0}, /* Hopper only; unmeasured */
    /* dK/dV and dQ in one pass (attention_mma_fused.cu): check_only, fused;
     * unmeasured */
    {"dkdv-fused-w4-q64-b2", amma_fused_q64, 0, 1, 1},
    {"dkdv-fused-w4-q32-b3", amma_fused_q32, 0, 1, 1},
};
const int amma_dkdv_nvariants = (int)(sizeof amma_dkdv_variants / sizeof amma_dkdv_variants[0]);

/* The dQ (DQ) or dK/dV kernel for a's head size: the table's entry
 * `variant` at HSP = 64, one configuration for each other size, and with
 * element-by-element staging (a.vec = 0) one per size; returns the entry's
 * `fused` (1: it wrote dQ too), 0 off the table. At HSP = 128, dQ
 * holds its A operands in registers (HOLD = 1) and dK/dV rereads them
 * (HOLD = 0). */
template <bool DQ>
static int amma_bwd_run(CudaState *st, const AmmaBwdVariant *table, int variant,
                         const AmmaBwdArgs &a)
{
    constexpr int HOLD128 = DQ ? 1 : 0;
    if (!a.vec) {
        switch (attn_hsp(a.C / a.NH)) {
        case 16: amma_bwd_launch<AmmaCfg<16, 4, 64, 1, 1, 1, 0>, DQ>(st, a); return 0;
        case 32: amma_bwd_launch<AmmaCfg<32, 4, 64, 1, 1, 1, 0>, DQ>(st, a); return 0;
        case 64: amma_bwd_launch<AmmaCfg<64, 4, 64, 1, 1, 1, 0>, DQ>(st, a); return 0;
        case 128: amma_bwd_launch<AmmaCfg<128, 4, 64, 1, 1, HOLD128, 0>, DQ>(st, a); return 0;
        }
    }
    switch (attn_hsp(a.C / a.NH)) {
    case 16: amma_bwd_launch<AmmaCfg<16, 4, 64, 2, 4, 1>, DQ>(st, a); break;
    case 32: amma_bwd_launch<AmmaCfg<32, 4, 64, 2, 4, 1>, DQ>(st, a); break;
    case 64: table[variant].launch(st, a); return table[variant].fused;
    case 128: amma_bwd_launch<AmmaCfg<128, 4, 64, 2, 2, HOLD128>, DQ>(st, a); break;
    default: CUDA_FATAL("attention_backward: head size %d > 128 is not supported", a.C / a.NH);
    }
    return 0;
}

void amma_dq_run(CudaState *st, int variant, const AmmaBwdArgs &a)
{
    (void)amma_bwd_run<true>(st, amma_dq_variants, variant, a);
}

int amma_dkdv_run(CudaState *st, int variant, const AmmaBwdArgs &a)
{
    return amma_bwd_run<false>(st, amma_dkdv_variants, variant, a);
}
