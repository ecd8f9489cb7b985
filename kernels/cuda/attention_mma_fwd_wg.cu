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
 * out as mma.sync's, so the online softmax is the mma.sync kernel's code.
 *
 * What changes against attention_mma_fwd.cu: K and V are staged in the
 * core-matrix layout wgmma reads (wgmma.cuh) rather than padded rows; Q
 * stays in padded rows (read once into registers by ldmatrix); and the
 * whole warpgroup takes part in every product, so a warp whose rows all
 * precede a tile's keys masks the tile to p = 0 instead of skipping it
 * (p = 2^-inf = 0 adds exact zeros; the row maxima stay finite because key
 * 0 is valid for every row). Unmeasured on a GPU (docs/attention-kernels.md). */
#include "attention_mma.cuh"

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
    bf16 *const Qs = (bf16 *)(smem + attn_round((size_t)4 * TILE * sizeof(bf16)));

    const int T_ = a.T, hs = a.C / a.NH, C3 = 3 * a.C;
    const AmmaBlock blk = amma_block((T_ + BQ - 1) / BQ, a.NH, a.B, true);
    const int q0 = blk.tile * BQ;
    const bf16 *seq = a.qkv + (size_t)blk.b * T_ * C3 + blk.h * hs;
    const AmmaSrc Qsrc = {seq, C3, T_, hs}, Ksrc = {seq + a.C, C3, T_, hs},
                  Vsrc = {seq + 2 * a.C, C3, T_, hs};
    const int w = threadIdx.x / 32, g = threadIdx.x % 32 / 4, t4 = threadIdx.x % 4;
    const int wq0 = q0 + 16 * w;
    const int r0 = wq0 + g, r1 = r0 + 8;
    const int last = q0 + BQ < T_ ? q0 + BQ : T_;
    const int nK = (last + BK - 1) / BK;
    const float sl2 = a.sl2;

    amma_stage_async<HSP, BQ, NT, 1>(Qs, Qsrc, q0);
    amma_stage_core_async<HSP, BK, NT>(tiles, Ksrc, 0);
    amma_stage_core_async<HSP, BK, NT>(tiles + TILE, Vsrc, 0);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    uint32_t qf[HSP / 16][4];
    mma_load_a_strip<HSP>(qf, Qs, LD, 16 * w);

    float o[HSP / 8][4];
    mma_strip_zero<HSP>(o);
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;

    for (int kt = 0; kt < nK; kt++) {
        const int k0 = kt * BK;
        if (kt > 0) cp_async_wait<0>(); /* this thread's part of tile kt */
        __syncthreads(); /* tile kt complete; every warp done with kt - 1 */
        if (kt + 1 < nK) {
            bf16 *next = tiles + (size_t)((kt + 1) & 1) * 2 * TILE;
            amma_stage_core_async<HSP, BK, NT>(next, Ksrc, k0 + BK);
            amma_stage_core_async<HSP, BK, NT>(next + TILE, Vsrc, k0 + BK);
            cp_async_commit();
        }
        const bf16 *Ks = tiles + (size_t)(kt & 1) * 2 * TILE, *Vs = Ks + TILE;

        float s[BK / 8][4]; /* S = Q_w K^T: K-major B, k = head dim */
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < HSP / 16; kk++)
            wgmma_m64n64k16_rs<0>(s, qf[kk], wgmma_desc(Ks + 16 * kk * 8, 128, HSP * 16), kk > 0);
        wgmma_commit();
        wgmma_wait<0>();
        wgmma_hold<BK / 2>(&s[0][0]);
        wgmma_hold<HSP / 4>(&qf[0][0]);

        /* mask where a key can be past a row of the warp or past T (whole
         * tiles past the warp's rows included: p = 0 there) */
        if (k0 + BK - 1 > wq0 || k0 + BK > T_) {
#pragma unroll
            for (int j = 0; j < BK / 8; j++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const int col = k0 + 8 * j + 2 * t4 + (i & 1), row = i < 2 ? r0 : r1;
                    if (col > row || col >= T_) s[j][i] = -INFINITY;
                }
        }
        float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int j = 0; j < BK / 8; j++) {
            mx0 = fmaxf(mx0, fmaxf(s[j][0], s[j][1]));
            mx1 = fmaxf(mx1, fmaxf(s[j][2], s[j][3]));
        }
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
        const float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);
        const float a0 = exp2_approx((m0 - n0) * sl2), a1 = exp2_approx((m1 - n1) * sl2);
        m0 = n0;
        m1 = n1;
        const float nb0 = -n0 * sl2, nb1 = -n1 * sl2;
        float sum0 = 0.0f, sum1 = 0.0f;
#pragma unroll
        for (int j = 0; j < BK / 8; j++) {
            s[j][0] = exp2_approx(fmaf(s[j][0], sl2, nb0));
            s[j][1] = exp2_approx(fmaf(s[j][1], sl2, nb0));
            s[j][2] = exp2_approx(fmaf(s[j][2], sl2, nb1));
            s[j][3] = exp2_approx(fmaf(s[j][3], sl2, nb1));
            sum0 += s[j][0] + s[j][1];
            sum1 += s[j][2] + s[j][3];
        }
        l0 = l0 * a0 + sum0;
        l1 = l1 * a1 + sum1;
#pragma unroll
        for (int j = 0; j < HSP / 8; j++) {
            o[j][0] *= a0;
            o[j][1] *= a0;
            o[j][2] *= a1;
            o[j][3] *= a1;
        }
        /* O_w += P V: P (bf16) from the score registers, V N-major, k = key */
        uint32_t pa[BK / 16][4];
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) mma_a_from_c(pa[kk], s[2 * kk], s[2 * kk + 1]);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++)
            wgmma_m64n64k16_rs<1>(o, pa[kk], wgmma_desc(Vs + 16 * kk * HSP, HSP * 16, 128), 1);
        wgmma_commit();
        wgmma_wait<0>();
        wgmma_hold<HSP / 2>(&o[0][0]);
        wgmma_hold<BK / 4>(&pa[0][0]);
    }

    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    mma_strip_store<HSP>(a.out + (size_t)blk.b * T_ * a.C + blk.h * hs, a.C, r0, T_, hs, o,
                         1.0f / l0, 1.0f / l1);
    if (t4 == 0) {
        const size_t lrow = ((size_t)blk.b * a.NH + blk.h) * T_;
        if (r0 < T_) a.lse[lrow + r0] = AMMA_LN2 * (m0 * sl2 + log2f(l0));
        if (r1 < T_) a.lse[lrow + r1] = AMMA_LN2 * (m1 * sl2 + log2f(l1));
    }
#else
    (void)a; /* not sm_90a: the host refuses the launch (amma_fwd_wg_launch) */
#endif
}

/* The launch: refused, with the reason, on a device other than compute
 * capability 9.0 (the kernel exists only in the sm_90a cubin). */
template <class Cfg> static void amma_fwd_wg_launch_cfg(CudaState *st, const AmmaFwdArgs &a)
{
    if (st->cc != 90)
        CUDA_FATAL("attention_forward: variant %s needs a compute capability 9.0 GPU (wgmma, "
                   "sm_90a); this one is %d.%d",
                   AMMA_FWD_WG_NAME, st->cc / 10, st->cc % 10);
    if (!a.vec || a.C / a.NH > 64 || a.C / a.NH <= 32)
        CUDA_FATAL("attention_forward: variant %s is for head sizes padded to 64 on the 16-byte "
                   "path only",
                   AMMA_FWD_WG_NAME);
    const size_t smem = amma_fwd_wg_smem<Cfg>();
    amma_check_smem(st, smem, "attention_forward", Cfg::HSP);
    auto kern = amma_fwd_wg_kernel<Cfg>;
    attn_set_smem(kern, smem);
    const size_t blocks = (size_t)ceil_div(a.T, Cfg::ROWS) * a.NH * a.B;
    if (blocks > 2147483647u)
        CUDA_FATAL("attention_forward: %zu blocks exceed the grid's x limit", blocks);
    LAUNCH(kern, (unsigned)blocks, Cfg::NT, smem, st->stream, a);
}

void amma_fwd_wg_launch(CudaState *st, const AmmaFwdArgs &a)
{
    amma_fwd_wg_launch_cfg<AmmaCfg<64, 4, 64, 2, 3>>(st, a);
}
