/* tests/e2e/train/test_exit_codes.c — the one table of exit statuses, in
 * docs/exit-status.md (no other page of the README or docs/ has one), is
 * complete, and every status in it is what ./train_gpt returns in its
 * case, each case run here:
 *   0 done; 1 an error naming the file; 2 a bad command line; 3 a rank
 *   timed out waiting on the others (mpirun, one rank stalled); 4 too many
 *   non-finite steps; 75, 76, 77 stopped by a signal with a checkpoint, with
 *   only --save's model, with nothing saved; 130 / 143 a second SIGINT /
 *   SIGTERM (a second SIGHUP, as a dropped terminal sends, still saves). */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

#define MPIRUN "timeout 60 " TC_MPIRUN

#define EXIT_DOC "docs/exit-status.md"

/* The statuses in docs/exit-status.md's table (its first column; "130 /
 * 143" is two), and how many tables have an "exit status" header. */
static int documented_statuses(int *codes, int max, int *tables)
{
    char *s = tu_read_file(EXIT_DOC, NULL);
    cr_assert_not_null(s, EXIT_DOC " not found (run from the project root)");
    int n = 0;
    *tables = 0;
    for (char *line = strtok(s, "\n"), *in = NULL; line; line = strtok(NULL, "\n")) {
        if (strstr(line, "| exit status |")) {
            (*tables)++;
            in = line;
            continue;
        }
        if (!in) continue;
        if (line[0] != '|') {
            in = NULL;
            continue;
        }
        if (strncmp(line, "|---", 4) == 0) continue;
        for (char *p = line + 1; *p && *p != '|';) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p) {
                p++;
                continue;
            }
            if (n < max) codes[n++] = (int)v;
            p = end;
        }
    }
    free(s);
    return n;
}

static int has(const int *codes, int n, int v)
{
    for (int i = 0; i < n; i++)
        if (codes[i] == v) return 1;
    return 0;
}

/* A long run sent `sig` once at the start of step 4 (held there by the
 * pause hook), or again while the save that stop makes is held with a file
 * open; it keeps a checkpoint (keep 2), only --save's model (1) or nothing
 * (0). */
static int signalled(const char *d, int sig, int twice, int keep)
{
    char args[4096], p[700], log[700], kept[1024], pause[800];
    snprintf(log, sizeof log, "%s/sig%d_%d_%d.jsonl", d, sig, twice, keep);
    if (keep == 2)
        snprintf(kept, sizeof kept, "--save-every 2 --checkpoint-dir %s/ck%d_%d", d, sig, twice);
    else
        snprintf(kept, sizeof kept, "%s%s/m%d.bin", keep ? "--save " : "", keep ? d : "", sig);
    snprintf(args, sizeof args, "%s --steps 1000000 %s --log %s", tc_model_args(d),
             keep ? kept : "", log);
    snprintf(p, sizeof p, "%s/sig%d_%d_%d", d, sig, twice, keep);
    snprintf(pause, sizeof pause, "%s.pause", p);
    pid_t pid = tc_spawn(tc_pause_env(pause, twice ? "step:4,commit" : "step:4"), args, p);
    cr_assert(tc_paused(pause, "step:4", 30000), "the run did not start");
    kill(pid, sig);
    if (twice) {
        cr_assert(tc_paused(pause, "commit:model.bin", 30000), "the stop did not save");
        kill(pid, sig);
        tc_release(pause); /* a second SIGHUP does not end the run: it saves on */
    }
    int st = tc_wait(pid, 30000);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(exit_codes, one_table_and_each_status_happens, .timeout = 180)
{
    int codes[32], tables;
    int n = documented_statuses(codes, 32, &tables);
    cr_expect_eq(tables, 1, EXIT_DOC " has %d exit status tables, want one", tables);
    const int want[] = {0, 1, 2, 3, 4, 75, 76, 77, 130, 143};
    int nw = (int)(sizeof want / sizeof want[0]);
    cr_expect_eq(n, nw, EXIT_DOC "'s table lists %d statuses, want %d", n, nw);
    for (int i = 0; i < nw; i++)
        cr_expect(has(codes, n, want[i]), EXIT_DOC "'s table lacks status %d", want[i]);
    char *pages = NULL;
    tu_run_output("grep -l -F '| exit status |' README.md docs/*.md", &pages, NULL);
    cr_expect_str_eq(pages ? pages : "", EXIT_DOC "\n",
                     "the pages with an exit status table, want only " EXIT_DOC);
    free(pages);

    char *d = tu_tempdir(), args[4096], p[700], cmd[8192];
    tc_make_shards(d, 1, 400);
    const char *m = tc_model_args(d);
    snprintf(p, sizeof p, "%s/r", d);
    snprintf(args, sizeof args, "%s --steps 1", m);
    cr_expect_eq(tc_run(NULL, args, p), 0, "done");
    snprintf(args, sizeof args, "%s --steps 1 --init-from %s/no_such_model.bin", m, d);
    cr_expect_eq(tc_run(NULL, args, p), 1, "an error naming the file");
    snprintf(args, sizeof args, "%s --no-such-flag", m);
    cr_expect_eq(tc_run(NULL, args, p), 2, "a bad command line");
    snprintf(cmd, sizeof cmd, "TRAIN_GPT_TEST_STALL=1:2:50 %s -np 2 %s %s --steps 3 "
             "--collective-timeout 1 >%s/t.out 2>%s/t.err", MPIRUN, tc_bin(), m, d, d);
    cr_expect_eq(tu_run(cmd), 3, "a collective timeout");
    snprintf(args, sizeof args, "%s --steps 5 --max-bad-steps 2", m);
    cr_expect_eq(tc_run("TRAIN_GPT_TEST_NAN_STEP=1-5", args, p), 4, "non-finite steps");
    cr_expect_eq(signalled(d, SIGTERM, 0, 2), 75, "stopped by a signal, a checkpoint kept");
    cr_expect_eq(signalled(d, SIGTERM, 0, 1), 76, "stopped by a signal, --save written");
    cr_expect_eq(signalled(d, SIGINT, 0, 0), 77, "stopped by a signal, nothing saved");
    cr_expect_eq(signalled(d, SIGINT, 1, 2), 130, "a second SIGINT");
    cr_expect_eq(signalled(d, SIGTERM, 1, 2), 143, "a second SIGTERM");
    cr_expect_eq(signalled(d, SIGHUP, 1, 2), 75, "a hangup, twice: a save, never an exit at once");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    tu_run(cmd);
    free(d);
}
