/* model/solver_dp.h — private to the solver (solver.c, solver_emit.c):
 * the DP's tables and its recurrence, which the backtrack replays. The
 * public interface and the model are in solver.h. */
#ifndef MODEL_SOLVER_DP_H
#define MODEL_SOLVER_DP_H

#include "solver.h"

struct SolverTable {
    int L;
    int cap_full, cap_sel; /* most tape slots of each kind any query uses */
    SolverCosts c;
    const BlockDesc *block; /* the block the kinds are of */
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

/* opt of table tab at (n, r, f, q), clamped as the recurrence clamps;
 * SOLVER_INF when impossible. */
long long solver_dp_get(const SolverTable *t, int tab, int n, int r, int f, int q);
/* The cost of one move (j: blocks advanced) from (n, r, f, q) in tab. */
long long solver_dp_move(const SolverTable *t, int tab, int move, int j, int n, int r, int f,
                         int q);

#endif
