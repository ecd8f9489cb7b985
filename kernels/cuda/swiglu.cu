/* kernels/cuda/swiglu.cu — SwiGLU, the gate of Llama's MLP (ops.h:
 * swiglu_forward, swiglu_backward), at any width F.
 *
 * inp(N,2F) = [gate | up] per row; s = sigmoid(g) = 1 / (1 + exp(-g)):
 *   forward:  out(N,F) = g s * up
 *   backward: dgate = dout * up * s (1 + g (1 - s)), dup = dout * g s
 * fp32 math, one rounding on store. A grid-stride loop over units of V
 * consecutive columns of one row (V = Vec16<T>::N when F % V == 0 and every
 * pointer is 16-byte aligned: one 16-byte access per tensor; otherwise V =
 * 1); the grid is fixed by N*F alone, and each element's value does not
 * depend on the path. expf as on the cpu (not the fast __expf): the cpu
 * comparison's 1e-5 holds in fp32. */
#include "cuda_common.cuh"

#define SG_THREADS 256

__device__ __forceinline__ float sg_sigmoid(float g) { return 1.0f / (1.0f + expf(-g)); }

template <typename T, int V, int BWD>
__device__ __forceinline__ void sg_unit(T *dst, const T *inp, const T *dout, size_t row, int j,
                                        int F)
{
    const T *gp = inp + row * 2 * F + j, *up = gp + F;
    float g[V], u[V], d[V];
    if constexpr (V > 1) {
        const Vec16<T> gv = *vec16_at(gp), uv = *vec16_at(up);
#pragma unroll
        for (int k = 0; k < V; k++) g[k] = to_f(gv.v[k]), u[k] = to_f(uv.v[k]);
        if constexpr (BWD) {
            const Vec16<T> dv = *vec16_at(dout + row * F + j);
#pragma unroll
            for (int k = 0; k < V; k++) d[k] = to_f(dv.v[k]);
        }
    } else {
        g[0] = to_f(gp[0]), u[0] = to_f(up[0]);
        if constexpr (BWD) d[0] = to_f(dout[row * F + j]);
    }
    if constexpr (!BWD) {
        float o[V];
#pragma unroll
        for (int k = 0; k < V; k++) o[k] = g[k] * sg_sigmoid(g[k]) * u[k];
        T *op = dst + row * F + j;
        if constexpr (V > 1) {
            Vec16<T> ov;
#pragma unroll
            for (int k = 0; k < V; k++) ov.v[k] = from_f<T>(o[k]);
            *vec16_at(op) = ov;
        } else {
            op[0] = from_f<T>(o[0]);
        }
    } else {
        float dg[V], du[V];
#pragma unroll
        for (int k = 0; k < V; k++) {
            const float s = sg_sigmoid(g[k]);
            dg[k] = d[k] * u[k] * (s * (1.0f + g[k] * (1.0f - s)));
            du[k] = d[k] * (g[k] * s);
        }
        T *dgp = dst + row * 2 * F + j, *dup = dgp + F;
        if constexpr (V > 1) {
            Vec16<T> a, b;
#pragma unroll
            for (int k = 0; k < V; k++) a.v[k] = from_f<T>(dg[k]), b.v[k] = from_f<T>(du[k]);
            *vec16_at(dgp) = a;
            *vec16_at(dup) = b;
        } else {
            dgp[0] = from_f<T>(dg[0]);
            dup[0] = from_f<T>(du[0]);
        }
    }
}

/* BWD 0: dst = out(N,F); 1: dst = dinp(N,2F). Units of V columns; F % V == 0. */
template <typename T, int V, int BWD>
__global__ void __launch_bounds__(SG_THREADS)
swiglu_kernel(T *dst, const T *inp, const T *dout, int N, int F)
{
    const size_t per_row = (size_t)(F / V), units = (size_t)N * per_row;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < units; i += stride)
        sg_unit<T, V, BWD>(dst, inp, dout, i / per_row, (int)(i % per_row) * V, F);
}

template <typename T, int BWD>
static void swiglu_run(CudaState *st, void *dst, const void *inp, const void *dout, int N, int F)
{
    if (N <= 0 || F <= 0) return;
    constexpr int V = Vec16<T>::N;
    const size_t n = (size_t)N * F;
    /* the grid covers the vector path's units; it depends on N*F only */
    const unsigned grid = elementwise_grid((n + V - 1) / V, SG_THREADS);
    if (F % V == 0 && aligned16(dst) && aligned16(inp) && aligned16(dout)) {
        auto kern = swiglu_kernel<T, V, BWD>;
        LAUNCH(kern, grid, SG_THREADS, 0, st->stream, (T *)dst, (const T *)inp,
               (const T *)dout, N, F);
    } else {
        auto kern = swiglu_kernel<T, 1, BWD>;
        LAUNCH(kern, grid, SG_THREADS, 0, st->stream, (T *)dst, (const T *)inp,
               (const T *)dout, N, F);
    }
}

void cuda_swiglu_forward(Backend *be, void *out, const void *inp, int N, int F)
{
    CudaState *st = cuda_state(be);
    if (st->bf16) swiglu_run<bf16, 0>(st, out, inp, NULL, N, F);
    else swiglu_run<float, 0>(st, out, inp, NULL, N, F);
}

void cuda_swiglu_backward(Backend *be, void *dinp, const void *inp, const void *dout, int N,
                          int F)
{
    CudaState *st = cuda_state(be);
    if (st->bf16) swiglu_run<bf16, 1>(st, dinp, inp, dout, N, F);
    else swiglu_run<float, 1>(st, dinp, inp, dout, N, F);
}
