/* tests/unit/data/test_tokenize_jsonl.c — ./tokenize --jsonl: one document per
 * JSON line, from its text field, plain, gzip or standard input. The
 * reference ids are those of tests/unit/data/test_tokenizer.c (OpenAI's
 * encoder.py and gpt-3-encoder, as described there), for texts given here
 * through JSON's escapes: \n and \t, \u00e9-style escapes, and emoji as
 * UTF-16 surrogate pairs (\ud83d\ude00), which cJSON decodes to UTF-8.
 * Each document is preceded by EOT (50256), as each plain-text file is, so
 * the same texts as plain files give the same shard, byte for byte.
 * Before, --jsonl was an unknown option (exit 2). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/shard.h"
#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

/* The texts, as JSON string literals and as their UTF-8 bytes, with the
 * reference ids of test_tokenizer.c's CASES. */
static const struct {
    const char *json, *text;
    int32_t ids[40];
    int n;
} DOCS[] = {
    {"\"Hello world\"", "Hello world", {15496, 995}, 2},
    {"\"a  b   c\\n\\n\\nd \\n e\\t\\tf   \"", "a  b   c\n\n\nd \n e\t\tf   ",
     {64, 220, 275, 220, 220, 269, 628, 198, 67, 220, 198, 304, 197, 197, 69, 220, 220, 220}, 18},
    {"\"na\\u00efve caf\\u00e9 \\u0395\\u03bb\\u03bb\\u03b7\\u03bd\\u03b9\\u03ba\\u03ac "
     "\\u041f\\u0440\\u0438\\u0432\\u0435\\u0442 \\u043c\\u0438\\u0440 \\u65e5\\u672c\\u8a9e "
     "\\u0627\\u0644\\u0639\\u0631\\u0628\\u064a\\u0629\"",
     "na\xc3\xafve caf\xc3\xa9 \xce\x95\xce\xbb\xce\xbb\xce\xb7\xce\xbd\xce\xb9\xce\xba\xce\xac"
     " \xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82 \xd0\xbc\xd0\xb8\xd1\x80 \xe6\x97\xa5"
     "\xe6\x9c\xac\xe8\xaa\x9e \xd8\xa7\xd9\x84\xd8\xb9\xd8\xb1\xd8\xa8\xd9\x8a\xd8\xa9",
     {2616, 38776, 40304, 7377, 243, 39377, 39377, 138, 115, 26180, 29945, 43000, 138, 105,
      12466, 253, 21169, 18849, 38857, 16843, 20375, 12466, 120, 18849, 21169, 10545, 245, 98,
      17312, 105, 45739, 252, 28981, 44690, 26897, 39848, 22654, 45632}, 38},
    {"\"emoji \\ud83d\\ude00\\ud83d\\udc4d\\ud83c\\udffd family \\ud83d\\udc68\\u200d\\ud83d"
     "\\udc69\\u200d\\ud83d\\udc67 flag \\ud83c\\uddeb\\ud83c\\uddf7\"",
     "emoji \xf0\x9f\x98\x80\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd family \xf0\x9f\x91\xa8\xe2\x80"
     "\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7 flag \xf0\x9f\x87\xab\xf0\x9f\x87\xb7",
     {368, 31370, 30325, 222, 41840, 235, 8582, 237, 121, 1641, 50169, 101, 447, 235, 41840,
      102, 447, 235, 41840, 100, 6056, 12520, 229, 104, 8582, 229, 115}, 27},
};
#define NDOCS ((int)(sizeof DOCS / sizeof DOCS[0]))

static uint16_t *shard_tokens(const char *path, size_t *n)
{
    size_t len;
    char *b = tu_read_file(path, &len);
    cr_assert(b && len >= SHARD_HEADER_INTS * 4, "%s: no shard", path);
    *n = (len - SHARD_HEADER_INTS * 4) / 2;
    uint16_t *t = malloc(*n * 2 + 2);
    memcpy(t, b + SHARD_HEADER_INTS * 4, *n * 2);
    free(b);
    return t;
}

static void tokenize_ok(const char *args)
{
    char cmd[8192], *out;
    snprintf(cmd, sizeof cmd, "%s --quiet --val-fraction 0 %s", tc_tokenize_bin(), args);
    int rc = tu_run_output(cmd, &out, &out);
    cr_assert_eq(rc, 0, "%s:\n%s", cmd, out);
    free(out);
}

/* The ids of the reference encoder, document by document; the same shard as
 * the texts as plain files; gzip and standard input the same again; blank
 * lines and other fields ignored; --text-field takes another field. */
Test(tokenize_jsonl, reference_ids_through_json_escapes, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    /* the JSON lines, a blank line and a field before the text among them */
    char jsonl[8192] = "", alt[8192] = "", files[4096] = "";
    for (int i = 0; i < NDOCS; i++) {
        size_t u = strlen(jsonl), v = strlen(alt);
        snprintf(jsonl + u, sizeof jsonl - u, "{\"id\": %d, \"text\": %s}\n%s", i, DOCS[i].json,
                 i == 1 ? "\n" : "");
        snprintf(alt + v, sizeof alt - v, "{\"text\": 1, \"body\": %s}\n", DOCS[i].json);
        char name[32];
        snprintf(name, sizeof name, "doc%d.txt", i);
        tu_write_text(tu_path(d, name), DOCS[i].text);
        size_t w = strlen(files);
        snprintf(files + w, sizeof files - w, " %s/%s", d, name);
    }
    tu_write_text(tu_path(d, "c.jsonl"), jsonl);
    tu_write_text(tu_path(d, "alt.jsonl"), alt);
    snprintf(args, sizeof args, "--jsonl --out %s/j %s/c.jsonl", d, d);
    tokenize_ok(args);
    size_t n;
    uint16_t *t = shard_tokens(tu_path(d, "j_train_000000.bin"), &n);
    size_t at = 0;
    for (int i = 0; i < NDOCS; i++) {
        cr_assert(at < n && t[at] == 50256, "document %d: no EOT before it (token %zu)", i, at);
        at++;
        for (int k = 0; k < DOCS[i].n; k++, at++)
            cr_assert(at < n && t[at] == DOCS[i].ids[k], "document %d token %d: %d, reference %d",
                      i, k, at < n ? t[at] : -1, DOCS[i].ids[k]);
    }
    cr_expect_eq(at, n, "%zu tokens, the reference has %zu", n, at);
    free(t);
    const char *want = tu_path(d, "j_train_000000.bin");
    char wantp[700];
    snprintf(wantp, sizeof wantp, "%s", want);
    /* the same texts as plain-text files: one document per file */
    snprintf(args, sizeof args, "--out %s/p %s", d, files);
    tokenize_ok(args);
    cr_expect(tc_files_equal(tu_path(d, "p_train_000000.bin"), wantp), "plain text differs");
    /* gzip, by file and on standard input */
    snprintf(args, sizeof args, "--jsonl --out %s/g %s/c.jsonl.gz", d, d);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "gzip -k %s/c.jsonl", d);
    cr_assert_eq(tu_run(cmd), 0);
    tokenize_ok(args);
    cr_expect(tc_files_equal(tu_path(d, "g_train_000000.bin"), wantp), "gzip differs");
    snprintf(args, sizeof args, "--jsonl --out %s/s - < %s/c.jsonl.gz", d, d);
    tokenize_ok(args);
    cr_expect(tc_files_equal(tu_path(d, "s_train_000000.bin"), wantp), "gzip on stdin differs");
    snprintf(args, sizeof args, "--jsonl --text-field body --out %s/b %s/alt.jsonl", d, d);
    tokenize_ok(args);
    cr_expect(tc_files_equal(tu_path(d, "b_train_000000.bin"), wantp), "--text-field differs");
    tu_remove_tree(d);
}

/* A line that is no JSON object, or lacks the field, or holds no string
 * there: exit 1, FILE:LINE and the fault, nothing written under the
 * prefix. --text-field without --jsonl, or --jsonl with a flag of plain
 * text's: exit 2. */
Test(tokenize_jsonl, bad_lines_name_the_file_and_line, .timeout = 60)
{
    char *d = tu_tempdir(), cmd[4096], *out;
    struct {
        const char *text, *want;
    } bad[] = {
        {"{\"text\": \"a\"}\n{\"text\": \"b\"\n", "x.jsonl:2: not a JSON object"},
        {"{\"text\": \"a\"}\n\n[1]\n", "x.jsonl:3: not a JSON object"},
        {"{\"text\": \"a\"}\n{\"txt\": \"b\"}\n", "x.jsonl:2: no field \"text\""},
        {"{\"text\": 5}\n", "x.jsonl:1: a non-string field \"text\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tu_write_text(tu_path(d, "x.jsonl"), bad[i].text);
        snprintf(cmd, sizeof cmd, "%s --quiet --jsonl --out %s/o %s/x.jsonl", tc_tokenize_bin(),
                 d, d);
        int rc = tu_run_output(cmd, &out, &out);
        cr_expect_eq(rc, 1, "case %zu: exit %d", i, rc);
        cr_expect(out && strstr(out, bad[i].want), "case %zu: %s", i, out);
        free(out);
        snprintf(cmd, sizeof cmd, "ls %s | grep -c '^o' ", d);
        tu_run_output(cmd, &out, NULL);
        cr_expect(out && atoi(out) == 0, "case %zu left files under the prefix", i);
        free(out);
    }
    const char *usage[][2] = {
        {"--text-field body", "--text-field names the field of --jsonl's lines"},
        {"--jsonl --split-blank-lines", "--jsonl: each line is a document already"},
    };
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "%s %s --out %s/o %s/x.jsonl", tc_tokenize_bin(), usage[i][0], d,
                 d);
        int rc = tu_run_output(cmd, &out, &out);
        cr_expect_eq(rc, 2, "%s: exit %d", usage[i][0], rc);
        cr_expect(out && strstr(out, usage[i][1]), "%s", out);
        free(out);
    }
    tu_remove_tree(d);
}
