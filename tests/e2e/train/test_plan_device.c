/* tests/e2e/train/test_plan_device.c — --plan plans a GPU run on any
 * machine (cli/recompute.h):
 *  - a CUDA build that sees no GPU (this suite's usual case) plans
 *    --dtype bf16 for a CUDA device, not the cpu backend (before: exit 1,
 *    "the cpu backend computes in fp32 only"), and so does a build
 *    without CUDA;
 *  - --plan-device h100 states the card's memory and peak, takes its
 *    memory less a run's 512 MiB margin as the budget, and its table is
 *    planner_print_modes' at that budget, line for line;
 *  - --offload checkpoints plans there too, ending with the device and
 *    host totals;
 *  - an unknown --plan-device, or one without --plan, exits 2 naming the
 *    flag (and the accepted names). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/backend.h"
#include "model/config.h"
#include "model/planner.h"
#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

#define XL "--model gpt2-xl --batch 8 --seq-len 1024"

static int run(const char *args, char **out, char **err)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s < /dev/null", tc_bin(), args);
    return tu_run_output(cmd, out, err);
}

/* Whether this machine shows the binary a GPU (then --plan opens it). */
static int gpu_visible(void)
{
#ifdef HAVE_CUDA
    return cuda_device_count() > 0;
#else
    return 0;
#endif
}

Test(plan_device, bf16_plan_without_a_gpu_is_for_a_cuda_device, .timeout = 60)
{
    char *o, *e;
    int rc = run("--plan --dtype bf16 " XL, &o, &e);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, e);
    cr_expect(!strstr(e, "running on the cpu backend"), "fell back to the cpu: %s", e);
    cr_expect(strstr(o, "bf16; budget"), "not a bf16 plan: %s", o);
    if (!gpu_visible())
        cr_expect(strstr(o, "planning for a CUDA device in bf16, not the cpu backend") &&
                  strstr(o, "plan device: H100 SXM (--plan-device h100)"), "%s", o);
    free(o), free(e);
}

Test(plan_device, h100_memory_is_the_budget_and_the_table_is_the_planners, .timeout = 60)
{
    char *o, *e;
    int rc = run("--plan --plan-device h100 " XL, &o, &e);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, e);
    /* the card's 80 GiB, its peak, and that less 512 MiB as the budget */
    size_t card = (size_t)80 << 30, budget = card - ((size_t)512 << 20);
    char want[256];
    snprintf(want, sizeof want, "%zu bytes (80.00 GiB) of memory, dense bf16 peak 989.4 TFLOP/s",
             card);
    cr_expect(strstr(o, want), "no '%s' in: %s", want, o);
    snprintf(want, sizeof want, "budget %zu bytes", budget);
    cr_expect(strstr(o, want), "no '%s' in: %s", want, o);
    /* the table, as the planner prints it for bf16 at that budget */
    PlanInput in = {.B = 8, .T = 1024, .dtype = DTYPE_BF16, .world_size = 1};
    cr_assert_eq(config_preset(&in.cfg, "d48"), 0);
    in.cfg.vocab_size = 50257;
    in.cfg.padded_vocab = config_pad_vocab(50257);
    in.cfg.max_seq_len = 1024;
    char *table = NULL, err[512];
    size_t n = 0;
    FILE *f = open_memstream(&table, &n);
    cr_assert_eq(planner_print_modes(f, &in, budget, 0, NULL, 1, err, sizeof err), 0, "%s", err);
    fclose(f);
    cr_expect(strstr(o, table), "the plan differs from planner_print_modes':\n%s\n---\n%s", o,
              table);
    free(table), free(o), free(e);
}

Test(plan_device, offload_checkpoints_plans_without_a_gpu, .timeout = 60)
{
    char *o, *e;
    int rc = run("--plan --dtype bf16 --recompute 1 --offload checkpoints " XL, &o, &e);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, e);
    cr_expect(strstr(o, "--recompute 1 --offload checkpoints:") && strstr(o, "\ndevice: ") &&
              strstr(o, "\nhost: "), "%s", o);
    free(o), free(e);
}

Test(plan_device, bad_plan_device_exits_2_naming_the_flag)
{
    char *o, *e;
    int rc = run("--plan --plan-device tpu-v5 " XL, &o, &e);
    cr_expect_eq(rc, 2, "exit %d: %s", rc, e);
    cr_expect(e && strstr(e, "--plan-device: expected one of h100|h200|a100-80g, got 'tpu-v5'"),
              "%s", e);
    free(o), free(e);
    rc = run("--plan-device h200 --steps 1", &o, &e);
    cr_expect_eq(rc, 2, "exit %d: %s", rc, e);
    cr_expect(e && strstr(e, "--plan-device h200: applies to --plan"), "%s", e);
    free(o), free(e);
}
