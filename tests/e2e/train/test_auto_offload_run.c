/* tests/e2e/train/test_auto_offload_run.c — ./train_gpt --recompute auto --offload
 * checkpoints with a cost file (--op-costs FILE, fabricated copy costs): at a budget
 * that forbids keeping every input on the device, fast copies make auto offload them
 * and slow ones make it rebuild them; either way the step-1 gradients (--dump-grads)
 * and the saved model are byte for byte recompute 0's without offload, the arenas'
 * high-water marks equal the plan, and a budget nothing fits exits 2 naming it, as
 * do costs without the copy engine's.
 * --plan's closing lines show the same choice. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/shard.h"
#include "model/opcost.h"
#include "model/opcost_file.h"
#include "model/gpt.h"
#include "model/planner.h"
#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

#define SHAPE "--layers 5 --channels 32 --heads 4 --seq-len 16 --vocab 256 --batch 2"

static int run(const char *args, const char *dir, char **out, char **err)
{
    char cmd[4096];
    /* the byte counts below are the arenas': no measured baseline */
    snprintf(cmd, sizeof cmd, "TRAIN_GPT_CACHE_DIR=%s/cache TRAIN_GPT_TEST_BASELINE=0 %s %s", dir,
             tc_bin(), args);
    return tu_run_output(cmd, out, err);
}

static PlanInput shape(int offload)
{
    PlanInput in = {.cfg = {.max_seq_len = 16, .vocab_size = 256, .padded_vocab = 256,
                            .num_layers = 5, .num_heads = 4, .channels = 32},
                    .B = 2, .T = 16, .dtype = DTYPE_FP32, .offload = offload};
    /* start-up's parameter piece, which the CLI counts with the host copies */
    in.host_copies = gpt_params_piece_bytes(&in.cfg);
    return in;
}

static char *make_shards(void)
{
    char *d = tu_tempdir(), path[512], err[256];
    static uint16_t tok[20000];
    int t[20000];
    tu_random_tokens(t, 20000, 256, 5);
    for (int i = 0; i < 20000; i++) tok[i] = (uint16_t)t[i];
    snprintf(path, sizeof path, "%s/b_train_000000.bin", d);
    cr_assert_eq(shard_write(path, tok, 20000, err, sizeof err), 0, "%s", err);
    snprintf(path, sizeof path, "%s/b_val_000000.bin", d);
    cr_assert_eq(shard_write(path, tok, 5000, err, sizeof err), 0, "%s", err);
    return d;
}

/* A cost file: every op 10 us, copies at bw bytes/s (no latency). */
static void write_costs(const char *path, long long bw)
{
    PlanInput in = shape(0);
    OpCosts oc = {.unit = OPCOST_NS, .reps = 5, .copy_bw = bw};
    for (int op = 0; op < opcost_n_ops(&oc); op++) *opcost_at(&oc, op) = 10000;
    char e[512];
    cr_assert_eq(opcost_file_write(path, "cpu: fabricated", &in, &oc, e, sizeof e), 0, "%s", e);
}

/* Train 3 steps; returns the gradients and saved model files' contents. */
static void train(const char *d, const char *extra, int i, char **out, char **g, size_t *glen,
                  char **m, size_t *mlen)
{
    char args[3072], grads[600], model[600], *err;
    snprintf(grads, sizeof grads, "%s/grads%d.bin", d, i);
    snprintf(model, sizeof model, "%s/model%d.bin", d, i);
    snprintf(args, sizeof args, SHAPE " %s --steps 3 --val-every 0 --threads 1 --device cpu "
             "--train-data '%s/b_train_*.bin' --val-data '%s/b_val_*.bin' --dump-grads %s "
             "--save %s", extra, d, d, grads, model);
    cr_assert_eq(run(args, d, out, &err), 0, "%s: %s", extra, err);
    free(err);
    cr_assert(strstr(*out, "high-water mark") && strstr(*out, "bytes (equal)"), "%s", *out);
    *g = tu_read_file(grads, glen);
    *m = tu_read_file(model, mlen);
    cr_assert(*g && *m && *glen > 0 && *mlen > 0);
}

Test(auto_offload_run, offloads_or_rebuilds_bitwise, .timeout = 240)
{
    char *d = make_shards(), fast[600], slow[600], extra[1400], *out, *rg, *rm, *g, *m;
    size_t rglen, rmlen, glen, mlen;
    snprintf(fast, sizeof fast, "%s/fast.json", d);
    snprintf(slow, sizeof slow, "%s/slow.json", d);
    write_costs(fast, 1000000000);
    write_costs(slow, 4096000); /* a residual slot (4 KiB) in 1 ms: 10 forwards */
    PlanInput in = shape(OFFLOAD_CHECKPOINTS);
    /* the host copy --save and --dump-grads stage, which the cpu's budget
     * counts (cli/recompute.c): the parameters as fp32 */
    in.host_copies = config_num_params(&in.cfg) * sizeof(float);
    MemoryPlan p;
    char e[256];
    cr_assert_eq(planner_sizes(&in, RECOMPUTE_NONE, &p, e, sizeof e), 0, "%s", e);
    train(d, "--recompute 0", 0, &out, &rg, &rglen, &rm, &rmlen);
    free(out);
    /* fast copies at two budgets: every input out, then two kept on the device
     * and three out; slow copies: none out */
    const char *costs[] = {fast, fast, slow};
    size_t budgets[] = {p.total, p.total + 2 * 4096, p.total};
    for (int i = 0; i < 3; i++) {
        snprintf(extra, sizeof extra, "--recompute auto --offload checkpoints --memory-budget "
                 "%zu --op-costs %s", budgets[i], costs[i]);
        train(d, extra, i + 1, &out, &g, &glen, &m, &mlen);
        if (i == 1) {
            cr_expect(strstr(out, "stored block inputs offloaded to the host (12288 host bytes)"),
                      "%s", out);
            cr_expect(strstr(out, "offload: 3 of the 5 stored block inputs pass through a device "
                                  "ring of 2 slots"), "%s", out);
        } else if (i == 0) {
            cr_expect(strstr(out, "stored block inputs offloaded to the host (20480 host bytes)"),
                      "%s", out);
            const char *h = strstr(out, "memory: host tier");
            cr_expect(h && strstr(h, "(equal)"), "the host tier's high-water: %s", out);
            cr_expect(strstr(out, "copies of the offloaded inputs included"), "%s", out);
        }
        if (i == 0 || i == 1) {
            const char *h = strstr(out, "memory: host tier");
            cr_expect(h && strstr(h, "(equal)"), "the host tier's high-water: %s", out);
        } else {
            cr_expect(strstr(out, "stored block inputs kept on the device"), "%s", out);
            cr_expect_null(strstr(out, "memory: host tier"), "%s", out);
        }
        cr_expect(strstr(out, "step time: predicted "), "%s", out);
        cr_expect(glen == rglen && memcmp(g, rg, glen) == 0, "%s: gradients differ", costs[i]);
        cr_expect(mlen == rmlen && memcmp(m, rm, mlen) == 0, "%s: the model differs", costs[i]);
        free(out), free(g), free(m);
    }
    free(rg), free(rm), free(d);
}

Test(auto_offload_run, nothing_fits_exits_2, .timeout = 60)
{
    char *d = make_shards(), path[600], args[2048], *out, *err;
    snprintf(path, sizeof path, "%s/fast.json", d);
    write_costs(path, 1000000000);
    snprintf(args, sizeof args, SHAPE " --recompute auto --offload checkpoints --memory-budget "
             "1000 --op-costs %s --steps 1 --device cpu --train-data '%s/b_train_*.bin' "
             "--val-data '%s/b_val_*.bin'", path, d, d);
    cr_assert_eq(run(args, d, &out, &err), 2, "stdout %s stderr %s", out, err);
    cr_expect(strstr(err, "--recompute auto: no schedule fits the budget of 1000 bytes"), "%s",
              err);
    free(out), free(err);
    /* costs without the copy engine's (a backend with none wrote 0): a bad combination,
     * exit 2, not a failure of the run */
    write_costs(path, 0);
    cr_assert_eq(run(args, d, &out, &err), 2, "stdout %s stderr %s", out, err);
    cr_expect(strstr(err, "--offload checkpoints: needs measured op and copy costs"), "%s", err);
    free(out), free(err), free(d);
}

/* --plan --recompute auto --offload checkpoints with the fast costs at that budget:
 * the closing lines are the offloaded choice, mode 0's tapes with the inputs on the
 * host (nothing recomputed, no copy exposed); the slow costs keep them on the device. */
Test(auto_offload_run, plan_shows_the_choice, .timeout = 60)
{
    char *d = tu_tempdir(), path[600], args[2048], *out, *err;
    PlanInput in = shape(OFFLOAD_CHECKPOINTS);
    in.attn_scratch = tu_attn_scratch(&in.cfg, 0); /* the --plan run's default thread count */
    MemoryPlan p;
    char e[256];
    cr_assert_eq(planner_sizes(&in, RECOMPUTE_NONE, &p, e, sizeof e), 0, "%s", e);
    long long bws[] = {1000000000, 4096000};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/costs%d.json", d, i);
        write_costs(path, bws[i]);
        /* the costs are the cpu's (fp32): without --device cpu a CUDA build that sees no
         * GPU plans for one, in bf16 */
        snprintf(args, sizeof args, SHAPE " --plan --device cpu --recompute auto --offload "
                 "checkpoints --memory-budget %zu --op-costs %s", p.total, path);
        cr_assert_eq(run(args, d, &out, &err), 0, "%s", err);
        char want[256];
        if (i == 0)
            snprintf(want, sizeof want, "--recompute auto --offload checkpoints: auto offloads "
                     "the stored block inputs\ndevice: %zu bytes", p.total);
        else
            snprintf(want, sizeof want, "--recompute auto --offload checkpoints: auto keeps "
                     "the stored block inputs on the device\n");
        cr_expect(strstr(out, want), "'%s' not in %s", want, out);
        if (i == 0) cr_expect(strstr(out, "\nhost: 20480 bytes"), "%s", out);
        else cr_expect(strstr(out, "\nhost: 0 bytes"), "%s", out);
        free(out), free(err);
    }
    free(d);
}
