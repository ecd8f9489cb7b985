/* tests/e2e/train/test_memory_budget.c — --memory-budget holds the whole
 * process: the plan counts the resident bytes the process holds before its
 * arenas (the baseline row), so a run's measured peak (VmHWM, which the
 * summary reads from /proc/self/status at the end) stays within the budget
 * and within 5% of the plan's total; and the plan is printed before the
 * arenas are allocated, so a run that runs out of memory has shown it. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

static double num(cJSON *o, const char *key)
{
    cJSON *v = cJSON_GetObjectItem(o, key);
    cr_assert(cJSON_IsNumber(v), "missing number '%s'", key);
    return v->valuedouble;
}

/* Three shapes, each about 3 s on one thread: arenas of 50 to 90 MiB, so
 * the baseline (about 8 MiB) is a tenth of the total, not all of it. The
 * budgets sit between auto's smallest peak and mode 0's, so auto must
 * recompute to fit. --op-costs flops: no measurement's buffers (see
 * docs/recompute.md, "What the budget covers"). */
/* Under AddressSanitizer (make test-asan) the shadow memory is resident
 * and the address space reserved is terabytes: neither RSS nor ulimit -v
 * means what these tests measure, so they run in the plain build only. */
#ifdef __SANITIZE_ADDRESS__
#define SKIP_UNDER_ASAN() cr_skip_test("RSS and address limits are ASan's own under ASan")
#else
#define SKIP_UNDER_ASAN() ((void)0)
#endif

Test(memory_budget, measured_peak_within_budget_and_five_percent_of_the_plan, .timeout = 120)
{
    SKIP_UNDER_ASAN();
    static const struct {
        int L, C, NH, B, T;
        size_t budget;
    } shapes[] = {
        {4, 256, 4, 8, 128, (size_t)100 << 20},
        {6, 192, 4, 4, 256, (size_t)85 << 20},
        {8, 128, 4, 16, 64, (size_t)60 << 20},
    };
    char *d = tu_tempdir();
    tc_make_shards(d, 1, 40000);
    /* The budgets above are for the arenas over a CPU-only build's baseline
     * (about 8 MiB); a CUDA build's libraries hold about 160 MiB more, so the
     * baseline this binary reports (--plan measures its own) less 8 MiB is
     * added to each. */
    char cmd[1024], *plan = NULL;
    snprintf(cmd, sizeof cmd, "%s --plan --device cpu --threads 1 --vocab 256 --layers 2 "
             "--channels 32 --heads 4 --seq-len 16 --batch 1", tc_bin());
    cr_assert_eq(tu_run_output(cmd, &plan, NULL), 0, "%s", cmd);
    const char *b = plan ? strstr(plan, "baseline: ") : NULL;
    cr_assert_not_null(b, "--plan printed no baseline: %s", plan ? plan : "");
    size_t baseline = strtoull(b + 10, NULL, 10), extra = baseline > ((size_t)8 << 20)
                                                             ? baseline - ((size_t)8 << 20) : 0;
    free(plan);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        char args[2048], prefix[600], log[600];
        snprintf(log, sizeof log, "%s/run%zu.jsonl", d, i);
        snprintf(prefix, sizeof prefix, "%s/run%zu", d, i);
        snprintf(args, sizeof args,
                 "--train-data '%s/train_*.bin' --val-every 0 --device cpu --threads 1 "
                 "--vocab 256 --layers %d --channels %d --heads %d --batch %d --seq-len %d "
                 "--steps 2 --recompute auto --memory-budget %zu --op-costs flops --log '%s'",
                 d, shapes[i].L, shapes[i].C, shapes[i].NH, shapes[i].B, shapes[i].T,
                 shapes[i].budget + extra, log);
        int rc = tc_run(NULL, args, prefix);
        cr_assert_eq(rc, 0, "shape %zu: exit %d (%s.out, .err)", i, rc, prefix);
        cJSON *s = tc_log_last_with(log, "event");
        cr_assert(s, "shape %zu: no summary in %s", i, log);
        cJSON *m = cJSON_GetObjectItem(s, "memory");
        double base = num(m, "baseline"), total = num(m, "process_total");
        double peak = num(m, "peak_measured");
        cr_expect_gt(base, 1 << 20, "shape %zu: a baseline of %.0f bytes is no process", i, base);
        cr_expect_eq(total, base + num(m, "total"), "shape %zu: process total = baseline + arenas",
                     i);
        cr_expect_leq(total, (double)(shapes[i].budget + extra), "shape %zu: planned over the budget", i);
        cr_expect_leq(peak, (double)(shapes[i].budget + extra),
                      "shape %zu: VmHWM %.0f over --memory-budget %zu", i, peak, shapes[i].budget + extra);
        cr_expect_leq(peak > total ? peak - total : total - peak, 0.05 * total,
                      "shape %zu: VmHWM %.0f not within 5%% of the plan's %.0f", i, peak, total);
        cJSON_Delete(s);
    }
}

/* The plan before the arenas: under an address-space limit (ulimit -v)
 * that the 1.5 GiB of arenas cannot fit, the arena allocation fails (exit
 * 1), and the plan's table and predicted peak were on stdout already. */
Test(memory_budget, plan_is_printed_before_the_arenas_are_allocated, .timeout = 60)
{
    SKIP_UNDER_ASAN();
    char *d = tu_tempdir(), args[2048], prefix[600];
    tc_make_shards(d, 1, 40000);
    snprintf(prefix, sizeof prefix, "%s/big", d);
    snprintf(args, sizeof args,
             "--train-data '%s/train_*.bin' --val-every 0 --device cpu --threads 1 --vocab 256 "
             "--layers 8 --channels 512 --heads 8 --batch 64 --seq-len 256 --steps 1 "
             "--recompute 0 --op-costs flops", d);
    /* 2 GB of address space: room for a CUDA build's libraries, not for
     * the 4.1 GB activation arena */
    int rc = tc_run("ulimit -v 2000000;", args, prefix);
    char *out = tu_read_file(tu_path(d, "big.out"), NULL);
    char *err = tu_read_file(tu_path(d, "big.err"), NULL);
    cr_assert_eq(rc, 1, "exit %d: %s%s", rc, out ? out : "", err ? err : "");
    cr_assert(err && strstr(err, "out of cpu memory: arena"), "%s", err ? err : "");
    cr_assert(out && strstr(out, "memory plan (recompute 0"), "no plan before the failure: %s",
              out ? out : "");
    cr_expect(strstr(out, "  baseline "), "no baseline row: %s", out);
    cr_expect(strstr(out, "predicted peak: "), "%s", out);
    free(out);
    free(err);
}
