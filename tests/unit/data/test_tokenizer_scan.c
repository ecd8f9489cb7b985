/* tests/unit/data/test_tokenizer_scan.c — data/tokenizer_scan.c against
 * PCRE2 running the same pattern (cl100k's = Llama 3's, \s rewritten as
 * tokenizer_build.h does, UTF + UCP, JIT off: the interpreter, an
 * independent matcher): at EVERY byte offset of each text where the
 * scanner decides a piece, PCRE2's match from that offset starts there and
 * ends where the scanner says. Tolerance: none.
 * Texts: tinyshakespeare, tests/data/tokenizer_hostile.txt, and 20,000
 * random strings over ASCII (every byte 0x00-0x7f) mixed with the non-ASCII
 * characters that could change a piece next to ASCII (a letter, U+017F
 * which folds to 's', Kelvin sign, NBSP and U+2000 spaces, U+0085, a
 * superscript and an Arabic digit, a combining accent, a symbol). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "data/tokenizer_build.h"
#include "data/tokenizer_scan.h"
#include "tests/lib/test_util.h"

static const char SOURCE[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
                             "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
                             "\\s+(?!\\S)|\\s+";

typedef struct {
    pcre2_code *re;
    pcre2_match_data *md;
    size_t decided, offsets;
} Ref;

static void ref_open(Ref *r)
{
    char *pat = NULL, why[200];
    cr_assert(tokenizer_scan_fits(SOURCE), "the scanner's pattern is cl100k's / Llama 3's");
    cr_assert_eq(tokenizer_pattern_rewrite(SOURCE, &pat, why, sizeof why), 0, "%s", why);
    int code;
    PCRE2_SIZE at;
    r->re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &code,
                          &at, NULL);
    cr_assert(r->re, "pattern compiles");
    r->md = pcre2_match_data_create_from_pattern(r->re, NULL);
    r->decided = r->offsets = 0;
    free(pat);
}

static void ref_close(Ref *r)
{
    pcre2_match_data_free(r->md);
    pcre2_code_free(r->re);
}

/* Every offset of s that starts a UTF-8 character (the encoder's pieces
 * start only there). s is valid UTF-8 (checked once: PCRE2 would check the
 * whole subject at every call). */
static void check_text(Ref *r, const uint8_t *s, size_t len)
{
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(r->md);
    int rc0 = pcre2_match(r->re, s, len, 0, 0, r->md, NULL);
    cr_assert(rc0 > 0 || rc0 == PCRE2_ERROR_NOMATCH, "valid UTF-8 (%d)", rc0);
    for (size_t pos = 0; pos < len; pos++) {
        if ((s[pos] & 0xc0) == 0x80) continue;
        size_t e = tokenizer_scan_piece(s, len, pos);
        r->offsets++;
        if (!e) continue;
        r->decided++;
        int rc = pcre2_match(r->re, s, len, pos, PCRE2_NO_UTF_CHECK, r->md, NULL);
        cr_assert(rc > 0, "PCRE2 matches at %zu", pos);
        cr_assert(ov[0] == pos && ov[1] == e,
                  "offset %zu: scanner [%zu, %zu), PCRE2 [%zu, %zu): \"%.*s\"", pos, pos, e,
                  (size_t)ov[0], (size_t)ov[1], (int)(len - pos < 20 ? len - pos : 20), s + pos);
    }
}

static void check_file(const char *path)
{
    size_t len;
    char *text = tu_read_file(path, &len);
    cr_assert(text, "%s readable", path);
    Ref r;
    ref_open(&r);
    check_text(&r, (const uint8_t *)text, len);
    cr_assert(r.decided > r.offsets / 2, "%s: the scanner decides most offsets (%zu of %zu)", path,
              r.decided, r.offsets);
    ref_close(&r);
    free(text);
}

Test(tokenizer_scan, same_as_pcre2_on_hostile) { check_file("tests/data/tokenizer_hostile.txt"); }

Test(tokenizer_scan, same_as_pcre2_on_shakespeare, .timeout = 300) { check_file(TU_SHAKESPEARE); }

Test(tokenizer_scan, same_as_pcre2_on_random_mixes, .timeout = 300)
{
    static const char *const HI[] = {"\xc3\xa9", "\xc5\xbf", "\xe2\x84\xaa", "\xc2\xa0",
                                     "\xe2\x80\x80", "\xc2\x85", "\xc2\xb2", "\xd9\xa1",
                                     "\xcc\x81", "\xe2\x82\xac"};
    static const char ASCII_BIAS[] = "'sStTrReEvVmMlLdD \n\r\t ab1.,!?";
    Ref r;
    ref_open(&r);
    uint64_t x = 0x243f6a8885a308d3ULL;
    uint8_t buf[64];
    for (int k = 0; k < 20000; k++) {
        size_t n = 0, want = 1 + k % 24;
        for (size_t i = 0; i < want; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            unsigned v = (unsigned)(x >> 33);
            if (v % 8 == 0) {
                const char *h = HI[(v >> 3) % 10];
                memcpy(buf + n, h, strlen(h));
                n += strlen(h);
            } else if (v % 8 < 5) {
                buf[n++] = (uint8_t)ASCII_BIAS[(v >> 3) % (sizeof ASCII_BIAS - 1)];
            } else {
                buf[n++] = (uint8_t)((v >> 3) % 128);
            }
        }
        check_text(&r, buf, n);
    }
    ref_close(&r);
}
