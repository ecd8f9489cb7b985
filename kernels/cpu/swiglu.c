/* kernels/cpu/swiglu.c — SwiGLU, the gate of Llama's MLP, at any width F.
 *
 * inp(N,2F) = [gate | up] per row; s = sigmoid(g) = 1 / (1 + exp(-g)):
 *   forward:  out(N,F) = g s * up
 *   backward: dgate = dout * up * s (1 + g (1 - s)), dup = dout * g s
 * Elementwise; parallel over rows, the same bits at any thread count. The
 * forward recomputed from inp gives the same bits (one formula). */
#include <math.h>

#include "cpu_ops.h"

static inline float sigmoid(float g) { return 1.0f / (1.0f + expf(-g)); }

void cpu_swiglu_forward(Backend *be, void *out_, const void *inp_, int N, int F)
{
    float *out = out_;
    const float *inp = inp_;
#pragma omp parallel for if ((size_t)N * F >= CPU_PAR_MIN_ELEMS)
    for (int n = 0; n < N; n++) {
        const float *g = inp + (size_t)n * 2 * F, *u = g + F;
        float *o = out + (size_t)n * F;
        for (int i = 0; i < F; i++) o[i] = g[i] * sigmoid(g[i]) * u[i];
    }
}

void cpu_swiglu_backward(Backend *be, void *dinp_, const void *inp_, const void *dout_, int N,
                         int F)
{
    float *dinp = dinp_;
    const float *inp = inp_, *dout = dout_;
#pragma omp parallel for if ((size_t)N * F >= CPU_PAR_MIN_ELEMS)
    for (int n = 0; n < N; n++) {
        const float *g = inp + (size_t)n * 2 * F, *u = g + F, *d = dout + (size_t)n * F;
        float *dg = dinp + (size_t)n * 2 * F, *du = dg + F;
        for (int i = 0; i < F; i++) {
            float s = sigmoid(g[i]);
            dg[i] = d[i] * u[i] * (s * (1.0f + g[i] * (1.0f - s)));
            du[i] = d[i] * (g[i] * s);
        }
    }
}
