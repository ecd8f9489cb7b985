/* tests/unit/model/test_auto_offload.c — --recompute auto with --offload
 * checkpoints (planner_auto, model/planner_auto.c): with fabricated op and copy
 * costs it keeps the stored inputs on the device when the budget allows, offloads
 * them when the device budget forbids keeping and a copy hides behind the compute,
 * rebuilds them when copies are slow, keeps the host side within the host budget,
 * and reports that nothing fits. Every choice is checked against planner_plan
 * (device and host bytes, to the byte) and the copy model against its formula. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "model/gpt2_block.h"
#include "model/opcost.h"
#include "model/planner.h"

#define L 8

/* L=8, C=32, NH=4, Vp=256, B=2, T=16, fp32: one residual slot 2*16*32*4 = 4096 B. */
static PlanInput shape(void)
{
    PlanInput in = {.cfg = {.max_seq_len = 16, .vocab_size = 256, .padded_vocab = 256,
                            .num_layers = L, .num_heads = 4, .channels = 32},
                    .B = 2, .T = 16, .dtype = DTYPE_FP32, .offload = OFFLOAD_CHECKPOINTS};
    return in;
}

/* Every op 10 us: a block forward 100 us, its backward 80 us. A copy of one
 * residual slot (4096 B) takes lat + 4096 / bw. */
static OpCosts costs(long long lat_ns, long long bw)
{
    OpCosts oc = {.unit = OPCOST_NS, .reps = 5, .copy_lat_ns = lat_ns, .copy_bw = bw};
    for (int op = 0; op < opcost_n_ops(&oc); op++) *opcost_at(&oc, op) = 10000;
    return oc;
}

static MemoryPlan plan_mode(const PlanInput *in, int mode)
{
    Schedule s;
    MemoryPlan p;
    char err[256];
    cr_assert_eq(schedule_build(&s, &GPT2_BLOCK, mode, L, err, sizeof err), 0, "%s", err);
    planner_plan(in, &s, &p);
    schedule_free(&s);
    return p;
}

/* auto at budget; the result checked against the planner with the offload it chose. */
static AutoResult pick(const PlanInput *in, size_t budget, const OpCosts *oc, Schedule *s)
{
    AutoResult r;
    char err[512];
    cr_assert_eq(planner_auto(in, budget, oc, s, &r, err, sizeof err), 0, "%s", err);
    PlanInput chosen = *in;
    chosen.offload = (in->offload & ~OFFLOAD_CHECKPOINTS) | r.offload;
    MemoryPlan p;
    planner_plan(&chosen, s, &p);
    cr_expect_eq(r.peak, p.total, "device bytes: auto %zu, planner %zu", r.peak, p.total);
    if (r.offload) {
        cr_expect_eq(r.host, p.host_total, "host bytes: auto %zu, planner %zu", r.host,
                     p.host_total);
        cr_expect_eq(r.copy, opcost_offload_copy(oc, p.residual_bytes, p.n_res_host));
        cr_expect_eq(p.n_res_host, p.n_res_stored - s->n_res_kept);
        cr_expect_eq(p.n_ring, p.n_res_host < 2 ? p.n_res_host : 2);
    } else {
        cr_expect_eq(r.copy, 0);
        cr_expect_eq(p.host[HOST_CHECKPOINTS], 0);
    }
    cr_expect_eq(r.recompute, opcost_recompute(oc, s));
    return r;
}

Test(auto_offload, copy_model_by_hand)
{
    /* 1 GB/s: 4096 B in 4096 ns, + 6 us latency = 10.096 us; forward 100 us and
     * backward 80 us hide it whole */
    OpCosts fast = costs(6000, 1000000000);
    cr_expect_eq(opcost_copy(&fast, 4096), 10096);
    cr_expect_eq(opcost_offload_copy(&fast, 4096, L), 0);
    /* 4096 B/ms: 1 ms a copy; out: 8 x (1000 - 100) us; in: 6 x (1000 - 80) us */
    OpCosts slow = costs(0, 4096000);
    cr_expect_eq(opcost_copy(&slow, 4096), 1000000);
    cr_expect_eq(opcost_offload_copy(&slow, 4096, L), 8LL * 900000 + 6LL * 920000);
    cr_expect_eq(opcost_offload_copy(&slow, 4096, 1), 900000); /* in the ring at the head */
    OpCosts none = costs(0, 0);
    cr_expect_eq(opcost_offload_copy(&none, 4096, L), -1);
}

/* Mode 0's device peak fits: nothing recomputed, nothing copied, inputs kept. */
Test(auto_offload, keeps_when_the_budget_allows)
{
    PlanInput in = shape(), dev = shape();
    dev.offload = 0;
    OpCosts oc = costs(0, 1000000000);
    Schedule s;
    AutoResult r = pick(&in, plan_mode(&dev, RECOMPUTE_NONE).total, &oc, &s);
    cr_expect(r.fits);
    cr_expect_eq(r.offload, 0);
    cr_expect_eq(r.recompute, 0);
    cr_expect_eq(r.host, 0);
    schedule_free(&s);
}

/* A budget of mode 0 with its inputs offloaded (the ring and L full tapes): the
 * device alone must recompute; fast copies hide behind the blocks, so auto
 * offloads and recomputes nothing. */
Test(auto_offload, offloads_when_the_device_budget_forbids_keeping)
{
    PlanInput in = shape(), dev = shape();
    dev.offload = 0;
    size_t budget = plan_mode(&in, RECOMPUTE_NONE).total;
    cr_assert_lt(budget, plan_mode(&dev, RECOMPUTE_NONE).total);
    OpCosts oc = costs(0, 1000000000);
    Schedule s, sd;
    AutoResult r = pick(&in, budget, &oc, &s), rd = pick(&dev, budget, &oc, &sd);
    cr_expect(rd.fits && rd.recompute > 0, "the device alone recomputes %lld", rd.recompute);
    cr_expect(r.fits);
    cr_expect_eq(r.offload, OFFLOAD_CHECKPOINTS);
    cr_expect_eq(r.recompute, 0);
    cr_expect_eq(r.copy, 0);
    cr_expect_eq(r.host, (size_t)L * 4096);
    cr_expect_leq(r.peak, budget);
    schedule_free(&s), schedule_free(&sd);
}

/* Three residual slots more than that: three inputs stay on the device, the other
 * five go out through the ring (per input: keep, offload or rebuild). */
Test(auto_offload, keeps_what_fits_and_offloads_the_rest)
{
    PlanInput in = shape();
    size_t budget = plan_mode(&in, RECOMPUTE_NONE).total + 3 * 4096;
    OpCosts oc = costs(0, 1000000000);
    Schedule s;
    AutoResult r = pick(&in, budget, &oc, &s);
    cr_expect(r.fits);
    cr_expect_eq(r.offload, OFFLOAD_CHECKPOINTS);
    cr_expect_eq(r.recompute, 0);
    cr_expect_eq(s.n_res_kept, 3);
    cr_expect_eq(r.host, (size_t)(L - 3) * 4096);
    cr_expect_eq(r.peak, budget);
    /* copies of 0.15 ms (50 us of each shows going out, 70 us coming back): whatever
     * it picks is no slower, by its model, than the device alone at this budget */
    OpCosts mid = costs(0, 4096LL * 1000000000 / 150000);
    cr_expect_eq(opcost_offload_copy(&mid, 4096, 5), 5LL * 50000 + 3LL * 70000);
    PlanInput dev = in;
    dev.offload = 0;
    Schedule s2, sd;
    AutoResult r2 = pick(&in, budget, &mid, &s2), rd = pick(&dev, budget, &mid, &sd);
    cr_expect(r2.fits && rd.fits);
    cr_expect_leq(r2.recompute + r2.copy, rd.recompute);
    schedule_free(&s), schedule_free(&s2), schedule_free(&sd);
}

/* The same budget with copies of 1 ms (10x a block's forward): rebuilding by
 * recompute is cheaper, so auto keeps the device-only schedule. */
Test(auto_offload, rebuilds_when_copies_are_slow)
{
    PlanInput in = shape(), dev = shape();
    dev.offload = 0;
    size_t budget = plan_mode(&in, RECOMPUTE_NONE).total;
    OpCosts oc = costs(0, 4096000);
    Schedule s, sd;
    AutoResult r = pick(&in, budget, &oc, &s), rd = pick(&dev, budget, &oc, &sd);
    cr_expect(r.fits);
    cr_expect_eq(r.offload, 0);
    cr_expect_eq(r.recompute, rd.recompute);
    cr_expect_eq(r.peak, rd.peak);
    schedule_free(&s), schedule_free(&sd);
}

/* Host budgets: below one residual slot nothing can go out (device-only); at
 * half the inputs, what goes out fits it; and the result is deterministic. */
Test(auto_offload, respects_the_host_budget)
{
    PlanInput in = shape();
    size_t budget = plan_mode(&in, RECOMPUTE_NONE).total;
    OpCosts oc = costs(0, 1000000000);
    Schedule s;
    in.host_budget = 4095;
    AutoResult r = pick(&in, budget, &oc, &s);
    cr_expect(r.fits);
    cr_expect_eq(r.offload, 0);
    schedule_free(&s);
    in.host_budget = (size_t)L / 2 * 4096;
    r = pick(&in, budget, &oc, &s);
    cr_expect(r.fits);
    if (r.offload) cr_expect_leq(r.host, in.host_budget);
    AutoResult again;
    Schedule s2;
    char err[256];
    cr_assert_eq(planner_auto(&in, budget, &oc, &s2, &again, err, sizeof err), 0, "%s", err);
    cr_expect_eq(s.n_steps, s2.n_steps);
    cr_expect_eq(memcmp(s.steps, s2.steps, sizeof s.steps[0] * (size_t)s.n_steps), 0);
    cr_expect_eq(again.offload, r.offload);
    schedule_free(&s), schedule_free(&s2);
}

/* A device budget below any schedule's peak, offloaded or not: fits = 0, and
 * min_peak is the smaller of the two searches' smallest peaks (both hold two
 * residual slots and one tape at the least). */
Test(auto_offload, reports_when_nothing_fits)
{
    PlanInput in = shape(), dev = shape();
    dev.offload = 0;
    OpCosts oc = costs(0, 1000000000);
    Schedule s, sd;
    AutoResult r, rd;
    char err[256];
    cr_assert_eq(planner_auto(&in, 1000, &oc, &s, &r, err, sizeof err), 0, "%s", err);
    cr_assert_eq(planner_auto(&dev, 1000, &oc, &sd, &rd, err, sizeof err), 0, "%s", err);
    cr_expect_eq(r.fits, 0);
    cr_expect_leq(r.min_peak, rd.min_peak);
    cr_expect_gt(r.min_peak, 1000);
    schedule_free(&s), schedule_free(&sd);
}
