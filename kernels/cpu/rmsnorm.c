/* kernels/cpu/rmsnorm.c — RMSNorm over the last dimension (Llama), eps given.
 *
 * forward:  rstd(N) = 1 / sqrt(mean_c(inp^2) + eps), out(N,C) = inp * rstd * w
 * backward: with xhat = inp * rstd,
 *           dinp(N,C) += rstd * (w*dout - xhat * mean_c(w*dout*xhat)),
 *           dw(C) += sum_n dout * xhat
 * Rows are independent (parallel over rows, each sum over c in order); dw
 * reduces over rows and is split by column blocks, so each of its sums runs
 * in row order: the bits do not depend on the thread count. */
#include <math.h>

#include "cpu_ops.h"

void cpu_rmsnorm_forward(Backend *be, void *out_, float *rstd, const void *inp_,
                         const void *weight, int N, int C, float eps)
{
    float *out = out_;
    const float *inp = inp_, *w = weight;
#pragma omp parallel for if ((size_t)N * C >= CPU_PAR_MIN_ELEMS)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;
        float ss = 0.0f;
        for (int c = 0; c < C; c++) ss += x[c] * x[c];
        float s = 1.0f / sqrtf(ss / C + eps);
        float *o = out + (size_t)n * C;
        for (int c = 0; c < C; c++) o[c] = x[c] * s * w[c];
        rstd[n] = s;
    }
}

void cpu_rmsnorm_backward(Backend *be, void *dinp_, void *dweight, const void *dout_,
                          const void *inp_, const void *weight, const float *rstd, int N, int C)
{
    float *dinp = dinp_, *dw = dweight;
    const float *dout = dout_, *inp = inp_, *w = weight;
#pragma omp parallel for if ((size_t)N * C >= CPU_PAR_MIN_ELEMS)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C, *d = dout + (size_t)n * C;
        float s = rstd[n], dot = 0.0f;
        for (int c = 0; c < C; c++) dot += w[c] * d[c] * (x[c] * s);
        dot /= C;
        float *di = dinp + (size_t)n * C;
        for (int c = 0; c < C; c++) di[c] += (w[c] * d[c] - x[c] * s * dot) * s;
    }
    int nblocks = (C + CPU_COL_BLOCK - 1) / CPU_COL_BLOCK;
#pragma omp parallel for if ((size_t)N * C >= CPU_PAR_MIN_ELEMS)
    for (int cb = 0; cb < nblocks; cb++) {
        int c0 = cb * CPU_COL_BLOCK, c1 = c0 + CPU_COL_BLOCK < C ? c0 + CPU_COL_BLOCK : C;
        for (int n = 0; n < N; n++) {
            const float *x = inp + (size_t)n * C, *d = dout + (size_t)n * C;
            float s = rstd[n];
            for (int c = c0; c < c1; c++) dw[c] += d[c] * (x[c] * s);
        }
    }
}
