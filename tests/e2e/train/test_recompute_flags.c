/* tests/e2e/train/test_recompute_flags.c — ./train_gpt's memory flags (cli/recompute.h):
 * --plan prints exactly planner_print_modes' table, --recompute auto below
 * the smallest peak exits 2 naming that peak, every mode trains with the
 * arenas' high-water mark equal to the predicted peak, and bad values exit
 * 2 with one line. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/shard.h"
#include "model/flops.h"
#include "model/gpt.h"
#include "model/opcost.h"
#include "model/planner.h"
#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

#define SHAPE "--layers 5 --channels 32 --heads 4 --seq-len 16 --vocab 256 --batch 2"

static PlanInput shape_input(void)
{
    PlanInput in = {.cfg = {.max_seq_len = 16, .vocab_size = 256, .padded_vocab = 256,
                            .num_layers = 5, .num_heads = 4, .channels = 32},
                    .B = 2, .T = 16, .dtype = DTYPE_FP32};
    in.attn_scratch = tu_attn_scratch(&in.cfg, 0); /* the runs' default thread count */
    /* start-up's parameter piece, which the CLI counts with the host copies */
    in.host_copies = gpt_params_piece_bytes(&in.cfg);
    return in;
}

/* Random byte-token shards, train and val, in a fresh folder. */
static char *make_shards(void)
{
    char *d = tu_tempdir(), path[512], err[256];
    static uint16_t tok[20000];
    int t[20000];
    tu_random_tokens(t, 20000, 256, 5);
    for (int i = 0; i < 20000; i++) tok[i] = (uint16_t)t[i];
    snprintf(path, sizeof path, "%s/b_train_000000.bin", d);
    cr_assert_eq(shard_write(path, tok, 20000, err, sizeof err), 0, "%s", err);
    snprintf(path, sizeof path, "%s/b_val_000000.bin", d);
    cr_assert_eq(shard_write(path, tok, 5000, err, sizeof err), 0, "%s", err);
    return d;
}

static int run(const char *args, const char *dir, char **out, char **err)
{
    char cmd[4096];
    /* a cache of op costs of the test's own: none from earlier runs; no
     * baseline, so that the budgets below are the arenas' plans to the byte
     * (the baseline: test_memory_budget.c) */
    snprintf(cmd, sizeof cmd, "TRAIN_GPT_CACHE_DIR=%s/cache TRAIN_GPT_TEST_BASELINE=0 %s %s",
             dir, tc_bin(), args);
    return tu_run_output(cmd, out, err);
}

Test(recompute_flags, plan_prints_the_planners_table)
{
    char *d = tu_tempdir(), *out, *err, *want = NULL, e[256];
    size_t budget = 3000000, len = 0;
    int rc = run(SHAPE " --plan --memory-budget 3000000 --device cpu", d, &out, &err);
    cr_assert_eq(rc, 0, "stderr: %s", err);
    PlanInput in = shape_input();
    FILE *f = open_memstream(&want, &len);
    cr_assert_eq(planner_print_modes(f, &in, budget, 0, NULL, 1, e, sizeof e), 0, "%s", e);
    fclose(f);
    cr_assert_str_eq(out, want, "--plan's output is planner_print_modes'");
    free(out), free(err), free(want);
    /* with --checkpoint-every and bf16 */
    rc = run(SHAPE " --plan --memory-budget 3000000 --checkpoint-every 2 --dtype bf16", d, &out,
             &err);
    cr_assert_eq(rc, 0, "stderr: %s", err);
    in.dtype = DTYPE_BF16;
    in.attn_scratch = 0; /* a GPU's plan: no cpu attention scratch */
    in.host_copies = 0;  /* nor the host's copies */
    f = open_memstream(&want, &len);
    cr_assert_eq(planner_print_modes(f, &in, budget, 2, NULL, 1, e, sizeof e), 0, "%s", e);
    fclose(f);
    /* a GPU's plan given its budget opens no device: its baseline is not measured, and said
     * so (after a note where this machine shows no GPU: the plan is still a GPU's) */
    const char *note = "baseline: not measured (with --memory-budget, --plan opens no device)";
    char *line = strstr(out, note);
    cr_assert(line && (line == out || line[-1] == '\n'), "%s", out);
    cr_assert_str_eq(strchr(line, '\n') + 1, want);
    cr_assert(strstr(out, "\n2,k=2 "), "%s", out);
    free(out), free(err), free(want), free(d);
}

/* --plan past the solver's limit: a numeric auto row from the restricted
 * search, and the same table planner_print_modes prints. */
Test(recompute_flags, plan_past_64_layers_has_an_auto_row)
{
    char *d = tu_tempdir(), *out, *err, *want = NULL, e[256];
    size_t budget = 25000000, len = 0;
    int rc = run("--layers 96 --channels 32 --heads 4 --seq-len 16 --vocab 256 --batch 2 --plan "
                 "--memory-budget 25000000 --device cpu", d, &out, &err);
    cr_assert_eq(rc, 0, "stderr: %s", err);
    PlanInput in = shape_input();
    in.cfg.num_layers = 96;
    in.host_copies = gpt_params_piece_bytes(&in.cfg);
    FILE *f = open_memstream(&want, &len);
    cr_assert_eq(planner_print_modes(f, &in, budget, 0, NULL, 1, e, sizeof e), 0, "%s", e);
    fclose(f);
    cr_assert_str_eq(out, want, "--plan's output is planner_print_modes'");
    cr_assert_null(strstr(out, "n/a"), "%s", out);
    char *row = strstr(out, "\nauto ");
    size_t stored, ws, peak;
    double gib, per_tok, pct;
    int maxb;
    cr_assert_not_null(row, "%s", out);
    char ms[32];
    cr_assert_eq(sscanf(row + 6, "%zu %zu %zu %lf %lf %lf %31s %d", &stored, &ws, &peak, &gib,
                        &per_tok, &pct, ms, &maxb), 8, "%s", row);
    cr_assert_str_eq(ms, "-", "no op costs cached: no time");
    cr_assert(peak <= budget && maxb >= 2, "%s", row);
    cr_assert(strstr(out, "auto past 64 layers"), "the legend names the restricted search");
    free(out), free(err), free(want), free(d);
}

/* Costs of some unit-less kind, read as measured (timed auto's smallest
 * schedule does not depend on them: it takes the kind of the fewest
 * bytes). */
static OpCosts any_timed(const PlanInput *in)
{
    OpCosts oc;
    flops_op_costs(&in->cfg, in->B, in->T, &oc);
    oc.unit = OPCOST_NS;
    return oc;
}

/* --recompute auto below its smallest peak exits 2 naming that peak: with
 * FLOP costs (full and selective tapes) and with measured ones (every
 * kind: a smaller peak, or the same); at exactly that peak it trains. */
static void auto_below_the_minimum(const char *shape, const PlanInput *in)
{
    char *d = make_shards(), args[2048], *out, *err, e[256], want[128];
    OpCosts oc = any_timed(in);
    size_t min_flops = 0;
    for (int timed = 0; timed <= 1; timed++) {
        Schedule s;
        AutoResult r;
        cr_assert_eq(planner_auto(in, 0, timed ? &oc : NULL, &s, &r, e, sizeof e), 0, "%s", e);
        schedule_free(&s);
        if (!timed) min_flops = r.min_peak;
        else cr_assert_leq(r.min_peak, min_flops);
        const char *costs = timed ? "" : "--op-costs flops";
        snprintf(args, sizeof args, "%s --recompute auto --memory-budget %zu --steps 1 %s "
                 "--train-data '%s/b_train_*.bin' --val-data '%s/b_val_*.bin'", shape,
                 r.min_peak - 1, costs, d, d);
        cr_assert_eq(run(args, d, &out, &err), 2, "stdout %s stderr %s", out, err);
        snprintf(want, sizeof want, "the smallest achievable peak is %zu bytes", r.min_peak);
        cr_assert(err && strstr(err, want), "stderr '%s' lacks '%s'", err, want);
        cr_assert(strstr(err, "steps (F block"), "the schedule that reaches it is printed");
        free(out), free(err);
        /* at exactly the minimum it trains */
        snprintf(args, sizeof args, "%s --recompute auto --memory-budget %zu --steps 1 %s "
                 "--val-every 0 --threads 1 --train-data '%s/b_train_*.bin' "
                 "--val-data '%s/b_val_*.bin'", shape, r.min_peak, costs, d, d);
        cr_assert_eq(run(args, d, &out, &err), 0, "stderr %s", err);
        free(out), free(err);
    }
    free(d);
}

Test(recompute_flags, auto_below_the_minimum_exits_2_with_the_smallest_peak, .timeout = 60)
{
    PlanInput in = shape_input();
    auto_below_the_minimum(SHAPE, &in);
}

/* A tiny model past the solver's 64 layers: --recompute auto takes the
 * restricted search (planner_auto_family). */
#define DEEP_SHAPE "--layers 70 --channels 16 --heads 2 --seq-len 8 --vocab 256 --batch 2"
static PlanInput deep_input(void)
{
    PlanInput in = shape_input();
    in.cfg.num_layers = 70;
    in.cfg.channels = 16;
    in.cfg.num_heads = 2;
    in.cfg.max_seq_len = in.T = 8;
    in.attn_scratch = tu_attn_scratch(&in.cfg, 0);
    in.host_copies = gpt_params_piece_bytes(&in.cfg);
    return in;
}

Test(recompute_flags, auto_past_64_layers_below_the_minimum_exits_2, .timeout = 60)
{
    PlanInput in = deep_input();
    auto_below_the_minimum(DEEP_SHAPE, &in);
}

static double num(cJSON *o, const char *key)
{
    cJSON *v = cJSON_GetObjectItem(o, key);
    cr_assert(cJSON_IsNumber(v), "missing number '%s'", key);
    return v->valuedouble;
}

/* Train 2 steps at shape with --recompute mode; the summary's arenas'
 * high-water must equal the planner's total. Returns the last loss
 * (%.17g) in loss and stdout in *out (caller frees). */
static void train_2_steps(const char *shape, const char *mode, const char *d, int i,
                          char loss[64], char **out)
{
    char args[2048], log[600], *err;
    snprintf(log, sizeof log, "%s/log%d.jsonl", d, i);
    snprintf(args, sizeof args, "%s --recompute %s --steps 2 --val-every 0 --threads 1 "
             "--train-data '%s/b_train_*.bin' --val-data '%s/b_val_*.bin' --log %s",
             shape, mode, d, d, log);
    cr_assert_eq(run(args, d, out, &err), 0, "--recompute %s: %s", mode, err);
    cr_assert(strstr(*out, "(equal)"), "--recompute %s: %s", mode, *out);
    char *text = tu_read_file(log, NULL);
    cJSON *sum = NULL;
    loss[0] = '\0';
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *j = cJSON_Parse(line);
        if (cJSON_GetObjectItem(j, "event")) {
            cJSON_Delete(sum);
            sum = j;
            continue;
        }
        if (cJSON_GetObjectItem(j, "loss")) snprintf(loss, 64, "%.17g", num(j, "loss"));
        cJSON_Delete(j);
    }
    cr_assert_not_null(sum);
    cJSON *m = cJSON_GetObjectItem(sum, "memory");
    cr_assert_eq(num(m, "arena_high_water"), num(m, "total"), "--recompute %s", mode);
    cJSON_Delete(sum);
    free(text), free(err);
}

/* Each mode trains 2 steps; the summary's arenas' high-water equals the
 * planner's total, and the losses equal mode 0's. */
Test(recompute_flags, every_mode_trains_with_high_water_equal_to_the_plan, .timeout = 120)
{
    char *d = make_shards();
    const char *modes[] = {"0", "selective", "1", "2 --checkpoint-every 2", "auto "
                           "--memory-budget 1800000"};
    char first_loss[64] = "";
    for (int i = 0; i < 5; i++) {
        char loss[64], *out;
        train_2_steps(SHAPE, modes[i], d, i, loss, &out);
        if (i == 0) strcpy(first_loss, loss);
        cr_assert_str_eq(loss, first_loss, "--recompute %s: last loss differs from mode 0's",
                         modes[i]);
        free(out);
    }
    free(d);
}

/* Past the solver's 64 layers auto searches the restricted families
 * (planner_auto_family). Halfway between modes 1 and 0 it keeps every input
 * and re-forwards the lowest blocks; halfway between selective and mode 0
 * it keeps selective and full tapes (with FLOP costs: --op-costs flops).
 * Both train exactly like mode 0. */
Test(recompute_flags, auto_past_64_layers_trains_like_mode_0, .timeout = 60)
{
    char *d = make_shards(), loss0[64], loss[64], *out, e[256];
    PlanInput in = deep_input();
    in.attn_scratch = tu_attn_scratch(&in.cfg, 1); /* train_2_steps' --threads 1 */
    MemoryPlan p0, p1, psel;
    cr_assert_eq(planner_sizes(&in, RECOMPUTE_NONE, &p0, e, sizeof e), 0, "%s", e);
    cr_assert_eq(planner_sizes(&in, RECOMPUTE_BLOCK, &p1, e, sizeof e), 0, "%s", e);
    cr_assert_eq(planner_sizes(&in, RECOMPUTE_SELECTIVE, &psel, e, sizeof e), 0, "%s", e);
    train_2_steps(DEEP_SHAPE, "0", d, 0, loss0, &out);
    free(out);
    size_t budgets[2] = {p1.total + (p0.total - p1.total) / 2,
                         psel.total + (p0.total - psel.total) / 2};
    for (int i = 0; i < 2; i++) {
        Schedule s;
        AutoResult r;
        char desc[80];
        cr_assert_eq(planner_auto(&in, budgets[i], NULL, &s, &r, e, sizeof e), 0, "%s", e);
        schedule_describe(&s, desc, sizeof desc);
        int reforwards = schedule_reforwards(&s);
        schedule_free(&s);
        cr_assert(r.fits && r.family == AUTO_INPUTS_KEPT && strchr(desc, 'S') &&
                  (i == 0 ? reforwards > 0 : strchr(desc, 'F') != NULL),
                  "budget %zu: kept %s, %d re-forwards", budgets[i], desc, reforwards);
        char mode[128], want[160];
        snprintf(mode, sizeof mode, "auto --memory-budget %zu --op-costs flops", budgets[i]);
        train_2_steps(DEEP_SHAPE, mode, d, 1 + i, loss, &out);
        cr_assert_str_eq(loss, loss0, "%s: last loss differs from mode 0's", mode);
        snprintf(want, sizeof want, "recompute auto: predicted peak %zu bytes", r.peak);
        cr_assert(strstr(out, want), "%s", out);
        cr_assert(strstr(out, "70 layers, past the solver's 64") && strstr(out, "schedule auto:"),
                  "%s", out);
        free(out);
    }
    free(d);
}

static void expect_usage_error(const char *args, const char *needle)
{
    char *d = tu_tempdir(), *out, *err;
    int rc = run(args, d, &out, &err);
    cr_expect_eq(rc, 2, "'%s' exited %d, want 2", args, rc);
    cr_expect(err && strstr(err, needle), "'%s': stderr '%s' lacks '%s'", args, err ? err : "",
              needle);
    int lines = 0;
    for (char *p = err; p && *p; p++) lines += *p == '\n';
    cr_expect_eq(lines, 1, "'%s': want one line, got '%s'", args, err ? err : "");
    free(out), free(err), free(d);
}

Test(recompute_flags, bad_values_exit_2_with_one_line)
{
    expect_usage_error("--memory-budget 12GB", "--memory-budget: expected a byte count");
    expect_usage_error("--memory-budget -1", "--memory-budget");
    expect_usage_error("--memory-budget", "--memory-budget: missing value");
    expect_usage_error("--recompute 3", "0|1|2|selective|auto");
    expect_usage_error("--checkpoint-every 3", "--checkpoint-every: applies to --recompute 2");
    expect_usage_error("--recompute 2 --checkpoint-every 13", "must be in 1..12");
}

Test(recompute_flags, a_fixed_mode_over_the_budget_exits_2)
{
    char *d = make_shards(), args[2048], *out, *err;
    snprintf(args, sizeof args, SHAPE " --recompute 0 --memory-budget 1000 --steps 1 "
             "--train-data '%s/b_train_*.bin' --val-data '%s/b_val_*.bin'", d, d);
    cr_assert_eq(run(args, d, &out, &err), 2, "%s", err);
    cr_assert(err && strstr(err, "--memory-budget: --recompute 0 needs"), "%s", err);
    cr_assert(strstr(err, "more than the budget of 1000 bytes"), "%s", err);
    free(out), free(err), free(d);
}

/* The README's --plan example is the binary's output, line for line: the
 * planner changes, the README must follow (its figures are quoted in the
 * text around it). */
Test(recompute_flags, readme_plan_example_is_current)
{
#define README_PLAN_ARGS "--plan --model d48 --batch 1 --seq-len 1024 --dtype bf16 --memory-budget 139GiB"
    static const char *cmd_line = "$ ./train_gpt " README_PLAN_ARGS "\n";
    char *readme = tu_read_file("README.md", NULL);
    cr_assert_not_null(readme, "README.md not found (run from the project root)");
    char *block = strstr(readme, cmd_line);
    cr_assert_not_null(block, "README.md lacks the --plan example: %s", cmd_line);
    block += strlen(cmd_line);
    char *end = strstr(block, "```");
    cr_assert_not_null(end);
    *end = '\0';
    char *d = tu_tempdir(), *out, *err;
    int rc = run(README_PLAN_ARGS, d, &out, &err);
    cr_assert_eq(rc, 0, "stderr: %s", err);
    /* the README shows the table, from its "plan:" line to the closing legend (the note
     * and baseline lines before it depend on whether this machine shows a GPU) */
    char *legend = strstr(out, "stored/L/tok:"), *table = strstr(out, "plan: ");
    cr_assert(legend && table, "%s", out);
    *legend = '\0';
    cr_expect_str_eq(block, table, "README.md's --plan example differs from ./train_gpt's output");
    free(readme), free(out), free(err), free(d);
}
