/* tests/e2e/train/test_llama_options_cli.c — ./train_gpt --arch llama with
 * the family's options, on the cpu:
 *  - --qk-norm --qkv-bias --rope-scaling: --recompute 1, 2, selective and
 *    auto write step 1's gradients (--dump-grads) byte for byte recompute
 *    0's; --generate through the KV cache writes the uncached samples;
 *  - a model file records each option: taken without the flags (the
 *    header line names them), and a flag that contradicts it is refused
 *    by name (exit 2, one line);
 *  - the options without --arch llama, and --rope-scaling's three without
 *    it, are refused by name (exit 2, one line);
 *  - --plan --model qwen2.5-0.5b and llama-3.2-1b print the published
 *    parameter counts (494,032,768 and 1,235,814,400). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/family_cli.h"
#include "tests/lib/test_util.h"

#define LLAMA "--arch llama --kv-heads 2 --ffn 64"
/* hs 8, T 16: at original positions 16 the wavelengths 6.3, 63, 628, 6283
 * are blended (between 16/4 and 16) and divided */
#define OPTIONS "--qk-norm --qkv-bias --rope-scaling 8 --rope-original-max-pos 16"

Test(llama_options_cli, every_recompute_mode_writes_mode_0s_gradients, .timeout = 240)
{
    char *d = tu_tempdir();
    tc_make_shards(d, 1, 2000);
    family_cli_expect_modes_write_mode_0s_grads(
        d, LLAMA " " OPTIONS, "rope-scaling=8/1/4/16 untied head qkv-bias qk-norm",
        "the header names the options", "without the RMSNorm, qk-norm and SwiGLU outputs");
    tu_remove_tree(d);
}

Test(llama_options_cli, cached_generation_writes_the_uncached_samples, .timeout = 120)
{
    char *d = tu_tempdir();
    tc_make_shards(d, 1, 2000);
    family_cli_expect_cached_generation_same(d, LLAMA " " OPTIONS, 30);
    tu_remove_tree(d);
}

Test(llama_options_cli, the_model_file_records_each_option, .timeout = 180)
{
    char *d = tu_tempdir(), args[8192], prefix[4200], out[4300];
    tc_make_shards(d, 1, 2000);
    snprintf(args, sizeof args, "%s " LLAMA " " OPTIONS " --norm-eps 1e-6 --steps 1 --save "
             "%s/opt.bin", tc_model_args(d), d);
    snprintf(prefix, sizeof prefix, "%s/save_opt", d);
    cr_assert_eq(tc_run("", args, prefix), 0);
    snprintf(args, sizeof args, "%s " LLAMA " --steps 1 --save %s/plain.bin", tc_model_args(d), d);
    snprintf(prefix, sizeof prefix, "%s/save_plain", d);
    cr_assert_eq(tc_run("", args, prefix), 0);
    /* taken without the flags: the file's options are the model's */
    snprintf(args, sizeof args, "%s --arch llama --steps 1 --init-from %s/opt.bin",
             tc_data_args(d), d);
    snprintf(prefix, sizeof prefix, "%s/init_opt", d);
    cr_assert_eq(tc_run("", args, prefix), 0);
    snprintf(out, sizeof out, "%s.out", prefix);
    cr_expect(tc_file_has(out, "rope-scaling=8/1/4/16 untied head qkv-bias qk-norm eps=1e-06"),
              "the file's options are the model's");
    /* and the same flags again: taken */
    snprintf(args, sizeof args, "%s --arch llama " OPTIONS " --norm-eps 1e-6 --steps 1 "
             "--init-from %s/opt.bin", tc_data_args(d), d);
    snprintf(prefix, sizeof prefix, "%s/init_opt_flags", d);
    cr_expect_eq(tc_run("", args, prefix), 0);
    static const char *const cases[][3] = {
        {"plain", "--qk-norm", "--qk-norm: contradicts"},
        {"plain", "--qkv-bias", "--qkv-bias: contradicts"},
        {"plain", "--rope-scaling 8", "--rope-scaling 8: contradicts"},
        {"plain", "--norm-eps 1e-6", "--norm-eps 1e-06: contradicts"},
        {"opt", "--rope-scaling 0", "--rope-scaling 0: contradicts"},
        {"opt", "--rope-scaling 8 --rope-original-max-pos 32",
         "--rope-original-max-pos 32: contradicts"},
        {"opt", "--rope-scaling 8 --rope-high-freq-factor 3", "--rope-high-freq-factor 3: "
                                                               "contradicts"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(args, sizeof args, "%s --arch llama %s --steps 1 --init-from %s/%s.bin",
                 tc_data_args(d), cases[i][1], d, cases[i][0]);
        family_cli_expect_refused(d, args, cases[i][2]);
    }
    tu_remove_tree(d);
}

Test(llama_options_cli, options_without_llama_are_refused_by_name, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 400);
    static const char *const cases[][2] = {
        {"--qkv-bias", "--qkv-bias: applies to --arch llama, not gpt2"},
        {"--qk-norm", "--qk-norm: applies to --arch llama, not gpt2"},
        {"--norm-eps 1e-6", "--norm-eps: applies to --arch llama, not gpt2"},
        {"--rope-scaling 8", "--rope-scaling: applies to --arch llama, not gpt2"},
        {"--rope-low-freq-factor 2", "--rope-low-freq-factor: applies to --arch llama"},
        {"--rope-high-freq-factor 2", "--rope-high-freq-factor: applies to --arch llama"},
        {"--rope-original-max-pos 64", "--rope-original-max-pos: applies to --arch llama"},
        {LLAMA " --rope-original-max-pos 64", "--rope-original-max-pos: applies to "
                                              "--rope-scaling FACTOR"},
        {LLAMA " --rope-scaling 8 --rope-high-freq-factor 1",
         "--rope-high-freq-factor: 1 must exceed --rope-low-freq-factor 1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(args, sizeof args, "%s --steps 1 %s", tc_model_args(d), cases[i][0]);
        family_cli_expect_refused(d, args, cases[i][1]);
    }
    tu_remove_tree(d);
}

Test(llama_options_cli, plan_of_the_published_presets, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], prefix[4200], out[4300];
    static const char *const presets[][3] = {
        {"qwen2.5-0.5b", "parameters: 494032768", "V=151936"},
        {"llama-3.2-1b", "parameters: 1235814400", "V=128256"},
    };
    for (int i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "--plan --model %s --device cpu --threads 1 --batch 1 "
                 "--seq-len 256 --op-costs flops --memory-budget 64GiB", presets[i][0]);
        snprintf(prefix, sizeof prefix, "%s/plan%d", d, i);
        cr_assert_eq(tc_run("TRAIN_GPT_TEST_BASELINE=0", args, prefix), 0, "--plan --model %s",
                     presets[i][0]);
        snprintf(out, sizeof out, "%s.out", prefix);
        cr_expect(tc_file_has(out, presets[i][1]), "--model %s: want '%s'", presets[i][0],
                  presets[i][1]);
        cr_expect(tc_file_has(out, presets[i][2]), "--model %s: want '%s'", presets[i][0],
                  presets[i][2]);
    }
    tu_remove_tree(d);
}
