/* model/flops.h — counted floating-point work of one training step.
 *
 * Owns: the FLOP convention the recompute solver minimises and --plan
 * reports. Counts are exact integers for a (config, B, T):
 *   matmul      2*N*IC*OC for out(N,OC) = inp(N,IC) . W^T (bias not counted)
 *   attention   causal, QK^T and PV each 2*hs FLOPs per (query, key) pair
 *               over half the T x T square: 2 * 2*B*NH*(T*T/2)*hs = 2*B*T*T*C;
 *               the softmax is not counted (FlashAttention's convention)
 *   elementwise per element: LayerNorm 8 (mean 1, variance 3, normalise and
 *               affine 4), GELU 9 (tanh form, tanh counted as 1), residual or
 *               embedding add 1, softmax cross-entropy 5 per logit; the Llama
 *               family's RMSNorm 5, RoPE 6 a rotated element, SwiGLU 6
 *   backward    twice the forward, except attention: 2.5 times (scores and
 *               probabilities are rebuilt from the log-sum-exp, then four
 *               products: dV, dP, dQ, dK)
 * A "step" is the forward and backward of the whole model (embedding,
 * blocks, final LayerNorm, LM head) without recompute and without the
 * optimizer; recompute is reported as a fraction of it. A block's ops are
 * counted by its description (block_desc.h's op_flops: gpt2_cost.c,
 * llama_cost.c); this file adds the embedding, the final norm and the head. */
#ifndef MODEL_FLOPS_H
#define MODEL_FLOPS_H

#include "config.h"
#include "opcost.h"
#include "schedule.h"

typedef struct {
    long long block_fwd;        /* one block forward that writes x_{l+1} */
    long long block_fwd_noout;  /* one block forward with out = SLOT_NONE (no MLP projection
                                 * and residual add) */
    long long block_sel;        /* LN1, LN2 and GELU outputs rebuilt by a backward from a
                                 * selective tape */
    long long tensor[BLOCK_MAX_TENSORS]; /* the op that makes each tape tensor (tape.h) */
    long long block_bwd;        /* one block backward */
    long long embed_fwd, embed_bwd;
    long long head_fwd, head_bwd; /* final LayerNorm, LM head and cross-entropy */
    long long step;             /* embed + L blocks + head, forward and backward */
} FlopCounts;

void flops_count(const GPTConfig *cfg, int B, int T, FlopCounts *out);

/* Forward work a schedule repeats: every forward after the loss head
 * (block_fwd, or block_fwd_noout when it writes no output) plus, for every
 * backward, the ops that make the tensors its tape drops (block_sel for a
 * selective tape). */
long long flops_recompute(const FlopCounts *f, const Schedule *s);

/* The same counts op by op (opcost.h), the optimizer's ops counted 0: the
 * block ops sum to block_fwd, block_fwd_noout, block_bwd, the rebuild of a
 * selective tape is block_sel, and opcost_step at grad_accum 1 is step. */
void flops_op_costs(const GPTConfig *cfg, int B, int T, OpCosts *out);

#endif
