/* dev/cuda/attention_mma_fa2.cu — bf16 attention variants in
 * FlashAttention-2's shape (plan and staging: kernels/cuda/attention_mma.cuh),
 * beside the kernels of attention_mma_fwd.cuh and attention_mma_bwd.cuh,
 * which ship until a GPU has ranked them:
 *   amma_fa2_fwd_kernel  forward, 32 query rows per warp (two m16 strips
 *                        sharing every K and V fragment), Q in registers;
 *   amma_fa2_dq_kernel   dQ the same way (dQ alone: S and dP recomputed);
 *   amma_fused_kernel    (attention_mma_fused.cu) dK/dV that also yields dQ
 *                        from per-key-block partials.
 * All three leave through shared memory: a warp writes its bf16 rows to a
 * tile, then 16-byte stores, consecutive lanes on consecutive bytes.
 * Each kernel's shared-memory attributes (size and carveout) are set once,
 * at its first launch (amma_fa2_launch). */
#include "attention_variants.cuh"

/* ---- forward ---- */

/* Shared memory: two stages of [K | V] (BK rows each); Q (ROWS rows)
 * staged into the second, read into registers before it is first
 * refilled; the epilogue's output tile (ROWS rows) over the first. */
template <class Cfg> static constexpr size_t amma_fa2_fwd_smem()
{
    return ((size_t)2 * Cfg::BT + AmmaMax<2 * Cfg::BT, Cfg::ROWS>::v) * Cfg::LD * sizeof(bf16);
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::NT, Cfg::MINB) amma_fa2_fwd_kernel(AmmaFwdArgs a)
{
    constexpr int HSP = Cfg::HSP, BQ = Cfg::ROWS, BK = Cfg::BT, NT = Cfg::NT, LD = Cfg::LD;
    DYN_SMEM(smem);
    bf16 *const tiles = (bf16 *)smem, *const Qs = tiles + 2 * BK * LD;

    const AmmaTile t = amma_tile_begin<Cfg>(a);
    const int T_ = t.T, hs = t.hs, w = t.w, t4 = t.t4, wq0 = t.wr0;
    const int r0 = t.r0; /* strips: rows r0, +8 and r0 + 16, +24 */
    const float sl2 = a.sl2;

    amma_stage_async<HSP, BQ, NT, 1>(Qs, t.q, t.row0);
    amma_stage_pair_async<HSP, BK, NT, 1>(tiles, t.k, t.v, 0);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    uint32_t qf0[HSP / 16][4], qf1[HSP / 16][4]; /* Q of strips 0 and 1 */
    mma_load_a_strip<HSP>(qf0, Qs, LD, 32 * w);
    mma_load_a_strip<HSP>(qf1, Qs, LD, 32 * w + 16);

    float o0[HSP / 8][4], o1[HSP / 8][4];
    mma_strip_zero<HSP>(o0);
    mma_strip_zero<HSP>(o1);
    float m[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY}, l[4] = {0.0f, 0.0f, 0.0f, 0.0f};

    for (int kt = 0; kt < t.n; kt++) {
        const int k0 = kt * BK;
        const bf16 *Ks = amma_kv_step<Cfg>(tiles, t.k, t.v, kt, t.n);
        const bf16 *Vs = Ks + BK * LD;
        if (t.idle || k0 > wq0 + 31) continue; /* every key after this warp's rows */

        /* both strips, even where strip 0 is wholly masked (the last tile
         * or two): the B fragments are shared; strip 0's maxima are finite
         * from earlier tiles, so its P is 0 and its rescale 1 */
        float s0[BK / 8][4], s1[BK / 8][4];
        mma_strip2_areg<BK, HSP>(s0, s1, qf0, qf1, Ks, LD);
        amma_mask<BK, false>(s0, k0, wq0, r0, r0 + 8, t4, T_);
        amma_mask<BK, false>(s1, k0, wq0 + 16, r0 + 16, r0 + 24, t4, T_);
        amma_softmax_step<BK, HSP>(s0, o0, m[0], m[1], l[0], l[1], sl2);
        amma_softmax_step<BK, HSP>(s1, o1, m[2], m[3], l[2], l[3], sl2);
        mma_strip2_acc<HSP, BK>(o0, o1, s0, s1, Vs, LD);
    }

#pragma unroll
    for (int i = 0; i < 4; i++) {
        l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
        l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
    }
    __syncthreads(); /* every warp done with the last K/V tile: the epilogue reuses it */
    bf16 *const Os = tiles + (size_t)32 * w * LD;
    mma_strip_to_smem<HSP>(Os, LD, 0, o0, 1.0f / l[0], 1.0f / l[1]);
    mma_strip_to_smem<HSP>(Os, LD, 16, o1, 1.0f / l[2], 1.0f / l[3]);
    __syncwarp();
    const bool ov = a.C % 8 == 0 && hs % 8 == 0 && (uintptr_t)a.out % 16 == 0;
    if (!t.idle)
        mma_rows_out<32, HSP>(a.out + ((size_t)t.blk.b * T_ + wq0) * a.C + t.blk.h * hs, a.C,
                              T_ - wq0, hs, Os, LD, ov);
    if (t4 == 0) {
        const size_t lrow = ((size_t)t.blk.b * a.NH + t.blk.h) * T_;
#pragma unroll
        for (int i = 0; i < 4; i++)
            if (r0 + 8 * i < T_) a.lse[lrow + r0 + 8 * i] = AMMA_LN2 * (m[i] * sl2 + log2f(l[i]));
    }
}

template <class Cfg> static void amma_fa2_fwd_launch(CudaState *st, const AmmaFwdArgs &a)
{
    static int set = 0;
    amma_fa2_launch(st, amma_fa2_fwd_kernel<Cfg>, a, amma_fa2_fwd_smem<Cfg>(), Cfg::ROWS, a.B,
                    Cfg::NT, set);
}

/* ---- dQ, 32 rows per warp ---- */

/* Shared memory: two stages of [K | V] (BK rows each); [Q | dO] (ROWS rows
 * each) staged into the second, read into registers before it is first
 * refilled; the epilogue's dQ tile (ROWS rows) over the first. */
template <class Cfg> static constexpr size_t amma_fa2_dq_smem()
{
    return ((size_t)2 * Cfg::BT + AmmaMax<2 * Cfg::BT, 2 * Cfg::ROWS>::v) * Cfg::LD *
           sizeof(bf16);
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::NT, Cfg::MINB) amma_fa2_dq_kernel(AmmaBwdArgs a)
{
    constexpr int HSP = Cfg::HSP, BQ = Cfg::ROWS, BK = Cfg::BT, NT = Cfg::NT, LD = Cfg::LD;
    DYN_SMEM(smem);
    bf16 *const tiles = (bf16 *)smem, *const Qs = tiles + 2 * BK * LD, *const dOs = Qs + BQ * LD;

    const AmmaTile t = amma_tile_begin<Cfg, false>(a);
    const int T_ = t.T, C = a.C, hs = t.hs, C3 = 3 * C, w = t.w, t4 = t.t4, wq0 = t.wr0;
    const int r0 = t.r0;
    const float sl2 = a.sl2;
    const AmmaStat zero = {0.0f, 0.0f};
    AmmaStat st[4]; /* rows r0, +8, +16, +24 */
#pragma unroll
    for (int i = 0; i < 4; i++) st[i] = r0 + 8 * i < T_ ? t.stats[r0 + 8 * i] : zero;

    amma_stage_pair_async<HSP, BQ, NT, 1>(Qs, t.q, t.dout, t.row0);
    amma_stage_pair_async<HSP, BK, NT, 1>(tiles, t.k, t.v, 0);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    uint32_t qf0[HSP / 16][4], qf1[HSP / 16][4], of0[HSP / 16][4], of1[HSP / 16][4];
    mma_load_a_strip<HSP>(qf0, Qs, LD, 32 * w);
    mma_load_a_strip<HSP>(qf1, Qs, LD, 32 * w + 16);
    mma_load_a_strip<HSP>(of0, dOs, LD, 32 * w);
    mma_load_a_strip<HSP>(of1, dOs, LD, 32 * w + 16);

    float dq0[HSP / 8][4], dq1[HSP / 8][4];
    mma_strip_zero<HSP>(dq0);
    mma_strip_zero<HSP>(dq1);

    for (int kt = 0; kt < t.n; kt++) {
        const int k0 = kt * BK;
        const bf16 *Ks = amma_kv_step<Cfg>(tiles, t.k, t.v, kt, t.n);
        const bf16 *Vs = Ks + BK * LD;
        if (t.idle || k0 > wq0 + 31) continue;

#pragma unroll
        for (int c = 0; c < BK / 16; c++) { /* keys kc0..kc0+15 */
            const int kc0 = k0 + 16 * c;
            if (kc0 > wq0 + 31) break;
            const bf16 *Kc = Ks + 16 * c * LD, *Vc = Vs + 16 * c * LD;
            float s0[2][4], s1[2][4], dp0[2][4], dp1[2][4];
            mma_strip2_areg<16, HSP>(s0, s1, qf0, qf1, Kc, LD);   /* S = Q K_c^T */
            mma_strip2_areg<16, HSP>(dp0, dp1, of0, of1, Vc, LD); /* dP = dO V_c^T */
            amma_mask<16, false>(s0, kc0, wq0, r0, r0 + 8, t4, T_);
            amma_mask<16, false>(s1, kc0, wq0 + 16, r0 + 16, r0 + 24, t4, T_);
            amma_ds_rows<16>(s0, dp0, st[0], st[1], sl2);
            amma_ds_rows<16>(s1, dp1, st[2], st[3], sl2);
            mma_strip2_acc<HSP, 16>(dq0, dq1, s0, s1, Kc, LD); /* dQ += dS K_c */
        }
    }

    __syncthreads(); /* the epilogue reuses the K/V tiles */
    bf16 *const Ds = tiles + (size_t)32 * w * LD;
    mma_strip_to_smem<HSP>(Ds, LD, 0, dq0, a.scale, a.scale);
    mma_strip_to_smem<HSP>(Ds, LD, 16, dq1, a.scale, a.scale);
    __syncwarp();
    const bool ov = (uintptr_t)a.dqkv % 16 == 0 && hs % 8 == 0 && C % 8 == 0;
    if (!t.idle)
        mma_rows_out<32, HSP>(a.dqkv + ((size_t)t.blk.b * T_ + wq0) * C3 + t.blk.h * hs, C3,
                              T_ - wq0, hs, Ds, LD, ov);
}

template <class Cfg> static void amma_fa2_dq_launch(CudaState *st, const AmmaBwdArgs &a)
{
    static int set = 0;
    amma_fa2_launch(st, amma_fa2_dq_kernel<Cfg>, a, amma_fa2_dq_smem<Cfg>(), Cfg::ROWS, a.nb,
                    Cfg::NT, set);
}

/* The launches the sweep's table (attention_variants.cu) names */
void amma_fa2_fwd_k64(CudaState *st, const AmmaFwdArgs &a)
{
    amma_fa2_fwd_launch<AmmaCfg2<64, 4, 64, 2>>(st, a);
}
void amma_fa2_fwd_k32(CudaState *st, const AmmaFwdArgs &a)
{
    amma_fa2_fwd_launch<AmmaCfg2<64, 4, 32, 2>>(st, a);
}
void amma_fa2_dq_k64(CudaState *st, const AmmaBwdArgs &a)
{
    amma_fa2_dq_launch<AmmaCfg2<64, 4, 64, 2>>(st, a);
}
void amma_fa2_dq_k32(CudaState *st, const AmmaBwdArgs &a)
{
    amma_fa2_dq_launch<AmmaCfg2<64, 4, 32, 2>>(st, a);
}
