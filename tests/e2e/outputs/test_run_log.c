/* tests/e2e/outputs/test_run_log.c — end-to-end: the --log file tells the truth (issue
 * 15, failures 7 and 10).
 *
 *  - a full disk (a file-size limit, `ulimit -f`, makes writes fail with
 *    EFBIG as ENOSPC would): one warning, training goes on, the file stays
 *    whole JSON lines, and the run exits 1 naming the log and the lines
 *    lost; with --log-errors ignore, exit 0 after the same warning;
 *  - a run killed (SIGKILL) after logging steps past its last save: the
 *    resumed run's log has each step once, with the losses of a run that
 *    never stopped (bitwise), and the lines cut are kept in .abandoned. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

static int count(const char *path, const char *needle)
{
    char *s = tu_read_file(path, NULL);
    int n = 0;
    for (const char *p = s ? strstr(s, needle) : NULL; p; p = strstr(p + 1, needle)) n++;
    free(s);
    return n;
}

/* Every line of the file is a JSON object and the file ends with a newline. */
static void expect_whole_json_lines(const char *path)
{
    size_t len;
    char *s = tu_read_file(path, &len);
    cr_assert(s && len > 0, "%s is empty", path);
    cr_expect_eq(s[len - 1], '\n', "%s ends mid-line", path);
    for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *j = cJSON_Parse(line);
        cr_expect(cJSON_IsObject(j), "%s: not a JSON line: '%s'", path, line);
        cJSON_Delete(j);
    }
    free(s);
}

static int run_limited(const char *d, const char *tag, const char *extra)
{
    char cmd[8192];
    /* 8 blocks: 4 KiB in dash (512-byte blocks), 8 KiB in bash. The run's
     * first line (its config: about 1.8 KiB with this test's paths) must
     * fit with room for some steps; each step's line is about 290 bytes
     * and 60 steps need 17 KiB, so the limit is met mid-run. stdout goes
     * to /dev/null (a device has no size limit). */
    snprintf(cmd, sizeof cmd, "ulimit -f 8; exec %s %s --steps 60 --log %s/%s.jsonl %s "
             ">/dev/null 2>%s/%s.err", tc_bin(), tc_model_args(d), d, tag, extra, d, tag);
    return tu_run(cmd);
}

Test(run_log, a_full_disk_is_an_error_at_the_end, .timeout = 60)
{
    char *d = tu_tempdir();
    tc_make_shards(d, 1, 400);
    cr_assert_eq(run_limited(d, "full", ""), 1, "a log that could not be written: exit 1");
    const char *err = tu_path(d, "full.err");
    cr_expect_eq(count(err, "warning: --log"), 1, "the warning must come once");
    cr_expect(tc_file_has(err, "full.jsonl: write failed: File too large"));
    cr_expect(tc_file_has(err, "error: --log"));
    cr_expect(tc_file_has(err, "could not be written"));
    expect_whole_json_lines(tu_path(d, "full.jsonl"));
    int n = tc_log_losses(tu_path(d, "full.jsonl"), NULL, NULL, NULL, TC_MAX_STEPS);
    cr_expect(n > 0 && n < 60, "%d training lines written under the limit", n);
    /* accepted when asked: the same warning, exit 0 */
    cr_assert_eq(run_limited(d, "ignored", "--log-errors ignore"), 0);
    cr_expect_eq(count(tu_path(d, "ignored.err"), "warning: --log"), 1);
    cr_expect(!tc_file_has(tu_path(d, "ignored.err"), "error:"));
    tu_remove_tree(d);
}

Test(run_log, a_resumed_log_has_each_step_once, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 2, 400);
    const char *m = tc_model_args(d), *log = tu_path(d, "run.jsonl");
    /* saves every 4 steps: step 4's completes (held before its manifest's
     * rename, then let go); killed, as a pre-emption would, inside step 8's
     * save (held with its model file open), so steps 5-8 are logged and the
     * newest complete save is step 4 */
    snprintf(args, sizeof args, "%s --shuffle 1 --steps 12 --save-every 4 --checkpoint-dir %s/ck "
             "--log %s", m, d, log);
    char pause[4200]; /* tu_path's buffers are reused */
    snprintf(pause, sizeof pause, "%s", tu_path(d, "pause"));
    pid_t pid = tc_spawn(tc_pause_env(pause, "commit:COMPLETE,commit:model.bin"), args,
                         tu_path(d, "a"));
    cr_assert(tc_paused(pause, "commit:COMPLETE", 30000), "no save of step 4");
    tc_release(pause);
    cr_assert(tc_paused(pause, "commit:model.bin", 30000), "the run did not reach step 8's save");
    kill(pid, SIGKILL);
    tc_wait(pid, 10000);
    cr_assert_eq(tc_log_losses(log, NULL, NULL, NULL, TC_MAX_STEPS), 8);
    cr_assert_neq(access(tu_path(d, "ck/step_00000008/COMPLETE"), F_OK), 0, "killed too late");
    /* resume to 12 */
    snprintf(args, sizeof args, "%s --shuffle 1 --steps 12 --save-every 4 --checkpoint-dir %s/ck "
             "--log %s --resume", m, d, log);
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "b")), 0);
    cr_expect(tc_file_has(tu_path(d, "b.out"), "cut back to step 4, where this run resumes; the 4 "
                          "lines logged after it moved to"));
    /* the reference: 12 steps in one go */
    snprintf(args, sizeof args, "%s --shuffle 1 --steps 12 --log %s/ref.jsonl", m, d);
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "ref")), 0);
    int sa[TC_MAX_STEPS], sb[TC_MAX_STEPS];
    double la[TC_MAX_STEPS], lb[TC_MAX_STEPS];
    int na = tc_log_losses(log, sa, la, NULL, TC_MAX_STEPS);
    int nb = tc_log_losses(tu_path(d, "ref.jsonl"), sb, lb, NULL, TC_MAX_STEPS);
    cr_assert_eq(na, 12, "the resumed log has %d training lines, want 12 (each step once)", na);
    cr_assert_eq(nb, 12);
    for (int i = 0; i < 12; i++) {
        cr_expect_eq(sa[i], i + 1, "line %d is step %d", i, sa[i]);
        cr_expect(memcmp(&la[i], &lb[i], sizeof(double)) == 0, "step %d: %.17g vs %.17g", i + 1,
                  la[i], lb[i]);
    }
    /* the four lines cut, kept */
    int sc[8];
    cr_expect_eq(tc_log_losses(tu_path(d, "run.jsonl.abandoned"), sc, NULL, NULL, 8), 4);
    cr_expect(sc[0] == 5 && sc[3] == 8);
    tu_remove_tree(d);
}
