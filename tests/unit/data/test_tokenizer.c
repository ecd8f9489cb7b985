/* tests/unit/data/test_tokenizer.c — data/tokenizer: ids against the reference encoders,
 * the tinyshakespeare count, byte round trips, chunked encoding, load errors.
 *
 * How the expected ids were obtained (on the development machine, in /tmp,
 * nothing of it committed):
 *
 *  A. gpt-3-encoder 1.1.4 (npm; `cd /tmp && npm install gpt-3-encoder`), with
 *     node v20.20.2, one line per case:
 *       const { encode } = require('/tmp/node_modules/gpt-3-encoder');
 *       console.log(encode(Buffer.from(HEX, 'hex').toString('utf8')).join(' '));
 *
 *  B. OpenAI's gpt-2 src/encoder.py, transcribed (bytes_to_unicode,
 *     get_pairs, Encoder.bpe, the pattern, bpe_ranks from vocab.bpe
 *     split('\n')[1:-1]) and run with Debian's /usr/bin/python3 3.11.2 and
 *     python3-regex 0.1.20221031 (`apt-get install python3-regex`), on
 *     bytes.fromhex(HEX). To take any bytes, the text is
 *     data.decode('utf-8', 'surrogateescape') and each piece's bytes
 *     piece.encode('utf-8', 'surrogateescape'); on valid UTF-8 that is
 *     exactly encoder.py's Encoder.encode(text).
 *
 * The two agree on every valid-UTF-8 case below except "a\x85b \ufeffc ..."
 * (JavaScript's \s lacks U+0085 and has U+FEFF; Python's regex, like
 * tiktoken's Rust regex, uses Unicode's White_Space): we follow B, GPT-2's
 * own encoder. On invalid UTF-8, A cannot be the reference: Node turns each
 * bad sequence into U+FFFD before gpt-3-encoder sees a string, so its ids
 * stand for EF BF BD, and decode() cannot give the input back. encoder.py
 * itself only takes str; B (surrogateescape) is the byte-level extension of
 * it: an ill-formed byte is one non-letter, non-number, non-space character
 * with its own byte. tiktoken's private _encode_bytes is no better reference:
 * it BPEs everything after the first bad byte as one piece. The ids of A for
 * those cases are kept in comments, for comparison. Every case here (and
 * 3,500 random mixes of these characters and of bad bytes, plus 618 long
 * pieces) was checked equal to B before committing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/tokenizer.h"
#include "tests/lib/test_util.h"

#define ENC TU_ENCODER
#define VOCAB TU_VOCAB
#define SHAKESPEARE TU_SHAKESPEARE

typedef struct {
    const char *text;
    size_t len;
    int32_t ids[40];
    int n;
} Case;

#define CASE(s, ...)                                                                          \
    {                                                                                         \
        s, sizeof(s) - 1, {__VA_ARGS__}, sizeof((int32_t[]){__VA_ARGS__}) / sizeof(int32_t) \
    }

static const Case CASES[] = {
    CASE("Hello world", 15496, 995),
    /* contractions */
    CASE("I'm sure you'll see they've done what we'd said: it's John's, isn't it?", 40, 1101,
         1654, 345, 1183, 766, 484, 1053, 1760, 644, 356, 1549, 531, 25, 340, 338, 1757, 338, 11,
         2125, 470, 340, 30),
    /* the contraction alternatives are lower case only */
    CASE("IT'S DON'T 'S 'll' ''d", 2043, 6, 50, 23917, 6, 51, 705, 50, 705, 297, 6, 10148, 67),
    /* runs of spaces, newlines, tabs; trailing spaces */
    CASE("a  b   c\n\n\nd \n e\t\tf   ", 64, 220, 275, 220, 220, 269, 628, 198, 67, 220, 198, 304,
         197, 197, 69, 220, 220, 220),
    CASE("line one\r\nline two\r\n\r\n", 1370, 530, 201, 198, 1370, 734, 201, 198, 201, 198),
    CASE("    def f(x):\n        return x**2  # square\n", 220, 220, 220, 825, 277, 7, 87, 2599,
         198, 220, 220, 220, 220, 220, 220, 220, 1441, 2124, 1174, 17, 220, 1303, 6616, 198),
    /* digits and punctuation */
    CASE("Call 555-0199 at 3:45pm; pi=3.14159, 1,000,000 items (~42%)!", 14134, 44717, 12, 486,
         2079, 379, 513, 25, 2231, 4426, 26, 31028, 28, 18, 13, 1415, 19707, 11, 352, 11, 830, 11,
         830, 3709, 31034, 3682, 4407, 0),
    /* non-ASCII letters: "naïve café Ελληνικά Привет мир 日本語 العربية" */
    CASE("na\xc3\xafve caf\xc3\xa9 \xce\x95\xce\xbb\xce\xbb\xce\xb7\xce\xbd\xce\xb9\xce\xba\xce\xac"
         " \xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82 \xd0\xbc\xd0\xb8\xd1\x80 \xe6\x97\xa5"
         "\xe6\x9c\xac\xe8\xaa\x9e \xd8\xa7\xd9\x84\xd8\xb9\xd8\xb1\xd8\xa8\xd9\x8a\xd8\xa9",
         2616, 38776, 40304, 7377, 243, 39377, 39377, 138, 115, 26180, 29945, 43000, 138, 105,
         12466, 253, 21169, 18849, 38857, 16843, 20375, 12466, 120, 18849, 21169, 10545, 245, 98,
         17312, 105, 45739, 252, 28981, 44690, 26897, 39848, 22654, 45632),
    /* numbers that are not digits: "Ⅻ ½ ٣٤ x²³" */
    CASE("\xe2\x85\xab \xc2\xbd \xd9\xa3\xd9\xa4 x\xc2\xb2\xc2\xb3", 158, 227, 104, 25208, 18923,
         96, 149, 97, 2124, 31185, 126, 111),
    /* emoji: "emoji 😀👍🏽 family 👨‍👩‍👧 flag 🇫🇷" (skin tone, ZWJ, regional indicators) */
    CASE("emoji \xf0\x9f\x98\x80\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd family \xf0\x9f\x91\xa8\xe2\x80"
         "\x8d\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x91\xa7 flag \xf0\x9f\x87\xab\xf0\x9f\x87\xb7",
         368, 31370, 30325, 222, 41840, 235, 8582, 237, 121, 1641, 50169, 101, 447, 235, 41840,
         102, 447, 235, 41840, 100, 6056, 12520, 229, 104, 8582, 229, 115),
    /* the EOT text is ordinary text */
    CASE("<|endoftext|>", 27, 91, 437, 1659, 5239, 91, 29),
    /* invalid UTF-8 (B); A gives 39305 6353 4299 20543 7 20543 2124 */
    CASE("abc\x80\xff"
         "def \xc3( \xe2\x82 x",
         39305, 222, 187, 4299, 6184, 7, 2343, 224, 2124),
    /* invalid UTF-8: bad bytes group with punctuation, a surrogate, a truncated
     * emoji, an overlong NUL, a byte > 0xf4 before 's (B); A gives 0 4210 30
     * 20543 220 48585 20543 220 6353 6 4210 82 */
    CASE("!\x80? \x80 \xed\xa0\x80 \xf0\x9f\x98 \xc0\x80'\xf5s", 0, 222, 30, 220, 222, 220, 169,
         254, 222, 30325, 220, 124, 222, 6, 177, 82),
    /* U+0085 is a space, U+FEFF and U+180E are not (B); A gives 64 126 227 65
     * 220 171 119 123 66 28053 254 236 288 */
    CASE("a\xc2\x85"
         "b \xef\xbb\xbf"
         "c \xe1\xa0\x8e d",
         64, 126, 227, 65, 27332, 119, 123, 66, 28053, 254, 236, 288),
    /* long runs: many merges of equal tokens in one piece */
    CASE(",,,,,,,,,,,,,,,, ----------------============", 47682, 47682, 34400, 25609),
    /* control characters and NUL */
    CASE("\x00\x01\x1f\x7f", 188, 189, 219, 221),
};

static void load(Tokenizer *tk)
{
    char err[512];
    int rc = tokenizer_load(tk, ENC, VOCAB, err, sizeof err);
    cr_assert_eq(rc, 0, "tokenizer_load: %s (tests run from the repo root)", err);
}

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s (tests run from the repo root)", path);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    uint8_t *buf = malloc(*len + 1);
    cr_assert_eq(fread(buf, 1, *len, f), *len);
    fclose(f);
    return buf;
}

Test(tokenizer, reference_ids)
{
    Tokenizer tk;
    load(&tk);
    char err[256];
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        const Case *k = &CASES[c];
        TokenIds ids = {0};
        cr_assert_eq(tokenizer_encode(&tk, (const uint8_t *)k->text, k->len, &ids, err, sizeof err),
                     0, "%s", err);
        cr_assert_eq(ids.len, (size_t)k->n, "case %zu: %zu ids, reference has %d", c, ids.len,
                     k->n);
        for (int i = 0; i < k->n; i++)
            cr_assert_eq(ids.data[i], k->ids[i], "case %zu, id %d: %d, reference %d", c, i,
                         ids.data[i], k->ids[i]);
        TokenText text = {0};
        cr_assert_eq(tokenizer_decode(&tk, ids.data, ids.len, &text, err, sizeof err), 0);
        cr_assert(text.len == k->len && memcmp(text.data, k->text, k->len) == 0,
                  "case %zu does not decode back to its bytes", c);
        free(ids.data);
        free(text.data);
    }
    /* a second pass is served by the piece cache: same ids */
    TokenIds a = {0};
    cr_assert_eq(tokenizer_encode(&tk, (const uint8_t *)CASES[6].text, CASES[6].len, &a, err,
                                  sizeof err), 0);
    cr_assert(a.len == (size_t)CASES[6].n && memcmp(a.data, CASES[6].ids, a.len * 4) == 0);
    free(a.data);
    tokenizer_free(&tk);
}

/* The reference encoders (A and B above, `encode(open(...).read())`) give
 * 338,025 tokens for the whole file as one text. */
Test(tokenizer, tinyshakespeare_count)
{
    Tokenizer tk;
    load(&tk);
    size_t len;
    uint8_t *text = read_file(SHAKESPEARE, &len);
    TokenIds ids = {0};
    char err[256];
    cr_assert_eq(tokenizer_encode(&tk, text, len, &ids, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ids.len, 338025, "%zu tokens, the reference encoder gives 338025", ids.len);
    /* first and last ids, from B */
    static const int32_t head[] = {5962, 22307, 25, 198, 8421, 356, 5120, 597, 2252, 11};
    static const int32_t tail[] = {338, 83, 198, 1199, 2915, 14210, 1242, 23137, 13, 198};
    for (int i = 0; i < 10; i++) {
        cr_assert_eq(ids.data[i], head[i], "id %d", i);
        cr_assert_eq(ids.data[ids.len - 10 + i], tail[i], "id %zu", ids.len - 10 + i);
    }
    TokenText back = {0};
    cr_assert_eq(tokenizer_decode(&tk, ids.data, ids.len, &back, err, sizeof err), 0);
    cr_assert(back.len == len && memcmp(back.data, text, len) == 0, "decode(encode(corpus)) != corpus");

    /* Encoding in chunks cut where tokenizer_safe_cut allows gives the same
     * ids (this is how ./tokenize reads big files). Chunks of ~1000 bytes. */
    TokenIds chunked = {0};
    size_t pos = 0;
    while (pos < len) {
        size_t want = len - pos < 1000 ? len - pos : 1000;
        size_t cut = want == len - pos ? want : tokenizer_safe_cut(&tk, text + pos, want);
        cr_assert_gt(cut, 0, "no safe cut in 1000 bytes of Shakespeare at %zu", pos);
        cr_assert_eq(tokenizer_encode(&tk, text + pos, cut, &chunked, err, sizeof err), 0);
        pos += cut;
    }
    cr_assert_eq(chunked.len, ids.len);
    cr_assert(memcmp(chunked.data, ids.data, ids.len * sizeof(int32_t)) == 0,
              "chunked encoding differs");
    free(text);
    free(ids.data);
    free(chunked.data);
    free(back.data);
    tokenizer_free(&tk);
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* decode(encode(x)) == x for any bytes: 3000 seeded strings, half uniform
 * random bytes, half built from UTF-8 fragments, spaces and bad bytes. */
Test(tokenizer, round_trip_random_bytes)
{
    Tokenizer tk;
    load(&tk);
    static const char *const frag[] = {" ", "\n", "\t", "  ", "\r\n", "'s", "'", "a", "the", "42",
                                       ",", "\xc3\xa9", "\xe6\x97\xa5", "\xf0\x9f\x98\x80",
                                       "\xc2\x85", "\x80", "\xff", "\xe2\x82", "\xed\xa0\x80",
                                       "\xf0\x9f\x98", "\xc0", ""};
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    uint8_t buf[600];
    char err[256];
    for (int t = 0; t < 3000; t++) {
        size_t n = 0, want = xorshift(&seed) % 300;
        if (t % 2 == 0) {
            for (; n < want; n++) buf[n] = (uint8_t)xorshift(&seed);
        } else {
            while (n < want) {
                const char *f = frag[xorshift(&seed) % (sizeof frag / sizeof frag[0] - 1)];
                size_t fl = strlen(f);
                memcpy(buf + n, f, fl);
                n += fl;
            }
        }
        TokenIds ids = {0};
        TokenText text = {0};
        cr_assert_eq(tokenizer_encode(&tk, buf, n, &ids, err, sizeof err), 0, "%s", err);
        cr_assert_leq(ids.len, n);
        cr_assert_eq(tokenizer_decode(&tk, ids.data, ids.len, &text, err, sizeof err), 0);
        cr_assert(text.len == n && (n == 0 || memcmp(text.data, buf, n) == 0),
                  "string %d (%zu bytes) does not round-trip", t, n);
        for (size_t i = 0; i < ids.len; i++)
            cr_assert(ids.data[i] >= 0 && ids.data[i] < GPT2_EOT, "id %d", ids.data[i]);
        free(ids.data);
        free(text.data);
    }
    tokenizer_free(&tk);
}

Test(tokenizer, decode_and_token_bytes)
{
    Tokenizer tk;
    load(&tk);
    size_t len;
    const uint8_t *p = tokenizer_token_bytes(&tk, GPT2_EOT, &len);
    cr_assert(p && len == 13 && memcmp(p, "<|endoftext|>", 13) == 0);
    p = tokenizer_token_bytes(&tk, 220, &len); /* "Ġ" is the space byte */
    cr_assert(p && len == 1 && p[0] == ' ');
    p = tokenizer_token_bytes(&tk, 15496, &len);
    cr_assert(p && len == 5 && memcmp(p, "Hello", 5) == 0);
    cr_assert_null(tokenizer_token_bytes(&tk, GPT2_VOCAB_SIZE, &len));
    cr_assert_null(tokenizer_token_bytes(&tk, -1, &len));
    char err[256];
    TokenText text = {0};
    int32_t bad[] = {15496, 50257};
    cr_assert_eq(tokenizer_decode(&tk, bad, 2, &text, err, sizeof err), -1);
    cr_assert_eq(text.len, 0, "nothing is appended on error");
    cr_assert(strstr(err, "50257") && strstr(err, "position 1"), "message: %s", err);
    tokenizer_free(&tk);
}

/* Copy src to dst, flipping the byte at offset flip (or none when flip < 0)
 * and keeping only keep bytes (all when keep == 0). */
static void copy_file(const char *src, const char *dst, long flip, size_t keep)
{
    size_t len;
    uint8_t *b = read_file(src, &len);
    if (flip >= 0) b[flip] ^= 1;
    FILE *f = fopen(dst, "wb");
    cr_assert_not_null(f);
    fwrite(b, 1, keep ? keep : len, f);
    fclose(f);
    free(b);
}

Test(tokenizer, load_errors)
{
    char *dir = tu_tempdir(), a[1024], b[1024], err[2048];
    Tokenizer tk;
    /* missing file: named, with the reason */
    snprintf(a, sizeof a, "%s/missing.json", dir);
    cr_assert_eq(tokenizer_load(&tk, a, VOCAB, err, sizeof err), -1);
    cr_assert(strstr(err, a) && strstr(err, "No such file"), "message: %s", err);
    /* one flipped byte in encoder.json: sha256 refuses it */
    snprintf(a, sizeof a, "%s/encoder.json", dir);
    copy_file(ENC, a, 1000, 0);
    cr_assert_eq(tokenizer_load(&tk, a, VOCAB, err, sizeof err), -1);
    cr_assert(strstr(err, a) && strstr(err, "sha256") && strstr(err, GPT2_ENCODER_SHA256),
              "message: %s", err);
    /* truncated vocab.bpe */
    snprintf(b, sizeof b, "%s/vocab.bpe", dir);
    copy_file(VOCAB, b, -1, 1000);
    cr_assert_eq(tokenizer_load(&tk, ENC, b, err, sizeof err), -1);
    cr_assert(strstr(err, b) && strstr(err, "sha256"), "message: %s", err);
    /* the files swapped */
    cr_assert_eq(tokenizer_load(&tk, VOCAB, ENC, err, sizeof err), -1);
    cr_assert(strstr(err, VOCAB) && strstr(err, "sha256"), "message: %s", err);
    free(dir); /* removed with the test's other folders (test_util.h) */
}

/* Hermetic: the real files are handed in by the variable, then by a cache
 * of the test's own (no fetch, whatever this machine's cache holds). */
Test(tokenizer, find_files)
{
    char enc[4096], voc[4096], err[8192], from[4400], dir[4096], cache[4200];
    char *xdg = tu_tempdir();
    snprintf(cache, sizeof cache, "%s/train_gpt/gpt2", xdg);
    char cmd[3 * 4200];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp '%s' '%s' '%s/'", cache, ENC, VOCAB, cache);
    cr_assert_eq(tu_run(cmd), 0);
    unsetenv(GPT2_DIR_ENV);
    setenv("XDG_DATA_HOME", xdg, 1);
    setenv("TRAIN_GPT_OFFLINE", "1", 1);
    cr_assert_eq(tokenizer_find_files(enc, voc, sizeof enc, from, sizeof from, err, sizeof err),
                 0, "%s", err);
    cr_assert(strstr(enc, "train_gpt/gpt2/encoder.json") && strstr(voc, "train_gpt/gpt2/vocab.bpe"),
              "%s %s", enc, voc);
    cr_assert(strstr(from, "the cache"), "%s", from);
    /* a set variable is the only place looked at */
    setenv(GPT2_DIR_ENV, "/nonexistent-gpt2", 1);
    cr_assert_eq(tokenizer_find_files(enc, voc, sizeof enc, from, sizeof from, err, sizeof err),
                 -1);
    cr_assert(strstr(err, GPT2_DIR_ENV "=/nonexistent-gpt2"), "message: %s", err);
    snprintf(dir, sizeof dir, "%s", ENC);
    *strrchr(dir, '/') = 0;
    setenv(GPT2_DIR_ENV, dir, 1);
    cr_assert_eq(tokenizer_find_files(enc, voc, sizeof enc, from, sizeof from, err, sizeof err),
                 0, "%s", err);
    cr_assert(strstr(enc, "/encoder.json"), "%s", enc);
    cr_assert(strstr(from, "the environment variable " GPT2_DIR_ENV), "%s", from);
    unsetenv(GPT2_DIR_ENV);
    free(xdg); /* removed with the test's other folders (test_util.h) */
}

/* Safe cuts are exactly the spots between an ASCII letter and an ASCII
 * space ' '; splitting there never changes the ids (checked on a text full
 * of space runs, where cutting anywhere else would). */
Test(tokenizer, safe_cut)
{
    Tokenizer tk;
    load(&tk);
    cr_assert_eq(tokenizer_safe_cut(&tk, (const uint8_t *)"abc", 3), 0);
    cr_assert_eq(tokenizer_safe_cut(&tk, (const uint8_t *)"ab  \n", 5), 2);
    cr_assert_eq(tokenizer_safe_cut(&tk, (const uint8_t *)"a b\n\nc", 6), 1);
    cr_assert_eq(tokenizer_safe_cut(&tk, (const uint8_t *)"a! \n", 4), 0, "not after punctuation");
    cr_assert_eq(tokenizer_safe_cut(&tk, (const uint8_t *)"\xc3\xa9 x", 4), 0, "not after a non-ASCII byte");
    const char *s = "x  \n\n  y!\t\t \n z  \r\n\r\nw's  \n";
    size_t n = strlen(s);
    char err[256];
    TokenIds whole = {0};
    cr_assert_eq(tokenizer_encode(&tk, (const uint8_t *)s, n, &whole, err, sizeof err), 0);
    for (size_t end = 1; end <= n; end++) {
        size_t cut = tokenizer_safe_cut(&tk, (const uint8_t *)s, end);
        if (!cut) continue;
        TokenIds two = {0};
        cr_assert_eq(tokenizer_encode(&tk, (const uint8_t *)s, cut, &two, err, sizeof err), 0);
        cr_assert_eq(tokenizer_encode(&tk, (const uint8_t *)s + cut, n - cut, &two, err, sizeof err), 0);
        cr_assert(two.len == whole.len && memcmp(two.data, whole.data, 4 * whole.len) == 0,
                  "cut at %zu changes the ids", cut);
        free(two.data);
    }
    free(whole.data);
    tokenizer_free(&tk);
}
