/* tests/unit/model/test_gpt.c — the model's loss and gradients on the cpu backend.
 *
 *  - against the independent PyTorch reference (tests/data/, written by
 *    dev/reference/gpt2_reference.py in float64): loss within 1e-5 relative, each
 *    gradient tensor within 2e-5 of its largest reference entry;
 *  - against central finite differences, per tensor along random
 *    directions, in both recompute modes;
 *  - chunked loss head: chunk sizes 1, 7 and B*T agree. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "model/gpt.h"
#include "tests/lib/test_util.h"
#include "tests/lib/reference_file.h"

#define REFERENCE_PATH "tests/data/gpt2_reference_tiny.bin"

/* max |a - b| / max |b| over n elements. */
static double rel_err(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (d > num) num = d;
        if (fabs(b[i]) > den) den = fabs(b[i]);
    }
    return den > 0 ? num / den : num;
}

static void check_against_reference(int recompute, int loss_chunk)
{
    ReferenceFile rf;
    char err[512];
    cr_assert_eq(reference_load(REFERENCE_PATH, &rf, err, sizeof err), 0, "%s", err);
    GPTConfig cfg = {.max_seq_len = rf.maxT, .vocab_size = rf.V, .padded_vocab = rf.Vp,
                     .num_layers = rf.L, .num_heads = rf.NH, .channels = rf.C};
    Backend *be = tu_cpu();
    GPT g;
    cr_assert_eq(gpt_init(&g, &cfg, be, rf.B, rf.T, recompute, loss_chunk, err, sizeof err), 0,
                 "%s", err);
    cr_assert_eq(g.plan.num_params, rf.num_params);
    gpt_set_params(&g, rf.params);
    gpt_zero_grads(&g);
    double loss = gpt_forward_backward(&g, rf.inputs, rf.targets, 1.0f / (rf.B * rf.T));
    cr_expect(fabs(loss - rf.loss) <= 1e-5 * fabs(rf.loss), "loss %.9f vs reference %.9f", loss,
              rf.loss);
    float *grads = malloc(rf.num_params * sizeof(float));
    gpt_get_grads(&g, grads);
    size_t sz[NUM_PARAM_TENSORS], off = 0;
    config_param_sizes(&cfg, sz);
    for (int t = 0; t < NUM_PARAM_TENSORS; t++) {
        double e = rel_err(grads + off, rf.grads + off, sz[t]);
        cr_expect(e < 2e-5, "recompute %d: gradient tensor %d: relative error %.3g", recompute, t,
                  e);
        off += sz[t];
    }
    free(grads);
    gpt_free(&g);
    backend_close(be);
    reference_free(&rf);
}

Test(gpt, matches_pytorch_reference_recompute0) { check_against_reference(0, 0); }
Test(gpt, matches_pytorch_reference_recompute1) { check_against_reference(1, 0); }
Test(gpt, matches_pytorch_reference_chunk7) { check_against_reference(1, 7); }

/* Loss of the tiny model at params p (no gradient needed, but the same code path). */
static double loss_at(GPT *g, const float *p, const int *in, const int *tg)
{
    gpt_set_params(g, p);
    return gpt_eval_loss(g, in, tg);
}

/* Central differences along 3 random unit directions per tensor:
 * |fd - g.d| <= 1e-2 |g.d| + 2e-4 (fp32 losses, step h = 1e-2). */
static void gradcheck(int recompute)
{
    GPTConfig cfg = tu_tiny_config();
    int B = 2, T = 8, N = B * T;
    Backend *be = tu_cpu();
    GPT g;
    char err[256];
    cr_assert_eq(gpt_init(&g, &cfg, be, B, T, recompute, 0, err, sizeof err), 0, "%s", err);
    size_t n = g.plan.num_params, sz[NUM_PARAM_TENSORS];
    config_param_sizes(&cfg, sz);
    float *p = tu_random_params(&cfg, 7), *q = malloc(n * sizeof(float));
    float *grad = malloc(n * sizeof(float)), *dir = malloc(n * sizeof(float));
    int in[16], tg[16];
    tu_random_tokens(in, N, cfg.vocab_size, 11);
    tu_random_tokens(tg, N, cfg.vocab_size, 12);
    gpt_set_params(&g, p);
    gpt_zero_grads(&g);
    gpt_forward_backward(&g, in, tg, 1.0f / N);
    gpt_get_grads(&g, grad);
    size_t off = 0;
    uint64_t seed = 99;
    for (int t = 0; t < NUM_PARAM_TENSORS; t++) {
        size_t rows = sz[t];
        if (t == 0) rows = (size_t)cfg.vocab_size * cfg.channels; /* padded rows: no gradient */
        for (int trial = 0; trial < 3; trial++) {
            int tok[1];
            double norm = 0, gd = 0;
            for (size_t i = 0; i < rows; i++) {
                tu_random_tokens(tok, 1, 2000, seed++);
                dir[i] = (float)(tok[0] - 1000);
                norm += (double)dir[i] * dir[i];
            }
            norm = sqrt(norm);
            const double h = 1e-2;
            memcpy(q, p, n * sizeof(float));
            for (size_t i = 0; i < rows; i++) q[off + i] = (float)(p[off + i] + h * dir[i] / norm);
            double lp = loss_at(&g, q, in, tg);
            for (size_t i = 0; i < rows; i++) q[off + i] = (float)(p[off + i] - h * dir[i] / norm);
            double lm = loss_at(&g, q, in, tg);
            for (size_t i = 0; i < rows; i++) gd += grad[off + i] * (dir[i] / norm);
            double fd = (lp - lm) / (2 * h);
            cr_expect(fabs(fd - gd) <= 1e-2 * fabs(gd) + 2e-4,
                      "recompute %d tensor %d: finite difference %.6g vs analytic %.6g", recompute,
                      t, fd, gd);
        }
        off += sz[t];
    }
    free(p), free(q), free(grad), free(dir);
    gpt_free(&g);
    backend_close(be);
}

Test(gpt, finite_differences_recompute0) { gradcheck(0); }
Test(gpt, finite_differences_recompute1) { gradcheck(1); }

/* The chunked head: chunk 1, 7 (a partial last chunk) and B*T agree on the
 * loss within 1e-6 relative and on every gradient within 1e-5. */
Test(gpt, loss_chunks_agree)
{
    GPTConfig cfg = tu_tiny_config();
    int B = 2, T = 8, N = B * T, chunks[3] = {N, 1, 7};
    float *p = tu_random_params(&cfg, 5);
    int in[16], tg[16];
    tu_random_tokens(in, N, cfg.vocab_size, 1);
    tu_random_tokens(tg, N, cfg.vocab_size, 2);
    size_t n = config_num_params(&cfg);
    float *ref = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
    double ref_loss = 0;
    for (int k = 0; k < 3; k++) {
        Backend *be = tu_cpu();
        GPT g;
        char err[256];
        cr_assert_eq(gpt_init(&g, &cfg, be, B, T, 1, chunks[k], err, sizeof err), 0, "%s", err);
        cr_assert_eq(g.plan.loss_chunk, chunks[k]);
        gpt_set_params(&g, p);
        gpt_zero_grads(&g);
        double loss = gpt_forward_backward(&g, in, tg, 1.0f / N);
        gpt_get_grads(&g, k == 0 ? ref : got);
        if (k == 0) {
            ref_loss = loss;
        } else {
            cr_expect(fabs(loss - ref_loss) <= 1e-6 * ref_loss, "chunk %d: loss %.9f vs %.9f",
                      chunks[k], loss, ref_loss);
            double e = rel_err(got, ref, n);
            cr_expect(e <= 1e-5, "chunk %d: gradient relative error %.3g", chunks[k], e);
        }
        gpt_free(&g);
        backend_close(be);
    }
    free(p), free(ref), free(got);
}

/* The cpu head on GPT-2's vocabulary with peaked logits, as a trained
 * model gives them (one logit far above tens of thousands of small ones):
 * every token's loss within 2e-6 nats and dx within 1e-5 of its largest
 * entry, against the same fp32 logits taken through log-sum-exp and the
 * softmax in double. (An fp32 running sum of the 50257 exponentials was
 * 1e-4..1e-3 off here.) */
Test(gpt, head_is_exact_on_peaked_large_vocabulary)
{
    enum { N = 6, C = 8, V = 50257, Vp = 50304 };
    float *x = malloc(sizeof(float) * N * C), *w = calloc((size_t)Vp * C, sizeof(float));
    float *dx = malloc(sizeof(float) * N * C), *dw = calloc((size_t)Vp * C, sizeof(float));
    float *buf = malloc(sizeof(float) * (size_t)N * Vp), loss[N];
    int tg[N];
    uint64_t s = 11;
    for (size_t i = 0; i < (size_t)V * C; i++)
        w[i] = (float)((rng_next(&s) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
    for (int i = 0; i < N * C; i++) /* |x| up to 4: logits spread over about +-10 */
        x[i] = (float)((rng_next(&s) >> 11) * (8.0 / 9007199254740992.0) - 4.0);
    for (int n = 0; n < N; n++) tg[n] = (int)(rng_next(&s) % V);
    Backend *be = tu_cpu();
    be->ops->head_forward_backward(be, loss, dx, dw, x, w, tg, buf, N, C, V, Vp, N, 1.0f);
    double worst = 0, worst_dx = 0, scale = 0;
    double *lg = malloc(sizeof(double) * V);
    for (int n = 0; n < N; n++) {
        double mx = -INFINITY, sum = 0, want_dx[C] = {0};
        for (int v = 0; v < V; v++) {
            double d = 0; /* the fp32 logit, as sgemm forms it to within rounding */
            for (int c = 0; c < C; c++) d += (double)x[n * C + c] * w[(size_t)v * C + c];
            lg[v] = (float)d;
            if (lg[v] > mx) mx = lg[v];
        }
        for (int v = 0; v < V; v++) sum += exp(lg[v] - mx);
        double want = mx + log(sum) - lg[tg[n]];
        worst = fmax(worst, fabs(loss[n] - want));
        for (int v = 0; v < V; v++) {
            double g = exp(lg[v] - mx) / sum - (v == tg[n]);
            for (int c = 0; c < C; c++) want_dx[c] += g * w[(size_t)v * C + c];
        }
        for (int c = 0; c < C; c++) {
            worst_dx = fmax(worst_dx, fabs(dx[n * C + c] - want_dx[c]));
            scale = fmax(scale, fabs(want_dx[c]));
        }
    }
    cr_expect(worst <= 2e-6, "worst loss error %.3g nats", worst);
    cr_expect(worst_dx <= 1e-5 * scale, "worst dx error %.3g (largest %.3g)", worst_dx, scale);
    backend_close(be);
    free(x), free(w), free(dx), free(dw), free(buf), free(lg);
}
