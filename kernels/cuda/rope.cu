/* kernels/cuda/rope.cu — the rotary position embedding on attention's q
 * and k (ops.h rope_forward, rope_backward; the table: kernels/rope.h).
 *
 * Rows of qkv(N, W), N = B*T, W = C + 2*KVH*hs: the NH query heads and then
 * the KVH key heads of row n turn by the angles of position t = n % T; the
 * v part is copied when out is not inp. Pair i < hs/2 of a head, with c,
 * s = table row t's cos(t f_i), sin(t f_i):
 *   forward:  (a, b) = (x_i, x_{i+hs/2}) -> (a c - b s, b c + a s)
 *   backward: the inverse rotation, s -> -s.
 * One thread a pair (it reads both before writing both: in place is safe),
 * a grid-stride loop whose grid depends on the element count only; fp32
 * math and one rounding on store. Each element's value is one expression
 * of its inputs, so runs agree bit for bit; against the cpu the fused
 * multiply-adds the compiler may form differ in the last bits (the
 * check's tolerance, dev/cuda/check_llama.c). */
#include "cuda_common.cuh"

#define RP_THREADS 256

/* dir +1.0f: forward, -1.0f: backward. pairs = N * (NH + KVH) * half. */
template <typename T>
__global__ void __launch_bounds__(RP_THREADS)
rope_kernel(T *out, const T *inp, const float *table, size_t pairs, int T_, int hs, int nheads,
            size_t W, float dir)
{
    const int half = hs / 2;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < pairs; k += stride) {
        const int i = (int)(k % half);
        const size_t nh = k / half; /* row n, head h */
        const int h = (int)(nh % nheads);
        const size_t n = nh / nheads;
        const float *cs = table + (size_t)(n % T_) * hs;
        const float c = cs[i], s = dir * cs[half + i];
        const size_t at = n * W + (size_t)h * hs + i;
        const float a = to_f(inp[at]), b = to_f(inp[at + half]);
        out[at] = from_f<T>(a * c - b * s);
        out[at + half] = from_f<T>(b * c + a * s);
    }
}

/* The v part of each row, [rot, W), copied as is (out != inp only). */
template <typename T>
__global__ void __launch_bounds__(RP_THREADS)
rope_copy_v(T *out, const T *inp, size_t N, size_t W, size_t rot)
{
    const size_t per = W - rot, n_el = N * per;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n_el; k += stride) {
        const size_t at = (k / per) * W + rot + k % per;
        out[at] = inp[at];
    }
}

template <typename T>
static void rope_run(CudaState *st, void *out, const void *inp, const float *table, int B, int T_,
                     int C, int NH, int KVH, float dir)
{
    const int hs = C / NH, nheads = NH + KVH;
    const size_t N = (size_t)B * T_, W = (size_t)C + (size_t)2 * KVH * hs;
    const size_t rot = (size_t)nheads * hs, pairs = N * nheads * (hs / 2);
    if (pairs == 0) return;
    LAUNCH(rope_kernel<T>, elementwise_grid(pairs, RP_THREADS), RP_THREADS, 0, st->stream,
           (T *)out, (const T *)inp, table, pairs, T_, hs, nheads, W, dir);
    if (out != inp && W > rot)
        LAUNCH(rope_copy_v<T>, elementwise_grid(N * (W - rot), RP_THREADS), RP_THREADS, 0,
               st->stream, (T *)out, (const T *)inp, N, W, rot);
}

void cuda_rope_forward(Backend *be, void *out, const void *inp, const float *table, int B, int T,
                       int C, int NH, int KVH)
{
    CudaState *st = cuda_state(be);
    if (st->bf16) rope_run<bf16>(st, out, inp, table, B, T, C, NH, KVH, 1.0f);
    else rope_run<float>(st, out, inp, table, B, T, C, NH, KVH, 1.0f);
}

void cuda_rope_backward(Backend *be, void *dinp, const void *dout, const float *table, int B,
                        int T, int C, int NH, int KVH)
{
    CudaState *st = cuda_state(be);
    if (st->bf16) rope_run<bf16>(st, dinp, dout, table, B, T, C, NH, KVH, -1.0f);
    else rope_run<float>(st, dinp, dout, table, B, T, C, NH, KVH, -1.0f);
}
