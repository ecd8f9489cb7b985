/* data/tokenizer.c — loading GPT-2's vocabulary, decoding, finding the files
 * (tokenizer.h). Encoding lives in tokenizer_encode.c.
 *
 * encoder.json maps each token, spelled in bytes_to_unicode's alphabet, to its
 * id; vocab.bpe lists the 50,000 merges "left right" after a "#version" line,
 * best first. Both are turned into raw bytes at load time, so encoding and
 * decoding never see the alphabet again. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>

#include "tokenizer.h"
#include "tokenizer_build.h"
#include "tokenizer_encode.h"
#include "source.h"

#include "base/fileio.h"

/* The real files are 1.0 MB (encoder.json) and 0.5 MB (vocab.bpe); anything
 * far larger is not a GPT-2 vocabulary file. */
#define VOCAB_FILE_MAX_BYTES (16u << 20)

static int read_whole(const char *path, char **data, size_t *len, char *err, size_t err_len)
{
    /* Only regular files (base/fileio) of a sane size: /dev/zero would never end. */
    off_t size;
    int fd = io_open_regular(path, &size, err, err_len);
    if (fd < 0) return -1;
    if ((unsigned long long)size > VOCAB_FILE_MAX_BYTES) {
        snprintf(err, err_len, "%s: larger than 16 MiB: not a GPT-2 vocabulary file", path);
        close(fd);
        return -1;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        snprintf(err, err_len, "%s: cannot read: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *bigger = realloc(buf, 2 * cap + 1);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    int bad = !buf || ferror(f);
    int saved = errno;
    fclose(f);
    if (bad) {
        snprintf(err, err_len, "%s: cannot read: %s", path, buf ? strerror(saved) : "out of memory");
        free(buf);
        return -1;
    }
    buf[n] = 0;
    *data = buf;
    *len = n;
    return 0;
}

static int check_sha256(const char *path, const char *data, size_t len, const char *want,
                        char *err, size_t err_len)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    if (!EVP_Digest(data, len, md, &md_len, EVP_sha256(), NULL) || md_len != 32) {
        snprintf(err, err_len, "%s: cannot compute sha256 (OpenSSL failure)", path);
        return -1;
    }
    char hex[65];
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
    if (strcmp(hex, want) != 0) {
        snprintf(err, err_len,
                 "%s: not GPT-2's file: sha256 is %s, expected %s (corrupt, truncated or another "
                 "vocabulary)",
                 path, hex, want);
        return -1;
    }
    return 0;
}

/* Temporary map raw bytes -> id, used only while reading vocab.bpe. */
typedef struct {
    int32_t *slot; /* id, or -1 */
    size_t mask;
} BytesMap;

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

static int32_t bytes_map_find(const Tokenizer *tk, const BytesMap *m, const uint8_t *p, size_t n,
                              int32_t insert_id)
{
    size_t i = hash_bytes(p, n) & m->mask;
    for (;; i = (i + 1) & m->mask) {
        int32_t id = m->slot[i];
        if (id < 0) {
            if (insert_id >= 0) m->slot[i] = insert_id;
            return -1;
        }
        size_t len = tk->tok_off[id + 1] - tk->tok_off[id];
        if (len == n && memcmp(tk->tok_bytes + tk->tok_off[id], p, n) == 0) return id;
    }
}

static int load_encoder(Tokenizer *tk, const char *path, const char *json, size_t json_len,
                        char *err, size_t err_len)
{
    cJSON *root = cJSON_ParseWithLength(json, json_len);
    if (!root || !cJSON_IsObject(root)) {
        snprintf(err, err_len, "%s: not a JSON object", path);
        cJSON_Delete(root);
        return -1;
    }
    int n = cJSON_GetArraySize(root);
    if (n != GPT2_VOCAB_SIZE) {
        snprintf(err, err_len, "%s: %d entries, expected %d", path, n, GPT2_VOCAB_SIZE);
        cJSON_Delete(root);
        return -1;
    }
    /* first pass: lengths per id; second: bytes */
    const cJSON **by_id = calloc(n, sizeof *by_id);
    tk->tok_off = calloc((size_t)n + 1, sizeof *tk->tok_off);
    tk->tok_bytes = malloc(json_len);
    if (!by_id || !tk->tok_off || !tk->tok_bytes) {
        snprintf(err, err_len, "%s: out of memory", path);
        free(by_id);
        cJSON_Delete(root);
        return -1;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, root)
    {
        double v = cJSON_IsNumber(it) ? it->valuedouble : -1;
        int id = (int)v;
        if (v != id || id < 0 || id >= n || by_id[id]) {
            snprintf(err, err_len, "%s: entry \"%s\" has a bad or repeated id", path, it->string);
            free(by_id);
            cJSON_Delete(root);
            return -1;
        }
        by_id[id] = it;
    }
    size_t off = 0;
    for (int id = 0; id < n; id++) {
        const char *s = by_id[id]->string;
        long len = tokenizer_spelled_to_bytes(s, strlen(s), tk->tok_bytes + off);
        if (len <= 0) {
            snprintf(err, err_len, "%s: token %d (\"%s\") is not in GPT-2's byte alphabet", path,
                     id, s);
            free(by_id);
            cJSON_Delete(root);
            return -1;
        }
        tk->tok_off[id] = (uint32_t)off;
        off += (size_t)len;
    }
    tk->tok_off[n] = (uint32_t)off;
    tk->vocab_size = n;
    free(by_id);
    cJSON_Delete(root);
    for (int b = 0; b < 256; b++) tk->byte_id[b] = -1;
    for (int id = 0; id < n; id++)
        if (tk->tok_off[id + 1] - tk->tok_off[id] == 1) tk->byte_id[tk->tok_bytes[tk->tok_off[id]]] = id;
    for (int b = 0; b < 256; b++)
        if (tk->byte_id[b] < 0) {
            snprintf(err, err_len, "%s: no token for the single byte 0x%02x", path, b);
            return -1;
        }
    return 0;
}

static int load_merges(Tokenizer *tk, const char *path, char *text, size_t len, char *err,
                       size_t err_len)
{
    BytesMap map = {.mask = (1u << 17) - 1};
    map.slot = malloc((map.mask + 1) * sizeof *map.slot);
    int merges_bad = tokenizer_merges_alloc(tk, GPT2_NUM_MERGES); /* 2^17 slots */
    uint8_t *buf = malloc(2 * len + 2);
    int rc = -1;
    if (!map.slot || merges_bad || !buf) {
        snprintf(err, err_len, "%s: out of memory", path);
        goto done;
    }
    memset(map.slot, 0xff, (map.mask + 1) * sizeof *map.slot);
    for (int id = 0; id < tk->vocab_size; id++) {
        const uint8_t *p = tk->tok_bytes + tk->tok_off[id];
        bytes_map_find(tk, &map, p, tk->tok_off[id + 1] - tk->tok_off[id], id);
    }
    /* Like encoder.py: lines split on '\n'; the first is the version line,
     * the empty string after the final newline is not a merge. */
    char *line = text, *end = text + len;
    if (len < 8 || strncmp(text, "#version", 8) != 0) {
        snprintf(err, err_len, "%s: line 1: expected \"#version: ...\"", path);
        goto done;
    }
    uint32_t rank = 0;
    for (long lineno = 1; line < end; lineno++) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        char *stop = nl ? nl : end;
        if (lineno > 1 && stop > line) {
            char *sp = memchr(line, ' ', (size_t)(stop - line));
            if (!sp || sp == line || sp + 1 == stop || memchr(sp + 1, ' ', (size_t)(stop - sp - 1))) {
                snprintf(err, err_len, "%s: line %ld: expected two tokens separated by a space",
                         path, lineno);
                goto done;
            }
            long la = tokenizer_spelled_to_bytes(line, (size_t)(sp - line), buf);
            long lb = la > 0 ? tokenizer_spelled_to_bytes(sp + 1, (size_t)(stop - sp - 1), buf + la) : -1;
            int32_t a = la > 0 ? bytes_map_find(tk, &map, buf, (size_t)la, -1) : -1;
            int32_t b = lb > 0 ? bytes_map_find(tk, &map, buf + la, (size_t)lb, -1) : -1;
            int32_t ab = (a >= 0 && b >= 0) ? bytes_map_find(tk, &map, buf, (size_t)(la + lb), -1) : -1;
            if (ab < 0) {
                snprintf(err, err_len, "%s: line %ld: \"%.*s\" is not a merge of two tokens into "
                         "a token of encoder.json", path, lineno, (int)(stop - line), line);
                goto done;
            }
            /* a repeated pair takes the later rank, as encoder.py's dict */
            tokenizer_merge_put(tk, a, b, rank++, ab);
        } else if (lineno > 1 && nl) {
            snprintf(err, err_len, "%s: line %ld: empty line", path, lineno);
            goto done;
        }
        line = stop + 1;
    }
    if (rank != GPT2_NUM_MERGES) {
        snprintf(err, err_len, "%s: %u merges, expected %d", path, rank, GPT2_NUM_MERGES);
        goto done;
    }
    rc = 0;
done:
    free(map.slot);
    free(buf);
    return rc;
}

int tokenizer_load(Tokenizer *tk, const char *encoder_json, const char *vocab_bpe, char *err,
                   size_t err_len)
{
    memset(tk, 0, sizeof *tk);
    char *json = NULL, *bpe = NULL;
    size_t json_len = 0, bpe_len = 0;
    int rc = -1;
    if (read_whole(encoder_json, &json, &json_len, err, err_len) ||
        check_sha256(encoder_json, json, json_len, GPT2_ENCODER_SHA256, err, err_len) ||
        read_whole(vocab_bpe, &bpe, &bpe_len, err, err_len) ||
        check_sha256(vocab_bpe, bpe, bpe_len, GPT2_VOCAB_SHA256, err, err_len) ||
        load_encoder(tk, encoder_json, json, json_len, err, err_len) ||
        load_merges(tk, vocab_bpe, bpe, bpe_len, err, err_len) ||
        tokenizer_encoder_init(tk, err, err_len))
        goto done;
    tk->kind = TOKENIZER_GPT2;
    tk->doc_id = GPT2_EOT;
    snprintf(tk->name, sizeof tk->name, "GPT-2");
    rc = 0;
done:
    free(json);
    free(bpe);
    if (rc) tokenizer_free(tk);
    return rc;
}

void tokenizer_free(Tokenizer *tk)
{
    tokenizer_encoder_free(tk);
    free(tk->tok_bytes);
    free(tk->tok_off);
    free(tk->merges);
    free(tk->pattern);
    free(tk->literal_id);
    memset(tk, 0, sizeof *tk);
}

const uint8_t *tokenizer_token_bytes(const Tokenizer *tk, int32_t id, size_t *len)
{
    if (id < 0 || id >= tk->vocab_size || tk->tok_off[id + 1] == tk->tok_off[id]) return NULL;
    *len = tk->tok_off[id + 1] - tk->tok_off[id];
    return tk->tok_bytes + tk->tok_off[id];
}

int tokenizer_decode(const Tokenizer *tk, const int32_t *ids, size_t n, TokenText *out, char *err,
                     size_t err_len)
{
    size_t need = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= tk->vocab_size) {
            snprintf(err, err_len, "decode: id %ld at position %zu is outside the vocabulary [0, %d)",
                     (long)ids[i], i, tk->vocab_size);
            return -1;
        }
        if (tk->tok_off[ids[i] + 1] == tk->tok_off[ids[i]]) {
            snprintf(err, err_len, "decode: id %ld at position %zu is no token of %s (an unused "
                     "id)", (long)ids[i], i, tk->name);
            return -1;
        }
        need += tk->tok_off[ids[i] + 1] - tk->tok_off[ids[i]];
    }
    if (out->len + need > out->cap) {
        size_t cap = out->cap ? out->cap : 256;
        while (cap < out->len + need) cap *= 2;
        uint8_t *p = realloc(out->data, cap);
        if (!p) {
            snprintf(err, err_len, "decode: out of memory for %zu bytes", out->len + need);
            return -1;
        }
        out->data = p;
        out->cap = cap;
    }
    for (size_t i = 0; i < n; i++) {
        size_t len = tk->tok_off[ids[i] + 1] - tk->tok_off[ids[i]];
        memcpy(out->data + out->len, tk->tok_bytes + tk->tok_off[ids[i]], len);
        out->len += len;
    }
    return 0;
}

int tokenizer_find_files(char *enc, char *vocab, size_t cap, char *from, size_t from_len,
                         char *err, size_t err_len)
{
    char paths[SOURCE_MAX_FILES][SOURCE_PATH_MAX];
    if (source_find(&SOURCE_GPT2, NULL, paths, from, from_len, err, err_len) != 0) return -1;
    if ((size_t)snprintf(enc, cap, "%s", paths[0]) >= cap ||
        (size_t)snprintf(vocab, cap, "%s", paths[1]) >= cap) {
        snprintf(err, err_len, "%s: path too long", paths[0]);
        return -1;
    }
    return 0;
}

int tokenizer_load_or_find(Tokenizer *tk, const char *enc_path, const char *voc_path, int quiet,
                           char *err, size_t err_len)
{
    char enc[SOURCE_PATH_MAX], voc[SOURCE_PATH_MAX], from[SOURCE_PATH_MAX + 200];
    if (!enc_path || !voc_path) {
        if (tokenizer_find_files(enc, voc, sizeof enc, from, sizeof from, err, err_len)) {
            size_t n = strlen(err);
            snprintf(err + n, err_len - n, "; or give --encoder and --vocab");
            return -1;
        }
        if (!quiet) fprintf(stderr, "tokenize: GPT-2 vocabulary from %s\n", from);
        if (!enc_path) enc_path = enc;
        if (!voc_path) voc_path = voc;
    }
    return tokenizer_load(tk, enc_path, voc_path, err, err_len);
}
