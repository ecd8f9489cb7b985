/* tests/e2e/outputs/test_outputs.c — end-to-end: a new run's --save, --log and
 * --dump-grads never replace a file that holds something (cli/outputs.h).
 *
 *  - a new run refuses each one (exit 1, naming the flag and the file)
 *    before any step, and leaves the file's bytes as they were;
 *  - --overwrite-outputs moves the file to FILE.replaced_<time> (same bytes)
 *    and the run writes a new one;
 *  - a resumed run keeps them: its log is continued, its --save replaced;
 *  - an empty file is taken, a folder is refused even with
 *    --overwrite-outputs, and a refusal moves nothing;
 *  - --plan writes none of them, so it checks none;
 *  - under two ranks, rank 0's refusal ends both with exit 1;
 *  - a final --save that fails is rescued to the working folder or $TMPDIR;
 *  - a file written at --save while the run trained (a second run given the
 *    same --save, checked when the path was still free) is kept as
 *    FILE.replaced_<time>, not replaced silently;
 *  - a second run given the --log a run is writing is refused (its lock),
 *    even while that log is still empty. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

static const char KEEP[] = "the user's file: keep me\n";

/* The one entry of dir whose name starts with `prefix`, as a path (static
 * storage), or NULL when there are none or several. */
static const char *only_entry(const char *dir, const char *prefix)
{
    static char path[1200];
    int n = 0;
    DIR *dp = opendir(dir);
    cr_assert(dp != NULL);
    struct dirent *e;
    while ((e = readdir(dp)))
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            n++;
        }
    closedir(dp);
    return n == 1 ? path : NULL;
}

static void expect_kept(const char *path)
{
    char *got = tu_read_file(path, NULL);
    cr_expect(got && strcmp(got, KEEP) == 0, "%s changed: '%s'", path, got ? got : "(gone)");
    free(got);
}

Test(outputs, a_new_run_refuses_each_existing_output, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096], want[1200];
    tc_make_shards(d, 1, 400);
    const char *flags[] = {"--save", "--log", "--dump-grads"};
    for (int i = 0; i < 3; i++) {
        const char *p = tu_path(d, "mine.bin");
        tu_write_text(p, KEEP);
        snprintf(args, sizeof args, "%s --steps 2 %s %s", tc_model_args(d), flags[i], p);
        snprintf(want, sizeof want, "%s %s: the file exists (%zu bytes", flags[i], p,
                 strlen(KEEP));
        tc_run_expect(d, args, 1, want);
        cr_expect(tc_file_has(tu_path(d, "run.err"), "--overwrite-outputs"));
        cr_expect(!tc_file_has(tu_path(d, "run.out"), "initializing"), "%s: started", flags[i]);
        expect_kept(p);
    }
    tu_remove_tree(d);
}

Test(outputs, overwrite_outputs_moves_the_old_file_aside, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 400);
    tu_write_text(tu_path(d, "m.bin"), KEEP);
    tu_write_text(tu_path(d, "l.jsonl"), KEEP);
    snprintf(args, sizeof args, "%s --steps 2 --save %s/m.bin --log %s/l.jsonl "
             "--overwrite-outputs", tc_model_args(d), d, d);
    tc_run_expect(d, args, 0, "note: --overwrite-outputs: --save ");
    const char *old = only_entry(d, "m.bin.replaced_");
    cr_assert(old != NULL, "no single m.bin.replaced_<time>");
    expect_kept(old);
    cr_assert((old = only_entry(d, "l.jsonl.replaced_")) != NULL);
    expect_kept(old);
    /* the new files are this run's: a model of the tiny shape, two steps logged */
    cr_expect_eq(tc_log_losses(tu_path(d, "l.jsonl"), NULL, NULL, NULL, 8), 2);
    char *m = tu_read_file(tu_path(d, "m.bin"), NULL);
    cr_expect(m && strcmp(m, KEEP) != 0);
    free(m);
    tu_remove_tree(d);
}

Test(outputs, a_resumed_run_continues_its_log_and_replaces_its_save, .timeout = 90)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 400);
    const char *m = tc_model_args(d);
    snprintf(args, sizeof args, "%s --steps 2 --checkpoint-dir %s/ck --resume --save %s/m.bin "
             "--log %s/l.jsonl", m, d, d, d);
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "a")), 0);
    snprintf(args, sizeof args, "%s --steps 4 --checkpoint-dir %s/ck --resume --save %s/m.bin "
             "--log %s/l.jsonl", m, d, d, d);
    char note[1200];
    snprintf(note, sizeof note, "note: --save %s/m.bin exists; this resumed run replaces it", d);
    tc_run_expect(d, args, 0, note);
    cr_expect_eq(tc_log_losses(tu_path(d, "l.jsonl"), NULL, NULL, NULL, 8), 4);
    cr_expect(only_entry(d, "m.bin.replaced_") == NULL);
    /* the save is the 4-step model: the same bits as a straight run's */
    snprintf(args, sizeof args, "%s --steps 4 --save %s/straight.bin", m, d);
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "s")), 0);
    cr_expect(tc_files_equal(tu_path(d, "m.bin"), tu_path(d, "straight.bin")));
    tu_remove_tree(d);
}

Test(outputs, empty_files_are_taken_folders_refused_and_a_refusal_moves_nothing, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096], want[1200];
    tc_make_shards(d, 1, 400);
    tu_write_text(tu_path(d, "empty.jsonl"), "");
    snprintf(args, sizeof args, "%s --steps 1 --log %s/empty.jsonl", tc_model_args(d), d);
    tc_run_expect(d, args, 0, "| loss ");
    /* a folder at --save, with a log that would be moved: refused, the log kept */
    tu_write_text(tu_path(d, "l.jsonl"), KEEP);
    snprintf(args, sizeof args, "%s --steps 1 --log %s/l.jsonl --save %s --overwrite-outputs",
             tc_model_args(d), d, d);
    snprintf(want, sizeof want, "--save %s: exists and is not a regular file (a folder)", d);
    tc_run_expect(d, args, 1, want);
    expect_kept(tu_path(d, "l.jsonl"));
    cr_expect(only_entry(d, "l.jsonl.replaced_") == NULL, "moved by a refused run");
    tu_remove_tree(d);
}

Test(outputs, plan_checks_nothing_and_the_flag_needs_an_output, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 400);
    tu_write_text(tu_path(d, "m.bin"), KEEP);
    snprintf(args, sizeof args, "%s --plan --save %s/m.bin", tc_model_args(d), d);
    tc_run_expect(d, args, 0, "recompute");
    expect_kept(tu_path(d, "m.bin"));
    snprintf(args, sizeof args, "%s --steps 1 --overwrite-outputs", tc_model_args(d));
    tc_run_expect(d, args, 2, "--overwrite-outputs: needs --save, --log or --dump-grads");
    tu_remove_tree(d);
}

Test(outputs, two_ranks_end_together_on_rank_0s_refusal, .timeout = 120)
{
    char *d = tu_tempdir(), cmd[8192];
    tc_make_shards(d, 2, 200);
    tu_write_text(tu_path(d, "m.bin"), KEEP);
    snprintf(cmd, sizeof cmd, "timeout 100 " TC_MPIRUN " -np 2 %s %s --steps 2 --save %s/m.bin "
             "> %s/a.txt 2>&1", tc_bin(), tc_model_args(d), d, d);
    int rc = tu_run(cmd);
    char *out = tu_read_file(tu_path(d, "a.txt"), NULL);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, out ? out : "");
    cr_expect(out && strstr(out, "the file exists"), "%s", out ? out : "");
    free(out);
    expect_kept(tu_path(d, "m.bin"));
    tu_remove_tree(d);
}

/* --overwrite-outputs moves the old files once the run has started: a run
 * refused after the outputs were checked (here by a missing --eval-file)
 * leaves them in place.
 * Before, they had been moved to FILE.replaced_<time> already. */
Test(outputs, a_run_refused_later_moves_no_output, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 400);
    tu_write_text(tu_path(d, "m.bin"), KEEP);
    tu_write_text(tu_path(d, "l.jsonl"), KEEP);
    snprintf(args, sizeof args, "%s --steps 2 --save %s/m.bin --log %s/l.jsonl "
             "--overwrite-outputs --eval-file %s/none.bin", tc_model_args(d), d, d, d);
    tc_run_expect(d, args, 1, "none.bin");
    expect_kept(tu_path(d, "m.bin"));
    expect_kept(tu_path(d, "l.jsonl"));
    cr_expect(only_entry(d, "m.bin.replaced_") == NULL, "moved by a refused run");
    cr_expect(only_entry(d, "l.jsonl.replaced_") == NULL, "moved by a refused run");
    tu_remove_tree(d);
}

/* The final --save fails (its folder removed during the run): the weights
 * go to ./NAME.rescued_<time>, or, when the working folder is gone too, to
 * $TMPDIR; the run exits 1 naming both paths, and the rescued file is the
 * model an identical run saves normally, byte for byte. (The code before
 * exited 1 and the trained weights were lost.) */
static const char RESCUE_SH[] =
    "D=$1 BIN=$2 ARGS=$3 RUNDIR=$4\n"
    "mkdir -p \"$D/sub\" \"$RUNDIR\" && cd \"$RUNDIR\" || exit 9\n"
    "rm -f \"$D/pause\"\n"
    "eval \"TMPDIR=$D/tmp TRAIN_GPT_TEST_PAUSE_AT=step:2 TRAIN_GPT_TEST_PAUSE_FILE=$D/pause "
    "\\\"$BIN\\\" $ARGS --save $D/sub/m.bin\" > $D/run.out 2> $D/run.err &\n"
    "pid=$!\n"
    /* both folders go while the run is held at step 2, before its save (the
     * 60 s only guards against a run that never gets there) */
    "for i in $(seq 1 6000); do grep -qs 'paused at step:2' \"$D/pause\" && break; sleep 0.01; done\n"
    "rm -rf \"$D/sub\"\n"
    "[ \"$RUNDIR\" = \"$D/gone\" ] && rm -rf \"$D/gone\"\n"
    "rm -f \"$D/pause\"\n"
    "wait $pid; echo $? > $D/rc.txt\n";

Test(outputs, a_failed_final_save_is_rescued, .timeout = 180)
{
    char *d = tu_tempdir(), args[4096], cmd[8192], cwd[1024], bin[1400], ref[700];
    cr_assert_not_null(getcwd(cwd, sizeof cwd));
    const char *b = tc_bin();
    snprintf(bin, sizeof bin, "%s%s%s", b[0] == '/' ? "" : cwd, b[0] == '/' ? "" : "/", b);
    tc_make_shards(d, 1, 400);
    snprintf(args, sizeof args, "%s --steps 3", tc_model_args(d));
    snprintf(ref, sizeof ref, "%s/ref.bin", d);
    snprintf(cmd, sizeof cmd, "%s %s --save %s > /dev/null 2>&1", bin, args, ref);
    cr_assert_eq(tu_run(cmd), 0, "the reference run failed: %s", cmd);
    char script[700];
    snprintf(script, sizeof script, "%s/rescue.sh", d);
    tu_write_text(script, RESCUE_SH);
    cr_assert_eq(mkdir(tu_path(d, "tmp"), 0755), 0);
    static const char *const rundirs[] = {"here", "gone"};
    for (int k = 0; k < 2; k++) {
        char rundir[700], where[700];
        snprintf(rundir, sizeof rundir, "%s/%s", d, rundirs[k]);
        snprintf(cmd, sizeof cmd, "bash %s %s %s \"%s\" %s", script, d, bin, args, rundir);
        cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
        char *rc = tu_read_file(tu_path(d, "rc.txt"), NULL);
        cr_expect(rc && atoi(rc) == 1, "exit %s", rc ? rc : "?");
        free(rc);
        /* here: ./m.bin.rescued_* in the working folder; gone: $TMPDIR's */
        snprintf(where, sizeof where, "%s/%s", d, k == 0 ? "here" : "tmp");
        const char *got = only_entry(where, "m.bin.rescued_");
        cr_assert(got, "no m.bin.rescued_* in %s", where);
        char want[2000];
        snprintf(want, sizeof want, "--save %s/sub/m.bin: ", d);
        cr_expect(tc_file_has(tu_path(d, "run.err"), want), "%s", want);
        snprintf(want, sizeof want, "The model was written to %s instead: nothing is lost", got);
        cr_expect(tc_file_has(tu_path(d, "run.err"), want), "%s", want);
        cr_expect(tc_files_equal(got, ref), "the rescued model is not the reference's");
        unlink(got);
    }
    tu_remove_tree(d);
}

/* Two runs given the same output path: each found it free at its start; the
 * one writing last replaced the other's file, both exiting 0. Here the
 * other run's file is written at `flag`'s path (d/name) while this run of
 * `steps` steps is paused at the start of step `pause_step` (the test hook
 * TRAIN_GPT_TEST_PAUSE_AT=step:N: past its start-up's check of its outputs, and
 * before it writes any): it must survive under a second name, with a
 * warning naming the flag, and the path hold this run's own output, byte
 * for byte that of an undisturbed run. */
static void expect_raced_file_kept(const char *flag, const char *name, int steps, int pause_step)
{
    char *d = tu_tempdir(), args[4096], at[32], aside[64], warn[64], before[32];
    tc_make_shards(d, 1, 2000);
    snprintf(args, sizeof args, "%s --steps %d %s %s", tc_model_args(d), steps, flag,
             tu_path(d, name));
    char pause[4200]; /* tu_path's buffers are reused */
    snprintf(pause, sizeof pause, "%s", tu_path(d, "paused"));
    snprintf(at, sizeof at, "step:%d", pause_step);
    pid_t pid = tc_spawn(tc_pause_env(pause, at), args, tu_path(d, "a"));
    cr_assert(tc_paused(pause, at, 60000), "the run never reached step %d", pause_step);
    tu_write_text(tu_path(d, name), KEEP); /* the other run's, finished first */
    snprintf(before, sizeof before, "step %5d/", pause_step);
    cr_assert(!tc_file_has(tu_path(d, "a.out"), before), "'%s' came first", before);
    cr_assert_eq(unlink(pause), 0, "%s", pause);
    int st = tc_wait(pid, 60000);
    cr_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the run failed");
    snprintf(aside, sizeof aside, "%s.replaced_", name);
    const char *kept = only_entry(d, aside);
    cr_assert_not_null(kept, "the file written at %s during the run is gone", flag);
    char *k = tu_read_file(kept, NULL);
    cr_expect(k && strcmp(k, KEEP) == 0, "its bytes changed");
    free(k);
    snprintf(warn, sizeof warn, "warning: %s ", flag);
    cr_expect(tc_file_has(tu_path(d, "a.err"), warn), "no '%s'", warn);
    cr_expect(tc_file_has(tu_path(d, "a.err"), "a file was written there while this run "
                          "trained"));
    snprintf(args, sizeof args, "%s --steps %d %s %s", tc_model_args(d), steps, flag,
             tu_path(d, "ref.bin"));
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "r")), 0);
    cr_expect(tc_files_equal(tu_path(d, name), tu_path(d, "ref.bin")));
    free(d);
}

/* --save, written at the end: the file comes while step 2 waits to start.
 * Before, it was replaced silently (no .replaced_ file: failed). */
Test(outputs, a_file_written_at_save_during_the_run_is_kept, .timeout = 120)
{
    expect_raced_file_kept("--save", "m.bin", 4, 2);
}

/* --dump-grads, written at the end of step 1: the file comes while step 1
 * waits to start, after the start-up's check of the outputs (a file there
 * before that check is refused, not kept: the race this test once lost,
 * cued by the "initializing" line). Before the fix, it was replaced
 * silently (no .replaced_ file: failed). */
Test(outputs, a_file_written_at_dump_grads_during_the_run_is_kept, .timeout = 120)
{
    expect_raced_file_kept("--dump-grads", "g.bin", 2, 1);
}

/* A run's --log is created empty when its training starts; a second run
 * given the same --log found it empty, took it (truncating it) and wrote
 * over the first's lines at the same offsets, both exiting 0. Now the
 * first holds a lock on it: the second is refused at start-up, exit 1, and
 * the first's log is whole. Before: the second exited 0 (failed). */
Test(outputs, a_second_run_on_the_same_log_is_refused, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 2000);
    snprintf(args, sizeof args, "%s --steps 3 --log %s", tc_model_args(d), tu_path(d, "l.jsonl"));
    /* the first run held at step 1's start, its log open, while the second runs */
    char pause[4200]; /* tu_path's buffers are reused */
    snprintf(pause, sizeof pause, "%s", tu_path(d, "pause"));
    pid_t pid = tc_spawn(tc_pause_env(pause, "step:1"), args, tu_path(d, "a"));
    cr_assert(tc_paused(pause, "step:1", 60000), "the first run did not reach step 1");
    cr_assert(tu_exists(tu_path(d, "l.jsonl")), "the first run did not open its log");
    cr_expect_eq(tc_run(NULL, args, tu_path(d, "b")), 1, "the second run was let write the log");
    cr_expect(tc_file_has(tu_path(d, "b.err"), "another run is writing this log now"));
    tc_release(pause);
    int st = tc_wait(pid, 60000);
    cr_assert(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the first run failed");
    int steps[8];
    cr_expect_eq(tc_log_losses(tu_path(d, "l.jsonl"), steps, NULL, NULL, 8), 3);
    cr_expect(steps[0] == 1 && steps[1] == 2 && steps[2] == 3);
    free(d);
}
