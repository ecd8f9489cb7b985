/* tests/e2e/ranks/test_offload_ranks.c — --offload optimizer under two MPI ranks: with
 * --zero 0 every rank runs the whole deferred update (model/gpt_optim.c) and its
 * gradients are staged by gpt_update after the reduction, not during the backward; with
 * --zero 1 each rank updates its shard in the host tier and settles before the
 * all-gather. With clipping on and off and two micro-batches a step, the saved model is
 * byte for byte that of the same ranks without offload; so for --arch llama (--zero 1). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

#define MPIRUN "timeout 180 " TC_MPIRUN " -np 2 "

/* One job; 0 or its exit status. */
static int train(const char *d, const char *name, const char *flags)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, MPIRUN "%s %s --steps 4 --grad-accum 2 --recompute 1 %s --save "
             "%s/%s.bin > %s/%s.out 2>&1", tc_bin(), tc_model_args(d), flags, d, name, d, name);
    return tu_run(cmd);
}

static void expect_same_file(const char *d, const char *a, const char *b, const char *what)
{
    char pa[600], pb[600];
    snprintf(pa, sizeof pa, "%s/%s.bin", d, a);
    snprintf(pb, sizeof pb, "%s/%s.bin", d, b);
    size_t la, lb;
    char *ma = tu_read_file(pa, &la), *mb = tu_read_file(pb, &lb);
    cr_assert(ma && mb, "%s: a saved model is missing", what);
    cr_expect(la == lb && memcmp(ma, mb, la) == 0, "%s: the saved models differ", what);
    free(ma), free(mb);
}

Test(offload_ranks, two_ranks_match_without_offload, .timeout = 600)
{
    char *d = tu_tempdir();
    tc_make_shards(d, 2, 400);
    static const char *zero[] = {"--zero 0", "--zero 1"}, *clip[] = {"", "--grad-clip 0"};
    for (int z = 0; z < 2; z++)
        for (int c = 0; c < 2; c++) {
            char flags[256], what[128];
            snprintf(what, sizeof what, "%s %s", zero[z], clip[c][0] ? clip[c] : "(clip 1)");
            snprintf(flags, sizeof flags, "%s %s", zero[z], clip[c]);
            cr_assert_eq(train(d, "plain", flags), 0, "%s without offload failed", what);
            snprintf(flags, sizeof flags, "%s %s --offload checkpoints,optimizer", zero[z],
                     clip[c]);
            cr_assert_eq(train(d, "off", flags), 0, "%s with offload failed", what);
            char p[600];
            snprintf(p, sizeof p, "%s/off.out", d);
            cr_expect(tc_file_has(p, "memory: host tier (--offload "), "%s: no host tier", what);
            expect_same_file(d, "plain", "off", what);
            char rm[1300];
            snprintf(rm, sizeof rm, "rm -f %s/plain.bin %s/off.bin", d, d);
            cr_assert_eq(tu_run(rm), 0);
        }
    free(d);
}

/* The Llama family (grouped-query, untied head) the same way, --zero 1 with clipping:
 * the deferred shard update reads the flat parameter vector, whatever the block. */
Test(offload_ranks, llama_two_ranks_match_without_offload, .timeout = 300)
{
    char *d = tu_tempdir();
    tc_make_shards(d, 2, 400);
    const char *llama = "--arch llama --kv-heads 2 --ffn 64 --lm-head untied --zero 1";
    char flags[256];
    cr_assert_eq(train(d, "plain", llama), 0, "llama without offload failed");
    snprintf(flags, sizeof flags, "%s --offload checkpoints,optimizer", llama);
    cr_assert_eq(train(d, "off", flags), 0, "llama with offload failed");
    char p[600];
    snprintf(p, sizeof p, "%s/off.out", d);
    cr_expect(tc_file_has(p, "memory: host tier (--offload "), "no host tier");
    expect_same_file(d, "plain", "off", "llama --zero 1");
    free(d);
}
