/* dev/cuda/attention_variants.cu — the sweep's table: every compiled
 * configuration of the bf16 attention kernels at GPT-2's padded head size
 * (HSP = 64), and the calls that run one (check.h: attn_variant_*).
 * Linked only into build/check_kernels and build/check_kernels_emu.
 *
 * Entry 0 of each kernel is the configuration ./train_gpt ships
 * (kernels/cuda/attention_mma.cuh: AmmaFwdCfg, AmmaDqCfg, AmmaDkdvCfg;
 * the static_asserts below keep its name honest). The product has no
 * switch among these: when a GPU ranks another entry first (check_kernels
 * --sweep, dev/gpu_check section 3b), it is promoted by moving it, its
 * fields into the shipped alias (or its kernel file into kernels/cuda/),
 * and the loser here, or deleted once it has lost on a GPU. Names: kernel,
 * warps, the streamed tile's rows (k: keys, q: queries), cp.async stages,
 * launch-bound blocks per SM, "-r": the warp's A operands reread from
 * shared memory instead of held in registers. */
#include <type_traits>

#include "attention_variants.cuh"
#include "attention_variants.h"

struct AmmaFwdVariant {
    const char *name;
    AmmaFwdLaunch launch;
    int cc; /* 0: any device; else only compute capability cc / 10 . cc % 10 */
};
struct AmmaBwdVariant {
    const char *name;
    AmmaBwdLaunch launch;
    int cc;    /* as AmmaFwdVariant's */
    int fused; /* dK/dV only, 1: writes dQ as well (no dQ kernel runs after it) */
};

template <class Cfg, bool DQ> static void av_bwd(CudaState *st, const AmmaBwdArgs &a)
{
    amma_bwd_launch<Cfg, DQ>(st, a);
}

static_assert(std::is_same<AmmaFwdCfg<64>, AmmaCfg<64, 4, 64, 2, 4>>::value, "fwd entry 0");
static_assert(std::is_same<AmmaDqCfg<64>, AmmaCfg<64, 4, 64, 2, 4>>::value, "dq entry 0");
static_assert(std::is_same<AmmaDkdvCfg<64>, AmmaCfg<64, 4, 64, 2, 3>>::value, "dkdv entry 0");

static const AmmaFwdVariant amma_fwd_variants[] = {
    {"fwd-w4-k64-s2-b4", amma_fwd_run, 0}, /* ships */
    {"fwd-w4-k64-s2-b3", amma_fwd_launch<AmmaCfg<64, 4, 64, 2, 3>>, 0},
    {"fwd-w4-k64-s1-b3", amma_fwd_launch<AmmaCfg<64, 4, 64, 1, 3>>, 0},
    {"fwd-w8-k64-s2-b2", amma_fwd_launch<AmmaCfg<64, 8, 64, 2, 2>>, 0},
    {"fwd-w4-k32-s2-b4", amma_fwd_launch<AmmaCfg<64, 4, 32, 2, 4>>, 0},
    {"fwd-w4-k128-s2-b2", amma_fwd_launch<AmmaCfg<64, 4, 128, 2, 2>>, 0},
    {AMMA_FWD_WG_NAME, amma_fwd_wg_launch, 90}, /* Hopper only */
    {"fwd-fa2-w4-k64-b2", amma_fa2_fwd_k64, 0}, /* 32 query rows per warp */
    {"fwd-fa2-w4-k32-b2", amma_fa2_fwd_k32, 0},
};

static const AmmaBwdVariant amma_dq_variants[] = {
    {"dq-w4-k64-s2-b4", amma_dq_run, 0, 0}, /* ships */
    {"dq-w4-k64-s1-b4", av_bwd<AmmaCfg<64, 4, 64, 1, 4, 1>, true>, 0, 0},
    {"dq-w8-k64-s2-b2", av_bwd<AmmaCfg<64, 8, 64, 2, 2, 1>, true>, 0, 0},
    {"dq-w4-k32-s2-b4", av_bwd<AmmaCfg<64, 4, 32, 2, 4, 1>, true>, 0, 0},
    {"dq-w4-k64-s2-b4-r", av_bwd<AmmaCfg<64, 4, 64, 2, 4, 0>, true>, 0, 0},
    {AMMA_DQ_WG_NAME, amma_dq_wg_launch, 90, 0}, /* Hopper only */
    {"dq-fa2-w4-k64-b2", amma_fa2_dq_k64, 0, 0}, /* 32 query rows per warp */
    {"dq-fa2-w4-k32-b2", amma_fa2_dq_k32, 0, 0},
};

static const AmmaBwdVariant amma_dkdv_variants[] = {
    {"dkdv-w4-q64-s2-b3", amma_dkdv_run, 0, 0}, /* ships */
    {"dkdv-w4-q64-s1-b3", av_bwd<AmmaCfg<64, 4, 64, 1, 3, 1>, false>, 0, 0},
    {"dkdv-w4-q64-s2-b4-r", av_bwd<AmmaCfg<64, 4, 64, 2, 4, 0>, false>, 0, 0},
    {"dkdv-w8-q64-s2-b2-r", av_bwd<AmmaCfg<64, 8, 64, 2, 2, 0>, false>, 0, 0},
    {"dkdv-w4-q32-s2-b3", av_bwd<AmmaCfg<64, 4, 32, 2, 3, 1>, false>, 0, 0},
    {AMMA_DKDV_WG_NAME, amma_dkdv_wg_launch, 90, 0}, /* Hopper only */
    /* dK/dV and dQ in one pass, dQ from partials outside the memory plan */
    {"dkdv-fused-w4-q64-b2", amma_fused_q64, 0, 1},
    {"dkdv-fused-w4-q32-b3", amma_fused_q32, 0, 1},
    {"dkdv-fa2-w4-q64-b2", amma_fa2_dkdv_q64, 0, 0}, /* 32 key rows per warp */
    {"dkdv-fa2-w4-q32-b2", amma_fa2_dkdv_q32, 0, 0},
    /* that kernel writing dS (outside the memory plan), then dQ from dS */
    {"dkdv-fa2-ds-w4-q64-b2", amma_fa2_ds_q64, 0, 1},
};

#define AV_COUNT(t) (int)(sizeof t / sizeof t[0])

extern "C" int attn_variant_count(int kernel)
{
    switch (kernel) {
    case ATTN_FWD: return AV_COUNT(amma_fwd_variants);
    case ATTN_DQ: return AV_COUNT(amma_dq_variants);
    case ATTN_DKDV: return AV_COUNT(amma_dkdv_variants);
    default: return 0;
    }
}

extern "C" const char *attn_variant_name(int kernel, int i)
{
    if (i < 0 || i >= attn_variant_count(kernel)) return NULL;
    return kernel == ATTN_FWD  ? amma_fwd_variants[i].name
           : kernel == ATTN_DQ ? amma_dq_variants[i].name
                               : amma_dkdv_variants[i].name;
}

extern "C" int attn_variant_fused(int kernel, int i)
{
    return kernel == ATTN_DKDV && i >= 0 && i < attn_variant_count(kernel) &&
           amma_dkdv_variants[i].fused;
}

extern "C" int attn_variant_usable(Backend *be, int kernel, int i)
{
    if (i < 0 || i >= attn_variant_count(kernel)) return 0;
    const int cc = kernel == ATTN_FWD  ? amma_fwd_variants[i].cc
                   : kernel == ATTN_DQ ? amma_dq_variants[i].cc
                                       : amma_dkdv_variants[i].cc;
    return !cc || cc == cuda_state(be)->cc;
}

/* Whether a table's entry applies: bf16 at head sizes padded to 64 on the
 * 16-byte path (the tables hold that size only); elsewhere, and for entry
 * 0, the backend's own op runs, as it would in ./train_gpt. */
static int av_applies(Backend *be, const void *p, const void *q, int C, int NH)
{
    const int hs = NH > 0 && C % NH == 0 ? C / NH : 0;
    return cuda_state(be)->bf16 && hs && attn_hsp(hs) == 64 && amma_vec_ok(p, C, hs) &&
           amma_vec_ok(q, C, hs);
}

extern "C" void attn_variant_forward(Backend *be, int fwd, void *out, float *lse, const void *qkv,
                                     int B, int T, int C, int NH)
{
    if (fwd <= 0 || fwd >= attn_variant_count(ATTN_FWD) || B <= 0 || T <= 0 ||
        !av_applies(be, qkv, qkv, C, NH)) {
        be->ops->attention_forward(be, out, lse, qkv, B, T, C, NH, NH);
        return;
    }
    CudaState *st = cuda_state(be);
    attn_check_heads(st, "attention_forward", C, NH, NH); /* the variants: KVH = NH only */
    amma_forward(st, amma_fwd_variants[fwd].launch, (bf16 *)out, lse, (const bf16 *)qkv, B, T,
                 C, NH, NH);
}

extern "C" void attn_variant_backward(Backend *be, int dq, int dkdv, void *dqkv, const void *dout,
                                      const void *qkv, const void *out, const float *lse, int B,
                                      int T, int C, int NH)
{
    const int ok = dq >= 0 && dq < attn_variant_count(ATTN_DQ) && dkdv >= 0 &&
                   dkdv < attn_variant_count(ATTN_DKDV);
    if (!ok || (dq == 0 && dkdv == 0) || B <= 0 || T <= 0 || !av_applies(be, qkv, dout, C, NH)) {
        be->ops->attention_backward(be, dqkv, dout, qkv, out, lse, B, T, C, NH, NH);
        return;
    }
    CudaState *st = cuda_state(be);
    attn_check_heads(st, "attention_backward", C, NH, NH); /* the variants: KVH = NH only */
    const AmmaBwdVariant &kv = amma_dkdv_variants[dkdv];
    amma_backward(st, kv.fused ? NULL : amma_dq_variants[dq].launch, kv.launch, (bf16 *)dqkv,
                  (const bf16 *)dout, (const bf16 *)qkv, (const bf16 *)out, lse, B, T, C, NH,
                  NH);
}

static void *amma_ws;
static size_t amma_ws_bytes;

void *amma_variant_workspace(CudaState *st, size_t bytes, const char *what)
{
    if (bytes <= amma_ws_bytes) return amma_ws;
    CUDA_CHECK(cudaStreamSynchronize(st->stream));
    amma_variant_workspace_free();
    if (cudaMalloc(&amma_ws, bytes) != cudaSuccess)
        CUDA_FATAL("attention_backward (a variant): cannot allocate %zu bytes for %s", bytes,
                   what);
    amma_ws_bytes = bytes;
    return amma_ws;
}

void amma_variant_workspace_free(void)
{
    if (amma_ws) CUDA_CHECK(cudaFree(amma_ws));
    amma_ws = NULL, amma_ws_bytes = 0;
}

extern "C" void attn_variants_close(void) { amma_variant_workspace_free(); }
