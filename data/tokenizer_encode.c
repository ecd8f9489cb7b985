/* data/tokenizer_encode.c — GPT-2 encoding: NFC first where a tokenizer.json
 * asks (tokenizer_utf8.h), pre-tokenize with PCRE2 (ASCII pieces of cl100k's
 * pattern by tokenizer_scan.h), merge each piece by rank,
 * cache pieces (tokenizer_encode.h).
 *
 * Per piece of n bytes, BPE keeps the symbols in a linked list (tok, prev,
 * next: n each, a merged symbol keeps its left index) and the adjacent pairs
 * that have a merge in a min-heap keyed (rank << 32 | left index): O(n log n)
 * instead of encoder.py's rescan of every pair per merge. encoder.py merges
 * ALL non-overlapping occurrences of the best pair, left to right, before
 * looking at any pair that those merges created; the heap does the same by
 * popping equal ranks in index order and holding new pairs back until the
 * rank changes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tokenizer_encode.h"
#include "tokenizer_scan.h"
#include "tokenizer_utf8.h"

/* Unicode's White_Space property: what \s means in Python's `regex` module
 * (encoder.py). PCRE2's own \s adds U+180E; JavaScript's drops U+0085 and
 * adds U+FEFF. */
#define WS "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}" \
           "\\x{202F}\\x{205F}\\x{3000}"
static const char GPT2_PATTERN[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS
                                   "\\p{L}\\p{N}]+|[" WS "]+(?![^" WS "])|[" WS "]+";

#define CACHE_MAX_PIECE 256       /* longer pieces are not cached (rare, and big) */
#define CACHE_MAX_ENTRIES (1u << 20) /* then the cache is emptied: memory stays < ~80 MB */

typedef struct {
    uint64_t hash;                /* 0 = empty */
    uint32_t key_off, ids_off;    /* into keys / ids */
    uint16_t key_len, n_ids;
} CacheSlot;

struct TokenizerCache {
    CacheSlot *slot;
    size_t mask, used;
    uint8_t *keys;
    size_t keys_len, keys_cap;
    int32_t *ids;
    size_t ids_len, ids_cap;
};

struct TokenizerWork {
    size_t cap;                   /* pieces of up to cap bytes fit */
    int32_t *tok, *prev, *next;   /* [cap]; tok -1 = merged away */
    uint64_t *heap, *pend;        /* [3 cap], [2 cap] */
    int jit;                      /* PCRE2 JIT compiled */
};

uint64_t tokenizer_mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

int tokenizer_encoder_init(Tokenizer *tk, char *err, size_t err_len)
{
    int code;
    PCRE2_SIZE at;
    /* GPT-2's pattern matches at every place (anchored); a loaded one may
     * leave gaps, which are pieces of their own (Hugging Face's Split
     * "Isolated"). UCP: \p{..}, \d and \w by Unicode properties. */
    const char *pat = tk->pattern ? tk->pattern : GPT2_PATTERN;
    uint32_t opts = tk->pattern ? PCRE2_UTF | PCRE2_UCP : PCRE2_UTF | PCRE2_ANCHORED;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, opts, &code, &at, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        snprintf(err, err_len, "tokenizer: PCRE2 cannot compile %s's pattern at %zu: %s",
                 tk->name[0] ? tk->name : "GPT-2", (size_t)at, (char *)msg);
        return -1;
    }
    tk->re = re;
    tk->match_data = pcre2_match_data_create_from_pattern(re, NULL);
    tk->work = calloc(1, sizeof *tk->work);
    tk->cache = calloc(1, sizeof *tk->cache);
    if (!tk->match_data || !tk->work || !tk->cache) {
        snprintf(err, err_len, "tokenizer: out of memory");
        return -1;
    }
    /* JIT is ~5x faster; without it (a PCRE2 built without JIT) the
     * interpreter gives the same pieces. */
    tk->work->jit = pcre2_jit_compile(re, PCRE2_JIT_COMPLETE) == 0;
    return 0;
}

void tokenizer_encoder_free(Tokenizer *tk)
{
    pcre2_match_data_free(tk->match_data);
    pcre2_code_free(tk->re);
    if (tk->work) {
        free(tk->work->tok);
        free(tk->work->prev);
        free(tk->work->next);
        free(tk->work->heap);
        free(tk->work->pend);
        free(tk->work);
    }
    if (tk->cache) {
        free(tk->cache->slot);
        free(tk->cache->keys);
        free(tk->cache->ids);
        free(tk->cache);
    }
    free(tk->repair);
    free(tk->norm);
    tk->norm = NULL;
    free(tk->piece_slot);
    tk->piece_slot = NULL;
    tk->re = tk->match_data = NULL;
    tk->work = NULL;
    tk->cache = NULL;
    tk->repair = NULL;
}

static int ids_reserve(TokenIds *out, size_t extra)
{
    if (out->len + extra <= out->cap) return 0;
    size_t cap = out->cap ? out->cap : 1024;
    while (cap < out->len + extra) cap *= 2;
    int32_t *p = realloc(out->data, cap * sizeof *p);
    if (!p) return -1;
    out->data = p;
    out->cap = cap;
    return 0;
}

/* ---- the piece cache ---- */

uint64_t tokenizer_fold_bytes(const uint8_t *p, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    memcpy(&w, p + i, n - i);
    return h ^ w;
}

static uint64_t piece_hash(const uint8_t *p, size_t n)
{
    uint64_t h = tokenizer_fold_bytes(p, n) * 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 29;
    return h | 1; /* never 0, the empty mark */
}

static CacheSlot *cache_find(TokenizerCache *c, const uint8_t *p, size_t n, uint64_t h)
{
    if (!c->slot) return NULL;
    for (size_t i = h & c->mask;; i = (i + 1) & c->mask) {
        CacheSlot *s = &c->slot[i];
        if (s->hash == 0) return s;
        if (s->hash == h && s->key_len == n && memcmp(c->keys + s->key_off, p, n) == 0) return s;
    }
}

static void cache_clear(TokenizerCache *c)
{
    if (c->slot) memset(c->slot, 0, (c->mask + 1) * sizeof *c->slot);
    c->used = c->keys_len = c->ids_len = 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 4096;
    while (n < need) n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q) return -1;
    *p = q;
    *cap = n;
    return 0;
}

/* Remember piece -> ids. Failing to cache (out of memory) is not an error. */
static void cache_put(TokenizerCache *c, const uint8_t *p, size_t n, uint64_t h, const int32_t *ids,
                      size_t n_ids)
{
    if (n > CACHE_MAX_PIECE || n_ids > n) return;
    if (c->used >= CACHE_MAX_ENTRIES) cache_clear(c);
    if (!c->slot || 2 * (c->used + 1) > c->mask + 1) { /* keep the load under 1/2 */
        size_t cap = c->slot ? 2 * (c->mask + 1) : 4096;
        CacheSlot *old = c->slot;
        size_t old_cap = c->slot ? c->mask + 1 : 0;
        c->slot = calloc(cap, sizeof *c->slot);
        if (!c->slot) {
            c->slot = old;
            return;
        }
        c->mask = cap - 1;
        for (size_t i = 0; i < old_cap; i++) {
            if (!old[i].hash) continue;
            size_t j = old[i].hash & c->mask;
            while (c->slot[j].hash) j = (j + 1) & c->mask;
            c->slot[j] = old[i];
        }
        free(old);
    }
    if (grow((void **)&c->keys, &c->keys_cap, c->keys_len + n, 1) ||
        grow((void **)&c->ids, &c->ids_cap, c->ids_len + n_ids, sizeof *c->ids))
        return;
    CacheSlot *s = cache_find(c, p, n, h);
    memcpy(c->keys + c->keys_len, p, n);
    memcpy(c->ids + c->ids_len, ids, n_ids * sizeof *ids);
    *s = (CacheSlot){.hash = h, .key_off = (uint32_t)c->keys_len, .ids_off = (uint32_t)c->ids_len,
                     .key_len = (uint16_t)n, .n_ids = (uint16_t)n_ids};
    c->keys_len += n;
    c->ids_len += n_ids;
    c->used++;
}

/* ---- byte-pair merging of one piece ---- */


/* The merge (a, b), or NULL. */
static const TokenizerMerge *merge_find(const Tokenizer *tk, int32_t a, int32_t b)
{
    uint64_t key = ((uint64_t)a << 32 | (uint32_t)b) + 1;
    for (size_t i = tokenizer_mix64(key) & tk->merge_mask;; i = (i + 1) & tk->merge_mask) {
        if (tk->merges[i].key == key) return &tk->merges[i];
        if (tk->merges[i].key == 0) return NULL;
    }
}

static void heap_push(uint64_t *h, size_t *n, uint64_t v)
{
    size_t i = (*n)++;
    while (i > 0 && h[(i - 1) / 2] > v) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static uint64_t heap_pop(uint64_t *h, size_t *n)
{
    uint64_t top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && h[c + 1] < h[c]) c++;
        if (h[c] >= last) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = last;
    return top;
}

static int work_reserve(TokenizerWork *w, size_t n)
{
    if (n <= w->cap) return 0;
    size_t cap = w->cap ? w->cap : 64;
    while (cap < n) cap *= 2;
    int32_t *tok = realloc(w->tok, cap * sizeof *tok);
    if (tok) w->tok = tok;
    int32_t *prev = realloc(w->prev, cap * sizeof *prev);
    if (prev) w->prev = prev;
    int32_t *next = realloc(w->next, cap * sizeof *next);
    if (next) w->next = next;
    uint64_t *heap = realloc(w->heap, 3 * cap * sizeof *heap);
    if (heap) w->heap = heap;
    uint64_t *pend = realloc(w->pend, 2 * cap * sizeof *pend);
    if (pend) w->pend = pend;
    if (!tok || !prev || !next || !heap || !pend) return -1;
    w->cap = cap;
    return 0;
}

/* Merge piece p[0..n) (n >= 2) and append its ids to out. */
static int bpe_piece(Tokenizer *tk, const uint8_t *p, size_t n, TokenIds *out)
{
    TokenizerWork *w = tk->work;
    if (n > 0x7fffffff || work_reserve(w, n)) return -1;
    int32_t *tok = w->tok, *prev = w->prev, *next = w->next;
    size_t nh = 0, np = 0;
    for (size_t i = 0; i < n; i++) {
        tok[i] = tk->byte_id[p[i]];
        prev[i] = (int32_t)i - 1;
        next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
    }
    for (size_t i = 0; i + 1 < n; i++) {
        const TokenizerMerge *m = merge_find(tk, tok[i], tok[i + 1]);
        if (m) heap_push(w->heap, &nh, (uint64_t)m->rank << 32 | i);
    }
    uint32_t cur = 0;
    for (;;) {
        if (nh == 0 || (np && (uint32_t)(w->heap[0] >> 32) != cur)) {
            if (np == 0) break;
            for (size_t k = 0; k < np; k++) heap_push(w->heap, &nh, w->pend[k]);
            np = 0;
            continue;
        }
        uint64_t e = heap_pop(w->heap, &nh);
        cur = (uint32_t)(e >> 32);
        int32_t i = (int32_t)(uint32_t)e, j = next[i];
        if (tok[i] < 0 || j < 0) continue;
        const TokenizerMerge *m = merge_find(tk, tok[i], tok[j]);
        if (!m || m->rank != cur) continue; /* stale: a neighbour changed */
        tok[i] = m->out;
        tok[j] = -1;
        next[i] = next[j];
        if (next[j] >= 0) prev[next[j]] = i;
        if (prev[i] >= 0 && (m = merge_find(tk, tok[prev[i]], tok[i])))
            w->pend[np++] = (uint64_t)m->rank << 32 | (uint32_t)prev[i];
        if (next[i] >= 0 && (m = merge_find(tk, tok[i], tok[next[i]])))
            w->pend[np++] = (uint64_t)m->rank << 32 | (uint32_t)i;
    }
    if (ids_reserve(out, n)) return -1;
    for (int32_t i = 0; i >= 0; i = next[i]) out->data[out->len++] = tok[i];
    return 0;
}

static int encode_piece(Tokenizer *tk, const uint8_t *p, size_t n, TokenIds *out)
{
    if (n == 1) {
        if (ids_reserve(out, 1)) return -1;
        out->data[out->len++] = tk->byte_id[p[0]];
        return 0;
    }
    /* A whole piece is its token: the piece map answers with one slot read
     * (tokenizer_pieces.h), where a cache hit reads a slot, the key and the
     * ids; so such pieces bypass the cache, which keeps only merged ones. */
    int32_t whole = tk->whole_piece ? tokenizer_piece_find(tk, p, n) : -1;
    if (whole >= 0) {
        if (ids_reserve(out, 1)) return -1;
        out->data[out->len++] = whole;
        return 0;
    }
    uint64_t h = 0;
    if (n <= CACHE_MAX_PIECE) {
        h = piece_hash(p, n);
        CacheSlot *s = cache_find(tk->cache, p, n, h);
        if (s && s->hash) {
            if (ids_reserve(out, s->n_ids)) return -1;
            memcpy(out->data + out->len, tk->cache->ids + s->ids_off, s->n_ids * sizeof(int32_t));
            out->len += s->n_ids;
            return 0;
        }
    }
    size_t start = out->len;
    if (bpe_piece(tk, p, n, out)) return -1;
    if (n <= CACHE_MAX_PIECE) cache_put(tk->cache, p, n, h, out->data + start, out->len - start);
    return 0;
}

size_t tokenizer_safe_cut(const Tokenizer *tk, const uint8_t *text, size_t len)
{
    if (tk->no_safe_cut) return 0;
    for (size_t i = len; i-- > 1;) {
        uint8_t c = text[i], b = text[i - 1] | 0x20; /* ASCII lower case */
        if (c == ' ' && b >= 'a' && b <= 'z') return i;
    }
    return 0;
}

/* The end of the piece at subject[pos] (*end): tokenizer_scan.h's where it
 * decides, else PCRE2's match, or the gap before it (a piece of its own). */
static int next_cut(Tokenizer *tk, const uint8_t *subject, size_t len, size_t pos, size_t *end,
                    char *err, size_t err_len)
{
    size_t cut = tk->scan ? tokenizer_scan_piece(subject, len, pos) : 0;
    if (cut) {
        *end = cut;
        return 0;
    }
    pcre2_code *re = tk->re;
    pcre2_match_data *md = tk->match_data;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    int rc = tk->work->jit ? pcre2_jit_match(re, subject, len, pos, 0, md, NULL)
                           : PCRE2_ERROR_JIT_BADOPTION;
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) /* e.g. JIT stack: the interpreter uses the heap */
        rc = pcre2_match(re, subject, len, pos, PCRE2_NO_UTF_CHECK, md, NULL);
    if (rc == PCRE2_ERROR_NOMATCH && tk->pattern) { /* the rest is one piece */
        ov[0] = ov[1] = len;
        rc = 1;
    }
    int gap = tk->pattern && rc >= 0 && ov[0] > pos;
    if (rc < 0 || (!gap && ov[0] != pos) || (ov[1] <= ov[0] && ov[0] < len)) {
        PCRE2_UCHAR msg[256];
        if (rc < 0) pcre2_get_error_message(rc, msg, sizeof msg);
        snprintf(err, err_len, "tokenizer: pre-tokenizer failed at byte %zu: %s", pos,
                 rc < 0 ? (char *)msg : "no piece there, or an empty one");
        return -1;
    }
    *end = gap ? ov[0] : ov[1];
    return 0;
}

/* Text with no literal token in it: pieces by the pattern, each merged. */
static int encode_split(Tokenizer *tk, const uint8_t *text, size_t len, TokenIds *out,
                           char *err, size_t err_len)
{
    /* The pattern needs valid UTF-8. Ill-formed bytes are matched as '!' (a
     * character that is no letter, number, space or apostrophe, like the lone
     * surrogate surrogateescape gives) in a same-length copy; the pieces'
     * bytes are taken from the original. */
    const uint8_t *subject = text;
    size_t bad = tokenizer_utf8_first_bad(text, len);
    if (bad < len) {
        if (grow((void **)&tk->repair, &tk->repair_cap, len, 1)) {
            snprintf(err, err_len, "tokenizer: out of memory for %zu bytes", len);
            return -1;
        }
        memcpy(tk->repair, text, len);
        for (size_t i = bad; i < len;) {
            size_t k = tokenizer_utf8_len(text + i, len - i);
            if (!k) tk->repair[i] = '!';
            i += k ? k : 1;
        }
        subject = tk->repair;
    }
    /* Pieces are cut AHEAD pieces ahead of their encoding, and a whole-piece
     * tokenizer's piece map slot of each is prefetched when it is cut: the
     * slot is a random line of a table of megabytes (Llama 3: 4 MiB), whose
     * load was most of a piece's cost; by its turn it has arrived. */
    if (!tk->whole_piece) { /* nothing to prefetch (GPT-2: the ring cost it ~10%) */
        for (size_t pos = 0, e = 0; pos < len; pos = e)
            if (next_cut(tk, subject, len, pos, &e, err, err_len)) return -1;
            else if (encode_piece(tk, text + pos, e - pos, out)) goto oom;
        return 0;
    }
    enum { AHEAD = 8 };
    size_t at[AHEAD], end[AHEAD], head = 0, queued = 0;
    for (size_t pos = 0; pos < len || queued;) {
        while (queued < AHEAD && pos < len) {
            size_t k = (head + queued++) % AHEAD;
            if (next_cut(tk, subject, len, pos, &end[k], err, err_len)) return -1;
            at[k] = pos;
            if (end[k] - pos > 1)
                tokenizer_piece_prefetch(tk, text + pos, end[k] - pos);
            pos = end[k];
        }
        size_t p = at[head], n = end[head] - at[head];
        head = (head + 1) % AHEAD;
        queued--;
        if (encode_piece(tk, text + p, n, out)) goto oom;
    }
    return 0;
oom:
    snprintf(err, err_len, "tokenizer: out of memory encoding %zu bytes", len);
    return -1;
}

static int encode_ordinary(Tokenizer *tk, const uint8_t *text, size_t len, TokenIds *out,
                           char *err, size_t err_len)
{
    if (tk->nfc && len) {
        const uint8_t *t = NULL;
        size_t n = 0;
        if (tokenizer_nfc(tk, text, len, &t, &n, err, err_len)) return -1;
        return encode_split(tk, t, n, out, err, err_len);
    }
    return encode_split(tk, text, len, out, err, err_len);
}

/* The longest literal token at text (0: none); its id in *id. */
static size_t literal_at(const Tokenizer *tk, const uint8_t *text, size_t len, int32_t *id)
{
    size_t best = 0;
    for (int k = 0; k < tk->num_literals; k++) {
        int32_t t = tk->literal_id[k];
        size_t n = tk->tok_off[t + 1] - tk->tok_off[t];
        if (n > best && n <= len && memcmp(text, tk->tok_bytes + tk->tok_off[t], n) == 0) {
            best = n;
            *id = t;
        }
    }
    return best;
}

int tokenizer_encode(Tokenizer *tk, const uint8_t *text, size_t len, TokenIds *out, char *err,
                     size_t err_len)
{
    if (tk->num_literals == 0) return encode_ordinary(tk, text, len, out, err, err_len);
    size_t start = 0;
    for (size_t i = 0; i < len;) {
        int32_t id = -1;
        size_t n = tk->literal_first[text[i]] ? literal_at(tk, text + i, len - i, &id) : 0;
        if (!n) {
            i++;
            continue;
        }
        if (encode_ordinary(tk, text + start, i - start, out, err, err_len)) return -1;
        if (ids_reserve(out, 1)) {
            snprintf(err, err_len, "tokenizer: out of memory");
            return -1;
        }
        out->data[out->len++] = id;
        i += n;
        start = i;
    }
    return encode_ordinary(tk, text + start, len - start, out, err, err_len);
}
