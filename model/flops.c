/* model/flops.c — see flops.h. */
#include "flops.h"

void flops_op_costs(const GPTConfig *cfg, int B, int T, OpCosts *o)
{
    const BlockDesc *bd = block_desc_of(cfg);
    BlockShape sh;
    block_shape(bd, cfg, (size_t)B, (size_t)T, &sh);
    long long N = (long long)B * T, C = cfg->channels, Vp = cfg->padded_vocab, norm = 0;
    long long head = 2 * N * C * Vp + 5 * N * Vp; /* the head's forward after the final norm */
    opcost_init(o, bd, OPCOST_FLOPS);
    /* the block's ops, as its description counts them */
    if (bd->op_flops) bd->op_flops(&sh, o->fwd, o->bwd, &norm);
    o->c[OP_ENCODER] = N * C;
    o->c[OP_ENCODER_BWD] = 2 * N * C;
    o->c[OP_LNF] = norm;
    o->c[OP_LNF_BWD] = 2 * norm;
    o->c[OP_HEAD] = 3 * head; /* forward and backward */
}

void flops_count(const GPTConfig *cfg, int B, int T, FlopCounts *f)
{
    OpCosts o;
    flops_op_costs(cfg, B, T, &o);
    long long L = cfg->num_layers;
    f->block_fwd = opcost_block_fwd(&o);
    f->block_fwd_noout = opcost_block_fwd_last(&o);
    f->block_sel = opcost_rebuild(&o, (int)block_desc_of(cfg)->selective);
    f->block_bwd = opcost_block_bwd(&o);
    for (int t = 0; t < BLOCK_MAX_TENSORS; t++) f->tensor[t] = opcost_tensor(&o, t);
    f->embed_fwd = o.c[OP_ENCODER];
    f->embed_bwd = o.c[OP_ENCODER_BWD];
    f->head_fwd = o.c[OP_LNF] + o.c[OP_HEAD] / 3;
    f->head_bwd = 2 * f->head_fwd;
    f->step = f->embed_fwd + f->embed_bwd + L * (f->block_fwd + f->block_bwd) + f->head_fwd +
              f->head_bwd;
}

long long flops_recompute(const FlopCounts *f, const Schedule *s)
{
    long long n = 0;
    for (int k = 0; k < s->n_steps; k++) {
        const ScheduleStep *st = &s->steps[k];
        if (st->kind == STEP_FORWARD && k >= s->n_forward)
            n += st->out_slot == SLOT_NONE ? f->block_fwd_noout : f->block_fwd;
        else if (st->kind == STEP_BACKWARD)
            for (int t = 0; t < BLOCK_MAX_TENSORS; t++)
                if (s->tape_kind[st->tape_slot] & TENSOR_BIT(t)) n += f->tensor[t];
    }
    return n;
}
