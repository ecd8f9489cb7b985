/* model/opcost.c — see opcost.h (measurement: opcost_measure.c). */
#include "opcost.h"

#include <stdio.h>
#include <stdlib.h>

#include "gpt2_block.h"
#include "llama_block.h"

static const char *NAMES[OP_COUNT] = {
    "ln1_fwd", "qkv_fwd", "attn_fwd", "attproj_fwd", "resid1_fwd", "ln2_fwd", "fc_fwd",
    "gelu_fwd", "fcproj_fwd", "resid2_fwd",
    "fcproj_bwd", "gelu_bwd", "fc_bwd", "ln2_bwd", "attproj_bwd", "attn_bwd", "qkv_bwd",
    "ln1_bwd",
    "encoder_fwd", "lnf_fwd", "head_fwd_bwd", "zero_dres", "lnf_bwd", "encoder_bwd",
    "zero_grads", "grad_norm", "adamw",
};

const char *opcost_op_name(int op) { return op >= 0 && op < OP_COUNT ? NAMES[op] : "?"; }

long long opcost_tensor(const OpCosts *oc, int t)
{
    switch (t) {
    case GPT2_LN1: return oc->c[OP_LN1];
    case GPT2_QKV: return oc->c[OP_QKV];
    case GPT2_ATTY: return oc->c[OP_ATTN];
    case GPT2_RES2: return oc->c[OP_ATTPROJ] + oc->c[OP_RESID1];
    case GPT2_LN2: return oc->c[OP_LN2];
    case GPT2_FCH: return oc->c[OP_FC];
    case GPT2_GELU: return oc->c[OP_GELU];
    /* the Llama family's qk-norm input: the qkv matmul's output (its qkv,
     * in slot 1, is then priced as the matmul too: an over-estimate of
     * the norm and RoPE that keeps auto from dropping it for free) */
    case LLAMA_QKR: return oc->c[OP_QKV];
    default: return 0;
    }
}

static long long sum(const OpCosts *oc, int from, int to)
{
    long long s = 0;
    for (int op = from; op < to; op++) s += oc->c[op];
    return s;
}

long long opcost_block_fwd(const OpCosts *oc) { return sum(oc, OP_LN1, OP_RESID2 + 1); }
long long opcost_block_fwd_last(const OpCosts *oc) { return sum(oc, OP_LN1, OP_FCPROJ); }
long long opcost_block_bwd(const OpCosts *oc) { return sum(oc, OP_FCPROJ_BWD, OP_LN1_BWD + 1); }

long long opcost_rebuild(const OpCosts *oc, int kind)
{
    long long s = 0;
    for (int t = 0; t < BLOCK_MAX_TENSORS; t++)
        if (kind & (1 << t)) s += opcost_tensor(oc, t);
    return s;
}

long long opcost_recompute(const OpCosts *oc, const Schedule *s)
{
    long long n = 0, fwd = opcost_block_fwd(oc), last = opcost_block_fwd_last(oc);
    for (int k = 0; k < s->n_steps; k++) {
        const ScheduleStep *st = &s->steps[k];
        if (st->kind == STEP_FORWARD && k >= s->n_forward)
            n += st->out_slot == SLOT_NONE ? last : fwd;
        else if (st->kind == STEP_BACKWARD)
            n += opcost_rebuild(oc, s->tape_kind[st->tape_slot]);
    }
    return n;
}

long long opcost_step(const OpCosts *oc, const Schedule *s, int grad_accum)
{
    long long micro = sum(oc, OP_ENCODER, OP_ENCODER_BWD + 1) + opcost_recompute(oc, s) +
                      (long long)s->num_layers * (opcost_block_fwd(oc) + opcost_block_bwd(oc));
    return (grad_accum > 1 ? grad_accum : 1) * micro + sum(oc, OP_ZERO_GRADS, OP_ADAMW + 1);
}

/* a beats b: no worse in bytes and rebuild, and better in one of them, or
 * equal in both and better in workspace, then in mask. */
static int beats(const KindCost *a, const KindCost *b)
{
    if (a->bytes > b->bytes || a->rebuild > b->rebuild) return 0;
    if (a->bytes < b->bytes || a->rebuild < b->rebuild) return 1;
    return a->ws < b->ws || (a->ws == b->ws && a->kind < b->kind);
}

static int by_bytes_desc(const void *x, const void *y)
{
    const KindCost *a = x, *b = y;
    if (a->bytes != b->bytes) return a->bytes < b->bytes ? 1 : -1;
    return a->rebuild < b->rebuild ? -1 : a->rebuild > b->rebuild;
}

int opcost_frontier(const OpCosts *oc, const PlanInput *in, KindCost *out)
{
    int kinds = tape_kinds(planner_block(in));
    if (kinds < 1 || kinds > TAPE_MAX_KINDS) return 0;
    KindCost *all = out + 0; /* priced in place, then the frontier compacted to the front */
    for (int k = 0; k < kinds; k++) {
        TapeLayout tl;
        planner_tape_layout(in, k, &tl);
        all[k] = (KindCost){k, planner_tape_bytes(in, k), tl.ws_bytes, opcost_rebuild(oc, k)};
    }
    /* beaten[k]: some other kind beats k (decided on every kind before
     * any is moved) */
    unsigned char *beaten = calloc((size_t)kinds, 1);
    if (!beaten) return 0;
    for (int k = 0; k < kinds; k++)
        for (int j = 0; j < kinds && !beaten[k]; j++) beaten[k] = j != k && beats(&all[j], &all[k]);
    int n = 0;
    for (int k = 0; k < kinds; k++)
        if (!beaten[k]) out[n++] = all[k]; /* n <= k: moves only down */
    free(beaten);
    qsort(out, (size_t)n, sizeof *out, by_bytes_desc);
    return n;
}

static size_t res_bytes(const PlanInput *in)
{
    PlanUnits u;
    planner_units_kinds(in, TAPE_FULL, TAPE_FULL, &u);
    return u.res;
}

void opcost_print(FILE *f, const OpCosts *oc, const PlanInput *in)
{
    int ns = oc->unit == OPCOST_NS;
    double scale = 1e-6; /* ns to ms, or FLOPs to MFLOP */
    const char *u = ns ? "ms" : "MFLOP";
    fprintf(f, "op costs (%s per call; head: all chunks of a micro-batch; optimizer: all "
               "parameters):\n", u);
    for (int op = 0; op < OP_COUNT; op++)
        fprintf(f, "  %-13s %10.3f%s", opcost_op_name(op), oc->c[op] * scale,
                op % 4 == 3 || op == OP_COUNT - 1 ? "\n" : "");
    fprintf(f, "  block: forward %.3f %s (%.3f without its output), backward %.3f %s\n",
            opcost_block_fwd(oc) * scale, u, opcost_block_fwd_last(oc) * scale,
            opcost_block_bwd(oc) * scale, u);
    if (ns && oc->copy_bw > 0)
        fprintf(f, "  copy engine: latency %.3f ms, bandwidth %.2f GB/s (one residual slot of "
                   "the run: %.3f ms)\n", oc->copy_lat_ns * 1e-6, oc->copy_bw * 1e-9,
                opcost_copy(oc, res_bytes(in)) * 1e-6);
    else if (ns)
        fprintf(f, "  copy engine: not measured (this backend has none)\n");
    const BlockDesc *bd = planner_block(in);
    KindCost *front = malloc(sizeof *front * (size_t)tape_kinds(bd));
    int n = front ? opcost_frontier(oc, in, front) : 0;
    fprintf(f, "tape kinds on the frontier (of %d; keeps the tensors named, '-' dropped:",
            tape_kinds(bd));
    for (int t = 0; t < bd->n_tensors; t++) fprintf(f, " %s", bd->tensor[t].name);
    fprintf(f, "):\n");
    for (int i = 0; i < n; i++) {
        char name[BLOCK_MAX_TENSORS + 1], b[32], w[32];
        fprintf(f, "  %s  slot %10s  workspace %10s  rebuild %9.3f %s\n",
                tape_kind_name(bd, front[i].kind, name),
                planner_format_bytes(front[i].bytes, b, sizeof b),
                planner_format_bytes(front[i].ws, w, sizeof w), front[i].rebuild * scale, u);
    }
    free(front);
}
