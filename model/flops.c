/* model/flops.c — see flops.h. */
#include "flops.h"

#include <string.h>

void flops_op_costs(const GPTConfig *cfg, int B, int T, OpCosts *o)
{
    long long N = (long long)B * T, C = cfg->channels, Vp = cfg->padded_vocab;
    /* One block forward, op by op (per-element counts: see flops.h). */
    long long ln = 8 * N * C, add = N * C, gelu = 9 * N * 4 * C;
    long long qkv = 2 * N * C * 3 * C, attn = 2LL * B * T * T * C, attproj = 2 * N * C * C;
    long long fc = 2 * N * C * 4 * C, fcproj = 2 * N * 4 * C * C;
    long long head = 2 * N * C * Vp + 5 * N * Vp; /* the head's forward after LN_f */
    if (cfg->arch == ARCH_LLAMA) {
        /* the same op slots at the Llama block's widths: RMSNorm (~5 an
         * element), qkv (C + 2 NKV hs) with RoPE on q and k (~6 an element),
         * gate/up 2F, SwiGLU (~6 an element of F) in GELU's slot, down F */
        long long F = config_ffn(cfg), hs = C / cfg->num_heads;
        long long QKV = C + 2LL * config_kv_heads(cfg) * hs;
        ln = 5 * N * C;
        qkv = 2 * N * C * QKV + 6 * N * (C + config_kv_heads(cfg) * hs);
        if (cfg->qkv_bias) qkv += N * QKV;                                 /* + bias */
        if (cfg->qk_norm) qkv += 5 * N * (C + config_kv_heads(cfg) * hs); /* RMSNorm */
        fc = 2 * N * C * 2 * F;
        gelu = 6 * N * F;
        fcproj = 2 * N * F * C;
    }
    memset(o, 0, sizeof *o);
    o->unit = OPCOST_FLOPS;
    long long fwd[] = {ln, qkv, attn, attproj, add, ln, fc, gelu, fcproj, add};
    /* backward: twice the forward, attention 2.5 times; each residual add's
     * backward (2 per add) is counted with the LayerNorm that follows it */
    long long bwd[] = {2 * fcproj, 2 * gelu, 2 * fc, 2 * ln + 2 * add, 2 * attproj,
                       attn * 5 / 2, 2 * qkv, 2 * ln + 2 * add};
    for (int i = 0; i < 10; i++) o->c[OP_LN1 + i] = fwd[i];
    for (int i = 0; i < 8; i++) o->c[OP_FCPROJ_BWD + i] = bwd[i];
    o->c[OP_ENCODER] = N * C;
    o->c[OP_ENCODER_BWD] = 2 * N * C;
    o->c[OP_LNF] = ln;
    o->c[OP_LNF_BWD] = 2 * ln;
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
