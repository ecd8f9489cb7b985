/* tests/e2e/train/test_hostile_inputs.c — every file ./train_gpt reads, damaged in
 * each way the issue lists, gives exit status 1 and a message naming the
 * file and the fault; never a crash, a hang or a sanitizer report (make
 * test-asan runs this table against the ASan+UBSan build).
 *
 * Files: a token shard (--train-data), a model file (--init-from; also a
 * NaN weight), a run state file and a COMPLETE manifest
 * (--resume=DIR/step_N), a dataset manifest (beside ./tokenize's shards,
 * read with --train-data), llm.c's state file (--resume-llmc), an llm.c eval file (--eval-file; every
 * record-level fault is in test_eval_file.c), and the checkpoint folder as
 * a whole (another run's saves, a held lock, a lock file or abandoned/ that
 * is not what it should be, only corrupt saves, state files of another
 * run). Cases: truncated;
 * oversized header count; negative dimension; huge dimension; header claiming
 * more data than the file holds; zero-length; a folder in the file's place;
 * plus bad magic and flipped payload bits where a checksum guards them. The
 * run state's header checksum is recomputed after each header edit, so the
 * field checks behind it are reached too.
 *
 * Tokenizer files (encoder.json, vocab.bpe) are read by ./tokenize and by
 * ./train_gpt when it samples with the GPT-2 vocabulary; both go through
 * tokenizer_load, which accepts only GPT-2's exact files (sha256), so every
 * edit is refused at that gate: truncated, zero-length, one changed byte,
 * bytes appended, a folder.
 *
 * Each table's cases are damaged and run by tc_refuse_all (train_cli.h). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "eval/eval_file.h"
#include "interop/model_file.h"
#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

Test(hostile, shard, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], path[600];
    tc_make_shards(d, 1, 400);
    snprintf(path, sizeof path, "%s/train_0.bin", d);
    size_t len;
    char *orig = tu_read_file(path, &len);
    snprintf(path, sizeof path, "%s/hostile.bin", d);
    static const TcCase cases[] = {
        {"truncated", TRUNCATE, 1024 + 300, 0, NULL, "truncated", 0, 0},
        {"truncated_header", TRUNCATE, 100, 0, NULL, "truncated header (100 bytes", 0, 0},
        {"oversized_count", SET_I32, 8, 1000000000, NULL, "1000000000 tokens need", 0, 0},
        {"negative_count", SET_I32, 8, -5, NULL, "negative token count -5", 0, 0},
        {"huge_count", SET_I32, 8, INT32_MAX, NULL, "2147483647 tokens need", 0, 0},
        {"claims_more_data", SET_I32, 8, 401, NULL, "(truncated)", 0, 0},
        {"trailing_bytes", SET_I32, 8, 399, NULL, "(trailing bytes)", 0, 0},
        {"zero_length", EMPTY, 0, 0, NULL, "truncated header (0 bytes", 0, 0},
        {"folder", FOLDER, 0, 0, NULL, "not a regular file", 0, 0},
        {"bad_magic", SET_I32, 0, 1234, NULL, "bad magic 1234", 0, 0},
        {"bad_version", SET_I32, 4, 7, NULL, "unsupported version 7", 0, 0},
    };
    snprintf(args, sizeof args, "%s --train-data '%s' --steps 1", tc_model_args(d), path);
    TcTarget t = {.dir = d, .path = path, .orig = orig, .len = len, .args = args};
    tc_refuse_all(&t, cases, TC_NCASES(cases));
    /* a token outside the vocabulary is caught when its batch is read */
    static const TcCase vocab = {"token_outside_vocab", SET_I32, 1024 + 10, 0x7fff7fff, NULL,
                                 "is outside the vocabulary", 0, 0};
    tc_refuse_all(&t, &vocab, 1);
    free(orig);
    free(d);
}

Test(hostile, model_file, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], path[600], err[512];
    tc_make_shards(d, 1, 400);
    /* the shape tc_model_args gives: flags that contradict --init-from are
     * refused before the file's own faults could be */
    GPTConfig cfg = {.max_seq_len = 16, .vocab_size = 256, .padded_vocab = 256, .num_layers = 2,
                     .num_heads = 4, .channels = 32};
    float *p = tu_random_params(&cfg, 5);
    snprintf(path, sizeof path, "%s/good_model.bin", d);
    cr_assert_eq(model_file_save(path, &cfg, p, err, sizeof err), 0, "%s", err);
    free(p);
    size_t len;
    char *orig = tu_read_file(path, &len);
    snprintf(args, sizeof args, "%s --init-from '%s' --steps 1", tc_data_args(d), path);
    cr_assert_eq(tc_run(NULL, args, path), 0, "the unedited model file is refused");
    snprintf(path, sizeof path, "%s/hostile_model.bin", d);
    /* header ints: [2] maxT [3] V [4] L [5] NH [6] C [7] Vp */
    static const TcCase cases[] = {
        {"truncated", TRUNCATE, -100, 0, NULL, "(truncated)", 0, 0},
        {"truncated_header", TRUNCATE, 512, 0, NULL, "truncated header (512 bytes", 0, 0},
        {"oversized_count", SET_I32, 16, 4096, NULL, "(truncated)", 0, 0},
        {"negative_dim", SET_I32, 24, -8, NULL, "channels must be in 1..65536 (got -8)", 0, 0},
        {"negative_layers", SET_I32, 16, -1, NULL, "layers must be in 1..4096 (got -1)", 0, 0},
        {"huge_dim", SET_I32, 24, 1 << 30, NULL, "channels must be in 1..65536", 0, 0},
        {"huge_vocab", SET_I32, 12, 2000000000, NULL, "vocab must be in 2..1048576", 0, 0},
        {"claims_more_data", SET_I32, 8, 1024, NULL, "(truncated)", 0, 0},
        {"zero_length", EMPTY, 0, 0, NULL, "truncated header (0 bytes", 0, 0},
        {"folder", FOLDER, 0, 0, NULL, "not a regular file", 0, 0},
        {"bad_magic", SET_I32, 0, 7, NULL, "bad magic 7", 0, 0},
        {"bad_version", SET_I32, 4, 4, NULL, "unsupported version 4", 0, 0},
        /* a NaN (0x7fc00000) in wte[3]: the file is well formed, its weights are not */
        {"nan_weight", SET_I32, 1024 + 12, 0x7fc00000, NULL,
         "1 non-finite weight (NaN or Inf) in wte: 1 (first at element 3)", 0, 0},
    };
    snprintf(args, sizeof args, "%s --init-from '%s' --steps 1", tc_data_args(d), path);
    TcTarget t = {.dir = d, .path = path, .orig = orig, .len = len, .args = args};
    tc_refuse_all(&t, cases, TC_NCASES(cases));
    free(orig);
    free(d);
}

Test(hostile, eval_file, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], path[600], err[512];
    tc_make_shards(d, 1, 400);
    EvalSet es = {0};
    for (int i = 0; i < 5; i++) { /* records of 40 + 2i bytes: 220 in all */
        int32_t ctx[10] = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, a[1] = {65};
        const int32_t *comp[4] = {a, a, a, a};
        int len[4] = {1, 1, 1, 1};
        cr_assert_eq(eval_set_append(&es, i % 4, ctx, 6 + i, comp, len, err, sizeof err), 0);
    }
    snprintf(path, sizeof path, "%s/good_eval.bin", d);
    cr_assert_eq(eval_file_write(path, &es, err, sizeof err), 0, "%s", err);
    eval_set_free(&es);
    size_t len;
    char *orig = tu_read_file(path, &len);
    snprintf(args, sizeof args, "%s --eval-file '%s' --steps 1", tc_model_args(d), path);
    cr_assert_eq(tc_run(NULL, args, path), 0, "the unedited eval file is refused");
    snprintf(path, sizeof path, "%s/hostile_eval.bin", d);
    static const TcCase cases[] = {
        {"truncated", TRUNCATE, -10, 0, NULL, "record length 48 bytes is past the end", 0, 0},
        {"truncated_header", TRUNCATE, 100, 0, NULL, "truncated header (100 bytes", 0, 0},
        {"oversized_count", SET_I32, 8, 1000, NULL, "cannot hold the header's 1000 examples", 0, 0},
        {"negative_count", SET_I32, 8, -5, NULL, "example count -5 in the header is outside", 0, 0},
        {"huge_count", SET_I32, 8, INT32_MAX, NULL, "example count 2147483647", 0, 0},
        {"negative_longest", SET_I32, 12, -1, NULL, "longest-example length -1 bytes", 0, 0},
        {"claims_more_data", SET_I32, 8, 6, NULL, "example 5 at byte 1244: truncated", 0, 0},
        {"zero_length", EMPTY, 0, 0, NULL, "truncated header (0 bytes", 0, 0},
        {"folder", FOLDER, 0, 0, NULL, "not a regular file", 0, 0},
        {"bad_magic", SET_I32, 0, 1234, NULL, "bad magic 1234", 0, 0},
        {"bad_version", SET_I32, 4, 3, NULL, "unsupported version 3", 0, 0},
        {"bad_marker", SET_I32, 1024, 0x00260001, NULL, "expected the start-of-example marker", 0, 0},
    };
    snprintf(args, sizeof args, "%s --eval-file '%s' --steps 1", tc_model_args(d), path);
    TcTarget t = {.dir = d, .path = path, .orig = orig, .len = len, .args = args};
    tc_refuse_all(&t, cases, TC_NCASES(cases));
    free(orig);
    tu_remove_tree(d);
}

/* A real save to damage: returns its step folder. */
static const char *base_save(const char *d)
{
    static char sd[700];
    char args[4096], p[700];
    tc_make_shards(d, 1, 400);
    snprintf(args, sizeof args, "%s --steps 1 --checkpoint-dir %s/ck", tc_model_args(d), d);
    snprintf(p, sizeof p, "%s/base", d);
    cr_assert_eq(tc_run(NULL, args, p), 0);
    snprintf(sd, sizeof sd, "%s/ck/step_00000001", d);
    return sd;
}

/* Rewrite COMPLETE so it records the state file's new size: the folder is
 * then consistent and the state reader itself must find the fault. */
static void manifest_follow_state(const char *sd, const char *state_path)
{
    char mp[800], cmd[4096];
    snprintf(mp, sizeof mp, "%s/COMPLETE", sd);
    char *text = tu_read_file(mp, NULL);
    char *at = strstr(text, "\"state_r00000.bin\",\"bytes\":");
    cr_assert_not_null(at);
    at += strlen("\"state_r00000.bin\",\"bytes\":");
    char *rest = strchr(at, ',');
    struct stat st;
    cr_assert_eq(stat(state_path, &st), 0);
    size_t n = (size_t)st.st_size; /* a folder's st_size: the manifest's check must say so */
    *at = 0;
    snprintf(cmd, sizeof cmd, "%s%zu%s", text, n, rest);
    tu_write_file(mp, cmd, strlen(cmd));
    free(text);
}

/* After each run state edit: the header checksum recomputed when the edit
 * was in the 64-byte header (crc32 of it with bytes 20..23 zero, stored
 * there), so the field checks behind it are reached; then COMPLETE
 * restored from DIR/COMPLETE.orig and made to follow the file's size. */
static void state_follow_edit(const TcTarget *t, const TcCase *c)
{
    if ((c->edit == SET_I32 || c->edit == SET_U64) && c->at < 64) {
        size_t n;
        unsigned char *b = (unsigned char *)tu_read_file(t->path, &n);
        cr_assert(b && n >= 64);
        memset(b + 20, 0, 4);
        uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), b, 64);
        memcpy(b + 20, &crc, 4);
        tu_write_file(t->path, b, n);
        free(b);
    }
    const char *sd = t->user;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cp '%s/COMPLETE.orig' '%s/COMPLETE'", t->dir, sd);
    cr_assert_eq(tu_run(cmd), 0);
    manifest_follow_state(sd, t->path);
}

Test(hostile, run_state, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], path[800], keep[800], cmd[2048];
    const char *sd = base_save(d);
    snprintf(path, sizeof path, "%s/state_r00000.bin", sd);
    snprintf(keep, sizeof keep, "%s/state.orig", d);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s' && cp '%s/COMPLETE' '%s/COMPLETE.orig'", path, keep,
             sd, d);
    cr_assert_eq(tu_run(cmd), 0);
    size_t len;
    char *orig = tu_read_file(keep, &len);
    /* header: 12 entries (u32), 24 num_params, 32 offset, 40 count (u64) */
    static const TcCase cases[] = {
        {"truncated", TRUNCATE, -1000, 0, NULL, "(truncated)", 0, 0},
        {"truncated_header", TRUNCATE, 40, 0, NULL, "truncated: 40 bytes", 0, 0},
        {"oversized_count", SET_I32, 12, 2000000, NULL, "entry count 2000000 outside 1..1000256",
         0, 0},
        {"negative_count", SET_U64, 40, -1, NULL, "bad sizes", 0, 0},
        {"huge_params", SET_U64, 24, (int64_t)1 << 50, NULL, "bad sizes", 0, 0},
        {"claims_more_data", SET_U64, 24, 100000, NULL, "(truncated)", 40, 100000},
        {"zero_length", EMPTY, 0, 0, NULL, "truncated: 0 bytes", 0, 0},
        {"folder", FOLDER, 0, 0, NULL, "not a regular file", 0, 0},
        {"bad_magic", FLIP, 1, 0, NULL, "bad magic", 0, 0},
        {"header_bit_flip", FLIP, 30, 0, NULL, "header checksum mismatch", 0, 0},
        {"payload_bit_flip", FLIP, -5, 0, NULL, "checksum mismatch (corrupt file)", 0, 0},
    };
    snprintf(args, sizeof args, "%s --steps 2 --resume=%s", tc_model_args(d), sd);
    TcTarget t = {.dir = d, .path = path, .orig = orig, .len = len, .args = args,
                  .after_damage = state_follow_edit, .user = sd};
    tc_refuse_all(&t, cases, TC_NCASES(cases));
    /* Unedited, but the manifest disagrees with the file's size. */
    snprintf(cmd, sizeof cmd, "cp '%s/COMPLETE.orig' '%s/COMPLETE'", d, sd);
    cr_assert_eq(tu_run(cmd), 0);
    static const TcCase shorter = {"size_differs", TRUNCATE, -4, 0, NULL, "size differs", 0, 0};
    t.after_damage = NULL;
    tc_refuse_all(&t, &shorter, 1);
    free(orig);
    free(d);
}

/* llm.c's state file (--resume-llmc DIR/state_N_R.bin): header ints at 4i,
 * [1] version [2] processes [3] rank [4] master [5] shuffle [10] step,
 * [30] shard and [32] sample (u64); no checksum, so every field is checked. */
Test(hostile, llmc_state, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], path[800], keep[800], cmd[2048];
    tc_make_shards(d, 1, 400);
    snprintf(args, sizeof args, "%s --steps 1 --save-checkpoint-llmc %s/lc", tc_model_args(d), d);
    snprintf(path, sizeof path, "%s/base", d);
    cr_assert_eq(tc_run(NULL, args, path), 0);
    snprintf(path, sizeof path, "%s/lc/state_00000001_00000.bin", d);
    snprintf(keep, sizeof keep, "%s/llmc_state.orig", d);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", path, keep);
    cr_assert_eq(tu_run(cmd), 0);
    size_t len;
    char *orig = tu_read_file(keep, &len);
    static const TcCase cases[] = {
        {"truncated", TRUNCATE, -100, 0, NULL, "is not 3 whole float32 arrays", 0, 0},
        {"truncated_header", TRUNCATE, 100, 0, NULL, "100 bytes, shorter than llm.c's", 0, 0},
        {"zero_length", EMPTY, 0, 0, NULL, "0 bytes, shorter than llm.c's", 0, 0},
        {"folder", FOLDER, 0, 0, NULL, "no complete llm.c checkpoint in it", 0, 0},
        {"bad_magic", SET_I32, 0, 1234, NULL, "bad magic 1234", 0, 0},
        {"bad_version", SET_I32, 4, 2, NULL, "unsupported llm.c state version 2", 0, 0},
        {"other_process_count", SET_I32, 8, 2, NULL, "written by rank 0 of 2 processes", 0, 0},
        {"negative_processes", SET_I32, 8, -3, NULL, "bad process count -3", 0, 0},
        {"rank_outside", SET_I32, 12, 5, NULL, "bad process count 1 or rank 5", 0, 0},
        {"bad_master_flag", SET_I32, 16, 7, NULL, "use_master_weights 7", 0, 0},
        {"no_master_sizes_differ", SET_I32, 16, 0, NULL, "holds AdamW state for 51264", 0, 0},
        {"shuffled", SET_I32, 20, 1, NULL, "the llm.c run shuffled its data", 0, 0},
        {"negative_step", SET_I32, 40, -3, NULL, "negative step -3", 0, 0},
        {"huge_shard", SET_U64, 120, (int64_t)1 << 40, NULL, "(shard 1099511627776, sample 1)",
         0, 0},
        {"huge_sample", SET_U64, 128, -1, NULL, "sample 18446744073709551615) is not in", 0, 0},
        {"nan_in_m", SET_I32, 1024 + 8, 0x7fc00000, NULL, "AdamW m hold a non-finite value "
         "(element 2)", 0, 0},
    };
    snprintf(args, sizeof args, "%s --steps 2 --resume-llmc %s", tc_model_args(d), path);
    TcTarget t = {.dir = d, .path = path, .orig = orig, .len = len, .args = args};
    tc_refuse_all(&t, cases, TC_NCASES(cases));
    /* the model file of the step is gone (the state file itself unedited) */
    static const TcCase no_model = {"missing_model", TRUNCATE, -0L, 0, NULL, "missing", 0, 0};
    snprintf(cmd, sizeof cmd, "mv %s/lc/model_00000001.bin %s/lc/m.bin", d, d);
    cr_assert_eq(tu_run(cmd), 0);
    snprintf(keep, sizeof keep, "%s/lc/model_00000001.bin", d);
    t.named = keep;
    tc_refuse_all(&t, &no_model, 1);
    free(orig);
    tu_remove_tree(d);
}

Test(hostile, manifest, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], path[800];
    const char *sd = base_save(d);
    snprintf(path, sizeof path, "%s/COMPLETE", sd);
    size_t len;
    char *orig = tu_read_file(path, &len);
    /* the real model.bin size, plus 100 */
    char *b = strstr(orig, "\"model.bin\",\"bytes\":") + strlen("\"model.bin\",\"bytes\":");
    long model_bytes = strtol(b, NULL, 10);
    char more[1024];
    snprintf(more, sizeof more, "%.*s%ld%s", (int)(b - orig), orig, model_bytes + 100,
             strchr(b, ','));
    /* the run id (version 2): not hex; another run's than the state files' */
    char *id = strstr(orig, "\"run_id\":\"");
    cr_assert_not_null(id, "the save has no run id");
    id += strlen("\"run_id\":\"");
    char bad_id[1024], other_id[1024];
    snprintf(bad_id, sizeof bad_id, "%.*sXYZ%s", (int)(id - orig), orig, id + 3);
    snprintf(other_id, sizeof other_id, "%.*s%c%s", (int)(id - orig), orig,
             id[0] == '1' ? '2' : '1', id + 1);
    const TcCase cases[] = {
        {"truncated", TRUNCATE, -40, 0, NULL, "not valid JSON", 0, 0},
        {"oversized_count", REPLACE, 0, 0,
         "{\"format\":\"train_gpt checkpoint\",\"version\":1,\"step\":1,\"world_size\":1000000,"
         "\"files\":[]}", "\"world_size\" missing or not in 1..4096", 0, 0},
        {"negative_step", REPLACE, 0, 0,
         "{\"format\":\"train_gpt checkpoint\",\"version\":1,\"step\":-3,\"world_size\":1}",
         "\"step\" missing or not an integer", 0, 0},
        {"huge_bytes", REPLACE, 0, 0,
         "{\"format\":\"train_gpt checkpoint\",\"version\":1,\"step\":1,\"world_size\":1,"
         "\"files\":[{\"name\":\"model.bin\",\"bytes\":1e30,\"crc32\":1},"
         "{\"name\":\"state_r00000.bin\",\"bytes\":1,\"crc32\":1}]}", "out of range", 0, 0},
        {"claims_more_data", REPLACE, 0, 0, more, "size differs", 0, 0},
        {"zero_length", EMPTY, 0, 0, NULL, "0 bytes (a manifest has 1..1048576)", 0, 0},
        {"folder", FOLDER, 0, 0, NULL, "not a regular file", 0, 0},
        {"not_json", REPLACE, 0, 0, "\x01\x02garbage", "not valid JSON", 0, 0},
        {"future_version", REPLACE, 0, 0,
         "{\"format\":\"train_gpt checkpoint\",\"version\":3,\"step\":1,\"world_size\":1}",
         "unsupported or missing \"version\" (this build reads 1 and 2)", 0, 0},
        {"bad_run_id", REPLACE, 0, 0, bad_id, "\"run_id\" or \"config_hash\" missing", 0, 0},
        {"other_runs_state", REPLACE, 0, 0, other_id, "(files of two runs mixed)", 0, 0},
    };
    snprintf(args, sizeof args, "%s --steps 2 --resume=%s", tc_model_args(d), sd);
    TcTarget t = {.dir = d, .path = path, .orig = orig, .len = len, .args = args, .named = sd};
    tc_refuse_all(&t, cases, TC_NCASES(cases));
    free(orig);
    free(d);
}

/* text with the first `from` replaced by `to` (malloc'd). */
static char *replaced(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    cr_assert_not_null(at, "'%s' not in the manifest", from);
    char *out = malloc(strlen(text) + strlen(to) + 1);
    sprintf(out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return out;
}

/* A dataset manifest (PREFIX.manifest.json, data/dataset.h) beside
 * ./tokenize's shards, damaged: --train-data is refused, naming it. */
Test(hostile, dataset_manifest, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], path[600], cmd[2048];
    snprintf(cmd, sizeof cmd, "head -c 20000 '%s' | %s "
             "--quiet --out %s/ts --shard-size 2000 --val-tokens 0 -", TU_SHAKESPEARE,
             tc_tokenize_bin(), d);
    cr_assert_eq(tu_run(cmd), 0);
    snprintf(path, sizeof path, "%s/ts.manifest.json", d);
    size_t len;
    char *orig = tu_read_file(path, &len);
    cr_assert_not_null(orig);
    /* shard 0 of train claims one token more (and the total follows) */
    char *more = replaced(orig, "\"tokens\":\t2000,\n\t\t\t\"bytes\":\t5024",
                          "\"tokens\":\t2001,\n\t\t\t\"bytes\":\t5026");
    char *more2 = replaced(more, "\"tokens\":\t6048", "\"tokens\":\t6049");
    char *sha_at = strstr(orig, "\"sha256\":\t\"") + strlen("\"sha256\":\t\"");
    sha_at = strstr(sha_at, "\"sha256\":\t\"") + strlen("\"sha256\":\t\""); /* shard 0's */
    char one_sha[65], other_sha[65];
    snprintf(one_sha, sizeof one_sha, "%.64s", sha_at);
    snprintf(other_sha, sizeof other_sha, "%.64s", one_sha);
    other_sha[0] = other_sha[0] == 'a' ? 'b' : 'a';
    char *edited_sha = replaced(orig, one_sha, other_sha);
    char *traversal = replaced(orig, "\"ts_train_000000.bin\"", "\"../ts_train_000000.bin\"");
    char *version = replaced(orig, "\"version\":\t1", "\"version\":\t9");
    char *huge = replaced(orig, "\"tokens\":\t6048", "\"tokens\":\t1e300");
    char *negative = replaced(orig, "\"tokens\":\t2000,", "\"tokens\":\t-2000,");
    const TcCase cases[] = {
        {"truncated", TRUNCATE, -40, 0, NULL, "not a JSON object", 0, 0},
        {"zero_length", EMPTY, 0, 0, NULL, "0 bytes (a dataset manifest has 2..", 0, 0},
        {"folder", FOLDER, 0, 0, NULL, "not a regular file", 0, 0},
        {"not_json", REPLACE, 0, 0, "\x01\x02garbage", "not a JSON object", 0, 0},
        {"bad_magic", REPLACE, 0, 0, "{\"format\":\"train_gpt checkpoint\"}", "\"format\"", 0, 0},
        {"bad_version", REPLACE, 0, 0, version, "unsupported or missing \"version\"", 0, 0},
        {"huge_count", REPLACE, 0, 0, huge, "\"tokens\" or \"sha256\" missing or malformed", 0, 0},
        {"negative_count", REPLACE, 0, 0, negative, "out of range", 0, 0},
        {"claims_more_data", REPLACE, 0, 0, more2, "2000 tokens, the manifest lists 2001", 0, 0},
        {"edited_digest", REPLACE, 0, 0, edited_sha, "does not match the shards' digests", 0, 0},
        {"path_traversal", REPLACE, 0, 0, traversal, "not a plain file name", 0, 0},
    };
    snprintf(args, sizeof args, "--train-data '%s/ts_train_*.bin' --layers 1 --channels 16 "
             "--heads 2 --vocab 50257 --seq-len 32 --batch 2 --steps 1 --device cpu "
             "--threads 1", d);
    TcTarget t = {.dir = d, .path = path, .orig = orig, .len = len, .args = args};
    tc_refuse_all(&t, cases, TC_NCASES(cases));
    free(orig), free(more), free(more2), free(edited_sha), free(traversal), free(version);
    free(huge), free(negative), free(d);
}

/* ./tokenize --encoder E --vocab V: one file damaged at a time
 * ($TRAIN_GPT_TOKENIZE_BIN when set: the sanitizer build). */
Test(hostile, tokenizer_files, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], path[600], in[600];
    static const char *names[2] = {"encoder.json", "vocab.bpe"};
    snprintf(in, sizeof in, "%s/in.txt", d);
    tu_write_file(in, "hello world\n", 12);
    for (int f = 0; f < 2; f++) {
        char good[2][600];
        for (int k = 0; k < 2; k++)
            snprintf(good[k], sizeof good[k], "%s", k == 0 ? TU_ENCODER : TU_VOCAB);
        size_t len;
        char *orig = tu_read_file(good[f], &len);
        cr_assert_not_null(orig, "%s is missing", good[f]);
        snprintf(path, sizeof path, "%s/hostile_%s", d, names[f]);
        const TcCase cases[] = {
            {"truncated", TRUNCATE, (long)len / 2, 0, NULL, "not GPT-2's file", 0, 0},
            {"one_byte_changed", FLIP, 100, 0, NULL, "not GPT-2's file", 0, 0},
            {"zero_length", EMPTY, 0, 0, NULL, "not GPT-2's file", 0, 0},
            {"folder", FOLDER, 0, 0, NULL, "not a regular file", 0, 0},
            {"not_text", REPLACE, 0, 0, "\x01\x02\xff{[", "not GPT-2's file", 0, 0},
        };
        snprintf(args, sizeof args, "--quiet --out %s/tok --encoder '%s' --vocab '%s' '%s'", d,
                 f == 0 ? path : good[0], f == 1 ? path : good[1], in);
        char tag[64];
        snprintf(tag, sizeof tag, "tok_%s", names[f]);
        TcTarget t = {.dir = d, .path = path, .orig = orig, .len = len, .args = args, .tag = tag,
                      .tokenize = 1};
        tc_refuse_all(&t, cases, TC_NCASES(cases));
        free(orig);
    }
    free(d);
}

/* A FIFO (open would block) and an endless device are refused at once. */
Test(hostile, tokenizer_files_not_regular, .timeout = 30)
{
    char *d = tu_tempdir(), fifo[600], cmd[2048], e[700];
    snprintf(fifo, sizeof fifo, "%s/vocab_fifo", d);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    const char *bad[2] = {fifo, "/dev/zero"};
    for (int k = 0; k < 2; k++) {
        snprintf(e, sizeof e, "%s/err%d.txt", d, k);
        snprintf(cmd, sizeof cmd, "timeout 10 ./tokenize --quiet --out %s/t --vocab %s /dev/null 2>%s",
                 d, bad[k], e);
        cr_expect_eq(tu_run(cmd), 1, "%s: want exit 1 (not a hang, 124)", bad[k]);
        char *err = tu_read_file(e, NULL);
        cr_expect(err && strstr(err, bad[k]) && strstr(err, "not a regular file"), "%s", err);
        free(err);
    }
    free(d);
}

/* The checkpoint folder as a whole: each case set up by a shell command on
 * a folder holding one good save (step 1), then a run on it. */
Test(hostile, checkpoint_folder, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], cmd[8192], p[700];
    base_save(d); /* d/ck/step_00000001 */
    snprintf(cmd, sizeof cmd, "cp -r '%s/ck' '%s/ck.orig'", d, d);
    cr_assert_eq(tu_run(cmd), 0);
    static const struct {
        const char *name, *setup, *flags, *msg;
    } cases[] = {
        /* a new run where another run saved */
        {"another_runs_saves", "true", "--steps 2", "holds 1 save of another run"},
        /* the lock file is a folder */
        {"lock_is_a_folder", "rm $D/ck/train_gpt.lock && mkdir $D/ck/train_gpt.lock",
         "--steps 2 --resume",
         "train_gpt.lock: cannot open the lock file"},
        /* a rollback where abandoned/ is a file */
        {"abandoned_is_a_file",
         "cp -r $D/ck/step_00000001 $D/ck/step_00000003 && "
         "sed -i 's/\"step\":1,/\"step\":3,/' $D/ck/step_00000003/COMPLETE && "
         "echo x > $D/ck/abandoned", "--steps 2 --resume=$D/ck/step_00000001",
         "abandoned: exists and is not a folder"},
        /* every save corrupt */
        {"only_corrupt_saves",
         "printf Z | dd of=$D/ck/step_00000001/model.bin bs=1 seek=3000 conv=notrunc 2>/dev/null",
         "--steps 2 --resume", "no intact save in"},
        /* a held lock: util-linux flock(1) holds it while the run starts */
        {"held_lock", "true", "--steps 2 --resume", "is in use by another run"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(cmd, sizeof cmd, "D='%s'; rm -rf $D/ck && cp -r $D/ck.orig $D/ck && %s", d,
                 cases[i].setup[0] ? cases[i].setup : "true");
        cr_assert_eq(tu_run(cmd), 0, "%s: setup failed", cases[i].name);
        char flags[1200];
        snprintf(flags, sizeof flags, "%s", cases[i].flags);
        char *dollar = strstr(flags, "$D");
        if (dollar) { /* --resume=$D/... */
            char rest[1200];
            snprintf(rest, sizeof rest, "%s", dollar + 2);
            snprintf(dollar, sizeof flags - (size_t)(dollar - flags), "%s%s", d, rest);
        }
        snprintf(args, sizeof args, "%s %s --checkpoint-dir %s/ck", tc_model_args(d), flags, d);
        snprintf(p, sizeof p, "%s/folder_%s", d, cases[i].name);
        int rc;
        if (strcmp(cases[i].name, "held_lock") == 0) {
            snprintf(cmd, sizeof cmd, "flock -n %s/ck/train_gpt.lock sh -c '%s %s >%s.out 2>%s.err'",
                     d, tc_bin(), args, p, p);
            rc = tu_run(cmd);
        } else {
            rc = tc_run(NULL, args, p);
        }
        tc_expect_refusal(cases[i].name, rc, p, "/ck", cases[i].msg);
    }
    tu_remove_tree(d);
}
