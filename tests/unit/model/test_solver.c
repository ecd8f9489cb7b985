/* tests/unit/model/test_solver.c — the recompute DP (model/solver.h) against two
 * independent references: revolve's closed form for the homogeneous chain
 * with one tape, and an exhaustive shortest-path search over every step
 * program the schedule semantics (schedule.h) allow, for small chains. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "model/gpt2_block.h"
#include "model/flops.h"
#include "model/planner.h"
#include "model/solver.h"

static long long binom(int n, int k)
{
    if (k < 0 || n < 0 || k > n) return 0;
    long long b = 1;
    for (int i = 1; i <= k; i++) b = b * (n - k + i) / i;
    return b;
}

/* Griewank-Walther: t(l, s) = r*l - C(s+r, s+1), r the integer with
 * C(s+r-1, s) < l <= C(s+r, s). */
static long long revolve(int l, int s)
{
    int r = 0;
    while (!(binom(s + r - 1, s) < l && l <= binom(s + r, s))) r++;
    return (long long)r * l - binom(s + r, s + 1);
}

Test(solver, revolve_closed_form_every_l_below_60)
{
    char err[256];
    SolverCosts c = {1, 0, 0, 0, TAPE_FULL, GPT2_SELECTIVE}; /* count untaped forwards only */
    SolverTable *t =
        solver_table_build(59, &GPT2_BLOCK, &c, 1, 0, err, sizeof err); /* one tape: revolve */
    cr_assert_not_null(t, "%s", err);
    cr_assert_eq(revolve(7, 1), 21, "closed form itself: t(l,1) = l(l-1)/2");
    for (int l = 1; l < 60; l++)
        for (int s = 1; s < l; s++)
            cr_assert_eq(solver_cost(t, l, s, 1, 0), revolve(l, s),
                         "l=%d s=%d: solver %lld, revolve %lld", l, s, solver_cost(t, l, s, 1, 0),
                         revolve(l, s));
    /* s >= l - 1: every input fits; each block is forwarded once untaped
     * except the last. */
    for (int l = 1; l < 60; l++) cr_assert_eq(solver_cost(t, l, l - 1, 1, 0), l - 1);
    solver_table_free(t);
}

/* ---- exhaustive search (Dijkstra) over the schedule semantics ----
 * State: the block input in each residual slot, the block tape in each
 * full / selective tape slot (-1 empty), and progress: p < L is the next
 * sweep forward, p >= L means the head has run and block 2L-1-p is the
 * next backward (p = 2L: done). Slots of one kind are interchangeable, so
 * contents are kept sorted. Moves are exactly what schedule_validate
 * accepts; cost is fwd per forward that writes an output, fwd_last per
 * forward with SLOT_NONE, sel per backward from a selective tape, full per
 * backward from a full one. */
#define MAXS 8
typedef struct { signed char res[MAXS], full[MAXS], sel[MAXS]; int p; } BState;
typedef struct { int L, nr, nf, nq; } BShape;

static int cmp_sc(const void *a, const void *b)
{
    return *(const signed char *)a - *(const signed char *)b;
}

static long key_of(const BShape *sh, BState *st)
{
    qsort(st->res, (size_t)sh->nr, 1, cmp_sc);
    qsort(st->full, (size_t)sh->nf, 1, cmp_sc);
    qsort(st->sel, (size_t)sh->nq, 1, cmp_sc);
    long k = st->p, base = sh->L + 1;
    for (int i = 0; i < sh->nr; i++) k = k * base + st->res[i] + 1;
    for (int i = 0; i < sh->nf; i++) k = k * base + st->full[i] + 1;
    for (int i = 0; i < sh->nq; i++) k = k * base + st->sel[i] + 1;
    return k;
}

static void state_of(const BShape *sh, long k, BState *st)
{
    long base = sh->L + 1;
    for (int i = sh->nq - 1; i >= 0; i--, k /= base) st->sel[i] = (signed char)(k % base - 1);
    for (int i = sh->nf - 1; i >= 0; i--, k /= base) st->full[i] = (signed char)(k % base - 1);
    for (int i = sh->nr - 1; i >= 0; i--, k /= base) st->res[i] = (signed char)(k % base - 1);
    st->p = (int)k;
}

typedef struct { long long *dist; long *heap_k; long long *heap_d; long n, cap; } BSearch;

static void heap_push(BSearch *b, long k, long long d)
{
    long i = b->n++;
    while (i > 0 && b->heap_d[(i - 1) / 2] > d) {
        b->heap_k[i] = b->heap_k[(i - 1) / 2];
        b->heap_d[i] = b->heap_d[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    b->heap_k[i] = k;
    b->heap_d[i] = d;
}

static long heap_pop(BSearch *b, long long *d)
{
    long top = b->heap_k[0];
    *d = b->heap_d[0];
    long k = b->heap_k[--b->n];
    long long kd = b->heap_d[b->n];
    long i = 0;
    for (;;) {
        long c = 2 * i + 1;
        if (c >= b->n) break;
        if (c + 1 < b->n && b->heap_d[c + 1] < b->heap_d[c]) c++;
        if (b->heap_d[c] >= kd) break;
        b->heap_k[i] = b->heap_k[c];
        b->heap_d[i] = b->heap_d[c];
        i = c;
    }
    b->heap_k[i] = k;
    b->heap_d[i] = kd;
    return top;
}

static void relax(BSearch *b, const BShape *sh, BState *st, long long d)
{
    long k = key_of(sh, st);
    if (d < b->dist[k]) {
        b->dist[k] = d;
        if (b->n < b->cap) heap_push(b, k, d);
    }
}

/* Forward of block l from a slot holding x_l: tape into any tape slot, out
 * into any residual slot (in place included) or, when allowed, none. */
static void forwards(BSearch *b, const BShape *sh, const BState *st, int l, int next_p,
                     int allow_none, const SolverCosts *c, long long d)
{
    int L = sh->L;
    for (int t = 0; t < sh->nf + sh->nq; t++) {
        BState a = *st;
        if (t < sh->nf) a.full[t] = (signed char)l;
        else a.sel[t - sh->nf] = (signed char)l;
        a.p = next_p;
        if (l == L - 1 || allow_none) { /* SLOT_FINAL before the head, SLOT_NONE after */
            BState z = a;
            relax(b, sh, &z, d + (l == L - 1 && next_p == L ? c->fwd : c->fwd_last));
        }
        if (l < L - 1)
            for (int o = 0; o < sh->nr; o++) {
                BState z = a;
                z.res[o] = (signed char)(l + 1);
                relax(b, sh, &z, d + c->fwd);
            }
    }
}

static long long brute_force(const BShape *sh, const SolverCosts *c)
{
    int L = sh->L;
    long nkeys = 2L * L + 1;
    for (int i = 0; i < sh->nr + sh->nf + sh->nq; i++) nkeys *= L + 1;
    BSearch b = {0};
    b.dist = malloc(sizeof(long long) * (size_t)nkeys);
    b.cap = 64L * nkeys;
    b.heap_k = malloc(sizeof(long) * (size_t)b.cap);
    b.heap_d = malloc(sizeof(long long) * (size_t)b.cap);
    cr_assert(b.dist && b.heap_k && b.heap_d);
    for (long i = 0; i < nkeys; i++) b.dist[i] = SOLVER_INF;
    BState s0;
    memset(&s0, -1, sizeof s0);
    s0.res[0] = 0;
    s0.p = 0;
    relax(&b, sh, &s0, 0);
    long long best = SOLVER_INF;
    while (b.n > 0) {
        long long d;
        long k = heap_pop(&b, &d);
        if (d > b.dist[k]) continue;
        BState st;
        state_of(sh, k, &st);
        if (st.p == 2 * L) {
            best = d;
            break;
        }
        if (st.p < L) { /* the sweep: forward block p, output kept */
            for (int i = 0; i < sh->nr; i++)
                if (st.res[i] == st.p) forwards(&b, sh, &st, st.p, st.p + 1, 0, c, d);
            continue;
        }
        int nb = 2 * L - 1 - st.p; /* next backward */
        int have_x = 0;
        for (int i = 0; i < sh->nr; i++) have_x |= st.res[i] == nb;
        for (int l = 0; l <= nb; l++) {
            int has = 0;
            for (int i = 0; i < sh->nr; i++) has |= st.res[i] == l;
            if (has) forwards(&b, sh, &st, l, st.p, 1, c, d);
        }
        for (int t = 0; have_x && t < sh->nf + sh->nq; t++) {
            int is_sel = t >= sh->nf;
            if ((is_sel ? st.sel[t - sh->nf] : st.full[t]) != nb) continue;
            BState a = st;
            a.p = st.p + 1;
            relax(&b, sh, &a, d + (is_sel ? c->sel : c->full));
        }
    }
    free(b.dist);
    free(b.heap_k);
    free(b.heap_d);
    return best;
}

static void exhaustive(const SolverCosts c)
{
    char err[256];
    SolverTable *t = solver_table_build(6, &GPT2_BLOCK, &c, -1, -1, err, sizeof err);
    cr_assert_not_null(t, "%s", err);
    int checked = 0;
    for (int L = 1; L <= 6; L++)
        for (int nr = 1; nr <= 4; nr++)
            for (int nf = 0; nf <= 3; nf++)
                for (int nq = 0; nq + nf <= 3; nq++) {
                    if (nr + nf + nq > (L <= 4 ? 7 : 6)) continue; /* search memory */
                    BShape sh = {L, nr, nf, nq};
                    long long want = brute_force(&sh, &c);
                    SolverTable *tl =
                        solver_table_build(L, &GPT2_BLOCK, &c, -1, -1, err, sizeof err);
                    long long opt = solver_cost(tl, L, nr - 1, nf, nq);
                    long long got = opt == SOLVER_INF ? SOLVER_INF : opt + c.fwd - c.fwd_last;
                    cr_assert_eq(got, want, "L=%d res=%d full=%d sel=%d: DP %lld, search %lld",
                                 L, nr, nf, nq, got, want);
                    solver_table_free(tl);
                    checked++;
                }
    cr_assert_gt(checked, 100);
    solver_table_free(t);
}

/* Costs with no accidental ties: a full forward, one without the MLP
 * projection, the lo kind's rebuild (selective's), and the hi kind's: 0
 * for the full tape, or a kind that drops something cheap (measured
 * costs pair any two frontier kinds). */
Test(solver, matches_exhaustive_search_on_small_chains)
{
    exhaustive((SolverCosts){100, 67, 9, 0, TAPE_FULL, GPT2_SELECTIVE});
}

Test(solver, matches_exhaustive_search_with_a_hi_kind_that_rebuilds)
{
    exhaustive((SolverCosts){100, 67, 29, 4, 1 << GPT2_LN1, GPT2_SELECTIVE});
}

/* A table capped at the tape slots a budget can hold picks exactly what
 * the uncapped table picks at that budget. */
Test(solver, caps_do_not_change_the_pick)
{
    char err[256];
    SolverCosts c = {100, 67, 9, 0, TAPE_FULL, GPT2_SELECTIVE};
    PlanUnits u = {.fixed = 1000, .res = 10, .hi = 150, .lo = 90, .ws_lo = 40};
    int L = 12;
    SolverTable *full = solver_table_build(L, &GPT2_BLOCK, &c, -1, -1, err, sizeof err);
    cr_assert_not_null(full, "%s", err);
    for (size_t budget = 1000; budget <= planner_slots_total(&u, L, L, 0) + 10; budget += 37) {
        int cf = 1, cq = 1;
        while (cf < L && planner_slots_total(&u, 1, cf + 1, 0) <= budget) cf++;
        while (cq < L && planner_slots_total(&u, 1, 0, cq + 1) <= budget) cq++;
        SolverTable *capped = solver_table_build(L, &GPT2_BLOCK, &c, cf, cq, err, sizeof err);
        cr_assert_not_null(capped, "%s", err);
        SolverChoice a, b;
        int fa = solver_pick(full, L, &u, budget, &a), fb = solver_pick(capped, L, &u, budget, &b);
        cr_assert(fa == fb && a.recompute == b.recompute && a.bytes == b.bytes,
                  "budget %zu (caps %d, %d): uncapped %d %lld %zu, capped %d %lld %zu", budget, cf,
                  cq, fa, a.recompute, a.bytes, fb, b.recompute, b.bytes);
        Schedule s;
        cr_assert_eq(solver_schedule(capped, L, &b, &s, err, sizeof err), 0, "%s", err);
        cr_assert_eq(schedule_validate(&s, err, sizeof err), 0, "%s", err);
        schedule_free(&s);
        solver_table_free(capped);
    }
    solver_table_free(full);
}
