/* tests/unit/eval/test_hellaswag.c — HellaSwag in llm.c's eval format, end to end.
 *
 * The data: tests/data/hellaswag_tiny.jsonl, 20 hand-written examples in
 * HellaSwag's schema (contexts of 10 to 64 GPT-2 tokens, endings of 4 to
 * 54, labels 0..3, one label given as a string, WikiHow-style headers,
 * accents, digits, curly quotes).
 *
 * References, each independent of the code under test:
 *  - dev/reference/hellaswag_writer.py: GPT-2 BPE and the eval file from the
 *    published format, in Python's standard library alone; ./tokenize
 *    --hellaswag must write the same file, compared record by record;
 *  - tests/data/eval_reference_tiny.bin, written by dev/reference/gpt2_reference.py
 *    eval (float64 PyTorch): every completion's loss sum and mean at row
 *    lengths 64 (9 completions with a cut context) and 128 (none), for a
 *    V = 50257 model with tu_random_params(seed 1337) parameters, and a
 *    20-token greedy continuation. Ours: within 1e-5 relative, the same
 *    rows, the same acc and acc_norm counts, the same greedy ids, at
 *    B = 1, 3, 4 and 8 (packing must not matter);
 *  - ranks: 2 processes (mpirun) against 1, counts equal. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_file.h"
#include "eval/hellaswag.h"
#include "distributed/dist.h"
#include "interop/model_file.h"
#include "eval/score.h"
#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"
#include "cli/generate.h"

#define JSONL "tests/data/hellaswag_tiny.jsonl"
#define REFERENCE "tests/data/eval_reference_tiny.bin"
#define MPIRUN "timeout 120 " TC_MPIRUN

/* ---- the reference file (format: dev/reference/gpt2_reference_eval.py) ---- */

typedef struct {
    int used, len;
    double sum, mean;
} RefRow;

typedef struct {
    int32_t h[32];
    uint64_t param_hash;
    RefRow *rows;       /* R blocks of n*4 */
    int32_t *prompt, *greedy;
    char *blob;
} EvalRef;

static void ref_load(EvalRef *r)
{
    size_t len;
    r->blob = tu_read_file(REFERENCE, &len);
    cr_assert_not_null(r->blob, "%s is missing", REFERENCE);
    memcpy(r->h, r->blob, sizeof r->h);
    cr_assert_eq(r->h[0], 20261130, "bad magic");
    int n = r->h[8], R = r->h[10], P = r->h[17], G = r->h[18];
    size_t want = 128 + 8 + (size_t)R * n * 4 * 24 + 4 * (size_t)(P + G);
    cr_assert_eq(len, want, "%s: %zu bytes, expected %zu", REFERENCE, len, want);
    memcpy(&r->param_hash, r->blob + 128, 8);
    r->rows = malloc((size_t)R * n * 4 * sizeof *r->rows);
    const char *p = r->blob + 136;
    for (int i = 0; i < R * n * 4; i++, p += 24) {
        memcpy(&r->rows[i].used, p, 4);
        memcpy(&r->rows[i].len, p + 4, 4);
        memcpy(&r->rows[i].sum, p + 8, 8);
        memcpy(&r->rows[i].mean, p + 16, 8);
    }
    r->prompt = (int32_t *)malloc(4 * (size_t)P);
    r->greedy = (int32_t *)malloc(4 * (size_t)G);
    memcpy(r->prompt, p, 4 * (size_t)P);
    memcpy(r->greedy, p + 4 * P, 4 * (size_t)G);
}

static void ref_free(EvalRef *r)
{
    free(r->rows), free(r->prompt), free(r->greedy), free(r->blob);
}

static GPTConfig ref_config(const EvalRef *r)
{
    GPTConfig c = {.num_layers = r->h[2], .num_heads = r->h[3], .channels = r->h[4],
                   .vocab_size = r->h[5], .padded_vocab = r->h[6], .max_seq_len = r->h[7]};
    return c;
}

/* The reference model's parameters, checked against the stored hash. */
static float *ref_params(const EvalRef *r, const GPTConfig *cfg)
{
    float *p = tu_random_params(cfg, (uint64_t)r->h[9]);
    cr_assert_eq(dist_hash_floats(p, config_num_params(cfg)), r->param_hash,
                 "tu_random_params and the reference's parameters differ");
    return p;
}

static void load_set(EvalSet *es)
{
    char err[1024];
    Tokenizer tk;
    cr_assert_eq(tokenizer_load(&tk, TU_ENCODER, TU_VOCAB, err, sizeof err), 0, "%s", err);
    memset(es, 0, sizeof *es);
    cr_assert_eq(hellaswag_read_jsonl(JSONL, &tk, es, err, sizeof err), 0, "%s", err);
    tokenizer_free(&tk);
}

/* ---- ./tokenize against the Python writer ---- */

Test(hellaswag, tokenize_matches_independent_python_writer, .timeout = 120)
{
    char *d = tu_tempdir(), cmd[4096 * 3], a[600], b[600];
    const char *tok = getenv("TRAIN_GPT_TOKENIZE_BIN");
    snprintf(cmd, sizeof cmd, "%s --quiet --hellaswag " JSONL " --out %s/c 2> %s/c.err",
             tok ? tok : "./tokenize", d, d);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    snprintf(cmd, sizeof cmd, "python3 dev/reference/hellaswag_writer.py '%s' '%s' " JSONL
             " %s/py.bin 2> %s/py.err", TU_ENCODER, TU_VOCAB, d, d);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    snprintf(a, sizeof a, "%s/c.bin", d);
    snprintf(b, sizeof b, "%s/py.bin", d);
    size_t la, lb;
    char *ca = tu_read_file(a, &la), *cb = tu_read_file(b, &lb);
    cr_assert(ca && cb);
    cr_expect_eq(memcmp(ca, cb, 1024), 0, "headers differ");
    int32_t h[4];
    memcpy(h, cb, sizeof h);
    cr_expect(h[0] == 20240522 && h[1] == 1 && h[2] == 20, "python header %d %d %d", h[0], h[1],
              h[2]);
    /* record by record: each starts 65535, its length in bytes at +2 */
    size_t oa = 1024, ob = 1024;
    for (int i = 0; i < 20; i++) {
        uint16_t ra[2], rb[2];
        cr_assert(oa + 4 <= la && ob + 4 <= lb, "example %d: a file ends early", i);
        memcpy(ra, ca + oa, 4), memcpy(rb, cb + ob, 4);
        cr_expect(ra[0] == 65535 && rb[0] == 65535, "example %d: no start marker", i);
        cr_expect(ra[1] == rb[1] && oa + ra[1] <= la && memcmp(ca + oa, cb + ob, ra[1]) == 0,
                  "example %d differs (%u vs %u bytes)", i, ra[1], rb[1]);
        oa += ra[1], ob += rb[1];
    }
    cr_expect(oa == la && ob == lb, "trailing bytes: %zu/%zu vs %zu/%zu", oa, la, ob, lb);
    EvalSet es;
    char err[1024];
    cr_expect_eq(eval_file_read(a, &es, err, sizeof err), 0, "%s", err);
    eval_set_free(&es);
    free(ca), free(cb);
    tu_remove_tree(d);
}

/* ---- losses against PyTorch ---- */

/* Examples [begin, end) at row length block's T with B rows per batch,
 * against the reference; the accuracy counts too when all are scored. */
static void check_losses(const EvalRef *r, const EvalSet *es, int block, int B, int begin,
                         int end)
{
    GPTConfig cfg = ref_config(r);
    int T = r->h[11 + block], n = r->h[8], all = begin == 0 && end == n;
    char err[512];
    Backend *be = tu_cpu();
    GPT g;
    cr_assert_eq(gpt_init(&g, &cfg, be, B, T, 0, 0, err, sizeof err), 0, "%s", err);
    float *p = ref_params(r, &cfg);
    gpt_set_params(&g, p);
    free(p);
    EvalResult *res = calloc((size_t)n, sizeof *res);
    EvalCounts c = {0};
    long cut;
    cr_assert_eq(eval_check_fit(es, T, JSONL, &cut, err, sizeof err), 0, "%s", err);
    cr_assert_eq(eval_run(&g, es, begin, end, 0, &c, res, err, sizeof err), 0, "%s", err);
    double worst = 0;
    for (int i = begin; i < end; i++)
        for (int k = 0; k < 4; k++) {
            const RefRow *w = &r->rows[(size_t)block * n * 4 + (size_t)i * 4 + k];
            const EvalResult *x = &res[i - begin];
            cr_expect(x->ctx_used[k] == w->used && es->ex[i].comp_len[k] == w->len,
                      "T=%d example %d completion %d: row (%d, %d) vs reference (%d, %d)", T, i,
                      k, x->ctx_used[k], es->ex[i].comp_len[k], w->used, w->len);
            double e1 = fabs(x->sum[k] - w->sum) / fabs(w->sum);
            double e2 = fabs(x->mean[k] - w->mean) / fabs(w->mean);
            worst = fmax(worst, fmax(e1, e2));
        }
    cr_expect(worst <= 1e-5, "T=%d B=%d: worst relative loss error %.3g > 1e-5", T, B, worst);
    cr_expect_eq(c.examples, end - begin);
    if (!all) goto done;
    cr_expect_eq(c.correct, r->h[13 + 2 * block], "T=%d B=%d: acc %ld vs reference %d", T, B,
                 c.correct, r->h[13 + 2 * block]);
    cr_expect_eq(c.correct_norm, r->h[14 + 2 * block], "T=%d B=%d: acc_norm %ld vs %d", T, B,
                 c.correct_norm, r->h[14 + 2 * block]);
    if (block == 0) cr_expect_eq(cut, 9, "completions with a cut context at T=64: %ld", cut);
done:
    free(res);
    gpt_free(&g);
    backend_close(be);
}

Test(hellaswag, losses_match_pytorch_reference, .timeout = 300)
{
    EvalRef r;
    ref_load(&r);
    EvalSet es;
    load_set(&es);
    cr_assert_eq(es.num_examples, r.h[8]);
    check_losses(&r, &es, 0, 4, 0, r.h[8]); /* T = 64: 9 cut contexts; B/4 examples a batch */
    check_losses(&r, &es, 1, 8, 0, r.h[8]); /* T = 128: none cut */
    /* examples 3..7 (example 5 is cut), with rows that straddle batches */
    check_losses(&r, &es, 0, 3, 3, 8);
    check_losses(&r, &es, 0, 1, 3, 8);
    check_losses(&r, &es, 1, 6, 3, 8);
    eval_set_free(&es);
    ref_free(&r);
}

/* The greedy continuation (temperature 0) of the reference's prompt, in a
 * window of 16 tokens with the context shift (docs/sampling.md; the last 8
 * stay): the PyTorch ids exactly. */
Test(hellaswag, greedy_sample_matches_pytorch, .timeout = 120)
{
    EvalRef r;
    ref_load(&r);
    GPTConfig cfg = ref_config(&r);
    int P = r.h[17], G = r.h[18], W = r.h[19];
    char err[512];
    Backend *be = tu_cpu();
    GPT g;
    cr_assert_eq(gpt_init(&g, &cfg, be, 1, W, 1, 0, err, sizeof err), 0, "%s", err);
    float *p = ref_params(&r, &cfg);
    gpt_set_params(&g, p);
    free(p);
    TextCodec codec = {.kind = CODEC_IDS};
    SampleParams sp = {0.0f, 0, 1.0f};
    SampleRng rng;
    sample_seed(&rng, 1);
    int32_t *ids = calloc((size_t)G, sizeof *ids);
    int *work = malloc((size_t)cfg.vocab_size * sizeof *work);
    FILE *sink = fopen("/dev/null", "w");
    int start = P > W ? P - W : 0;
    cr_assert_eq(sample_generate(&g, &codec, r.prompt + start, P - start, G, &sp, 1, 1, &rng, work,
                                 sink, ids), G);
    for (int i = 0; i < G; i++)
        cr_expect_eq(ids[i], r.greedy[i], "greedy token %d: %d, PyTorch %d", i, ids[i],
                     r.greedy[i]);
    fclose(sink);
    free(ids), free(work);
    gpt_free(&g);
    backend_close(be);
    ref_free(&r);
}
