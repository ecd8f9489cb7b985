/* dev/cuda/attention_mma_wg.cuh — private to attention_mma_fwd_wg.cu and
 * attention_mma_bwd_wg.cu: what the Hopper (wgmma, sm_90a) attention
 * variants add to attention_mma.cuh's shared steps: staging tiles into
 * wgmma's core-matrix layout by cp.async, the products and their
 * fence/commit/wait sequences, and the host's refusal off compute
 * capability 9.0. The per-warp softmax, P/dS and store steps they share
 * with the mma.sync kernels stay in attention_mma.cuh. */
#ifndef DEV_CUDA_ATTENTION_MMA_WG_CUH
#define DEV_CUDA_ATTENTION_MMA_WG_CUH

#include "attention_variants.cuh"
#include "wgmma.cuh"

/* This thread's cp.async copies landed (wait_group 0) and made visible to
 * the async proxy the wgmma products read shared memory in
 * (wgmma_proxy_fence); the caller's barrier then publishes the tiles. */
__device__ __forceinline__ void amma_wg_landed(void)
{
    cp_async_wait<0>();
    wgmma_proxy_fence();
}

/* The wgmma variants (attention_mma_fwd_wg.cu, attention_mma_bwd_wg.cu):
 * an R x HSP tile into the core-matrix layout by cp.async (16-byte
 * pieces; vec path only): piece (r, d0..d0+7) to byte
 * wgmma_core_off<HSP>(r, d0). Piece p of the tile is row 8 (p / HSP) +
 * p % 8, columns 8 (p / 8 % (HSP / 8)) on: 8 consecutive threads fill one
 * core matrix (128 contiguous bytes, no bank conflict) and a warp reads 4
 * whole 64-byte row segments of 8 rows. The caller commits, waits and
 * fences (amma_wg_landed) and syncs. */
template <int HSP, int R, int NT>
__device__ __forceinline__ void amma_stage_core_async(bf16 *dst, AmmaSrc s, int t0)
{
    static_assert(R % 8 == 0 && R * HSP / 8 % NT == 0, "whole core matrices, whole rounds");
#pragma unroll
    for (int i = 0; i < R * HSP / 8 / NT; i++) {
        const int p = (int)threadIdx.x + i * NT;
        const int r = p / HSP * 8 + p % 8, d0 = p / 8 % (HSP / 8) * 8, t = t0 + r;
        const bool in = t < s.T && d0 < s.hs;
        cp_async<16>((unsigned char *)dst + wgmma_core_off<HSP>(r, d0),
                     s.row + (in ? (size_t)t * s.ld + d0 : 0), in ? 16 : 0);
    }
}

/* Two R x HSP core-layout tiles side by side, [s0 | s1] at dst (s1's R HSP
 * elements on), rows t0.. of each, by cp.async (the caller commits). */
template <int HSP, int R, int NT>
__device__ __forceinline__ void amma_stage_core_pair_async(bf16 *dst, AmmaSrc s0, AmmaSrc s1,
                                                           int t0)
{
    amma_stage_core_async<HSP, R, NT>(dst, s0, t0);
    amma_stage_core_async<HSP, R, NT>(dst + R * HSP, s1, t0);
}

/* amma_kv_step for the wgmma forward and dQ: stage(s) is stage s of two
 * [K | V] tiles in the core layout (BT x HSP each); waits for tile kt,
 * syncs, issues tile kt + 1 into the other stage and returns tile kt's K
 * (V follows, BT HSP elements on). All threads call it. */
template <class Cfg, class Stage>
__device__ __forceinline__ const bf16 *amma_wg_kv_step(Stage stage, AmmaSrc Ksrc, AmmaSrc Vsrc,
                                                       int kt, int nK)
{
    constexpr int HSP = Cfg::HSP, BK = Cfg::BT, NT = Cfg::NT;
    const int k0 = kt * BK;
    if (kt > 0) amma_wg_landed(); /* this thread's part of tile kt */
    __syncthreads();              /* tile kt complete; every warp done with kt - 1 */
    if (kt + 1 < nK) {
        bf16 *next = stage((kt + 1) & 1);
        amma_stage_core_async<HSP, BK, NT>(next, Ksrc, k0 + BK);
        amma_stage_core_async<HSP, BK, NT>(next + BK * HSP, Vsrc, k0 + BK);
        cp_async_commit();
    }
    return stage(kt & 1);
}

/* A warp's 16 x N accumulator strip c (N / 8 pieces) as N / 16 A operands
 * (bf16) of the next product. */
template <int N>
__device__ __forceinline__ void amma_wg_a_from_c(uint32_t a[][4], const float c[][4])
{
#pragma unroll
    for (int kk = 0; kk < N / 16; kk++) mma_a_from_c(a[kk], c[2 * kk], c[2 * kk + 1]);
}

/* The m64n64k16 steps of one product with A from registers: d (+)= A B
 * over k = 0..63 in steps of 16. KMAJOR: B is tile^T (k = head dim, the
 * tile's column); else B is the tile itself (k = tile row), N-major.
 * ACC 0: the first step overwrites d. The caller fences and commits. */
template <int HSP, bool KMAJOR, bool ACC>
__device__ __forceinline__ void amma_wg_product(float d[HSP / 8][4], const uint32_t a[4][4],
                                                const bf16 *tile)
{
    static_assert(HSP == 64, "m64n64k16: N = head size = tile rows = 64");
#pragma unroll
    for (int kk = 0; kk < 4; kk++) {
        if (KMAJOR) /* next 16 head-dim columns: 2 core matrices on */
            wgmma_m64n64k16_rs<0>(d, a[kk], wgmma_desc(tile + 16 * kk * 8, 128, HSP * 16),
                                  ACC || kk > 0);
        else /* next 16 tile rows: 2 row groups on */
            wgmma_m64n64k16_rs<1>(d, a[kk], wgmma_desc(tile + 16 * kk * HSP, HSP * 16, 128),
                                  ACC || kk > 0);
    }
}

/* The backward's two score products in one group: s = A0 tile0^T and
 * p = A1 tile1^T (N = tile rows wide; A0, A1 the warp's own operands in
 * registers, the tiles K-major: k = head dim); fenced, committed and
 * waited for, the registers (A's too) held past the wait. */
template <int HSP, int N>
__device__ __forceinline__ void amma_wg_scores2(float s[N / 8][4], uint32_t a0[HSP / 16][4],
                                                const bf16 *tile0, float p[N / 8][4],
                                                uint32_t a1[HSP / 16][4], const bf16 *tile1)
{
    wgmma_fence();
    amma_wg_product<HSP, true, false>(s, a0, tile0);
    amma_wg_product<HSP, true, false>(p, a1, tile1);
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_hold<N / 2>(&s[0][0]);
    wgmma_hold<N / 2>(&p[0][0]);
    wgmma_hold<HSP / 4>(&a0[0][0]);
    wgmma_hold<HSP / 4>(&a1[0][0]);
}

/* d += A tile, one whole product: A is c, a warp's 16 x N accumulator
 * strip rounded to bf16 (P or dS), the tile N-major (k = tile row);
 * fenced, committed and waited for, the registers held past the wait. */
template <int HSP, int N>
__device__ __forceinline__ void amma_wg_acc_c(float d[HSP / 8][4], const float c[][4],
                                              const bf16 *tile)
{
    uint32_t a[N / 16][4];
    amma_wg_a_from_c<N>(a, c);
    wgmma_fence();
    amma_wg_product<HSP, false, true>(d, a, tile);
    wgmma_commit();
    wgmma_wait<0>();
    wgmma_hold<HSP / 2>(&d[0][0]);
    wgmma_hold<N / 4>(&a[0][0]);
}

/* The wgmma variants' refusal (op: the op, name: the variant), with the
 * reason, on a device other than compute capability 9.0 (their kernels
 * exist only in the sm_90a cubin) or off the 16-byte path (vec) at head
 * sizes C / NH other than 33..64. */
static inline void amma_wg_check(const CudaState *st, int vec, int C, int NH, const char *op,
                                 const char *name)
{
    if (st->cc != 90)
        CUDA_FATAL("%s: variant %s needs a compute capability 9.0 GPU (wgmma, sm_90a); this one "
                   "is %d.%d",
                   op, name, st->cc / 10, st->cc % 10);
    if (!vec || C / NH > 64 || C / NH <= 32)
        CUDA_FATAL("%s: variant %s is for head sizes padded to 64 on the 16-byte path only", op,
                   name);
}

#endif
