/* tests/unit/model/test_llama_model.c — the Llama family's block run by the
 * schedule interpreter on the cpu backend, at a small grouped-query shape
 * with an untied head: its description is consistent; modes selective, 1,
 * 2 (every k), auto at many budgets and every one of the 128 tape kinds give
 * losses, gradients and parameters after AdamW steps bitwise identical to
 * mode 0's (memcmp), with the arenas' high-water mark equal to the
 * planner's prediction, category by category; the gradients agree with
 * central finite differences of the loss (tolerance stated there); and
 * the KV-cache decode opens with a grouped-query cache (its tokens and
 * logits against the full forward: test_decode.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/gpt.h"
#include "model/llama_block.h"
#include "model/planner.h"
#include "model/tape.h"
#include "tests/lib/sched_runs.h"
#include "tests/lib/test_util.h"

/* 6 layers, C=32, NH=4, NKV=2 (hs 8), F=48, T=8, B=2, V=64, untied. */
static GPTConfig llama_cfg(int layers)
{
    GPTConfig c = tu_tiny_config();
    c.num_layers = layers;
    c.arch = ARCH_LLAMA;
    c.kv_heads = 2;
    c.ffn = 48;
    c.rope_theta = 10000.0f;
    c.untied = 1;
    return c;
}

/* Two AdamW steps at B=2, T=8. */
static const SchedShape SMALL = {2, 8, 2};

Test(llama_model, description_is_consistent_and_picked_by_arch)
{
    char err[256] = "";
    cr_assert_eq(block_desc_check(&LLAMA_BLOCK, err, sizeof err), 0, "%s", err);
    GPTConfig c = llama_cfg(2), g2 = tu_tiny_config();
    cr_assert_eq(block_desc_of(&c), &LLAMA_BLOCK);
    cr_assert_neq(block_desc_of(&g2), &LLAMA_BLOCK);
    BlockShape sh;
    block_shape(&LLAMA_BLOCK, &c, 2, 8, &sh);
    cr_assert(sh.NKV == 2 && sh.F == 48 && sh.hs == 8);
    /* q/k/v after RoPE: (NH + 2 NKV) hs = 32 + 32; the wide gradient buffer: 3F */
    cr_assert_eq(tape_tensor_elems(&LLAMA_BLOCK, LLAMA_QKV, &sh), (size_t)16 * 64);
    cr_assert_eq(block_grad_big(&LLAMA_BLOCK, &sh), (size_t)3 * 48);
    char name[BLOCK_MAX_TENSORS + 1];
    cr_assert_str_eq(tape_kind_name(&LLAMA_BLOCK, LLAMA_SELECTIVE, name), "-qar-u-");
    /* the default FFN width: 8/3 C rounded up to a multiple of 256 */
    cr_assert_eq(config_default_ffn(ARCH_LLAMA, 768), 2048);
    cr_assert_eq(config_default_ffn(ARCH_LLAMA, 4096), 11008);
    c.ffn = 0;
    cr_assert_eq(config_ffn(&c), 256);
}

Test(llama_model, selective_mode_1_and_segments_match_mode_0, .timeout = 300)
{
    GPTConfig cfg = llama_cfg(6);
    size_t n = config_num_params(&cfg);
    SchedRun ref = sched_runs_reference(&cfg, SMALL);
    static const int modes[] = {RECOMPUTE_SELECTIVE, RECOMPUTE_BLOCK};
    for (int i = 0; i < 2; i++) {
        Schedule s;
        char err[256];
        cr_assert_eq(schedule_build(&s, &LLAMA_BLOCK, modes[i], 6, err, sizeof err), 0);
        SchedRun r = sched_runs_run(&s, 0, &cfg, SMALL);
        sched_runs_expect_same(&ref, &r, n, schedule_mode_name(modes[i]));
        sched_runs_drop(&r);
    }
    for (int k = 1; k <= 6; k++) {
        Schedule s;
        char err[256], what[32];
        cr_assert_eq(schedule_build_segments(&s, &LLAMA_BLOCK, 6, k, err, sizeof err), 0, "%s",
                     err);
        SchedRun r = sched_runs_run(&s, 0, &cfg, SMALL);
        snprintf(what, sizeof what, "segments k=%d", k);
        sched_runs_expect_same(&ref, &r, n, what);
        sched_runs_drop(&r);
    }
    /* and through gpt_init, the CLI's path, with its own schedules */
    static const int all[] = {RECOMPUTE_SELECTIVE, RECOMPUTE_BLOCK, RECOMPUTE_SEGMENTS};
    for (int i = 0; i < 3; i++) {
        SchedRun r = sched_runs_run(NULL, all[i], &cfg, SMALL);
        sched_runs_expect_same(&ref, &r, n, schedule_mode_name(all[i]));
        sched_runs_drop(&r);
    }
    sched_runs_drop(&ref);
}

Test(llama_model, auto_at_many_budgets_matches_mode_0, .timeout = 600)
{
    GPTConfig cfg = llama_cfg(6);
    SchedRun ref = sched_runs_reference(&cfg, SMALL);
    int distinct = sched_runs_expect_auto_budgets(&ref, &cfg, SMALL, 12);
    cr_assert_geq(distinct, 3, "budgets should give several different schedules (got %d)",
                  distinct);
    sched_runs_drop(&ref);
}

/* Every tape kind: mode 0's program with block l keeping kind kinds[l],
 * 8 a run; then inputs-kept programs re-forwarding into workspace tapes
 * of pairs of kinds (rebuilds in the backward). */
Test(llama_model, every_tape_kind_matches_mode_0, .timeout = 300)
{
    GPTConfig cfg = llama_cfg(8);
    cr_assert_eq(block_desc_of(&cfg), &LLAMA_BLOCK);
    SchedRun ref = sched_runs_reference(&cfg, SMALL);
    sched_runs_expect_kinds_kept(&ref, &cfg, SMALL);
    sched_runs_expect_inputs_kept(&ref, &cfg, SMALL);
    sched_runs_drop(&ref);
}

/* The gradients against central differences of the mean loss, both in the
 * model's fp32: 3 elements of every non-empty tensor (the untied head and
 * the token embedding included), h = 1e-2. Tolerance: |analytic - fd| <=
 * 5e-3 * max(|fd|, 0.01) (fp32 rounding of a ~4.2 loss over 2h is ~2e-5,
 * the O(h^2) truncation ~1e-4 of a gradient). */
Test(llama_model, gradients_match_finite_differences, .timeout = 120)
{
    GPTConfig cfg = llama_cfg(2);
    Backend *be = tu_cpu();
    GPT g;
    char err[256];
    cr_assert_eq(gpt_init(&g, &cfg, be, 2, 8, RECOMPUTE_NONE, 0, err, sizeof err), 0, "%s", err);
    size_t n = g.plan.num_params, sz[NUM_PARAM_TENSORS], off = 0;
    config_param_sizes(&cfg, sz);
    float *p = tu_random_params(&cfg, 3), *grad = malloc(n * sizeof(float));
    int N = 16, in[16], tg[16];
    tu_random_tokens(in, 16, cfg.vocab_size, 5);
    tu_random_tokens(tg, 16, cfg.vocab_size, 6);
    gpt_set_params(&g, p);
    gpt_zero_grads(&g);
    double loss = gpt_forward_backward(&g, in, tg, 1.0f / N);
    cr_assert(loss > 3.0 && loss < 6.0, "loss %g near log(64) = 4.16", loss);
    gpt_get_grads(&g, grad);
    const double h = 1e-2, rel = 5e-3;
    int checked = 0;
    double worst = 0;
    for (int t = 0; t < NUM_PARAM_TENSORS; t++) {
        if (sz[t] == 0) continue;
        for (int k = 0; k < 3; k++) {
            /* spread over the tensor; the head's and embedding's rows of real tokens */
            size_t lim = t <= 1 ? (size_t)cfg.vocab_size * cfg.channels : sz[t];
            size_t i = off + (size_t)(k * 7919 + 13) % lim;
            float keep = p[i];
            p[i] = keep + (float)h;
            gpt_set_params(&g, p);
            double up = gpt_eval_loss(&g, in, tg);
            p[i] = keep - (float)h;
            gpt_set_params(&g, p);
            double down = gpt_eval_loss(&g, in, tg);
            p[i] = keep;
            double fd = (up - down) / (2 * h), scale = fabs(fd) > 1e-2 ? fabs(fd) : 1e-2;
            double e = fabs(grad[i] - fd) / scale;
            if (e > worst) worst = e;
            cr_expect_leq(e, rel, "%s[%zu]: analytic %.6g, finite differences %.6g",
                          config_tensor_name(&cfg, t), i - off, grad[i], fd);
            checked++;
        }
        off += sz[t];
    }
    cr_assert_eq(checked, 3 * 9, "tok_emb, lm_head, rms1w, wqkv, wo, rms2w, w_gateup, w_down, rmsfw");
    cr_log_info("llama finite differences: %d elements, worst relative error %.2e", checked, worst);
    free(p);
    free(grad);
    gpt_free(&g);
    backend_close(be);
}

/* The KV-cache decode opens for the family (its tokens and logits:
 * test_decode.c), with a grouped-query cache: per layer (KVH, T, hs) for
 * k and for v, so 2 L T KVH hs elements in all, not GPT-2's 2 L T C. */
Test(llama_model, kv_cache_is_grouped_query)
{
    GPTConfig cfg = llama_cfg(2);
    Backend *be = tu_cpu();
    GPT g;
    GPTDecode dec;
    char err[256] = "";
    int T = 8;
    cr_assert_eq(gpt_init(&g, &cfg, be, 1, T, RECOMPUTE_NONE, 0, err, sizeof err), 0, "%s", err);
    cr_expect_eq(gpt_decode_supported(&g), 1);
    cr_assert_eq(gpt_decode_open(&g, &dec, err, sizeof err), 0, "%s", err);
    size_t C = (size_t)cfg.channels, hs = C / (size_t)cfg.num_heads, F = (size_t)config_ffn(&cfg);
    size_t kv = (size_t)config_kv_heads(&cfg) * hs, R = (size_t)dec.rows;
    cr_assert_lt(kv, C, "the config is grouped-query");
    /* the cache, then R rows of x, ln, atty, res2, lnf (C), qkv (C + 2 kv), gate/up (2F),
     * SwiGLU (F), then mean, rstd (f32) and a token (int32) */
    size_t want = 2 * (size_t)cfg.num_layers * T * kv * 4 +
                  R * (5 * C + C + 2 * kv + 2 * F + F) * 4 + R * (2 * 4 + 4);
    cr_expect_eq(dec.bytes, want, "decode bytes %zu, want %zu", dec.bytes, want);
    gpt_decode_close(&g, &dec);
    gpt_free(&g);
    backend_close(be);
}
