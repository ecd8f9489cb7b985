/* tests/cuda/emu/emu_gemm.cpp — cuda_gemm (kernels/cuda/cuda_common.cuh) for
 * the emulator build, in place of kernels/cuda/gemm.cu's cuBLASLt calls.
 * Written from cuBLAS's definition, not from gemm.cu: column-major storage,
 * element (r, c) of a matrix with leading dimension ld at [r + c * ld];
 *   D(i,j) = sum_p op(A)(i,p) op(B)(p,j) + beta D(i,j) + bias(i),
 *   op(A)(i,p) = ta ? A(p,i) : A(i,p),  op(B)(p,j) = tb ? B(j,p) : B(p,j).
 * fp32 accumulation; D is not read when beta == 0 (it may hold NaN). */
#include "kernels/cuda/cuda_common.cuh"

static float ld_elem(const void *p, size_t i, int bf)
{
    return bf ? __bfloat162float(((const bf16 *)p)[i]) : ((const float *)p)[i];
}

void cuda_gemm(CudaState *st, int ta, int tb, int m, int n, int k, const void *A, int lda,
               const void *B, int ldb, void *D, int ldd, int ab_bf16, int dd_bf16,
               const void *bias, float beta)
{
    (void)st;
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
            size_t o = (size_t)i + (size_t)j * ldd;
            if (beta != 0.0f) s += beta * ld_elem(D, o, dd_bf16);
            if (bias) s += ld_elem(bias, (size_t)i, dd_bf16);
            if (dd_bf16) ((bf16 *)D)[o] = __float2bfloat16(s);
            else ((float *)D)[o] = s;
        }
}

void cuda_gemm_init(CudaState *st) { st->lt = NULL; }
void cuda_gemm_destroy(CudaState *st) { (void)st; }
