/* tests/e2e/ranks/test_rank_agreement.c — end-to-end through mpirun on the CPU MPI
 * path: ranks that disagree stop together, and a rank that stops answering
 * ends the job in bounded time.
 *
 * MPMD launches ("mpirun -np 1 A : -np 1 B") give each rank its own flags:
 *  - --batch 4 against --batch 8: exit 2 before any step, one message
 *    naming the flag and each rank's value (it trained to exit 0 before,
 *    with wrong gradient scaling);
 *  - --lr and --steps different: both named; no hang (a different --steps
 *    waited for ever before);
 *  - flags that may differ (--log, --threads) do not stop the run;
 *  - the same --train-data glob naming different files (each rank in its
 *    own working folder): stopped on the data fingerprint;
 *  - a rank that stalls (TRAIN_GPT_TEST_STALL) with --collective-timeout 2:
 *    the other rank's watchdog ends the job, status 3, well within the
 *    test's limit, naming the wait and the flag;
 *  - the non-finite abort (--max-bad-steps, TRAIN_GPT_TEST_NAN_STEP) under
 *    two ranks: every rank reaches it at the same step, the save is made
 *    once, the job exits 4 (docs' exit table), and the abort is said once,
 *    not once per rank. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

#define MPIRUN "timeout 60 " TC_MPIRUN

/* The binary by absolute path: a rank may run in another folder. */
static const char *abs_bin(void)
{
    static char bin[1200];
    char cwd[1024];
    cr_assert_not_null(getcwd(cwd, sizeof cwd));
    if (tc_bin()[0] == '/') snprintf(bin, sizeof bin, "%s", tc_bin());
    else snprintf(bin, sizeof bin, "%s/%s", cwd, tc_bin());
    return bin;
}

/* mpirun -np 1 BIN <model> a : -np 1 BIN <model> b; output to d/tag.out/.err */
static int mpmd(const char *d, const char *env, const char *a, const char *b, const char *tag)
{
    char cmd[8192];
    const char *m = tc_model_args(d), *bin = abs_bin();
    snprintf(cmd, sizeof cmd, "%s %s -np 1 %s %s %s : -np 1 %s %s %s >%s/%s.out 2>%s/%s.err",
             env ? env : "", MPIRUN, bin, m, a, bin, m, b, d, tag, d, tag);
    return tu_run(cmd);
}

Test(ranks, a_different_batch_stops_every_rank, .timeout = 90)
{
    char *d = tu_tempdir();
    tc_make_shards(d, 1, 400);
    cr_expect_eq(mpmd(d, NULL, "--steps 2 --batch 4", "--steps 2 --batch 8", "b"), 2);
    cr_expect(tc_file_has(tu_path(d, "b.err"), "the ranks were started with different flags"));
    cr_expect(tc_file_has(tu_path(d, "b.err"), "--batch: 4 on rank 0, 8 on rank 1"),
              "the message does not give each rank's --batch");
    cr_expect(!tc_file_has(tu_path(d, "b.out"), "step     1/"), "trained before stopping");
    tu_remove_tree(d);
}

Test(ranks, different_lr_and_steps_are_named_not_hung, .timeout = 90)
{
    char *d = tu_tempdir();
    tc_make_shards(d, 1, 400);
    cr_expect_eq(mpmd(d, NULL, "--steps 3 --lr 1e-3", "--steps 5 --lr 2e-3", "s"), 2,
                 "want exit 2 (not a hang: 124)");
    cr_expect(tc_file_has(tu_path(d, "s.err"), "--lr: 0.00100000005 on rank 0, 0.00200000009 on "
                          "rank 1"));
    cr_expect(tc_file_has(tu_path(d, "s.err"), "--steps: 3 on rank 0, 5 on rank 1"));
    /* flags that change nothing the ranks share may differ */
    char a[1024], b[1024];
    snprintf(a, sizeof a, "--steps 2 --log %s/r0.jsonl --threads 1", d);
    snprintf(b, sizeof b, "--steps 2 --log %s/r1.jsonl --threads 2", d);
    cr_expect_eq(mpmd(d, NULL, a, b, "ok"), 0);
    cr_expect_eq(tc_log_losses(tu_path(d, "r0.jsonl"), NULL, NULL, NULL, 8), 2, "rank 0 logs");
    tu_remove_tree(d);
}

Test(ranks, different_data_under_one_glob_is_stopped, .timeout = 90)
{
    char *d = tu_tempdir(), cmd[2048];
    /* each rank's folder holds a train_0.bin: different text, and sizes
     * (the fingerprint covers the token counts at least) */
    tc_make_shards(d, 1, 500);
    snprintf(cmd, sizeof cmd, "mkdir %s/r0 %s/r1 && mv %s/train_0.bin %s/r1/", d, d, d, d);
    cr_assert_eq(tu_run(cmd), 0);
    tc_make_shards(d, 1, 400);
    snprintf(cmd, sizeof cmd, "mv %s/train_0.bin %s/r0/", d, d);
    cr_assert_eq(tu_run(cmd), 0);
    /* -wdir is mpirun's: one per app context, before the binary */
    char full[8192];
    const char *bin = abs_bin(), *m = "--val-every 0 --val-batches 1 --layers 2 --channels 32 --heads 4 "
                    "--seq-len 16 --vocab 256 --batch 2 --device cpu --threads 1 --steps 2 "
                    "--train-data train_0.bin --val-data train_0.bin";
    snprintf(full, sizeof full, "%s -np 1 -wdir %s/r0 %s %s : -np 1 -wdir %s/r1 %s %s "
             ">%s/f.out 2>%s/f.err", MPIRUN, d, bin, m, d, bin, m, d, d);
    cr_expect_eq(tu_run(full), 1);
    cr_expect(tc_file_has(tu_path(d, "f.err"), "the ranks read different training data"));
    tu_remove_tree(d);
}

Test(ranks, a_stalled_rank_ends_the_job_within_the_timeout, .timeout = 90)
{
    char *d = tu_tempdir();
    tc_make_shards(d, 1, 400);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* rank 1 sleeps 50 s before step 2; rank 0 waits in step 2's all-reduce */
    int rc = mpmd(d, "TRAIN_GPT_TEST_STALL=1:2:50", "--steps 4 --collective-timeout 2",
                  "--steps 4 --collective-timeout 2", "w");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    cr_expect_eq(rc, 3, "exit status %d, want 3 (the collective timeout)", rc);
    cr_expect(s < 30, "the job took %.1f s to end with a 2 s timeout", s);
    cr_expect(tc_file_has(tu_path(d, "w.err"), "error: rank 0 of 2: no progress for"));
    cr_expect(tc_file_has(tu_path(d, "w.err"), "(--collective-timeout 2)"));
    tu_remove_tree(d);
}

Test(ranks, a_checkpoint_folder_not_shared_is_refused_at_start, .timeout = 90)
{
    /* Two nodes without a shared file system, made here by giving each rank
     * its own working folder and a relative --checkpoint-dir: the flag is the
     * same text on both, the folders differ. Without the check the run
     * trained to its first save, where rank 1's state file went to a folder
     * rank 0 never sees. */
    char *d = tu_tempdir(), cmd[2048], full[8192];
    tc_make_shards(d, 1, 400);
    snprintf(cmd, sizeof cmd, "mkdir %s/n0 %s/n1", d, d);
    cr_assert_eq(tu_run(cmd), 0);
    const char *bin = abs_bin(), *m = tc_model_args(d);
    snprintf(full, sizeof full, "%s -np 1 -wdir %s/n0 %s %s --steps 2 --checkpoint-dir ck : "
             "-np 1 -wdir %s/n1 %s %s --steps 2 --checkpoint-dir ck >%s/c.out 2>%s/c.err",
             MPIRUN, d, bin, m, d, bin, m, d, d);
    cr_expect_eq(tu_run(full), 1, "want exit 1");
    cr_expect(tc_file_has(tu_path(d, "c.err"), "--checkpoint-dir ck is not one folder shared "
                          "by every rank: rank 1 (host "), "the message does not name rank 1");
    cr_expect(!tc_file_has(tu_path(d, "c.out"), "step     1/"), "trained before stopping");
    /* the folders this run made are gone again */
    cr_expect(access(tu_path(d, "n0/ck"), F_OK) != 0, "n0/ck left behind");
    cr_expect(access(tu_path(d, "n1/ck"), F_OK) != 0, "n1/ck left behind");
    /* one folder for both (the same path from both working folders) trains */
    snprintf(full, sizeof full, "%s -np 1 -wdir %s/n0 %s %s --steps 2 --checkpoint-dir %s/ck : "
             "-np 1 -wdir %s/n1 %s %s --steps 2 --checkpoint-dir %s/ck >%s/s.out 2>%s/s.err",
             MPIRUN, d, bin, m, d, d, bin, m, d, d, d);
    cr_expect_eq(tu_run(full), 0, "a shared folder: want exit 0");
    cr_expect(tc_file_has(tu_path(d, "ck/step_00000002/COMPLETE"), ""), "no save in the shared folder");
    tu_remove_tree(d);
}

Test(ranks, a_file_error_on_one_rank_is_named_not_hung, .timeout = 90)
{
    /* --init-from at a path each node holds its own copy of (working folders
     * again): rank 1's copy has 3 layers where --layers asks for 2, an exit
     * 2 error found from the file. Rank 1 alone called the every-rank exit:
     * it waited silently in MPI_Finalize while rank 0 waited in its next
     * collective, until --collective-timeout (600 s by default). */
    char *d = tu_tempdir(), cmd[4096], full[8192];
    tc_make_shards(d, 1, 400);
    const char *bin = abs_bin(), *m = tc_model_args(d);
    for (int l = 2; l <= 3; l++) {
        snprintf(cmd, sizeof cmd, "mkdir -p %s/n%d && %s %s --layers %d --steps 0 --save "
                 "%s/n%d/init.bin >/dev/null 2>&1", d, l - 2, bin, m, l, d, l - 2);
        cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    }
    snprintf(full, sizeof full, "%s -np 1 -wdir %s/n0 %s %s --steps 2 --init-from init.bin "
             "--collective-timeout 30 : -np 1 -wdir %s/n1 %s %s --steps 2 --init-from init.bin "
             "--collective-timeout 30 >%s/i.out 2>%s/i.err", MPIRUN, d, bin, m, d, bin, m, d, d);
    int rc = tu_run(full);
    cr_expect_eq(rc, 2, "exit %d, want 2 (3: the timeout; 124: a hang)", rc);
    cr_expect(tc_file_has(tu_path(d, "i.err"), "error: rank 1 of 2: --layers 2: contradicts the "
                          "shape of init.bin"), "rank 1's error is not printed");
    cr_expect(!tc_file_has(tu_path(d, "i.err"), "no progress for"), "ended by the watchdog");
    tu_remove_tree(d);
}

/* How many times needle occurs in the file. */
static int occurrences(const char *path, const char *needle)
{
    char *s = tu_read_file(path, NULL);
    int n = 0;
    for (const char *p = s ? strstr(s, needle) : NULL; p; p = strstr(p + 1, needle)) n++;
    free(s);
    return n;
}

Test(ranks, nonfinite_abort_is_said_once, .timeout = 120)
{
    char *d = tu_tempdir(), cmd[8192];
    tc_make_shards(d, 1, 400);
    /* NaN gradients from step 2: steps 2 and 3 skipped, then the abort */
    snprintf(cmd, sizeof cmd, "TRAIN_GPT_TEST_NAN_STEP=2-100 timeout 120 " TC_MPIRUN " -np 2 "
             "-x TRAIN_GPT_TEST_NAN_STEP %s %s --steps 8 --max-bad-steps 2 --checkpoint-dir %s/ck "
             ">%s/n.out 2>%s/n.err", tc_bin(), tc_model_args(d), d, d, d);
    cr_assert_eq(tu_run(cmd), 4, "a non-finite abort under 2 ranks: exit 4");
    const char *err = tu_path(d, "n.err");
    cr_expect_eq(occurrences(err, "2 consecutive steps (up to step 3) had a non-finite loss"), 1,
                 "the abort must be said once, by rank 0");
    cr_expect_eq(occurrences(err, "aborted after step 3: step 3 is saved in "), 1,
                 "what was kept must be said once");
    cr_expect_eq(access(tu_path(d, "ck/step_00000003/COMPLETE"), F_OK), 0);
    cr_expect_eq(access(tu_path(d, "ck/step_00000003/state_r00001.bin"), F_OK), 0);
    tu_remove_tree(d);
}
