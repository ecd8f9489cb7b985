/* data/jsonl_text.c — see jsonl_text.h. */
#include "jsonl_text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fault(char *why, size_t why_len, const char *fmt, ...)
{
    if (!why || !why_len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
}

/* The four hex digits at s[i, i+4) into *v: 0, or -1. */
static int hex4(const char *s, size_t n, size_t i, unsigned *v)
{
    if (i + 4 > n) return -1;
    unsigned x = 0;
    for (size_t k = i; k < i + 4; k++) {
        char c = s[k];
        unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                            : 16u;
        if (d == 16) return -1;
        x = x * 16 + d;
    }
    *v = x;
    return 0;
}

/* cp as UTF-8 into out (when not NULL); its length. */
static size_t put_utf8(char *out, unsigned cp)
{
    unsigned char b[4];
    size_t k;
    if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        k = 1;
    } else if (cp < 0x800) {
        b[0] = (unsigned char)(0xC0 | cp >> 6);
        b[1] = (unsigned char)(0x80 | (cp & 0x3F));
        k = 2;
    } else if (cp < 0x10000) {
        b[0] = (unsigned char)(0xE0 | cp >> 12);
        b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        b[2] = (unsigned char)(0x80 | (cp & 0x3F));
        k = 3;
    } else {
        b[0] = (unsigned char)(0xF0 | cp >> 18);
        b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
        b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        b[3] = (unsigned char)(0x80 | (cp & 0x3F));
        k = 4;
    }
    if (out) memcpy(out, b, k);
    return k;
}

int jsonl_text_decode(const char *s, size_t n, char *out, size_t *out_len, size_t *end,
                      char *why, size_t why_len)
{
    size_t i = 0, o = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"') {
            *end = i + 1;
            *out_len = o;
            return 0;
        }
        if (c < 0x20) {
            fault(why, why_len, "a raw control character in a string (byte 0x%02x; JSON writes "
                  "it as \\u%04x)", c, c);
            return -1;
        }
        if (c != '\\') {
            if (out) out[o] = (char)c;
            o++, i++;
            continue;
        }
        if (i + 1 >= n) return 1; /* the line ends inside an escape: unterminated */
        char e = s[i + 1], simple = 0;
        switch (e) {
        case '"': simple = '"'; break;
        case '\\': simple = '\\'; break;
        case '/': simple = '/'; break;
        case 'b': simple = '\b'; break;
        case 'f': simple = '\f'; break;
        case 'n': simple = '\n'; break;
        case 'r': simple = '\r'; break;
        case 't': simple = '\t'; break;
        case 'u': break;
        default:
            if ((unsigned char)e >= 0x20 && (unsigned char)e < 0x7F)
                fault(why, why_len, "a bad escape \\%c in a string", e);
            else
                fault(why, why_len, "a bad escape (\\ and byte 0x%02x) in a string",
                      (unsigned char)e);
            return -1;
        }
        if (simple) {
            if (out) out[o] = simple;
            o++, i += 2;
            continue;
        }
        unsigned cp, lo;
        if (hex4(s, n, i + 2, &cp) != 0) {
            fault(why, why_len, "a bad \\u escape in a string (\\u takes four hex digits)");
            return -1;
        }
        i += 6;
        /* UTF-16 halves: a high one must be followed at once by a low one;
         * either alone is no character and has no UTF-8 form */
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 1 < n && s[i] == '\\' && s[i + 1] == 'u' &&
            hex4(s, n, i + 2, &lo) == 0 && lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
        } else if (cp >= 0xD800 && cp <= 0xDFFF) {
            fault(why, why_len, "a lone surrogate \\u%04x in a string (a UTF-16 %s half "
                  "without its %s; no character)", cp, cp < 0xDC00 ? "high" : "low",
                  cp < 0xDC00 ? "low half after it" : "high half before it");
            return -1;
        }
        o += put_utf8(out ? out + o : NULL, cp);
    }
    return 1;
}

int jsonl_text_check(const char *s, size_t n, char *why, size_t why_len)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"') {
            size_t end, len;
            int rc = jsonl_text_decode(s + i + 1, n - i - 1, NULL, &len, &end, why, why_len);
            if (rc < 0) return -1;
            if (rc > 0) return 0; /* unterminated: the parser names that */
            i += 1 + end;
            continue;
        }
        /* JSON's whitespace is space, tab, CR and LF (a line holds no LF) */
        if (c < 0x20 && c != '\t' && c != '\r') {
            fault(why, why_len, "a raw control character outside a string (byte 0x%02x)", c);
            return -1;
        }
        i++;
    }
    return 0;
}

static size_t skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n')) i++;
    return i;
}

/* Past one string whose opening quote is at s[*i]: 0, or -1. */
static int skip_string(const char *s, size_t n, size_t *i)
{
    size_t end, len;
    if (jsonl_text_decode(s + *i + 1, n - *i - 1, NULL, &len, &end, NULL, 0) != 0) return -1;
    *i += 1 + end;
    return 0;
}

/* Past the value at s[*i] (an object or array by its brackets, strings
 * skipped whole so that brackets inside them do not count): 0, or -1. */
static int skip_value(const char *s, size_t n, size_t *i)
{
    if (*i >= n) return -1;
    if (s[*i] == '"') return skip_string(s, n, i);
    if (s[*i] != '{' && s[*i] != '[') {
        while (*i < n && !strchr(",}] \t\r\n", s[*i])) (*i)++;
        return 0;
    }
    size_t depth = 0;
    while (*i < n) {
        char c = s[*i];
        if (c == '"') {
            if (skip_string(s, n, i) != 0) return -1;
            continue;
        }
        if (c == '{' || c == '[') depth++;
        if ((c == '}' || c == ']') && --depth == 0) {
            (*i)++;
            return 0;
        }
        (*i)++;
    }
    return -1;
}

int jsonl_text_member(const char *s, size_t n, const char *key, char **out, size_t *out_len)
{
    size_t klen = strlen(key), i = skip_ws(s, n, 0), end, len;
    char *buf = malloc(n + 1); /* a decoded string is never longer than the raw line */
    /* cJSON skips a UTF-8 byte-order mark before the value: so does this */
    if (n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) i = skip_ws(s, n, 3);
    if (!buf || i >= n || s[i] != '{') goto fail;
    i++;
    for (;;) {
        i = skip_ws(s, n, i);
        if (i >= n || s[i] != '"' ||
            jsonl_text_decode(s + i + 1, n - i - 1, buf, &len, &end, NULL, 0) != 0)
            goto fail;
        int match = len == klen && memcmp(buf, key, klen) == 0;
        i = skip_ws(s, n, i + 1 + end);
        if (i >= n || s[i] != ':') goto fail;
        i = skip_ws(s, n, i + 1);
        if (match) {
            if (i >= n || s[i] != '"' ||
                jsonl_text_decode(s + i + 1, n - i - 1, buf, &len, &end, NULL, 0) != 0)
                goto fail;
            buf[len] = 0;
            *out = buf;
            *out_len = len;
            return 0;
        }
        if (skip_value(s, n, &i) != 0) goto fail;
        i = skip_ws(s, n, i);
        if (i >= n || s[i] != ',') goto fail;
        i++;
    }
fail:
    free(buf);
    return -1;
}
