/* tests/unit/model/test_planner.c — the memory planner's figures, checked by hand and
 * against the arenas the model really carves. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>

#include "model/gpt2_block.h"
#include "model/gpt.h"
#include "model/planner.h"
#include "tests/lib/test_util.h"

static PlanInput xl_input(int B)
{
    PlanInput in = {.B = B, .T = 1024, .dtype = DTYPE_FP32};
    config_preset(&in.cfg, "d48");
    in.cfg.vocab_size = 50257;
    in.cfg.padded_vocab = 50304;
    in.cfg.max_seq_len = 1024;
    return in;
}

Test(planner, recompute1_stores_exactly_block_inputs)
{
    for (int L = 1; L <= 48; L += 47) {
        PlanInput in = xl_input(2);
        in.cfg.num_layers = L;
        MemoryPlan p;
        char err[128];
        cr_assert_eq(planner_sizes(&in, RECOMPUTE_BLOCK, &p, err, sizeof err), 0, "%s", err);
        size_t want = (size_t)L * 2 * 1024 * 1600 * 4;
        cr_expect_eq(p.bytes[MEM_ACTIVATIONS], want, "L=%d: stored %zu, want L*B*T*C*4 = %zu", L,
                     p.bytes[MEM_ACTIVATIONS], want);
        /* the workspace is one block tape: 15 C act values and 4 + NH fp32
         * statistics per token */
        size_t tape = (size_t)2 * 1024 * (15 * 1600 * 4 + (4 + 25) * 4);
        cr_expect_eq(p.bytes[MEM_WORKSPACE], tape);
    }
}

Test(planner, recompute0_to_1_ratio_at_48_layers)
{
    PlanInput in = xl_input(1);
    MemoryPlan p0, p1;
    char err[128];
    cr_assert_eq(planner_sizes(&in, RECOMPUTE_NONE, &p0, err, sizeof err), 0);
    cr_assert_eq(planner_sizes(&in, RECOMPUTE_BLOCK, &p1, err, sizeof err), 0);
    double ratio = (double)p0.bytes[MEM_ACTIVATIONS] / (double)p1.bytes[MEM_ACTIVATIONS];
    printf("planner: L=48 C=1600 T=1024 B=1: stored activations %zu (recompute 0) / %zu "
           "(recompute 1) = %.2fx\n", p0.bytes[MEM_ACTIVATIONS], p1.bytes[MEM_ACTIVATIONS], ratio);
    cr_expect_gt(ratio, 10.0, "ratio %.2f", ratio);
    cr_expect_eq(p0.bytes[MEM_WORKSPACE], 0);
}

Test(planner, hand_computed_tiny_fp32)
{
    PlanInput in = {.cfg = tu_tiny_config(), .B = 2, .T = 8, .dtype = DTYPE_FP32, .loss_chunk = 5};
    MemoryPlan p;
    char err[128];
    cr_assert_eq(planner_sizes(&in, RECOMPUTE_NONE, &p, err, sizeof err), 0);
    /* params: wte 128*32 + wpe 8*32 + 2 layers * (12*32*32 + 13*32) + 2*32 */
    size_t np = 4096 + 256 + 2 * (12288 + 416) + 64;
    cr_expect_eq(p.num_params, np);
    cr_expect_eq(p.bytes[MEM_PARAMS], np * 4);
    cr_expect_eq(p.bytes[MEM_GRADS], np * 4);
    cr_expect_eq(p.bytes[MEM_OPTIMIZER], np * 8);
    size_t N = 16, C = 32, tape = N * 15 * C * 4 + N * (4 + 4) * 4;
    cr_expect_eq(p.bytes[MEM_ACTIVATIONS], 2 * (N * C * 4) + 2 * tape);
    /* N*C*4 = 2048 is already a multiple of 256; the five N-float/int
     * buffers (64 bytes each) are each rounded up to ARENA_ALIGN = 256 */
    cr_expect_eq(p.bytes[MEM_SCRATCH], 8 * N * C * 4 + 5 * 256);
    cr_expect_eq(p.bytes[MEM_HEAD], 5 * 128 * 4, "head = chunk * Vp * 4");
}

Test(planner, bf16_halves_activations_and_adds_master)
{
    PlanInput in = xl_input(1);
    MemoryPlan f, b;
    char err[128];
    cr_assert_eq(planner_sizes(&in, RECOMPUTE_BLOCK, &f, err, sizeof err), 0);
    in.dtype = DTYPE_BF16;
    cr_assert_eq(planner_sizes(&in, RECOMPUTE_BLOCK, &b, err, sizeof err), 0);
    cr_expect_eq(b.bytes[MEM_ACTIVATIONS] * 2, f.bytes[MEM_ACTIVATIONS]);
    cr_expect_eq(b.bytes[MEM_PARAMS] * 2, f.bytes[MEM_PARAMS]);
    cr_expect_eq(b.bytes[MEM_OPTIMIZER], f.bytes[MEM_OPTIMIZER] + f.num_params * 4);
}

Test(planner, head_never_holds_full_logits)
{
    PlanInput in = xl_input(8);
    MemoryPlan p;
    char err[128];
    cr_assert_eq(planner_sizes(&in, RECOMPUTE_BLOCK, &p, err, sizeof err), 0);
    cr_expect_lt(p.bytes[MEM_HEAD], (size_t)8 * 1024 * 50304 * 4);
    cr_expect_eq(p.bytes[MEM_HEAD], (size_t)p.loss_chunk * 50304 * 4);
}

/* The tiny model with 3 layers on a fresh cpu backend (returned, for
 * backend_close after gpt_free). */
static Backend *init_three_layers(GPT *g, int B, int T, int mode)
{
    GPTConfig cfg = tu_tiny_config();
    cfg.num_layers = 3;
    Backend *be = tu_cpu();
    char err[256];
    cr_assert_eq(gpt_init(g, &cfg, be, B, T, mode, 0, err, sizeof err), 0, "%s", err);
    return be;
}

/* The arenas reserve exactly the planner's bytes and the model carves
 * every byte of them: high-water == planner, per category. T = 5 makes
 * every buffer size an odd multiple of 4 bytes, so the planner's rounding
 * to ARENA_ALIGN is exercised too. */
Test(planner, arenas_allocate_exactly_the_plan)
{
    static const int shapes[][2] = {{2, 8}, {1, 5}, {3, 5}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int mode = 0; mode <= RECOMPUTE_SELECTIVE; mode++) {
            GPT g;
            int B = shapes[si][0], T = shapes[si][1];
            Backend *be = init_three_layers(&g, B, T, mode);
            for (int c = 0; c < MEM_NUM_CATEGORIES; c++) {
                cr_expect_eq(g.arenas[c].size, g.plan.bytes[c], "B=%d T=%d mode %d %s", B, T,
                             mode, planner_category_name(c));
                cr_expect_eq(g.arenas[c].used, g.plan.bytes[c],
                             "B=%d T=%d mode %d %s: carved %zu of %zu", B, T, mode,
                             planner_category_name(c), g.arenas[c].used, g.plan.bytes[c]);
            }
            gpt_free(&g);
            backend_close(be);
        }
}

/* Every buffer starts on a 256-byte boundary whatever its slot, so a tape
 * kept in the stored arena (recompute 0) and the same tape in the
 * workspace (recompute 1) are equally aligned: the GPU's matmul algorithm
 * choice, which depends on alignment, cannot differ between the modes. At
 * this shape (N = 5 tokens, C = 32) no raw buffer size is a multiple of
 * 256 bytes (a residual slot is 640), so unrounded neighbours would not be. */
#define ALIGNED(p) (((uintptr_t)(p) % 256) == 0)
Test(planner, every_buffer_is_256_byte_aligned)
{
    for (int mode = 0; mode <= RECOMPUTE_SELECTIVE; mode++) {
        GPT g;
        Backend *be = init_three_layers(&g, 1, 5, mode);
        for (int i = 0; i < g.sched.n_res_slots; i++)
            cr_expect(ALIGNED(g.res_slots[i]), "mode %d residual slot %d at %p", mode, i,
                      g.res_slots[i]);
        for (int j = 0; j < g.sched.n_tape_slots; j++) {
            BlockTape *t = &g.tapes[j];
            /* a tape's act part starts with ln1 (full) or qkv (selective) */
            void *act = t->kind == GPT2_SELECTIVE ? t->qkv : t->ln1;
            cr_expect(ALIGNED(act) && ALIGNED(t->ln1_mean), "mode %d tape %d: act %p f32 %p",
                      mode, j, act, t->ln1_mean);
        }
        void *scratch[] = {g.final_res, g.lnf, g.dres, g.dsmall, g.dbig, g.lnf_mean,
                           g.lnf_rstd, g.losses, g.tokens, g.targets, g.chunk_buf,
                           g.params, g.grads, g.m, g.v};
        for (size_t k = 0; k < sizeof scratch / sizeof scratch[0]; k++)
            cr_expect(ALIGNED(scratch[k]), "mode %d buffer %zu at %p", mode, k, scratch[k]);
        gpt_free(&g);
        backend_close(be);
    }
}

/* ZeRO-1 (--zero 1): per-rank optimizer bytes and padding, by hand. GPT-2
 * XL (1,557,686,400 parameters with Vp = 50304) over 8 ranks: a shard is
 * ceil(n / 8) = 194,710,800 rounded up to a multiple of 64 = 194,710,848
 * elements, so 8 shards pad the vector by 384 elements. */
Test(planner, zero1_shards_the_optimizer_state)
{
    for (int bf16 = 0; bf16 <= 1; bf16++) {
        PlanInput in = xl_input(1);
        in.dtype = bf16 ? DTYPE_BF16 : DTYPE_FP32;
        MemoryPlan p0, p1;
        char err[128];
        cr_assert_eq(planner_sizes(&in, RECOMPUTE_BLOCK, &p0, err, sizeof err), 0);
        in.world_size = 8;
        in.zero = 1;
        cr_assert_eq(planner_sizes(&in, RECOMPUTE_BLOCK, &p1, err, sizeof err), 0);
        size_t n = 1557686400, shard = 194710848, ab = bf16 ? 2 : 4;
        cr_assert_eq(p1.num_params, n);
        cr_expect_eq(p1.shard_params, shard);
        cr_expect_eq(p1.padded_params, 8 * shard);
        cr_expect_eq(p1.bytes[MEM_PARAMS], 8 * shard * ab);
        /* the full gradient and the receive buffer of the ordered sums:
         * 8 ranks' pieces of 2^20 elements (the shard is longer) */
        cr_expect_eq(p0.comm_bytes, 0);
        cr_expect_eq(p1.reduce_chunk, (size_t)1 << 20);
        cr_expect_eq(p1.comm_bytes, 8 * ((size_t)1 << 20) * ab);
        cr_expect_eq(p1.bytes[MEM_GRADS], 8 * shard * ab + p1.comm_bytes);
        /* m and v (and the fp32 master in bf16), fp32, one shard each */
        cr_expect_eq(p1.bytes[MEM_OPTIMIZER], shard * 4 * (bf16 ? 3 : 2));
        cr_expect_eq(p0.bytes[MEM_OPTIMIZER], n * 4 * (bf16 ? 3 : 2));
        cr_expect_eq(p1.total - p0.total,
                     (p1.bytes[MEM_PARAMS] - p0.bytes[MEM_PARAMS]) * 2 + p1.comm_bytes -
                         (p0.bytes[MEM_OPTIMIZER] - p1.bytes[MEM_OPTIMIZER]));
        printf("planner: GPT-2 XL, %s, 8 ranks: optimizer %zu bytes per rank with --zero 1, "
               "%zu without; total %zu vs %zu\n", bf16 ? "bf16" : "fp32", p1.bytes[MEM_OPTIMIZER],
               p0.bytes[MEM_OPTIMIZER], p1.total, p0.total);
        /* the ranges tile [0, n) in rank order */
        size_t at = 0;
        for (int r = 0; r < 8; r++) {
            size_t b, e;
            planner_shard_range(&p1, r, &b, &e);
            cr_expect_eq(b, at);
            cr_expect_eq(e, r < 7 ? (size_t)(r + 1) * shard : n);
            at = e;
        }
        cr_expect_eq(at, n);
    }
}

/* --zero 2 keeps, of the gradients, one rank's shard and two full-size
 * buffers: wte + wpe + LN_f (Vp C + T_max C + 2C) and one block (12 C^2 +
 * 13 C), each rounded up to ARENA_ALIGN. Counted here from GPT-2's shapes,
 * not from config_param_sizes. */
static size_t round_up(size_t x) { return (x + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN; }

Test(planner, zero2_shards_the_gradients)
{
    for (int bf16 = 0; bf16 <= 1; bf16++) {
        PlanInput in = xl_input(1);
        in.dtype = bf16 ? DTYPE_BF16 : DTYPE_FP32;
        in.world_size = 8;
        in.zero = 1;
        MemoryPlan p1, p2;
        char err[128];
        cr_assert_eq(planner_sizes(&in, RECOMPUTE_BLOCK, &p1, err, sizeof err), 0);
        in.zero = 2;
        cr_assert_eq(planner_sizes(&in, RECOMPUTE_BLOCK, &p2, err, sizeof err), 0);
        size_t C = 1600, shard = 194710848, ab = bf16 ? 2 : 4;
        size_t outer = 50304 * C + 1024 * C + 2 * C, block = 12 * C * C + 13 * C;
        cr_expect_eq(p2.zero, 2);
        cr_expect_eq(p2.shard_params, shard);
        cr_expect_eq(p2.grad_shard_bytes, round_up(shard * ab));
        cr_expect_eq(p2.grad_outer_bytes, round_up(outer * ab));
        cr_expect_eq(p2.grad_layer_bytes, round_up(block * ab));
        cr_expect_eq(p2.bytes[MEM_GRADS], round_up(shard * ab) + round_up(outer * ab) +
                                              round_up(block * ab) + 8 * ((size_t)1 << 20) * ab);
        /* everything else as ZeRO-1 plans it */
        cr_expect_eq(p2.bytes[MEM_PARAMS], p1.bytes[MEM_PARAMS]);
        cr_expect_eq(p2.bytes[MEM_OPTIMIZER], p1.bytes[MEM_OPTIMIZER]);
        cr_expect_eq(p1.total - p2.total, p1.bytes[MEM_GRADS] - p2.bytes[MEM_GRADS]);
        printf("planner: GPT-2 XL, %s, 8 ranks: grads %zu bytes per rank with --zero 2 (shard "
               "%zu + wte/wpe/LN_f %zu + one block %zu), %zu with --zero 1\n",
               bf16 ? "bf16" : "fp32", p2.bytes[MEM_GRADS], p2.grad_shard_bytes,
               p2.grad_outer_bytes, p2.grad_layer_bytes, p1.bytes[MEM_GRADS]);
    }
}

/* The receive buffer of the ordered sums over ranks (planner.h,
 * PLANNER_REDUCE_CHUNK), by hand: none at world 1; W pieces of a whole
 * block when the block is short, at every --zero (the tiny model: 4 ranks,
 * its blocks ceil(n / 4) rounded up to 64 elements); in MEM_GRADS. */
Test(planner, ordered_sums_receive_buffer)
{
    for (int zero = 0; zero <= 3; zero++) {
        PlanInput in = {.cfg = tu_tiny_config(), .B = 1, .T = 8, .dtype = DTYPE_FP32,
                        .world_size = 1, .zero = zero};
        MemoryPlan p1, p4;
        char err[128];
        cr_assert_eq(planner_sizes(&in, RECOMPUTE_NONE, &p1, err, sizeof err), 0);
        in.world_size = 4;
        cr_assert_eq(planner_sizes(&in, RECOMPUTE_NONE, &p4, err, sizeof err), 0);
        size_t n = p4.num_params, block = ((n + 3) / 4 + 63) / 64 * 64;
        cr_expect_eq(p1.comm_bytes, 0, "--zero %d", zero);
        cr_expect_eq(p4.block_params, block, "--zero %d", zero);
        cr_expect_eq(p4.reduce_chunk, block, "--zero %d", zero);
        cr_expect_eq(p4.comm_bytes, round_up(4 * block * 4), "--zero %d", zero);
        if (zero < 2) /* the full gradient, and the buffer */
            cr_expect_eq(p4.bytes[MEM_GRADS], round_up(p4.padded_params * 4) + p4.comm_bytes,
                         "--zero %d", zero);
    }
}

/* A tiny model over more ranks than 64-element blocks: the last ranks own
 * empty ranges in the padding, and the ranges still tile the vector. */
Test(planner, zero1_more_ranks_than_blocks)
{
    PlanInput in = {.cfg = tu_tiny_config(), .B = 1, .T = 8, .dtype = DTYPE_FP32,
                    .world_size = 1000, .zero = 1};
    MemoryPlan p;
    char err[128];
    cr_assert_eq(planner_sizes(&in, RECOMPUTE_NONE, &p, err, sizeof err), 0);
    cr_expect_eq(p.shard_params, 64);
    cr_expect_eq(p.padded_params, 64000);
    size_t at = 0, b, e;
    for (int r = 0; r < 1000; r++) {
        planner_shard_range(&p, r, &b, &e);
        cr_expect_eq(b, at < p.num_params ? at : p.num_params);
        cr_expect_leq(b, e);
        at = (size_t)(r + 1) * 64;
    }
    cr_expect_eq(e, p.num_params);
}

/* On the GPU path (bf16) the default chunk is 4096 tokens, big enough to
 * fill the device's matmuls; still a fraction of the full logits. */
Test(planner, bf16_head_chunk_fills_a_gpu)
{
    PlanInput in = xl_input(8);
    in.dtype = DTYPE_BF16;
    MemoryPlan p;
    char err[128];
    cr_assert_eq(planner_sizes(&in, RECOMPUTE_BLOCK, &p, err, sizeof err), 0);
    cr_expect_eq(p.loss_chunk, 4096);
    cr_expect_eq(p.bytes[MEM_HEAD], (size_t)4096 * 50304 * 2, "bf16 logits");
    in.B = 2; /* B*T = 2048 < 4096: one chunk of all tokens */
    cr_assert_eq(planner_sizes(&in, RECOMPUTE_BLOCK, &p, err, sizeof err), 0);
    cr_expect_eq(p.loss_chunk, 2048);
    /* one-token chunks: the buffer still holds one fp32 row for head_logits */
    in.loss_chunk = 1;
    cr_assert_eq(planner_sizes(&in, RECOMPUTE_BLOCK, &p, err, sizeof err), 0);
    cr_expect_eq(p.bytes[MEM_HEAD], arena_round((size_t)50304 * 4));
}

/* --zero 3 keeps, of the parameters, one rank's shard and the buffers they
 * are gathered into: two blocks' (12 C^2 + 13 C each) and wte + wpe + LN_f
 * (Vp C + T_max C + 2C), each rounded up to ARENA_ALIGN; no separate
 * communication buffer. Gradients and optimizer state as --zero 2. Counted
 * here from GPT-2's shapes, not from config_param_sizes. */
Test(planner, zero3_shards_the_parameters)
{
    for (int bf16 = 0; bf16 <= 1; bf16++) {
        PlanInput in = xl_input(1);
        in.dtype = bf16 ? DTYPE_BF16 : DTYPE_FP32;
        in.world_size = 8;
        in.zero = 2;
        MemoryPlan p2, p3;
        char err[128];
        cr_assert_eq(planner_sizes(&in, RECOMPUTE_BLOCK, &p2, err, sizeof err), 0);
        in.zero = 3;
        cr_assert_eq(planner_sizes(&in, RECOMPUTE_BLOCK, &p3, err, sizeof err), 0);
        size_t C = 1600, shard = 194710848, ab = bf16 ? 2 : 4;
        size_t outer = 50304 * C + 1024 * C + 2 * C, block = 12 * C * C + 13 * C;
        cr_expect_eq(p3.zero, 3);
        cr_expect_eq(p3.shard_params, shard);
        cr_expect_eq(p3.param_shard_bytes, round_up(shard * ab));
        cr_expect_eq(p3.param_gather_bytes, 2 * round_up(block * ab));
        cr_expect_eq(p3.param_outer_bytes, round_up(outer * ab));
        cr_expect_eq(p3.comm_bytes, p2.comm_bytes); /* the sums' buffer, in MEM_GRADS */
        cr_expect_eq(p3.bytes[MEM_PARAMS], round_up(shard * ab) + 2 * round_up(block * ab) +
                                               round_up(outer * ab));
        /* everything else as ZeRO-2 plans it */
        cr_expect_eq(p3.bytes[MEM_GRADS], p2.bytes[MEM_GRADS]);
        cr_expect_eq(p3.bytes[MEM_OPTIMIZER], p2.bytes[MEM_OPTIMIZER]);
        cr_expect_eq(p2.total - p3.total, p2.bytes[MEM_PARAMS] - p3.bytes[MEM_PARAMS]);
        printf("planner: GPT-2 XL, %s, 8 ranks: params %zu bytes per rank with --zero 3 (shard "
               "%zu + two blocks %zu + wte/wpe/LN_f %zu), %zu with --zero 2\n",
               bf16 ? "bf16" : "fp32", p3.bytes[MEM_PARAMS], p3.param_shard_bytes,
               p3.param_gather_bytes, p3.param_outer_bytes, p2.bytes[MEM_PARAMS]);
    }
}

/* ZeRO-3's collectives per micro-batch, counted by hand from the programs
 * (schedule.h): recompute 0, selective and 1 gather every parameter before
 * the head and re-gather every block but the last (still in its buffer at
 * the head) after it; mode 2 (segments of k) re-gathers each segment's
 * blocks once for its re-forwards and again for their backwards, but the
 * top block of each segment once. Every gradient is reduce-scattered once:
 * the total is within 5% of 3x the parameters at recompute 0 and 1. */
Test(planner, zero3_counts_its_communication)
{
    PlanInput in = xl_input(1);
    in.world_size = 8;
    in.zero = 3;
    size_t C = 1600, L = 48, block = 12 * C * C + 13 * C, n = config_num_params(&in.cfg);
    size_t outer = 50304 * C + 1024 * C + 2 * C;
    cr_assert_eq(n, outer + L * block);
    const int modes[] = {RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_BLOCK};
    for (int i = 0; i < 3; i++) {
        MemoryPlan p;
        char err[128];
        cr_assert_eq(planner_sizes(&in, modes[i], &p, err, sizeof err), 0);
        cr_expect_eq(p.comm_gathered, n, "mode %d", modes[i]);
        /* every block but the two still in the buffers at the head */
        cr_expect_eq(p.comm_regathered, (L - 2) * block, "mode %d", modes[i]);
        cr_expect_eq(p.comm_scattered, n, "mode %d", modes[i]);
        double x = (double)(p.comm_gathered + p.comm_regathered + p.comm_scattered) / (3.0 * n);
        cr_expect(x > 0.95 && x <= 1.0, "mode %d: %.4f of 3x the parameters", modes[i], x);
    }
    MemoryPlan p;
    char err[128];
    cr_assert_eq(planner_sizes(&in, RECOMPUTE_SEGMENTS, &p, err, sizeof err), 0);
    /* k = round(sqrt(48)) = 7: segments of 7 from the bottom, the top one 6 */
    size_t k = 7, segs = (L + k - 1) / k, regather = 0;
    for (size_t s = 0; s < segs; s++) {
        size_t len = s + 1 < segs ? k : L - s * k;
        regather += 2 * len - 1; /* re-forwards, then backwards but the top one */
    }
    cr_expect_eq(p.comm_gathered, n);
    cr_expect_leq(p.comm_regathered, regather * block, "%zu blocks", p.comm_regathered / block);
    cr_expect_geq(p.comm_regathered, (L - 2) * block);
    /* no collectives below ZeRO-2; ZeRO-2 reduce-scatters only */
    in.zero = 2;
    cr_assert_eq(planner_sizes(&in, RECOMPUTE_BLOCK, &p, err, sizeof err), 0);
    cr_expect(p.comm_gathered == 0 && p.comm_regathered == 0 && p.comm_scattered == n);
    in.zero = 1;
    cr_assert_eq(planner_sizes(&in, RECOMPUTE_BLOCK, &p, err, sizeof err), 0);
    cr_expect(p.comm_gathered == 0 && p.comm_regathered == 0 && p.comm_scattered == 0);
    cr_expect(p.param_shard_bytes == 0 && p.param_gather_bytes == 0);
}

/* The target: a 7B-class GPT (L=32, C=4096, 32 heads, T=2048, B=1,
 * bf16, recompute 1) on 8 ranks at --zero 3 plans at most 16 GiB a rank on
 * the device (what --plan prints for an unopened GPU: no baseline, host
 * copies or cpu tile scratch), and with --offload optimizer at most 8 GiB. */
Test(planner, zero3_fits_a_7b_gpt_on_8_ranks)
{
    PlanInput in = {.B = 1, .T = 2048, .dtype = DTYPE_BF16, .world_size = 8, .zero = 3};
    in.cfg = (GPTConfig){.max_seq_len = 2048, .vocab_size = 50257, .padded_vocab = 50304,
                         .num_layers = 32, .num_heads = 32, .channels = 4096};
    MemoryPlan p, po;
    char err[128];
    cr_assert_eq(planner_sizes(&in, RECOMPUTE_BLOCK, &p, err, sizeof err), 0, "%s", err);
    in.offload = OFFLOAD_OPTIMIZER;
    cr_assert_eq(planner_sizes(&in, RECOMPUTE_BLOCK, &po, err, sizeof err), 0, "%s", err);
    cr_expect_leq(p.total, (size_t)16 << 30, "%zu B", p.total);
    cr_expect_leq(po.total, (size_t)8 << 30, "%zu B", po.total);
    printf("planner: 7B-class GPT, bf16, recompute 1, 8 ranks, --zero 3: %.3f GiB a rank on the "
           "device, %.3f GiB with --offload optimizer (host %.3f GiB)\n",
           p.total / 1073741824.0, po.total / 1073741824.0, po.host_total / 1073741824.0);
}
