/* kernels/cpu/optimizer.c — global gradient norm and AdamW.
 *
 * grad_norm_sq: sum of g^2 over n floats, in double: 1024 fixed runs, then
 * the run sums in index order; the result does not depend on threads.
 * adamw_update: llm.c's update (see ops.h), elementwise: the host loop
 * the cuda host tier shares (kernels/host_adamw.h). */
#include <math.h>

#include "cpu_ops.h"
#include "kernels/host_adamw.h"

#define NORM_PARTS 1024

double cpu_grad_norm_sq(Backend *be, const void *grads, size_t n)
{
    /* n is cut into at most NORM_PARTS equal runs, fixed by n alone; no
     * allocation, and the same order for any thread count. */
    const float *g = grads;
    size_t run = (n + NORM_PARTS - 1) / NORM_PARTS;
    double partial[NORM_PARTS] = {0};
#pragma omp parallel for
    for (size_t k = 0; k < NORM_PARTS; k++) {
        size_t i0 = k * run, i1 = i0 + run < n ? i0 + run : n;
        double s = 0.0;
        for (size_t i = i0; i < i1; i++) s += (double)g[i] * g[i];
        partial[k] = s;
    }
    double total = 0.0;
    for (size_t k = 0; k < NORM_PARTS; k++) total += partial[k];
    return total;
}

void cpu_adamw_update(Backend *be, void *params, float *master, const void *grads, float *m,
                      float *v, size_t n, float lr, float beta1, float beta2, float eps,
                      float weight_decay, float grad_scale, int t)
{
    float bc1 = 1.0f - powf(beta1, (float)t), bc2 = 1.0f - powf(beta2, (float)t);
    host_adamw(params, master, grads, 0, m, v, n, lr, beta1, beta2, bc1, bc2, eps, weight_decay,
               grad_scale);
}
