/* model/solver.h — the budgeted recompute schedule (--recompute auto).
 *
 * Owns: the dynamic program over the chain of blocks that finds, for a
 * number of residual slots and tape slots of two kinds, the schedule with
 * the least work, and the choice of slot counts whose planned bytes fit a
 * budget. The two tape kinds (tape.h) are the caller's: "full" slots hold
 * the larger kind (hi), "selective" slots the smaller (lo), whose
 * backward rebuilds more. --recompute auto passes the full and selective
 * tapes with FLOP costs, and with measured costs a pair of kinds from the
 * frontier (planner_auto.c); the names below say full and selective.
 * solver.c fills the tables, solver_emit.c picks slot counts and writes
 * the schedule.
 *
 * Model (Griewank-Walther's revolve and Beaumont et al.'s rotor, with two
 * tape kinds, static slots, and tapes that may outlive their input). A
 * segment of n blocks has its input x_s in a slot, r more free residual
 * slots and f full / q selective free tape slots. Two problems:
 *   A(n,r,f,q)    nothing of the segment is held;
 *   H_k(n,r,f,q)  the last block's tape is already held in a slot of kind
 *                 k (not counted in f, q) but its input is gone; it comes
 *                 back as the output of a re-forward of the block before,
 *                 which can tape that block too.
 * Moves (all forwards after the first write their output, at cost fwd):
 *   base     n = 1. A: taped forward straight into its backward (fwd_last,
 *            + the rebuild of the slot's kind: full, or selective when only
 *            a selective slot is free). H: backward (0).
 *   advance  forward j blocks (1 <= j < n) through a free slot in place,
 *            taping into a free slot as scratch; solve the last n-j blocks
 *            from x_{s+j}, then the first j with the slot back (in H, also
 *            the held tape's slot, freed by that backward): A(j).
 *   keep     the same, but the j-th block's tape is kept in a free slot of
 *            kind k (+ the rebuild of kind k, paid by its backward later):
 *            the first j blocks are then H_k(j). j = 1 is rotor's "forward
 *            saving all activations".
 * An exhaustive search over every step program schedule_validate accepts
 * (tests/unit/model/test_solver.c) finds nothing cheaper on small chains; without
 * the H problems (rotor's model, where a kept tape keeps its input) it
 * does.
 * Every block has the same shape, so the chain is homogeneous and
 * opt(n, r, f, q) depends on the segment's length only; the loss head
 * after the last block changes nothing but the last block's forward, which
 * writes its output (fwd instead of fwd_last, once per schedule). Slots are
 * static (every arena is allocated up front), so a schedule's bytes are
 * planner_slots_total(n_res, n_full, n_sel) and the DP's optimum at those
 * counts is exactly the best schedule at that peak. Costs are integers
 * (FLOPs or nanoseconds), so ties are exact. */
#ifndef MODEL_SOLVER_H
#define MODEL_SOLVER_H

#include <limits.h>
#include <stddef.h>

#include "planner.h"
#include "schedule.h"

#define SOLVER_INF LLONG_MAX
/* The tables grow as 3*L^4/8 entries (54 MB at 64 layers), fewer when
 * the budget caps the tape slots, and the fill as L^5. */
#define SOLVER_MAX_LAYERS 64

typedef struct {
    long long fwd;      /* a forward that writes x_{l+1} (advance or kept tape) */
    long long fwd_last; /* a taped forward right before its backward (out = SLOT_NONE) */
    long long sel;      /* extra work of a backward from a selective (lo) tape */
    long long full;     /* extra work of a backward from a full (hi) tape: 0 <= full <= sel */
    int full_kind, sel_kind; /* the tape kinds (tape.h) solver_schedule writes for them */
} SolverCosts;

typedef struct SolverTable SolverTable;

/* Fill the DP for chains of up to L blocks (one table serves every
 * num_layers <= L below) of `block` (c's kinds are its), for at most
 * cap_full full and cap_sel selective
 * tape slots (-1: L). Caps are exact, not a heuristic: no sub-problem has
 * more free slots of a kind than the whole chain, so a table capped at
 * what a budget can hold answers every question about that budget; more
 * slots than the caps are treated as unused. Returns NULL with a reason in
 * err (L out of 1..SOLVER_MAX_LAYERS, costs out of range, out of memory). */
SolverTable *solver_table_build(int L, const BlockDesc *block, const SolverCosts *c,
                                int cap_full, int cap_sel, char *err, size_t err_len);
void solver_table_free(SolverTable *t);
/* The costs and kinds the table was built with. */
const SolverCosts *solver_table_costs(const SolverTable *t);

/* opt(n, r, f, q): least work (forwards, counting the last block's forward
 * as fwd_last, see above, and rebuilds) to back-propagate n blocks with r
 * free residual slots beyond the one holding the input, f full and q
 * selective tape slots; SOLVER_INF when impossible. With fwd = 1, fwd_last = 0, f = 1 and
 * q = 0 this is revolve's count of untaped forwards for n steps and r
 * checkpoints. */
long long solver_cost(const SolverTable *t, int n, int r, int f, int q);

typedef struct {
    int n_res, n_full, n_sel;  /* slot counts */
    size_t bytes;              /* planner_slots_total at those counts */
    long long recompute;       /* work beyond one sweep and L backwards (opcost_recompute's
                                * sum: flops_recompute's in FLOPs) */
} SolverChoice;

/* The slot counts (within the table's caps) for a chain of num_layers
 * (<= the table's L) blocks: the least recompute whose bytes fit
 * budget (ties: fewer bytes); returns 1. When nothing fits, the fewest
 * bytes any schedule needs (ties: less recompute); returns 0. */
int solver_pick(const SolverTable *t, int num_layers, const PlanUnits *u, size_t budget,
                SolverChoice *out);

/* Write the schedule the DP found at those counts (mode RECOMPUTE_AUTO,
 * finalized; tape kinds full_kind and sel_kind). Returns 0, or -1 with a
 * reason in err. */
int solver_schedule(const SolverTable *t, int num_layers, const SolverChoice *ch, Schedule *s,
                    char *err, size_t err_len);

#endif
