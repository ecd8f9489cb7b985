/* tests/e2e/train/test_train_cli.c — ./train_gpt end to end, and its command line.
 *
 * The end-to-end run trains on raw bytes (vocab 256) of the public-domain
 * tinyshakespeare text (found as the programs find it, data/source.h): the
 * first loss is about ln(256) = 5.545, and after 60 steps the validation
 * loss must be under 3.4 (a unigram byte model is about 3.3 nats). */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/shard.h"
#include "tests/lib/test_util.h"
#include "tests/lib/cli_harness.h"

#define SHAKESPEARE TU_SHAKESPEARE

/* Byte shards: the first 10% of the text is val, the rest train. */
static char *make_byte_shards(void)
{
    size_t len;
    char *text = tu_read_file(SHAKESPEARE, &len);
    cr_assert_not_null(text, "cannot read %s", SHAKESPEARE);
    cr_assert_eq(len, 1115394);
    uint16_t *tok = malloc(len * sizeof *tok);
    for (size_t i = 0; i < len; i++) tok[i] = (unsigned char)text[i];
    char *d = tu_tempdir(), path[512], err[256];
    size_t nval = len / 10;
    snprintf(path, sizeof path, "%s/bytes_val_000000.bin", d);
    cr_assert_eq(shard_write(path, tok, nval, err, sizeof err), 0, "%s", err);
    snprintf(path, sizeof path, "%s/bytes_train_000000.bin", d);
    cr_assert_eq(shard_write(path, tok + nval, len - nval, err, sizeof err), 0, "%s", err);
    free(tok);
    free(text);
    return d;
}

#define TINY_FLAGS "--layers 2 --channels 64 --heads 4 --seq-len 64 --vocab 256 --batch 8 --threads 1"

static double num(cJSON *o, const char *key)
{
    cJSON *v = cJSON_GetObjectItem(o, key);
    cr_assert(cJSON_IsNumber(v), "missing number '%s'", key);
    return v->valuedouble;
}

Test(train_cli, loss_falls_on_tinyshakespeare_bytes, .timeout = 300)
{
    char *d = make_byte_shards(), cmd[2048], log[512];
    snprintf(log, sizeof log, "%s/log.jsonl", d);
    snprintf(cmd, sizeof cmd,
             "./train_gpt " TINY_FLAGS " --steps 60 --lr 3e-3 --warmup 5 --lr-schedule cosine "
             "--lr-min-frac 0.1 --val-every 0 --val-batches 8 --recompute 1 "
             "--train-data '%s/bytes_train_*.bin' --val-data '%s/bytes_val_*.bin' --log %s "
             "> %s/out.txt 2>&1", d, d, log, d);
    cr_assert_eq(tu_run(cmd), 0, "%s failed", cmd);
    /* the first line is the run's configuration (cli/run_record.h), then step 1 */
    char *text = tu_read_file(log, NULL), *first = strtok(text, "\n");
    cr_expect(first && strstr(first, "\"event\":\"run\""), "no configuration line first");
    cJSON *j1 = cJSON_Parse(strtok(NULL, "\n"));
    double loss1 = num(j1, "loss");
    cr_expect(fabs(loss1 - 5.545177) < 0.25, "first loss %.4f, want about ln 256", loss1);
    cr_expect_eq(num(j1, "step"), 1);
    cJSON_Delete(j1);
    free(text);
    cJSON *val = tc_log_last_with(log, "val_loss");
    double vl = num(val, "val_loss");
    cr_expect_lt(vl, 3.4, "val loss after 60 steps %.4f, want < 3.4", vl);
    cJSON_Delete(val);
    cJSON *sum = tc_log_last_with(log, "event");
    cr_assert_not_null(sum);
    cr_expect_eq(num(sum, "recompute"), 1);
    cJSON *mem = cJSON_GetObjectItem(sum, "memory");
    double total = 0;
    const char *cats[] = {"params", "grads", "optimizer", "activations", "workspace", "scratch", "head"};
    for (int c = 0; c < 7; c++) total += num(mem, cats[c]);
    cr_expect_eq(total, num(mem, "total"), "the categories add up to the total");
    cr_expect_gt(num(mem, "peak_measured"), 0);
    cJSON_Delete(sum);
    free(d);
}

/* --steps 0 --save writes a fresh initialisation; --init-from reads it back
 * and training from it is the same as training from the seed. */
Test(train_cli, save_fresh_init_and_init_from, .timeout = 120)
{
    char *d = make_byte_shards(), cmd[2048];
    snprintf(cmd, sizeof cmd,
             "./train_gpt " TINY_FLAGS " --steps 0 --save %s/init.bin --train-data "
             "'%s/bytes_train_*.bin' --val-data '%s/bytes_val_*.bin' > /dev/null 2>&1 && "
             "./train_gpt --init-from %s/init.bin --seq-len 64 --batch 8 --threads 1 --steps 2 "
             "--val-every 0 --train-data '%s/bytes_train_*.bin' --val-data '%s/bytes_val_*.bin' "
             "--save %s/a.bin > /dev/null 2>&1 && "
             "./train_gpt " TINY_FLAGS " --steps 2 --val-every 0 --train-data "
             "'%s/bytes_train_*.bin' --val-data '%s/bytes_val_*.bin' --save %s/b.bin > /dev/null "
             "2>&1 && cmp %s/a.bin %s/b.bin",
             d, d, d, d, d, d, d, d, d, d, d, d);
    cr_expect_eq(tu_run(cmd), 0, "init-from a saved init must train bitwise like the seed: %s", cmd);
    size_t len;
    char path[512];
    snprintf(path, sizeof path, "%s/init.bin", d);
    char *bytes = tu_read_file(path, &len);
    cr_assert_not_null(bytes);
    int32_t h[8];
    memcpy(h, bytes, sizeof h);
    cr_expect(h[0] == 20240326 && h[1] == 3 && h[2] == 64 && h[3] == 256 && h[4] == 2 &&
              h[5] == 4 && h[6] == 64 && h[7] == 256, "llm.c header fields");
    free(bytes);
    free(d);
}

/* Run ./train_gpt with args; return the exit status and stderr's text. */
static int run_cli(const char *args, char **err_text)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "./train_gpt %s", args);
    return tu_run_output(cmd, NULL, err_text);
}

static void expect_usage_error(const char *args, const char *needle)
{
    char *e;
    int rc = run_cli(args, &e);
    cr_expect_eq(rc, 2, "'%s' exited %d, want 2", args, rc);
    cr_expect(e && strstr(e, needle), "'%s': stderr '%s' lacks '%s'", args, e ? e : "", needle);
    int lines = 0;
    for (char *p = e; p && *p; p++) lines += *p == '\n';
    cr_expect_eq(lines, 1, "'%s': want a one-line message, got '%s'", args, e ? e : "");
    free(e);
}

Test(train_cli, usage_errors_exit_2_with_one_line)
{
    expect_usage_error("--no-such-flag 1", "--no-such-flag: unknown flag");
    expect_usage_error("--layers 0", "--layers: expected an integer in 1..4096");
    expect_usage_error("--layers 12x", "--layers");
    expect_usage_error("--lr -1", "--lr: expected a number");
    expect_usage_error("--recompute 7", "--recompute: expected one of 0|1");
    expect_usage_error("--lr-schedule linear", "constant|cosine");
    expect_usage_error("--shuffle 2", "--shuffle");
    expect_usage_error("--model d99", "--model: expected one of d12|d24|d36|d48");
    expect_usage_error("--heads 5 --channels 64", "--heads: 5 does not divide");
    expect_usage_error("--device tpu", "--device");
    expect_usage_error("--batch", "--batch: missing value");
    expect_usage_error("stray", "unexpected argument");
}

/* A flag that does nothing without another is refused (exit 2), never
 * ignored: before, each of these ran (or planned) and exited 0. */
Test(train_cli, flags_without_effect_are_refused)
{
    expect_usage_error("--plan --prompt-file /nonexistent.txt",
                       "--prompt-file: applies to samples, and none is drawn: give --generate N "
                       "or --sample-every N");
    expect_usage_error("--plan --prompt hi", "--prompt: applies to samples");
    expect_usage_error("--plan --temperature 0", "--temperature: applies to samples");
    expect_usage_error("--plan --top-k 5", "--top-k: applies to samples");
    expect_usage_error("--plan --top-p 0.9", "--top-p: applies to samples");
    expect_usage_error("--plan --num-samples 2", "--num-samples: applies to samples");
    expect_usage_error("--plan --stop-at-eot 0", "--stop-at-eot: applies to samples");
    expect_usage_error("--plan --sample-tokens 8", "--sample-tokens: needs --sample-every N");
    expect_usage_error("--generate 4 --sample-tokens 8",
                       "--sample-tokens: sets --sample-every's sample length");
    expect_usage_error("--plan --keep 2", "--keep: needs --checkpoint-dir DIR");
    expect_usage_error("--plan --save-dtype bf16", "--save-dtype: needs --save FILE or");
    expect_usage_error("--plan --log-errors ignore", "--log-errors: needs --log FILE");
    expect_usage_error("--steps 0 --dump-grads g.bin", "--dump-grads: writes step 1's gradients");
    expect_usage_error("--generate 3 --dump-grads g.bin", "and --generate trains no step");
}

/* --dump-grads writes step 1's gradients: a resumed run (from a save, or
 * from llm.c's files) never trains step 1, so it is refused at start-up
 * (before, the run trained on and wrote nothing); a --resume that finds
 * no save starts at step 1 and writes it. */
Test(train_cli, dump_grads_with_a_resume_is_refused, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096], want[1024];
    tc_make_shards(d, 1, 400);
    snprintf(args, sizeof args, "%s --steps 2 --checkpoint-dir %s/ck --save-checkpoint-llmc "
             "%s/lc", tc_model_args(d), d, d);
    tc_run_expect(d, args, 0, "saved");
    snprintf(args, sizeof args, "%s --steps 4 --checkpoint-dir %s/ck --resume --dump-grads "
             "%s/g.bin", tc_model_args(d), d, d);
    snprintf(want, sizeof want, "--dump-grads: writes step 1's gradients, and this run resumes "
             "at step 2 (%s/ck/step_00000002)", d);
    tc_run_expect(d, args, 2, want);
    snprintf(args, sizeof args, "%s --steps 4 --resume-llmc %s/lc --dump-grads %s/g.bin",
             tc_model_args(d), d, d);
    tc_run_expect(d, args, 2, "and this run resumes at step 2");
    cr_expect(!tu_exists(tu_path(d, "g.bin")));
    snprintf(args, sizeof args, "%s --steps 1 --checkpoint-dir %s/new --resume --dump-grads "
             "%s/g.bin", tc_model_args(d), d, d);
    tc_run_expect(d, args, 0, "");
    cr_expect(tu_exists(tu_path(d, "g.bin")), "a new run's step 1 was not dumped");
    tu_remove_tree(d);
}

Test(train_cli, help_lists_every_flag_with_defaults)
{
    char *d = tu_tempdir(), cmd[1100], path[512];
    snprintf(path, sizeof path, "%s/help.txt", d);
    snprintf(cmd, sizeof cmd, "./train_gpt --help > %s", path);
    cr_assert_eq(tu_run(cmd), 0);
    char *h = tu_read_file(path, NULL);
    const char *flags[] = {"--layers", "--channels", "--heads", "--seq-len", "--vocab", "--batch",
                           "--grad-accum", "--steps", "--lr ", "--lr-schedule", "--warmup",
                           "--lr-min-frac", "--beta1", "--beta2", "--eps", "--weight-decay",
                           "--grad-clip", "--recompute", "--train-data", "--val-data", "--shuffle",
                           "--seed", "--val-every", "--val-batches", "--init-from", "--save",
                           "--log", "--threads", "--device", "--model", "--top-k", "--top-p",
                           "--num-samples", "--prompt-file", "--stop-at-eot", "--eval-file",
                           "--eval-every"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        cr_expect(strstr(h, flags[i]), "--help lacks %s", flags[i]);
    cr_expect(strstr(h, "[default: 12]") && strstr(h, "[default: 50257]"), "defaults shown");
    free(h), free(d);
}

Test(train_cli, data_errors_name_the_file_and_exit_nonzero)
{
    char *e;
    int rc = run_cli("--train-data '/nonexistent/x_*.bin' --vocab 256", &e);
    cr_expect_neq(rc, 0);
    cr_expect(e && strstr(e, "--train-data: /nonexistent/x_*.bin: glob matched no files"), "%s", e);
    free(e);
    rc = run_cli("--init-from /nonexistent/model.bin", &e);
    cr_expect_neq(rc, 0);
    cr_expect(e && strstr(e, "--init-from: /nonexistent/model.bin: cannot open"), "%s", e);
    free(e);
    /* each names its flag too (before: the file alone) */
    rc = run_cli("--layers 2 --channels 32 --heads 4 --seq-len 16 --batch 2 --steps 1 "
                 "--val-data /tmp", &e);
    cr_expect_eq(rc, 1);
    cr_expect(e && strstr(e, "--val-data: /tmp: not a regular file (a folder)"), "%s", e);
    free(e);
    rc = run_cli("--layers 2 --channels 32 --heads 4 --seq-len 16 --batch 2 --steps 1 "
                 "--eval-file /nonexistent/hs.bin", &e);
    cr_expect_eq(rc, 1);
    cr_expect(e && strstr(e, "--eval-file: /nonexistent/hs.bin: cannot open: No such file or "
                             "directory (`make hellaswag` writes datasets/hellaswag_val.bin)"),
              "%s", e);
    free(e);
}

/* The default --val-data (datasets/tinyshakespeare_val_*.bin, GPT-2 tokens)
 * belongs to the default dataset. A run on other --train-data without
 * --val-data skips validation instead of reading it: here the default path
 * (relative to the working directory) holds tokens outside the run's
 * 256-byte vocabulary, which the explicit flag shows would stop the run. */
Test(train_cli, default_val_data_only_with_default_train_data, .timeout = 120)
{
    char *d = make_byte_shards(), cmd[8192], path[512], err[256], bin[4096];
    const char *b = getenv("TRAIN_GPT_BIN");
    cr_assert_not_null(realpath(b ? b : "./train_gpt", bin), "no train_gpt binary");
    snprintf(path, sizeof path, "%s/datasets", d);
    cr_assert_eq(mkdir(path, 0755), 0);
    uint16_t gpt2_tokens[4096];
    for (int i = 0; i < 4096; i++) gpt2_tokens[i] = (uint16_t)(300 + i % 1000);
    snprintf(path, sizeof path, "%s/datasets/tinyshakespeare_val_000000.bin", d);
    cr_assert_eq(shard_write(path, gpt2_tokens, 4096, err, sizeof err), 0, "%s", err);

    snprintf(cmd, sizeof cmd,
             "cd %s && %s " TINY_FLAGS " --steps 2 --train-data 'bytes_train_*.bin' > out.txt 2>&1",
             d, bin);
    cr_expect_eq(tu_run(cmd), 0, "%s failed", cmd);
    snprintf(path, sizeof path, "%s/out.txt", d);
    char *out = tu_read_file(path, NULL);
    cr_expect(out && strstr(out, "--train-data given without --val-data; val loss is skipped"),
              "%s", out);
    free(out);

    snprintf(cmd, sizeof cmd,
             "cd %s && %s " TINY_FLAGS " --steps 2 --train-data 'bytes_train_*.bin' "
             "--val-data 'datasets/tinyshakespeare_val_*.bin' > out.txt 2>&1", d, bin);
    cr_expect_neq(tu_run(cmd), 0, "the out-of-vocabulary val file must stop an explicit run");
    out = tu_read_file(path, NULL);
    cr_expect(out && strstr(out, "outside the vocabulary"), "%s", out);
    free(out);
    free(d);
}

/* Shape flags that contradict --init-from's file: exit 2, one line with both
 * shapes; flags that agree with it are fine. */
Test(train_cli, shape_flags_contradicting_init_from_exit_2, .timeout = 120)
{
    char *d = make_byte_shards(), cmd[2048], args[1024];
    snprintf(cmd, sizeof cmd, "./train_gpt " TINY_FLAGS " --steps 0 --save %s/init.bin "
             "--train-data '%s/bytes_train_*.bin' > /dev/null 2>&1", d, d);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    const char *file = "the file has L=2 C=64 NH=4 V=256 max-seq-len=64";
    snprintf(args, sizeof args, "--init-from %s/init.bin --layers 6", d);
    expect_usage_error(args, "--layers 6: contradicts the shape of ");
    expect_usage_error(args, file);
    expect_usage_error(args, "the flags ask for L=6 C=64 NH=4 V=256 max-seq-len=64");
    snprintf(args, sizeof args, "--init-from %s/init.bin --heads 2 --vocab 300", d);
    expect_usage_error(args, "--heads 2, --vocab 300: contradicts");
    expect_usage_error(args, "the flags ask for L=2 C=64 NH=2 V=300 max-seq-len=64");
    snprintf(args, sizeof args, "--init-from %s/init.bin --model d12", d);
    expect_usage_error(args, "--layers 12, --channels 768, --heads 12 (--model d12): contradicts");
    snprintf(args, sizeof args, "--init-from %s/init.bin --max-seq-len 128", d);
    expect_usage_error(args, "--max-seq-len 128: contradicts");
    /* the same shape given again is no contradiction */
    snprintf(cmd, sizeof cmd, "./train_gpt --init-from %s/init.bin --layers 2 --channels 64 "
             "--heads 4 --vocab 256 --seq-len 64 --batch 8 --threads 1 --steps 1 --val-every 0 "
             "--train-data '%s/bytes_train_*.bin' > /dev/null 2>&1", d, d);
    cr_expect_eq(tu_run(cmd), 0, "%s", cmd);
    free(d);
}

/* Without --seq-len, --init-from a model whose position table is shorter
 * than the default 1024 trains at the file's length (a note says so), and
 * exactly as a run given that --seq-len does: the two saves are equal byte
 * for byte. A --seq-len given above it is exit 2, naming the file and the
 * largest length that works. */
Test(train_cli, init_from_a_short_model_takes_its_seq_len, .timeout = 120)
{
    char *d = make_byte_shards(), cmd[2048], args[1024];
    const char *data = "--batch 8 --threads 1 --steps 2 --val-every 0";
    snprintf(cmd, sizeof cmd, "./train_gpt " TINY_FLAGS " --steps 0 --save %s/init.bin "
             "--train-data '%s/bytes_train_*.bin' > /dev/null 2>&1", d, d);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    snprintf(cmd, sizeof cmd, "./train_gpt --init-from %s/init.bin %s --train-data "
             "'%s/bytes_train_*.bin' --save %s/implied.bin", d, data, d, d);
    char *out = NULL, *err = NULL;
    cr_expect_eq(tu_run_output(cmd, &out, &err), 0, "%s: %s", cmd, err ? err : "");
    cr_expect(out && strstr(out, "note: --seq-len 64, the maximum sequence length of "
                                 "--init-from "), "%s", out ? out : "");
    cr_expect(out && strstr(out, " T=64 "), "the run must be at T=64: %s", out ? out : "");
    free(out);
    free(err);
    snprintf(cmd, sizeof cmd, "./train_gpt --init-from %s/init.bin --seq-len 64 %s --train-data "
             "'%s/bytes_train_*.bin' --save %s/given.bin > /dev/null 2>&1 && cmp %s/implied.bin "
             "%s/given.bin", d, data, d, d, d, d);
    cr_expect_eq(tu_run(cmd), 0, "the implied --seq-len must train as the given one: %s", cmd);
    snprintf(args, sizeof args, "--init-from %s/init.bin --seq-len 128", d);
    expect_usage_error(args, "--seq-len: 128 exceeds the model's maximum sequence length 64 (the "
                             "position table of ");
    expect_usage_error(args, "init.bin): pass --seq-len 64 or less");
    free(d);
}

/* --save's folder and --checkpoint-dir's parent are checked at start-up
 * (exit 1 before any work), not after training. */
Test(train_cli, save_and_checkpoint_folders_checked_at_start, .timeout = 120)
{
    char *d = make_byte_shards(), args[2048], path[1024];
    char *e;
    snprintf(args, sizeof args, TINY_FLAGS " --steps 1000000 --train-data '%s/bytes_train_*.bin' "
             "--save %s/no/such/folder/m.bin", d, d);
    cr_expect_eq(run_cli(args, &e), 1);
    snprintf(path, sizeof path, "--save %s/no/such/folder/m.bin: its folder must exist and be "
             "writable: %s/no/such/folder: the folder does not exist", d, d);
    cr_expect(e && strstr(e, path), "stderr: %s", e);
    free(e);
    /* a regular file where the folder should be */
    snprintf(args, sizeof args, TINY_FLAGS " --steps 1000000 --train-data '%s/bytes_train_*.bin' "
             "--save %s/bytes_val_000000.bin/m.bin", d, d);
    cr_expect_eq(run_cli(args, &e), 1);
    cr_expect(e && strstr(e, "bytes_val_000000.bin: not a folder"), "stderr: %s", e);
    free(e);
    /* the checkpoint folder is made, its parent is not */
    snprintf(args, sizeof args, TINY_FLAGS " --steps 1000000 --train-data '%s/bytes_train_*.bin' "
             "--checkpoint-dir %s/missing/ck", d, d);
    cr_expect_eq(run_cli(args, &e), 1);
    snprintf(path, sizeof path, "--checkpoint-dir %s/missing/ck: its parent folder must exist "
             "and be writable: %s/missing: the folder does not exist", d, d);
    cr_expect(e && strstr(e, path), "stderr: %s", e);
    free(e);
    snprintf(path, sizeof path, "%s/missing", d);
    struct stat st;
    cr_expect_neq(stat(path, &st), 0, "the missing parent was created");
    free(d);
}

/* The files written after the work (--save at the end, --dump-grads after
 * step 1, --log) are checked at start-up: a folder, a name ending in '/', a
 * FIFO (standing in for /dev/null, which a save used to replace) or a
 * missing folder exits 1 naming the flag before step 1, and the FIFO is
 * left as it was. (Before: --save's folder alone was checked; --save DIR
 * failed after training, --dump-grads after step 1, --log after the model
 * was built.) */
Test(train_cli, output_files_checked_at_start, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], want[1024], fifo[512], sub[512], missing[512];
    tc_make_shards(d, 1, 2000);
    snprintf(fifo, sizeof fifo, "%s/fifo", d);
    snprintf(sub, sizeof sub, "%s/sub/", d);
    snprintf(missing, sizeof missing, "%s/missing/f.bin", d);
    cr_assert_eq(mkfifo(fifo, 0644), 0);
    const char *flags[] = {"--save", "--dump-grads", "--log"};
    for (int i = 0; i < 3; i++) {
        struct {
            const char *path, *fault;
        } c[] = {
            {d, "exists and is not a regular file (a folder)"},
            {sub, "names a folder (it ends with '/'), not a file"},
            {fifo, "exists and is not a regular file (a special file)"},
            {missing, "its folder must exist and be writable"},
        };
        for (int k = 0; k < 4; k++) {
            snprintf(args, sizeof args, "%s --steps 3 %s %s", tc_model_args(d), flags[i],
                     c[k].path);
            snprintf(want, sizeof want, "%s %s: %s", flags[i], c[k].path, c[k].fault);
            tc_run_expect(d, args, 1, want);
            cr_expect(!tc_file_has(tu_path(d, "run.out"), "step     1/"), "%s: trained first",
                      args);
        }
    }
    struct stat st;
    cr_expect(stat(fifo, &st) == 0 && S_ISFIFO(st.st_mode), "the FIFO was replaced");
    tu_remove_tree(d);
}

Test(train_cli, h_is_help_and_version_names_the_build)
{
    char *d = tu_tempdir(), cmd[4096], a[1024], b[1024];
    snprintf(a, sizeof a, "%s/h.txt", d);
    snprintf(b, sizeof b, "%s/help.txt", d);
    /* tc_bin(): the binary built with the same flags as this test (test-asan's) */
    snprintf(cmd, sizeof cmd, "%s -h > %s && %s --help > %s", tc_bin(), a, tc_bin(), b);
    cr_assert_eq(tu_run(cmd), 0, "-h or --help did not exit 0");
    char *h = tu_read_file(a, NULL), *help = tu_read_file(b, NULL);
    cr_expect(h && help && strcmp(h, help) == 0 && strstr(h, "usage: ./train_gpt"),
              "-h differs from --help");
    free(h), free(help);
    snprintf(a, sizeof a, "%s/v.txt", d);
    snprintf(cmd, sizeof cmd, "%s --version > %s", tc_bin(), a);
    cr_assert_eq(tu_run(cmd), 0, "--version did not exit 0");
    char *v = tu_read_file(a, NULL);
    cr_assert_not_null(v);
    /* "train_gpt <git describe --always --dirty>" (an abbreviated hash, or
     * TAG-N-gHASH, maybe "-dirty"), or "unknown" outside a git tree */
    char commit[128] = "";
    cr_expect_eq(sscanf(v, "train_gpt %127s", commit), 1, "%s", v);
    int run = 0, longest = 0;
    for (const char *c = commit; *c; c++) {
        run = strchr("0123456789abcdef", *c) ? run + 1 : 0;
        longest = run > longest ? run : longest;
    }
    cr_expect(strcmp(commit, "unknown") == 0 || longest >= 7, "commit '%s'", commit);
    cr_expect(strstr(v, "\ncompiler: ") && strstr(v, "\nbackends: cpu (fp32; OpenBLAS"), "%s", v);
    cr_expect(backend_cuda_compiled() ? strstr(v, "built with CUDA runtime") != NULL
                                      : strstr(v, "cuda not built") != NULL, "%s", v);
#ifdef NO_MPI
    cr_expect(strstr(v, "\ndistributed: none (built with NO_MPI=1: one process only)\n"), "%s", v);
#else
    cr_expect(strstr(v, "\ndistributed: MPI (") && !strstr(v, "unknown version"), "%s", v);
#endif
    free(v), free(d);
}
