/* tests/e2e/tools/test_speed_verdict.c — scripts/speed_verdict.py, the
 * verdict of compare_memory.sh and memory_report.sh, on canned tokens/s:
 * medians and min-max worked out by hand; a difference whose ranges
 * overlap is "within noise", one whose ranges are apart is reported with
 * its size, and a single run per mode supports no difference at all. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/test_util.h"

/* stdout of the script fed `runs` (lines "MODE TOKENS_PER_S"); its exit status in *rc. */
static char *verdict(const char *runs, int *rc)
{
    char *d = tu_tempdir(), in[600], cmd[2048], *out = NULL, *err = NULL;
    snprintf(in, sizeof in, "%s/runs.txt", d);
    tu_write_text(in, runs);
    snprintf(cmd, sizeof cmd, "scripts/speed_verdict.py --label 'tokens/s --recompute' < %s", in);
    *rc = tu_run_output(cmd, &out, &err);
    free(err);
    free(d);
    return out;
}

Test(speed_verdict, overlapping_ranges_are_within_noise)
{
    /* the set-up: recompute 1 "faster" (502 vs 272), but 0's runs
     * span 272..610 and 1's 450..502: medians 450 and 474, ranges overlap */
    int rc;
    char *out = verdict("0 272\n1 502\n0 450\n1 474\n0 610\n1 450\n", &rc);
    cr_assert_eq(rc, 0, "%s", out);
    cr_expect(strstr(out, "tokens/s --recompute 0: median 450 (min-max 272-610 over 3 runs)"),
              "%s", out);
    cr_expect(strstr(out, "tokens/s --recompute 1: median 474 (min-max 450-502 over 3 runs)"),
              "%s", out);
    cr_expect(strstr(out, "1 vs 0: within noise (the ranges overlap)"), "%s", out);
    cr_expect_null(strstr(out, "faster"), "%s", out);
    cr_expect_null(strstr(out, "slower"), "%s", out);
    free(out);
}

Test(speed_verdict, ranges_apart_report_the_difference)
{
    /* 0: 590, 600, 610 (median 600); 1: 470, 480, 490 (median 480):
     * 1 is (480 - 600) / 600 = 20.0% slower, every run of 0 beat every run of 1 */
    int rc;
    char *out = verdict("0 600\n1 480\n0 590\n1 470\n0 610\n1 490\n", &rc);
    cr_assert_eq(rc, 0, "%s", out);
    cr_expect(strstr(out, "1 vs 0: 1 20.0% slower (the ranges do not overlap)"), "%s", out);
    free(out);
    /* touching ranges (0 tops out where 1 starts) are an overlap */
    out = verdict("0 500\n1 520\n0 520\n1 530\n", &rc);
    cr_expect(strstr(out, "within noise"), "%s", out);
    free(out);
}

Test(speed_verdict, one_run_per_mode_supports_no_difference)
{
    int rc;
    char *out = verdict("0 324\n1 450\n", &rc); /* the single-run figures */
    cr_assert_eq(rc, 0, "%s", out);
    cr_expect(strstr(out, "1 vs 0: within noise (one run of a mode has no spread)"), "%s", out);
    free(out);
    out = verdict("0 fast\n", &rc);
    cr_expect_eq(rc, 1, "a bad line is an error: %s", out);
    free(out);
}
