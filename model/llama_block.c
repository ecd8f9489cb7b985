/* model/llama_block.c — the Llama family's block (llama_block.h). The shape
 * leaves NKV and F to the config (config_kv_heads, config_ffn): the
 * description's shape_defaults has only C and NH, so block_shape fills them
 * from cfg afterwards (block_desc.c). llama_run.c's forward, make_tensor
 * and backward run these ops in this order. */
#include "llama_block.h"

#include "kernels/rope.h"

#define T_(t) TENSOR_BIT(LLAMA_##t)

/* RoPE's table (kernels/rope.h): T rows of the head size (config_head_dim) */
static size_t llama_rope_floats(const GPTConfig *cfg, int T)
{
    return cfg->num_heads < 1 ? 0 : rope_table_floats(T, config_head_dim(cfg));
}

static void llama_shape(BlockShape *sh)
{
    /* placeholders for a shape without a config; block_shape sets both */
    sh->NKV = sh->NH;
    sh->F = 4 * sh->C;
}

const BlockDesc LLAMA_BLOCK = {
    .family = "llama",
    .n_tensors = LLAMA_TENSORS,
    .tensor = {
        [LLAMA_RMS1] = {"rms1", '1', {.c = 1}},
        [LLAMA_QKV] = {"qkv", 'q', {.q = 1, .kv = 2}}, /* (NH + 2 NKV) hs */
        [LLAMA_ATTY] = {"atty", 'a', {.q = 1}}, /* NH hs */
        [LLAMA_RES2] = {"res2", 'r', {.c = 1}},
        [LLAMA_RMS2] = {"rms2", '2', {.c = 1}},
        [LLAMA_GATEUP] = {"gateup", 'u', {.ffn = 2}},
        [LLAMA_SWI] = {"swiglu", 's', {.ffn = 1}},
    },
    .n_sides = LLAMA_SIDES,
    .side = {
        [LLAMA_RMS1_RSTD] = {"rms1_rstd", LLAMA_RMS1, SIDE_KEPT, {.one = 1}},
        [LLAMA_LSE] = {"lse", LLAMA_ATTY, SIDE_FOLLOWS, {.heads = 1}},
        [LLAMA_RMS2_RSTD] = {"rms2_rstd", LLAMA_RMS2, SIDE_KEPT, {.one = 1}},
    },
    .n_fwd = LLAMA_FWD_OPS,
    .fwd = {
        {"rms1_fwd", LLAMA_RMS1, 0, 0},
        {"qkv_fwd", LLAMA_QKV, T_(RMS1), 0},
        {"rope_fwd", LLAMA_QKV, T_(QKV), 0}, /* in place */
        {"attn_fwd", LLAMA_ATTY, T_(QKV), 0},
        {"wo_fwd", LLAMA_RES2, T_(ATTY), 0},
        {"resid1_fwd", LLAMA_RES2, T_(RES2), 0}, /* res2 += x */
        {"rms2_fwd", LLAMA_RMS2, T_(RES2), 0},
        {"gateup_fwd", LLAMA_GATEUP, T_(RMS2), 0},
        {"swiglu_fwd", LLAMA_SWI, T_(GATEUP), 0},
        {"down_fwd", BLOCK_OUT, T_(SWI), 1},
        {"resid2_fwd", BLOCK_OUT, T_(RES2), 1}, /* out += res2 */
    },
    .n_bwd = LLAMA_BWD_OPS,
    .bwd = {
        [LLAMA_BWD_DOWN] = {"down_bwd", T_(SWI)},
        [LLAMA_BWD_SWIGLU] = {"swiglu_bwd", T_(GATEUP)},
        [LLAMA_BWD_GATEUP] = {"gateup_bwd", T_(RMS2)},
        [LLAMA_BWD_RMS2] = {"rms2_bwd", T_(RES2)},
        [LLAMA_BWD_WO] = {"wo_bwd", T_(ATTY)},
        [LLAMA_BWD_ATTN] = {"attn_bwd", T_(QKV) | T_(ATTY)},
        [LLAMA_BWD_ROPE] = {"rope_bwd", 0},
        [LLAMA_BWD_QKV] = {"qkv_bwd", T_(RMS1)},
        [LLAMA_BWD_RMS1] = {"rms1_bwd", 0},
    },
    .selective = LLAMA_SELECTIVE, /* rms1, rms2, swiglu */
    /* no fused closing add + RMSNorm: each block norms its own input */
    .fuse_writes = 0,
    .fuse_reads = 0,
    .inexact_fused = 0, /* no fused epilogue */
    /* dbig: d(gateup) (2F) with d(swiglu) (F) beside it, SwiGLU's backward
     * reading the one and writing the other; then d(qkv) */
    .n_grad_big = 2,
    .grad_big = {{.ffn = 3}, {.q = 1, .kv = 2}},
    .shape_defaults = llama_shape,
    .op_flops = llama_op_flops,
    .bench_op = llama_bench_op,
    .table_floats = llama_rope_floats,
};

/* LLAMA_BLOCK with qk-norm (llama_block.h): qkr between the matmul and
 * qkv. */
const BlockDesc LLAMA_QKNORM_BLOCK = {
    .family = "llama",
    .n_tensors = LLAMA_TENSORS + 1,
    .tensor = {
        [LLAMA_RMS1] = {"rms1", '1', {.c = 1}},
        [LLAMA_QKV] = {"qkv", 'q', {.q = 1, .kv = 2}}, /* (NH + 2 NKV) hs */
        [LLAMA_ATTY] = {"atty", 'a', {.q = 1}}, /* NH hs */
        [LLAMA_RES2] = {"res2", 'r', {.c = 1}},
        [LLAMA_RMS2] = {"rms2", '2', {.c = 1}},
        [LLAMA_GATEUP] = {"gateup", 'u', {.ffn = 2}},
        [LLAMA_SWI] = {"swiglu", 's', {.ffn = 1}},
        [LLAMA_QKR] = {"qkr", 'k', {.q = 1, .kv = 2}}, /* the qk-norm's input */
    },
    .n_sides = LLAMA_SIDES + 1,
    .side = {
        [LLAMA_RMS1_RSTD] = {"rms1_rstd", LLAMA_RMS1, SIDE_KEPT, {.one = 1}},
        [LLAMA_LSE] = {"lse", LLAMA_ATTY, SIDE_FOLLOWS, {.heads = 1}},
        [LLAMA_RMS2_RSTD] = {"rms2_rstd", LLAMA_RMS2, SIDE_KEPT, {.one = 1}},
        [LLAMA_QK_RSTD] = {"qk_rstd", LLAMA_QKV, SIDE_KEPT, {.heads = 1, .kv_heads = 1}},
    },
    .n_fwd = LLAMA_FWD_OPS,
    .fwd = {
        {"rms1_fwd", LLAMA_RMS1, 0, 0},
        {"qkv_fwd", LLAMA_QKR, T_(RMS1), 0},
        {"qknorm_rope_fwd", LLAMA_QKV, T_(QKR), 0}, /* qk-norm, then RoPE in place */
        {"attn_fwd", LLAMA_ATTY, T_(QKV), 0},
        {"wo_fwd", LLAMA_RES2, T_(ATTY), 0},
        {"resid1_fwd", LLAMA_RES2, T_(RES2), 0}, /* res2 += x */
        {"rms2_fwd", LLAMA_RMS2, T_(RES2), 0},
        {"gateup_fwd", LLAMA_GATEUP, T_(RMS2), 0},
        {"swiglu_fwd", LLAMA_SWI, T_(GATEUP), 0},
        {"down_fwd", BLOCK_OUT, T_(SWI), 1},
        {"resid2_fwd", BLOCK_OUT, T_(RES2), 1}, /* out += res2 */
    },
    .n_bwd = LLAMA_BWD_OPS,
    .bwd = {
        [LLAMA_BWD_DOWN] = {"down_bwd", T_(SWI)},
        [LLAMA_BWD_SWIGLU] = {"swiglu_bwd", T_(GATEUP)},
        [LLAMA_BWD_GATEUP] = {"gateup_bwd", T_(RMS2)},
        [LLAMA_BWD_RMS2] = {"rms2_bwd", T_(RES2)},
        [LLAMA_BWD_WO] = {"wo_bwd", T_(ATTY)},
        [LLAMA_BWD_ATTN] = {"attn_bwd", T_(QKV) | T_(ATTY)},
        [LLAMA_BWD_ROPE] = {"rope_qknorm_bwd", T_(QKR)}, /* d(qkv) in place, then the norm's */
        [LLAMA_BWD_QKV] = {"qkv_bwd", T_(RMS1)},
        [LLAMA_BWD_RMS1] = {"rms1_bwd", 0},
    },
    .selective = LLAMA_QKNORM_SELECTIVE, /* rms1, rms2, swiglu, qkv */
    /* no fused closing add + RMSNorm: each block norms its own input */
    .fuse_writes = 0,
    .fuse_reads = 0,
    .inexact_fused = 0, /* no fused epilogue */
    /* dbig: d(gateup) (2F) with d(swiglu) (F) beside it, SwiGLU's backward
     * reading the one and writing the other; then d(qkv) */
    .n_grad_big = 2,
    .grad_big = {{.ffn = 3}, {.q = 1, .kv = 2}}, /* the norm's backward: d(qkv) in place */
    .shape_defaults = llama_shape,
    .op_flops = llama_qknorm_op_flops,
    .bench_op = llama_bench_op, /* its qk-norm untimed: the RoPE op times the rotation */
    .table_floats = llama_rope_floats,
};
