/* model/block_desc.c — see block_desc.h. */
#include "block_desc.h"

#include <stdio.h>

#include "gpt2_block.h"
#include "llama_block.h"

const BlockDesc *block_desc_of(const GPTConfig *cfg)
{
    if (cfg->arch != ARCH_LLAMA) return &GPT2_BLOCK;
    return cfg->qk_norm ? &LLAMA_QKNORM_BLOCK : &LLAMA_BLOCK;
}

size_t block_dim(const BlockShape *sh, BlockDim d)
{
    return (size_t)d.one + (size_t)d.c * sh->C + (size_t)d.heads * sh->NH +
           (size_t)d.kv_heads * sh->NKV + (size_t)d.q * sh->NH * sh->hs +
           (size_t)d.kv * sh->NKV * sh->hs + (size_t)d.ffn * sh->F;
}

void block_shape(const BlockDesc *d, const GPTConfig *cfg, size_t B, size_t T, BlockShape *sh)
{
    *sh = (BlockShape){0};
    sh->B = B;
    sh->T = T;
    sh->N = B * T;
    sh->C = cfg->channels > 0 ? (size_t)cfg->channels : 0;
    sh->NH = cfg->num_heads > 0 ? (size_t)cfg->num_heads : 0;
    sh->hs = sh->NH ? (size_t)config_head_dim(cfg) : 0;
    d->shape_defaults(sh);
    if (cfg->arch == ARCH_LLAMA && sh->NH) { /* the config's own widths */
        sh->NKV = (size_t)config_kv_heads(cfg);
        sh->F = (size_t)config_ffn(cfg);
    }
}

size_t block_grad_small(const BlockShape *sh)
{
    size_t q = sh->NH * sh->hs;
    return q > sh->C ? q : sh->C;
}

size_t block_grad_big(const BlockDesc *d, const BlockShape *sh)
{
    size_t w = 0;
    for (int i = 0; i < d->n_grad_big; i++) {
        size_t x = block_dim(sh, d->grad_big[i]);
        if (x > w) w = x;
    }
    return w;
}

uint32_t block_makers(const BlockDesc *d, int t)
{
    uint32_t m = 0;
    for (int op = 0; op < d->n_fwd; op++)
        if (d->fwd[op].makes == t) m |= (uint32_t)1 << op;
    return m;
}

TensorSet block_inputs(const BlockDesc *d, int t)
{
    TensorSet in = 0;
    for (int op = 0; op < d->n_fwd; op++)
        if (d->fwd[op].makes == t) in |= d->fwd[op].reads;
    return in & ~TENSOR_BIT(t);
}

int block_first_write(const BlockDesc *d, int t)
{
    for (int op = 0; op < d->n_fwd; op++)
        if (d->fwd[op].makes == t) return op;
    return -1;
}

int block_last_read(const BlockDesc *d, int t)
{
    for (int op = d->n_fwd - 1; op >= 0; op--)
        if (d->fwd[op].reads & TENSOR_BIT(t)) return op;
    return -1;
}

int block_desc_check(const BlockDesc *d, char *err, size_t err_len)
{
    if (d->n_tensors < 1 || d->n_tensors > BLOCK_MAX_TENSORS || d->n_sides < 0 ||
        d->n_sides > BLOCK_MAX_SIDES || d->n_fwd < 1 || d->n_fwd > BLOCK_MAX_FWD_OPS ||
        d->n_bwd < 1 || d->n_bwd > BLOCK_MAX_BWD_OPS || d->n_grad_big < 0 ||
        d->n_grad_big > BLOCK_MAX_GRAD_BIG || !d->shape_defaults) {
        snprintf(err, err_len, "block %s: counts out of range", d->family);
        return -1;
    }
    TensorSet all = (TensorSet)((1u << d->n_tensors) - 1);
    for (int t = 0; t < d->n_tensors; t++) {
        char c = d->tensor[t].letter;
        if (c == '-' || c == '\0') {
            snprintf(err, err_len, "block %s: tensor %s has no letter", d->family,
                     d->tensor[t].name);
            return -1;
        }
        for (int u = 0; u < t; u++)
            if (d->tensor[u].letter == c) {
                snprintf(err, err_len, "block %s: tensors %s and %s share the letter %c",
                         d->family, d->tensor[u].name, d->tensor[t].name, c);
                return -1;
            }
        int first = block_first_write(d, t);
        if (first < 0 || d->fwd[first].out_only) {
            snprintf(err, err_len, "block %s: tensor %s is made by no op (or by an output-only "
                     "one)", d->family, d->tensor[t].name);
            return -1;
        }
        /* read only after it is first made; its inputs made before it */
        for (int op = 0; op < first; op++)
            if (d->fwd[op].reads & TENSOR_BIT(t)) {
                snprintf(err, err_len, "block %s: op %s reads %s before it is made", d->family,
                         d->fwd[op].name, d->tensor[t].name);
                return -1;
            }
        TensorSet in = block_inputs(d, t);
        for (int u = 0; u < d->n_tensors; u++)
            if ((in & TENSOR_BIT(u)) && block_first_write(d, u) >= first) {
                snprintf(err, err_len, "block %s: tensor %s reads %s, made after it", d->family,
                         d->tensor[t].name, d->tensor[u].name);
                return -1;
            }
    }
    for (int op = 0; op < d->n_fwd; op++) {
        const BlockFwdOp *o = &d->fwd[op];
        int to_out = o->makes == BLOCK_OUT;
        if ((o->reads & ~all) || (!to_out && (o->makes < 0 || o->makes >= d->n_tensors)) ||
            !o->out_only != !to_out) {
            snprintf(err, err_len, "block %s: forward op %s names an unknown tensor, or writes "
                     "the block output without being output-only (or the reverse)", d->family,
                     o->name);
            return -1;
        }
    }
    for (int op = 0; op < d->n_bwd; op++)
        if (d->bwd[op].reads & ~all) {
            snprintf(err, err_len, "block %s: backward op %s names an unknown tensor", d->family,
                     d->bwd[op].name);
            return -1;
        }
    for (int s = 0; s < d->n_sides; s++)
        if (d->side[s].tensor < 0 || d->side[s].tensor >= d->n_tensors ||
            (d->side[s].policy != SIDE_KEPT && d->side[s].policy != SIDE_FOLLOWS)) {
            snprintf(err, err_len, "block %s: side output %s names an unknown tensor or policy",
                     d->family, d->side[s].name);
            return -1;
        }
    if ((d->selective | d->fuse_writes | d->fuse_reads | d->inexact_fused) & ~all) {
        snprintf(err, err_len, "block %s: a role names an unknown tensor", d->family);
        return -1;
    }
    return 0;
}
