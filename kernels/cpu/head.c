/* kernels/cpu/head.c — fused, token-chunked LM head + cross-entropy.
 *
 * x(N,C) final LayerNorm output, wte(Vp,C) tied embedding, targets(N).
 * Per chunk of `chunk` rows, with only the real V rows of wte:
 *   logits(chunk,V) = x_chunk . wte[:V]^T        (in chunk_buf, row stride Vp)
 *   losses[n] = lse_n - logit[n, target_n]
 *   dlogits = (softmax - onehot) * dloss         (in place)
 *   dx_chunk(chunk,C) = dlogits . wte[:V]        (=)
 *   dwte[:V] += dlogits^T . x_chunk
 * Padded vocab rows V..Vp-1 never enter the softmax and get no gradient.
 * The (N,Vp) logits are never held: chunk_buf is (chunk,Vp) fp32. */
#include <math.h>

#include "cpu_ops.h"

void cpu_head_forward_backward(Backend *be, float *losses, void *dx_, void *dwte, const void *x_,
                               const void *wte, const int *targets, void *buf_, int N, int C,
                               int V, int Vp, int chunk, float dloss)
{
    const float *x = x_;
    float *dx = dx_, *buf = buf_;
    for (int n0 = 0; n0 < N; n0 += chunk) {
        int rows = N - n0 < chunk ? N - n0 : chunk;
        const float *xc = x + (size_t)n0 * C;
        cpu_sgemm(0, 1, rows, V, C, xc, C, wte, C, 0.0f, buf, Vp);
#pragma omp parallel for
        for (int r = 0; r < rows; r++) {
            /* one exp per logit: e = exp(l - max) in place, then
             * softmax = e / sum and dlogits = softmax * dloss. */
            float *lg = buf + (size_t)r * Vp;
            int tgt = targets[n0 + r];
            float mx = -INFINITY, target_logit = lg[tgt];
            for (int v = 0; v < V; v++) mx = lg[v] > mx ? lg[v] : mx;
            /* The sum in double: tens of thousands of terms, most far below
             * the total, lose about half an fp32 ulp of the total each when
             * added in fp32 (measured on a trained 2-layer model: the sum
             * 1.2e-3 low, so a token's loss 1.2e-3 nats off PyTorch's). */
            double sum = 0.0;
            for (int v = 0; v < V; v++) {
                lg[v] = expf(lg[v] - mx);
                sum += lg[v];
            }
            losses[n0 + r] = (float)(mx + log(sum) - target_logit);
            if (dx) {
                float scale = (float)(dloss / sum);
#pragma omp simd
                for (int v = 0; v < V; v++) lg[v] *= scale;
                lg[tgt] -= dloss;
            }
        }
        if (!dx) continue;
        cpu_sgemm(0, 0, rows, C, V, buf, Vp, wte, C, 0.0f, dx + (size_t)n0 * C, C);
        cpu_sgemm(1, 0, V, C, rows, buf, Vp, xc, C, 1.0f, dwte, C);
    }
}

void cpu_head_logits(Backend *be, float *logits, const void *x, const void *wte, int n, int C,
                     int Vp)
{
    if (n == 1) /* sampling's one position: sgemm would pack all of wte (Vp x C) first */
        cpu_sgemv(Vp, C, wte, C, x, 0.0f, logits);
    else
        cpu_sgemm(0, 1, n, Vp, C, x, C, wte, C, 0.0f, logits, Vp);
}
