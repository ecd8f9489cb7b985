/* model/gpt_gather.c — ZeRO-3's parameter gathers (gpt.h, GPTShard zero =
 * 3): wte/wpe/LN_f into their buffer once a pass, block l's twelve slices
 * into block buffer l & 1 before a step reads them, through the
 * distributed layer's hook (ParamGatherFn) or, in one process, from the
 * model's own shard (the whole vector there). A deferred update
 * (--offload optimizer) is settled before the first gather of a pass.
 * In the counted passes (training's) the wall time spent in a blocking
 * gather or waiting for a prefetch is added to gather_wait_ns: the time
 * the compute stood still for parameters (with the prefetch off,
 * no_prefetch, each prefetch is a blocking gather at the same point).
 * Host wall time: on the cpu backend the gathers are done on return; a
 * device's would only be queued.
 *
 * Owns: nothing; the gather buffers are gpt_alloc.c's, what they hold is
 * GPT's held[] and the counts gathered and regathered. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpt_tensors.h"

#define OPS (g->be->ops)

void gpt_set_param_gather(GPT *g, ParamGatherFn fn, ParamWaitFn wait, void *ctx)
{
    g->param_gather = fn;
    g->param_wait = wait;
    g->param_gather_ctx = ctx;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Fill dst[k] with flat ranges [offs[k], offs[k] + counts[k]), complete on
 * return unless async (then gpt_gather_wait); count them, and time the
 * blocking ones. */
static void gather(GPT *g, void *const *dst, const size_t *offs, const size_t *counts, int n,
                   int async)
{
    size_t elems = 0;
    for (int k = 0; k < n; k++) elems += counts[k];
    if (g->counting && g->past_head) g->regathered += elems;
    else if (g->counting) g->gathered += elems;
    double t0 = g->counting && !async ? now_ns() : 0;
    if (g->param_gather) {
        g->param_gather(g->param_gather_ctx, dst, offs, counts, n, async);
        if (t0 > 0) g->gather_wait_ns += now_ns() - t0;
        return;
    }
    /* one process: the shard is [0, num_params); a byte copy through the
     * host (the backends have no device-to-device copy op outside the copy
     * engine), exact in any dtype */
    size_t eb = (size_t)g->be->par_bytes;
    for (int k = 0; k < n; k++) {
        void *tmp = malloc(counts[k] * eb);
        if (!tmp) { /* a block's slice: far smaller than the arenas */
            fprintf(stderr, "error: --zero 3: out of host memory copying %zu parameters of the "
                    "shard\n", counts[k]);
            abort();
        }
        OPS->mem_download(g->be, tmp, gpt_param_at(g, offs[k]), counts[k] * eb);
        OPS->mem_upload(g->be, dst[k], tmp, counts[k] * eb);
        free(tmp);
    }
    if (t0 > 0) g->gather_wait_ns += now_ns() - t0;
}

/* First flat element of each tensor. */
static void tensor_starts(const GPT *g, size_t *start)
{
    size_t o = 0;
    for (int i = 0; i < NUM_PARAM_TENSORS; i++) {
        start[i] = o;
        o += g->param_sizes[i];
    }
}

void gpt_gather_begin(GPT *g)
{
    if (!g->param_blocks) return;
    /* --offload optimizer: every unit's upload before any gather reads the
     * shard (LN_f, gathered here, is in the last block's unit; with ranks
     * gpt_update has settled already, for the same reason as ZeRO-1's) */
    gpt_params_settle(g);
    gpt_gather_wait(g); /* an abandoned pass may have left a prefetch */
    static const int outer[4] = {WTE, WPE, LNFW, LNFB};
    size_t start[NUM_PARAM_TENSORS], offs[4], counts[4];
    void *dst[4];
    tensor_starts(g, start);
    g->held[0] = g->held[1] = -1;
    g->past_head = 0;
    for (int k = 0; k < 4; k++) {
        offs[k] = start[outer[k]];
        counts[k] = g->param_sizes[outer[k]];
        dst[k] = g->param_t[outer[k]];
    }
    gather(g, dst, offs, counts, 4, 0);
}

void gpt_gather_wait(GPT *g)
{
    if (!g->param_blocks || g->inflight < 0) return;
    double t0 = g->counting ? now_ns() : 0;
    if (g->param_wait) g->param_wait(g->param_gather_ctx);
    if (t0 > 0) g->gather_wait_ns += now_ns() - t0;
    g->inflight = -1;
}

static void gather_block(GPT *g, int l, int async)
{
    size_t start[NUM_PARAM_TENSORS], offs[12], counts[12];
    void *dst[12];
    tensor_starts(g, start);
    for (int k = 0; k < 12; k++) {
        int i = LN1W + k;
        counts[k] = g->param_sizes[i] / (size_t)g->cfg.num_layers;
        offs[k] = start[i] + (size_t)l * counts[k];
        dst[k] = P(i, l);
    }
    gather(g, dst, offs, counts, 12, async);
    g->held[l & 1] = l;
}

void gpt_gather_block(GPT *g, int l)
{
    if (!g->param_blocks || l < 0 || l >= g->cfg.num_layers) return;
    if (g->held[l & 1] == l) { /* gathered, or on its way: wait for it */
        if (g->inflight == l) gpt_gather_wait(g);
        return;
    }
    gpt_gather_wait(g); /* one collective at a time into the buffers */
    gather_block(g, l, 0);
}

void gpt_gather_prefetch(GPT *g, int l)
{
    if (!g->param_blocks || l < 0 || l >= g->cfg.num_layers || g->held[l & 1] == l) return;
    gpt_gather_wait(g);
    /* --zero-prefetch off: the same gather at the same point, blocking
     * (a fused closing add reads the next block's LN1 from it) */
    gather_block(g, l, !g->no_prefetch);
    if (!g->no_prefetch) g->inflight = l;
}
