/* tests/e2e/train/test_cli_small.c — small promises of the command line:
 *  - --model gpt2 / gpt2-medium / gpt2-large / gpt2-xl are d12 / d24 / d36
 *    / d48 (the --plan of each pair, at a fixed budget, is the same text;
 *    before, "gpt2" was refused, exit 2);
 *  - --dtype bf16 with the cpu backend is a bad command line, exit 2 with
 *    one line (before: exit 1 after start-up, from backend_open), except
 *    with --plan, which runs no backend;
 *  - no line of --help, ./train_gpt's or ./tokenize's, is wider than 100
 *    columns (before: up to 419);
 *  - a new run refused for an output that exists suggests --resume only
 *    when the run has a checkpoint folder to resume from (before: always,
 *    and --resume without --checkpoint-dir exits 2). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

/* The baseline a cpu --plan measures moves by a MiB from process to process
 * (the resident set, rounded up to a MiB); the test hook fixes it, so two
 * plans of one shape are the same text. */
static int run(const char *args, char **out, char **err)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "TRAIN_GPT_TEST_BASELINE=201326592 %s %s < /dev/null", tc_bin(),
             args);
    return tu_run_output(cmd, out, err);
}

Test(cli_small, gpt2_names_are_the_presets, .timeout = 120)
{
    static const char *pairs[][2] = {{"gpt2", "d12"}, {"gpt2-medium", "d24"},
                                     {"gpt2-large", "d36"}, {"gpt2-xl", "d48"}};
    for (int i = 0; i < 4; i++) {
        char a[320], b[320], *oa, *ob, *ea, *eb;
        snprintf(a, sizeof a, "--model %s --plan --device cpu --op-costs flops --memory-budget 100GiB",
                 pairs[i][0]);
        snprintf(b, sizeof b, "--model %s --plan --device cpu --op-costs flops --memory-budget 100GiB",
                 pairs[i][1]);
        int ra = run(a, &oa, &ea), rb = run(b, &ob, &eb);
        cr_expect_eq(ra, 0, "%s: exit %d: %s", a, ra, ea);
        cr_expect_eq(rb, 0, "%s: exit %d: %s", b, rb, eb);
        cr_expect(oa && ob && strcmp(oa, ob) == 0 && strlen(oa) > 100,
                  "--model %s and %s plan differently:\n%s\n%s", pairs[i][0], pairs[i][1], oa, ob);
        free(oa), free(ob), free(ea), free(eb);
    }
    char *o, *e;
    cr_expect_eq(run("--model gpt3", &o, &e), 2);
    cr_expect(e && strstr(e, "gpt2|gpt2-medium|gpt2-large|gpt2-xl"), "%s", e);
    free(o), free(e);
}

Test(cli_small, bf16_on_the_cpu_is_a_bad_command_line)
{
    char *o, *e;
    int rc = run("--dtype bf16 --device cpu --steps 1", &o, &e);
    cr_expect_eq(rc, 2, "exit %d: %s", rc, e);
    cr_expect(e && strstr(e, "--dtype bf16: the cpu backend computes in fp32 only") &&
              strchr(e, '\n') == e + strlen(e) - 1, "not one line: %s", e);
    free(o), free(e);
    /* --plan makes a bf16 plan anywhere: it runs no backend */
    rc = run("--dtype bf16 --device cpu --plan --layers 2 --channels 32 --heads 4 --seq-len 16 "
             "--memory-budget 1GiB --op-costs flops", &o, &e);
    cr_expect_eq(rc, 0, "exit %d: %s", rc, e);
    free(o), free(e);
}

Test(cli_small, help_fits_in_100_columns)
{
    const char *progs[] = {tc_bin(), tc_tokenize_bin()};
    for (int k = 0; k < 2; k++) {
        char cmd[1024], *out;
        snprintf(cmd, sizeof cmd, "%s --help", progs[k]);
        cr_assert_eq(tu_run_output(cmd, &out, NULL), 0);
        int n = 0, widest = 0;
        for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"), n++) {
            int w = (int)strlen(line);
            if (w > widest) widest = w;
            cr_expect_leq(w, 100, "%s --help: a line of %d columns: '%s'", progs[k], w, line);
        }
        cr_expect_gt(n, 20, "%s --help: %d lines", progs[k], n);
        free(out);
    }
}

Test(cli_small, the_exists_hint_offers_resume_only_with_a_checkpoint_folder, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096], *o, *e;
    tc_make_shards(d, 1, 400);
    tu_write_text(tu_path(d, "old.log"), "{\"step\":1}\n");
    snprintf(args, sizeof args, "%s --steps 1 --log %s/old.log", tc_model_args(d), d);
    cr_expect_eq(run(args, &o, &e), 1);
    cr_expect(e && strstr(e, "the file exists") && strstr(e, "Give another path, or pass "
              "--overwrite-outputs") && !strstr(e, "--resume"), "%s", e);
    free(o), free(e);
    snprintf(args, sizeof args, "%s --steps 1 --log %s/old.log --checkpoint-dir %s/ck",
             tc_model_args(d), d, d);
    cr_expect_eq(run(args, &o, &e), 1);
    cr_expect(e && strstr(e, "continue that run with --resume, or pass --overwrite-outputs"),
              "%s", e);
    free(o), free(e);
    tu_remove_tree(d);
}
