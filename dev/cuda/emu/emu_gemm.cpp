/* dev/cuda/emu/emu_gemm.cpp — cuda_gemm and cuda_gemm_epi
 * (kernels/cuda/cuda_common.cuh) for the emulator build, in place of
 * kernels/cuda/gemm.cu's cuBLASLt calls. Written from cuBLAS's definition,
 * not from gemm.cu: column-major storage, element (r, c) of a matrix with
 * leading dimension ld at [r + c * ld];
 *   S(i,j) = sum_p op(A)(i,p) op(B)(p,j) + beta D(i,j) + bias(i),
 *   op(A)(i,p) = ta ? A(p,i) : A(i,p),  op(B)(p,j) = tb ? B(j,p) : B(p,j),
 * and D = S, or with an epilogue
 *   GELU_AUX: aux(i,j) = S, D = gelu(S) (both rounded from the fp32 S);
 *   DGELU:    D = S * gelu'(aux(i,j)).
 * The GELU is the cpu backend's (tanh form, kernels/cpu/elementwise.c):
 * which one cuBLASLt computes is not documented and is what check_kernels
 * establishes on a GPU; here the epilogue's plumbing (pointers, leading
 * dimensions, rounding points) is what is tested.
 * fp32 accumulation; D is not read when beta == 0 (it may hold NaN). */
#include "kernels/cuda/cuda_common.cuh"

#define EMU_GELU_SCALE 0.7978845608028654f /* sqrt(2/pi) */

static float emu_gelu(float x)
{
    float u = EMU_GELU_SCALE * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
}

static float emu_gelu_slope(float x)
{
    float u = EMU_GELU_SCALE * (x + 0.044715f * x * x * x);
    float th = tanhf(u), sech2 = 1.0f - th * th;
    return 0.5f * (1.0f + th) + 0.5f * x * sech2 * EMU_GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
}

static float ld_elem(const void *p, size_t i, int bf)
{
    return bf ? __bfloat162float(((const bf16 *)p)[i]) : ((const float *)p)[i];
}

static void st_elem(void *p, size_t i, int bf, float v)
{
    if (bf) ((bf16 *)p)[i] = __float2bfloat16(v);
    else ((float *)p)[i] = v;
}

void cuda_gemm_epi(CudaState *st, int ta, int tb, int m, int n, int k, const void *A, int lda,
                   const void *B, int ldb, void *D, int ldd, int ab_bf16, int dd_bf16,
                   const void *bias, float beta, int epi, void *aux, int ldaux)
{
    emu_stream_drain(st->stream); /* cuBLASLt's launch waits for its stream's queue */
    if (epi != GEMM_EPI_NONE && (!aux || ldaux < m || ldaux % 8 != 0)) {
        fprintf(stderr, "emu_gemm: epilogue %d with aux ld %d (m = %d)\n", epi, ldaux, m);
        abort();
    }
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            float s = 0.0f;
            for (int p = 0; p < k; p++) {
                float a = ld_elem(A, ta ? (size_t)p + (size_t)i * lda : (size_t)i + (size_t)p * lda,
                                  ab_bf16);
                float b = ld_elem(B, tb ? (size_t)j + (size_t)p * ldb : (size_t)p + (size_t)j * ldb,
                                  ab_bf16);
                s += a * b;
            }
            size_t o = (size_t)i + (size_t)j * ldd, x = (size_t)i + (size_t)j * ldaux;
            if (beta != 0.0f) s += beta * ld_elem(D, o, dd_bf16);
            if (bias) s += ld_elem(bias, (size_t)i, dd_bf16);
            if (epi == GEMM_EPI_GELU_AUX) {
                st_elem(aux, x, dd_bf16, s);
                s = emu_gelu(s);
            } else if (epi == GEMM_EPI_DGELU) {
                s *= emu_gelu_slope(ld_elem(aux, x, dd_bf16));
            }
            st_elem(D, o, dd_bf16, s);
        }
}

void cuda_gemm(CudaState *st, int ta, int tb, int m, int n, int k, const void *A, int lda,
               const void *B, int ldb, void *D, int ldd, int ab_bf16, int dd_bf16,
               const void *bias, float beta)
{
    cuda_gemm_epi(st, ta, tb, m, n, k, A, lda, B, ldb, D, ldd, ab_bf16, dd_bf16, bias, beta,
                  GEMM_EPI_NONE, NULL, 0);
}

void cuda_gemm_init(CudaState *st) { st->lt = NULL; }
void cuda_gemm_destroy(CudaState *st) { (void)st; }
