/* kernels/cpu/elementwise.c — GELU (tanh form) and the residual add.
 *
 * gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
 * gelu'(x) = 0.5 (1 + tanh(u)) + 0.5 x sech^2(u) sqrt(2/pi) (1 + 3*0.044715 x^2)
 * All elementwise over n floats; outputs may alias inputs. */
#include <math.h>

#include "cpu_ops.h"

#define GELU_SCALE 0.7978845608028654f /* sqrt(2/pi) */

void cpu_gelu_forward(Backend *be, void *out_, const void *inp_, size_t n)
{
    float *out = out_;
    const float *x = inp_;
#pragma omp parallel for if (n >= CPU_PAR_MIN_ELEMS)
    for (size_t i = 0; i < n; i++) {
        float u = GELU_SCALE * (x[i] + 0.044715f * x[i] * x[i] * x[i]);
        out[i] = 0.5f * x[i] * (1.0f + tanhf(u));
    }
}

void cpu_gelu_backward(Backend *be, void *dinp_, const void *inp_, const void *dout_, size_t n)
{
    float *dinp = dinp_;
    const float *x = inp_, *dout = dout_;
#pragma omp parallel for
    for (size_t i = 0; i < n; i++) {
        float u = GELU_SCALE * (x[i] + 0.044715f * x[i] * x[i] * x[i]);
        float th = tanhf(u), sech2 = 1.0f - th * th; /* sech^2 = 1 - tanh^2 */
        float grad = 0.5f * (1.0f + th) +
                     0.5f * x[i] * sech2 * GELU_SCALE * (1.0f + 3.0f * 0.044715f * x[i] * x[i]);
        dinp[i] = grad * dout[i];
    }
}

void cpu_residual_forward(Backend *be, void *out_, const void *a_, const void *b_, size_t n)
{
    float *out = out_;
    const float *a = a_, *b = b_;
#pragma omp parallel for if (n >= CPU_PAR_MIN_ELEMS)
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}
