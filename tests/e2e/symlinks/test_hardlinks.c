/* tests/e2e/symlinks/test_hardlinks.c — end-to-end: a hard link at each
 * name test_symlinks.c plants a symbolic link at. O_NOFOLLOW stops a
 * symbolic link, not a hard one: a file written in place (--log, appended
 * and cut back; LOG.abandoned, appended; the lock file, truncated) must
 * have no other name, judged on the open descriptor, or the run is
 * refused (exit 1, "FILE: hard-linked to another name (N links)"); a file
 * written to a temp name and renamed into place (--save, --dump-grads,
 * the llm.c exports, export_hf's files) unlinks or renames over the name,
 * which leaves the other name's file alone. Each test checks the file
 * behind the other name byte for byte.
 *
 * Before, a new run's empty --log hard-linked elsewhere was written
 * through to the other name, and a resume cut back the log and appended
 * LOG.abandoned through theirs (rc 0). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

static const char KEEP[] = "outside the run's folders: keep me byte for byte\n";

/* d/outside/target (KEEP) and d/outside/empty (0 bytes). */
static void outside(const char *d)
{
    cr_assert_eq(mkdir(tu_path(d, "outside"), 0755), 0);
    tu_write_text(tu_path(d, "outside/target"), KEEP);
    tu_write_text(tu_path(d, "outside/empty"), "");
}

static void expect_bytes(const char *path, const char *want, size_t n)
{
    size_t got_n = 0;
    char *got = tu_read_file(path, &got_n);
    cr_expect(got && got_n == n && memcmp(got, want, n) == 0, "%s changed: %zu bytes, not %zu",
              path, got_n, n);
    free(got);
}

static void expect_kept(const char *path) { expect_bytes(path, KEEP, strlen(KEEP)); }

static void hard_link(const char *target, const char *at)
{
    cr_assert_eq(link(target, at), 0, "%s: %s", at, strerror(errno));
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

/* Temp names (unlinked first) and final names (renamed over): the run
 * goes on and the other name keeps its bytes. */
Test(hardlinks, renamed_outputs_leave_the_other_name_alone, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 200);
    outside(d);
    cr_assert_eq(mkdir(tu_path(d, "lc"), 0755), 0);
    hard_link(tu_path(d, "outside/target"), tu_path(d, "m.bin.tmp"));
    hard_link(tu_path(d, "outside/target"), tu_path(d, "g.bin.tmp"));
    hard_link(tu_path(d, "outside/target"), tu_path(d, "lc/model_00000002.bin.tmp"));
    hard_link(tu_path(d, "outside/target"), tu_path(d, "lc/state_00000002_00000.bin.tmp"));
    /* an empty file is a free output: renamed over at the end */
    hard_link(tu_path(d, "outside/empty"), tu_path(d, "m.bin"));
    snprintf(args, sizeof args, "%s --steps 2 --save %s/m.bin --dump-grads %s/g.bin "
             "--save-checkpoint-llmc %s/lc", tc_model_args(d), d, d, d);
    cr_expect_eq(run(d, args, "run"), 0);
    expect_kept(tu_path(d, "outside/target"));
    expect_bytes(tu_path(d, "outside/empty"), "", 0);
    cr_expect(tu_exists(tu_path(d, "lc/DONE_00000002")));
    tu_remove_tree(d);
}

/* A new run's --log, empty and hard-linked elsewhere: refused at start-up,
 * nothing written behind either name. */
Test(hardlinks, a_new_runs_hard_linked_log_is_refused, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 200);
    outside(d);
    hard_link(tu_path(d, "outside/empty"), tu_path(d, "run.jsonl"));
    snprintf(args, sizeof args, "%s --steps 2 --log %s/run.jsonl", tc_model_args(d), d);
    cr_expect_eq(run(d, args, "a"), 1);
    cr_expect(out_has(d, "a", "run.jsonl: hard-linked to another name (2 links)"),
              "the refusal names the log and the fault");
    expect_bytes(tu_path(d, "outside/empty"), "", 0);
    tu_remove_tree(d);
}

/* A resumed run's --log with a second name (a hard-link backup of it): not
 * cut back, not appended to; both names keep their bytes. */
Test(hardlinks, a_resumed_hard_linked_log_is_refused, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 400);
    outside(d);
    const char *m = tc_model_args(d);
    snprintf(args, sizeof args, "%s --steps 4 --save-every 2 --checkpoint-dir %s/ck --log "
             "%s/run.jsonl", m, d, d);
    cr_assert_eq(run(d, args, "a"), 0);
    size_t n;
    char *before = tu_read_file(tu_path(d, "run.jsonl"), &n);
    cr_assert(before && n > 0);
    hard_link(tu_path(d, "run.jsonl"), tu_path(d, "outside/backup.jsonl"));
    snprintf(args, sizeof args, "%s --steps 4 --save-every 2 --checkpoint-dir %s/ck --log "
             "%s/run.jsonl --resume=%s/ck/step_00000002", m, d, d, d);
    cr_expect_eq(run(d, args, "b"), 1);
    cr_expect(out_has(d, "b", "run.jsonl: hard-linked to another name (2 links)"),
              "the refusal names the log and the fault");
    expect_bytes(tu_path(d, "outside/backup.jsonl"), before, n);
    cr_expect(!tu_exists(tu_path(d, "run.jsonl.abandoned")), "lines were moved aside");
    free(before);
    tu_remove_tree(d);
}

/* LOG.abandoned hard-linked elsewhere: the log is not cut back and the
 * other name's file gets no line. */
Test(hardlinks, the_log_side_file_is_never_written_through_a_hard_link, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 400);
    outside(d);
    const char *m = tc_model_args(d);
    snprintf(args, sizeof args, "%s --steps 4 --save-every 2 --checkpoint-dir %s/ck --log "
             "%s/run.jsonl", m, d, d);
    cr_assert_eq(run(d, args, "a"), 0);
    size_t n;
    char *before = tu_read_file(tu_path(d, "run.jsonl"), &n);
    cr_assert(before);
    hard_link(tu_path(d, "outside/target"), tu_path(d, "run.jsonl.abandoned"));
    snprintf(args, sizeof args, "%s --steps 4 --save-every 2 --checkpoint-dir %s/ck --log "
             "%s/run.jsonl --resume=%s/ck/step_00000002", m, d, d, d);
    cr_expect_eq(run(d, args, "b"), 1);
    cr_expect(out_has(d, "b", "run.jsonl.abandoned: hard-linked to another name (2 links)"),
              "the refusal names the side file and the fault");
    expect_kept(tu_path(d, "outside/target"));
    expect_bytes(tu_path(d, "run.jsonl"), before, n);
    free(before);
    tu_remove_tree(d);
}

/* The lock file, truncated and written at each start: refused with a
 * second name, which keeps its bytes. */
Test(hardlinks, a_hard_linked_lock_file_is_refused, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 200);
    outside(d);
    cr_assert_eq(mkdir(tu_path(d, "ck"), 0755), 0);
    hard_link(tu_path(d, "outside/target"), tu_path(d, "ck/train_gpt.lock"));
    snprintf(args, sizeof args, "%s --steps 1 --checkpoint-dir %s/ck", tc_model_args(d), d);
    cr_expect_eq(run(d, args, "run"), 1);
    cr_expect(out_has(d, "run", "train_gpt.lock: the lock file is hard-linked to another name"),
              "the refusal names it");
    expect_kept(tu_path(d, "outside/target"));
    tu_remove_tree(d);
}

/* scripts/export_hf.py writes a temp file and renames it over OUT's
 * files: a hard-linked config.json is replaced, the other name kept. */
Test(hardlinks, export_hf_renames_over_a_hard_link, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], cmd[4096];
    tc_make_shards(d, 1, 200);
    outside(d);
    snprintf(args, sizeof args, "%s --steps 1 --save %s/m.bin", tc_model_args(d), d);
    cr_assert_eq(run(d, args, "train"), 0);
    cr_assert_eq(mkdir(tu_path(d, "hf"), 0755), 0);
    hard_link(tu_path(d, "outside/target"), tu_path(d, "hf/config.json"));
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 scripts/export_hf.py %s/m.bin %s/hf/model.pt "
             "--overwrite > %s/out.txt 2>&1", d, d, d);
    int rc = tu_run(cmd);
    char *out = tu_read_file(tu_path(d, "out.txt"), NULL);
    cr_expect_eq(rc, 0, "%s", out ? out : "");
    free(out);
    expect_kept(tu_path(d, "outside/target"));
    tu_remove_tree(d);
}

/* A backup of the run folder made with `cp -al` shares the lock file: a
 * resume is refused with a message that says how to go on (remove this
 * name of the lock; back up with `cp -a`), and following it works, the
 * backup's lock keeping its bytes. */
Test(hardlinks, a_cp_al_backup_says_how_to_resume, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], cmd[4096];
    tc_make_shards(d, 1, 400);
    const char *m = tc_model_args(d);
    snprintf(args, sizeof args, "%s --steps 2 --checkpoint-dir %s/ck", m, d);
    cr_assert_eq(run(d, args, "a"), 0);
    snprintf(cmd, sizeof cmd, "cp -al %s/ck %s/ck.bak", d, d);
    cr_assert_eq(tu_run(cmd), 0);
    size_t n;
    char *lock = tu_read_file(tu_path(d, "ck.bak/train_gpt.lock"), &n);
    cr_assert(lock);
    snprintf(args, sizeof args, "%s --steps 4 --checkpoint-dir %s/ck --resume", m, d);
    cr_expect_eq(run(d, args, "b"), 1);
    cr_expect(out_has(d, "b", "train_gpt.lock: the lock file is hard-linked to another name "
                      "(2 links), as in a backup made with `cp -al`"), "the cause");
    cr_expect(out_has(d, "b", "remove this name of it (rm ") && out_has(d, "b", "`cp -a`"),
              "the way on");
    cr_assert_eq(unlink(tu_path(d, "ck/train_gpt.lock")), 0);
    cr_expect_eq(run(d, args, "c"), 0);
    expect_bytes(tu_path(d, "ck.bak/train_gpt.lock"), lock, n);
    free(lock);
    tu_remove_tree(d);
}
