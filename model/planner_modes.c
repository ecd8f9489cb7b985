/* model/planner_modes.c — --recompute auto and the --plan table (planner.h).
 *
 * Both are built from planner_plan / planner_units (bytes), flops.h (work)
 * and the solver (solver.h); no number here is computed another way. */
#include "planner.h"

#include <limits.h>
#include <string.h>

#include "flops.h"
#include "solver.h"

/* The solver's table for this shape, capped at the tape slots the budget
 * can hold, and at least one of each kind: the smallest schedules (also at
 * a larger B, for --plan's max_B) need one tape of either kind. When mode
 * 0's slots fit, zero recompute is reachable only with them (every x_l and
 * full tape is live at the head), so one selective slot is enough. */
static SolverTable *auto_table(const PlanInput *in, size_t budget, FlopCounts *fc, char *err,
                               size_t err_len)
{
    int L = in->cfg.num_layers, cap_full = 1, cap_sel = 1;
    PlanUnits u;
    planner_units(in, &u);
    flops_count(&in->cfg, in->B, in->T, fc);
    SolverCosts c = {fc->block_fwd, fc->block_fwd_noout, fc->block_sel};
    if (planner_slots_total(&u, L, L, 0) <= budget) {
        cap_full = L;
    } else {
        while (cap_full < L && planner_slots_total(&u, 1, cap_full + 1, 0) <= budget) cap_full++;
        while (cap_sel < L && planner_slots_total(&u, 1, 0, cap_sel + 1) <= budget) cap_sel++;
    }
    return solver_table_build(L, &c, cap_full, cap_sel, err, err_len);
}

/* The chosen schedule's numbers into *res, checked against what the search
 * predicted: its byte and work model must be the planner's and flops.h's to
 * the byte and the FLOP; a mismatch is a bug, never a silent plan. Frees s
 * on failure. */
static int auto_finish(const PlanInput *in, const FlopCounts *fc, Schedule *s, size_t bytes,
                       long long recompute, const char *what, AutoResult *res, char *err,
                       size_t err_len)
{
    MemoryPlan p;
    char verr[256];
    planner_plan(in, s, &p);
    res->peak = p.total;
    res->recompute_flops = flops_recompute(fc, s);
    res->n_res = s->n_res_slots;
    res->n_sel = schedule_count_tapes(s, TAPE_SELECTIVE, NULL);
    res->n_full = s->n_tape_slots - res->n_sel;
    int invalid = schedule_validate(s, verr, sizeof verr) != 0;
    if (invalid || p.total != bytes || res->recompute_flops != recompute) {
        snprintf(err, err_len, "--recompute auto: internal error: %s schedule %s (planned %zu "
                 "bytes, search %zu; recompute %lld, search %lld)", what,
                 invalid ? verr : "valid", p.total, bytes, res->recompute_flops, recompute);
        schedule_free(s);
        return -1;
    }
    return 0;
}

static int auto_with_table(const PlanInput *in, size_t budget, const SolverTable *t,
                           const FlopCounts *fc, Schedule *s, AutoResult *res, char *err,
                           size_t err_len)
{
    PlanUnits u;
    SolverChoice ch, smallest;
    int L = in->cfg.num_layers;
    planner_units(in, &u);
    memset(res, 0, sizeof *res);
    res->family = AUTO_SOLVER;
    res->fits = solver_pick(t, L, &u, budget, &ch);
    solver_pick(t, L, &u, 0, &smallest);
    res->min_peak = smallest.bytes;
    if (solver_schedule(t, L, &ch, s, err, err_len) != 0) return -1;
    return auto_finish(in, fc, s, ch.bytes, ch.recompute, "solver", res, err, err_len);
}

/* One schedule of the restricted families: AUTO_INPUTS_KEPT with n_full
 * and n_sel kept tapes, or AUTO_SEGMENTS with segments of k blocks. */
typedef struct {
    int family, n_full, n_sel, k;
    size_t bytes;
    long long recompute;
} FamilyCand;

typedef struct {
    const PlanUnits *u;
    const FlopCounts *fc;
    int L;
    size_t budget;
    int any_fits, any;
    FamilyCand best;     /* least recompute within budget (ties: fewer bytes) */
    FamilyCand smallest; /* fewest bytes (ties: less recompute) */
} FamilySearch;

static void family_consider(FamilySearch *fs, FamilyCand c)
{
    if (c.bytes <= fs->budget &&
        (!fs->any_fits || c.recompute < fs->best.recompute ||
         (c.recompute == fs->best.recompute && c.bytes < fs->best.bytes))) {
        fs->best = c;
        fs->any_fits = 1;
    }
    if (!fs->any || c.bytes < fs->smallest.bytes ||
        (c.bytes == fs->smallest.bytes && c.recompute < fs->smallest.recompute)) {
        fs->smallest = c;
        fs->any = 1;
    }
}

/* Inputs kept: L residual slots and the kept tapes, plus a workspace full
 * tape when blocks are re-forwarded and no kept full tape can serve as one
 * (schedule_build_inputs_kept); each re-forward stops at the GELU
 * (block_fwd_noout), each selective tape rebuilds LN1, LN2 and GELU in
 * backward (block_sel). */
static FamilyCand family_inputs_kept(const FamilySearch *fs, int n_full, int n_sel)
{
    int n_re = fs->L - n_full - n_sel;
    FamilyCand c = {AUTO_INPUTS_KEPT, n_full, n_sel, 0, 0, 0};
    c.bytes = planner_slots_total(fs->u, fs->L, n_full + (n_re > 0 && n_full == 0), n_sel);
    c.recompute = n_re * fs->fc->block_fwd_noout + n_sel * fs->fc->block_sel;
    return c;
}

/* Segments of k: ceil(L/k) stored checkpoints, k-1 workspace inputs and k
 * workspace full tapes; every block is re-run once, writing its output
 * (block_fwd) except the last of each segment (block_fwd_noout). */
static FamilyCand family_segments(const FamilySearch *fs, int k)
{
    int nseg = (fs->L + k - 1) / k;
    FamilyCand c = {AUTO_SEGMENTS, 0, 0, k, 0, 0};
    c.bytes = planner_slots_total(fs->u, nseg + k - 1, k, 0);
    c.recompute = (long long)(fs->L - nseg) * fs->fc->block_fwd +
                  (long long)nseg * fs->fc->block_fwd_noout;
    return c;
}

/* The (n_full, n_sel) plane has O(L^2) points, but for a fixed n_full only
 * three can win. With m = L - n_full blocks below the full tapes: n_sel = m
 * (nothing re-forwarded: the least recompute at this n_full), and among
 * n_sel < m, where bytes grow and recompute falls with n_sel
 * (block_sel < block_fwd_noout), n_sel = 0 (the fewest bytes) and the
 * largest n_sel that fits. (For n_full > 0 the byte formula is the same at
 * n_sel = m; the separate case only matters at n_full = 0.) So the search
 * is O(L), which keeps --plan's max_B bisection (about 60 searches) fast at
 * 4096 layers. Returns 1 when a candidate fits. */
static int family_search(const PlanInput *in, size_t budget, FamilySearch *fs, PlanUnits *u,
                         FlopCounts *fc)
{
    int L = in->cfg.num_layers;
    planner_units(in, u);
    flops_count(&in->cfg, in->B, in->T, fc);
    memset(fs, 0, sizeof *fs);
    fs->u = u;
    fs->fc = fc;
    fs->L = L;
    fs->budget = budget;
    for (int n_full = 0; n_full <= L; n_full++) {
        int m = L - n_full;
        family_consider(fs, family_inputs_kept(fs, n_full, m));
        if (m == 0) continue;
        family_consider(fs, family_inputs_kept(fs, n_full, 0));
        /* bytes(n_sel) = base + n_sel * sel for 0 < n_sel < m */
        size_t base = planner_slots_total(u, L, n_full > 0 ? n_full : 1, 0) + u->sel_ws;
        if (m >= 2 && base <= budget && (budget - base) / u->sel >= 1) {
            size_t most = (budget - base) / u->sel;
            int n_sel = most < (size_t)(m - 1) ? (int)most : m - 1;
            family_consider(fs, family_inputs_kept(fs, n_full, n_sel));
        }
    }
    for (int k = 1; k <= L; k++) family_consider(fs, family_segments(fs, k));
    return fs->any_fits;
}

int planner_auto_family(const PlanInput *in, size_t budget, Schedule *s, AutoResult *res,
                        char *err, size_t err_len)
{
    FamilySearch fs;
    PlanUnits u;
    FlopCounts fc;
    memset(res, 0, sizeof *res);
    memset(s, 0, sizeof *s);
    if (in->cfg.num_layers < 1) {
        snprintf(err, err_len, "--recompute auto: need at least one layer (got %d)",
                 in->cfg.num_layers);
        return -1;
    }
    res->fits = family_search(in, budget, &fs, &u, &fc);
    res->min_peak = fs.smallest.bytes;
    const FamilyCand *c = res->fits ? &fs.best : &fs.smallest;
    res->family = c->family;
    if (c->family == AUTO_SEGMENTS) {
        if (schedule_build_segments(s, in->cfg.num_layers, c->k, err, err_len) != 0) return -1;
        s->mode = RECOMPUTE_AUTO;
        res->checkpoint_every = c->k;
    } else if (schedule_build_inputs_kept(s, in->cfg.num_layers, c->n_full, c->n_sel, err,
                                          err_len) != 0) {
        return -1;
    }
    return auto_finish(in, &fc, s, c->bytes, c->recompute,
                       c->family == AUTO_SEGMENTS ? "segments" : "inputs-kept", res, err,
                       err_len);
}

int planner_auto(const PlanInput *in, size_t budget, Schedule *s, AutoResult *res, char *err,
                 size_t err_len)
{
    if (in->cfg.num_layers > SOLVER_MAX_LAYERS)
        return planner_auto_family(in, budget, s, res, err, err_len);
    FlopCounts fc;
    SolverTable *t = auto_table(in, budget, &fc, err, err_len);
    if (!t) return -1;
    int rc = auto_with_table(in, budget, t, &fc, s, res, err, err_len);
    solver_table_free(t);
    return rc;
}

/* Does micro-batch B (same T) fit budget: the fixed schedule s, or, when s
 * is NULL, any schedule the solver can make (its feasibility does not
 * depend on B), or, when t is NULL too (past the solver's layer limit),
 * any schedule of the restricted families. */
static int fits_at(const PlanInput *in, int B, size_t budget, const Schedule *s,
                   const SolverTable *t)
{
    PlanInput b = *in;
    b.B = B;
    if (s) {
        MemoryPlan p;
        planner_plan(&b, s, &p);
        return p.total <= budget;
    }
    PlanUnits u;
    if (!t) {
        FamilySearch fs;
        FlopCounts fc;
        return family_search(&b, budget, &fs, &u, &fc);
    }
    SolverChoice ch;
    planner_units(&b, &u);
    return solver_pick(t, b.cfg.num_layers, &u, budget, &ch);
}

/* Largest B that fits, by doubling then bisection (the plan grows with B).
 * B stays where B*T fits an int and every byte count fits 62 bits. */
static int max_batch(const PlanInput *in, size_t budget, const Schedule *s, const SolverTable *t)
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

static void fill_row(PlanRow *row, const PlanInput *in, const Schedule *s, const FlopCounts *fc)
{
    MemoryPlan p;
    planner_plan(in, s, &p);
    row->stored = p.bytes[MEM_ACTIVATIONS];
    row->workspace = p.bytes[MEM_WORKSPACE];
    row->peak = p.total;
    row->recompute_flops = flops_recompute(fc, s);
    row->step_flops = fc->step;
    row->recompute_pct = 100.0 * (double)row->recompute_flops / (double)fc->step;
}

int planner_mode_rows(const PlanInput *in, size_t budget, int k, PlanRow rows[PLAN_NUM_ROWS],
                      char *err, size_t err_len)
{
    static const int modes[PLAN_NUM_ROWS] = {RECOMPUTE_NONE, RECOMPUTE_SELECTIVE,
                                             RECOMPUTE_BLOCK, RECOMPUTE_SEGMENTS, RECOMPUTE_AUTO};
    int L = in->cfg.num_layers;
    if (k == 0) k = schedule_default_checkpoint_every(L);
    FlopCounts fc;
    /* Past the solver's layer limit there is no table: the auto row is
     * planner_auto_family's. */
    SolverTable *t = NULL;
    if (L > SOLVER_MAX_LAYERS) flops_count(&in->cfg, in->B, in->T, &fc);
    else if (!(t = auto_table(in, budget, &fc, err, err_len))) return -1; /* fills fc too */
    int rc = -1;
    for (int i = 0; i < PLAN_NUM_ROWS; i++) {
        Schedule s;
        PlanRow *row = &rows[i];
        memset(row, 0, sizeof *row);
        row->mode = modes[i];
        if (modes[i] == RECOMPUTE_AUTO) {
            AutoResult ar;
            if ((t ? auto_with_table(in, budget, t, &fc, &s, &ar, err, err_len)
                   : planner_auto_family(in, budget, &s, &ar, err, err_len)) != 0)
                goto done;
            row->fits = ar.fits;
        } else {
            int b = modes[i] == RECOMPUTE_SEGMENTS
                        ? schedule_build_segments(&s, L, k, err, err_len)
                        : schedule_build(&s, modes[i], L, err, err_len);
            if (b != 0) goto done;
            row->checkpoint_every = s.checkpoint_every;
        }
        fill_row(row, in, &s, &fc);
        if (modes[i] != RECOMPUTE_AUTO) row->fits = row->peak <= budget;
        row->max_batch = max_batch(in, budget, modes[i] == RECOMPUTE_AUTO ? NULL : &s, t);
        schedule_free(&s);
    }
    rc = 0;
done:
    solver_table_free(t);
    return rc;
}

int planner_print_modes(FILE *f, const PlanInput *in, size_t budget, int k, char *err,
                        size_t err_len)
{
    PlanRow rows[PLAN_NUM_ROWS];
    if (planner_mode_rows(in, budget, k, rows, err, err_len) != 0) return -1;
    char b1[32];
    double tok_layers = (double)in->B * in->T * in->cfg.num_layers;
    fprintf(f, "plan: %d layers, %d heads, C=%d, V=%d, B=%d, T=%d, %s; budget %zu bytes (%s)\n",
            in->cfg.num_layers, in->cfg.num_heads, in->cfg.channels, in->cfg.vocab_size, in->B,
            in->T, dtype_name(in->dtype), budget, planner_format_bytes(budget, b1, sizeof b1));
    fprintf(f, "%-10s %16s %16s %16s %11s %11s %10s %8s\n", "mode", "stored_bytes",
            "workspace_bytes", "peak_bytes", "peak_GiB", "stored/L/tok", "recompute%", "max_B");
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
        fprintf(f, "%-10s %16zu %16zu %16zu %11.3f %11.1f %10.3f %8d\n", name, r->stored,
                r->workspace, r->peak, r->peak / 1073741824.0, r->stored / tok_layers,
                r->recompute_pct, r->max_batch);
    }
    fprintf(f, "stored/L/tok: stored bytes per layer per token. recompute%%: re-done forward "
               "FLOPs over one step's forward+backward FLOPs (flops.h). max_B: largest micro-"
               "batch at T=%d whose peak fits the budget (for auto: with any schedule, however "
               "much it recomputes).%s", in->T,
            rows[PLAN_NUM_ROWS - 1].fits ? "" : " auto:none: nothing fits; the row is the "
                                                "smallest peak any schedule reaches.");
    if (in->cfg.num_layers > SOLVER_MAX_LAYERS)
        fprintf(f, " auto past %d layers (the solver's limit): inputs kept + top tapes, or "
                   "segments: every block input stored, full tapes on the top blocks and "
                   "selective tapes below them, the rest re-forwarded; below mode 1's peak, "
                   "Chen's segments for every k.", SOLVER_MAX_LAYERS);
    fprintf(f, "\n");
    return 0;
}
