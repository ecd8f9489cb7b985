/* tests/e2e/outputs/test_log_ownership.c — a resume takes only its own
 * log. It cuts its --log back to the resumed step, so the file must surely
 * be this run's: empty, or first line this run's record (run id), or, for
 * a log from before run ids, every line one this program writes (a
 * training, val or eval line, a run or summary event; a torn last line
 * after such lines is a crash's). Anything else: exit 1, the file byte for
 * byte as it was, no LOG.abandoned.
 *
 * Before, `--resume --log notes.txt`, notes with no run header but a line
 * starting {"step":5, was cut at that line, the rest moved to
 * notes.txt.abandoned, exit 0. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

static int out_has(const char *d, const char *name, const char *text)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/%s.err", d, name);
    if (tc_file_has(p, text)) return 1;
    snprintf(p, sizeof p, "%s/%s.out", d, name);
    return tc_file_has(p, text);
}

static void expect_bytes(const char *path, const char *want, size_t n)
{
    size_t got_n = 0;
    char *got = tu_read_file(path, &got_n);
    cr_expect(got && got_n == n && memcmp(got, want, n) == 0, "%s changed: %zu bytes, not %zu",
              path, got_n, n);
    free(got);
}

/* A 4-step run saving at 2 and 4 into d/ck (its log into `log` when not
 * NULL); the arguments of its resume from step 2 with --log `resume_log`. */
static void first_run(const char *d, const char *log, char *resume, size_t len,
                      const char *resume_log)
{
    char args[4096];
    const char *m = tc_model_args(d);
    snprintf(args, sizeof args, "%s --steps 4 --save-every 2 --checkpoint-dir %s/ck%s%s", m, d,
             log ? " --log " : "", log ? log : "");
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "a")), 0);
    snprintf(resume, len, "%s --steps 4 --save-every 2 --checkpoint-dir %s/ck --log %s "
             "--resume=%s/ck/step_00000002", m, d, resume_log, d);
}

/* Notes that hold a line like a log's: refused, unchanged. */
Test(log_ownership, notes_with_a_step_line_are_not_cut, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 400);
    const char notes[] = "my notes on this run\n{\"step\":5,\"loss\":2.5}\nlr looks high\n";
    tu_write_text(tu_path(d, "notes.txt"), notes);
    char notes_path[1200];
    snprintf(notes_path, sizeof notes_path, "%s", tu_path(d, "notes.txt"));
    first_run(d, NULL, args, sizeof args, notes_path);
    cr_expect_eq(tc_run(NULL, args, tu_path(d, "b")), 1);
    cr_expect(out_has(d, "b", "notes.txt: not this run's log"), "the refusal names the file");
    cr_expect(out_has(d, "b", "line 1 is no line this program writes (my notes on this run)"),
              "the refusal names the line");
    expect_bytes(notes_path, notes, strlen(notes));
    cr_expect(!tu_exists(tu_path(d, "notes.txt.abandoned")), "lines were moved aside");
    /* a line that starts like a step line but holds no loss: refused too */
    const char steps[] = "{\"step\":1,\"loss\":3.0}\n{\"step\":5,\"note\":\"x\"}\n";
    tu_write_text(notes_path, steps);
    cr_expect_eq(tc_run(NULL, args, tu_path(d, "c")), 1);
    cr_expect(out_has(d, "c", "line 2 is no line this program writes"), "names line 2");
    expect_bytes(notes_path, steps, strlen(steps));
    cr_expect(!tu_exists(tu_path(d, "notes.txt.abandoned")), "lines were moved aside");
    tu_remove_tree(d);
}

/* A log from before run ids (no record line: here, a real log without its
 * first line) is still cut back and resumed; one foreign line in it, or a
 * torn line that is its only line, refuses it unchanged. An empty file is
 * a fresh log. */
Test(log_ownership, a_log_from_before_run_ids_is_taken_when_every_line_is_ours,
     .timeout = 180)
{
    char *d = tu_tempdir(), args[4096], cmd[4096];
    tc_make_shards(d, 1, 400);
    char log[1200];
    snprintf(log, sizeof log, "%s", tu_path(d, "run.jsonl"));
    first_run(d, log, args, sizeof args, log);
    snprintf(cmd, sizeof cmd, "sed -i 1d %s && cp %s %s/orig.jsonl", log, log, d);
    cr_assert_eq(tu_run(cmd), 0);
    /* with a foreign line among them */
    snprintf(cmd, sizeof cmd, "sed -i '2i # a comment' %s", log);
    cr_assert_eq(tu_run(cmd), 0);
    size_t n;
    char *before = tu_read_file(log, &n);
    cr_expect_eq(tc_run(NULL, args, tu_path(d, "b")), 1);
    cr_expect(out_has(d, "b", "line 2 is no line this program writes (# a comment)"),
              "the refusal names the line");
    expect_bytes(log, before, n);
    free(before);
    /* only a torn line: no sign it is a log of ours */
    tu_write_text(log, "{\"step\":3,\"lo");
    cr_expect_eq(tc_run(NULL, args, tu_path(d, "c")), 1);
    expect_bytes(log, "{\"step\":3,\"lo", 13);
    cr_expect(!tu_exists(tu_path(d, "run.jsonl.abandoned")), "lines were moved aside");
    /* every line ours, and a torn one after them: cut back, resumed */
    snprintf(cmd, sizeof cmd, "cp %s/orig.jsonl %s && printf '{\"step\":9,\"lo' >> %s", d, log,
             log);
    cr_assert_eq(tu_run(cmd), 0);
    cr_expect_eq(tc_run(NULL, args, tu_path(d, "e")), 0);
    cr_expect(tu_exists(tu_path(d, "run.jsonl.abandoned")), "nothing was cut back");
    /* an empty file: a fresh log for the resumed run */
    tu_write_text(tu_path(d, "empty.jsonl"), "");
    snprintf(args, sizeof args, "%s --steps 4 --save-every 2 --checkpoint-dir %s/ck --log "
             "%s/empty.jsonl --resume=%s/ck/step_00000002", tc_model_args(d), d, d, d);
    cr_expect_eq(tc_run(NULL, args, tu_path(d, "f")), 0);
    tu_remove_tree(d);
}
