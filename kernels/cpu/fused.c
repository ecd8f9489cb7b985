/* kernels/cpu/fused.c — the fused ops of ops.h on the cpu: each is the
 * composition it names, call for call, so its results are those of the
 * unfused ops bit for bit. A cpu gains nothing from fusing these (the data
 * of one op is still in cache for the next at the sizes a cpu trains); the
 * ops exist so that the model's schedule is the same on every backend. */
#include "cpu_ops.h"

/* res = a + b; out, mean, rstd = LayerNorm(res) */
void cpu_residual_layernorm_forward(Backend *be, void *res, void *out, float *mean, float *rstd,
                                    const void *a, const void *b, const void *weight,
                                    const void *bias, int N, int C)
{
    cpu_residual_forward(be, res, a, b, (size_t)N * C);
    cpu_layernorm_forward(be, out, mean, rstd, res, weight, bias, N, C);
}

/* pre(N,OC) = inp . weight^T + bias; out = gelu(pre) */
void cpu_matmul_gelu_forward(Backend *be, void *out, void *pre, const void *inp,
                             const void *weight, const void *bias, int N, int IC, int OC)
{
    cpu_matmul_forward(be, pre, inp, weight, bias, N, IC, OC);
    cpu_gelu_forward(be, out, pre, (size_t)N * OC);
}

/* dinp(N,IC) = (dout . weight) * gelu'(pre); dweight, dbias as matmul_backward */
void cpu_matmul_backward_gelu(Backend *be, void *dinp, void *dweight, void *dbias,
                              const void *dout, const void *inp, const void *weight,
                              const void *pre, int N, int IC, int OC)
{
    cpu_matmul_backward(be, dinp, dweight, dbias, dout, inp, weight, N, IC, OC);
    cpu_gelu_backward(be, dinp, pre, dinp, (size_t)N * IC);
}
