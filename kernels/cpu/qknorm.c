/* kernels/cpu/qknorm.c — Qwen3's qk-norm (ops.h qknorm_forward/backward):
 * RMSNorm over each q and k head of the qkv layout (N, C + 2 KVH hs), row n
 * holding NH q heads, KVH k heads, then KVH v heads of hs each.
 *
 * forward:  rstd(n, h) = 1 / sqrt(mean_i(x_i^2) + eps), out_i = x_i rstd w_i
 *           (w = wq for the NH q heads, wk for the KVH k heads)
 * backward: with xhat = x rstd, per head
 *           dinp_i = rstd (w_i dout_i - xhat_i mean_j(w_j dout_j xhat_j)),
 *           dw_i += sum over rows and heads of dout_i xhat_i
 * The weights' gradients are summed first (they read dout, which the
 * in-place backward then overwrites), split by column, each column's sum
 * in row then head order; rows are independent otherwise. So the bits do
 * not depend on the thread count. */
#include <math.h>
#include <string.h>

#include "cpu_ops.h"

void cpu_qknorm_forward(Backend *be, void *out_, float *rstd, const void *inp_, const void *wq_,
                        const void *wk_, int N, int C, int NH, int KVH, float eps)
{
    (void)be;
    float *out = out_;
    const float *inp = inp_, *wq = wq_, *wk = wk_;
    int hs = C / NH, H = NH + KVH;
    size_t W = (size_t)C + 2 * (size_t)KVH * hs;
#pragma omp parallel for if ((size_t)N * W >= CPU_PAR_MIN_ELEMS)
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * W;
        float *o = out + (size_t)n * W;
        for (int h = 0; h < H; h++) {
            const float *xh = x + (size_t)h * hs, *w = h < NH ? wq : wk;
            float ss = 0.0f;
            for (int i = 0; i < hs; i++) ss += xh[i] * xh[i];
            float s = 1.0f / sqrtf(ss / hs + eps);
            float *oh = o + (size_t)h * hs;
            for (int i = 0; i < hs; i++) oh[i] = xh[i] * s * w[i];
            rstd[(size_t)n * H + h] = s;
        }
        if (o != x) memcpy(o + (size_t)H * hs, x + (size_t)H * hs, (size_t)KVH * hs * sizeof *o);
    }
}

void cpu_qknorm_backward(Backend *be, void *dinp_, void *dwq_, void *dwk_, const void *dout_,
                         const void *inp_, const void *wq_, const void *wk_, const float *rstd,
                         int N, int C, int NH, int KVH)
{
    (void)be;
    float *dinp = dinp_, *dwq = dwq_, *dwk = dwk_;
    const float *dout = dout_, *inp = inp_, *wq = wq_, *wk = wk_;
    int hs = C / NH, H = NH + KVH;
    size_t W = (size_t)C + 2 * (size_t)KVH * hs;
    int par = (size_t)N * W >= CPU_PAR_MIN_ELEMS;
    /* column c < hs: wq's c, else wk's c - hs; q heads 0..NH-1, k heads NH..H-1 */
#pragma omp parallel for if (par)
    for (int c = 0; c < 2 * hs; c++) {
        int k = c >= hs, i = c - k * hs, h0 = k ? NH : 0, h1 = k ? H : NH;
        float acc = (k ? dwk : dwq)[i];
        for (int n = 0; n < N; n++)
            for (int h = h0; h < h1; h++) {
                size_t at = (size_t)n * W + (size_t)h * hs + i;
                acc += dout[at] * (inp[at] * rstd[(size_t)n * H + h]);
            }
        (k ? dwk : dwq)[i] = acc;
    }
#pragma omp parallel for if (par)
    for (int n = 0; n < N; n++) {
        for (int h = 0; h < H; h++) {
            size_t at = (size_t)n * W + (size_t)h * hs;
            const float *x = inp + at, *d = dout + at, *w = h < NH ? wq : wk;
            float s = rstd[(size_t)n * H + h], dot = 0.0f;
            for (int i = 0; i < hs; i++) dot += w[i] * d[i] * (x[i] * s);
            dot /= hs;
            float *di = dinp + at;
            for (int i = 0; i < hs; i++) di[i] = (w[i] * d[i] - x[i] * s * dot) * s;
        }
        if (dinp != dout)
            memcpy(dinp + (size_t)n * W + (size_t)H * hs, dout + (size_t)n * W + (size_t)H * hs,
                   (size_t)KVH * hs * sizeof *dinp);
    }
}
