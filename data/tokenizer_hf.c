/* data/tokenizer_hf.c — a Hugging Face tokenizer.json as a Tokenizer
 * (tokenizer_load_hf in tokenizer.h).
 *
 * What is read, and what is refused (TOKENIZER_UNSUPPORTED, the feature
 * named in the message):
 *   normalizer      null, NFC (Qwen2, Qwen3), or a Sequence of NFC only
 *                   (tokenizer_encode.c normalizes; Lowercase, NFKC, ...
 *                   refused by type);
 *   pre_tokenizer   Sequence[Split{Regex, Isolated, invert false},
 *                   ByteLevel{add_prefix_space false, use_regex false}]
 *                   (Llama 3, Qwen2), or ByteLevel{add_prefix_space false,
 *                   use_regex true} alone (GPT-2's pattern); nothing else;
 *   model           BPE with no dropout, no byte_fallback, no
 *                   continuing_subword_prefix or end_of_word_suffix; every
 *                   vocabulary entry spelled in ByteLevel's byte alphabet;
 *                   merges "a b" or ["a", "b"], rank = place in the list;
 *                   ignore_merges -> whole_piece;
 *   added_tokens    id and content; single_word, lstrip or rstrip true is
 *                   refused; "special": true ones are literal tokens only
 *                   with allow_special, the others always;
 *   decoder         null or ByteLevel (decoding is the tokens' bytes);
 *   post_processor  ignored: it only adds tokens when asked to
 *                   (add_special_tokens), which ./tokenize never does.
 * The document token (doc_id) is the first of <|begin_of_text|>,
 * <|endoftext|>, <|end_of_text|> among the added tokens, else none. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/fileio.h"
#include "tokenizer.h"
#include "tokenizer_build.h"
#include "tokenizer_encode.h"
#include "tokenizer_scan.h"

#define HF_JSON_MAX_BYTES ((size_t)256 << 20)
/* GPT-2's pattern as Hugging Face's ByteLevel(use_regex) writes it. */
static const char BYTELEVEL_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

typedef struct {
    const char *path;
    char *err;
    size_t err_len;
} Ctx;

static int unsupported(Ctx *c, const char *what, const char *value)
{
    snprintf(c->err, c->err_len, "%s: %s%s%s%s is not supported (see docs/tokenizer.md)", c->path,
             what, value ? " \"" : "", value ? value : "", value ? "\"" : "");
    return TOKENIZER_UNSUPPORTED;
}

static const char *type_of(const cJSON *o)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
    return cJSON_IsString(t) ? t->valuestring : "(no type)";
}

static int is_true(const cJSON *o, const char *key)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

/* Set or null; a non-empty string is "set". */
static int is_set(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v) || cJSON_IsFalse(v)) return 0;
    if (cJSON_IsString(v)) return v->valuestring[0] != 0;
    return 1;
}

static int byte_level_ok(Ctx *c, const cJSON *bl, int want_regex)
{
    if (is_true(bl, "add_prefix_space")) return unsupported(c, "ByteLevel add_prefix_space", "true");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(bl, "use_regex");
    int use_regex = r ? cJSON_IsTrue(r) : 1; /* Hugging Face's default */
    if (use_regex != want_regex)
        return unsupported(c, want_regex ? "ByteLevel without a Split before it and use_regex"
                                         : "ByteLevel after Split with use_regex",
                           use_regex ? "true" : "false");
    return 0;
}

/* The pattern the pre-tokenizer splits by, rewritten for PCRE2 (*pattern). */
static int read_pre_tokenizer(Ctx *c, const cJSON *pt, char **pattern, int *scan)
{
    const char *src = NULL;
    int rc;
    if (!pt || cJSON_IsNull(pt)) return unsupported(c, "a null pre_tokenizer", NULL);
    if (strcmp(type_of(pt), "ByteLevel") == 0) {
        if ((rc = byte_level_ok(c, pt, 1))) return rc;
        src = BYTELEVEL_PATTERN;
    } else if (strcmp(type_of(pt), "Sequence") == 0) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(pt, "pretokenizers");
        const cJSON *split = cJSON_GetArrayItem(list, 0), *bl = cJSON_GetArrayItem(list, 1);
        if (cJSON_GetArraySize(list) != 2 || strcmp(type_of(split), "Split") != 0 ||
            strcmp(type_of(bl), "ByteLevel") != 0)
            return unsupported(c, "a pre_tokenizer Sequence other than [Split, ByteLevel]", NULL);
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(split, "pattern");
        const cJSON *re = cJSON_GetObjectItemCaseSensitive(pat, "Regex");
        const cJSON *beh = cJSON_GetObjectItemCaseSensitive(split, "behavior");
        if (!cJSON_IsString(re)) return unsupported(c, "a Split pattern that is not a Regex", NULL);
        if (!cJSON_IsString(beh) || strcmp(beh->valuestring, "Isolated") != 0)
            return unsupported(c, "Split behavior", cJSON_IsString(beh) ? beh->valuestring : "?");
        if (is_true(split, "invert")) return unsupported(c, "Split invert", "true");
        if ((rc = byte_level_ok(c, bl, 0))) return rc;
        src = re->valuestring;
    } else {
        return unsupported(c, "pre_tokenizer type", type_of(pt));
    }
    char why[200];
    *scan = tokenizer_scan_fits(src);
    if (tokenizer_pattern_rewrite(src, pattern, why, sizeof why)) {
        snprintf(c->err, c->err_len, "%s: pre_tokenizer: %s", c->path, why);
        return TOKENIZER_UNSUPPORTED;
    }
    return 0;
}

static int read_model_flags(Ctx *c, const cJSON *m, int *ignore_merges)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(m, "type");
    if (t && (!cJSON_IsString(t) || strcmp(t->valuestring, "BPE") != 0))
        return unsupported(c, "model type", type_of(m));
    if (is_set(m, "dropout")) return unsupported(c, "BPE dropout", NULL);
    if (is_true(m, "byte_fallback")) return unsupported(c, "BPE byte_fallback", "true");
    if (is_set(m, "continuing_subword_prefix"))
        return unsupported(c, "BPE continuing_subword_prefix", NULL);
    if (is_set(m, "end_of_word_suffix")) return unsupported(c, "BPE end_of_word_suffix", NULL);
    *ignore_merges = is_true(m, "ignore_merges");
    return 0;
}

/* The decode table: vocab entries by their spelled bytes, added tokens by
 * their content's bytes (theirs wins for an id in both). */
static int read_tokens(Ctx *c, Tokenizer *tk, const cJSON *vocab, const cJSON *added,
                       int *n_vocab_ids)
{
    int max_id = -1;
    size_t bytes = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, vocab)
    {
        double v = cJSON_IsNumber(it) ? it->valuedouble : -1;
        if (v != (int)v || v < 0 || v > (1 << 30)) {
            snprintf(c->err, c->err_len, "%s: model.vocab: \"%s\" has a bad id", c->path, it->string);
            return -1;
        }
        if ((int)v > max_id) max_id = (int)v;
        bytes += strlen(it->string);
    }
    *n_vocab_ids = max_id + 1;
    cJSON_ArrayForEach(it, added)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(it, "content");
        if (!cJSON_IsNumber(id) || id->valuedouble != (int)id->valuedouble || id->valueint < 0 ||
            id->valueint > (1 << 30) || !cJSON_IsString(content) || !content->valuestring[0]) {
            snprintf(c->err, c->err_len, "%s: added_tokens: an entry without an id and content",
                     c->path);
            return -1;
        }
        if (is_true(it, "single_word") || is_true(it, "lstrip") || is_true(it, "rstrip"))
            return unsupported(c, "an added token with single_word, lstrip or rstrip",
                               content->valuestring);
        if (id->valueint > max_id) max_id = id->valueint;
        bytes += strlen(content->valuestring);
    }
    tk->vocab_size = max_id + 1;
    uint32_t *len = calloc((size_t)tk->vocab_size, sizeof *len);
    uint8_t **src = calloc((size_t)tk->vocab_size, sizeof *src);
    tk->tok_off = calloc((size_t)tk->vocab_size + 1, sizeof *tk->tok_off);
    tk->tok_bytes = malloc(2 * bytes + 1);
    uint8_t *scratch = tk->tok_bytes ? tk->tok_bytes + bytes : NULL;
    int rc = -1;
    if (!len || !src || !tk->tok_off || !tk->tok_bytes || bytes > (1u << 31)) {
        snprintf(c->err, c->err_len, "%s: out of memory", c->path);
        goto out;
    }
    /* each token's bytes into the scratch half, then packed by id */
    size_t at = 0;
    cJSON_ArrayForEach(it, vocab)
    {
        int id = (int)it->valuedouble;
        long n = tokenizer_spelled_to_bytes(it->string, strlen(it->string), scratch + at);
        if (n <= 0) {
            rc = unsupported(c, "a vocabulary outside ByteLevel's byte alphabet: token", it->string);
            goto out;
        }
        if (src[id]) {
            snprintf(c->err, c->err_len, "%s: model.vocab: id %d given twice", c->path, id);
            goto out;
        }
        src[id] = scratch + at, len[id] = (uint32_t)n, at += (size_t)n;
    }
    cJSON_ArrayForEach(it, added)
    {
        const char *s = cJSON_GetObjectItemCaseSensitive(it, "content")->valuestring;
        int id = cJSON_GetObjectItemCaseSensitive(it, "id")->valueint;
        memcpy(scratch + at, s, strlen(s));
        src[id] = scratch + at, len[id] = (uint32_t)strlen(s), at += strlen(s);
    }
    /* packing moves bytes down from the scratch half: never over unread ones */
    size_t off = 0;
    for (int id = 0; id < tk->vocab_size; id++) {
        tk->tok_off[id] = (uint32_t)off;
        memmove(tk->tok_bytes + off, src[id] ? src[id] : tk->tok_bytes, len[id]);
        off += len[id];
    }
    tk->tok_off[tk->vocab_size] = (uint32_t)off;
    rc = 0;
out:
    free(len);
    free(src);
    return rc;
}

/* One merge's two halves, spelled, from "a b" or ["a", "b"]. */
static int merge_halves(const cJSON *m, const char **a, size_t *la, const char **b, size_t *lb)
{
    if (cJSON_IsString(m)) {
        const char *s = m->valuestring, *sp = strchr(s, ' ');
        if (!sp || sp == s || !sp[1] || strchr(sp + 1, ' ')) return -1;
        *a = s, *la = (size_t)(sp - s), *b = sp + 1, *lb = strlen(sp + 1);
        return 0;
    }
    const cJSON *x = cJSON_GetArrayItem(m, 0), *y = cJSON_GetArrayItem(m, 1);
    if (!cJSON_IsArray(m) || cJSON_GetArraySize(m) != 2 || !cJSON_IsString(x) || !cJSON_IsString(y))
        return -1;
    *a = x->valuestring, *la = strlen(*a), *b = y->valuestring, *lb = strlen(*b);
    return 0;
}

static int read_merges(Ctx *c, Tokenizer *tk, const cJSON *merges)
{
    if (!cJSON_IsArray(merges)) {
        snprintf(c->err, c->err_len, "%s: model.merges: not a list", c->path);
        return -1;
    }
    int n = cJSON_GetArraySize(merges);
    if (tokenizer_merges_alloc(tk, (size_t)n)) {
        snprintf(c->err, c->err_len, "%s: out of memory", c->path);
        return -1;
    }
    uint8_t buf[2048];
    uint32_t rank = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, merges)
    {
        const char *a, *b;
        size_t la, lb;
        long na = -1, nb = -1;
        int32_t ia = -1, ib = -1, iab = -1;
        if (merge_halves(m, &a, &la, &b, &lb) == 0 && la + lb <= sizeof buf) {
            na = tokenizer_spelled_to_bytes(a, la, buf);
            nb = na > 0 ? tokenizer_spelled_to_bytes(b, lb, buf + na) : -1;
        }
        if (na > 0 && nb > 0) {
            ia = tokenizer_piece_find(tk, buf, (size_t)na);
            ib = tokenizer_piece_find(tk, buf + na, (size_t)nb);
            iab = tokenizer_piece_find(tk, buf, (size_t)(na + nb));
        }
        if (ia < 0 || ib < 0 || iab < 0) {
            char *txt = cJSON_PrintUnformatted(m);
            snprintf(c->err, c->err_len, "%s: model.merges[%u] %s: not two vocabulary tokens "
                     "whose concatenation is one", c->path, rank, txt ? txt : "?");
            free(txt);
            return -1;
        }
        tokenizer_merge_put(tk, ia, ib, rank++, iab);
    }
    return 0;
}

static int read_literals(Ctx *c, Tokenizer *tk, const cJSON *added, int allow_special,
                         int n_vocab_ids)
{
    int n = cJSON_GetArraySize(added), k = 0;
    int32_t *lit = malloc(((size_t)n + 1) * sizeof *lit);
    if (!lit) {
        snprintf(c->err, c->err_len, "%s: out of memory", c->path);
        return -1;
    }
    const cJSON *it;
    tk->doc_id = -1;
    static const char *const DOC[] = {"<|begin_of_text|>", "<|endoftext|>", "<|end_of_text|>"};
    int doc_rank = 3;
    cJSON_ArrayForEach(it, added)
    {
        int id = cJSON_GetObjectItemCaseSensitive(it, "id")->valueint;
        const char *s = cJSON_GetObjectItemCaseSensitive(it, "content")->valuestring;
        if (allow_special || !is_true(it, "special")) lit[k++] = id;
        for (int d = 0; d < doc_rank; d++)
            if (strcmp(s, DOC[d]) == 0) tk->doc_id = id, doc_rank = d;
    }
    int rc = tokenizer_finish(tk, c->path, lit, k, n_vocab_ids, c->err, c->err_len);
    free(lit);
    return rc;
}

int tokenizer_load_hf(Tokenizer *tk, const char *path, int allow_special, char *err,
                      size_t err_len)
{
    memset(tk, 0, sizeof *tk);
    Ctx c = {.path = path, .err = err, .err_len = err_len};
    char *json = NULL;
    size_t len = 0;
    if (io_read_whole(path, 2, HF_JSON_MAX_BYTES, "a tokenizer.json", &json, &len, err, err_len))
        return -1;
    cJSON *root = cJSON_ParseWithLength(json, len);
    free(json);
    int rc = -1, ignore_merges = 0, n_vocab_ids = 0;
    if (!cJSON_IsObject(root)) {
        snprintf(err, err_len, "%s: not a JSON object (a Hugging Face tokenizer.json)", path);
        goto out;
    }
    const cJSON *norm = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(root, "decoder");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    if (!cJSON_IsObject(model) || !cJSON_IsObject(vocab)) {
        snprintf(err, err_len, "%s: no model.vocab object (not a tokenizer.json)", path);
        goto out;
    }
    if (norm && !cJSON_IsNull(norm)) {
        const cJSON *bad = norm;
        if (strcmp(type_of(norm), "NFC") == 0) {
            bad = NULL;
        } else if (strcmp(type_of(norm), "Sequence") == 0) {
            const cJSON *list = cJSON_GetObjectItemCaseSensitive(norm, "normalizers"), *it;
            bad = cJSON_GetArraySize(list) > 0 ? NULL : norm;
            cJSON_ArrayForEach(it, list) if (!bad && strcmp(type_of(it), "NFC") != 0) bad = it;
        }
        if (bad) {
            rc = unsupported(&c, "normalizer", type_of(bad));
            goto out;
        }
        tk->nfc = 1;
    }
    if (dec && !cJSON_IsNull(dec) && strcmp(type_of(dec), "ByteLevel") != 0) {
        rc = unsupported(&c, "decoder", type_of(dec));
        goto out;
    }
    if ((rc = read_model_flags(&c, model, &ignore_merges)) ||
        (rc = read_pre_tokenizer(&c, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"),
                                 &tk->pattern, &tk->scan)) ||
        (rc = read_tokens(&c, tk, vocab, added, &n_vocab_ids)))
        goto out;
    rc = -1;
    tk->kind = TOKENIZER_HF;
    tk->whole_piece = 1; /* the piece map, for the merges; whole pieces per ignore_merges below */
    const char *base = strrchr(path, '/');
    snprintf(tk->name, sizeof tk->name, "%s", base ? base + 1 : path);
    if (tokenizer_piece_map(tk, n_vocab_ids)) {
        snprintf(err, err_len, "%s: out of memory", path);
        goto out;
    }
    if (read_merges(&c, tk, cJSON_GetObjectItemCaseSensitive(model, "merges"))) goto out;
    tk->whole_piece = ignore_merges;
    rc = read_literals(&c, tk, added, allow_special, n_vocab_ids);
out:
    cJSON_Delete(root);
    if (rc) tokenizer_free(tk);
    return rc;
}
