/* tests/unit/model/test_offload_exec.c — offloaded checkpoints and optimizer state run by
 * the interpreter (gpt.c) on the cpu backend, whose copies go through its copy thread: in
 * every fixed mode (0, 1, 2 for every k, selective) and for inputs-kept schedules, with
 * --offload checkpoints, optimizer and both (AdamW in the host tier), the losses, the
 * gradients and the parameters after AdamW steps are bitwise identical to recompute 0
 * without offload (memcmp); the device arenas' high-water mark equals the planner's
 * device total to the byte and the host tier's its host total. The copy program
 * (schedule_offload) is replayed symbolically: every read finds its input in the ring
 * with its copy waited for, every write into the ring waits for the copies on it, and
 * mode 1 prefetches x_{l-1} as soon as block l+1's backward is done. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "model/gpt2_block.h"
#include "model/gpt.h"
#include "model/planner.h"
#include "tests/lib/sched_runs.h"
#include "tests/lib/test_util.h"

static GPTConfig cfg6(void)
{
    GPTConfig c = tu_tiny_config();
    c.num_layers = 6;
    return c;
}

#define STEPS 3
_Static_assert(STEPS <= SCHED_RUNS_MAX_STEPS, "a SchedRun holds every step's loss");

/* STEPS AdamW steps from the same parameters and tokens (schedule s taken over). */
static SchedRun run(Schedule *s, const GPTConfig *cfg, int offload, int B, int T)
{
    SchedRun r;
    memset(&r, 0, sizeof r);
    Backend *be = tu_cpu();
    GPT g;
    char err[256];
    GPTShard sh = {1, 0, 0, offload};
    cr_assert_eq(gpt_init_schedule(&g, cfg, be, B, T, s, 0, &sh, NULL, NULL, err, sizeof err), 0, "%s", err);
    for (int c = 0; c < MEM_NUM_CATEGORIES; c++)
        cr_assert_eq(g.arenas[c].used, g.plan.bytes[c], "%s: carved %zu, planned %zu",
                     planner_category_name(c), g.arenas[c].used, g.plan.bytes[c]);
    cr_assert_eq(gpt_arena_high_water(&g), g.plan.total);
    cr_assert_eq(gpt_host_high_water(&g), g.plan.host_total);
    if (offload) {
        cr_assert_gt(g.plan.host_total, 0);
        cr_assert_eq(g.off.n_ring, g.plan.n_ring);
    }
    size_t n = g.plan.num_params;
    float *p = tu_random_params(cfg, 7);
    gpt_set_params(&g, p);
    free(p);
    r.grads = malloc(n * sizeof(float));
    r.params = malloc(n * sizeof(float));
    int N = B * T, *in = malloc(sizeof(int) * (size_t)N), *tg = malloc(sizeof(int) * (size_t)N);
    AdamWConfig adam = {1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    for (int step = 0; step < STEPS; step++) {
        tu_random_tokens(in, (size_t)N, cfg->vocab_size, 10 + step);
        tu_random_tokens(tg, (size_t)N, cfg->vocab_size, 20 + step);
        gpt_zero_grads(&g);
        r.loss[step] = gpt_forward_backward(&g, in, tg, 1.0f / N);
        if (step == 0) gpt_get_grads(&g, r.grads);
        gpt_update(&g, &adam, 1e-3f, gpt_grad_norm(&g));
        if (step == 1) (void)gpt_eval_loss(&g, in, tg); /* a forward-only pass between */
    }
    gpt_get_params(&g, r.params);
    cr_assert_eq(gpt_arena_high_water(&g), g.plan.total, "nothing carved during the steps");
    free(in);
    free(tg);
    gpt_free(&g);
    backend_close(be);
    return r;
}

/* mode: a RecomputeMode, or -k for segments of k blocks, or 100 + n_hi*10 + n_lo for an
 * inputs-kept schedule of full and selective tapes. */
static void build(Schedule *s, int mode, int L)
{
    char err[256];
    int rc = mode < 0 ? schedule_build_segments(s, &GPT2_BLOCK, L, -mode, err, sizeof err)
             : mode >= 100
                 ? schedule_build_inputs_kept(s, &GPT2_BLOCK, L, (mode - 100) / 10, mode % 10,
                                              TAPE_FULL, GPT2_SELECTIVE, err, sizeof err)
                 : schedule_build(s, &GPT2_BLOCK, mode, L, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
}

static void offload_matches_mode_0(const GPTConfig *cfg, int B, int T)
{
    int L = cfg->num_layers;
    Schedule s;
    build(&s, RECOMPUTE_NONE, L);
    SchedRun ref = run(&s, cfg, 0, B, T);
    size_t n = config_num_params(cfg);
    int modes[32], nm = 0;
    modes[nm++] = RECOMPUTE_NONE;
    modes[nm++] = RECOMPUTE_BLOCK;
    modes[nm++] = RECOMPUTE_SELECTIVE;
    for (int k = 1; k <= L; k++) modes[nm++] = -k;
    if (L >= 3) {
        modes[nm++] = 100 + 2 * 10 + 1; /* 2 full tapes on top, 1 selective, the rest re-run */
        modes[nm++] = 100 + 0 * 10 + 3;
    }
    for (int i = 0; i < nm; i++)
        for (int off = 1; off <= 3; off++) {
            if (off != OFFLOAD_CHECKPOINTS && modes[i] < -2) continue; /* the update is the same */
            char what[96];
            snprintf(what, sizeof what, "mode %d, L=%d B=%d T=%d, --offload %s", modes[i], L, B,
                     T, planner_offload_name(off));
            build(&s, modes[i], L);
            SchedRun r = run(&s, cfg, off, B, T);
            sched_runs_expect_same(&ref, &r, n, what);
            sched_runs_drop(&r);
        }
    sched_runs_drop(&ref);
}

Test(offload_exec, every_mode_matches_mode_0_without_offload, .timeout = 300)
{
    GPTConfig c = cfg6();
    offload_matches_mode_0(&c, 2, 8);
}

/* Odd sizes: one layer (a ring of one slot in mode 2), and a shape whose residual
 * slot is not a multiple of 256 bytes (B*T*C*4 = 3*5*32*4 = 1920). */
Test(offload_exec, odd_shapes_match, .timeout = 300)
{
    GPTConfig c = tu_tiny_config();
    c.num_layers = 1;
    offload_matches_mode_0(&c, 2, 8);
    c.num_layers = 3;
    offload_matches_mode_0(&c, 3, 5);
}

/* Replay the copy program over symbolic ring contents. */
static void replay(const Schedule *s, const OffloadProgram *op)
{
    int occ[8], in_flight_in[8], in_flight_any[8], host_valid[64] = {0};
    cr_assert_leq(op->n_ring, 8);
    cr_assert_leq(s->n_res_stored, 64);
    for (int r = 0; r < op->n_ring; r++) {
        occ[r] = -1;
        in_flight_in[r] = 0;
        in_flight_any[r] = 1; /* conservatively: the last pass's */
    }
    for (int k = -1; k < s->n_steps; k++) {
        for (int half = 0; half < 2; half++) {
            int pos = half ? OFFLOAD_AFTER(k) : OFFLOAD_BEFORE(k);
            for (int i = op->first[pos]; i < op->first[pos + 1]; i++) {
                const OffloadAct *a = &op->acts[i];
                if (a->kind == OFF_WAIT) {
                    in_flight_in[a->ring] = in_flight_any[a->ring] = 0;
                } else if (a->kind == OFF_OUT) {
                    cr_assert_eq(occ[a->ring], a->host, "step %d: copies out what the ring holds", k);
                    host_valid[a->host] = 1;
                    in_flight_any[a->ring] = 1;
                } else {
                    cr_assert(host_valid[a->host], "step %d: fetches host slot %d before it "
                              "was written", k, a->host);
                    occ[a->ring] = a->host;
                    in_flight_in[a->ring] = in_flight_any[a->ring] = 1;
                }
            }
            if (half) continue;
            /* the step (or the embedding) itself, after its "before" acts */
            int in = k < 0 ? -1 : s->steps[k].in_slot;
            int out = k < 0 ? s->embed_slot : s->steps[k].kind == STEP_FORWARD ? s->steps[k].out_slot : -1;
            int in_r = k < 0 ? -1 : op->in_ring[k], out_r = k < 0 ? op->embed_ring : op->out_ring[k];
            if (in >= 0 && in < s->n_res_stored) {
                cr_assert_geq(in_r, 0, "step %d reads stored slot %d off the ring", k, in);
                cr_assert_eq(occ[in_r], in, "step %d: ring %d holds %d, not %d", k, in_r,
                             occ[in_r], in);
                cr_assert_eq(in_flight_in[in_r], 0, "step %d reads before the copy in is waited for", k);
            }
            if (out >= 0 && out < s->n_res_stored) {
                cr_assert_lt(k, s->n_forward);
                cr_assert_geq(out_r, 0);
                cr_assert_eq(in_flight_any[out_r], 0, "step %d writes ring %d under a copy", k, out_r);
                occ[out_r] = out;
            }
        }
    }
}

Test(offload_exec, copy_program_replays_cleanly)
{
    for (int L = 1; L <= 12; L++)
        for (int mode = -L; mode <= RECOMPUTE_SELECTIVE; mode++) {
            if (mode == RECOMPUTE_SEGMENTS) continue; /* covered by -k */
            Schedule s;
            OffloadProgram op;
            char err[256];
            build(&s, mode, L);
            int ring = s.n_res_stored < 2 ? s.n_res_stored : 2;
            cr_assert_eq(schedule_offload(&s, ring, &op, err, sizeof err), 0, "L=%d mode %d: %s", L,
                         mode, err);
            replay(&s, &op);
            cr_expect_eq(op.n_out, s.n_res_stored, "every stored input goes out once");
            schedule_offload_free(&op);
            schedule_free(&s);
        }
}

/* Mode 1 at L = 6: x_0..x_5 go out; x_5 and x_4 are still in the ring at the head, so
 * 4 come back in, each right after the backward of the block two above it, i.e. while
 * the block above it re-forwards and back-propagates (a prefetch distance of one). */
Test(offload_exec, mode_1_prefetches_one_block_ahead)
{
    Schedule s;
    OffloadProgram op;
    char err[256];
    build(&s, RECOMPUTE_BLOCK, 6);
    cr_assert_eq(schedule_offload(&s, 2, &op, err, sizeof err), 0, "%s", err);
    cr_expect_eq(op.n_out, 6);
    cr_expect_eq(op.n_in, 4);
    for (int h = 0; h <= 3; h++) {
        int back2 = -1; /* the step BACKWARD(h + 2) */
        for (int k = s.n_forward; k < s.n_steps; k++)
            if (s.steps[k].kind == STEP_BACKWARD && s.steps[k].block == h + 2) back2 = k;
        int found = 0;
        for (int i = op.first[OFFLOAD_AFTER(back2)]; i < op.first[OFFLOAD_AFTER(back2) + 1]; i++)
            found |= op.acts[i].kind == OFF_IN && op.acts[i].host == h;
        cr_expect(found, "x_%d is fetched right after BACKWARD(%d)", h, h + 2);
    }
    schedule_offload_free(&op);
    schedule_free(&s);
}

/* ZeRO-1's shard as one rank sees it (world 2, rank 1): the host tier holds the shard's
 * state and staging only, and the update of the range is the same bits. */
Test(offload_exec, optimizer_offload_of_a_zero_shard)
{
    GPTConfig cfg = cfg6();
    Backend *be = tu_cpu();
    GPT a, b;
    char err[256];
    GPTShard plain = {2, 1, 1, 0}, off = {2, 1, 1, OFFLOAD_OPTIMIZER};
    cr_assert_eq(gpt_init_shard(&a, &cfg, be, 2, 8, RECOMPUTE_BLOCK, 0, &plain, err, sizeof err),
                 0, "%s", err);
    cr_assert_eq(gpt_init_shard(&b, &cfg, be, 2, 8, RECOMPUTE_BLOCK, 0, &off, err, sizeof err), 0,
                 "%s", err);
    cr_assert_eq(b.plan.host[HOST_OPTIMIZER], 4 * ((b.plan.shard_params * 4 + 255) / 256 * 256));
    cr_assert_eq(gpt_host_high_water(&b), b.plan.host_total);
    size_t n = a.plan.num_params;
    float *p = tu_random_params(&cfg, 7), *pa = malloc(n * 4), *pb = malloc(n * 4);
    int in[16], tg[16];
    tu_random_tokens(in, 16, cfg.vocab_size, 3);
    tu_random_tokens(tg, 16, cfg.vocab_size, 4);
    AdamWConfig adam = {1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    GPT *gs[2] = {&a, &b};
    for (int j = 0; j < 2; j++) {
        gpt_set_params(gs[j], p);
        for (int step = 0; step < 2; step++) {
            gpt_zero_grads(gs[j]);
            gpt_forward_backward(gs[j], in, tg, 1.0f / 16);
            gpt_update(gs[j], &adam, 1e-3f, gpt_grad_norm(gs[j]));
        }
    }
    gpt_get_params(&a, pa);
    gpt_get_params(&b, pb);
    cr_expect_eq(memcmp(pa, pb, n * 4), 0, "the shard's parameters differ");
    cr_expect_eq(memcmp(a.m, b.m, (a.opt_end - a.opt_begin) * 4), 0, "m differs");
    cr_expect_eq(memcmp(a.v, b.v, (a.opt_end - a.opt_begin) * 4), 0, "v differs");
    free(p), free(pa), free(pb);
    gpt_free(&a);
    gpt_free(&b);
    backend_close(be);
}
