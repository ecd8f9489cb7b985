/* tests/unit/model/test_plan_choose.c — planner_choose's verdicts (model/plan_choose.h),
 * with no CLI object: a fixed mode that fits, one over the device budget, one over the
 * host budget (checked first), auto with nothing that fits, segments' default k, the
 * flags' faults (exit 2), --plan's dry run of auto with unweighed offload, and the
 * predicted step. Each figure is checked against one computed another way: by hand for
 * the tiny shape, or by the generators, planner_plan, planner_auto and opcost_step
 * called directly. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "model/gpt2_block.h"
#include "model/flops.h"
#include "model/opcost.h"
#include "model/plan_choose.h"
#include "model/planner.h"

/* Shape: L=4, C=8, NH=2, Vp=128, B=2, T=4, fp32 (test_planner_offload.c's): one
 * residual slot N*C*4 = 256 B, a full tape 4096 B, params, grads, AdamW m and v 18688 B
 * each, scratch 3328, head 4096. */
#define FIXED (4 * 18688 + 3328 + 4096)
#define MODE0_TOTAL (FIXED + 4 * 256 + 4 * 4096) /* 4 inputs, 4 full tapes stored */
#define MODE1_TOTAL (FIXED + 4 * 256 + 4096)     /* 4 inputs stored, 1 tape of workspace */
#define MODE1_HOST (4 * 256)                     /* --offload checkpoints: the 4 inputs */

static PlanRequest request(int mode, int offload)
{
    PlanRequest rq = {.mode = mode, .grad_accum = 1,
                      .in = {.cfg = {.max_seq_len = 16, .vocab_size = 100, .padded_vocab = 128,
                                     .num_layers = 4, .num_heads = 2, .channels = 8},
                             .B = 2, .T = 4, .dtype = DTYPE_FP32, .offload = offload}};
    return rq;
}

static MemoryPlan plan_of(const PlanInput *in, int mode, int k)
{
    MemoryPlan p;
    Schedule s;
    char err[256];
    int rc = k ? schedule_build_segments(&s, &GPT2_BLOCK, in->cfg.num_layers, k, err, sizeof err)
               : schedule_build(&s, &GPT2_BLOCK, mode, in->cfg.num_layers, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    planner_plan(in, &s, &p);
    schedule_free(&s);
    return p;
}

/* Every op 10 us; copies at bw bytes/s (0: the copy engine not measured). */
static OpCosts costs(long long bw)
{
    OpCosts oc = {.unit = OPCOST_NS, .reps = 5, .copy_bw = bw};
    for (int op = 0; op < opcost_n_ops(&oc); op++) *opcost_at(&oc, op) = 10000;
    return oc;
}

Test(plan_choose, fixed_fits)
{
    PlanRequest rq = request(RECOMPUTE_BLOCK, 0);
    rq.budget = MODE1_TOTAL;
    rq.budget_given = 1;
    Schedule s;
    MemoryPlan p;
    PlanVerdict v;
    char err[256] = "";
    cr_assert_eq(planner_choose(&rq, NULL, &s, &p, &v, err, sizeof err), 0, "%s", err);
    cr_expect(v.fits);
    cr_expect_eq(v.limit, PLAN_FITS);
    cr_expect_eq(s.mode, RECOMPUTE_BLOCK);
    cr_expect_eq(p.total, MODE1_TOTAL, "%zu", p.total);
    cr_expect_eq(p.total, plan_of(&rq.in, RECOMPUTE_BLOCK, 0).total);
    cr_expect_eq(v.needed, (size_t)MODE1_TOTAL);
    cr_expect_eq(v.allowed, (size_t)MODE1_TOTAL);
    FlopCounts f;
    flops_count(&rq.in.cfg, 2, 4, &f);
    cr_expect_eq(v.step_flops, f.step);
    cr_expect_eq(v.step_ns, -1, "FLOP costs predict no time");
    schedule_free(&s);
}

Test(plan_choose, memory_budget_exceeded)
{
    PlanRequest rq = request(RECOMPUTE_NONE, 0);
    rq.budget = MODE0_TOTAL - 1;
    rq.budget_given = 1;
    Schedule s;
    MemoryPlan p;
    PlanVerdict v;
    char err[256] = "";
    cr_assert_eq(planner_choose(&rq, NULL, &s, &p, &v, err, sizeof err), 0, "%s", err);
    cr_expect(!v.fits);
    cr_expect_eq(v.limit, PLAN_OVER_DEVICE);
    cr_expect_eq(v.needed, (size_t)MODE0_TOTAL, "%zu", v.needed);
    cr_expect_eq(v.needed, plan_of(&rq.in, RECOMPUTE_NONE, 0).total);
    cr_expect_eq(v.allowed, (size_t)MODE0_TOTAL - 1);
    cr_expect_eq(p.total, v.needed, "the plan is there to print");
    schedule_free(&s);

    rq.budget = MODE0_TOTAL; /* to the byte */
    cr_assert_eq(planner_choose(&rq, NULL, &s, &p, &v, err, sizeof err), 0, "%s", err);
    cr_expect(v.fits);
    schedule_free(&s);

    rq.budget = 1; /* a fixed mode is held to a budget only when given */
    rq.budget_given = 0;
    cr_assert_eq(planner_choose(&rq, NULL, &s, &p, &v, err, sizeof err), 0, "%s", err);
    cr_expect(v.fits);
    cr_expect_eq(v.allowed, 0);
    schedule_free(&s);
}

Test(plan_choose, host_budget_exceeded)
{
    PlanRequest rq = request(RECOMPUTE_BLOCK, OFFLOAD_CHECKPOINTS);
    rq.in.host_budget = MODE1_HOST - 1;
    rq.host_budget_given = 1;
    rq.budget = 1; /* over the device budget too: the host's is checked first */
    rq.budget_given = 1;
    Schedule s;
    MemoryPlan p;
    PlanVerdict v;
    char err[256] = "";
    cr_assert_eq(planner_choose(&rq, NULL, &s, &p, &v, err, sizeof err), 0, "%s", err);
    cr_expect_eq(v.limit, PLAN_OVER_HOST);
    cr_expect_eq(v.needed, (size_t)MODE1_HOST, "%zu", v.needed);
    cr_expect_eq(v.needed, plan_of(&rq.in, RECOMPUTE_BLOCK, 0).host_total);
    cr_expect_eq(v.allowed, (size_t)MODE1_HOST - 1);
    schedule_free(&s);

    rq.in.host_budget = 0; /* --host-budget 0 refuses any host tier */
    cr_assert_eq(planner_choose(&rq, NULL, &s, &p, &v, err, sizeof err), 0, "%s", err);
    cr_expect_eq(v.limit, PLAN_OVER_HOST);
    schedule_free(&s);

    rq.in.host_budget = MODE1_HOST; /* fits the host: now the device budget fails */
    cr_assert_eq(planner_choose(&rq, NULL, &s, &p, &v, err, sizeof err), 0, "%s", err);
    cr_expect_eq(v.limit, PLAN_OVER_DEVICE);
    cr_expect_eq(v.needed, plan_of(&rq.in, RECOMPUTE_BLOCK, 0).total);
    schedule_free(&s);
}

Test(plan_choose, auto_fits_and_no_fit)
{
    PlanRequest rq = request(RECOMPUTE_AUTO, 0);
    rq.budget = MODE1_TOTAL;
    Schedule s, sa;
    MemoryPlan p, pa;
    PlanVerdict v;
    AutoResult r;
    char err[256] = "";
    cr_assert_eq(planner_choose(&rq, NULL, &s, &p, &v, err, sizeof err), 0, "%s", err);
    cr_assert_eq(planner_auto(&rq.in, rq.budget, NULL, &sa, &r, err, sizeof err), 0, "%s", err);
    planner_plan(&rq.in, &sa, &pa);
    cr_expect(v.fits);
    cr_expect_eq(v.autor.peak, r.peak);
    cr_expect_eq(p.total, pa.total);
    cr_expect_eq(v.needed, pa.total);
    cr_expect_eq(v.allowed, (size_t)MODE1_TOTAL);
    cr_expect(p.total <= MODE1_TOTAL);
    schedule_free(&s);
    schedule_free(&sa);

    rq.budget = FIXED; /* not even the fixed bytes */
    cr_assert_eq(planner_choose(&rq, NULL, &s, &p, &v, err, sizeof err), 0, "%s", err);
    cr_assert_eq(planner_auto(&rq.in, rq.budget, NULL, &sa, &r, err, sizeof err), 0, "%s", err);
    cr_expect(!v.fits);
    cr_expect_eq(v.limit, PLAN_AUTO_NO_FIT);
    cr_expect_eq(v.needed, r.min_peak, "%zu vs %zu", v.needed, r.min_peak);
    cr_expect_eq(v.allowed, (size_t)FIXED);
    cr_expect(v.needed > FIXED && v.needed <= MODE1_TOTAL, "%zu", v.needed);
    cr_expect_eq(s.n_steps, sa.n_steps, "the smallest-peak schedule, to print");
    schedule_free(&s);
    schedule_free(&sa);
}

Test(plan_choose, segments_default_checkpoint_every)
{
    PlanRequest rq = request(RECOMPUTE_SEGMENTS, 0);
    Schedule s;
    MemoryPlan p;
    PlanVerdict v;
    char err[256] = "";
    int k = schedule_default_checkpoint_every(4);
    cr_assert_eq(k, 2); /* round(sqrt(4)) */
    cr_assert_eq(planner_choose(&rq, NULL, &s, &p, &v, err, sizeof err), 0, "%s", err);
    cr_expect_eq(s.checkpoint_every, 2);
    cr_expect_eq(p.total, plan_of(&rq.in, 0, 2).total);
    /* 2 checkpoints stored; 1 input and 2 full tapes of workspace */
    cr_expect_eq(p.total, FIXED + 2 * 256 + 1 * 256 + 2 * 4096, "%zu", p.total);
    schedule_free(&s);

    rq.checkpoint_every = 4;
    cr_assert_eq(planner_choose(&rq, NULL, &s, &p, &v, err, sizeof err), 0, "%s", err);
    cr_expect_eq(s.checkpoint_every, 4);
    cr_expect_eq(p.total, plan_of(&rq.in, 0, 4).total);
    schedule_free(&s);

    rq.checkpoint_every = 5; /* past the layer count: the flags' fault */
    cr_expect_eq(planner_choose(&rq, NULL, &s, &p, &v, err, sizeof err), 2);
    cr_expect_str_eq(err, "--checkpoint-every: must be in 1..4 (the layer count); got 5");
}

/* auto with --offload checkpoints and no copy costs: a run refuses it (exit 2); --plan
 * chooses as if the inputs stayed on the device and plans them offloaded. */
Test(plan_choose, auto_offload_unweighed)
{
    PlanRequest rq = request(RECOMPUTE_AUTO, OFFLOAD_CHECKPOINTS);
    rq.budget = MODE0_TOTAL;
    OpCosts oc = costs(0);
    Schedule s, sa;
    MemoryPlan p, pa;
    PlanVerdict v;
    AutoResult r;
    char err[512] = "";
    cr_expect_eq(planner_choose(&rq, NULL, &s, &p, &v, err, sizeof err), 2);
    cr_expect(strstr(err, "needs measured op and copy costs"), "%s", err);
    cr_expect_eq(planner_choose(&rq, &oc, &s, &p, &v, err, sizeof err), 2);

    rq.dry_run = 1;
    cr_assert_eq(planner_choose(&rq, NULL, &s, &p, &v, err, sizeof err), 0, "%s", err);
    PlanInput dev = rq.in;
    dev.offload = 0;
    cr_assert_eq(planner_auto(&dev, rq.budget, NULL, &sa, &r, err, sizeof err), 0, "%s", err);
    planner_plan(&rq.in, &sa, &pa); /* that schedule, its inputs offloaded */
    cr_expect_eq(v.autor.offload, 0);
    cr_expect_eq(p.offload, OFFLOAD_CHECKPOINTS);
    cr_expect_eq(p.total, pa.total);
    cr_expect_eq(p.host_total, pa.host_total);
    cr_expect(p.host_total > 0);
    schedule_free(&s);
    schedule_free(&sa);
}

/* Measured costs: the step is opcost_step's, plus the offloaded inputs' copies a
 * micro-batch when auto offloads them; auto's choice of the host tier is the plan's. */
Test(plan_choose, predicted_step)
{
    PlanRequest rq = request(RECOMPUTE_BLOCK, 0);
    rq.grad_accum = 2;
    OpCosts oc = costs(0);
    Schedule s;
    MemoryPlan p;
    PlanVerdict v;
    char err[512] = "";
    cr_assert_eq(planner_choose(&rq, &oc, &s, &p, &v, err, sizeof err), 0, "%s", err);
    cr_expect_eq(v.step_ns, opcost_step(&oc, &s, 2));
    cr_expect(v.step_ns > 0);
    schedule_free(&s);

    rq.in.offload = OFFLOAD_CHECKPOINTS; /* a ring, and no copy costs: no prediction */
    cr_assert_eq(planner_choose(&rq, &oc, &s, &p, &v, err, sizeof err), 0, "%s", err);
    cr_expect(p.n_ring > 0);
    cr_expect_eq(v.step_ns, -1);
    schedule_free(&s);

    oc = costs(1000000000000LL); /* fast copies: auto under mode 0's peak offloads */
    rq.mode = RECOMPUTE_AUTO;
    rq.budget = MODE0_TOTAL - 1;
    cr_assert_eq(planner_choose(&rq, &oc, &s, &p, &v, err, sizeof err), 0, "%s", err);
    cr_expect(v.fits);
    cr_expect_eq(v.autor.offload, OFFLOAD_CHECKPOINTS);
    cr_expect_eq(p.offload, OFFLOAD_CHECKPOINTS, "the plan has auto's host tier");
    cr_assert(p.n_ring > 0 && p.n_res_host > 0);
    long long want = opcost_step(&oc, &s, 2) +
                     2 * opcost_offload_copy(&oc, p.residual_bytes, p.n_res_host);
    cr_expect_eq(v.step_ns, want, "%lld vs %lld", v.step_ns, want);
    schedule_free(&s);
}
