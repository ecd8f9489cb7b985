/* tests/test_llmc_edges.c — the llm.c interop (--save-checkpoint-llmc,
 * --resume-llmc) at its edges, where a user's files could be lost or a
 * folder touched silently; each is checked against what the native
 * --checkpoint-dir and --resume do with the same files:
 *   - --plan and --generate create neither checkpoint folder;
 *   - --resume-llmc with --log continues the log, cut back to the resumed
 *     step (the lines after it moved to <log>.abandoned), as --resume does;
 *   - a fresh run refuses an export folder that already holds llm.c files
 *     (exit 1, naming the newest); --overwrite-checkpoints moves them into
 *     DIR/replaced_<time>/; a resumed run moves the files of the steps it
 *     will write again into DIR/abandoned/. Nothing is deleted.
 * The expected values are hand-derived: which files exist where, the log's
 * steps, the losses of an uninterrupted run of the same seed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test_util.h"
#include "train_cli.h"

/* train_gpt with args; expect exit status rc and `want` in stdout+stderr. */
static void run_expect(const char *d, const char *args, int rc, const char *want)
{
    char p[700];
    snprintf(p, sizeof p, "%s/run", d);
    int got = tc_run(NULL, args, p);
    char *out = tu_read_file(tu_path(d, "run.out"), NULL);
    char *err = tu_read_file(tu_path(d, "run.err"), NULL);
    cr_expect_eq(got, rc, "exit %d (expected %d) for %s: %s%s", got, rc, args, out ? out : "",
                 err ? err : "");
    cr_expect((out && strstr(out, want)) || (err && strstr(err, want)),
              "'%s' not printed for %s: %s%s", want, args, out ? out : "", err ? err : "");
    free(out);
    free(err);
}

static int exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* The number of entries in folder p (not counting . and ..), -1 if none. */
static int count_entries(const char *p)
{
    char cmd[1200], out[800];
    snprintf(out, sizeof out, "%s.count", p);
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l > '%s'", p, out);
    if (!exists(p) || tu_run(cmd) != 0) return -1;
    char *text = tu_read_file(out, NULL);
    int n = text ? atoi(text) : -1;
    free(text);
    remove(out);
    return n;
}

/* --plan and --generate train nothing and save nothing: neither
 * --save-checkpoint-llmc's folder nor --checkpoint-dir's is made, and an
 * existing one is left as it was. */
Test(llmc_edges, no_train_modes_leave_the_folders_alone, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 100);
    const char *modes[2] = {"--plan", "--generate 2"};
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "%s %s --save-checkpoint-llmc %s/lc --checkpoint-dir %s/ck",
                 tc_model_args(d), modes[i], d, d);
        run_expect(d, args, 0, "");
        cr_expect(!exists(tu_path(d, "lc")), "%s made --save-checkpoint-llmc's folder",
                  modes[i]);
        cr_expect(!exists(tu_path(d, "ck")), "%s made --checkpoint-dir's folder", modes[i]);
    }
    cr_assert_eq(mkdir(tu_path(d, "lc"), 0755), 0);
    cr_assert_eq(mkdir(tu_path(d, "ck"), 0755), 0);
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "%s %s --save-checkpoint-llmc %s/lc --checkpoint-dir %s/ck",
                 tc_model_args(d), modes[i], d, d);
        run_expect(d, args, 0, "");
        cr_expect_eq(count_entries(tu_path(d, "lc")), 0, "%s wrote into lc", modes[i]);
        cr_expect_eq(count_entries(tu_path(d, "ck")), 0, "%s wrote into ck (a lock file?)",
                     modes[i]);
    }
    tu_remove_tree(d);
}
