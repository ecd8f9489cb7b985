/* kernels/cuda/encoder.cu — token + position embedding, forward and backward
 * (ops.h: encoder_forward, encoder_backward). wpe and dwpe may be NULL: no
 * position table (the Llama family's RoPE); then out = wte[token], a copy
 * (no "+ 0", which would turn a -0 into +0), and no dwpe kernel runs.
 *
 * Backward is deterministic without float atomics:
 *   dwpe(t,c) += sum over b of dout(b,t,c), b in increasing order;
 *   dwte: the positions sorted by (token, position) with a stable radix
 *   sort, then each token's run of positions summed in position order, long
 *   runs split across blocks and joined in a fixed order (below). Each dwte
 *   row has one writer per chunk of positions. */
#include "cuda_common.cuh"

/* out(N,C) = wte[tokens[n]] + wpe[n % T] (POS), or wte[tokens[n]] as is
 * (no position table); grid-stride over N*C. */
template <typename T, bool POS>
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
        if constexpr (POS)
            out[i] = from_f<T>(to_f(wte[tok * C + c]) + to_f(wpe[(size_t)t * C + c]));
        else
            out[i] = wte[tok * C + c];
    }
}

template <typename T>
static void encoder_forward(CudaState *st, T *out, const int *tokens, const T *wte, const T *wpe,
                            int N, int T_, int C)
{
    unsigned grid = elementwise_grid((size_t)N * C, 256);
    if (wpe) {
        auto kern = encoder_forward_kernel<T, true>;
        LAUNCH(kern, grid, 256, 0, st->stream, out, tokens, wte, wpe, N, T_, C);
    } else {
        auto kern = encoder_forward_kernel<T, false>;
        LAUNCH(kern, grid, 256, 0, st->stream, out, tokens, wte, wpe, N, T_, C);
    }
}

void cuda_encoder_forward(Backend *be, void *out, const int *tokens, const void *wte,
                          const void *wpe, int B, int T, int C)
{
    CudaState *st = cuda_state(be);
    if (st->bf16)
        encoder_forward(st, (bf16 *)out, tokens, (const bf16 *)wte, (const bf16 *)wpe, B * T, T, C);
    else
        encoder_forward(st, (float *)out, tokens, (const float *)wte, (const float *)wpe, B * T,
                        T, C);
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

/* ---- dwte: a stable radix sort of the positions by token, then run sums ----
 *
 * Per chunk of n positions (all of them when N <= the chunk, below):
 *   1. sort: the pairs (token, position), positions ascending, are sorted
 *      by token with a stable least-significant-digit radix sort (8-bit
 *      digits, one pass per digit the largest token needs: 2 for GPT-2's
 *      vocabulary). Each pass: every block sorts its 1024-pair tile by the
 *      digit in shared memory (stable: 8 one-bit splits), counts its
 *      digits; one block scans the (digit, tile) counts in that order; then
 *      every block sorts its tile again and writes each pair to its digit's
 *      offset plus its place in the tile. Stability makes the result the
 *      unique order by (token, position), whatever the timing.
 *   2. sums: the sorted positions are cut into slices of ENC_SLICE; one
 *      block per slice sums each of its runs (a token's positions) in
 *      position order, per column. A run inside the slice is added to its
 *      dwte row there; a run that crosses a slice edge leaves a partial sum
 *      per slice, and the block of the slice where the run starts adds
 *      them, in slice order, to the row. Every dwte row has one writer and
 *      every sum a fixed order: the bits never depend on the run.
 * Work O(n C + n passes), against the rank sort's O(n^2) before; a token's
 * run of thousands of positions (GPT-2 text) is split across
 * ceil(run / ENC_SLICE) + 1 blocks instead of one serial block. */
#define ENC_TILE 1024 /* pairs a block sorts: 256 threads x 4 */
#define ENC_THREADS 256
#define ENC_SLICE 128 /* sorted positions a run-sum block walks */

/* Exclusive prefix sum of one int per thread over the block (ENC_THREADS);
 * *total gets the sum. buf: 2 * ENC_THREADS ints of shared memory. */
__device__ static int enc_block_scan(int v, int *buf, int *total)
{
    int t = threadIdx.x, in = 0;
    buf[t] = v;
    __syncthreads();
    for (int off = 1; off < ENC_THREADS; off <<= 1) {
        int x = buf[in * ENC_THREADS + t];
        if (t >= off) x += buf[in * ENC_THREADS + t - off];
        buf[(1 - in) * ENC_THREADS + t] = x;
        in = 1 - in;
        __syncthreads();
    }
    int incl = buf[in * ENC_THREADS + t];
    *total = buf[in * ENC_THREADS + ENC_THREADS - 1];
    __syncthreads(); /* buf is free again */
    return incl - v;
}

/* The block's tile [b * ENC_TILE, +ENC_TILE) of (key, val) into shared k, v,
 * stably sorted by the digit (key >> shift) & 255; pads past n get digit
 * 255 and val -1 and, coming last in the tile, stay after every real pair. */
__device__ static void enc_tile_sort(int *k, int *v, int *k2, int *v2, int *buf,
                                     const int *keys, const int *vals, int n, int shift)
{
    int t = threadIdx.x, base = blockIdx.x * ENC_TILE;
    for (int i = 0; i < 4; i++) {
        int j = 4 * t + i, g = base + j;
        k[j] = g < n ? keys[g] : 255 << shift;
        v[j] = g < n ? (vals ? vals[g] : g) : -1;
    }
    __syncthreads();
    for (int bit = 0; bit < 8; bit++) {
        int zeros = 0;
        for (int i = 0; i < 4; i++) zeros += !((k[4 * t + i] >> (shift + bit)) & 1);
        int total, before = enc_block_scan(zeros, buf, &total);
        int z = 0;
        for (int i = 0; i < 4; i++) {
            int j = 4 * t + i, key = k[j];
            int dst = !((key >> (shift + bit)) & 1) ? before + z++ : total + j - (before + z);
            k2[dst] = key, v2[dst] = v[j];
        }
        __syncthreads();
        for (int i = 0; i < 4; i++) k[4 * t + i] = k2[4 * t + i], v[4 * t + i] = v2[4 * t + i];
        __syncthreads();
    }
}

/* The largest token of the chunk, into *maxtok: one block. */
__global__ void __launch_bounds__(ENC_THREADS) enc_max_kernel(int *maxtok, const int *tokens, int n)
{
    __shared__ int m[ENC_THREADS];
    int t = threadIdx.x, x = 0;
    for (int i = t; i < n; i += ENC_THREADS) x = tokens[i] > x ? tokens[i] : x;
    m[t] = x;
    __syncthreads();
    for (int s = ENC_THREADS / 2; s > 0; s >>= 1) {
        if (t < s && m[t + s] > m[t]) m[t] = m[t + s];
        __syncthreads();
    }
    if (t == 0) *maxtok = m[0];
}

/* A pass whose digit is 0 for every token (above the largest token's) would
 * move nothing: its kernels only copy. */
__device__ static bool enc_pass_idle(const int *maxtok, int shift)
{
    return shift > 0 && (*maxtok >> shift) == 0;
}

/* counts[d * nb + b] = pairs of tile b with digit d */
__global__ void __launch_bounds__(ENC_THREADS)
enc_count_kernel(int *counts, const int *keys, const int *vals, int n, int shift, const int *maxtok)
{
    __shared__ int k[ENC_TILE], v[ENC_TILE], k2[ENC_TILE], v2[ENC_TILE], buf[2 * ENC_THREADS];
    __shared__ int start[256], end[256];
    if (enc_pass_idle(maxtok, shift)) return;
    enc_tile_sort(k, v, k2, v2, buf, keys, vals, n, shift);
    int t = threadIdx.x, nb = gridDim.x;
    start[t] = 0, end[t] = 0;
    __syncthreads();
    int real = n - blockIdx.x * ENC_TILE < ENC_TILE ? n - blockIdx.x * ENC_TILE : ENC_TILE;
    for (int i = 0; i < 4; i++) {
        int j = 4 * t + i;
        if (j >= real) break;
        int d = (k[j] >> shift) & 255;
        if (j == 0 || ((k[j - 1] >> shift) & 255) != d) start[d] = j;
        if (j == real - 1 || ((k[j + 1] >> shift) & 255) != d) end[d] = j + 1;
    }
    __syncthreads();
    counts[(size_t)t * nb + blockIdx.x] = end[t] - start[t];
}

/* counts (m = 256 * nb ints) into exclusive prefix sums, in index order:
 * one block of ENC_THREADS, each thread a contiguous piece. */
__global__ void __launch_bounds__(ENC_THREADS) enc_scan_kernel(int *counts, int m, int shift, const int *maxtok)
{
    __shared__ int buf[2 * ENC_THREADS];
    if (enc_pass_idle(maxtok, shift)) return;
    int per = (m + ENC_THREADS - 1) / ENC_THREADS, i0 = threadIdx.x * per;
    int i1 = i0 + per < m ? i0 + per : m, s = 0;
    for (int i = i0; i < i1; i++) s += counts[i];
    int total, run = enc_block_scan(s, buf, &total);
    for (int i = i0; i < i1; i++) {
        int c = counts[i];
        counts[i] = run;
        run += c;
    }
}

/* Each pair of tile b to offsets[d * nb + b] + its place among the tile's
 * pairs of digit d. */
__global__ void __launch_bounds__(ENC_THREADS)
enc_scatter_kernel(int *keys_out, int *vals_out, const int *offsets, const int *keys, const int *vals,
                   int n, int shift, const int *maxtok)
{
    __shared__ int k[ENC_TILE], v[ENC_TILE], k2[ENC_TILE], v2[ENC_TILE], buf[2 * ENC_THREADS];
    __shared__ int start[256];
    int t = threadIdx.x, nb = gridDim.x, base = blockIdx.x * ENC_TILE;
    if (enc_pass_idle(maxtok, shift)) { /* the order stays: copy */
        for (int i = t; i < ENC_TILE && base + i < n; i += ENC_THREADS)
            keys_out[base + i] = keys[base + i], vals_out[base + i] = vals[base + i];
        return;
    }
    enc_tile_sort(k, v, k2, v2, buf, keys, vals, n, shift);
    int real = n - base < ENC_TILE ? n - base : ENC_TILE;
    start[t] = 0;
    __syncthreads();
    for (int i = 0; i < 4; i++) {
        int j = 4 * t + i;
        if (j >= real) break;
        int d = (k[j] >> shift) & 255;
        if (j == 0 || ((k[j - 1] >> shift) & 255) != d) start[d] = j;
    }
    __syncthreads();
    for (int i = 0; i < 4; i++) {
        int j = 4 * t + i;
        if (j >= real) break;
        int d = (k[j] >> shift) & 255;
        int dst = offsets[(size_t)d * nb + blockIdx.x] + j - start[d];
        keys_out[dst] = k[j], vals_out[dst] = v[j];
    }
}

/* One block per slice [a, a + ENC_SLICE) of the sorted pairs (tok, pos):
 * per column, each run's sum in position order; a run inside the slice is
 * added to dwte here, a run that started before the slice leaves its sum
 * in lead[slice], one that goes on past it in tail[slice] (both (slices, C)
 * fp32). */
template <typename T>
__global__ void __launch_bounds__(ENC_THREADS)
enc_run_sum_kernel(T *dwte, float *lead, float *tail, const T *dout, const int *tok, const int *pos,
                   int n, int C)
{
    __shared__ int tk[ENC_SLICE + 2], ps[ENC_SLICE];
    int s = blockIdx.x, a = s * ENC_SLICE, b = a + ENC_SLICE < n ? a + ENC_SLICE : n;
    for (int i = threadIdx.x; i < b - a; i += ENC_THREADS) tk[i + 1] = tok[a + i], ps[i] = pos[a + i];
    if (threadIdx.x == 0) {
        tk[0] = a > 0 ? tok[a - 1] : -1;         /* the token before the slice */
        tk[b - a + 1] = b < n ? tok[b] : -1;     /* and after it */
    }
    __syncthreads();
    for (int c = threadIdx.x; c < C; c += ENC_THREADS) {
        for (int i = 0; i < b - a;) {
            int v = tk[i + 1], j = i;
            float acc = 0.f;
            for (; j < b - a && tk[j + 1] == v; j++) acc += to_f(dout[(size_t)ps[j] * C + c]);
            bool from_before = i == 0 && tk[0] == v, goes_on = j == b - a && tk[j + 1] == v;
            if (from_before) lead[(size_t)s * C + c] = acc;
            else if (goes_on) tail[(size_t)s * C + c] = acc;
            else {
                size_t o = (size_t)v * C + c;
                dwte[o] = from_f<T>(to_f(dwte[o]) + acc);
            }
            i = j;
        }
    }
}

/* One block per slice whose last run starts in it and goes on past it: that
 * run's tail here plus the lead of each following slice it covers, in slice
 * order, added to its dwte row. */
template <typename T>
__global__ void __launch_bounds__(ENC_THREADS)
enc_run_join_kernel(T *dwte, const float *lead, const float *tail, const int *tok, int n, int C)
{
    int s = blockIdx.x, a = s * ENC_SLICE, b = a + ENC_SLICE;
    if (b >= n) return;
    int v = tok[b - 1];
    if (tok[b] != v) return;                      /* the last run ends in the slice */
    if (tok[a] == v && a > 0 && tok[a - 1] == v) return; /* it started before: not this slice's */
    int last = s + 1; /* the last slice the run reaches */
    while ((last + 1) * ENC_SLICE < n && tok[(last + 1) * ENC_SLICE] == v) last++;
    for (int c = threadIdx.x; c < C; c += ENC_THREADS) {
        float acc = tail[(size_t)s * C + c];
        for (int k = s + 1; k <= last; k++) acc += lead[(size_t)k * C + c];
        size_t o = (size_t)v * C + c;
        dwte[o] = from_f<T>(to_f(dwte[o]) + acc);
    }
}

static_assert(ENC_THREADS == 256 && ENC_TILE == 4 * ENC_THREADS, "one digit per thread, 4 pairs each");

/* Positions per chunk: at most ENC_SORT_CHUNK (256K), fewer when a chunk's
 * scratch (enc_scratch_bytes) would not fit CUDA_SCRATCH_BYTES at this C:
 * 124M (C=768) and the XL (C=1600) sort 128K positions at a time (B=128
 * at T=1024); the chunk depends on N and C only, so the bits do not depend
 * on the run.
 * Each chunk adds its sums to dwte on its own: one more rounding of a bf16
 * dwte row per chunk that holds its token, as with gradient accumulation.
 * The emulator's EMU_ENC_SORT_CHUNK lowers it, so the checker's small
 * shapes (N = 600) take the several-chunk path too. */
#define ENC_SORT_CHUNK (1 << 18)
static size_t enc_scratch_bytes(int n, int C)
{
    size_t tiles = (size_t)(n + ENC_TILE - 1) / ENC_TILE, slices = (size_t)(n + ENC_SLICE - 1) / ENC_SLICE;
    size_t ints = 4 * (size_t)n + 256 * tiles + 4; /* two (key, val) buffers, counts, max */
    return ints * sizeof(int) + 2 * slices * C * sizeof(float);
}
static int enc_sort_chunk(int C)
{
    int chunk = cuda_test_param("ENC_SORT_CHUNK", ENC_SORT_CHUNK); /* the checks' smaller chunks */
    while (chunk > ENC_SLICE && enc_scratch_bytes(chunk, C) > CUDA_SCRATCH_BYTES) chunk /= 2;
    if (enc_scratch_bytes(chunk, C) > CUDA_SCRATCH_BYTES)
        CUDA_FATAL("encoder_backward: C=%d needs more than the %zu MiB scratch", C,
                   CUDA_SCRATCH_BYTES >> 20);
    return chunk;
}

/* The scratch of one chunk of n: the sort's buffers, then the partials. */
typedef struct {
    int *key[2], *val[2], *counts, *maxtok;
    float *lead, *tail;
} EncScratch;
static EncScratch enc_scratch(void *scratch, int n, int C)
{
    EncScratch w;
    int *p = (int *)scratch;
    size_t tiles = (size_t)(n + ENC_TILE - 1) / ENC_TILE, slices = (size_t)(n + ENC_SLICE - 1) / ENC_SLICE;
    w.key[0] = p, w.val[0] = p + n, w.key[1] = p + 2 * (size_t)n, w.val[1] = p + 3 * (size_t)n;
    w.counts = p + 4 * (size_t)n, w.maxtok = w.counts + 256 * tiles;
    w.lead = (float *)(w.maxtok + 4), w.tail = w.lead + slices * C;
    return w;
}

template <typename T>
static void encoder_backward(CudaState *st, T *dwte, T *dwpe, const T *dout, const int *tokens,
                             int B, int T_, int C)
{
    int N = B * T_;
    auto kwpe = wpe_backward_kernel<T>;
    if (dwpe) /* NULL: no position table */
        LAUNCH(kwpe, elementwise_grid((size_t)T_ * C, 256), 256, 0, st->stream, dwpe, dout, B,
               T_, C);
    /* Chunks of positions [p0, p0 + n), in order, each sorted in the scratch
     * and added to dwte before the next (stream order). */
    auto ksum = enc_run_sum_kernel<T>;
    auto kjoin = enc_run_join_kernel<T>;
    const int chunk = enc_sort_chunk(C);
    for (int p0 = 0; p0 < N; p0 += chunk) {
        const int n = N - p0 < chunk ? N - p0 : chunk;
        const int tiles = ceil_div(n, ENC_TILE), slices = ceil_div(n, ENC_SLICE);
        EncScratch w = enc_scratch(st->scratch, n, C);
        LAUNCH(enc_max_kernel, 1, ENC_THREADS, 0, st->stream, w.maxtok, tokens + p0, n);
        /* 4 passes of 8 bits cover every int token; the passes above the
         * largest token's top digit only copy (enc_pass_idle). Pass 0 reads
         * the tokens with their positions 0..n-1 (val NULL). */
        const int *in_k = tokens + p0, *in_v = NULL;
        for (int pass = 0; pass < 4; pass++) {
            int shift = 8 * pass, o = pass & 1;
            LAUNCH(enc_count_kernel, tiles, ENC_THREADS, 0, st->stream, w.counts, in_k, in_v, n,
                   shift, (const int *)w.maxtok);
            LAUNCH(enc_scan_kernel, 1, ENC_THREADS, 0, st->stream, w.counts, 256 * tiles, shift,
                   (const int *)w.maxtok);
            LAUNCH(enc_scatter_kernel, tiles, ENC_THREADS, 0, st->stream, w.key[o], w.val[o],
                   (const int *)w.counts, in_k, in_v, n, shift, (const int *)w.maxtok);
            in_k = w.key[o], in_v = w.val[o];
        }
        LAUNCH(ksum, slices, ENC_THREADS, 0, st->stream, dwte, w.lead, w.tail,
               dout + (size_t)p0 * C, in_k, in_v, n, C);
        LAUNCH(kjoin, slices, ENC_THREADS, 0, st->stream, dwte, (const float *)w.lead,
               (const float *)w.tail, in_k, n, C);
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
