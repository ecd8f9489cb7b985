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
#include "tests/lib/family_cli.h"
#include "tests/lib/test_util.h"

#define HD "--arch llama --kv-heads 2 --ffn 64 --head-dim 16 --qk-norm"

Test(llama_head_dim_cli, every_recompute_mode_writes_mode_0s_gradients, .timeout = 240)
{
    char *d = tu_tempdir();
    tc_make_shards(d, 1, 2000);
    family_cli_expect_modes_write_mode_0s_grads(d, HD, "NKV=2 F=64 hs=16",
                                                "the header names the head size", NULL);
    tu_remove_tree(d);
}

Test(llama_head_dim_cli, cached_generation_writes_the_uncached_samples, .timeout = 120)
{
    char *d = tu_tempdir();
    tc_make_shards(d, 1, 2000);
    family_cli_expect_cached_generation_same(d, HD, 30);
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
    family_cli_expect_refused(d, args, "--head-dim 8: contradicts");
    snprintf(args, sizeof args, "%s --steps 1 --head-dim 16", tc_model_args(d));
    family_cli_expect_refused(d, args, "--head-dim: applies to --arch llama, not gpt2");
    snprintf(args, sizeof args, "%s --arch llama --steps 1 --head-dim 7", tc_model_args(d));
    family_cli_expect_refused(d, args, "--head-dim: 7 is odd");
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
    family_cli_expect_refused(d, args, "--head-dim 8: contradicts");
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
