/* tests/e2e/ranks/test_dist.c — data parallelism on the cpu backend, end to end
 * through mpirun (MPI collectives on host buffers), plus ZeRO-1's shard
 * arithmetic in one process.
 *
 * References, each independent of the path under test:
 *  - 2 ranks x B=1 against 1 process x B=2 (no launcher, no MPI): the same
 *    global batch and initial model; per-step losses and val losses within
 *    1e-5 relative, final parameters within 1e-5 (max abs difference over
 *    max abs value);
 *  - --zero 1 against --zero 0 on 2 and 3 ranks, with weight decay, clipping
 *    and gradient accumulation, where a shard boundary cuts a 2-D tensor
 *    and the vector is padded: parameters within 1e-6 the same way; and
 *    on 2 ranks for --arch llama (grouped-query, untied head; its options;
 *    --head-dim 16 at C 32 with qk-norm, tied);
 *  - recompute 0 against 1 on 2 ranks: model files bitwise equal (cmp);
 *  - mpirun -np 1 against no launcher: model files bitwise equal;
 *  - errors: --total-batch that does not divide (exit 2, message), a shard
 *    too small for world x B x T + 1 (rejected at start), a token fault on
 *    rank 1 only (the job exits non-zero with rank 1 named, no hang). */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/shard.h"
#include "interop/model_file.h"
#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

/* mpirun as the container allows it (train_cli.h) */
#define MPIRUN "timeout 120 " TC_MPIRUN
#define TINY                                                                                   \
    "--layers 2 --channels 32 --heads 4 --seq-len 8 --vocab 64 --threads 1 --lr 1e-3 "          \
    "--weight-decay 0.1 --steps 5"

static char *dir;

static void write_tokens(const char *name, size_t n, uint64_t seed, long bad_at)
{
    int *t = malloc(n * sizeof(int));
    uint16_t *u = malloc(n * sizeof(uint16_t));
    tu_random_tokens(t, n, 64, seed);
    for (size_t i = 0; i < n; i++) u[i] = (uint16_t)t[i];
    if (bad_at >= 0) u[bad_at] = 100; /* outside the vocabulary of 64 */
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert_eq(shard_write(path, u, n, err, sizeof err), 0, "%s", err);
    free(t);
    free(u);
}

static void setup(void)
{
    dir = tu_tempdir();
    write_tokens("train.bin", 4000, 1, -1);
    write_tokens("val.bin", 600, 2, -1);
}

static void teardown(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    tu_run(cmd);
    free(dir);
}

/* Run `launcher ./train_gpt TINY <data> flags`; stdout and stderr go to
 * dir/<tag>.out and .err, the log to <tag>.log, the model to <tag>.bin
 * (those of an earlier run of the tag removed first: a new run refuses
 * to replace them). */
static int train(const char *launcher, const char *tag, const char *flags)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "rm -f %s/%s.log %s/%s.bin && %s ./train_gpt " TINY " --train-data %s/train.bin --val-data %s/val.bin "
             "--val-every 2 --val-batches 2 --log %s/%s.log --save %s/%s.bin %s "
             "< /dev/null > %s/%s.out 2> %s/%s.err",
             dir, tag, dir, tag, launcher, dir, dir, dir, tag, dir, tag, flags, dir, tag, dir,
             tag);
    return tu_run(cmd);
}

static char *slurp(const char *tag, const char *ext)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.%s", dir, tag, ext);
    char *s = tu_read_file(path, NULL);
    cr_assert_not_null(s, "%s missing", path);
    return s;
}

/* Train losses and val losses from a --log file; returns how many of each. */
static void read_log(const char *tag, double *loss, int *nloss, double *val, int *nval)
{
    char *s = slurp(tag, "log");
    *nloss = *nval = 0;
    for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *j = cJSON_Parse(line);
        cr_assert_not_null(j, "%s.log: bad JSON line '%s'", tag, line);
        cJSON *l = cJSON_GetObjectItem(j, "loss"), *v = cJSON_GetObjectItem(j, "val_loss");
        if (l && *nloss < 64) loss[(*nloss)++] = l->valuedouble;
        if (v && *nval < 64) val[(*nval)++] = v->valuedouble;
        cJSON_Delete(j);
    }
    free(s);
}

static float *load_model(const char *tag, size_t *n)
{
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/%s.bin", dir, tag);
    GPTConfig cfg;
    float *p = NULL;
    cr_assert_eq(model_file_load(path, &cfg, &p, err, sizeof err), 0, "%s", err);
    *n = config_num_params(&cfg);
    return p;
}

/* max |a - b| / max |b| over two model files. */
static double params_rel_diff(const char *a, const char *b)
{
    size_t na, nb;
    float *x = load_model(a, &na), *y = load_model(b, &nb);
    cr_assert_eq(na, nb);
    double num = 0, den = 0;
    for (size_t i = 0; i < na; i++) {
        num = fmax(num, fabs((double)x[i] - y[i]));
        den = fmax(den, fabs((double)y[i]));
    }
    free(x);
    free(y);
    return num / den;
}

static void expect_same_losses(const char *a, const char *b, double tol, int check_val)
{
    double la[64], lb[64], va[64], vb[64];
    int nla, nlb, nva, nvb;
    read_log(a, la, &nla, va, &nva);
    read_log(b, lb, &nlb, vb, &nvb);
    cr_assert_eq(nla, 5, "%s: %d step losses logged, want 5", a, nla);
    cr_assert_eq(nlb, 5, "%s: %d step losses logged, want 5", b, nlb);
    cr_assert_eq(nva, nvb);
    cr_assert_geq(nva, 3);
    if (!check_val) nva = 0;
    for (int i = 0; i < 5; i++)
        cr_expect(fabs(la[i] - lb[i]) <= tol * fabs(lb[i]), "step %d: loss %.9f (%s) vs %.9f (%s)",
                  i + 1, la[i], a, lb[i], b);
    for (int i = 0; i < nva; i++)
        cr_expect(fabs(va[i] - vb[i]) <= tol * fabs(vb[i]), "val %d: %.9f (%s) vs %.9f (%s)", i,
                  va[i], a, vb[i], b);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

TestSuite(dist, .init = setup, .fini = teardown);

Test(dist, two_ranks_b1_equal_one_process_b2)
{
    cr_assert_eq(train("", "one", "--batch 2"), 0, "one process failed");
    cr_assert_eq(train(MPIRUN " -np 2", "two", "--batch 1"), 0, "mpirun -np 2 failed");
    expect_same_losses("two", "one", 1e-5, 1);
    double d = params_rel_diff("two", "one");
    cr_expect(d <= 1e-5, "final parameters differ by %.3g relative", d);
    /* rank 0 alone prints and logs; the ranks agree bit for bit */
    char *out = slurp("two", "out");
    cr_expect(strstr(out, "data parallel: 2 ranks, collectives mpi | zero 0 | 16 tokens per step"),
              "%s", out);
    cr_expect_eq(count(out, "step     1/5"), 1, "stdout must come from rank 0 only:\n%s", out);
    cr_expect(strstr(out, "replicas: parameters identical on all 2 ranks"), "%s", out);
    /* the step line says which figures are the job's and which one rank's
     * (before: "| 2000 tok/s | 1.2 GFLOP/s |", unlabelled) */
    cr_expect(strstr(out, " tok/s (all ranks) | ") && strstr(out, "FLOP/s per rank | elapsed"),
              "%s", out);
    free(out);
    out = slurp("one", "out");
    cr_expect(!strstr(out, "(all ranks)") && !strstr(out, "per rank | elapsed"), "%s", out);
    free(out);
}

Test(dist, zero1_equals_zero0)
{
    /* C=24: 17760 parameters; 2 ranks: shards of 8896 (a multiple of 64),
     * the boundary inside layer 0's fc weight, 32 elements of padding. */
    const char *f = "--channels 24 --batch 1 --grad-accum 2 --grad-clip 0.5";
    char flags[256];
    for (int np = 2; np <= 3; np++) {
        char launcher[512];
        snprintf(launcher, sizeof launcher, MPIRUN " -np %d", np);
        snprintf(flags, sizeof flags, "%s --zero 0", f);
        cr_assert_eq(train(launcher, "z0", flags), 0, "np %d --zero 0 failed", np);
        snprintf(flags, sizeof flags, "%s --zero 1", f);
        cr_assert_eq(train(launcher, "z1", flags), 0, "np %d --zero 1 failed", np);
        double d = params_rel_diff("z1", "z0");
        cr_expect(d <= 1e-6, "np %d: --zero 1 vs 0: parameters differ by %.3g relative", np, d);
        expect_same_losses("z1", "z0", 1e-6, 1);
        char *out = slurp("z1", "out"), want[160];
        size_t shard = np == 2 ? 8896 : 5952;
        snprintf(want, sizeof want, "zero 1: optimizer shard %zu elements per rank over %d ranks",
                 shard, np);
        cr_expect(strstr(out, want), "want '%s' in:\n%s", want, out);
        snprintf(want, sizeof want, "padded by %zu elements", np * shard - 17760);
        cr_expect(strstr(out, want), "want '%s' in:\n%s", want, out);
        cr_expect(strstr(out, "replicas: parameters identical"), "%s", out);
        free(out);
    }
}

/* The Llama family (grouped-query, untied head) under ZeRO-1 on 2 ranks:
 * the shard arithmetic reads only the flat parameter vector, so --zero 1
 * is --zero 0 within the same 1e-6, losses and parameters; with the
 * family's options too (the qkv bias and the q/k norm weights are more
 * slots of that vector). */
static void llama_zero(const char *f, const char *z0, const char *z1)
{
    char flags[512];
    snprintf(flags, sizeof flags, "%s --zero 0", f);
    cr_assert_eq(train(MPIRUN " -np 2", z0, flags), 0, "llama --zero 0 failed");
    snprintf(flags, sizeof flags, "%s --zero 1", f);
    cr_assert_eq(train(MPIRUN " -np 2", z1, flags), 0, "llama --zero 1 failed");
    double d = params_rel_diff(z1, z0);
    cr_expect(d <= 1e-6, "llama --zero 1 vs 0: parameters differ by %.3g relative", d);
    expect_same_losses(z1, z0, 1e-6, 1);
    char *out = slurp(z1, "out");
    cr_expect(strstr(out, "zero 1: optimizer shard"), "%s", out);
    cr_expect(strstr(out, "replicas: parameters identical"), "%s", out);
    free(out);
}

Test(dist, llama_zero1_equals_zero0)
{
    llama_zero("--arch llama --kv-heads 2 --ffn 64 --lm-head untied --batch 1 --grad-accum 2 "
               "--grad-clip 0.5", "lz0", "lz1");
}

Test(dist, llama_options_zero1_equals_zero0)
{
    llama_zero("--arch llama --kv-heads 2 --ffn 64 --lm-head untied --batch 1 --grad-accum 2 "
               "--grad-clip 0.5 --qkv-bias --qk-norm --rope-scaling 8 --rope-original-max-pos 16",
               "lqz0", "lqz1");
}

/* heads of 16 at C 32 (--head-dim: attention 64 wide, as Qwen3's) */
Test(dist, llama_head_dim_zero1_equals_zero0)
{
    llama_zero("--arch llama --kv-heads 2 --ffn 64 --lm-head tied --batch 1 --grad-accum 2 "
               "--grad-clip 0.5 --head-dim 16 --qk-norm", "lhz0", "lhz1");
}

Test(dist, recompute_bitwise_under_two_ranks)
{
    cr_assert_eq(train(MPIRUN " -np 2", "r0", "--batch 2 --recompute 0"), 0);
    cr_assert_eq(train(MPIRUN " -np 2", "r1", "--batch 2 --recompute 1"), 0);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "cmp -s %s/r0.bin %s/r1.bin", dir, dir);
    cr_expect_eq(tu_run(cmd), 0, "recompute 0 and 1 under 2 ranks: model files differ");
}

Test(dist, one_rank_under_mpirun_equals_no_launcher)
{
    cr_assert_eq(train("", "plain", "--batch 2 --zero 1"), 0);
    cr_assert_eq(train(MPIRUN " -np 1", "np1", "--batch 2 --zero 1"), 0);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "cmp -s %s/plain.bin %s/np1.bin", dir, dir);
    cr_expect_eq(tu_run(cmd), 0, "mpirun -np 1 and a plain run differ");
    char *out = slurp("np1", "out");
    cr_expect(strstr(out, "data parallel: 1 rank, collectives mpi"), "%s", out);
    free(out);
}

Test(dist, total_batch_derives_grad_accum)
{
    /* 32 tokens: 2 ranks x B=1 x T=8 -> 2 micro-steps; 1 process -> 4 */
    cr_assert_eq(train(MPIRUN " -np 2", "tb2", "--batch 1 --total-batch 32"), 0);
    cr_assert_eq(train("", "tb1", "--batch 1 --total-batch 32"), 0);
    char *o2 = slurp("tb2", "out"), *o1 = slurp("tb1", "out");
    cr_expect(strstr(o2, "B=1 grad-accum=2"), "%s", o2);
    cr_expect(strstr(o1, "B=1 grad-accum=4"), "%s", o1);
    cr_expect(strstr(o2, "| 32 tokens per step"), "%s", o2);
    free(o2);
    free(o1);
    /* the train batches are the same tokens; the val loss is not compared:
     * --val-batches counts micro-batches per rank (B=1 here), so 2 ranks
     * evaluate twice the tokens of 1 */
    expect_same_losses("tb2", "tb1", 1e-5, 0);
}

Test(dist, total_batch_not_dividing_is_an_error)
{
    cr_expect_eq(train(MPIRUN " -np 2", "bad", "--batch 1 --total-batch 24"), 2);
    char *e = slurp("bad", "err");
    cr_expect(strstr(e, "error: --total-batch 24: not a multiple of the 16 tokens one micro-step "
                        "reads over all ranks (batch 1 x seq-len 8 x 2 ranks)"), "%s", e);
    cr_expect_eq(count(e, "--total-batch 24"), 1, "rank 0 alone reports it:\n%s", e);
    free(e);
    cr_expect_eq(train("", "bad1", "--batch 2 --total-batch 24"), 2);
    e = slurp("bad1", "err");
    cr_expect(strstr(e, "(batch 2 x seq-len 8 x 1 rank)"), "%s", e);
    free(e);
    cr_expect_eq(train("", "bad2", "--batch 2 --total-batch 32 --grad-accum 3"), 2);
    e = slurp("bad2", "err");
    cr_expect(strstr(e, "--grad-accum 3 contradicts --total-batch 32, which needs 2"), "%s", e);
    free(e);
}

Test(dist, shard_too_small_for_the_world_is_rejected)
{
    write_tokens("small.bin", 16, 3, -1); /* 1 x 8 + 1 fits; 2 x 8 + 1 does not */
    char flags[600];
    snprintf(flags, sizeof flags, "--batch 1 --train-data %s/small.bin --steps 1", dir);
    cr_assert_eq(train("", "small1", flags), 0, "one process should train on 16 tokens");
    int rc = train(MPIRUN " -np 2", "small2", flags);
    cr_expect(rc != 0 && rc != 124, "2 ranks on a 16-token shard: exit %d", rc);
    char *e = slurp("small2", "err");
    cr_expect(strstr(e, "small.bin: 16 tokens, fewer than the 17 one step needs (ranks 2 x "
                        "batch 1 x seq-len 8 + 1)"), "%s", e);
    cr_expect(strstr(e, "error: rank "), "%s", e);
    free(e);
    char *o = slurp("small2", "out");
    cr_expect(!strstr(o, "step     1/"), "training must not start:\n%s", o);
    free(o);
}

Test(dist, a_failing_rank_ends_the_job)
{
    /* Rank 1 of 2 (B=1, T=8) reads tokens [8, 17) first: a bad token at
     * 12 fails rank 1 alone while rank 0 waits in the gradient all-reduce. */
    write_tokens("poison_tokens.bin", 4000, 4, 12);
    char flags[600];
    snprintf(flags, sizeof flags, "--batch 1 --train-data %s/poison_tokens.bin", dir);
    int rc = train(MPIRUN " -np 2", "poison", flags);
    cr_expect(rc != 0 && rc != 124, "exit %d (124 = hung until the timeout)", rc);
    char *e = slurp("poison", "err");
    cr_expect(strstr(e, "error: rank 1 of 2: ") && strstr(e, "outside the vocabulary"), "%s", e);
    free(e);
}

/* ZeRO-1's arithmetic in one process: two models placed as ranks 0 and 1
 * of 2 (--zero 1) with the same gradients each update only their range;
 * stitched together they equal the whole-vector update bit for bit, with
 * weight decay following each element's tensor across the cut. */
Test(dist, zero1_shards_stitch_to_the_whole_update)
{
    GPTConfig cfg = tu_tiny_config();
    cfg.channels = 24;
    int B = 2, T = 8, N = B * T;
    Backend *be = tu_cpu();
    GPT whole, part[2];
    char err[256];
    cr_assert_eq(gpt_init(&whole, &cfg, be, B, T, 0, 0, err, sizeof err), 0, "%s", err);
    for (int r = 0; r < 2; r++) {
        GPTShard sh = {2, r, 1, 0};
        cr_assert_eq(gpt_init_shard(&part[r], &cfg, be, B, T, 0, 0, &sh, err, sizeof err), 0,
                     "%s", err);
    }
    size_t n = whole.plan.num_params;
    cr_assert_eq(part[0].opt_begin, 0);
    cr_assert_eq(part[0].opt_end, 8896);
    cr_assert_eq(part[1].opt_begin, 8896);
    cr_assert_eq(part[1].opt_end, n);
    cr_assert_eq(part[1].plan.padded_params, 17792);
    float *p = tu_random_params(&cfg, 9), *want = malloc(n * sizeof(float));
    float *got[2] = {malloc(n * sizeof(float)), malloc(n * sizeof(float))};
    int in[16], tg[16];
    AdamWConfig adam = {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f};
    GPT *all[3] = {&whole, &part[0], &part[1]};
    for (int k = 0; k < 3; k++) gpt_set_params(all[k], p);
    for (int step = 0; step < 3; step++) {
        tu_random_tokens(in, N, cfg.vocab_size, 10 + step);
        tu_random_tokens(tg, N, cfg.vocab_size, 20 + step);
        double norm_sq[3];
        for (int k = 0; k < 3; k++) {
            gpt_zero_grads(all[k]);
            gpt_forward_backward(all[k], in, tg, 1.0f / N);
            norm_sq[k] = gpt_grad_norm_sq_local(all[k]);
        }
        double norm = gpt_grad_norm(&whole);
        cr_expect(fabs(sqrt(norm_sq[1] + norm_sq[2]) - norm) <= 1e-12 * norm,
                  "shard norms %.17g vs whole %.17g", sqrt(norm_sq[1] + norm_sq[2]), norm);
        for (int k = 0; k < 3; k++) gpt_update(all[k], &adam, adam.lr, norm);
        /* each part's range is current; stitch, then share like all-gather */
        gpt_get_params(&whole, want);
        for (int r = 0; r < 2; r++) gpt_get_params(&part[r], got[r]);
        memcpy(got[0] + 8896, got[1] + 8896, (n - 8896) * sizeof(float));
        cr_assert_eq(memcmp(got[0], want, n * sizeof(float)), 0, "step %d: stitched shards "
                     "differ from the whole update", step);
        for (int r = 0; r < 2; r++) gpt_set_params(&part[r], got[0]);
    }
    free(p), free(want), free(got[0]), free(got[1]);
    for (int k = 0; k < 3; k++) gpt_free(all[k]);
    backend_close(be);
}
