/* model/planner_modes.c — the --plan table (planner.h): one row per
 * recompute mode, from planner_plan (bytes), flops.h (recompute %),
 * opcost.h (predicted step time, with measured costs) and planner_auto;
 * no number here is computed another way. */
#include "planner.h"

#include <limits.h>
#include <string.h>

#include "flops.h"
#include "opcost.h"
#include "solver.h"

/* What fits_at asks for auto: its kinds and, up to the solver's limit, a
 * table for feasibility, built once (which slot counts can back-propagate
 * does not depend on B or the costs; one slot of each kind is all the
 * smallest schedules hold). */
typedef struct {
    int hi, lo;
    SolverTable *t;
} AutoFeasible;

/* Does micro-batch B (same T) fit budget: the fixed schedule s, or, when s
 * is NULL, any schedule auto can make with its kinds. */
static int fits_at(const PlanInput *in, int B, size_t budget, const Schedule *s,
                   const AutoFeasible *af)
{
    PlanInput b = *in;
    b.B = B;
    if (s) {
        MemoryPlan p;
        planner_plan(&b, s, &p);
        return p.total <= budget && (!in->host_budget || p.host_total <= in->host_budget);
    }
    if (!af->t) return planner_auto_fits(&b, budget, af->hi, af->lo);
    PlanUnits u;
    SolverChoice ch;
    planner_units_kinds(&b, af->hi, af->lo, &u);
    return solver_pick(af->t, b.cfg.num_layers, &u, budget, &ch);
}

/* Largest B that fits, by doubling then bisection (the plan grows with B).
 * B stays where B*T fits an int and every byte count fits 62 bits. */
static int max_batch(const PlanInput *in, size_t budget, const Schedule *s, const AutoFeasible *t)
{
    double per_b = (double)in->T * in->cfg.channels * (16.0 * in->cfg.num_layers + 64.0) * 4.0 +
                   (double)in->T * in->cfg.num_heads * in->cfg.num_layers * 4.0;
    long cap = INT_MAX / in->T;
    if ((double)cap * per_b > 4e18) cap = (long)(4e18 / per_b);
    if (cap < 1 || !fits_at(in, 1, budget, s, t)) return 0;
    long lo = 1, hi = 2; /* lo fits; hi does not or is past cap */
    while (hi <= cap && fits_at(in, (int)hi, budget, s, t)) {
        lo = hi;
        hi *= 2;
    }
    if (hi > cap + 1) hi = cap + 1;
    while (hi - lo > 1) {
        long mid = lo + (hi - lo) / 2;
        if (fits_at(in, (int)mid, budget, s, t)) lo = mid;
        else hi = mid;
    }
    return (int)lo;
}

static void fill_row(PlanRow *row, const PlanInput *in, const Schedule *s, const FlopCounts *fc,
                     const OpCosts *costs, int grad_accum)
{
    MemoryPlan p;
    planner_plan(in, s, &p);
    row->stored = p.bytes[MEM_ACTIVATIONS];
    row->workspace = p.bytes[MEM_WORKSPACE];
    row->peak = p.total;
    row->host = p.host_total;
    row->recompute_flops = flops_recompute(fc, s);
    row->step_flops = fc->step;
    row->recompute_pct = 100.0 * (double)row->recompute_flops / (double)fc->step;
    row->step_ns = costs && costs->unit == OPCOST_NS ? opcost_step(costs, s, grad_accum) : -1;
    if (row->step_ns >= 0 && p.n_ring) { /* offloaded inputs: their copies' exposed time */
        long long copy = opcost_offload_copy(costs, p.residual_bytes, p.n_res_host);
        row->step_ns = copy < 0 ? -1 : row->step_ns + copy * grad_accum;
    }
}

int planner_mode_rows(const PlanInput *in, size_t budget, int k, const OpCosts *costs,
                      int grad_accum, PlanRow rows[PLAN_NUM_ROWS], char *err, size_t err_len)
{
    static const int modes[PLAN_NUM_ROWS] = {RECOMPUTE_NONE, RECOMPUTE_SELECTIVE,
                                             RECOMPUTE_BLOCK, RECOMPUTE_SEGMENTS, RECOMPUTE_AUTO};
    int L = in->cfg.num_layers;
    if (k == 0) k = schedule_default_checkpoint_every(L);
    FlopCounts fc;
    flops_count(&in->cfg, in->B, in->T, &fc);
    for (int i = 0; i < PLAN_NUM_ROWS; i++) {
        Schedule s;
        AutoResult ar;
        PlanRow *row = &rows[i];
        memset(row, 0, sizeof *row);
        row->mode = modes[i];
        /* auto weighs offloaded checkpoints with measured copy costs (and its
         * row is what it chose, offloaded or not); without them it chooses as
         * if the stored inputs stayed on the device, and the row shows that
         * schedule's bytes with the offload. Offloaded optimizer state it
         * counts either way. max_B: the device-only search's. */
        PlanInput ain = *in, row_in = *in;
        ain.offload &= ~OFFLOAD_CHECKPOINTS;
        if (modes[i] == RECOMPUTE_AUTO && planner_weighs_offload(in, costs)) {
            if (planner_auto(in, budget, costs, &s, &ar, err, err_len) != 0) return -1;
            row->fits = ar.fits;
            row_in.offload = ain.offload | ar.offload;
        } else if (modes[i] == RECOMPUTE_AUTO) {
            if (planner_auto(&ain, budget, costs, &s, &ar, err, err_len) != 0) return -1;
            row->fits = ar.fits;
        } else {
            int b = modes[i] == RECOMPUTE_SEGMENTS
                        ? schedule_build_segments(&s, planner_block(in), L, k, err, err_len)
                        : schedule_build(&s, planner_block(in), modes[i], L, err, err_len);
            if (b != 0) return -1;
            row->checkpoint_every = s.checkpoint_every;
        }
        fill_row(row, &row_in, &s, &fc, costs, grad_accum);
        AutoFeasible af = {0};
        if (modes[i] == RECOMPUTE_AUTO) {
            SolverCosts sc = {1, 0, 0, 0, ar.hi_kind, ar.lo_kind};
            af = (AutoFeasible){ar.hi_kind, ar.lo_kind, NULL};
            if (L <= SOLVER_MAX_LAYERS &&
                !(af.t = solver_table_build(L, planner_block(in), &sc, 1, 1, err, err_len))) {
                schedule_free(&s);
                return -1;
            }
        } else {
            row->fits = row->peak <= budget && (!in->host_budget || row->host <= in->host_budget);
        }
        row->max_batch = max_batch(modes[i] == RECOMPUTE_AUTO ? &ain : in, budget,
                                   modes[i] == RECOMPUTE_AUTO ? NULL : &s, &af);
        solver_table_free(af.t);
        schedule_free(&s);
    }
    return 0;
}

int planner_print_modes(FILE *f, const PlanInput *in, size_t budget, int k, const OpCosts *costs,
                        int grad_accum, char *err, size_t err_len)
{
    PlanRow rows[PLAN_NUM_ROWS];
    if (planner_mode_rows(in, budget, k, costs, grad_accum, rows, err, err_len) != 0) return -1;
    char b1[32];
    double tok_layers = (double)in->B * in->T * in->cfg.num_layers;
    fprintf(f, "parameters: %zu\n", config_num_params(&in->cfg));
    fprintf(f, "plan: %d layers, %d heads, C=%d, V=%d, B=%d, T=%d, %s; budget %zu bytes (%s)",
            in->cfg.num_layers, in->cfg.num_heads, in->cfg.channels, in->cfg.vocab_size, in->B,
            in->T, dtype_name(in->dtype), budget, planner_format_bytes(budget, b1, sizeof b1));
    if (in->baseline)
        fprintf(f, "; every peak counts a baseline of %zu bytes (%s) the process holds before "
                   "its arenas", in->baseline, planner_format_bytes(in->baseline, b1, sizeof b1));
    if (in->host_copies)
        fprintf(f, " and %zu bytes (%s) of host copies (start-up's and the outputs')",
                in->host_copies, planner_format_bytes(in->host_copies, b1, sizeof b1));
    fprintf(f, "\n");
    int off = in->offload != 0; /* the host columns only with --offload */
    if (off) {
        char b2[64] = "none";
        if (in->host_budget) {
            char b3[32];
            snprintf(b2, sizeof b2, "%zu bytes (%s)", in->host_budget,
                     planner_format_bytes(in->host_budget, b3, sizeof b3));
        }
        fprintf(f, "offload %s: stored and peak bytes are the device's; host budget %s\n",
                planner_offload_name(in->offload), b2);
    }
    fprintf(f, "%-10s %16s %16s %16s %11s %11s %10s %10s %8s", "mode", "stored_bytes",
            "workspace_bytes", "peak_bytes", "peak_GiB", "stored/L/tok", "recompute%", "step_ms",
            "max_B");
    if (off) fprintf(f, " %16s %11s", "host_bytes", "host_GiB");
    fprintf(f, "\n");
    for (int i = 0; i < PLAN_NUM_ROWS; i++) {
        const PlanRow *r = &rows[i];
        char name[32];
        switch (r->mode) {
        case RECOMPUTE_NONE: snprintf(name, sizeof name, "0"); break;
        case RECOMPUTE_BLOCK: snprintf(name, sizeof name, "1"); break;
        case RECOMPUTE_SEGMENTS: snprintf(name, sizeof name, "2,k=%d", r->checkpoint_every); break;
        case RECOMPUTE_SELECTIVE: snprintf(name, sizeof name, "selective"); break;
        default: snprintf(name, sizeof name, r->fits ? "auto" : "auto:none"); break;
        }
        char ms[32] = "-";
        if (r->step_ns >= 0) snprintf(ms, sizeof ms, "%.3f", r->step_ns / 1e6);
        fprintf(f, "%-10s %16zu %16zu %16zu %11.3f %11.1f %10.3f %10s %8d", name, r->stored,
                r->workspace, r->peak, r->peak / 1073741824.0, r->stored / tok_layers,
                r->recompute_pct, ms, r->max_batch);
        if (off) fprintf(f, " %16zu %11.3f", r->host, r->host / 1073741824.0);
        fprintf(f, "\n");
    }
    fprintf(f, "stored/L/tok: stored bytes per layer per token. recompute%%: re-done forward "
               "FLOPs over one step's forward+backward FLOPs (flops.h). step_ms: predicted time "
               "of an optimizer step of %d micro-batch%s from measured op costs (opcost.h; - "
               "without them: auto then minimises recomputed FLOPs with full and selective "
               "tapes). max_B: largest micro-batch at T=%d whose peak fits the budget (for "
               "auto: with any schedule of its tape kinds, however much it recomputes).%s",
            grad_accum, grad_accum == 1 ? "" : "es", in->T,
            rows[PLAN_NUM_ROWS - 1].fits ? "" : " auto:none: nothing fits; the row is the "
                                                "smallest peak any schedule reaches.");
    if (off)
        fprintf(f, " host_bytes: the host tier (--offload); max_B also keeps it within the host "
                   "budget.%s", in->offload & OFFLOAD_CHECKPOINTS
                                 ? planner_weighs_offload(in, costs)
                                       ? " auto: keeps, offloads or rebuilds the stored inputs "
                                         "by predicted time (measured op and copy costs); its "
                                         "row is its choice, its max_B that of the inputs kept "
                                         "on the device."
                                       : " auto chooses as if the stored inputs stayed on the "
                                         "device (it weighs offload only with measured op and "
                                         "copy costs); its row shows that schedule with them "
                                         "offloaded, and its max_B is without."
                                 : "");
    if (in->cfg.num_layers > SOLVER_MAX_LAYERS)
        fprintf(f, " auto past %d layers (the solver's limit): inputs kept + top tapes, or "
                   "segments: every block input stored, tapes on the top blocks (two kinds), "
                   "the rest re-forwarded; below mode 1's peak, "
                   "Chen's segments for every k.", SOLVER_MAX_LAYERS);
    fprintf(f, "\n");
    return 0;
}
