/* kernels/cuda/encoder.cu — token + position embedding, forward and backward
 * (ops.h: encoder_forward, encoder_backward).
 *
 * Backward is deterministic without float atomics:
 *   dwpe(t,c) += sum over b of dout(b,t,c), b in increasing order;
 *   dwte: the positions are sorted by (token, position) into st->scratch
 *   (an exact rank by counting, so the order never depends on timing), then
 *   one block per distinct token sums that token's dout rows in increasing
 *   position order and adds the sum to its dwte row. Each dwte row has one
 *   writer. Positions go in chunks of ENC_SORT_CHUNK (64K), in order, each
 *   sorted in the scratch and added on its own (the chunking depends on N
 *   only, so the bits do not depend on the run). */
#include "cuda_common.cuh"

/* out(N,C) = wte[tokens[n]] + wpe[n % T]; grid-stride over N*C. */
template <typename T>
__global__ void encoder_forward_kernel(T *out, const int *tokens, const T *wte, const T *wpe,
                                       int N, int T_, int C)
{
    size_t total = (size_t)N * C;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t n = i / C;
        int c = (int)(i % C);
        int t = (int)(n % T_);
        size_t tok = (size_t)tokens[n];
        out[i] = from_f<T>(to_f(wte[tok * C + c]) + to_f(wpe[(size_t)t * C + c]));
    }
}

void cuda_encoder_forward(Backend *be, void *out, const int *tokens, const void *wte,
                          const void *wpe, int B, int T, int C)
{
    CudaState *st = cuda_state(be);
    int N = B * T;
    unsigned grid = elementwise_grid((size_t)N * C, 256);
    if (st->bf16) {
        auto kern = encoder_forward_kernel<bf16>;
        LAUNCH(kern, grid, 256, 0, st->stream, (bf16 *)out, tokens, (const bf16 *)wte,
               (const bf16 *)wpe, N, T, C);
    } else {
        auto kern = encoder_forward_kernel<float>;
        LAUNCH(kern, grid, 256, 0, st->stream, (float *)out, tokens, (const float *)wte,
               (const float *)wpe, N, T, C);
    }
}

/* dwpe(t,c) += sum_b dout(b*T+t, c), b ascending. One thread per (t,c). */
template <typename T>
__global__ void wpe_backward_kernel(T *dwpe, const T *dout, int B, int T_, int C)
{
    size_t total = (size_t)T_ * C;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        float s = 0.f;
        for (int b = 0; b < B; b++) s += to_f(dout[(size_t)b * total + i]);
        dwpe[i] = from_f<T>(to_f(dwpe[i]) + s);
    }
}

#define RANK_THREADS 256

/* sorted[rank(i)] = i, where rank(i) = #{ j : (tokens[j], j) < (tokens[i], i) }.
 * Keys are distinct, so ranks are a permutation of 0..N-1. Each block holds
 * RANK_THREADS positions and sweeps all N tokens in shared-memory tiles. */
__global__ void __launch_bounds__(RANK_THREADS)
token_sort_kernel(int *sorted, const int *tokens, int N)
{
    __shared__ int tok_s[RANK_THREADS];
    int i = blockIdx.x * RANK_THREADS + threadIdx.x;
    int ti = i < N ? tokens[i] : 0;
    int rank = 0;
    for (int base = 0; base < N; base += RANK_THREADS) {
        __syncthreads(); /* the previous tile is no longer read */
        int j = base + threadIdx.x;
        tok_s[threadIdx.x] = j < N ? tokens[j] : 0;
        __syncthreads();
        int cnt = N - base < RANK_THREADS ? N - base : RANK_THREADS;
        for (int k = 0; k < cnt; k++) {
            int tj = tok_s[k];
            rank += (tj < ti) || (tj == ti && base + k < i);
        }
    }
    if (i < N) sorted[rank] = i;
}

/* One block per sorted index i; only the first index of each token's run
 * works: dwte[v,c] += sum of dout[sorted[j], c] over the run, in order. */
template <typename T>
__global__ void wte_backward_kernel(T *dwte, const T *dout, const int *tokens,
                                    const int *sorted, int N, int C)
{
    int i = blockIdx.x;
    int v = tokens[sorted[i]];
    if (i > 0 && tokens[sorted[i - 1]] == v) return; /* not the head of its run */
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float acc = 0.f;
        for (int j = i; j < N && tokens[sorted[j]] == v; j++)
            acc += to_f(dout[(size_t)sorted[j] * C + c]);
        size_t o = (size_t)v * C + c;
        dwte[o] = from_f<T>(to_f(dwte[o]) + acc);
    }
}

/* Positions sorted per chunk: 64K. The rank sort makes n^2 comparisons
 * for a chunk of n, so the chunk bounds it: 124M at --batch 2650 (a size
 * --plan offers with recompute) has N = 2.7M, 7.3e12 comparisons as one
 * chunk, 1.8e11 in 64K chunks (42 of them; times not measured). The price
 * is one bf16 rounding of a dwte row per chunk that holds its token, as
 * with gradient accumulation; batches up to 64K tokens (B = 64 at T = 1024)
 * are one chunk, as before. At most what the scratch holds (4M int32). The
 * emulator's EMU_ENC_SORT_CHUNK lowers it, so the checker's small shapes
 * (N = 600) take the several-chunk path too. */
#define ENC_SORT_CHUNK (1 << 16)
static_assert((size_t)ENC_SORT_CHUNK * sizeof(int) <= CUDA_SCRATCH_BYTES, "sort chunk > scratch");
static int enc_sort_chunk(void)
{
#ifdef CUDA_EMU
    const char *e = getenv("EMU_ENC_SORT_CHUNK");
    if (e && atoi(e) > 0 && atoi(e) < ENC_SORT_CHUNK) return atoi(e);
#endif
    return ENC_SORT_CHUNK;
}

template <typename T>
static void encoder_backward(CudaState *st, T *dwte, T *dwpe, const T *dout, const int *tokens,
                             int B, int T_, int C)
{
    int N = B * T_;
    int *sorted = (int *)st->scratch;
    auto kwpe = wpe_backward_kernel<T>;
    LAUNCH(kwpe, elementwise_grid((size_t)T_ * C, 256), 256, 0, st->stream, dwpe, dout, B, T_,
           C);
    /* Chunks of positions [p0, p0 + n), in order, each sorted into the
     * scratch and added to dwte before the next (stream order); one chunk
     * whenever N <= ENC_SORT_CHUNK. */
    auto kwte = wte_backward_kernel<T>;
    const int chunk = enc_sort_chunk();
    for (int p0 = 0; p0 < N; p0 += chunk) {
        const int n = N - p0 < chunk ? N - p0 : chunk;
        LAUNCH(token_sort_kernel, ceil_div(n, RANK_THREADS), RANK_THREADS, 0, st->stream, sorted,
               tokens + p0, n);
        LAUNCH(kwte, n, 256, 0, st->stream, dwte, dout + (size_t)p0 * C, tokens + p0, sorted, n,
               C);
    }
}

void cuda_encoder_backward(Backend *be, void *dwte, void *dwpe, const void *dout,
                           const int *tokens, int B, int T, int C)
{
    CudaState *st = cuda_state(be);
    if (st->bf16)
        encoder_backward(st, (bf16 *)dwte, (bf16 *)dwpe, (const bf16 *)dout, tokens, B, T, C);
    else
        encoder_backward(st, (float *)dwte, (float *)dwpe, (const float *)dout, tokens, B, T, C);
}
