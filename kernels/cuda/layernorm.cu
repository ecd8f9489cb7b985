/* kernels/cuda/layernorm.cu — LayerNorm over C, eps 1e-5 (ops.h:
 * layernorm_forward, layernorm_backward).
 *
 * Forward: one warp per row; two passes over the row (mean, then the mean of
 * squared deviations), mean and rstd saved in fp32. Rows are read 16 bytes
 * per lane access where alignment allows (ln_load).
 * Backward: dinp by one warp per row; dweight and dbias without atomics:
 * blocks of (32 channels x a chunk of rows) write per-chunk partial sums to
 * st->scratch, and a second kernel adds the chunks in increasing order. */
#include "cuda_common.cuh"

#define LN_EPS 1e-5f
#define LN_ROWS_PER_BLOCK 8 /* warps per block, one row each */

/* A row is walked in pieces of V = Vec16<T>::N consecutive elements, lane l
 * taking pieces l, l+32, ...: with vec (C % V == 0 and every pointer 16-byte
 * aligned, checked on the host) a piece is one 16-byte access, otherwise V
 * scalar ones, zero past C. The arithmetic and its order are the same
 * either way. */
template <typename T>
__device__ __forceinline__ void ln_load(float *dst, const T *p, int c, int C, int vec)
{
    constexpr int V = Vec16<T>::N;
    if (vec) {
        const Vec16<T> x = *vec16_at(p + c);
#pragma unroll
        for (int k = 0; k < V; k++) dst[k] = to_f(x.v[k]);
    } else {
#pragma unroll
        for (int k = 0; k < V; k++) dst[k] = c + k < C ? to_f(p[c + k]) : 0.0f;
    }
}

template <typename T>
__device__ __forceinline__ void ln_store(T *p, const float *src, int c, int C, int vec)
{
    constexpr int V = Vec16<T>::N;
    if (vec) {
        Vec16<T> o;
#pragma unroll
        for (int k = 0; k < V; k++) o.v[k] = from_f<T>(src[k]);
        *vec16_at(p + c) = o;
    } else {
#pragma unroll
        for (int k = 0; k < V; k++)
            if (c + k < C) p[c + k] = from_f<T>(src[k]);
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
    float xv[V], wv[V], bv[V];
    float s = 0.f;
    for (int c = V * lane; c < C; c += 32 * V) {
        ln_load(xv, x, c, C, vec);
#pragma unroll
        for (int k = 0; k < V; k++) s += xv[k]; /* zeros past C */
    }
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

/* dinp(N,C) += rstd * (dnorm - mean(dnorm) - xhat * mean(dnorm * xhat)),
 * dnorm = weight * dout, xhat = (inp - mean) * rstd. One warp per row. */
template <typename T>
__global__ void layernorm_dinp_kernel(T *dinp, const T *dout, const T *inp, const T *weight,
                                      const float *mean, const float *rstd, int N, int C, int vec)
{
    constexpr int V = Vec16<T>::N;
    int lane = threadIdx.x % 32;
    int row = blockIdx.x * LN_ROWS_PER_BLOCK + threadIdx.x / 32;
    if (row >= N) return;
    const T *x = inp + (size_t)row * C;
    const T *dy = dout + (size_t)row * C;
    T *dx = dinp + (size_t)row * C;
    float m = mean[row], r = rstd[row];
    float xv[V], wv[V], gv[V], dv[V];
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
        }
        ln_store(dx, dv, c, C, vec);
    }
}

#define LN_PART_TY 8 /* row lanes per partial block; block = 32 x LN_PART_TY */

/* Partials for chunk blockIdx.y (rows [y*rows, min(N,(y+1)*rows))), channels
 * blockIdx.x*32 + threadIdx.x:
 *   pw[y*C + c] = sum dout * xhat,  pb[y*C + c] = sum dout.
 * Thread row-lane ty takes rows y*rows + ty, + LN_PART_TY, ...; the 8 lanes
 * are then added in order ty = 0..7. */
template <typename T>
__global__ void layernorm_partials_kernel(float *pw, float *pb, const T *dout, const T *inp,
                                          const float *mean, const float *rstd, int N, int C,
                                          int rows)
{
    __shared__ float sw[LN_PART_TY][32], sb[LN_PART_TY][32];
    int tx = threadIdx.x, ty = threadIdx.y;
    int c = blockIdx.x * 32 + tx;
    int r0 = blockIdx.y * rows;
    int r1 = r0 + rows < N ? r0 + rows : N;
    float aw = 0.f, ab = 0.f;
    if (c < C) {
        for (int r = r0 + ty; r < r1; r += LN_PART_TY) {
            float dy = to_f(dout[(size_t)r * C + c]);
            float xhat = (to_f(inp[(size_t)r * C + c]) - mean[r]) * rstd[r];
            aw += dy * xhat;
            ab += dy;
        }
    }
    sw[ty][tx] = aw;
    sb[ty][tx] = ab;
    __syncthreads();
    if (ty == 0 && c < C) {
        float w = 0.f, b = 0.f;
        for (int k = 0; k < LN_PART_TY; k++) {
            w += sw[k][tx];
            b += sb[k][tx];
        }
        pw[(size_t)blockIdx.y * C + c] = w;
        pb[(size_t)blockIdx.y * C + c] = b;
    }
}

/* dweight(c) += sum_y pw[y*C + c], dbias likewise, y ascending. */
template <typename T>
__global__ void layernorm_finish_kernel(T *dweight, T *dbias, const float *pw, const float *pb,
                                        int nchunks, int C)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float w = 0.f, b = 0.f;
    for (int y = 0; y < nchunks; y++) {
        w += pw[(size_t)y * C + c];
        b += pb[(size_t)y * C + c];
    }
    dweight[c] = from_f<T>(to_f(dweight[c]) + w);
    dbias[c] = from_f<T>(to_f(dbias[c]) + b);
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
static void layernorm_backward(CudaState *st, T *dinp, T *dweight, T *dbias, const T *dout,
                               const T *inp, const T *w, const float *mean, const float *rstd,
                               int N, int C)
{
    auto kdx = layernorm_dinp_kernel<T>;
    const int vec = C % Vec16<T>::N == 0 && aligned16(dinp) && aligned16(dout) &&
                    aligned16(inp) && aligned16(w);
    LAUNCH(kdx, ceil_div(N, LN_ROWS_PER_BLOCK), 32 * LN_ROWS_PER_BLOCK, 0, st->stream, dinp,
           dout, inp, w, mean, rstd, N, C, vec);
    int rows = colsum_chunk_rows(N, C, 2);
    int nchunks = (int)ceil_div(N, rows);
    float *pw = (float *)st->scratch;
    float *pb = pw + (size_t)nchunks * C;
    auto kpart = layernorm_partials_kernel<T>;
    LAUNCH(kpart, dim3(ceil_div(C, 32), nchunks), dim3(32, LN_PART_TY), 0, st->stream, pw, pb,
           dout, inp, mean, rstd, N, C, rows);
    auto kfin = layernorm_finish_kernel<T>;
    LAUNCH(kfin, ceil_div(C, 256), 256, 0, st->stream, dweight, dbias, pw, pb, nchunks, C);
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
