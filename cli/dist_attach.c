/* cli/dist_attach.c — the model handed to the distributed layer (see
 * cli/dist_attach.h).
 *
 * distributed/ sits beside model/ and knows none of its types: it sees a
 * DistModel (distributed/dist.h), the flat vectors and its operations.
 * The CLI, above both, builds that view of a GPT and installs the layer's
 * gradient hook on the model. The hook stays installed: once dist_finalize
 * has closed the collectives it does nothing. */
#include "cli/dist_attach.h"

static void get_params(void *g, float *host) { gpt_get_params(g, host); }
static void get_grads(void *g, float *host) { gpt_get_grads(g, host); }
static double grad_norm(void *g) { return gpt_grad_norm(g); }
static double grad_norm_sq_local(void *g) { return gpt_grad_norm_sq_local(g); }
static double grad_norm_sq_range(void *g, size_t flat, size_t n)
{
    return gpt_grad_norm_sq_range(g, flat, n);
}
static void grads_add(void *g, size_t flat, const void *src, size_t n)
{
    gpt_grads_shard_add(g, flat, src, n);
}

int dist_attach_gpt(Dist *d, GPT *g, char *err, size_t err_len)
{
    DistModel m = {
        .be = g->be,
        .params = g->params,
        .grads = g->grads,
        .num_params = g->plan.num_params,
        .padded_params = g->plan.padded_params,
        .shard_params = g->plan.shard_params,
        .block_params = g->plan.block_params,
        .reduce_buf = g->reduce_buf,
        .reduce_chunk = g->plan.reduce_chunk,
        .zero = g->plan.zero,
        .has_master = g->master != NULL,
        .model = g,
        .get_params = get_params,
        .get_grads = get_grads,
        .grad_norm = grad_norm,
        .grad_norm_sq_local = grad_norm_sq_local,
        .grad_norm_sq_range = grad_norm_sq_range,
        .grads_add = grads_add,
    };
    if (dist_attach(d, &m, err, err_len) != 0) return -1;
    if (d->comm) gpt_set_grad_hook(g, dist_grads_ready, d);
    if (d->comm && g->plan.zero >= 2) gpt_set_grad_scatter(g, dist_grads_scatter, d);
    if (d->comm && g->plan.zero == 3) gpt_set_param_gather(g, dist_params_gather, dist_params_wait, d);
    return 0;
}
