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
 * key tiles in ascending order. A task is one (b, h), whose tiles run in
 * that fixed order on one thread, so the bits do not depend on the thread
 * count. Scratch: att_bwd_floats(hs) per thread (attention_tile.h), in its
 * slot of the planned scratch, else on its stack. */
#include <math.h>
#include <string.h>

#include "attention_tile.h"
#include "cpu_ops.h"

/* One (b, h): q0 points at q of row 0 (rows C3 apart; k at +C, v at +2C),
 * dq0 likewise into dqkv, dy0/y0 at dout/out of row 0 (rows C apart),
 * L at the head's T log-sum-exps. */
ATT_INLINE void bwd_head(float *dq0, const float *q0, const float *dy0, const float *y0,
                         const float *L, int T, int C, int hs, float scale, float *ws)
{
    size_t C3 = (size_t)3 * C;
    int nt = (T + ATT_BLK - 1) / ATT_BLK;
    float *Q = ws, *dO = Q + ATT_BLK * hs, *K = dO + ATT_BLK * hs, *dK = K + ATT_BLK * hs;
    float *dV = dK + ATT_BLK * hs, *KT = dV + ATT_BLK * hs, *VT = KT + ATT_BLK * hs;
    float *P = VT + ATT_BLK * hs, *dS = P + ATT_BLK * ATT_BLK, *X = dS + ATT_BLK * ATT_BLK;
    float *Dr = X + ATT_BLK * ATT_BLK, *Lr = Dr + ATT_BLK;
    for (int t = 0; t < T; t++) memset(dq0 + t * C3, 0, sizeof(float) * hs);
    for (int kt = 0; kt < nt; kt++) {
        int j0 = kt * ATT_BLK, nk = T - j0 < ATT_BLK ? T - j0 : ATT_BLK;
        pack_rows(K, q0 + j0 * C3 + C, C3, nk, hs);
        pack_cols(KT, q0 + j0 * C3 + C, C3, nk, hs);
        pack_cols(VT, q0 + j0 * C3 + 2 * C, C3, nk, hs);
        memset(dK, 0, sizeof(float) * ATT_BLK * hs);
        memset(dV, 0, sizeof(float) * ATT_BLK * hs);
        for (int qt = kt; qt < nt; qt++) {
            int i0 = qt * ATT_BLK, nq = T - i0 < ATT_BLK ? T - i0 : ATT_BLK;
            pack_rows(Q, q0 + i0 * C3, C3, nq, hs);
            pack_rows(dO, dy0 + (size_t)i0 * C, C, nq, hs);
            for (int i = 0; i < nq; i++) {
                const float *dy = dy0 + (size_t)(i0 + i) * C, *y = y0 + (size_t)(i0 + i) * C;
                float D = 0.0f;
                for (int d = 0; d < hs; d++) D += dy[d] * y[d];
                Dr[i] = D;
                Lr[i] = L[i0 + i];
            }
            memset(P, 0, sizeof(float) * ATT_BLK * ATT_BLK);
            memset(dS, 0, sizeof(float) * ATT_BLK * ATT_BLK);
            mm_acc(nq, ATT_BLK, hs, Q, hs, KT, ATT_BLK, P, ATT_BLK);     /* S = Q K^T */
            mm_acc(nq, ATT_BLK, hs, dO, hs, VT, ATT_BLK, dS, ATT_BLK);   /* dP = dO V^T */
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
            transpose_blk(X, P);                                       /* P^T */
            mm_acc(ATT_BLK, hs, nq, X, ATT_BLK, dO, hs, dV, hs);       /* dV += P^T dO */
            transpose_blk(X, dS);                                      /* dS^T */
            mm_acc(ATT_BLK, hs, nq, X, ATT_BLK, Q, hs, dK, hs);        /* dK += dS^T Q */
            mm_acc(nq, hs, ATT_BLK, dS, ATT_BLK, K, hs, dq0 + i0 * C3, (int)C3); /* dQ += dS K */
        }
        for (int j = 0; j < nk; j++) {
            memcpy(dq0 + (j0 + j) * C3 + C, dK + (size_t)j * hs, sizeof(float) * hs);
            memcpy(dq0 + (j0 + j) * C3 + 2 * C, dV + (size_t)j * hs, sizeof(float) * hs);
        }
    }
}

ATT_CLONES
void cpu_attention_backward(Backend *be, void *dqkv_, const void *dout_, const void *qkv_,
                            const void *out_, const float *lse, int B, int T, int C, int NH)
{
    float *dqkv = dqkv_;
    const float *dout = dout_, *qkv = qkv_, *out = out_;
    int hs = C / NH;
    size_t C3 = (size_t)3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    int nth;
    float *pool = att_pool(be, hs, &nth);
#pragma omp parallel num_threads(nth)
    {
        float stack_ws[pool ? 1 : att_bwd_floats(hs)];
        float *ws = pool ? pool + omp_get_thread_num() * att_slot_floats(hs) : stack_ws;
#pragma omp for collapse(2) schedule(dynamic, 1)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < NH; h++) {
                size_t r0 = (size_t)b * T;
                bwd_head(dqkv + r0 * C3 + (size_t)h * hs, qkv + r0 * C3 + (size_t)h * hs,
                         dout + r0 * C + (size_t)h * hs, out + r0 * C + (size_t)h * hs,
                         lse + ((size_t)b * NH + h) * T, T, C, hs, scale, ws);
            }
    }
}
