/* tests/unit/model/test_schedule_exec.c — every kind of schedule, run by the
 * interpreter (gpt.c) on the cpu backend: the losses and every gradient are
 * bitwise identical to recompute 0's (memcmp), also after AdamW steps, and
 * the arenas' high-water mark equals the planner's prediction to the byte,
 * category by category. Modes: selective, 1 (also through gpt_init, the
 * CLI's path, and at odd shapes), 2 for every k, auto at budgets from its
 * minimum to mode 0's peak (with FLOP costs and with measured-like ones),
 * every one of the 128 tape kinds, and LayerNorms left unfused. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "model/gpt2_block.h"
#include "model/flops.h"
#include "model/gpt.h"
#include "model/opcost.h"
#include "model/planner.h"
#include "tests/lib/sched_runs.h"
#include "tests/lib/test_util.h"

/* 6 layers, C=32, NH=4, T=8, B=2: small, deep enough for auto to mix
 * tape kinds, re-forwards and held tapes. */
static GPTConfig cfg6(void)
{
    GPTConfig c = tu_tiny_config();
    c.num_layers = 6;
    return c;
}

/* Two AdamW steps at B=2, T=8. */
static const SchedShape SMALL = {2, 8, 2};

Test(schedule_exec, selective_and_mode_1_match_mode_0)
{
    GPTConfig cfg = cfg6();
    size_t n = config_num_params(&cfg);
    SchedRun ref = sched_runs_reference(&cfg, SMALL);
    static const int modes[] = {RECOMPUTE_SELECTIVE, RECOMPUTE_BLOCK};
    for (int i = 0; i < 2; i++) {
        Schedule s;
        char err[256];
        cr_assert_eq(schedule_build(&s, &GPT2_BLOCK, modes[i], 6, err, sizeof err), 0);
        SchedRun r = sched_runs_run(&s, 0, &cfg, SMALL);
        sched_runs_expect_same(&ref, &r, n, schedule_mode_name(modes[i]));
        sched_runs_drop(&r);
    }
    sched_runs_drop(&ref);
}

/* Mode 1 against mode 0 through gpt_init (the schedule it builds from the
 * mode), three AdamW steps: at the tiny shape (2 layers), and at odd
 * shapes (5 layers, C=40, T=7, B=3: nothing a multiple of a nice tile
 * size). */
static void expect_mode_1_is_mode_0(const GPTConfig *cfg, SchedShape sh)
{
    size_t n = config_num_params(cfg);
    SchedRun a = sched_runs_run(NULL, RECOMPUTE_NONE, cfg, sh);
    SchedRun b = sched_runs_run(NULL, RECOMPUTE_BLOCK, cfg, sh);
    sched_runs_expect_same(&a, &b, n, "mode 1 through gpt_init");
    sched_runs_drop(&a);
    sched_runs_drop(&b);
}

Test(schedule_exec, mode_1_through_gpt_init_matches_mode_0_tiny)
{
    GPTConfig c = tu_tiny_config();
    expect_mode_1_is_mode_0(&c, (SchedShape){2, 8, 3});
}

Test(schedule_exec, mode_1_through_gpt_init_matches_mode_0_odd_shapes)
{
    GPTConfig c = tu_tiny_config();
    c.num_layers = 5;
    c.channels = 40;
    c.num_heads = 4;
    c.max_seq_len = 7;
    expect_mode_1_is_mode_0(&c, (SchedShape){3, 7, 3});
}

Test(schedule_exec, segments_every_k_match_mode_0)
{
    GPTConfig cfg = cfg6();
    size_t n = config_num_params(&cfg);
    SchedRun ref = sched_runs_reference(&cfg, SMALL);
    for (int k = 1; k <= 6; k++) {
        Schedule s;
        char err[256], what[32];
        cr_assert_eq(schedule_build_segments(&s, &GPT2_BLOCK, 6, k, err, sizeof err), 0, "%s", err);
        SchedRun r = sched_runs_run(&s, 0, &cfg, SMALL);
        snprintf(what, sizeof what, "segments k=%d", k);
        sched_runs_expect_same(&ref, &r, n, what);
        sched_runs_drop(&r);
    }
    sched_runs_drop(&ref);
}

/* The LayerNorm fusions (fuse_next_ln: the next LayerNorm written by a
 * block's closing residual add) change no bit: the programs of modes 0,
 * selective, 1 and 2 (k=2) with every fusion off, against mode 0's with
 * them on. */
Test(schedule_exec, unfused_layernorms_match_fused)
{
    GPTConfig cfg = cfg6();
    size_t n = config_num_params(&cfg);
    SchedRun ref = sched_runs_reference(&cfg, SMALL);
    static const int modes[] = {RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_BLOCK,
                                RECOMPUTE_SEGMENTS};
    for (int i = 0; i < 4; i++) {
        Schedule s;
        char err[256];
        int rc = modes[i] == RECOMPUTE_SEGMENTS
                     ? schedule_build_segments(&s, &GPT2_BLOCK, 6, 2, err, sizeof err)
                     : schedule_build(&s, &GPT2_BLOCK, modes[i], 6, err, sizeof err);
        cr_assert_eq(rc, 0, "%s", err);
        int fused = 0;
        for (int k = 0; k < s.n_steps; k++) {
            fused += s.steps[k].fuse_next_ln;
            s.steps[k].fuse_next_ln = 0;
        }
        cr_assert_geq(fused, 6, "%s: the forward sweep fuses", schedule_mode_name(modes[i]));
        cr_assert_eq(schedule_validate(&s, err, sizeof err), 0, "%s", err);
        SchedRun r = sched_runs_run(&s, 0, &cfg, SMALL);
        sched_runs_expect_same(&ref, &r, n, schedule_mode_name(modes[i]));
        sched_runs_drop(&r);
    }
    sched_runs_drop(&ref);
}

/* Step k is a backward whose tape was written by a forward that overwrote
 * its own input in place: the tape was kept while x_l was not (the
 * solver's H problems), so x_l was recomputed before this backward. */
static int kept_without_input(const Schedule *s, int k)
{
    const ScheduleStep *b = &s->steps[k];
    if (b->kind != STEP_BACKWARD) return 0;
    for (int i = k - 1; i >= 0; i--) {
        const ScheduleStep *f = &s->steps[i];
        if (f->kind == STEP_FORWARD && f->tape_slot == b->tape_slot)
            return f->block == b->block && f->in_slot == f->out_slot;
    }
    return 0;
}

Test(schedule_exec, auto_at_many_budgets_matches_mode_0, .timeout = 600)
{
    GPTConfig cfg = cfg6();
    size_t n = config_num_params(&cfg);
    SchedRun ref = sched_runs_reference(&cfg, SMALL);
    /* with the cpu backend's attention scratch, which the model's plan holds */
    PlanInput in = {.cfg = cfg, .B = SMALL.B, .T = SMALL.T, .dtype = DTYPE_FP32,
                    .attn_scratch = gpt_attn_scratch_bytes(tu_cpu(), &cfg)};
    char err[512], desc[16], seen[32][16];
    int distinct = 0, held = 0, in_place = 0, selective = 0;
    Schedule s;
    AutoResult ar;
    cr_assert_eq(planner_auto(&in, 0, NULL, &s, &ar, err, sizeof err), 0, "%s", err);
    schedule_free(&s);
    size_t lo = ar.min_peak, hi = ref.peak;
    for (int i = 0; i <= 24; i++) {
        size_t budget = lo + (hi - lo) / 24 * (size_t)i;
        cr_assert_eq(planner_auto(&in, budget, NULL, &s, &ar, err, sizeof err), 0, "%s", err);
        cr_assert(ar.fits && ar.peak <= budget);
        schedule_describe(&s, desc, sizeof desc);
        int is_new = 1;
        for (int j = 0; j < distinct; j++) is_new &= strcmp(seen[j], desc) != 0;
        if (is_new && distinct < 32) strcpy(seen[distinct++], desc);
        for (int k = 0; k < s.n_steps; k++) {
            in_place |= s.steps[k].kind == STEP_FORWARD && s.steps[k].in_slot == s.steps[k].out_slot;
            held |= kept_without_input(&s, k);
        }
        selective |= schedule_count_tapes(&s, GPT2_SELECTIVE, NULL) > 0;
        size_t planned = ar.peak;
        SchedRun r = sched_runs_run(&s, 0, &cfg, SMALL);
        cr_assert_eq(r.peak, planned);
        char what[64];
        snprintf(what, sizeof what, "auto at %zu bytes (%s)", budget, desc);
        sched_runs_expect_same(&ref, &r, n, what);
        sched_runs_drop(&r);
    }
    cr_assert(held && in_place && selective, "coverage: held tape %d, in-place forward %d, "
              "selective tape %d", held, in_place, selective);
    cr_assert_geq(distinct, 5, "budgets should give several different schedules (got %d)",
                  distinct);
    sched_runs_drop(&ref);
}

/* Every one of the 128 tape kinds (tape.h), so every kind any frontier can
 * hold: mode 0's program with block l keeping a tape of kind kinds[l], 8
 * kinds per run; then the inputs-kept program with re-forwards into a
 * workspace tape of a partial kind (a forward into dropped tensors, then a
 * backward rebuilding them) for pairs of kinds. Each against mode 0 with
 * memcmp, and the arenas at the planner's bytes (run asserts). */
Test(schedule_exec, every_tape_kind_matches_mode_0, .timeout = 120)
{
    GPTConfig cfg = tu_tiny_config();
    cfg.num_layers = 8;
    cr_assert(block_desc_of(&cfg) == &GPT2_BLOCK && tape_kinds(&GPT2_BLOCK) == GPT2_KINDS);
    SchedRun ref = sched_runs_reference(&cfg, SMALL);
    sched_runs_expect_kinds_kept(&ref, &cfg, SMALL);
    sched_runs_expect_inputs_kept(&ref, &cfg, SMALL);
    sched_runs_drop(&ref);
}

/* Costs shaped like a CPU's: the FLOP counts, with the memory-bound ops
 * (LayerNorm, GELU, residual) 40 times dearer, read as nanoseconds. */
static OpCosts timed_costs(const GPTConfig *cfg)
{
    OpCosts oc;
    flops_op_costs(cfg, SMALL.B, SMALL.T, &oc);
    oc.unit = OPCOST_NS;
    static const int slow[] = {GPT2_FWD_LN1, GPT2_FWD_RESID1, GPT2_FWD_LN2, GPT2_FWD_GELU,
                               GPT2_FWD_RESID2};
    for (size_t i = 0; i < sizeof slow / sizeof slow[0]; i++) oc.fwd[slow[i]] *= 40;
    return oc;
}

/* --recompute auto with measured costs: the DP runs with a pair of
 * frontier kinds; at budgets from its minimum to mode 0's peak its
 * schedules use kinds other than full and selective, and each is bitwise
 * mode 0's, at the planned peak. */
Test(schedule_exec, timed_auto_at_many_budgets_matches_mode_0, .timeout = 600)
{
    GPTConfig cfg = cfg6();
    size_t n = config_num_params(&cfg);
    SchedRun ref = sched_runs_reference(&cfg, SMALL);
    OpCosts oc = timed_costs(&cfg);
    /* with the cpu backend's attention scratch, which the model's plan holds */
    PlanInput in = {.cfg = cfg, .B = SMALL.B, .T = SMALL.T, .dtype = DTYPE_FP32,
                    .attn_scratch = gpt_attn_scratch_bytes(tu_cpu(), &cfg)};
    char err[512], desc[16];
    int other_kinds = 0;
    Schedule s;
    AutoResult ar;
    cr_assert_eq(planner_auto(&in, 0, &oc, &s, &ar, err, sizeof err), 0, "%s", err);
    schedule_free(&s);
    size_t lo = ar.min_peak, hi = ref.peak;
    for (int i = 0; i <= 16; i++) {
        size_t budget = lo + (hi - lo) / 16 * (size_t)i;
        cr_assert_eq(planner_auto(&in, budget, &oc, &s, &ar, err, sizeof err), 0, "%s", err);
        cr_assert(ar.fits && ar.peak <= budget);
        for (int j = 0; j < s.n_tape_slots; j++)
            other_kinds |= s.tape_kind[j] != TAPE_FULL && s.tape_kind[j] != GPT2_SELECTIVE;
        size_t planned = ar.peak;
        SchedRun r = sched_runs_run(&s, 0, &cfg, SMALL);
        cr_assert_eq(r.peak, planned);
        char what[80];
        snprintf(what, sizeof what, "timed auto at %zu bytes (%s)", budget,
                 schedule_describe(&s, desc, sizeof desc));
        sched_runs_expect_same(&ref, &r, n, what);
        sched_runs_drop(&r);
    }
    cr_assert(other_kinds, "coverage: some schedule keeps a kind other than full and selective");
    sched_runs_drop(&ref);
}
