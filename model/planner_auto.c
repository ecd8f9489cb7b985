/* model/planner_auto.c — --recompute auto (planner.h): the solver's DP and
 * the closed-form families, with FLOP or measured costs.
 *
 * Every number is built from planner_plan / planner_units_kinds (bytes),
 * opcost.h (work: FLOPs via flops.h, or measured time) and the solver
 * (solver.h); auto_finish checks the chosen schedule against them. */
#include "planner.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "flops.h"
#include "opcost.h"
#include "solver.h"

/* The costs a search works with: per-op costs (FLOPs when the caller gave
 * none) and, from them, a block's forward with and without output. */
typedef struct {
    OpCosts oc;
    int timed; /* measured costs: search the frontier; else full + selective */
    long long fwd, fwd_last;
} Costs;

static void costs_of(const PlanInput *in, const OpCosts *given, Costs *c)
{
    c->timed = given && given->unit == OPCOST_NS;
    if (c->timed) c->oc = *given;
    else flops_op_costs(&in->cfg, in->B, in->T, &c->oc);
    c->fwd = opcost_block_fwd(&c->oc);
    c->fwd_last = opcost_block_fwd_last(&c->oc);
}

/* The solver's table for this shape and pair of kinds, capped at the tape
 * slots the budget can hold, and at least one of each kind: the smallest
 * schedules (also at a larger B, for --plan's max_B) need one tape of
 * either kind. When L residual and L hi slots fit, the least work is
 * reachable with them alone (every x_l and hi tape live at the head, each
 * backward at the least rebuild), so one lo slot is enough. */
static SolverTable *auto_table(const PlanInput *in, size_t budget, const Costs *c, int hi,
                               int lo, char *err, size_t err_len)
{
    int L = in->cfg.num_layers, cap_full = 1, cap_sel = 1;
    PlanUnits u;
    planner_units_kinds(in, hi, lo, &u);
    SolverCosts sc = {c->fwd, c->fwd_last, opcost_rebuild(&c->oc, lo),
                      opcost_rebuild(&c->oc, hi), hi, lo};
    if (planner_slots_total(&u, L, L, 0) <= budget) {
        cap_full = L;
    } else {
        while (cap_full < L && planner_slots_total(&u, 1, cap_full + 1, 0) <= budget) cap_full++;
        while (cap_sel < L && planner_slots_total(&u, 1, 0, cap_sel + 1) <= budget) cap_sel++;
    }
    return solver_table_build(L, planner_block(in), &sc, cap_full, cap_sel, err, err_len);
}

/* The chosen schedule's numbers into *res, checked against what the search
 * predicted: its byte and work model must be the planner's and opcost.h's
 * to the byte and the unit; a mismatch is a bug, never a silent plan.
 * Frees s on failure. */
static int auto_finish(const PlanInput *in, const Costs *c, Schedule *s, size_t bytes,
                       long long recompute, const char *what, AutoResult *res, char *err,
                       size_t err_len)
{
    MemoryPlan p;
    FlopCounts fc;
    char verr[256];
    planner_plan(in, s, &p);
    flops_count(&in->cfg, in->B, in->T, &fc);
    res->peak = p.total;
    res->recompute_flops = flops_recompute(&fc, s);
    res->recompute = opcost_recompute(&c->oc, s);
    res->n_res = s->n_res_slots;
    res->n_sel = res->n_full = 0;
    for (int j = 0; j < s->n_tape_slots; j++) {
        int hi = (int)s->tape_kind[j] == res->hi_kind;
        res->n_full += hi;
        res->n_sel += !hi;
    }
    int invalid = schedule_validate(s, verr, sizeof verr) != 0;
    if (invalid || p.total != bytes || res->recompute != recompute) {
        snprintf(err, err_len, "--recompute auto: internal error: %s schedule %s (planned %zu "
                 "bytes, search %zu; recompute %lld, search %lld)", what,
                 invalid ? verr : "valid", p.total, bytes, res->recompute, recompute);
        schedule_free(s);
        return -1;
    }
    return 0;
}

static int auto_with_table(const PlanInput *in, size_t budget, const SolverTable *t,
                           const Costs *c, Schedule *s, AutoResult *res, char *err,
                           size_t err_len)
{
    PlanUnits u;
    SolverChoice ch, smallest;
    int L = in->cfg.num_layers;
    const SolverCosts *sc = solver_table_costs(t);
    planner_units_kinds(in, sc->full_kind, sc->sel_kind, &u);
    memset(res, 0, sizeof *res);
    res->family = AUTO_SOLVER;
    res->hi_kind = sc->full_kind;
    res->lo_kind = sc->sel_kind;
    res->fits = solver_pick(t, L, &u, budget, &ch);
    solver_pick(t, L, &u, 0, &smallest);
    res->min_peak = smallest.bytes;
    if (solver_schedule(t, L, &ch, s, err, err_len) != 0) return -1;
    return auto_finish(in, c, s, ch.bytes, ch.recompute, "solver", res, err, err_len);
}

/* ---- the closed-form families ---- */

/* One schedule of the restricted families: AUTO_INPUTS_KEPT with n_full hi
 * and n_sel lo tapes, or AUTO_SEGMENTS with segments of k blocks. */
typedef struct {
    int family, n_full, n_sel, k, hi, lo;
    size_t bytes;
    long long recompute;
    long long copy; /* offloaded: the copies' exposed time (opcost_offload_copy); else 0 */
    size_t host;    /* offloaded: host bytes (the stored inputs, and the optimizer's) */
    int n_kept;     /* offloaded: stored inputs kept on the device (Schedule.n_res_kept) */
} FamilyCand;

typedef struct {
    const Costs *c;
    int L;
    size_t budget;
    /* off: every stored input of a candidate lives on the host (the device
     * holds the ring, OFFLOAD_RING_SLOTS residual slots), bounded by
     * host_budget (0: none); host_opt: --offload optimizer's host bytes */
    int off;
    size_t host_budget, host_opt, res;
    int any_fits, any;
    FamilyCand best;     /* least recompute within budget (ties: fewer bytes) */
    FamilyCand smallest; /* fewest bytes (ties: less recompute) */
} FamilySearch;

/* The device residual slots of n stored inputs (the ring when offloaded),
 * and the candidate's host bytes and copy time. */
static int dev_res(const FamilySearch *fs, int n)
{
    return fs->off && n > OFFLOAD_RING_SLOTS ? OFFLOAD_RING_SLOTS : n;
}

/* Offloaded: of the n_stored inputs, keep on the device as many as the budget
 * holds beside the rest (each kept one saves its copies and its host slot, and
 * costs one device slot), then the host bytes and the copy time of the rest.
 * c->bytes comes in with all of them offloaded (the ring: min(n_stored, 2)
 * slots). With R residual slots affordable for them: R >= n_stored keeps all
 * but one (one through a ring of one: the same bytes as keeping it, one copy
 * fewer than two through a ring of two); otherwise R - 2 are kept and the
 * rest pass through the ring of two. Keeping all is the device-only search's. */
static void host_side(const FamilySearch *fs, int n_stored, FamilyCand *c)
{
    c->n_kept = 0;
    if (fs->off && n_stored > 1) {
        size_t ring = (size_t)(n_stored < OFFLOAD_RING_SLOTS ? n_stored : OFFLOAD_RING_SLOTS);
        size_t base = c->bytes - ring * fs->res;
        size_t R = fs->budget > base ? (fs->budget - base) / fs->res : 0;
        if (R >= (size_t)n_stored) c->n_kept = n_stored - 1;
        else if (R > ring) c->n_kept = (int)(R - ring);
        int h = n_stored - c->n_kept;
        c->bytes = base + (size_t)(c->n_kept + (h < OFFLOAD_RING_SLOTS ? h : OFFLOAD_RING_SLOTS)) *
                              fs->res;
    }
    int n_host = n_stored - c->n_kept;
    c->copy = fs->off ? opcost_offload_copy(&fs->c->oc, fs->res, n_host) : 0;
    c->host = fs->host_opt + (fs->off ? (size_t)n_host * fs->res : 0);
}

static void family_consider(FamilySearch *fs, FamilyCand c)
{
    long long t = c.recompute + c.copy, best_t = fs->best.recompute + fs->best.copy;
    if (c.bytes <= fs->budget && (!fs->host_budget || c.host <= fs->host_budget) &&
        (!fs->any_fits || t < best_t || (t == best_t && c.bytes < fs->best.bytes))) {
        fs->best = c;
        fs->any_fits = 1;
    }
    if (!fs->any || c.bytes < fs->smallest.bytes ||
        (c.bytes == fs->smallest.bytes && c.recompute < fs->smallest.recompute)) {
        fs->smallest = c;
        fs->any = 1;
    }
}

/* --offload optimizer's host bytes (0 without it): no schedule changes them. */
static size_t host_optimizer(const PlanInput *in)
{
    PlanInput o = *in;
    Schedule s;
    MemoryPlan p;
    char err[256];
    o.offload &= OFFLOAD_OPTIMIZER;
    if (!o.offload || schedule_build(&s, planner_block(in), RECOMPUTE_BLOCK, in->cfg.num_layers,
                                     err, sizeof err) != 0)
        return 0;
    planner_plan(&o, &s, &p);
    schedule_free(&s);
    return p.host_total;
}

/* The kinds of a pair and what a backward from each rebuilds. */
typedef struct {
    int hi, lo;
    long long c_hi, c_lo;
    PlanUnits u;
} Pair;

/* Inputs kept: L residual slots and the kept tapes, plus a workspace hi
 * tape when blocks are re-forwarded and no kept hi tape can serve as one
 * (schedule_build_inputs_kept); each re-forward stops at the GELU
 * (fwd_last) and its backward rebuilds the hi kind's tensors, each kept
 * tape's backward its kind's. */
static FamilyCand family_inputs_kept(const FamilySearch *fs, const Pair *p, int n_full,
                                     int n_sel)
{
    int n_re = fs->L - n_full - n_sel;
    FamilyCand c = {AUTO_INPUTS_KEPT, n_full, n_sel, 0, p->hi, p->lo, 0, 0, 0, 0, 0};
    c.bytes = planner_slots_total(&p->u, dev_res(fs, fs->L), n_full + (n_re > 0 && n_full == 0),
                                  n_sel);
    c.recompute = n_re * (fs->c->fwd_last + p->c_hi) + n_full * p->c_hi + n_sel * p->c_lo;
    host_side(fs, fs->L, &c);
    return c;
}

/* The (n_full, n_sel) plane has O(L^2) points, but for a fixed n_full only
 * three can win. With m = L - n_full blocks below the hi tapes: n_sel = m
 * (nothing re-forwarded: the least recompute at this n_full), and among
 * n_sel < m, where bytes grow and recompute falls with n_sel (a lo tape's
 * rebuild costs less than a re-forward; when not, n_sel = 0 wins), n_sel =
 * 0 (the fewest bytes) and the largest n_sel that fits. (For n_full > 0
 * the byte formula is the same at n_sel = m; the separate case only
 * matters at n_full = 0.) So the search is O(L) per pair, which keeps
 * --plan's max_B bisection (about 60 searches) fast at 4096 layers. */
static void family_pair(FamilySearch *fs, const Pair *p)
{
    int L = fs->L;
    for (int n_full = 0; n_full <= L; n_full++) {
        int m = L - n_full;
        family_consider(fs, family_inputs_kept(fs, p, n_full, m));
        if (m == 0) continue;
        family_consider(fs, family_inputs_kept(fs, p, n_full, 0));
        if (p->c_lo >= fs->c->fwd_last + p->c_hi) continue;
        /* bytes(n_sel) = base + n_sel * lo for 0 < n_sel < m */
        size_t base = planner_slots_total(&p->u, dev_res(fs, L), n_full > 0 ? n_full : 1, 1) -
                      p->u.lo;
        if (m >= 2 && base <= fs->budget && (fs->budget - base) / p->u.lo >= 1) {
            size_t most = (fs->budget - base) / p->u.lo;
            int n_sel = most < (size_t)(m - 1) ? (int)most : m - 1;
            family_consider(fs, family_inputs_kept(fs, p, n_full, n_sel));
        }
    }
}

/* Segments of k: ceil(L/k) stored checkpoints, k-1 workspace inputs and k
 * workspace full tapes; every block is re-run once, writing its output
 * (fwd) except the last of each segment (fwd_last). */
static void family_segments(FamilySearch *fs, const PlanUnits *u_full)
{
    int L = fs->L;
    for (int k = 1; k <= L; k++) {
        int nseg = (L + k - 1) / k;
        FamilyCand c = {AUTO_SEGMENTS, 0, 0, k, TAPE_FULL, TAPE_FULL, 0, 0, 0, 0, 0};
        c.bytes = planner_slots_total(u_full, dev_res(fs, nseg) + k - 1, k, 0);
        c.recompute = (long long)(L - nseg) * fs->c->fwd + (long long)nseg * fs->c->fwd_last;
        host_side(fs, nseg, &c);
        family_consider(fs, c);
    }
}

static void pair_of(const PlanInput *in, const Costs *c, int hi, int lo, Pair *p)
{
    p->hi = hi;
    p->lo = lo;
    p->c_hi = opcost_rebuild(&c->oc, hi);
    p->c_lo = opcost_rebuild(&c->oc, lo);
    planner_units_kinds(in, hi, lo, &p->u);
}

/* The families: for FLOP costs with full and selective tapes, for measured
 * ones with every pair of frontier kinds (hi no smaller than lo) and full
 * and selective (so that modes 0, 1 and selective are candidates, also
 * when selective is not on the frontier), or only with the pair given (hi
 * >= 0). Returns 1 when a candidate fits. */
static int family_search_in(const PlanInput *in, size_t budget, const Costs *c, int hi,
                            int lo, int off, FamilySearch *fs)
{
    memset(fs, 0, sizeof *fs);
    fs->c = c;
    fs->L = in->cfg.num_layers;
    fs->budget = budget;
    if (off) {
        PlanUnits u;
        planner_units_kinds(in, TAPE_FULL, TAPE_FULL, &u);
        fs->off = 1;
        fs->res = u.res;
        fs->host_budget = in->host_budget;
        fs->host_opt = host_optimizer(in);
    }
    Pair p;
    int sel = (int)planner_block(in)->selective;
    if (hi >= 0 || !c->timed) {
        pair_of(in, c, hi >= 0 ? hi : TAPE_FULL, hi >= 0 ? lo : sel, &p);
        family_pair(fs, &p);
    } else {
        KindCost *front = malloc(sizeof *front * (size_t)tape_kinds(planner_block(in)));
        int n = front ? opcost_frontier(&c->oc, in, front) : 0;
        for (int i = 0; i < n; i++)
            for (int j = i; j < n; j++) {
                pair_of(in, c, front[i].kind, front[j].kind, &p);
                family_pair(fs, &p);
            }
        free(front);
        pair_of(in, c, TAPE_FULL, sel, &p);
        family_pair(fs, &p);
    }
    PlanUnits u_full;
    planner_units_kinds(in, TAPE_FULL, TAPE_FULL, &u_full);
    family_segments(fs, &u_full);
    return fs->any_fits;
}

/* The search on the device alone, and with the offloaded checkpoints too. */
static int family_search(const PlanInput *in, size_t budget, const Costs *c, int hi, int lo,
                         FamilySearch *fs)
{
    return family_search_in(in, budget, c, hi, lo, 0, fs);
}
static int family_search_offload(const PlanInput *in, size_t budget, const Costs *c, int hi,
                                 int lo, FamilySearch *fs)
{
    return family_search_in(in, budget, c, hi, lo, 1, fs);
}

static int family_build(const PlanInput *in, const Costs *c, const FamilyCand *f, Schedule *s,
                        AutoResult *res, char *err, size_t err_len)
{
    res->family = f->family;
    res->hi_kind = f->hi;
    res->lo_kind = f->lo;
    if (f->family == AUTO_SEGMENTS) {
        if (schedule_build_segments(s, planner_block(in), in->cfg.num_layers, f->k, err,
                                    err_len) != 0)
            return -1;
        s->mode = RECOMPUTE_AUTO;
        res->checkpoint_every = f->k;
    } else if (schedule_build_inputs_kept(s, planner_block(in), in->cfg.num_layers, f->n_full,
                                          f->n_sel, f->hi,
                                          f->lo, err, err_len) != 0) {
        return -1;
    }
    s->n_res_kept = f->n_kept;
    return auto_finish(in, c, s, f->bytes, f->recompute,
                       f->family == AUTO_SEGMENTS ? "segments" : "inputs-kept", res, err,
                       err_len);
}

int planner_auto_family(const PlanInput *in, size_t budget, const OpCosts *costs, Schedule *s,
                        AutoResult *res, char *err, size_t err_len)
{
    if (in->offload & OFFLOAD_CHECKPOINTS) { /* its byte model has no ring */
        snprintf(err, err_len, "--offload checkpoints: --recompute auto does not weigh offloaded "
                               "checkpoints yet; give a fixed --recompute mode");
        return -1;
    }
    FamilySearch fs;
    Costs c;
    memset(res, 0, sizeof *res);
    memset(s, 0, sizeof *s);
    if (in->cfg.num_layers < 1) {
        snprintf(err, err_len, "--recompute auto: need at least one layer (got %d)",
                 in->cfg.num_layers);
        return -1;
    }
    costs_of(in, costs, &c);
    res->fits = family_search(in, budget, &c, -1, -1, &fs);
    res->min_peak = fs.smallest.bytes;
    int rc = family_build(in, &c, res->fits ? &fs.best : &fs.smallest, s, res, err, err_len);
    return rc;
}

/* The pair of kinds the DP runs with. FLOP costs: full and selective. With
 * measured costs: the pair of the best inputs-kept schedule at this budget
 * (when it keeps no lo tape, lo is the next frontier kind below hi). When
 * none fits, or segments win, memory is tight: the full tape and the kind
 * whose one slot and workspace take the fewest bytes, so that the DP's
 * smallest schedules (two residual slots and one tape) are the smallest of
 * any kinds. */
static void dp_pair(const PlanInput *in, size_t budget, const Costs *c, int *hi, int *lo)
{
    *hi = TAPE_FULL;
    *lo = (int)planner_block(in)->selective;
    if (!c->timed) return;
    size_t least = (size_t)-1;
    for (int k = 0; k < tape_kinds(planner_block(in)); k++) {
        TapeLayout tl;
        planner_tape_layout(in, k, &tl);
        size_t b = planner_tape_bytes(in, k) + tl.ws_bytes;
        if (b < least) {
            least = b;
            *lo = k;
        }
    }
    FamilySearch fs;
    if (!family_search(in, budget, c, -1, -1, &fs) || fs.best.family != AUTO_INPUTS_KEPT)
        return;
    *hi = fs.best.hi;
    *lo = fs.best.lo;
    if (fs.best.n_sel > 0) return;
    KindCost *front = malloc(sizeof *front * (size_t)tape_kinds(planner_block(in)));
    int n = front ? opcost_frontier(&c->oc, in, front) : 0;
    for (int i = 0; i + 1 < n; i++)
        if (front[i].kind == *hi) *lo = front[i + 1].kind;
    free(front);
}

/* --recompute auto with --offload checkpoints: each block input is kept on
 * the device, offloaded to the host, or rebuilt by recompute. Two searches,
 * both exact in bytes: the device-only one (the DP, or the families past
 * its limit: inputs kept or rebuilt), and the families with every stored
 * input on the host (inputs kept: all L go out; segments of k: the ceil(L/k)
 * checkpoints go out and the rest are rebuilt), whose device side is the
 * ring. Each candidate's time is its recompute plus the copies' exposed
 * time (opcost_offload_copy), and must fit the device budget and, with its
 * host bytes, in->host_budget. The least time wins; a tie keeps the inputs
 * on the device (no host bytes, no copy thread). */
static int auto_offload(const PlanInput *in, size_t budget, const OpCosts *costs, Schedule *s,
                        AutoResult *res, char *err, size_t err_len)
{
    if (!planner_weighs_offload(in, costs)) {
        snprintf(err, err_len, "--recompute auto --offload checkpoints: needs measured op and "
                 "copy costs (--op-costs auto or measure, or a FILE of version %d, on a backend "
                 "with a copy engine) to weigh copies against recompute", 2);
        return -1;
    }
    PlanInput dev = *in;
    dev.offload &= ~OFFLOAD_CHECKPOINTS;
    Schedule sd;
    AutoResult rd;
    if (planner_auto(&dev, budget, costs, &sd, &rd, err, err_len) != 0) return -1;
    size_t host_opt = host_optimizer(in);
    rd.host = host_opt;
    int dev_fits = rd.fits && (!in->host_budget || host_opt <= in->host_budget);
    Costs c;
    costs_of(in, costs, &c);
    FamilySearch fs;
    int off_fits = family_search_offload(in, budget, &c, -1, -1, &fs);
    long long off_t = fs.best.recompute + fs.best.copy;
    int use_off = off_fits && (!dev_fits || off_t < rd.recompute);
    /* none fits: the smaller device peak of the two searches */
    if (!off_fits && !dev_fits) use_off = fs.smallest.bytes < rd.min_peak;
    if (!use_off) {
        *s = sd;
        *res = rd;
        res->fits = dev_fits;
        if (!off_fits && !dev_fits && fs.smallest.bytes < res->min_peak)
            res->min_peak = fs.smallest.bytes;
        return 0;
    }
    schedule_free(&sd);
    const FamilyCand *f = off_fits ? &fs.best : &fs.smallest;
    memset(res, 0, sizeof *res);
    memset(s, 0, sizeof *s);
    if (family_build(in, &c, f, s, res, err, err_len) != 0) return -1;
    res->fits = off_fits;
    res->min_peak = fs.smallest.bytes < rd.min_peak ? fs.smallest.bytes : rd.min_peak;
    res->offload = OFFLOAD_CHECKPOINTS;
    res->host = f->host;
    res->copy = f->copy;
    MemoryPlan p;
    planner_plan(in, s, &p);
    if (p.host_total != f->host) { /* the host side's model is the planner's, to the byte */
        snprintf(err, err_len, "--recompute auto: internal error: offloaded schedule's host "
                 "bytes %zu, search %zu", p.host_total, f->host);
        schedule_free(s);
        return -1;
    }
    return 0;
}

int planner_weighs_offload(const PlanInput *in, const OpCosts *costs)
{
    return (in->offload & OFFLOAD_CHECKPOINTS) && costs && costs->unit == OPCOST_NS &&
           costs->copy_bw > 0;
}

int planner_auto(const PlanInput *in, size_t budget, const OpCosts *costs, Schedule *s,
                 AutoResult *res, char *err, size_t err_len)
{
    if (in->offload & OFFLOAD_CHECKPOINTS)
        return auto_offload(in, budget, costs, s, res, err, err_len);
    if (in->cfg.num_layers > SOLVER_MAX_LAYERS)
        return planner_auto_family(in, budget, costs, s, res, err, err_len);
    Costs c;
    int hi, lo;
    costs_of(in, costs, &c);
    dp_pair(in, budget, &c, &hi, &lo);
    SolverTable *t = auto_table(in, budget, &c, hi, lo, err, err_len);
    if (!t) return -1;
    int rc = auto_with_table(in, budget, t, &c, s, res, err, err_len);
    solver_table_free(t);
    return rc;
}

int planner_auto_fits(const PlanInput *in, size_t budget, int hi, int lo)
{
    Costs c;
    costs_of(in, NULL, &c); /* feasibility does not depend on the costs */
    if (in->cfg.num_layers > SOLVER_MAX_LAYERS) {
        FamilySearch fs;
        return family_search(in, budget, &c, hi, lo, &fs);
    }
    /* The least bytes any schedule needs: what solver_pick reports when
     * nothing fits. A table capped at one tape of each kind has it (the
     * smallest schedules hold one tape). */
    char err[256];
    SolverTable *t = auto_table(in, 0, &c, hi, lo, err, sizeof err);
    if (!t) return 0;
    PlanUnits u;
    SolverChoice ch;
    planner_units_kinds(in, hi, lo, &u);
    int fits = solver_pick(t, in->cfg.num_layers, &u, budget, &ch);
    solver_table_free(t);
    return fits;
}
