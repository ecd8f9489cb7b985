/* cli/costs.h — where the trainer's op costs come from (--op-costs).
 *
 * Owns: turning --op-costs into op costs (model/opcost.h) for the run's
 * shape: the cache (model/opcost_file.h), a file, a measurement on the
 * device, or none (FLOPs), and saying which. */
#ifndef CLI_COSTS_H
#define CLI_COSTS_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "kernels/ops.h"
#include "model/opcost.h"
#include "model/planner.h"
#include "cli/options.h"

typedef struct {
    int have;          /* measured costs (ns) in oc: time is predicted */
    OpCosts oc;
    char source[4400]; /* where they came from, or why there are none */
} TrainCosts;

/* costs_get's `how`, bits: COSTS_MEASURE_IF_ABSENT, measure when auto
 * finds no cache entry; COSTS_WRITE_CACHE, write what is measured to the
 * cache (rank 0 of a job: its ranks share a node's cache). COSTS_LOOKUP:
 * neither. */
enum { COSTS_LOOKUP = 0, COSTS_MEASURE_IF_ABSENT = 1, COSTS_WRITE_CACHE = 2 };

/* The op costs for in's shape. --op-costs flops: none. measure: time the
 * ops on be (opened here, on --device/--dtype/--threads, when be is NULL)
 * and write the cache. FILE: read it (exit 1 on any fault, or when it is
 * for another shape or dtype). auto: the cache's entry for this device and
 * shape; when there is none (or it is unreadable, which is noted), measure
 * and cache with COSTS_MEASURE_IF_ABSENT, else none. Only with
 * COSTS_WRITE_CACHE is the cache written; a cache that cannot be written
 * is noted, not fatal. Prints what it used when costs are found or
 * measured. Returns 0, or -1 with err (exit 1). */
int costs_get(const TrainOptions *o, const PlanInput *in, Backend *be, int how, TrainCosts *tc,
              char *err, size_t len);

/* The steps' times as a median with its spread. A measurement is noisy
 * with fewer than COSTS_MIN_STEPS steps or when (max - min) / median is
 * over COSTS_NOISY_SPREAD: on a shared machine a step's time moves by
 * more than the prediction's error, and the ratio then says nothing. */
#define COSTS_MIN_STEPS 3
#define COSTS_NOISY_SPREAD 0.10
typedef struct {
    int n, noisy;
    double median, min, max; /* ms */
    double spread;           /* (max - min) / median */
} StepSpread;
/* Sorts ms[0..n). */
void costs_spread(double *ms, int n, StepSpread *out);

/* After a run: the predicted step time (step_ns; -1 for none) beside the
 * measured one, the median of step_ms[1..n) (the first step pays for cold
 * caches and cuBLASLt's heuristics; with one step, that one), on stdout
 * with the steps' min-max and spread, flagged noisy (costs_spread) rather
 * than the prediction wrong, and as "step_ms_predicted",
 * "step_ms_measured", "step_ms_min", "step_ms_max" and "step_ms_noisy" in
 * summary. Steps
 * are numbered from first_step + 1. Sorts step_ms. */
void costs_report(const TrainCosts *tc, long long step_ns, double *step_ms, int n,
                        int first_step, cJSON *summary);

#endif
