/* tests/unit/cli/test_guard.c — cli/guard.h's checks that need no ranks:
 * the shape flags given against a save's shape (only flags the user gave
 * count; a preset's values are named as the preset's), and the command
 * that returns to a save, checked by letting /bin/sh split it again. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/guard.h"
#include "cli/options.h"
#include "tests/lib/test_util.h"

static void parse(TrainOptions *o, int argc, char **argv)
{
    cr_assert_eq(train_options_parse(o, argc, argv), 0);
}

static GPTConfig saved_shape(int L, int C, int NH, int V, int maxT)
{
    GPTConfig c = {0};
    c.num_layers = L;
    c.channels = C;
    c.num_heads = NH;
    c.vocab_size = V;
    c.max_seq_len = maxT;
    return c;
}

/* No shape flag given: nothing to compare, whatever the defaults are. */
Test(guard, no_shape_flags_resume_any_shape)
{
    TrainOptions o;
    char *argv[] = {"train_gpt", "--resume=ck", NULL};
    parse(&o, 2, argv);
    GPTConfig s = saved_shape(3, 48, 3, 50257, 64);
    char err[2048] = "";
    cr_expect_eq(guard_check_resume_shape(&o, &s, "ck/step_00000004", err, sizeof err), 0, "%s",
                 err);
}

/* Every differing flag is named with both values, in one message; a flag
 * given with the save's own value is no difference. */
Test(guard, each_differing_flag_is_named_with_both_values)
{
    TrainOptions o;
    char *argv[] = {"train_gpt", "--layers", "4", "--channels", "64", "--heads", "4",
                    "--max-seq-len", "128", NULL};
    parse(&o, 9, argv);
    GPTConfig s = saved_shape(4, 48, 3, 50257, 64);
    char err[2048] = "";
    cr_expect_eq(guard_check_resume_shape(&o, &s, "ck/step_00000004", err, sizeof err), -1);
    cr_expect(strstr(err, "cannot resume from ck/step_00000004"), "%s", err);
    cr_expect(strstr(err, "--channels: the save has 48, this run 64; --heads: the save has 3, "
                          "this run 4; --max-seq-len: the save has 64, this run 128"), "%s", err);
    cr_expect(!strstr(err, "--layers"), "4 layers agree: %s", err);
}

/* A preset's shape counts as given, labelled as the preset's. */
Test(guard, a_preset_is_named_as_the_preset)
{
    TrainOptions o;
    char *argv[] = {"train_gpt", "--model", "d12", NULL};
    parse(&o, 3, argv);
    GPTConfig s = saved_shape(o.layers, o.channels + 64, o.heads, 50257, 1024);
    char err[2048] = "";
    cr_expect_eq(guard_check_resume_shape(&o, &s, "ck/step_00000001", err, sizeof err), -1);
    char want[128];
    snprintf(want, sizeof want, "--model d12 (its channels): the save has %d, this run %d",
             o.channels + 64, o.channels);
    cr_expect(strstr(err, want), "%s", err);
}

/* What /bin/sh makes of cmd, one argument a line. */
static char *sh_split(const char *cmd)
{
    char script[20000], *out = NULL;
    snprintf(script, sizeof script, "set -- %s; for a; do printf '%%s\\n' \"$a\"; done", cmd);
    char *q = tu_tempdir();
    const char *path = tu_path(q, "split.sh");
    tu_write_text(path, script);
    char run[4300];
    snprintf(run, sizeof run, "sh '%s'", path);
    cr_assert_eq(tu_run_output(run, &out, NULL), 0);
    tu_remove_tree(q);
    return out;
}

/* --resume, --resume=X and --overwrite-checkpoints are dropped, the save
 * is added as --resume=DIR, and every other argument survives a shell's
 * splitting exactly: spaces, quotes and $ included. */
Test(guard, the_resume_command_survives_the_shell)
{
    char *argv[] = {"./train_gpt", "--resume", "--log", "my run's log.txt", "--overwrite-checkpoints",
                    "--resume=ck/step_00000002", "--prompt", "a $HOME `x` \"q\"", "--steps", "10"};
    char cmd[16384];
    guard_resume_command(10, argv, "ck dir/step_00000006", cmd, sizeof cmd);
    char *got = sh_split(cmd);
    cr_expect_str_eq(got, "./train_gpt\n--log\nmy run's log.txt\n--prompt\na $HOME `x` \"q\"\n"
                          "--steps\n10\n--resume=ck dir/step_00000006\n", "%s -> %s", cmd, got);
    free(got);
    /* plain words stay unquoted, for a readable note */
    char *plain[] = {"./train_gpt", "--steps", "10"};
    guard_resume_command(3, plain, "ck/step_00000006", cmd, sizeof cmd);
    cr_expect_str_eq(cmd, "./train_gpt --steps 10 --resume=ck/step_00000006");
}
