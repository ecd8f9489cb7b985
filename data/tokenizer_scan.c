/* data/tokenizer_scan.c — the cl100k / Llama 3 pattern on ASCII
 * (tokenizer_scan.h). Each branch below is one alternative of the pattern,
 * tried in the pattern's order: PCRE2 takes the first alternative that
 * matches at the place. */
#include <string.h>

#include "tokenizer_scan.h"

static const char PATTERN[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
                              "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
                              "\\s+(?!\\S)|\\s+";

enum { L = 1, N = 2, S = 4, P = 8, HI = 16 }; /* letter, digit, White_Space, other ASCII, >= 0x80 */

static int cls(uint8_t c)
{
    if (c >= 0x80) return HI;
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return L;
    if (c >= '0' && c <= '9') return N;
    if (c == ' ' || (c >= '\t' && c <= '\r')) return S; /* ASCII's White_Space */
    return P;
}

int tokenizer_scan_fits(const char *pattern)
{
    return pattern && strcmp(pattern, PATTERN) == 0;
}

/* End of the run of class k from i; *hi set when it stops at a byte >= 0x80
 * (which might continue the run: a non-ASCII letter, digit or space). */
static size_t run(const uint8_t *s, size_t len, size_t i, int k, int *hi)
{
    while (i < len && cls(s[i]) == k) i++;
    *hi = i < len && s[i] >= 0x80;
    return i;
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d) at s[pos] == '\'': its end, pos (none), or 0
 * (a non-ASCII byte where a fold could match: 's also matches U+017F). */
static size_t contraction(const uint8_t *s, size_t len, size_t pos)
{
    if (pos + 1 >= len) return pos;
    uint8_t a = s[pos + 1];
    if (a >= 0x80) return 0;
    a |= 0x20;
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return pos + 2;
    if (a != 'r' && a != 'v' && a != 'l') return pos;
    if (pos + 2 >= len) return pos;
    uint8_t b = s[pos + 2];
    if (b >= 0x80) return 0;
    b |= 0x20;
    return (a == 'l' ? b == 'l' : b == 'e') ? pos + 3 : pos;
}

size_t tokenizer_scan_piece(const uint8_t *s, size_t len, size_t pos)
{
    int c = cls(s[pos]), hi;
    if (c == HI) return 0;
    int next = pos + 1 < len ? cls(s[pos + 1]) : 0; /* 0: end of text */
    if (s[pos] == '\'') {
        size_t e = contraction(s, len, pos);
        if (e != pos) return e; /* a contraction, or 0: ask PCRE2 */
    }
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    if (c == L) {
        size_t e = run(s, len, pos, L, &hi);
        return hi ? 0 : e;
    }
    int lead = c != N && s[pos] != '\r' && s[pos] != '\n'; /* may be the optional char */
    if (lead && next == HI) return 0;
    if (lead && next == L) {
        size_t e = run(s, len, pos + 1, L, &hi);
        return hi ? 0 : e;
    }
    /* \p{N}{1,3} */
    if (c == N) {
        size_t e = pos;
        while (e < len && e < pos + 3 && cls(s[e]) == N) e++;
        return e < pos + 3 && e < len && s[e] >= 0x80 ? 0 : e;
    }
    /*  ?[^\s\p{L}\p{N}]+[\r\n]* (next is not HI here) */
    if (c == P || (s[pos] == ' ' && next == P)) {
        size_t e = run(s, len, c == P ? pos : pos + 1, P, &hi);
        if (hi) return 0;
        while (e < len && (s[e] == '\r' || s[e] == '\n')) e++;
        return e;
    }
    /* c == S: \s*[\r\n]+ | \s+(?!\S) | \s+ over the space run [pos, e) */
    size_t e = run(s, len, pos, S, &hi);
    if (hi) return 0; /* the run may go on (U+00A0, U+2000, ...) */
    for (size_t i = e; i > pos; i--)
        if (s[i - 1] == '\r' || s[i - 1] == '\n') return i; /* up to the last line break */
    if (e == len || e - pos == 1) return e; /* (?!\S) at the end; else \s+ */
    return e - 1; /* leave one space before the non-space */
}
