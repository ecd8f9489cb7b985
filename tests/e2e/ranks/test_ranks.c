/* tests/e2e/ranks/test_ranks.c — end-to-end: features that behave per rank, run under
 * `mpirun -np 2` on the CPU backend (the tiny model of train_cli.h), held to
 * what one process does.
 *
 *  - the non-finite abort (--max-bad-steps, TRAIN_GPT_TEST_NAN_STEP): every
 *    rank reaches it at the same step, the save is made once, the job exits
 *    4 (README's table), and the abort is said once, not once per rank. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

#define MPIRUN2 "timeout 120 " TC_MPIRUN " -np 2"

/* How many times needle occurs in the file. */
static int occurrences(const char *path, const char *needle)
{
    char *s = tu_read_file(path, NULL);
    int n = 0;
    for (const char *p = s ? strstr(s, needle) : NULL; p; p = strstr(p + 1, needle)) n++;
    free(s);
    return n;
}

Test(ranks, nonfinite_abort_is_said_once, .timeout = 120)
{
    char *d = tu_tempdir(), cmd[8192];
    tc_make_shards(d, 1, 400);
    /* NaN gradients from step 2: steps 2 and 3 skipped, then the abort */
    snprintf(cmd, sizeof cmd, "TRAIN_GPT_TEST_NAN_STEP=2-100 %s -x TRAIN_GPT_TEST_NAN_STEP %s %s "
             "--steps 8 --max-bad-steps 2 --checkpoint-dir %s/ck >%s/n.out 2>%s/n.err", MPIRUN2,
             tc_bin(), tc_model_args(d), d, d, d);
    cr_assert_eq(tu_run(cmd), 4, "a non-finite abort under 2 ranks: exit 4");
    const char *err = tu_path(d, "n.err");
    cr_expect_eq(occurrences(err, "2 consecutive steps (up to step 3) had a non-finite loss"), 1,
                 "the abort must be said once, by rank 0");
    cr_expect_eq(occurrences(err, "aborted after step 3: step 3 is saved in "), 1,
                 "what was kept must be said once");
    cr_expect_eq(access(tu_path(d, "ck/step_00000003/COMPLETE"), F_OK), 0);
    cr_expect_eq(access(tu_path(d, "ck/step_00000003/state_r00001.bin"), F_OK), 0);
    tu_remove_tree(d);
}
