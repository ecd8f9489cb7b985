/* kernels/cuda/attention_mma.cu — the bf16 attention's entry points
 * (attention.cu and attention_backward.cu send bf16 runs here; their own
 * kernels are the fp32 path) and the choice among its compiled variants.
 *
 * Every tunable of the three main kernels (warps per block, tile sizes,
 * pipeline stages, launch bounds, operands held in registers or reread) is
 * a compiled configuration at GPT-2's head size (HSP = 64); the tables in
 * attention_mma_fwd.cu and attention_mma_bwd.cu name them, entry 0 the
 * default. The backend keeps one choice per kernel (CudaState.attn_variant),
 * taken at open from TRAIN_GPT_ATTN_VARIANT and changed by
 * cuda_attn_variant_set (build/check_kernels checks every variant;
 * check_timing's sweep times them). Other head sizes have one
 * configuration each. The kernels' plan: attention_mma.cuh. */
#include <string.h>

#include "attention_mma.cuh"

static int amma_count(int kernel)
{
    switch (kernel) {
    case CUDA_ATTN_FWD: return amma_fwd_nvariants;
    case CUDA_ATTN_DQ: return amma_dq_nvariants;
    case CUDA_ATTN_DKDV: return amma_dkdv_nvariants;
    default: return 0;
    }
}

static const char *amma_name(int kernel, int i)
{
    if (i < 0 || i >= amma_count(kernel)) return NULL;
    switch (kernel) {
    case CUDA_ATTN_FWD: return amma_fwd_variants[i].name;
    case CUDA_ATTN_DQ: return amma_dq_variants[i].name;
    default: return amma_dkdv_variants[i].name;
    }
}

extern "C" int cuda_attn_variant_count(int kernel) { return amma_count(kernel); }

extern "C" const char *cuda_attn_variant_name(int kernel, int i) { return amma_name(kernel, i); }

extern "C" int cuda_attn_variant_fused(int kernel, int i)
{
    return kernel == CUDA_ATTN_DKDV && i >= 0 && i < amma_dkdv_nvariants &&
           amma_dkdv_variants[i].fused;
}

extern "C" int cuda_attn_variant_get(Backend *be, int kernel)
{
    return kernel >= 0 && kernel < CUDA_ATTN_KERNELS ? cuda_state(be)->attn_variant[kernel] : -1;
}

/* The compute capability variant i of kernel needs (0: any; i in range). */
static int amma_cc(int kernel, int i)
{
    switch (kernel) {
    case CUDA_ATTN_FWD: return amma_fwd_variants[i].cc;
    case CUDA_ATTN_DQ: return amma_dq_variants[i].cc;
    default: return amma_dkdv_variants[i].cc;
    }
}

/* Whether variant i of kernel is check_only (i in range): its memory is
 * outside the plan, so only cuda_attn_variant_set may choose it. */
static int amma_check_only(int kernel, int i)
{
    switch (kernel) {
    case CUDA_ATTN_FWD: return amma_fwd_variants[i].check_only;
    case CUDA_ATTN_DQ: return amma_dq_variants[i].check_only;
    default: return amma_dkdv_variants[i].check_only;
    }
}

/* Whether this device can run variant i of kernel (range-checked). */
static int amma_usable(const CudaState *st, int kernel, int i)
{
    if (i < 0 || i >= amma_count(kernel)) return 0;
    return !amma_cc(kernel, i) || amma_cc(kernel, i) == st->cc;
}

extern "C" int cuda_attn_variant_usable(Backend *be, int kernel, int i)
{
    return amma_usable(cuda_state(be), kernel, i);
}

extern "C" int cuda_attn_variant_set(Backend *be, int kernel, int i)
{
    if (!amma_usable(cuda_state(be), kernel, i)) return -1;
    cuda_state(be)->attn_variant[kernel] = i;
    return 0;
}

/* TRAIN_GPT_ATTN_VARIANT: comma-separated variant names, at most one per
 * kernel; the kernels it does not name keep their default. Called once
 * st->cc is known: a variant this device cannot run is refused. */
int amma_variants_from_env(CudaState *st, char *err, size_t err_len)
{
    for (int k = 0; k < CUDA_ATTN_KERNELS; k++) st->attn_variant[k] = 0;
    const char *env = getenv("TRAIN_GPT_ATTN_VARIANT");
    if (!env) return 1;
    int named[CUDA_ATTN_KERNELS] = {0, 0, 0};
    for (const char *p = env; *p;) {
        const char *end = strchr(p, ',');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        int found = 0;
        for (int k = 0; k < CUDA_ATTN_KERNELS && !found; k++)
            for (int i = 0; i < amma_count(k) && !found; i++) {
                const char *n = amma_name(k, i);
                if (strlen(n) != len || strncmp(n, p, len) != 0) continue;
                if (named[k]) {
                    snprintf(err, err_len,
                             "TRAIN_GPT_ATTN_VARIANT=%s: names two variants of one kernel "
                             "(at most one each of fwd-*, dq-*, dkdv-*)",
                             env);
                    return 0;
                }
                named[k] = found = 1;
                if (amma_check_only(k, i)) {
                    snprintf(err, err_len,
                             "TRAIN_GPT_ATTN_VARIANT: variant %s is for build/check_kernels "
                             "only (its dQ workspace is outside the memory plan)",
                             n);
                    return 0;
                }
                if (!amma_usable(st, k, i)) {
                    snprintf(err, err_len,
                             "TRAIN_GPT_ATTN_VARIANT: variant %s needs a GPU of compute "
                             "capability %d.%d; this one is %d.%d",
                             n, amma_cc(k, i) / 10, amma_cc(k, i) % 10,
                             st->cc / 10, st->cc % 10);
                    return 0;
                }
                st->attn_variant[k] = i;
            }
        if (!found) {
            char list[512] = "";
            for (int k = 0; k < CUDA_ATTN_KERNELS; k++)
                for (int i = 0; i < amma_count(k); i++) {
                    const size_t n = strlen(list);
                    snprintf(list + n, sizeof list - n, "%s%s", n ? " " : "", amma_name(k, i));
                }
            snprintf(err, err_len,
                     "TRAIN_GPT_ATTN_VARIANT: no attention kernel variant named '%.*s' "
                     "(known: %s)",
                     (int)len, p, list);
            return 0;
        }
        p += len + (end ? 1 : 0);
    }
    return 1;
}

void attn_mma_forward(CudaState *st, bf16 *out, float *lse, const bf16 *qkv, int B, int T_, int C,
                      int NH)
{
    const int hs = C / NH;
    AmmaFwdArgs a;
    a.out = out, a.lse = lse, a.qkv = qkv;
    a.B = B, a.T = T_, a.C = C, a.NH = NH;
    a.sl2 = AMMA_LOG2E / sqrtf((float)hs);
    a.vec = amma_vec_ok(qkv, C, hs);
    amma_fwd_run(st, st->attn_variant[CUDA_ATTN_FWD], a);
}

void attn_mma_backward(CudaState *st, bf16 *dqkv, const bf16 *dout, const bf16 *qkv,
                       const bf16 *out, const float *lse, int B, int T_, int C, int NH)
{
    const int hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    /* the rows' statistics for a slice of sequences live in the scratch:
     * slices of at most that many sequences */
    const size_t per_seq = (size_t)NH * T_;
    const size_t fit = CUDA_SCRATCH_BYTES / sizeof(AmmaStat) / per_seq;
    if (fit < 1)
        CUDA_FATAL("attention_backward: NH * T = %zu row statistics do not fit the %zu-byte "
                   "scratch",
                   per_seq, (size_t)CUDA_SCRATCH_BYTES);
    const int slice = fit < (size_t)B ? (int)fit : B;
    AmmaStat *stats = (AmmaStat *)st->scratch;
    for (int b0 = 0; b0 < B; b0 += slice) {
        const int nb = B - b0 < slice ? B - b0 : slice;
        const size_t o1 = (size_t)b0 * T_ * C, o3 = 3 * o1, ol = (size_t)b0 * per_seq;
        amma_rows_D_run(st, stats, dout + o1, out + o1, lse + ol, nb, T_, C, NH);
        AmmaBwdArgs a;
        a.dqkv = dqkv + o3, a.dout = dout + o1, a.qkv = qkv + o3, a.stats = stats;
        a.nb = nb, a.T = T_, a.C = C, a.NH = NH;
        a.sl2 = AMMA_LOG2E * scale, a.scale = scale;
        a.vec = amma_vec_ok(qkv + o3, C, hs) && amma_vec_ok(dout + o1, C, hs);
        /* a fused dK/dV variant writes dQ as well: no dQ kernel after it */
        if (!amma_dkdv_run(st, st->attn_variant[CUDA_ATTN_DKDV], a))
            amma_dq_run(st, st->attn_variant[CUDA_ATTN_DQ], a);
    }
}
