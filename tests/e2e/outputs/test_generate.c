/* tests/e2e/outputs/test_generate.c — from text to a model that writes text, and
 * the sampling flags (--num-samples, --prompt-file, --top-k, --top-p,
 * --stop-at-eot) through ./train_gpt --generate.
 *
 * ./tokenize turns tinyshakespeare (data/source.h finds it)
 * into GPT-2 BPE shards, ./train_gpt trains a tiny model (C = 32) on them
 * for 40 steps, and ./train_gpt --generate samples from the saved model. The
 * val loss starts at ln(50257) = 10.8 and must fall below 7.2 (measured: 6.85
 * at 40 steps, 7.03 at 30; the train split's unigram frequencies give 6.58 on
 * the val split; a model that learned nothing stays near 10.8). The GPT-2
 * head (6 B T C V: 4.9 of the step's 5.3 GFLOP at C = 64) is nearly all of the
 * step, so C = 32 and 40 steps cost a fifth of the 100 steps at C = 64 the
 * test ran before (6.6 then). The sample
 * must decode to printable text: printable ASCII, newlines, or well-formed
 * UTF-8 sequences, with no control byte, and at most 2% of its bytes
 * fragments of a multi-byte character. GPT-2's byte-level tokens can split
 * one, and which tokens a barely trained model draws moves with the last
 * bits of its weights (a change of summation order in attention drew a
 * lone 0xdf at seed 1 and none at seeds 2 to 8). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interop/model_file.h"
#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

/* The bytes of s[0..n) that are neither printable ASCII, whitespace nor part
 * of a well-formed UTF-8 sequence: *ctrl counts the control bytes among
 * them, *first is the first one's offset. */
static size_t unprintable(const unsigned char *s, size_t n, size_t *ctrl, size_t *first)
{
    size_t bad = 0;
    *ctrl = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        if (c == '\n' || c == '\t' || c == '\r' || (c >= 0x20 && c < 0x7f)) {
            i++;
            continue;
        }
        int len = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
        if (c >= 0xf5) len = 0;
        int ok = len > 0 && i + len <= n;
        for (int k = 1; ok && k < len; k++) ok = (s[i + k] & 0xc0) == 0x80;
        if (ok) {
            i += len;
            continue;
        }
        if (bad++ == 0) *first = i;
        if (c < 0x20 || c == 0x7f) (*ctrl)++;
        i++;
    }
    return bad;
}

Test(generate, bpe_tinyshakespeare_learns_and_writes_text, .timeout = 600)
{
    char *d = tu_tempdir(), cmd[4096], path[512];
    snprintf(cmd, sizeof cmd,
             "./tokenize --quiet --split-blank-lines --val-tokens 32768 --out %s/shakespeare "
             "'%s' > %s/tok.txt 2>&1", d, TU_SHAKESPEARE, d);
    cr_assert_eq(tu_run(cmd), 0, "tokenize failed: %s", cmd);
    snprintf(cmd, sizeof cmd,
             "./train_gpt --layers 2 --channels 32 --heads 4 --seq-len 32 --batch 8 --steps 40 "
             "--lr 1e-2 --warmup 5 --lr-schedule cosine --lr-min-frac 0.1 --val-every 0 "
             "--val-batches 8 --threads 2 --train-data '%s/shakespeare_train_*.bin' "
             "--val-data '%s/shakespeare_val_*.bin' --save %s/model.bin > %s/train.txt 2>&1",
             d, d, d, d);
    cr_assert_eq(tu_run(cmd), 0, "train_gpt failed: %s", cmd);
    snprintf(path, sizeof path, "%s/train.txt", d);
    char *out = tu_read_file(path, NULL), *v = out ? strstr(out, "val loss ") : NULL;
    cr_assert_not_null(v, "no val loss in %s", path);
    double val = atof(v + strlen("val loss "));
    cr_expect_lt(val, 7.2, "val loss %.4f after 40 steps, want < 7.2", val);
    free(out);

    snprintf(cmd, sizeof cmd,
             "./train_gpt --init-from %s/model.bin --generate 60 --prompt 'ROMEO:' --seq-len 32 "
             "--temperature 0.8 --seed 1 --threads 2 --stop-at-eot 0 > %s/sample.txt 2> %s/sample.err",
             d, d, d);
    cr_assert_eq(tu_run(cmd), 0, "generate failed: %s", cmd);
    size_t n, bad = 0;
    snprintf(path, sizeof path, "%s/sample.txt", d);
    char *text = tu_read_file(path, &n);
    cr_assert_not_null(text);
    cr_expect_geq(n, 60, "60 tokens decode to at least 60 bytes (got %zu)", n);
    cr_expect_eq(strncmp(text, "ROMEO:", 6), 0, "the sample continues the prompt");
    size_t ctrl = 0, frags = unprintable((unsigned char *)text, n, &ctrl, &bad);
    cr_expect_eq(ctrl, 0, "a control byte in the sample (first unprintable byte 0x%02x at %zu)",
                 (unsigned char)text[bad], bad);
    cr_expect_leq(frags * 50, n, "%zu of %zu bytes are not text (first 0x%02x at %zu)", frags, n,
                  (unsigned char)text[bad], bad);
    free(text);
    free(d);
}

Test(generate, prompt_errors_name_the_flag)
{
    char *d = tu_tempdir(), cmd[1024], path[512];
    /* a vocabulary that is neither GPT-2 nor bytes takes ids: 99 is out of range */
    snprintf(cmd, sizeof cmd, "./train_gpt --layers 1 --channels 8 --heads 2 --seq-len 8 --vocab 50 "
             "--generate 3 --prompt '1 99' 2> %s/err.txt", d);
    cr_expect_neq(tu_run(cmd), 0);
    snprintf(path, sizeof path, "%s/err.txt", d);
    char *e = tu_read_file(path, NULL);
    cr_expect(e && strstr(e, "--prompt: token id 99 outside the vocabulary (50)"), "%s", e);
    free(e);
    free(d);
}

/* ---- the sampling flags through ./train_gpt --generate ---- */

static char *run_generate(const char *d, const char *model, const char *flags, int *rc)
{
    char cmd[4096], path[600];
    snprintf(cmd, sizeof cmd, "%s --init-from %s/%s --seq-len 16 --device cpu %s > %s/gen.out "
             "2> %s/gen.err", tc_bin(), d, model, flags, d, d);
    *rc = tu_run(cmd);
    snprintf(path, sizeof path, "%s/gen.out", d);
    return tu_read_file(path, NULL);
}

/* A byte-level model (V = 256) with random parameters. */
static void save_byte_model(const char *d)
{
    GPTConfig cfg = {.max_seq_len = 16, .vocab_size = 256, .padded_vocab = 256, .num_layers = 1,
                     .num_heads = 2, .channels = 16};
    float *p = tu_random_params(&cfg, 3);
    char path[600], err[512];
    snprintf(path, sizeof path, "%s/bytes.bin", d);
    cr_assert_eq(model_file_save(path, &cfg, p, err, sizeof err), 0, "%s", err);
    free(p);
}

Test(generate, num_samples_prompt_file_top_k_top_p, .timeout = 120)
{
    char *d = tu_tempdir(), path[600];
    save_byte_model(d);
    int rc;
    /* three samples, each after its header; the same seed gives the same text */
    char *a = run_generate(d, "bytes.bin", "--generate 12 --num-samples 3 --seed 5 --threads 1", &rc);
    cr_assert_eq(rc, 0);
    cr_expect(a && strstr(a, "sample 1/3:\n") && strstr(a, "sample 2/3:\n") &&
              strstr(a, "sample 3/3:\n"), "%s", a);
    char *b = run_generate(d, "bytes.bin", "--generate 12 --num-samples 3 --seed 5 --threads 2", &rc);
    cr_expect(b && strcmp(a, b) == 0, "1 and 2 threads differ:\n%s\n---\n%s", a, b);
    free(b);
    char *s2 = a ? strstr(a, "sample 2/3:\n") : NULL, *s3 = a ? strstr(a, "sample 3/3:\n") : NULL;
    cr_expect(s2 && s3 && strncmp(s2 + 12, s3 + 12, 13) != 0, "samples 2 and 3 are the same");
    free(a);
    /* --prompt-file gives what --prompt gives */
    snprintf(path, sizeof path, "%s/prompt.txt", d);
    FILE *f = fopen(path, "w");
    fputs("ROMEO:\nO", f);
    fclose(f);
    char flags[1200];
    snprintf(flags, sizeof flags, "--generate 10 --seed 9 --prompt-file %s", path);
    a = run_generate(d, "bytes.bin", flags, &rc);
    cr_expect_eq(rc, 0);
    b = run_generate(d, "bytes.bin", "--generate 10 --seed 9 --prompt 'ROMEO:\nO'", &rc);
    cr_expect(a && b && strcmp(a, b) == 0 && strncmp(a, "ROMEO:\nO", 8) == 0, "%s\n---\n%s", a, b);
    free(a), free(b);
    /* top-k 1 and top-p 0 are greedy: temperature 0's text */
    char *g = run_generate(d, "bytes.bin", "--generate 10 --temperature 0 --prompt ab", &rc);
    a = run_generate(d, "bytes.bin", "--generate 10 --top-k 1 --seed 3 --prompt ab", &rc);
    b = run_generate(d, "bytes.bin", "--generate 10 --top-p 0 --seed 4 --prompt ab", &rc);
    cr_expect(g && a && b && strcmp(g, a) == 0 && strcmp(g, b) == 0, "%s|%s|%s", g, a, b);
    free(g), free(a), free(b);
    tu_remove_tree(d);
}

static void expect_generate_error(const char *d, const char *flags, int status, const char *msg)
{
    int rc;
    free(run_generate(d, "bytes.bin", flags, &rc));
    char path[600];
    snprintf(path, sizeof path, "%s/gen.err", d);
    char *e = tu_read_file(path, NULL);
    cr_expect_eq(rc, status, "%s: exit %d: %s", flags, rc, e);
    cr_expect(e && strstr(e, msg), "%s: stderr lacks '%s': %s", flags, msg, e);
    free(e);
}

Test(generate, sampling_flag_errors, .timeout = 60)
{
    char *d = tu_tempdir(), flags[1200];
    save_byte_model(d);
    expect_generate_error(d, "--generate 3 --prompt a --prompt-file x", 2,
                          "--prompt-file: give either --prompt or --prompt-file, not both");
    snprintf(flags, sizeof flags, "--generate 3 --prompt-file %s/missing.txt", d);
    expect_generate_error(d, flags, 1, "--prompt-file ");
    expect_generate_error(d, flags, 1, "missing.txt: cannot open");
    snprintf(flags, sizeof flags, "--generate 3 --prompt-file %s", d);
    expect_generate_error(d, flags, 1, "not a regular file");
    expect_generate_error(d, "--generate 3 --top-p 1.5", 2, "--top-p: expected a number in [0, 1]");
    expect_generate_error(d, "--generate 3 --top-k -1", 2, "--top-k: expected an integer");
    expect_generate_error(d, "--generate 3 --num-samples 0", 2, "--num-samples: expected an integer");
    expect_generate_error(d, "--generate 3 --stop-at-eot 2", 2, "--stop-at-eot: expected one of 0|1");
    tu_remove_tree(d);
}

/* A GPT-2-vocabulary model that always says end-of-text: the final
 * LayerNorm's weight 0 and bias 1 make every position's output all ones,
 * and only wte's EOT row is non-zero (10s), so the EOT logit is 80 and the
 * others 0. --stop-at-eot 1 (the default) ends each sample there, before
 * printing it; --stop-at-eot 0 prints it. */
Test(generate, stop_at_eot, .timeout = 120)
{
    char *d = tu_tempdir(), path[600], err[512];
    GPTConfig cfg = {.max_seq_len = 16, .vocab_size = 50257, .padded_vocab = 50304,
                     .num_layers = 1, .num_heads = 2, .channels = 8};
    size_t n = config_num_params(&cfg), sz[NUM_PARAM_TENSORS], off = 0;
    config_param_sizes(&cfg, sz);
    float *p = calloc(n, sizeof(float));
    for (int c = 0; c < 8; c++) p[(size_t)50256 * 8 + c] = 10.0f; /* wte[EOT] */
    for (int t = 0; t < NUM_PARAM_TENSORS - 1; t++) off += sz[t];
    for (int c = 0; c < 8; c++) p[off + c] = 1.0f; /* lnfb; lnfw stays 0 */
    snprintf(path, sizeof path, "%s/eot.bin", d);
    cr_assert_eq(model_file_save(path, &cfg, p, err, sizeof err), 0, "%s", err);
    free(p);
    int rc;
    char *a = run_generate(d, "eot.bin", "--generate 5 --prompt hi", &rc);
    cr_expect(rc == 0 && a && strcmp(a, "hi\n") == 0, "stop at EOT: '%s'", a);
    free(a);
    a = run_generate(d, "eot.bin", "--generate 2 --prompt hi --num-samples 2", &rc);
    cr_expect(rc == 0 && a && strcmp(a, "sample 1/2:\nhi\nsample 2/2:\nhi\n") == 0, "'%s'", a);
    free(a);
    a = run_generate(d, "eot.bin", "--generate 2 --prompt hi --stop-at-eot 0", &rc);
    cr_expect(rc == 0 && a && strcmp(a, "hi<|endoftext|><|endoftext|>\n") == 0, "'%s'", a);
    free(a);
    tu_remove_tree(d);
}

/* --generate without --init-from draws from a fresh initialisation: allowed
 * (a smoke test of sampling), but said, since the text is noise. */
Test(generate, generate_without_a_model_says_so, .timeout = 60)
{
    char *d = tu_tempdir(), args[2048];
    tc_make_shards(d, 1, 400);
    snprintf(args, sizeof args, "%s --generate 3 --seed 7", tc_model_args(d));
    tc_run_expect(d, args, 0, "note: --generate without --init-from samples a fresh "
                              "initialisation (seed 7), not a trained model");
    tu_remove_tree(d);
}

/* --kv-cache 1 (the default) and 0 print the same text for a seed: 40 byte
 * tokens after a prompt, at --seq-len 16, so the cached positions and the
 * context shifts after them (to the last 8, re-prefilled) both show (the reference: the uncached path;
 * tests/unit/model/test_decode.c compares the logits themselves). */
Test(generate, kv_cache_prints_the_uncached_text, .timeout = 60)
{
    char *d = tu_tempdir(), args[2048];
    tc_make_shards(d, 1, 400);
    char *text[2];
    size_t len[2];
    for (int kv = 0; kv < 2; kv++) {
        snprintf(args, sizeof args, "%s --generate 40 --seed 9 --prompt 'ab' --kv-cache %d",
                 tc_model_args(d), kv);
        char tag[64];
        snprintf(tag, sizeof tag, "kv%d", kv);
        cr_assert_eq(tc_run(NULL, args, tu_path(d, tag)), 0, "--kv-cache %d failed", kv);
        snprintf(tag, sizeof tag, "kv%d.out", kv);
        text[kv] = tu_read_file(tu_path(d, tag), &len[kv]);
        cr_assert_not_null(text[kv]);
        cr_assert_geq(len[kv], 42, "%zu bytes: not the prompt and 40 tokens", len[kv]);
    }
    /* byte tokens: the text may hold NULs, so compare lengths and bytes */
    cr_expect(len[1] == len[0] && memcmp(text[1], text[0], len[0]) == 0,
              "the cached text differs from the uncached (%zu and %zu bytes)", len[1], len[0]);
    free(text[0]), free(text[1]);
    tu_remove_tree(d);
}
