/* kernels/cpu/layernorm.c — LayerNorm over the last dimension, eps 1e-5.
 *
 * forward:  out(N,C) = (inp - mean) * rstd * w + b; saves mean(N), rstd(N)
 * backward: dinp(N,C) += rstd * (w*dout - mean_c(w*dout) - xhat * mean_c(w*dout*xhat))
 *           dw(C) += sum_n dout * xhat;  db(C) += sum_n dout
 * dinp rows are independent (parallel over rows); dw and db reduce over rows
 * and are split by column blocks, so each sum runs in row order. */
#include <math.h>

#include "cpu_ops.h"

void cpu_layernorm_forward(Backend *be, void *out_, float *mean, float *rstd, const void *inp_,
                           const void *weight, const void *bias, int N, int C)
{
    float *out = out_;
    const float *inp = inp_, *w = weight, *bi = bias;
#pragma omp parallel for if ((size_t)N * C >= CPU_PAR_MIN_ELEMS)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        float m = 0.0f;
        for (int c = 0; c < C; c++) m += x[c];
        m /= C;
        float var = 0.0f;
        for (int c = 0; c < C; c++) var += (x[c] - m) * (x[c] - m);
        var /= C;
        float s = 1.0f / sqrtf(var + 1e-5f);
        float *o = out + (size_t)n * C;
        for (int c = 0; c < C; c++) o[c] = (x[c] - m) * s * w[c] + bi[c];
        mean[n] = m;
        rstd[n] = s;
    }
}

void cpu_layernorm_backward(Backend *be, void *dinp_, void *dweight, void *dbias,
                            const void *dout_, const void *inp_, const void *weight,
                            const float *mean, const float *rstd, int N, int C)
{
    float *dinp = dinp_, *dw = dweight, *db = dbias;
    const float *dout = dout_, *inp = inp_, *w = weight;
#pragma omp parallel for
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C, *d = dout + (size_t)n * C;
        float m = mean[n], s = rstd[n];
        float dnorm_mean = 0.0f, dnorm_xhat_mean = 0.0f;
        for (int c = 0; c < C; c++) {
            float dn = w[c] * d[c];
            dnorm_mean += dn;
            dnorm_xhat_mean += dn * (x[c] - m) * s;
        }
        dnorm_mean /= C;
        dnorm_xhat_mean /= C;
        float *di = dinp + (size_t)n * C;
        for (int c = 0; c < C; c++) {
            float xhat = (x[c] - m) * s;
            di[c] += (w[c] * d[c] - dnorm_mean - xhat * dnorm_xhat_mean) * s;
        }
    }
    int nblocks = (C + CPU_COL_BLOCK - 1) / CPU_COL_BLOCK;
#pragma omp parallel for
    for (int cb = 0; cb < nblocks; cb++) {
        int c0 = cb * CPU_COL_BLOCK, c1 = c0 + CPU_COL_BLOCK < C ? c0 + CPU_COL_BLOCK : C;
        for (int n = 0; n < N; n++) {
            const float *x = inp + (size_t)n * C, *d = dout + (size_t)n * C;
            float m = mean[n], s = rstd[n];
            for (int c = c0; c < c1; c++) {
                dw[c] += d[c] * (x[c] - m) * s;
                db[c] += d[c];
            }
        }
    }
}
