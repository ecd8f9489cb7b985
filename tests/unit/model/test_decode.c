/* tests/unit/model/test_decode.c — generation through the KV cache
 * (gpt.h's GPTDecode) against the reference path, the full forward over
 * the whole context (gpt_logits_at):
 *   - each position's logits: the decode step runs the forward's ops in
 *     the forward's order with N = 1, and the cpu attention decode walks
 *     the forward's sums in its order, so the logits differ at most by the
 *     matmuls' rounding (OpenBLAS may sum a 1-row product another way):
 *     within 1e-5 of the largest |logit| (measured: 1.2e-6 absolute, not
 *     bitwise, as OpenBLAS 0.3 sums a 1-row sgemm another way);
 *   - the sampled ids: 64 tokens at temperature 1 (every draw depends on
 *     the logits), with and without the cache, identical (a draw could
 *     move only if its uniform landed within ~1e-6 of a boundary: the
 *     seeds here are fixed, so the test is repeatable), both inside the
 *     model's T and across it (where the cached path re-runs the forward
 *     over the sliding window);
 *   - a cache of a model built for training (B = 2, recompute 1) serves
 *     row 0 the same way. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "cli/generate.h"
#include "tests/lib/test_util.h"

static GPTConfig small_config(int T)
{
    GPTConfig cfg = tu_tiny_config();
    cfg.num_layers = 3;
    cfg.channels = 48;
    cfg.num_heads = 4;
    cfg.max_seq_len = T;
    cfg.vocab_size = 101;
    cfg.padded_vocab = config_pad_vocab(101);
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
static void check_logits(int B, int recompute)
{
    int T = 20;
    GPTConfig cfg = small_config(T);
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

Test(decode, logits_match_full_forward) { check_logits(1, 0); }
Test(decode, logits_match_on_a_training_model) { check_logits(2, 1); }

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

static void check_tokens(int T, const SampleParams *sp)
{
    enum { n = 64 };
    GPTConfig cfg = small_config(T);
    Backend *be = tu_cpu();
    GPT g;
    open_model(&g, be, &cfg, 1, 0);
    int32_t cached[n], full[n];
    generate(&g, sp, 1, n, cached);
    generate(&g, sp, 0, n, full);
    for (int i = 0; i < n; i++)
        cr_expect_eq(cached[i], full[i], "T %d, token %d: cached %d, uncached %d", T, i,
                     cached[i], full[i]);
    gpt_free(&g);
    backend_close(be);
}

Test(decode, same_tokens_inside_the_window)
{
    SampleParams sp = {1.0f, 0, 1.0f};
    check_tokens(80, &sp); /* 3 + 64 positions: all cached */
    SampleParams nucleus = {0.8f, 20, 0.9f};
    check_tokens(80, &nucleus);
}

Test(decode, same_tokens_across_the_window)
{
    SampleParams sp = {1.0f, 0, 1.0f};
    check_tokens(24, &sp); /* cached up to 24 positions, then the sliding window */
}
