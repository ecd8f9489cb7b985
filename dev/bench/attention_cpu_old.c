/* dev/bench/attention_cpu_old.c — the cpu attention as it was before the
 * tiles (kernels/cpu/attention.c at 8dfb0fb), kept for
 * dev/bench/bench_attention_cpu.sh only, which compiles it with its
 * functions renamed old_*; the product does not contain it. Multi-head
 * only: the KVH parameter (ops.h's key/value heads, added since) must
 * equal NH and is not read.
 *
 * Causal multi-head self-attention, flash style.
 *
 * qkv(B,T,3C): row (b,t) holds q | k | v, each C = NH*hs wide; head h uses
 * columns h*hs..(h+1)*hs of each part. Scores s_tj = q_t.k_j / sqrt(hs) for
 * j <= t.
 * forward:  out(B,T,C), lse(B,NH,T) = log sum_j exp(s_tj). Each query row
 *           computes its t+1 scores into a row buffer on the stack (T
 *           floats), takes max and sum, and forms p.V: no (T,T) tensor.
 * backward: recompute p_tj = exp(s_tj - lse_t); D_t = dout_t . out_t;
 *           ds_tj = p_tj (dout_t . v_j - D_t) / sqrt(hs);
 *           dq_t = sum_j ds_tj k_j; dk_j += ds_tj q_t; dv_j += p_tj dout_t.
 * decode:   one row t against a (NH,maxT,hs) K/V cache, in the forward's order.
 * Forward parallelises over rows; backward over (b,h) pairs, each walking
 * t in order, so every accumulation has a fixed order. Inner loops run over
 * the head dimension and are written for SIMD (omp simd). */
#include <math.h>
#include <string.h>

#include "kernels/cpu/cpu_ops.h"

static inline float dot(const float *a, const float *b, int n)
{
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

static inline void axpy(float *y, float a, const float *x, int n)
{
#pragma omp simd
    for (int i = 0; i < n; i++) y[i] += a * x[i];
}

void cpu_attention_forward(Backend *be, void *out_, float *lse, const void *qkv_, int B, int T,
                           int C, int NH, int KVH)
{
    float *out = out_;
    const float *qkv = qkv_;
    int hs = C / NH;
    size_t C3 = (size_t)3 * C;
    float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(3) schedule(dynamic, 16)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const float *q = qkv + ((size_t)b * T + t) * C3 + (size_t)h * hs;
                const float *k0 = qkv + (size_t)b * T * C3 + C + (size_t)h * hs;
                float s[t + 1];
                float m = -INFINITY;
                for (int j = 0; j <= t; j++) {
                    s[j] = dot(q, k0 + j * C3, hs) * scale;
                    m = s[j] > m ? s[j] : m;
                }
                float l = 0.0f;
                for (int j = 0; j <= t; j++) {
                    s[j] = expf(s[j] - m);
                    l += s[j];
                }
                float *o = out + ((size_t)b * T + t) * C + (size_t)h * hs;
                memset(o, 0, sizeof(float) * hs);
                float inv = 1.0f / l;
                for (int j = 0; j <= t; j++) axpy(o, s[j] * inv, k0 + j * C3 + C, hs);
                lse[((size_t)b * NH + h) * T + t] = m + logf(l);
            }
}

void cpu_attention_backward(Backend *be, void *dqkv_, const void *dout_, const void *qkv_,
                            const void *out_, const float *lse, int B, int T, int C, int NH,
                            int KVH)
{
    float *dqkv = dqkv_;
    const float *dout = dout_, *qkv = qkv_, *out = out_;
    int hs = C / NH;
    size_t C3 = (size_t)3 * C;
    float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            float *d0 = dqkv + (size_t)b * T * C3 + (size_t)h * hs; /* dq of row 0 */
            const float *q0 = qkv + (size_t)b * T * C3 + (size_t)h * hs;
            for (int t = 0; t < T; t++) {
                memset(d0 + t * C3, 0, sizeof(float) * hs);
                memset(d0 + t * C3 + C, 0, sizeof(float) * hs);
                memset(d0 + t * C3 + 2 * C, 0, sizeof(float) * hs);
            }
            float ds[T];
            for (int t = 0; t < T; t++) {
                size_t rt = (size_t)b * T + t;
                const float *q = q0 + t * C3;
                const float *dy = dout + rt * C + (size_t)h * hs;
                const float *y = out + rt * C + (size_t)h * hs;
                float D = dot(dy, y, hs), L = lse[((size_t)b * NH + h) * T + t];
                for (int j = 0; j <= t; j++) {
                    const float *k = q0 + j * C3 + C, *v = k + C;
                    float p = expf(dot(q, k, hs) * scale - L);
                    ds[j] = p * (dot(dy, v, hs) - D) * scale;
                    axpy(d0 + j * C3 + 2 * C, p, dy, hs); /* dv_j */
                }
                float *dq = d0 + t * C3;
                for (int j = 0; j <= t; j++) {
                    axpy(dq, ds[j], q0 + j * C3 + C, hs); /* dq_t += ds k_j */
                    axpy(d0 + j * C3 + C, ds[j], q, hs);  /* dk_j += ds q_t */
                }
            }
        }
}

/* Decode: the forward's row t with k_j, v_j read from the cache, where
 * they sit hs apart. dot and axpy see the same hs floats in the same
 * order as in the forward, and the max, sum and p.V loops walk j the
 * same way, so out is bit for bit the forward's row t. */
void cpu_attention_decode(Backend *be, void *out_, void *kcache_, void *vcache_, const void *qkv_,
                          int t, int maxT, int C, int NH, int KVH)
{
    float *out = out_, *kc = kcache_, *vc = vcache_;
    const float *qkv = qkv_;
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    /* threads only where there is work for them: a small step's cost is
     * the parallel region's start */
#pragma omp parallel for schedule(static) if ((size_t)(t + 1) * C >= 65536)
    for (int h = 0; h < NH; h++) {
        const float *q = qkv + (size_t)h * hs;
        float *k0 = kc + (size_t)h * maxT * hs, *v0 = vc + (size_t)h * maxT * hs;
        memcpy(k0 + (size_t)t * hs, qkv + C + (size_t)h * hs, sizeof(float) * hs);
        memcpy(v0 + (size_t)t * hs, qkv + 2 * C + (size_t)h * hs, sizeof(float) * hs);
        float s[t + 1];
        float m = -INFINITY;
        for (int j = 0; j <= t; j++) {
            s[j] = dot(q, k0 + (size_t)j * hs, hs) * scale;
            m = s[j] > m ? s[j] : m;
        }
        float l = 0.0f;
        for (int j = 0; j <= t; j++) {
            s[j] = expf(s[j] - m);
            l += s[j];
        }
        float *o = out + (size_t)h * hs;
        memset(o, 0, sizeof(float) * hs);
        float inv = 1.0f / l;
        for (int j = 0; j <= t; j++) axpy(o, s[j] * inv, v0 + (size_t)j * hs, hs);
    }
}
