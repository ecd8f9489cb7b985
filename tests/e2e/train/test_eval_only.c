/* tests/e2e/train/test_eval_only.c — a run of no steps evaluates
 * --init-from on --val-data and needs no training data: run from a folder
 * outside the repository, where the default dataset's glob matches
 * nothing, it prints the val loss and exits 0. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

Test(eval_only, steps_zero_needs_no_train_data_outside_the_repository, .timeout = 60)
{
    char *d = tu_tempdir(), args[2048], env[1200], prefix[600], bin[PATH_MAX];
    tc_make_shards(d, 1, 20000);
    snprintf(prefix, sizeof prefix, "%s/train", d);
    snprintf(args, sizeof args, "%s --steps 1 --save '%s/m.bin'", tc_model_args(d), d);
    cr_assert_eq(tc_run(NULL, args, prefix), 0, "the model to evaluate was not trained");
    /* the folder as cwd: datasets/tinyshakespeare_train_*.bin is not there */
    cr_assert_not_null(realpath(tc_bin(), bin), "%s", tc_bin());
    snprintf(prefix, sizeof prefix, "%s/eval", d);
    snprintf(args, sizeof args, "--init-from m.bin --steps 0 --val-data val.bin --val-batches 1 "
             "--batch 2 --seq-len 16 --device cpu --threads 1");
    snprintf(env, sizeof env, "cd '%.500s' &&", d);
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "%s '%s' %s >'%s.out' 2>'%s.err'", env, bin, args, prefix, prefix);
    int rc = tu_run(cmd);
    char *out = tu_read_file(tu_path(d, "eval.out"), NULL);
    char *err = tu_read_file(tu_path(d, "eval.err"), NULL);
    cr_assert_eq(rc, 0, "exit %d: %s%s", rc, out ? out : "", err ? err : "");
    cr_expect(out && strstr(out, "val loss"), "no val loss: %s", out ? out : "");
    cr_expect(err && strstr(err, "no training data"), "no note: %s", err ? err : "");
    free(out);
    free(err);
    tu_remove_tree(d);
}
