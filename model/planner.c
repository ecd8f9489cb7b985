/* model/planner.c — see planner.h. */
#include "planner.h"

#include <ctype.h>
#include <stdint.h>
#include <string.h>

#include "arena.h"

int dtype_bytes(DType d) { return d == DTYPE_BF16 ? 2 : 4; }
const char *dtype_name(DType d) { return d == DTYPE_BF16 ? "bf16" : "fp32"; }

int planner_default_loss_chunk(int B, int T, int padded_vocab, DType dtype)
{
    long n = (long)B * T;
    long cap = (32L << 20) / (4L * padded_vocab); /* rows in 32 MiB of fp32 logits */
    if (cap < 64) cap = 64;
    if (dtype == DTYPE_BF16) cap = 4096;
    return (int)(n < cap ? n : cap);
}

/* Parameters, gradients and the optimizer state, sharded under ZeRO-1. */
static void plan_params(const PlanInput *in, MemoryPlan *p)
{
    size_t ab = (size_t)dtype_bytes(in->dtype), n = config_num_params(&in->cfg);
    size_t W = in->world_size > 1 ? (size_t)in->world_size : 1;
    p->num_params = n;
    p->world_size = (int)W;
    p->zero = in->zero >= 1 && in->zero <= 3 ? in->zero : 0;
    size_t a = PLANNER_SHARD_ALIGN;
    p->block_params = ((n + W - 1) / W + a - 1) / a * a;
    if (p->zero) {
        p->shard_params = p->block_params;
        p->padded_params = W * p->shard_params;
    } else {
        p->shard_params = p->padded_params = n;
    }
    /* The ordered reduction's receive buffer (planner.h): world pieces of
     * at most reduce_chunk elements, one from each rank; none at world 1. */
    p->reduce_chunk = W > 1 ? (p->block_params < PLANNER_REDUCE_CHUNK ? p->block_params
                                                                       : PLANNER_REDUCE_CHUNK)
                            : 0;
    p->comm_bytes = arena_round(W * p->reduce_chunk * ab);
    p->bytes[MEM_PARAMS] = arena_round(p->padded_params * ab);
    p->bytes[MEM_GRADS] = arena_round(p->padded_params * ab) + p->comm_bytes;
    p->grad_shard_bytes = p->grad_outer_bytes = p->grad_layer_bytes = 0;
    p->param_shard_bytes = p->param_gather_bytes = p->param_outer_bytes = 0;
    if (p->zero >= 2) {
        /* ZeRO-2: this rank's gradient shard, beside the two buffers the
         * backward writes full gradients into before they are reduced:
         * the tensors outside the blocks (wte, wpe, LN_f), written from the
         * head to the encoder, and one block's slices, written by each
         * block's backward in turn (config_param_sizes: tensors 2..13). */
        size_t sz[NUM_PARAM_TENSORS], outer = 0, layer = 0, L = (size_t)in->cfg.num_layers;
        config_param_sizes(&in->cfg, sz);
        for (int i = 0; i < NUM_PARAM_TENSORS; i++)
            if (i >= 2 && i <= 13) layer += sz[i] / L;
            else outer += sz[i];
        p->grad_shard_bytes = arena_round(p->shard_params * ab);
        p->grad_outer_bytes = arena_round(outer * ab);
        p->grad_layer_bytes = arena_round(layer * ab);
        p->bytes[MEM_GRADS] =
            p->grad_shard_bytes + p->grad_outer_bytes + p->grad_layer_bytes + p->comm_bytes;
        p->layer_params = layer;
        p->outer_params = outer;
    }
    if (p->zero == 3) {
        /* ZeRO-3: this rank's parameter shard, and the buffers the
         * parameters in use are all-gathered into: two blocks' (the one
         * running, the next one prefetched) and the tensors outside the
         * blocks (wte, wpe, LN_f: gathered once a micro-batch, live from
         * the embedding to the encoder's backward, as ZeRO-2's gradient
         * buffer for them). The collectives write straight into these
         * buffers (one count per rank for each slice), so no separate
         * gather buffer (comm_bytes, in MEM_GRADS, is the reduction's). */
        p->param_shard_bytes = arena_round(p->shard_params * ab);
        p->param_gather_bytes = 2 * arena_round(p->layer_params * ab);
        p->param_outer_bytes = arena_round(p->outer_params * ab);
        p->bytes[MEM_PARAMS] = p->param_shard_bytes + p->param_gather_bytes +
                               p->param_outer_bytes;
    }
    p->master_bytes = in->dtype == DTYPE_FP32 ? 0 : arena_round(p->shard_params * 4);
    p->moment_bytes = 2 * arena_round(p->shard_params * 4);
    p->bytes[MEM_OPTIMIZER] = p->master_bytes + p->moment_bytes;
    if (in->offload & OFFLOAD_OPTIMIZER) {
        /* the same buffers in the host tier, and the two the host's AdamW
         * works through: this rank's gradients copied in, and its updated
         * working parameters on their way back (par dtype, shard_params) */
        p->staging_bytes = 2 * arena_round(p->shard_params * ab);
        p->host[HOST_OPTIMIZER] = p->bytes[MEM_OPTIMIZER] + p->staging_bytes;
        p->bytes[MEM_OPTIMIZER] = 0;
    }
}

void planner_shard_range(const MemoryPlan *p, int rank, size_t *begin, size_t *end)
{
    size_t b = p->zero ? (size_t)rank * p->shard_params : 0;
    size_t e = p->zero ? b + p->shard_params : p->num_params;
    if (e > p->num_params) e = p->num_params;
    if (b > e) b = e;
    *begin = b;
    *end = e;
}

/* Everything that does not depend on the schedule. */
static void plan_fixed(const PlanInput *in, MemoryPlan *p)
{
    memset(p, 0, sizeof *p);
    p->offload = in->offload & (OFFLOAD_CHECKPOINTS | OFFLOAD_OPTIMIZER);
    const GPTConfig *cfg = &in->cfg;
    size_t N = (size_t)in->B * in->T, C = (size_t)cfg->channels;
    size_t ab = (size_t)dtype_bytes(in->dtype);

    plan_params(in, p);
    p->baseline = in->baseline;
    p->host_copies = in->host_copies;

    planner_tape_layout(in, TAPE_FULL, &p->tape);
    /* Each buffer below is one arena_take, so each is rounded up to
     * ARENA_ALIGN (model/arena.h): the plan counts the padding too. */
    p->residual_bytes = arena_round(N * C * ab);
    p->tape_act_bytes = arena_round(p->tape.act_elems * ab);
    p->tape_f32_bytes = arena_round(p->tape.f32_elems * 4);

    /* scratch: the act buffers carve_scratch (gpt_alloc.c) takes (three of
     * (N,C), the backward's narrow gradient buffer, block_grad_small per
     * row: C unless the Llama head size makes NH hs wider, and its wide
     * one, block_grad_big per row: GPT-2's 4C), LN_f mean/rstd and per-token losses (fp32), Llama's
     * RoPE table (fp32), tokens and targets (int32), and the backend's
     * attention scratch. */
    BlockShape sh;
    planner_block_shape(in, &sh);
    p->scratch_act_bytes = 3 * arena_round(N * C * ab) +
                           arena_round(block_grad_small(&sh) * N * ab) +
                           arena_round(block_grad_big(planner_block(in), &sh) * N * ab);
    p->scratch_f32_bytes = 3 * arena_round(N * 4);
    size_t table = planner_table_floats(cfg, in->T); /* Llama: the RoPE table */
    if (table) p->scratch_f32_bytes += arena_round(table * 4);
    p->scratch_int_bytes = 2 * arena_round(N * 4);
    p->attn_scratch_bytes = in->attn_scratch ? arena_round(in->attn_scratch) : 0;
    p->bytes[MEM_SCRATCH] = p->scratch_act_bytes + p->scratch_f32_bytes + p->scratch_int_bytes +
                            p->attn_scratch_bytes;

    p->loss_chunk = in->loss_chunk > 0 ? in->loss_chunk
                                       : planner_default_loss_chunk(in->B, in->T, cfg->padded_vocab, in->dtype);
    if ((size_t)p->loss_chunk > N) p->loss_chunk = (int)N;
    /* chunk x Vp logits in the act dtype; at least one row of Vp fp32
     * logits, which head_logits writes for sampling. */
    size_t head = (size_t)p->loss_chunk * (size_t)cfg->padded_vocab * ab;
    if (head < (size_t)cfg->padded_vocab * 4) head = (size_t)cfg->padded_vocab * 4;
    p->bytes[MEM_HEAD] = arena_round(head);
}

const BlockDesc *planner_block(const PlanInput *in) { return block_desc_of(&in->cfg); }

size_t planner_table_floats(const GPTConfig *cfg, int T)
{
    const BlockDesc *bd = block_desc_of(cfg);
    return bd->table_floats ? bd->table_floats(cfg, T) : 0;
}

void planner_block_shape(const PlanInput *in, BlockShape *sh)
{
    block_shape(planner_block(in), &in->cfg, (size_t)in->B, (size_t)in->T, sh);
}

void planner_tape_layout(const PlanInput *in, int kind, TapeLayout *out)
{
    BlockShape sh;
    planner_block_shape(in, &sh);
    tape_layout(out, planner_block(in), kind, &sh, (size_t)dtype_bytes(in->dtype));
}

size_t planner_tape_bytes(const PlanInput *in, int kind)
{
    TapeLayout tl;
    planner_tape_layout(in, kind, &tl);
    return arena_round(tl.act_elems * (size_t)dtype_bytes(in->dtype)) +
           arena_round(tl.f32_elems * 4);
}

/* ZeRO-3's collectives per micro-batch, in parameter elements (planner.h),
 * as the model gathers (model/gpt_gather.c): block b into buffer b & 1
 * before each step of b unless that buffer holds b already, and b + 1
 * too before a forward whose closing add writes b + 1's LN1 (so a
 * re-forward and the backward right after it share one, and the two
 * blocks last in the buffers at the head need none after it); those after
 * the loss head counted as re-gathers; wte/wpe/LN_f once. */
static void plan_comm(const PlanInput *in, const Schedule *s, MemoryPlan *p)
{
    p->comm_gathered = p->comm_regathered = p->comm_scattered = 0;
    if (p->zero < 2) return;
    p->comm_scattered = p->num_params;
    if (p->zero < 3) return;
    p->comm_gathered = p->outer_params;
    int held[2] = {-1, -1}, L = in->cfg.num_layers;
    for (int i = 0; i < s->n_steps; i++) {
        const ScheduleStep *st = &s->steps[i];
        int need[2] = {st->block, st->kind == STEP_FORWARD && st->fuse_next_ln &&
                                          st->out_slot != SLOT_FINAL ? st->block + 1 : -1};
        for (int j = 0; j < 2; j++) {
            int b = need[j];
            if (b < 0 || b >= L || held[b & 1] == b) continue;
            held[b & 1] = b;
            if (i < s->n_forward) p->comm_gathered += p->layer_params;
            else p->comm_regathered += p->layer_params;
        }
    }
}

/* Tape slots: each its kind's bytes, stored or workspace; the tape
 * workspace once, in the workspace category, sized for the hungriest kind
 * present (kinds share it: one block runs at a time). A schedule holds a
 * few kinds: each is laid out once (a short list; past it, again). */
#define PLAN_KIND_CACHE 8
void planner_plan(const PlanInput *in, const Schedule *s, MemoryPlan *p)
{
    plan_fixed(in, p);
    size_t kind_bytes[PLAN_KIND_CACHE], kind_ws[PLAN_KIND_CACHE], tapes[2] = {0, 0};
    uint32_t kinds[PLAN_KIND_CACHE];
    int n_kinds = 0;
    p->tape_ws_bytes = 0;
    for (int j = 0; j < s->n_tape_slots; j++) {
        uint32_t k = s->tape_kind[j];
        int stored = j < s->n_tape_stored, c = 0;
        while (c < n_kinds && kinds[c] != k) c++;
        if (c == n_kinds) {
            TapeLayout tl;
            planner_tape_layout(in, (int)k, &tl);
            c = n_kinds < PLAN_KIND_CACHE ? n_kinds++ : PLAN_KIND_CACHE - 1;
            kinds[c] = k;
            kind_bytes[c] = planner_tape_bytes(in, (int)k);
            kind_ws[c] = tl.ws_bytes;
        }
        tapes[stored] += kind_bytes[c];
        if (kind_ws[c] > p->tape_ws_bytes) p->tape_ws_bytes = kind_ws[c];
        if (k != TAPE_FULL) {
            p->n_part_stored += stored;
            p->n_part_work += !stored;
        }
    }
    p->n_res_stored = s->n_res_stored;
    p->n_res_work = s->n_res_slots - s->n_res_stored;
    p->n_tape_stored = s->n_tape_stored;
    p->n_tape_work = s->n_tape_slots - s->n_tape_stored;
    /* Offloaded checkpoints: the stored inputs in the host tier, and on
     * the device the ring they pass through (planner.h). */
    int dev_res = p->n_res_stored;
    if (p->offload & OFFLOAD_CHECKPOINTS) { /* all but the n_res_kept the schedule keeps */
        p->n_res_host = schedule_res_host(s);
        p->n_ring = p->n_res_host < OFFLOAD_RING_SLOTS ? p->n_res_host : OFFLOAD_RING_SLOTS;
        p->host[HOST_CHECKPOINTS] = (size_t)p->n_res_host * p->residual_bytes;
        dev_res = p->n_ring + p->n_res_stored - p->n_res_host;
    }
    p->bytes[MEM_ACTIVATIONS] = (size_t)dev_res * p->residual_bytes + tapes[1];
    p->bytes[MEM_WORKSPACE] = (size_t)p->n_res_work * p->residual_bytes + tapes[0] +
                              p->tape_ws_bytes;
    p->total = p->baseline + p->host_copies;
    for (int c = 0; c < MEM_NUM_CATEGORIES; c++) p->total += p->bytes[c];
    for (int c = 0; c < HOST_NUM_CATEGORIES; c++) p->host_total += p->host[c];
    plan_comm(in, s, p);
}

int planner_sizes(const PlanInput *in, int mode, MemoryPlan *out, char *err, size_t err_len)
{
    Schedule s;
    if (schedule_build(&s, planner_block(in), mode, in->cfg.num_layers, err, err_len) != 0)
        return -1;
    planner_plan(in, &s, out);
    schedule_free(&s);
    return 0;
}

void planner_units_kinds(const PlanInput *in, int hi_kind, int lo_kind, PlanUnits *u)
{
    MemoryPlan p;
    TapeLayout hi, lo;
    plan_fixed(in, &p);
    u->fixed = p.baseline + p.host_copies;
    for (int c = 0; c < MEM_NUM_CATEGORIES; c++) u->fixed += p.bytes[c];
    u->res = p.residual_bytes;
    planner_tape_layout(in, hi_kind, &hi);
    planner_tape_layout(in, lo_kind, &lo);
    u->hi = planner_tape_bytes(in, hi_kind);
    u->lo = planner_tape_bytes(in, lo_kind);
    u->ws_hi = hi.ws_bytes;
    u->ws_lo = lo.ws_bytes;
}

void planner_units(const PlanInput *in, PlanUnits *u)
{
    planner_units_kinds(in, TAPE_FULL, (int)planner_block(in)->selective, u);
}

size_t planner_slots_total(const PlanUnits *u, int n_res, int n_hi, int n_lo)
{
    size_t ws_hi = n_hi > 0 ? u->ws_hi : 0, ws_lo = n_lo > 0 ? u->ws_lo : 0;
    return u->fixed + (size_t)n_res * u->res + (size_t)n_hi * u->hi + (size_t)n_lo * u->lo +
           (ws_hi > ws_lo ? ws_hi : ws_lo);
}

int planner_parse_bytes(const char *s, size_t *out)
{
    static const struct { const char *suffix; int shift; } units[] = {
        {"", 0}, {"KiB", 10}, {"MiB", 20}, {"GiB", 30},
    };
    if (!s || !isdigit((unsigned char)s[0])) return -1;
    uint64_t v = 0;
    const char *p = s;
    for (; isdigit((unsigned char)*p); p++) {
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(p, units[i].suffix) != 0) continue;
        if (v > (uint64_t)SIZE_MAX >> units[i].shift) return -1;
        *out = (size_t)(v << units[i].shift);
        return 0;
    }
    return -1;
}

int planner_parse_offload(const char *s, int *out)
{
    if (!s || !*s) return -1;
    if (strcmp(s, "none") == 0) {
        *out = 0;
        return 0;
    }
    int bits = 0;
    for (const char *p = s;;) {
        size_t n = strcspn(p, ",");
        int b = n == 11 && !strncmp(p, "checkpoints", n) ? OFFLOAD_CHECKPOINTS
                : n == 9 && !strncmp(p, "optimizer", n) ? OFFLOAD_OPTIMIZER
                                                        : 0;
        if (!b || (bits & b)) return -1; /* unknown, empty or repeated */
        bits |= b;
        if (!p[n]) break;
        p += n + 1;
    }
    *out = bits;
    return 0;
}

const char *planner_offload_name(int offload)
{
    static const char *names[] = {"none", "checkpoints", "optimizer", "checkpoints,optimizer"};
    return names[offload & 3];
}

const char *planner_host_category_name(int cat)
{
    static const char *names[HOST_NUM_CATEGORIES] = {"checkpoints", "optimizer"};
    return cat >= 0 && cat < HOST_NUM_CATEGORIES ? names[cat] : "?";
}

char *planner_format_bytes(size_t b, char *buf, size_t len)
{
    if (b >= (size_t)1 << 30) snprintf(buf, len, "%.2f GiB", b / 1073741824.0);
    else if (b >= (size_t)1 << 20) snprintf(buf, len, "%.2f MiB", b / 1048576.0);
    else if (b >= (size_t)1 << 10) snprintf(buf, len, "%.2f KiB", b / 1024.0);
    else snprintf(buf, len, "%zu B", b);
    return buf;
}

const char *planner_category_name(int cat)
{
    static const char *names[MEM_NUM_CATEGORIES] = {
        "params", "grads", "optimizer", "activations", "workspace", "scratch", "head",
    };
    return cat >= 0 && cat < MEM_NUM_CATEGORIES ? names[cat] : "?";
}

void planner_print(FILE *f, const MemoryPlan *p, const char *mode_name)
{
    static const char *notes[MEM_NUM_CATEGORIES] = {
        "working weights",
        "",
        "", /* the optimizer's: below */
        "kept from forward to backward",
        "recompute: re-forward tapes/inputs",
        "grad buffers, final LN, tokens",
        "loss head: chunk x Vp logits",
    };
    fprintf(f, "memory plan (recompute %s)\n", mode_name);
    fprintf(f, "  %-12s %15s %11s\n", "buffer", "bytes", "MiB");
    if (p->baseline)
        fprintf(f, "  %-12s %15zu %11.2f  %s\n", "baseline", p->baseline, p->baseline / 1048576.0,
                "the process before its arenas: program, libraries, runtime");
    if (p->host_copies)
        fprintf(f, "  %-12s %15zu %11.2f  %s\n", "host copies", p->host_copies,
                p->host_copies / 1048576.0, "what --save, --dump-grads, checkpoints stage");
    /* the fp32 master exists only where the working weights are bf16 */
    const char *adamw = p->master_bytes ? "AdamW m, v + fp32 master" : "AdamW m, v";
    char zero_note[96], opt_note[64];
    snprintf(zero_note, sizeof zero_note, "%s: per rank, 1/%d shard", adamw, p->world_size);
    snprintf(opt_note, sizeof opt_note, "%s", adamw);
    for (int c = 0; c < MEM_NUM_CATEGORIES; c++)
        fprintf(f, "  %-12s %15zu %11.2f  %s\n", planner_category_name(c), p->bytes[c],
                p->bytes[c] / 1048576.0,
                c == MEM_SCRATCH && p->attn_scratch_bytes
                    ? "grad buffers, final LN, tokens, attention tiles"
                : c == MEM_GRADS && p->zero >= 2
                    ? "per rank: shard + one block's and wte/wpe/LN_f's full buffers"
                : c == MEM_PARAMS && p->zero == 3
                    ? "per rank: shard + two blocks' and wte/wpe/LN_f's gather buffers"
                    : c != MEM_OPTIMIZER ? notes[c] : p->zero ? zero_note : opt_note);
    fprintf(f, "  %-12s %15zu %11.2f\n", "total", p->total, p->total / 1048576.0);
    if (p->offload) {
        fprintf(f, "  host tier (--offload %s):\n", planner_offload_name(p->offload));
        for (int c = 0; c < HOST_NUM_CATEGORIES; c++)
            fprintf(f, "  %-12s %15zu %11.2f  %s\n", planner_host_category_name(c), p->host[c],
                    p->host[c] / 1048576.0,
                    c == HOST_CHECKPOINTS ? "stored block inputs (device: a ring of slots)"
                                          : p->master_bytes
                                                ? "AdamW m, v + fp32 master, grad/param staging"
                                                : "AdamW m, v, grad/param staging");
        fprintf(f, "  %-12s %15zu %11.2f\n", "host total", p->host_total,
                p->host_total / 1048576.0);
    }
    if (p->zero == 3)
        fprintf(f, "  zero 3: parameter shard %zu B per rank, gathered into two blocks' buffers "
                   "(%zu B together) and wte/wpe/LN_f's (%zu B)\n",
                p->param_shard_bytes, p->param_gather_bytes, p->param_outer_bytes);
    if (p->comm_bytes)
        fprintf(f, "  ranks: gradient sums in rank order through a receive buffer of %zu B "
                   "(%d pieces of %zu elements) in grads\n",
                p->comm_bytes, p->world_size, p->reduce_chunk);
    if (p->zero >= 2)
        fprintf(f, "  zero %d: gradient shard %zu B per rank, reduced from full-size buffers for "
                   "wte/wpe/LN_f (%zu B) and one block (%zu B)\n",
                p->zero, p->grad_shard_bytes, p->grad_outer_bytes, p->grad_layer_bytes);
    if (p->zero)
        fprintf(f, "  zero %d: optimizer shard %zu elements per rank over %d ranks "
                   "(unsharded: %.2f MiB); params%s padded by %zu elements\n",
                p->zero, p->shard_params, p->world_size,
                (p->num_params * (p->master_bytes ? 12.0 : 8.0)) / 1048576.0,
                p->zero >= 2 ? "" : " and grads", p->padded_params - p->num_params);
    if (p->zero == 3) {
        size_t n = p->num_params;
        fprintf(f, "  zero %d: per micro-batch, parameter elements all-gathered %zu, re-gathered "
                   "%zu, reduce-scattered %zu (%.2fx the parameters)\n",
                p->zero, p->comm_gathered, p->comm_regathered, p->comm_scattered,
                n ? (double)(p->comm_gathered + p->comm_regathered + p->comm_scattered) / n
                  : 0.0);
    }
    fprintf(f, "  stored: %d block inputs + %d tapes (%d partial); workspace: %d inputs + %d "
               "tapes (%d partial)%s; head chunk %d tokens\n",
            p->n_res_stored, p->n_tape_stored, p->n_part_stored, p->n_res_work, p->n_tape_work,
            p->n_part_work, p->tape_ws_bytes ? " + the tape workspace" : "", p->loss_chunk);
    if (p->n_ring)
        fprintf(f, "  offload: %d of the %d stored block inputs pass through a device ring of %d "
                   "slots (the rest stay on the device)\n", p->n_res_host, p->n_res_stored,
                p->n_ring);
}
