/* tests/e2e/train/test_u32_train.c — ./train_gpt on uint32 shards (llm.c's
 * version 7) of a vocabulary over 65536 ids, end to end on the cpu:
 *
 *  - a small Llama-family model (--arch llama, V 65792: byte b of the text
 *    is id 65536 + b, so every id needs the wide format) trains on a
 *    dataset staged here with a one-file tokenizer in its manifest; 8 steps
 *    in one run == 4 steps, a save, a resumed run of 4 more: every logged
 *    loss and the final model file bitwise equal; the first loss within
 *    0.5 of ln(65792) (a fresh model's near-uniform guess);
 *  - the model file records the manifest's tokenizer identity (header
 *    words 28, 29), and --generate samples ids from it (printed as ids: no
 *    tokenizer of this vocabulary here to decode them);
 *  - shards of another tokenizer (the same text and ids, a different
 *    tokenizer file) are refused, exit 1, the message naming the model
 *    file and the manifest: for --init-from, and for a resume; a fresh
 *    model takes --train-data's and refuses --val-data of another;
 *  - uint16 shards for this vocabulary are refused at open, exit 1, naming
 *    the shard. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset.h"
#include "interop/model_file.h"
#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

#define WIDE_V 65792 /* 65536 + 256 */
#define SHAPE "--arch llama --kv-heads 2 --ffn 64 --layers 2 --channels 32 --heads 4 --vocab 65792"

/* A dataset at dir/name of text bytes as ids 65536 + b (val: 300 tokens,
 * train: 1500), its tokenizer the file dir/name.tok holding `tok_text`.
 * Returns the tokenizer's id. */
static uint64_t make_wide_dataset(const char *dir, const char *name, const char *tok_text)
{
    char prefix[600], tokfile[700], err[2048];
    snprintf(prefix, sizeof prefix, "%s/%s", dir, name);
    snprintf(tokfile, sizeof tokfile, "%s.tok", prefix);
    FILE *f = fopen(tokfile, "w");
    cr_assert_not_null(f);
    fputs(tok_text, f);
    fclose(f);
    size_t len;
    char *text = tu_read_file(TU_SHAKESPEARE, &len);
    cr_assert_not_null(text, "%s is missing", TU_SHAKESPEARE);
    enum { NV = 300, NT = 1500 };
    uint32_t tok[NV + NT];
    for (int i = 0; i < NV + NT; i++) tok[i] = 65536u + (unsigned char)text[i];
    free(text);
    DatasetStage s;
    cr_assert_eq(dataset_stage_begin(&s, prefix, 0, err, sizeof err), 0, "%s", err);
    s.man.id = 0x5eed0000u + (uint64_t)strlen(tok_text);
    s.man.token_bytes = 4;
    snprintf(s.man.tok.name, sizeof s.man.tok.name, "test");
    s.man.tok.vocab_size = WIDE_V;
    cr_assert_eq(dataset_tokenizer_add_file(&s.man.tok, tokfile, err, sizeof err), 0, "%s", err);
    uint64_t id = s.man.tok.id;
    cr_assert_eq(dataset_stage_add(&s, "val", tok, NV, err, sizeof err), 0, "%s", err);
    cr_assert_eq(dataset_stage_add(&s, "train", tok + NV, NT, err, sizeof err), 0, "%s", err);
    cr_assert_eq(dataset_stage_commit(&s, err, sizeof err), 0, "%s", err);
    dataset_stage_close(&s);
    return id;
}

static const char *data_args(const char *dir, const char *name)
{
    static char buf[1400];
    snprintf(buf, sizeof buf,
             "--train-data '%s/%s_train_*.bin' --val-data '%s/%s_val_*.bin' --val-every 0 "
             "--val-batches 1 --seq-len 16 --batch 2 --lr 1e-3 --device cpu --threads 1",
             dir, name, dir, name);
    return buf;
}

static void run_ok(const char *dir, const char *args, const char *tag)
{
    char p[700], e[720];
    snprintf(p, sizeof p, "%s/%s", dir, tag);
    snprintf(e, sizeof e, "%s.err", p);
    int rc = tc_run(NULL, args, p);
    char *msg = tu_read_file(e, NULL);
    cr_assert_eq(rc, 0, "train_gpt %s\nexited %d: %s", args, rc, msg ? msg : "");
    free(msg);
}

Test(u32_train, trains_resumes_bitwise_samples_and_refuses_another_tokenizer, .timeout = 300)
{
    char *d = tu_tempdir(), args[4096];
    uint64_t id = make_wide_dataset(d, "wide", "{\"a tokenizer\": 1}\n");
    const char *da = data_args(d, "wide");
    /* one run of 8 steps */
    snprintf(args, sizeof args, "%s %s --steps 8 --log %s/a.jsonl --save %s/a.bin", SHAPE, da, d,
             d);
    run_ok(d, args, "a");
    /* 4 steps with a save, then a resumed run to 8 */
    snprintf(args, sizeof args, "%s %s --steps 4 --log %s/b.jsonl --checkpoint-dir %s/ck",
             SHAPE, da, d, d);
    run_ok(d, args, "b1");
    snprintf(args, sizeof args, "%s %s --steps 8 --log %s/b.jsonl --checkpoint-dir %s/ck "
             "--resume --save %s/b.bin", SHAPE, da, d, d, d);
    run_ok(d, args, "b2");
    cr_expect(tc_file_has(tu_path(d, "b2.out"), "resumed from"), "the second run did not resume");
    int sa[16], sb[16];
    double la[16], lb[16];
    cr_assert_eq(tc_log_losses(tu_path(d, "a.jsonl"), sa, la, NULL, 16), 8);
    cr_assert_eq(tc_log_losses(tu_path(d, "b.jsonl"), sb, lb, NULL, 16), 8);
    for (int i = 0; i < 8; i++) {
        cr_expect_eq(sb[i], i + 1);
        cr_expect(memcmp(&la[i], &lb[i], sizeof la[i]) == 0, "step %d: loss %.17g vs %.17g",
                  i + 1, la[i], lb[i]);
    }
    cr_expect(fabs(la[0] - log((double)WIDE_V)) < 0.5, "first loss %g, ln V = %g", la[0],
              log((double)WIDE_V));
    cr_expect(tc_files_equal(tu_path(d, "a.bin"), tu_path(d, "b.bin")),
              "the resumed run's model differs");

    /* the model file records the tokenizer */
    GPTConfig cfg;
    int version;
    char err[1024];
    cr_assert_eq(model_file_read_header(tu_path(d, "a.bin"), &cfg, &version, err, sizeof err), 0,
                 "%s", err);
    cr_expect_eq(cfg.tokenizer_id, id, "header %016llx, manifest %016llx",
                 (unsigned long long)cfg.tokenizer_id, (unsigned long long)id);
    cr_expect_eq(cfg.vocab_size, WIDE_V);

    /* samples: ids of the vocabulary */
    char gen[4096];
    snprintf(gen, sizeof gen, "--arch llama --init-from %s/a.bin --generate 12 --prompt "
             "'65620 65640' --seed 3 --device cpu --threads 1 --seq-len 16", d);
    run_ok(d, gen, "gen");
    char *out = tu_read_file(tu_path(d, "gen.out"), NULL);
    cr_assert_not_null(out);
    /* "65620 65640 " (the prompt) then 12 sampled ids, each in [0, V): 8
     * steps leave the model near uniform over all 65792 ids */
    int ids = 0, bad = 0;
    for (char *p = out; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) {
            p++;
            continue;
        }
        ids++;
        bad += v < 0 || v >= WIDE_V;
        p = end;
    }
    cr_expect_eq(ids, 14, "the prompt's 2 ids and 12 sampled: %s", out);
    cr_expect_eq(bad, 0, "ids outside the vocabulary in: %s", out);
    cr_expect(strstr(out, "65620 65640 "), "%s", out);
    free(out);

    /* another tokenizer: the same text and ids, another file */
    uint64_t other = make_wide_dataset(d, "other", "{\"another tokenizer\": 2}\n");
    cr_assert_neq(other, id);
    const char *dother = data_args(d, "other");
    char want_manifest[700], model[700], saved[700];
    snprintf(want_manifest, sizeof want_manifest, "%s/other.manifest.json", d);
    snprintf(model, sizeof model, "%s/a.bin", d);
    snprintf(args, sizeof args, "--arch llama --init-from %s %s --steps 1", model, dother);
    tc_run_expect(d, args, 1, want_manifest);
    char *e = tu_read_file(tu_path(d, "run.err"), NULL);
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)id);
    cr_expect(e && strstr(e, model) && strstr(e, hex) && strstr(e, "other.tok") &&
                  strstr(e, "--train-data"),
              "the refusal names the model, the manifest and both tokenizers: %s", e);
    free(e);
    /* a fresh model takes --train-data's tokenizer; --val-data of another
     * is refused, naming it */
    snprintf(args, sizeof args, "%s --train-data '%s/wide_train_*.bin' --val-data "
             "'%s/other_val_*.bin' --seq-len 16 --batch 2 --device cpu --threads 1 --steps 1",
             SHAPE, d, d);
    tc_run_expect(d, args, 1, "--val-data");
    cr_expect(tc_file_has(tu_path(d, "run.err"), "other.manifest.json") &&
                  tc_file_has(tu_path(d, "run.err"), "it took --train-data's"),
              "the val refusal names the manifest and where the model's tokenizer came from");
    /* a resume on it: the save's model.bin is named */
    snprintf(args, sizeof args, "%s %s --steps 12 --checkpoint-dir %s/ck --resume", SHAPE,
             dother, d);
    snprintf(saved, sizeof saved, "%s/ck/step_", d);
    tc_run_expect(d, args, 1, want_manifest);
    cr_expect(tc_file_has(tu_path(d, "run.err"), saved) &&
                  tc_file_has(tu_path(d, "run.err"), "/model.bin was trained"),
              "the save's model.bin is not named");
    tu_remove_tree(d);
}

Test(u32_train, uint16_shards_refused_for_a_wide_vocabulary, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 400);
    snprintf(args, sizeof args, "%s %s --steps 1", SHAPE, tc_data_args(d));
    tc_run_expect(d, args, 1, "train_0.bin holds uint16 tokens");
    cr_expect(tc_file_has(tu_path(d, "run.err"), "65792"), "the vocabulary is not named");
    tu_remove_tree(d);
}
