/* tests/e2e/ranks/test_zero_order.c — sums over ranks in rank order
 * (distributed/dist.h, Order of sums): --zero 0, 1, 2 and 3 give the same
 * bits at 4 ranks, on the cpu backend through mpirun.
 *
 * References, each independent of the path under test:
 *  - each other stage on the same 4 ranks: --dump-grads (the loss and the
 *    reduced gradient of step 1), the saved model after 3 steps (with
 *    --grad-clip 0.5, so the norm reaches the update) and every logged
 *    loss and gradient norm, byte for byte / as printed. The shape is the
 *    harness's tiny model (L=2 C=32, 4 heads, vocab 256): the smallest
 *    shape tried on which Open MPI's own MPI_Allreduce (--zero 0) and
 *    MPI_Reduce_scatter (--zero 1, 2, 3) added in different orders before
 *    the sums became train_gpt's (gradient norms 2.6257958108215362 and
 *    2.625795823272866 at step 1; L=4 C=24 happened to agree);
 *  - the planner: every run's arenas' high-water equals its plan, which
 *    holds the receive buffer of the sums, and --plan --world-size 4
 *    prints the run's grads row and receive buffer (4 pieces of one
 *    rank block) without ranks. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/rank_runs.h"
#include "tests/lib/test_util.h"

static char *dir;

static void setup(void) { dir = rank_runs_setup(); }
static void teardown(void) { rank_runs_teardown(dir); }

TestSuite(zeroorder, .init = setup, .fini = teardown);

/* "ranks: gradient sums in rank order through a receive buffer of N B (4
 * pieces of K elements)" in <tag>.out: N and K. */
static void receive_buffer(const char *tag, size_t *bytes, size_t *chunk)
{
    char *out = rank_runs_read(dir, tag, "out");
    const char *m = strstr(out, "ranks: gradient sums in rank order through a receive buffer of ");
    cr_assert_not_null(m, "%s: no receive buffer line in:\n%s", tag, out);
    cr_assert_eq(sscanf(m, "ranks: gradient sums in rank order through a receive buffer of %zu B "
                        "(4 pieces of %zu elements)", bytes, chunk), 2, "%s", m);
    free(out);
}

Test(zeroorder, zero_0_1_2_3_bitwise_at_4_ranks, .timeout = 300)
{
    char flags[512];
    for (int z = 0; z <= 3; z++) {
        char tag[8];
        snprintf(tag, sizeof tag, "z%d", z);
        snprintf(flags, sizeof flags, "--zero %d --grad-clip 0.5 --dump-grads %s/%s.grads", z,
                 dir, tag);
        cr_assert_eq(rank_runs_train(dir, 4, tag, "", flags), 0, "--zero %d failed", z);
    }
    for (int z = 1; z <= 3; z++) {
        char tag[8], what[64];
        snprintf(tag, sizeof tag, "z%d", z);
        snprintf(what, sizeof what, "--zero %d vs 0, 4 ranks", z);
        rank_runs_expect_same_file(dir, tag, "z0", "grads", what);
        rank_runs_expect_same_file(dir, tag, "z0", "bin", what);
        rank_runs_expect_same_log(dir, tag, "z0", what);
    }
    for (int z = 0; z <= 3; z++) {
        char tag[8];
        snprintf(tag, sizeof tag, "z%d", z);
        rank_runs_expect_plan_met(dir, tag);
        size_t bytes, chunk;
        receive_buffer(tag, &bytes, &chunk);
        cr_expect_eq(bytes, 4 * chunk * 4, "%s: %zu B for 4 pieces of %zu fp32", tag, bytes,
                     chunk);
    }
}

/* --plan --world-size 4 --zero 0 in one process: the grads row of a rank
 * of the 4-rank run, the receive buffer included. */
Test(zeroorder, plan_world_size_holds_the_receive_buffer, .timeout = 200)
{
    cr_assert_eq(rank_runs_train(dir, 4, "w4", "", "--zero 0"), 0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s --zero 0 --world-size 4 --plan > %s/plan.out 2>&1",
             tc_bin(), tc_model_args(dir), dir);
    cr_assert_eq(tu_run(cmd), 0, "--plan --world-size 4 failed");
    char *run = rank_runs_read(dir, "w4", "out"), *plan = rank_runs_read(dir, "plan", "out");
    size_t rg = 0, pp, pg, po, vec, rb, bytes, chunk;
    const char *g = strstr(run, "\n  grads ");
    const char *line = strstr(plan, "per rank, each of 4 (--zero 0): ");
    cr_assert(g && line, "missing rows:\n%s\n--\n%s", run, plan);
    cr_assert_eq(sscanf(g, " grads %zu", &rg), 1);
    cr_assert_eq(sscanf(line, "per rank, each of 4 (--zero 0): params %zu B, grads %zu B, "
                        "optimizer %zu B (grads: the vector %zu B + receive buffer %zu B)",
                        &pp, &pg, &po, &vec, &rb), 5, "%s", line);
    receive_buffer("w4", &bytes, &chunk);
    cr_expect_eq(pg, rg, "grads: --plan %zu, the run %zu", pg, rg);
    cr_expect_eq(rb, bytes, "receive buffer: --plan %zu, the run %zu", rb, bytes);
    cr_expect_eq(vec + rb, pg, "the grads row is not its parts");
    /* one rank block: ceil(n / 4) rounded up to 64 elements */
    const char *np = strstr(plan, "parameters: ");
    size_t n = 0;
    cr_assert(np && sscanf(np, "parameters: %zu", &n) == 1, "no parameter count:\n%s", plan);
    size_t block = ((n + 3) / 4 + 63) / 64 * 64;
    cr_expect_eq(chunk, block, "a piece of %zu elements, a rank block %zu", chunk, block);
    free(run);
    free(plan);
}
