/* dev/cuda/attention_variants.h — the checker's calls into the sweep's table
 * of bf16 attention kernels (attention_variants.cu), from C.
 *
 * kernel: ATTN_FWD, ATTN_DQ or ATTN_DKDV. Variant 0 of each is the one
 * ./train_gpt ships; the others are compiled only into the checker.
 * count: how many; name: NULL past the end; usable: 1 when be's GPU can
 * run variant i (the wgmma ones need compute capability 9.0), else 0;
 * fused: 1 when dK/dV variant i writes dQ too, so that no dQ kernel runs
 * after it. _forward and _backward run the op as be's own op does, with
 * the variants named (dq, dkdv: one of each) where the head size pads to
 * 64 on the 16-byte path in bf16, and be's own op elsewhere. close: frees
 * what the variants keep (their workspace: the fused ones' dQ partials,
 * the ds one's dS tiles), before be closes. */
#ifndef DEV_CUDA_ATTENTION_VARIANTS_H
#define DEV_CUDA_ATTENTION_VARIANTS_H

#include "kernels/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { ATTN_FWD, ATTN_DQ, ATTN_DKDV, ATTN_KERNELS };
int attn_variant_count(int kernel);
const char *attn_variant_name(int kernel, int i);
int attn_variant_usable(Backend *be, int kernel, int i);
int attn_variant_fused(int kernel, int i);
void attn_variant_forward(Backend *be, int fwd, void *out, float *lse, const void *qkv, int B,
                          int T, int C, int NH);
void attn_variant_backward(Backend *be, int dq, int dkdv, void *dqkv, const void *dout,
                           const void *qkv, const void *out, const float *lse, int B, int T,
                           int C, int NH);
void attn_variants_close(void);

#ifdef __cplusplus
}
#endif

#endif
