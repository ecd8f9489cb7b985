/* kernels/cuda/qknorm.cu — Qwen3's qk-norm (ops.h qknorm_forward,
 * qknorm_backward): RMSNorm over each q and k head (hs features) of the
 * qkv layout (N, C + 2 KVH hs), row n holding NH q heads, KVH k heads and
 * KVH v heads; q heads weighted by wq (hs), k heads by wk (hs).
 *
 * Forward: one warp per (row, head) of the NH + 2 KVH heads: a q or k head
 * sums its squares (lanes strided over hs, warp_sum), writes rstd (f32) and
 * out = x * rstd * w; a v head is copied when out is not inp.
 * Backward, in two passes, so that dinp may be dout (in place):
 *  1. the weights' gradients: block y takes a chunk of rows and one thread
 *     each of the 2 hs columns (wq's, then wk's) sums dout * xhat over the
 *     chunk's rows and the column's heads in order into st->scratch; a
 *     finish kernel adds the chunks in order into dwq, dwk (+=);
 *  2. dinp, one warp per (row, head): rmsnorm_backward's rule, but = (the
 *     dot over the head first, then each element from its own dout); v
 *     heads copied when dinp is not dout.
 * No atomics: the same bits every run, fixed by the shape alone. */
#include "cuda_common.cuh"

#define QN_WARPS 8       /* warps per block, one (row, head) each */
#define QNB_MIN_ROWS 8   /* rows per weight-gradient chunk, at least */
#define QNB_CHUNKS 512   /* weight-gradient chunks, at most */
#define QNB_THREADS 256  /* threads of a weight-gradient block (columns strided) */

/* out(N, W) = (q, k normed; v copied unless in place), rstd(N, NH + KVH) = */
template <typename T>
__global__ void qknorm_forward_kernel(T *out, float *rstd, const T *inp, const T *wq,
                                      const T *wk, int N, int hs, int NH, int KVH, float eps)
{
    const int lane = threadIdx.x % 32, H = NH + KVH, HA = H + KVH;
    const long job = (long)blockIdx.x * QN_WARPS + threadIdx.x / 32;
    if (job >= (long)N * HA) return; /* whole warps leave together */
    const int n = (int)(job / HA), h = (int)(job % HA);
    const size_t at = ((size_t)n * HA + h) * hs;
    const T *x = inp + at;
    T *o = out + at;
    if (h >= H) { /* a v head */
        if (o != x)
            for (int i = lane; i < hs; i += 32) o[i] = x[i];
        return;
    }
    const T *w = h < NH ? wq : wk;
    float s = 0.f;
    for (int i = lane; i < hs; i += 32) {
        const float v = to_f(x[i]);
        s += v * v;
    }
    const float r = 1.0f / sqrtf(warp_sum(s) / hs + eps);
    __syncwarp(); /* every lane has read its x before any writes o (in place) */
    for (int i = lane; i < hs; i += 32) o[i] = from_f<T>(to_f(x[i]) * r * to_f(w[i]));
    if (lane == 0) rstd[(size_t)n * H + h] = r;
}

/* Chunk y = blockIdx.x of rows [y*rows, min(N, (y+1)*rows)): pw[y*2hs + c]
 * = sum over the rows, then the column's heads, of dout * x * rstd. */
template <typename T>
__global__ void qknorm_dw_kernel(float *pw, const T *dout, const T *inp, const float *rstd,
                                 int N, int hs, int NH, int KVH, int rows)
{
    const int H = NH + KVH, HA = H + KVH;
    const int r0 = blockIdx.x * rows, r1 = r0 + rows < N ? r0 + rows : N;
    for (int c = threadIdx.x; c < 2 * hs; c += blockDim.x) {
        const int k = c >= hs, i = c - k * hs, h0 = k ? NH : 0, h1 = k ? H : NH;
        float acc = 0.f;
        for (int n = r0; n < r1; n++)
            for (int h = h0; h < h1; h++) {
                const size_t at = ((size_t)n * HA + h) * hs + i;
                acc += to_f(dout[at]) * (to_f(inp[at]) * rstd[(size_t)n * H + h]);
            }
        pw[(size_t)blockIdx.x * 2 * hs + c] = acc;
    }
}

/* dwq(i) += sum_y pw[y*2hs + i], dwk(i) += sum_y pw[y*2hs + hs + i], chunks in order */
template <typename T>
__global__ void qknorm_dw_finish_kernel(T *dwq, T *dwk, const float *pw, int nchunks, int hs)
{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= 2 * hs) return;
    float s = 0.f;
    for (int y = 0; y < nchunks; y++) s += pw[(size_t)y * 2 * hs + c];
    T *dw = c < hs ? dwq + c : dwk + (c - hs);
    *dw = from_f<T>(to_f(*dw) + s);
}

/* dinp(N, W) = (q, k: the norm's backward; v copied unless in place) */
template <typename T>
__global__ void qknorm_dinp_kernel(T *dinp, const T *dout, const T *inp, const T *wq,
                                   const T *wk, const float *rstd, int N, int hs, int NH,
                                   int KVH)
{
    const int lane = threadIdx.x % 32, H = NH + KVH, HA = H + KVH;
    const long job = (long)blockIdx.x * QN_WARPS + threadIdx.x / 32;
    if (job >= (long)N * HA) return;
    const int n = (int)(job / HA), h = (int)(job % HA);
    const size_t at = ((size_t)n * HA + h) * hs;
    const T *d = dout + at, *x = inp + at;
    T *di = dinp + at;
    if (h >= H) {
        if (di != d)
            for (int i = lane; i < hs; i += 32) di[i] = d[i];
        return;
    }
    const T *w = h < NH ? wq : wk;
    const float r = rstd[(size_t)n * H + h];
    float dot = 0.f;
    for (int i = lane; i < hs; i += 32) dot += to_f(w[i]) * to_f(d[i]) * (to_f(x[i]) * r);
    dot = warp_sum(dot) / hs;
    __syncwarp(); /* every lane has read dout for the dot before any writes dinp */
    for (int i = lane; i < hs; i += 32) {
        const float v = (to_f(w[i]) * to_f(d[i]) - to_f(x[i]) * r * dot) * r;
        di[i] = from_f<T>(v);
    }
}

template <typename T>
static void qknorm_forward(CudaState *st, T *out, float *rstd, const T *inp, const T *wq,
                           const T *wk, int N, int C, int NH, int KVH, float eps)
{
    if (N <= 0) return;
    const int hs = C / NH;
    const size_t jobs = (size_t)N * (NH + 2 * KVH);
    auto kern = qknorm_forward_kernel<T>;
    LAUNCH(kern, ceil_div(jobs, QN_WARPS), 32 * QN_WARPS, 0, st->stream, out, rstd, inp, wq, wk,
           N, hs, NH, KVH, eps);
}

template <typename T>
static void qknorm_backward(CudaState *st, T *dinp, T *dwq, T *dwk, const T *dout, const T *inp,
                            const T *wq, const T *wk, const float *rstd, int N, int C, int NH,
                            int KVH)
{
    if (N <= 0) return;
    const int hs = C / NH;
    size_t cap = CUDA_SCRATCH_BYTES / ((size_t)2 * hs * sizeof(float));
    if (cap < 1) CUDA_FATAL("qknorm_backward: head size %d too wide for the scratch", hs);
    size_t chunks = cap < QNB_CHUNKS ? cap : QNB_CHUNKS;
    size_t rows = ((size_t)N + chunks - 1) / chunks;
    if (rows < QNB_MIN_ROWS) rows = QNB_MIN_ROWS;
    const int nchunks = (int)ceil_div((size_t)N, rows);
    float *pw = (float *)st->scratch;
    auto kdw = qknorm_dw_kernel<T>;
    LAUNCH(kdw, nchunks, QNB_THREADS, 0, st->stream, pw, dout, inp, rstd, N, hs, NH, KVH,
           (int)rows);
    auto kfin = qknorm_dw_finish_kernel<T>;
    LAUNCH(kfin, ceil_div((size_t)2 * hs, 128), 128, 0, st->stream, dwq, dwk, pw, nchunks, hs);
    const size_t jobs = (size_t)N * (NH + 2 * KVH);
    auto kdi = qknorm_dinp_kernel<T>;
    LAUNCH(kdi, ceil_div(jobs, QN_WARPS), 32 * QN_WARPS, 0, st->stream, dinp, dout, inp, wq, wk,
           rstd, N, hs, NH, KVH);
}

void cuda_qknorm_forward(Backend *be, void *out, float *rstd, const void *inp, const void *wq,
                         const void *wk, int N, int C, int NH, int KVH, float eps)
{
    CudaState *st = cuda_state(be);
    if (st->bf16)
        qknorm_forward(st, (bf16 *)out, rstd, (const bf16 *)inp, (const bf16 *)wq,
                       (const bf16 *)wk, N, C, NH, KVH, eps);
    else
        qknorm_forward(st, (float *)out, rstd, (const float *)inp, (const float *)wq,
                       (const float *)wk, N, C, NH, KVH, eps);
}

void cuda_qknorm_backward(Backend *be, void *dinp, void *dwq, void *dwk, const void *dout,
                          const void *inp, const void *wq, const void *wk, const float *rstd,
                          int N, int C, int NH, int KVH)
{
    CudaState *st = cuda_state(be);
    if (st->bf16)
        qknorm_backward(st, (bf16 *)dinp, (bf16 *)dwq, (bf16 *)dwk, (const bf16 *)dout,
                        (const bf16 *)inp, (const bf16 *)wq, (const bf16 *)wk, rstd, N, C, NH,
                        KVH);
    else
        qknorm_backward(st, (float *)dinp, (float *)dwq, (float *)dwk, (const float *)dout,
                        (const float *)inp, (const float *)wq, (const float *)wk, rstd, N, C,
                        NH, KVH);
}
