/* model/gpt_tensors.h — inside the model (gpt.c, llama_run.c, gpt_optim.c):
 * the parameter tensors' order in the flat vector (llm.c's; the Llama
 * family's slots in config.h), the per-layer pointers, the Llama block's
 * entry points, and the interpreter's side of the host tier's deferred
 * update (gpt_optim.c).
 *
 * Owns: nothing; the names the model's own files share. */
#ifndef MODEL_GPT_TENSORS_H
#define MODEL_GPT_TENSORS_H

#include "gpt.h"

enum { WTE, WPE, LN1W, LN1B, QKVW, QKVB, ATTPROJW, ATTPROJB, LN2W, LN2B, FCW, FCB, FCPROJW,
       FCPROJB, LNFW, LNFB };

static inline char *gpt_par_at(const GPT *g, void *base, size_t elem)
{
    return (char *)base + elem * g->be->par_bytes;
}

/* Element offset of layer l inside per-layer tensor i (tensors 2..13). */
static inline void *gpt_layer_ptr(const GPT *g, void *const *base, int i, int l)
{
    size_t per_layer = g->param_sizes[i] / (size_t)g->cfg.num_layers;
    return (char *)base[i] + (size_t)l * per_layer * g->be->par_bytes;
}
/* ZeRO-3 reads block l's parameters from gather buffer l & 1. */
#define P(i, l)                                                                                    \
    (g->param_blocks ? (void *)((char *)g->param_t[(i)] + (size_t)((l) & 1) * g->param_block_bytes) \
                     : gpt_layer_ptr(g, g->param_t, (i), (l)))
/* ZeRO-2 writes every block's gradients into the one block buffer. */
#define G(i, l) (g->grad_layer ? g->grad_t[(i)] : gpt_layer_ptr(g, g->grad_t, (i), (l)))

/* The gradient of flat element `elem` (in the optimizer range under ZeRO-2,
 * whose g->grads holds that range only). */
static inline char *gpt_grad_at(const GPT *g, size_t elem)
{
    return gpt_par_at(g, g->grads, g->grad_layer ? elem - g->opt_begin : elem);
}

/* The parameter of flat element `elem` (in the optimizer range under
 * ZeRO-3, whose g->params holds that range only). */
static inline char *gpt_param_at(const GPT *g, size_t elem)
{
    return gpt_par_at(g, g->params, g->param_blocks ? elem - g->opt_begin : elem);
}

/* The backend's attention scratch, from this model's plan, handed over
 * before each attention op (ops.h): a backend may serve other models'
 * ops between two of this one's. */
static inline void gpt_attn_scratch(GPT *g)
{
    if (g->be->ops->attention_scratch)
        g->be->ops->attention_scratch(g->be, g->attn_scratch,
                                      g->attn_scratch ? g->plan.attn_scratch_bytes : 0);
}

/* The Llama family's block (llama_run.c), in its description's op order
 * (llama_block.h), as gpt.c's block_forward, make_tensor and
 * block_backward are GPT-2's: FORWARD(l) of x into the tape (and out =
 * x_{l+1} unless out is NULL: a re-forward), a dropped tensor's rebuild,
 * and BACKWARD(l) with g->dres holding dL/dx_{l+1} on entry, dL/dx_l on
 * exit. */
void llama_block_forward(GPT *g, int l, const void *x, BlockTape *tp, void *out);
void llama_make_tensor(GPT *g, int l, const void *x, BlockTape *tp, int t);
void llama_block_backward(GPT *g, int l, const void *x, BlockTape *tp);
/* Block l of a KV-cache decode pass over n rows at positions t..t+n-1
 * (gpt.c's decode_pass): d->x in, x_{l+1} out in place. */
void llama_block_decode(GPT *g, GPTDecode *d, int l, int t, int n);

/* The update units of --offload optimizer (gpt.h): unit 0 is wte and wpe, which
 * the encoder reads first; unit 1 + l is block l's twelve slices, and the last
 * block's unit also holds LN_f (its closing add may write LN_f). */
#define GPT_UNIT_EMBED 0
#define GPT_UNIT_BLOCK(l) (1 + (l))

/* Before the forward reads unit u's parameters: wait until the pending update's
 * upload of every unit up to u is done (copy events, in order); nothing when no
 * update is pending. */
void gpt_opt_wait_unit(GPT *g, int u);

/* A forward/backward pass begins: the staging may be written (the previous
 * step's copies out of it are done), and whether its backward stages the
 * gradients (gpt_set_final_micro). */
void gpt_opt_pass_begins(GPT *g);
/* The flat gradient ranges that just became final (grads_ready's): into the
 * host's staging when this pass stages them. */
void gpt_opt_grads_final(GPT *g, const size_t *offs, const size_t *counts, int n);

/* ZeRO-3 (gpt_gather.c; nothing without gather buffers): a pass begins,
 * forget what the block buffers hold and gather wte/wpe/LN_f; gather block
 * l into buffer l & 1 unless it holds it already (l outside [0, L):
 * nothing). */
void gpt_gather_begin(GPT *g);
void gpt_gather_block(GPT *g, int l);
/* Start gathering block l into buffer l & 1 (unless it holds l), to be
 * waited for by gpt_gather_wait or the gpt_gather_block(l) before its use;
 * one prefetch in flight at a time. The caller keeps buffer l & 1 unread
 * until then. With g->no_prefetch the gather is complete on return. */
void gpt_gather_prefetch(GPT *g, int l);
void gpt_gather_wait(GPT *g);

/* Test build (base/test_hooks.h): append code to g->trace when a test set one. */
void gpt_trace(GPT *g, int code);

#endif
