/* model/solver.c — the DP's tables (see solver.h, solver_dp.h); picking
 * slot counts and writing the schedule: solver_emit.c. */
#include "solver_dp.h"

#include <stdlib.h>
#include <string.h>

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

long long solver_dp_get(const SolverTable *t, int tab, int n, int r, int f, int q)
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
    return solver_dp_get(t, TAB_A, n, r, f, q);
}

static long long add(long long a, long long b)
{
    return a == SOLVER_INF || b == SOLVER_INF || a > SOLVER_INF - b ? SOLVER_INF : a + b;
}

long long solver_dp_move(const SolverTable *t, int tab, int move, int j, int n, int r, int f,
                         int q)
{
    const SolverCosts *c = &t->c;
    int held_full = tab == TAB_H_FULL, held_sel = tab == TAB_H_SEL;
    if (move == MOVE_BASE) {
        if (n != 1) return SOLVER_INF;
        if (tab != TAB_A) return 0;
        if (f + q < 1) return SOLVER_INF;
        return add(c->fwd_last, f >= 1 ? c->full : c->sel);
    }
    if (j < 1 || j >= n || r < 1) return SOLVER_INF;
    long long fw = c->fwd > SOLVER_INF / j ? SOLVER_INF : (long long)j * c->fwd;
    if (move == MOVE_ADVANCE) {
        if (f + q < 1) return SOLVER_INF;
        return add(add(fw, solver_dp_get(t, tab, n - j, r - 1, f, q)),
                   solver_dp_get(t, TAB_A, j, r, f + held_full, q + held_sel));
    }
    int keep_full = move == MOVE_KEEP_FULL;
    int f1 = f - keep_full, q1 = q - !keep_full;
    if (f1 < 0 || q1 < 0) return SOLVER_INF;
    long long first = solver_dp_get(t, tab, n - j, r - 1, f1, q1);
    long long rest = solver_dp_get(t, keep_full ? TAB_H_FULL : TAB_H_SEL, j, r, f1 + held_full,
                                   q1 + held_sel);
    return add(add(add(fw, keep_full ? c->full : c->sel), first), rest);
}

/* The entry for (m, r, f, q) clamped as in solver_dp_get(), minus the q term: the
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

/* All three tables at length n: the same recurrence as solver_dp_move, with the
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
                    long long v = solver_dp_move(t, tab, MOVE_BASE, 0, n, r, f, q);
                    out[index_of(t, n, r, f, q)] = v == SOLVER_INF ? STORED_INF : v;
                }
            }
            for (int j = 1; j < n && r >= 1; j++) {
                int m1 = n - j, m2 = j;
                long long fw = (long long)j * c->fwd, fws = fw + c->sel, fwf = fw + c->full;
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
                            best = min2(best, fwf + f1[q < qf1 ? q : qf1] +
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

SolverTable *solver_table_build(int L, const BlockDesc *block, const SolverCosts *c,
                                int cap_full, int cap_sel, char *err, size_t err_len)
{
    if (L < 1 || L > SOLVER_MAX_LAYERS) {
        snprintf(err, err_len, "--recompute auto: the solver handles 1..%d layers (got %d)",
                 SOLVER_MAX_LAYERS, L);
        return NULL;
    }
    /* Any schedule runs at most L*L forwards and L*L rebuilds. */
    if (c->fwd < 0 || c->fwd_last < 0 || c->sel < 0 || c->full < 0 || c->full > c->sel ||
        c->full_kind < 0 || c->full_kind >= tape_kinds(block) || c->sel_kind < 0 ||
        c->sel_kind >= tape_kinds(block) ||
        (double)(c->fwd + c->fwd_last + c->sel) * ((double)L * L + 1) >= (double)STORED_INF) {
        snprintf(err, err_len, "solver: costs out of range (fwd %lld, fwd_last %lld, sel %lld, "
                 "full %lld; kinds %d, %d)", c->fwd, c->fwd_last, c->sel, c->full, c->full_kind,
                 c->sel_kind);
        return NULL;
    }
    SolverTable *t = calloc(1, sizeof *t);
    if (t) t->off = malloc(sizeof(size_t) * (size_t)(L + 2));
    if (!t || !t->off) goto oom;
    t->L = L;
    t->c = *c;
    t->block = block;
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

const SolverCosts *solver_table_costs(const SolverTable *t) { return &t->c; }

void solver_table_free(SolverTable *t)
{
    if (!t) return;
    free(t->off);
    free(t->opt);
    free(t);
}

