/* kernels/cuda/layernorm.cu — LayerNorm over C, eps 1e-5 (ops.h:
 * layernorm_forward, layernorm_backward, residual_layernorm_forward).
 *
 * Forward: one warp per row; two passes over the row (mean, then the mean of
 * squared deviations), mean and rstd saved in fp32. Rows are read 16 bytes
 * per lane access where alignment allows (ln_load). The fused residual
 * variant forms res = a + b in its first pass (rounded to T and stored, and
 * summed as stored), then runs the same second and third pass on res: the
 * same arithmetic in the same order as layernorm_forward on the stored res,
 * so the same bits (what a recompute from res relies on).
 * Backward: one kernel per call (plus a small finish): each block takes a
 * chunk of rows, one warp per row computes dinp, and the warp adds the row's
 * dweight and dbias terms into its own shared-memory accumulators; at the
 * end the block adds its warps in order and writes the chunk's partial
 * sums to st->scratch. The finish adds the chunks in a fixed order. No
 * atomics: the same bits every run, fixed by (N, C) alone. */
#include "cuda_common.cuh"

#define LN_EPS 1e-5f
#define LN_ROWS_PER_BLOCK 8 /* warps per block, one row each */

/* The second and third pass of a row's LayerNorm, shared by both forward
 * kernels: s is this lane's sum of x over its pieces (zeros past C). */
template <typename T>
__device__ __forceinline__ void ln_row_finish(T *out, float *mean, float *rstd, const T *x,
                                              const T *weight, const T *bias, int row, float s,
                                              int C, int vec)
{
    constexpr int V = Vec16<T>::N;
    const int lane = threadIdx.x % 32;
    float xv[V], wv[V], bv[V];
    float m = warp_sum(s) / C;
    float v = 0.f;
    for (int c = V * lane; c < C; c += 32 * V) {
        ln_load(xv, x, c, C, vec);
#pragma unroll
        for (int k = 0; k < V; k++) {
            float d = c + k < C ? xv[k] - m : 0.0f;
            v += d * d;
        }
    }
    float r = 1.0f / sqrtf(warp_sum(v) / C + LN_EPS);
    T *o = out + (size_t)row * C;
    for (int c = V * lane; c < C; c += 32 * V) {
        ln_load(xv, x, c, C, vec);
        ln_load(wv, weight, c, C, vec);
        ln_load(bv, bias, c, C, vec);
#pragma unroll
        for (int k = 0; k < V; k++) xv[k] = (xv[k] - m) * r * wv[k] + bv[k];
        ln_store(o, xv, c, C, vec);
    }
    if (lane == 0) {
        mean[row] = m;
        rstd[row] = r;
    }
}

/* out(N,C) =, mean(N) =, rstd(N) = */
template <typename T>
__global__ void layernorm_forward_kernel(T *out, float *mean, float *rstd, const T *inp,
                                         const T *weight, const T *bias, int N, int C, int vec)
{
    constexpr int V = Vec16<T>::N;
    int lane = threadIdx.x % 32;
    int row = blockIdx.x * LN_ROWS_PER_BLOCK + threadIdx.x / 32;
    if (row >= N) return; /* whole warps leave together */
    const T *x = inp + (size_t)row * C;
    float xv[V];
    float s = 0.f;
    for (int c = V * lane; c < C; c += 32 * V) {
        ln_load(xv, x, c, C, vec);
#pragma unroll
        for (int k = 0; k < V; k++) s += xv[k]; /* zeros past C */
    }
    ln_row_finish(out, mean, rstd, x, weight, bias, row, s, C, vec);
}

/* res(N,C) = a + b (rounded to T), then out, mean, rstd = LayerNorm(res).
 * Each lane re-reads only the pieces of res it wrote itself, so no barrier
 * is needed; res may alias a or b (each element is read before the same
 * lane writes it). */
template <typename T>
__global__ void residual_layernorm_kernel(T *res, T *out, float *mean, float *rstd, const T *a,
                                          const T *b, const T *weight, const T *bias, int N,
                                          int C, int vec)
{
    constexpr int V = Vec16<T>::N;
    int lane = threadIdx.x % 32;
    int row = blockIdx.x * LN_ROWS_PER_BLOCK + threadIdx.x / 32;
    if (row >= N) return;
    const size_t off = (size_t)row * C;
    float av[V], bv[V];
    float s = 0.f;
    for (int c = V * lane; c < C; c += 32 * V) {
        ln_load(av, a + off, c, C, vec);
        ln_load(bv, b + off, c, C, vec);
#pragma unroll
        for (int k = 0; k < V; k++) {
            av[k] = to_f(from_f<T>(av[k] + bv[k])); /* the stored value; 0 past C */
            s += av[k];
        }
        ln_store(res + off, av, c, C, vec);
    }
    ln_row_finish(out, mean, rstd, res + off, weight, bias, row, s, C, vec);
}

#define LNB_WARPS 4     /* warps per backward block, one row at a time each */
#define LNB_MIN_ROWS 8  /* rows per backward chunk, at least (2 per warp) */
#define LNB_CHUNKS 512  /* backward chunks, at most (fewer when the scratch is short) */

/* Rows per backward chunk: a function of (N, C) only, so the summation
 * order of dweight and dbias is fixed by the shape. Enough chunks to fill
 * the GPU (LNB_CHUNKS x LNB_WARPS warps), partials (2 C floats per chunk)
 * within the scratch. */
static int ln_bwd_rows(int N, int C)
{
    size_t cap = CUDA_SCRATCH_BYTES / ((size_t)2 * C * sizeof(float));
    if (cap < 1) CUDA_FATAL("layernorm_backward: C = %d too wide for the scratch", C);
    size_t chunks = cap < LNB_CHUNKS ? cap : LNB_CHUNKS;
    size_t rows = ((size_t)N + chunks - 1) / chunks;
    if (rows < LNB_MIN_ROWS) rows = LNB_MIN_ROWS;
    return (int)rows;
}

/* One chunk of rows [y*rows, min(N, (y+1)*rows)), y = blockIdx.x. Warp w
 * takes rows y*rows + w, + LNB_WARPS, ... and for each:
 *   dinp(row) += rstd * (dnorm - mean(dnorm) - xhat * mean(dnorm * xhat)),
 *   dnorm = weight * dout, xhat = (inp - mean) * rstd;
 *   acc_w[c] += dout * xhat, acc_b[c] += dout (this warp's, in shared memory).
 * Then pw[y*C + c] = sum over warps (in order) of acc_w, pb likewise.
 * Shared memory: LNB_WARPS x 2 x C floats. */
template <typename T>
__global__ void __launch_bounds__(32 * LNB_WARPS)
layernorm_backward_kernel(T *dinp, float *pw, float *pb, const T *dout, const T *inp,
                          const T *weight, const float *mean, const float *rstd, int N, int C,
                          int rows, int vec)
{
    DYN_SMEM(smem);
    constexpr int V = Vec16<T>::N;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float *aw = (float *)smem + (size_t)warp * 2 * C, *ab = aw + C;
    /* each lane zeroes, and later adds to, only its own columns */
    for (int c = V * lane; c < C; c += 32 * V)
#pragma unroll
        for (int k = 0; k < V; k++)
            if (c + k < C) aw[c + k] = ab[c + k] = 0.0f;
    const int r0 = blockIdx.x * rows;
    const int r1 = r0 + rows < N ? r0 + rows : N;
    float xv[V], wv[V], gv[V], dv[V];
    for (int row = r0 + warp; row < r1; row += LNB_WARPS) {
        const T *x = inp + (size_t)row * C;
        const T *dy = dout + (size_t)row * C;
        T *dx = dinp + (size_t)row * C;
        const float m = mean[row], r = rstd[row];
        float s1 = 0.f, s2 = 0.f;
        for (int c = V * lane; c < C; c += 32 * V) {
            ln_load(xv, x, c, C, vec);
            ln_load(wv, weight, c, C, vec);
            ln_load(gv, dy, c, C, vec);
#pragma unroll
            for (int k = 0; k < V; k++) { /* past C: weight 0, so dn 0 */
                float dn = wv[k] * gv[k];
                s1 += dn;
                s2 += dn * (xv[k] - m) * r;
            }
        }
        s1 = warp_sum(s1) / C;
        s2 = warp_sum(s2) / C;
        for (int c = V * lane; c < C; c += 32 * V) {
            ln_load(xv, x, c, C, vec);
            ln_load(wv, weight, c, C, vec);
            ln_load(gv, dy, c, C, vec);
            ln_load(dv, dx, c, C, vec);
#pragma unroll
            for (int k = 0; k < V; k++) {
                float xhat = (xv[k] - m) * r;
                dv[k] += (wv[k] * gv[k] - s1 - xhat * s2) * r;
                if (c + k < C) {
                    aw[c + k] += gv[k] * xhat;
                    ab[c + k] += gv[k];
                }
            }
            ln_store(dx, dv, c, C, vec);
        }
    }
    __syncthreads(); /* every warp's accumulators complete */
    float *pwy = pw + (size_t)blockIdx.x * C, *pby = pb + (size_t)blockIdx.x * C;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float w = 0.f, b = 0.f;
        for (int k = 0; k < LNB_WARPS; k++) {
            w += ((float *)smem)[(size_t)k * 2 * C + c];
            b += ((float *)smem)[(size_t)k * 2 * C + C + c];
        }
        pwy[c] = w;
        pby[c] = b;
    }
}

#define LNF_TY 32 /* chunk lanes of the finish; block = 32 columns x LNF_TY */

/* dweight(c) += sum_y pw[y*C + c], dbias likewise. Lane ty adds chunks
 * y = ty, ty + LNF_TY, ... in increasing order; the lanes are then added
 * in order ty = 0..LNF_TY-1: a fixed order, spread over 32 x LNF_TY
 * threads per 32 columns. */
template <typename T>
__global__ void layernorm_finish_kernel(T *dweight, T *dbias, const float *pw, const float *pb,
                                        int nchunks, int C)
{
    __shared__ float sw[LNF_TY][33], sb[LNF_TY][33];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int c = blockIdx.x * 32 + tx;
    float w = 0.f, b = 0.f;
    if (c < C)
        for (int y = ty; y < nchunks; y += LNF_TY) {
            w += pw[(size_t)y * C + c];
            b += pb[(size_t)y * C + c];
        }
    sw[ty][tx] = w;
    sb[ty][tx] = b;
    __syncthreads();
    if (ty == 0 && c < C) {
        float tw = 0.f, tb = 0.f;
        for (int k = 0; k < LNF_TY; k++) {
            tw += sw[k][tx];
            tb += sb[k][tx];
        }
        dweight[c] = from_f<T>(to_f(dweight[c]) + tw);
        dbias[c] = from_f<T>(to_f(dbias[c]) + tb);
    }
}

template <typename T>
static void layernorm_forward(CudaState *st, T *out, float *mean, float *rstd, const T *inp,
                              const T *w, const T *b, int N, int C)
{
    auto kern = layernorm_forward_kernel<T>;
    const int vec = C % Vec16<T>::N == 0 && aligned16(out) && aligned16(inp) &&
                    aligned16(w) && aligned16(b);
    LAUNCH(kern, ceil_div(N, LN_ROWS_PER_BLOCK), 32 * LN_ROWS_PER_BLOCK, 0, st->stream, out,
           mean, rstd, inp, w, b, N, C, vec);
}

template <typename T>
static void residual_layernorm(CudaState *st, T *res, T *out, float *mean, float *rstd,
                               const T *a, const T *b, const T *w, const T *bias, int N, int C)
{
    auto kern = residual_layernorm_kernel<T>;
    const int vec = C % Vec16<T>::N == 0 && aligned16(res) && aligned16(out) && aligned16(a) &&
                    aligned16(b) && aligned16(w) && aligned16(bias);
    LAUNCH(kern, ceil_div(N, LN_ROWS_PER_BLOCK), 32 * LN_ROWS_PER_BLOCK, 0, st->stream, res, out,
           mean, rstd, a, b, w, bias, N, C, vec);
}

template <typename T>
static void layernorm_backward(CudaState *st, T *dinp, T *dweight, T *dbias, const T *dout,
                               const T *inp, const T *w, const float *mean, const float *rstd,
                               int N, int C)
{
    if (N <= 0) return;
    const int vec = C % Vec16<T>::N == 0 && aligned16(dinp) && aligned16(dout) &&
                    aligned16(inp) && aligned16(w);
    const int rows = ln_bwd_rows(N, C);
    const int nchunks = (int)ceil_div(N, rows);
    float *pw = (float *)st->scratch;
    float *pb = pw + (size_t)nchunks * C;
    const size_t smem = (size_t)LNB_WARPS * 2 * C * sizeof(float);
    if (smem > st->smem_optin)
        CUDA_FATAL("layernorm_backward: C = %d needs %zu bytes of shared memory; the device "
                   "allows %zu",
                   C, smem, st->smem_optin);
    auto kb = layernorm_backward_kernel<T>;
    if (smem > 48 * 1024)
        CUDA_CHECK(cudaFuncSetAttribute(kb, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)smem));
    LAUNCH(kb, nchunks, 32 * LNB_WARPS, smem, st->stream, dinp, pw, pb, dout, inp, w, mean, rstd,
           N, C, rows, vec);
    auto kfin = layernorm_finish_kernel<T>;
    LAUNCH(kfin, ceil_div(C, 32), dim3(32, LNF_TY), 0, st->stream, dweight, dbias, pw, pb,
           nchunks, C);
}

void cuda_layernorm_forward(Backend *be, void *out, float *mean, float *rstd, const void *inp,
                            const void *weight, const void *bias, int N, int C)
{
    CudaState *st = cuda_state(be);
    if (st->bf16)
        layernorm_forward(st, (bf16 *)out, mean, rstd, (const bf16 *)inp, (const bf16 *)weight,
                          (const bf16 *)bias, N, C);
    else
        layernorm_forward(st, (float *)out, mean, rstd, (const float *)inp,
                          (const float *)weight, (const float *)bias, N, C);
}

void cuda_layernorm_backward(Backend *be, void *dinp, void *dweight, void *dbias,
                             const void *dout, const void *inp, const void *weight,
                             const float *mean, const float *rstd, int N, int C)
{
    CudaState *st = cuda_state(be);
    if (st->bf16)
        layernorm_backward(st, (bf16 *)dinp, (bf16 *)dweight, (bf16 *)dbias, (const bf16 *)dout,
                           (const bf16 *)inp, (const bf16 *)weight, mean, rstd, N, C);
    else
        layernorm_backward(st, (float *)dinp, (float *)dweight, (float *)dbias,
                           (const float *)dout, (const float *)inp, (const float *)weight, mean,
                           rstd, N, C);
}

void cuda_residual_layernorm_forward(Backend *be, void *res, void *out, float *mean, float *rstd,
                                     const void *a, const void *b, const void *weight,
                                     const void *bias, int N, int C)
{
    CudaState *st = cuda_state(be);
    if (st->bf16)
        residual_layernorm(st, (bf16 *)res, (bf16 *)out, mean, rstd, (const bf16 *)a,
                           (const bf16 *)b, (const bf16 *)weight, (const bf16 *)bias, N, C);
    else
        residual_layernorm(st, (float *)res, (float *)out, mean, rstd, (const float *)a,
                           (const float *)b, (const float *)weight, (const float *)bias, N, C);
}
