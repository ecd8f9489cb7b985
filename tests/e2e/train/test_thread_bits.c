/* tests/e2e/train/test_thread_bits.c — a cpu run gives the same bits at
 * --threads 1 and 2 (the kernels/ops.h contract): a tiny GPT-2 and a tiny
 * Llama, at GPT-2's vocabulary (the loss head's products, 50257 wide, are
 * cut into many tiles: kernels/cpu/gemm_tiles.c), with and without
 * recompute; --dump-grads' files compared byte for byte (cmp), and every
 * step's loss in the --log equal as written (the log's shortest
 * round-trip doubles). OpenBLAS's own threading gave other low bits at
 * two threads (1.2M of 6.5M bytes of the gradients:
 * dev/notes/openblas-threads.md). The reference is the run at one thread. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

#define STEPS 2

static void same_bits(const char *d, const char *name, const char *model)
{
    char args[2][2048], prefix[2][600], grads[2][600], log[2][600];
    for (int i = 0; i < 2; i++) {
        int threads = i + 1;
        snprintf(prefix[i], sizeof prefix[i], "%s/%s.t%d", d, name, threads);
        snprintf(grads[i], sizeof grads[i], "%s.grads.bin", prefix[i]);
        snprintf(log[i], sizeof log[i], "%s.jsonl", prefix[i]);
        snprintf(args[i], sizeof args[i],
                 "%s --vocab 50257 --seq-len 32 --batch 4 --steps %d --val-every 0 "
                 "--val-batches 1 --device cpu --threads %d --lr 1e-3 --seed 5 "
                 "--train-data '%s/train_*.bin' --val-data %s/val.bin --op-costs flops "
                 "--dump-grads %s --log %s",
                 model, STEPS, threads, d, d, grads[i], log[i]);
        int rc = tc_run(NULL, args[i], prefix[i]);
        cr_assert_eq(rc, 0, "%s: exit %d (%s.out, .err)", name, rc, prefix[i]);
    }
    cr_expect(tc_files_equal(grads[0], grads[1]), "%s: --dump-grads differs at 1 and 2 threads "
              "(cmp %s %s)", name, grads[0], grads[1]);
    double loss[2][STEPS + 1];
    int steps[2][STEPS + 1];
    for (int i = 0; i < 2; i++)
        cr_assert_eq(tc_log_losses(log[i], steps[i], loss[i], NULL, STEPS + 1), STEPS,
                     "%s: %d steps in %s", name, STEPS, log[i]);
    for (int s = 0; s < STEPS; s++)
        cr_expect(loss[0][s] == loss[1][s], "%s: step %d's loss %.17g at 1 thread, %.17g at 2",
                  name, steps[0][s], loss[0][s], loss[1][s]);
}

Test(thread_bits, gpt2_grads_and_losses_equal_at_1_and_2_threads, .timeout = 240)
{
    char *d = tu_tempdir();
    tc_make_shards(d, 1, 40000);
    same_bits(d, "gpt2_r0", "--arch gpt2 --layers 2 --channels 32 --heads 4 --recompute 0");
    same_bits(d, "gpt2_r1", "--arch gpt2 --layers 2 --channels 32 --heads 4 --recompute 1");
    tu_remove_tree(d);
}

Test(thread_bits, llama_grads_and_losses_equal_at_1_and_2_threads, .timeout = 240)
{
    char *d = tu_tempdir();
    tc_make_shards(d, 1, 40000);
    same_bits(d, "llama_r0", "--arch llama --layers 2 --channels 32 --heads 4 --kv-heads 2 "
              "--ffn 48 --recompute 0");
    same_bits(d, "llama_r1", "--arch llama --layers 2 --channels 32 --heads 4 --kv-heads 2 "
              "--ffn 48 --recompute 1");
    tu_remove_tree(d);
}
