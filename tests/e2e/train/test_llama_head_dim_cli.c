/* tests/e2e/train/test_llama_head_dim_cli.c — ./train_gpt --arch llama
 * --head-dim D (each head D wide, not channels / heads; Qwen3's 128 at
 * 1024 / 16), on the cpu:
 *  - --head-dim 16 at C 32, 4 heads (attention 64 wide) with --qk-norm:
 *    --recompute 1, 2, selective and auto write step 1's gradients
 *    (--dump-grads) byte for byte recompute 0's; --generate through the KV
 *    cache writes the uncached samples;
 *  - a model file records it: taken without the flag (the header line says
 *    hs=16), and --head-dim 8 against it is refused by name (exit 2, one
 *    line); --head-dim without --arch llama, or odd, refused by name;
 *  - a checkpoint resumed (--resume) goes on to the uninterrupted run's
 *    parameters byte for byte, and --head-dim 8 against it is refused;
 *  - --plan --model qwen3-0.6b prints the published parameter count
 *    (596,049,920) and its shape. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

#define HD "--arch llama --kv-heads 2 --ffn 64 --head-dim 16 --qk-norm"

/* Expect exit 2 and `want` in stderr, one line. */
static void expect_refused(const char *dir, const char *args, const char *want)
{
    char prefix[4200], err_path[4300];
    snprintf(prefix, sizeof prefix, "%s/refused", dir);
    int rc = tc_run("", args, prefix);
    snprintf(err_path, sizeof err_path, "%s.err", prefix);
    char *e = tu_read_file(err_path, NULL);
    cr_expect_eq(rc, 2, "%s: exit %d, stderr: %s", args, rc, e ? e : "");
    cr_expect(e && strstr(e, want), "%s: want '%s' in stderr: %s", args, want, e ? e : "");
    int lines = 0;
    for (const char *p = e; p && *p; p++) lines += *p == '\n';
    cr_expect_eq(lines, 1, "%s: %d lines of stderr: %s", args, lines, e ? e : "");
    free(e);
}

Test(llama_head_dim_cli, every_recompute_mode_writes_mode_0s_gradients, .timeout = 240)
{
    char *d = tu_tempdir(), args[8192], prefix[4200], a[1024], b[4300];
    tc_make_shards(d, 1, 2000);
    static const char *modes[] = {"0", "1", "2", "selective", "auto"};
    for (int i = 0; i < 5; i++) {
        snprintf(a, sizeof a, "%s/grads_%s.bin", d, modes[i]);
        snprintf(args, sizeof args, "%s " HD " --steps 2 --recompute %s --op-costs flops "
                 "--memory-budget 4GiB --dump-grads %s", tc_model_args(d), modes[i], a);
        snprintf(prefix, sizeof prefix, "%s/run_%s", d, modes[i]);
        int rc = tc_run("", args, prefix);
        snprintf(b, sizeof b, "%s.out", prefix);
        cr_assert_eq(rc, 0, "--recompute %s: exit %d", modes[i], rc);
        cr_expect(tc_file_has(b, "NKV=2 F=64 hs=16"), "the header names the head size");
        if (i == 0) continue;
        snprintf(b, sizeof b, "%s/grads_0.bin", d);
        cr_expect(tc_files_equal(a, b), "--recompute %s: gradients differ from mode 0's",
                  modes[i]);
    }
    tu_remove_tree(d);
}

Test(llama_head_dim_cli, cached_generation_writes_the_uncached_samples, .timeout = 120)
{
    char *d = tu_tempdir(), args[8192], prefix[4200], a[4300], b[4300];
    tc_make_shards(d, 1, 2000);
    for (int kv = 0; kv <= 1; kv++) {
        snprintf(args, sizeof args, "%s " HD " --steps 2 --generate 30 --num-samples 2 "
                 "--seed 7 --prompt 'ROMEO:' --kv-cache %d", tc_model_args(d), kv);
        snprintf(prefix, sizeof prefix, "%s/gen%d", d, kv);
        cr_assert_eq(tc_run("", args, prefix), 0, "--kv-cache %d failed", kv);
    }
    snprintf(a, sizeof a, "%s/gen0.out", d);
    snprintf(b, sizeof b, "%s/gen1.out", d);
    char *x = tu_read_file(a, NULL), *y = tu_read_file(b, NULL);
    cr_assert(x && y);
    const char *sx = strstr(x, "ROMEO:"), *sy = strstr(y, "ROMEO:");
    cr_assert(sx && sy, "the samples start with the prompt: %s", x);
    cr_expect_str_eq(sx, sy, "the samples differ with and without the cache");
    free(x), free(y);
    tu_remove_tree(d);
}

Test(llama_head_dim_cli, the_model_file_records_the_head_size, .timeout = 180)
{
    char *d = tu_tempdir(), args[8192], prefix[4200], out[4300];
    tc_make_shards(d, 1, 2000);
    snprintf(args, sizeof args, "%s " HD " --steps 1 --save %s/hd.bin", tc_model_args(d), d);
    snprintf(prefix, sizeof prefix, "%s/save_hd", d);
    cr_assert_eq(tc_run("", args, prefix), 0);
    /* taken without the flag */
    snprintf(args, sizeof args, "%s --arch llama --steps 1 --init-from %s/hd.bin",
             tc_data_args(d), d);
    snprintf(prefix, sizeof prefix, "%s/init_hd", d);
    cr_assert_eq(tc_run("", args, prefix), 0);
    snprintf(out, sizeof out, "%s.out", prefix);
    cr_expect(tc_file_has(out, "hs=16"), "the file's head size is the model's");
    /* the same flag again: taken; another: refused */
    snprintf(args, sizeof args, "%s --arch llama --head-dim 16 --steps 1 --init-from %s/hd.bin",
             tc_data_args(d), d);
    snprintf(prefix, sizeof prefix, "%s/init_hd_flag", d);
    cr_expect_eq(tc_run("", args, prefix), 0);
    snprintf(args, sizeof args, "%s --arch llama --head-dim 8 --steps 1 --init-from %s/hd.bin",
             tc_data_args(d), d);
    expect_refused(d, args, "--head-dim 8: contradicts");
    snprintf(args, sizeof args, "%s --steps 1 --head-dim 16", tc_model_args(d));
    expect_refused(d, args, "--head-dim: applies to --arch llama, not gpt2");
    snprintf(args, sizeof args, "%s --arch llama --steps 1 --head-dim 7", tc_model_args(d));
    expect_refused(d, args, "--head-dim: 7 is odd");
    tu_remove_tree(d);
}

Test(llama_head_dim_cli, a_resume_is_the_uninterrupted_run, .timeout = 240)
{
    char *d = tu_tempdir(), args[8192], prefix[4200], a[4300], b[4300];
    tc_make_shards(d, 1, 2000);
    snprintf(args, sizeof args, "%s " HD " --steps 2 --checkpoint-dir %s/ck", tc_model_args(d), d);
    snprintf(prefix, sizeof prefix, "%s/first", d);
    cr_assert_eq(tc_run("", args, prefix), 0, "the first 2 steps");
    snprintf(args, sizeof args, "%s --arch llama --head-dim 8 --steps 4 --checkpoint-dir %s/ck "
             "--resume", tc_model_args(d), d);
    expect_refused(d, args, "--head-dim 8: contradicts");
    snprintf(args, sizeof args, "%s " HD " --steps 4 --checkpoint-dir %s/ck --resume --save "
             "%s/resumed.bin", tc_model_args(d), d, d);
    snprintf(prefix, sizeof prefix, "%s/resumed", d);
    cr_assert_eq(tc_run("", args, prefix), 0, "the resume");
    snprintf(args, sizeof args, "%s " HD " --steps 4 --save %s/straight.bin", tc_model_args(d), d);
    snprintf(prefix, sizeof prefix, "%s/straight", d);
    cr_assert_eq(tc_run("", args, prefix), 0, "the uninterrupted run");
    snprintf(a, sizeof a, "%s/resumed.bin", d);
    snprintf(b, sizeof b, "%s/straight.bin", d);
    cr_expect(tc_files_equal(a, b), "the resumed run's parameters differ from the uninterrupted's");
    tu_remove_tree(d);
}

Test(llama_head_dim_cli, plan_of_qwen3_0_6b, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], prefix[4200], out[4300];
    snprintf(args, sizeof args, "--plan --model qwen3-0.6b --device cpu --threads 1 --batch 1 "
             "--seq-len 256 --op-costs flops --memory-budget 64GiB");
    snprintf(prefix, sizeof prefix, "%s/plan", d);
    cr_assert_eq(tc_run("TRAIN_GPT_TEST_BASELINE=0", args, prefix), 0, "--plan");
    snprintf(out, sizeof out, "%s.out", prefix);
    cr_expect(tc_file_has(out, "parameters: 596049920"), "the published count");
    cr_expect(tc_file_has(out, "V=151936"), "the vocabulary");
    tu_remove_tree(d);
}
