/* tests/e2e/resume/test_resume_content.c — what a run loads is checked by content:
 *
 *  - a train shard replaced by one of the same size
 *    and other tokens makes --resume refuse, naming the shard (the code
 *    before hashed only the token counts and resumed); with a dataset
 *    manifest, the shard is named as differing from its manifest;
 *  - a save from before content hashes (run state version 1, token counts
 *    only) still resumes, with a note saying the content is not checked,
 *    and is refused when a count differs;
 *  - a model file with a NaN and an Inf (--init-from,
 *    --generate, a save's model.bin) is refused with exit 1, naming each
 *    tensor and its count (the code before loaded it; --generate printed
 *    "!!!!!" and exited 0). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/fileio.h"
#include "data/shard.h"
#include "interop/model_file.h"
#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

/* Run and return the exit status; stderr text (malloc'd) in *err. */
static int run(const char *d, const char *name, const char *args, char **err)
{
    char p[700], e[800];
    snprintf(p, sizeof p, "%s/%s", d, name);
    int rc = tc_run(NULL, args, p);
    snprintf(e, sizeof e, "%s.err", p);
    *err = tu_read_file(e, NULL);
    return rc;
}

/* 2 steps saved in d/ck on tc_make_shards' two 400-token shards. */
static void train_and_save(const char *d)
{
    char args[4096], *err;
    tc_make_shards(d, 2, 400);
    snprintf(args, sizeof args, "%s --steps 2 --checkpoint-dir %s/ck", tc_model_args(d), d);
    int rc = run(d, "first", args, &err);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err ? err : "");
    free(err);
}

Test(resume_content, changed_shard_of_the_same_size_is_named, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096], p[700], *err;
    train_and_save(d);
    /* train_1.bin: the same 400 tokens count, other tokens */
    uint16_t tok[400];
    for (int i = 0; i < 400; i++) tok[i] = (uint16_t)((i * 7 + 3) % 256);
    snprintf(p, sizeof p, "%s/train_1.bin", d);
    cr_assert_eq(shard_write(p, tok, 400, args, sizeof args), 0, "%s", args);
    snprintf(args, sizeof args, "%s --steps 4 --checkpoint-dir %s/ck --resume", tc_model_args(d), d);
    int rc = run(d, "resume", args, &err);
    cr_expect_eq(rc, 1, "a changed shard was resumed (exit %d): %s", rc, err ? err : "");
    cr_expect(err && strstr(err, "cannot resume from") && strstr(err, "the training data differs") &&
              strstr(err, "train_1.bin: its content differs from the save's") &&
              !strstr(err, "train_0.bin"), "message: %s", err ? err : "");
    free(err);
    tu_remove_tree(d);
}

/* With ./tokenize's manifest: the shard is named against its manifest. */
Test(resume_content, changed_shard_of_a_manifest_dataset_is_named, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096], p[700], *err;
    snprintf(args, sizeof args, "head -c 20000 '%s' | "
             "%s --quiet --out %s/ts --shard-size 2000 --val-tokens 0 -", TU_SHAKESPEARE,
             tc_tokenize_bin(), d);
    cr_assert_eq(tu_run(args), 0);
    const char *model = "--layers 1 --channels 16 --heads 2 --vocab 50257 --seq-len 32 --batch 2 "
                        "--device cpu --threads 1";
    snprintf(args, sizeof args, "%s --train-data '%s/ts_train_*.bin' --steps 2 --checkpoint-dir "
             "%s/ck", model, d, d);
    int rc = run(d, "first", args, &err);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err ? err : "");
    free(err);
    /* swap two tokens of shard 1 in place: same size, same tokens, other order */
    snprintf(p, sizeof p, "%s/ts_train_000001.bin", d);
    size_t len;
    char *b = tu_read_file(p, &len);
    char t[2];
    memcpy(t, b + 1024, 2), memcpy(b + 1024, b + 1026, 2), memcpy(b + 1026, t, 2);
    cr_assert(memcmp(b + 1024, b + 1026, 2) != 0, "pick two different tokens");
    FILE *f = fopen(p, "wb");
    fwrite(b, 1, len, f);
    fclose(f);
    free(b);
    snprintf(args, sizeof args, "%s --train-data '%s/ts_train_*.bin' --steps 4 --checkpoint-dir "
             "%s/ck --resume", model, d, d);
    rc = run(d, "resume", args, &err);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, err ? err : "");
    cr_expect(err && strstr(err, "ts_train_000001.bin: its content differs from its dataset "
                            "manifest") && strstr(err, "ts.manifest.json"), "message: %s",
              err ? err : "");
    free(err);
    tu_remove_tree(d);
}

/* FNV-1a of the shards' token counts, as version 1 saves recorded it. */
static uint64_t counts_hash(const uint64_t *n, int k)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < k; i++)
        for (int b = 0; b < 8; b++) {
            h ^= (n[i] >> (8 * b)) & 0xff;
            h *= 1099511628211ull;
        }
    return h;
}

/* COMPLETE's crc32 for `name` in save folder sd set to the file's own. */
static void manifest_follow(const char *sd, const char *name)
{
    char p[900], mp[900], key[64], why[600];
    snprintf(p, sizeof p, "%s/%s", sd, name);
    snprintf(mp, sizeof mp, "%s/COMPLETE", sd);
    uint64_t bytes;
    uint32_t crc;
    cr_assert_eq(io_file_crc(p, &bytes, &crc, why, sizeof why), 0, "%s", why);
    char *text = tu_read_file(mp, NULL);
    cr_assert_not_null(text);
    snprintf(key, sizeof key, "\"%s\"", name);
    char *at = strstr(text, key);
    cr_assert_not_null(at, "%s not in %s", name, text);
    char *crc_at = strstr(at, "\"crc32\":");
    cr_assert_not_null(crc_at);
    crc_at += strlen("\"crc32\":");
    char *rest = crc_at + strspn(crc_at, "0123456789");
    *crc_at = 0;
    FILE *f = fopen(mp, "wb");
    fprintf(f, "%s%u%s", text, crc, rest);
    fclose(f);
    free(text);
}

/* Rewrite a save's state file as version 1 wrote it: version 1, the
 * counts hash instead of the content hashes (shard entries renamed to
 * names no version reads), checksums fixed, in COMPLETE too; the size
 * stays the same. */
static void make_version_1(const char *sd, uint64_t counts)
{
    char state[900];
    snprintf(state, sizeof state, "%s/state_r00000.bin", sd);
    size_t len;
    unsigned char *b = (unsigned char *)tu_read_file(state, &len);
    cr_assert_not_null(b);
    uint32_t n, one = 1;
    memcpy(&n, b + 12, 4);
    cr_assert_leq(n, 256);
    memcpy(b + 8, &one, 4);
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *e = b + 64 + 32 * (size_t)i;
        if (strcmp((char *)e, "train-data-sha") == 0) {
            memset(e, 0, 23);
            memcpy(e, "train-tokens-hash", 17);
            memcpy(e + 24, &counts, 8);
        } else if (strncmp((char *)e, "shard-sha-", 10) == 0) {
            e[0] = 'x'; /* "xhard-sha-...": unknown, skipped */
        }
    }
    uint32_t pc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), b + 64, (uInt)(len - 64));
    memcpy(b + 56, &pc, 4);
    memset(b + 20, 0, 4);
    uint32_t hc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), b, 64);
    memcpy(b + 20, &hc, 4);
    FILE *f = fopen(state, "wb");
    fwrite(b, 1, len, f);
    fclose(f);
    free(b);
    manifest_follow(sd, "state_r00000.bin");
}

Test(resume_content, version_1_saves_resume_by_token_counts, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096], p[700], *err;
    train_and_save(d);
    snprintf(p, sizeof p, "%s/ck/step_00000002", d);
    uint64_t n[2] = {400, 400};
    make_version_1(p, counts_hash(n, 2));
    snprintf(args, sizeof args, "%s --steps 3 --checkpoint-dir %s/ck --resume", tc_model_args(d), d);
    int rc = run(d, "resume", args, &err);
    cr_expect_eq(rc, 0, "exit %d: %s", rc, err ? err : "");
    free(err);
    snprintf(p, sizeof p, "%s/resume.out", d);
    cr_expect(tc_file_has(p, "records only the train shards' token counts"), "no note");
    cr_expect(tc_file_has(p, "resumed from"), "did not resume");
    /* a count that differs is refused (a fresh folder: the resumed run saved step 3) */
    snprintf(args, sizeof args, "rm -rf %s/ck", d);
    cr_assert_eq(tu_run(args), 0);
    train_and_save(d);
    n[1] = 401;
    snprintf(p, sizeof p, "%s/ck/step_00000002", d);
    make_version_1(p, counts_hash(n, 2));
    snprintf(args, sizeof args, "%s --steps 3 --checkpoint-dir %s/ck --resume", tc_model_args(d), d);
    rc = run(d, "resume2", args, &err);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, err ? err : "");
    cr_expect(err && strstr(err, "the shards' token counts differ from the save's"), "%s",
              err ? err : "");
    free(err);
    tu_remove_tree(d);
}

/* A model file of the tiny shape with a NaN in wte[5] and an Inf in
 * qkvw[0]. */
static void write_bad_model(const char *path)
{
    GPTConfig cfg = {.max_seq_len = 16, .vocab_size = 256, .padded_vocab = 256, .num_layers = 2,
                     .num_heads = 4, .channels = 32};
    float *p = tu_random_params(&cfg, 3);
    size_t sizes[NUM_PARAM_TENSORS], qkvw = 0;
    config_param_sizes(&cfg, sizes);
    for (int t = 0; t < 4; t++) qkvw += sizes[t];
    p[5] = NAN;
    p[qkvw] = INFINITY;
    char err[512];
    cr_assert_eq(model_file_save(path, &cfg, p, err, sizeof err), 0, "%s", err);
    free(p);
}

static void expect_non_finite(const char *err, const char *file)
{
    cr_expect(err && strstr(err, file) && strstr(err, "2 non-finite weights (NaN or Inf)") &&
              strstr(err, "wte: 1 (first at element 5)") &&
              strstr(err, "qkvw: 1 (first at element 0)"), "message: %s", err ? err : "");
}

Test(resume_content, non_finite_weights_are_refused, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096], p[700], *err;
    tc_make_shards(d, 1, 400);
    snprintf(p, sizeof p, "%s/nan_model.bin", d);
    write_bad_model(p);
    snprintf(args, sizeof args, "%s --init-from %s --steps 1", tc_model_args(d), p);
    cr_expect_eq(run(d, "init", args, &err), 1);
    expect_non_finite(err, p);
    free(err);
    snprintf(args, sizeof args, "--init-from %s --generate 5 --seq-len 16 --device cpu", p);
    cr_expect_eq(run(d, "generate", args, &err), 1, "--generate ran on NaN weights");
    expect_non_finite(err, p);
    free(err);
    tu_remove_tree(d);
}

/* A save whose model.bin holds the NaN, with COMPLETE's crc32 made to
 * match, so only the scan can catch it. */
Test(resume_content, non_finite_weights_in_a_save_are_refused, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096], p[700], mp[700], *err;
    train_and_save(d);
    snprintf(p, sizeof p, "%s/ck/step_00000002/model.bin", d);
    write_bad_model(p);
    snprintf(mp, sizeof mp, "%s/ck/step_00000002", d);
    manifest_follow(mp, "model.bin");
    snprintf(args, sizeof args, "%s --steps 4 --checkpoint-dir %s/ck --resume", tc_model_args(d), d);
    cr_expect_eq(run(d, "resume", args, &err), 1);
    expect_non_finite(err, p);
    free(err);
    tu_remove_tree(d);
}
