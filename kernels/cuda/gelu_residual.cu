/* kernels/cuda/gelu_residual.cu — elementwise ops (ops.h: gelu_forward,
 * gelu_backward, residual_forward). fp32 math, one rounding on store.
 * Grid-stride loops over a grid fixed by n (elementwise_grid). Each element
 * is read before it is written by the same thread, so dinp may alias dout
 * and out may alias a or b. */
#include "cuda_common.cuh"

#define GELU_SCALE 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_CUBE 0.044715f

/* out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
template <typename T>
__global__ void gelu_forward_kernel(T *out, const T *inp, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float x = to_f(inp[i]);
        float u = GELU_SCALE * (x + GELU_CUBE * x * x * x);
        out[i] = from_f<T>(0.5f * x * (1.0f + tanhf(u)));
    }
}

/* dinp = dout * d/dx gelu(x); sech^2 u = 1 - tanh^2 u. */
template <typename T>
__global__ void gelu_backward_kernel(T *dinp, const T *inp, const T *dout, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float x = to_f(inp[i]);
        float u = GELU_SCALE * (x + GELU_CUBE * x * x * x);
        float th = tanhf(u);
        float sech2 = 1.0f - th * th;
        float g = 0.5f * (1.0f + th) +
                  0.5f * x * sech2 * GELU_SCALE * (1.0f + 3.0f * GELU_CUBE * x * x);
        dinp[i] = from_f<T>(g * to_f(dout[i]));
    }
}

template <typename T>
__global__ void residual_forward_kernel(T *out, const T *a, const T *b, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = from_f<T>(to_f(a[i]) + to_f(b[i]));
}

void cuda_gelu_forward(Backend *be, void *out, const void *inp, size_t n)
{
    CudaState *st = cuda_state(be);
    if (n == 0) return;
    unsigned g = elementwise_grid(n, 256);
    if (st->bf16) {
        auto kern = gelu_forward_kernel<bf16>;
        LAUNCH(kern, g, 256, 0, st->stream, (bf16 *)out, (const bf16 *)inp, n);
    } else {
        auto kern = gelu_forward_kernel<float>;
        LAUNCH(kern, g, 256, 0, st->stream, (float *)out, (const float *)inp, n);
    }
}

void cuda_gelu_backward(Backend *be, void *dinp, const void *inp, const void *dout, size_t n)
{
    CudaState *st = cuda_state(be);
    if (n == 0) return;
    unsigned g = elementwise_grid(n, 256);
    if (st->bf16) {
        auto kern = gelu_backward_kernel<bf16>;
        LAUNCH(kern, g, 256, 0, st->stream, (bf16 *)dinp, (const bf16 *)inp,
               (const bf16 *)dout, n);
    } else {
        auto kern = gelu_backward_kernel<float>;
        LAUNCH(kern, g, 256, 0, st->stream, (float *)dinp, (const float *)inp,
               (const float *)dout, n);
    }
}

void cuda_residual_forward(Backend *be, void *out, const void *a, const void *b, size_t n)
{
    CudaState *st = cuda_state(be);
    if (n == 0) return;
    unsigned g = elementwise_grid(n, 256);
    if (st->bf16) {
        auto kern = residual_forward_kernel<bf16>;
        LAUNCH(kern, g, 256, 0, st->stream, (bf16 *)out, (const bf16 *)a, (const bf16 *)b, n);
    } else {
        auto kern = residual_forward_kernel<float>;
        LAUNCH(kern, g, 256, 0, st->stream, (float *)out, (const float *)a, (const float *)b,
               n);
    }
}
