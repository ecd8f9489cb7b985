/* model/gpt_tensors.h — inside the model (gpt.c, gpt_optim.c): the parameter
 * tensors' order in the flat vector (llm.c's), and the interpreter's side of the
 * host tier's deferred update (gpt_optim.c).
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

/* Test build (base/test_hooks.h): append code to g->trace when a test set one. */
void gpt_trace(GPT *g, int code);

#endif
