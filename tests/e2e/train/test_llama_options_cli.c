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
#include "tests/lib/test_util.h"

#define LLAMA "--arch llama --kv-heads 2 --ffn 64"
/* hs 8, T 16: at original positions 16 the wavelengths 6.3, 63, 628, 6283
 * are blended (between 16/4 and 16) and divided */
#define OPTIONS "--qk-norm --qkv-bias --rope-scaling 8 --rope-original-max-pos 16"

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

Test(llama_options_cli, every_recompute_mode_writes_mode_0s_gradients, .timeout = 240)
{
    char *d = tu_tempdir(), args[8192], prefix[4200], a[1024], b[4300];
    tc_make_shards(d, 1, 2000);
    static const char *modes[] = {"0", "1", "2", "selective", "auto"};
    for (int i = 0; i < 5; i++) {
        snprintf(a, sizeof a, "%s/grads_%s.bin", d, modes[i]);
        snprintf(args, sizeof args, "%s " LLAMA " " OPTIONS " --steps 2 --recompute %s "
                 "--op-costs flops --memory-budget 4GiB --dump-grads %s", tc_model_args(d),
                 modes[i], a);
        snprintf(prefix, sizeof prefix, "%s/run_%s", d, modes[i]);
        int rc = tc_run("", args, prefix);
        snprintf(b, sizeof b, "%s.out", prefix);
        cr_assert_eq(rc, 0, "--recompute %s: exit %d", modes[i], rc);
        cr_expect(tc_file_has(b, "rope-scaling=8/1/4/16 untied head qkv-bias qk-norm"),
                  "the header names the options");
        if (i == 3)
            cr_expect(tc_file_has(b, "without the RMSNorm, qk-norm and SwiGLU outputs"),
                      "selective's name");
        if (i == 0) continue;
        snprintf(b, sizeof b, "%s/grads_0.bin", d);
        cr_expect(tc_files_equal(a, b), "--recompute %s: gradients differ from mode 0's",
                  modes[i]);
    }
    tu_remove_tree(d);
}

Test(llama_options_cli, cached_generation_writes_the_uncached_samples, .timeout = 120)
{
    char *d = tu_tempdir(), args[8192], prefix[4200], a[4300], b[4300];
    tc_make_shards(d, 1, 2000);
    for (int kv = 0; kv <= 1; kv++) {
        snprintf(args, sizeof args, "%s " LLAMA " " OPTIONS " --steps 2 --generate 30 "
                 "--num-samples 2 --seed 7 --prompt 'ROMEO:' --kv-cache %d", tc_model_args(d),
                 kv);
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
        expect_refused(d, args, cases[i][2]);
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
        expect_refused(d, args, cases[i][1]);
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
