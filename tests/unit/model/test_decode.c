/* tests/unit/model/test_decode.c — generation through the KV cache
 * (gpt.h's GPTDecode) against the reference path, the full forward over
 * the whole context (gpt_logits_at):
 *   - each position's logits, fed one row at a time or in batches (a
 *     prompt, more than GPT_DECODE_ROWS rows in passes): the feed runs the forward's ops in
 *     the forward's order with N = 1, and the cpu attention decode walks
 *     the forward's sums in its order, so the logits differ at most by the
 *     matmuls' rounding (OpenBLAS may sum a 1-row product another way):
 *     within 1e-5 of the largest |logit| (measured: 1.2e-6 absolute, not
 *     bitwise, as OpenBLAS 0.3 sums a 1-row sgemm another way);
 *   - the sampled ids: 64 tokens at temperature 1 (every draw depends on
 *     the logits), with and without the cache, identical (a draw could
 *     move only if its uniform landed within ~1e-6 of a boundary: the
 *     seeds here are fixed, so the test is repeatable), both inside the
 *     model's T and across it (where both paths shift the context to its
 *     last half and the cached one re-prefills it in one batched feed);
 *   - the context rule itself (sample_context_start) on hand-worked
 *     cases, and greedy generation past the window against a loop that
 *     applies the rule by hand with the full forward;
 *   - a cache of a model built for training (B = 2, recompute 1) serves
 *     row 0 the same way;
 *   - the Llama family (grouped-query, RoPE, untied head) by the same
 *     checks: logits within the same 1e-5, the same sampled tokens inside
 *     and across the window, batched feeds. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>
#include <stdlib.h>

#include "cli/generate.h"
#include "tests/lib/test_util.h"

/* llama: the Llama family at the same widths, grouped-query (4 heads
 * over 2 key/value heads), F = 64, its own (untied) head */
static GPTConfig small_config(int T, int llama)
{
    GPTConfig cfg = tu_tiny_config();
    cfg.num_layers = 3;
    cfg.channels = 48;
    cfg.num_heads = 4;
    cfg.max_seq_len = T;
    cfg.vocab_size = 101;
    cfg.padded_vocab = config_pad_vocab(101);
    if (llama) {
        cfg.arch = ARCH_LLAMA;
        cfg.kv_heads = 2;
        cfg.ffn = 64;
        cfg.untied = 1;
    }
    return cfg;
}

static void open_model(GPT *g, Backend *be, const GPTConfig *cfg, int B, int recompute)
{
    char err[512];
    cr_assert_eq(gpt_init(g, cfg, be, B, cfg->max_seq_len, recompute, 0, err, sizeof err), 0,
                 "%s", err);
    float *p = tu_random_params(cfg, 11);
    gpt_set_params(g, p);
    free(p);
}

/* Every position's decode logits against the forward's at that position. */
static void check_logits(int B, int recompute, int llama)
{
    int T = 20;
    GPTConfig cfg = small_config(T, llama);
    Backend *be = tu_cpu();
    GPT g;
    open_model(&g, be, &cfg, B, recompute);
    int Vp = cfg.padded_vocab, N = B * T;
    int *tok = calloc((size_t)N, sizeof *tok);
    tu_random_tokens(tok, (size_t)T, cfg.vocab_size, 5); /* row 0; other rows 0 */
    float *full = malloc(sizeof(float) * Vp), *dec = malloc(sizeof(float) * Vp);
    GPTDecode d;
    char err[256];
    cr_assert_eq(gpt_decode_open(&g, &d, err, sizeof err), 0, "%s", err);
    double worst = 0.0;
    int bitwise = 1;
    for (int t = 0; t < T; t++) {
        gpt_decode_step(&g, &d, tok[t], dec);
        cr_assert_eq(d.len, t + 1);
        gpt_logits_at(&g, tok, t, full);
        double big = 0.0, diff = 0.0;
        for (int v = 0; v < cfg.vocab_size; v++) {
            big = fmax(big, fabs(full[v]));
            diff = fmax(diff, fabs((double)full[v] - dec[v]));
            bitwise &= full[v] == dec[v];
        }
        cr_expect(diff <= 1e-5 * big, "position %d: logits differ by %g (largest %g)", t, diff,
                  big);
        worst = fmax(worst, diff);
    }
    cr_log_info("decode logits: largest difference %g, bitwise %d", worst, bitwise);
    gpt_decode_close(&g, &d);
    free(tok), free(full), free(dec);
    gpt_free(&g);
    backend_close(be);
}

Test(decode, logits_match_full_forward) { check_logits(1, 0, 0); }
Test(decode, logits_match_on_a_training_model) { check_logits(2, 1, 0); }
Test(decode, llama_logits_match_full_forward) { check_logits(1, 0, 1); }
Test(decode, llama_logits_match_on_a_training_model) { check_logits(2, 1, 1); }

/* n tokens after a 3-token prompt, with the cache on or off. */
static void generate(GPT *g, const SampleParams *sp, int kv_cache, int n, int32_t *ids)
{
    int32_t prompt[3] = {7, 42, 99};
    TextCodec codec = {.kind = CODEC_IDS};
    SampleRng rng;
    sample_seed(&rng, 1234);
    int *work = malloc(sizeof(int) * (size_t)g->cfg.vocab_size);
    FILE *sink = fopen("/dev/null", "w");
    cr_assert_eq(sample_generate(g, &codec, prompt, 3, n, sp, 0, kv_cache, &rng, work, sink, ids),
                 n);
    fclose(sink);
    free(work);
}

static void check_tokens(int T, int n, const SampleParams *sp, int llama)
{
    GPTConfig cfg = small_config(T, llama);
    Backend *be = tu_cpu();
    GPT g;
    open_model(&g, be, &cfg, 1, 0);
    int32_t *cached = malloc(sizeof(int32_t) * (size_t)n), *full = malloc(sizeof(int32_t) * (size_t)n);
    generate(&g, sp, 1, n, cached);
    generate(&g, sp, 0, n, full);
    for (int i = 0; i < n; i++)
        cr_expect_eq(cached[i], full[i], "T %d, token %d: cached %d, uncached %d", T, i,
                     cached[i], full[i]);
    free(cached), free(full);
    gpt_free(&g);
    backend_close(be);
}

Test(decode, same_tokens_inside_the_window)
{
    SampleParams sp = {1.0f, 0, 1.0f};
    check_tokens(80, 64, &sp, 0); /* 3 + 64 positions: all cached */
    SampleParams nucleus = {0.8f, 20, 0.9f};
    check_tokens(80, 64, &nucleus, 0);
}

Test(decode, same_tokens_across_the_window)
{
    SampleParams sp = {1.0f, 0, 1.0f};
    check_tokens(24, 64, &sp, 0); /* 24 positions, then a shift to 12 every 12 tokens */
    SampleParams nucleus = {0.8f, 20, 0.9f};
    check_tokens(24, 64, &nucleus, 0);
    /* T/2 = 70 > GPT_DECODE_ROWS: each re-prefill takes two passes */
    check_tokens(140, 220, &sp, 0);
}

/* Logits of a prompt fed in batches (split at `cut`, the first part in
 * passes of GPT_DECODE_ROWS when longer), then a row at a time, against
 * the full forward at each fed prefix's last position. */
static void check_feed(int T, int cut, int llama)
{
    GPTConfig cfg = small_config(T, llama);
    Backend *be = tu_cpu();
    GPT g;
    open_model(&g, be, &cfg, 1, 0);
    int Vp = cfg.padded_vocab;
    int *tok = calloc((size_t)T, sizeof *tok);
    tu_random_tokens(tok, (size_t)T, cfg.vocab_size, 8);
    float *full = malloc(sizeof(float) * Vp), *dec = malloc(sizeof(float) * Vp);
    GPTDecode d;
    char err[256];
    cr_assert_eq(gpt_decode_open(&g, &d, err, sizeof err), 0, "%s", err);
    cr_assert_eq(d.rows, T < GPT_DECODE_ROWS ? T : GPT_DECODE_ROWS);
    for (int pos = cut - 1; pos < T; pos++) {
        if (pos == cut - 1)
            gpt_decode_feed(&g, &d, tok, cut, dec);
        else
            gpt_decode_feed(&g, &d, tok + pos, 1, dec);
        cr_assert_eq(d.len, pos + 1);
        gpt_logits_at(&g, tok, pos, full);
        double big = 0.0, diff = 0.0;
        for (int v = 0; v < cfg.vocab_size; v++) {
            big = fmax(big, fabs(full[v]));
            diff = fmax(diff, fabs((double)full[v] - dec[v]));
        }
        cr_expect(diff <= 1e-5 * big, "T %d, cut %d, position %d: logits differ by %g "
                  "(largest %g)", T, cut, pos, diff, big);
    }
    gpt_decode_close(&g, &d);
    free(tok), free(full), free(dec);
    gpt_free(&g);
    backend_close(be);
}

/* The Llama family: RoPE at each row's position (from table row t), the
 * grouped-query cache; the same tokens and logits as the full forward,
 * inside the window and across it (a re-prefill in passes of 64 rows). */
Test(decode, llama_same_tokens_and_logits)
{
    SampleParams sp = {1.0f, 0, 1.0f};
    check_tokens(80, 64, &sp, 1);
    check_tokens(24, 64, &sp, 1);
    SampleParams nucleus = {0.8f, 20, 0.9f};
    check_tokens(140, 220, &nucleus, 1);
    check_feed(20, 13, 1);
    check_feed(150, 140, 1);
}

Test(decode, batched_feed_matches_full_forward)
{
    check_feed(20, 13, 0);   /* one pass of 13 rows, then 7 single rows */
    check_feed(150, 140, 0); /* passes of 64, 64 and 12 rows, then 10 single rows */
    check_feed(150, 64, 0);  /* exactly one full pass */
}

/* Hand-worked: T = 8 keeps 4, T = 7 keeps 4 (half, rounded up), T = 1 keeps 1. */
Test(decode, context_rule_keeps_the_last_half)
{
    cr_expect_eq(sample_context_start(0, 8, 8), 0);  /* full window: no shift */
    cr_expect_eq(sample_context_start(0, 9, 8), 5);  /* one over: keep 5..8 */
    cr_expect_eq(sample_context_start(5, 13, 8), 5); /* 8 again since the shift */
    cr_expect_eq(sample_context_start(5, 14, 8), 10);
    cr_expect_eq(sample_context_start(0, 8, 7), 4);  /* keep 4..7 */
    cr_expect_eq(sample_context_start(3, 4, 1), 3);
    cr_expect_eq(sample_context_start(3, 5, 1), 4);
}

/* Sampled ids past the window, both paths, against the rule applied by
 * hand with the full forward and the same seeded draws: the context is the
 * prompt and each draw; once it holds more than T tokens, only its last
 * T - T/2 stay, at positions 0 ... A sliding window (the last T tokens
 * every time) gives other ids here. */
Test(decode, sampled_tokens_follow_the_context_shift)
{
    enum { T = 10, n = 40 };
    GPTConfig cfg = small_config(T, 0);
    Backend *be = tu_cpu();
    GPT g;
    open_model(&g, be, &cfg, 1, 0);
    SampleParams sp = {1.0f, 0, 1.0f};
    int32_t ids[2][n];
    generate(&g, &sp, 1, n, ids[1]);
    generate(&g, &sp, 0, n, ids[0]);
    int ctx[T + 1] = {7, 42, 99}, len = 3, inputs[T];
    float *logits = malloc(sizeof(float) * cfg.padded_vocab);
    int *work = malloc(sizeof(int) * (size_t)cfg.vocab_size);
    SampleRng rng;
    sample_seed(&rng, 1234); /* generate()'s seed */
    for (int i = 0; i < n; i++) {
        memset(inputs, 0, sizeof inputs);
        memcpy(inputs, ctx, sizeof(int) * len);
        gpt_logits_at(&g, inputs, len - 1, logits);
        int next = sample_draw(logits, cfg.vocab_size, &sp, &rng, work);
        cr_expect_eq(ids[0][i], next, "token %d: uncached %d, by hand %d", i, ids[0][i], next);
        cr_expect_eq(ids[1][i], next, "token %d: cached %d, by hand %d", i, ids[1][i], next);
        ctx[len++] = next;
        if (len > T) { /* keep the last T - T/2 = 5 */
            memmove(ctx, ctx + len - (T - T / 2), sizeof(int) * (T - T / 2));
            len = T - T / 2;
        }
    }
    free(logits), free(work);
    gpt_free(&g);
    backend_close(be);
}
