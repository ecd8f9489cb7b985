/* kernels/cpu/attention.c — causal self-attention, multi-head or
 * grouped-query, tiled.
 *
 * NH query heads and KVH key/value heads of hs = C/NH each, NH divisible by
 * KVH; query head h reads key/value head g = h / (NH/KVH) (KVH == NH:
 * multi-head attention). qkv(B,T,W), W = C + 2*KVH*hs: row (b,t) holds
 * q (NH*hs = C wide) | k (KVH*hs) | v (KVH*hs); head h uses columns
 * h*hs..(h+1)*hs of q, g*hs..(g+1)*hs of k and of v (W = 3C when KVH ==
 * NH). Scores s_tj = q_t.k_j / sqrt(hs) for j <= t.
 * forward:  out(B,T,C), lse(B,NH,T) = log sum_j exp(s_tj). A task is one
 *           (b, h, query tile of ATT_BLK rows); it walks the key tiles
 *           0..its own in order with FlashAttention's online softmax:
 *           S = Q K^T (ATT_BLK x ATT_BLK) into the thread's scratch, the
 *           running max m and sum l per row, O = O exp(m - m') + P V. Tiles
 *           above the diagonal are skipped, the diagonal one masked; the
 *           (T,T) matrix never exists. Scratch: att_fwd_floats(hs) per
 *           thread (attention_tile.h): its slot of the scratch the model's
 *           plan holds (cpu_attention_scratch), else its stack.
 * decode:   one row t against a (KVH,maxT,hs) K/V cache, through the same
 *           tile steps with one query row: the forward's row t bit for bit.
 * backward: attention_bwd.c.
 * Every sum has an order fixed by the shapes, so results do not depend on
 * the thread count. */
#include <math.h>
#include <string.h>

#include "attention_tile.h"
#include "cpu_ops.h"

/* Rows [0, nq) of one query tile against key tiles 0..nkt-1, the last one
 * holding nk_last keys and masked causally from row offset diag (key j of
 * the last tile is valid for query row i when j <= i + diag; diag < 0: no
 * causal mask, only nk_last). q rows ldq floats apart; k and v rows of tile
 * kt start at k0 + kt*ATT_BLK*ldk. Writes o rows (ldo apart) and lse[i]. */
ATT_INLINE void fwd_tile(const float *q, size_t ldq, const float *k0, const float *v0,
                         size_t ldk, int nq, int nkt, int nk_last, int diag, int hs, float scale,
                         float *o_out, size_t ldo, float *lse, float *ws)
{
    float *Q = ws, *O = Q + ATT_BLK * hs, *KT = O + ATT_BLK * hs, *V = KT + ATT_BLK * hs;
    float *S = V + ATT_BLK * hs, *m = S + ATT_BLK * ATT_BLK, *l = m + ATT_BLK;
    pack_rows(Q, q, ldq, nq, hs);
    memset(O, 0, sizeof(float) * ATT_BLK * hs);
    for (int i = 0; i < ATT_BLK; i++) m[i] = -INFINITY, l[i] = 0.0f;
    for (int kt = 0; kt < nkt; kt++) {
        int last = kt == nkt - 1, nk = last ? nk_last : ATT_BLK;
        const float *kp = k0 + (size_t)kt * ATT_BLK * ldk, *vp = v0 + (size_t)kt * ATT_BLK * ldk;
        pack_cols(KT, kp, ldk, nk, hs);
        pack_rows(V, vp, ldk, nk, hs);
        memset(S, 0, sizeof(float) * nq * ATT_BLK);
        mm_acc(nq, ATT_BLK, hs, Q, hs, KT, ATT_BLK, S, ATT_BLK);
        for (int i = 0; i < nq; i++) {
            int nv = nk;
            if (last && diag >= 0 && i + diag + 1 < nv) nv = i + diag + 1;
            softmax_row_step(S + (size_t)i * ATT_BLK, nv, scale, m + i, l + i, O + (size_t)i * hs, hs);
        }
        mm_acc(nq, hs, ATT_BLK, S, ATT_BLK, V, hs, O, hs);
    }
    for (int i = 0; i < nq; i++) {
        float inv = 1.0f / l[i], *o = o_out + i * ldo;
        for (int d = 0; d < hs; d++) o[d] = O[(size_t)i * hs + d] * inv;
        lse[i] = m[i] + logf(l[i]);
    }
}

ATT_CLONES
void cpu_attention_forward(Backend *be, void *out_, float *lse, const void *qkv_, int B, int T,
                           int C, int NH, int KVH)
{
    float *out = out_;
    const float *qkv = qkv_;
    int hs = C / NH, grp = NH / KVH, nt = (T + ATT_BLK - 1) / ATT_BLK;
    size_t W = (size_t)C + (size_t)2 * KVH * hs, kvc = (size_t)KVH * hs;
    float scale = 1.0f / sqrtf((float)hs);
    long tasks = (long)B * NH * nt;
    int nth;
    float *pool = att_pool(be, hs, &nth);
#pragma omp parallel num_threads(nth)
    {
        float stack_ws[pool ? 1 : att_fwd_floats(hs)];
        float *ws = pool ? pool + omp_get_thread_num() * att_slot_floats(hs) : stack_ws;
        /* the last query tiles (most key tiles) first: dynamic scheduling
         * then ends with the cheap ones */
#pragma omp for schedule(dynamic, 1)
        for (long w = 0; w < tasks; w++) {
            int qt = nt - 1 - (int)(w / ((long)B * NH));
            int bh = (int)(w % ((long)B * NH)), b = bh / NH, h = bh % NH;
            int t0 = qt * ATT_BLK, nq = T - t0 < ATT_BLK ? T - t0 : ATT_BLK;
            const float *row0 = qkv + (size_t)b * T * W;
            const float *k0 = row0 + C + (size_t)(h / grp) * hs;
            fwd_tile(row0 + (size_t)t0 * W + (size_t)h * hs, W, k0, k0 + kvc, W, nq, qt + 1, nq, 0,
                     hs, scale, out + ((size_t)b * T + t0) * C + (size_t)h * hs, C,
                     lse + ((size_t)b * NH + h) * T + t0, ws);
        }
    }
}

/* Decode: the forward's row t as row i = t - t0 of its query tile t0 =
 * t rounded down to ATT_BLK, with k_j, v_j read from the cache, where they
 * sit hs apart. The key tiles, their zero padding, the mask (keys j <= t)
 * and every chain are the forward's, so out is its row t bit for bit. Row t
 * of every key/value head's cache is written first, on the calling thread:
 * a group's query heads may run on other threads. */
ATT_CLONES
void cpu_attention_decode(Backend *be, void *out_, void *kcache_, void *vcache_, const void *qkv_,
                          int t, int maxT, int C, int NH, int KVH)
{
    float *out = out_, *kc = kcache_, *vc = vcache_;
    const float *qkv = qkv_;
    int hs = C / NH, grp = NH / KVH, nkt = t / ATT_BLK + 1, nk_last = t % ATT_BLK + 1;
    size_t kvc = (size_t)KVH * hs;
    float scale = 1.0f / sqrtf((float)hs);
    for (int g = 0; g < KVH; g++) {
        memcpy(kc + ((size_t)g * maxT + t) * hs, qkv + C + (size_t)g * hs, sizeof(float) * hs);
        memcpy(vc + ((size_t)g * maxT + t) * hs, qkv + C + kvc + (size_t)g * hs,
               sizeof(float) * hs);
    }
    /* threads only where there is work for them: a small step's cost is
     * the parallel region's start */
    int nth;
    float *pool = att_pool(be, hs, &nth);
#pragma omp parallel if ((size_t)(t + 1) * C >= 65536) num_threads(nth)
    {
        float stack_ws[pool ? 1 : att_fwd_floats(hs)];
        float *ws = pool ? pool + omp_get_thread_num() * att_slot_floats(hs) : stack_ws;
#pragma omp for schedule(static)
        for (int h = 0; h < NH; h++) {
            const float *k0 = kc + (size_t)(h / grp) * maxT * hs;
            const float *v0 = vc + (size_t)(h / grp) * maxT * hs;
            float lse;
            /* row 0 of a 1-row tile; the mask of the last key tile is
             * nk_last keys, which is row (t - t0)'s causal limit */
            fwd_tile(qkv + (size_t)h * hs, 0, k0, v0, hs, 1, nkt, nk_last, -1, hs, scale,
                     out + (size_t)h * hs, 0, &lse, ws);
        }
    }
}

size_t cpu_attention_scratch_bytes(Backend *be, int C, int NH)
{
    return (size_t)omp_get_max_threads() * att_slot_floats(C / NH) * sizeof(float);
}

void cpu_attention_scratch(Backend *be, void *p, size_t bytes)
{
    CpuState *st = be->state;
    st->att_ws = p;
    st->att_ws_bytes = p ? bytes : 0;
}
