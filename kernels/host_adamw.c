/* kernels/host_adamw.c — the host's AdamW (host_adamw.h). Compiled with
 * -ffp-contract=off (Makefile): a fused multiply-add here would round once
 * where the device kernel rounds twice. */
#include "host_adamw.h"

#include <math.h>
#include <string.h>

float host_bf16_to_float(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t host_float_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fff; /* NaN: the canonical one */
    u += 0x7fffu + ((u >> 16) & 1u); /* ties to even; overflow carries into inf */
    return (uint16_t)(u >> 16);
}

void host_adamw(void *params, float *master, const void *grads, int bf16, float *m, float *v,
                size_t n, float lr, float beta1, float beta2, float b1c, float b2c, float eps,
                float weight_decay, float grad_scale)
{
    const float one_b1 = 1.0f - beta1, one_b2 = 1.0f - beta2;
#pragma omp parallel for
    for (size_t i = 0; i < n; i++) {
        float gi = bf16 ? host_bf16_to_float(((const uint16_t *)grads)[i])
                        : ((const float *)grads)[i];
        float g = gi * grad_scale;
        float mi = beta1 * m[i] + one_b1 * g;
        float vi = beta2 * v[i] + one_b2 * g * g;
        m[i] = mi;
        v[i] = vi;
        float mhat = mi / b1c, vhat = vi / b2c;
        float p = master ? master[i]
                         : bf16 ? host_bf16_to_float(((const uint16_t *)params)[i])
                                : ((const float *)params)[i];
        p = p - lr * (mhat / (sqrtf(vhat) + eps) + weight_decay * p);
        if (master) master[i] = p;
        if (bf16) ((uint16_t *)params)[i] = host_float_to_bf16(p);
        else ((float *)params)[i] = p;
    }
}
