/* tests/e2e/resume/test_checkpoint_folders.c — end-to-end: a checkpoint folder belongs
 * to one run, and nothing in it is lost.
 *
 *  - another run's saves: a new run in the folder is refused, naming that
 *    run, and nothing of it changes; --overwrite-checkpoints moves its saves
 *    into replaced_<time>/ (bytes unchanged) and starts afresh; --resume
 *    then continues the new run, not the old one;
 *  - two runs at once: the second is refused at start, naming the first's
 *    pid; the first goes on, and every save it leaves loads;
 *  - a non-finite streak: --keep never deletes the newest save made before
 *    it, through two resume -> abort cycles; the abort names it and the
 *    command to return to it, and that command runs, moving the later saves
 *    into abandoned/;
 *  - a corrupt newest save: plain --resume says so and continues from the
 *    previous one (the corrupt one moved into abandoned/);
 *    --resume=DIR/step_N of the corrupt one is refused;
 *  - saves from before run ids (version 1 manifests) resume as the run's own
 *    and keep a new run out. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckpt/checkpoint.h"
#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

/* Run and require exit status `want`, showing stderr when it differs. */
static void run_expect(const char *env, const char *args, const char *prefix, int want)
{
    int rc = tc_run(env, args, prefix);
    char e[900];
    snprintf(e, sizeof e, "%s.err", prefix);
    char *msg = tu_read_file(e, NULL);
    cr_assert_eq(rc, want, "train_gpt %s\nexited %d (want %d): %s", args, rc, want,
                 msg ? msg : "");
    free(msg);
}

/* Every complete save in ck loads: manifest, model.bin's crc, state files. */
static void expect_all_saves_load(const char *ck)
{
    CkptEntry *e;
    int n;
    char err[1024];
    cr_assert_eq(ckpt_list(ck, &e, &n, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < n; i++) {
        if (!e[i].complete) continue;
        char sd[1024];
        ckpt_step_dir(sd, sizeof sd, ck, e[i].step);
        CkptManifest man;
        cr_assert_eq(ckpt_read_manifest(sd, &man, err, sizeof err), 0, "%s", err);
        cr_expect_eq(ckpt_verify(sd, &man, err, sizeof err), 0, "%s", err);
        ckpt_manifest_free(&man);
    }
    free(e);
}

Test(folders, another_runs_saves_are_refused_or_moved_aside, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 400);
    const char *m = tc_model_args(d);
    /* run A: saves 2, 4, 6 */
    snprintf(args, sizeof args, "%s --steps 6 --save-every 2 --checkpoint-dir %s/ck", m, d);
    run_expect(NULL, args, tu_path(d, "a"), 0);
    size_t len_a;
    char *model_a = tu_read_file(tu_path(d, "ck/step_00000004/model.bin"), &len_a);
    cr_assert_not_null(model_a);
    /* run B, a new run in the same folder: refused; A's saves untouched */
    snprintf(args, sizeof args, "%s --steps 4 --save-every 1 --seed 7 --checkpoint-dir %s/ck",
             m, d);
    run_expect(NULL, args, tu_path(d, "b"), 1);
    cr_expect(tc_file_has(tu_path(d, "b.err"), "holds 3 saves of another run"),
              "the refusal does not say whose saves are there");
    cr_expect(tc_file_has(tu_path(d, "b.err"), "--overwrite-checkpoints"));
    size_t len_now;
    char *model_now = tu_read_file(tu_path(d, "ck/step_00000004/model.bin"), &len_now);
    cr_expect(model_now && len_now == len_a && memcmp(model_now, model_a, len_a) == 0,
              "run A's step 4 was changed by a refused run");
    free(model_now);
    cr_expect_eq(access(tu_path(d, "ck/step_00000002/COMPLETE"), F_OK), 0, "A's step 2 was pruned");
    /* --overwrite-checkpoints: A's saves move aside, byte for byte */
    snprintf(args, sizeof args, "%s --steps 4 --save-every 1 --seed 7 --checkpoint-dir %s/ck "
             "--overwrite-checkpoints", m, d);
    run_expect(NULL, args, tu_path(d, "b2"), 0);
    cr_expect(tc_file_has(tu_path(d, "b2.out"), "--overwrite-checkpoints: the saves of another run"));
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cp %s/ck/replaced_*/step_00000004/model.bin %s/a4.bin", d, d);
    cr_expect_eq(tu_run(cmd), 0, "A's step 4 is not in replaced_*/");
    size_t len_moved;
    char *moved = tu_read_file(tu_path(d, "a4.bin"), &len_moved);
    cr_expect(moved && len_moved == len_a && memcmp(moved, model_a, len_a) == 0,
              "A's step 4 is not in replaced_*/ unchanged");
    free(moved);
    snprintf(cmd, sizeof cmd, "ls %s/ck/replaced_*/step_00000006/COMPLETE >/dev/null", d);
    cr_expect_eq(tu_run(cmd), 0, "A's step 6 is not in replaced_*/");
    /* B's own --keep 3 left B's 2, 3, 4 */
    int step;
    char sd[1024], err[512];
    cr_assert_eq(ckpt_find_latest(tu_path(d, "ck"), sd, sizeof sd, &step, err, sizeof err), 1);
    cr_expect_eq(step, 4);
    cr_expect_neq(access(tu_path(d, "ck/step_00000001"), F_OK), 0, "B's --keep 3 did not prune");
    char note[1200];
    snprintf(note, sizeof note, "note: deleted %s/ck/step_00000001 (--keep 3: the newest 3 saves "
             "of this run are kept)\n", d);
    cr_expect(tc_file_has(tu_path(d, "b2.out"), note), "no note for the pruned save: %s", note);
    /* --resume continues B (seed 7), not A: the same as B run straight to 6 */
    snprintf(args, sizeof args, "%s --steps 6 --seed 7 --checkpoint-dir %s/ck --resume --save "
             "%s/resumed.bin", m, d, d);
    run_expect(NULL, args, tu_path(d, "b3"), 0);
    cr_expect(tc_file_has(tu_path(d, "b3.out"), "step_00000004: step 4,"));
    snprintf(args, sizeof args, "%s --steps 6 --seed 7 --save %s/straight.bin", m, d);
    run_expect(NULL, args, tu_path(d, "ref"), 0);
    cr_expect(tc_files_equal(tu_path(d, "resumed.bin"), tu_path(d, "straight.bin")),
              "--resume continued another run than the one in the folder");
    free(model_a);
    tu_remove_tree(d);
}

Test(folders, a_second_run_on_the_same_folder_is_refused, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], want[128];
    tc_make_shards(d, 1, 400);
    const char *m = tc_model_args(d);
    snprintf(args, sizeof args, "%s --steps 1000000 --save-every 1 --keep 2 --checkpoint-dir "
             "%s/ck --log %s/first.jsonl", m, d, d);
    /* the first run is held at step 3 (two saves made) while the others try,
     * then at step 5, having trained on */
    char pause[4200]; /* tu_path's buffers are reused */
    snprintf(pause, sizeof pause, "%s", tu_path(d, "pause"));
    pid_t first = tc_spawn(tc_pause_env(pause, "step:3,step:5"), args, tu_path(d, "first"));
    cr_assert(tc_paused(pause, "step:3", 30000), "the first run did not reach step 3");
    /* the same command again, and one that would resume the first's saves */
    snprintf(args, sizeof args, "%s --steps 1000000 --save-every 1 --keep 2 --checkpoint-dir "
             "%s/ck", m, d);
    run_expect(NULL, args, tu_path(d, "second"), 1);
    snprintf(args, sizeof args, "%s --steps 1000000 --save-every 1 --checkpoint-dir %s/ck "
             "--resume", m, d);
    run_expect(NULL, args, tu_path(d, "third"), 1);
    snprintf(want, sizeof want, "is in use by another run (pid %ld on host", (long)first);
    cr_expect(tc_file_has(tu_path(d, "second.err"), want), "the refusal does not name pid %ld",
              (long)first);
    cr_expect(tc_file_has(tu_path(d, "third.err"), want));
    int n = tc_log_losses(tu_path(d, "first.jsonl"), NULL, NULL, NULL, TC_MAX_STEPS);
    tc_release(pause);
    cr_assert(tc_paused(pause, "step:5", 30000), "the first run stopped training");
    cr_expect_gt(tc_log_losses(tu_path(d, "first.jsonl"), NULL, NULL, NULL, TC_MAX_STEPS), n,
                 "the first run stopped training");
    kill(first, SIGTERM);
    int st = tc_wait(first, 30000);
    cr_expect(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 75, "the first run did not stop "
              "cleanly");
    expect_all_saves_load(tu_path(d, "ck"));
    /* the lock goes with the process: the folder is free again */
    snprintf(args, sizeof args, "%s --steps 2 --checkpoint-dir %s/ck --resume", m, d);
    run_expect(NULL, args, tu_path(d, "after"), 1); /* beyond --steps 2: refused, but not locked */
    cr_expect(!tc_file_has(tu_path(d, "after.err"), "in use by another run"));
    tu_remove_tree(d);
}

/* The "--resume=..." command an abort printed, from its stderr. */
static char *rollback_command(const char *err_path)
{
    char *s = tu_read_file(err_path, NULL);
    cr_assert_not_null(s);
    char *line = strstr(s, "run:\n  ");
    cr_assert_not_null(line, "no rollback command in: %s", s);
    line += strlen("run:\n  ");
    char *cmd = strndup(line, strcspn(line, "\n"));
    free(s);
    return cmd;
}

Test(folders, a_nonfinite_streak_keeps_the_rollback_point, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 400);
    const char *m = tc_model_args(d);
    /* saves every step, --keep 2; NaN from step 5: steps 5-7 skipped, abort */
    snprintf(args, sizeof args, "%s --steps 20 --save-every 1 --keep 2 --max-bad-steps 3 "
             "--checkpoint-dir %s/ck", m, d);
    run_expect("TRAIN_GPT_TEST_NAN_STEP=5-100", args, tu_path(d, "a"), 4);
    cr_expect_eq(access(tu_path(d, "ck/step_00000004/COMPLETE"), F_OK), 0,
                 "--keep deleted the last save before the streak");
    cr_expect_eq(access(tu_path(d, "ck/step_00000007/COMPLETE"), F_OK), 0);
    cr_expect(tc_file_has(tu_path(d, "a.err"), "the newest save before the non-finite steps (the "
                          "first at step 5) is"));
    cr_expect(tc_file_has(tu_path(d, "a.err"), "step_00000004"));
    /* resume -> abort again: the rollback point stays */
    snprintf(args, sizeof args, "%s --steps 20 --save-every 1 --keep 2 --max-bad-steps 3 "
             "--checkpoint-dir %s/ck --resume", m, d);
    run_expect("TRAIN_GPT_TEST_NAN_STEP=5-100", args, tu_path(d, "b"), 4);
    run_expect("TRAIN_GPT_TEST_NAN_STEP=5-100", args, tu_path(d, "c"), 4);
    cr_expect_eq(access(tu_path(d, "ck/step_00000004/COMPLETE"), F_OK), 0,
                 "resume -> abort cycles pruned the rollback point");
    cr_expect_neq(access(tu_path(d, "ck/step_00000005"), F_OK), 0, "--keep 2 stopped pruning");
    /* the printed command returns to step 4 and trains on */
    char *cmd = rollback_command(tu_path(d, "c.err"));
    cr_expect(strstr(cmd, "--resume=") && strstr(cmd, "/ck/step_00000004"), "%s", cmd);
    char full[8192];
    snprintf(full, sizeof full, "%s >%s/back.out 2>%s/back.err", cmd, d, d);
    cr_assert_eq(tu_run(full), 0, "the printed command failed: %s", cmd);
    cr_expect(tc_file_has(tu_path(d, "back.out"), "resumed from"));
    cr_expect(tc_file_has(tu_path(d, "back.out"), "step_00000004: step 4,"));
    cr_expect(tc_file_has(tu_path(d, "back.out"), "moved the saves newer than step 4"));
    cr_expect_eq(access(tu_path(d, "ck/abandoned"), F_OK), 0, "no abandoned/ folder");
    int step;
    char sd[1024], err[512];
    cr_assert_eq(ckpt_find_latest(tu_path(d, "ck"), sd, sizeof sd, &step, err, sizeof err), 1);
    cr_expect_eq(step, 20);
    free(cmd);
    tu_remove_tree(d);
}

Test(folders, a_corrupt_newest_save_falls_back, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 400);
    const char *m = tc_model_args(d);
    snprintf(args, sizeof args, "%s --steps 4 --save-every 2 --checkpoint-dir %s/ck", m, d);
    run_expect(NULL, args, tu_path(d, "a"), 0);
    /* one byte of step 4's weights changed; its size stays right */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "printf 'Z' | dd of=%s/ck/step_00000004/model.bin bs=1 seek=5000 "
             "conv=notrunc 2>/dev/null", d);
    cr_assert_eq(tu_run(cmd), 0);
    /* strict: that very save is refused */
    snprintf(args, sizeof args, "%s --steps 6 --resume=%s/ck/step_00000004", m, d);
    run_expect(NULL, args, tu_path(d, "strict"), 1);
    cr_expect(tc_file_has(tu_path(d, "strict.err"), "model.bin: crc32 differs from the manifest"));
    /* plain --resume: a note, then step 2 */
    snprintf(args, sizeof args, "%s --steps 6 --checkpoint-dir %s/ck --resume", m, d);
    run_expect(NULL, args, tu_path(d, "plain"), 0);
    cr_expect(tc_file_has(tu_path(d, "plain.err"), "note: skipping"));
    cr_expect(tc_file_has(tu_path(d, "plain.err"), "step_00000004/model.bin: crc32 differs"));
    cr_expect(tc_file_has(tu_path(d, "plain.out"), "step_00000002: step 2,"));
    cr_expect_eq(access(tu_path(d, "ck/abandoned/step_00000004/model.bin"), F_OK), 0,
                 "the corrupt save was not kept in abandoned/");
    /* a folder where every save is corrupt: an error, not a silent new run */
    snprintf(cmd, sizeof cmd, "printf 'Z' | dd of=%s/ck/step_00000006/model.bin bs=1 seek=5000 "
             "conv=notrunc 2>/dev/null && rm -rf %s/ck/step_00000002 %s/ck/step_00000004", d, d,
             d);
    cr_assert_eq(tu_run(cmd), 0);
    run_expect(NULL, args, tu_path(d, "none"), 1);
    cr_expect(tc_file_has(tu_path(d, "none.err"), "no intact save in"));
    tu_remove_tree(d);
}

/* Saves from before run ids (version 1 manifests) still resume, count as
 * the resumed run's own (--keep prunes them), and a new run is refused in
 * a folder that holds them. */
Test(folders, version_1_saves_resume_and_are_not_overwritten, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], cmd[4096];
    tc_make_shards(d, 1, 400);
    const char *m = tc_model_args(d);
    snprintf(args, sizeof args, "%s --steps 2 --save-every 1 --checkpoint-dir %s/ck", m, d);
    run_expect(NULL, args, tu_path(d, "a"), 0);
    /* rewrite both manifests as version 1: no run id, no config hash */
    snprintf(cmd, sizeof cmd, "for f in %s/ck/step_*/COMPLETE; do sed -i -e "
             "'s/\"version\":2/\"version\":1/' -e 's/,\"run_id\":\"[0-9a-f]*\"//' -e "
             "'s/,\"config_hash\":\"[0-9a-f]*\"//' $f; done", d);
    cr_assert_eq(tu_run(cmd), 0);
    cr_assert(!tc_file_has(tu_path(d, "ck/step_00000002/COMPLETE"), "run_id"));
    snprintf(args, sizeof args, "%s --steps 3 --checkpoint-dir %s/ck", m, d);
    run_expect(NULL, args, tu_path(d, "new"), 1);
    cr_expect(tc_file_has(tu_path(d, "new.err"), "made before saves carried a run id"));
    snprintf(args, sizeof args, "%s --steps 4 --save-every 1 --keep 2 --checkpoint-dir %s/ck "
             "--resume", m, d);
    run_expect(NULL, args, tu_path(d, "b"), 0);
    cr_expect(tc_file_has(tu_path(d, "b.out"), "step_00000002: step 2,"));
    cr_expect(tc_file_has(tu_path(d, "ck/step_00000004/COMPLETE"), "\"run_id\":"));
    cr_expect_neq(access(tu_path(d, "ck/step_00000002"), F_OK), 0, "--keep 2 kept the old save");
    tu_remove_tree(d);
}

/* A run refused at start-up moves nothing: the saves newer than the one a
 * rollback names stay where they are until the resume is accepted (before,
 * the folder's claim had moved them into abandoned/ and then the run
 * stopped, on a changed flag, a save beyond --steps or a missing file, so
 * the next --resume took the older save). The same for --resume-llmc into
 * its own export folder. */
Test(folders, a_refused_resume_moves_nothing, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], want[1024];
    tc_make_shards(d, 1, 400);
    snprintf(args, sizeof args, "%s --steps 3 --save-every 1 --keep 0 --checkpoint-dir %s/ck "
             "--save-checkpoint-llmc %s/lc", tc_model_args(d), d, d);
    tc_run_expect(d, args, 0, "saved");
    const char *why[3] = {"--steps 1", "--steps 6 --lr 1e-2", "--steps 6 --eval-file none.bin"};
    for (int i = 0; i < 3; i++) {
        snprintf(args, sizeof args, "%s %s --resume=%s/ck/step_00000002", tc_model_args(d),
                 why[i], d);
        snprintf(want, sizeof want, i == 0 ? "cannot resume from %s/ck/step_00000002: it is at "
                 "step 2, beyond --steps 1" : i == 1 ? "--lr: the save has" : "none.bin", d);
        tc_run_expect(d, args, 1, want);
        cr_expect(tu_exists(tu_path(d, "ck/step_00000003")), "%s: step 3 was moved", why[i]);
        cr_expect(!tu_exists(tu_path(d, "ck/abandoned")), "%s: saves moved aside", why[i]);
        if (i == 1) continue; /* llm.c's state does not record --lr (docs/interop.md) */
        snprintf(args, sizeof args, "%s %s --resume-llmc %s/lc/state_00000002_00000.bin "
                 "--save-checkpoint-llmc %s/lc", tc_model_args(d), why[i], d, d);
        tc_run_expect(d, args, 1, i == 0 ? "state_00000002_00000.bin: it is at step 2, beyond "
                      "--steps 1" : "none.bin");
        cr_expect(tu_exists(tu_path(d, "lc/DONE_00000003")), "%s: llm.c's step 3 moved", why[i]);
        cr_expect(!tu_exists(tu_path(d, "lc/abandoned")), "%s: llm.c files moved", why[i]);
    }
    /* an accepted rollback still moves them, after the resume */
    snprintf(args, sizeof args, "%s --steps 4 --resume=%s/ck/step_00000002", tc_model_args(d), d);
    tc_run_expect(d, args, 0, "(step 3) into");
    cr_expect(tu_exists(tu_path(d, "ck/abandoned/step_00000003")));
    tu_remove_tree(d);
}

/* sha256 of every file under d/sub but the lock file (its pid line is each
 * run's), sorted: "HASH  ./step_00000002/model.bin" lines. */
static char *tree_hashes(const char *d, const char *sub)
{
    char cmd[2048], out[700];
    snprintf(out, sizeof out, "%s/%s.tree", d, sub);
    snprintf(cmd, sizeof cmd, "cd '%s/%s' && find . -type f ! -name train_gpt.lock | LC_ALL=C "
             "sort | xargs -r sha256sum > '%s'", d, sub, out);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    return tu_read_file(out, NULL);
}

/* Both folders as run A left them: the same files, byte for byte. */
static void expect_unchanged(const char *d, const char *ck0, const char *lc0, const char *what)
{
    char *ck = tree_hashes(d, "ck"), *lc = tree_hashes(d, "lc");
    cr_expect(ck && strcmp(ck, ck0) == 0, "%s: --checkpoint-dir changed:\n%s", what, ck ? ck : "");
    cr_expect(lc && strcmp(lc, lc0) == 0, "%s: the llm.c folder changed:\n%s", what, lc ? lc : "");
    free(ck);
    free(lc);
}

/* --overwrite-checkpoints' moves are deferred until the run is accepted:
 * a new run refused at start-up for another reason (a missing --eval-file,
 * shape flags contradicting --init-from, a missing --val-data, a bad
 * --op-costs FILE) or stopped by a signal during start-up moves nothing,
 * in --checkpoint-dir or in --save-checkpoint-llmc's folder; an accepted
 * one moves the other run's files, byte for byte, into replaced_<time>/. */
Test(folders, overwrite_checkpoints_moves_only_an_accepted_run, .timeout = 180)
{
    char *d = tu_tempdir(), args[4096], flags[1024], pre[700], e[710];
    tc_make_shards(d, 1, 40000);
    const char *m = tc_model_args(d);
    snprintf(args, sizeof args, "%s --steps 4 --save-every 2 --checkpoint-dir %s/ck "
             "--save-checkpoint-llmc %s/lc", m, d, d);
    run_expect(NULL, args, tu_path(d, "a"), 0);
    char *ck0 = tree_hashes(d, "ck"), *lc0 = tree_hashes(d, "lc");
    cr_assert(ck0 && strstr(ck0, "./step_00000004/model.bin") && lc0 &&
              strstr(lc0, "./DONE_00000004"), "run A left no saves: %s", ck0 ? ck0 : "");
    /* {flags (%s: d), exit status, what the message says} */
    const struct {
        const char *flags;
        int rc;
        const char *says;
    } why[] = {
        {"--eval-file %s/none.bin", 1, "none.bin: cannot open"},
        {"--init-from %s/ck/step_00000004/model.bin --layers 3", 2, "--layers 3: contradicts"},
        {"--val-data '%s/nowhere_*.bin'", 1, "--val-data: "},
        {"--op-costs %s/costs_missing.json", 1, "--op-costs "},
    };
    for (size_t i = 0; i < sizeof why / sizeof why[0]; i++) {
        snprintf(flags, sizeof flags, why[i].flags, d);
        snprintf(args, sizeof args, "%s --steps 4 --seed 7 --checkpoint-dir %s/ck "
                 "--save-checkpoint-llmc %s/lc --overwrite-checkpoints %s", m, d, d, flags);
        snprintf(pre, sizeof pre, "%s/r%zu", d, i);
        run_expect(NULL, args, pre, why[i].rc);
        snprintf(e, sizeof e, "%s.err", pre);
        cr_expect(tc_file_has(e, why[i].says), "%s: the refusal does not say `%s`", flags,
                  why[i].says);
        expect_unchanged(d, ck0, lc0, flags);
    }
    /* a stop during start-up (a 46 s op-cost measurement: test_startup_stops.c) */
    snprintf(args, sizeof args, "--train-data '%s/train_*.bin' --layers 2 --channels 768 "
             "--heads 12 --seq-len 1024 --vocab 256 --batch 8 --val-every 0 --device cpu "
             "--threads 1 --op-costs measure --steps 4 --checkpoint-dir %s/ck "
             "--save-checkpoint-llmc %s/lc --overwrite-checkpoints", d, d, d);
    char env[9000], pause[800];
    snprintf(pause, sizeof pause, "%s/pause", d);
    snprintf(env, sizeof env, "TRAIN_GPT_CACHE_DIR=%s/cache %s", d,
             tc_pause_env(pause, "startup:op costs"));
    pid_t pid = tc_spawn(env, args, tu_path(d, "s"));
    cr_assert(tc_paused(pause, "startup:op costs", 30000), "the measurement did not start");
    kill(pid, SIGTERM);
    int st = tc_wait(pid, 30000);
    cr_expect(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 77, "a stop during start-up "
              "exited %d", st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    expect_unchanged(d, ck0, lc0, "a stop during start-up");
    /* accepted: A's files move into replaced_<time>/ unchanged, in both folders */
    snprintf(args, sizeof args, "%s --steps 2 --seed 7 --checkpoint-dir %s/ck "
             "--save-checkpoint-llmc %s/lc --overwrite-checkpoints", m, d, d);
    run_expect(NULL, args, tu_path(d, "ok"), 0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s' && mv ck/replaced_* ck_moved && mv lc/replaced_* lc_moved",
             d);
    cr_assert_eq(tu_run(cmd), 0, "no replaced_* folder: %s", cmd);
    char *ckm = tree_hashes(d, "ck_moved"), *lcm = tree_hashes(d, "lc_moved");
    cr_expect(ckm && strcmp(ckm, ck0) == 0, "A's saves were not moved whole:\n%s\nwant\n%s",
              ckm ? ckm : "", ck0);
    cr_expect(lcm && strcmp(lcm, lc0) == 0, "A's llm.c files were not moved whole:\n%s\nwant\n%s",
              lcm ? lcm : "", lc0);
    int step;
    char sd[1024], err[512];
    cr_assert_eq(ckpt_find_latest(tu_path(d, "ck"), sd, sizeof sd, &step, err, sizeof err), 1);
    cr_expect_eq(step, 2, "the accepted run's own save");
    free(ckm);
    free(lcm);
    free(ck0);
    free(lc0);
    tu_remove_tree(d);
}

/* --resume=DIR/step_2 for the save DIR/step_00000002: the error names the
 * save that exists; a step with no save gets the plain error. */
Test(folders, a_resume_path_without_the_padding_names_the_save, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096], want[1024];
    tc_make_shards(d, 1, 400);
    snprintf(args, sizeof args, "%s --steps 2 --checkpoint-dir %s/ck", tc_model_args(d), d);
    tc_run_expect(d, args, 0, "saved");
    snprintf(args, sizeof args, "%s --steps 4 --resume=%s/ck/step_2", tc_model_args(d), d);
    snprintf(want, sizeof want, "--resume=%s/ck/step_2: No such file or directory (saves are "
             "named with 8 digits: --resume=%s/ck/step_00000002)", d, d);
    tc_run_expect(d, args, 1, want);
    snprintf(args, sizeof args, "%s --steps 4 --resume=%s/ck/step_9", tc_model_args(d), d);
    tc_run_expect(d, args, 1, "step_9: No such file or directory\n");
    tu_remove_tree(d);
}
