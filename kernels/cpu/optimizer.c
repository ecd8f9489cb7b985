/* kernels/cpu/optimizer.c — global gradient norm and AdamW.
 *
 * grad_norm_sq: sum of g^2 over n floats. Fixed 64K-element chunks are each
 * summed in double, then the chunk sums are added in index order: the result
 * does not depend on the thread count.
 * adamw_update: llm.c's update (see ops.h), elementwise. */
#include <math.h>
#include <stdlib.h>

#include "cpu_ops.h"

#define NORM_CHUNK 65536

double cpu_grad_norm_sq(Backend *be, const void *grads, size_t n)
{
    const float *g = grads;
    size_t nchunks = (n + NORM_CHUNK - 1) / NORM_CHUNK;
    double partial_stack[64];
    double *partial = nchunks <= 64 ? partial_stack : malloc(sizeof(double) * nchunks);
    if (!partial) return NAN; /* reported by the caller as a non-finite norm */
#pragma omp parallel for
    for (size_t k = 0; k < nchunks; k++) {
        size_t i0 = k * NORM_CHUNK, i1 = i0 + NORM_CHUNK < n ? i0 + NORM_CHUNK : n;
        double s = 0.0;
        for (size_t i = i0; i < i1; i++) s += (double)g[i] * g[i];
        partial[k] = s;
    }
    double total = 0.0;
    for (size_t k = 0; k < nchunks; k++) total += partial[k];
    if (partial != partial_stack) free(partial);
    return total;
}

void cpu_adamw_update(Backend *be, void *params, float *master, const void *grads_, float *m,
                      float *v, size_t n, float lr, float beta1, float beta2, float eps,
                      float weight_decay, float grad_scale, int t)
{
    float *p = master ? master : params;
    const float *grads = grads_;
    float bc1 = 1.0f - powf(beta1, (float)t), bc2 = 1.0f - powf(beta2, (float)t);
#pragma omp parallel for
    for (size_t i = 0; i < n; i++) {
        float g = grads[i] * grad_scale;
        float mi = beta1 * m[i] + (1.0f - beta1) * g;
        float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        float mhat = mi / bc1, vhat = vi / bc2;
        p[i] -= lr * (mhat / (sqrtf(vhat) + eps) + weight_decay * p[i]);
    }
    if (master) {
        float *w = params;
#pragma omp parallel for
        for (size_t i = 0; i < n; i++) w[i] = master[i];
    }
}
