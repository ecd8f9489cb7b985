/* kernels/cuda/adamw.cu — the optimizer (ops.h: grad_norm_sq, adamw_update).
 *
 * grad_norm_sq: two passes with a grid fixed at NORM_BLOCKS blocks, whatever
 * the GPU: each thread sums squares in double over a grid-stride range, each
 * block adds its threads in a fixed tree, then one thread adds the block
 * partials in order. The double goes back to the host (one sync). */
#include "cuda_common.cuh"

#define NORM_BLOCKS 512
#define NORM_THREADS 256

template <typename T>
__global__ void __launch_bounds__(NORM_THREADS)
norm_partials_kernel(double *part, const T *g, size_t n)
{
    __shared__ double warp_part[NORM_THREADS / 32];
    double s = 0.0;
    for (size_t i = blockIdx.x * (size_t)NORM_THREADS + threadIdx.x; i < n;
         i += (size_t)NORM_BLOCKS * NORM_THREADS) {
        double x = (double)to_f(g[i]);
        s += x * x;
    }
    s = warp_sum_d(s);
    if (threadIdx.x % 32 == 0) warp_part[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        double t = 0.0;
        for (int w = 0; w < NORM_THREADS / 32; w++) t += warp_part[w];
        part[blockIdx.x] = t;
    }
}

__global__ void norm_finish_kernel(double *out, const double *part)
{
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    double t = 0.0;
    for (int b = 0; b < NORM_BLOCKS; b++) t += part[b];
    *out = t;
}

double cuda_grad_norm_sq(Backend *be, const void *grads, size_t n)
{
    CudaState *st = cuda_state(be);
    double *part = (double *)st->scratch;
    double *out = part + NORM_BLOCKS;
    if (st->bf16) {
        auto kern = norm_partials_kernel<bf16>;
        LAUNCH(kern, NORM_BLOCKS, NORM_THREADS, 0, st->stream, part, (const bf16 *)grads, n);
    } else {
        auto kern = norm_partials_kernel<float>;
        LAUNCH(kern, NORM_BLOCKS, NORM_THREADS, 0, st->stream, part, (const float *)grads, n);
    }
    LAUNCH(norm_finish_kernel, 1, 32, 0, st->stream, out, part);
    double h = 0.0;
    CUDA_CHECK(cudaMemcpyAsync(&h, out, sizeof h, cudaMemcpyDeviceToHost, st->stream));
    CUDA_CHECK(cudaStreamSynchronize(st->stream));
    return h;
}

/* llm.c's AdamW (see ops.h). b1c, b2c are the bias corrections 1 - beta^t.
 * With a master, the master is updated and params gets its rounding;
 * without one, params is read, updated and written in its own type.
 * Every step is one rounded operation (__fmul_rn and friends, which nvcc
 * never fuses into an FMA), in the order kernels/host_adamw.c spells out:
 * the cuda host tier's AdamW (--offload optimizer) runs that host loop and
 * must give these bits. */
template <typename T>
__global__ void adamw_kernel(T *params, float *master, const T *grads, float *m, float *v,
                             size_t n, float lr, float b1, float b2, float b1c, float b2c,
                             float eps, float wd, float grad_scale)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float g = __fmul_rn(to_f(grads[i]), grad_scale);
        float mi = __fadd_rn(__fmul_rn(b1, m[i]), __fmul_rn(1.0f - b1, g));
        float vi = __fadd_rn(__fmul_rn(b2, v[i]), __fmul_rn(__fmul_rn(1.0f - b2, g), g));
        m[i] = mi;
        v[i] = vi;
        float mhat = __fdiv_rn(mi, b1c), vhat = __fdiv_rn(vi, b2c);
        float p = master ? master[i] : to_f(params[i]);
        float step = __fadd_rn(__fdiv_rn(mhat, __fadd_rn(__fsqrt_rn(vhat), eps)), __fmul_rn(wd, p));
        p = __fsub_rn(p, __fmul_rn(lr, step));
        if (master) master[i] = p;
        params[i] = from_f<T>(p);
    }
}

void cuda_adamw_update(Backend *be, void *params, float *master, const void *grads, float *m,
                       float *v, size_t n, float lr, float beta1, float beta2, float eps,
                       float weight_decay, float grad_scale, int t)
{
    CudaState *st = cuda_state(be);
    if (n == 0) return;
    float b1c = 1.0f - powf(beta1, (float)t);
    float b2c = 1.0f - powf(beta2, (float)t);
    unsigned g = elementwise_grid(n, 256);
    if (st->bf16) {
        auto kern = adamw_kernel<bf16>;
        LAUNCH(kern, g, 256, 0, st->stream, (bf16 *)params, master, (const bf16 *)grads, m, v,
               n, lr, beta1, beta2, b1c, b2c, eps, weight_decay, grad_scale);
    } else {
        auto kern = adamw_kernel<float>;
        LAUNCH(kern, g, 256, 0, st->stream, (float *)params, master, (const float *)grads, m,
               v, n, lr, beta1, beta2, b1c, b2c, eps, weight_decay, grad_scale);
    }
}
