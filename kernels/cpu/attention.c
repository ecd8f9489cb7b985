/* kernels/cpu/attention.c — causal multi-head self-attention, flash style.
 *
 * qkv(B,T,3C): row (b,t) holds q | k | v, each C = NH*hs wide; head h uses
 * columns h*hs..(h+1)*hs of each part. Scores s_tj = q_t.k_j / sqrt(hs) for
 * j <= t.
 * forward:  out(B,T,C), lse(B,NH,T) = log sum_j exp(s_tj). One pass per
 *           query row with an online softmax (running max and sum, the
 *           accumulator rescaled when the max grows): no (T,T) tensor.
 * backward: recompute p_tj = exp(s_tj - lse_t); D_t = dout_t . out_t;
 *           ds_tj = p_tj (dout_t . v_j - D_t);
 *           dq_t = sum_j ds_tj k_j / sqrt(hs); dk_j = sum_t ds_tj q_t / sqrt(hs);
 *           dv_j = sum_t p_tj dout_t.
 * Forward parallelises over rows; backward over (b,h) pairs, each walking
 * t in order, so every accumulation has a fixed order. */
#include <math.h>
#include <string.h>

#include "cpu_ops.h"

static float dot(const float *a, const float *b, int n)
{
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

void cpu_attention_forward(Backend *be, void *out_, float *lse, const void *qkv_, int B, int T,
                           int C, int NH)
{
    float *out = out_;
    const float *qkv = qkv_;
    int hs = C / NH;
    size_t C3 = (size_t)3 * C;
    float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(3)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const float *q = qkv + ((size_t)b * T + t) * C3 + (size_t)h * hs;
                float acc[hs];
                memset(acc, 0, sizeof acc);
                float m = -INFINITY, l = 0.0f;
                for (int j = 0; j <= t; j++) {
                    const float *k = qkv + ((size_t)b * T + j) * C3 + C + (size_t)h * hs;
                    const float *v = k + C;
                    float s = dot(q, k, hs) * scale;
                    if (s > m) {
                        float corr = expf(m - s); /* 0 on the first key */
                        l *= corr;
                        for (int i = 0; i < hs; i++) acc[i] *= corr;
                        m = s;
                    }
                    float p = expf(s - m);
                    l += p;
                    for (int i = 0; i < hs; i++) acc[i] += p * v[i];
                }
                float *o = out + ((size_t)b * T + t) * C + (size_t)h * hs;
                float inv = 1.0f / l;
                for (int i = 0; i < hs; i++) o[i] = acc[i] * inv;
                lse[((size_t)b * NH + h) * T + t] = m + logf(l);
            }
}

void cpu_attention_backward(Backend *be, void *dqkv_, const void *dout_, const void *qkv_,
                            const void *out_, const float *lse, int B, int T, int C, int NH)
{
    float *dqkv = dqkv_;
    const float *dout = dout_, *qkv = qkv_, *out = out_;
    int hs = C / NH;
    size_t C3 = (size_t)3 * C;
    float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(2)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            for (int t = 0; t < T; t++) {
                float *row = dqkv + ((size_t)b * T + t) * C3 + (size_t)h * hs;
                memset(row, 0, sizeof(float) * hs);
                memset(row + C, 0, sizeof(float) * hs);
                memset(row + 2 * C, 0, sizeof(float) * hs);
            }
            for (int t = 0; t < T; t++) {
                size_t rt = (size_t)b * T + t;
                const float *q = qkv + rt * C3 + (size_t)h * hs;
                const float *dy = dout + rt * C + (size_t)h * hs;
                const float *y = out + rt * C + (size_t)h * hs;
                float *dq = dqkv + rt * C3 + (size_t)h * hs;
                float D = dot(dy, y, hs), L = lse[((size_t)b * NH + h) * T + t];
                for (int j = 0; j <= t; j++) {
                    size_t rj = (size_t)b * T + j;
                    const float *k = qkv + rj * C3 + C + (size_t)h * hs, *v = k + C;
                    float *dk = dqkv + rj * C3 + C + (size_t)h * hs, *dv = dk + C;
                    float p = expf(dot(q, k, hs) * scale - L);
                    float ds = p * (dot(dy, v, hs) - D) * scale;
                    for (int i = 0; i < hs; i++) {
                        dq[i] += ds * k[i];
                        dk[i] += ds * q[i];
                        dv[i] += p * dy[i];
                    }
                }
            }
        }
}
