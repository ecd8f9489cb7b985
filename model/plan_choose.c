/* model/plan_choose.c — see model/plan_choose.h. */
#include "plan_choose.h"

#include <stdio.h>
#include <string.h>

#include "flops.h"
#include "opcost.h"

/* auto at rq->budget. Which host tier the plan gets: what auto chose when
 * it weighed offloaded checkpoints; otherwise the bits asked for (a dry
 * run's OFFLOAD_CHECKPOINTS stays on though auto chose without it, as the
 * --plan table's auto row shows it). */
static int choose_auto(const PlanRequest *rq, const OpCosts *oc, Schedule *s, PlanInput *chosen,
                       PlanVerdict *v, char *err, size_t len)
{
    int weighs = planner_weighs_offload(&rq->in, oc);
    PlanInput ain = rq->in;
    if (rq->dry_run && !weighs) ain.offload &= ~OFFLOAD_CHECKPOINTS;
    if (planner_auto(&ain, rq->budget, oc, s, &v->autor, err, len) != 0)
        /* checkpoints to offload with no copy costs to weigh them (FLOP
         * costs, or a backend with no copy engine): the flags' fault */
        return (ain.offload & OFFLOAD_CHECKPOINTS) && !weighs ? 2 : -1;
    *chosen = rq->in;
    if (weighs) chosen->offload = (rq->in.offload & ~OFFLOAD_CHECKPOINTS) | v->autor.offload;
    if (!v->autor.fits) {
        v->limit = PLAN_AUTO_NO_FIT;
        v->needed = v->autor.min_peak;
        v->allowed = rq->budget;
    }
    return 0;
}

/* A fixed mode's generator; segments' k checked here so that a k past the
 * layer count is the flags' fault (2), not the generator's (-1). */
static int choose_fixed(const PlanRequest *rq, Schedule *s, char *err, size_t len)
{
    int L = rq->in.cfg.num_layers;
    const BlockDesc *b = planner_block(&rq->in);
    if (rq->mode != RECOMPUTE_SEGMENTS) return schedule_build(s, b, rq->mode, L, err, len) ? -1 : 0;
    int k = rq->checkpoint_every ? rq->checkpoint_every : schedule_default_checkpoint_every(L);
    if (k < 1 || k > L) {
        snprintf(err, len, "--checkpoint-every: must be in 1..%d (the layer count); got %d", L, k);
        return 2;
    }
    return schedule_build_segments(s, b, L, k, err, len) ? -1 : 0;
}

/* The step's predicted time: the ops, and with offloaded checkpoints the
 * copies' exposed time a micro-batch (none when the copy engine's costs
 * were not measured). */
static long long predict_step(const PlanRequest *rq, const OpCosts *oc, const Schedule *s,
                              const MemoryPlan *plan)
{
    if (!oc || oc->unit != OPCOST_NS) return -1;
    long long step = opcost_step(oc, s, rq->grad_accum);
    if (!plan->n_ring) return step;
    long long copy = opcost_offload_copy(oc, plan->residual_bytes, plan->n_res_host);
    return copy < 0 ? -1 : step + copy * rq->grad_accum;
}

int planner_choose(const PlanRequest *rq, const OpCosts *oc, Schedule *s, MemoryPlan *plan,
                   PlanVerdict *v, char *err, size_t len)
{
    memset(v, 0, sizeof *v);
    memset(s, 0, sizeof *s);
    v->step_ns = -1;
    PlanInput chosen = rq->in;
    int rc = rq->mode == RECOMPUTE_AUTO ? choose_auto(rq, oc, s, &chosen, v, err, len)
                                        : choose_fixed(rq, s, err, len);
    if (rc != 0) return rc;
    planner_plan(&chosen, s, plan);
    if (rq->mode != RECOMPUTE_AUTO) {
        if (rq->host_budget_given && plan->host_total > rq->in.host_budget) {
            v->limit = PLAN_OVER_HOST;
            v->needed = plan->host_total;
            v->allowed = rq->in.host_budget;
        } else if (rq->budget_given && plan->total > rq->budget) {
            v->limit = PLAN_OVER_DEVICE;
            v->needed = plan->total;
            v->allowed = rq->budget;
        }
    }
    v->fits = v->limit == PLAN_FITS;
    if (v->fits) {
        v->needed = plan->total;
        v->allowed = rq->mode == RECOMPUTE_AUTO || rq->budget_given ? rq->budget : 0;
    }
    FlopCounts f;
    flops_count(&rq->in.cfg, rq->in.B, rq->in.T, &f);
    v->step_flops = f.step;
    v->step_ns = predict_step(rq, oc, s, plan);
    return 0;
}
