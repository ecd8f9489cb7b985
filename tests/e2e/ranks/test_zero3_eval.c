/* tests/e2e/ranks/test_zero3_eval.c — what reads the model at --zero 3
 * besides training, through mpirun: --eval-file split over the ranks, the
 * val loss, and samples after a resume.
 *
 * References, each independent of the path under test:
 *  - --zero 0 on the same ranks (every rank holds the whole model, each
 *    scores its share of the examples, llm.c's split): at --steps 0 the
 *    parameters are the initialisation's on both, so the val loss, the
 *    eval counts and every completion's scores (the test build's
 *    TRAIN_GPT_TEST_EVAL_DUMP, one file a rank) are bitwise --zero 0's,
 *    and each rank's file lists exactly its share (rank 0 examples
 *    0..10 of 21, rank 1 11..20): the split, not every rank scoring all;
 *  - 3 ranks with 4 and 1 examples (shares 2, 2, 0 and 1, 0, 0: ranks
 *    with nothing to score pad rank 0's passes): --zero 0's counts;
 *  - one process scoring all 21 examples: the ranks' files together are
 *    its file, the same rows, their sums within 1e-6 relative (the rows
 *    are batched differently, and the cpu's matmuls round a row's sums by
 *    where it sits in a batch: 8.5e-8 seen);
 *  - after 2 steps with --eval-every 1 --val-every 1: --zero 2's logged
 *    numbers and each rank's scores bitwise (ZeRO-3 gathers ZeRO-2's
 *    parameters);
 *  - samples after a resume: --sample-every 1 at --zero 3, saved at step 2
 *    and resumed to 4, prints the samples of steps 3 and 4 an unbroken
 *    --zero 3 run prints, and an unbroken --zero 0 run's. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "eval/eval_file.h"
#include "tests/lib/cli_harness.h"
#include "tests/lib/rank_runs.h"
#include "tests/lib/test_util.h"

#define MPIRUN "timeout 120 " TC_MPIRUN
/* L=4, C=24: shards cut inside blocks at 2 and 3 ranks */
#define SHAPE "--layers 4 --channels 24"

static char *dir;

static void setup(void) { dir = rank_runs_setup(); }
static void teardown(void) { rank_runs_teardown(dir); }

TestSuite(zero3eval, .init = setup, .fini = teardown);

/* n byte examples (contexts of 1..10 tokens, completions of 1..8, labels
 * cycling) to dir/<name>.ev. */
static void write_eval(const char *name, int n, uint64_t seed)
{
    EvalSet es = {0};
    char err[512], path[600];
    for (int i = 0; i < n; i++) {
        int32_t ctx[10], comp[4][8];
        const int32_t *cp[4] = {comp[0], comp[1], comp[2], comp[3]};
        int cl = 1 + (int)(rng_next(&seed) % 10), len[4];
        for (int t = 0; t < cl; t++) ctx[t] = (int32_t)(rng_next(&seed) % 256);
        for (int c = 0; c < 4; c++) {
            len[c] = 1 + (int)(rng_next(&seed) % 8);
            for (int t = 0; t < len[c]; t++) comp[c][t] = (int32_t)(rng_next(&seed) % 256);
        }
        cr_assert_eq(eval_set_append(&es, i % 4, ctx, cl, cp, len, err, sizeof err), 0, "%s",
                     err);
    }
    snprintf(path, sizeof path, "%s/%s.ev", dir, name);
    cr_assert_eq(eval_file_write(path, &es, err, sizeof err), 0, "%s", err);
    eval_set_free(&es);
}

/* `[mpirun -np np] train_gpt <tiny model> SHAPE flags`, the log to
 * <tag>.log, stdout and stderr to <tag>.out, each evaluation's scores to
 * <tag>.dump (<tag>.dump.rank<r> with ranks). */
static int train(int np, const char *tag, const char *flags)
{
    char cmd[4096], launch[512] = "";
    if (np) snprintf(launch, sizeof launch, MPIRUN " -np %d", np);
    snprintf(cmd, sizeof cmd,
             "rm -f %s/%s.log %s/%s.dump* && TRAIN_GPT_TEST_EVAL_DUMP=%s/%s.dump %s %s %s " SHAPE
             " --weight-decay 0.1 %s --log %s/%s.log > %s/%s.out 2>&1",
             dir, tag, dir, tag, dir, tag, launch, tc_bin(), tc_model_args(dir), flags, dir, tag,
             dir, tag);
    return tu_run(cmd);
}

/* The first and last example of dir/<tag>.dump.rank<r> (-1, -1 when
 * empty); its lines. */
static int dump_examples(const char *tag, int r, int *first, int *last)
{
    char ext[32];
    snprintf(ext, sizeof ext, "dump.rank%d", r);
    char *s = rank_runs_read(dir, tag, ext);
    int lines = 0, e, c;
    *first = *last = -1;
    for (char *p = s; sscanf(p, "%d %d", &e, &c) == 2; lines++) {
        if (*first < 0) *first = e;
        *last = e;
        char *nl = strchr(p, '\n');
        if (!nl) break;
        p = nl + 1;
    }
    free(s);
    return lines;
}

/* dir/<a>.dump and dir/<b>.dump: the same examples, completions, context
 * and completion lengths, line by line, and sums and means within rel. */
static void expect_dumps_close(const char *a, const char *b, double rel)
{
    char *sa = rank_runs_read(dir, a, "dump"), *sb = rank_runs_read(dir, b, "dump");
    char *pa = sa, *pb = sb;
    int lines = 0, ia[4], ib[4], na, nb;
    double xa[2], xb[2], worst = 0;
    while (sscanf(pa, "%d %d %d %d %lf %lf%n", &ia[0], &ia[1], &ia[2], &ia[3], &xa[0], &xa[1],
                  &na) == 6 &&
           sscanf(pb, "%d %d %d %d %lf %lf%n", &ib[0], &ib[1], &ib[2], &ib[3], &xb[0], &xb[1],
                  &nb) == 6) {
        cr_expect(!memcmp(ia, ib, sizeof ia), "%s and %s: line %d names another row", a, b,
                  lines);
        for (int k = 0; k < 2; k++) {
            double d = fabs(xa[k] - xb[k]) / fabs(xb[k]);
            worst = d > worst ? d : worst;
        }
        pa += na, pb += nb, lines++;
    }
    cr_expect_eq(lines, 84, "%s and %s: %d lines compared", a, b, lines);
    cr_expect(worst <= rel, "%s and %s: worst relative difference %.3g", a, b, worst);
    cr_log_info("zero3eval: the ranks' scores against one process's: worst %.3g\n", worst);
    free(sa);
    free(sb);
}

Test(zero3eval, split_over_ranks_equals_zero0_bitwise, .timeout = 300)
{
    write_eval("e21", 21, 21);
    char flags[1024];
    /* --batch 3: 11 examples are 15 passes of 3 rows, 10 are 14: rank 1 pads one */
    const char *z[2] = {"--zero 0", "--zero 3"}, *tag[2] = {"v0", "v3"};
    for (int i = 0; i < 2; i++) {
        snprintf(flags, sizeof flags, "%s --steps 0 --batch 3 --eval-file %s/e21.ev", z[i], dir);
        cr_assert_eq(train(2, tag[i], flags), 0, "%s failed", flags);
    }
    rank_runs_expect_same_log(dir, "v0", "v3", "--steps 0, --zero 0 and 3");
    char *log = rank_runs_read(dir, "v3", "log");
    cr_expect(strstr(log, "\"val_loss\"") && strstr(log, "\"n\":21"),
              "no val loss or no 21-example eval logged:\n%s", log);
    free(log);
    static const int want[2][2] = {{0, 10}, {11, 20}};
    for (int r = 0; r < 2; r++) {
        char ext[32];
        int first, last;
        snprintf(ext, sizeof ext, "dump.rank%d", r);
        rank_runs_expect_same_file(dir, "v0", "v3", ext, "a rank's completion scores");
        int lines = dump_examples("v3", r, &first, &last);
        cr_expect(first == want[r][0] && last == want[r][1] &&
                      lines == 4 * (want[r][1] - want[r][0] + 1),
                  "rank %d scored examples %d..%d (%d lines), its share is %d..%d", r, first,
                  last, lines, want[r][0], want[r][1]);
    }
    /* one process scores the 21 the ranks share: the same rows, batched
     * differently (rank 1's start at row 44 of 3-row batches), which moves
     * the cpu's sums by rounding only */
    snprintf(flags, sizeof flags, "--zero 0 --steps 0 --batch 3 --eval-file %s/e21.ev", dir);
    cr_assert_eq(train(0, "v1", flags), 0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cat %s/v3.dump.rank0 %s/v3.dump.rank1 > %s/v3.dump", dir, dir, dir);
    cr_assert_eq(tu_run(cmd), 0);
    expect_dumps_close("v3", "v1", 1e-6);
    /* 3 ranks: shares of 2, 2, 0 and of 1, 0, 0 */
    static const int ns[2] = {4, 1};
    for (int k = 0; k < 2; k++) {
        char name[16], a[16], b[16];
        snprintf(name, sizeof name, "e%d", ns[k]);
        write_eval(name, ns[k], 100 + (uint64_t)ns[k]);
        snprintf(a, sizeof a, "t0n%d", ns[k]);
        snprintf(b, sizeof b, "t3n%d", ns[k]);
        snprintf(flags, sizeof flags, "--zero 0 --steps 0 --eval-file %s/%s.ev", dir, name);
        cr_assert_eq(train(3, a, flags), 0, "3 ranks, %d examples, --zero 0 failed", ns[k]);
        snprintf(flags, sizeof flags, "--zero 3 --steps 0 --eval-file %s/%s.ev", dir, name);
        cr_assert_eq(train(3, b, flags), 0, "3 ranks, %d examples, --zero 3 failed", ns[k]);
        rank_runs_expect_same_log(dir, a, b, "3 ranks, --steps 0");
    }
}

Test(zero3eval, eval_and_val_during_training_equal_zero2, .timeout = 300)
{
    write_eval("e21", 21, 21);
    char flags[1024];
    const char *z[2] = {"--zero 2", "--zero 3"}, *tag[2] = {"d2", "d3"};
    for (int i = 0; i < 2; i++) {
        snprintf(flags, sizeof flags, "%s --steps 2 --batch 3 --eval-every 1 --val-every 1 "
                 "--eval-file %s/e21.ev", z[i], dir);
        cr_assert_eq(train(2, tag[i], flags), 0, "%s failed", flags);
    }
    rank_runs_expect_same_log(dir, "d2", "d3", "2 steps, --eval-every 1 --val-every 1");
    rank_runs_expect_same_file(dir, "d2", "d3", "dump.rank0", "rank 0's scores at the end");
    rank_runs_expect_same_file(dir, "d2", "d3", "dump.rank1", "rank 1's scores at the end");
}

/* The samples of steps >= from in tag's stdout (each "step N | sample"
 * header through the line before the next step's line or a save's; a
 * slow step's line follows its in-step progress on the same line) into
 * <tag>.smp; its size in bytes. */
static long samples_from(const char *tag, int from)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd,
             "awk '/^step +[0-9]+ [|] sample/{f = ($2 >= %d)} /step .*loss|^saved /{f=0} f' %s/%s.out "
             "> %s/%s.smp", from, dir, tag, dir, tag);
    cr_assert_eq(tu_run(cmd), 0);
    char *t = rank_runs_read(dir, tag, "smp");
    long n = (long)strlen(t);
    free(t);
    return n;
}

Test(zero3eval, samples_after_resume_equal_an_unbroken_run, .timeout = 300)
{
    const char *s = "--sample-every 1 --sample-tokens 12 --seed 7";
    char flags[1024];
    snprintf(flags, sizeof flags, "--zero 3 --steps 4 %s", s);
    cr_assert_eq(train(2, "u3", flags), 0, "the unbroken --zero 3 run failed");
    snprintf(flags, sizeof flags, "--zero 0 --steps 4 %s", s);
    cr_assert_eq(train(2, "u0", flags), 0, "the unbroken --zero 0 run failed");
    snprintf(flags, sizeof flags, "--zero 3 --steps 2 --checkpoint-dir %s/ck --save-every 2 %s",
             dir, s);
    cr_assert_eq(train(2, "h3", flags), 0, "the first half failed");
    snprintf(flags, sizeof flags, "--zero 3 --steps 4 --checkpoint-dir %s/ck --resume %s", dir, s);
    cr_assert_eq(train(2, "r3", flags), 0, "the resume failed");
    long n = samples_from("r3", 3);
    cr_expect_gt(n, 40, "no samples of steps 3 and 4 in r3.out");
    cr_expect_eq(samples_from("u3", 3), n);
    cr_expect_eq(samples_from("u0", 3), n);
    rank_runs_expect_same_file(dir, "u3", "r3", "smp", "the samples after a resume at --zero 3");
    rank_runs_expect_same_file(dir, "u0", "r3", "smp", "--zero 0's samples and the resumed ones");
    cr_expect_gt(samples_from("h3", 1), 40, "no samples before the save");
}
