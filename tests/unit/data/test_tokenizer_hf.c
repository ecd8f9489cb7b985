/* tests/unit/data/test_tokenizer_hf.c — data/tokenizer_hf.c on small
 * tokenizer.json files made here: both merge forms, ignore_merges, added
 * tokens, and every refused feature named (TOKENIZER_UNSUPPORTED; exit 3
 * from ./tokenize --print-ids).
 *
 * The vocabulary: the 256 bytes (id = the byte, spelled in ByteLevel's
 * alphabet), "ab" 256, "abc" 257, "bc" 258, "abcab" 259; merges "a b" (rank 0),
 * "ab c" (1), "b c" (2). BPE of "abcab" by those ranks is [257 "abc", 256
 * "ab"]; with ignore_merges the whole piece is 259. Expected ids worked out
 * by hand from those rules (Hugging Face's BPE: lowest rank first). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/tokenizer.h"
#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

/* GPT-2's bytes_to_unicode: the code point that spells byte b. */
static unsigned spell(unsigned b)
{
    int printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
    if (printable) return b;
    unsigned n = 0;
    for (unsigned c = 0; c < b; c++)
        if (!((c >= 0x21 && c <= 0x7e) || (c >= 0xa1 && c <= 0xac) || c >= 0xae)) n++;
    return 0x100 + n;
}

typedef struct {
    const char *normalizer, *pre_tokenizer, *model_extra, *decoder, *added;
    int array_merges;
} Json;

static const char LLAMA_PRE[] =
    "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":"
    "\"\\\\p{L}+|\\\\s+|[^\\\\s\\\\p{L}]+\"},\"behavior\":\"Isolated\",\"invert\":false},"
    "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":false}]}";

static char *make_json(const Json *j)
{
    size_t cap = 1 << 16, k = 0;
    char *s = malloc(cap);
    k += (size_t)snprintf(s + k, cap - k,
                          "{\"version\":\"1.0\",\"added_tokens\":[%s],\"normalizer\":%s,"
                          "\"pre_tokenizer\":%s,\"post_processor\":null,\"decoder\":%s,"
                          "\"model\":{\"type\":\"BPE\"%s,\"vocab\":{",
                          j->added ? j->added : "", j->normalizer ? j->normalizer : "null",
                          j->pre_tokenizer ? j->pre_tokenizer
                                           : "{\"type\":\"ByteLevel\",\"add_prefix_space\":false}",
                          j->decoder ? j->decoder : "{\"type\":\"ByteLevel\"}",
                          j->model_extra ? j->model_extra : "");
    for (unsigned b = 0; b < 256; b++)
        k += (size_t)snprintf(s + k, cap - k, "\"\\u%04x\":%u,", spell(b), b);
    k += (size_t)snprintf(s + k, cap - k, "\"ab\":256,\"abc\":257,\"bc\":258,\"abcab\":259},"
                          "\"merges\":%s}}",
                          j->array_merges ? "[[\"a\",\"b\"],[\"ab\",\"c\"],[\"b\",\"c\"]]"
                                          : "[\"a b\",\"ab c\",\"b c\"]");
    return s;
}

static int load_json(Tokenizer *tk, const Json *j, char *err, size_t err_len, char **dir_out)
{
    char *dir = tu_tempdir(), *s = make_json(j);
    const char *path = tu_path(dir, "tokenizer.json");
    tu_write_text(path, s);
    free(s);
    int rc = tokenizer_load_hf(tk, path, 0, err, err_len);
    if (dir_out) *dir_out = dir;
    else tu_remove_tree(dir);
    return rc;
}

static void expect_ids(Tokenizer *tk, const char *text, const int32_t *want, size_t n)
{
    char err[512];
    TokenIds ids = {0};
    cr_assert_eq(tokenizer_encode(tk, (const uint8_t *)text, strlen(text), &ids, err, sizeof err), 0);
    cr_assert_eq(ids.len, n, "\"%s\": %zu ids, expected %zu", text, ids.len, n);
    for (size_t i = 0; i < n; i++) cr_assert_eq(ids.data[i], want[i], "\"%s\" id %zu", text, i);
    free(ids.data);
}

Test(tokenizer_hf, merges_both_forms)
{
    for (int arr = 0; arr < 2; arr++) {
        Tokenizer tk;
        char err[1024];
        Json j = {.array_merges = arr};
        cr_assert_eq(load_json(&tk, &j, err, sizeof err, NULL), 0, "%s", err);
        cr_assert_eq(tk.vocab_size, 260);
        cr_assert_eq(tk.doc_id, -1, "no document token among no added tokens");
        expect_ids(&tk, "abcab", (int32_t[]){257, 256}, 2);
        expect_ids(&tk, "xbc ab", (int32_t[]){'x', 258, ' ', 256}, 4); /* pieces "xbc", " ab" */
        tokenizer_free(&tk);
    }
}

Test(tokenizer_hf, ignore_merges_and_split)
{
    Tokenizer tk;
    char err[1024];
    Json j = {.pre_tokenizer = LLAMA_PRE, .model_extra = ",\"ignore_merges\":true"};
    cr_assert_eq(load_json(&tk, &j, err, sizeof err, NULL), 0, "%s", err);
    expect_ids(&tk, "abcab abcabc", (int32_t[]){259, ' ', 257, 257}, 4);
    tokenizer_free(&tk);
}

Test(tokenizer_hf, added_tokens)
{
    Tokenizer tk;
    char err[1024];
    Json j = {.added = "{\"id\":260,\"content\":\"<|endoftext|>\",\"special\":true},"
                       "{\"id\":261,\"content\":\"[x]\",\"special\":false}"};
    cr_assert_eq(load_json(&tk, &j, err, sizeof err, NULL), 0, "%s", err);
    cr_assert_eq(tk.vocab_size, 262);
    cr_assert_eq(tk.doc_id, 260);
    /* the non-special one always; the special one is plain text */
    expect_ids(&tk, "ab[x]<|", (int32_t[]){256, 261, '<', '|'}, 4);
    size_t n;
    const uint8_t *p = tokenizer_token_bytes(&tk, 260, &n);
    cr_assert(p && n == 13 && memcmp(p, "<|endoftext|>", 13) == 0);
    tokenizer_free(&tk);
}

typedef struct {
    Json j;
    const char *named;
} Refusal;

Test(tokenizer_hf, unsupported_features_named)
{
    static const Refusal cases[] = {
        {{.normalizer = "{\"type\":\"NFKC\"}"}, "normalizer \"NFKC\""},
        {{.normalizer = "{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFC\"},"
                        "{\"type\":\"Lowercase\"}]}"},
         "normalizer \"Lowercase\""},
        {{.normalizer = "{\"type\":\"Sequence\",\"normalizers\":[]}"}, "normalizer \"Sequence\""},
        {{.pre_tokenizer = "{\"type\":\"Metaspace\"}"}, "pre_tokenizer type \"Metaspace\""},
        {{.pre_tokenizer = "{\"type\":\"ByteLevel\",\"add_prefix_space\":true}"},
         "add_prefix_space"},
        {{.pre_tokenizer = "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\","
                           "\"pattern\":{\"Regex\":\"a\"},\"behavior\":\"Removed\"},"
                           "{\"type\":\"ByteLevel\",\"use_regex\":false}]}"},
         "Split behavior \"Removed\""},
        {{.model_extra = ",\"byte_fallback\":true"}, "byte_fallback"},
        {{.model_extra = ",\"dropout\":0.1"}, "dropout"},
        {{.model_extra = ",\"continuing_subword_prefix\":\"##\""}, "continuing_subword_prefix"},
        {{.decoder = "{\"type\":\"Metaspace\"}"}, "decoder \"Metaspace\""},
        {{.added = "{\"id\":260,\"content\":\"<s>\",\"special\":true,\"lstrip\":true}"}, "lstrip"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        Tokenizer tk;
        char err[1024] = "";
        int rc = load_json(&tk, &cases[i].j, err, sizeof err, NULL);
        cr_assert_eq(rc, TOKENIZER_UNSUPPORTED, "case %zu: rc %d: %s", i, rc, err);
        cr_assert(strstr(err, cases[i].named) && strstr(err, "not supported"),
                  "case %zu: \"%s\" does not name %s", i, err, cases[i].named);
    }
    /* NFC alone or as the only member of a Sequence is accepted */
    static const char *const nfc[] = {
        "{\"type\":\"NFC\"}", "{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFC\"}]}"};
    for (int i = 0; i < 2; i++) {
        Tokenizer tk;
        char err[1024] = "";
        Json j = {.normalizer = nfc[i]};
        cr_assert_eq(load_json(&tk, &j, err, sizeof err, NULL), 0, "%s: %s", nfc[i], err);
        cr_assert_eq(tk.nfc, 1, "%s", nfc[i]);
        tokenizer_free(&tk);
    }
    /* the model type: WordPiece */
    Tokenizer tk;
    char err[1024] = "", *dir;
    Json j = {.model_extra = ""};
    char *s = make_json(&j);
    char *t = strstr(s, "\"BPE\"");
    memcpy(t, "\"WP\" ", 5);
    dir = tu_tempdir();
    const char *path = tu_path(dir, "tokenizer.json");
    tu_write_text(path, s);
    free(s);
    cr_assert_eq(tokenizer_load_hf(&tk, path, 0, err, sizeof err), TOKENIZER_UNSUPPORTED, "%s", err);
    cr_assert(strstr(err, "model type \"WP\""), "%s", err);
    /* ./tokenize --print-ids exits 3 and names it */
    char cmd[8192], *out = NULL;
    snprintf(cmd, sizeof cmd, "%s --print-ids --tokenizer '%s' /dev/null", tc_tokenize_bin(), path);
    int rc = tu_run_output(cmd, &out, &out);
    cr_assert_eq(rc, 3, "exit %d: %s", rc, out);
    cr_assert(strstr(out, "model type \"WP\" is not supported"), "%s", out);
    free(out);
    tu_remove_tree(dir);
}
