/* data/tokenizer_tiktoken.c — tiktoken's cl100k_base and o200k_base
 * (tokenizer_load_tiktoken in tokenizer.h).
 *
 * A rank file (<name>.tiktoken, as OpenAI publishes it and tiktoken reads
 * it) has one line per token: the token's bytes in base64, a space, its rank
 * (= its id). The pattern and the special tokens are tiktoken's own for the
 * encoding (tiktoken_ext/openai_public.py), not in the file.
 *
 * tiktoken merges a piece by the rank of the merged bytes: of the adjacent
 * parts, the pair whose concatenation is the lowest-ranked token, leftmost
 * on a tie, until no pair's concatenation is a token; and a piece that is a
 * token is that token. So the merge table holds, for every token t and every
 * split t = x y where x and y are tokens, (id x, id y) -> rank t, t; the
 * BPE loop of tokenizer_encode.c then does exactly tiktoken's merges (a
 * merge's new pairs are longer tokens, so never of the rank just merged). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fileio.h"
#include "source.h"
#include "tokenizer.h"
#include "tokenizer_build.h"
#include "tokenizer_encode.h"
#include "tokenizer_scan.h"

typedef struct {
    const char *text;
    int32_t id;
} Special;

typedef struct {
    const char *name;
    const SourceSpec *source;
    int32_t num_ranks;              /* ranks 0 .. num_ranks-1, each once */
    const char *pattern;
    Special special[6];             /* ends at text NULL; [0] is <|endoftext|> */
} Encoding;

static const Encoding ENCODINGS[] = {
    {"cl100k_base", &SOURCE_CL100K, 100256,
     "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
     "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     {{"<|endoftext|>", 100257}, {"<|fim_prefix|>", 100258}, {"<|fim_middle|>", 100259},
      {"<|fim_suffix|>", 100260}, {"<|endofprompt|>", 100276}, {NULL, 0}}},
    {"o200k_base", &SOURCE_O200K, 199998,
     "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
     "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
     "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
     "[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     {{"<|endoftext|>", 199999}, {"<|endofprompt|>", 200018}, {NULL, 0}}},
};

static int b64_value(uint8_t c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Standard base64 (with '=' padding) of n chars into out; bytes, or -1. */
static long b64_decode(const char *s, size_t n, uint8_t *out)
{
    if (n == 0 || n % 4) return -1;
    long k = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4], pad = 0;
        for (int j = 0; j < 4; j++) {
            uint8_t c = (uint8_t)s[i + j];
            if (c == '=' && i + 4 == n && j >= 2) {
                v[j] = 0;
                pad++;
            } else if (pad || (v[j] = b64_value(c)) < 0) {
                return -1;
            }
        }
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        out[k++] = (uint8_t)(w >> 16);
        if (pad < 2) out[k++] = (uint8_t)(w >> 8);
        if (pad < 1) out[k++] = (uint8_t)w;
    }
    return k;
}

/* The decode table from the rank file, then the special tokens' text. */
static int read_ranks(Tokenizer *tk, const Encoding *e, const char *path, const char *text,
                      size_t len, char *err, size_t err_len)
{
    int32_t n = e->num_ranks, top = n - 1;
    for (const Special *s = e->special; s->text; s++)
        if (s->id > top) top = s->id;
    tk->vocab_size = top + 1;
    uint32_t *start = calloc((size_t)n, sizeof *start), *blen = calloc((size_t)n, sizeof *blen);
    tk->tok_off = calloc((size_t)tk->vocab_size + 1, sizeof *tk->tok_off);
    tk->tok_bytes = malloc(len + 256);
    uint8_t *raw = malloc(len);
    int rc = -1;
    if (!start || !blen || !tk->tok_off || !tk->tok_bytes || !raw) {
        snprintf(err, err_len, "%s: out of memory", path);
        goto out;
    }
    size_t at = 0;
    long lineno = 0;
    for (const char *line = text, *end = text + len; line < end;) {
        const char *nl = memchr(line, '\n', (size_t)(end - line)), *stop = nl ? nl : end;
        const char *sp = memchr(line, ' ', (size_t)(stop - line));
        lineno++;
        char *num_end = NULL;
        long rank = sp ? strtol(sp + 1, &num_end, 10) : -1;
        long k = sp ? b64_decode(line, (size_t)(sp - line), raw + at) : -1;
        if (k <= 0 || num_end != stop || rank < 0 || rank >= n || blen[rank]) {
            snprintf(err, err_len, "%s: line %ld: expected \"<base64 bytes> <rank>\" with a new "
                     "rank below %d", path, lineno, n);
            goto out;
        }
        start[rank] = (uint32_t)at, blen[rank] = (uint32_t)k, at += (size_t)k;
        line = stop + 1;
    }
    if (lineno != n) {
        snprintf(err, err_len, "%s: %ld ranks, expected %d (not %s's rank file)", path, lineno, n,
                 e->name);
        goto out;
    }
    size_t off = 0;
    for (int32_t id = 0; id < tk->vocab_size; id++) {
        tk->tok_off[id] = (uint32_t)off;
        const Special *s = e->special;
        while (s->text && s->id != id) s++;
        if (id < n) {
            memcpy(tk->tok_bytes + off, raw + start[id], blen[id]);
            off += blen[id];
        } else if (s->text) {
            memcpy(tk->tok_bytes + off, s->text, strlen(s->text));
            off += strlen(s->text);
        }
    }
    tk->tok_off[tk->vocab_size] = (uint32_t)off;
    rc = 0;
out:
    free(start);
    free(blen);
    free(raw);
    return rc;
}

/* Every split of every token into two tokens (the header's argument).
 * The splits are found once, kept as (x, y, t) triples (o200k_base: 446,189,
 * 5.4 MB), then put in a table sized by their count: each lookup is a
 * likely cache miss in the 8 MB piece map, and a counting pass before a
 * filling pass did all of them twice. Each token's splits are looked up
 * after all their slots were prefetched, so the misses overlap. */
typedef struct {
    int32_t left, right, id;
} Split;

static int build_merges(Tokenizer *tk, int32_t n, const char *path, char *err, size_t err_len)
{
    Split *split = NULL;
    size_t count = 0, cap = 0;
    for (int32_t id = 0; id < n; id++) {
        const uint8_t *p = tk->tok_bytes + tk->tok_off[id];
        size_t len = tk->tok_off[id + 1] - tk->tok_off[id];
        for (size_t k = 1; k < len; k++) tokenizer_piece_prefetch(tk, p, k);
        for (size_t k = 1; k < len; k++) tokenizer_piece_prefetch(tk, p + k, len - k);
        for (size_t k = 1; k < len; k++) {
            int32_t a = tokenizer_piece_find(tk, p, k), b;
            if (a < 0 || (b = tokenizer_piece_find(tk, p + k, len - k)) < 0) continue;
            if (count == cap) {
                cap = cap ? 2 * cap : 5 * (size_t)n / 2 + 1024; /* o200k: 2.2n, cl100k: 2.3n */
                Split *grown = realloc(split, cap * sizeof *split);
                if (!grown) {
                    free(split);
                    snprintf(err, err_len, "%s: out of memory", path);
                    return -1;
                }
                split = grown;
            }
            split[count++] = (Split){a, b, id};
        }
    }
    if (tokenizer_merges_alloc(tk, count)) {
        free(split);
        snprintf(err, err_len, "%s: out of memory", path);
        return -1;
    }
    for (size_t i = 0; i < count; i++)
        tokenizer_merge_put(tk, split[i].left, split[i].right, (uint32_t)split[i].id, split[i].id);
    free(split);
    return 0;
}

int tokenizer_load_tiktoken(Tokenizer *tk, const char *encoding, const char *path,
                            int allow_special, int quiet, char *err, size_t err_len)
{
    memset(tk, 0, sizeof *tk);
    const Encoding *e = NULL;
    for (size_t i = 0; i < sizeof ENCODINGS / sizeof *ENCODINGS; i++)
        if (strcmp(ENCODINGS[i].name, encoding) == 0) e = &ENCODINGS[i];
    if (!e) {
        snprintf(err, err_len, "--encoding %s: unknown encoding: accepted cl100k_base or "
                 "o200k_base", encoding);
        return TOKENIZER_UNSUPPORTED;
    }
    char paths[SOURCE_MAX_FILES][SOURCE_PATH_MAX], from[SOURCE_PATH_MAX + 200];
    if (!path) {
        if (source_find(e->source, NULL, paths, from, sizeof from, err, err_len)) return -1;
        if (!quiet) fprintf(stderr, "tokenize: %s ranks from %s\n", e->name, from);
        path = paths[0];
    }
    char *text = NULL;
    size_t len = 0;
    if (io_read_whole(path, 2, (size_t)64 << 20, "a tiktoken rank file", &text, &len, err, err_len))
        return -1;
    if (len && text[len - 1] == '\n') len--; /* the last line's newline ends no empty line */
    int rc = -1;
    tk->kind = TOKENIZER_TIKTOKEN;
    tk->whole_piece = 1;
    snprintf(tk->name, sizeof tk->name, "%s", e->name);
    char why[200];
    if (read_ranks(tk, e, path, text, len, err, err_len)) goto out;
    if (tokenizer_piece_map(tk, e->num_ranks)) {
        snprintf(err, err_len, "%s: out of memory", path);
        goto out;
    }
    if (build_merges(tk, e->num_ranks, path, err, err_len)) goto out;
    tk->scan = tokenizer_scan_fits(e->pattern);
    if (tokenizer_pattern_rewrite(e->pattern, &tk->pattern, why, sizeof why)) {
        snprintf(err, err_len, "%s: %s", e->name, why);
        goto out;
    }
    tk->doc_id = e->special[0].id;
    int32_t lit[8];
    int k = 0;
    for (const Special *s = e->special; allow_special && s->text; s++) lit[k++] = s->id;
    rc = tokenizer_finish(tk, e->name, lit, k, e->num_ranks, err, err_len);
out:
    free(text);
    if (rc) tokenizer_free(tk);
    return rc;
}
