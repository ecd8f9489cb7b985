/* kernels/cpu/attention_bwd.c — the backward of attention.c's forward.
 *
 * With p_tj = exp(s_tj - lse_t) recomputed from the forward's lse,
 * D_t = dout_t . out_t, ds_tj = p_tj (dout_t . v_j - D_t) / sqrt(hs):
 *   dv_j = sum_t p_tj dout_t,  dk_j = sum_t ds_tj q_t,  dq_t = sum_j ds_tj k_j.
 * FlashAttention-2's order, in tiles of ATT_BLK: for each key tile (K, V
 * packed once), the query tiles from the diagonal down: S = Q K^T, P,
 * dV += P^T dO, dP = dO V^T, dS, dK += dS^T Q, and dQ(query tile) += dS K
 * straight into dqkv. dK and dV of a key tile are finished when its query
 * tiles are done and are written (=) then; dQ of a query tile collects its
 * key tiles in ascending order. Grouped-query attention (KVH < NH, layout
 * in attention.c): a key/value head's dK and dV sum over its group's query
 * heads, which run one after another, in ascending order, for each key
 * tile. A task is one (b, key/value head), whose tiles run in that fixed
 * order on one thread, so the bits do not depend on the thread count; with
 * KVH == NH it is one (b, h), the multi-head attention's task. Scratch:
 * att_bwd_floats(hs) per thread (attention_tile.h), in its slot of the
 * planned scratch, else on its stack. */
#include <math.h>
#include <string.h>

#include "attention_tile.h"
#include "cpu_ops.h"

/* One (b, g): key/value head g and its query heads h = g*grp .. g*grp +
 * grp - 1. qkv0 and dqkv0 point at row 0 of the batch row (rows W apart; q
 * of head h at column h*hs, k of head g at C + g*hs, v at C + KVH*hs +
 * g*hs), dy0/y0 at dout/out of row 0 (rows C apart), L0 at the batch row's
 * NH*T log-sum-exps. For each key tile, dK and dV collect the group's query
 * heads in ascending order (one head: exactly the multi-head loop). */
ATT_INLINE void bwd_group(float *dqkv0, const float *qkv0, const float *dy0, const float *y0,
                          const float *L0, int T, int C, int KVH, int g, int grp, int hs,
                          float scale, float *ws)
{
    size_t W = (size_t)C + (size_t)2 * KVH * hs, kvc = (size_t)KVH * hs;
    int nt = (T + ATT_BLK - 1) / ATT_BLK;
    float *Q = ws, *dO = Q + ATT_BLK * hs, *K = dO + ATT_BLK * hs, *dK = K + ATT_BLK * hs;
    float *dV = dK + ATT_BLK * hs, *KT = dV + ATT_BLK * hs, *VT = KT + ATT_BLK * hs;
    float *P = VT + ATT_BLK * hs, *dS = P + ATT_BLK * ATT_BLK, *X = dS + ATT_BLK * ATT_BLK;
    float *Dr = X + ATT_BLK * ATT_BLK, *Lr = Dr + ATT_BLK;
    const float *k0 = qkv0 + C + (size_t)g * hs, *v0 = k0 + kvc;
    float *dk0 = dqkv0 + C + (size_t)g * hs, *dv0 = dk0 + kvc;
    for (int r = 0; r < grp; r++)
        for (int t = 0; t < T; t++)
            memset(dqkv0 + t * W + (size_t)(g * grp + r) * hs, 0, sizeof(float) * hs);
    for (int kt = 0; kt < nt; kt++) {
        int j0 = kt * ATT_BLK, nk = T - j0 < ATT_BLK ? T - j0 : ATT_BLK;
        pack_rows(K, k0 + j0 * W, W, nk, hs);
        pack_cols(KT, k0 + j0 * W, W, nk, hs);
        pack_cols(VT, v0 + j0 * W, W, nk, hs);
        memset(dK, 0, sizeof(float) * ATT_BLK * hs);
        memset(dV, 0, sizeof(float) * ATT_BLK * hs);
        for (int r = 0; r < grp; r++) {
            int h = g * grp + r;
            const float *q0 = qkv0 + (size_t)h * hs, *dy0h = dy0 + (size_t)h * hs;
            const float *y0h = y0 + (size_t)h * hs, *L = L0 + (size_t)h * T;
            float *dq0 = dqkv0 + (size_t)h * hs;
            for (int qt = kt; qt < nt; qt++) {
                int i0 = qt * ATT_BLK, nq = T - i0 < ATT_BLK ? T - i0 : ATT_BLK;
                pack_rows(Q, q0 + i0 * W, W, nq, hs);
                pack_rows(dO, dy0h + (size_t)i0 * C, C, nq, hs);
                for (int i = 0; i < nq; i++) {
                    const float *dy = dy0h + (size_t)(i0 + i) * C, *y = y0h + (size_t)(i0 + i) * C;
                    float D = 0.0f;
                    for (int d = 0; d < hs; d++) D += dy[d] * y[d];
                    Dr[i] = D;
                    Lr[i] = L[i0 + i];
                }
                memset(P, 0, sizeof(float) * ATT_BLK * ATT_BLK);
                memset(dS, 0, sizeof(float) * ATT_BLK * ATT_BLK);
                mm_acc(nq, ATT_BLK, hs, Q, hs, KT, ATT_BLK, P, ATT_BLK);   /* S = Q K^T */
                mm_acc(nq, ATT_BLK, hs, dO, hs, VT, ATT_BLK, dS, ATT_BLK); /* dP = dO V^T */
                for (int i = 0; i < nq; i++) {
                    /* keys j < nv are valid: below the diagonal, and < nk */
                    int nv = qt == kt ? i + 1 : nk;
                    float *p = P + (size_t)i * ATT_BLK, *ds = dS + (size_t)i * ATT_BLK;
                    float Li = Lr[i], Di = Dr[i];
#pragma omp simd
                    for (int j = 0; j < ATT_BLK; j++) {
                        float pj = j < nv ? att_exp(p[j] * scale - Li) : 0.0f;
                        p[j] = pj;
                        ds[j] = pj * (ds[j] - Di) * scale;
                    }
                }
                transpose_blk(X, P);                                 /* P^T */
                mm_acc(ATT_BLK, hs, nq, X, ATT_BLK, dO, hs, dV, hs); /* dV += P^T dO */
                transpose_blk(X, dS);                                /* dS^T */
                mm_acc(ATT_BLK, hs, nq, X, ATT_BLK, Q, hs, dK, hs);  /* dK += dS^T Q */
                mm_acc(nq, hs, ATT_BLK, dS, ATT_BLK, K, hs, dq0 + i0 * W, (int)W); /* dQ += dS K */
            }
        }
        for (int j = 0; j < nk; j++) {
            memcpy(dk0 + (j0 + j) * W, dK + (size_t)j * hs, sizeof(float) * hs);
            memcpy(dv0 + (j0 + j) * W, dV + (size_t)j * hs, sizeof(float) * hs);
        }
    }
}

ATT_CLONES
void cpu_attention_backward(Backend *be, void *dqkv_, const void *dout_, const void *qkv_,
                            const void *out_, const float *lse, int B, int T, int C, int NH,
                            int KVH)
{
    float *dqkv = dqkv_;
    const float *dout = dout_, *qkv = qkv_, *out = out_;
    int hs = C / NH, grp = NH / KVH;
    size_t W = (size_t)C + (size_t)2 * KVH * hs;
    float scale = 1.0f / sqrtf((float)hs);
    int nth;
    float *pool = att_pool(be, hs, &nth);
#pragma omp parallel num_threads(nth)
    {
        float stack_ws[pool ? 1 : att_bwd_floats(hs)];
        float *ws = pool ? pool + omp_get_thread_num() * att_slot_floats(hs) : stack_ws;
#pragma omp for collapse(2) schedule(dynamic, 1)
        for (int b = 0; b < B; b++)
            for (int g = 0; g < KVH; g++) {
                size_t r0 = (size_t)b * T;
                bwd_group(dqkv + r0 * W, qkv + r0 * W, dout + r0 * C, out + r0 * C,
                          lse + (size_t)b * NH * T, T, C, KVH, g, grp, hs, scale, ws);
            }
    }
}
