/* model/gpt_optim.c — the gradient norm and AdamW (gpt.h: gpt_update), on the
 * device or, with --offload optimizer, in the host tier as a deferred update.
 *
 * The deferred update. Clipping needs the global gradient norm, so no layer can
 * be updated before the whole backward (and, with ranks, its reduction) is done.
 * gpt_update then enqueues on the copy engine, in this order:
 *   1. every unit's gradients (and, without a master, its parameters) into the
 *      host's staging, on OPT_IN_EV, unless the backward did it already: in the
 *      step's final micro-batch of a single process (gpt_set_final_micro) each
 *      layer's gradients go as soon as the gradient hook would be told they are
 *      final (gpt_opt_grads_final), beside the rest of the backward;
 *   2. unit by unit (gpt_tensors.h: the embeddings, then block 0, 1, ...): the
 *      host AdamW of each of its pieces, and the upload of its parameters, on
 *      OPT_UNIT_EV + u % OPT_WINDOW,
 * and returns: the AdamW runs on the host's cores beside what the caller does next.
 * The next forward waits for unit u just before it reads u's parameters
 * (gpt_opt_wait_unit): block l's forward waits for block l's weights, not for all
 * of them. The copy engine runs its queue in order, so unit u's upload being done
 * means every unit before it is done too.
 *
 * Units share OPT_WINDOW events: unit v may be enqueued on event v % OPT_WINDOW only
 * once unit v - OPT_WINDOW has been waited for (else a wait for the older one would
 * wait for the newer one as well, which is correct but loses the overlap). So
 * OPT_WINDOW units are enqueued at first, and each wait enqueues the next: the host's
 * AdamW runs up to OPT_WINDOW units ahead of the forward.
 *
 * Whatever reads the parameters or the optimizer state outside the next forward
 * settles first (gpt_params_settle: gpt_get_params, gpt_set_params, a decode step,
 * the next gpt_update, gpt_free, the checkpoint writers); under ZeRO-1 gpt_update
 * settles before it returns, because the all-gather that follows reads every
 * parameter. gpt_zero_grads waits for step 1 only (OPT_IN_EV), which is enqueued
 * ahead of every AdamW. */
#include <limits.h>
#include <math.h>

#include "base/test_hooks.h"
#include "gpt_tensors.h"

#define OPS (g->be->ops)

/* The copy events (kernels/ops.h): the checkpoint ring's are 0 ..
 * OFFLOAD_RING_SLOTS-1; the optimizer's staging in is one event, and the units
 * going back rotate over the rest. */
enum {
    OPT_IN_EV = OFFLOAD_RING_SLOTS,
    OPT_UNIT_EV = OPT_IN_EV + 1,
    OPT_WINDOW = OPS_COPY_EVENTS - OPT_UNIT_EV
};
_Static_assert(OPT_WINDOW >= 2, "the deferred update needs two unit events at least");

double gpt_grad_norm(GPT *g)
{
    return sqrt(OPS->grad_norm_sq(g->be, g->grads, g->plan.num_params));
}

double gpt_grad_norm_sq_local(GPT *g)
{
    size_t b = g->opt_begin, e = g->opt_end;
    return e > b ? OPS->grad_norm_sq(g->be, gpt_grad_at(g, b), e - b) : 0.0;
}

double gpt_grad_norm_sq_range(GPT *g, size_t flat, size_t n)
{
    return n ? OPS->grad_norm_sq(g->be, gpt_par_at(g, g->grads, flat), n) : 0.0;
}

void gpt_trace(GPT *g, int code)
{
    if (g->trace && g->trace->n < GPT_TRACE_CAP) g->trace->code[g->trace->n++] = code;
}

/* One tensor's part of the optimizer range: [lo, hi) of the flat vector. */
typedef struct {
    size_t lo, hi;
    int decays;
} OptPiece;

static int decays(int t)
{
    return t == WTE || t == WPE || t == QKVW || t == ATTPROJW || t == FCW || t == FCPROJW;
}

/* Where tensor t (slice `layer` of a per-layer one, -1: all of it) begins in the
 * flat vector, and how many elements it has there. */
static size_t tensor_span(const GPT *g, int t, int layer, size_t *count)
{
    size_t off = 0;
    for (int i = 0; i < t; i++) off += g->param_sizes[i];
    *count = g->param_sizes[t];
    if (layer >= 0) {
        *count /= (size_t)g->cfg.num_layers;
        off += (size_t)layer * *count;
    }
    return off;
}

/* Append [off, off + count) cut to the optimizer range [opt_begin, opt_end): the
 * decay flag is the tensor's, also where a ZeRO-1 shard boundary cuts through it. */
static int add_piece(const GPT *g, OptPiece *pc, int n, size_t off, size_t count, int t)
{
    size_t b = g->opt_begin, e = g->opt_end, end = off + count;
    size_t lo = off > b ? off : b, hi = end < e ? end : e;
    if (lo < hi) pc[n++] = (OptPiece){lo, hi, decays(t)};
    return n;
}

/* Every tensor's part of the optimizer range, in the flat vector's order. */
static int opt_pieces(const GPT *g, OptPiece pc[NUM_PARAM_TENSORS])
{
    int n = 0;
    for (int t = 0; t < NUM_PARAM_TENSORS; t++) {
        size_t count, off = tensor_span(g, t, -1, &count);
        n = add_piece(g, pc, n, off, count, t);
    }
    return n;
}

/* The pieces of update unit u (gpt_tensors.h); at most 14. */
static int unit_pieces(const GPT *g, int u, OptPiece pc[NUM_PARAM_TENSORS])
{
    static const int embed[2] = {WTE, WPE}, lnf[2] = {LNFW, LNFB};
    int n = 0, L = g->cfg.num_layers;
    size_t count, off;
    if (u == GPT_UNIT_EMBED) {
        for (int i = 0; i < 2; i++) {
            off = tensor_span(g, embed[i], -1, &count);
            n = add_piece(g, pc, n, off, count, embed[i]);
        }
        return n;
    }
    int l = u - GPT_UNIT_BLOCK(0);
    for (int t = LN1W; t <= FCPROJB; t++) {
        off = tensor_span(g, t, l, &count);
        n = add_piece(g, pc, n, off, count, t);
    }
    for (int i = 0; l == L - 1 && i < 2; i++) {
        off = tensor_span(g, lnf[i], -1, &count);
        n = add_piece(g, pc, n, off, count, lnf[i]);
    }
    return n;
}

static int n_units(const GPT *g) { return GPT_UNIT_BLOCK(g->cfg.num_layers); }

/* Unit u's AdamW in the host tier and its parameters' way back to the device. */
static void enqueue_unit(GPT *g, int u)
{
    const GPTDeferred *d = &g->deferred;
    OptPiece pc[NUM_PARAM_TENSORS];
    int n = unit_pieces(g, u, pc);
    for (int i = 0; i < n; i++) {
        size_t k = pc[i].lo - g->opt_begin, len = pc[i].hi - pc[i].lo;
        OPS->host_adamw_update(g->be, gpt_par_at(g, g->host_params, k),
                               g->master ? g->master + k : NULL, gpt_par_at(g, g->host_grads, k),
                               g->m + k, g->v + k, len, d->lr, d->opt.beta1, d->opt.beta2,
                               d->opt.eps, pc[i].decays ? d->opt.weight_decay : 0.0f, d->scale,
                               d->t);
        OPS->copy_async(g->be, gpt_param_at(g, pc[i].lo),
                        gpt_par_at(g, g->host_params, k), len * g->be->par_bytes,
                        OPT_UNIT_EV + u % OPT_WINDOW);
    }
    TEST_HOOK(gpt_trace(g, GPT_TRACE_ENQUEUE(u)));
}

void gpt_opt_wait_unit(GPT *g, int u)
{
    GPTDeferred *d = &g->deferred;
    if (!d->pending) return;
    int last = n_units(g) - 1;
    if (u > last) u = last;
    while (d->waited < u) {
        int v = d->waited + 1;
        while (d->next <= v) enqueue_unit(g, d->next++);
        OPS->event_wait(g->be, OPT_UNIT_EV + v % OPT_WINDOW);
        d->waited = v;
        TEST_HOOK(gpt_trace(g, GPT_TRACE_WAIT(v)));
        /* unit v + OPT_WINDOW may take v's event now */
        while (d->next <= last && d->next <= v + OPT_WINDOW) enqueue_unit(g, d->next++);
    }
    if (d->waited == last) {
        OPS->event_wait(g->be, OPT_IN_EV); /* done before the first AdamW: free */
        d->pending = 0;
    }
}

void gpt_params_settle(GPT *g) { gpt_opt_wait_unit(g, INT_MAX); }

void gpt_opt_grads_taken(GPT *g)
{
    /* also the copies of an early pass whose update never came (a skipped step) */
    if (g->deferred.pending || g->deferred.early) OPS->event_wait(g->be, OPT_IN_EV);
}

void gpt_set_final_micro(GPT *g, int final) { g->deferred.final = final; }

/* Flat range [off, off + count) of the gradients (and, without a master, the
 * parameters), cut to the optimizer range, into the host's staging. */
static void stage_in(GPT *g, size_t off, size_t count)
{
    size_t b = g->opt_begin, e = g->opt_end, end = off + count;
    size_t lo = off > b ? off : b, hi = end < e ? end : e;
    if (lo >= hi) return;
    size_t k = lo - b, bytes = (hi - lo) * g->be->par_bytes;
    OPS->copy_async(g->be, gpt_par_at(g, g->host_grads, k), gpt_grad_at(g, lo), bytes,
                    OPT_IN_EV);
    if (!g->master) /* fp32: the parameters are the ones updated; backward does not write them */
        OPS->copy_async(g->be, gpt_par_at(g, g->host_params, k), gpt_param_at(g, lo),
                        bytes, OPT_IN_EV);
}

void gpt_opt_pass_begins(GPT *g)
{
    gpt_opt_grads_taken(g); /* the staging is about to be written again */
    /* ZeRO-2's shard is whole only after the last reduce-scatter */
    g->deferred.early = g->host_params && g->deferred.final && !g->grad_layer;
}

void gpt_opt_grads_final(GPT *g, const size_t *offs, const size_t *counts, int n)
{
    if (!g->deferred.early) return;
    for (int i = 0; i < n; i++) stage_in(g, offs[i], counts[i]);
}

/* gpt_update in the host tier: steps 1 and 2 of the deferred update (above). */
static void update_deferred(GPT *g, const AdamWConfig *opt, float lr, float scale)
{
    if (!g->deferred.early) { /* else the backward staged them, layer by layer */
        OptPiece pc[NUM_PARAM_TENSORS];
        int n = opt_pieces(g, pc);
        for (int i = 0; i < n; i++) stage_in(g, pc[i].lo, pc[i].hi - pc[i].lo);
    }
    g->deferred = (GPTDeferred){.pending = 1, .next = 0, .waited = -1,
                                .final = g->deferred.final, .opt = *opt, .lr = lr,
                                .scale = scale, .t = g->adam_t};
    while (g->deferred.next < n_units(g) && g->deferred.next < OPT_WINDOW)
        enqueue_unit(g, g->deferred.next++);
    /* ZeRO-1: the all-gather after this reads every parameter */
    if (g->opt_begin != 0 || g->opt_end != g->plan.num_params) gpt_params_settle(g);
}

void gpt_update(GPT *g, const AdamWConfig *opt, float lr, double norm)
{
    float scale = 1.0f;
    if (opt->grad_clip > 0.0f && norm > opt->grad_clip) scale = (float)(opt->grad_clip / norm);
    gpt_params_settle(g); /* the previous update, where no forward has waited for it */
    g->adam_t++;
    if (g->host_params) {
        update_deferred(g, opt, lr, scale);
        return;
    }
    /* m, v and master are indexed from opt_begin */
    OptPiece pc[NUM_PARAM_TENSORS];
    int n = opt_pieces(g, pc);
    for (int i = 0; i < n; i++) {
        size_t k = pc[i].lo - g->opt_begin;
        OPS->adamw_update(g->be, gpt_param_at(g, pc[i].lo),
                          g->master ? g->master + k : NULL, gpt_grad_at(g, pc[i].lo),
                          g->m + k, g->v + k, pc[i].hi - pc[i].lo, lr, opt->beta1, opt->beta2,
                          opt->eps, pc[i].decays ? opt->weight_decay : 0.0f, scale, g->adam_t);
    }
}
