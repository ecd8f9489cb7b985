/* model/solver.c — see solver.h. */
#include "solver.h"

#include <stdlib.h>
#include <string.h>

struct SolverTable {
    int L;
    int cap_full, cap_sel; /* most tape slots of each kind any query uses */
    SolverCosts c;
    size_t *off;     /* off[n]: first entry of segment length n */
    size_t per_tab;  /* entries in one table */
    /* Three tables, same index: A (nothing of the segment held), H_FULL and
     * H_SEL (the last block's tape held in a slot of that kind, its input
     * gone). r in [0,n-1], f in [0,n], q in [0,n-f]. */
    long long *opt;
};

enum { TAB_A = 0, TAB_H_FULL = 1, TAB_H_SEL = 2 };

/* Stored for "impossible": three of them still add without overflow, and
 * solver_table_build checks that every real total stays below it. */
#define STORED_INF (LLONG_MAX / 4)

/* (f, q) pairs for length n: sum over f of (n - f + 1). */
static size_t pairs(int n) { return (size_t)(n + 1) * (size_t)(n + 2) / 2; }

static size_t index_of(const SolverTable *t, int n, int r, int f, int q)
{
    size_t fbase = (size_t)f * (size_t)(n + 1) - (size_t)f * (size_t)(f - 1) / 2;
    return t->off[n] + (size_t)r * pairs(n) + fbase + (size_t)q;
}

/* Clamp (f, q) for a segment of m blocks in table tab. More than m tape
 * slots never help (nor more than m - 1 free residual slots, clamped in
 * get); surplus tape slots are dropped selective-first, as a full slot does
 * everything a selective one does for no extra work; and no more than the
 * caps (less the held slot in H) exist. */
static void clamp_tapes(const SolverTable *t, int tab, int m, int *f, int *q)
{
    int cf = t->cap_full - (tab == TAB_H_FULL), cq = t->cap_sel - (tab == TAB_H_SEL);
    if (*f > m) *f = m;
    if (*f > cf) *f = cf;
    if (*q > m - *f) *q = m - *f;
    if (*q > cq) *q = cq;
}

static long long get(const SolverTable *t, int tab, int n, int r, int f, int q)
{
    if (n < 1 || n > t->L || r < 0 || f < 0 || q < 0) return SOLVER_INF;
    if (r > n - 1) r = n - 1;
    clamp_tapes(t, tab, n, &f, &q);
    if (f < 0 || q < 0) return SOLVER_INF;
    long long v = t->opt[(size_t)tab * t->per_tab + index_of(t, n, r, f, q)];
    return v >= STORED_INF ? SOLVER_INF : v;
}

long long solver_cost(const SolverTable *t, int n, int r, int f, int q)
{
    return get(t, TAB_A, n, r, f, q);
}

static long long add(long long a, long long b)
{
    return a == SOLVER_INF || b == SOLVER_INF || a > SOLVER_INF - b ? SOLVER_INF : a + b;
}

/* The moves of the recurrence, in the order the backtrack tries them:
 *   BASE     n = 1. A: taped forward then backward (fwd_last, + sel when no
 *            full slot is free). H: the input is the segment's own, the
 *            tape is held: backward, free.
 *   ADVANCE  forward j blocks (1 <= j < n) through a free slot, in place,
 *            taping into any free slot as scratch; solve the last n-j
 *            blocks from x_{s+j} (the held tape, if any, stays held), then
 *            the first j with the slot back (and, in H, the held slot,
 *            freed by the last block's backward).
 *   KEEP     the same, but the j-th block's tape is kept in a free slot of
 *            kind k (its input is overwritten when j > 1): the first j
 *            blocks are then an H problem. j = 1 is rotor's "forward with
 *            all activations saved". */
enum { MOVE_BASE, MOVE_ADVANCE, MOVE_KEEP_FULL, MOVE_KEEP_SEL };

static long long move_cost(const SolverTable *t, int tab, int move, int j, int n, int r, int f,
                           int q)
{
    const SolverCosts *c = &t->c;
    int held_full = tab == TAB_H_FULL, held_sel = tab == TAB_H_SEL;
    if (move == MOVE_BASE) {
        if (n != 1) return SOLVER_INF;
        if (tab != TAB_A) return 0;
        if (f + q < 1) return SOLVER_INF;
        return f >= 1 ? c->fwd_last : add(c->fwd_last, c->sel);
    }
    if (j < 1 || j >= n || r < 1) return SOLVER_INF;
    long long fw = c->fwd > SOLVER_INF / j ? SOLVER_INF : (long long)j * c->fwd;
    if (move == MOVE_ADVANCE) {
        if (f + q < 1) return SOLVER_INF;
        return add(add(fw, get(t, tab, n - j, r - 1, f, q)),
                   get(t, TAB_A, j, r, f + held_full, q + held_sel));
    }
    int keep_full = move == MOVE_KEEP_FULL;
    int f1 = f - keep_full, q1 = q - !keep_full;
    if (f1 < 0 || q1 < 0) return SOLVER_INF;
    return add(add(add(fw, keep_full ? 0 : c->sel), get(t, tab, n - j, r - 1, f1, q1)),
               get(t, keep_full ? TAB_H_FULL : TAB_H_SEL, j, r, f1 + held_full, q1 + held_sel));
}

/* The entry for (m, r, f, q) clamped as in get(), minus the q term: the
 * row start and the largest q the row holds. */
static size_t row_of(const SolverTable *t, int tab, int m, int r, int f, int *qmax)
{
    int q = m;
    if (r > m - 1) r = m - 1;
    clamp_tapes(t, tab, m, &f, &q);
    *qmax = q;
    return (size_t)tab * t->per_tab + index_of(t, m, r, f, 0);
}

static long long min2(long long a, long long b) { return a < b ? a : b; }

/* All three tables at length n: the same recurrence as move_cost, with the
 * moves taken j by j so that the inner loop over q walks rows. */
static void fill_length(SolverTable *t, int n)
{
    const SolverCosts *c = &t->c;
    long long *T = t->opt;
    for (int tab = TAB_A; tab <= TAB_H_SEL; tab++) {
        int hf = tab == TAB_H_FULL, hs = tab == TAB_H_SEL;
        long long *out = T + (size_t)tab * t->per_tab;
        int fmax = n, qcap = n;
        clamp_tapes(t, tab, n, &fmax, &qcap); /* fmax: the row count; q bound per row below */
        /* Rows of different r are independent: each reads shorter lengths only. */
#pragma omp parallel for schedule(dynamic, 1) if (n >= 32)
        for (int r = 0; r < n; r++) {
            for (int f = 0; f <= fmax; f++) {
                int qmax = n;
                clamp_tapes(t, tab, n, &(int){f}, &qmax);
                for (int q = 0; q <= qmax; q++) {
                    long long v = move_cost(t, tab, MOVE_BASE, 0, n, r, f, q);
                    out[index_of(t, n, r, f, q)] = v == SOLVER_INF ? STORED_INF : v;
                }
            }
            for (int j = 1; j < n && r >= 1; j++) {
                int m1 = n - j, m2 = j;
                long long fw = (long long)j * c->fwd, fws = fw + c->sel;
                for (int f = 0; f <= fmax; f++) {
                    long long *o = out + index_of(t, n, r, f, 0);
                    int qa1, qa2, qf1 = 0, qf2 = 0, qs1, qs2;
                    /* ADVANCE: T_tab(m1, r-1, f, q) + A(m2, r, f+hf, q+hs) */
                    const long long *a1 = T + row_of(t, tab, m1, r - 1, f, &qa1);
                    const long long *a2 = T + row_of(t, TAB_A, m2, r, f + hf, &qa2);
                    /* KEEP_FULL: T_tab(m1, r-1, f-1, q) + H_F(m2, r, f-1+hf, q+hs) */
                    const long long *f1 = f ? T + row_of(t, tab, m1, r - 1, f - 1, &qf1) : NULL;
                    const long long *f2 = f ? T + row_of(t, TAB_H_FULL, m2, r, f - 1 + hf, &qf2)
                                            : NULL;
                    /* KEEP_SEL: T_tab(m1, r-1, f, q-1) + H_S(m2, r, f+hf, q-1+hs) */
                    const long long *s1 = T + row_of(t, tab, m1, r - 1, f, &qs1);
                    const long long *s2 = T + row_of(t, TAB_H_SEL, m2, r, f + hf, &qs2);
                    int qmax = n;
                    clamp_tapes(t, tab, n, &(int){f}, &qmax);
                    for (int q = 0; q <= qmax; q++) {
                        long long best = o[q];
                        if (f + q >= 1)
                            best = min2(best, fw + a1[q < qa1 ? q : qa1] +
                                                  a2[q + hs < qa2 ? q + hs : qa2]);
                        if (f)
                            best = min2(best, fw + f1[q < qf1 ? q : qf1] +
                                                  f2[q + hs < qf2 ? q + hs : qf2]);
                        if (q)
                            best = min2(best, fws + s1[q - 1 < qs1 ? q - 1 : qs1] +
                                                  s2[q - 1 + hs < qs2 ? q - 1 + hs : qs2]);
                        o[q] = best < STORED_INF ? best : STORED_INF;
                    }
                }
            }
        }
    }
}

SolverTable *solver_table_build(int L, const SolverCosts *c, int cap_full, int cap_sel,
                                char *err, size_t err_len)
{
    if (L < 1 || L > SOLVER_MAX_LAYERS) {
        snprintf(err, err_len, "--recompute auto: the solver handles 1..%d layers (got %d)",
                 SOLVER_MAX_LAYERS, L);
        return NULL;
    }
    /* Any schedule runs at most L*L forwards and L selective rebuilds. */
    if (c->fwd < 0 || c->fwd_last < 0 || c->sel < 0 ||
        (double)(c->fwd + c->fwd_last + c->sel) * ((double)L * L + 1) >= (double)STORED_INF) {
        snprintf(err, err_len, "solver: costs out of range (fwd %lld, fwd_last %lld, sel %lld)",
                 c->fwd, c->fwd_last, c->sel);
        return NULL;
    }
    SolverTable *t = calloc(1, sizeof *t);
    if (t) t->off = malloc(sizeof(size_t) * (size_t)(L + 2));
    if (!t || !t->off) goto oom;
    t->L = L;
    t->c = *c;
    t->cap_full = cap_full < 0 || cap_full > L ? L : cap_full;
    t->cap_sel = cap_sel < 0 || cap_sel > L ? L : cap_sel;
    size_t total = 0;
    for (int n = 1; n <= L; n++) {
        t->off[n] = total;
        total += (size_t)n * pairs(n);
    }
    t->per_tab = total;
    t->opt = malloc(sizeof(long long) * 3 * total);
    if (!t->opt) goto oom;
    for (size_t i = 0; i < 3 * total; i++) t->opt[i] = STORED_INF; /* past the caps */
    /* Bottom-up in n: every move reads shorter segments only. */
    for (int n = 1; n <= L; n++) fill_length(t, n);
    return t;
oom:
    snprintf(err, err_len, "--recompute auto: out of host memory for the %d-layer solver table",
             L);
    solver_table_free(t);
    return NULL;
}

void solver_table_free(SolverTable *t)
{
    if (!t) return;
    free(t->off);
    free(t->opt);
    free(t);
}

int solver_pick(const SolverTable *t, int L, const PlanUnits *u, size_t budget,
                SolverChoice *out)
{
    int found_fit = 0, found_any = 0;
    memset(out, 0, sizeof *out);
    if (L < 1 || L > t->L) return 0;
    SolverChoice best = {0}, smallest = {0};
    for (int n_res = 1; n_res <= L; n_res++)
        for (int n_full = 0; n_full <= t->cap_full && n_full <= L; n_full++)
            for (int n_sel = 0; n_sel <= L - n_full && n_sel <= t->cap_sel; n_sel++) {
                long long opt = solver_cost(t, L, n_res - 1, n_full, n_sel);
                if (opt == SOLVER_INF) continue;
                SolverChoice ch = {n_res, n_full, n_sel,
                                   planner_slots_total(u, n_res, n_full, n_sel),
                                   /* the last block's forward costs fwd, and one sweep of L
                                    * forwards is not recompute */
                                   opt + t->c.fwd - t->c.fwd_last - (long long)L * t->c.fwd};
                if (ch.bytes <= budget &&
                    (!found_fit || ch.recompute < best.recompute ||
                     (ch.recompute == best.recompute && ch.bytes < best.bytes))) {
                    best = ch;
                    found_fit = 1;
                }
                if (!found_any || ch.bytes < smallest.bytes ||
                    (ch.bytes == smallest.bytes && ch.recompute < smallest.recompute)) {
                    smallest = ch;
                    found_any = 1;
                }
            }
    *out = found_fit ? best : smallest;
    return found_fit;
}

/* ---- backtrack: replay the DP's choices with real slot numbers ---- */
typedef struct {
    const SolverTable *t;
    Schedule *s;
    int *res, n_res;   /* free residual slots (a stack) */
    int *full, n_full; /* free full tape slots */
    int *sel, n_sel;   /* free selective tape slots */
    int fail;
} Emit;

static void step(Emit *e, int kind, int block, int in, int out, int tape)
{
    if (schedule_push(e->s, kind, block, in, out, tape) != 0) e->fail = 1;
}

static int pop_tape(Emit *e, int full)
{
    return full ? e->full[--e->n_full] : e->sel[--e->n_sel];
}

static void push_tape(Emit *e, int full, int slot)
{
    if (full) e->full[e->n_full++] = slot;
    else e->sel[e->n_sel++] = slot;
}

/* Segment [s0, s0+n) with x_s0 in residual slot `in`. tab = TAB_A, or
 * TAB_H_* with the last block's tape in tape slot `held` (freed by its
 * backward). Replays the first move whose cost is the table's value. */
static void emit(Emit *e, int tab, int s0, int n, int in, int held)
{
    const SolverTable *t = e->t;
    int L = e->s->num_layers, r = e->n_res, f = e->n_full, q = e->n_sel;
    long long want = get(t, tab, n, r, f, q);
    if (e->fail || want == SOLVER_INF) {
        e->fail = 1;
        return;
    }
    if (move_cost(t, tab, MOVE_BASE, 0, n, r, f, q) == want) {
        if (tab != TAB_A) {
            step(e, STEP_BACKWARD, s0, in, SLOT_NONE, held);
            push_tape(e, tab == TAB_H_FULL, held);
            return;
        }
        int use_full = f >= 1, tape = pop_tape(e, use_full), last = s0 == L - 1;
        step(e, STEP_FORWARD, s0, in, last ? SLOT_FINAL : SLOT_NONE, tape);
        if (last) e->s->n_forward = e->s->n_steps;
        step(e, STEP_BACKWARD, s0, in, SLOT_NONE, tape);
        push_tape(e, use_full, tape);
        return;
    }
    for (int j = 1; j < n; j++)
        for (int m = MOVE_ADVANCE; m <= MOVE_KEEP_SEL; m++) {
            if (move_cost(t, tab, m, j, n, r, f, q) != want) continue;
            int slot = e->res[--e->n_res];
            /* ADVANCE tapes into a free slot as scratch; KEEP takes one for
             * good and uses it as scratch on the way. */
            int keep_full = m == MOVE_KEEP_FULL, tape;
            if (m == MOVE_ADVANCE) tape = f >= 1 ? e->full[e->n_full - 1] : e->sel[e->n_sel - 1];
            else tape = pop_tape(e, keep_full);
            for (int i = 0; i < j; i++)
                step(e, STEP_FORWARD, s0 + i, i == 0 ? in : slot, slot, tape);
            emit(e, tab, s0 + j, n - j, slot, held);
            e->res[e->n_res++] = slot;
            if (m == MOVE_ADVANCE) emit(e, TAB_A, s0, j, in, -1);
            else emit(e, keep_full ? TAB_H_FULL : TAB_H_SEL, s0, j, in, tape);
            return;
        }
    e->fail = 1; /* unreachable: want is one of the moves' costs */
}

int solver_schedule(const SolverTable *t, int L, const SolverChoice *ch, Schedule *s,
                    char *err, size_t err_len)
{
    int n_tape = ch->n_full + ch->n_sel;
    memset(s, 0, sizeof *s);
    if (L < 1 || L > t->L) {
        snprintf(err, err_len, "solver: table for %d layers asked for %d", t->L, L);
        return -1;
    }
    if (ch->n_res < 1 || ch->n_full < 0 || ch->n_sel < 0 ||
        solver_cost(t, L, ch->n_res - 1, ch->n_full, ch->n_sel) == SOLVER_INF) {
        snprintf(err, err_len, "solver: no schedule with %d residual, %d full and %d selective "
                 "slots", ch->n_res, ch->n_full, ch->n_sel);
        return -1;
    }
    Emit e = {.t = t, .s = s};
    e.res = malloc(sizeof(int) * (size_t)ch->n_res);
    e.full = malloc(sizeof(int) * (size_t)(ch->n_full + 1));
    e.sel = malloc(sizeof(int) * (size_t)(ch->n_sel + 1));
    int rc = -1;
    if (!e.res || !e.full || !e.sel || schedule_init(s, RECOMPUTE_AUTO, L, ch->n_res, n_tape)) {
        snprintf(err, err_len, "solver: out of host memory");
        goto done;
    }
    /* Stacks pop from the top: slot 0 is taken first. */
    for (int i = 0; i < ch->n_res; i++) e.res[e.n_res++] = ch->n_res - 1 - i;
    for (int j = 0; j < ch->n_full; j++) e.full[e.n_full++] = ch->n_full - 1 - j;
    for (int j = 0; j < ch->n_sel; j++) {
        e.sel[e.n_sel++] = n_tape - 1 - j;
        s->tape_kind[n_tape - 1 - j] = TAPE_SELECTIVE;
    }
    s->embed_slot = e.res[--e.n_res];
    emit(&e, TAB_A, 0, L, s->embed_slot, -1);
    if (e.fail) {
        snprintf(err, err_len, "solver: out of host memory or inconsistent table while "
                 "writing the schedule");
        goto done;
    }
    rc = schedule_finalize(s, err, err_len);
done:
    free(e.res);
    free(e.full);
    free(e.sel);
    if (rc != 0) schedule_free(s);
    return rc;
}
