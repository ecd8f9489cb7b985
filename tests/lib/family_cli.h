/* tests/lib/family_cli.h — what the model-family CLI suites
 * (tests/e2e/train/: llama_cli, llama_options_cli, llama_head_dim_cli)
 * share: a refusal by name, the family's training under every --recompute
 * mode against mode 0's gradients, and its samples with and without the
 * KV cache. Each drives the test build's train_gpt through cli_harness.h
 * on the tiny model (tc_model_args) in a folder the caller made (with
 * tc_make_shards) and removes.
 *
 * Owns: nothing past a call; Criterion expectations name the flags. */
#ifndef TESTS_FAMILY_CLI_H
#define TESTS_FAMILY_CLI_H

/* Run "BIN args" (output prefix dir/refused): expects exit 2 and `want`
 * in its stderr, which is one line. */
void family_cli_expect_refused(const char *dir, const char *args, const char *want);

/* Two steps of tc_model_args(dir) then `flags` under every --recompute
 * mode (0, 1, 2, selective, auto; --op-costs flops --memory-budget 4GiB),
 * each run's first step's gradients dumped to dir/grads_<mode>.bin, its
 * output to dir/run_<mode>.out/.err. Asserts each exits 0; expects
 * `header` in each run's stdout (message `header_what`), `selective`
 * (when not NULL) in selective's, and every mode's gradients byte for
 * byte mode 0's. */
void family_cli_expect_modes_write_mode_0s_grads(const char *dir, const char *flags,
                                                 const char *header, const char *header_what,
                                                 const char *selective);

/* Two steps of tc_model_args(dir) then `flags`, then --generate `tokens`
 * --num-samples 2 --seed 7 --prompt 'ROMEO:', with --kv-cache 0 and 1
 * (output dir/gen0, dir/gen1): both exit 0 and print both samples, and
 * their stdout from the first prompt on (the lines before hold timings,
 * which differ) is the same text. */
void family_cli_expect_cached_generation_same(const char *dir, const char *flags, int tokens);

#endif
