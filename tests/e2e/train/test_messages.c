/* tests/e2e/train/test_messages.c — messages and exit statuses that say what is true
 * (the signal and saving messages are tested in tests/e2e/stops/).
 *
 *  - --plan=1: "takes no value", not "missing value";
 *  - abbreviations (--lay 2, --lay=2, --checkpoint 5) are unknown flags,
 *    naming the full flag, not silently taken as --layers;
 *  - --seed ' -1' and --layers ' 2' are refused (strtoull took " -1" for
 *    2^64-1);
 *  - --save-every without --checkpoint-dir is a usage error (exit 2, as
 *    documented), as are --resume without a folder and
 *    --overwrite-checkpoints without one or with --resume;
 *  - "note: skipping ..." about a damaged manifest comes once per run, not
 *    once per save;
 *  - an out-of-memory for the params arena does not suggest --recompute 1
 *    (a 6 GB model under `ulimit -v` of about 3 GB). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

/* Run the tiny model (one step: quick even where a flag is wrongly
 * accepted) with args after it; expect `status` and `msg` in a one-line
 * stderr. */
static void expect_usage(const char *args, int status, const char *msg)
{
    char *d = tu_tempdir(), p[700], e[800], all[4096];
    tc_make_shards(d, 1, 400);
    snprintf(all, sizeof all, "%s --steps 1 %s", tc_model_args(d), args);
    snprintf(p, sizeof p, "%s/u", d);
    int rc = tc_run(NULL, all, p);
    snprintf(e, sizeof e, "%s.err", p);
    char *err = tu_read_file(e, NULL);
    cr_expect_eq(rc, status, "'%s': exit %d, want %d: %s", args, rc, status, err ? err : "");
    cr_expect(err && strstr(err, msg), "'%s': stderr lacks '%s': %s", args, msg, err ? err : "");
    int lines = 0;
    for (char *c = err; c && *c; c++) lines += *c == '\n';
    cr_expect_eq(lines, 1, "'%s': want one line, got: %s", args, err ? err : "");
    free(err);
    tu_remove_tree(d);
}

Test(messages, flags_that_take_no_value_say_so)
{
    expect_usage("--plan=1", 2, "--plan: takes no value, got '--plan=1'");
    expect_usage("--profile-ops=yes", 2, "--profile-ops: takes no value");
    expect_usage("--batch", 2, "--batch: missing value");
}

Test(messages, abbreviated_flags_are_refused)
{
    expect_usage("--lay 2", 2, "--lay: unknown flag (flags are not abbreviated: --layers?)");
    expect_usage("--lay=2", 2, "--lay=2: unknown flag (flags are not abbreviated: --layers?)");
    expect_usage("--checkpoint 5", 2, "unknown flag");
    expect_usage("--he", 2, "--he: unknown flag"); /* --heads or --help */
}

Test(messages, numbers_with_blanks_or_signs_are_refused)
{
    expect_usage("--seed ' -1'", 2, "--seed: expected a non-negative integer (digits only), "
                                    "got ' -1'");
    expect_usage("--seed -1", 2, "--seed: expected a non-negative integer");
    expect_usage("--layers ' 2'", 2, "--layers: expected an integer, got ' 2'");
    expect_usage("--lr ' 1e-3'", 2, "--lr: expected a number");
}

Test(messages, checkpoint_flags_that_need_a_folder_exit_2)
{
    expect_usage("--save-every 2", 2, "--save-every: needs --checkpoint-dir DIR");
    expect_usage("--resume", 2, "--resume: needs --checkpoint-dir DIR (or --resume=DIR)");
    expect_usage("--overwrite-checkpoints", 2, "--overwrite-checkpoints: needs --checkpoint-dir");
    expect_usage("--checkpoint-dir /tmp/x --overwrite-checkpoints --resume", 2,
                 "--overwrite-checkpoints starts a new run");
}

Test(messages, a_skipped_save_is_noted_once, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096], p[700], e[800], cmd[2048];
    tc_make_shards(d, 1, 400);
    const char *m = tc_model_args(d);
    snprintf(args, sizeof args, "%s --steps 2 --checkpoint-dir %s/ck", m, d);
    snprintf(p, sizeof p, "%s/a", d);
    cr_assert_eq(tc_run(NULL, args, p), 0);
    /* a later folder whose manifest is damaged */
    snprintf(cmd, sizeof cmd, "cp -r %s/ck/step_00000002 %s/ck/step_00000009 && "
             "echo '{\"format\"' > %s/ck/step_00000009/COMPLETE", d, d, d);
    cr_assert_eq(tu_run(cmd), 0);
    /* resume and save 3 times: the note comes once (and the damaged folder,
     * newer than the save resumed, is moved into abandoned/) */
    snprintf(args, sizeof args, "%s --steps 5 --save-every 1 --keep 0 --checkpoint-dir %s/ck "
             "--resume", m, d);
    snprintf(p, sizeof p, "%s/b", d);
    cr_assert_eq(tc_run(NULL, args, p), 0);
    snprintf(e, sizeof e, "%s/b.err", d);
    char *err = tu_read_file(e, NULL);
    int n = 0;
    for (const char *q = err ? strstr(err, "note: skipping") : NULL; q;
         q = strstr(q + 1, "note: skipping"))
        n++;
    cr_expect_eq(n, 1, "the note came %d times: %s", n, err ? err : "");
    cr_expect(err && strstr(err, "step_00000009: "), "%s", err ? err : "");
    free(err);
    tu_remove_tree(d);
}

/* Weights over an address-space limit: the line names the limit, and
 * advises what can shrink weights (the arena's own message, when an
 * allocation fails without a limit, is tests/unit/model/test_arena.c's). */
Test(messages, weights_over_the_limit_do_not_suggest_recompute, .timeout = 60)
{
    /* AddressSanitizer reserves terabytes of address space for its shadow
     * memory: under `ulimit -v` it cannot start (make test-asan). */
    if (strstr(tc_bin(), "asan")) cr_skip_test("an address-space limit and ASan do not mix");
    char *d = tu_tempdir(), cmd[8192];
    tc_make_shards(d, 1, 400);
    /* 48 x 1600: 1.5e9 parameters, 6 GB of fp32 weights */
    snprintf(cmd, sizeof cmd, "ulimit -v 3000000; exec %s --train-data '%s/train_0.bin' "
             "--layers 48 --channels 1600 --heads 25 --seq-len 16 --vocab 256 --batch 1 "
             "--device cpu --threads 1 --steps 1 >%s/o.out 2>%s/o.err", tc_bin(), d, d, d);
    cr_assert_eq(tu_run(cmd), 1);
    char e[800];
    snprintf(e, sizeof e, "%s/o.err", d);
    char *err = tu_read_file(e, NULL);
    cr_expect(err && strstr(err, "the address-space limit (ulimit -v) is 3000000 KiB"), "%s",
              err ? err : "");
    cr_expect(err && strstr(err, "alone are over it"), "%s", err ? err : "");
    cr_expect(err && !strstr(err, "--recompute 1"), "suggests --recompute 1: %s", err);
    cr_expect(err && strstr(err, "a smaller model"), "%s", err ? err : "");
    free(err);
    tu_remove_tree(d);
}
