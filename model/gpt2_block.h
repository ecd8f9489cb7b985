/* model/gpt2_block.h — GPT-2's block description (block_desc.h) and the
 * names of its tensors, side outputs and backward ops, for the code that
 * runs GPT-2's ops (gpt.c, gpt_alloc.c) and its op costs (gpt2_cost.c).
 * Nothing generic names these.
 *
 * The tensors of block l (N = B*T rows, act dtype), each with the ops that
 * make it, which read the tensor before it (ln1 reads x_l):
 *   GPT2_LN1   (N,C)   LayerNorm 1 of x_l (also writes its mean, rstd)
 *   GPT2_QKV   (N,3C)  qkv matmul
 *   GPT2_ATTY  (N,C)   attention, with its log-sum-exp (f32, B*NH*T)
 *   GPT2_RES2  (N,C)   attproj matmul, then + x_l (the mid-block residual)
 *   GPT2_LN2   (N,C)   LayerNorm 2 (also writes its mean, rstd)
 *   GPT2_FCH   (N,4C)  fc matmul (pre-GELU)
 *   GPT2_GELU  (N,4C)  GELU (post-GELU)
 * --recompute selective drops ln1, ln2 and the GELU output. The two
 * LayerNorms' mean and rstd (4N f32) are always kept; the LSE follows
 * atty. */
#ifndef MODEL_GPT2_BLOCK_H
#define MODEL_GPT2_BLOCK_H

#include "block_desc.h"

enum { GPT2_LN1, GPT2_QKV, GPT2_ATTY, GPT2_RES2, GPT2_LN2, GPT2_FCH, GPT2_GELU, GPT2_TENSORS };
enum { GPT2_LN1_MEAN, GPT2_LN1_RSTD, GPT2_LSE, GPT2_LN2_MEAN, GPT2_LN2_RSTD, GPT2_SIDES };
/* The forward ops, in the order the interpreter runs them (the
 * description's fwd[]). */
enum { GPT2_FWD_LN1, GPT2_FWD_QKV, GPT2_FWD_ATTN, GPT2_FWD_ATTPROJ, GPT2_FWD_RESID1,
       GPT2_FWD_LN2, GPT2_FWD_FC, GPT2_FWD_GELU, GPT2_FWD_FCPROJ, GPT2_FWD_RESID2, GPT2_FWD_OPS };
/* The backward ops, in the order the interpreter runs them, and the
 * tensors each reads: fcproj (GELU out), GELU (fch), fc (ln2), LN2
 * (res2), attproj (atty), attention (qkv, atty, LSE), qkv (ln1), LN1 (x_l
 * only). */
enum { GPT2_BWD_FCPROJ, GPT2_BWD_GELU, GPT2_BWD_FC, GPT2_BWD_LN2, GPT2_BWD_ATTPROJ,
       GPT2_BWD_ATTN, GPT2_BWD_QKV, GPT2_BWD_LN1, GPT2_BWD_OPS };

/* Constant forms, for initializers and tests. */
#define GPT2_SELECTIVE \
    (TENSOR_BIT(GPT2_LN1) | TENSOR_BIT(GPT2_LN2) | TENSOR_BIT(GPT2_GELU))
#define GPT2_KINDS (1 << GPT2_TENSORS)

extern const BlockDesc GPT2_BLOCK;

/* Its ops' costs (block_desc.h's op_flops and bench_op; gpt2_cost.c). */
void gpt2_op_flops(const BlockShape *sh, long long *fwd, long long *bwd, long long *norm);
void gpt2_bench_op(const BlockBench *b, int part, int op);

#endif
