/* tests/lib/sched_runs.c — see sched_runs.h. */
#include "tests/lib/sched_runs.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "model/planner.h"
#include "model/tape.h"
#include "tests/lib/test_util.h"

SchedRun sched_runs_run(Schedule *s, int mode, const GPTConfig *cfg, SchedShape sh)
{
    SchedRun r;
    memset(&r, 0, sizeof r);
    cr_assert(sh.steps >= 1 && sh.steps <= SCHED_RUNS_MAX_STEPS);
    Backend *be = tu_cpu();
    GPT g;
    char err[256];
    int rc = s ? gpt_init_schedule(&g, cfg, be, sh.B, sh.T, s, 0, NULL, NULL, NULL, err, sizeof err)
               : gpt_init(&g, cfg, be, sh.B, sh.T, mode, 0, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    for (int c = 0; c < MEM_NUM_CATEGORIES; c++)
        cr_assert_eq(g.arenas[c].used, g.plan.bytes[c], "%s: carved %zu, planned %zu",
                     planner_category_name(c), g.arenas[c].used, g.plan.bytes[c]);
    cr_assert_eq(gpt_arena_high_water(&g), g.plan.total);
    r.peak = g.plan.total;
    size_t n = g.plan.num_params;
    cr_assert_eq(n, config_num_params(cfg));
    float *p = tu_random_params(cfg, 7);
    gpt_set_params(&g, p);
    free(p);
    r.grads = malloc(n * sizeof(float));
    r.params = malloc(n * sizeof(float));
    int N = sh.B * sh.T;
    int *in = malloc(sizeof(int) * (size_t)N), *tg = malloc(sizeof(int) * (size_t)N);
    AdamWConfig adam = {1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    for (int step = 0; step < sh.steps; step++) {
        tu_random_tokens(in, (size_t)N, cfg->vocab_size, 10 + step);
        tu_random_tokens(tg, (size_t)N, cfg->vocab_size, 20 + step);
        gpt_zero_grads(&g);
        r.loss[step] = gpt_forward_backward(&g, in, tg, 1.0f / N);
        cr_assert(isfinite(r.loss[step]));
        if (step == 0) gpt_get_grads(&g, r.grads);
        gpt_update(&g, &adam, 1e-3f, gpt_grad_norm(&g));
    }
    gpt_get_params(&g, r.params);
    cr_assert_eq(gpt_arena_high_water(&g), g.plan.total, "nothing carved during the steps");
    free(in);
    free(tg);
    gpt_free(&g);
    backend_close(be);
    return r;
}

SchedRun sched_runs_reference(const GPTConfig *cfg, SchedShape sh)
{
    Schedule s;
    char err[256];
    cr_assert_eq(schedule_build(&s, block_desc_of(cfg), RECOMPUTE_NONE, cfg->num_layers, err,
                                sizeof err),
                 0, "%s", err);
    return sched_runs_run(&s, 0, cfg, sh);
}

void sched_runs_expect_same(const SchedRun *a, const SchedRun *b, size_t n, const char *what)
{
    cr_assert_eq(memcmp(a->loss, b->loss, sizeof a->loss), 0, "%s: losses %.17g vs %.17g", what,
                 a->loss[0], b->loss[0]);
    cr_assert_eq(memcmp(a->grads, b->grads, n * sizeof(float)), 0, "%s: gradients differ", what);
    cr_assert_eq(memcmp(a->params, b->params, n * sizeof(float)), 0,
                 "%s: parameters differ after the AdamW steps", what);
}

int sched_runs_expect_auto_budgets(const SchedRun *ref, const GPTConfig *cfg, SchedShape sh,
                                   int steps)
{
    size_t n = config_num_params(cfg);
    Backend *be = tu_cpu();
    PlanInput in = {.cfg = *cfg, .B = sh.B, .T = sh.T, .dtype = DTYPE_FP32,
                    .attn_scratch = gpt_attn_scratch_bytes(be, cfg)};
    backend_close(be);
    char err[512], desc[16], seen[32][16], what[64];
    int distinct = 0;
    Schedule s;
    AutoResult ar;
    cr_assert_eq(planner_auto(&in, 0, NULL, &s, &ar, err, sizeof err), 0, "%s", err);
    schedule_free(&s);
    size_t lo = ar.min_peak, hi = ref->peak;
    for (int i = 0; i <= steps; i++) {
        size_t budget = lo + (hi - lo) / (size_t)steps * (size_t)i;
        cr_assert_eq(planner_auto(&in, budget, NULL, &s, &ar, err, sizeof err), 0, "%s", err);
        cr_assert(ar.fits && ar.peak <= budget);
        schedule_describe(&s, desc, sizeof desc);
        int is_new = 1;
        for (int j = 0; j < distinct; j++) is_new &= strcmp(seen[j], desc) != 0;
        if (is_new && distinct < 32) strcpy(seen[distinct++], desc);
        size_t planned = ar.peak;
        SchedRun r = sched_runs_run(&s, 0, cfg, sh);
        cr_assert_eq(r.peak, planned, "auto's predicted peak is the arenas' high-water mark");
        snprintf(what, sizeof what, "auto at %zu bytes (%s)", budget, desc);
        sched_runs_expect_same(ref, &r, n, what);
        sched_runs_drop(&r);
    }
    return distinct;
}

void sched_runs_expect_kinds_kept(const SchedRun *ref, const GPTConfig *cfg, SchedShape sh)
{
    cr_assert_eq(cfg->num_layers, 8, "8 blocks, 8 kinds a run");
    const BlockDesc *bd = block_desc_of(cfg);
    size_t n = config_num_params(cfg);
    char err[256], what[96];
    int kinds = tape_kinds(bd);
    for (int first = 0; first < kinds; first += 8) {
        Schedule s;
        cr_assert_eq(schedule_build(&s, bd, RECOMPUTE_NONE, 8, err, sizeof err), 0, "%s", err);
        for (int l = 0; l < 8; l++) s.tape_kind[l] = (uint32_t)(first + l);
        schedule_fuse_layernorms(&s); /* the kinds decide which LN1s may be fused */
        cr_assert_eq(schedule_validate(&s, err, sizeof err), 0, "%s", err);
        SchedRun r = sched_runs_run(&s, 0, cfg, sh);
        snprintf(what, sizeof what, "kinds %d..%d kept", first, first + 7);
        sched_runs_expect_same(ref, &r, n, what);
        sched_runs_drop(&r);
    }
}

void sched_runs_expect_inputs_kept(const SchedRun *ref, const GPTConfig *cfg, SchedShape sh)
{
    cr_assert_eq(cfg->num_layers, 8);
    const BlockDesc *bd = block_desc_of(cfg);
    size_t n = config_num_params(cfg);
    char err[256], what[96], a[BLOCK_MAX_TENSORS + 1], b[BLOCK_MAX_TENSORS + 1];
    int kinds = tape_kinds(bd);
    for (int i = 0; i < 16; i++) {
        int hi = (i * 37 + 3) % kinds, lo = (i * 53 + 5) % kinds;
        Schedule s;
        cr_assert_eq(schedule_build_inputs_kept(&s, bd, 8, i % 3, 2 + i % 4, hi, lo, err,
                                                sizeof err),
                     0, "%s", err);
        SchedRun r = sched_runs_run(&s, 0, cfg, sh);
        snprintf(what, sizeof what, "inputs kept, hi %s, lo %s", tape_kind_name(bd, hi, a),
                 tape_kind_name(bd, lo, b));
        sched_runs_expect_same(ref, &r, n, what);
        sched_runs_drop(&r);
    }
}

void sched_runs_drop(SchedRun *r)
{
    free(r->grads);
    free(r->params);
}
