/* tests/e2e/symlinks/test_symlinks.c — end-to-end: whatever symbolic link
 * is planted in a run's folders, ./train_gpt and ./tokenize write,
 * truncate, rename and delete nothing outside their own files
 * (base/safefile.h). Each test plants a link at a name a writer or deleter
 * uses, pointing at a file or folder outside, runs the program, and checks
 * the target byte for byte (a folder: every file in it), and that the link
 * is still a link where the program must not move it:
 *
 *  - --save and --dump-grads: a link at the temp name (removed, never
 *    written through); a link at the final name (refused at start);
 *  - --log given as a link with --overwrite-outputs (what /dev/stdout is):
 *    not moved aside, and --log /dev/stdout itself, in a private mount
 *    namespace; --save /dev/null: /dev/null stays the device;
 *  - --checkpoint-dir: a linked step_N is never written into, --keep never
 *    empties a linked (archived) save, debris cleanup never empties a
 *    linked incomplete one, --overwrite-checkpoints never moves a linked
 *    one, and the lock file is never opened through one;
 *  - --save-checkpoint-llmc: a link at an export's temp name, and a linked
 *    file of another run is not moved aside;
 *  - ./tokenize: a PREFIX.tokenize-<digits>.tmp link to a folder;
 *  - scripts/export_hf.py: a link at OUT or at its config.json;
 *  - a resumed run's LOG.abandoned;
 *  - closed fds: a closed stdout writes nothing into train_gpt.lock, and
 *    ./tokenize with stdin closed reads no folder ("Is a directory"). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

static const char KEEP[] = "outside the run's folders: keep me byte for byte\n";
static const char *const NAMES[] = {"COMPLETE", "model.bin", "state_r00000.bin", "notes.txt"};

/* d/outside/ holding the file `target` (KEEP), and d/archive/ holding the
 * files NAMES (KEEP each). */
static void outside(const char *d)
{
    char p[1200];
    snprintf(p, sizeof p, "mkdir -p %s/outside %s/archive", d, d);
    cr_assert_eq(tu_run(p), 0);
    tu_write_text(tu_path(d, "outside/target"), KEEP);
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/archive/%s", d, NAMES[i]);
        tu_write_text(p, KEEP);
    }
}

static void expect_file_kept(const char *path)
{
    size_t n = 0;
    char *got = tu_read_file(path, &n);
    cr_expect(got && n == strlen(KEEP) && memcmp(got, KEEP, n) == 0,
              "%s changed: %zu bytes '%.80s'", path, n, got ? got : "(gone)");
    free(got);
}

/* dir holds exactly the files `names` (n of them), each KEEP. */
static void expect_folder_kept(const char *dir, const char *const *names, int n)
{
    char cmd[1200], *ls = NULL;
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
    cr_assert_eq(tu_run_output(cmd, &ls, NULL), 0);
    cr_expect_eq(atoi(ls), n, "%s holds %d entries, not %d", dir, atoi(ls), n);
    free(ls);
    for (int i = 0; i < n; i++) expect_file_kept(tu_path(dir, names[i]));
}

static void plant(const char *target, const char *at)
{
    cr_assert_eq(symlink(target, at), 0, "%s: %s", at, strerror(errno));
}

static void expect_link(const char *path)
{
    struct stat st;
    cr_expect(lstat(path, &st) == 0 && S_ISLNK(st.st_mode), "%s is no longer a symbolic link",
              path);
}

static int run(const char *d, const char *args, const char *name)
{
    return tc_run(NULL, args, tu_path(d, name));
}

static int out_has(const char *d, const char *name, const char *text)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/%s.err", d, name);
    if (tc_file_has(p, text)) return 1;
    snprintf(p, sizeof p, "%s/%s.out", d, name);
    return tc_file_has(p, text);
}

Test(symlinks, save_and_dump_grads_never_write_through_a_temp_link, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 200);
    outside(d);
    plant(tu_path(d, "outside/target"), tu_path(d, "m.bin.tmp"));
    plant(tu_path(d, "outside/target"), tu_path(d, "g.bin.tmp"));
    snprintf(args, sizeof args, "%s --steps 2 --save %s/m.bin --dump-grads %s/g.bin",
             tc_model_args(d), d, d);
    cr_expect_eq(run(d, args, "run"), 0);
    expect_file_kept(tu_path(d, "outside/target"));
    struct stat st;
    cr_expect(lstat(tu_path(d, "m.bin"), &st) == 0 && S_ISREG(st.st_mode), "m.bin written");
    cr_expect(lstat(tu_path(d, "g.bin"), &st) == 0 && S_ISREG(st.st_mode), "g.bin written");
    tu_remove_tree(d);
}

Test(symlinks, a_link_given_as_save_is_refused_not_replaced, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 200);
    outside(d);
    /* an empty target: the output is free, and the final rename would
     * have replaced the link */
    tu_write_text(tu_path(d, "outside/empty"), "");
    plant(tu_path(d, "outside/empty"), tu_path(d, "m.bin"));
    snprintf(args, sizeof args, "%s --steps 1 --save %s/m.bin", tc_model_args(d), d);
    cr_expect_eq(run(d, args, "a"), 1);
    cr_expect(out_has(d, "a", "m.bin: is a symbolic link"), "the refusal names the link");
    expect_link(tu_path(d, "m.bin"));
    /* and with --overwrite-outputs: not moved aside either */
    plant(tu_path(d, "outside/target"), tu_path(d, "g.bin"));
    snprintf(args, sizeof args, "%s --steps 1 --dump-grads %s/g.bin --overwrite-outputs",
             tc_model_args(d), d);
    cr_expect_eq(run(d, args, "b"), 1);
    cr_expect(out_has(d, "b", "g.bin: is a symbolic link"), "the refusal names the link");
    expect_link(tu_path(d, "g.bin"));
    expect_file_kept(tu_path(d, "outside/target"));
    tu_remove_tree(d);
}

/* --log /dev/stdout --overwrite-outputs, with stdout a file that holds
 * something, is a link given as --log: the link is not this run's to move
 * (as root, /dev/stdout itself was renamed). Tested with a link of the
 * test's own, never the real /dev/stdout. */
Test(symlinks, a_linked_log_is_not_moved_aside, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 200);
    outside(d);
    plant(tu_path(d, "outside/target"), tu_path(d, "stdout"));
    snprintf(args, sizeof args, "%s --steps 1 --log %s/stdout --overwrite-outputs",
             tc_model_args(d), d);
    cr_expect_eq(run(d, args, "run"), 1);
    cr_expect(out_has(d, "run", "stdout: is a symbolic link; --overwrite-outputs does not move "
                      "it aside"), "the refusal names the link");
    expect_link(tu_path(d, "stdout"));
    expect_file_kept(tu_path(d, "outside/target"));
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "ls %s | grep -q replaced", d);
    cr_expect_neq(tu_run(cmd), 0, "nothing was moved aside");
    /* a path under /dev: refused, /dev/null stays the device */
    struct stat before, after;
    cr_assert_eq(stat("/dev/null", &before), 0);
    snprintf(args, sizeof args, "%s --steps 1 --save /dev/null --overwrite-outputs",
             tc_model_args(d));
    cr_expect_eq(run(d, args, "dev"), 1);
    cr_assert_eq(lstat("/dev/null", &after), 0);
    cr_expect(S_ISCHR(after.st_mode) && after.st_ino == before.st_ino, "/dev/null was replaced");
    tu_remove_tree(d);
}

Test(symlinks, a_linked_step_folder_is_never_written_into, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 200);
    outside(d);
    cr_assert_eq(mkdir(tu_path(d, "ck"), 0755), 0);
    plant(tu_path(d, "archive"), tu_path(d, "ck/step_00000002"));
    snprintf(args, sizeof args, "%s --steps 2 --save-every 2 --checkpoint-dir %s/ck",
             tc_model_args(d), d);
    cr_expect_neq(run(d, args, "run"), 0);
    cr_expect(out_has(d, "run", "step_00000002: is a symbolic link"), "the refusal names it");
    expect_folder_kept(tu_path(d, "archive"), NAMES, 4);
    expect_link(tu_path(d, "ck/step_00000002"));
    tu_remove_tree(d);
}

/* The realistic case: an archived save linked back into the checkpoint
 * folder, then --resume --keep 1. */
Test(symlinks, keep_never_empties_a_linked_save, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], cmd[4096];
    tc_make_shards(d, 1, 400);
    const char *m = tc_model_args(d);
    snprintf(args, sizeof args, "%s --steps 4 --save-every 2 --checkpoint-dir %s/ck", m, d);
    cr_assert_eq(run(d, args, "a"), 0);
    snprintf(cmd, sizeof cmd, "mkdir %s/arch && mv %s/ck/step_00000002 %s/arch/ && "
             "cp -a %s/arch/step_00000002 %s/copy && ln -s %s/arch/step_00000002 "
             "%s/ck/step_00000002", d, d, d, d, d, d, d);
    cr_assert_eq(tu_run(cmd), 0);
    snprintf(args, sizeof args, "%s --steps 8 --save-every 2 --keep 1 --resume "
             "--checkpoint-dir %s/ck", m, d);
    cr_expect_eq(run(d, args, "b"), 0);
    snprintf(cmd, sizeof cmd, "diff -r %s/copy %s/arch/step_00000002", d, d);
    cr_expect_eq(tu_run(cmd), 0, "the archived save changed");
    expect_link(tu_path(d, "ck/step_00000002"));
    cr_expect(out_has(d, "b", "step_00000002 alone: it is a symbolic link"), "a note names it");
    cr_expect(tu_exists(tu_path(d, "ck/step_00000008/COMPLETE")));
    cr_expect(!tu_exists(tu_path(d, "ck/step_00000004")), "--keep 1 deletes the run's own");
    tu_remove_tree(d);
}

Test(symlinks, debris_cleanup_never_empties_a_linked_folder, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 200);
    outside(d);
    cr_assert_eq(mkdir(tu_path(d, "ck"), 0755), 0);
    /* an incomplete save (its COMPLETE does not parse) older than the
     * run's first one: debris, which a real folder would lose */
    plant(tu_path(d, "archive"), tu_path(d, "ck/step_00000001"));
    snprintf(args, sizeof args, "%s --steps 2 --save-every 2 --checkpoint-dir %s/ck",
             tc_model_args(d), d);
    cr_expect_eq(run(d, args, "run"), 0);
    expect_folder_kept(tu_path(d, "archive"), NAMES, 4);
    expect_link(tu_path(d, "ck/step_00000001"));
    tu_remove_tree(d);
}

Test(symlinks, the_lock_file_is_never_opened_through_a_link, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 200);
    outside(d);
    cr_assert_eq(mkdir(tu_path(d, "ck"), 0755), 0);
    plant(tu_path(d, "outside/target"), tu_path(d, "ck/train_gpt.lock"));
    snprintf(args, sizeof args, "%s --steps 1 --checkpoint-dir %s/ck", tc_model_args(d), d);
    cr_expect_eq(run(d, args, "run"), 1);
    cr_expect(out_has(d, "run", "train_gpt.lock: is a symbolic link"), "the refusal names it");
    expect_file_kept(tu_path(d, "outside/target"));
    expect_link(tu_path(d, "ck/train_gpt.lock"));
    tu_remove_tree(d);
}

Test(symlinks, llmc_exports_never_write_through_a_temp_link, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 200);
    outside(d);
    cr_assert_eq(mkdir(tu_path(d, "lc"), 0755), 0);
    plant(tu_path(d, "outside/target"), tu_path(d, "lc/model_00000002.bin.tmp"));
    plant(tu_path(d, "outside/target"), tu_path(d, "lc/state_00000002_00000.bin.tmp"));
    snprintf(args, sizeof args, "%s --steps 2 --save-checkpoint-llmc %s/lc", tc_model_args(d), d);
    cr_expect_eq(run(d, args, "run"), 0);
    expect_file_kept(tu_path(d, "outside/target"));
    cr_expect(tu_exists(tu_path(d, "lc/DONE_00000002")));
    tu_remove_tree(d);
}

Test(symlinks, tokenize_never_empties_a_linked_staging_folder, .timeout = 60)
{
    char *d = tu_tempdir(), cmd[4096];
    outside(d);
    cr_assert_eq(mkdir(tu_path(d, "data"), 0755), 0);
    plant(tu_path(d, "archive"), tu_path(d, "data/tiny.tokenize-12345.tmp"));
    snprintf(cmd, sizeof cmd, "printf 'Hello world' | %s --quiet --val-fraction 0 --out "
             "%s/data/tiny - 2> %s/err.txt", tc_tokenize_bin(), d, d);
    cr_expect_eq(tu_run(cmd), 0);
    expect_folder_kept(tu_path(d, "archive"), NAMES, 4);
    expect_link(tu_path(d, "data/tiny.tokenize-12345.tmp"));
    cr_expect(tu_exists(tu_path(d, "data/tiny_train_000000.bin")));
    tu_remove_tree(d);
}

Test(symlinks, a_closed_stdout_writes_nothing_into_the_lock, .timeout = 60)
{
    char *d = tu_tempdir(), cmd[4096];
    tc_make_shards(d, 1, 200);
    snprintf(cmd, sizeof cmd, "%s %s --steps 2 --checkpoint-dir %s/ck >&- 2> %s/err.txt",
             tc_bin(), tc_model_args(d), d, d);
    cr_expect_eq(tu_run(cmd), 0);
    size_t n = 0;
    char *lock = tu_read_file(tu_path(d, "ck/train_gpt.lock"), &n);
    cr_assert_not_null(lock);
    /* one line, "pid N on host H since T" */
    cr_expect(strncmp(lock, "pid ", 4) == 0 && strchr(lock, '\n') == lock + n - 1,
              "the lock holds more than its line: '%s'", lock);
    free(lock);
    tu_remove_tree(d);
}

Test(symlinks, tokenize_with_stdin_closed_reads_no_folder, .timeout = 60)
{
    char *d = tu_tempdir(), cmd[4096];
    snprintf(cmd, sizeof cmd, "%s --quiet --val-fraction 0 --out %s/tiny - <&- 2> %s/err.txt",
             tc_tokenize_bin(), d, d);
    tu_run(cmd);
    char *err = tu_read_file(tu_path(d, "err.txt"), NULL);
    cr_expect(err && !strstr(err, "Is a directory"), "%s", err ? err : "");
    free(err);
    tu_remove_tree(d);
}

/* scripts/export_hf.py renames OUT and config.json into place: a link at
 * either is refused (the rename would replace the link), the target kept.
 * Needs python3-torch (scripts/setup.sh installs it). */
Test(symlinks, export_hf_never_replaces_a_link, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], cmd[4096];
    tc_make_shards(d, 1, 200);
    outside(d);
    snprintf(args, sizeof args, "%s --steps 1 --save %s/m.bin", tc_model_args(d), d);
    cr_assert_eq(run(d, args, "train"), 0);
    tu_write_text(tu_path(d, "outside/empty"), "");
    cr_assert_eq(mkdir(tu_path(d, "hf"), 0755), 0);
    plant(tu_path(d, "outside/empty"), tu_path(d, "hf/model.pt"));
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 scripts/export_hf.py %s/m.bin %s/hf/model.pt "
             "2> %s/err.txt", d, d, d);
    cr_expect_eq(tu_run(cmd), 1);
    cr_expect(tc_file_has(tu_path(d, "err.txt"), "model.pt: is a symbolic link"),
              "the refusal names the link");
    expect_link(tu_path(d, "hf/model.pt"));
    unlink(tu_path(d, "hf/model.pt"));
    plant(tu_path(d, "outside/target"), tu_path(d, "hf/config.json"));
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 scripts/export_hf.py %s/m.bin %s/hf/model.pt "
             "--overwrite 2> %s/err.txt", d, d, d);
    cr_expect_eq(tu_run(cmd), 1);
    cr_expect(tc_file_has(tu_path(d, "err.txt"), "config.json: is a symbolic link"),
              "the refusal names the link");
    expect_link(tu_path(d, "hf/config.json"));
    expect_file_kept(tu_path(d, "outside/target"));
    tu_remove_tree(d);
}

/* A resumed run cuts its --log back and keeps the lines cut in
 * LOG.abandoned, appended to: never through a link planted there. */
Test(symlinks, the_log_side_file_is_never_written_through_a_link, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 400);
    outside(d);
    const char *m = tc_model_args(d);
    snprintf(args, sizeof args, "%s --steps 4 --save-every 2 --checkpoint-dir %s/ck --log "
             "%s/run.jsonl", m, d, d);
    cr_assert_eq(run(d, args, "a"), 0);
    plant(tu_path(d, "outside/target"), tu_path(d, "run.jsonl.abandoned"));
    snprintf(args, sizeof args, "%s --steps 4 --save-every 2 --checkpoint-dir %s/ck --log "
             "%s/run.jsonl --resume=%s/ck/step_00000002", m, d, d, d);
    cr_expect_neq(run(d, args, "b"), 0);
    cr_expect(out_has(d, "b", "run.jsonl.abandoned"), "the refusal names the side file");
    expect_file_kept(tu_path(d, "outside/target"));
    expect_link(tu_path(d, "run.jsonl.abandoned"));
    tu_remove_tree(d);
}

/* --overwrite-checkpoints moves another run's saves aside: a linked one
 * is not this run's to move, and a refusal moves nothing. */
Test(symlinks, overwrite_checkpoints_moves_no_linked_save, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], cmd[4096];
    tc_make_shards(d, 1, 400);
    const char *m = tc_model_args(d);
    snprintf(args, sizeof args, "%s --steps 4 --save-every 2 --checkpoint-dir %s/ck", m, d);
    cr_assert_eq(run(d, args, "a"), 0);
    snprintf(cmd, sizeof cmd, "mkdir %s/arch && mv %s/ck/step_00000002 %s/arch/ && "
             "cp -a %s/arch/step_00000002 %s/copy && ln -s %s/arch/step_00000002 "
             "%s/ck/step_00000002", d, d, d, d, d, d, d);
    cr_assert_eq(tu_run(cmd), 0);
    snprintf(args, sizeof args, "%s --steps 2 --seed 7 --overwrite-checkpoints "
             "--checkpoint-dir %s/ck", m, d);
    cr_expect_eq(run(d, args, "b"), 1);
    cr_expect(out_has(d, "b", "step_00000002: is a symbolic link; it is not moved"),
              "the refusal names the link");
    expect_link(tu_path(d, "ck/step_00000002"));
    snprintf(cmd, sizeof cmd, "diff -r %s/copy %s/arch/step_00000002", d, d);
    cr_expect_eq(tu_run(cmd), 0, "the linked save changed");
    cr_expect(tu_exists(tu_path(d, "ck/step_00000004/COMPLETE")), "nothing else was moved");
    tu_remove_tree(d);
}

Test(symlinks, llmc_claims_move_no_linked_file, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 200);
    outside(d);
    cr_assert_eq(mkdir(tu_path(d, "lc"), 0755), 0);
    tu_write_text(tu_path(d, "lc/DONE_00000002"), "");
    plant(tu_path(d, "outside/target"), tu_path(d, "lc/model_00000002.bin"));
    snprintf(args, sizeof args, "%s --steps 2 --overwrite-checkpoints --save-checkpoint-llmc "
             "%s/lc", tc_model_args(d), d);
    cr_expect_eq(run(d, args, "run"), 1);
    cr_expect(out_has(d, "run", "model_00000002.bin: is a symbolic link; it is not moved"),
              "the refusal names the link");
    expect_link(tu_path(d, "lc/model_00000002.bin"));
    expect_file_kept(tu_path(d, "outside/target"));
    cr_expect(tu_exists(tu_path(d, "lc/DONE_00000002")), "nothing else was moved");
    tu_remove_tree(d);
}

/* The real case, --log /dev/stdout --overwrite-outputs with stdout a file
 * that holds something, as root: in a private mount namespace whose /dev
 * is a folder of the test's (null, urandom, zero bound to the real ones;
 * stdout and stderr the usual links), so the real /dev/stdout is never at
 * risk. Skipped where unshare(1) cannot make the namespace (not root). */
Test(symlinks, log_dev_stdout_with_overwrite_outputs_keeps_the_link, .timeout = 60)
{
    char *d = tu_tempdir(), cmd[8192];
    tc_make_shards(d, 1, 200);
    if (tu_run("unshare -m --propagation private true 2>/dev/null") != 0)
        cr_skip_test("unshare -m is not allowed here");
    tu_write_text(tu_path(d, "out.txt"), KEEP);
    snprintf(cmd, sizeof cmd, "unshare -m --propagation private sh -c '"
             "F=%s/fakedev && mkdir -p $F/shm && touch $F/null $F/urandom $F/zero && "
             "mount --bind /dev/null $F/null && mount --bind /dev/urandom $F/urandom && "
             "mount --bind /dev/zero $F/zero && ln -s /proc/self/fd/1 $F/stdout && "
             "ln -s /proc/self/fd/2 $F/stderr && mount --bind $F /dev && "
             "%s %s --steps 1 --log /dev/stdout --overwrite-outputs >> %s/out.txt 2> %s/err.txt;"
             " echo $? > %s/rc.txt'", d, tc_bin(), tc_model_args(d), d, d, d);
    cr_assert_eq(tu_run(cmd), 0);
    char *rc = tu_read_file(tu_path(d, "rc.txt"), NULL);
    cr_expect(rc && atoi(rc) == 1, "exit %s", rc ? rc : "?");
    free(rc);
    cr_expect(tc_file_has(tu_path(d, "err.txt"), "/dev/stdout: is a symbolic link"),
              "the refusal names /dev/stdout");
    expect_link(tu_path(d, "fakedev/stdout"));
    snprintf(cmd, sizeof cmd, "ls %s/fakedev | grep -q replaced", d);
    cr_expect_neq(tu_run(cmd), 0, "/dev/stdout was moved aside");
    size_t n = 0;
    char *out = tu_read_file(tu_path(d, "out.txt"), &n);
    cr_expect(out && n >= strlen(KEEP) && memcmp(out, KEEP, strlen(KEEP)) == 0,
              "stdout's file lost its bytes");
    free(out);
    tu_remove_tree(d);
}
