/* tests/e2e/train/test_offload_flags.c — ./train_gpt's --offload and --host-budget
 * (cli/recompute.h): --plan prints planner_print_modes' table with the host columns and
 * ends with the chosen mode's device and host lines; the two device targets
 * (GPT-2 XL and a 7B-class GPT in bf16, both offloads) read from those lines; bad values
 * and a host tier over --host-budget exit 2 naming the flag. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/shard.h"
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

/* The device and host bytes of --plan's two closing lines. */
static void closing_lines(const char *out, size_t *device, size_t *host)
{
    const char *d = strstr(out, "\ndevice: "), *h = strstr(out, "\nhost: ");
    cr_assert(d && h && d < h, "%s", out);
    cr_assert_eq(sscanf(d, "\ndevice: %zu bytes", device), 1, "%s", d);
    cr_assert_eq(sscanf(h, "\nhost: %zu bytes", host), 1, "%s", h);
    const char *end = strchr(h + 1, '\n');
    cr_assert(end && end[1] == '\0', "the host line is the last: %s", h);
}

Test(offload_flags, plan_prints_the_table_and_the_choice, .timeout = 60)
{
    char *d = tu_tempdir(), *out, *err, *want = NULL, e[256], line[256];
    size_t len = 0;
    int rc = run(SHAPE " --plan --memory-budget 3000000 --device cpu --recompute 1 "
                       "--offload checkpoints,optimizer --host-budget 1MiB", d, &out, &err);
    cr_assert_eq(rc, 0, "stderr: %s", err);
    PlanInput in = {.cfg = {.max_seq_len = 16, .vocab_size = 256, .padded_vocab = 256,
                            .num_layers = 5, .num_heads = 4, .channels = 32},
                    .B = 2, .T = 16, .dtype = DTYPE_FP32,
                    .offload = OFFLOAD_CHECKPOINTS | OFFLOAD_OPTIMIZER,
                    .host_budget = (size_t)1 << 20};
    in.attn_scratch = tu_attn_scratch(&in.cfg, 0);
    in.host_copies = gpt_params_piece_bytes(&in.cfg); /* start-up's parameter piece */
    MemoryPlan p;
    cr_assert_eq(planner_sizes(&in, RECOMPUTE_BLOCK, &p, e, sizeof e), 0, "%s", e);
    FILE *f = open_memstream(&want, &len);
    cr_assert_eq(planner_print_modes(f, &in, 3000000, 0, NULL, 1, e, sizeof e), 0, "%s", e);
    fprintf(f, "--recompute 1 --offload checkpoints,optimizer:\n");
    fprintf(f, "device: %zu bytes (%.3f GiB)\n", p.total, p.total / 1073741824.0);
    fprintf(f, "host: %zu bytes (%.3f GiB)\n", p.host_total, p.host_total / 1073741824.0);
    fclose(f);
    cr_assert_str_eq(out, want);
    cr_assert(strstr(out, "host_bytes"), "the host columns: %s", out);
    /* by hand: the 5 block inputs of B*T*C*4 = 4096 bytes are the host's, the
     * device keeps two; the optimizer's m and v (fp32: no master) are the host's, with
     * the staging its AdamW works through */
    cr_expect_eq(p.host[HOST_CHECKPOINTS], 5 * 4096);
    cr_expect_eq(p.bytes[MEM_ACTIVATIONS], 2 * 4096);
    cr_expect_eq(p.host[HOST_OPTIMIZER], 4 * ((p.num_params * 4 + 255) / 256 * 256),
                 "m, v and the gradient and parameter staging");
    snprintf(line, sizeof line, "\nhost: %zu bytes", p.host_total);
    cr_expect(strstr(out, line), "%s", out);
    free(out), free(err), free(want);
    /* without --offload: no host columns, no closing lines (the table as before) */
    rc = run(SHAPE " --plan --memory-budget 3000000 --device cpu --recompute 1", d, &out, &err);
    cr_assert_eq(rc, 0, "stderr: %s", err);
    cr_expect_null(strstr(out, "host_bytes"), "%s", out);
    cr_expect_null(strstr(out, "\ndevice: "), "%s", out);
    free(out), free(err), free(d);
}

/* The planned targets, printed by --plan without a GPU (bf16 with a budget). */
Test(offload_flags, gpt2_xl_device_under_10_gib, .timeout = 60)
{
    char *d = tu_tempdir(), *out, *err;
    size_t dev, host;
    int rc = run("--model d48 --dtype bf16 --batch 8 --seq-len 1024 --recompute 1 "
                 "--offload checkpoints,optimizer --plan --memory-budget 139GiB", d, &out, &err);
    cr_assert_eq(rc, 0, "stderr: %s", err);
    closing_lines(out, &dev, &host);
    cr_expect_eq(dev, 7299310080, "test_planner_offload.c's hand count");
    cr_expect_eq(host, 26181273600);
    cr_expect_leq(dev, (size_t)10 << 30);
    cr_expect(strstr(out, "(6.798 GiB)"), "%s", out);
    free(out), free(err), free(d);
}

Test(offload_flags, gpt_7b_device_under_40_gib, .timeout = 60)
{
    char *d = tu_tempdir(), *out, *err;
    size_t dev, host;
    int rc = run("--layers 32 --channels 4096 --heads 32 --seq-len 2048 --batch 1 --dtype bf16 "
                 "--recompute 1 --offload checkpoints,optimizer --plan --memory-budget 40GiB", d,
                 &out, &err);
    cr_assert_eq(rc, 0, "stderr: %s", err);
    closing_lines(out, &dev, &host);
    cr_expect_eq(dev, 27260198912, "test_planner_offload.c's hand count");
    cr_expect_eq(host, 107074420736);
    cr_expect_leq(dev, (size_t)40 << 30);
    /* the largest micro-batch with offload on: mode 1's row fits at 40 GiB */
    char *row = strstr(out, "\n1 ");
    int maxb = 0;
    cr_assert_not_null(row, "%s", out);
    cr_assert_eq(sscanf(row + 3, "%*s %*s %*s %*s %*s %*s %*s %d", &maxb), 1, "%s", row);
    cr_expect_geq(maxb, 1, "%s", row);
    free(out), free(err), free(d);
}

Test(offload_flags, bad_offload_values_exit_2)
{
    static const char *bad[] = {"all", "checkpoints,", "optimizer,optimizer", "none,optimizer"};
    char *d = tu_tempdir(), *out, *err, args[512];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, SHAPE " --plan --memory-budget 3000000 --offload '%s'",
                 bad[i]);
        cr_expect_eq(run(args, d, &out, &err), 2, "'%s': %s", bad[i], err);
        cr_expect(err && strstr(err, "--offload: expected none or"), "'%s': %s", bad[i], err);
        free(out), free(err);
    }
    cr_expect_eq(run(SHAPE " --plan --host-budget 12parsecs", d, &out, &err), 2, "%s", err);
    cr_expect(err && strstr(err, "--host-budget"), "%s", err);
    free(out), free(err), free(d);
}

/* Random byte-token shards, train and val, in a fresh folder. */
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

/* A host tier over --host-budget exits 2 naming the flag and both sizes, before
 * anything is allocated; so does auto with offloaded checkpoints and counted FLOPs,
 * which cannot weigh a copy against recompute. */
Test(offload_flags, over_the_host_budget_exits_2, .timeout = 60)
{
    char *d = make_shards(), args[2048], *out, *err, want[160], e[256];
    PlanInput in = {.cfg = {.max_seq_len = 16, .vocab_size = 256, .padded_vocab = 256,
                            .num_layers = 5, .num_heads = 4, .channels = 32},
                    .B = 2, .T = 16, .dtype = DTYPE_FP32, .offload = OFFLOAD_CHECKPOINTS};
    MemoryPlan p;
    cr_assert_eq(planner_sizes(&in, RECOMPUTE_BLOCK, &p, e, sizeof e), 0, "%s", e);
    cr_assert_eq(p.host_total, 5 * 4096);
    snprintf(args, sizeof args, SHAPE " --recompute 1 --offload checkpoints --host-budget %zu "
             "--steps 1 --device cpu --train-data '%s/b_train_*.bin' --val-data "
             "'%s/b_val_*.bin'", p.host_total - 1, d, d);
    cr_assert_eq(run(args, d, &out, &err), 2, "stdout %s stderr %s", out, err);
    snprintf(want, sizeof want, "--host-budget: --recompute 1 with --offload checkpoints needs "
             "%zu host bytes", p.host_total);
    cr_expect(err && strstr(err, want), "stderr '%s' lacks '%s'", err, want);
    free(out), free(err);
    snprintf(args, sizeof args, SHAPE " --recompute auto --memory-budget 1GiB --offload "
             "checkpoints --steps 1 --device cpu --op-costs flops --train-data "
             "'%s/b_train_*.bin' --val-data '%s/b_val_*.bin'", d, d);
    cr_assert_eq(run(args, d, &out, &err), 2, "stdout %s stderr %s", out, err);
    cr_expect(err && strstr(err, "--offload checkpoints: needs measured op and copy costs"),
              "%s", err);
    free(out), free(err), free(d);
}

/* ./train_gpt with --offload checkpoints in every fixed mode, and with the optimizer
 * offloaded (alone and with checkpoints): the step-1 gradients
 * (--dump-grads) and the saved model (--save) are byte for byte recompute 0's without
 * offload; the device arenas' high-water mark equals the plan and so does the host
 * tier's (the summary says "equal" twice). */
/* Every recompute mode with the checkpoints, the optimizer or both in the host tier
 * trains as recompute 0 without offload: gradients and the saved model byte for byte. */
static void every_mode_bitwise(const char *shape)
{
    static const char *modes[] = {"0", "0", "1", "2", "selective", "1", "2"};
    static const char *offs[] = {"", "--offload checkpoints", "--offload checkpoints",
                                 "--offload checkpoints", "--offload checkpoints",
                                 "--offload optimizer", "--offload checkpoints,optimizer"};
    char *d = make_shards(), args[2048], *out, *err;
    char *ref_grads = NULL, *ref_model = NULL;
    size_t ref_glen = 0, ref_mlen = 0;
    for (int i = 0; i < 7; i++) {
        char grads[600], model[600];
        snprintf(grads, sizeof grads, "%s/grads%d.bin", d, i);
        snprintf(model, sizeof model, "%s/model%d.bin", d, i);
        /* i = 0: the reference, recompute 0 without offload */
        snprintf(args, sizeof args, "%s --recompute %s %s --steps 3 --val-every 0 "
                 "--threads 1 --device cpu --train-data '%s/b_train_*.bin' --val-data "
                 "'%s/b_val_*.bin' --dump-grads %s --save %s", shape, modes[i], offs[i], d, d,
                 grads, model);
        cr_assert_eq(run(args, d, &out, &err), 0, "--recompute %s: %s", modes[i], err);
        cr_assert(strstr(out, "high-water mark") && strstr(out, "bytes (equal)"), "%s", out);
        if (i) {
            cr_assert(strstr(out, "memory: host tier (--offload "), "%s", out);
            const char *h = strstr(out, "memory: host tier");
            cr_assert(strstr(h, "(equal)"), "the host tier's high-water: %s", h);
        }
        size_t glen, mlen;
        char *g = tu_read_file(grads, &glen), *m = tu_read_file(model, &mlen);
        cr_assert(g && m && glen > 0 && mlen > 0);
        if (!i) {
            ref_grads = g, ref_glen = glen, ref_model = m, ref_mlen = mlen;
        } else {
            cr_expect(glen == ref_glen && memcmp(g, ref_grads, glen) == 0,
                      "--recompute %s %s: gradients differ", modes[i], offs[i]);
            cr_expect(mlen == ref_mlen && memcmp(m, ref_model, mlen) == 0,
                      "--recompute %s %s: the saved model differs", modes[i], offs[i]);
            free(g), free(m);
        }
        free(out), free(err);
    }
    free(ref_grads), free(ref_model), free(d);
}

Test(offload_flags, every_mode_trains_bitwise_with_checkpoints_offloaded, .timeout = 240)
{
    every_mode_bitwise(SHAPE);
}

/* The Llama family (grouped-query, untied head): the host tier moves the same residual
 * slots and optimizer state, whatever the block. */
Test(offload_flags, llama_every_mode_trains_bitwise_offloaded, .timeout = 240)
{
    every_mode_bitwise(SHAPE " --arch llama --kv-heads 2 --ffn 64 --lm-head untied");
}


/* A resumable save of a run with its optimizer state in the host tier, resumed with it
 * there: the final model is byte for byte that of one run without offload (the save
 * reads m and v from the host arena, the resume writes them back there). */
Test(offload_flags, resume_with_the_optimizer_offloaded_is_exact, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], p[600], a[600], b[600];
    tc_make_shards(d, 2, 400);
    const char *m = tc_model_args(d);
    snprintf(a, sizeof a, "%s/a.bin", d);
    snprintf(b, sizeof b, "%s/b.bin", d);
    snprintf(args, sizeof args, "%s --steps 6 --save %s", m, a);
    snprintf(p, sizeof p, "%s/a", d);
    cr_assert_eq(tc_run(NULL, args, p), 0, "the run without offload");
    snprintf(args, sizeof args, "%s --steps 3 --recompute 1 --offload checkpoints,optimizer "
             "--checkpoint-dir %s/ck", m, d);
    snprintf(p, sizeof p, "%s/b1", d);
    cr_assert_eq(tc_run(NULL, args, p), 0, "the first half with offload");
    snprintf(args, sizeof args, "%s --steps 6 --recompute 1 --offload checkpoints,optimizer "
             "--checkpoint-dir %s/ck --resume --save %s", m, d, b);
    snprintf(p, sizeof p, "%s/b2", d);
    cr_assert_eq(tc_run(NULL, args, p), 0, "the resumed half with offload");
    snprintf(p, sizeof p, "%s/b2.out", d);
    cr_expect(tc_file_has(p, "resumed from"), "the second run did not resume");
    size_t la, lb;
    char *ma = tu_read_file(a, &la), *mb = tu_read_file(b, &lb);
    cr_assert(ma && mb);
    cr_expect(la == lb && memcmp(ma, mb, la) == 0, "the resumed model differs");
    free(ma), free(mb), free(d);
}
