/* model/solver_emit.c — picking slot counts that fit a budget and
 * writing the DP's schedule (solver.h): the backtrack replays the
 * recurrence of solver.c with real slot numbers. */
#include "solver_dp.h"

#include <stdlib.h>
#include <string.h>

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
    long long want = solver_dp_get(t, tab, n, r, f, q);
    if (e->fail || want == SOLVER_INF) {
        e->fail = 1;
        return;
    }
    if (solver_dp_move(t, tab, MOVE_BASE, 0, n, r, f, q) == want) {
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
            if (solver_dp_move(t, tab, m, j, n, r, f, q) != want) continue;
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
    if (!e.res || !e.full || !e.sel || schedule_init(s, t->block, RECOMPUTE_AUTO, L, ch->n_res, n_tape)) {
        snprintf(err, err_len, "solver: out of host memory");
        goto done;
    }
    /* Stacks pop from the top: slot 0 is taken first. */
    for (int i = 0; i < ch->n_res; i++) e.res[e.n_res++] = ch->n_res - 1 - i;
    for (int j = 0; j < ch->n_full; j++) {
        e.full[e.n_full++] = ch->n_full - 1 - j;
        s->tape_kind[ch->n_full - 1 - j] = (uint32_t)t->c.full_kind;
    }
    for (int j = 0; j < ch->n_sel; j++) {
        e.sel[e.n_sel++] = n_tape - 1 - j;
        s->tape_kind[n_tape - 1 - j] = (uint32_t)t->c.sel_kind;
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
