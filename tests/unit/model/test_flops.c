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

/* The Llama block (llama_cost.c's counts: RMSNorm 5, RoPE 6 a rotated
 * element, SwiGLU 6 an element of F), worked by hand: C 8, 2 heads, 1
 * key/value head (hs 4, so k and v are 4 wide), F 16, N = 8. */
Test(flops, llama_hand_counted)
{
    GPTConfig cfg = tiny();
    cfg.arch = ARCH_LLAMA;
    cfg.kv_heads = 1;
    cfg.ffn = 16;
    FlopCounts f;
    flops_count(&cfg, 2, 4, &f);
    /* rms 5*64 twice 640; qkv 2*8*8*(8+8) 2048; rope 6*8*(8+4) 576;
     * attention 2*2*16*8 512; wo 2*8*8*8 1024; adds 2*64 128; gate/up
     * 2*8*8*32 4096; SwiGLU 6*8*16 768; down 2*8*16*8 2048 */
    cr_assert_eq(f.block_fwd, 640 + 2048 + 576 + 512 + 1024 + 128 + 4096 + 768 + 2048);
    cr_assert_eq(f.block_fwd_noout, 11840 - 2048 - 64, "no down projection, no residual add");
    cr_assert_eq(f.block_sel, 320 + 320 + 768, "rms1, rms2, swiglu");
    cr_assert_eq(f.block_bwd, 2 * (11840 - 512) + 5 * 256);
    cr_assert_eq(f.head_fwd, 320 + 2 * 8 * 8 * 128 + 5 * 8 * 128);
    cr_assert_eq(f.step, 64 + 128 + 4 * (11840 + 23936) + 21824 + 43648);
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
