/* tests/unit/model/test_planner_offload.c — --offload's split of the planner's bytes
 * between the device and the host tier (model/planner.h), worked by hand: a small shape
 * in every fixed mode, GPT-2 XL and a 7B-class GPT in bf16 (the device targets),
 * the --plan table's max_B under a host budget, and --offload's parsing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "model/gpt2_block.h"
#include "model/planner.h"

/* Shape: L=4, C=8, NH=2, Vp=128, B=2, T=4, fp32 (test_planner_modes.c's): one residual
 * slot N*C*4 = 256 B, a full tape 4096 B, params and grads 18688 B each (4656 floats,
 * rounded to 256), AdamW m and v 18688 each, no master, scratch 3328, head 4096. */
static PlanInput tiny(int offload)
{
    PlanInput in = {.cfg = {.max_seq_len = 16, .vocab_size = 100, .padded_vocab = 128,
                            .num_layers = 4, .num_heads = 2, .channels = 8},
                    .B = 2, .T = 4, .dtype = DTYPE_FP32, .offload = offload};
    return in;
}

static MemoryPlan plan_of(const PlanInput *in, int mode, int k)
{
    MemoryPlan p;
    Schedule s;
    char err[256];
    int rc = k ? schedule_build_segments(&s, &GPT2_BLOCK, in->cfg.num_layers, k, err, sizeof err)
               : schedule_build(&s, &GPT2_BLOCK, mode, in->cfg.num_layers, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    planner_plan(in, &s, &p);
    schedule_free(&s);
    return p;
}

#define FIXED_NO_OPT (2 * 18688 + 3328 + 4096) /* params, grads, scratch, head */
#define OPT (2 * 18688)                        /* fp32: m and v, no master */
#define STAGING (2 * 18688) /* the host's gradient and parameter staging, fp32 */

Test(planner_offload, tiny_every_mode_by_hand)
{
    static const struct {
        int mode, k;
        size_t act, ws, n_stored; /* device bytes without offload; stored inputs */
    } cases[] = {
        {RECOMPUTE_NONE, 0, 4 * 256 + 4 * 4096, 0, 4},
        {RECOMPUTE_BLOCK, 0, 4 * 256, 4096, 4},
        {RECOMPUTE_SELECTIVE, 0, 4 * 256 + 4 * 2560, 1024, 4},
        {RECOMPUTE_SEGMENTS, 2, 2 * 256, 1 * 256 + 2 * 4096, 2}, /* 2 checkpoints */
        {RECOMPUTE_SEGMENTS, 4, 1 * 256, 3 * 256 + 4 * 4096, 1}, /* 1: a ring of one */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t act = cases[i].act, ws = cases[i].ws, n = cases[i].n_stored;
        size_t ring = n < 2 ? n : 2;
        PlanInput in0 = tiny(0), inc = tiny(OFFLOAD_CHECKPOINTS), ino = tiny(OFFLOAD_OPTIMIZER),
                  inb = tiny(OFFLOAD_CHECKPOINTS | OFFLOAD_OPTIMIZER);
        MemoryPlan p0 = plan_of(&in0, cases[i].mode, cases[i].k),
                   pc = plan_of(&inc, cases[i].mode, cases[i].k),
                   po = plan_of(&ino, cases[i].mode, cases[i].k),
                   pb = plan_of(&inb, cases[i].mode, cases[i].k);
        cr_expect_eq(p0.total, FIXED_NO_OPT + OPT + act + ws, "case %zu", i);
        cr_expect_eq(p0.host_total, 0);
        /* checkpoints: n stored inputs of 256 B move to the host, a ring stays */
        cr_expect_eq(pc.n_ring, (int)ring, "case %zu", i);
        cr_expect_eq(pc.bytes[MEM_ACTIVATIONS], act - n * 256 + ring * 256, "case %zu", i);
        cr_expect_eq(pc.bytes[MEM_WORKSPACE], ws, "case %zu", i);
        cr_expect_eq(pc.total, p0.total - (n - ring) * 256, "case %zu", i);
        cr_expect_eq(pc.host[HOST_CHECKPOINTS], n * 256, "case %zu", i);
        cr_expect_eq(pc.host_total, n * 256, "case %zu", i);
        /* optimizer: m and v (no master in fp32) move, with the host's staging of
         * the gradients and the parameters; params and grads stay */
        cr_expect_eq(po.bytes[MEM_OPTIMIZER], 0);
        cr_expect_eq(po.bytes[MEM_PARAMS], 18688);
        cr_expect_eq(po.bytes[MEM_GRADS], 18688);
        cr_expect_eq(po.host[HOST_OPTIMIZER], OPT + STAGING);
        cr_expect_eq(po.total, p0.total - OPT, "case %zu", i);
        /* both: the sums */
        cr_expect_eq(pb.total, p0.total - OPT - (n - ring) * 256, "case %zu", i);
        cr_expect_eq(pb.host_total, OPT + STAGING + n * 256, "case %zu", i);
    }
}

/* bf16: the fp32 master moves with m and v (three fp32 copies of the parameters), and
 * the staging is bf16. */
Test(planner_offload, bf16_optimizer_moves_master_m_and_v)
{
    PlanInput in = tiny(OFFLOAD_OPTIMIZER);
    in.dtype = DTYPE_BF16;
    MemoryPlan p = plan_of(&in, RECOMPUTE_BLOCK, 0);
    cr_expect_eq(p.bytes[MEM_OPTIMIZER], 0);
    cr_expect_eq(p.host[HOST_OPTIMIZER], 3 * 18688 + 2 * 9472,
                 "master, m, v: 4656 floats [18688] each; staging 4656 bf16 [9472] twice");
    cr_expect_eq(p.bytes[MEM_PARAMS], 9472, "4656 bf16 = 9312 [9472]");
}

static PlanInput gpt(int L, int C, int NH, int B, int T, int offload)
{
    PlanInput in = {.cfg = {.max_seq_len = T, .vocab_size = 50257, .padded_vocab = 50304,
                            .num_layers = L, .num_heads = NH, .channels = C},
                    .B = B, .T = T, .dtype = DTYPE_BF16, .offload = offload};
    return in;
}

/* GPT-2 XL, bf16, B=8, T=1024, recompute 1 with both offloads. N = 8192 tokens.
 * params 80486400 (wte) + 1638400 (wpe) + 48 x 30740800 + 3200 = 1557686400:
 * bf16 params and grads 3115372800 B each. Device: those, a ring of 2 residual
 * slots of N*C*2 = 26214400, the workspace tape (15*N*C*2 = 393216000 act + N*(4+25)*4
 * = 950272 f32), scratch (8*N*C*2 = 209715200 + 5*N*4 = 163840) and the head (4096 x
 * 50304 x 2 = 412090368) = 7299310080. Host: 48 x 26214400 inputs + 3 x 6230745600
 * (master, m, v) + 2 x 3115372800 (bf16 staging) = 26181273600. The target: device
 * <= 10 GiB. */
Test(planner_offload, gpt2_xl_both_offloads_under_10_gib)
{
    PlanInput in = gpt(48, 1600, 25, 8, 1024, OFFLOAD_CHECKPOINTS | OFFLOAD_OPTIMIZER);
    MemoryPlan p = plan_of(&in, RECOMPUTE_BLOCK, 0);
    cr_assert_eq(p.num_params, 1557686400);
    cr_expect_eq(p.bytes[MEM_PARAMS], 3115372800);
    cr_expect_eq(p.bytes[MEM_ACTIVATIONS], 2 * 26214400);
    cr_expect_eq(p.bytes[MEM_WORKSPACE], 393216000 + 950272);
    cr_expect_eq(p.bytes[MEM_SCRATCH], 209715200 + 163840);
    cr_expect_eq(p.bytes[MEM_HEAD], 412090368);
    cr_expect_eq(p.total, 7299310080);
    cr_expect_eq(p.host[HOST_CHECKPOINTS], 48 * 26214400);
    cr_expect_eq(p.host[HOST_OPTIMIZER], 3 * 6230745600 + 2 * (size_t)3115372800);
    cr_expect_eq(p.host_total, 26181273600);
    cr_expect_leq(p.total, (size_t)10 << 30);
    printf("planner_offload: GPT-2 XL bf16 B=8 T=1024 recompute 1 + checkpoints,optimizer: "
           "device %zu B (%.3f GiB), host %zu B (%.3f GiB)\n", p.total, p.total / 1073741824.0,
           p.host_total, p.host_total / 1073741824.0);
}

/* A 7B-class GPT: L=32, C=4096, NH=32, T=2048, B=1, bf16, recompute 1, both offloads.
 * N = 2048. params 206045184 (wte) + 8388608 (wpe) + 32 x 201379840 + 8192 =
 * 6658596864: bf16 13317193728 B each for params and grads. Device: those, a ring of 2 x
 * N*C*2 = 16777216, the workspace tape (251658240 + N*(4+32)*4 = 294912), scratch
 * (134217728 + 40960), head (2048 x 50304 x 2 = 206045184) = 27260198912. Host: 32 x
 * 16777216 + 3 x 26634387456 + 2 x 13317193728 = 107074420736. The target: device
 * <= 40 GiB; and at a
 * budget of 40 GiB the model fits only with the optimizer offloaded. */
Test(planner_offload, gpt_7b_both_offloads_under_40_gib)
{
    PlanInput in = gpt(32, 4096, 32, 1, 2048, OFFLOAD_CHECKPOINTS | OFFLOAD_OPTIMIZER);
    MemoryPlan p = plan_of(&in, RECOMPUTE_BLOCK, 0);
    cr_assert_eq(p.num_params, 6658596864);
    cr_expect_eq(p.bytes[MEM_PARAMS], 13317193728);
    cr_expect_eq(p.bytes[MEM_ACTIVATIONS], 2 * 16777216);
    cr_expect_eq(p.bytes[MEM_WORKSPACE], 251658240 + 294912);
    cr_expect_eq(p.bytes[MEM_SCRATCH], 134217728 + 40960);
    cr_expect_eq(p.bytes[MEM_HEAD], 206045184);
    cr_expect_eq(p.total, 27260198912);
    cr_expect_eq(p.host_total, 107074420736);
    cr_expect_leq(p.total, (size_t)40 << 30);

    PlanRow rows[PLAN_NUM_ROWS], none[PLAN_NUM_ROWS];
    char err[256];
    PlanInput in0 = in;
    in0.offload = 0;
    cr_assert_eq(planner_mode_rows(&in, (size_t)40 << 30, 0, NULL, 1, rows, err, sizeof err), 0,
                 "%s", err);
    cr_assert_eq(planner_mode_rows(&in0, (size_t)40 << 30, 0, NULL, 1, none, err, sizeof err), 0,
                 "%s", err);
    cr_expect_eq(rows[2].mode, RECOMPUTE_BLOCK);
    cr_expect_eq(rows[2].peak, p.total);
    cr_expect_eq(rows[2].host, p.host_total);
    cr_expect_geq(rows[2].max_batch, 1, "fits at all with offload");
    for (int i = 0; i < PLAN_NUM_ROWS; i++)
        cr_expect_eq(none[i].max_batch, 0, "row %d: 80 GB of optimizer state alone exceed 40 GiB",
                     i);
}

/* --host-budget: max_B keeps the host tier within it. At the tiny shape in mode 1 with
 * checkpoints offloaded the host holds the L = 4 block inputs. */
Test(planner_offload, host_budget_bounds_max_batch)
{
    PlanInput in = tiny(OFFLOAD_CHECKPOINTS);
    /* one residual slot at micro-batch B: B*T*C*4 = 128 B bytes, rounded to 256;
     * host = 4 slots. B = 4: 512 each, host 2048; B = 5: 640 [768], host 3072. */
    in.host_budget = 2048;
    PlanRow rows[PLAN_NUM_ROWS];
    char err[256];
    cr_assert_eq(planner_mode_rows(&in, (size_t)1 << 30, 0, NULL, 1, rows, err, sizeof err), 0,
                 "%s", err);
    cr_expect_eq(rows[2].mode, RECOMPUTE_BLOCK);
    cr_expect_eq(rows[2].max_batch, 4, "host 2048 B holds 4 inputs of B=4, not of B=5");
    cr_expect_eq(rows[2].host, 4 * 256, "at B=2");
    in.host_budget = 1023; /* below B=2's 1024 */
    cr_assert_eq(planner_mode_rows(&in, (size_t)1 << 30, 0, NULL, 1, rows, err, sizeof err), 0);
    cr_expect_eq(rows[2].fits, 0);
}

/* auto weighs offloaded checkpoints only with measured op and copy costs
 * (test_auto_offload.c has the search): without them it refuses, naming the
 * flag; offloaded optimizer state it counts with any costs. */
Test(planner_offload, auto_needs_copy_costs_counts_optimizer)
{
    Schedule s;
    AutoResult r;
    char err[256];
    PlanInput in = tiny(OFFLOAD_CHECKPOINTS);
    cr_expect_eq(planner_auto(&in, (size_t)1 << 30, NULL, &s, &r, err, sizeof err), -1);
    cr_expect(strstr(err, "--offload checkpoints: needs measured op and copy costs"), "%s", err);
    in = tiny(OFFLOAD_OPTIMIZER);
    cr_assert_eq(planner_auto(&in, (size_t)1 << 30, NULL, &s, &r, err, sizeof err), 0, "%s", err);
    MemoryPlan p;
    planner_plan(&in, &s, &p);
    cr_expect_eq(r.peak, p.total);
    cr_expect_eq(p.bytes[MEM_OPTIMIZER], 0);
    schedule_free(&s);
}

Test(planner_offload, parse_offload)
{
    static const struct { const char *s; int rc, bits; } cases[] = {
        {"none", 0, 0},
        {"checkpoints", 0, OFFLOAD_CHECKPOINTS},
        {"optimizer", 0, OFFLOAD_OPTIMIZER},
        {"checkpoints,optimizer", 0, OFFLOAD_CHECKPOINTS | OFFLOAD_OPTIMIZER},
        {"optimizer,checkpoints", 0, OFFLOAD_CHECKPOINTS | OFFLOAD_OPTIMIZER},
        {"", -1, 0}, {"checkpoints,", -1, 0}, {",optimizer", -1, 0},
        {"checkpoints,checkpoints", -1, 0}, {"none,optimizer", -1, 0}, {"Optimizer", -1, 0},
        {"checkpoint", -1, 0}, {"optimizers", -1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int bits = -7;
        cr_expect_eq(planner_parse_offload(cases[i].s, &bits), cases[i].rc, "'%s'", cases[i].s);
        if (cases[i].rc == 0) cr_expect_eq(bits, cases[i].bits, "'%s'", cases[i].s);
    }
    cr_expect_str_eq(planner_offload_name(OFFLOAD_CHECKPOINTS | OFFLOAD_OPTIMIZER),
                     "checkpoints,optimizer");
    cr_expect_str_eq(planner_offload_name(0), "none");
}
