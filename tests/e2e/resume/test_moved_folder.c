/* tests/e2e/resume/test_moved_folder.c — end-to-end: the checkpoint folder
 * stays the one the run locked at start-up.
 *
 * The folder is moved away (renamed) between two saves of a run held at
 * the start of step 3 (TRAIN_GPT_TEST_PAUSE_AT): the lock goes with it, so a second run
 * on the folder's new path is refused by the lock; the first run's next
 * save is refused (exit 1, the message naming --checkpoint-dir and the
 * folder) after --save's rescue of the model, and no folder is made
 * again at the old path. Replacing the folder by a new one of the same
 * name is refused the same way. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

/* Start a 8-step run saving every 2 steps; returns its pid once it is held
 * at the start of step 3, step 2 saved (tc_release(d/pause) lets it go). */
static pid_t start_held_run(const char *d)
{
    char args[4096], pause[4200];
    snprintf(args, sizeof args, "%s --steps 8 --save-every 2 --checkpoint-dir %s/ck --save %s",
             tc_model_args(d), d, tu_path(d, "m.bin"));
    snprintf(pause, sizeof pause, "%s", tu_path(d, "pause"));
    pid_t pid = tc_spawn(tc_pause_env(pause, "step:3"), args, tu_path(d, "s"));
    cr_assert(tc_paused(pause, "step:3", 120000), "the run did not reach step 3");
    cr_assert(tc_file_has(tu_path(d, "s.out"), "saved "), "no save of step 2");
    return pid;
}

/* The first run's end: exit 1 naming the folder, the model rescued into
 * --save, and nothing at d/ck unless `replaced` (the test made it). */
static void expect_refused_save(const char *d, pid_t pid, int replaced)
{
    int st = tc_wait(pid, 60000);
    cr_assert(st != -1 && WIFEXITED(st), "the run did not end");
    cr_expect_eq(WEXITSTATUS(st), 1);
    char want[2048];
    snprintf(want, sizeof want, "--checkpoint-dir %s/ck is no longer the folder this run "
             "locked at start-up", d);
    cr_expect(tc_file_has(tu_path(d, "s.err"), want), "%s", want);
    cr_expect(tc_file_has(tu_path(d, "s.err"), "(not resumable)"), "no --save rescue named");
    struct stat sb;
    cr_expect_eq(stat(tu_path(d, "m.bin"), &sb), 0, "--save's model was not rescued");
    char sd[4096];
    snprintf(sd, sizeof sd, "%s/ck/step_00000004", d);
    cr_expect_neq(stat(sd, &sb), 0, "a save was made at the old path: %s", sd);
    if (!replaced)
        cr_expect_neq(stat(tu_path(d, "ck"), &sb), 0, "the moved folder was made again");
}

Test(moved_folder, moved_away_mid_run_stops_the_run, .timeout = 240)
{
    char *d = tu_tempdir(), args[8192], moved[4096];
    tc_make_shards(d, 1, 2000);
    pid_t pid = start_held_run(d);
    snprintf(moved, sizeof moved, "%s/ck_moved", d);
    cr_assert_eq(rename(tu_path(d, "ck"), moved), 0);
    /* the lock went with the folder: a second run there is refused */
    snprintf(args, sizeof args, "%s --steps 8 --checkpoint-dir %s --resume", tc_model_args(d),
             moved);
    tc_run_expect(d, args, 1, "is in use by another run");
    tc_release(tu_path(d, "pause"));
    expect_refused_save(d, pid, 0);
    struct stat sb;
    char sd[4200];
    snprintf(sd, sizeof sd, "%s/step_00000004", moved);
    cr_expect_neq(stat(sd, &sb), 0, "the run went on saving into the moved folder");
    free(d);
}

Test(moved_folder, replaced_mid_run_stops_the_run, .timeout = 240)
{
    char *d = tu_tempdir();
    tc_make_shards(d, 1, 2000);
    pid_t pid = start_held_run(d);
    cr_assert_eq(rename(tu_path(d, "ck"), tu_path(d, "ck_old")), 0);
    cr_assert_eq(mkdir(tu_path(d, "ck"), 0755), 0);
    tc_release(tu_path(d, "pause"));
    expect_refused_save(d, pid, 1);
    free(d);
}
