/* cli/costs.c — see cli/costs.h. */
#include "cli/costs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/test_hooks.h"
#include "kernels/backend.h"
#include "model/opcost_file.h"

/* At least this many timed rounds (opcost_measure adds more to fill half a
 * second). */
#define MEASURE_REPS 5

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The device costs are keyed by: the open backend's, else the flags'. */
static void device_of(const TrainOptions *o, Backend *be, char *buf, size_t len)
{
    if (be) backend_describe(be->name, 0, buf, len);
    else backend_describe(o->device, o->threads, buf, len);
}

/* Measure on be (or a backend opened for it), then write the cache file
 * `cache` ("" for none). */
static int measure(const TrainOptions *o, const PlanInput *in, Backend *be, const char *cache,
                   TrainCosts *tc, char *err, size_t len)
{
    Backend *own = NULL;
    if (!be && !(be = own = backend_open(o->device, o->dtype, o->threads, err, len))) return -1;
    char device[512];
    device_of(o, be, device, sizeof device);
    /* a line first: at a big shape this takes a while (up to 26 rounds of one block) */
    printf("op costs: measuring one block's ops on %s at B=%d, T=%d...\n", device, in->B, in->T);
    fflush(stdout);
    TEST_HOOK(io_test_pause("startup", "op costs"));
    double t0 = now_s();
    int rc = opcost_measure(be, in, MEASURE_REPS, &tc->oc, err, len);
    if (own) backend_close(own);
    if (rc != 0) return -1;
    tc->have = 1;
    snprintf(tc->source, sizeof tc->source, "measured on %s in %.2f s (%d rounds)", device,
             now_s() - t0, tc->oc.reps);
    if (!cache[0]) return 0;
    char werr[4400];
    if (opcost_file_write(cache, device, in, &tc->oc, werr, sizeof werr) != 0)
        fprintf(stderr, "note: op costs not cached: %s\n", werr);
    else
        snprintf(tc->source + strlen(tc->source), sizeof tc->source - strlen(tc->source),
                 "; cached in %s", cache);
    return 0;
}

int costs_get(const TrainOptions *o, const PlanInput *in, Backend *be, int how, TrainCosts *tc,
              char *err, size_t len)
{
    memset(tc, 0, sizeof *tc);
    const char *src = o->op_costs;
    char dir[4096], cache[4300] = "", device[512], from[512];
    int rc;
    if (strcmp(src, "flops") == 0) {
        snprintf(tc->source, sizeof tc->source, "flops (counted FLOPs; no time predicted)");
        return 0;
    }
    int is_auto = strcmp(src, "auto") == 0, is_measure = strcmp(src, "measure") == 0;
    if (is_auto || is_measure) {
        device_of(o, be, device, sizeof device);
        if (opcost_cache_dir(dir, sizeof dir) == 0)
            opcost_cache_file(dir, device, in, cache, sizeof cache);
    }
    const char *write_to = how & COSTS_WRITE_CACHE ? cache : "";
    if (is_measure) {
        rc = measure(o, in, be, write_to, tc, err, len);
    } else if (is_auto) {
        char rerr[4400];
        rc = cache[0] && access(cache, F_OK) == 0
                 ? opcost_file_read(cache, in, from, sizeof from, &tc->oc, rerr, sizeof rerr)
                 : 1;
        if (rc == 0) {
            tc->have = 1;
            snprintf(tc->source, sizeof tc->source, "cached in %s (measured on %s)", cache, from);
        } else if (how & COSTS_MEASURE_IF_ABSENT) {
            if (rc < 0) fprintf(stderr, "note: %s; measuring the op costs again\n", rerr);
            rc = measure(o, in, be, write_to, tc, err, len);
        } else {
            snprintf(tc->source, sizeof tc->source, "not cached for %s at this shape (--op-costs "
                     "measure, or a --recompute auto run, caches them)", device);
            rc = 0;
        }
    } else {
        rc = opcost_file_read(src, in, from, sizeof from, &tc->oc, err, len);
        if (rc != 0) {
            char e2[4400];
            /* "--op-costs mesure": a word mistyped is taken as a file name */
            int absent = access(src, F_OK) != 0;
            snprintf(e2, sizeof e2, "--op-costs %s%s", err,
                     absent ? " (--op-costs takes auto, measure, flops or a FILE of costs)" : "");
            snprintf(err, len, "%s", e2);
            return -1;
        }
        tc->have = 1;
        snprintf(tc->source, sizeof tc->source, "%s (measured on %s)", src, from);
    }
    if (rc != 0) return -1;
    if (tc->have) {
        printf("op costs: %s\n", tc->source);
        opcost_print(stdout, &tc->oc, in);
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void costs_spread(double *ms, int n, StepSpread *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    out->noisy = 1;
    if (n <= 0) return;
    qsort(ms, (size_t)n, sizeof(double), cmp_double);
    out->median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
    out->min = ms[0];
    out->max = ms[n - 1];
    out->spread = out->median > 0 ? (out->max - out->min) / out->median : 0;
    out->noisy = n < COSTS_MIN_STEPS || out->spread > COSTS_NOISY_SPREAD;
}

void costs_report(const TrainCosts *tc, long long step_ns, double *step_ms, int n,
                        int first_step, cJSON *summary)
{
    int skip = n > 1 ? 1 : 0, m = n - skip;
    if (n == 0) return;
    StepSpread sp;
    costs_spread(step_ms + skip, m, &sp);
    double med = sp.median;
    char steps[96], spread[160];
    if (n > 1) snprintf(steps, sizeof steps, "median of steps %d..%d", first_step + 2,
                        first_step + n);
    else snprintf(steps, sizeof steps, "step %d", first_step + 1);
    snprintf(spread, sizeof spread, "min-max %.3f-%.3f ms, spread %.1f%%", sp.min, sp.max,
             100.0 * sp.spread);
    cJSON_AddNumberToObject(summary, "step_ms_measured", med);
    cJSON_AddNumberToObject(summary, "step_ms_min", sp.min);
    cJSON_AddNumberToObject(summary, "step_ms_max", sp.max);
    cJSON_AddBoolToObject(summary, "step_ms_noisy", sp.noisy);
    if (step_ns < 0) {
        printf("step time: measured %.3f ms (%s; %s); none predicted: op costs %s\n", med, steps,
               spread, tc->source);
        return;
    }
    double pred = step_ns / 1e6;
    printf("step time: predicted %.3f ms, measured %.3f ms (%s; %s), measured/predicted %.3f",
           pred, med, steps, spread, med / pred);
    if (sp.noisy)
        printf("; the measurement is noisy (%s): it neither confirms nor refutes the "
               "prediction\n", sp.n < COSTS_MIN_STEPS
                                      ? "fewer than 3 steps after the first"
                                      : "its steps differ by more than 10% of their median");
    else
        printf("\n");
    cJSON_AddNumberToObject(summary, "step_ms_predicted", pred);
}
