/* tests/e2e/train/test_long_context.c — a long context on the cpu: a
 * 4-layer C = 256 model at T = 8192 trains a step with recompute 1 inside
 * its plan. The attention never holds a (T,T) matrix (at T = 8192 one
 * head's would be 256 MiB): its only memory beyond the tapes is the
 * per-thread tile scratch the plan counts (ops.h attention_scratch_bytes).
 * The summary's arena high-water mark equals the plan to the byte, and the
 * process's peak (VmHWM) is within 5% of the planner's total. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

static double num(cJSON *o, const char *key)
{
    cJSON *v = cJSON_GetObjectItem(o, key);
    cr_assert(cJSON_IsNumber(v), "missing number '%s'", key);
    return v->valuedouble;
}

/* RSS means something else under AddressSanitizer (its shadow memory) */
#ifdef __SANITIZE_ADDRESS__
#define SKIP_UNDER_ASAN() cr_skip_test("RSS is ASan's own under ASan")
#else
#define SKIP_UNDER_ASAN() ((void)0)
#endif

/* B = 1, one step, a 256-token vocabulary (the head is small). Attention
 * dominates: 2 T^2 C = 34 GFLOP a layer forward, 4.5 times that with the
 * backward and recompute 1's second forward, about 0.6 TFLOP in all. */
Test(long_context, t8192_step_within_its_plan, .timeout = 240)
{
    SKIP_UNDER_ASAN();
    char *d = tu_tempdir(), args[2048], prefix[600], log[600];
    tc_make_shards(d, 1, 20000);
    snprintf(log, sizeof log, "%s/run.jsonl", d);
    snprintf(prefix, sizeof prefix, "%s/run", d);
    snprintf(args, sizeof args,
             "--train-data '%s/train_*.bin' --val-every 0 --device cpu --vocab 256 "
             "--layers 4 --channels 256 --heads 4 --batch 1 --seq-len 8192 --steps 1 "
             "--recompute 1 --op-costs flops --log '%s'", d, log);
    int rc = tc_run("", args, prefix);
    cr_assert_eq(rc, 0, "exit %d (%s.out, .err)", rc, prefix);
    cJSON *s = tc_log_last_with(log, "event");
    cr_assert(s, "no summary in %s", log);
    cJSON *m = cJSON_GetObjectItem(s, "memory");
    double hw = num(m, "arena_high_water"), arenas = num(m, "total");
    double total = num(m, "process_total"), peak = num(m, "peak_measured");
    cr_expect_eq(hw, arenas, "arena high-water %.0f, plan %.0f", hw, arenas);
    cr_expect_gt(num(m, "scratch"), 0);
    cr_expect_leq(peak > total ? peak - total : total - peak, 0.05 * total,
                  "VmHWM %.0f not within 5%% of the plan's %.0f", peak, total);
    cJSON_Delete(s);
}
