/* kernels/cuda/matmul.cu — the linear layer (ops.h: matmul_forward,
 * matmul_backward, and the fused matmul_gelu_forward, matmul_backward_gelu).
 *
 * Row-major tensors seen by cuBLASLt as column-major: a row-major (R, K)
 * matrix is a column-major K x R matrix with leading dimension K. So
 *   out(N,OC) = inp(N,IC) . W(OC,IC)^T + bias  is  out^T = W^T-op . inp^T:
 *       D (OC x N, ld OC) = op_T(A = W, IC x OC, ld IC) . (B = inp, IC x N, ld IC)
 *   dinp(N,IC) = dout(N,OC) . W(OC,IC):
 *       D (IC x N, ld IC) = (A = W, IC x OC, ld IC) . (B = dout, OC x N, ld OC)
 *   dW(OC,IC) += dout^T . inp:
 *       D (IC x OC, ld IC) += (A = inp, IC x N, ld IC) . op_T(B = dout, OC x N, ld OC)
 * dbias(OC) += column sums of dout by our own two-pass kernel (not cuBLASLt's
 * BGRADB epilogue, whose summation order is not documented).
 *
 * GELU fusion (TRAIN_GPT_FUSE_GELU=1; off by default until a GPU run of
 * check_kernels shows cuBLASLt's GELU agrees with the cpu backend's):
 * forward, the fc product with CUBLASLT_EPILOGUE_GELU_AUX_BIAS writes
 * pre = x.W^T + b to the aux matrix and gelu(pre) to D, so the separate GELU
 * pass (read pre, write out) is gone; backward, the fc projection's dinp
 * product with CUBLASLT_EPILOGUE_DGELU multiplies by gelu'(pre) as it
 * stores, so the separate pass (read dinp and pre, write dinp) is gone.
 * Each needs the aux leading dimension (OC, resp. IC) a multiple of 8 and
 * pre 16-byte aligned; otherwise, and with the switch off, the unfused ops
 * run. */
#include "cuda_common.cuh"

#define COLSUM_TY 8

/* part[y*C + c] = sum of x[r, c] over rows r of chunk y (see layernorm.cu's
 * partials kernel: same shape, row lanes added in order). Thread (tx, ty)
 * of block x owns the V channels (32 bx + tx) V .. + V-1 and adds rows
 * y*rows + ty, + COLSUM_TY, ... in increasing order; the row lanes are then
 * added in order ty = 0..7. V = 1 reads one element at a time; V =
 * Vec16<T>::N (C % V == 0, x 16-byte aligned) reads 16 bytes at a time.
 * Each channel's sum has the same terms in the same order either way, so
 * the same bits. */
template <typename T, int V>
__global__ void colsum_partials_kernel(float *part, const T *x, int N, int C, int rows)
{
    __shared__ float s[COLSUM_TY][32 * V];
    int tx = threadIdx.x, ty = threadIdx.y;
    int c0 = (blockIdx.x * 32 + tx) * V;
    int r0 = blockIdx.y * rows;
    int r1 = r0 + rows < N ? r0 + rows : N;
    float a[V];
#pragma unroll
    for (int i = 0; i < V; i++) a[i] = 0.f;
    if (c0 < C)
        for (int r = r0 + ty; r < r1; r += COLSUM_TY) {
            const T *row = x + (size_t)r * C + c0;
            if constexpr (V == 1) {
                a[0] += to_f(row[0]);
            } else {
                const Vec16<T> v = *vec16_at(row);
#pragma unroll
                for (int i = 0; i < V; i++) a[i] += to_f(v.v[i]);
            }
        }
#pragma unroll
    for (int i = 0; i < V; i++) s[ty][tx * V + i] = a[i];
    __syncthreads();
    if (ty == 0 && c0 < C) {
#pragma unroll
        for (int i = 0; i < V; i++) {
            float t = 0.f;
            for (int k = 0; k < COLSUM_TY; k++) t += s[k][tx * V + i];
            part[(size_t)blockIdx.y * C + c0 + i] = t;
        }
    }
}

/* out(c) += sum_y part[y*C + c], y ascending. */
template <typename T>
__global__ void colsum_finish_kernel(T *out, const float *part, int nchunks, int C)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float t = 0.f;
    for (int y = 0; y < nchunks; y++) t += part[(size_t)y * C + c];
    out[c] = from_f<T>(to_f(out[c]) + t);
}

template <typename T>
static void colsum(CudaState *st, T *out, const T *x, int N, int C)
{
    int rows = colsum_chunk_rows(N, C, 1);
    int nchunks = (int)ceil_div(N, rows);
    float *part = (float *)st->scratch;
    constexpr int V = Vec16<T>::N;
    if (C % V == 0 && aligned16(x)) {
        auto kpart = colsum_partials_kernel<T, V>;
        LAUNCH(kpart, dim3(ceil_div(C / V, 32), nchunks), dim3(32, COLSUM_TY), 0, st->stream,
               part, x, N, C, rows);
    } else {
        auto kpart = colsum_partials_kernel<T, 1>;
        LAUNCH(kpart, dim3(ceil_div(C, 32), nchunks), dim3(32, COLSUM_TY), 0, st->stream, part,
               x, N, C, rows);
    }
    auto kfin = colsum_finish_kernel<T>;
    LAUNCH(kfin, ceil_div(C, 256), 256, 0, st->stream, out, part, nchunks, C);
}

void cuda_matmul_forward(Backend *be, void *out, const void *inp, const void *weight,
                         const void *bias, int N, int IC, int OC)
{
    CudaState *st = cuda_state(be);
    cuda_gemm(st, GEMM_T, GEMM_N, OC, N, IC, weight, IC, inp, IC, out, OC, st->bf16, st->bf16, bias,
              0.0f);
}

/* dweight(OC,IC) += dout^T . inp; dbias(OC) += column sums of dout */
static void weight_grads(CudaState *st, void *dweight, void *dbias, const void *dout,
                         const void *inp, int N, int IC, int OC)
{
    cuda_gemm(st, GEMM_N, GEMM_T, IC, OC, N, inp, IC, dout, OC, dweight, IC, st->bf16, st->bf16,
              NULL, 1.0f);
    if (dbias) {
        if (st->bf16) colsum(st, (bf16 *)dbias, (const bf16 *)dout, N, OC);
        else colsum(st, (float *)dbias, (const float *)dout, N, OC);
    }
}

void cuda_matmul_backward(Backend *be, void *dinp, void *dweight, void *dbias, const void *dout,
                          const void *inp, const void *weight, int N, int IC, int OC)
{
    CudaState *st = cuda_state(be);
    cuda_gemm(st, GEMM_N, GEMM_N, IC, N, OC, weight, IC, dout, OC, dinp, IC, st->bf16, st->bf16,
              NULL, 0.0f);
    weight_grads(st, dweight, dbias, dout, inp, N, IC, OC);
}

/* May pre (ld columns per row) be a cuBLASLt GELU aux matrix? */
static int gelu_fusable(const CudaState *st, const void *pre, int ld)
{
    return st->fuse_gelu && ld % 8 == 0 && aligned16(pre);
}

/* pre(N,OC) = inp . W^T + bias; out = gelu(pre) */
void cuda_matmul_gelu_forward(Backend *be, void *out, void *pre, const void *inp,
                              const void *weight, const void *bias, int N, int IC, int OC)
{
    CudaState *st = cuda_state(be);
    if (!gelu_fusable(st, pre, OC)) {
        cuda_matmul_forward(be, pre, inp, weight, bias, N, IC, OC);
        cuda_gelu_forward(be, out, pre, (size_t)N * OC);
        return;
    }
    cuda_gemm_epi(st, GEMM_T, GEMM_N, OC, N, IC, weight, IC, inp, IC, out, OC, st->bf16, st->bf16,
                  bias, 0.0f, GEMM_EPI_GELU_AUX, pre, OC);
}

/* dinp(N,IC) = (dout . W) * gelu'(pre); dweight +=, dbias += */
void cuda_matmul_backward_gelu(Backend *be, void *dinp, void *dweight, void *dbias,
                               const void *dout, const void *inp, const void *weight,
                               const void *pre, int N, int IC, int OC)
{
    CudaState *st = cuda_state(be);
    if (!gelu_fusable(st, pre, IC)) {
        cuda_matmul_backward(be, dinp, dweight, dbias, dout, inp, weight, N, IC, OC);
        cuda_gelu_backward(be, dinp, pre, dinp, (size_t)N * IC);
        return;
    }
    cuda_gemm_epi(st, GEMM_N, GEMM_N, IC, N, OC, weight, IC, dout, OC, dinp, IC, st->bf16, st->bf16,
                  NULL, 0.0f, GEMM_EPI_DGELU, (void *)pre, IC);
    weight_grads(st, dweight, dbias, dout, inp, N, IC, OC);
}
