/* tests/unit/model/test_block_desc.c — block descriptions (model/block_desc.h)
 * and what is derived from them. References: GPT-2's tables as tape.c
 * wrote them out before the description existed (the forward ops that
 * write and last read each tensor, the t-1 rebuild chain, the widths),
 * hand-made faulty descriptions, and a made-up block of nine tensors with
 * a gate and an up projection read by one op (a rebuild graph, not a
 * chain). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "model/block_desc.h"
#include "model/gpt2_block.h"

#define B_(t) TENSOR_BIT(t)

Test(block_desc, gpt2_reproduces_the_old_tables)
{
    char err[256];
    const BlockDesc *d = &GPT2_BLOCK;
    cr_assert_eq(block_desc_check(d, err, sizeof err), 0, "%s", err);
    GPTConfig cfg = {.num_layers = 2, .channels = 48, .num_heads = 4, .max_seq_len = 16};
    cr_assert_eq(block_desc_of(&cfg), d);
    /* tape.c's FWD_WRITE and FWD_LAST_READ over the ten forward ops */
    static const int write[GPT2_TENSORS] = {0, 1, 2, 3, 5, 6, 7};
    static const int last_read[GPT2_TENSORS] = {1, 2, 3, 9, 6, 7, 8};
    static const int width[GPT2_TENSORS] = {1, 3, 1, 1, 1, 4, 4}; /* units of C */
    BlockShape sh;
    block_shape(d, &cfg, 3, 5, &sh);
    cr_assert(sh.N == 15 && sh.C == 48 && sh.NH == 4 && sh.NKV == 4 && sh.hs == 12 &&
              sh.F == 192);
    for (int t = 0; t < GPT2_TENSORS; t++) {
        cr_assert_eq(block_first_write(d, t), write[t], "%s", d->tensor[t].name);
        cr_assert_eq(block_last_read(d, t), last_read[t], "%s", d->tensor[t].name);
        cr_assert_eq(block_inputs(d, t), t > 0 ? B_(t - 1) : 0u, "the t-1 chain: %s",
                     d->tensor[t].name);
        cr_assert_eq(block_dim(&sh, d->tensor[t].width), (size_t)width[t] * 48);
    }
    cr_assert_eq(block_makers(d, GPT2_RES2), (1u << 3) | (1u << 4), "attproj and + x");
    cr_assert_eq(d->selective, B_(GPT2_LN1) | B_(GPT2_LN2) | B_(GPT2_GELU));
    cr_assert_eq(d->n_bwd, GPT2_BWD_OPS);
    static const int side_width[GPT2_SIDES] = {1, 1, 4, 1, 1}; /* LSE: NH per row */
    for (int i = 0; i < GPT2_SIDES; i++)
        cr_assert_eq(block_dim(&sh, d->side[i].width), (size_t)side_width[i]);
    cr_assert(d->side[GPT2_LSE].policy == SIDE_FOLLOWS && d->side[GPT2_LSE].tensor == GPT2_ATTY);
}

Test(block_desc, check_names_the_fault)
{
    char err[256];
    BlockDesc d = GPT2_BLOCK;
    d.tensor[GPT2_LN2].letter = 'q';
    cr_assert_neq(block_desc_check(&d, err, sizeof err), 0);
    cr_assert(strstr(err, "share the letter"), "%s", err);
    d = GPT2_BLOCK;
    d.fwd[1].reads |= B_(GPT2_FCH); /* qkv reads fch, made later */
    cr_assert_neq(block_desc_check(&d, err, sizeof err), 0);
    cr_assert(strstr(err, "made after it") || strstr(err, "before it is made"), "%s", err);
    d = GPT2_BLOCK;
    d.fwd[8].out_only = 0; /* fcproj writes the output in a re-forward */
    cr_assert_neq(block_desc_check(&d, err, sizeof err), 0);
    cr_assert(strstr(err, "output-only"), "%s", err);
    d = GPT2_BLOCK;
    d.selective |= B_(GPT2_TENSORS);
    cr_assert_neq(block_desc_check(&d, err, sizeof err), 0);
    cr_assert(strstr(err, "role"), "%s", err);
    d = GPT2_BLOCK;
    d.n_tensors = BLOCK_MAX_TENSORS + 1;
    cr_assert_neq(block_desc_check(&d, err, sizeof err), 0);
}

/* A made-up block of nine tensors: norm, qkv, a rotated copy, attention
 * (with a log-sum-exp that follows it), the mid residual, norm, a gate and
 * an up projection (both read the norm), and their product, which reads
 * both. Widths in C and F. */
enum { W_N1, W_QKV, W_ROT, W_ATT, W_RES, W_N2, W_GATE, W_UP, W_SWI, W_TENSORS };

static void wide_shape(BlockShape *sh)
{
    sh->NKV = sh->NH / 2;
    sh->F = 3 * sh->C;
}

static const BlockDesc WIDE = {
    .family = "test-wide",
    .n_tensors = W_TENSORS,
    .tensor = {
        {"n1", 'n', {.c = 1}}, {"qkv", 'q', {.q = 1, .kv = 2}}, {"rot", 'o', {.q = 1, .kv = 2}},
        {"att", 'a', {.c = 1}}, {"res", 'r', {.c = 1}}, {"n2", 'm', {.c = 1}},
        {"gate", 'g', {.ffn = 1}}, {"up", 'u', {.ffn = 1}}, {"swi", 's', {.ffn = 1}},
    },
    .n_sides = 3,
    .side = {
        {"n1_rstd", W_N1, SIDE_KEPT, {.one = 1}},
        {"lse", W_ATT, SIDE_FOLLOWS, {.heads = 1}},
        {"n2_rstd", W_N2, SIDE_KEPT, {.one = 1}},
    },
    .n_fwd = 12,
    .fwd = {
        {"n1", W_N1, 0, 0},
        {"qkv", W_QKV, B_(W_N1), 0},
        {"rot", W_ROT, B_(W_QKV), 0},
        {"att", W_ATT, B_(W_ROT), 0},
        {"proj", W_RES, B_(W_ATT), 0},
        {"add1", W_RES, B_(W_RES), 0},
        {"n2", W_N2, B_(W_RES), 0},
        {"gate", W_GATE, B_(W_N2), 0},
        {"up", W_UP, B_(W_N2), 0},
        {"swi", W_SWI, B_(W_GATE) | B_(W_UP), 0},
        {"down", BLOCK_OUT, B_(W_SWI), 1},
        {"add2", BLOCK_OUT, B_(W_RES), 1},
    },
    .n_bwd = 9,
    .bwd = {
        {"down", B_(W_SWI)}, {"swi", B_(W_GATE) | B_(W_UP)}, {"gate_up", B_(W_N2)},
        {"n2", B_(W_RES)}, {"proj", B_(W_ATT)}, {"att", B_(W_ROT) | B_(W_ATT)},
        {"rot", 0}, {"qkv", B_(W_N1)}, {"n1", 0},
    },
    .selective = B_(W_N1) | B_(W_N2) | B_(W_GATE) | B_(W_UP) | B_(W_SWI),
    .fuse_writes = B_(W_N1),
    .fuse_reads = B_(W_RES),
    .shape_defaults = wide_shape,
};

static BlockShape wide_at(size_t B, size_t T)
{
    GPTConfig cfg = {.num_layers = 4, .channels = 64, .num_heads = 4, .max_seq_len = 64};
    BlockShape sh;
    block_shape(&WIDE, &cfg, B, T, &sh);
    return sh;
}

Test(block_desc, a_rebuild_graph_with_two_inputs)
{
    char err[256];
    cr_assert_eq(block_desc_check(&WIDE, err, sizeof err), 0, "%s", err);
    cr_assert_eq(block_inputs(&WIDE, W_SWI), B_(W_GATE) | B_(W_UP));
    cr_assert_eq(block_inputs(&WIDE, W_UP), B_(W_N2));
    BlockShape sh = wide_at(2, 8);
    cr_assert(sh.NKV == 2 && sh.hs == 16 && sh.F == 192);
    cr_assert_eq(block_dim(&sh, WIDE.tensor[W_QKV].width), (size_t)(64 + 2 * 2 * 16), "GQA");
}
