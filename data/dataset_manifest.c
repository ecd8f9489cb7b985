/* data/dataset_manifest.c — the dataset manifest: parsing, checking,
 * writing (the format is in dataset.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* qsort_r */
#endif
#include "dataset.h"

#include <cjson/cJSON.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/json.h"
#include "loader.h"
#include "source.h"

#define FORMAT "train_gpt dataset"
#define VERSION 1

void dataset_manifest_free(DatasetManifest *m)
{
    free(m->shards);
    free(m->by_name);
    memset(m, 0, sizeof *m);
}

/* qsort_r's context: the shards the indices point into. */
static int by_name_cmp(const void *a, const void *b, void *ctx)
{
    const DatasetShard *s = ctx;
    return strcmp(s[*(const int *)a].name, s[*(const int *)b].name);
}

int dataset_manifest_index(DatasetManifest *m)
{
    free(m->by_name);
    m->by_name = malloc((m->num_shards ? (size_t)m->num_shards : 1) * sizeof *m->by_name);
    if (!m->by_name) return -1;
    for (int i = 0; i < m->num_shards; i++) m->by_name[i] = i;
    qsort_r(m->by_name, (size_t)m->num_shards, sizeof *m->by_name, by_name_cmp, m->shards);
    return 0;
}

int dataset_manifest_find(const DatasetManifest *m, const char *name)
{
    if (!m->by_name) {
        for (int i = 0; i < m->num_shards; i++)
            if (strcmp(m->shards[i].name, name) == 0) return i;
        return -1;
    }
    int lo = 0, hi = m->num_shards - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(m->shards[m->by_name[mid]].name, name);
        if (c == 0) return m->by_name[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

void dataset_manifest_digest(const DatasetManifest *m, unsigned char out[SHARD_SHA256_BYTES])
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned int n = 0;
    int ok = c && EVP_DigestInit_ex(c, EVP_sha256(), NULL);
    for (int i = 0; ok && i < m->num_shards; i++)
        ok = EVP_DigestUpdate(c, m->shards[i].sha256, SHARD_SHA256_BYTES);
    if (!ok || !EVP_DigestFinal_ex(c, out, &n) || n != SHARD_SHA256_BYTES)
        memset(out, 0, SHARD_SHA256_BYTES); /* OpenSSL out of memory: a digest nothing matches */
    EVP_MD_CTX_free(c);
}

static void to_hex(char *out, const unsigned char *b, size_t n)
{
    static const char hx[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hx[b[i] >> 4];
        out[2 * i + 1] = hx[b[i] & 15];
    }
    out[2 * n] = 0;
}

/* Exactly 2n lowercase or uppercase hex digits. */
static int from_hex(const char *s, unsigned char *b, size_t n)
{
    if (strlen(s) != 2 * n) return -1;
    for (size_t i = 0; i < 2 * n; i++) {
        char c = s[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (v < 0) return -1;
        b[i / 2] = (unsigned char)(i % 2 ? (b[i / 2] << 4) | v : v);
    }
    return 0;
}

/* json_get_whole into a count (lo >= 0). */
static int get_count(const cJSON *obj, const char *key, double lo, double hi, uint64_t *out)
{
    double d;
    if (json_get_whole(obj, key, lo, hi, &d) != 0) return -1;
    *out = (uint64_t)d;
    return 0;
}

/* A plain file name: no '/', not "." or "..", no control characters. */
static int plain_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= DATASET_NAME_MAX || strcmp(s, ".") == 0 || strcmp(s, "..") == 0) return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '/' || (unsigned char)s[i] < 0x20) return 0;
    return 1;
}

static int parse_shard(const cJSON *it, int i, int w, const char *what, DatasetShard *sh,
                       char *err, size_t err_len)
{
    const char *name = cJSON_IsObject(it) ? json_get_string(it, "name") : NULL;
    const char *sha = cJSON_IsObject(it) ? json_get_string(it, "sha256") : NULL;
    if (!name || !plain_name(name)) {
        io_err(err, err_len, "%s: shard %d: \"name\" missing or not a plain file name", what, i);
        return -1;
    }
    snprintf(sh->name, sizeof sh->name, "%s", name);
    if (get_count(it, "tokens", 0, 2147483647.0, &sh->tokens) != 0 ||
        get_count(it, "bytes", SHARD_HEADER_BYTES, 9007199254740992.0, &sh->bytes) != 0) {
        io_err(err, err_len, "%s: shard %s: \"tokens\" or \"bytes\" missing or out of range", what,
               name);
        return -1;
    }
    if (sh->bytes != SHARD_HEADER_BYTES + (uint64_t)w * sh->tokens) {
        io_err(err, err_len, "%s: shard %s: %llu bytes do not hold %llu tokens (1024 + %d per "
               "token)", what, name, (unsigned long long)sh->bytes,
               (unsigned long long)sh->tokens, w);
        return -1;
    }
    if (!sha || from_hex(sha, sh->sha256, SHARD_SHA256_BYTES) != 0) {
        io_err(err, err_len, "%s: shard %s: \"sha256\" missing or not 64 hex digits", what, name);
        return -1;
    }
    return 0;
}

/* ---- the tokenizer's identity ---- */

uint64_t dataset_tokenizer_id(const DatasetTokenizer *t)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    int ok = c && EVP_DigestInit_ex(c, EVP_sha256(), NULL);
    for (int i = 0; ok && i < t->num_files; i++)
        ok = EVP_DigestUpdate(c, t->files[i].sha256, SHARD_SHA256_BYTES);
    ok = ok && EVP_DigestFinal_ex(c, md, &n) && n >= 8;
    EVP_MD_CTX_free(c);
    uint64_t id = 0;
    for (int i = 0; ok && i < 8; i++) id = id << 8 | md[i];
    return id ? id : 1; /* 0 is "none recorded"; OpenSSL out of memory gives 1 */
}

static int tokenizer_slot(DatasetTokenizer *t, const char *path, char *err, size_t err_len)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    if (t->num_files == DATASET_TOKENIZER_MAX_FILES || !*base ||
        strlen(base) >= DATASET_NAME_MAX) {
        io_err(err, err_len, "%s: a tokenizer of more than %d files, or a name over %d bytes",
               path, DATASET_TOKENIZER_MAX_FILES, DATASET_NAME_MAX - 1);
        return -1;
    }
    snprintf(t->files[t->num_files].name, DATASET_NAME_MAX, "%s", base);
    return t->num_files;
}

int dataset_tokenizer_add_file(DatasetTokenizer *t, const char *path, char *err, size_t err_len)
{
    int k = tokenizer_slot(t, path, err, err_len);
    if (k < 0 || shard_hash_file(path, t->files[k].sha256, NULL, err, err_len) != 0) return -1;
    t->num_files++;
    t->id = dataset_tokenizer_id(t);
    return 0;
}

int dataset_tokenizer_add_digest(DatasetTokenizer *t, const char *name, const char *sha256_hex,
                                 char *err, size_t err_len)
{
    int k = tokenizer_slot(t, name, err, err_len);
    if (k < 0) return -1;
    if (from_hex(sha256_hex, t->files[k].sha256, SHARD_SHA256_BYTES) != 0) {
        io_err(err, err_len, "%s: internal error: a digest that is not 64 hex digits", name);
        return -1;
    }
    t->num_files++;
    t->id = dataset_tokenizer_id(t);
    return 0;
}

int dataset_tokenizer_of(DatasetTokenizer *t, const Tokenizer *tk, const TokenizerChoice *c,
                         char *err, size_t err_len)
{
    memset(t, 0, sizeof *t);
    t->vocab_size = tk->vocab_size;
    if (c->hf_json) {
        if (dataset_tokenizer_add_file(t, c->hf_json, err, err_len)) return -1;
        /* the one file of SOURCE_LLAMA3 gets the set's name, any other its base name */
        unsigned char llama[SHARD_SHA256_BYTES];
        int is_llama = from_hex(SOURCE_LLAMA3.sha256[0], llama, sizeof llama) == 0 &&
                       memcmp(llama, t->files[0].sha256, sizeof llama) == 0;
        /* a long base name is cut: the name is for messages, the id is the digest */
        snprintf(t->name, sizeof t->name, "%.*s", (int)sizeof t->name - 1,
                 is_llama ? SOURCE_LLAMA3.name : t->files[0].name);
        return 0;
    }
    if (c->encoding) {
        const SourceSpec *spec = source_by_name(c->encoding);
        if (!spec || spec->nfiles != 1) {
            io_err(err, err_len, "%s: not a known tiktoken encoding", c->encoding);
            return -1;
        }
        snprintf(t->name, sizeof t->name, "%s", spec->name);
        return dataset_tokenizer_add_digest(t, spec->files[0], spec->sha256[0], err, err_len);
    }
    snprintf(t->name, sizeof t->name, "gpt2");
    return dataset_tokenizer_add_digest(t, "encoder.json", GPT2_ENCODER_SHA256, err, err_len) ||
                   dataset_tokenizer_add_digest(t, "vocab.bpe", GPT2_VOCAB_SHA256, err, err_len)
               ? -1
               : 0;
}

void dataset_tokenizer_describe(const DatasetTokenizer *t, char *out, size_t len)
{
    io_err(out, len, "%s (id %016llx:", t->name[0] ? t->name : "tokenizer",
           (unsigned long long)t->id);
    for (int i = 0; i < t->num_files; i++) {
        const unsigned char *d = t->files[i].sha256;
        size_t used = strlen(out);
        io_err(out + used, len - used, "%s %s sha256 %02x%02x%02x%02x%02x%02x...", i ? "," : "",
               t->files[i].name, d[0], d[1], d[2], d[3], d[4], d[5]);
    }
    size_t used = strlen(out);
    io_err(out + used, len - used, ")");
}

/* "token_bytes" (absent: 2) and "tokenizer" (absent: none), checked. */
static int parse_width_and_tokenizer(const cJSON *root, const char *what, DatasetManifest *m,
                                     char *err, size_t err_len)
{
    uint64_t w = 2;
    if (cJSON_GetObjectItemCaseSensitive(root, "token_bytes") &&
        (get_count(root, "token_bytes", 2, 4, &w) != 0 || w == 3)) {
        io_err(err, err_len, "%s: \"token_bytes\" is not 2 or 4", what);
        return -1;
    }
    m->token_bytes = (int)w;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "tokenizer");
    if (!t) return 0;
    const cJSON *files = cJSON_IsObject(t) ? cJSON_GetObjectItemCaseSensitive(t, "files") : NULL;
    const char *name = cJSON_IsObject(t) ? json_get_string(t, "name") : NULL;
    const char *id = cJSON_IsObject(t) ? json_get_string(t, "id") : NULL;
    uint64_t vocab;
    unsigned char idb[8];
    int nf = cJSON_IsArray(files) ? cJSON_GetArraySize(files) : -1;
    if (!name || strlen(name) >= DATASET_TOKENIZER_NAME_MAX || !id || from_hex(id, idb, 8) != 0 ||
        get_count(t, "vocab_size", 1, 2147483647.0, &vocab) != 0 || nf < 1 ||
        nf > DATASET_TOKENIZER_MAX_FILES) {
        io_err(err, err_len, "%s: \"tokenizer\" lacks a \"name\", \"vocab_size\", \"id\" (16 hex "
               "digits) or 1..%d \"files\"", what, DATASET_TOKENIZER_MAX_FILES);
        return -1;
    }
    DatasetTokenizer *tk = &m->tok;
    snprintf(tk->name, sizeof tk->name, "%s", name);
    tk->vocab_size = (int)vocab;
    const cJSON *it;
    cJSON_ArrayForEach(it, files)
    {
        const char *fname = cJSON_IsObject(it) ? json_get_string(it, "name") : NULL;
        const char *sha = cJSON_IsObject(it) ? json_get_string(it, "sha256") : NULL;
        if (!fname || !plain_name(fname) || !sha ||
            dataset_tokenizer_add_digest(tk, fname, sha, err, err_len) != 0) {
            io_err(err, err_len, "%s: tokenizer file %d: \"name\" not a plain file name or "
                   "\"sha256\" not 64 hex digits", what, tk->num_files);
            return -1;
        }
    }
    uint64_t listed = 0;
    for (int i = 0; i < 8; i++) listed = listed << 8 | idb[i];
    if (listed != tk->id) {
        io_err(err, err_len, "%s: the tokenizer's \"id\" %016llx is not that of its files "
               "(%016llx): corrupt or edited manifest", what, (unsigned long long)listed,
               (unsigned long long)tk->id);
        return -1;
    }
    if (shard_token_bytes_for(tk->vocab_size) > m->token_bytes) {
        io_err(err, err_len, "%s: a tokenizer of %d ids cannot write uint%d shards "
               "(\"token_bytes\" %d)", what, tk->vocab_size, 8 * m->token_bytes, m->token_bytes);
        return -1;
    }
    return 0;
}

/* The "tokenizer" object; 0 when out of memory. */
static int add_tokenizer(cJSON *root, const DatasetTokenizer *t)
{
    cJSON *o = cJSON_AddObjectToObject(root, "tokenizer");
    cJSON *arr = o ? cJSON_AddArrayToObject(o, "files") : NULL;
    char id[17], hex[2 * SHARD_SHA256_BYTES + 1];
    if (!arr) return 0;
    snprintf(id, sizeof id, "%016llx", (unsigned long long)t->id);
    cJSON_AddStringToObject(o, "name", t->name);
    cJSON_AddNumberToObject(o, "vocab_size", t->vocab_size);
    cJSON_AddStringToObject(o, "id", id);
    for (int i = 0; i < t->num_files; i++) {
        cJSON *f = cJSON_CreateObject();
        if (!f) return 0;
        cJSON_AddStringToObject(f, "name", t->files[i].name);
        to_hex(hex, t->files[i].sha256, SHARD_SHA256_BYTES);
        cJSON_AddStringToObject(f, "sha256", hex);
        cJSON_AddItemToArray(arr, f);
    }
    return 1;
}

int dataset_manifest_parse(const char *text, size_t len, const char *what, DatasetManifest *m,
                           char *err, size_t err_len)
{
    memset(m, 0, sizeof *m);
    cJSON *root = cJSON_ParseWithLength(text, len);
    const cJSON *shards = root ? cJSON_GetObjectItemCaseSensitive(root, "shards") : NULL;
    const char *id = root ? json_get_string(root, "dataset_id") : NULL;
    const char *hash = root ? json_get_string(root, "hash") : NULL;
    const char *sha = root ? json_get_string(root, "sha256") : NULL;
    unsigned char idb[8], total_sha[SHARD_SHA256_BYTES], want_sha[SHARD_SHA256_BYTES];
    uint64_t tokens, sum = 0;
    int rc = -1;
    if (!root || !cJSON_IsObject(root)) {
        io_err(err, err_len, "%s: not a JSON object (truncated or corrupt manifest)", what);
        goto out;
    }
    if (json_check_format(root, what, FORMAT, VERSION, VERSION, NULL, err, err_len) != 0)
        goto out;
    if (!hash || strcmp(hash, "sha256") != 0) {
        io_err(err, err_len, "%s: \"hash\" is not \"sha256\"", what);
        goto out;
    }
    if (!id || from_hex(id, idb, 8) != 0) {
        io_err(err, err_len, "%s: \"dataset_id\" missing or not 16 hex digits", what);
        goto out;
    }
    for (int i = 0; i < 8; i++) m->id = m->id << 8 | idb[i];
    if (m->id == 0) {
        io_err(err, err_len, "%s: \"dataset_id\" is zero", what);
        goto out;
    }
    if (get_count(root, "tokens", 0, 9007199254740992.0, &tokens) != 0 ||
        !sha || from_hex(sha, total_sha, SHARD_SHA256_BYTES) != 0) {
        io_err(err, err_len, "%s: \"tokens\" or \"sha256\" missing or malformed", what);
        goto out;
    }
    if (parse_width_and_tokenizer(root, what, m, err, err_len) != 0) goto out;
    int n = cJSON_IsArray(shards) ? cJSON_GetArraySize(shards) : -1;
    if (n < 0 || n > LOADER_MAX_SHARDS) {
        io_err(err, err_len, "%s: \"shards\" missing or more than %d", what, LOADER_MAX_SHARDS);
        goto out;
    }
    m->shards = calloc(n ? (size_t)n : 1, sizeof *m->shards);
    if (!m->shards) {
        io_err(err, err_len, "%s: out of host memory", what);
        goto out;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, shards)
    {
        DatasetShard *sh = &m->shards[m->num_shards];
        if (parse_shard(it, m->num_shards, m->token_bytes, what, sh, err, err_len) != 0) goto out;
        m->num_shards++;
        sum += sh->tokens;
    }
    if (dataset_manifest_index(m) != 0) {
        io_err(err, err_len, "%s: out of host memory", what);
        goto out;
    }
    for (int i = 1; i < n; i++)
        if (strcmp(m->shards[m->by_name[i]].name, m->shards[m->by_name[i - 1]].name) == 0) {
            io_err(err, err_len, "%s: shard %s is listed twice", what,
                   m->shards[m->by_name[i]].name);
            goto out;
        }
    if (sum != tokens) {
        io_err(err, err_len, "%s: \"tokens\" is %llu, but the shards hold %llu", what,
               (unsigned long long)tokens, (unsigned long long)sum);
        goto out;
    }
    m->tokens = tokens;
    dataset_manifest_digest(m, want_sha);
    if (memcmp(want_sha, total_sha, sizeof want_sha) != 0) {
        io_err(err, err_len, "%s: \"sha256\" does not match the shards' digests (corrupt or "
               "edited manifest)", what);
        goto out;
    }
    memcpy(m->sha256, total_sha, sizeof total_sha);
    rc = 0;
out:
    cJSON_Delete(root);
    if (rc != 0) dataset_manifest_free(m);
    return rc;
}

int dataset_manifest_read(const char *path, DatasetManifest *m, char *err, size_t err_len)
{
    memset(m, 0, sizeof *m);
    char *text;
    size_t len;
    int rc = io_read_whole(path, 2, DATASET_MANIFEST_MAX_BYTES, "a dataset manifest", &text, &len,
                           err, err_len);
    if (rc == 0) rc = dataset_manifest_parse(text, len, path, m, err, err_len);
    free(text);
    return rc;
}

int dataset_manifest_write(const char *path, DatasetManifest *m, char *err, size_t err_len)
{
    m->tokens = 0;
    for (int i = 0; i < m->num_shards; i++) m->tokens += m->shards[i].tokens;
    dataset_manifest_digest(m, m->sha256);
    char hex[2 * SHARD_SHA256_BYTES + 1], id[17];
    snprintf(id, sizeof id, "%016llx", (unsigned long long)m->id);
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    int ok = root && arr;
    if (ok) {
        cJSON_AddStringToObject(root, "format", FORMAT);
        cJSON_AddNumberToObject(root, "version", VERSION);
        cJSON_AddStringToObject(root, "dataset_id", id);
        cJSON_AddStringToObject(root, "hash", "sha256");
        cJSON_AddNumberToObject(root, "tokens", (double)m->tokens);
        to_hex(hex, m->sha256, SHARD_SHA256_BYTES);
        cJSON_AddStringToObject(root, "sha256", hex);
        cJSON_AddNumberToObject(root, "token_bytes", m->token_bytes ? m->token_bytes : 2);
        cJSON_AddItemToObject(root, "shards", arr);
        arr = NULL; /* owned by root now */
    }
    for (int i = 0; ok && i < m->num_shards; i++) {
        const DatasetShard *sh = &m->shards[i];
        cJSON *o = cJSON_CreateObject();
        ok = o != NULL;
        if (!ok) break;
        cJSON_AddStringToObject(o, "name", sh->name);
        cJSON_AddNumberToObject(o, "tokens", (double)sh->tokens);
        cJSON_AddNumberToObject(o, "bytes", (double)sh->bytes);
        to_hex(hex, sh->sha256, SHARD_SHA256_BYTES);
        cJSON_AddStringToObject(o, "sha256", hex);
        cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(root, "shards"), o);
    }
    /* after the shards: a reader that looks for the shards' fields by
     * position in the text (older tools, tests) finds them where it did */
    if (ok && m->tok.id) ok = add_tokenizer(root, &m->tok);
    char *text = ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    cJSON_Delete(arr);
    if (!text) {
        io_err(err, err_len, "%s: out of host memory", path);
        return -1;
    }
    size_t n = strlen(text);
    text[n] = '\n'; /* cJSON_Print's NUL becomes the final newline */
    int rc = io_write_file(path, text, n + 1, NULL, 0, err, err_len);
    free(text);
    return rc;
}

int dataset_manifest_path_for(const char *shard_path, char *out, size_t len)
{
    const char *base = strrchr(shard_path, '/');
    base = base ? base + 1 : shard_path;
    size_t n = strlen(shard_path);
    if (n < 4 || strcmp(shard_path + n - 4, ".bin") != 0) return -1;
    const char *d = shard_path + n - 4; /* digits end here */
    const char *p = d;
    while (p > base && p[-1] >= '0' && p[-1] <= '9') p--;
    if (p == d) return -1;
    static const char *const splits[2] = {"_val_", "_train_"};
    for (int k = 0; k < 2; k++) {
        size_t s = strlen(splits[k]);
        if ((size_t)(p - base) > s && strncmp(p - s, splits[k], s) == 0) {
            size_t keep = (size_t)(p - s - shard_path);
            return (size_t)snprintf(out, len, "%.*s%s", (int)keep, shard_path,
                                    DATASET_MANIFEST_SUFFIX) < len ? 0 : -1;
        }
    }
    return -1;
}
