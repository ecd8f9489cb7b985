/* tests/e2e/eval/test_hellaswag_llama.c — multiple-choice evaluation
 * (--eval-file) of a Llama-family model, against PyTorch.
 *
 * A random GQA model with an untied head, Qwen's qkv bias and qk-norm
 * (L=2, C=32, 4 heads, 2 KV heads, F=48, byte vocabulary) is saved as a
 * model file and scored by ./train_gpt --steps 0 --eval-file on 6 examples
 * of random byte contexts (1..10 tokens) and completions (1..8). The test
 * hook's dump (one line per completion: its summed and mean losses, nats)
 * is checked against the same sums computed from the logits of
 * dev/reference/llama_model_reference.py (float64, written from the
 * published definition, never from the C code): within 1e-4 of each
 * value, the tolerance of the family's other reference tests. Each
 * completion is one reference row (its context and completion, padded
 * after its end: the attention is causal, so padding never reaches the
 * scored positions). Needs /usr/bin/python3 with torch. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "eval/eval_file.h"
#include "interop/model_file.h"
#include "model/config.h"
#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

#define REF "/usr/bin/python3 dev/reference/llama_model_reference.py"
#define EXAMPLES 6
#define ROWS (EXAMPLES * EVAL_COMPLETIONS)
#define TR 18 /* the reference's T: the longest row, 10 + 8 */

typedef struct {
    int ctx_len, len[EVAL_COMPLETIONS], label;
    int32_t ctx[10], comp[EVAL_COMPLETIONS][8];
} Example;

Test(hellaswag_llama, eval_file_scores_match_pytorch, .timeout = 240)
{
    char *d = tu_tempdir(), path[600], args[4096], cmd[4096], env[700], err[512];
    GPTConfig cfg = tu_tiny_config();
    cfg.arch = ARCH_LLAMA;
    cfg.vocab_size = cfg.padded_vocab = 256;
    cfg.max_seq_len = 64;
    cfg.kv_heads = 2;
    cfg.ffn = 48;
    cfg.untied = 1;
    cfg.qkv_bias = 1;
    cfg.qk_norm = 1;
    cfg.rope_theta = 10000.0f;
    cfg.norm_eps = 1e-5f;
    float *p = tu_random_params(&cfg, 21);
    snprintf(path, sizeof path, "%s/model.bin", d);
    cr_assert_eq(model_file_save(path, &cfg, p, err, sizeof err), 0, "%s", err);

    /* the examples, written as an eval file */
    Example ex[EXAMPLES];
    EvalSet es = {0};
    uint64_t seed = 77;
    for (int i = 0; i < EXAMPLES; i++) {
        Example *e = &ex[i];
        const int32_t *cp[EVAL_COMPLETIONS];
        e->ctx_len = 1 + (int)(rng_next(&seed) % 10);
        e->label = i % EVAL_COMPLETIONS;
        for (int t = 0; t < e->ctx_len; t++) e->ctx[t] = (int32_t)(rng_next(&seed) % 256);
        for (int c = 0; c < EVAL_COMPLETIONS; c++) {
            e->len[c] = 1 + (int)(rng_next(&seed) % 8);
            for (int t = 0; t < e->len[c]; t++) e->comp[c][t] = (int32_t)(rng_next(&seed) % 256);
            cp[c] = e->comp[c];
        }
        cr_assert_eq(eval_set_append(&es, e->label, e->ctx, e->ctx_len, cp, e->len, err,
                                     sizeof err), 0, "%s", err);
    }
    snprintf(path, sizeof path, "%s/hs.bin", d);
    cr_assert_eq(eval_file_write(path, &es, err, sizeof err), 0, "%s", err);
    eval_set_free(&es);

    /* the trainer's scores */
    tc_make_shards(d, 1, 400);
    snprintf(args, sizeof args, "--arch llama --init-from %s/model.bin --steps 0 --seq-len 64 --batch 4 "
             "--train-data '%s/train_*.bin' --val-every 0 --device cpu --threads 2 "
             "--eval-file %s/hs.bin", d, d, d);
    snprintf(env, sizeof env, "TRAIN_GPT_TEST_EVAL_DUMP=%s/dump.txt", d);
    snprintf(path, sizeof path, "%s/run", d);
    if (tc_run(env, args, path) != 0) {
        snprintf(path, sizeof path, "%s/run.err", d);
        char *why = tu_read_file(path, &(size_t){0});
        cr_assert_fail("train_gpt %s failed: %s", args, why ? why : "(no run.err)");
    }

    /* the reference's logits: row 4i+c = context i, then completion c */
    int32_t *tok = calloc(2 * (size_t)ROWS * TR, sizeof *tok);
    for (int i = 0; i < EXAMPLES; i++)
        for (int c = 0; c < EVAL_COMPLETIONS; c++) {
            int32_t *in = tok + (size_t)(EVAL_COMPLETIONS * i + c) * TR, *tg = in + ROWS * TR;
            int n = 0;
            for (int t = 0; t < ex[i].ctx_len; t++) in[n++] = ex[i].ctx[t];
            for (int t = 0; t < ex[i].len[c]; t++) in[n++] = ex[i].comp[c][t];
            for (int t = 0; t + 1 < n; t++) tg[t] = in[t + 1];
        }
    tu_write_file(tu_path(d, "params.f32"), p, config_num_params(&cfg) * sizeof(float));
    tu_write_file(tu_path(d, "tokens.i32"), tok, 2 * (size_t)ROWS * TR * sizeof *tok);
    snprintf(cmd, sizeof cmd, REF " %s %d %d %d %d %d %d %d %d %d %.9g %.9g %d 1 1 0 0 0 0", d,
             ROWS, TR, cfg.num_layers, cfg.channels, cfg.num_heads, cfg.kv_heads, cfg.ffn,
             cfg.vocab_size, cfg.padded_vocab, (double)cfg.rope_theta, (double)cfg.norm_eps,
             cfg.untied);
    char *out = NULL;
    int rc = tu_run_output(cmd, &out, &out);
    cr_assert(rc == 0 && out && strstr(out, "llama_model_reference: PASS"),
              "%s: exit %d: %s (needs /usr/bin/python3 with torch)", cmd, rc, out ? out : "");
    free(out);
    size_t len = 0;
    const int V = cfg.vocab_size;
    double *lg = (double *)tu_read_file(tu_path(d, "ref_logits.f64"), &len);
    cr_assert(lg && len == (size_t)ROWS * TR * V * sizeof(double), "ref_logits.f64: %zu bytes",
              len);

    /* each completion's summed loss: its token j scored at position
     * ctx_len - 1 + j (eval/score.h); no row is truncated at T = 64 */
    snprintf(path, sizeof path, "%s/dump.txt", d);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "the eval dump %s was not written", path);
    int lines = 0, i, c, used, l;
    double s, m, worst = 0;
    while (fscanf(f, "%d %d %d %d %lf %lf", &i, &c, &used, &l, &s, &m) == 6) {
        cr_assert(i >= 0 && i < EXAMPLES && c >= 0 && c < EVAL_COMPLETIONS);
        cr_expect(used == ex[i].ctx_len && l == ex[i].len[c], "example %d completion %d: "
                  "context %d length %d, expected %d %d", i, c, used, l, ex[i].ctx_len,
                  ex[i].len[c]);
        const double *row = lg + (size_t)(EVAL_COMPLETIONS * i + c) * TR * V;
        double rs = 0;
        for (int j = 0; j < ex[i].len[c]; j++) {
            const double *z = row + (size_t)(ex[i].ctx_len - 1 + j) * V;
            double mx = z[0], se = 0;
            for (int v = 1; v < V; v++) mx = fmax(mx, z[v]);
            for (int v = 0; v < V; v++) se += exp(z[v] - mx);
            rs += mx + log(se) - z[ex[i].comp[c][j]];
        }
        double rm = rs / ex[i].len[c];
        worst = fmax(worst, fmax(fabs(s - rs) / fabs(rs), fabs(m - rm) / fabs(rm)));
        lines++;
    }
    fclose(f);
    cr_expect_eq(lines, ROWS, "%d dump lines, expected %d", lines, ROWS);
    cr_expect_lt(worst, 1e-4, "scores off PyTorch's by %.3g (relative)", worst);
    cr_log_info("hellaswag llama: %d completions within %.2e of PyTorch", lines, worst);
    free(lg), free(tok), free(p);
    tu_remove_tree(d);
}
