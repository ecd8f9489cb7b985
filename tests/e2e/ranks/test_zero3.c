/* tests/e2e/ranks/test_zero3.c — --zero 3 (parameters sharded too): --plan
 * plans one rank of it; what a run cannot do yet is refused by name (the
 * runs themselves: test_zero3_run.c).
 *
 * References, each independent of the path under test:
 *  - --plan --world-size 4 --zero 3 on L=4 C=24 (35472 parameters): the
 *    per-rank line's parameter shard, gather buffers and communication
 *    counted by hand from GPT-2's shapes (one block 12 C^2 + 13 C = 7224
 *    elements, the rest wte/wpe/LN_f), each buffer rounded up to 256 B;
 *    gradients and optimizer the bytes --plan prints at --zero 2;
 *  - llm.c's checkpoints are refused at --zero 3 by name (the cuda backend
 *    runs --zero 3 since its NCCL gathers were checked on the emulator:
 *    dev/cuda/check_nccl_emu.py). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/rank_runs.h"
#include "tests/lib/test_util.h"

#define SHAPE "--layers 4 --channels 24"

static char *dir;

static void setup(void) { dir = rank_runs_setup(); }
static void teardown(void) { rank_runs_teardown(dir); }

TestSuite(zero3, .init = setup, .fini = teardown);

static char *slurp(const char *tag) { return rank_runs_read(dir, tag, "out"); }

/* train_gpt <tiny model> flags, stdout and stderr to <tag>.out */
static int run(const char *tag, const char *flags)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s " SHAPE " %s > %s/%s.out 2>&1", tc_bin(),
             tc_model_args(dir), flags, dir, tag);
    return tu_run(cmd);
}

static size_t round_up(size_t x) { return (x + 255) / 256 * 256; }

Test(zero3, plan_prints_one_ranks_shards_buffers_and_communication, .timeout = 60)
{
    cr_assert_eq(run("p3", "--zero 3 --world-size 4 --plan"), 0);
    cr_assert_eq(run("p2", "--zero 2 --world-size 4 --plan"), 0);
    char *p3 = slurp("p3"), *p2 = slurp("p2");
    size_t pp3, pg3, po3, pp2, pg2, po2, sh, gat, out, comm, ga, rg, rs, nb;
    const char *l3 = strstr(p3, "per rank, each of 4 (--zero 3): ");
    const char *l2 = strstr(p2, "per rank, each of 4 (--zero 2): ");
    cr_assert(l3 && l2, "no per-rank line:\n%s\n--\n%s", p3, p2);
    cr_assert_eq(sscanf(l3, "per rank, each of 4 (--zero 3): params %zu B, grads %zu B, "
                        "optimizer %zu B (params: shard %zu B + gather buffers for two blocks "
                        "%zu B + wte/wpe/LN_f gather buffer %zu B) (grads: shard %*u B + block "
                        "buffer %*u B + wte/wpe/LN_f buffer %*u B + receive buffer %zu B)",
                        &pp3, &pg3, &po3, &sh, &gat, &out, &comm), 7, "%s", l3);
    cr_assert_eq(sscanf(l2, "per rank, each of 4 (--zero 2): params %zu B, grads %zu B, "
                        "optimizer %zu B", &pp2, &pg2, &po2), 3, "%s", l2);
    size_t n = 35472, block = 12 * 24 * 24 + 13 * 24, outer = n - 4 * block;
    /* fp32: a quarter of the padded vector, 8896 elements, 4 B each */
    cr_expect_eq(sh, round_up(8896 * 4), "shard %zu B", sh);
    cr_expect_eq(gat, 2 * round_up(block * 4), "gather buffers %zu B", gat);
    cr_expect_eq(out, round_up(outer * 4), "wte/wpe/LN_f buffer %zu B", out);
    /* the ordered sums' receive buffer: 4 pieces of a whole shard, in grads */
    cr_expect_eq(comm, round_up(4 * 8896 * 4), "receive buffer %zu B", comm);
    cr_expect_eq(pp3, sh + gat + out, "the params row is not its parts");
    cr_expect_eq(pg3, pg2, "grads differ from --zero 2's");
    cr_expect_eq(po3, po2, "optimizer differs from --zero 2's");
    cr_expect_lt(pp3, pp2);
    const char *c = strstr(p3, "communication per micro-batch");
    cr_assert(c, "no communication line:\n%s", p3);
    cr_assert_eq(sscanf(c, "communication per micro-batch, per rank's collectives (--zero 3, "
                        "recompute 0 and 1): all-gathered %zu B, re-gathered %zu B, "
                        "reduce-scattered %zu B = %*f x the parameter bytes (%zu B)",
                        &ga, &rg, &rs, &nb), 4, "%s", c);
    /* every parameter gathered before the head, every block but the last
     * two (still in the two buffers at the head) after it, every gradient
     * scattered */
    cr_expect_eq(ga, n * 4);
    cr_expect_eq(rg, 2 * block * 4);
    cr_expect_eq(rs, n * 4);
    cr_expect_eq(nb, n * 4);
    cr_expect(!strstr(p2, "communication per micro-batch"), "--zero 2's plan changed");
    free(p3);
    free(p2);
}

Test(zero3, what_is_not_done_is_refused_by_name, .timeout = 60)
{
    char flags[1024];
    char *o;
    snprintf(flags, sizeof flags, "--zero 3 --save-checkpoint-llmc %s/llmc", dir);
    cr_expect_eq(run("ll", flags), 2, "llm.c checkpoints at --zero 3: want exit 2");
    o = slurp("ll");
    cr_expect(strstr(o, "--save-checkpoint-llmc and --resume-llmc need --zero 0"), "%s", o);
    free(o);
}
