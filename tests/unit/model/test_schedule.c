/* tests/unit/model/test_schedule.c — schedule generators and the validator
 * (model/schedule.h): modes 0 and 1 keep their exact step programs, every
 * generator's output validates for 1..64 layers, and hand-broken programs
 * are rejected with the fault named. */
#include <criterion/criterion.h>
#include <string.h>

#include "model/gpt2_block.h"
#include "model/planner.h"
#include "model/schedule.h"
#include "model/solver.h"

static void expect_step(const ScheduleStep *st, int kind, int block, int in, int out, int tape)
{
    cr_assert(st->kind == kind && st->block == block && st->in_slot == in &&
                  st->out_slot == out && st->tape_slot == tape,
              "step (%d,%d,%d,%d,%d), want (%d,%d,%d,%d,%d)", st->kind, st->block, st->in_slot,
              st->out_slot, st->tape_slot, kind, block, in, out, tape);
}

/* The programs modes 0 and 1 had before schedules grew kinds, written out. */
Test(schedule, modes_0_and_1_are_unchanged)
{
    char err[256];
    for (int L = 1; L <= 9; L++) {
        Schedule s;
        cr_assert_eq(schedule_build(&s, &GPT2_BLOCK, RECOMPUTE_NONE, L, err, sizeof err), 0, "%s",
                     err);
        cr_assert(s.n_res_slots == L && s.n_res_stored == L && s.n_tape_slots == L &&
                  s.n_tape_stored == L && s.n_forward == L && s.n_steps == 2 * L &&
                  s.embed_slot == 0);
        for (int l = 0; l < L; l++) {
            expect_step(&s.steps[l], STEP_FORWARD, l, l, l == L - 1 ? SLOT_FINAL : l + 1, l);
            expect_step(&s.steps[L + l], STEP_BACKWARD, L - 1 - l, L - 1 - l, SLOT_NONE,
                        L - 1 - l);
            cr_assert_eq(s.tape_kind[l], TAPE_FULL);
        }
        schedule_free(&s);
        cr_assert_eq(schedule_build(&s, &GPT2_BLOCK, RECOMPUTE_BLOCK, L, err, sizeof err), 0, "%s",
                     err);
        cr_assert(s.n_res_slots == L && s.n_res_stored == L && s.n_tape_slots == 1 &&
                  s.n_tape_stored == 0 && s.n_forward == L && s.n_steps == 3 * L);
        for (int l = 0; l < L; l++) {
            expect_step(&s.steps[l], STEP_FORWARD, l, l, l == L - 1 ? SLOT_FINAL : l + 1, 0);
            int b = L - 1 - l;
            expect_step(&s.steps[L + 2 * l], STEP_FORWARD, b, b, SLOT_NONE, 0);
            expect_step(&s.steps[L + 2 * l + 1], STEP_BACKWARD, b, b, SLOT_NONE, 0);
        }
        cr_assert_eq(schedule_reforwards(&s), L);
        schedule_free(&s);
    }
}

static void expect_valid(const Schedule *s, const char *what, int L)
{
    char err[256];
    int rc = schedule_validate(s, err, sizeof err);
    cr_assert_eq(rc, 0, "%s, L=%d: %s", what, L, err);
}

Test(schedule, every_generated_schedule_validates_1_to_64_layers)
{
    char err[256];
    static const SolverCosts c = {1000, 700, 3, 0, TAPE_FULL, GPT2_SELECTIVE};
    SolverTable *t = solver_table_build(64, &GPT2_BLOCK, &c, -1, -1, err, sizeof err);
    cr_assert_not_null(t, "%s", err);
    for (int L = 1; L <= 64; L++) {
        Schedule s;
        static const int modes[] = {RECOMPUTE_NONE, RECOMPUTE_BLOCK, RECOMPUTE_SEGMENTS,
                                    RECOMPUTE_SELECTIVE};
        for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
            cr_assert_eq(schedule_build(&s, &GPT2_BLOCK, modes[m], L, err, sizeof err), 0, "%s",
                         err);
            expect_valid(&s, schedule_mode_name(modes[m]), L);
            schedule_free(&s);
        }
        for (int k = 1; k <= L; k++) {
            cr_assert_eq(schedule_build_segments(&s, &GPT2_BLOCK, L, k, err, sizeof err), 0, "%s",
                         err);
            expect_valid(&s, "segments", L);
            int nseg = (L + k - 1) / k;
            cr_assert(s.n_res_stored == nseg && s.n_res_slots == nseg + k - 1 &&
                      s.n_tape_slots == k && s.n_tape_stored == 0);
            cr_assert_eq(schedule_reforwards(&s), L, "each block re-run once");
            schedule_free(&s);
        }
        /* Auto: the DP's schedules over a spread of slot counts. */
        int counts[][3] = {{2, 1, 0}, {2, 0, 1}, {3, 1, 1}, {L / 2 + 1, 2, 0}, {L, 1, 0},
                           {L, 0, L / 3 + 1}, {L, L / 2, L / 2}, {L / 3 + 2, 3, 2}, {L, L, 0}};
        for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
            SolverChoice ch = {counts[i][0] > L ? L : counts[i][0], counts[i][1], counts[i][2],
                               0, 0};
            if (L == 1) ch.n_res = 1;
            if (solver_cost(t, L, ch.n_res - 1, ch.n_full, ch.n_sel) == SOLVER_INF) continue;
            cr_assert_eq(solver_schedule(t, L, &ch, &s, err, sizeof err), 0, "%s", err);
            expect_valid(&s, "auto", L);
            cr_assert_leq(s.n_res_slots, ch.n_res);
            cr_assert_leq(s.n_tape_slots, ch.n_full + ch.n_sel);
            schedule_free(&s);
        }
    }
    solver_table_free(t);
}

Test(schedule, segments_layout)
{
    char err[256];
    Schedule s;
    /* L = 7, k = 3: checkpoints x0, x3, x6 in slots 0..2, segment inputs in
     * slots 3, 4, tapes 0..2. */
    cr_assert_eq(schedule_build_segments(&s, &GPT2_BLOCK, 7, 3, err, sizeof err), 0, "%s", err);
    int want_fwd[7][4] = {{0, 0, 3, 0}, {1, 3, 4, 0}, {2, 4, 1, 0}, {3, 1, 3, 0},
                          {4, 3, 4, 0}, {5, 4, 2, 0}, {6, 2, SLOT_FINAL, 0}};
    for (int i = 0; i < 7; i++)
        expect_step(&s.steps[i], STEP_FORWARD, want_fwd[i][0], want_fwd[i][1], want_fwd[i][2],
                    want_fwd[i][3]);
    cr_assert_eq(s.n_forward, 7);
    /* last segment (block 6 alone), then blocks 3..5, then 0..2 */
    expect_step(&s.steps[7], STEP_FORWARD, 6, 2, SLOT_NONE, 0);
    expect_step(&s.steps[8], STEP_BACKWARD, 6, 2, SLOT_NONE, 0);
    expect_step(&s.steps[9], STEP_FORWARD, 3, 1, 3, 0);
    expect_step(&s.steps[10], STEP_FORWARD, 4, 3, 4, 1);
    expect_step(&s.steps[11], STEP_FORWARD, 5, 4, SLOT_NONE, 2);
    expect_step(&s.steps[12], STEP_BACKWARD, 5, 4, SLOT_NONE, 2);
    expect_step(&s.steps[13], STEP_BACKWARD, 4, 3, SLOT_NONE, 1);
    expect_step(&s.steps[14], STEP_BACKWARD, 3, 1, SLOT_NONE, 0);
    schedule_free(&s);
    cr_assert_neq(schedule_build_segments(&s, &GPT2_BLOCK, 7, 0, err, sizeof err), 0);
    cr_assert(strstr(err, "--checkpoint-every"), "%s", err);
    cr_assert_neq(schedule_build_segments(&s, &GPT2_BLOCK, 7, 8, err, sizeof err), 0);
    cr_assert_eq(schedule_default_checkpoint_every(48), 7);
    cr_assert_eq(schedule_default_checkpoint_every(12), 3);
    cr_assert_eq(schedule_default_checkpoint_every(6), 2);
    cr_assert_eq(schedule_default_checkpoint_every(1), 1);
}

Test(schedule, describe_what_each_block_keeps)
{
    char err[256], buf[80];
    Schedule s;
    cr_assert_eq(schedule_build(&s, &GPT2_BLOCK, RECOMPUTE_NONE, 4, err, sizeof err), 0);
    cr_assert_str_eq(schedule_describe(&s, buf, sizeof buf), "FFFF");
    schedule_free(&s);
    cr_assert_eq(schedule_build(&s, &GPT2_BLOCK, RECOMPUTE_SELECTIVE, 4, err, sizeof err), 0);
    cr_assert_str_eq(schedule_describe(&s, buf, sizeof buf), "SSSS");
    cr_assert_eq(schedule_count_tapes(&s, GPT2_SELECTIVE, NULL), 4);
    schedule_free(&s);
    cr_assert_eq(schedule_build(&s, &GPT2_BLOCK, RECOMPUTE_BLOCK, 4, err, sizeof err), 0);
    cr_assert_str_eq(schedule_describe(&s, buf, sizeof buf), "xxxx");
    schedule_free(&s);
    cr_assert_eq(schedule_build_segments(&s, &GPT2_BLOCK, 5, 2, err, sizeof err), 0);
    cr_assert_str_eq(schedule_describe(&s, buf, sizeof buf), "x-x-x");
    schedule_free(&s);
}

/* A small valid program to break: mode 1 on 3 layers, copied so steps can
 * be edited. */
static void mode1(Schedule *s)
{
    char err[256];
    cr_assert_eq(schedule_build(s, &GPT2_BLOCK, RECOMPUTE_BLOCK, 3, err, sizeof err), 0);
}

static void expect_rejected(Schedule *s, const char *needle)
{
    char err[256] = "";
    cr_assert_neq(schedule_validate(s, err, sizeof err), 0, "accepted; wanted '%s'", needle);
    cr_assert(strstr(err, needle), "message '%s' lacks '%s'", err, needle);
    schedule_free(s);
}

Test(schedule, rejects_broken_programs)
{
    Schedule s;
    /* steps of mode 1, L=3: F0 F1 F2 | F2' B2 F1' B1 F0' B0 */
    mode1(&s);
    s.steps[4] = s.steps[6]; /* B1 before B2 */
    expect_rejected(&s, "out of order");
    mode1(&s);
    s.steps[1].out_slot = 0; /* F1 writes x2 over x0 */
    expect_rejected(&s, "does not hold the input");
    mode1(&s);
    s.steps[4].tape_slot = 0, s.steps[3].kind = STEP_FORWARD, s.steps[3].block = 1;
    s.steps[3].in_slot = 1; /* re-forward of block 1 clobbers block 2's tape */
    expect_rejected(&s, "tape slot 0 does not hold block 2");
    mode1(&s);
    s.steps[2].out_slot = 2; /* last block does not write the final residual */
    expect_rejected(&s, "last block must write SLOT_FINAL");
    mode1(&s);
    s.steps[1].out_slot = SLOT_NONE; /* sweep drops x2 */
    expect_rejected(&s, "drops its output");
    mode1(&s);
    s.n_forward = 2; /* head before the last forward */
    expect_rejected(&s, "head runs before the final residual");
    mode1(&s);
    s.steps[0].tape_slot = 1; /* out of range */
    expect_rejected(&s, "out of range");
    mode1(&s);
    s.n_res_stored = 2; /* x2 is live across the head but labelled workspace */
    expect_rejected(&s, "labelled workspace");
    mode1(&s);
    s.n_tape_stored = 1; /* the tape is rewritten before it is read */
    expect_rejected(&s, "labelled stored");
    mode1(&s);
    s.tape_kind[0] = GPT2_KINDS; /* kinds are the 128 subsets of 7 tensors */
    expect_rejected(&s, "unknown kind");
    mode1(&s);
    s.n_steps -= 2; /* block 0 never back-propagated */
    expect_rejected(&s, "incomplete");
    /* a re-forward after the block's backward */
    mode1(&s);
    s.steps[7] = s.steps[5]; /* F1 re-forward placed after B1 */
    expect_rejected(&s, "after its backward");
}

Test(schedule, in_place_forward_is_valid_but_loses_the_input)
{
    char err[256];
    Schedule s;
    /* 2 slots, 1 tape, L=3: F0 r0>r1, F1 r1>r1 (in place), F2 r1>final |
     * B2, F0 r0>r1, F1 r1>none, B1, F0 r0>none, B0 */
    cr_assert_eq(schedule_init(&s, &GPT2_BLOCK, RECOMPUTE_AUTO, 3, 2, 1), 0);
    int prog[][5] = {{STEP_FORWARD, 0, 0, 1, 0},  {STEP_FORWARD, 1, 1, 1, 0},
                     {STEP_FORWARD, 2, 1, SLOT_FINAL, 0}, {STEP_BACKWARD, 2, 1, SLOT_NONE, 0},
                     {STEP_FORWARD, 0, 0, 1, 0},  {STEP_FORWARD, 1, 1, SLOT_NONE, 0},
                     {STEP_BACKWARD, 1, 1, SLOT_NONE, 0}, {STEP_FORWARD, 0, 0, SLOT_NONE, 0},
                     {STEP_BACKWARD, 0, 0, SLOT_NONE, 0}};
    for (int i = 0; i < 9; i++)
        schedule_push(&s, prog[i][0], prog[i][1], prog[i][2], prog[i][3], prog[i][4]);
    s.n_forward = 3;
    cr_assert_eq(schedule_finalize(&s, err, sizeof err), 0, "%s", err);
    cr_assert_eq(schedule_validate(&s, err, sizeof err), 0, "%s", err);
    cr_assert(s.n_res_stored == 2 && s.n_tape_stored == 1, "x0, x2 and block 2's tape live");
    cr_assert_eq(schedule_reforwards(&s), 3);
    /* now make B1 read x1 from slot 1 after x1 was advanced in place */
    s.steps[5].out_slot = 1; /* F1 writes x2 over x1 */
    s.steps[5].in_slot = 1;
    char e2[256];
    cr_assert_neq(schedule_validate(&s, e2, sizeof e2), 0);
    cr_assert(strstr(e2, "does not hold the input of block 1"), "%s", e2);
    schedule_free(&s);
}

Test(schedule, parse_mode)
{
    int m = -1;
    cr_assert(schedule_parse_mode("0", &m) == 0 && m == RECOMPUTE_NONE);
    cr_assert(schedule_parse_mode("1", &m) == 0 && m == RECOMPUTE_BLOCK);
    cr_assert(schedule_parse_mode("2", &m) == 0 && m == RECOMPUTE_SEGMENTS);
    cr_assert(schedule_parse_mode("selective", &m) == 0 && m == RECOMPUTE_SELECTIVE);
    cr_assert(schedule_parse_mode("auto", &m) == 0 && m == RECOMPUTE_AUTO);
    cr_assert_neq(schedule_parse_mode("3", &m), 0);
    cr_assert_neq(schedule_parse_mode("", &m), 0);
    cr_assert_neq(schedule_parse_mode("Auto", &m), 0);
    cr_assert_neq(schedule_parse_mode(NULL, &m), 0);
    char err[256];
    Schedule s;
    cr_assert_neq(schedule_build(&s, &GPT2_BLOCK, RECOMPUTE_AUTO, 4, err, sizeof err), 0);
    cr_assert(strstr(err, "--memory-budget"), "%s", err);
    cr_assert_neq(schedule_build(&s, &GPT2_BLOCK, 9, 4, err, sizeof err), 0);
    cr_assert(strstr(err, "unknown mode"), "%s", err);
    cr_assert_neq(schedule_build(&s, &GPT2_BLOCK, 0, 0, err, sizeof err), 0);
}

/* The steps that fuse the next LayerNorm into their closing residual add
 * (fuse_next_ln), as a string: 'f' fused, '.' not, '|' at the head. */
static void fusions(const Schedule *s, char *buf)
{
    int n = 0;
    for (int k = 0; k < s->n_steps; k++) {
        if (k == s->n_forward) buf[n++] = '|';
        buf[n++] = s->steps[k].fuse_next_ln ? 'f' : '.';
    }
    buf[n] = '\0';
}

static void expect_fusions(const Schedule *s, const char *want, const char *what)
{
    char got[256];
    fusions(s, got);
    cr_assert_str_eq(got, want, "%s: fusions %s, want %s", what, got, want);
}

/* Every forward that writes its output is followed by the next block's
 * forward from it, or is the last before the head: each fuses, with full
 * and selective tapes (selective drops LN1, not res2). Re-forwards that
 * stop at the GELU (out SLOT_NONE) and backwards never do. */
Test(schedule, layernorm_fusion_in_each_mode)
{
    char err[256];
    Schedule s;
    static const int modes[] = {RECOMPUTE_NONE, RECOMPUTE_SELECTIVE};
    for (int m = 0; m < 2; m++) {
        cr_assert_eq(schedule_build(&s, &GPT2_BLOCK, modes[m], 4, err, sizeof err), 0, "%s", err);
        expect_fusions(&s, "ffff|....", schedule_mode_name(modes[m]));
        schedule_free(&s);
    }
    cr_assert_eq(schedule_build(&s, &GPT2_BLOCK, RECOMPUTE_BLOCK, 4, err, sizeof err), 0, "%s",
                 err);
    expect_fusions(&s, "ffff|........", "mode 1");
    schedule_free(&s);
    /* L = 7, k = 3 (segments_layout's program): a re-run segment fuses
     * all but its last forward, which stops at the GELU */
    cr_assert_eq(schedule_build_segments(&s, &GPT2_BLOCK, 7, 3, err, sizeof err), 0, "%s", err);
    expect_fusions(&s, "fffffff|..ff....ff....", "segments k=3");
    schedule_free(&s);
    /* inputs kept: 1 full, 1 selective tape, blocks 0, 1 re-forwarded */
    cr_assert_eq(schedule_build_inputs_kept(&s, &GPT2_BLOCK, 4, 1, 1, TAPE_FULL, GPT2_SELECTIVE,
                                            err, sizeof err),
                 0, "%s", err);
    expect_fusions(&s, "ffff|......", "inputs kept");
    schedule_free(&s);
    for (int L = 1; L <= 12; L++)
        for (int k = 1; k <= L; k++) {
            cr_assert_eq(schedule_build_segments(&s, &GPT2_BLOCK, L, k, err, sizeof err), 0, "%s",
                         err);
            int fused = 0, nseg = (L + k - 1) / k;
            for (int i = 0; i < s.n_steps; i++) {
                const ScheduleStep *st = &s.steps[i];
                int want = i < s.n_forward || (st->kind == STEP_FORWARD && st->out_slot >= 0);
                cr_assert_eq(st->fuse_next_ln, want, "L=%d k=%d step %d", L, k, i);
                fused += st->fuse_next_ln;
            }
            cr_assert_eq(fused, L + L - nseg, "the sweep, and each segment but its last");
            schedule_free(&s);
        }
}

/* A dropped LN1 and a dropped res2 both live in the one tape workspace,
 * where they may share bytes (at offsets the schedule cannot know), so
 * block l's add does not write block l+1's LN1 when block l's tape drops
 * res2 and block l+1's drops LN1; LN_f (its own buffer) is always fused. */
Test(schedule, layernorm_fusion_follows_the_tape_kinds)
{
    char err[256];
    Schedule s;
    const int res2 = 1 << GPT2_RES2, ln1 = 1 << GPT2_LN1, all = GPT2_KINDS - 1;
    cr_assert_eq(schedule_build(&s, &GPT2_BLOCK, RECOMPUTE_NONE, 4, err, sizeof err), 0, "%s", err);
    uint32_t kinds[4] = {(uint32_t)res2, (uint32_t)ln1, GPT2_SELECTIVE, (uint32_t)all};
    memcpy(s.tape_kind, kinds, sizeof kinds);
    schedule_fuse_layernorms(&s);
    /* 0 -> 1: res2 then LN1 dropped; 1 -> 2: res2 kept; 2 -> 3: res2 kept */
    expect_fusions(&s, ".fff|....", "mixed kinds");
    cr_assert_eq(schedule_validate(&s, err, sizeof err), 0, "%s", err);
    for (int j = 0; j < 4; j++) s.tape_kind[j] = (uint32_t)all;
    schedule_fuse_layernorms(&s);
    expect_fusions(&s, "...f|....", "every tensor dropped");
    schedule_free(&s);
    /* the same with one workspace tape shared by every block (an inputs-
     * kept program whose blocks are all re-forwarded) */
    cr_assert_eq(schedule_build_inputs_kept(&s, &GPT2_BLOCK, 3, 0, 0, all, all, err, sizeof err), 0,
                 "%s", err);
    expect_fusions(&s, "..f|......", "one workspace tape, every tensor dropped");
    schedule_free(&s);
    cr_assert_eq(schedule_build_inputs_kept(&s, &GPT2_BLOCK, 3, 0, 0, GPT2_SELECTIVE,
                                            GPT2_SELECTIVE, err, sizeof err),
                 0, "%s", err);
    expect_fusions(&s, "fff|......", "one workspace tape, selective");
    schedule_free(&s);
}

static void expect_fusion_rejected(Schedule *s, int k)
{
    char err[256] = "";
    s->steps[k].fuse_next_ln = 1;
    cr_assert_neq(schedule_validate(s, err, sizeof err), 0, "a fusion at step %d accepted", k);
    cr_assert(strstr(err, "LayerNorm"), "%s", err);
    char want[32];
    snprintf(want, sizeof want, "step %d:", k);
    cr_assert(strstr(err, want), "%s", err);
    schedule_free(s);
}

Test(schedule, rejects_illegal_layernorm_fusions)
{
    char err[256];
    Schedule s;
    /* mode 1, L=3: F0 F1 F2 | F2' B2 F1' B1 F0' B0 */
    mode1(&s);
    expect_fusions(&s, "fff|......", "mode 1, L=3");
    expect_valid(&s, "mode 1", 3);
    expect_fusion_rejected(&s, 3); /* a re-forward that stops at the GELU has no add */
    mode1(&s);
    expect_fusion_rejected(&s, 4); /* a backward */
    /* block 0's tape drops res2, block 1's drops LN1: both in the workspace */
    cr_assert_eq(schedule_build(&s, &GPT2_BLOCK, RECOMPUTE_NONE, 3, err, sizeof err), 0, "%s", err);
    s.tape_kind[0] = 1 << GPT2_RES2;
    s.tape_kind[1] = 1 << GPT2_LN1;
    char e2[256] = "";
    cr_assert_neq(schedule_validate(&s, e2, sizeof e2), 0, "the flags of full tapes accepted");
    cr_assert(strstr(e2, "step 0:") && strstr(e2, "LayerNorm"), "%s", e2);
    schedule_fuse_layernorms(&s);
    expect_fusions(&s, ".ff|...", "res2 then LN1 dropped");
    expect_valid(&s, "after schedule_fuse_layernorms", 3);
    schedule_free(&s);
    /* a re-forward of the last block into the final residual, after the
     * head: valid, but LN_f is fused only before the head; and a forward
     * whose next step forwards another block, or reads another slot */
    cr_assert_eq(schedule_init(&s, &GPT2_BLOCK, RECOMPUTE_AUTO, 3, 3, 3), 0);
    int prog[][5] = {{STEP_FORWARD, 0, 0, 1, 0},          {STEP_FORWARD, 1, 1, 2, 1},
                     {STEP_FORWARD, 2, 2, SLOT_FINAL, 2}, {STEP_FORWARD, 2, 2, SLOT_FINAL, 2},
                     {STEP_BACKWARD, 2, 2, SLOT_NONE, 2}, {STEP_FORWARD, 0, 0, 1, 0},
                     {STEP_BACKWARD, 1, 1, SLOT_NONE, 1}, {STEP_BACKWARD, 0, 0, SLOT_NONE, 0}};
    for (int i = 0; i < 8; i++)
        schedule_push(&s, prog[i][0], prog[i][1], prog[i][2], prog[i][3], prog[i][4]);
    s.n_forward = 3;
    cr_assert_eq(schedule_finalize(&s, err, sizeof err), 0, "%s", err);
    expect_fusions(&s, "fff|.....", "finalize decides the fusions");
    expect_valid(&s, "re-forwards into the final and a live slot", 3);
    Schedule c = s;
    c.steps = malloc(sizeof *c.steps * (size_t)s.n_steps);
    c.tape_kind = malloc(sizeof *c.tape_kind * (size_t)s.n_tape_slots);
    memcpy(c.steps, s.steps, sizeof *c.steps * (size_t)s.n_steps);
    memcpy(c.tape_kind, s.tape_kind, sizeof *c.tape_kind * (size_t)s.n_tape_slots);
    expect_fusion_rejected(&c, 3); /* LN_f after the head */
    expect_fusion_rejected(&s, 5); /* F0' is followed by a backward */
}
