/* tests/e2e/resume/test_failures.c — end-to-end: what a run does when something goes
 * wrong that is not a bad input file.
 *
 *  - non-finite guard: a NaN injected into the gradients of step 3
 *    (TRAIN_GPT_TEST_NAN_STEP) is skipped and logged ("skipped":true), the
 *    parameters are exactly those after step 2, and AdamW's step count
 *    leaves it out; --max-bad-steps consecutive skips save (or say that
 *    nothing is saved) and exit 4;
 *    skips that are not consecutive do not abort;
 *  - a save that fails (file too large under `ulimit -f`, the same path as a
 *    full disk; a file in the way of the save folder) gets a message naming
 *    the file and the reason, exit 1, and the previous save stays the
 *    newest complete one; with --save, that model file is written all the
 *    same (the weights after the failed save's step exist nowhere else);
 *  - an unusable --checkpoint-dir (under a regular file, in /proc) fails at
 *    start-up, before any training. These do not rely on file permissions:
 *    CI runs as root. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "ckpt/checkpoint.h"
#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

Test(nonfinite, injected_nan_is_skipped_and_logged, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 400);
    const char *m = tc_model_args(d);
    snprintf(args, sizeof args, "%s --steps 5 --log %s/n.jsonl --checkpoint-dir %s/ck", m, d, d);
    cr_assert_eq(tc_run("TRAIN_GPT_TEST_NAN_STEP=3", args, tu_path(d, "n")), 0);
    int steps[16], skipped[16];
    double losses[16];
    int n = tc_log_losses(tu_path(d, "n.jsonl"), steps, losses, skipped, 16);
    cr_assert_eq(n, 5);
    for (int i = 0; i < 5; i++)
        cr_expect_eq(skipped[i], steps[i] == 3, "step %d: skipped=%d", steps[i], skipped[i]);
    cr_expect(tc_file_has(tu_path(d, "n.out"), "SKIPPED: non-finite"));
    /* AdamW took 4 steps of 5; the run counts 5. */
    char sd[1024], err[512];
    int step;
    cr_assert_eq(ckpt_find_latest(tu_path(d, "ck"), sd, sizeof sd, &step, err, sizeof err), 1);
    char sp[1100];
    snprintf(sp, sizeof sp, "%s/state_r00000.bin", sd);
    RunStateInfo info;
    cr_assert_eq(run_state_read_info(sp, &info, err, sizeof err), 0, "%s", err);
    cr_expect_eq(info.st.step, 5);
    cr_expect_eq(info.st.adam_t, 4);
    cr_expect_eq(info.st.bad_steps, 0);

    /* The skipped step leaves the parameters untouched: 3 steps with step 3
     * poisoned == 2 steps. */
    snprintf(args, sizeof args, "%s --steps 3 --save %s/a.bin", m, d);
    cr_assert_eq(tc_run("TRAIN_GPT_TEST_NAN_STEP=3", args, tu_path(d, "a")), 0);
    snprintf(args, sizeof args, "%s --steps 2 --save %s/b.bin", m, d);
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "b")), 0);
    cr_expect(tc_files_equal(tu_path(d, "a.bin"), tu_path(d, "b.bin")),
              "a skipped step changed the parameters");
    free(d);
}

Test(nonfinite, max_bad_steps_saves_and_aborts, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 400);
    const char *m = tc_model_args(d);
    snprintf(args, sizeof args, "%s --steps 20 --max-bad-steps 3 --log %s/n.jsonl "
             "--checkpoint-dir %s/ck", m, d, d);
    cr_assert_eq(tc_run("TRAIN_GPT_TEST_NAN_STEP=3-100", args, tu_path(d, "n")), 4);
    cr_expect(tc_file_has(tu_path(d, "n.err"),
                          "3 consecutive steps (up to step 5) had a "
                          "non-finite loss or gradient norm"));
    cr_expect(tc_file_has(tu_path(d, "n.err"), "aborted after step 5: step 5 is saved in "));
    int steps[32], skipped[32];
    cr_assert_eq(tc_log_losses(tu_path(d, "n.jsonl"), steps, NULL, skipped, 32), 5);
    cr_expect(skipped[2] && skipped[3] && skipped[4] && !skipped[1]);
    char sd[1024], err[512], sp[1100];
    int step;
    cr_assert_eq(ckpt_find_latest(tu_path(d, "ck"), sd, sizeof sd, &step, err, sizeof err), 1);
    cr_expect_eq(step, 5);
    snprintf(sp, sizeof sp, "%s/state_r00000.bin", sd);
    RunStateInfo info;
    cr_assert_eq(run_state_read_info(sp, &info, err, sizeof err), 0, "%s", err);
    cr_expect_eq(info.st.adam_t, 2);
    cr_expect_eq(info.st.bad_steps, 3);

    /* Without --checkpoint-dir or --save it says nothing was kept. */
    snprintf(args, sizeof args, "%s --steps 20 --max-bad-steps 3", m);
    cr_assert_eq(tc_run("TRAIN_GPT_TEST_NAN_STEP=3-100", args, tu_path(d, "q")), 4);
    cr_expect(tc_file_has(tu_path(d, "q.err"),
                          "aborted after step 5: nothing saved (no "
                          "--checkpoint-dir or --save): the 5 steps "
                          "trained are lost"));

    /* Non-consecutive skips do not abort. */
    snprintf(args, sizeof args, "%s --steps 6 --max-bad-steps 2", m);
    cr_expect_eq(tc_run("TRAIN_GPT_TEST_NAN_STEP=2,4,6", args, tu_path(d, "c")), 0);
    /* A malformed hook value is refused, not ignored. */
    cr_expect_eq(tc_run("TRAIN_GPT_TEST_NAN_STEP=x", args, tu_path(d, "x")), 1);
    free(d);
}

/* A first run saves step 2; returns the argument string for more runs. */
static const char *with_save_at_2(const char *d)
{
    static char args[4096];
    tc_make_shards(d, 1, 400);
    snprintf(args, sizeof args, "%s --steps 2 --checkpoint-dir %s/ck", tc_model_args(d), d);
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "first")), 0);
    snprintf(args, sizeof args, "%s --steps 4 --save-every 1 --checkpoint-dir %s/ck --resume",
             tc_model_args(d), d);
    return args;
}

static void expect_newest_is_2(const char *d)
{
    char sd[1024], err[512];
    int step;
    cr_assert_eq(ckpt_find_latest(tu_path(d, "ck"), sd, sizeof sd, &step, err, sizeof err), 1);
    cr_expect_eq(step, 2);
    CkptManifest man;
    GPTConfig cfg;
    float *p = NULL;
    cr_assert_eq(ckpt_read_manifest(sd, &man, err, sizeof err), 0, "%s", err);
    cr_expect_eq(ckpt_load_model(sd, &man, &cfg, &p, err, sizeof err), 0, "%s", err);
    size_t n = config_num_params(&cfg);
    float *mv = malloc(2 * n * sizeof(float));
    RunState st;
    cr_expect_eq(ckpt_load_state(sd, &man, &st, n, 0, n, mv, mv + n, err, sizeof err), 0, "%s",
                 err);
    free(mv);
    free(p);
    ckpt_manifest_free(&man);
}

Test(save_errors, file_too_large_keeps_previous_save, .timeout = 60)
{
    char *d = tu_tempdir(), cmd[4096];
    const char *args = with_save_at_2(d);
    /* model.bin is 134 KiB: a 40 KiB limit (80 blocks of 512 bytes in
     * dash, 1024 in bash: 40 or 80 KiB) makes its write fail with EFBIG. */
    snprintf(cmd, sizeof cmd, "ulimit -f 80; exec %s %s >%s/f.out 2>%s/f.err", tc_bin(), args, d,
             d);
    cr_assert_eq(tu_run(cmd), 1);
    cr_expect(tc_file_has(tu_path(d, "f.err"), "save at step 3 failed"));
    cr_expect(tc_file_has(tu_path(d, "f.err"),
                          "step_00000003/model.bin.tmp: write failed: File too large"));
    cr_expect(tc_file_has(tu_path(d, "f.err"), "the previous complete save"));
    expect_newest_is_2(d);
    free(d);
}

Test(save_errors, blocked_save_folder_keeps_previous_save, .timeout = 60)
{
    char *d = tu_tempdir(), cmd[1024];
    const char *args = with_save_at_2(d);
    snprintf(cmd, sizeof cmd, "touch %s/ck/step_00000003", d);
    cr_assert_eq(tu_run(cmd), 0);
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "b")), 1);
    cr_expect(tc_file_has(tu_path(d, "b.err"),
                          "step_00000003: cannot create the save folder: a file of that name"));
    expect_newest_is_2(d);
    free(d);
}

/* After a run in d (output b.*) whose save at step 3 failed: its message
 * names d/m.bin as holding the model after step 3, and that file equals
 * the model of a 3-step run that saved normally. */
static void expect_step3_model_in_save(const char *d)
{
    char want[1200], args[4400];
    snprintf(want, sizeof want, "the model after step 3 is in %s (not resumable)",
             tu_path(d, "m.bin"));
    cr_expect(tc_file_has(tu_path(d, "b.err"), want), "no: %s", want);
    snprintf(args, sizeof args, "%s --steps 3 --save %s", tc_model_args(d), tu_path(d, "ref.bin"));
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "r")), 0);
    cr_assert(tu_exists(tu_path(d, "m.bin")), "--save was not written");
    cr_expect(tc_files_equal(tu_path(d, "m.bin"), tu_path(d, "ref.bin")));
}

/* The same failed save with --save: the run still exits 1, but the model
 * after step 3 is written to --save first, bitwise a straight 3-step run's
 * (a resume continues bitwise). Before, the run exited with the weights of
 * step 3 nowhere: no --save file. */
Test(save_errors, a_failed_save_still_writes_the_model_file, .timeout = 60)
{
    char *d = tu_tempdir(), cmd[1024], args[4400];
    snprintf(args, sizeof args, "%s --save %s", with_save_at_2(d), tu_path(d, "m.bin"));
    snprintf(cmd, sizeof cmd, "touch %s/ck/step_00000003", d);
    cr_assert_eq(tu_run(cmd), 0);
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "b")), 1);
    cr_expect(tc_file_has(tu_path(d, "b.err"), "save at step 3 failed"));
    expect_newest_is_2(d);
    expect_step3_model_in_save(d);
    free(d);
}

/* The same for llm.c's export (--save-checkpoint-llmc), its step 3 model
 * file blocked by a folder made during the run: exit 1, and --save holds
 * the model after step 3. Before: no --save file. */
Test(save_errors, a_failed_llmc_export_still_writes_the_model_file, .timeout = 60)
{
    char *d = tu_tempdir(), args[4400];
    tc_make_shards(d, 1, 400);
    snprintf(args, sizeof args, "%s --steps 4 --save-every 1 --save-checkpoint-llmc %s --save %s",
             tc_model_args(d), tu_path(d, "lc"), tu_path(d, "m.bin"));
    /* held at step 3's start (steps 1 and 2 exported) while the folder is made */
    char pause[4200]; /* tu_path's buffers are reused */
    snprintf(pause, sizeof pause, "%s", tu_path(d, "pause"));
    pid_t pid = tc_spawn(tc_pause_env(pause, "step:3"), args, tu_path(d, "b"));
    cr_assert(tc_paused(pause, "step:3", 60000), "the run did not reach step 3");
    cr_assert_eq(mkdir(tu_path(d, "lc/model_00000003.bin"), 0755), 0);
    tc_release(pause);
    int st = tc_wait(pid, 60000);
    cr_assert(st != -1 && WIFEXITED(st));
    cr_expect_eq(WEXITSTATUS(st), 1);
    expect_step3_model_in_save(d);
    free(d);
}

Test(save_errors, unusable_checkpoint_dir_fails_at_start, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 400);
    const char *m = tc_model_args(d);
    /* a path below a regular file */
    snprintf(args, sizeof args, "%s --steps 2 --checkpoint-dir %s/train_0.bin/ck --log %s/l.jsonl",
             m, d, d);
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "a")), 1);
    cr_expect(tc_file_has(tu_path(d, "a.err"), "--checkpoint-dir"));
    cr_expect(tc_file_has(tu_path(d, "a.err"), "its parent folder must exist and be writable"));
    cr_expect(tc_file_has(tu_path(d, "a.err"), "train_0.bin: not a folder"));
    cr_expect_eq(tc_log_losses(tu_path(d, "l.jsonl"), NULL, NULL, NULL, 8), 0,
                 "trained before failing");
    /* /proc refuses new folders, even to root */
    snprintf(args, sizeof args, "%s --steps 2 --checkpoint-dir /proc/train_gpt_ckpt", m);
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "b")), 1);
    cr_expect(tc_file_has(tu_path(d, "b.err"), "--checkpoint-dir /proc/train_gpt_ckpt"));
    free(d);
}
