/* tests/unit/data/test_tokenize_job.c — data/tokenize_job and ./tokenize: shard
 * headers and sizes, EOT placement, documents, the train/val split, shard
 * splitting, stale shards, and the error paths (message, exit status, no
 * shard left). The manifest and replacing a dataset: tests/unit/data/test_dataset.c. Expected ids come from the reference encoder B described in
 * tests/unit/data/test_tokenizer.c. */
#include <criterion/criterion.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/shard.h"
#include "data/tokenize_job.h"
#include "data/tokenizer.h"
#include "tests/lib/test_util.h"

#define SHAKESPEARE TU_SHAKESPEARE

/* dir: at least 256 bytes. A folder under the suite's TMPDIR, removed at
 * the test's end (test_util.h). */
static void make_dir(char *dir)
{
    char *d = tu_tempdir();
    snprintf(dir, 256, "%s", d);
    free(d);
}

static void remove_dir(const char *dir)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* A quiet job on inputs[0..n) into prefix, documents split at blank lines. */
static TokenizeJob quiet_job(const char *prefix, const char **inputs, int n)
{
    TokenizeJob job;
    tokenize_job_defaults(&job);
    job.out_prefix = prefix;
    job.split_blank_lines = 1;
    job.quiet = 1;
    job.inputs = inputs;
    job.num_inputs = n;
    return job;
}

/* Read a shard, checking magic, version, count and file size; returns its
 * tokens (malloc) and count. */
static uint16_t *read_shard(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s missing", path);
    int32_t h[SHARD_HEADER_INTS];
    cr_assert_eq(fread(h, sizeof h, 1, f), 1);
    cr_assert_eq(h[0], 20240520, "%s: magic", path);
    cr_assert_eq(h[1], 1, "%s: version", path);
    /* [3], [4]: the dataset id, never 0 for ./tokenize's shards (shard.h) */
    cr_assert(h[3] != 0 || h[4] != 0, "%s: no dataset id", path);
    for (int i = 5; i < SHARD_HEADER_INTS; i++) cr_assert_eq(h[i], 0, "%s: header int %d", path, i);
    *n = (size_t)h[2];
    struct stat st;
    cr_assert_eq(fstat(fileno(f), &st), 0);
    cr_assert_eq((size_t)st.st_size, 1024 + 2 * *n, "%s: size %ld for %zu tokens", path,
                 (long)st.st_size, *n);
    uint16_t *t = malloc(2 * *n + 2);
    cr_assert_eq(fread(t, 2, *n, f), *n);
    fclose(f);
    return t;
}

static size_t count_glob(const char *dir, const char *pattern)
{
    char pat[1024];
    snprintf(pat, sizeof pat, "%s/%s", dir, pattern);
    glob_t g;
    size_t n = glob(pat, 0, NULL, &g) == 0 ? g.gl_pathc : 0;
    if (n) globfree(&g);
    return n;
}

/* Three documents with --split-blank-lines, shards of 4 tokens, 25% val:
 *   "Hello world\n\n"  -> 15496 995 628
 *   "I'm here\n\n"     -> 40 1101 994 628
 *   "\nBye"            -> 198 3886 68
 * (as one text the same bytes would give 15496 995 198 198 40 ...: the split
 * is visible in the ids) */
Test(tokenize_job, documents_split_shards)
{
    static const uint16_t want[] = {50256, 15496, 995, 628, 50256, 40, 1101, 994, 628, 50256, 198, 3886, 68};
    const size_t N = sizeof want / sizeof want[0]; /* 13 */
    char dir[256], in[1024], prefix[1024];
    make_dir(dir);
    snprintf(in, sizeof in, "%s/in.txt", dir);
    snprintf(prefix, sizeof prefix, "%s/ds", dir);
    tu_write_text(in, "Hello world\n\nI'm here\n\n\nBye");
    const char *inputs[] = {in};
    TokenizeJob job = quiet_job(prefix, inputs, 1);
    job.val_fraction = 0.25; /* V = floor(0.25 * 13 + 0.5) = 3 */
    job.shard_size = 4;
    TokenizeStats st;
    char err[512];
    cr_assert_eq(tokenize_job_run(&job, &st, err, sizeof err), 0, "%s", err);
    cr_assert_eq(st.docs, 3);
    cr_assert_eq(st.tokens, N);
    cr_assert_eq(st.val_tokens, 3);
    cr_assert_eq(st.train_tokens, 10);
    cr_assert_eq(st.val_shards, 1);
    cr_assert_eq(st.train_shards, 3); /* 4 + 4 + 2 */
    cr_assert_eq(count_glob(dir, "ds_val_*.bin"), 1);
    cr_assert_eq(count_glob(dir, "ds_train_*.bin"), 3);
    cr_assert_eq(count_glob(dir, "*tmp*"), 0, "no temporary file left");
    /* val then train, in order, is the whole stream */
    static const char *const names[] = {"val_000000", "train_000000", "train_000001", "train_000002"};
    static const size_t sizes[] = {3, 4, 4, 2};
    size_t at = 0;
    for (int s = 0; s < 4; s++) {
        char path[2048];
        snprintf(path, sizeof path, "%s_%s.bin", prefix, names[s]);
        size_t n;
        uint16_t *t = read_shard(path, &n);
        cr_assert_eq(n, sizes[s], "%s: %zu tokens", path, n);
        for (size_t i = 0; i < n; i++, at++)
            cr_assert_eq(t[i], want[at], "%s token %zu: %u, expected %u", path, i, t[i], want[at]);
        free(t);
    }

    /* Whole files as documents, two inputs: EOT before each. A rerun on the
     * prefix is refused, before reading anything; with overwrite it
     * replaces the dataset, whose 5 files (4 shards and the manifest) move
     * into ds.replaced_<time>/, so no stale train_000001 is left. */
    char in2[1024];
    snprintf(in2, sizeof in2, "%s/in2.txt", dir);
    tu_write_text(in2, "Hello world");
    const char *two[] = {in2, in2};
    job.inputs = two;
    job.num_inputs = 2;
    job.split_blank_lines = 0;
    job.val_fraction = 0;
    job.shard_size = 100;
    cr_assert_eq(tokenize_job_run(&job, &st, err, sizeof err), -1);
    cr_assert(strstr(err, "/ds: holds a dataset (ds.manifest.json, id ") &&
              strstr(err, "and 4 shards), ") && strstr(err, "--overwrite"), "%s", err);
    cr_assert_eq(count_glob(dir, "ds_train_*.bin"), 3, "a refused run changed the dataset");
    job.overwrite = 1;
    cr_assert_eq(tokenize_job_run(&job, &st, err, sizeof err), 0, "%s", err);
    cr_assert_eq(st.val_shards, 0);
    cr_assert_eq(count_glob(dir, "ds_val_*.bin"), 0, "stale val shard left");
    cr_assert_eq(count_glob(dir, "ds_train_*.bin"), 1, "stale train shards left");
    cr_assert_eq(count_glob(dir, "ds.replaced_*/ds_*.bin"), 4, "old shards not moved aside");
    cr_assert_eq(count_glob(dir, "ds.replaced_*/ds.manifest.json"), 1, "old manifest not moved");
    char path[2048];
    snprintf(path, sizeof path, "%s_train_000000.bin", prefix);
    size_t n;
    uint16_t *t = read_shard(path, &n);
    static const uint16_t want2[] = {50256, 15496, 995, 50256, 15496, 995};
    cr_assert_eq(n, 6);
    cr_assert(memcmp(t, want2, sizeof want2) == 0);
    free(t);
    remove_dir(dir);
}

/* llm.c's dev/data/tinyshakespeare.py reports 32,768 val and 305,260 train
 * tokens for the same documents (blank-line split, first 32,768 tokens to
 * val); the ids are checked against B at the start, around the cut, and at
 * the end. */
Test(tokenize_job, tinyshakespeare_like_llmc)
{
    char dir[256], prefix[1024];
    make_dir(dir);
    snprintf(prefix, sizeof prefix, "%s/tinyshakespeare", dir);
    const char *inputs[] = {SHAKESPEARE};
    TokenizeJob job = quiet_job(prefix, inputs, 1);
    job.val_tokens = 32768;
    TokenizeStats st;
    char err[512];
    cr_assert_eq(tokenize_job_run(&job, &st, err, sizeof err), 0, "%s", err);
    cr_assert_eq(st.docs, 7222);
    cr_assert_eq(st.val_tokens, 32768);
    cr_assert_eq(st.train_tokens, 305260);
    char path[2048];
    size_t nv, nt;
    snprintf(path, sizeof path, "%s_val_000000.bin", prefix);
    uint16_t *val = read_shard(path, &nv);
    snprintf(path, sizeof path, "%s_train_000000.bin", prefix);
    uint16_t *train = read_shard(path, &nt);
    cr_assert_eq(nv, 32768);
    cr_assert_eq(nt, 305260);
    static const uint16_t head[] = {50256, 5962, 22307, 25, 198, 8421, 356, 5120, 597, 2252, 11, 3285};
    static const uint16_t cut[] = {50256, 44879, 40, 3535, 1565, 2937, 25, 198, /* | */ 9203, 262,
                                   39418, 13, 628, 50256, 22747, 49208};
    static const uint16_t tail[] = {198, 1199, 2915, 14210, 1242, 23137, 13, 198};
    cr_assert(memcmp(val, head, sizeof head) == 0);
    cr_assert(memcmp(val + nv - 8, cut, 16) == 0);
    cr_assert(memcmp(train, cut + 8, 16) == 0);
    cr_assert(memcmp(train + nt - 8, tail, sizeof tail) == 0);
    size_t eots = 0;
    for (size_t i = 0; i < nv; i++) eots += val[i] == 50256;
    for (size_t i = 0; i < nt; i++) eots += train[i] == 50256;
    cr_assert_eq(eots, 7222, "one EOT per document");
    free(val);
    free(train);
    remove_dir(dir);
}

/* Run ./tokenize with args (a shell fragment) in dir; returns the exit
 * status and the stderr text in msg. */
static int run_cli(const char *dir, const char *args, char *msg, size_t msg_len)
{
    cr_assert_eq(access("./tokenize", X_OK), 0, "./tokenize not built (make tokenize)");
    char cmd[4096], errpath[1024];
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", dir);
    snprintf(cmd, sizeof cmd, "./tokenize %s 2>'%s' >/dev/null", args, errpath);
    int status = system(cmd);
    FILE *f = fopen(errpath, "r");
    size_t n = f ? fread(msg, 1, msg_len - 1, f) : 0;
    msg[n] = 0;
    if (f) fclose(f);
    unlink(errpath);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

Test(tokenize_cli, stdin_and_help)
{
    char dir[256], args[2048], msg[16384];
    make_dir(dir);
    snprintf(args, sizeof args, "--out %s/s --val-fraction 0 < /dev/null", dir);
    cr_assert_eq(run_cli(dir, args, msg, sizeof msg), 0, "%s", msg);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "printf 'Hello world' | ./tokenize --quiet --overwrite --val-fraction 0 --out %s/s -", dir);
    cr_assert_eq(system(cmd), 0);
    char path[1024];
    snprintf(path, sizeof path, "%s/s_train_000000.bin", dir);
    size_t n;
    uint16_t *t = read_shard(path, &n);
    cr_assert(n == 3 && t[0] == 50256 && t[1] == 15496 && t[2] == 995);
    free(t);
    /* --help names every flag with its default */
    /* read to the end: closing the pipe early (--help is longer than msg)
     * would make a slow tokenize's last writes fail, and its exit with them */
    FILE *p = popen("./tokenize --help", "r");
    size_t len = fread(msg, 1, sizeof msg - 1, p);
    msg[len] = 0;
    char rest[4096];
    while (fread(rest, 1, sizeof rest, p) > 0) {
    }
    cr_assert_eq(pclose(p), 0);
    static const char *const flags[] = {"--out", "--val-fraction", "--val-tokens", "--shard-size",
                                        "--split-blank-lines", "--encoder", "--vocab", "--quiet",
                                        "--overwrite",
                                        "default 0.1", "default 100M", "TRAIN_GPT_GPT2_DIR"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        cr_assert(strstr(msg, flags[i]), "--help lacks %s", flags[i]);
    remove_dir(dir);
}

Test(tokenize_cli, bad_command_lines)
{
    char dir[256], msg[1024];
    make_dir(dir);
    static const struct {
        const char *args, *needle;
    } bad[] = {
        {"--out x --bogus", "--bogus"},
        {"--out x --shard-size 0", "1 .. 2147483647"},
        {"--out x --shard-size 12Q", "--shard-size"},
        {"--out x --val-fraction 1", "0 <= F < 1"},
        {"--out x --val-fraction abc", "--val-fraction"},
        {"--out x --val-tokens -5", "--val-tokens"},
        {"--out", "--out needs a value"},
        {"in.txt", "--out PREFIX is required"},
        /* getopt_long's prefixes: refused, as ./train_gpt refuses them */
        {"--ou x in.txt", "unknown option '--ou' (flags are not abbreviated: --out?)"},
        {"--out x --split-blank-line in.txt", "not abbreviated: --split-blank-lines?"},
        {"--out x --val-frac=0.5 in.txt", "unknown option '--val-frac' (flags are not"},
        {"--out x --qui in.txt", "--quiet?"},
        /* glob characters: train_gpt's glob would not match the names back */
        {"--out 'd[1]' in.txt", "--out d[1]: '[' is a glob character"},
        {"--out 'x/*' in.txt", "--out x/*: '*' is a glob character"},
        {"--out 'x?' in.txt", "--out x?: '?' is a glob character"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = run_cli(dir, bad[i].args, msg, sizeof msg);
        cr_assert_eq(rc, 2, "'%s': exit %d", bad[i].args, rc);
        cr_assert(strstr(msg, bad[i].needle), "'%s': message %s", bad[i].args, msg);
        cr_assert_eq(count_lines(msg), 1, "'%s': one line, got: %s", bad[i].args, msg);
    }
    remove_dir(dir);
}

/* --val-tokens above the text's token count (3 here: EOT, "Hello", " world")
 * is a usage error once the text is read: exit 2, both numbers named,
 * nothing written; exactly the count is accepted (all val). */
Test(tokenize_cli, val_tokens_above_the_text_is_refused)
{
    char dir[256], args[2048], msg[2048];
    make_dir(dir);
    snprintf(args, sizeof args, "--quiet --out %s/s --val-tokens 5 - < %s/in.txt", dir, dir);
    char in[1024];
    snprintf(in, sizeof in, "%s/in.txt", dir);
    tu_write_text(in, "Hello world");
    int rc = run_cli(dir, args, msg, sizeof msg);
    cr_expect_eq(rc, 2, "exit %d: %s", rc, msg);
    cr_expect(strstr(msg, "--val-tokens 5: more than the 3 tokens of the input"), "message: %s",
              msg);
    cr_expect_eq(count_lines(msg), 1, "one line, got: %s", msg);
    cr_expect_eq(count_glob(dir, "s_*") + count_glob(dir, "s.*"), 0,
                 "a file of the refused run was left");
    snprintf(args, sizeof args, "--quiet --out %s/s --val-tokens 3 - < %s/in.txt", dir, dir);
    rc = run_cli(dir, args, msg, sizeof msg);
    cr_expect_eq(rc, 0, "exit %d: %s", rc, msg);
    cr_expect_eq(count_glob(dir, "s_val_000000.bin"), 1);
    cr_expect_eq(count_glob(dir, "s_train_*.bin"), 0);
    remove_dir(dir);
}

/* Each failure: exit 1, a message naming the file or folder and the fault,
 * and no shard (nor temporary file) of the run left in the folder. */
Test(tokenize_cli, runtime_errors_leave_no_shard)
{
    char dir[256], args[2048], msg[2048], corrupt[1024], notdir[1024];
    make_dir(dir);
    struct {
        char args[2048];
        const char *needle;
    } cases[6];
    int nc = 0;
    /* missing vocab file */
    snprintf(cases[nc].args, sizeof args, "--out %s/o --vocab %s/none.bpe %s", dir, dir, SHAKESPEARE);
    cases[nc++].needle = "none.bpe: cannot open";
    /* corrupt vocab: one byte changed */
    snprintf(corrupt, sizeof corrupt, "%s/vocab.bpe", dir);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "sed '3s/a/b/' '%s' > %s", TU_VOCAB, corrupt);
    cr_assert_eq(system(cmd), 0);
    snprintf(cases[nc].args, sizeof args, "--out %s/o --vocab %s %s", dir, corrupt, SHAKESPEARE);
    cases[nc++].needle = "vocab.bpe: not GPT-2's file: sha256";
    /* unreadable input (and the one before it fine: nothing is written) */
    snprintf(cases[nc].args, sizeof args, "--out %s/o %s %s/missing.txt", dir, SHAKESPEARE, dir);
    cases[nc++].needle = "missing.txt: cannot open: No such file";
    /* output folder missing, or a file */
    snprintf(cases[nc].args, sizeof args, "--out %s/nodir/o %s", dir, SHAKESPEARE);
    cases[nc++].needle = "nodir: output folder: No such file";
    snprintf(notdir, sizeof notdir, "%s/file", dir);
    tu_write_text(notdir, "x");
    snprintf(cases[nc].args, sizeof args, "--out %s/o %s", notdir, SHAKESPEARE);
    cases[nc++].needle = "file: output folder: not a folder";
    /* a folder nobody may create files in, root included */
    snprintf(cases[nc].args, sizeof args, "--out /proc/self/o %s", SHAKESPEARE);
    cases[nc++].needle = "/proc/self: cannot write in the output folder";
    for (int i = 0; i < nc; i++) {
        int rc = run_cli(dir, cases[i].args, msg, sizeof msg);
        cr_assert_eq(rc, 1, "'%s': exit %d (%s)", cases[i].args, rc, msg);
        cr_assert(strstr(msg, cases[i].needle), "'%s': message '%s' lacks '%s'", cases[i].args, msg,
                  cases[i].needle);
        cr_assert_eq(count_glob(dir, "o_*"), 0, "'%s' left a shard", cases[i].args);
        cr_assert_eq(count_glob(dir, "*tmp*"), 0, "'%s' left a temporary file", cases[i].args);
    }
    /* A shard that cannot be written after others were: the train shard's
     * name is taken by a folder, so the val shard already written goes too. */
    char blocker[1024];
    snprintf(blocker, sizeof blocker, "%s/o_train_000000.bin", dir);
    cr_assert_eq(mkdir(blocker, 0755), 0);
    snprintf(args, sizeof args, "--out %s/o %s", dir, SHAKESPEARE);
    int rc = run_cli(dir, args, msg, sizeof msg);
    cr_assert_eq(rc, 1, "exit %d (%s)", rc, msg);
    cr_assert(strstr(msg, "o_train_000000.bin: cannot rename into place"), "message: %s", msg);
    cr_assert_eq(count_glob(dir, "o_val_*"), 0, "val shard of the failed run left");
    cr_assert_eq(count_glob(dir, "*tmp*"), 0, "temporary file left");
    remove_dir(dir);
}
