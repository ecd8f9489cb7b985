/* tests/e2e/outputs/test_output_faults.c — end-to-end: outputs that could
 * only fail, refused or reported.
 *
 *  - --save and --log naming one file (the same text, or "x" and "./x"):
 *    refused at start, exit 2, naming both flags; nothing written;
 *  - stdout into /dev/full: every line of the report is lost, so a run that
 *    trained to its end exits 1 with a message on stderr (not 0). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

Test(output_faults, save_and_log_on_one_file_are_refused, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096], want[2048];
    tc_make_shards(d, 1, 2000);
    snprintf(args, sizeof args, "%s --steps 1 --save %s --log %s", tc_model_args(d),
             tu_path(d, "x"), tu_path(d, "x"));
    snprintf(want, sizeof want, "--save %s and --log %s name the same file", tu_path(d, "x"),
             tu_path(d, "x"));
    tc_run_expect(d, args, 2, want);
    struct stat sb;
    cr_expect_neq(stat(tu_path(d, "x"), &sb), 0, "a refused run wrote %s", tu_path(d, "x"));
    /* the same file by another spelling */
    snprintf(args, sizeof args, "%s --steps 1 --save %s/x --log %s/./x", tc_model_args(d), d, d);
    tc_run_expect(d, args, 2, "name the same file");
    cr_expect_neq(stat(tu_path(d, "x"), &sb), 0);
    free(d);
}

Test(output_faults, stdout_write_errors_fail_the_run, .timeout = 60)
{
    char *d = tu_tempdir(), cmd[8192], *err = NULL;
    tc_make_shards(d, 1, 2000);
    snprintf(cmd, sizeof cmd, "%s %s --steps 2 >/dev/full", tc_bin(), tc_model_args(d));
    int rc = tu_run_output(cmd, NULL, &err);
    cr_expect_eq(rc, 1, "a run with stdout into /dev/full exited %d", rc);
    cr_expect(err && strstr(err, "error: standard output: a write failed"), "stderr: %s",
              err ? err : "");
    free(err);
    free(d);
}
