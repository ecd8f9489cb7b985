/* tests/unit/model/test_recompute.c — recompute 0 and 1 are bitwise identical:
 * losses and every gradient after forward/backward (memcmp), and every
 * parameter after 3 AdamW steps. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "model/gpt.h"
#include "tests/lib/test_util.h"

typedef struct {
    double losses[3];
    float *grads, *params;
} RunResult;

static RunResult run(int recompute, const GPTConfig *cfg, int B, int T)
{
    RunResult r;
    Backend *be = tu_cpu();
    GPT g;
    char err[256];
    cr_assert_eq(gpt_init(&g, cfg, be, B, T, recompute, 0, err, sizeof err), 0, "%s", err);
    size_t n = g.plan.num_params;
    float *p = tu_random_params(cfg, 3);
    gpt_set_params(&g, p);
    free(p);
    r.grads = malloc(n * sizeof(float));
    r.params = malloc(n * sizeof(float));
    int N = B * T, *in = malloc(sizeof(int) * N), *tg = malloc(sizeof(int) * N);
    AdamWConfig adam = {1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f};
    for (int step = 0; step < 3; step++) {
        tu_random_tokens(in, N, cfg->vocab_size, 100 + step);
        tu_random_tokens(tg, N, cfg->vocab_size, 200 + step);
        gpt_zero_grads(&g);
        r.losses[step] = gpt_forward_backward(&g, in, tg, 1.0f / N);
        if (step == 0) gpt_get_grads(&g, r.grads);
        gpt_update(&g, &adam, 1e-3f, gpt_grad_norm(&g));
    }
    gpt_get_params(&g, r.params);
    free(in), free(tg);
    gpt_free(&g);
    backend_close(be);
    return r;
}

static void check_bitwise(const GPTConfig *cfg, int B, int T)
{
    RunResult a = run(0, cfg, B, T), b = run(1, cfg, B, T);
    size_t n = config_num_params(cfg);
    cr_expect_eq(memcmp(a.losses, b.losses, sizeof a.losses), 0, "losses differ: %.17g vs %.17g",
                 a.losses[0], b.losses[0]);
    cr_expect_eq(memcmp(a.grads, b.grads, n * sizeof(float)), 0, "gradients differ");
    cr_expect_eq(memcmp(a.params, b.params, n * sizeof(float)), 0,
                 "parameters differ after 3 AdamW steps");
    free(a.grads), free(a.params), free(b.grads), free(b.params);
}

Test(recompute, bitwise_identical_tiny) { GPTConfig c = tu_tiny_config(); check_bitwise(&c, 2, 8); }

Test(recompute, bitwise_identical_deeper_odd_shapes)
{
    /* 5 layers, C=40 and T=7: nothing is a multiple of a nice tile size. */
    GPTConfig c = tu_tiny_config();
    c.num_layers = 5;
    c.channels = 40;
    c.num_heads = 4;
    c.max_seq_len = 7;
    check_bitwise(&c, 3, 7);
}
