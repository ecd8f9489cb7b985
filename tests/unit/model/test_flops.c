/* tests/unit/model/test_flops.c — FLOP counts (model/flops.h) against counts worked
 * by hand for a small shape, and the recompute of each mode. */
#include <criterion/criterion.h>

#include "model/gpt2_block.h"
#include "model/flops.h"

static GPTConfig tiny(void)
{
    GPTConfig c = {.max_seq_len = 16, .vocab_size = 100, .padded_vocab = 128,
                   .num_layers = 4, .num_heads = 2, .channels = 8};
    return c;
}

Test(flops, hand_counted_small_shape)
{
    GPTConfig cfg = tiny();
    FlopCounts f;
    flops_count(&cfg, 2, 4, &f); /* N = 8, C = 8 */
    /* matmuls 24*N*C^2 = 12288; attention 2*B*T^2*C = 512; elementwise
     * (8 + 1 + 8 + 9*4 + 1)*N*C = 54*64 = 3456 */
    cr_assert_eq(f.block_fwd, 12288 + 512 + 3456);
    cr_assert_eq(f.block_fwd_noout, 16256 - 4096 - 64, "no MLP projection, no residual add");
    cr_assert_eq(f.block_sel, (8 + 8 + 36) * 64);
    cr_assert_eq(f.block_bwd, 2 * 12288 + 5 * 256 + 2 * 3456);
    cr_assert_eq(f.embed_fwd, 64);
    cr_assert_eq(f.head_fwd, 8 * 64 + 2 * 8 * 8 * 128 + 5 * 8 * 128);
    cr_assert_eq(f.step, 64 + 128 + 4 * (16256 + 32768) + 22016 + 44032);
}

Test(flops, recompute_of_each_mode)
{
    GPTConfig cfg = tiny();
    FlopCounts f;
    char err[256];
    flops_count(&cfg, 2, 4, &f);
    Schedule s;
    cr_assert_eq(schedule_build(&s, &GPT2_BLOCK, RECOMPUTE_NONE, 4, err, sizeof err), 0);
    cr_assert_eq(flops_recompute(&f, &s), 0);
    schedule_free(&s);
    cr_assert_eq(schedule_build(&s, &GPT2_BLOCK, RECOMPUTE_BLOCK, 4, err, sizeof err), 0);
    cr_assert_eq(flops_recompute(&f, &s), 4 * f.block_fwd_noout);
    schedule_free(&s);
    cr_assert_eq(schedule_build(&s, &GPT2_BLOCK, RECOMPUTE_SELECTIVE, 4, err, sizeof err), 0);
    cr_assert_eq(flops_recompute(&f, &s), 4 * f.block_sel);
    schedule_free(&s);
    /* k = 3 on 4 layers: segments {0,1,2} and {3}; each re-run forwards
     * every block, the segment's last without its output. */
    cr_assert_eq(schedule_build_segments(&s, &GPT2_BLOCK, 4, 3, err, sizeof err), 0);
    cr_assert_eq(flops_recompute(&f, &s), 2 * f.block_fwd + 2 * f.block_fwd_noout);
    schedule_free(&s);
}
