/* kernels/cuda/gelu_residual.cu — elementwise ops (ops.h: gelu_forward,
 * gelu_backward, residual_forward). fp32 math, one rounding on store.
 * Grid-stride loops over a grid fixed by n (elementwise_grid). When every
 * pointer is 16-byte aligned (aligned16), each thread moves 16 bytes at a
 * time (Vec16) and a scalar loop takes the tail; the value of each element
 * does not depend on the path. Each element is read before it is written by
 * the same thread, so dinp may alias dout and out may alias a or b. */
#include "cuda_common.cuh"

#define GELU_SCALE 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_CUBE 0.044715f
#define EW_THREADS 256

/* gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
__device__ __forceinline__ float gelu_value(float x)
{
    float u = GELU_SCALE * (x + GELU_CUBE * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
}

/* d/dx gelu(x); sech^2 u = 1 - tanh^2 u */
__device__ __forceinline__ float gelu_slope(float x)
{
    float u = GELU_SCALE * (x + GELU_CUBE * x * x * x);
    float th = tanhf(u);
    float sech2 = 1.0f - th * th;
    return 0.5f * (1.0f + th) + 0.5f * x * sech2 * GELU_SCALE * (1.0f + 3.0f * GELU_CUBE * x * x);
}

/* The three ops as one kernel shape: out[i] = f(a[i], b[i]) (b unused by
 * gelu forward). OP 0: gelu(a); 1: gelu'(a) * b; 2: a + b. */
template <int OP> __device__ __forceinline__ float ew_apply(float a, float b)
{
    if constexpr (OP == 0) return gelu_value(a);
    else if constexpr (OP == 1) return gelu_slope(a) * b;
    else return a + b;
}

template <typename T, int OP>
__global__ void __launch_bounds__(EW_THREADS)
elementwise_kernel(T *out, const T *a, const T *b, size_t n, int vec)
{
    constexpr int V = Vec16<T>::N;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t i0 = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    const size_t nv = vec ? n / V : 0;
    for (size_t i = i0; i < nv; i += stride) {
        Vec16<T> x = *vec16_at(a + i * V), y, o;
        if constexpr (OP != 0) y = *vec16_at(b + i * V);
#pragma unroll
        for (int k = 0; k < V; k++)
            o.v[k] = from_f<T>(ew_apply<OP>(to_f(x.v[k]), OP != 0 ? to_f(y.v[k]) : 0.0f));
        *vec16_at(out + i * V) = o;
    }
    for (size_t i = nv * V + i0; i < n; i += stride)
        out[i] = from_f<T>(ew_apply<OP>(to_f(a[i]), OP != 0 ? to_f(b[i]) : 0.0f));
}

/* The grid covers the vector loop's n / V threads; it depends on n only. */
template <typename T, int OP>
static void elementwise_run(CudaState *st, void *out, const void *a, const void *b, size_t n)
{
    constexpr int V = Vec16<T>::N;
    auto kern = elementwise_kernel<T, OP>;
    const int vec = aligned16(out) && aligned16(a) && aligned16(b);
    LAUNCH(kern, elementwise_grid((n + V - 1) / V, EW_THREADS), EW_THREADS, 0, st->stream,
           (T *)out, (const T *)a, (const T *)b, n, vec);
}

template <int OP>
static void elementwise_launch(CudaState *st, void *out, const void *a, const void *b, size_t n)
{
    if (n == 0) return;
    if (st->bf16) elementwise_run<bf16, OP>(st, out, a, b, n);
    else elementwise_run<float, OP>(st, out, a, b, n);
}

void cuda_gelu_forward(Backend *be, void *out, const void *inp, size_t n)
{
    elementwise_launch<0>(cuda_state(be), out, inp, NULL, n);
}

/* dinp = gelu'(inp) * dout */
void cuda_gelu_backward(Backend *be, void *dinp, const void *inp, const void *dout, size_t n)
{
    elementwise_launch<1>(cuda_state(be), dinp, inp, dout, n);
}

void cuda_residual_forward(Backend *be, void *out, const void *a, const void *b, size_t n)
{
    elementwise_launch<2>(cuda_state(be), out, a, b, n);
}
