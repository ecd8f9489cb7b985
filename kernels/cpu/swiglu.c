/* kernels/cpu/swiglu.c — SwiGLU, the gate of Llama's MLP, at any width F.
 *
 * inp(N,2F) = [gate | up] per row; s = sigmoid(g) = 1 / (1 + exp(-g)):
 *   forward:  out(N,F) = g s * up
 *   backward: dgate = dout * up * s (1 + g (1 - s)), dup = dout * g s
 * Elementwise; parallel over rows, the same bits at any thread count. The
 * forward recomputed from inp gives the same bits (one formula).
 *
 * sigmoid through the attention's exp (att_exp, attention_tile.h: a
 * polynomial, about 2 ulp, for arguments <= 0), so that the loops
 * vectorize: e = exp(-|g|) in (0, 1], s = 1 / (1 + e) for g >= 0 and
 * e / (1 + e) below (no overflow at any g). glibc's expf is a call per
 * element: the scalar loops took ~4% of a llama-125m step at B=1 T=1024
 * (dev/notes/llama-cpu.md). Compiled once per instruction set
 * (ATT_CLONES), like the attention: the bits differ between machines of
 * different ISA, never within one. */
#include <math.h>

#include "attention_tile.h"
#include "cpu_ops.h"

ATT_INLINE float swi_sigmoid(float g)
{
    float e = att_exp(-fabsf(g));
    return (g >= 0.0f ? 1.0f : e) / (1.0f + e);
}

ATT_CLONES
void cpu_swiglu_forward(Backend *be, void *out_, const void *inp_, int N, int F)
{
    float *out = out_;
    const float *inp = inp_;
#pragma omp parallel for if ((size_t)N * F >= CPU_PAR_MIN_ELEMS)
    for (int n = 0; n < N; n++) {
        const float *g = inp + (size_t)n * 2 * F, *u = g + F;
        float *o = out + (size_t)n * F;
#pragma omp simd
        for (int i = 0; i < F; i++) o[i] = g[i] * swi_sigmoid(g[i]) * u[i];
    }
}

ATT_CLONES
void cpu_swiglu_backward(Backend *be, void *dinp_, const void *inp_, const void *dout_, int N,
                         int F)
{
    float *dinp = dinp_;
    const float *inp = inp_, *dout = dout_;
#pragma omp parallel for if ((size_t)N * F >= CPU_PAR_MIN_ELEMS)
    for (int n = 0; n < N; n++) {
        const float *g = inp + (size_t)n * 2 * F, *u = g + F, *d = dout + (size_t)n * F;
        float *dg = dinp + (size_t)n * 2 * F, *du = dg + F;
#pragma omp simd
        for (int i = 0; i < F; i++) {
            float s = swi_sigmoid(g[i]);
            dg[i] = d[i] * u[i] * (s * (1.0f + g[i] * (1.0f - s)));
            du[i] = d[i] * (g[i] * s);
        }
    }
}
