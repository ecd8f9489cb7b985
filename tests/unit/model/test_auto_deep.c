/* tests/unit/model/test_auto_deep.c — --recompute auto past the solver's layer limit
 * (planner_auto_family, planner.h; schedule_build_inputs_kept, schedule.h).
 * References: the fixed modes' schedules (planner_sizes, flops_recompute),
 * every schedule of the two families built and planned one by one (the
 * search itself is closed form), and below 64 layers the solver's DP,
 * which is optimal over a superset of the families. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gpt2_block.h"
#include "model/flops.h"
#include "model/planner.h"
#include "model/solver.h"

/* C=8, NH=2, Vp=128, B=2, T=4, fp32: one residual slot 256 B, a full tape
 * 4096 B, a selective one 2560 B (tests/unit/model/test_planner_modes.c works these
 * out by hand), so the slots, not the parameters, decide what fits. */
static PlanInput small_shape(int L)
{
    PlanInput in = {.cfg = {.max_seq_len = 16, .vocab_size = 100, .padded_vocab = 128,
                            .num_layers = L, .num_heads = 2, .channels = 8},
                    .B = 2, .T = 4, .dtype = DTYPE_FP32};
    return in;
}

typedef struct {
    size_t peak;
    long long recompute;
} Cost;

static Cost cost_of(const PlanInput *in, const Schedule *s)
{
    MemoryPlan p;
    FlopCounts f;
    char err[256];
    cr_assert_eq(schedule_validate(s, err, sizeof err), 0, "%s", err);
    planner_plan(in, s, &p);
    flops_count(&in->cfg, in->B, in->T, &f);
    return (Cost){p.total, flops_recompute(&f, s)};
}

static Cost mode_cost(const PlanInput *in, int mode)
{
    Schedule s;
    char err[256];
    cr_assert_eq(schedule_build(&s, &GPT2_BLOCK, mode, in->cfg.num_layers, err, sizeof err), 0,
                 "%s", err);
    Cost c = cost_of(in, &s);
    schedule_free(&s);
    return c;
}

static Cost segments_cost(const PlanInput *in, int k)
{
    Schedule s;
    char err[256];
    cr_assert_eq(schedule_build_segments(&s, &GPT2_BLOCK, in->cfg.num_layers, k, err, sizeof err),
                 0, "%s", err);
    Cost c = cost_of(in, &s);
    schedule_free(&s);
    return c;
}

static AutoResult family(const PlanInput *in, size_t budget)
{
    Schedule s;
    AutoResult r;
    char err[512];
    cr_assert_eq(planner_auto_family(in, budget, NULL, &s, &r, err, sizeof err), 0, "%s", err);
    Cost c = cost_of(in, &s);
    cr_assert_eq(c.peak, r.peak, "planner_plan's total is the reported peak");
    cr_assert_eq(c.recompute, r.recompute_flops);
    cr_assert_eq(s.num_layers, in->cfg.num_layers);
    cr_assert(r.fits ? r.peak <= budget : r.peak == r.min_peak && r.min_peak > budget);
    schedule_free(&s);
    return r;
}

/* Every (n_full, n_sel) is a valid program that keeps exactly what its
 * name says: x for the re-forwarded blocks at the bottom, S above, F on
 * top; no workspace tape when a full tape is kept; the corners are modes
 * 0, selective and 1, byte for byte and FLOP for FLOP. */
Test(auto_deep, inputs_kept_schedules_are_what_they_say)
{
    char err[256], desc[16], want[16];
    for (int L = 1; L <= 9; L++) {
        PlanInput in = small_shape(L);
        for (int nf = 0; nf <= L; nf++)
            for (int ns = 0; nf + ns <= L; ns++) {
                Schedule s;
                cr_assert_eq(schedule_build_inputs_kept(&s, &GPT2_BLOCK, L, nf, ns, TAPE_FULL,
                                                        GPT2_SELECTIVE, err, sizeof err),
                             0, "%s", err);
                cost_of(&in, &s); /* validates */
                int n_re = L - nf - ns;
                memset(want, 'x', (size_t)n_re);
                memset(want + n_re, 'S', (size_t)ns);
                memset(want + n_re + ns, 'F', (size_t)nf);
                want[L] = '\0';
                cr_assert_str_eq(schedule_describe(&s, desc, sizeof desc), want);
                cr_assert(s.mode == RECOMPUTE_AUTO && s.n_res_slots == L && s.n_res_stored == L);
                /* a kept full tape doubles as the re-forwards' workspace */
                cr_assert_eq(s.n_tape_slots, nf + ns + (n_re > 0 && nf == 0));
                cr_assert_eq(s.n_tape_stored, nf + ns);
                cr_assert_eq(schedule_reforwards(&s), n_re);
                Cost c = cost_of(&in, &s), m;
                int corner = nf == L ? RECOMPUTE_NONE : ns == L ? RECOMPUTE_SELECTIVE
                             : nf + ns == 0 ? RECOMPUTE_BLOCK : -1;
                if (corner >= 0) {
                    m = mode_cost(&in, corner);
                    cr_assert(c.peak == m.peak && c.recompute == m.recompute,
                              "L=%d (%d,%d) vs %s", L, nf, ns, schedule_mode_name(corner));
                }
                schedule_free(&s);
            }
    }
    Schedule s;
    cr_assert_neq(schedule_build_inputs_kept(&s, &GPT2_BLOCK, 4, 3, 2, TAPE_FULL, GPT2_SELECTIVE,
                                             err, sizeof err),
                  0);
    cr_assert(strstr(err, "do not fit 4 layers"), "%s", err);
    cr_assert_neq(schedule_build_inputs_kept(&s, &GPT2_BLOCK, 4, -1, 0, TAPE_FULL, GPT2_SELECTIVE,
                                             err, sizeof err),
                  0);
    cr_assert_neq(schedule_build_inputs_kept(&s, &GPT2_BLOCK, 0, 0, 0, TAPE_FULL, GPT2_SELECTIVE,
                                             err, sizeof err),
                  0);
}

/* The closed-form search against building and planning every schedule of
 * the families: least recompute within the budget (ties: fewer bytes),
 * or, when nothing fits, the fewest bytes (ties: less recompute). */
static Cost *every_schedule(const PlanInput *in, int *n)
{
    int L = in->cfg.num_layers;
    char err[256];
    Cost *all = malloc(sizeof *all * (size_t)((L + 1) * (L + 2) / 2 + L));
    cr_assert_not_null(all);
    *n = 0;
    for (int nf = 0; nf <= L; nf++)
        for (int ns = -1; nf + ns <= L; ns++) {
            /* ns = -1 stands for segments of k = nf (k >= 1) */
            if (ns < 0 && nf == 0) continue;
            Schedule s;
            if (ns < 0)
                cr_assert_eq(schedule_build_segments(&s, &GPT2_BLOCK, L, nf, err, sizeof err), 0,
                             "%s", err);
            else
                cr_assert_eq(schedule_build_inputs_kept(&s, &GPT2_BLOCK, L, nf, ns, TAPE_FULL,
                                                        GPT2_SELECTIVE, err, sizeof err),
                             0, "%s", err);
            all[(*n)++] = cost_of(in, &s);
            schedule_free(&s);
        }
    return all;
}

static void check_against_every_schedule(int L)
{
    PlanInput in = small_shape(L);
    size_t m0 = mode_cost(&in, RECOMPUTE_NONE).peak, m1 = mode_cost(&in, RECOMPUTE_BLOCK).peak;
    int n;
    Cost *all = every_schedule(&in, &n);
    for (int i = -4; i <= 24; i++) {
        /* from well below mode 1's peak (segments) to mode 0's */
        size_t budget = i < 0 ? m1 - (m1 / 64) * (size_t)-i : m1 + (m0 - m1) / 24 * (size_t)i;
        Cost best = {0, -1}, smallest = {(size_t)-1, 0};
        for (int c = 0; c < n; c++) {
            Cost a = all[c];
            if (a.peak <= budget && (best.recompute < 0 || a.recompute < best.recompute ||
                                     (a.recompute == best.recompute && a.peak < best.peak)))
                best = a;
            if (a.peak < smallest.peak ||
                (a.peak == smallest.peak && a.recompute < smallest.recompute))
                smallest = a;
        }
        int fits = best.recompute >= 0;
        AutoResult r = family(&in, budget);
        cr_assert_eq(r.fits, fits, "L=%d budget %zu", L, budget);
        cr_assert_eq(r.min_peak, smallest.peak, "L=%d budget %zu", L, budget);
        Cost want = fits ? best : smallest;
        cr_assert(r.peak == want.peak && r.recompute_flops == want.recompute,
                  "L=%d budget %zu: search %zu B %lld FLOPs, every schedule built %zu B %lld",
                  L, budget, r.peak, r.recompute_flops, want.peak, want.recompute);
    }
    free(all);
}

Test(auto_deep, closed_form_search_equals_building_every_schedule, .timeout = 60)
{
    check_against_every_schedule(5);
    check_against_every_schedule(24);
    check_against_every_schedule(96);
}

/* Below 64 layers: the DP searches a superset of the families, so it never
 * recomputes more, and both fit every budget from mode 1's peak up. */
Test(auto_deep, solver_is_never_worse_than_the_families, .timeout = 60)
{
    static const int layers[] = {8, 24, 48};
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
        PlanInput in = small_shape(layers[i]);
        size_t m0 = mode_cost(&in, RECOMPUTE_NONE).peak, m1 = mode_cost(&in, RECOMPUTE_BLOCK).peak;
        for (int j = 0; j <= 6; j++) {
            size_t budget = m1 + (m0 - m1) / 6 * (size_t)j;
            Schedule s;
            AutoResult dp;
            char err[512];
            cr_assert_eq(planner_auto(&in, budget, NULL, &s, &dp, err, sizeof err), 0, "%s", err);
            schedule_free(&s);
            AutoResult fam = family(&in, budget);
            cr_assert(dp.family == AUTO_SOLVER && fam.family == AUTO_INPUTS_KEPT);
            cr_assert(dp.fits && fam.fits && dp.peak <= budget && fam.peak <= budget);
            cr_assert_geq(fam.recompute_flops, dp.recompute_flops, "L=%d budget %zu", layers[i],
                          budget);
        }
    }
}

/* Past the limit, planner_auto is the family search, at the budgets that
 * decide its branches; the expected values come from the fixed modes and
 * every k of schedule_build_segments. */
static void deep_budgets(int L)
{
    PlanInput in = small_shape(L);
    Schedule s;
    AutoResult r;
    char err[512];
    Cost m0 = mode_cost(&in, RECOMPUTE_NONE), m1 = mode_cost(&in, RECOMPUTE_BLOCK);
    Cost msel = mode_cost(&in, RECOMPUTE_SELECTIVE);

    r = family(&in, m0.peak);
    cr_assert(r.fits && r.recompute_flops == 0 && r.peak == m0.peak);
    cr_assert_eq(planner_auto(&in, m0.peak, NULL, &s, &r, err, sizeof err), 0, "%s", err);
    cr_assert(r.family == AUTO_INPUTS_KEPT && r.recompute_flops == 0, "planner_auto goes deep");
    schedule_free(&s);

    /* At mode 1's peak: mode 1's slots, but block L-1 keeps the tape its
     * forward wrote into the one tape slot, which mode 1 re-forwards at
     * once. One re-forward less. */
    FlopCounts f;
    flops_count(&in.cfg, in.B, in.T, &f);
    r = family(&in, m1.peak);
    cr_assert(r.fits && r.family == AUTO_INPUTS_KEPT &&
              r.recompute_flops == m1.recompute - f.block_fwd_noout && r.peak == m1.peak,
              "at mode 1's peak: %lld, mode 1 %lld", r.recompute_flops, m1.recompute);
    cr_assert_eq(planner_auto(&in, m1.peak, NULL, &s, &r, err, sizeof err), 0, "%s", err);
    char desc[256];
    schedule_describe(&s, desc, sizeof desc);
    cr_assert(desc[L - 1] == 'F' && strspn(desc, "x") == (size_t)L - 1, "%s", desc);
    schedule_free(&s);

    /* Just below mode 1's peak no schedule keeping every input fits:
     * the segments schedule with the least recompute that fits. */
    Cost seg_best = {0, -1}, seg_small = {(size_t)-1, 0};
    int best_k = 0;
    for (int k = 1; k <= L; k++) {
        Cost c = segments_cost(&in, k);
        if (c.peak < m1.peak &&
            (seg_best.recompute < 0 || c.recompute < seg_best.recompute ||
             (c.recompute == seg_best.recompute && c.peak < seg_best.peak))) {
            seg_best = c;
            best_k = k;
        }
        if (c.peak < seg_small.peak) seg_small = c;
    }
    cr_assert_gt(best_k, 1, "some segments schedule is smaller than mode 1 at %d layers", L);
    r = family(&in, m1.peak - 1);
    cr_assert(r.fits && r.family == AUTO_SEGMENTS && r.checkpoint_every == best_k &&
              r.recompute_flops == seg_best.recompute && r.peak == seg_best.peak,
              "L=%d: k=%d %zu B %lld, want k=%d %zu B %lld", L, r.checkpoint_every, r.peak,
              r.recompute_flops, best_k, seg_best.peak, seg_best.recompute);

    /* Below every candidate: the fewest bytes of the families. Keeping
     * every input, any schedule with a full tape or a re-forward holds L
     * inputs and a full tape, mode 1's bytes, and the rest is selective
     * mode: with the segments, these are the candidates to beat. */
    size_t min_peak = seg_small.peak;
    if (m1.peak < min_peak) min_peak = m1.peak;
    if (msel.peak < min_peak) min_peak = msel.peak;
    r = family(&in, min_peak - 1);
    cr_assert(!r.fits && r.min_peak == min_peak && r.peak == min_peak);
    r = family(&in, 0);
    cr_assert(!r.fits && r.min_peak == min_peak);
    r = family(&in, min_peak);
    cr_assert(r.fits && r.peak == min_peak);

    /* more memory never costs more recompute */
    long long prev = -1;
    for (int i = 0; i <= 40; i++) {
        size_t budget = min_peak + (m0.peak - min_peak) / 40 * (size_t)i;
        r = family(&in, budget);
        cr_assert(r.fits && (prev < 0 || r.recompute_flops <= prev), "budget %zu", budget);
        prev = r.recompute_flops;
    }
}

Test(auto_deep, budgets_at_96_layers) { deep_budgets(96); }
Test(auto_deep, budgets_at_200_layers) { deep_budgets(200); }
