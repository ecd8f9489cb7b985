/* dev/cuda/attention_variants.cuh — private to dev/cuda/attention*.cu: the
 * bf16 attention kernels' configurations and alternatives that do not ship,
 * beside the ones that do (kernels/cuda/attention_mma*.cuh, whose plan,
 * staging and shared steps they use). Linked only into build/check_kernels
 * and build/check_kernels_emu, where check_attention.c checks every one
 * against the cpu and check_sweep.c times them (attention_variants.cu
 * holds the table). The kernels here:
 *   attention_mma_fwd_wg.cu, _bwd_wg.cu  forward, dQ and dK/dV on Hopper's
 *       wgmma (sm_90a; attention_mma_wg.cuh, wgmma.cuh);
 *   attention_mma_fa2.cu    forward and dQ with 32 query rows per warp;
 *   attention_mma_fa2_bwd.cu  dK/dV with 32 key rows per warp, and with
 *       it writing dS for a dQ pass that does not recompute S and dP;
 *   attention_mma_fused.cu  dK/dV that writes dQ too, from per-key-block
 *       partials.
 * The last two keep their dS tiles or partials in the variants' workspace
 * (amma_variant_workspace, attention_variants.cu).
 * None has run on a GPU yet (dev/notes/attention-kernels.md). */
#ifndef DEV_CUDA_ATTENTION_VARIANTS_CUH
#define DEV_CUDA_ATTENTION_VARIANTS_CUH

#include "kernels/cuda/attention_mma_bwd.cuh"
#include "kernels/cuda/attention_mma_fwd.cuh"

template <int A, int B_> struct AmmaMax {
    static constexpr int v = A > B_ ? A : B_;
};

/* The FlashAttention-2 shape: W warps of 32 rows (ROWS = 32 W), tiles of BT
 * rows of the other side, always cp.async double-buffered (ST = 2), the
 * warp's A operands held in registers (HOLD), 16-byte staging (VEC). */
template <int HSP_, int W_, int BT_, int MINB_> struct AmmaCfg2 {
    static constexpr int HSP = HSP_, W = W_, ROWS = 32 * W_, NT = 32 * W_, BT = BT_;
    static constexpr int ST = 2, MINB = MINB_, HOLD = 1, VEC = 1, LD = HSP_ + 8;
    static_assert(HSP % 16 == 0 && BT % 16 == 0, "tile shape");
};

/* Set kern's dynamic shared memory and a carveout that gives shared memory
 * all it can (the L1 share these kernels do not use) once, at the first
 * launch of each kernel (`set` is the kernel's own flag), then launch as
 * amma_launch does. */
template <class Args>
static void amma_fa2_launch(CudaState *st, void (*kern)(Args), const Args &a, size_t smem,
                            int rows, int nseq, int threads, int &set)
{
    attn_check_smem(st, smem, "attention", 64);
    if (!set) {
        CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)smem));
        CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        (int)cudaSharedmemCarveoutMaxShared));
        set = 1;
    }
    const size_t blocks = (size_t)ceil_div(a.T, rows) * a.NH * nseq;
    if (blocks > 2147483647u) CUDA_FATAL("attention: %zu blocks exceed the grid's x limit", blocks);
    LAUNCH(kern, (unsigned)blocks, threads, smem, st->stream, a);
}

/* attention_mma_fwd_wg.cu, attention_mma_bwd_wg.cu: the wgmma kernels;
 * fatal on any device but compute 9.0 */
#define AMMA_FWD_WG_NAME "fwd-wgmma-w4-k64-s2-b3"
#define AMMA_DQ_WG_NAME "dq-wgmma-w4-k64-s2-b3"
#define AMMA_DKDV_WG_NAME "dkdv-wgmma-w4-q64-s2-b2"
void amma_fwd_wg_launch(CudaState *st, const AmmaFwdArgs &a);
void amma_dq_wg_launch(CudaState *st, const AmmaBwdArgs &a);
void amma_dkdv_wg_launch(CudaState *st, const AmmaBwdArgs &a);
/* attention_mma_fa2.cu: forward and dQ with 32 query rows per warp */
void amma_fa2_fwd_k64(CudaState *st, const AmmaFwdArgs &a);
void amma_fa2_fwd_k32(CudaState *st, const AmmaFwdArgs &a);
void amma_fa2_dq_k64(CudaState *st, const AmmaBwdArgs &a);
void amma_fa2_dq_k32(CudaState *st, const AmmaBwdArgs &a);
/* attention_mma_fa2_bwd.cu: dK/dV with 32 key rows per warp; _ds_: that
 * kernel writing dS, then dQ from dS (no dQ kernel runs after it) */
void amma_fa2_dkdv_q64(CudaState *st, const AmmaBwdArgs &a);
void amma_fa2_dkdv_q32(CudaState *st, const AmmaBwdArgs &a);
void amma_fa2_ds_q64(CudaState *st, const AmmaBwdArgs &a);
/* attention_mma_fused.cu: dK/dV with dQ from per-key-block partials */
void amma_fused_q64(CudaState *st, const AmmaBwdArgs &a);
void amma_fused_q32(CudaState *st, const AmmaBwdArgs &a);

/* attention_variants.cu: one device buffer, at least bytes long, for the
 * variants' data outside the memory plan (what names it in the message
 * when cudaMalloc fails); grown, never shrunk (the stream drained before
 * a buffer in use is freed); one for the process, as the checker runs one
 * backend at a time. _free: before that backend closes. */
void *amma_variant_workspace(CudaState *st, size_t bytes, const char *what);
void amma_variant_workspace_free(void);

#endif
