/* tests/unit/data/test_jsonl_whole.c — every document of ./tokenize --jsonl
 * kept whole: a string is taken with its length, so "a\u0000b" is three
 * bytes and three tokens, and what is not valid JSON inside a string (a
 * raw control character, a lone UTF-16 surrogate) is refused with
 * FILE:LINE. Before, the string was read as a NUL-terminated C string:
 * "a\u0000b" and a raw NUL both gave the one token "a", exit 0; "\ud800"
 * was "not a JSON object".
 *
 * The expected ids come from GPT-2's byte-level mapping, not from this
 * tokenizer: bytes 33..126 are ids 0..93 and 161..172, 174..255 are
 * 94..187, so the first unprintable byte, 0, is the character U+0100 and
 * id 188 in encoder.json, byte 1 is 189; "a" is 64 and "b" 65 (checked
 * against encoder.json below). GPT-2's pre-tokenizer splits "a\0b" into
 * "a", "\0", "b": a letter run, a run of neither space, letter nor digit,
 * a letter run. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/jsonl_text.h"
#include "data/shard.h"
#include "data/tokenizer.h"
#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

#define EOT 50256
#define BYTES(lit) lit, sizeof(lit) - 1 /* a literal with its NULs */

/* ./tokenize --jsonl on `bytes`; its exit status, the output into *out. */
static int tokenize_jsonl(const char *d, const char *bytes, size_t n, char **out)
{
    char cmd[4096];
    tu_write_file(tu_path(d, "x.jsonl"), bytes, n);
    snprintf(cmd, sizeof cmd, "%s --quiet --val-fraction 0 --jsonl --out %s/o %s/x.jsonl",
             tc_tokenize_bin(), d, d);
    return tu_run_output(cmd, out, out);
}

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

/* encoder.json holds "\u0100": 188 and "\u0101": 189 (the characters of
 * bytes 0 and 1), "a": 64, "b": 65: the literal ids below are GPT-2's. */
Test(jsonl_whole, byte_ids_are_encoder_json_s, .timeout = 30)
{
    char enc[4096], voc[4096], from[8192], err[8192];
    cr_assert_eq(tokenizer_find_files(enc, voc, sizeof enc, from, sizeof from, err, sizeof err),
                 0, "%s", err);
    size_t len;
    char *json = tu_read_file(enc, &len);
    cr_assert(json);
    const char *want[] = {"\"\\u0100\": 188,", "\"\\u0101\": 189,", "\"a\": 64,", "\"b\": 65,"};
    for (int i = 0; i < 4; i++) cr_expect(strstr(json, want[i]), "encoder.json lacks %s", want[i]);
    free(json);
}

/* "a\u0000b" is EOT a NUL b; "\u0000" alone and "\u0001" are one byte's
 * token each; NULs among other fields' strings change nothing. */
Test(jsonl_whole, escaped_nul_is_a_byte_of_the_document, .timeout = 60)
{
    char *d = tu_tempdir(), *out;
    const char *lines = "{\"text\":\"a\\u0000b\"}\n"
                        "{\"id\":\"x\\u0000y\",\"text\":\"\\u0000\"}\n"
                        "{\"text\":\"\\u0001\"}\n";
    int rc = tokenize_jsonl(d, lines, strlen(lines), &out);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    size_t n;
    uint16_t *t = shard_tokens(tu_path(d, "o_train_000000.bin"), &n);
    const uint16_t want[] = {EOT, 64, 188, 65, EOT, 188, EOT, 189};
    cr_assert_eq(n, sizeof want / sizeof *want, "%zu tokens, want %zu", n,
                 sizeof want / sizeof *want);
    for (size_t i = 0; i < n; i++) cr_expect_eq(t[i], want[i], "token %zu: %d, want %d", i, t[i],
                                                want[i]);
    free(t);
    tu_remove_tree(d);
}

/* Invalid JSON inside a string: exit 1, FILE:LINE and the fault, nothing
 * under the prefix. */
Test(jsonl_whole, raw_controls_and_lone_surrogates_refused, .timeout = 60)
{
    char *d = tu_tempdir(), *out;
    static const struct {
        const char *bytes;
        size_t n;
        const char *want;
    } bad[] = {
        {BYTES("{\"text\":\"a\0b\"}\n"), "x.jsonl:1: a raw control character in a string"},
        {BYTES("{\"text\":\"ok\"}\n{\"text\":\"a\tb\"}\n"),
         "x.jsonl:2: a raw control character in a string"},
        {BYTES("{\"text\":\"ok\",\"id\":\"\x1f\"}\n"), "x.jsonl:1: a raw control character in a "
         "string"},
        {BYTES("{\"text\":\"\\ud800\"}\n"), "x.jsonl:1: a lone surrogate \\ud800 in a string"},
        {BYTES("{\"text\":\"\\ud800x\"}\n"), "x.jsonl:1: a lone surrogate \\ud800 in a string"},
        {BYTES("{\"text\":\"\\udc00\\ud800\"}\n"), "x.jsonl:1: a lone surrogate \\udc00"},
        {BYTES("\n{\"text\":\"\\ud83d\\u0041\"}\n"), "x.jsonl:2: a lone surrogate \\ud83d"},
        {BYTES("{\"text\":\"\\x\"}\n"), "x.jsonl:1: a bad escape \\x in a string"},
        {BYTES("{\"text\":\"\\u12\"}\n"), "x.jsonl:1: a bad \\u escape in a string"},
        {BYTES("{\"text\":\"a\"}\0\n"), "x.jsonl:1: a raw control character outside a string"},
    };
    char cmd[4096];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = tokenize_jsonl(d, bad[i].bytes, bad[i].n, &out);
        cr_expect_eq(rc, 1, "case %zu: exit %d: %s", i, rc, out);
        cr_expect(out && strstr(out, bad[i].want), "case %zu: %s", i, out);
        free(out);
        snprintf(cmd, sizeof cmd, "ls %s | grep -c '^o' ", d);
        tu_run_output(cmd, &out, NULL);
        cr_expect(out && atoi(out) == 0, "case %zu left files under the prefix", i);
        free(out);
    }
    tu_remove_tree(d);
}

/* The decoder against RFC 8259's escapes, byte for byte. */
Test(jsonl_whole, decoder_follows_rfc_8259, .timeout = 10)
{
    static const struct {
        const char *raw; /* a string's body and its closing quote */
        const char *want;
        size_t n;
    } ok[] = {
        {"\"", "", 0},
        {"a\\u0000b\"", "a\0b", 3},
        {"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\/\b\f\n\r\t", 8},
        {"\\u00e9\\u20AC\"", "\xc3\xa9\xe2\x82\xac", 5},
        {"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80", 4},
        {"\\udbff\\udfff\"", "\xf4\x8f\xbf\xbf", 4},
        {"\xff\xfe raw\"", "\xff\xfe raw", 6}, /* raw bytes pass as they are */
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        char out[64], why[256] = "";
        size_t len = 99, end = 0, n = strlen(ok[i].raw);
        int rc = jsonl_text_decode(ok[i].raw, n, out, &len, &end, why, sizeof why);
        cr_expect_eq(rc, 0, "case %zu: %d %s", i, rc, why);
        cr_expect_eq(end, n, "case %zu: end %zu", i, end);
        cr_expect(len == ok[i].n && memcmp(out, ok[i].want, len) == 0, "case %zu: %zu bytes", i,
                  len);
    }
    char out[16], why[256];
    size_t len, end;
    cr_expect_eq(jsonl_text_decode("abc", 3, out, &len, &end, why, sizeof why), 1);
    cr_expect_eq(jsonl_text_decode("ab\\", 3, out, &len, &end, why, sizeof why), 1);
    cr_expect_eq(jsonl_text_decode("\\ud800\"", 7, out, &len, &end, why, sizeof why), -1);
    cr_expect_eq(jsonl_text_decode("\n\"", 2, out, &len, &end, why, sizeof why), -1);
    /* the member: the first of its name, past nested values and escapes */
    const char *obj = " {\"a\": [1, {\"text\": \"no\"}, \"]}\"], \"t\\u0065xt\" : \"y\\u0000s\", "
                      "\"text\": \"second\"}";
    char *s;
    cr_assert_eq(jsonl_text_member(obj, strlen(obj), "text", &s, &len), 0);
    cr_expect(len == 3 && memcmp(s, "y\0s", 3) == 0, "%zu bytes", len);
    free(s);
    cr_expect_eq(jsonl_text_member("{\"text\": 5}", 11, "text", &s, &len), -1);
    cr_expect_eq(jsonl_text_member("{\"b\": 5}", 8, "text", &s, &len), -1);
    cr_expect_eq(jsonl_text_member("[\"text\"]", 8, "text", &s, &len), -1);
}
