/* kernels/cuda/rmsnorm.cu — RMSNorm over C, eps given (ops.h: rmsnorm_forward,
 * rmsnorm_backward), layernorm.cu's structure with one statistic.
 *
 * Forward: one warp per row; one pass for the sum of squares, rstd =
 * 1 / sqrt(sum / C + eps) saved in fp32, a second pass writes
 * out = x * rstd * w. Rows are read 16 bytes per lane access where
 * alignment allows (ln_load, cuda_common.cuh).
 * Backward: each block takes a chunk of rows, one warp per row:
 *   dinp(row) += rstd * (w*dout - xhat * mean_c(w*dout*xhat)), xhat = x*rstd,
 * and the warp adds the row's dweight terms dout*xhat into its own
 * shared-memory accumulators; the block adds its warps in order and writes
 * the chunk's partial sums to st->scratch, and a finish kernel adds the
 * chunks in a fixed order into dweight (+=). No atomics: the same bits
 * every run, fixed by (N, C) alone. */
#include "cuda_common.cuh"

#define RN_ROWS_PER_BLOCK 8 /* forward: warps per block, one row each */
#define RNB_WARPS 4         /* backward: warps per block, one row at a time each */
#define RNB_MIN_ROWS 8      /* rows per backward chunk, at least */
#define RNB_CHUNKS 512      /* backward chunks, at most (fewer when the scratch is short) */

/* out(N,C) =, rstd(N) = */
template <typename T>
__global__ void rmsnorm_forward_kernel(T *out, float *rstd, const T *inp, const T *weight, int N,
                                       int C, float eps, int vec)
{
    constexpr int V = Vec16<T>::N;
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * RN_ROWS_PER_BLOCK + threadIdx.x / 32;
    if (row >= N) return; /* whole warps leave together */
    const T *x = inp + (size_t)row * C;
    float xv[V], wv[V];
    float s = 0.f;
    for (int c = V * lane; c < C; c += 32 * V) {
        ln_load(xv, x, c, C, vec);
#pragma unroll
        for (int k = 0; k < V; k++) s += xv[k] * xv[k]; /* zeros past C */
    }
    const float r = 1.0f / sqrtf(warp_sum(s) / C + eps);
    T *o = out + (size_t)row * C;
    for (int c = V * lane; c < C; c += 32 * V) {
        ln_load(xv, x, c, C, vec);
        ln_load(wv, weight, c, C, vec);
#pragma unroll
        for (int k = 0; k < V; k++) xv[k] = xv[k] * r * wv[k];
        ln_store(o, xv, c, C, vec);
    }
    if (lane == 0) rstd[row] = r;
}

/* Rows per backward chunk: a function of (N, C) only, so the summation
 * order of dweight is fixed by the shape; partials (C floats per chunk)
 * within the scratch. */
static int rn_bwd_rows(int N, int C)
{
    size_t cap = CUDA_SCRATCH_BYTES / ((size_t)C * sizeof(float));
    if (cap < 1) CUDA_FATAL("rmsnorm_backward: C = %d too wide for the scratch", C);
    size_t chunks = cap < RNB_CHUNKS ? cap : RNB_CHUNKS;
    size_t rows = ((size_t)N + chunks - 1) / chunks;
    if (rows < RNB_MIN_ROWS) rows = RNB_MIN_ROWS;
    return (int)rows;
}

/* One chunk of rows [y*rows, min(N, (y+1)*rows)), y = blockIdx.x; warp w
 * takes rows y*rows + w, + RNB_WARPS, ... Then pw[y*C + c] = the sum over
 * warps (in order) of their accumulators. Shared memory: RNB_WARPS x C
 * floats. */
template <typename T>
__global__ void __launch_bounds__(32 * RNB_WARPS)
rmsnorm_backward_kernel(T *dinp, float *pw, const T *dout, const T *inp, const T *weight,
                        const float *rstd, int N, int C, int rows, int vec)
{
    DYN_SMEM(smem);
    constexpr int V = Vec16<T>::N;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float *aw = (float *)smem + (size_t)warp * C;
    /* each lane zeroes, and later adds to, only its own columns */
    for (int c = V * lane; c < C; c += 32 * V)
#pragma unroll
        for (int k = 0; k < V; k++)
            if (c + k < C) aw[c + k] = 0.0f;
    const int r0 = blockIdx.x * rows;
    const int r1 = r0 + rows < N ? r0 + rows : N;
    float xv[V], wv[V], gv[V], dv[V];
    for (int row = r0 + warp; row < r1; row += RNB_WARPS) {
        const T *x = inp + (size_t)row * C;
        const T *dy = dout + (size_t)row * C;
        T *dx = dinp + (size_t)row * C;
        const float r = rstd[row];
        float s = 0.f;
        for (int c = V * lane; c < C; c += 32 * V) {
            ln_load(xv, x, c, C, vec);
            ln_load(wv, weight, c, C, vec);
            ln_load(gv, dy, c, C, vec);
#pragma unroll
            for (int k = 0; k < V; k++) s += wv[k] * gv[k] * (xv[k] * r); /* 0 past C */
        }
        s = warp_sum(s) / C;
        for (int c = V * lane; c < C; c += 32 * V) {
            ln_load(xv, x, c, C, vec);
            ln_load(wv, weight, c, C, vec);
            ln_load(gv, dy, c, C, vec);
            ln_load(dv, dx, c, C, vec);
#pragma unroll
            for (int k = 0; k < V; k++) {
                const float xhat = xv[k] * r;
                dv[k] += (wv[k] * gv[k] - xhat * s) * r;
                if (c + k < C) aw[c + k] += gv[k] * xhat;
            }
            ln_store(dx, dv, c, C, vec);
        }
    }
    __syncthreads(); /* every warp's accumulators complete */
    float *pwy = pw + (size_t)blockIdx.x * C;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float w = 0.f;
        for (int k = 0; k < RNB_WARPS; k++) w += ((float *)smem)[(size_t)k * C + c];
        pwy[c] = w;
    }
}

#define RNF_TY 32 /* chunk lanes of the finish; block = 32 columns x RNF_TY */

/* dweight(c) += sum_y pw[y*C + c]: lane ty adds chunks ty, ty + RNF_TY, ...
 * in increasing order, then the lanes are added in order ty = 0..RNF_TY-1. */
template <typename T>
__global__ void rmsnorm_finish_kernel(T *dweight, const float *pw, int nchunks, int C)
{
    __shared__ float sw[RNF_TY][33];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int c = blockIdx.x * 32 + tx;
    float w = 0.f;
    if (c < C)
        for (int y = ty; y < nchunks; y += RNF_TY) w += pw[(size_t)y * C + c];
    sw[ty][tx] = w;
    __syncthreads();
    if (ty == 0 && c < C) {
        float tw = 0.f;
        for (int k = 0; k < RNF_TY; k++) tw += sw[k][tx];
        dweight[c] = from_f<T>(to_f(dweight[c]) + tw);
    }
}

template <typename T>
static void rmsnorm_forward(CudaState *st, T *out, float *rstd, const T *inp, const T *w, int N,
                            int C, float eps)
{
    if (N <= 0) return;
    auto kern = rmsnorm_forward_kernel<T>;
    const int vec = C % Vec16<T>::N == 0 && aligned16(out) && aligned16(inp) && aligned16(w);
    LAUNCH(kern, ceil_div(N, RN_ROWS_PER_BLOCK), 32 * RN_ROWS_PER_BLOCK, 0, st->stream, out, rstd,
           inp, w, N, C, eps, vec);
}

template <typename T>
static void rmsnorm_backward(CudaState *st, T *dinp, T *dweight, const T *dout, const T *inp,
                             const T *w, const float *rstd, int N, int C)
{
    if (N <= 0) return;
    const int vec = C % Vec16<T>::N == 0 && aligned16(dinp) && aligned16(dout) &&
                    aligned16(inp) && aligned16(w);
    const int rows = rn_bwd_rows(N, C);
    const int nchunks = (int)ceil_div(N, rows);
    float *pw = (float *)st->scratch;
    const size_t smem = (size_t)RNB_WARPS * C * sizeof(float);
    if (smem > st->smem_optin)
        CUDA_FATAL("rmsnorm_backward: C = %d needs %zu bytes of shared memory; the device "
                   "allows %zu",
                   C, smem, st->smem_optin);
    auto kb = rmsnorm_backward_kernel<T>;
    if (smem > 48 * 1024)
        CUDA_CHECK(cudaFuncSetAttribute(kb, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)smem));
    LAUNCH(kb, nchunks, 32 * RNB_WARPS, smem, st->stream, dinp, pw, dout, inp, w, rstd, N, C,
           rows, vec);
    auto kfin = rmsnorm_finish_kernel<T>;
    LAUNCH(kfin, ceil_div(C, 32), dim3(32, RNF_TY), 0, st->stream, dweight, pw, nchunks, C);
}

void cuda_rmsnorm_forward(Backend *be, void *out, float *rstd, const void *inp,
                          const void *weight, int N, int C, float eps)
{
    CudaState *st = cuda_state(be);
    if (st->bf16)
        rmsnorm_forward(st, (bf16 *)out, rstd, (const bf16 *)inp, (const bf16 *)weight, N, C, eps);
    else
        rmsnorm_forward(st, (float *)out, rstd, (const float *)inp, (const float *)weight, N, C,
                        eps);
}

void cuda_rmsnorm_backward(Backend *be, void *dinp, void *dweight, const void *dout,
                           const void *inp, const void *weight, const float *rstd, int N, int C)
{
    CudaState *st = cuda_state(be);
    if (st->bf16)
        rmsnorm_backward(st, (bf16 *)dinp, (bf16 *)dweight, (const bf16 *)dout,
                         (const bf16 *)inp, (const bf16 *)weight, rstd, N, C);
    else
        rmsnorm_backward(st, (float *)dinp, (float *)dweight, (const float *)dout,
                         (const float *)inp, (const float *)weight, rstd, N, C);
}
