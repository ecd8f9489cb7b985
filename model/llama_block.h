/* model/llama_block.h — the Llama family's block description (block_desc.h)
 * and the names of its tensors, side outputs and backward ops, for the
 * code that runs its ops (llama_run.c, gpt_alloc.c) and its op costs
 * (llama_cost.c). Nothing generic names these.
 *
 * The block (pre-norm, no biases):
 *   r = x + wo(attn(rope(wqkv(rms1(x)))));  x' = r + w_down(swiglu(w_gateup(rms2(r)))).
 * The tensors of block l (N = B*T rows, act dtype; hs the head size,
 * config_head_dim: C/NH unless --head-dim, Q = NH hs; F the FFN width),
 * each with the ops that make it and what they read:
 *   LLAMA_RMS1   (N,C)             RMSNorm 1 of x_l (also writes its rstd)
 *   LLAMA_QKV    (N,Q+2 NKV hs)    qkv matmul, then RoPE on q and k in place
 *   LLAMA_ATTY   (N,Q)             attention (GQA), with its log-sum-exp (f32, NH per row)
 *   LLAMA_RES2   (N,C)             wo matmul (Q -> C), then + x_l (the mid-block residual)
 *   LLAMA_RMS2   (N,C)             RMSNorm 2 (also writes its rstd)
 *   LLAMA_GATEUP (N,2F)            gate/up matmul: [gate | up] per row
 *   LLAMA_SWI    (N,F)             SwiGLU: silu(gate) * up
 * --recompute selective drops the cheap ones that are large or many: the
 * two RMSNorm outputs and the SwiGLU output (rebuilt by an elementwise op
 * or a norm); the matmuls' and attention's outputs are kept. The RMSNorm
 * rstds (2N f32) are always kept; the LSE follows atty. RoPE is rebuilt
 * with the qkv matmul when qkv is dropped (its backward needs no input).
 *
 * With qk-norm (Qwen3, cfg->qk_norm: LLAMA_QKNORM_BLOCK) the qkv matmul
 * writes an eighth tensor, and qkv is made from it:
 *   LLAMA_QKR    (N,Q+2 NKV hs)    qkv matmul (+ bias): the norm's input
 *   LLAMA_QKV    (N,Q+2 NKV hs)    q and k heads RMS-normed (v copied), then RoPE
 * with the per-head rstd (N, NH + NKV f32, LLAMA_QK_RSTD) always kept. Its
 * backward runs in the RoPE op's slot (rope, then the norm's backward, which
 * reads qkr), so the backward ops keep their indices; selective drops qkv
 * too (a norm and a rotation: cheap to rebuild from qkr). */
#ifndef MODEL_LLAMA_BLOCK_H
#define MODEL_LLAMA_BLOCK_H

#include "block_desc.h"

enum { LLAMA_RMS1, LLAMA_QKV, LLAMA_ATTY, LLAMA_RES2, LLAMA_RMS2, LLAMA_GATEUP, LLAMA_SWI,
       LLAMA_TENSORS, LLAMA_QKR = LLAMA_TENSORS };
enum { LLAMA_RMS1_RSTD, LLAMA_LSE, LLAMA_RMS2_RSTD, LLAMA_SIDES, LLAMA_QK_RSTD = LLAMA_SIDES };
/* The forward ops, in the order the interpreter runs them (the
 * description's fwd[], llama_run.c's fwd_op). With qk-norm LLAMA_FWD_ROPE
 * is the norm, then RoPE. */
enum { LLAMA_FWD_RMS1, LLAMA_FWD_QKV, LLAMA_FWD_ROPE, LLAMA_FWD_ATTN, LLAMA_FWD_WO,
       LLAMA_FWD_RESID1, LLAMA_FWD_RMS2, LLAMA_FWD_GATEUP, LLAMA_FWD_SWIGLU, LLAMA_FWD_DOWN,
       LLAMA_FWD_RESID2, LLAMA_FWD_OPS };
/* The backward ops, in the order the interpreter runs them, and the
 * tensors each reads: down (swiglu out), SwiGLU (gate/up), gate/up (rms2),
 * RMSNorm 2 (res2), wo (atty), attention (qkv, atty, LSE), RoPE (none: it
 * turns d(qkv) back in place), qkv (rms1), RMSNorm 1 (x_l only). */
enum { LLAMA_BWD_DOWN, LLAMA_BWD_SWIGLU, LLAMA_BWD_GATEUP, LLAMA_BWD_RMS2, LLAMA_BWD_WO,
       LLAMA_BWD_ATTN, LLAMA_BWD_ROPE, LLAMA_BWD_QKV, LLAMA_BWD_RMS1, LLAMA_BWD_OPS };

#define LLAMA_SELECTIVE \
    (TENSOR_BIT(LLAMA_RMS1) | TENSOR_BIT(LLAMA_RMS2) | TENSOR_BIT(LLAMA_SWI))
#define LLAMA_QKNORM_SELECTIVE (LLAMA_SELECTIVE | TENSOR_BIT(LLAMA_QKV))

extern const BlockDesc LLAMA_BLOCK;
extern const BlockDesc LLAMA_QKNORM_BLOCK; /* with qk-norm */

/* Its ops' costs (block_desc.h's op_flops and bench_op; llama_cost.c). */
void llama_op_flops(const BlockShape *sh, long long *fwd, long long *bwd, long long *norm);
void llama_qknorm_op_flops(const BlockShape *sh, long long *fwd, long long *bwd, long long *norm);
void llama_bench_op(const BlockBench *b, int part, int op);

#endif
