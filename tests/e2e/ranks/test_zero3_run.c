/* tests/e2e/ranks/test_zero3_run.c — --zero 3 runs (parameters sharded and
 * all-gathered block by block before use) on the cpu backend through
 * mpirun.
 *
 * References, each independent of the path under test:
 *  - --zero 2 on the same ranks (the full parameters on every rank, one
 *    all-gather a step): the gathered parameters (blocking or prefetched) are the bits ZeRO-2's
 *    all-gather gives and the gradients the same reduce-scatters, so the
 *    model files and the logged losses and gradient norms are bitwise equal,
 *    on 2 and 4 ranks (shard boundaries inside blocks, the vector padded),
 *    with --grad-accum 2 and validation too; one process at --zero 3 against
 *    --zero 0: the model file and --dump-grads byte for byte;
 *  - recompute 0, 1, 2 and selective at --zero 3, and --offload checkpoints:
 *    model files bitwise equal to --zero 2's;
 *  - the planner: each run's arenas' high-water and its counted collectives
 *    equal the plan on every rank (a rank that differs says so on stderr),
 *    and the counts equal a hand count from GPT-2's shapes (gathered N,
 *    re-gathered L - 2 blocks, reduce-scattered N); at L=48 C=24 the total is
 *    within 5% of 3N;
 *  - a resume from a --zero 3 save against a run that never stopped:
 *    bitwise equal; a resume at --zero 2 or on 4 ranks refused by name;
 *  - samples (--sample-every, --generate) and --eval-file scores: the text
 *    and the counts of --zero 2's run, 2 ranks. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_file.h"
#include "tests/lib/cli_harness.h"
#include "tests/lib/rank_runs.h"
#include "tests/lib/test_util.h"

#define MPIRUN "timeout 120 " TC_MPIRUN
/* L=4, C=24: 35472 parameters; shards of 17792 (2 ranks) and 8896 (4) */
#define SHAPE "--layers 4 --channels 24"
#define N_PARAMS 35472
#define BLOCK (12 * 24 * 24 + 13 * 24)

static char *dir;

static void setup(void) { dir = rank_runs_setup(); }
static void teardown(void) { rank_runs_teardown(dir); }

TestSuite(zero3run, .init = setup, .fini = teardown);

/* `mpirun -np np train_gpt <tiny model> SHAPE --steps 3 flags` (np 0: no
 * mpirun), the model to <tag>.bin, the log to <tag>.log, stdout and stderr
 * to <tag>.out; a later --layers or --steps in flags wins. */
static int train(int np, const char *tag, const char *flags)
{
    return rank_runs_train(dir, np, tag, SHAPE, flags);
}

static char *slurp(const char *tag, const char *ext) { return rank_runs_read(dir, tag, ext); }

static void expect_same_file(const char *a, const char *b, const char *ext, const char *what)
{
    rank_runs_expect_same_file(dir, a, b, ext, what);
}

static void expect_same_log_numbers(const char *a, const char *b, const char *what)
{
    rank_runs_expect_same_log(dir, a, b, what);
}

/* The arenas' high-water and the counted collectives equal the plan (rank
 * 0's lines; any other rank's difference is on stderr); *ga, *rg, *rs:
 * the bytes counted a micro-batch. */
static void expect_plan_met(const char *tag, size_t *ga, size_t *rg, size_t *rs)
{
    rank_runs_expect_plan_met(dir, tag);
    char *out = slurp(tag, "out");
    size_t pga, prg, prs, nb;
    const char *c = strstr(out, "communication (--zero 3), per micro-batch over ");
    cr_assert_not_null(c, "%s: no communication line in:\n%s", tag, out);
    cr_assert_eq(sscanf(c, "communication (--zero 3), per micro-batch over %*d: all-gathered %zu "
                        "B, re-gathered %zu B, reduce-scattered %zu B = %*f x the parameter bytes "
                        "(%zu B); planned %zu, %zu, %zu B", ga, rg, rs, &nb, &pga, &prg, &prs),
                 7, "%s", c);
    cr_expect(*ga == pga && *rg == prg && *rs == prs, "%s: counted %zu %zu %zu, planned %zu %zu %zu",
              tag, *ga, *rg, *rs, pga, prg, prs);
    free(out);
}

Test(zero3run, equals_zero2_bitwise_on_2_and_4_ranks, .timeout = 300)
{
    static const int nps[] = {2, 4};
    for (int i = 0; i < 2; i++) {
        char a[16], b[16], what[64];
        snprintf(a, sizeof a, "z2n%d", nps[i]);
        snprintf(b, sizeof b, "z3n%d", nps[i]);
        snprintf(what, sizeof what, "%d ranks", nps[i]);
        cr_assert_eq(train(nps[i], a, "--zero 2"), 0, "%s: --zero 2 failed", what);
        cr_assert_eq(train(nps[i], b, "--zero 3"), 0, "%s: --zero 3 failed", what);
        expect_same_file(a, b, "bin", what);
        expect_same_log_numbers(a, b, what);
        size_t ga, rg, rs;
        expect_plan_met(b, &ga, &rg, &rs);
        /* by hand: every parameter gathered before the head, all blocks but
         * the two in the buffers at the head after it, every gradient
         * reduce-scattered; fp32 */
        cr_expect_eq(ga, (size_t)N_PARAMS * 4);
        cr_expect_eq(rg, (size_t)2 * BLOCK * 4);
        cr_expect_eq(rs, (size_t)N_PARAMS * 4);
    }
    /* one process: the shard is the whole vector, copied not gathered */
    char flags[1024];
    snprintf(flags, sizeof flags, "--zero 0 --dump-grads %s/o0.grads", dir);
    cr_assert_eq(train(0, "o0", flags), 0);
    snprintf(flags, sizeof flags, "--zero 3 --dump-grads %s/o3.grads", dir);
    cr_assert_eq(train(0, "o3", flags), 0);
    expect_same_file("o0", "o3", "bin", "one process");
    expect_same_file("o0", "o3", "grads", "one process");
}

Test(zero3run, grad_accum_and_validation_equal_zero2, .timeout = 200)
{
    const char *f = "--grad-accum 2 --val-every 1";
    char flags[256];
    snprintf(flags, sizeof flags, "--zero 2 %s", f);
    cr_assert_eq(train(2, "a2", flags), 0);
    snprintf(flags, sizeof flags, "--zero 3 %s", f);
    cr_assert_eq(train(2, "a3", flags), 0);
    expect_same_file("a2", "a3", "bin", "--grad-accum 2");
    expect_same_log_numbers("a2", "a3", "--grad-accum 2 --val-every 1");
    char *log = slurp("a3", "log");
    cr_expect(strstr(log, "\"val_loss\""), "no val loss logged:\n%s", log);
    free(log);
}

Test(zero3run, recompute_modes_bitwise, .timeout = 300)
{
    cr_assert_eq(train(2, "m2", "--zero 2 --recompute 0"), 0);
    static const char *modes[] = {"0", "1", "2", "selective"};
    for (int i = 0; i < 4; i++) {
        char flags[64], tag[16];
        snprintf(flags, sizeof flags, "--zero 3 --recompute %s", modes[i]);
        snprintf(tag, sizeof tag, "m3%d", i);
        cr_assert_eq(train(2, tag, flags), 0, "%s failed", flags);
        expect_same_file("m2", tag, "bin", flags);
        size_t ga, rg, rs;
        expect_plan_met(tag, &ga, &rg, &rs);
    }
    /* the stored block inputs in the host tier, and AdamW there (the
     * deferred update settled before the gathers): the same bits */
    static const char *offs[] = {"--zero 3 --recompute 1 --offload checkpoints",
                                 "--zero 3 --recompute 0 --offload optimizer",
                                 "--zero 3 --recompute 1 --offload checkpoints,optimizer"};
    for (int i = 0; i < 3; i++) {
        char tag[16];
        snprintf(tag, sizeof tag, "m3off%d", i);
        cr_assert_eq(train(2, tag, offs[i]), 0, "%s failed", offs[i]);
        expect_same_file("m2", tag, "bin", offs[i]);
        expect_same_log_numbers("m2", tag, offs[i]);
        size_t ga, rg, rs;
        expect_plan_met(tag, &ga, &rg, &rs);
    }
    /* one process, where the update is not settled by gpt_update: --zero 0's */
    cr_assert_eq(train(0, "p0off", "--zero 0 --offload optimizer"), 0);
    cr_assert_eq(train(0, "p3off", "--zero 3 --offload optimizer"), 0);
    expect_same_file("p0off", "p3off", "bin", "one process, --offload optimizer");
}

/* --zero-prefetch off gathers every block when it is needed: the same
 * bits, the same counted collectives, and the wait the summary prints is
 * a time (>= 0) over the run's micro-batches, labelled off or on. */
Test(zero3run, prefetch_off_same_bits_and_wait_reported, .timeout = 200)
{
    static const char *mode[2] = {"on", "off"};
    size_t c[2][3];
    for (int i = 0; i < 2; i++) {
        char flags[128], tag[16], want[64];
        snprintf(flags, sizeof flags, "--zero 3 --recompute 1 --zero-prefetch %s", mode[i]);
        snprintf(tag, sizeof tag, "pf%s", mode[i]);
        cr_assert_eq(train(2, tag, flags), 0, "%s failed", flags);
        expect_plan_met(tag, &c[i][0], &c[i][1], &c[i][2]);
        char *out = slurp(tag, "out");
        const char *w = strstr(out, "communication (--zero 3): waited ");
        double per, total;
        int n;
        cr_assert_not_null(w, "%s: no wait line in:\n%s", tag, out);
        cr_expect_eq(sscanf(w, "communication (--zero 3): waited %lf ms a micro-batch for "
                            "parameter gathers (%lf ms over %d;", &per, &total, &n), 3, "%s", w);
        cr_expect(per >= 0 && total >= per && n == 3, "%s", w);
        snprintf(want, sizeof want, "--zero-prefetch %s)", mode[i]);
        cr_expect(strstr(w, want), "want '%s' in %s", want, w);
        free(out);
    }
    expect_same_file("pfon", "pfoff", "bin", "--zero-prefetch off");
    expect_same_log_numbers("pfon", "pfoff", "--zero-prefetch off");
    cr_expect(!memcmp(c[0], c[1], sizeof c[0]), "the counted collectives differ");
}

/* A small GQA Llama (untied head in wpe's place, no wpe): the blocks read
 * the gather buffers as GPT-2's do, the head gathered with wte and LN_f;
 * --qkv-bias --qk-norm --lm-head tied once, for the bias and the norms' slices
 * and a tied head (wpe's slot empty). */
Test(zero3run, llama_equals_zero2_bitwise, .timeout = 300)
{
    static const char *arch = "--arch llama --layers 4 --channels 32 --heads 4 --kv-heads 2 "
                              "--ffn 64";
    static const char *extra[] = {"--recompute 0", "--recompute 1",
                                  "--recompute 1 --qkv-bias --qk-norm --lm-head tied"};
    for (int i = 0; i < 3; i++) {
        char flags[512], a[16], b[16];
        snprintf(a, sizeof a, "l2r%d", i);
        snprintf(b, sizeof b, "l3r%d", i);
        snprintf(flags, sizeof flags, "%s %s --zero 2", arch, extra[i]);
        cr_assert_eq(train(2, a, flags), 0, "%s failed", flags);
        snprintf(flags, sizeof flags, "%s %s --zero 3", arch, extra[i]);
        cr_assert_eq(train(2, b, flags), 0, "%s failed", flags);
        expect_same_file(a, b, "bin", flags);
        expect_same_log_numbers(a, b, flags);
        size_t ga, rg, rs;
        expect_plan_met(b, &ga, &rg, &rs);
        cr_expect_eq(ga, rs, "%s: gathered %zu B, reduce-scattered %zu B", flags, ga, rs);
    }
    /* the qkv bias's gradient through ZeRO-2's one-block buffer: --zero 1's
     * bits (full gradients, one all-reduce) */
    char flags[512];
    snprintf(flags, sizeof flags, "%s %s --zero 1", arch, extra[2]);
    cr_assert_eq(train(2, "l1r2", flags), 0, "%s failed", flags);
    expect_same_file("l1r2", "l2r2", "bin", "--qkv-bias at --zero 1 and 2");
}

/* Where wte/wpe/LN_f and two blocks are a small part of the model (L=48,
 * C=24: 353,328 parameters, 6,576 outside the blocks) a micro-batch moves
 * within 5% of 3x the parameter bytes. */
Test(zero3run, communication_within_5_percent_of_3x, .timeout = 200)
{
    cr_assert_eq(train(2, "deep", "--zero 3 --layers 48 --steps 1"), 0);
    size_t ga, rg, rs, n = 48 * (size_t)BLOCK + 256 * 24 + 16 * 24 + 2 * 24;
    expect_plan_met("deep", &ga, &rg, &rs);
    cr_expect_eq(ga, n * 4);
    cr_expect_eq(rg, 46 * (size_t)BLOCK * 4);
    cr_expect_eq(rs, n * 4);
    double x = (double)(ga + rg + rs) / (3.0 * n * 4);
    cr_expect(x > 0.95 && x <= 1.0, "%.4f of 3x the parameter bytes", x);
    cr_log_info("zero3run: L=48 C=24, 2 ranks: %zu + %zu + %zu B = %.4f of 3x %zu B\n", ga, rg,
                rs, x, n * 4);
}

Test(zero3run, resume_is_bitwise_and_refusals_name_the_flag, .timeout = 200)
{
    char flags[1024];
    cr_assert_eq(train(2, "s4", "--zero 3 --steps 4"), 0);
    snprintf(flags, sizeof flags, "--zero 3 --checkpoint-dir %s/ckr --save-every 3", dir);
    cr_assert_eq(train(2, "r3", flags), 0);
    snprintf(flags, sizeof flags, "--zero 3 --checkpoint-dir %s/ckr --resume --steps 4", dir);
    cr_assert_eq(train(2, "r4", flags), 0, "the resume failed");
    expect_same_file("r4", "s4", "bin", "resumed at step 3");
    static const struct {
        int np;
        const char *flag, *want;
    } refused[] = {
        {2, "--zero 2", "--zero: the save has 3, this run 2"},
        {4, "--zero 3", "world size (ranks): the save has 2, this run 4"},
    };
    for (int i = 0; i < 2; i++) {
        snprintf(flags, sizeof flags, "%s --checkpoint-dir %s/ckr --resume --steps 5",
                 refused[i].flag, dir);
        cr_expect_neq(train(refused[i].np, "no", flags), 0, "ran: %s", refused[i].want);
        char *out = slurp("no", "out");
        cr_expect(strstr(out, refused[i].want), "want '%s' in:\n%s", refused[i].want, out);
        free(out);
    }
}

/* The sample text of tag's stdout (each "| sample" header through the line
 * before the next step's line) into <tag>.smp; its size in bytes. */
static long sample_text(const char *tag)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd,
             "awk '/[|] sample/{f=1} /step .*loss/{f=0} f' %s/%s.out > %s/%s.smp", dir, tag, dir,
             tag);
    cr_assert_eq(tu_run(cmd), 0);
    char *t = slurp(tag, "smp");
    long n = (long)strlen(t);
    free(t);
    return n;
}

Test(zero3run, samples_and_eval_scores_equal_zero2, .timeout = 300)
{
    /* 21 byte examples (the ranks' shares differ at --zero 2: 11 and 10),
     * contexts of 1..10 tokens, completions of 1..8, labels cycling */
    EvalSet es = {0};
    char err[512], path[600], flags[1024];
    unsigned long long seed = 12345;
#define NEXT (seed = seed * 6364136223846793005ULL + 1442695040888963407ULL, (int)(seed >> 33))
    for (int i = 0; i < 21; i++) {
        int32_t ctx[10], comp[4][8];
        const int32_t *cp[4] = {comp[0], comp[1], comp[2], comp[3]};
        int cl = 1 + NEXT % 10, len[4];
        for (int t = 0; t < cl; t++) ctx[t] = NEXT % 256;
        for (int c = 0; c < 4; c++) {
            len[c] = 1 + NEXT % 8;
            for (int t = 0; t < len[c]; t++) comp[c][t] = NEXT % 256;
        }
        cr_assert_eq(eval_set_append(&es, i % 4, ctx, cl, cp, len, err, sizeof err), 0, "%s",
                     err);
    }
#undef NEXT
    snprintf(path, sizeof path, "%s/ev.bin", dir);
    cr_assert_eq(eval_file_write(path, &es, err, sizeof err), 0, "%s", err);
    eval_set_free(&es);
    const char *z[2] = {"--zero 2", "--zero 3"}, *tag[2] = {"e2", "e3"};
    for (int i = 0; i < 2; i++) {
        snprintf(flags, sizeof flags, "%s --eval-file %s --eval-every 1 --sample-every 1 "
                 "--sample-tokens 12 --seed 7", z[i], path);
        cr_assert_eq(train(2, tag[i], flags), 0, "%s failed", flags);
    }
    expect_same_file("e2", "e3", "bin", "--eval-file --sample-every");
    expect_same_log_numbers("e2", "e3", "--eval-file --sample-every");
    char *log = slurp("e3", "log");
    cr_expect(strstr(log, "\"hellaswag\"") && strstr(log, "\"n\":21"),
              "no 21-example eval logged:\n%s", log);
    free(log);
    long n = sample_text("e3");
    cr_expect_gt(n, 40, "no samples in e3.out");
    cr_expect_eq(sample_text("e2"), n);
    expect_same_file("e2", "e3", "smp", "the samples");
    /* --generate: a plain model in each process; --zero 3 is accepted and
     * changes nothing */
    for (int i = 0; i < 2; i++) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, MPIRUN " -np 2 %s %s " SHAPE " %s --generate 16 --seed 7 "
                 "> %s/g%d.out 2>&1", tc_bin(), tc_model_args(dir), z[i], dir, i);
        cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    }
    expect_same_file("g0", "g1", "out", "--generate");
    /* a Llama model's samples: its decode gathers block by block too */
    static const char *llama = "--arch llama --layers 4 --channels 32 --heads 4 --kv-heads 2 "
                               "--ffn 64 --sample-every 1 --sample-tokens 12 --seed 7";
    const char *lt[2] = {"ls2", "ls3"};
    for (int i = 0; i < 2; i++) {
        snprintf(flags, sizeof flags, "%s %s", llama, z[i]);
        cr_assert_eq(train(2, lt[i], flags), 0, "%s failed", flags);
    }
    n = sample_text("ls3");
    cr_expect_gt(n, 40, "no samples in ls3.out");
    cr_expect_eq(sample_text("ls2"), n);
    expect_same_file("ls2", "ls3", "smp", "a Llama model's samples");
    expect_same_file("ls2", "ls3", "bin", "a Llama model with samples");
}
