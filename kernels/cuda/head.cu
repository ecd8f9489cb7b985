/* kernels/cuda/head.cu — the fused, token-chunked LM head and cross-entropy
 * (ops.h: head_forward_backward, head_logits).
 *
 * Per chunk of `rows` tokens starting at r0 (no host sync in the loop):
 *   1. logits(rows, Vp) fp32 = x_chunk . wte^T       cuBLASLt, into chunk_buf
 *   2. one block per row: loss = logsumexp(logits[:V]) - logits[target];
 *      with dx, dlogits = (softmax - onehot) * dloss over [0, V) and 0 over
 *      [V, Vp), written in place in the working dtype T: fp32 rows keep
 *      their stride Vp; bf16 rows are packed into the first half of their own
 *      fp32 row, so the bf16 matrix has row stride 2*Vp (see ce_kernel)
 *   3. dx_chunk(rows, C) = dlogits . wte              cuBLASLt, "="
 *   4. dwte += dlogits^T . x_chunk                    cuBLASLt, beta = 1
 * The gemms run over all Vp rows of wte, not the V real ones: Vp is a
 * multiple of 128 (50304 for GPT-2), which keeps every dimension aligned for
 * cuBLASLt's fastest kernels, where V = 50257 is odd. The padded columns of
 * dlogits are exact zeros, so the padded rows of wte (finite; zero in every
 * model) add nothing to dx and the padded rows of dwte receive + 0.
 * Column-major views as in matmul.cu: logits^T (Vp x rows, ld Vp) =
 * op_T(wte: C x Vp, ld C) . (x: C x rows, ld C); dx^T (C x rows, ld C) =
 * (wte: C x Vp) . (dlogits: Vp x rows, ld LD); dwte^T (C x Vp, ld C) +=
 * (x: C x rows) . op_T(dlogits: Vp x rows, ld LD). */
#include "cuda_common.cuh"

#define CE_THREADS 512
#define CE_UNROLL 8 /* elements per thread per tile of the bf16 in-place pass */

/* A softmax's running (max m, sum s of exp(x - m)) merged with another:
 * the result does not depend on which is "this" and which "other" (max and
 * the final + commute), so both lanes of a butterfly end with the same bits.
 * m == mn skips the exp (and the -inf - -inf of two empty pairs). */
__device__ __forceinline__ void softmax_merge(float &m, float &s, float m2, float s2)
{
    const float mn = fmaxf(m, m2);
    const float a = m == mn ? s : s * expf(m - mn);
    const float b = m2 == mn ? s2 : s2 * expf(m2 - mn);
    m = mn;
    s = a + b;
}

/* The block's (max, sum) pair, the same in every thread: warp butterflies,
 * then the warp pairs merged in warp order. sh holds 64 floats. */
__device__ void block_softmax_pair(float &m, float &s, float *sh)
{
    for (int o = 16; o > 0; o >>= 1)
        softmax_merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
    if (threadIdx.x % 32 == 0) {
        sh[threadIdx.x / 32] = m;
        sh[32 + threadIdx.x / 32] = s;
    }
    __syncthreads();
    m = sh[0];
    s = sh[32];
    for (int w = 1; w < (int)blockDim.x / 32; w++) softmax_merge(m, s, sh[w], sh[32 + w]);
}

/* Row blockIdx.x of buf (rows x Vp fp32 logits). One read of the row for
 * the loss (an online max and sum per thread), one more for dlogits. */
template <typename T>
__global__ void __launch_bounds__(CE_THREADS)
ce_kernel(float *losses, float *buf, const int *targets, int V, int Vp, float dloss,
          int backward)
{
    __shared__ float sh[64];
    int r = blockIdx.x;
    float *lg = buf + (size_t)r * Vp;
    int target = targets[r];
    float lt = lg[target]; /* read before anything is written in place */

    float m = -INFINITY, s = 0.f;
    for (int j = threadIdx.x; j < V; j += CE_THREADS) {
        const float x = lg[j];
        if (x > m) {
            s = s * expf(m - x) + 1.0f; /* first element: 0 * 0 + 1 */
            m = x;
        } else {
            s += expf(x - m);
        }
    }
    block_softmax_pair(m, s, sh);
    float lse = m + logf(s);
    if (threadIdx.x == 0) losses[r] = lse - lt;
    if (!backward) return;

    if constexpr (std::is_same<T, float>::value) {
        for (int j = threadIdx.x; j < Vp; j += CE_THREADS) {
            float d = j < V ? (expf(lg[j] - lse) - (j == target ? 1.0f : 0.0f)) * dloss : 0.0f;
            lg[j] = d; /* same element, same thread */
        }
    } else {
        /* bf16, in place: element j goes to bytes [2j, 2j+2) of the row, which
         * overlap fp32 element j/2. Tile k (U = CE_UNROLL elements per
         * thread, B = CE_THREADS * U per tile) reads fp32 [kB, kB+B), then,
         * after a barrier, writes bf16 [kB, kB+B): bytes of fp32 elements
         * [kB/2, kB/2+B/2), all read by tiles <= k. The next tile's reads
         * start at fp32 (k+1)B, past every byte written so far. Columns
         * [V, Vp) read nothing and get 0. U loads per thread are in flight
         * at once between two barriers. */
        T *out = (T *)lg;
        for (int base = 0; base < Vp; base += CE_THREADS * CE_UNROLL) {
            float d[CE_UNROLL];
#pragma unroll
            for (int u = 0; u < CE_UNROLL; u++) {
                const int j = base + u * CE_THREADS + threadIdx.x;
                d[u] = j < V ? (expf(lg[j] - lse) - (j == target ? 1.0f : 0.0f)) * dloss : 0.0f;
            }
            __syncthreads(); /* this tile (and the loss) fully read */
#pragma unroll
            for (int u = 0; u < CE_UNROLL; u++) {
                const int j = base + u * CE_THREADS + threadIdx.x;
                if (j < Vp) out[j] = from_f<T>(d[u]);
            }
        }
    }
}

template <typename T>
static void head_chunked(CudaState *st, float *losses, T *dx, T *dwte, const T *x, const T *wte,
                         const int *targets, float *buf, int N, int C, int V, int Vp, int chunk,
                         float dloss)
{
    const int bf = std::is_same<T, bf16>::value;
    const int ld_dlogits = bf ? 2 * Vp : Vp; /* in elements of T */
    auto kern = ce_kernel<T>;
    for (int r0 = 0; r0 < N; r0 += chunk) {
        int rows = N - r0 < chunk ? N - r0 : chunk;
        const T *xc = x + (size_t)r0 * C;
        cuda_gemm(st, 1, 0, Vp, rows, C, wte, C, xc, C, buf, Vp, bf, 0, NULL, 0.0f);
        LAUNCH(kern, rows, CE_THREADS, 0, st->stream, losses + r0, buf, targets + r0, V, Vp,
               dloss, dx != NULL);
        if (!dx) continue;
        const T *dlogits = (const T *)buf;
        cuda_gemm(st, 0, 0, C, rows, Vp, wte, C, dlogits, ld_dlogits, dx + (size_t)r0 * C, C, bf,
                  bf, NULL, 0.0f);
        cuda_gemm(st, 0, 1, C, Vp, rows, xc, C, dlogits, ld_dlogits, dwte, C, bf, bf, NULL, 1.0f);
    }
}

void cuda_head_forward_backward(Backend *be, float *losses, void *dx, void *dwte, const void *x,
                                const void *wte, const int *targets, float *chunk_buf, int N,
                                int C, int V, int Vp, int chunk, float dloss)
{
    CudaState *st = cuda_state(be);
    if (chunk < 1) CUDA_FATAL("head_forward_backward: chunk = %d must be >= 1", chunk);
    if (V > Vp) CUDA_FATAL("head_forward_backward: V = %d > Vp = %d", V, Vp);
    if (st->bf16)
        head_chunked(st, losses, (bf16 *)dx, (bf16 *)dwte, (const bf16 *)x, (const bf16 *)wte,
                     targets, chunk_buf, N, C, V, Vp, chunk, dloss);
    else
        head_chunked(st, losses, (float *)dx, (float *)dwte, (const float *)x,
                     (const float *)wte, targets, chunk_buf, N, C, V, Vp, chunk, dloss);
}

void cuda_head_logits(Backend *be, float *logits, const void *x, const void *wte, int n, int C,
                      int Vp)
{
    CudaState *st = cuda_state(be);
    cuda_gemm(st, 1, 0, Vp, n, C, wte, C, x, C, logits, Vp, st->bf16, 0, NULL, 0.0f);
}
