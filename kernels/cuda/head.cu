/* kernels/cuda/head.cu — the fused, token-chunked LM head and cross-entropy
 * (ops.h: head_forward_backward, head_logits).
 *
 * Per chunk of `rows` tokens starting at r0 (no host sync in the loop), in
 * the activation type T (bf16 logits by default, fp32 in --dtype fp32):
 *   1. logits(rows, Vp) = x_chunk . wte^T             cuBLASLt, into chunk_buf
 *   2. one block per row: loss = logsumexp(logits[:V]) - logits[target];
 *      with dx, dlogits = (softmax - onehot) * dloss over [0, V) and 0 over
 *      [V, Vp), written in place (same element, same thread)
 *   3. dx_chunk(rows, C) = dlogits . wte              cuBLASLt, "="
 *   4. dwte += dlogits^T . x_chunk                    cuBLASLt, beta = 1
 * Step 2 reads each row once: a thread loads its K 16-byte pieces of the row
 * (all in flight at once) and keeps them in registers; the row's max and
 * sum of exponentials are fp32, reduced over the block (warp butterflies,
 * then the warps in order: the same bits every run); then each thread
 * writes its pieces' dlogits from the same registers. The loops over a
 * thread's pieces are unrolled and select rather than branch (columns past
 * V read as -inf, whose exponential is 0); exponentials are one FFMA and
 * one MUFU.EX2 each (exp2_approx). Rows longer than the registers hold
 * (CE_THREADS x CE_KMAX pieces: 65536 bf16, 32768 fp32 values on a GPU) or
 * not 16-byte aligned take the tiled path (CE_KTILE pieces a thread per
 * tile), which reads the row three times.
 * The gemms run over all Vp rows of wte, not the V real ones: Vp is a
 * multiple of 128 (50304 for GPT-2), which keeps every dimension aligned for
 * cuBLASLt's fastest kernels, where V = 50257 is odd. The padded columns of
 * dlogits are exact zeros, so the padded rows of wte (finite; zero in every
 * model) add nothing to dx and the padded rows of dwte receive + 0.
 * Column-major views as in matmul.cu: logits^T (Vp x rows, ld Vp) =
 * op_T(wte: C x Vp, ld C) . (x: C x rows, ld C); dx^T (C x rows, ld C) =
 * (wte: C x Vp) . (dlogits: Vp x rows, ld Vp); dwte^T (C x Vp, ld C) +=
 * (x: C x rows) . op_T(dlogits: Vp x rows, ld Vp).
 * cuda_head_part (backend.h) launches one of the four steps alone, exactly
 * as here, for check_timing. */
#include "cuda_common.cuh"

/* Threads per row: CUDA_WIDE_BLOCK, 1024 (256 on the emulator: every path
 * of the kernel depends on the count only through the tile size, the
 * checker's shapes still reach the one-tile path (K = 1..8) and the tiled
 * one, and emulating a thread per fiber costs 4x less). */
#define CE_THREADS CUDA_WIDE_BLOCK
#define CE_WARPS (CE_THREADS / 32)
#define CE_KMAX 8  /* 16-byte pieces per thread held in registers */
#define CE_KTILE 4 /* pieces per thread per tile of the tiled path */
#define CE_LOG2E 1.4426950408889634f

/* The block's max (MAX) or sum of v, the same in every thread: warp
 * butterflies, then the warps' results combined in order (the same bits
 * every run). sh holds CE_WARPS floats. */
template <bool MAX> __device__ __forceinline__ float block_reduce(float v, float *sh)
{
    v = MAX ? warp_max(v) : warp_sum(v);
    if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    float r = sh[0];
#pragma unroll
    for (int w = 1; w < CE_WARPS; w++) r = MAX ? fmaxf(r, sh[w]) : r + sh[w];
    return r;
}

/* Piece k of this thread in the tile at base: elements
 * [base + (k*CE_THREADS + tid)*N, + N). Pieces at or past Vp are not read;
 * with vec a piece is one 16-byte load, else N scalar loads (zeros past Vp).
 * (Testing only the last piece, when ONE_TILE makes the others certain to
 * be inside the row, made ptxas spill at K = 7: 288 bytes. Kept as is.) */
template <typename T, int K, bool ONE_TILE>
__device__ __forceinline__ void ce_load(Vec16<T> (&v)[K], const T *row, int base, int Vp,
                                        int vec)
{
    constexpr int N = Vec16<T>::N;
#pragma unroll
    for (int k = 0; k < K; k++) {
        const int i = base + (k * CE_THREADS + (int)threadIdx.x) * N;
        if (vec) {
            if (i < Vp) v[k] = *vec16_at(row + i);
        } else {
#pragma unroll
            for (int u = 0; u < N; u++) v[k].v[u] = i + u < Vp ? row[i + u] : from_f<T>(0.0f);
        }
    }
}

/* Element u of a piece as fp32. For bf16 each pass converts afresh, in
 * asm volatile (shl / and of the packed word), so the compiler cannot keep
 * the K*8 converted floats alive from one pass to the next: it would, and
 * they do not fit the 64 registers a thread of a 1024-thread block has
 * (ptxas: 208 bytes of spill loads at K = 7). The packed pieces (4
 * registers each) are what stays live. */
__device__ __forceinline__ float ce_elem(const Vec16<float> &p, int u) { return p.v[u]; }
__device__ __forceinline__ float ce_elem(const Vec16<bf16> &p, int u)
{
    return ptx_bf16_elem(p.v, u);
}

/* Logit j of piece k, element u: -inf past V (so it drops out of max and sum). */
template <typename T>
__device__ __forceinline__ float ce_val(const Vec16<T> &p, int u, int j, int V)
{
    return j < V ? ce_elem(p, u) : -INFINITY;
}

/* One pass over the thread's pieces of a tile, folding each logit x into
 * r: MAX, r = max(r, x); else r += exp(x - M) = 2^(x log2(e) - mL), with
 * mL = M log2(e). */
template <bool MAX, typename T, int K>
__device__ __forceinline__ float ce_tile_reduce(const Vec16<T> (&v)[K], int base, int V, float mL,
                                                float r)
{
    constexpr int N = Vec16<T>::N;
#pragma unroll
    for (int k = 0; k < K; k++)
#pragma unroll
        for (int u = 0; u < N; u++) {
            const int j = base + (k * CE_THREADS + (int)threadIdx.x) * N + u;
            const float x = ce_val(v[k], u, j, V);
            r = MAX ? fmaxf(r, x) : r + exp2_approx(fmaf(x, CE_LOG2E, -mL));
        }
    return r;
}

/* dlogits = exp(x - lse) * dloss - [j == target] * dloss, 0 past V, stored
 * over the pieces the thread read (pieces at or past Vp are not written);
 * lseL = lse * log2(e). */
template <typename T, int K, bool ONE_TILE>
__device__ __forceinline__ void ce_tile_store(T *row, const Vec16<T> (&v)[K], int base, int V,
                                              int Vp, float lseL, int target, float dloss, int vec)
{
    constexpr int N = Vec16<T>::N;
#pragma unroll
    for (int k = 0; k < K; k++) {
        const int i = base + (k * CE_THREADS + (int)threadIdx.x) * N;
        Vec16<T> o;
#pragma unroll
        for (int u = 0; u < N; u++) {
            const float p = exp2_approx(fmaf(ce_val(v[k], u, i + u, V), CE_LOG2E, -lseL));
            o.v[u] = from_f<T>(fmaf(p, dloss, i + u == target ? -dloss : 0.0f));
        }
        if (vec) {
            if (i < Vp) *vec16_at(row + i) = o;
        } else {
#pragma unroll
            for (int u = 0; u < N; u++)
                if (i + u < Vp) row[i + u] = o.v[u];
        }
    }
}

/* Row blockIdx.x of logits (rows x Vp, T). ONE_TILE: the row fits in K
 * pieces per thread and is 16-byte aligned (vec == 1): read once, kept in
 * registers. Otherwise tiles of CE_THREADS * K * N elements, each read in
 * each of three passes (max, sum, store). */
template <typename T, int K, bool ONE_TILE>
__global__ void __launch_bounds__(CE_THREADS, 1)
ce_kernel(float *losses, T *logits, const int *targets, int V, int Vp, float dloss, int backward,
          int vec)
{
    constexpr int TILE = CE_THREADS * K * Vec16<T>::N;
    __shared__ float shm[CE_WARPS], shs[CE_WARPS];
    T *row = logits + (size_t)blockIdx.x * Vp;
    const int target = targets[blockIdx.x];
    const int ntiles = ONE_TILE ? 1 : (Vp + TILE - 1) / TILE;
    if (ONE_TILE) vec = 1;
    /* read before anything is written in place (the barriers below order it) */
    const float lt = threadIdx.x == 0 ? to_f(row[target]) : 0.0f;
    Vec16<T> v[K];
    float m = -INFINITY;
    for (int t = 0; t < ntiles; t++) {
        ce_load<T, K, ONE_TILE>(v, row, t * TILE, Vp, vec);
        m = ce_tile_reduce<true>(v, t * TILE, V, 0.0f, m);
    }
    const float M = block_reduce<true>(m, shm);
    float s = 0.0f;
    for (int t = 0; t < ntiles; t++) {
        if (!ONE_TILE) ce_load<T, K, ONE_TILE>(v, row, t * TILE, Vp, vec);
        s = ce_tile_reduce<false>(v, t * TILE, V, M * CE_LOG2E, s);
    }
    const float lse = M + logf(block_reduce<false>(s, shs));
    if (threadIdx.x == 0) losses[blockIdx.x] = lse - lt;
    if (!backward) return;
    for (int t = 0; t < ntiles; t++) {
        if (!ONE_TILE) ce_load<T, K, ONE_TILE>(v, row, t * TILE, Vp, vec);
        ce_tile_store<T, K, ONE_TILE>(row, v, t * TILE, V, Vp, lse * CE_LOG2E, target, dloss, vec);
    }
}

template <typename T, int K>
static void ce_launch_k(CudaState *st, float *losses, T *logits, const int *targets, int rows,
                        int V, int Vp, float dloss, int backward)
{
    auto kern = ce_kernel<T, K, true>;
    LAUNCH(kern, rows, CE_THREADS, 0, st->stream, losses, logits, targets, V, Vp, dloss,
           backward, 1);
}

template <typename T>
static void ce_launch(CudaState *st, float *losses, T *logits, const int *targets, int rows,
                      int V, int Vp, float dloss, int backward)
{
    constexpr int N = Vec16<T>::N;
    const int vec = Vp % N == 0 && aligned16(logits);
    const int k = (int)ceil_div(Vp, (size_t)CE_THREADS * N);
    if (vec && k <= CE_KMAX) {
        switch (k) {
        case 1: ce_launch_k<T, 1>(st, losses, logits, targets, rows, V, Vp, dloss, backward); return;
        case 2: ce_launch_k<T, 2>(st, losses, logits, targets, rows, V, Vp, dloss, backward); return;
        case 3: ce_launch_k<T, 3>(st, losses, logits, targets, rows, V, Vp, dloss, backward); return;
        case 4: ce_launch_k<T, 4>(st, losses, logits, targets, rows, V, Vp, dloss, backward); return;
        case 5: ce_launch_k<T, 5>(st, losses, logits, targets, rows, V, Vp, dloss, backward); return;
        case 6: ce_launch_k<T, 6>(st, losses, logits, targets, rows, V, Vp, dloss, backward); return;
        case 7: ce_launch_k<T, 7>(st, losses, logits, targets, rows, V, Vp, dloss, backward); return;
        default: ce_launch_k<T, 8>(st, losses, logits, targets, rows, V, Vp, dloss, backward); return;
        }
    }
    auto kern = ce_kernel<T, CE_KTILE, false>;
    LAUNCH(kern, rows, CE_THREADS, 0, st->stream, losses, logits, targets, V, Vp, dloss,
           backward, vec);
}

/* One step of the head for `rows` tokens (see the top of this file). */
template <typename T>
static void head_part(CudaState *st, int part, float *losses, T *dx, T *dwte, const T *x,
                      const T *wte, const int *targets, T *buf, int rows, int C, int V, int Vp,
                      float dloss)
{
    const int bf = std::is_same<T, bf16>::value;
    switch (part) {
    case HEAD_PART_LOGITS:
        cuda_gemm(st, GEMM_T, GEMM_N, Vp, rows, C, wte, C, x, C, buf, Vp, bf, bf, NULL, 0.0f);
        break;
    case HEAD_PART_LOSS:
        ce_launch(st, losses, buf, targets, rows, V, Vp, dloss, dx != NULL);
        break;
    case HEAD_PART_DX:
        cuda_gemm(st, GEMM_N, GEMM_N, C, rows, Vp, wte, C, buf, Vp, dx, C, bf, bf, NULL, 0.0f);
        break;
    case HEAD_PART_DWTE:
        cuda_gemm(st, GEMM_N, GEMM_T, C, Vp, rows, x, C, buf, Vp, dwte, C, bf, bf, NULL, 1.0f);
        break;
    default:
        CUDA_FATAL("head part %d: unknown", part);
    }
}

template <typename T>
static void head_chunked(CudaState *st, float *losses, T *dx, T *dwte, const T *x, const T *wte,
                         const int *targets, T *buf, int N, int C, int V, int Vp, int chunk,
                         float dloss)
{
    for (int r0 = 0; r0 < N; r0 += chunk) {
        int rows = N - r0 < chunk ? N - r0 : chunk;
        const T *xc = x + (size_t)r0 * C;
        T *dxc = dx ? dx + (size_t)r0 * C : NULL;
        for (int part = HEAD_PART_LOGITS; part <= (dx ? HEAD_PART_DWTE : HEAD_PART_LOSS); part++)
            head_part(st, part, losses + r0, dxc, dwte, xc, wte, targets + r0, buf, rows, C, V,
                      Vp, dloss);
    }
}

void cuda_head_forward_backward(Backend *be, float *losses, void *dx, void *dwte, const void *x,
                                const void *wte, const int *targets, void *chunk_buf, int N,
                                int C, int V, int Vp, int chunk, float dloss)
{
    CudaState *st = cuda_state(be);
    if (chunk < 1) CUDA_FATAL("head_forward_backward: chunk = %d must be >= 1", chunk);
    if (V > Vp) CUDA_FATAL("head_forward_backward: V = %d > Vp = %d", V, Vp);
    if (st->bf16)
        head_chunked(st, losses, (bf16 *)dx, (bf16 *)dwte, (const bf16 *)x, (const bf16 *)wte,
                     targets, (bf16 *)chunk_buf, N, C, V, Vp, chunk, dloss);
    else
        head_chunked(st, losses, (float *)dx, (float *)dwte, (const float *)x,
                     (const float *)wte, targets, (float *)chunk_buf, N, C, V, Vp, chunk, dloss);
}

extern "C" void cuda_head_part(Backend *be, int part, float *losses, void *dx, void *dwte,
                               const void *x, const void *wte, const int *targets, void *buf,
                               int rows, int C, int V, int Vp, float dloss)
{
    CudaState *st = cuda_state(be);
    if (st->bf16)
        head_part(st, part, losses, (bf16 *)dx, (bf16 *)dwte, (const bf16 *)x, (const bf16 *)wte,
                  targets, (bf16 *)buf, rows, C, V, Vp, dloss);
    else
        head_part(st, part, losses, (float *)dx, (float *)dwte, (const float *)x,
                  (const float *)wte, targets, (float *)buf, rows, C, V, Vp, dloss);
}

void cuda_head_logits(Backend *be, float *logits, const void *x, const void *wte, int n, int C,
                      int Vp)
{
    CudaState *st = cuda_state(be);
    /* dd_bf16 0: the logits are fp32 in either dtype */
    cuda_gemm(st, GEMM_T, GEMM_N, Vp, n, C, wte, C, x, C, logits, Vp, st->bf16, 0, NULL, 0.0f);
}
