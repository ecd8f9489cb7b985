/* tests/unit/model/test_llama_reference.c — the Llama family's model (cpu
 * backend, fp32) against dev/reference/llama_model_reference.py (PyTorch,
 * float64, written from the published definition): from the same weights
 * and tokens, every position's logits within 1e-4 of the reference's
 * largest logit magnitude, the mean loss within 1e-5 relative, and each
 * parameter tensor's gradient within 1e-4 of its largest reference
 * gradient magnitude. At two shapes: grouped-query with an untied head, and
 * multi-head with a tied head and RoPE theta 500000; and grouped-query with
 * an untied head and each of the family's options, alone and together:
 * Qwen2's qkv bias, Qwen3's qk-norm, Llama 3's RoPE frequency scaling (at
 * original positions 32, so that the head size's frequencies fall in all
 * three of its bands: kept, blended, divided); and a head size that is not
 * C / NH (--head-dim), wider and narrower, with and without GQA and qk-norm.
 * The reference runs once a run for the ten (one start of torch, most of a
 * case's time; tests/lib/run_once.h): the first test to need it writes every
 * case's inputs and runs it, the others read their case's results. Needs
 * /usr/bin/python3 with torch (Debian's python3-torch, which scripts/setup.sh
 * installs). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "model/gpt.h"
#include "tests/lib/run_once.h"
#include "tests/lib/test_util.h"

#define REF "/usr/bin/python3 dev/reference/llama_model_reference.py"
#define TOL 1e-4

static double *ref_result(const char *dir, const char *name, size_t n)
{
    size_t len = 0;
    char *p = tu_read_file(tu_path(dir, name), &len);
    cr_assert(p, "the reference wrote no %s", name);
    cr_assert_eq(len, n * sizeof(double), "%s: %zu bytes, expected %zu", name, len,
                 n * sizeof(double));
    return (double *)p;
}

/* max |ref - got| / max |ref| over n values */
static double rel_err(const double *ref, const float *got, size_t n)
{
    double big = 0, d = 0;
    for (size_t i = 0; i < n; i++) {
        big = fmax(big, fabs(ref[i]));
        d = fmax(d, fabs(ref[i] - got[i]));
    }
    return d / (big > 0 ? big : 1);
}

/* The ten shapes the tests check, each with its batch: case k of CASES. */
typedef struct {
    GPTConfig cfg;
    int B, T;
} RefCase;

/* GQA (4 heads, 2 KV heads, hs 8), untied, 2 layers, T 8, eps 1e-6, with
 * the options `bias`, `qkn` and Llama 3's scaling (factor 8, low 1, high 4,
 * original positions 32). At theta 100 the wavelengths 2 pi 100^(2i/8) are
 * 6.3, 19.9, 62.8, 198.7: i = 0 below 32/4 (kept), i = 1 between 8 and 32
 * (blended), i = 2, 3 above 32 (divided by 8). */
static RefCase with_options(int bias, int qkn, int scaled, float theta)
{
    GPTConfig c = tu_tiny_config();
    c.arch = ARCH_LLAMA;
    c.num_layers = 2;
    c.kv_heads = 2;
    c.ffn = 48;
    c.untied = 1;
    c.qkv_bias = bias;
    c.qk_norm = qkn;
    c.rope_theta = theta;
    c.norm_eps = 1e-6f;
    if (scaled) {
        c.rope_factor = 8.0f;
        c.rope_low_freq = 1.0f;
        c.rope_high_freq = 4.0f;
        c.rope_original_max_pos = 32;
    }
    return (RefCase){c, 2, 8};
}

/* A head size that is not C / NH, as Qwen3's 128 at C 1024 and 16 heads:
 * at C 32 (tu_tiny_config) 4 heads of 12 (attention 48 wide, wider than C)
 * and of 6 (24, narrower), grouped-query (2 KV heads) or multi-head, with
 * and without qk-norm. */
static RefCase with_head_dim(int hd, int kv_heads, int qkn)
{
    GPTConfig c = tu_tiny_config();
    c.arch = ARCH_LLAMA;
    c.num_layers = 2;
    c.kv_heads = kv_heads;
    c.ffn = 48;
    c.untied = 1;
    c.qk_norm = qkn;
    c.norm_eps = 1e-6f;
    c.head_dim = hd;
    return (RefCase){c, 2, 8};
}

enum {
    GQA_UNTIED, MHA_TIED, HD_WIDE_GQA, HD_WIDE_GQA_QKN, HD_NARROW_MHA, HD_NARROW_MHA_QKN,
    OPT_BIAS, OPT_QKN, OPT_SCALED, OPT_ALL, NUM_CASES
};

static RefCase ref_case(int k)
{
    GPTConfig c = tu_tiny_config(); /* V 64 (padded 128), T 8 */
    c.arch = ARCH_LLAMA;
    switch (k) {
    case GQA_UNTIED:
        c.num_layers = 2;
        c.kv_heads = 2;
        c.ffn = 48;
        c.untied = 1;
        return (RefCase){c, 2, 8};
    case MHA_TIED:
        c.num_layers = 3;
        c.channels = 48;
        c.num_heads = 3; /* hs 16 */
        c.kv_heads = 3;
        c.ffn = 0;       /* the default: 8/3 C up to a multiple of 256 */
        c.rope_theta = 500000.0f;
        c.untied = 0;
        c.max_seq_len = 7;
        return (RefCase){c, 3, 7};
    case HD_WIDE_GQA: return with_head_dim(12, 2, 0);
    case HD_WIDE_GQA_QKN: return with_head_dim(12, 2, 1);
    case HD_NARROW_MHA: return with_head_dim(6, 4, 0);
    case HD_NARROW_MHA_QKN: return with_head_dim(6, 4, 1);
    case OPT_BIAS: return with_options(1, 0, 0, 10000);
    case OPT_QKN: return with_options(0, 1, 0, 10000);
    case OPT_SCALED: return with_options(0, 0, 1, 100);
    default: return with_options(1, 1, 1, 100);
    }
}

/* Case k's inputs: tu_random_params(seed 11), inputs and targets (seeds 12,
 * 13). Deterministic: the reference's folder and the test's own agree. */
static void case_inputs(const RefCase *rc, float **p, int **tok)
{
    size_t N = (size_t)rc->B * rc->T;
    *p = tu_random_params(&rc->cfg, 11);
    *tok = malloc(2 * N * sizeof(int));
    cr_assert_not_null(*tok);
    tu_random_tokens(*tok, N, rc->cfg.vocab_size, 12);
    tu_random_tokens(*tok + N, N, rc->cfg.vocab_size, 13);
}

/* run_once's build: every case's inputs in dir/k, then the reference on
 * all ten in one start of torch (most of a case's time). */
static void build_references(const char *dir, void *arg)
{
    (void)arg;
    char *cmd = malloc(16384), *out = NULL, sub[64];
    cr_assert_not_null(cmd);
    int len = snprintf(cmd, 16384, "%s", REF);
    for (int k = 0; k < NUM_CASES; k++) {
        RefCase rc = ref_case(k);
        const GPTConfig *cfg = &rc.cfg;
        float *p;
        int *tok;
        case_inputs(&rc, &p, &tok);
        snprintf(sub, sizeof sub, "%d", k);
        char *d = strdup(tu_path(dir, sub));
        cr_assert_eq(mkdir(d, 0755), 0, "%s", d);
        tu_write_file(tu_path(d, "params.f32"), p, config_num_params(cfg) * sizeof(float));
        tu_write_file(tu_path(d, "tokens.i32"), tok, 2 * (size_t)rc.B * rc.T * sizeof(int));
        len += snprintf(cmd + len, 16384 - (size_t)len, "%s %s %d %d %d %d %d %d %d %d %d %.9g "
                        "%.9g %d %d %d %.9g %.9g %.9g %d %d", k ? " --" : "", d, rc.B, rc.T,
                        cfg->num_layers, cfg->channels, cfg->num_heads, config_kv_heads(cfg),
                        config_ffn(cfg), cfg->vocab_size, cfg->padded_vocab,
                        (double)config_rope_theta(cfg), (double)config_norm_eps(cfg),
                        cfg->untied, cfg->qkv_bias, cfg->qk_norm, (double)cfg->rope_factor,
                        (double)cfg->rope_low_freq, (double)cfg->rope_high_freq,
                        cfg->rope_original_max_pos, cfg->head_dim);
        cr_assert_lt(len, 16384, "the reference's command is too long");
        free(d), free(p), free(tok);
    }
    int rc = tu_run_output(cmd, &out, &out);
    cr_assert(rc == 0 && out && strstr(out, "llama_model_reference: PASS"),
              "%s: exit %d: %s (needs /usr/bin/python3 with torch)", cmd, rc, out ? out : "");
    free(out), free(cmd);
}

/* Case k against its reference results (the run's one reference run,
 * tests/lib/run_once.h). */
static void against_reference(int k)
{
    RefCase rcase = ref_case(k);
    const GPTConfig *cfg = &rcase.cfg;
    int B = rcase.B, T = rcase.T;
    char *shared = run_once("llama_reference", build_references, NULL), sub[64];
    snprintf(sub, sizeof sub, "%d", k);
    char *d = strdup(tu_path(shared, sub));
    Backend *be = tu_cpu();
    GPT g;
    char err[256];
    cr_assert_eq(gpt_init(&g, cfg, be, B, T, RECOMPUTE_NONE, 0, err, sizeof err), 0, "%s", err);
    size_t n = g.plan.num_params, sz[NUM_PARAM_TENSORS];
    config_param_sizes(cfg, sz);
    float *p, *grads = malloc(n * sizeof(float));
    int *tok, N = B * T, V = cfg->vocab_size, Vp = cfg->padded_vocab;
    case_inputs(&rcase, &p, &tok);
    /* the reference ran on this test's inputs */
    size_t plen = 0, tlen = 0;
    char *rp = tu_read_file(tu_path(d, "params.f32"), &plen);
    char *rt = tu_read_file(tu_path(d, "tokens.i32"), &tlen);
    cr_assert(rp && rt && plen == n * sizeof(float) && tlen == 2 * (size_t)N * sizeof(int) &&
              memcmp(rp, p, plen) == 0 && memcmp(rt, tok, tlen) == 0,
              "%s: the reference's inputs are not this test's", d);
    free(rp), free(rt);

    gpt_set_params(&g, p);
    /* logits: batch row b moved to row 0 (gpt_logits_at reads row 0) */
    float *logits = malloc((size_t)N * V * sizeof(float)), *row = malloc((size_t)Vp * sizeof(float));
    int *in = malloc((size_t)N * sizeof(int));
    for (int b = 0; b < B; b++) {
        memcpy(in, tok, (size_t)N * sizeof(int));
        memcpy(in, tok + (size_t)b * T, (size_t)T * sizeof(int));
        memcpy(in + (size_t)b * T, tok, (size_t)T * sizeof(int));
        for (int t = 0; t < T; t++) {
            gpt_logits_at(&g, in, t, row);
            memcpy(logits + ((size_t)b * T + t) * V, row, (size_t)V * sizeof(float));
        }
    }
    double *rl = ref_result(d, "ref_logits.f64", (size_t)N * V);
    double e = rel_err(rl, logits, (size_t)N * V);
    cr_expect_lt(e, TOL, "logits off the reference by %g of their largest magnitude", e);
    cr_log_info("llama reference: logits within %.2e", e);

    gpt_zero_grads(&g);
    double loss = gpt_forward_backward(&g, tok, tok + N, 1.0f / N);
    gpt_get_grads(&g, grads);
    double *rloss = ref_result(d, "ref_loss.f64", 1);
    cr_expect_lt(fabs(loss - rloss[0]), 1e-5 * rloss[0], "loss %.9g, reference %.9g", loss,
                 rloss[0]);
    double *rg = ref_result(d, "ref_grads.f64", n);
    size_t off = 0;
    double worst = 0;
    for (int t = 0; t < NUM_PARAM_TENSORS; t++) {
        if (!sz[t]) continue;
        double et = rel_err(rg + off, grads + off, sz[t]);
        worst = fmax(worst, et);
        cr_expect_lt(et, TOL, "d loss / d %s off autograd's by %g of its largest magnitude",
                     config_tensor_name(cfg, t), et);
        off += sz[t];
    }
    cr_assert_eq(off, n);
    cr_log_info("llama reference: loss %.9g vs %.9g, gradients within %.2e", loss, rloss[0],
                worst);
    free(rl), free(rloss), free(rg), free(logits), free(row), free(in), free(tok), free(p);
    free(grads), free(d), free(shared);
    gpt_free(&g);
    backend_close(be);
}

Test(llama_reference, gqa_untied_matches_pytorch, .timeout = 120) { against_reference(GQA_UNTIED); }

Test(llama_reference, mha_tied_theta_500000_matches_pytorch, .timeout = 120)
{
    against_reference(MHA_TIED);
}

static void with_head_dim_case(int k, int hd)
{
    RefCase rc = ref_case(k);
    cr_assert_eq(config_head_dim(&rc.cfg), hd);
    against_reference(k);
}

Test(llama_reference, head_dim_wider_gqa_matches_pytorch, .timeout = 120)
{
    with_head_dim_case(HD_WIDE_GQA, 12);
}
Test(llama_reference, head_dim_wider_gqa_qk_norm_matches_pytorch, .timeout = 120)
{
    with_head_dim_case(HD_WIDE_GQA_QKN, 12);
}
Test(llama_reference, head_dim_narrower_mha_matches_pytorch, .timeout = 120)
{
    with_head_dim_case(HD_NARROW_MHA, 6);
}
Test(llama_reference, head_dim_narrower_mha_qk_norm_matches_pytorch, .timeout = 120)
{
    with_head_dim_case(HD_NARROW_MHA_QKN, 6);
}

Test(llama_reference, qkv_bias_matches_pytorch, .timeout = 120) { against_reference(OPT_BIAS); }
Test(llama_reference, qk_norm_matches_pytorch, .timeout = 120) { against_reference(OPT_QKN); }
Test(llama_reference, rope_scaling_matches_pytorch, .timeout = 120)
{
    against_reference(OPT_SCALED);
}
Test(llama_reference, all_options_together_match_pytorch, .timeout = 120)
{
    against_reference(OPT_ALL);
}
