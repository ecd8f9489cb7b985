/* tests/e2e/interop/test_llmc_edges.c — the llm.c interop (--save-checkpoint-llmc,
 * --resume-llmc) at its edges, where a user's files could be lost or a
 * folder touched silently; each is checked against what the native
 * --checkpoint-dir and --resume do with the same files:
 *   - --plan and --generate create neither checkpoint folder;
 *   - --resume-llmc with --log continues the log, cut back to the resumed
 *     step (the lines after it moved to <log>.abandoned), as --resume does;
 *   - a fresh run refuses an export folder that already holds llm.c files
 *     (exit 1, naming the newest); --overwrite-checkpoints moves them into
 *     DIR/replaced_<time>/; a resumed run moves the files of the steps it
 *     will write again into DIR/abandoned/. Nothing is deleted;
 *   - a second run on the same export folder is refused (its lock).
 * The expected values are hand-derived: which files exist where, the log's
 * steps, the losses of an uninterrupted run of the same seed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

/* Shards in d and an llm.c export of 4 steps, saved at 2 and 4, in d/lc. */
static void export_four_steps(const char *d)
{
    char args[4096];
    tc_make_shards(d, 2, 100);
    snprintf(args, sizeof args, "%s --steps 4 --save-every 2 --save-checkpoint-llmc %s/lc",
             tc_model_args(d), d);
    tc_run_expect(d, args, 0, "llm.c checkpoint of step 4 written");
}

/* The number of entries in folder p (not counting . and ..), -1 if none. */
static int count_entries(const char *p)
{
    char cmd[1200], out[800];
    snprintf(out, sizeof out, "%s.count", p);
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l > '%s'", p, out);
    if (!tu_exists(p) || tu_run(cmd) != 0) return -1;
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
        tc_run_expect(d, args, 0, "");
        cr_expect(!tu_exists(tu_path(d, "lc")), "%s made --save-checkpoint-llmc's folder",
                  modes[i]);
        cr_expect(!tu_exists(tu_path(d, "ck")), "%s made --checkpoint-dir's folder", modes[i]);
    }
    cr_assert_eq(mkdir(tu_path(d, "lc"), 0755), 0);
    cr_assert_eq(mkdir(tu_path(d, "ck"), 0755), 0);
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "%s %s --save-checkpoint-llmc %s/lc --checkpoint-dir %s/ck",
                 tc_model_args(d), modes[i], d, d);
        tc_run_expect(d, args, 0, "");
        cr_expect_eq(count_entries(tu_path(d, "lc")), 0, "%s wrote into lc", modes[i]);
        cr_expect_eq(count_entries(tu_path(d, "ck")), 0, "%s wrote into ck (a lock file?)",
                     modes[i]);
    }
    tu_remove_tree(d);
}

/* A run resumed with --resume-llmc and its --log: the log is continued,
 * not started afresh. As with --resume, it is cut back to the resumed step
 * (step 3), the lines after it moved to <log>.abandoned, and the resumed
 * steps appended: steps 1..6 once each, with the uninterrupted run's
 * losses (the continuation is bitwise on the CPU). */
Test(llmc_edges, resume_llmc_continues_the_log, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], cmd[2048];
    tc_make_shards(d, 2, 100);
    snprintf(args, sizeof args, "%s --steps 6 --save-every 3 --save-checkpoint-llmc %s/lc "
             "--log %s/full.jsonl", tc_model_args(d), d, d);
    tc_run_expect(d, args, 0, "llm.c checkpoint of step 6 written");
    snprintf(cmd, sizeof cmd, "cp %s/full.jsonl %s/res.jsonl", d, d);
    cr_assert_eq(tu_run(cmd), 0);
    snprintf(args, sizeof args, "%s --steps 6 --resume-llmc %s/lc/state_00000003_00000.bin "
             "--log %s/res.jsonl", tc_model_args(d), d, d);
    tc_run_expect(d, args, 0, "cut back to step 3, where this run resumes");
    int s1[8], s2[8], s3[8];
    double l1[8], l2[8], l3[8];
    int n1 = tc_log_losses(tu_path(d, "full.jsonl"), s1, l1, NULL, 8);
    int n2 = tc_log_losses(tu_path(d, "res.jsonl"), s2, l2, NULL, 8);
    cr_assert(n1 == 6 && n2 == 6, "training lines: %d in the full log, %d in the resumed one "
              "(6 each: steps 1..6 once)", n1, n2);
    for (int i = 0; i < 6; i++)
        cr_expect(s2[i] == i + 1 && s1[i] == i + 1 && l2[i] == l1[i],
                  "line %d: step %d loss %.9g, resumed log step %d loss %.9g", i, s1[i], l1[i],
                  s2[i], l2[i]);
    int n3 = tc_log_losses(tu_path(d, "res.jsonl.abandoned"), s3, l3, NULL, 8);
    cr_expect(n3 == 3 && s3[0] == 4 && s3[2] == 6, "the cut lines (steps 4..6) are kept in "
              "res.jsonl.abandoned: %d training lines there", n3);
    tu_remove_tree(d);
}

/* 0 when a shell command succeeds (its output dropped). */
static int sh(const char *fmt, const char *d)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, fmt, d, d, d, d);
    return tu_run(cmd);
}

/* A new run's --save-checkpoint-llmc folder holding another run's llm.c
 * files (a complete export, or a lone model file) is refused at start,
 * exit 1, naming the newest file; nothing in it changes. With
 * --overwrite-checkpoints they are moved, unchanged, into
 * DIR/replaced_<time>/ and the new run writes its own. */
Test(llmc_edges, a_new_run_refuses_another_runs_llmc_files, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], want[1024];
    export_four_steps(d);
    cr_assert_eq(sh("cp %s/lc/model_00000004.bin %s/a.bin", d), 0);
    snprintf(args, sizeof args, "%s --steps 4 --save-every 2 --seed 7 "
             "--save-checkpoint-llmc %s/lc", tc_model_args(d), d);
    snprintf(want, sizeof want, "--save-checkpoint-llmc %s/lc holds 6 llm.c checkpoint files "
             "of another run (newest %s/lc/DONE_00000004)", d, d);
    int before = count_entries(tu_path(d, "lc")); /* 6 and the lock file */
    tc_run_expect(d, args, 1, want);
    cr_expect(tc_files_equal(tu_path(d, "lc/model_00000004.bin"), tu_path(d, "a.bin")),
              "the refused run changed the other run's model file");
    cr_expect_eq(count_entries(tu_path(d, "lc")), before, "the refused run wrote into lc");
    /* a lone model file, no DONE: refused the same way */
    cr_assert_eq(sh("mkdir %s/lone && cp %s/a.bin %s/lone/model_00000002.bin", d), 0);
    snprintf(args, sizeof args, "%s --steps 2 --save-checkpoint-llmc %s/lone", tc_model_args(d),
             d);
    snprintf(want, sizeof want, "holds 1 llm.c checkpoint file of another run (newest "
             "%s/lone/model_00000002.bin)", d);
    tc_run_expect(d, args, 1, want);
    cr_expect(tc_files_equal(tu_path(d, "lone/model_00000002.bin"), tu_path(d, "a.bin")));
    /* --overwrite-checkpoints: moved aside whole, then the new run's own */
    snprintf(args, sizeof args, "%s --steps 4 --save-every 2 --seed 7 --overwrite-checkpoints "
             "--save-checkpoint-llmc %s/lc", tc_model_args(d), d);
    tc_run_expect(d, args, 0, "the llm.c files of another run (6 files, steps 2 to 4) into");
    cr_expect_eq(sh("cmp -s %s/lc/replaced_*/model_00000004.bin %s/a.bin && "
                    "test -f %s/lc/replaced_*/DONE_00000002", d), 0,
                 "the other run's files are not in lc/replaced_<time>/ unchanged");
    cr_expect(!tc_files_equal(tu_path(d, "lc/model_00000004.bin"), tu_path(d, "a.bin")),
              "lc/model_00000004.bin is not the new run's (seed 7)");
    cr_expect(tu_exists(tu_path(d, "lc/DONE_00000004")));
    tu_remove_tree(d);
}

/* A run resumed at step 2 from the folder it exports into: the files of
 * steps 4 and 6, which it writes again, are moved into DIR/abandoned/ (and
 * the resumed run writes the same bytes again: the resume is bitwise);
 * step 2's stay. A --resume whose step is complete in the llm.c folder
 * does not write it again. */
Test(llmc_edges, a_resumed_run_moves_its_later_llmc_files_aside, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 2, 100);
    snprintf(args, sizeof args, "%s --steps 6 --save-every 2 --save-checkpoint-llmc %s/lc "
             "--checkpoint-dir %s/ck", tc_model_args(d), d, d);
    tc_run_expect(d, args, 0, "llm.c checkpoint of step 6 written");
    cr_assert_eq(sh("cp %s/lc/model_00000006.bin %s/six.bin", d), 0);
    snprintf(args, sizeof args, "%s --steps 6 --save-every 2 --save-checkpoint-llmc %s/lc "
             "--resume-llmc %s/lc/state_00000002_00000.bin", tc_model_args(d), d, d);
    tc_run_expect(d, args, 0, "moved the llm.c files of the steps after 2, which this run writes "
               "again, (6 files, steps 4 to 6) into");
    cr_expect(tc_files_equal(tu_path(d, "lc/abandoned/model_00000006.bin"), tu_path(d, "six.bin")),
              "step 6's model file is not in lc/abandoned/ unchanged");
    cr_expect(tc_files_equal(tu_path(d, "lc/model_00000006.bin"), tu_path(d, "six.bin")),
              "the resumed run's step 6 differs from the uninterrupted run's");
    cr_expect(tu_exists(tu_path(d, "lc/DONE_00000002")) && tu_exists(tu_path(d, "lc/DONE_00000006")));
    /* --resume from ck's step 6: lc's step 6 is complete, kept, not rewritten */
    snprintf(args, sizeof args, "%s --steps 6 --save-every 2 --save-checkpoint-llmc %s/lc "
             "--checkpoint-dir %s/ck --resume", tc_model_args(d), d, d);
    tc_run_expect(d, args, 0, "step 6, where this run resumes, is there already");
    cr_expect_eq(count_entries(tu_path(d, "lc/abandoned")), 6, "lc/abandoned/ changed");
    tu_remove_tree(d);
}

/* A run exporting into a folder whose lock is held (util-linux flock(1)
 * holds it while the run starts) is refused at start, exit 1, naming the
 * folder, before it writes anything; a folder given to both
 * --checkpoint-dir and --save-checkpoint-llmc is locked once. */
Test(llmc_edges, a_second_run_on_the_export_folder_is_refused, .timeout = 60)
{
    char *d = tu_tempdir(), cmd[4096], want[1024];
    tc_make_shards(d, 1, 100);
    cr_assert_eq(mkdir(tu_path(d, "lc"), 0755), 0);
    snprintf(cmd, sizeof cmd, "flock %s/lc/train_gpt.lock %s %s --steps 2 "
             "--save-checkpoint-llmc %s/lc > %s/run.out 2> %s/run.err", d, tc_bin(),
             tc_model_args(d), d, d, d);
    int rc = tu_run(cmd);
    cr_expect(rc == 1, "exit %d, expected 1", rc);
    snprintf(want, sizeof want, "--save-checkpoint-llmc %s/lc is in use by another run", d);
    cr_expect(tc_file_has(tu_path(d, "run.err"), want), "'%s' not printed", want);
    cr_expect(!tu_exists(tu_path(d, "lc/DONE_00000002")));
    char args[4096];
    snprintf(args, sizeof args, "%s --steps 2 --save-checkpoint-llmc %s/both "
             "--checkpoint-dir %s/both", tc_model_args(d), d, d);
    tc_run_expect(d, args, 0, "llm.c checkpoint of step 2 written");
    cr_expect(tu_exists(tu_path(d, "both/DONE_00000002")) &&
              tu_exists(tu_path(d, "both/step_00000002")));
    tu_remove_tree(d);
}

/* --resume-llmc from one folder, exporting into another, for 0 steps
 * (--steps = the resumed step): the export folder gets that step; before,
 * nothing was written there and the run said nothing of it. */
Test(llmc_edges, resume_llmc_into_another_folder_writes_the_resumed_step, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 2, 100);
    snprintf(args, sizeof args, "%s --steps 3 --save-checkpoint-llmc %s/lc", tc_model_args(d), d);
    tc_run_expect(d, args, 0, "llm.c checkpoint of step 3 written");
    snprintf(args, sizeof args, "%s --steps 3 --resume-llmc %s/lc --save-checkpoint-llmc %s/out",
             tc_model_args(d), d, d);
    tc_run_expect(d, args, 0, "llm.c checkpoint of step 3 written");
    cr_expect(tu_exists(tu_path(d, "out/DONE_00000003")));
    cr_expect(tc_files_equal(tu_path(d, "out/state_00000003_00000.bin"),
                             tu_path(d, "lc/state_00000003_00000.bin")),
              "the state file written differs from the one resumed");
    tu_remove_tree(d);
}

/* A move that cannot be made (DIR/abandoned is a file) stops the run at
 * start, exit 1, naming it; the files stay where they were. */
Test(llmc_edges, a_failed_move_is_an_error_and_moves_nothing, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    export_four_steps(d);
    cr_assert_eq(sh("echo x > %s/lc/abandoned", d), 0);
    snprintf(args, sizeof args, "%s --steps 4 --save-checkpoint-llmc %s/lc --resume-llmc "
             "%s/lc/state_00000002_00000.bin", tc_model_args(d), d, d);
    tc_run_expect(d, args, 1, "lc/abandoned: exists and is not a folder");
    cr_expect(tu_exists(tu_path(d, "lc/DONE_00000004")) &&
              tu_exists(tu_path(d, "lc/model_00000004.bin")), "step 4's files were moved or lost");
    tu_remove_tree(d);
}

/* Two ranks resumed from their own export folder at its newest step, for
 * 0 steps: step 4 is there already, and every rank must agree not to
 * export it (rank 0 alone deciding left rank 1 waiting in the export's
 * collectives, cut by --collective-timeout). */
Test(llmc_edges, two_ranks_agree_on_a_step_already_there, .timeout = 120)
{
    char *d = tu_tempdir(), cmd[8192];
    tc_make_shards(d, 2, 200);
    const char *mpi = "timeout 100 " TC_MPIRUN " -np 2";
    snprintf(cmd, sizeof cmd, "%s %s %s --steps 4 --save-every 2 --save-checkpoint-llmc %s/lc "
             "> %s/a.txt 2>&1", mpi, tc_bin(), tc_model_args(d), d, d);
    cr_assert_eq(tu_run(cmd), 0, "%s", tu_read_file(tu_path(d, "a.txt"), NULL));
    snprintf(cmd, sizeof cmd, "%s %s %s --steps 4 --resume-llmc %s/lc --save-checkpoint-llmc "
             "%s/lc --collective-timeout 20 > %s/b.txt 2>&1", mpi, tc_bin(), tc_model_args(d), d,
             d, d);
    int rc = tu_run(cmd);
    char *out = tu_read_file(tu_path(d, "b.txt"), NULL);
    cr_expect_eq(rc, 0, "exit %d: %s", rc, out ? out : "");
    cr_expect(out && !strstr(out, "llm.c checkpoint of step 4 written"), "step 4 written again");
    free(out);
    tu_remove_tree(d);
}
