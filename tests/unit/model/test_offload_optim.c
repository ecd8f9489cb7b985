/* tests/unit/model/test_offload_optim.c — --offload optimizer's deferred update
 * (model/gpt_optim.c) on the cpu backend, whose host AdamW and copies run on its copy
 * thread: over several steps, with clipping on (and biting) and off, with gradient
 * accumulation, with the gradients staged during the last backward (gpt_set_final_micro)
 * and by gpt_update, with checkpoints offloaded too, with a forward-only pass between, and
 * across a resume in the middle (parameters, m and v taken out and put into a fresh
 * model), the losses of every step, the gradients and the parameters are bitwise those
 * of recompute 0 without offload (memcmp). The order test reads the model's trace (test
 * build only, base/test_hooks.h): the next forward waits for block l's weights just
 * before block l, and the last block's AdamW is enqueued only after block 0's forward
 * has run, so the update overlaps the forward and does not wait for it whole; and in the
 * final micro-batch block l's gradients are copied to the host before block l-1's
 * backward runs. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "model/gpt2_block.h"
#include "model/gpt.h"
#include "model/planner.h"
#include "tests/lib/test_util.h"

#define STEPS 4
#define ACCUM_MAX 2

typedef struct {
    double loss[STEPS];
    float *grads, *params, *m, *v;
} Run;

typedef struct {
    int mode, offload, accum, resume_at; /* resume_at: 0 = unbroken */
    float clip;
    int late; /* 1: gpt_update stages the gradients, not the last backward */
} Case;

static GPT *open_model(GPT *g, Backend *be, const GPTConfig *cfg, const Case *c)
{
    Schedule s;
    char err[256];
    cr_assert_eq(schedule_build(&s, &GPT2_BLOCK, c->mode, cfg->num_layers, err, sizeof err), 0,
                 "%s", err);
    GPTShard sh = {1, 0, 0, c->offload};
    cr_assert_eq(gpt_init_schedule(g, cfg, be, 2, 8, &s, 0, &sh, NULL, NULL, err, sizeof err), 0,
                 "%s", err);
    return g;
}

/* Parameters, m and v out of g into r (what a checkpoint keeps), then g freed. */
static void take_state(GPT *g, Run *r)
{
    size_t n = g->plan.num_params;
    gpt_get_params(g, r->params); /* settles the deferred update */
    g->be->ops->mem_download(g->be, r->m, g->m, n * sizeof(float));
    g->be->ops->mem_download(g->be, r->v, g->v, n * sizeof(float));
}

static Run run(const GPTConfig *cfg, const Case *c)
{
    Run r;
    memset(&r, 0, sizeof r);
    Backend *be = tu_cpu();
    GPT g;
    open_model(&g, be, cfg, c);
    size_t n = g.plan.num_params;
    r.grads = malloc(n * 4), r.params = malloc(n * 4), r.m = malloc(n * 4), r.v = malloc(n * 4);
    float *p = tu_random_params(cfg, 7);
    gpt_set_params(&g, p);
    free(p);
    enum { N = 16 };
    int in[N], tg[N];
    AdamWConfig adam = {1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, c->clip};
    for (int step = 0; step < STEPS; step++) {
        if (c->resume_at && step == c->resume_at) {
            int t = g.adam_t;
            take_state(&g, &r);
            gpt_free(&g);
            open_model(&g, be, cfg, c);
            gpt_set_params(&g, r.params);
            be->ops->mem_upload(be, g.m, r.m, n * sizeof(float));
            be->ops->mem_upload(be, g.v, r.v, n * sizeof(float));
            g.adam_t = t;
        }
        gpt_zero_grads(&g);
        double loss = 0.0;
        for (int micro = 0; micro < c->accum; micro++) {
            tu_random_tokens(in, N, cfg->vocab_size, 10 + step * ACCUM_MAX + micro);
            tu_random_tokens(tg, N, cfg->vocab_size, 50 + step * ACCUM_MAX + micro);
            gpt_set_final_micro(&g, !c->late && micro == c->accum - 1);
            loss += gpt_forward_backward(&g, in, tg, 1.0f / (N * c->accum));
        }
        r.loss[step] = loss;
        if (step == STEPS - 1) gpt_get_grads(&g, r.grads);
        double norm = gpt_grad_norm(&g);
        cr_assert(c->clip == 0 || norm > c->clip, "the clip binds (norm %g)", norm);
        gpt_update(&g, &adam, 1e-3f * (1 + step), norm);
        if (step == 1) (void)gpt_eval_loss(&g, in, tg); /* a forward alone between steps */
    }
    take_state(&g, &r);
    gpt_free(&g);
    backend_close(be);
    return r;
}

static void drop(Run *r)
{
    free(r->grads), free(r->params), free(r->m), free(r->v);
}

static void expect_same(const Run *a, const Run *b, size_t n, const char *what)
{
    for (int s = 0; s < STEPS; s++)
        cr_assert_eq(memcmp(&a->loss[s], &b->loss[s], sizeof a->loss[s]), 0,
                     "%s: step %d's loss %.17g vs %.17g", what, s + 1, a->loss[s], b->loss[s]);
    cr_assert_eq(memcmp(a->grads, b->grads, n * 4), 0, "%s: the last step's gradients", what);
    cr_assert_eq(memcmp(a->params, b->params, n * 4), 0, "%s: the parameters", what);
    cr_assert_eq(memcmp(a->m, b->m, n * 4), 0, "%s: m", what);
    cr_assert_eq(memcmp(a->v, b->v, n * 4), 0, "%s: v", what);
}

static void matches_mode_0(float clip)
{
    GPTConfig cfg = tu_tiny_config();
    cfg.num_layers = 6;
    size_t n = config_num_params(&cfg);
    for (int accum = 1; accum <= ACCUM_MAX; accum++) {
        Case ref = {RECOMPUTE_NONE, 0, accum, 0, clip, 0};
        Run a = run(&cfg, &ref);
        const Case cases[] = {
            {RECOMPUTE_NONE, OFFLOAD_OPTIMIZER, accum, 0, clip, 0},
            {RECOMPUTE_BLOCK, OFFLOAD_OPTIMIZER, accum, 0, clip, 0},
            {RECOMPUTE_BLOCK, OFFLOAD_CHECKPOINTS | OFFLOAD_OPTIMIZER, accum, 0, clip, 0},
            {RECOMPUTE_SELECTIVE, OFFLOAD_CHECKPOINTS | OFFLOAD_OPTIMIZER, accum, 0, clip, 0},
            {RECOMPUTE_BLOCK, OFFLOAD_OPTIMIZER, accum, 2, clip, 0},
            {RECOMPUTE_NONE, OFFLOAD_CHECKPOINTS | OFFLOAD_OPTIMIZER, accum, 1, clip, 0},
            {RECOMPUTE_BLOCK, OFFLOAD_OPTIMIZER, accum, 0, clip, 1},
            {RECOMPUTE_SELECTIVE, OFFLOAD_CHECKPOINTS | OFFLOAD_OPTIMIZER, accum, 2, clip, 1},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            char what[128];
            snprintf(what, sizeof what, "mode %d, --offload %s, grad accum %d, clip %g%s%s",
                     cases[i].mode, planner_offload_name(cases[i].offload), accum, clip,
                     cases[i].resume_at ? ", resumed" : "",
                     cases[i].late ? ", staged by gpt_update" : "");
            Run b = run(&cfg, &cases[i]);
            expect_same(&a, &b, n, what);
            drop(&b);
        }
        drop(&a);
    }
}

/* A clip of 0.05 binds on every step of this model (its norms are above 0.1). */
Test(offload_optim, deferred_update_is_bitwise_with_clipping, .timeout = 300)
{
    matches_mode_0(0.05f);
}

Test(offload_optim, deferred_update_is_bitwise_without_clipping, .timeout = 300)
{
    matches_mode_0(0.0f);
}

static int find(const GPTTrace *t, int code, int from)
{
    for (int i = from; i < t->n; i++)
        if (t->code[i] == code) return i;
    return -1;
}

Test(offload_optim, block_l_waits_only_for_its_own_weights)
{
    GPTConfig cfg = tu_tiny_config();
    cfg.num_layers = 12;
    int L = cfg.num_layers, last = L; /* units: 0 the embeddings, 1 + l block l */
    Backend *be = tu_cpu();
    GPT g;
    Case c = {RECOMPUTE_NONE, OFFLOAD_OPTIMIZER, 1, 0, 1.0f, 0};
    open_model(&g, be, &cfg, &c);
    float *p = tu_random_params(&cfg, 7);
    gpt_set_params(&g, p);
    free(p);
    int in[16], tg[16];
    tu_random_tokens(in, 16, cfg.vocab_size, 3);
    tu_random_tokens(tg, 16, cfg.vocab_size, 4);
    AdamWConfig adam = {1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    gpt_zero_grads(&g);
    gpt_forward_backward(&g, in, tg, 1.0f / 16);
    GPTTrace *t = calloc(1, sizeof *t);
    g.trace = t;
    gpt_update(&g, &adam, 1e-3f, gpt_grad_norm(&g));
    int after_update = t->n;
    cr_assert_gt(after_update, 0, "gpt_update enqueued the first units (a test build?)");
    cr_assert_eq(find(t, GPT_TRACE_WAIT(0), 0), -1, "gpt_update returned without waiting");
    cr_assert_eq(find(t, GPT_TRACE_ENQUEUE(last), 0), -1,
                 "gpt_update returned before enqueuing the last block's AdamW");
    gpt_zero_grads(&g);
    gpt_set_final_micro(&g, 1);
    gpt_forward_backward(&g, in, tg, 1.0f / 16);
    g.trace = NULL;
    int f0 = find(t, GPT_TRACE_FORWARD(0), 0);
    cr_assert_geq(f0, 0);
    cr_expect_gt(find(t, GPT_TRACE_ENQUEUE(last), 0), f0,
                 "the last block's AdamW was enqueued after block 0's forward: the forward did "
                 "not wait for the whole update");
    for (int l = 0; l < L; l++) {
        int w = find(t, GPT_TRACE_WAIT(1 + l), 0), f = find(t, GPT_TRACE_FORWARD(l), 0);
        cr_expect(w >= 0 && w < f, "block %d's weights were waited for before its forward", l);
        /* its forward reads its own and (fused LN1) the next block's; no more */
        if (2 + l + 1 <= last)
            cr_expect_gt(find(t, GPT_TRACE_WAIT(2 + l + 1), 0), f,
                         "block %d's forward ran before block %d's weights were waited for", l,
                         l + 2);
        int e = find(t, GPT_TRACE_ENQUEUE(1 + l), 0);
        cr_expect(e >= 0 && find(t, GPT_TRACE_ENQUEUE(1 + l), e + 1) < 0,
                  "block %d's unit was enqueued once", l);
    }
    cr_expect_lt(find(t, GPT_TRACE_WAIT(last), 0), find(t, GPT_TRACE_BACKWARD(L - 1), 0),
                 "every unit was waited for before the backward");
    /* the final micro-batch's backward: block l's gradients go to the host before
     * block l-1's backward, not after the whole backward */
    for (int l = 1; l < L; l++) {
        int st = find(t, GPT_TRACE_STAGED(l), 0), b = find(t, GPT_TRACE_BACKWARD(l - 1), 0);
        cr_expect(st >= 0 && st < b, "block %d's gradients were staged before block %d's "
                  "backward", l, l - 1);
    }
    free(t);
    gpt_free(&g);
    backend_close(be);
}
