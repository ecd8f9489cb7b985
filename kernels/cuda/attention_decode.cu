/* kernels/cuda/attention_decode.cu — one position of causal attention
 * against a K/V cache (ops.h's attention_decode), for generation.
 *
 * Rows of qkv hold the NH query heads, then the KVH key heads and the KVH
 * value heads (W = C + 2*KVH*hs); query head h reads key/value head
 * h / (NH/KVH) (grouped-query attention; KVH = NH is multi-head). The
 * caches are (KVH, maxT, hs). A first kernel copies the position's k and v
 * into cache row t (one block per key/value head), so the query heads of a
 * group all read a row written before they start. Then one block of
 * DEC_THREADS threads per query head walks the keys [0, t] in chunks of
 * DEC_THREADS: each thread scores one key (fp32 dot over hs), thread 0
 * takes the chunk's max and rescales the running sum (online softmax), and
 * the threads owning output dimensions d (d = tid, tid + DEC_THREADS, ...)
 * add p_j v_j[d] in key order. Every sum has one fixed order: the same
 * bits every run. Plain loads and no tensor cores: a decode step reads t+1
 * keys once, and the matmuls around it cost more. Shared memory: q and the
 * accumulators (hs floats each), the chunk's scores (DEC_THREADS) and the
 * running max and sum. */
#include "attention_tile.cuh"

#define DEC_THREADS 128

/* Cache row t of key/value head g = blockIdx.x from the row's k and v. */
template <typename T>
__global__ void attn_decode_store_kernel(T *kc, T *vc, const T *qkv, int t, int maxT, int C,
                                         int KVH, int hs)
{
    const int g = blockIdx.x;
    const size_t row = ((size_t)g * maxT + t) * hs, kv = (size_t)KVH * hs;
    for (int d = threadIdx.x; d < hs; d += blockDim.x) {
        kc[row + d] = qkv[C + (size_t)g * hs + d];
        vc[row + d] = qkv[C + kv + (size_t)g * hs + d];
    }
}

/* out(h) for query head h = blockIdx.x, against key/value head h / grp. */
template <typename T>
__global__ void attn_decode_kernel(T *out, const T *kc, const T *vc, const T *qkv, int t,
                                   int maxT, int hs, int grp, float scale)
{
    DYN_SMEM(smem);
    float *q = (float *)smem, *acc = q + hs, *s = acc + hs, *ml = s + DEC_THREADS;
    const int h = blockIdx.x, tid = threadIdx.x;
    const T *k0 = kc + (size_t)(h / grp) * maxT * hs, *v0 = vc + (size_t)(h / grp) * maxT * hs;
    for (int d = tid; d < hs; d += DEC_THREADS) {
        q[d] = to_f(qkv[h * hs + d]);
        acc[d] = 0.f;
    }
    if (tid == 0) {
        ml[0] = -INFINITY; /* running max */
        ml[1] = 0.f;       /* running sum of exp(s - max) */
    }
    __syncthreads(); /* q and acc in place */
    for (int j0 = 0; j0 <= t; j0 += DEC_THREADS) {
        const int j = j0 + tid, n = t + 1 - j0 < DEC_THREADS ? t + 1 - j0 : DEC_THREADS;
        if (tid < n) {
            const T *k = k0 + (size_t)j * hs;
            float dot = 0.f;
            for (int d = 0; d < hs; d++) dot += q[d] * to_f(k[d]);
            s[tid] = dot * scale;
        }
        __syncthreads(); /* the chunk's scores */
        float m_old = ml[0];
        __syncthreads(); /* everyone read the old max before thread 0 moves it */
        if (tid == 0) {
            float m = m_old;
            for (int i = 0; i < n; i++) m = fmaxf(m, s[i]);
            ml[0] = m;
        }
        __syncthreads();
        const float m = ml[0], corr = expf(m_old - m);
        if (tid < n) s[tid] = expf(s[tid] - m);
        __syncthreads(); /* p_j of the chunk */
        if (tid == 0) {
            float l = ml[1] * corr;
            for (int i = 0; i < n; i++) l += s[i];
            ml[1] = l;
        }
        for (int d = tid; d < hs; d += DEC_THREADS) {
            float a = acc[d] * corr;
            for (int i = 0; i < n; i++) a += s[i] * to_f(v0[(size_t)(j0 + i) * hs + d]);
            acc[d] = a;
        }
        __syncthreads(); /* s is rewritten by the next chunk */
    }
    const float inv = 1.0f / ml[1];
    for (int d = tid; d < hs; d += DEC_THREADS) out[h * hs + d] = from_f<T>(acc[d] * inv);
}

template <typename T>
static void attn_decode(CudaState *st, T *out, T *kc, T *vc, const T *qkv, int t, int maxT, int C,
                        int NH, int KVH)
{
    int hs = C / NH;
    size_t smem = sizeof(float) * (2 * (size_t)hs + DEC_THREADS + 2);
    if (smem > 48 * 1024) /* the default limit: no opt-in needed below it */
        CUDA_FATAL("attention_decode: head size %d needs %zu bytes of shared memory", hs, smem);
    auto store = attn_decode_store_kernel<T>;
    LAUNCH(store, KVH, DEC_THREADS, 0, st->stream, kc, vc, qkv, t, maxT, C, KVH, hs);
    auto kern = attn_decode_kernel<T>;
    LAUNCH(kern, NH, DEC_THREADS, smem, st->stream, out, kc, vc, qkv, t, maxT, hs, NH / KVH,
           1.0f / sqrtf((float)hs));
}

void cuda_attention_decode(Backend *be, void *out, void *kcache, void *vcache, const void *qkv,
                           int t, int maxT, int C, int NH, int KVH)
{
    CudaState *st = cuda_state(be);
    attn_check_heads(st, "attention_decode", C, NH, KVH);
    if (t < 0 || t >= maxT) CUDA_FATAL("attention_decode: position %d outside [0, %d)", t, maxT);
    if (st->bf16)
        attn_decode(st, (bf16 *)out, (bf16 *)kcache, (bf16 *)vcache, (const bf16 *)qkv, t, maxT,
                    C, NH, KVH);
    else
        attn_decode(st, (float *)out, (float *)kcache, (float *)vcache, (const float *)qkv, t,
                    maxT, C, NH, KVH);
}
