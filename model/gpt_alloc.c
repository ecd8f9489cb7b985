/* model/gpt_alloc.c — the model's memory (see gpt.h): gpt_init* carves
 * the planner's arenas into parameters, gradients, optimizer state, the
 * schedule's residual and tape slots and the scratch buffers, zeroes them
 * (polling for a stop), and gpt_free gives them back. The schedule
 * interpreter that uses them is gpt.c. */
#include "gpt.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/stop.h"
#include "gpt2_block.h"
#include "gpt_tensors.h"
#include "kernels/rope.h"

/* Point a BlockTape of `kind` at its act buffer (act_elems), its fp32
 * buffer (f32_elems) and, for what the kind drops, the tape workspace:
 * tensor t and side output s of the description d at act[t], f32[s]. */
static void tape_point(BlockTape *tp, const BlockDesc *d, const TapeLayout *tl, int kind,
                       char *act, float *f, size_t ab, char *ws)
{
    for (int i = 0; i < d->n_tensors; i++)
        tp->act[i] = tl->act[i] == TAPE_IN_WORKSPACE ? ws + tl->ws[i] : act + tl->act[i] * ab;
    for (int s = 0; s < d->n_sides; s++)
        tp->f32[s] = tl->side[s] == TAPE_IN_WORKSPACE ? (float *)(ws + tl->ws_side[s])
                                                      : f + tl->side[s];
    tp->kind = kind;
}

/* GPT-2's code reads the tape by name (gpt.h): the names alias its
 * tensors' and side outputs' slots, in gpt2_block.h's order. */
_Static_assert(offsetof(BlockTape, fch_gelu) == offsetof(BlockTape, act[GPT2_GELU]) &&
                   offsetof(BlockTape, res2) == offsetof(BlockTape, act[GPT2_RES2]) &&
                   offsetof(BlockTape, ln2_rstd) == offsetof(BlockTape, f32[GPT2_LN2_RSTD]) &&
                   offsetof(BlockTape, lse) == offsetof(BlockTape, f32[GPT2_LSE]),
               "BlockTape's GPT-2 names out of gpt2_block.h's order");

/* Carve the activation categories. Order inside an arena: residual slots,
 * then tapes' act parts (and, in the workspace, the tape workspace), then
 * tapes' f32 parts, so the f32 stats (whose sizes are not multiples of the
 * act buffers') come last. */
static int carve_activations(GPT *g)
{
    const Schedule *s = &g->sched;
    const MemoryPlan *p = &g->plan;
    Arena *stored = &g->arenas[MEM_ACTIVATIONS], *work = &g->arenas[MEM_WORKSPACE];
    g->res_slots = calloc((size_t)s->n_res_slots, sizeof(void *));
    g->tapes = calloc((size_t)s->n_tape_slots, sizeof(BlockTape));
    if (!g->res_slots || !g->tapes) return -1;
    /* Offloaded checkpoints: the stored inputs' slots in the host tier, and
     * the ring in their place (first in the activations arena). */
    int n_host = p->n_ring ? schedule_res_host(s) : 0; /* the rest stay on the device */
    if (p->n_ring) {
        g->host_res = calloc((size_t)n_host, sizeof(void *));
        g->ring = calloc((size_t)p->n_ring, sizeof(void *));
        if (!g->host_res || !g->ring) return -1;
        for (int r = 0; r < p->n_ring; r++)
            if (!(g->ring[r] = arena_take(stored, p->residual_bytes))) return -1;
        for (int i = 0; i < n_host; i++)
            if (!(g->host_res[i] = arena_take(&g->host_arenas[HOST_CHECKPOINTS],
                                              p->residual_bytes)))
                return -1;
    }
    for (int i = n_host; i < s->n_res_slots; i++) {
        Arena *a = i < s->n_res_stored ? stored : work;
        if (!(g->res_slots[i] = arena_take(a, p->residual_bytes))) return -1;
    }
    /* A tape's act and f32 parts come from the same arena; take all act
     * parts first, then all f32 parts. A kind that drops every tensor has
     * no act part. */
    size_t ab = (size_t)g->be->act_bytes;
    char **act = calloc((size_t)s->n_tape_slots, sizeof(char *));
    TapeLayout *tl = calloc((size_t)s->n_tape_slots, sizeof(TapeLayout));
    int ok = act && tl;
    BlockShape sh;
    block_shape(s->block, &g->cfg, (size_t)g->B, (size_t)g->T, &sh);
    for (int j = 0; j < s->n_tape_slots && ok; j++) {
        tape_layout(&tl[j], s->block, (int)s->tape_kind[j], &sh, ab);
        if (tl[j].act_elems == 0) continue;
        act[j] = arena_take(j < s->n_tape_stored ? stored : work, tl[j].act_elems * ab);
        ok = act[j] != NULL;
    }
    if (ok && p->tape_ws_bytes) ok = (g->tape_ws = arena_take(work, p->tape_ws_bytes)) != NULL;
    for (int j = 0; j < s->n_tape_slots && ok; j++) {
        float *f = arena_take(j < s->n_tape_stored ? stored : work, tl[j].f32_elems * 4);
        if (!(ok = f != NULL)) break;
        tape_point(&g->tapes[j], s->block, &tl[j], (int)s->tape_kind[j], act[j], f, ab,
                   g->tape_ws);
    }
    free(act);
    free(tl);
    return ok ? 0 : -1;
}

static int carve_scratch(GPT *g)
{
    size_t N = (size_t)g->B * g->T, C = (size_t)g->cfg.channels, ab = (size_t)g->be->act_bytes;
    Arena *s = &g->arenas[MEM_SCRATCH];
    g->final_res = arena_take(s, N * C * ab);
    g->lnf = arena_take(s, N * C * ab);
    g->dres = arena_take(s, N * C * ab);
    BlockShape sh;
    block_shape(g->sched.block, &g->cfg, (size_t)g->B, (size_t)g->T, &sh);
    g->dsmall = arena_take(s, N * block_grad_small(&sh) * ab); /* also d(atty), NH hs */
    g->dbig = arena_take(s, block_grad_big(g->sched.block, &sh) * N * ab);
    g->lnf_mean = arena_take(s, N * sizeof(float));
    g->lnf_rstd = arena_take(s, N * sizeof(float));
    g->losses = arena_take(s, N * sizeof(float));
    g->tokens = arena_take(s, N * sizeof(int));
    g->targets = arena_take(s, N * sizeof(int));
    g->chunk_buf = arena_take(&g->arenas[MEM_HEAD], g->arenas[MEM_HEAD].size);
    size_t rope = planner_table_floats(&g->cfg, g->T);
    if (rope && !(g->rope = arena_take(s, rope * sizeof(float)))) return -1;
    size_t as = g->plan.attn_scratch_bytes;
    if (as && !(g->attn_scratch = arena_take(s, as))) return -1;
    return g->final_res && g->lnf && g->dres && g->dsmall && g->dbig && g->lnf_mean &&
                   g->lnf_rstd && g->losses && g->tokens && g->targets && g->chunk_buf
               ? 0
               : -1;
}

int gpt_init(GPT *g, const GPTConfig *cfg, Backend *be, int B, int T, int recompute,
             int loss_chunk, char *err, size_t err_len)
{
    return gpt_init_shard(g, cfg, be, B, T, recompute, loss_chunk, NULL, err, err_len);
}

int gpt_init_shard(GPT *g, const GPTConfig *cfg, Backend *be, int B, int T, int recompute,
                   int loss_chunk, const GPTShard *shard, char *err, size_t err_len)
{
    Schedule s;
    memset(g, 0, sizeof *g);
    if (schedule_build(&s, block_desc_of(cfg), recompute, cfg->num_layers, err, err_len) != 0)
        return -1;
    return gpt_init_schedule(g, cfg, be, B, T, &s, loss_chunk, shard, NULL, NULL, err, err_len);
}

/* mem_zero in 64 MiB pieces, polling for a stop (base/stop.h) between
 * them: on a CPU the first touch of the arenas' pages is most of a big
 * model's start-up before its init (6 s for 2.9 GB on the 2-core VM).
 * Returns 1 when stopped. */
typedef struct {
    AllocProgressFn fn;
    void *ctx;
    size_t done, total;
} ZeroProgress;

/* host: the block lives in the host tier (plain host memory, not the backend's). */
static int zero_polled(Backend *be, int host, void *p, size_t bytes, const char *arena,
                       ZeroProgress *zp)
{
    const size_t piece = (size_t)64 << 20;
    for (size_t at = 0; at < bytes; at += piece) {
        if (stop_requested()) return 1;
        size_t n = bytes - at < piece ? bytes - at : piece;
        if (host) memset((char *)p + at, 0, n); /* the host tier: plain host memory */
        else be->ops->mem_zero(be, (char *)p + at, n);
        zp->done += n;
        if (zp->fn) zp->fn(zp->ctx, arena, zp->done, zp->total);
    }
    return 0;
}

/* What the model can place in the host tier, and the copies of offloaded
 * checkpoints (schedule_offload over the planner's ring). */
static int offload_setup(GPT *g, int offload, char *err, size_t err_len)
{
    if (!offload) return 0;
    const BackendOps *o = g->be->ops;
    if (!o->copy_async || !o->event_wait || !o->host_alloc || !o->host_free ||
        ((offload & OFFLOAD_OPTIMIZER) && !o->host_adamw_update)) {
        snprintf(err, err_len, "--offload %s: the %s backend has no copy engine yet",
                 planner_offload_name(offload), g->be->name);
        return -1;
    }
    if (!(offload & OFFLOAD_CHECKPOINTS)) return 0;
    int h = schedule_res_host(&g->sched), n = h < OFFLOAD_RING_SLOTS ? h : OFFLOAD_RING_SLOTS;
    if (n > OPS_COPY_EVENTS) {
        snprintf(err, err_len, "internal error: a ring of %d slots, %d copy events", n,
                 OPS_COPY_EVENTS);
        return -1;
    }
    return schedule_offload(&g->sched, n, &g->off, err, err_len);
}

/* Llama: the RoPE table of positions 0..T-1, filled on the host and
 * uploaded into its scratch buffer once (the forward, its rebuilds and the
 * backward read the same table). */
static int rope_upload(GPT *g, char *err, size_t err_len)
{
    int hs = config_head_dim(&g->cfg);
    size_t n = rope_table_floats(g->T, hs);
    float *host = malloc(n * sizeof *host);
    RopeConfig rc = {.theta = config_rope_theta(&g->cfg),
                     .scale_factor = g->cfg.rope_factor,
                     .low_freq_factor = g->cfg.rope_low_freq,
                     .high_freq_factor = g->cfg.rope_high_freq,
                     .original_max_pos = g->cfg.rope_original_max_pos};
    if (!host) {
        snprintf(err, err_len, "out of host memory for the RoPE table (%zu floats)", n);
        return -1;
    }
    int rc_ = rope_table(host, g->T, hs, &rc, err, err_len);
    if (rc_ == 0) g->be->ops->mem_upload(g->be, g->rope, host, n * sizeof *host);
    free(host);
    return rc_;
}

/* The Llama family's ops are optional in a backend (ops.h): a model of it
 * needs them all. */
static int family_supported(const GPTConfig *cfg, const Backend *be, char *err, size_t err_len)
{
    const BackendOps *o = be->ops;
    if (cfg->arch != ARCH_LLAMA) return 0;
    if (cfg->qk_norm && !(o->qknorm_forward && o->qknorm_backward)) {
        snprintf(err, err_len, "--qk-norm: the %s backend has no qk-norm op", be->name);
        return -1;
    }
    if (o->rmsnorm_forward && o->rmsnorm_backward && o->rope_forward && o->rope_backward &&
        o->swiglu_forward && o->swiglu_backward)
        return 0;
    snprintf(err, err_len, "--arch llama: the %s backend has no RMSNorm, RoPE or SwiGLU ops "
             "yet (give --device cpu)", be->name);
    return -1;
}

int gpt_init_schedule(GPT *g, const GPTConfig *cfg, Backend *be, int B, int T, Schedule *sched,
                      int loss_chunk, const GPTShard *shard, AllocProgressFn progress,
                      void *progress_ctx, char *err, size_t err_len)
{
    GPTShard one = {1, 0, 0, 0};
    if (!shard) shard = &one;
    memset(g, 0, sizeof *g);
    g->cfg = *cfg;
    g->be = be;
    g->B = B;
    g->T = T;
    g->sched = *sched; /* taken over */
    memset(sched, 0, sizeof *sched);
    if (config_validate(cfg, err, err_len) != 0 || family_supported(cfg, be, err, err_len) != 0) {
        gpt_free(g);
        return -1;
    }
    if (T > cfg->max_seq_len) {
        snprintf(err, err_len, "--seq-len %d exceeds the model's maximum sequence length %d", T,
                 cfg->max_seq_len);
        gpt_free(g);
        return -1;
    }
    if (g->sched.num_layers != cfg->num_layers) {
        snprintf(err, err_len, "internal error: a %d-layer schedule for a %d-layer model",
                 g->sched.num_layers, cfg->num_layers);
        gpt_free(g);
        return -1;
    }
    if (g->sched.block != block_desc_of(cfg)) { /* the tapes below are bound by its tensors */
        snprintf(err, err_len, "internal error: a schedule of %s blocks for a model of %s blocks",
                 g->sched.block ? g->sched.block->family : "no", block_desc_of(cfg)->family);
        gpt_free(g);
        return -1;
    }
    if (schedule_validate(&g->sched, err, err_len) != 0) {
        gpt_free(g);
        return -1;
    }
    if (offload_setup(g, shard->offload, err, err_len) != 0) {
        gpt_free(g);
        return -1;
    }
    PlanInput in = {.cfg = *cfg, .B = B, .T = T,
                    .dtype = be->act_bytes == 2 ? DTYPE_BF16 : DTYPE_FP32,
                    .loss_chunk = loss_chunk, .world_size = shard->world,
                    .zero = shard->zero, .offload = shard->offload,
                    .attn_scratch = gpt_attn_scratch_bytes(be, cfg)};
    planner_plan(&in, &g->sched, &g->plan);
    for (int c = 0; c < MEM_NUM_CATEGORIES; c++)
        if (arena_init(&g->arenas[c], be, planner_category_name(c), g->plan.bytes[c], err,
                       err_len) != 0) {
            gpt_free(g);
            return -1;
        }
    for (int c = 0; c < HOST_NUM_CATEGORIES; c++)
        if (arena_init_host(&g->host_arenas[c], be, planner_host_category_name(c),
                            g->plan.host[c], err, err_len) != 0) {
            gpt_free(g);
            return -1;
        }

    config_param_sizes(cfg, g->param_sizes);
    /* params and grads: padded_params elements; m, v, master: shard_params
     * (both num_params without ZeRO-1). */
    size_t np = g->plan.padded_params, ns = g->plan.shard_params;
    planner_shard_range(&g->plan, shard->rank, &g->opt_begin, &g->opt_end);
    /* ZeRO-3: the parameter shard, then the gather buffers (planner.h) */
    int z3 = g->plan.zero == 3;
    g->params = arena_take(&g->arenas[MEM_PARAMS], (z3 ? ns : np) * be->par_bytes);
    if (z3) {
        g->param_blocks = arena_take(&g->arenas[MEM_PARAMS], g->plan.param_gather_bytes);
        g->param_outer = arena_take(&g->arenas[MEM_PARAMS], g->plan.param_outer_bytes);
        g->param_block_bytes = g->plan.param_gather_bytes / 2;
        g->held[0] = g->held[1] = g->inflight = -1;
    }
    /* ZeRO-2 (and 3): the gradient shard, then the full-size buffers (planner.h) */
    int z2 = g->plan.zero >= 2;
    size_t ng = z2 ? ns : np;
    g->grads = arena_take(&g->arenas[MEM_GRADS], ng * be->par_bytes);
    if (z2) {
        g->grad_outer = arena_take(&g->arenas[MEM_GRADS], g->plan.grad_outer_bytes);
        g->grad_layer = arena_take(&g->arenas[MEM_GRADS], g->plan.grad_layer_bytes);
    }
    if (g->plan.comm_bytes) g->reduce_buf = arena_take(&g->arenas[MEM_GRADS], g->plan.comm_bytes);
    /* the optimizer's state on the device, or in the host tier with the
     * host AdamW's staging (--offload optimizer) */
    int host_opt = (g->plan.offload & OFFLOAD_OPTIMIZER) != 0;
    Arena *opt = host_opt ? &g->host_arenas[HOST_OPTIMIZER] : &g->arenas[MEM_OPTIMIZER];
    if (g->plan.master_bytes) g->master = arena_take(opt, ns * 4);
    g->m = arena_take(opt, ns * 4);
    g->v = arena_take(opt, ns * 4);
    if (host_opt) {
        g->host_grads = arena_take(opt, ns * be->par_bytes);
        g->host_params = arena_take(opt, ns * be->par_bytes);
    }
    size_t off = 0;
    for (int i = 0; i < NUM_PARAM_TENSORS; i++) {
        g->param_t[i] = (char *)g->params + off * be->par_bytes;
        g->grad_t[i] = (char *)g->grads + off * be->par_bytes;
        off += g->param_sizes[i];
    }
    if (z2) { /* the outer tensors in order in one buffer, a block's slices in the other */
        size_t o = 0, l = 0, L = (size_t)cfg->num_layers;
        for (int i = 0; i < NUM_PARAM_TENSORS; i++) {
            int blk = i >= LN1W && i <= FCPROJB;
            g->grad_t[i] = gpt_par_at(g, blk ? g->grad_layer : g->grad_outer, blk ? l : o);
            if (z3) /* the parameters alike, block l & 1 at P(i, l) */
                g->param_t[i] = gpt_par_at(g, blk ? g->param_blocks : g->param_outer, blk ? l : o);
            if (blk) l += g->param_sizes[i] / L;
            else o += g->param_sizes[i];
        }
    }
    g->host_losses = malloc((size_t)B * T * sizeof(float));
    if (!g->params || !g->grads || (z2 && (!g->grad_outer || !g->grad_layer)) ||
        (g->plan.comm_bytes && !g->reduce_buf) ||
        (z3 && (!g->param_blocks || !g->param_outer)) || !g->m || !g->v || !g->host_losses ||
        (host_opt && (!g->host_grads || !g->host_params)) || carve_activations(g) != 0 ||
        carve_scratch(g) != 0) {
        snprintf(err, err_len, "internal error: buffers do not match the memory plan");
        gpt_free(g);
        return -1;
    }
    if (g->rope && rope_upload(g, err, err_len) != 0) {
        gpt_free(g);
        return -1;
    }
    /* the padding of params stays 0 */
    ZeroProgress zp = {progress, progress_ctx, 0,
                       (g->master ? 3 : 2) * ns * 4 + ((z3 ? ns : np) + ng) * be->par_bytes +
                           (z2 ? g->plan.grad_outer_bytes + g->plan.grad_layer_bytes : 0) +
                           (z3 ? g->plan.param_gather_bytes + g->plan.param_outer_bytes : 0)};
    if (zero_polled(be, host_opt, g->m, ns * 4, "optimizer", &zp) ||
        zero_polled(be, host_opt, g->v, ns * 4, "optimizer", &zp) ||
        (g->master && zero_polled(be, host_opt, g->master, ns * 4, "optimizer", &zp)) ||
        zero_polled(be, 0, g->params, (z3 ? ns : np) * be->par_bytes, "params", &zp) ||
        (z3 && zero_polled(be, 0, g->param_blocks, g->plan.param_gather_bytes, "params", &zp)) ||
        (z3 && zero_polled(be, 0, g->param_outer, g->plan.param_outer_bytes, "params", &zp)) ||
        zero_polled(be, 0, g->grads, ng * be->par_bytes, "grads", &zp) ||
        (z2 && zero_polled(be, 0, g->grad_outer, g->plan.grad_outer_bytes, "grads", &zp)) ||
        (z2 && zero_polled(be, 0, g->grad_layer, g->plan.grad_layer_bytes, "grads", &zp))) {
        snprintf(err, err_len, "making the model's buffers: %s", STOP_MESSAGE);
        gpt_free(g);
        return -1;
    }
    return 0;
}

void gpt_free(GPT *g)
{
    /* No copy may still be reading or writing the arenas: the deferred
     * update's, and every other event's too (the final backward's gradient
     * staging has no wait of its own before a free). */
    gpt_params_settle(g);
    if (g->be->ops->event_wait)
        for (int ev = 0; ev < OPS_COPY_EVENTS; ev++) g->be->ops->event_wait(g->be, ev);
    g->be->ops->sync(g->be);
    /* the backend must not keep a pointer into the arenas freed below: an
     * op called later without a model (op-cost measurement) would use it */
    if (g->attn_scratch && g->be->ops->attention_scratch)
        g->be->ops->attention_scratch(g->be, NULL, 0);
    g->attn_scratch = NULL;
    for (int c = 0; c < MEM_NUM_CATEGORIES; c++) arena_free(&g->arenas[c]);
    for (int c = 0; c < HOST_NUM_CATEGORIES; c++) arena_free(&g->host_arenas[c]);
    schedule_offload_free(&g->off);
    free(g->host_res);
    free(g->ring);
    g->host_res = g->ring = NULL;
    schedule_free(&g->sched);
    free(g->res_slots);
    free(g->tapes);
    free(g->host_losses);
    g->res_slots = NULL;
    g->tapes = NULL;
    g->host_losses = NULL;
}

/* ---- the decode cache (gpt.h): outside the arenas, from the backend ---- */

size_t gpt_attn_scratch_bytes(Backend *be, const GPTConfig *cfg)
{
    const BackendOps *o = be->ops;
    /* the attention's C is the query width NH hs (kernels/ops.h) */
    return o->attention_scratch_bytes
               ? o->attention_scratch_bytes(be, config_q_width(cfg), cfg->num_heads)
               : 0;
}

int gpt_decode_supported(const GPT *g)
{
    /* the Llama family's also needs RoPE (llama_block_decode) */
    return g->be->ops->attention_decode != NULL &&
           (g->cfg.arch != ARCH_LLAMA || g->be->ops->rope_forward != NULL);
}

int gpt_decode_open(GPT *g, GPTDecode *d, char *err, size_t err_len)
{
    memset(d, 0, sizeof *d);
    if (!gpt_decode_supported(g)) { /* callers ask first */
        snprintf(err, err_len, "generation: the %s backend or the %s family has no KV-cache "
                 "decode (--kv-cache 0)", g->be->name, config_arch_name(g->cfg.arch));
        return -1;
    }
    const BackendOps *ops = g->be->ops;
    size_t C = (size_t)g->cfg.channels, ab = (size_t)g->be->act_bytes;
    /* a row's k (or v) in the cache, qkv, atty, fch and fch_gelu: GPT-2's
     * C, 3C, C, 4C, 4C; the Llama family's KVH hs, Q + 2 KVH hs, Q (= NH
     * hs), [gate|up] 2F, F */
    size_t kv = C, qkv = 3 * C, q = C, fc = 4 * C, act = 4 * C, stats = 1;
    if (g->cfg.arch == ARCH_LLAMA) { /* its mean buffer holds qk-norm's rstds */
        if (g->cfg.qk_norm) stats = (size_t)g->cfg.num_heads + (size_t)config_kv_heads(&g->cfg);
        size_t F = (size_t)config_ffn(&g->cfg);
        kv = (size_t)config_kv_heads(&g->cfg) * (size_t)config_head_dim(&g->cfg);
        q = (size_t)config_q_width(&g->cfg);
        qkv = q + 2 * kv, fc = 2 * F, act = F;
    }
    size_t cache = (size_t)g->cfg.num_layers * (size_t)g->T * kv * ab;
    size_t R = (size_t)(g->T < GPT_DECODE_ROWS ? g->T : GPT_DECODE_ROWS);
    d->rows = (int)R;
    /* R rows of: x, ln, res2, lnf (C each), qkv, atty, fch, fch_gelu */
    size_t row[8] = {C, C, qkv, q, C, fc, act, C};
    void **rp[8] = {&d->x, &d->ln, &d->qkv, &d->atty, &d->res2, &d->fch, &d->fch_gelu, &d->lnf};
    int ok = (d->k = ops->mem_alloc(g->be, cache)) && (d->v = ops->mem_alloc(g->be, cache));
    d->bytes = 2 * cache;
    for (int i = 0; ok && i < 8; i++) {
        ok = (*rp[i] = ops->mem_alloc(g->be, R * row[i] * ab)) != NULL;
        d->bytes += R * row[i] * ab;
    }
    ok = ok && (d->mean = ops->mem_alloc(g->be, R * stats * sizeof(float))) &&
         (d->rstd = ops->mem_alloc(g->be, R * sizeof(float))) &&
         (d->token = ops->mem_alloc(g->be, R * sizeof(int)));
    d->bytes += R * ((stats + 1) * sizeof(float) + sizeof(int));
    if (ok) return 0;
    snprintf(err, err_len, "generation: out of %s memory for the KV cache (%.1f MiB)",
             strcmp(g->be->name, "cpu") == 0 ? "host" : "device", d->bytes / 1048576.0);
    gpt_decode_close(g, d);
    return -1;
}

void gpt_decode_close(GPT *g, GPTDecode *d)
{
    void *p[13] = {d->k, d->v, d->x, d->ln, d->qkv, d->atty, d->res2, d->fch, d->fch_gelu,
                   d->lnf, d->mean, d->rstd, d->token};
    for (int i = 0; i < 13; i++)
        if (p[i]) g->be->ops->mem_free(g->be, p[i]);
    memset(d, 0, sizeof *d);
}
