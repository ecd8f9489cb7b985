/* tests/e2e/train/test_llama_cli.c — ./train_gpt --arch llama on the cpu:
 *  - a small grouped-query model (L=2, C=32, NH=4, NKV=2, F=64, untied)
 *    trains, and --recompute 1, 2, selective and auto write step 1's
 *    gradients (--dump-grads) byte for byte recompute 0's, auto also with
 *    the Llama block's measured op costs;
 *  - --generate through the KV cache (--kv-cache 1, the default) writes
 *    the same samples as re-running the forward (--kv-cache 0);
 *  - measured op costs are the family's own: a GPT-2 cost file is refused
 *    for a Llama run and a Llama one for a GPT-2 run (exit 1);
 *  - what the family does not do yet is refused by name, exit 2, one line:
 *    llm.c's checkpoints (--zero 1:
 *    ranks/test_dist.c; --offload: train/test_offload_flags.c); so are the Llama flags without --arch llama, a
 *    --kv-heads that does not divide --heads, and a preset of the other
 *    family;
 *  - --device cuda is the family's too: --plan plans it for a CUDA device
 *    (the Llama block's table, bf16), and a run where no GPU is visible
 *    stops at the backend's own message, not at the family (the run itself:
 *    dev/cuda/check_train_emu.py on the emulator, dev/gpu_check/ on a GPU);
 *  - a model file or a checkpoint of one family is refused by name when the
 *    other is asked for (exit 2), and so is a Llama flag that contradicts
 *    the file; one of its own family is taken. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/family_cli.h"
#include "tests/lib/test_util.h"

#define LLAMA "--arch llama --kv-heads 2 --ffn 64"

Test(llama_cli, every_recompute_mode_writes_mode_0s_gradients, .timeout = 240)
{
    char *d = tu_tempdir(), args[8192], prefix[4200], a[1024], b[4300];
    tc_make_shards(d, 1, 2000);
    family_cli_expect_modes_write_mode_0s_grads(d, LLAMA, "llama NKV=2 F=64",
                                                "the header names the family",
                                                "without the RMSNorm and SwiGLU outputs");
    /* --op-costs auto (the default) measures the Llama block's ops and
     * caches them keyed by the family; auto chooses by measured time and
     * still writes mode 0's bits */
    char env[4300];
    snprintf(env, sizeof env, "TRAIN_GPT_CACHE_DIR=%s/cache", d);
    snprintf(a, sizeof a, "%s/grads_auto_default.bin", d);
    snprintf(args, sizeof args, "%s " LLAMA " --steps 2 --recompute auto --memory-budget 4GiB "
             "--dump-grads %s", tc_model_args(d), a);
    snprintf(prefix, sizeof prefix, "%s/run_auto_default", d);
    cr_assert_eq(tc_run(env, args, prefix), 0);
    snprintf(b, sizeof b, "%s.out", prefix);
    cr_expect(tc_file_has(b, "op costs: measuring one block's ops"), "auto measures");
    cr_expect(tc_file_has(b, "block: forward"), "the measured costs are printed");
    snprintf(b, sizeof b, "%s/grads_0.bin", d);
    cr_expect(tc_files_equal(a, b), "--recompute auto (measured costs): gradients differ");
    /* the cache file names the family and its widths, and the block's own
     * ops (its description's names) */
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "grep -Eq '\"arch\":[[:space:]]*\"llama\"' %s/cache/op_costs_*.json "
             "&& grep -Eq '\"kv_heads\":[[:space:]]*2' %s/cache/op_costs_*.json", d, d);
    cr_expect_eq(tu_run(cmd), 0, "the cached costs are keyed by the family");
    snprintf(cmd, sizeof cmd, "grep -q '\"rope_fwd\"' %s/cache/op_costs_*.json && grep -q "
             "'\"swiglu_bwd\"' %s/cache/op_costs_*.json && ! grep -q '\"gelu_fwd\"' "
             "%s/cache/op_costs_*.json", d, d, d);
    cr_expect_eq(tu_run(cmd), 0, "the cached costs name the Llama block's ops");
    tu_remove_tree(d);
}

/* --op-costs measure times the Llama block; its file is taken by a Llama
 * run (auto still writes mode 0's bits with it, at a budget that makes
 * auto drop tensors), and GPT-2's file at the same shape is refused by
 * name (exit 1, as a file of another shape is), as is the Llama file for
 * a GPT-2 run. */
Test(llama_cli, measured_costs_are_the_familys_own, .timeout = 240)
{
    char *d = tu_tempdir(), args[8192], prefix[4200], a[1024], b[4300], env[4300], cmd[4400];
    tc_make_shards(d, 1, 2000);
    snprintf(env, sizeof env, "TRAIN_GPT_CACHE_DIR=%s/cl TRAIN_GPT_TEST_BASELINE=0", d);
    snprintf(args, sizeof args, "%s " LLAMA " --steps 1 --op-costs measure", tc_model_args(d));
    snprintf(prefix, sizeof prefix, "%s/measure_llama", d);
    cr_assert_eq(tc_run(env, args, prefix), 0);
    snprintf(env, sizeof env, "TRAIN_GPT_CACHE_DIR=%s/cg TRAIN_GPT_TEST_BASELINE=0", d);
    snprintf(args, sizeof args, "%s --steps 1 --op-costs measure", tc_model_args(d));
    snprintf(prefix, sizeof prefix, "%s/measure_gpt2", d);
    cr_assert_eq(tc_run(env, args, prefix), 0);
    snprintf(cmd, sizeof cmd, "cp %s/cl/op_costs_*.json %s/llama.json && cp %s/cg/op_costs_*.json "
             "%s/gpt2.json && ! grep -q '\"arch\"' %s/gpt2.json", d, d, d, d, d);
    cr_assert_eq(tu_run(cmd), 0, "one cost file each; GPT-2's names no family");
    /* mode 0, then auto with the Llama file under a budget below mode 0's
     * peak (947584 bytes at this shape, no baseline) and selective's
     * (923008): auto drops more than selective's tensors to fit */
    snprintf(a, sizeof a, "%s/g0.bin", d);
    snprintf(args, sizeof args, "%s " LLAMA " --steps 2 --recompute 0 --op-costs flops "
             "--dump-grads %s", tc_model_args(d), a);
    snprintf(prefix, sizeof prefix, "%s/mode0", d);
    cr_assert_eq(tc_run(env, args, prefix), 0);
    snprintf(a, sizeof a, "%s/gauto.bin", d);
    snprintf(args, sizeof args, "%s " LLAMA " --steps 2 --recompute auto --op-costs %s/llama.json "
             "--memory-budget 910000 --dump-grads %s", tc_model_args(d), d, a);
    snprintf(prefix, sizeof prefix, "%s/auto", d);
    cr_assert_eq(tc_run(env, args, prefix), 0);
    snprintf(b, sizeof b, "%s/g0.bin", d);
    cr_expect(tc_files_equal(a, b), "auto with the measured Llama costs: gradients differ");
    /* a cost file that does not fit the run: exit 1, as for one of another shape */
    snprintf(args, sizeof args, "%s " LLAMA " --steps 1 --op-costs %s/gpt2.json",
             tc_model_args(d), d);
    tc_run_expect(d, args, 1, "measured the ops of --arch gpt2's block, this run is --arch llama");
    snprintf(args, sizeof args, "%s --steps 1 --op-costs %s/llama.json", tc_model_args(d), d);
    tc_run_expect(d, args, 1, "measured the ops of --arch llama's block, this run is --arch gpt2");
    tu_remove_tree(d);
}

Test(llama_cli, cached_generation_writes_the_uncached_samples, .timeout = 120)
{
    char *d = tu_tempdir();
    tc_make_shards(d, 1, 2000);
    family_cli_expect_cached_generation_same(d, LLAMA, 40);
    tu_remove_tree(d);
}

Test(llama_cli, what_it_cannot_do_yet_is_refused_by_name, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 400);
    static const char *const cases[][2] = {
        {LLAMA " --save-checkpoint-llmc x", "--save-checkpoint-llmc: llm.c's checkpoints are"},
        {"--kv-heads 2", "--kv-heads: applies to --arch llama"},
        {"--ffn 64", "--ffn: applies to --arch llama"},
        {"--rope-theta 500000", "--rope-theta: applies to --arch llama"},
        {"--lm-head untied", "--lm-head: applies to --arch llama"},
        {"--arch llama --kv-heads 3", "--kv-heads: 3 does not divide --heads 4"},
        {"--arch llama --channels 36 --heads 4", "--heads: --arch llama needs an even head size"},
        {"--model llama-60m --arch gpt2", "--arch gpt2: contradicts --model llama-60m"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(args, sizeof args, "%s --steps 1 %s", tc_model_args(d), cases[i][0]);
        family_cli_expect_refused(d, args, cases[i][1]);
    }
    tu_remove_tree(d);
}

Test(llama_cli, the_cuda_backend_is_planned_and_opened_for_the_family, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096], prefix[4200], path[4300];
    tc_make_shards(d, 1, 400);
    /* --plan for an H100: the family's block at bf16, every mode's row */
    snprintf(args, sizeof args, "%s " LLAMA " --plan --device cuda --dtype bf16 --plan-device h100",
             tc_model_args(d));
    snprintf(prefix, sizeof prefix, "%s/plan", d);
    int rc = tc_run("", args, prefix);
    snprintf(path, sizeof path, "%s.out", prefix);
    char *o = tu_read_file(path, NULL);
    cr_expect_eq(rc, 0, "--plan --device cuda for llama: exit %d: %s", rc, o ? o : "");
    cr_expect(o && strstr(o, "plan: 2 layers, 4 heads, C=32, V=256, B=2, T=16, bf16"),
              "a bf16 plan of the run's shape: %s", o ? o : "");
    cr_expect(o && strstr(o, "\nselective "), "the modes' table: %s", o ? o : "");
    free(o);
    /* a run: whatever the backend says (no GPU here, or no CUDA in this
     * build), never the family's old refusal; a GPU's run trains */
    snprintf(args, sizeof args, "%s " LLAMA " --steps 1 --device cuda", tc_model_args(d));
    snprintf(prefix, sizeof prefix, "%s/run", d);
    rc = tc_run("", args, prefix);
    snprintf(path, sizeof path, "%s.err", prefix);
    char *e = tu_read_file(path, NULL);
    cr_expect(e && !strstr(e, "--arch llama runs on the cpu backend"), "refused by family: %s",
              e ? e : "");
    if (rc != 0)
        cr_expect(e && strstr(e, "--device cuda: "), "exit %d without the backend's reason: %s", rc,
                  e ? e : "");
    free(e);
    tu_remove_tree(d);
}

Test(llama_cli, a_model_file_or_checkpoint_of_the_other_family_is_refused, .timeout = 180)
{
    char *d = tu_tempdir(), args[4096], prefix[4200];
    tc_make_shards(d, 1, 2000);
    /* a llama model file and checkpoint, and a gpt2 model file */
    snprintf(args, sizeof args, "%s " LLAMA " --steps 1 --save %s/llama.bin --checkpoint-dir %s/ck",
             tc_model_args(d), d, d);
    snprintf(prefix, sizeof prefix, "%s/save_llama", d);
    cr_assert_eq(tc_run("", args, prefix), 0);
    snprintf(args, sizeof args, "%s --steps 1 --save %s/gpt2.bin", tc_model_args(d), d);
    snprintf(prefix, sizeof prefix, "%s/save_gpt2", d);
    cr_assert_eq(tc_run("", args, prefix), 0);
    /* the other family asked for: refused, naming both */
    snprintf(args, sizeof args, "%s --steps 1 --init-from %s/llama.bin", tc_data_args(d), d);
    family_cli_expect_refused(d, args, "holds a llama model (give --arch llama");
    snprintf(args, sizeof args, "%s --arch llama --steps 1 --init-from %s/gpt2.bin",
             tc_data_args(d), d);
    family_cli_expect_refused(d, args, "holds a gpt2 model (give --arch gpt2");
    snprintf(args, sizeof args, "%s --steps 2 --checkpoint-dir %s/ck --resume", tc_model_args(d),
             d);
    family_cli_expect_refused(d, args, "holds a llama model (give --arch llama");
    snprintf(args, sizeof args, "%s --arch llama --kv-heads 4 --steps 1 --init-from %s/llama.bin",
             tc_data_args(d), d);
    family_cli_expect_refused(d, args, "--kv-heads 4: contradicts");
    /* its own family: taken, and the resume goes on */
    snprintf(args, sizeof args, "%s --arch llama --steps 1 --init-from %s/llama.bin",
             tc_data_args(d), d);
    snprintf(prefix, sizeof prefix, "%s/init_llama", d);
    cr_expect_eq(tc_run("", args, prefix), 0);
    snprintf(args, sizeof args, "%s " LLAMA " --steps 2 --checkpoint-dir %s/ck --resume",
             tc_model_args(d), d);
    snprintf(prefix, sizeof prefix, "%s/resume_llama", d);
    cr_expect_eq(tc_run("", args, prefix), 0);
    tu_remove_tree(d);
}
