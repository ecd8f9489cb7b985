/* data/tokenizer_utf8.c — UTF-8 checks and NFC (tokenizer_utf8.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "tokenizer_utf8.h"

/* Well-formed sequences as Unicode Table 3-7 lists them. */
size_t tokenizer_utf8_len(const uint8_t *s, size_t avail)
{
    uint8_t c = s[0];
    if (c < 0x80) return 1;
    if (c < 0xc2) return 0;
    if (c < 0xe0) return avail >= 2 && (s[1] & 0xc0) == 0x80 ? 2 : 0;
    uint8_t lo = 0x80, hi = 0xbf;
    if (c < 0xf0) {
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f; /* no surrogates */
        return avail >= 3 && s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
    }
    if (c > 0xf4) return 0;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f; /* <= U+10FFFF */
    return avail >= 4 && s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 &&
                   (s[3] & 0xc0) == 0x80
               ? 4
               : 0;
}

size_t tokenizer_utf8_first_bad(const uint8_t *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        if (i + 8 <= len) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        size_t k = tokenizer_utf8_len(s + i, len - i);
        if (!k) return i;
        i += k;
    }
    return len;
}

/* *buf to at least need bytes (doubling). -1: out of memory. */
static int grow(uint8_t **buf, size_t *cap, size_t need)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 4096;
    while (n < need) n *= 2;
    uint8_t *q = realloc(*buf, n);
    if (!q) return -1;
    *buf = q;
    *cap = n;
    return 0;
}

int tokenizer_nfc(Tokenizer *tk, const uint8_t *text, size_t len, const uint8_t **out,
                  size_t *out_len, char *err, size_t err_len)
{
    size_t i = 0;
    while (i < len && text[i] < 0x80) i++;
    *out = text;
    *out_len = len;
    if (i == len) return 0;
    size_t n = 0;
    for (i = 0; i < len;) {
        size_t run = i;
        while (run < len) {
            size_t k = tokenizer_utf8_len(text + run, len - run);
            if (!k) break;
            run += k;
        }
        utf8proc_uint8_t *nf = NULL;
        utf8proc_ssize_t m = 0;
        if (run > i) {
            m = utf8proc_map(text + i, (utf8proc_ssize_t)(run - i), &nf,
                             UTF8PROC_STABLE | UTF8PROC_COMPOSE);
            if (m < 0) {
                snprintf(err, err_len, "tokenizer: NFC normalization failed at byte %zu: %s", i,
                         utf8proc_errmsg(m));
                return -1;
            }
        }
        size_t bad = run < len; /* the ill-formed byte after the run, kept as it is */
        if (grow(&tk->norm, &tk->norm_cap, n + (size_t)m + bad)) {
            free(nf);
            snprintf(err, err_len, "tokenizer: out of memory normalizing %zu bytes", len);
            return -1;
        }
        if (m) memcpy(tk->norm + n, nf, (size_t)m);
        free(nf);
        n += (size_t)m;
        if (bad) tk->norm[n++] = text[run];
        i = run + bad;
    }
    *out = tk->norm;
    *out_len = n;
    return 0;
}
