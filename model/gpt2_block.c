/* model/gpt2_block.c — GPT-2's block (gpt2_block.h), as llm.c's:
 *   r = x + attproj(attn(ln1(x)));  x' = r + fcproj(gelu(fc(ln2(r)))).
 * gpt.c's block_forward, make_tensor and block_backward run these ops in
 * this order (GPT2_FWD_*, GPT2_BWD_*); gpt2_cost.c counts and runs them
 * for the op-cost model. */
#include "gpt2_block.h"

#define T_(t) TENSOR_BIT(GPT2_##t)

static void gpt2_shape(BlockShape *sh)
{
    sh->NKV = sh->NH; /* no grouped-query attention */
    sh->F = 4 * sh->C;
}

const BlockDesc GPT2_BLOCK = {
    .family = "gpt2",
    .n_tensors = GPT2_TENSORS,
    .tensor = {
        [GPT2_LN1] = {"ln1", '1', {.c = 1}},
        [GPT2_QKV] = {"qkv", 'q', {.c = 3}}, /* (NH + 2 NKV) hs with NKV = NH */
        [GPT2_ATTY] = {"atty", 'a', {.c = 1}},
        [GPT2_RES2] = {"res2", 'r', {.c = 1}},
        [GPT2_LN2] = {"ln2", '2', {.c = 1}},
        [GPT2_FCH] = {"fch", 'f', {.ffn = 1}},
        [GPT2_GELU] = {"gelu", 'g', {.ffn = 1}},
    },
    .n_sides = GPT2_SIDES,
    .side = {
        [GPT2_LN1_MEAN] = {"ln1_mean", GPT2_LN1, SIDE_KEPT, {.one = 1}},
        [GPT2_LN1_RSTD] = {"ln1_rstd", GPT2_LN1, SIDE_KEPT, {.one = 1}},
        [GPT2_LSE] = {"lse", GPT2_ATTY, SIDE_FOLLOWS, {.heads = 1}},
        [GPT2_LN2_MEAN] = {"ln2_mean", GPT2_LN2, SIDE_KEPT, {.one = 1}},
        [GPT2_LN2_RSTD] = {"ln2_rstd", GPT2_LN2, SIDE_KEPT, {.one = 1}},
    },
    .n_fwd = GPT2_FWD_OPS,
    .fwd = {
        {"ln1_fwd", GPT2_LN1, 0, 0},
        {"qkv_fwd", GPT2_QKV, T_(LN1), 0},
        {"attn_fwd", GPT2_ATTY, T_(QKV), 0},
        {"attproj_fwd", GPT2_RES2, T_(ATTY), 0},
        {"resid1_fwd", GPT2_RES2, T_(RES2), 0}, /* res2 += x */
        {"ln2_fwd", GPT2_LN2, T_(RES2), 0},
        {"fc_fwd", GPT2_FCH, T_(LN2), 0},
        {"gelu_fwd", GPT2_GELU, T_(FCH), 0},
        {"fcproj_fwd", BLOCK_OUT, T_(GELU), 1},
        {"resid2_fwd", BLOCK_OUT, T_(RES2), 1}, /* out += res2 */
    },
    .n_bwd = GPT2_BWD_OPS,
    .bwd = {
        [GPT2_BWD_FCPROJ] = {"fcproj_bwd", T_(GELU)},
        [GPT2_BWD_GELU] = {"gelu_bwd", T_(FCH)},
        [GPT2_BWD_FC] = {"fc_bwd", T_(LN2)},
        [GPT2_BWD_LN2] = {"ln2_bwd", T_(RES2)},
        [GPT2_BWD_ATTPROJ] = {"attproj_bwd", T_(ATTY)},
        [GPT2_BWD_ATTN] = {"attn_bwd", T_(QKV) | T_(ATTY)},
        [GPT2_BWD_QKV] = {"qkv_bwd", T_(LN1)},
        [GPT2_BWD_LN1] = {"ln1_bwd", 0},
    },
    .selective = GPT2_SELECTIVE, /* ln1, ln2, gelu */
    /* the closing add writes the next block's LN1, reading this one's res2 */
    .fuse_writes = T_(LN1),
    .fuse_reads = T_(RES2),
    /* cuBLASLt's GELU epilogue takes GELU before fch is rounded */
    .inexact_fused = T_(FCH) | T_(GELU),
    /* dbig: d(gelu), then d(fch) in place, then d(qkv) */
    .n_grad_big = 2,
    .grad_big = {{.ffn = 1}, {.c = 3}},
    .shape_defaults = gpt2_shape,
    .op_flops = gpt2_op_flops,
    .bench_op = gpt2_bench_op,
};
