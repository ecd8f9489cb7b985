/* tests/e2e/ranks/test_zero2.c — --zero 2 (gradients sharded, reduce-scattered
 * block by block during backward) on the cpu backend through mpirun.
 *
 * References, each independent of the path under test:
 *  - --zero 1 on the same ranks (one reduce-scatter of the whole padded
 *    gradient after backward, full gradient buffers): with one micro-batch
 *    a step the model files and the logged losses and gradient norms are
 *    bitwise equal, on 2 and 4 ranks (a shard boundary cuts a block's
 *    tensor; the vector is padded); --zero 0 (the all-reduce) within 1e-6,
 *    as ZeRO-1 is;
 *  - with --grad-accum 2 the ranks' micro-batch sums are added in another
 *    order (dist.h): parameters within 1e-6 relative of --zero 1;
 *  - recompute 0, 1, 2 and selective at --zero 2: model files bitwise equal;
 *  - --offload optimizer at --zero 2 against none: bitwise equal;
 *  - the planner: each run's arenas' high-water equals the plan, and
 *    --plan --world-size prints the same per-rank bytes without ranks;
 *  - a resume from a --zero 2 save against a run that never stopped:
 *    bitwise equal;
 *  - refusals by name: a resume at another --zero or world size, llm.c
 *    checkpoints. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interop/model_file.h"
#include "tests/lib/cli_harness.h"
#include "tests/lib/rank_runs.h"
#include "tests/lib/test_util.h"

/* L=4, C=24: 35472 parameters; shards of 17792 (2 ranks) and 8896 (4), both
 * padded by 112 elements, each boundary inside a block's tensor */
#define SHAPE "--layers 4 --channels 24"

static char *dir;

static void setup(void) { dir = rank_runs_setup(); }
static void teardown(void) { rank_runs_teardown(dir); }

TestSuite(zero2, .init = setup, .fini = teardown);

/* `mpirun -np np train_gpt <tiny model> SHAPE --steps 3 flags` (rank_runs.h) */
static int train(int np, const char *tag, const char *flags)
{
    return rank_runs_train(dir, np, tag, SHAPE, flags);
}

static char *slurp(const char *tag, const char *ext) { return rank_runs_read(dir, tag, ext); }

static void expect_same_model(const char *a, const char *b, const char *what)
{
    rank_runs_expect_same_file(dir, a, b, "bin", what);
}

static void expect_same_log_numbers(const char *a, const char *b, const char *what)
{
    rank_runs_expect_same_log(dir, a, b, what);
}

/* max |a - b| / max |b| over two model files. */
static double params_rel_diff(const char *a, const char *b)
{
    char pa[512], pb[512], err[512];
    snprintf(pa, sizeof pa, "%s/%s.bin", dir, a);
    snprintf(pb, sizeof pb, "%s/%s.bin", dir, b);
    GPTConfig ca, cb;
    float *x = NULL, *y = NULL;
    cr_assert_eq(model_file_load(pa, &ca, &x, err, sizeof err), 0, "%s", err);
    cr_assert_eq(model_file_load(pb, &cb, &y, err, sizeof err), 0, "%s", err);
    size_t n = config_num_params(&ca);
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num = fmax(num, fabs((double)x[i] - y[i]));
        den = fmax(den, fabs((double)y[i]));
    }
    free(x);
    free(y);
    return num / den;
}

/* The arenas' high-water equals the plan (rank_runs.h), a ZeRO-2 plan. */
static void expect_plan_met(const char *tag)
{
    rank_runs_expect_plan_met(dir, tag);
    char *out = slurp(tag, "out");
    cr_expect(strstr(out, "zero 2: gradient shard "), "%s: no zero 2 line in:\n%s", tag, out);
    free(out);
}

Test(zero2, equals_zero1_bitwise_and_zero0, .timeout = 300)
{
    for (int np = 2; np <= 4; np += 2) {
        char what[64];
        snprintf(what, sizeof what, "np %d", np);
        cr_assert_eq(train(np, "z0", "--zero 0 --grad-clip 0.5"), 0, "%s --zero 0 failed", what);
        cr_assert_eq(train(np, "z1", "--zero 1 --grad-clip 0.5"), 0, "%s --zero 1 failed", what);
        cr_assert_eq(train(np, "z2", "--zero 2 --grad-clip 0.5"), 0, "%s --zero 2 failed", what);
        expect_same_model("z2", "z1", what);
        expect_same_log_numbers("z2", "z1", what);
        double d = params_rel_diff("z2", "z0");
        cr_expect(d <= 1e-6, "%s: --zero 2 vs 0: parameters differ by %.3g relative", what, d);
        expect_plan_met("z2");
    }
}

Test(zero2, grad_accum_within_rounding_of_zero1, .timeout = 200)
{
    cr_assert_eq(train(2, "a1", "--zero 1 --grad-accum 2"), 0);
    cr_assert_eq(train(2, "a2", "--zero 2 --grad-accum 2"), 0);
    double d = params_rel_diff("a2", "a1");
    cr_expect(d <= 1e-6, "--grad-accum 2: --zero 2 vs 1: parameters differ by %.3g relative", d);
    expect_plan_met("a2");
}

Test(zero2, recompute_modes_bitwise, .timeout = 300)
{
    static const char *modes[] = {"1", "2", "selective"};
    cr_assert_eq(train(2, "r0", "--zero 2 --recompute 0"), 0);
    for (int i = 0; i < 3; i++) {
        char flags[128], what[64];
        snprintf(flags, sizeof flags, "--zero 2 --recompute %s", modes[i]);
        snprintf(what, sizeof what, "--recompute %s vs 0", modes[i]);
        cr_assert_eq(train(2, "rk", flags), 0, "%s failed", flags);
        expect_same_model("rk", "r0", what);
        expect_plan_met("rk");
    }
}

Test(zero2, offload_optimizer_bitwise, .timeout = 200)
{
    cr_assert_eq(train(2, "p", "--zero 2 --grad-accum 2"), 0);
    cr_assert_eq(train(2, "o", "--zero 2 --grad-accum 2 --offload optimizer"), 0);
    expect_same_model("o", "p", "--offload optimizer");
}

Test(zero2, llama_equals_zero1_bitwise, .timeout = 200)
{
    const char *llama = "--arch llama --kv-heads 2 --ffn 64 --lm-head untied";
    char flags[256];
    snprintf(flags, sizeof flags, "%s --zero 1", llama);
    cr_assert_eq(train(2, "l1", flags), 0);
    snprintf(flags, sizeof flags, "%s --zero 2", llama);
    cr_assert_eq(train(2, "l2", flags), 0);
    expect_same_model("l2", "l1", "llama");
    expect_plan_met("l2");
}

/* --plan --world-size 4 --zero 2 in one process prints the bytes a rank of
 * a 4-rank run plans (and that run's arenas reach). */
Test(zero2, plan_world_size_matches_a_run, .timeout = 200)
{
    cr_assert_eq(train(4, "w4", "--zero 2"), 0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s " SHAPE " --zero 2 --world-size 4 --plan > %s/plan.out 2>&1",
             tc_bin(), tc_model_args(dir), dir);
    cr_assert_eq(tu_run(cmd), 0, "--plan --world-size 4 failed");
    char *run = slurp("w4", "out"), *plan = slurp("plan", "out");
    /* the run's table rows "  grads  N" and "  optimizer  N", the plan's line */
    size_t rg = 0, ro = 0, pp = 0, pg = 0, po = 0;
    const char *g = strstr(run, "\n  grads "), *op = strstr(run, "\n  optimizer ");
    const char *line = strstr(plan, "per rank, each of 4 (--zero 2): ");
    cr_assert(g && op && line, "missing rows:\n%s\n--\n%s", run, plan);
    cr_assert_eq(sscanf(g, " grads %zu", &rg), 1);
    cr_assert_eq(sscanf(op, " optimizer %zu", &ro), 1);
    cr_assert_eq(sscanf(line, "per rank, each of 4 (--zero 2): params %zu B, grads %zu B, "
                        "optimizer %zu B", &pp, &pg, &po), 3, "%s", line);
    cr_expect_eq(pg, rg, "grads: --plan %zu, the run %zu", pg, rg);
    cr_expect_eq(po, ro, "optimizer: --plan %zu, the run %zu", po, ro);
    /* the run's own line names the same shard and buffers */
    const char *a = strstr(run, "zero 2: gradient shard "), *b = strstr(plan, "(grads: shard ");
    cr_assert(a && b, "no shard figures:\n%s\n--\n%s", run, plan);
    size_t s1, o1, l1, s2, l2, o2, rb;
    cr_assert_eq(sscanf(a, "zero 2: gradient shard %zu B per rank, reduced from full-size "
                        "buffers for wte/wpe/LN_f (%zu B) and one block (%zu B)", &s1, &o1, &l1),
                 3, "%s", a);
    cr_assert_eq(sscanf(b, "(grads: shard %zu B + block buffer %zu B + wte/wpe/LN_f buffer %zu B "
                        "+ receive buffer %zu B)", &s2, &l2, &o2, &rb), 4, "%s", b);
    cr_expect(s1 == s2 && o1 == o2 && l1 == l2, "shard figures differ");
    cr_expect_eq(s1 + o1 + l1 + rb, rg, "the four do not add up to the grads row");
    /* the ordered sums' receive buffer: 4 pieces of a whole shard */
    cr_expect_eq(rb, (size_t)4 * 8896 * 4, "receive buffer %zu B", rb);
    /* one rank's gradient shard is a quarter of the padded vector, 8896 elements */
    cr_expect_eq(s1, (size_t)8896 * 4, "shard %zu B", s1);
    free(run);
    free(plan);
}

/* A save at --zero 2 (each rank's optimizer shard) resumes to the bits of a
 * run that never stopped; a resume at another --zero or world size is
 * refused by name, and so are llm.c's checkpoints (one process: the flags
 * alone refuse them). */
Test(zero2, resume_is_bitwise_and_refusals_name_the_flag, .timeout = 200)
{
    char flags[1024];
    cr_assert_eq(train(2, "s4", "--zero 2 --steps 4"), 0);
    snprintf(flags, sizeof flags, "--zero 2 --checkpoint-dir %s/ckr --save-every 3", dir);
    cr_assert_eq(train(2, "r3", flags), 0);
    snprintf(flags, sizeof flags, "--zero 2 --checkpoint-dir %s/ckr --resume --steps 4", dir);
    cr_assert_eq(train(2, "r4", flags), 0, "the resume failed");
    expect_same_model("r4", "s4", "resumed at step 3");
    static const struct {
        int np;
        const char *flag, *want;
    } refused[] = {
        {2, "--zero 1", "--zero: the save has 2, this run 1"},
        {4, "--zero 2", "world size (ranks): the save has 2, this run 4"},
    };
    for (int i = 0; i < 2; i++) {
        snprintf(flags, sizeof flags, "%s --checkpoint-dir %s/ckr --resume --steps 5",
                 refused[i].flag, dir);
        cr_expect_neq(train(refused[i].np, "no", flags), 0, "ran: %s", refused[i].want);
        char *out = slurp("no", "out");
        cr_expect(strstr(out, refused[i].want), "want '%s' in:\n%s", refused[i].want, out);
        free(out);
    }
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s --zero 2 --save-checkpoint-llmc %s/llmc > %s/ll.out 2>&1",
             tc_bin(), tc_model_args(dir), dir, dir);
    cr_expect_eq(tu_run(cmd), 2, "llm.c checkpoints at --zero 2: want exit 2");
    char *out = slurp("ll", "out");
    cr_expect(strstr(out, "--save-checkpoint-llmc and --resume-llmc need --zero 0"), "%s", out);
    free(out);
}
