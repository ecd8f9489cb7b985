/* model/gpt_params_stream.c — the parameters set a piece at a time
 * (gpt_set_params_stream, see gpt.h).
 *
 * Start-up used to build every parameter on the host (a fresh
 * initialisation or --init-from's file) and upload the whole array: at
 * 124M that host copy is 475 MiB, freed before training but already in
 * the process's peak (VmHWM), outside the memory plan and over
 * --memory-budget. Streaming through one 4 MiB buffer keeps the peak
 * within the plan, which counts the buffer. */
#include <stdio.h>
#include <stdlib.h>

#include "gpt.h"
#include "gpt_tensors.h"

#define OPS (g->be->ops)

size_t gpt_params_piece_bytes(const GPTConfig *cfg)
{
    size_t n = config_num_params(cfg);
    return (n < GPT_PARAMS_PIECE ? n : GPT_PARAMS_PIECE) * sizeof(float);
}

/* Elements [at, at+k) from host: into the working copy, and into the
 * master copy where this rank holds one for them ([opt_begin, opt_end)
 * under ZeRO-1, all of them else), as gpt_set_params does for the whole. */
static void upload_piece(GPT *g, const float *host, size_t at, size_t k)
{
    size_t b = g->opt_begin, e = g->opt_end, n = g->plan.num_params;
    int sharded = g->master && (b != 0 || e != n);
    if (g->param_blocks) { /* ZeRO-3: the shard holds [b, e) alone */
        size_t lo = at > b ? at : b, hi = at + k < e ? at + k : e;
        if (lo < hi)
            OPS->params_upload(g->be, gpt_param_at(g, lo), g->master ? g->master + (lo - b) : NULL,
                               host + (lo - at), hi - lo);
        return;
    }
    if (!sharded) {
        OPS->params_upload(g->be, gpt_param_at(g, at), g->master ? g->master + at : NULL,
                           host, k);
        return;
    }
    OPS->params_upload(g->be, gpt_param_at(g, at), NULL, host, k);
    size_t lo = at > b ? at : b, hi = at + k < e ? at + k : e;
    if (lo < hi)
        OPS->params_upload(g->be, gpt_param_at(g, lo), g->master + (lo - b),
                           host + (lo - at), hi - lo);
}

int gpt_set_params_stream(GPT *g, GptParamsFill fill, void *ctx, char *err, size_t len)
{
    size_t n = g->plan.num_params;
    float *buf = malloc(gpt_params_piece_bytes(&g->cfg));
    if (!buf) {
        snprintf(err, len, "out of host memory for a %zu-byte piece of the parameters",
                 gpt_params_piece_bytes(&g->cfg));
        return -1;
    }
    gpt_params_settle(g); /* no upload of a deferred update may land after these */
    int rc = 0;
    for (size_t at = 0; rc == 0 && at < n; at += GPT_PARAMS_PIECE) {
        size_t k = n - at < GPT_PARAMS_PIECE ? n - at : GPT_PARAMS_PIECE;
        rc = fill(ctx, buf, k, err, len);
        if (rc == 0) upload_piece(g, buf, at, k);
    }
    free(buf);
    return rc;
}
