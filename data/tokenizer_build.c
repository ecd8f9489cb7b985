/* data/tokenizer_build.c — the loaders' shared steps (tokenizer_build.h)
 * and tokenizer_open, which picks the loader. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tokenizer_build.h"
#include "tokenizer_encode.h"

/* GPT-2's bytes_to_unicode, inverted: code point -> byte, or -1. Printable
 * Latin-1 bytes (0x21-0x7e, 0xa1-0xac, 0xae-0xff) stand for themselves; the
 * other 68 bytes, in increasing order, are spelled U+0100..U+0143. */
static int unicode_to_byte(uint32_t cp)
{
    if ((cp >= 0x21 && cp <= 0x7e) || (cp >= 0xa1 && cp <= 0xac) || (cp >= 0xae && cp <= 0xff))
        return (int)cp;
    if (cp < 0x100 || cp >= 0x100 + 68) return -1;
    int n = (int)(cp - 0x100);
    for (int b = 0; b < 256; b++) {
        int printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae);
        if (!printable && n-- == 0) return b;
    }
    return -1;
}

long tokenizer_spelled_to_bytes(const char *s, size_t len, uint8_t *out)
{
    const uint8_t *p = (const uint8_t *)s, *end = p + len;
    long n = 0;
    while (p < end) {
        uint32_t cp;
        if (p[0] < 0x80) {
            cp = p[0];
            p += 1;
        } else if ((p[0] & 0xe0) == 0xc0 && p + 1 < end) {
            cp = (uint32_t)(p[0] & 0x1f) << 6 | (p[1] & 0x3f);
            p += 2;
        } else {
            return -1; /* the alphabet has no 3- or 4-byte characters */
        }
        int b = unicode_to_byte(cp);
        if (b < 0) return -1;
        out[n++] = (uint8_t)b;
    }
    return n;
}

int tokenizer_merges_alloc(Tokenizer *tk, size_t n)
{
    size_t cap = 1024;
    while (cap < n + n / 2) cap *= 2;
    tk->merge_mask = cap - 1;
    /* Every BPE step looks up a random slot of this table (Llama 3's: 8 MiB):
     * on 4 KiB pages nearly every lookup also misses the TLB. Where the
     * table spans 2 MiB pages, ask for huge ones (a hint; without it the
     * table works the same). */
    size_t bytes = cap * sizeof *tk->merges, huge = (size_t)2 << 20;
    if (bytes >= huge) {
        tk->merges = aligned_alloc(huge, bytes);
#ifdef MADV_HUGEPAGE
        if (tk->merges) madvise(tk->merges, bytes, MADV_HUGEPAGE);
#endif
        if (tk->merges) memset(tk->merges, 0, bytes);
    } else {
        tk->merges = calloc(cap, sizeof *tk->merges);
    }
    return tk->merges ? 0 : -1;
}

void tokenizer_merge_put(Tokenizer *tk, int32_t left, int32_t right, uint32_t rank, int32_t out)
{
    uint64_t key = ((uint64_t)(uint32_t)left << 32 | (uint32_t)right) + 1;
    size_t i = tokenizer_mix64(key) & tk->merge_mask;
    while (tk->merges[i].key != 0 && tk->merges[i].key != key) i = (i + 1) & tk->merge_mask;
    tk->merges[i] = (TokenizerMerge){.key = key, .rank = rank, .out = out};
}

/* Unicode's White_Space property (as tokenizer_encode.c's GPT-2 pattern). */
static const char WS[] = "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}"
                         "\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

int tokenizer_pattern_rewrite(const char *pattern, char **out, char *err, size_t err_len)
{
    size_t n = strlen(pattern), cap = n * (sizeof WS + 4) + 1, k = 0;
    char *o = malloc(cap);
    if (!o) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    int in_class = 0;
    for (size_t i = 0; i < n; i++) {
        char c = pattern[i];
        if (c == '\\' && i + 1 < n) {
            char e = pattern[++i];
            if (e == 's' || e == 'S') {
                if (in_class && e == 'S') {
                    snprintf(err, err_len, "the pattern has \\S inside a [...] class, which is "
                             "not supported");
                    free(o);
                    return -1;
                }
                k += (size_t)sprintf(o + k, "%s%s%s", in_class ? "" : e == 's' ? "[" : "[^", WS,
                                     in_class ? "" : "]");
            } else {
                o[k++] = c;
                o[k++] = e;
            }
            continue;
        }
        if (!in_class && c == '[') {
            in_class = 1;
            o[k++] = c;
            if (i + 1 < n && pattern[i + 1] == '^') o[k++] = pattern[++i];
            if (i + 1 < n && pattern[i + 1] == ']') o[k++] = pattern[++i]; /* a literal ] first */
            continue;
        }
        if (in_class && c == '[' && i + 1 < n && pattern[i + 1] == ':') { /* [:alpha:] */
            const char *end = strstr(pattern + i, ":]");
            size_t m = end ? (size_t)(end - (pattern + i)) + 2 : 1;
            memcpy(o + k, pattern + i, m);
            k += m;
            i += m - 1;
            continue;
        }
        if (in_class && c == ']') in_class = 0;
        o[k++] = c;
    }
    o[k] = 0;
    *out = o;
    return 0;
}

int tokenizer_finish(Tokenizer *tk, const char *what, const int32_t *literals, int n_literals,
                     int n_merge_ids, char *err, size_t err_len)
{
    for (int b = 0; b < 256; b++) tk->byte_id[b] = -1;
    for (int id = n_merge_ids; id-- > 0;) /* the lowest id wins a repeated byte */
        if (tk->tok_off[id + 1] - tk->tok_off[id] == 1) tk->byte_id[tk->tok_bytes[tk->tok_off[id]]] = id;
    for (int b = 0; b < 256; b++)
        if (tk->byte_id[b] < 0) {
            snprintf(err, err_len, "%s: no token for the single byte 0x%02x (not a byte-level "
                     "vocabulary)", what, b);
            return -1;
        }
    if (n_literals > 0) {
        tk->literal_id = malloc((size_t)n_literals * sizeof *tk->literal_id);
        if (!tk->literal_id) {
            snprintf(err, err_len, "%s: out of memory", what);
            return -1;
        }
        memcpy(tk->literal_id, literals, (size_t)n_literals * sizeof *literals);
        tk->num_literals = n_literals;
        for (int k = 0; k < n_literals; k++) {
            const uint8_t *p = tk->tok_bytes + tk->tok_off[literals[k]];
            size_t n = tk->tok_off[literals[k] + 1] - tk->tok_off[literals[k]];
            tk->literal_first[p[0]] = 1;
            for (size_t i = 1; i < n; i++)
                if (p[i] == ' ' && (p[i - 1] | 0x20) >= 'a' && (p[i - 1] | 0x20) <= 'z')
                    tk->no_safe_cut = 1;
        }
    }
    if (tk->whole_piece && !tk->piece_slot && tokenizer_piece_map(tk, n_merge_ids)) {
        snprintf(err, err_len, "%s: out of memory", what);
        return -1;
    }
    return tokenizer_encoder_init(tk, err, err_len);
}

int tokenizer_open(Tokenizer *tk, const TokenizerChoice *c, char *err, size_t err_len)
{
    if (c->hf_json && c->encoding) {
        snprintf(err, err_len, "--tokenizer and --encoding name two tokenizers; give one");
        return -1;
    }
    if (c->hf_json) {
        int rc = tokenizer_load_hf(tk, c->hf_json, c->allow_special, err, err_len);
        if (rc == 0 && !c->quiet) fprintf(stderr, "tokenize: tokenizer %s\n", c->hf_json);
        return rc;
    }
    if (c->encoding)
        return tokenizer_load_tiktoken(tk, c->encoding, NULL, c->allow_special, c->quiet, err,
                                       err_len);
    if (tokenizer_load_or_find(tk, c->encoder_path, c->vocab_path, c->quiet, err, err_len))
        return -1;
    if (c->allow_special) { /* GPT-2's one special token: <|endoftext|> */
        int32_t eot = GPT2_EOT;
        tk->num_literals = 0;
        tk->literal_id = malloc(sizeof eot);
        if (!tk->literal_id) {
            snprintf(err, err_len, "out of memory");
            tokenizer_free(tk);
            return -1;
        }
        tk->literal_id[0] = eot;
        tk->num_literals = 1;
        tk->literal_first['<'] = 1;
    }
    return 0;
}
