/* tests/unit/model/test_llama_options.c — the Llama family's options on the
 * cpu backend (Qwen2's qkv bias, Qwen3's qk-norm, Llama 3's RoPE scaling)
 * and its published presets:
 *  - with --qk-norm the block is LLAMA_QKNORM_BLOCK, consistent, with the
 *    norm's input as an eighth tape tensor and its per-head rstd kept;
 *  - with qk-norm and a qkv bias, modes selective, 1, 2 (every k), auto at
 *    many budgets and every one of the 256 tape kinds give losses,
 *    gradients and parameters after AdamW steps bitwise identical to mode
 *    0's (memcmp), with the arenas' high-water mark equal to the planner's
 *    prediction to the byte, category by category;
 *  - the KV-cache decode with both options gives the forward's logits
 *    (within 1e-5 of their largest magnitude);
 *  - the presets qwen2.5-0.5b and llama-3.2-1b count the parameters their
 *    published models have (494,032,768 and 1,235,814,400, tied);
 *  - the scaled RoPE frequencies follow Llama 3's published rule at its
 *    band edges.
 * Logits and gradients against PyTorch: test_llama_reference.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/rope.h"
#include "model/gpt.h"
#include "model/llama_block.h"
#include "model/planner.h"
#include "model/tape.h"
#include "tests/lib/sched_runs.h"
#include "tests/lib/test_util.h"

/* L layers, C=32, NH=4, NKV=2 (hs 8), F=48, T=8, B=2, V=64, untied, qk-norm,
 * qkv bias, Llama 3's scaling at original positions 4. */
static GPTConfig opt_cfg(int layers)
{
    GPTConfig c = tu_tiny_config();
    c.num_layers = layers;
    c.arch = ARCH_LLAMA;
    c.kv_heads = 2;
    c.ffn = 48;
    c.untied = 1;
    c.qkv_bias = 1;
    c.qk_norm = 1;
    c.rope_factor = 8.0f;
    c.rope_low_freq = 1.0f;
    c.rope_high_freq = 4.0f;
    c.rope_original_max_pos = 4;
    return c;
}

enum { B_ = 2, T_ = 8 };
/* Two AdamW steps at B=2, T=8. */
static const SchedShape SMALL = {B_, T_, 2};

Test(llama_options, qk_norm_description_is_consistent_and_picked)
{
    char err[256] = "";
    const BlockDesc *d = &LLAMA_QKNORM_BLOCK;
    cr_assert_eq(block_desc_check(d, err, sizeof err), 0, "%s", err);
    GPTConfig c = opt_cfg(2);
    cr_assert_eq(block_desc_of(&c), d);
    c.qk_norm = 0;
    cr_assert_eq(block_desc_of(&c), &LLAMA_BLOCK, "a qkv bias alone keeps the plain block");
    c.qk_norm = 1;
    BlockShape sh;
    block_shape(d, &c, 2, 8, &sh);
    /* qkr and qkv: (NH + 2 NKV) hs = 64 each; the qk rstd: NH + NKV = 6 a row */
    cr_assert_eq(tape_tensor_elems(d, LLAMA_QKR, &sh), (size_t)16 * 64);
    cr_assert_eq(block_dim(&sh, d->side[LLAMA_QK_RSTD].width), (size_t)6);
    char name[BLOCK_MAX_TENSORS + 1];
    cr_assert_str_eq(tape_kind_name(d, LLAMA_QKNORM_SELECTIVE, name), "--ar-u-k");
    cr_assert_eq(tape_kinds(d), 256);
    /* the parameters: q_norm and k_norm (hs a layer) in ln1b's and ln2b's
     * slots, the bias (C + 2 NKV hs a layer) in qkvb's */
    size_t sz[NUM_PARAM_TENSORS];
    config_param_sizes(&c, sz);
    cr_assert(sz[3] == 2 * 8 && sz[9] == 2 * 8 && sz[5] == 2 * 64);
    cr_assert_str_eq(config_tensor_name(&c, 3), "q_norm");
    cr_assert_str_eq(config_tensor_name(&c, 9), "k_norm");
    cr_assert_str_eq(config_tensor_name(&c, 5), "bqkv");
}

Test(llama_options, selective_mode_1_and_segments_match_mode_0, .timeout = 300)
{
    GPTConfig cfg = opt_cfg(6);
    const BlockDesc *bd = block_desc_of(&cfg);
    size_t n = config_num_params(&cfg);
    SchedRun ref = sched_runs_reference(&cfg, SMALL);
    for (int k = 1; k <= 6; k++) {
        Schedule s;
        char err[256], what[32];
        cr_assert_eq(schedule_build_segments(&s, bd, 6, k, err, sizeof err), 0, "%s", err);
        SchedRun r = sched_runs_run(&s, 0, &cfg, SMALL);
        snprintf(what, sizeof what, "segments k=%d", k);
        sched_runs_expect_same(&ref, &r, n, what);
        sched_runs_drop(&r);
    }
    static const int all[] = {RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_BLOCK,
                              RECOMPUTE_SEGMENTS};
    for (int i = 0; i < 4; i++) {
        SchedRun r = sched_runs_run(NULL, all[i], &cfg, SMALL);
        sched_runs_expect_same(&ref, &r, n, schedule_mode_name(all[i]));
        sched_runs_drop(&r);
    }
    sched_runs_drop(&ref);
}

Test(llama_options, auto_at_many_budgets_matches_mode_0, .timeout = 600)
{
    GPTConfig cfg = opt_cfg(6);
    SchedRun ref = sched_runs_reference(&cfg, SMALL);
    sched_runs_expect_auto_budgets(&ref, &cfg, SMALL, 8);
    sched_runs_drop(&ref);
}

/* Every tape kind of the eight-tensor block: mode 0's program with block l
 * keeping kind first + l, 8 a run; then inputs-kept programs re-forwarding
 * into workspace tapes of pairs of kinds. */
Test(llama_options, every_tape_kind_matches_mode_0, .timeout = 600)
{
    GPTConfig cfg = opt_cfg(8);
    SchedRun ref = sched_runs_reference(&cfg, SMALL);
    sched_runs_expect_kinds_kept(&ref, &cfg, SMALL);
    sched_runs_expect_inputs_kept(&ref, &cfg, SMALL);
    sched_runs_drop(&ref);
}

/* The cached decode runs the bias and the norm as the forward does: the
 * last position's logits of a 6-token feed against gpt_logits_at's. */
Test(llama_options, kv_cache_decode_matches_the_forward, .timeout = 60)
{
    GPTConfig cfg = opt_cfg(2);
    Backend *be = tu_cpu();
    GPT g;
    char err[256];
    cr_assert_eq(gpt_init(&g, &cfg, be, 1, T_, RECOMPUTE_NONE, 0, err, sizeof err), 0, "%s", err);
    float *p = tu_random_params(&cfg, 5);
    gpt_set_params(&g, p);
    free(p);
    cr_assert(gpt_decode_supported(&g));
    GPTDecode d;
    cr_assert_eq(gpt_decode_open(&g, &d, err, sizeof err), 0, "%s", err);
    int tok[T_];
    tu_random_tokens(tok, T_, cfg.vocab_size, 3);
    int Vp = cfg.padded_vocab, V = cfg.vocab_size;
    float *a = malloc((size_t)Vp * sizeof(float)), *b = malloc((size_t)Vp * sizeof(float));
    for (int t = 0; t < 6; t++) {
        gpt_decode_step(&g, &d, tok[t], a);
        gpt_logits_at(&g, tok, t, b);
        double big = 0, diff = 0;
        for (int i = 0; i < V; i++) {
            big = fmax(big, fabs(b[i]));
            diff = fmax(diff, fabs(a[i] - b[i]));
        }
        cr_expect_leq(diff, 1e-5 * big, "position %d: decode off the forward by %g (largest %g)",
                      t, diff, big);
    }
    free(a), free(b);
    gpt_decode_close(&g, &d);
    gpt_free(&g);
    backend_close(be);
}

Test(llama_options, published_presets_count_the_published_parameters)
{
    static const struct { const char *name; size_t params; int V, kv; } want[] = {
        {"qwen2.5-0.5b", 494032768, 151936, 2}, /* Qwen/Qwen2.5-0.5B, tied */
        {"llama-3.2-1b", 1235814400, 128256, 8}, /* meta-llama/Llama-3.2-1B, tied */
    };
    for (int i = 0; i < 2; i++) {
        GPTConfig c = {.max_seq_len = 1024};
        cr_assert_eq(config_preset(&c, want[i].name), 0);
        char err[256];
        cr_assert_eq(config_validate(&c, err, sizeof err), 0, "%s: %s", want[i].name, err);
        cr_assert(c.vocab_size == want[i].V && c.padded_vocab == want[i].V && !c.untied &&
                  c.kv_heads == want[i].kv);
        cr_expect_eq(config_num_params(&c), want[i].params, "%s: %zu parameters, published %zu",
                     want[i].name, config_num_params(&c), want[i].params);
    }
    GPTConfig q = {0}, l = {0};
    config_preset(&q, "qwen2.5-0.5b");
    config_preset(&l, "llama-3.2-1b");
    cr_assert(q.qkv_bias && !q.qk_norm && q.rope_theta == 1e6f && q.norm_eps == 1e-6f &&
              q.rope_factor == 0);
    cr_assert(!l.qkv_bias && l.rope_theta == 500000.0f && l.norm_eps == 1e-5f &&
              l.rope_factor == 32.0f && l.rope_low_freq == 1.0f && l.rope_high_freq == 4.0f &&
              l.rope_original_max_pos == 8192);
    GPTConfig g = {0};
    config_preset(&g, "d12");
    cr_assert_eq(g.vocab_size, 0, "a GPT-2 preset leaves the vocabulary to --vocab");
}

/* Llama 3.2's scaling (32, 1, 4, 8192) at head size 64, theta 500000: each
 * frequency against the rule computed here from its three bands. */
Test(llama_options, scaled_rope_frequencies_follow_the_rule)
{
    RopeConfig rc = {.theta = 500000, .scale_factor = 32, .low_freq_factor = 1,
                     .high_freq_factor = 4, .original_max_pos = 8192};
    double f[32];
    char err[256];
    cr_assert_eq(rope_frequencies(f, 64, &rc, err, sizeof err), 0, "%s", err);
    int kept = 0, blended = 0, divided = 0;
    for (int i = 0; i < 32; i++) {
        double base = pow(500000.0, -2.0 * i / 64), wl = 2 * M_PI / base, want;
        if (wl < 8192.0 / 4) {
            want = base, kept++;
        } else if (wl > 8192.0) {
            want = base / 32, divided++;
        } else {
            double s = (8192.0 / wl - 1) / 3;
            want = (1 - s) * base / 32 + s * base, blended++;
        }
        cr_expect_leq(fabs(f[i] - want), 1e-15 * want, "f_%d = %.17g, want %.17g", i, f[i], want);
    }
    cr_expect(kept > 0 && blended > 0 && divided > 0, "bands %d %d %d", kept, blended, divided);
}
