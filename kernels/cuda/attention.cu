/* kernels/cuda/attention.cu — causal self-attention forward, flash style
 * (ops.h: attention_forward); the fp32 path (attention_tile.cuh), bf16 runs
 * go to attention_mma.cu. qkv(N, W = C + 2 KVH hs): row b*T + t holds
 * [q (NH heads) | k (KVH heads) | v (KVH heads)], query head h at columns
 * h*hs.., its key/value head kh = h / (NH / KVH) at C + kh*hs and
 * C + (KVH + kh)*hs (KVH = NH: [q | k | v], three thirds). One block per
 * (query tile, head, batch); grid.x runs the query
 * tiles last-first so the longest blocks start first. For each key tile up
 * to the diagonal, warp w (query rows 16w..16w+15):
 *   S = Q_w . K^T                     (16 x TB, fp32, shared memory)
 *   online softmax per row: m' = max(m, max_j s_j), p_j = exp(s_j - m'),
 *     l' = l e^(m - m') + sum_j p_j, O_w *= e^(m - m')   (s = scale * S, masked)
 *   O_w += P_w . V
 * then out = O / l and lse = m + log l, in the scaled-score space. The T x T
 * scores never exist; m and l live in registers (every lane holds the same
 * 16 values, so no lane can race another on them). */
#include "attention_mma.cuh"

template <typename T, int HSP, int TB> static size_t attn_fwd_smem()
{
    using G = AttnGeom<T, HSP, TB>;
    return 3 * attn_round((size_t)TB * G::LDT * sizeof(T)) +   /* Q, K, V */
           attn_round((size_t)TB * G::LDS * sizeof(float)) +   /* S */
           attn_round((size_t)TB * G::LDP * sizeof(T)) +       /* P */
           attn_round((size_t)TB * G::LDO * sizeof(float));    /* O */
}

template <typename T, int HSP, int TB>
__global__ void __launch_bounds__(AttnGeom<T, HSP, TB>::THREADS)
attn_fwd_kernel(T *out, float *lse, const T *qkv, int T_, int C, int NH, int KVH, float scale)
{
    DYN_SMEM(smem);
    AttnCarve<T, HSP, TB> m(smem);
    T *Qs = m.tile(), *Ks = m.tile(), *Vs = m.tile();
    float *Ss = m.scores();
    T *Ps = m.probs();
    float *Os = m.acc();
    typedef decltype(m) G;
    constexpr int LDT = G::LDT, LDS = G::LDS, LDP = G::LDP, LDO = G::LDO;
    const AttnBlock k = attn_block<TB>(T_, C, NH, KVH, true); /* the longest rows first */
    const int qt = k.tile, q0 = k.t0, h = k.h, b = k.b, hs = k.hs, C3 = k.C3, w = k.w;
    const int lane = k.lane, kh = h / (NH / KVH); /* its key/value head */

    attn_load_tile<T, HSP, TB>(Qs, qkv, C3, h * hs, b, q0, T_, hs);
    for (int e = threadIdx.x; e < TB * LDO; e += blockDim.x) Os[e] = 0.0f;

    float *Sw = Ss + 16 * w * LDS; /* this warp's rows */
    T *Pw = Ps + 16 * w * LDP;
    float *Ow = Os + 16 * w * LDO;
    const T *Qw = Qs + 16 * w * LDT;
    float m_run[16], l_run[16];
#pragma unroll
    for (int rr = 0; rr < 16; rr++) {
        m_run[rr] = -INFINITY;
        l_run[rr] = 0.0f;
    }

    for (int kt = 0; kt <= qt; kt++) {
        const int k0 = kt * TB;
        __syncthreads(); /* every warp is done with the previous K, V (and Q, O are written) */
        attn_load_tile<T, HSP, TB>(Ks, qkv, C3, C + kh * hs, b, k0, T_, hs);
        attn_load_tile<T, HSP, TB>(Vs, qkv, C3, C + (KVH + kh) * hs, b, k0, T_, hs);
        __syncthreads();

        warp_mm<T, TB, HSP, true>(Sw, LDS, Qw, LDT, Ks, LDT, false); /* S_w = Q_w . K^T */
        __syncwarp();
#pragma unroll
        for (int rr = 0; rr < 16; rr++) {
            const int qi = q0 + 16 * w + rr;
            float *srow = Sw + rr * LDS;
            float mx = -INFINITY;
            for (int c = lane; c < TB; c += 32) {
                const int kj = k0 + c;
                /* every tile up to the diagonal has kj = k0 valid, so mx is finite */
                float s = (kj <= qi && kj < T_) ? srow[c] * scale : -INFINITY;
                srow[c] = s; /* same lane reads it back below */
                mx = fmaxf(mx, s);
            }
            mx = warp_max(mx);
            const float m_new = fmaxf(m_run[rr], mx);
            float sum = 0.0f;
            for (int c = lane; c < TB; c += 32) {
                float pr = expf(srow[c] - m_new); /* masked: exp(-inf) = 0 */
                Pw[rr * LDP + c] = from_f<T>(pr);
                sum += pr;
            }
            sum = warp_sum(sum);
            const float alpha = expf(m_run[rr] - m_new); /* first tile: exp(-inf) = 0 */
            l_run[rr] = l_run[rr] * alpha + sum;
            m_run[rr] = m_new;
            for (int d = lane; d < HSP; d += 32) Ow[rr * LDO + d] *= alpha;
        }
        __syncwarp(); /* P_w and the rescaled O_w visible to the whole warp */
        warp_mm<T, HSP, TB, false>(Ow, LDO, Pw, LDP, Vs, LDT, true); /* O_w += P_w . V */
        __syncwarp();
    }

#pragma unroll
    for (int rr = 0; rr < 16; rr++) {
        const int qi = q0 + 16 * w + rr;
        if (qi >= T_) continue;
        const float inv = 1.0f / l_run[rr];
        T *o = out + ((size_t)b * T_ + qi) * C + h * hs;
        for (int d = lane; d < hs; d += 32) o[d] = from_f<T>(Ow[rr * LDO + d] * inv);
        if (lane == 0) lse[((size_t)b * NH + h) * T_ + qi] = m_run[rr] + logf(l_run[rr]);
    }
}

/* By head size, then the larger tile whose shared memory fits the device,
 * in slices of sequences (attn_batch_slices). */
template <typename T>
static void attn_fwd(CudaState *st, T *out, float *lse, const T *qkv, int B, int T_, int C,
                     int NH, int KVH)
{
    const float scale = 1.0f / sqrtf((float)(C / NH));
    const size_t W = (size_t)C + 2 * (size_t)KVH * (C / NH); /* the qkv row */
    auto smem = [](auto hsp, auto tb) {
        return attn_fwd_smem<T, decltype(hsp)::value, decltype(tb)::value>();
    };
    attn_tile_dispatch(st, "attention_forward", C / NH, smem, [&](auto hsp, auto tb, size_t smb) {
        constexpr int HSP = decltype(hsp)::value, TB = decltype(tb)::value;
        auto kern = attn_fwd_kernel<T, HSP, TB>;
        const int threads = AttnGeom<T, HSP, TB>::THREADS;
        attn_set_smem(kern, smb);
        attn_batch_slices(st, B, [&](int b0, int nb) {
            LAUNCH(kern, dim3(ceil_div(T_, TB), NH, nb), threads, smb, st->stream,
                   out + (size_t)b0 * T_ * C, lse + (size_t)b0 * NH * T_,
                   qkv + (size_t)b0 * T_ * W, T_, C, NH, KVH, scale);
        });
    });
}

void cuda_attention_forward(Backend *be, void *out, float *lse, const void *qkv, int B, int T,
                            int C, int NH, int KVH)
{
    CudaState *st = cuda_state(be);
    attn_check_heads(st, "attention_forward", C, NH, KVH);
    if (B <= 0 || T <= 0) return;
    if (st->bf16)
        amma_forward(st, amma_fwd_run, (bf16 *)out, lse, (const bf16 *)qkv, B, T, C, NH, KVH);
    else attn_fwd(st, (float *)out, lse, (const float *)qkv, B, T, C, NH, KVH);
}
