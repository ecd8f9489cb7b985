/* model/flops.c — see flops.h. */
#include "flops.h"

void flops_count(const GPTConfig *cfg, int B, int T, FlopCounts *f)
{
    long long N = (long long)B * T, C = cfg->channels, Vp = cfg->padded_vocab;
    long long L = cfg->num_layers;
    /* One block forward, op by op (per-element counts: see flops.h). */
    long long ln = 8 * N * C, add = N * C, gelu = 9 * N * 4 * C;
    long long qkv = 2 * N * C * 3 * C, attn = 2LL * B * T * T * C, attproj = 2 * N * C * C;
    long long fc = 2 * N * C * 4 * C, fcproj = 2 * N * 4 * C * C;
    long long mm = qkv + attproj + fc + fcproj, elem = ln + add + ln + gelu + add;
    f->block_fwd = mm + attn + elem;
    f->block_fwd_noout = f->block_fwd - fcproj - add;
    f->block_sel = ln + ln + gelu;
    f->block_bwd = 2 * mm + attn * 5 / 2 + 2 * elem;
    f->embed_fwd = N * C;
    f->embed_bwd = 2 * f->embed_fwd;
    f->head_fwd = ln + 2 * N * C * Vp + 5 * N * Vp;
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
        else if (st->kind == STEP_BACKWARD && s->tape_kind[st->tape_slot] == TAPE_SELECTIVE)
            n += f->block_sel;
    }
    return n;
}
