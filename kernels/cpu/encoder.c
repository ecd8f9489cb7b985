/* kernels/cpu/encoder.c — token + position embedding, forward and backward.
 *
 * forward:  out(B,T,C) = wte(Vp,C)[tokens(B,T)] + wpe(maxT,C)[t]
 * backward: dwte += scatter of dout by token; dwpe[t] += sum over b of dout.
 * wpe and dwpe may be NULL: no position table (the Llama family's RoPE).
 * Backward parallelises over column blocks, walking tokens in order, so the
 * accumulation order never depends on threads. */
#include "cpu_ops.h"

void cpu_encoder_forward(Backend *be, void *out_, const int *tokens, const void *wte_,
                         const void *wpe_, int B, int T, int C)
{
    float *out = out_;
    const float *wte = wte_, *wpe = wpe_;
#pragma omp parallel for collapse(2) if ((size_t)B * T * C >= CPU_PAR_MIN_ELEMS)
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *o = out + ((size_t)b * T + t) * C;
            const float *we = wte + (size_t)tokens[b * T + t] * C;
            if (!wpe) { /* no position table (Llama: RoPE) */
                for (int c = 0; c < C; c++) o[c] = we[c];
                continue;
            }
            const float *pe = wpe + (size_t)t * C;
            for (int c = 0; c < C; c++) o[c] = we[c] + pe[c];
        }
}

void cpu_encoder_backward(Backend *be, void *dwte_, void *dwpe_, const void *dout_,
                          const int *tokens, int B, int T, int C)
{
    float *dwte = dwte_, *dwpe = dwpe_;
    const float *dout = dout_;
    int nblocks = (C + CPU_COL_BLOCK - 1) / CPU_COL_BLOCK;
#pragma omp parallel for
    for (int cb = 0; cb < nblocks; cb++) {
        int c0 = cb * CPU_COL_BLOCK, c1 = c0 + CPU_COL_BLOCK < C ? c0 + CPU_COL_BLOCK : C;
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                const float *d = dout + ((size_t)b * T + t) * C;
                float *gw = dwte + (size_t)tokens[b * T + t] * C;
                if (!dwpe) {
                    for (int c = c0; c < c1; c++) gw[c] += d[c];
                    continue;
                }
                float *gp = dwpe + (size_t)t * C;
                for (int c = c0; c < c1; c++) {
                    gw[c] += d[c];
                    gp[c] += d[c];
                }
            }
    }
}
