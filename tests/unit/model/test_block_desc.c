/* tests/unit/model/test_block_desc.c — block descriptions (model/block_desc.h)
 * and what tape.c derives from them. References: GPT-2's tables as tape.c
 * wrote them out before the description existed (the forward ops that
 * write and last read each tensor, the t-1 rebuild chain, the widths),
 * hand-made faulty descriptions, and a made-up block of nine tensors with
 * a gate and an up projection read by one op (a rebuild graph, not a
 * chain), carried through tape layouts, schedules and the solver with
 * kinds past one byte. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "model/block_desc.h"
#include "model/gpt2_block.h"
#include "model/opcost.h"
#include "model/schedule.h"
#include "model/solver.h"
#include "model/tape.h"

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
    char name[BLOCK_MAX_TENSORS + 1];
    cr_assert_str_eq(tape_kind_name(d, TAPE_FULL, name), "1qar2fg");
    for (int t = 0; t < GPT2_TENSORS; t++) {
        cr_assert_eq(block_first_write(d, t), write[t], "%s", d->tensor[t].name);
        cr_assert_eq(block_last_read(d, t), last_read[t], "%s", d->tensor[t].name);
        cr_assert_eq(block_inputs(d, t), t > 0 ? B_(t - 1) : 0u, "the t-1 chain: %s",
                     d->tensor[t].name);
        cr_assert_eq(tape_tensor_elems(d, t, &sh), (size_t)width[t] * 15 * 48);
    }
    cr_assert_eq(block_makers(d, GPT2_RES2), (1u << 3) | (1u << 4), "attproj and + x");
    cr_assert_eq(d->selective, B_(GPT2_LN1) | B_(GPT2_LN2) | B_(GPT2_GELU));
    cr_assert_eq(d->n_bwd, GPT2_BWD_OPS);
    cr_assert_eq(block_grad_big(d, &sh), (size_t)4 * 48, "dbig: (N,4C)");
    /* the f32 part: ln1 mean, rstd, LSE (B*NH*T), ln2 mean, rstd */
    TapeLayout tl;
    tape_layout(&tl, d, TAPE_FULL, &sh, 4);
    cr_assert(tl.side[GPT2_LN1_MEAN] == 0 && tl.side[GPT2_LN1_RSTD] == 15 &&
              tl.side[GPT2_LSE] == 30 && tl.side[GPT2_LN2_MEAN] == 30 + 60 &&
              tl.side[GPT2_LN2_RSTD] == 105 && tl.f32_elems == 120);
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
    cr_assert_eq(tape_tensor_elems(&WIDE, W_QKV, &sh), (size_t)(64 + 2 * 2 * 16) * 16, "GQA");
    /* everything dropped: the whole graph before the first backward op,
     * each input before what reads it */
    int out[BLOCK_MAX_TENSORS];
    TensorSet built = 0;
    int all = tape_kinds(&WIDE) - 1;
    cr_assert_eq(tape_rebuilds_before(&WIDE, all, 0, &built, out), W_TENSORS);
    for (int t = 0; t < W_TENSORS; t++) cr_assert_eq(out[t], t);
    /* gate and up dropped, n2 kept: both before swi's backward, none twice */
    built = 0;
    int k = (int)(B_(W_GATE) | B_(W_UP));
    cr_assert_eq(tape_rebuilds_before(&WIDE, k, 0, &built, out), 0);
    cr_assert_eq(tape_rebuilds_before(&WIDE, k, 1, &built, out), 2);
    cr_assert(out[0] == W_GATE && out[1] == W_UP);
    cr_assert_eq(tape_rebuilds_before(&WIDE, k, 2, &built, out), 0);
    /* gate, up and swi are alive together (swi's rebuild reads both): in
     * the workspace, three disjoint (N,F) ranges; and the LSE follows att */
    TapeLayout tl;
    k = (int)(B_(W_GATE) | B_(W_UP) | B_(W_SWI) | B_(W_ATT));
    tape_layout(&tl, &WIDE, k, &sh, 4);
    size_t f = 192 * 16 * 4;
    size_t at[3] = {tl.ws[W_GATE], tl.ws[W_UP], tl.ws[W_SWI]};
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            cr_assert(at[i] + f <= at[j] || at[j] + f <= at[i], "items %d and %d overlap", i, j);
    cr_assert_eq(tl.side[1], TAPE_IN_WORKSPACE);
    cr_assert(tl.side[0] == 0 && tl.side[2] == 16 && tl.f32_elems == 32);
    cr_assert_geq(tl.ws_bytes, 3 * f);
    char name[BLOCK_MAX_TENSORS + 1];
    cr_assert_str_eq(tape_kind_name(&WIDE, k, name), "nqo-rm---");
    cr_assert_eq(tape_kind_parse(&WIDE, name), k);
}

/* Kinds of nine tensors need more than a byte: the schedule, its
 * validator, its description and the solver carry them whole. */
Test(block_desc, kinds_past_one_byte_through_schedules_and_the_solver)
{
    char err[256], desc[16];
    Schedule s;
    int sel = (int)WIDE.selective, hi = (int)(B_(W_SWI) | B_(W_ATT)); /* both >= 256 */
    cr_assert(sel >= 256 && hi >= 256);
    cr_assert_eq(schedule_build(&s, &WIDE, RECOMPUTE_SELECTIVE, 4, err, sizeof err), 0, "%s", err);
    cr_assert_eq(schedule_validate(&s, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(schedule_describe(&s, desc, sizeof desc), "SSSS");
    /* the next n1 dropped but this res kept: every closing add fuses */
    for (int k = 0; k < s.n_forward; k++) cr_assert_eq(s.steps[k].fuse_next_ln, 1, "step %d", k);
    /* n1 and res both dropped (the fusion roles): only LN_f */
    for (int j = 0; j < s.n_tape_slots; j++) s.tape_kind[j] = B_(W_N1) | B_(W_RES) | B_(W_SWI);
    schedule_fuse_layernorms(&s);
    for (int k = 0; k < s.n_forward - 1; k++) cr_assert_eq(s.steps[k].fuse_next_ln, 0, "step %d", k);
    cr_assert_eq(s.steps[s.n_forward - 1].fuse_next_ln, 1, "LN_f");
    cr_assert_eq(schedule_validate(&s, err, sizeof err), 0, "%s", err);
    schedule_free(&s);
    cr_assert_eq(schedule_build_inputs_kept(&s, &WIDE, 4, 2, 1, hi, sel, err, sizeof err), 0,
                 "%s", err);
    cr_assert_eq(schedule_validate(&s, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(schedule_describe(&s, desc, sizeof desc), "xSAA");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    schedule_print(f, &s, 0);
    fclose(f);
    cr_assert(strstr(buf, "A: a tape of kind nqo-rmgu-"), "%s", buf);
    free(buf);
    s.tape_kind[0] = (uint32_t)tape_kinds(&WIDE);
    cr_assert_neq(schedule_validate(&s, err, sizeof err), 0);
    cr_assert(strstr(err, "unknown kind 512"), "%s", err);
    schedule_free(&s);
    cr_assert_neq(schedule_build_inputs_kept(&s, &WIDE, 4, 2, 1, 512, sel, err, sizeof err), 0);
    /* the solver writes the kinds it was given, whole */
    SolverCosts c = {100, 70, 9, 3, hi, sel};
    SolverTable *t = solver_table_build(4, &WIDE, &c, -1, -1, err, sizeof err);
    cr_assert_not_null(t, "%s", err);
    SolverChoice ch = {2, 1, 1, 0, 0};
    cr_assert_eq(solver_schedule(t, 4, &ch, &s, err, sizeof err), 0, "%s", err);
    cr_assert_eq(schedule_validate(&s, err, sizeof err), 0, "%s", err);
    int n_hi = 0, n_sel = 0;
    for (int j = 0; j < s.n_tape_slots; j++) {
        n_hi += s.tape_kind[j] == (uint32_t)hi;
        n_sel += s.tape_kind[j] == (uint32_t)sel;
    }
    cr_assert(n_hi + n_sel == s.n_tape_slots && s.n_tape_slots >= 1, "%d hi, %d sel of %d",
              n_hi, n_sel, s.n_tape_slots);
    schedule_free(&s);
    c.full_kind = 512;
    cr_assert_null(solver_table_build(4, &WIDE, &c, -1, -1, err, sizeof err));
    solver_table_free(t);
}

/* A family's op costs need no op-cost code of their own: the made-up block
 * is priced by its description's ops, named as it names them, a tensor
 * costing the ops that make it (res: proj and add1), the two tensors past
 * GPT-2's seven (up, swi) included. */
Test(block_desc, op_costs_read_the_description)
{
    OpCosts oc;
    opcost_init(&oc, &WIDE, OPCOST_NS);
    cr_assert_eq(opcost_n_ops(&oc), 12 + 9 + OP_COUNT);
    for (int op = 0; op < opcost_n_ops(&oc); op++) *opcost_at(&oc, op) = 1LL << op;
    cr_assert_str_eq(opcost_op_name(&oc, 4), "proj");
    cr_assert_str_eq(opcost_op_name(&oc, 12 + 2), "gate_up");
    cr_assert_str_eq(opcost_op_name(&oc, 12 + 9 + OP_ADAMW), "adamw");
    cr_assert_eq(oc.c[OP_HEAD], 1LL << (12 + 9 + OP_HEAD));
    cr_assert_eq(opcost_tensor(&oc, W_RES), (1 << 4) + (1 << 5));
    cr_assert_eq(opcost_tensor(&oc, W_SWI), 1 << 9);
    cr_assert_eq(opcost_block_fwd(&oc), (1 << 12) - 1);
    cr_assert_eq(opcost_block_fwd_last(&oc), (1 << 10) - 1, "down and add2 are output-only");
    cr_assert_eq(opcost_block_bwd(&oc), ((1LL << 21) - 1) - ((1 << 12) - 1));
    cr_assert_eq(opcost_rebuild(&oc, B_(W_UP) | B_(W_SWI) | B_(W_N1)), (1 << 8) + (1 << 9) + 1);
}