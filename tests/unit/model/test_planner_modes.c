/* tests/unit/model/test_planner_modes.c — the planner's new slot kinds, budgets and
 * the --plan table (model/planner.h): byte counts worked by hand for a
 * small shape, --memory-budget parsing, the GPT-2 XL numbers the README
 * quotes, --recompute auto's guarantees, and the printed table checked
 * against direct planner calls. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/gpt2_block.h"
#include "model/flops.h"
#include "model/planner.h"
#include "model/solver.h"

static PlanInput tiny(void)
{
    PlanInput in = {.cfg = {.max_seq_len = 16, .vocab_size = 100, .padded_vocab = 128,
                            .num_layers = 4, .num_heads = 2, .channels = 8},
                    .B = 2, .T = 4, .dtype = DTYPE_FP32};
    return in;
}

static PlanInput xl(int B)
{
    PlanInput in = {.B = B, .T = 1024, .dtype = DTYPE_BF16};
    cr_assert_eq(config_preset(&in.cfg, "d48"), 0);
    in.cfg.vocab_size = 50257;
    in.cfg.padded_vocab = config_pad_vocab(50257);
    in.cfg.max_seq_len = 1024;
    return in;
}

static MemoryPlan plan_mode(const PlanInput *in, int mode)
{
    MemoryPlan p;
    char err[256];
    cr_assert_eq(planner_sizes(in, mode, &p, err, sizeof err), 0, "%s", err);
    return p;
}

/* Shape: L=4, C=8, NH=2, Vp=128, maxT=16, B=2, T=4, fp32; N = 8 tokens.
 * Every buffer is rounded up to 256 bytes (ARENA_ALIGN), written [x].
 * params 4656 (wte 1024 + wpe 128 + 4 x 872 + lnf 16): params and grads
 * 18624 [18688] B each, AdamW m and v 18624 [18688] each, no master. One
 * residual slot N*C*4 = 256. Full tape: 15*N*C act (3840 B) + fp32 4N +
 * B*NH*T = 48 (192 [256] B) = 4096. Selective tape: 9*N*C (2304 B) + 256 =
 * 2560. Selective buffer N*4C*4 = 1024. Scratch: four (N,C) act 4 * 256 +
 * one (N,4C) 1024 + five N-element f32/int 5 * 32 [256] = 3328. Head 8 x
 * 128 x 4 = 4096. Fixed: 4 * 18688 + 3328 + 4096 = 82176. */
Test(planner_modes, hand_computed_small_shape)
{
    PlanInput in = tiny();
    PlanUnits u;
    planner_units(&in, &u);
    cr_assert(u.fixed == 82176 && u.res == 256 && u.hi == 4096 && u.lo == 2560 &&
                  u.ws_hi == 0 && u.ws_lo == 1024,
              "units %zu %zu %zu %zu %zu %zu", u.fixed, u.res, u.hi, u.lo, u.ws_hi, u.ws_lo);

    MemoryPlan p = plan_mode(&in, RECOMPUTE_NONE);
    cr_assert(p.bytes[MEM_ACTIVATIONS] == 4 * 256 + 4 * 4096 && p.bytes[MEM_WORKSPACE] == 0);
    cr_assert_eq(p.total, 82176 + 17408);

    p = plan_mode(&in, RECOMPUTE_SELECTIVE);
    cr_assert_eq(p.bytes[MEM_ACTIVATIONS], 4 * 256 + 4 * 2560);
    cr_assert_eq(p.bytes[MEM_WORKSPACE], 1024, "the selective buffer");
    cr_assert_eq(p.total, 82176 + 11264 + 1024);
    cr_assert(p.n_part_stored == 4 && p.n_part_work == 0 && p.tape_ws_bytes == 1024);
    TapeLayout sel;
    planner_tape_layout(&in, GPT2_SELECTIVE, &sel);
    cr_assert(sel.act[GPT2_LN1] == TAPE_IN_WORKSPACE && sel.act[GPT2_LN2] == TAPE_IN_WORKSPACE &&
              sel.act[GPT2_GELU] == TAPE_IN_WORKSPACE);
    cr_assert(sel.act[GPT2_QKV] == 0 && sel.act[GPT2_ATTY] == 3 * 64 &&
              sel.act[GPT2_RES2] == 4 * 64 && sel.act[GPT2_FCH] == 5 * 64 &&
              sel.act_elems == 9 * 64);
    /* ln1, ln2 and the GELU output are never alive together: one (N,4C) buffer */
    cr_assert(sel.ws[GPT2_LN1] == 0 && sel.ws[GPT2_LN2] == 0 && sel.ws[GPT2_GELU] == 0 &&
              sel.ws_bytes == 1024);

    p = plan_mode(&in, RECOMPUTE_BLOCK);
    cr_assert(p.bytes[MEM_ACTIVATIONS] == 1024 && p.bytes[MEM_WORKSPACE] == 4096);
    cr_assert_eq(p.total, 82176 + 1024 + 4096);

    /* default k = round(sqrt 4) = 2: checkpoints x0, x2; one segment input,
     * two workspace tapes */
    p = plan_mode(&in, RECOMPUTE_SEGMENTS);
    cr_assert_eq(p.bytes[MEM_ACTIVATIONS], 2 * 256);
    cr_assert_eq(p.bytes[MEM_WORKSPACE], 256 + 2 * 4096);
    cr_assert_eq(p.total, 82176 + 512 + 8448);
}

Test(planner_modes, slots_total_is_the_plans_total)
{
    char err[256];
    for (int L = 1; L <= 12; L++) {
        PlanInput in = tiny();
        in.cfg.num_layers = L;
        PlanUnits u;
        planner_units(&in, &u);
        for (int k = 0; k <= L; k++) {
            Schedule s;
            int rc = k == 0
                         ? schedule_build(&s, &GPT2_BLOCK, RECOMPUTE_SELECTIVE, L, err, sizeof err)
                         : schedule_build_segments(&s, &GPT2_BLOCK, L, k, err, sizeof err);
            cr_assert_eq(rc, 0, "%s", err);
            MemoryPlan p;
            planner_plan(&in, &s, &p);
            int n_sel = schedule_count_tapes(&s, GPT2_SELECTIVE, NULL);
            cr_assert_eq(p.total, planner_slots_total(&u, s.n_res_slots, s.n_tape_slots - n_sel,
                                                      n_sel));
            schedule_free(&s);
        }
    }
}

Test(planner_modes, parse_bytes)
{
    size_t v;
    cr_assert(planner_parse_bytes("40GiB", &v) == 0 && v == (size_t)40 << 30);
    cr_assert(planner_parse_bytes("512MiB", &v) == 0 && v == (size_t)512 << 20);
    cr_assert(planner_parse_bytes("123456KiB", &v) == 0 && v == (size_t)123456 << 10);
    cr_assert(planner_parse_bytes("1000", &v) == 0 && v == 1000);
    cr_assert(planner_parse_bytes("0", &v) == 0 && v == 0);
    cr_assert(planner_parse_bytes("18446744073709551615", &v) == 0 && v == SIZE_MAX);
    const char *bad[] = {"", "-1", "+5", "1.5GiB", "GiB", "12 GiB", "12gib", "12GB", "12G",
                         "12KiBx", " 12", "12 ", "0x10", "18446744073709551616",
                         "17179869184GiB", "99999999999999999999999MiB"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_neq(planner_parse_bytes(bad[i], &v), 0, "accepted '%s'", bad[i]);
    cr_assert_neq(planner_parse_bytes(NULL, &v), 0);
}

static int max_b(const PlanInput *base, int mode, size_t budget)
{
    int b = 0;
    for (int B = 1; B < 4096; B++) {
        PlanInput in = *base;
        in.B = B;
        if (plan_mode(&in, mode).total > budget) break;
        b = B;
    }
    return b;
}

/* The numbers, at GPT-2 XL shape in bf16, T = 1024. */
Test(planner_modes, gpt2_xl_numbers)
{
    PlanInput in = xl(1);
    size_t N = 1024, C = 1600, L = 48;
    MemoryPlan p1 = plan_mode(&in, RECOMPUTE_BLOCK), p0 = plan_mode(&in, RECOMPUTE_NONE);
    cr_assert_eq(p1.bytes[MEM_ACTIVATIONS], L * N * 2 * C, "mode 1: 2*C bytes/layer/token");
    /* mode 0: x_l and a full tape: 16*C act elements (32*C bytes) + fp32
     * LN stats (4) and LSE (NH = 25) per token; no T x T attention */
    cr_assert_eq(p0.bytes[MEM_ACTIVATIONS], L * N * (32 * C + 4 * (4 + 25)));
    double per = (double)p0.bytes[MEM_ACTIVATIONS] / (L * N) / C;
    cr_assert(per > 32.0 && per < 32.1, "mode 0 stores %.3f*C bytes/layer/token", per);
    size_t budget = (size_t)139 << 30;
    int b0 = max_b(&in, RECOMPUTE_NONE, budget), b1 = max_b(&in, RECOMPUTE_BLOCK, budget);
    cr_assert_gt(b0, 0);
    cr_assert_geq(b1, 6 * b0, "max micro-batch at 139 GiB: mode 1 %d, mode 0 %d", b1, b0);
}

static AutoResult run_auto(const PlanInput *in, size_t budget, Schedule *s)
{
    AutoResult r;
    char err[512];
    cr_assert_eq(planner_auto(in, budget, NULL, s, &r, err, sizeof err), 0, "%s", err);
    cr_assert_eq(schedule_validate(s, err, sizeof err), 0, "%s", err);
    MemoryPlan p;
    planner_plan(in, s, &p);
    cr_assert_eq(p.total, r.peak);
    return r;
}

static long long recompute_of(const PlanInput *in, int mode)
{
    Schedule s;
    FlopCounts f;
    char err[256];
    cr_assert_eq(schedule_build(&s, &GPT2_BLOCK, mode, in->cfg.num_layers, err, sizeof err), 0);
    flops_count(&in->cfg, in->B, in->T, &f);
    long long r = flops_recompute(&f, &s);
    schedule_free(&s);
    return r;
}

/* The same path as planner_auto, on a table built once per shape:
 * solver_pick, solver_schedule, then the planner and flops.h must agree
 * with the solver's bytes and work exactly. */
static AutoResult via_table(const SolverTable *t, const PlanInput *in, size_t budget)
{
    PlanUnits u;
    SolverChoice ch, small;
    Schedule s;
    MemoryPlan p;
    FlopCounts f;
    char err[256];
    int L = in->cfg.num_layers;
    planner_units(in, &u);
    flops_count(&in->cfg, in->B, in->T, &f);
    AutoResult r = {0};
    r.fits = solver_pick(t, L, &u, budget, &ch);
    solver_pick(t, L, &u, 0, &small);
    r.min_peak = small.bytes;
    cr_assert_eq(solver_schedule(t, L, &ch, &s, err, sizeof err), 0, "%s", err);
    cr_assert_eq(schedule_validate(&s, err, sizeof err), 0, "%s", err);
    planner_plan(in, &s, &p);
    r.peak = p.total;
    r.recompute_flops = flops_recompute(&f, &s);
    cr_assert_eq(p.total, ch.bytes, "solver bytes = planner bytes");
    cr_assert_eq(r.recompute_flops, ch.recompute, "solver work = flops.h work");
    schedule_free(&s);
    return r;
}

static void auto_guarantees(const PlanInput *in)
{
    Schedule s;
    char err[256];
    size_t m0 = plan_mode(in, RECOMPUTE_NONE).total, m1 = plan_mode(in, RECOMPUTE_BLOCK).total;
    size_t m2 = plan_mode(in, RECOMPUTE_SEGMENTS).total;

    /* planner_auto itself, once */
    AutoResult r = run_auto(in, m1, &s);
    cr_assert(r.fits && r.peak <= m1);
    cr_assert_leq(r.recompute_flops, recompute_of(in, RECOMPUTE_BLOCK),
                  "at mode 1's peak auto recomputes no more than mode 1");
    schedule_free(&s);

    FlopCounts f;
    flops_count(&in->cfg, in->B, in->T, &f);
    SolverCosts c = {f.block_fwd, f.block_fwd_noout, f.block_sel, 0, TAPE_FULL, GPT2_SELECTIVE};
    SolverTable *t =
        solver_table_build(in->cfg.num_layers, &GPT2_BLOCK, &c, -1, -1, err, sizeof err);
    cr_assert_not_null(t, "%s", err);
    AutoResult a = via_table(t, in, m1);
    cr_assert(a.peak == r.peak && a.recompute_flops == r.recompute_flops);

    size_t lo = m1 < m2 ? m1 : m2, hi = m1 < m2 ? m2 : m1;
    a = via_table(t, in, lo + (hi - lo) / 2);
    cr_assert(a.fits && a.peak <= lo + (hi - lo) / 2, "between modes 1 and 2");

    a = via_table(t, in, m0);
    cr_assert(a.fits && a.recompute_flops == 0 && a.peak == m0, "mode 0's peak: no recompute");

    a = via_table(t, in, 0);
    cr_assert(!a.fits && a.peak == a.min_peak && a.min_peak > 0, "below the minimum");
    size_t min_peak = a.min_peak;
    a = via_table(t, in, min_peak - 1);
    cr_assert(!a.fits);
    a = via_table(t, in, min_peak);
    cr_assert(a.fits && a.peak == min_peak);

    /* More memory never costs more recompute, and the peak never passes
     * the budget. */
    long long prev = -1;
    for (int i = 0; i <= 40; i++) {
        size_t budget = min_peak + (m0 - min_peak) / 40 * (size_t)i;
        a = via_table(t, in, budget);
        cr_assert(a.fits && a.peak <= budget);
        cr_assert(prev < 0 || a.recompute_flops <= prev, "budget %zu: %lld after %lld", budget,
                  a.recompute_flops, prev);
        prev = a.recompute_flops;
    }
    solver_table_free(t);
}

Test(planner_modes, auto_guarantees_small) { PlanInput in = tiny(); auto_guarantees(&in); }
Test(planner_modes, auto_guarantees_12_layers)
{
    PlanInput in = tiny();
    in.cfg.num_layers = 12;
    auto_guarantees(&in);
}
Test(planner_modes, auto_guarantees_gpt2_xl) { PlanInput in = xl(8); auto_guarantees(&in); }

/* The --plan table, read back and compared with direct planner calls. */
static void check_plan_table(const PlanInput *base, size_t budget, const OpCosts *costs)
{
    PlanInput in = *base;
    char *buf = NULL, err[256];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(planner_print_modes(f, &in, budget, 0, costs, 2, err, sizeof err), 0, "%s", err);
    fclose(f);
    static const int modes[] = {RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_BLOCK,
                                RECOMPUTE_SEGMENTS, RECOMPUTE_AUTO};
    static const char *names[] = {"0", "selective", "1", "2,k=2", "auto"};
    FlopCounts fc;
    flops_count(&in.cfg, in.B, in.T, &fc);
    for (int i = 0; i < 5; i++) {
        char pat[64], *line;
        snprintf(pat, sizeof pat, "\n%-10s ", names[i]);
        cr_assert_not_null(line = strstr(buf, pat), "no row '%s' in:\n%s", names[i], buf);
        size_t stored, ws, peak;
        double gib, per_tok, pct;
        int maxb;
        char ms[32], want_ms[32] = "-";
        cr_assert_eq(sscanf(line + strlen(pat), "%zu %zu %zu %lf %lf %lf %31s %d", &stored, &ws,
                            &peak, &gib, &per_tok, &pct, ms, &maxb), 8, "row: %s", line);
        Schedule s;
        MemoryPlan p;
        AutoResult r;
        if (modes[i] == RECOMPUTE_AUTO) {
            cr_assert_eq(planner_auto(&in, budget, costs, &s, &r, err, sizeof err), 0, "%s", err);
            cr_assert(r.fits);
        } else {
            cr_assert_eq(schedule_build(&s, &GPT2_BLOCK, modes[i], 6, err, sizeof err), 0);
        }
        planner_plan(&in, &s, &p);
        cr_assert(stored == p.bytes[MEM_ACTIVATIONS] && ws == p.bytes[MEM_WORKSPACE] &&
                      peak == p.total, "%s: %zu %zu %zu", names[i], stored, ws, peak);
        double want_pct = 100.0 * flops_recompute(&fc, &s) / fc.step;
        if (costs) snprintf(want_ms, sizeof want_ms, "%.3f", opcost_step(costs, &s, 2) / 1e6);
        cr_assert_str_eq(ms, want_ms, "%s: predicted step", names[i]);
        cr_assert_float_eq(pct, want_pct, 0.0006, "%s: %f vs %f", names[i], pct, want_pct);
        cr_assert_float_eq(per_tok, (double)stored / (6.0 * 8), 0.051);
        /* max_B: fits at max_B, not at max_B + 1 */
        for (int d = 0; d <= 1; d++) {
            PlanInput b = in;
            b.B = maxb + d;
            int fits;
            if (modes[i] == RECOMPUTE_AUTO) {
                fits = planner_auto_fits(&b, budget, r.hi_kind, r.lo_kind);
                if (!costs) { /* the kinds of FLOP mode: as planner_auto finds */
                    Schedule a;
                    cr_assert_eq(fits, run_auto(&b, budget, &a).fits);
                    schedule_free(&a);
                }
            } else {
                planner_plan(&b, &s, &p);
                fits = p.total <= budget;
            }
            cr_assert_eq(fits, d == 0, "%s: B=%d", names[i], maxb + d);
        }
        schedule_free(&s);
    }
    free(buf);
}

Test(planner_modes, plan_table_matches_planner)
{
    PlanInput in = tiny();
    in.cfg.num_layers = 6;
    check_plan_table(&in, plan_mode(&in, RECOMPUTE_BLOCK).total + 3000, NULL);
    /* mode 0 fits at this B: auto's max_B still counts selective slots */
    check_plan_table(&in, plan_mode(&in, RECOMPUTE_NONE).total, NULL);
    /* with measured costs: the step_ms column is opcost_step's, auto by time */
    OpCosts oc;
    flops_op_costs(&in.cfg, in.B, in.T, &oc);
    oc.unit = OPCOST_NS; /* FLOPs read as nanoseconds: any costs will do */
    oc.c[OP_ADAMW] = 12345;
    check_plan_table(&in, plan_mode(&in, RECOMPUTE_BLOCK).total + 3000, &oc);
    check_plan_table(&in, plan_mode(&in, RECOMPUTE_NONE).total, &oc);
}
