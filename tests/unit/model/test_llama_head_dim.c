/* tests/unit/model/test_llama_head_dim.c — the Llama family with a head size
 * that is not C / NH (--head-dim; Qwen3's 128 at C 1024 and 16 heads), on
 * the cpu backend:
 *  - the description's widths: qkv (NH + 2 NKV) hs, atty NH hs, the
 *    backward's narrow gradient buffer max(C, NH hs); the parameter slots
 *    wqkv (NH + 2 NKV) hs x C, wo C x NH hs, q_norm and k_norm hs;
 *  - heads wider than C / NH (attention wider than C, with qk-norm and a
 *    qkv bias, GQA) and narrower (multi-head): modes selective, 1, 2
 *    (every k) and auto at several budgets give losses, gradients and
 *    parameters after AdamW steps bitwise identical to mode 0's (memcmp),
 *    with the arenas equal to the planner's prediction to the byte,
 *    category by category; the wider one also at every one of its 256
 *    tape kinds;
 *  - the KV-cache decode gives the forward's logits (within 1e-5 of their
 *    largest magnitude);
 *  - the presets qwen3-0.6b and qwen3-4b count the parameters the
 *    published models have (596,049,920 and 4,022,468,096, tied),
 *    computed here from their config.json's fields;
 *  - config_validate: an odd head size, or a GPT-2 one, refused.
 * Logits and gradients against PyTorch: test_llama_reference.c. */
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

/* L layers, C 32, NH 4 of head size hd, NKV kv, F 48, T 8, B 2, V 64,
 * untied; wide: qk-norm and a qkv bias too. */
static GPTConfig hd_cfg(int layers, int hd, int kv, int wide)
{
    GPTConfig c = tu_tiny_config();
    c.num_layers = layers;
    c.arch = ARCH_LLAMA;
    c.kv_heads = kv;
    c.ffn = 48;
    c.untied = 1;
    c.head_dim = hd;
    c.qkv_bias = wide;
    c.qk_norm = wide;
    return c;
}

enum { B_ = 2, T_ = 8 };
/* Two AdamW steps at B=2, T=8. */
static const SchedShape SMALL = {B_, T_, 2};

Test(llama_head_dim, widths_and_parameter_slots)
{
    GPTConfig c = hd_cfg(2, 12, 2, 1); /* NH hs = 48 > C = 32 */
    char err[256] = "";
    cr_assert_eq(config_validate(&c, err, sizeof err), 0, "%s", err);
    cr_assert(config_head_dim(&c) == 12 && config_q_width(&c) == 48);
    const BlockDesc *d = block_desc_of(&c);
    cr_assert_eq(d, &LLAMA_QKNORM_BLOCK);
    BlockShape sh;
    block_shape(d, &c, 2, 8, &sh);
    cr_assert_eq(sh.hs, (size_t)12);
    /* qkv, qkr: (4 + 2*2) 12 = 96 a row; atty 48; dsmall max(32, 48) */
    cr_assert_eq(tape_tensor_elems(d, LLAMA_QKV, &sh), (size_t)16 * 96);
    cr_assert_eq(tape_tensor_elems(d, LLAMA_QKR, &sh), (size_t)16 * 96);
    cr_assert_eq(tape_tensor_elems(d, LLAMA_ATTY, &sh), (size_t)16 * 48);
    cr_assert_eq(block_grad_small(&sh), (size_t)48);
    cr_assert_eq(block_grad_big(d, &sh), (size_t)3 * 48, "d(gateup) and d(swiglu): 3F = 144");
    size_t sz[NUM_PARAM_TENSORS];
    config_param_sizes(&c, sz);
    cr_assert_eq(sz[4], (size_t)2 * 96 * 32, "wqkv");
    cr_assert_eq(sz[5], (size_t)2 * 96, "bqkv");
    cr_assert_eq(sz[6], (size_t)2 * 32 * 48, "wo: C x NH hs");
    cr_assert(sz[3] == 2 * 12 && sz[9] == 2 * 12, "q_norm, k_norm: hs a layer");
    GPTConfig n = hd_cfg(2, 6, 4, 0); /* NH hs = 24 < C */
    block_shape(block_desc_of(&n), &n, 2, 8, &sh);
    cr_assert_eq(block_grad_small(&sh), (size_t)32);
    cr_assert_eq(tape_tensor_elems(&LLAMA_BLOCK, LLAMA_ATTY, &sh), (size_t)16 * 24);
    /* the default: 0, or C / NH given, is the same model */
    GPTConfig z = hd_cfg(2, 0, 2, 0), e = hd_cfg(2, 8, 2, 0);
    cr_assert(config_head_dim(&z) == 8 && config_num_params(&z) == config_num_params(&e));
}

Test(llama_head_dim, validate_refuses_odd_and_gpt2)
{
    char err[256] = "";
    GPTConfig c = hd_cfg(2, 7, 2, 0);
    cr_assert_eq(config_validate(&c, err, sizeof err), -1);
    cr_assert(strstr(err, "head-dim") && strstr(err, "even"), "%s", err);
    GPTConfig g = tu_tiny_config();
    g.head_dim = 16;
    cr_assert_eq(config_validate(&g, err, sizeof err), -1);
    cr_assert(strstr(err, "head-dim"), "%s", err);
    g.head_dim = 8; /* C / NH: the same model */
    cr_assert_eq(config_validate(&g, err, sizeof err), 0, "%s", err);
    GPTConfig u = hd_cfg(2, 8, 2, 0); /* NH need not divide C when hs is given */
    u.channels = 30;
    cr_assert_eq(config_validate(&u, err, sizeof err), 0, "%s", err);
}

static void modes_match_mode_0(GPTConfig cfg)
{
    const BlockDesc *bd = block_desc_of(&cfg);
    size_t n = config_num_params(&cfg);
    SchedRun ref = sched_runs_reference(&cfg, SMALL);
    char err[512], what[64];
    for (int k = 1; k <= cfg.num_layers; k++) {
        Schedule s;
        cr_assert_eq(schedule_build_segments(&s, bd, cfg.num_layers, k, err, sizeof err), 0,
                     "%s", err);
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
    sched_runs_expect_auto_budgets(&ref, &cfg, SMALL, 4);
    sched_runs_drop(&ref);
}

Test(llama_head_dim, wider_heads_every_mode_matches_mode_0, .timeout = 600)
{
    modes_match_mode_0(hd_cfg(6, 12, 2, 1));
}

Test(llama_head_dim, narrower_heads_every_mode_matches_mode_0, .timeout = 600)
{
    modes_match_mode_0(hd_cfg(6, 6, 4, 0));
}

/* Every tape kind of the qk-norm block at hs 12: mode 0's program with
 * block l keeping kind first + l, 8 a run. */
Test(llama_head_dim, every_tape_kind_matches_mode_0, .timeout = 600)
{
    GPTConfig cfg = hd_cfg(8, 12, 2, 1);
    cr_assert_eq(tape_kinds(block_desc_of(&cfg)), 256);
    SchedRun ref = sched_runs_reference(&cfg, SMALL);
    sched_runs_expect_kinds_kept(&ref, &cfg, SMALL);
    sched_runs_drop(&ref);
}

static void decode_matches_forward(GPTConfig cfg)
{
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
    for (int t = 0; t < T_; t++) {
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

Test(llama_head_dim, kv_cache_decode_matches_the_forward, .timeout = 60)
{
    decode_matches_forward(hd_cfg(2, 12, 2, 1));
    decode_matches_forward(hd_cfg(2, 6, 4, 0));
}

/* The published configs' parameters, from their fields: the embedding (V
 * C, tied), per layer q (NH hd C), k and v (NKV hd C each), o (C NH hd),
 * the MLP (3 F C), two RMSNorms (2 C) and q_norm, k_norm (2 hd); the final
 * norm (C). */
static size_t published(size_t V, size_t C, size_t L, size_t NH, size_t NKV, size_t hd,
                        size_t F)
{
    size_t layer = 2 * NH * hd * C + 2 * NKV * hd * C + 3 * F * C + 2 * C + 2 * hd;
    return V * C + L * layer + C;
}

Test(llama_head_dim, qwen3_presets_count_the_published_parameters)
{
    static const struct { const char *name; size_t params; int C, L, NH, F; } want[] = {
        {"qwen3-0.6b", 596049920, 1024, 28, 16, 3072}, /* Qwen/Qwen3-0.6B */
        {"qwen3-4b", 4022468096, 2560, 36, 32, 9728},  /* Qwen/Qwen3-4B */
    };
    for (int i = 0; i < 2; i++) {
        GPTConfig c = {.max_seq_len = 1024};
        cr_assert_eq(config_preset(&c, want[i].name), 0);
        char err[256];
        cr_assert_eq(config_validate(&c, err, sizeof err), 0, "%s: %s", want[i].name, err);
        cr_assert(c.vocab_size == 151936 && c.padded_vocab == 151936 && !c.untied &&
                  c.kv_heads == 8 && c.head_dim == 128 && c.qk_norm && !c.qkv_bias &&
                  c.rope_theta == 1e6f && c.norm_eps == 1e-6f && c.rope_factor == 0);
        cr_assert(c.channels == want[i].C && c.num_layers == want[i].L &&
                  c.num_heads == want[i].NH && config_ffn(&c) == want[i].F);
        size_t fields = published(151936, (size_t)want[i].C, (size_t)want[i].L,
                                  (size_t)want[i].NH, 8, 128, (size_t)want[i].F);
        cr_assert_eq(fields, want[i].params, "%s: the fields give %zu", want[i].name, fields);
        cr_expect_eq(config_num_params(&c), want[i].params, "%s: %zu parameters, published %zu",
                     want[i].name, config_num_params(&c), want[i].params);
    }
}
