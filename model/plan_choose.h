/* model/plan_choose.h — which schedule a run gets, and whether it fits.
 *
 * Owns: the decision --recompute, --checkpoint-every, --memory-budget,
 * --host-budget and --offload make together, as one call: the schedule
 * (a fixed mode's generator, or planner_auto), its plan (planner_plan,
 * with the host tier auto chose), the verdict against the budgets (which
 * limit failed, by how many bytes) and the predicted step. The CLI
 * (cli/recompute.c) turns flags into a PlanRequest, measures the baseline
 * and the default budget, and prints the verdict; the run and --plan's
 * closing lines ask here alike. */
#ifndef MODEL_PLAN_CHOOSE_H
#define MODEL_PLAN_CHOOSE_H

#include <stddef.h>

#include "planner.h"
#include "schedule.h"

typedef struct {
    int mode;             /* RecomputeMode */
    int checkpoint_every; /* RECOMPUTE_SEGMENTS: k, 1..L; 0 = schedule_default_checkpoint_every */
    /* Device bytes, the baseline included (in.baseline). auto always
     * chooses within it (the caller derives a default when none was
     * given); a fixed mode is held to it only when budget_given. */
    size_t budget;
    int budget_given;
    /* --host-budget: in.host_budget holds its bytes (0 without it, which
     * auto reads as no bound); a fixed mode's host bytes are held to them
     * only when host_budget_given, so --host-budget 0 refuses any host
     * tier. */
    int host_budget_given;
    /* 1: --plan's dry run. auto asked to offload checkpoints without the
     * copy costs to weigh them chooses as if the stored inputs stayed on
     * the device, and is planned with them offloaded (the --plan table's
     * auto row); 0: a run, which refuses that combination (returns 2). */
    int dry_run;
    int grad_accum;       /* micro-batches a step, for the predicted step time */
    PlanInput in;         /* the shape, dtype, ranks, baseline and in.offload: the OFFLOAD_*
                           * bits asked for */
} PlanRequest;

typedef enum {
    PLAN_FITS = 0,         /* within every budget the request holds it to */
    PLAN_OVER_HOST = 1,    /* a fixed mode's host bytes over --host-budget */
    PLAN_OVER_DEVICE = 2,  /* a fixed mode's device total over the budget */
    PLAN_AUTO_NO_FIT = 3,  /* auto: no schedule fits; the schedule is the smallest-peak one */
} PlanLimit;

typedef struct {
    int fits;              /* limit == PLAN_FITS */
    int limit;             /* PlanLimit: the first that failed (host before device) */
    /* Bytes. PLAN_OVER_HOST: plan.host_total and in.host_budget;
     * PLAN_OVER_DEVICE: plan.total and budget; PLAN_AUTO_NO_FIT: the
     * smallest achievable peak (AutoResult.min_peak) and budget; PLAN_FITS:
     * plan.total and the budget (0 for a fixed mode without one). */
    size_t needed, allowed;
    AutoResult autor;      /* auto's result (mode RECOMPUTE_AUTO only; zero otherwise) */
    long long step_flops;  /* FLOPs of one micro-batch's forward + backward (flops.h) */
    /* One optimizer step of grad_accum micro-batches under the schedule, in
     * ns (opcost_step, plus the offloaded inputs' exposed copies,
     * opcost_offload_copy); -1 without measured costs, or when the plan
     * offloads inputs and the copy engine's costs were not measured. */
    long long step_ns;
} PlanVerdict;

/* Chooses the schedule rq asks for, with op costs oc (NULL or FLOP costs:
 * auto minimises recomputed FLOPs; measured: predicted time). Fixed modes:
 * the mode's generator (segments of rq->checkpoint_every blocks). auto:
 * planner_auto at rq->budget, and the OFFLOAD_CHECKPOINTS bit of *plan
 * is what it chose (kept or offloaded). *plan is the schedule's plan with
 * the baseline counted, for every verdict. Returns 0 with *s (the caller
 * frees it) and *v, fitting or not; 2 with err for a request the flags
 * make unworkable (segments' k outside 1..L; a run's auto asked to offload
 * checkpoints without measured copy costs); -1 with err otherwise (a bad
 * shape, out of memory, an internal mismatch in auto's search). */
int planner_choose(const PlanRequest *rq, const OpCosts *oc, Schedule *s, MemoryPlan *plan,
                   PlanVerdict *v, char *err, size_t len);

#endif
