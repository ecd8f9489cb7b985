/* kernels/cuda/attention_backward.cu — causal self-attention backward, flash
 * style (ops.h: attention_backward); the fp32 path (attention_tile.cuh),
 * bf16 runs go to attention_mma.cu. With s = scale * q.k, P = exp(s - lse) recomputed from the forward's lse,
 * D_i = sum_d dO[i,d] O[i,d] and dS = P * (dP - D), dP = dO . V^T:
 *   dV = P^T . dO,  dK = scale * dS^T . Q,  dQ = scale * dS . K.
 * Two kernels, each the only writer of what it produces (no atomics):
 *   dkdv: one block per (key tile, head, batch); warp w owns key rows
 *         16w..16w+15 and loops over the query tiles from the diagonal on,
 *         accumulating dK and dV for its rows in shared memory;
 *   dq:   one block per (query tile, head, batch); warp w owns query rows
 *         16w..16w+15 and loops over the key tiles up to the diagonal.
 * Both recompute S and dP; D is computed in both from dO and O by the same
 * function (attn_rows_D), so no buffer beyond the op's arguments is needed.
 * Every element of dqkv is written ("="). Grouped-query attention (KVH key/
 * value heads, rows C + 2 KVH hs wide, attention.cu): a dkdv block is a
 * key/value head's and runs the query tiles of its G = NH / KVH query heads,
 * heads in increasing order, into the same accumulators (a fixed order;
 * G = 1 is the plain loop); dq reads its query head's key/value head. */
#include "attention_mma.cuh"

template <typename T, int HSP, int TB> static size_t attn_bwd_smem()
{
    using G = AttnGeom<T, HSP, TB>;
    /* both kernels: four T tiles, two fp32 score tiles, up to two T
     * probability tiles, up to two fp32 accumulators, lse and D */
    return 4 * attn_round((size_t)TB * G::LDT * sizeof(T)) +
           2 * attn_round((size_t)TB * G::LDS * sizeof(float)) +
           2 * attn_round((size_t)TB * G::LDP * sizeof(T)) +
           2 * attn_round((size_t)TB * G::LDO * sizeof(float)) +
           2 * attn_round((size_t)TB * sizeof(float));
}

/* One warp's S and dP (16 x TB, fp32) from its own 16 rows a, da against
 * the tile's b, db, then P = exp(s scale - lse) and dS = P (dP - D), 0
 * where the pair is masked (key after query, query past T), in T: dS, and
 * with KEYROWS P too. KEYROWS: the warp's rows are keys r0.. and the
 * columns queries c0.. (S^T, dP^T of dK/dV); else rows are queries. lse
 * and D are per query: indexed by column or row. */
template <typename T, int HSP, int TB, bool KEYROWS>
__device__ void attn_bwd_pds(float *S, float *dP, const T *a, const T *da, const T *b,
                             const T *db, T *P, T *dS, const float *lse, const float *D, int r0,
                             int c0, int T_, float scale)
{
    using G = AttnGeom<T, HSP, TB>;
    warp_mm<T, TB, HSP, true>(S, G::LDS, a, G::LDT, b, G::LDT, false);   /* S = a . b^T */
    warp_mm<T, TB, HSP, true>(dP, G::LDS, da, G::LDT, db, G::LDT, false); /* dP = da . db^T */
    __syncwarp();
    for (int e = threadIdx.x % 32; e < 16 * TB; e += 32) {
        const int rr = e / TB, c = e % TB, q = KEYROWS ? c : rr;
        const int qi = KEYROWS ? c0 + c : r0 + rr, kj = KEYROWS ? r0 + rr : c0 + c;
        const bool valid = kj <= qi && qi < T_;
        float pr = valid ? expf(S[rr * G::LDS + c] * scale - lse[q]) : 0.0f;
        if constexpr (KEYROWS) P[rr * G::LDP + c] = from_f<T>(pr);
        dS[rr * G::LDP + c] = from_f<T>(pr * (dP[rr * G::LDS + c] - D[q]));
    }
}

template <typename T, int HSP, int TB>
__global__ void ATTN_BWD_LAUNCH_BOUNDS(T, HSP, TB)
attn_bwd_dkdv_kernel(T *dqkv, const T *dout, const T *qkv, const T *out, const float *lse,
                     int T_, int C, int NH, int KVH, float scale)
{
    DYN_SMEM(smem);
    AttnCarve<T, HSP, TB> m(smem);
    T *Ks = m.tile(), *Vs = m.tile(), *Qs = m.tile(), *dOs = m.tile();
    float *St = m.scores(), *dPt = m.scores(); /* S^T (key rows x query columns), dP^T */
    T *Pt = m.probs(), *dSt = m.probs();
    float *dK = m.acc(), *dV = m.acc(), *lse_s = m.rows(), *D_s = m.rows();
    typedef decltype(m) G;
    constexpr int LDT = G::LDT, LDS = G::LDS, LDP = G::LDP, LDO = G::LDO;
    /* low key tiles see the most query tiles: launched first */
    const AttnBlock blk = attn_block<TB>(T_, C, NH, KVH, false);
    const int nT = (T_ + TB - 1) / TB, kt = blk.tile, k0 = blk.t0, kh = blk.h, b = blk.b;
    const int hs = blk.hs, C3 = blk.C3, w = blk.w, lane = blk.lane, grp = NH / KVH;

    attn_load_tile<T, HSP, TB>(Ks, qkv, C3, C + kh * hs, b, k0, T_, hs);
    attn_load_tile<T, HSP, TB>(Vs, qkv, C3, C + (KVH + kh) * hs, b, k0, T_, hs);
    for (int e = threadIdx.x; e < TB * LDO; e += blockDim.x) {
        dK[e] = 0.0f;
        dV[e] = 0.0f;
    }
    const T *Kw = Ks + 16 * w * LDT, *Vw = Vs + 16 * w * LDT;
    float *Stw = St + 16 * w * LDS, *dPtw = dPt + 16 * w * LDS;
    T *Ptw = Pt + 16 * w * LDP, *dStw = dSt + 16 * w * LDP;
    float *dKw = dK + 16 * w * LDO, *dVw = dV + 16 * w * LDO;

    for (int h = kh * grp; h < (kh + 1) * grp; h++) /* the group's query heads, in order */
    for (int qt = kt; qt < nT; qt++) {
        const int q0 = qt * TB;
        __syncthreads(); /* all warps are done with the previous Q, dO, lse, D */
        attn_load_tile<T, HSP, TB>(Qs, qkv, C3, h * hs, b, q0, T_, hs);
        attn_load_tile<T, HSP, TB>(dOs, dout, C, h * hs, b, q0, T_, hs);
        for (int r = threadIdx.x; r < TB; r += blockDim.x)
            lse_s[r] = q0 + r < T_ ? lse[((size_t)b * NH + h) * T_ + q0 + r] : 0.0f;
        __syncthreads(); /* dO tile complete before D reads it */
        attn_rows_D<T, HSP, TB>(D_s, dOs, out, b, h, q0, T_, C, hs); /* query rows 16w.. */
        __syncthreads(); /* every warp reads all TB values of D */

        /* S^T_w = K_w . Q^T, dP^T_w = V_w . dO^T, then P^T_w and dS^T_w */
        attn_bwd_pds<T, HSP, TB, true>(Stw, dPtw, Kw, Vw, Qs, dOs, Ptw, dStw, lse_s, D_s,
                                       k0 + 16 * w, q0, T_, scale);
        __syncwarp();
        warp_mm<T, HSP, TB, false>(dVw, LDO, Ptw, LDP, dOs, LDT, true); /* dV_w += P^T_w . dO */
        warp_mm<T, HSP, TB, false>(dKw, LDO, dStw, LDP, Qs, LDT, true); /* dK_w += dS^T_w . Q */
        __syncwarp();
    }

    for (int rr = 0; rr < 16; rr++) {
        const int kj = k0 + 16 * w + rr;
        if (kj >= T_) break;
        T *row = dqkv + ((size_t)b * T_ + kj) * C3 + C + kh * hs; /* dK; dV KVH hs on */
        for (int d = lane; d < hs; d += 32) {
            row[d] = from_f<T>(dKw[rr * LDO + d] * scale);
            row[KVH * hs + d] = from_f<T>(dVw[rr * LDO + d]);
        }
    }
}

template <typename T, int HSP, int TB>
__global__ void ATTN_BWD_LAUNCH_BOUNDS(T, HSP, TB)
attn_bwd_dq_kernel(T *dqkv, const T *dout, const T *qkv, const T *out, const float *lse, int T_,
                   int C, int NH, int KVH, float scale)
{
    DYN_SMEM(smem);
    AttnCarve<T, HSP, TB> m(smem);
    T *Qs = m.tile(), *dOs = m.tile(), *Ks = m.tile(), *Vs = m.tile();
    float *Ss = m.scores(), *dPs = m.scores();
    T *dSs = m.probs();
    float *dQ = m.acc(), *lse_s = m.rows(), *D_s = m.rows();
    typedef decltype(m) G;
    constexpr int LDT = G::LDT, LDS = G::LDS, LDP = G::LDP, LDO = G::LDO;
    const AttnBlock blk = attn_block<TB>(T_, C, NH, KVH, true); /* the longest rows first */
    const int qt = blk.tile, q0 = blk.t0, h = blk.h, b = blk.b, hs = blk.hs, C3 = blk.C3;
    const int w = blk.w, lane = blk.lane, kh = h / (NH / KVH); /* its key/value head */

    attn_load_tile<T, HSP, TB>(Qs, qkv, C3, h * hs, b, q0, T_, hs);
    attn_load_tile<T, HSP, TB>(dOs, dout, C, h * hs, b, q0, T_, hs);
    for (int r = threadIdx.x; r < TB; r += blockDim.x)
        lse_s[r] = q0 + r < T_ ? lse[((size_t)b * NH + h) * T_ + q0 + r] : 0.0f;
    for (int e = threadIdx.x; e < TB * LDO; e += blockDim.x) dQ[e] = 0.0f;
    __syncthreads(); /* dO tile complete before D reads it */
    attn_rows_D<T, HSP, TB>(D_s, dOs, out, b, h, q0, T_, C, hs); /* rows 16w.. of this warp */

    const T *Qw = Qs + 16 * w * LDT, *dOw = dOs + 16 * w * LDT;
    float *Sw = Ss + 16 * w * LDS, *dPw = dPs + 16 * w * LDS;
    T *dSw = dSs + 16 * w * LDP;
    float *dQw = dQ + 16 * w * LDO;
    const float *lse_w = lse_s + 16 * w, *D_w = D_s + 16 * w;

    for (int kt = 0; kt <= qt; kt++) {
        const int k0 = kt * TB;
        __syncthreads(); /* all warps are done with the previous K, V; D is written */
        attn_load_tile<T, HSP, TB>(Ks, qkv, C3, C + kh * hs, b, k0, T_, hs);
        attn_load_tile<T, HSP, TB>(Vs, qkv, C3, C + (KVH + kh) * hs, b, k0, T_, hs);
        __syncthreads();

        /* S_w = Q_w . K^T, dP_w = dO_w . V^T, then dS_w */
        attn_bwd_pds<T, HSP, TB, false>(Sw, dPw, Qw, dOw, Ks, Vs, NULL, dSw, lse_w, D_w,
                                        q0 + 16 * w, k0, T_, scale);
        __syncwarp();
        warp_mm<T, HSP, TB, false>(dQw, LDO, dSw, LDP, Ks, LDT, true); /* dQ_w += dS_w . K */
        __syncwarp();
    }

    for (int rr = 0; rr < 16; rr++) {
        const int qi = q0 + 16 * w + rr;
        if (qi >= T_) break;
        T *row = dqkv + ((size_t)b * T_ + qi) * C3 + h * hs;
        for (int d = lane; d < hs; d += 32) row[d] = from_f<T>(dQw[rr * LDO + d] * scale);
    }
}

/* By head size, then the larger tile whose shared memory fits the device,
 * in slices of sequences (attn_batch_slices): dK/dV, then dQ. */
template <typename T>
static void attn_bwd(CudaState *st, T *dqkv, const T *dout, const T *qkv, const T *out,
                     const float *lse, int B, int T_, int C, int NH, int KVH)
{
    const float scale = 1.0f / sqrtf((float)(C / NH));
    auto smem = [](auto hsp, auto tb) {
        return attn_bwd_smem<T, decltype(hsp)::value, decltype(tb)::value>();
    };
    attn_tile_dispatch(st, "attention_backward", C / NH, smem, [&](auto hsp, auto tb, size_t smb) {
        constexpr int HSP = decltype(hsp)::value, TB = decltype(tb)::value;
        auto kdkdv = attn_bwd_dkdv_kernel<T, HSP, TB>;
        auto kdq = attn_bwd_dq_kernel<T, HSP, TB>;
        attn_set_smem(kdkdv, smb);
        attn_set_smem(kdq, smb);
        attn_batch_slices(st, B, [&](int b0, int nb) {
            /* dK/dV: a block per key/value head; dQ: per query head */
            const dim3 gkv(ceil_div(T_, TB), KVH, nb), gq(ceil_div(T_, TB), NH, nb);
            const int threads = AttnGeom<T, HSP, TB>::THREADS;
            const size_t o1 = (size_t)b0 * T_ * C, ol = (size_t)b0 * NH * T_;
            const size_t o3 = (size_t)b0 * T_ * ((size_t)C + 2 * (size_t)KVH * (C / NH));
            LAUNCH(kdkdv, gkv, threads, smb, st->stream, dqkv + o3, dout + o1, qkv + o3,
                   out + o1, lse + ol, T_, C, NH, KVH, scale);
            LAUNCH(kdq, gq, threads, smb, st->stream, dqkv + o3, dout + o1, qkv + o3,
                   out + o1, lse + ol, T_, C, NH, KVH, scale);
        });
    });
}

void cuda_attention_backward(Backend *be, void *dqkv, const void *dout, const void *qkv,
                             const void *out, const float *lse, int B, int T, int C, int NH,
                             int KVH)
{
    CudaState *st = cuda_state(be);
    attn_check_heads(st, "attention_backward", C, NH, KVH);
    if (B <= 0 || T <= 0) return;
    if (st->bf16)
        amma_backward(st, amma_dq_run, amma_dkdv_run, (bf16 *)dqkv, (const bf16 *)dout,
                      (const bf16 *)qkv, (const bf16 *)out, lse, B, T, C, NH, KVH);
    else
        attn_bwd(st, (float *)dqkv, (const float *)dout, (const float *)qkv,
                 (const float *)out, lse, B, T, C, NH, KVH);
}
