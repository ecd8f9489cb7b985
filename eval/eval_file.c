/* eval/eval_file.c — llm.c's eval file format (eval_file.h). */
#include "eval_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"

void eval_set_free(EvalSet *es)
{
    free(es->ex);
    free(es->tokens);
    memset(es, 0, sizeof *es);
}

/* Room for one more example and n more tokens. */
static int reserve(EvalSet *es, size_t n)
{
    if (es->num_examples == es->cap_ex) {
        int cap = es->cap_ex ? 2 * es->cap_ex : 64;
        EvalExample *p = realloc(es->ex, (size_t)cap * sizeof *p);
        if (!p) return -1;
        es->ex = p;
        es->cap_ex = cap;
    }
    if (es->num_tokens + n > es->cap_tokens) {
        size_t cap = es->cap_tokens ? 2 * es->cap_tokens : 4096;
        while (cap < es->num_tokens + n) cap *= 2;
        uint16_t *p = realloc(es->tokens, cap * sizeof *p);
        if (!p) return -1;
        es->tokens = p;
        es->cap_tokens = cap;
    }
    return 0;
}

static int check_tokens(const int32_t *t, int n, const char *what, char *err, size_t err_len)
{
    for (int i = 0; i < n; i++)
        if (t[i] < 0 || t[i] >= EVAL_START_MARKER) {
            snprintf(err, err_len, "%s: token %d is outside 0..65534 (the format's uint16 "
                     "tokens, 65535 reserved)", what, t[i]);
            return -1;
        }
    return 0;
}

static size_t push(EvalSet *es, const int32_t *t, int n)
{
    size_t off = es->num_tokens;
    for (int i = 0; i < n; i++) es->tokens[off + i] = (uint16_t)t[i];
    es->num_tokens += (size_t)n;
    return off;
}

int eval_set_append(EvalSet *es, int label, const int32_t *ctx, int ctx_len,
                    const int32_t *const comp[EVAL_COMPLETIONS],
                    const int comp_len[EVAL_COMPLETIONS], char *err, size_t err_len)
{
    if (es->num_examples >= EVAL_MAX_EXAMPLES) {
        snprintf(err, err_len, "more than %d examples (the format's index is a uint16)",
                 EVAL_MAX_EXAMPLES);
        return -1;
    }
    if (label < 0 || label >= EVAL_COMPLETIONS) {
        snprintf(err, err_len, "label %d is outside 0..%d", label, EVAL_COMPLETIONS - 1);
        return -1;
    }
    if (ctx_len < 1) {
        snprintf(err, err_len, "the context has no tokens (the format needs at least one)");
        return -1;
    }
    size_t values = 5 + 1 + (size_t)ctx_len, total = (size_t)ctx_len;
    for (int c = 0; c < EVAL_COMPLETIONS; c++) {
        if (comp_len[c] < 1) {
            snprintf(err, err_len, "ending %d has no tokens", c);
            return -1;
        }
        values += 1 + (size_t)comp_len[c];
        total += (size_t)comp_len[c];
    }
    if (2 * values > EVAL_MAX_RECORD_BYTES) {
        snprintf(err, err_len, "the example needs a %zu-byte record; the format allows at most "
                 "%d (uint16 length)", 2 * values, EVAL_MAX_RECORD_BYTES);
        return -1;
    }
    if (check_tokens(ctx, ctx_len, "the context", err, err_len)) return -1;
    for (int c = 0; c < EVAL_COMPLETIONS; c++) {
        char what[32];
        snprintf(what, sizeof what, "ending %d", c);
        if (check_tokens(comp[c], comp_len[c], what, err, err_len)) return -1;
    }
    if (reserve(es, total) != 0) {
        snprintf(err, err_len, "out of memory for %d examples", es->num_examples + 1);
        return -1;
    }
    EvalExample *e = &es->ex[es->num_examples++];
    e->label = label;
    e->ctx_len = ctx_len;
    e->ctx_off = push(es, ctx, ctx_len);
    for (int c = 0; c < EVAL_COMPLETIONS; c++) {
        e->comp_len[c] = comp_len[c];
        e->comp_off[c] = push(es, comp[c], comp_len[c]);
    }
    if ((int)(2 * values) > es->longest_bytes) es->longest_bytes = (int)(2 * values);
    return 0;
}

/* Record i's uint16 values into out (which has room for them); returns the count. */
static size_t encode_record(const EvalSet *es, int i, uint16_t *out)
{
    const EvalExample *e = &es->ex[i];
    size_t k = 0;
    out[k++] = EVAL_START_MARKER;
    out[k++] = 0; /* the length, below */
    out[k++] = (uint16_t)i;
    out[k++] = (uint16_t)e->label;
    out[k++] = EVAL_COMPLETIONS;
    out[k++] = (uint16_t)e->ctx_len;
    memcpy(out + k, es->tokens + e->ctx_off, (size_t)e->ctx_len * 2);
    k += (size_t)e->ctx_len;
    for (int c = 0; c < EVAL_COMPLETIONS; c++) {
        out[k++] = (uint16_t)e->comp_len[c];
        memcpy(out + k, es->tokens + e->comp_off[c], (size_t)e->comp_len[c] * 2);
        k += (size_t)e->comp_len[c];
    }
    out[1] = (uint16_t)(2 * k);
    return k;
}

int eval_file_write(const char *path, const EvalSet *es, char *err, size_t err_len)
{
    if (es->num_examples < 1) {
        snprintf(err, err_len, "%s: no examples to write", path);
        return -1;
    }
    /* every record: 5 fixed values + 5 counts + the tokens */
    size_t values = (size_t)es->num_examples * (5 + 1 + EVAL_COMPLETIONS) + es->num_tokens;
    uint16_t *body = malloc(values * sizeof *body);
    if (!body) {
        snprintf(err, err_len, "%s: out of memory for %zu bytes", path, 2 * values);
        return -1;
    }
    size_t k = 0;
    for (int i = 0; i < es->num_examples; i++) k += encode_record(es, i, body + k);
    int32_t header[EVAL_HEADER_INTS] = {0};
    header[0] = EVAL_FILE_MAGIC;
    header[1] = EVAL_FILE_VERSION;
    header[2] = es->num_examples;
    header[3] = es->longest_bytes;
    int rc = io_write_file(path, header, sizeof header, body, k * sizeof *body, err, err_len);
    free(body);
    return rc;
}

/* ---- reading ---- */

static int check_header(const char *path, const int32_t *h, long long size, char *err,
                        size_t err_len)
{
    if (h[0] != EVAL_FILE_MAGIC)
        return io_err(err, err_len, "%s: bad magic %d (expected %d: not an llm.c eval file%s)",
                      path, h[0], EVAL_FILE_MAGIC,
                      h[0] == 20240520 ? "; this is a token shard" : ""), -1;
    if (h[1] != EVAL_FILE_VERSION)
        return io_err(err, err_len, "%s: unsupported version %d (expected %d)", path, h[1],
                      EVAL_FILE_VERSION), -1;
    if (h[2] < 1 || h[2] > EVAL_MAX_EXAMPLES)
        return io_err(err, err_len, "%s: example count %d in the header is outside 1..%d", path,
                      h[2], EVAL_MAX_EXAMPLES), -1;
    if (h[3] < EVAL_MIN_RECORD_BYTES || h[3] > EVAL_MAX_RECORD_BYTES)
        return io_err(err, err_len, "%s: longest-example length %d bytes in the header is "
                      "outside %d..%d", path, h[3], EVAL_MIN_RECORD_BYTES,
                      EVAL_MAX_RECORD_BYTES), -1;
    long long body = size - EVAL_HEADER_BYTES;
    if (body < (long long)h[2] * EVAL_MIN_RECORD_BYTES)
        return io_err(err, err_len, "%s: %lld bytes after the header cannot hold the header's "
                      "%d examples (at least %d bytes each; truncated?)", path, body, h[2],
                      EVAL_MIN_RECORD_BYTES), -1;
    if (body > (long long)h[2] * EVAL_MAX_RECORD_BYTES)
        return io_err(err, err_len, "%s: %lld bytes after the header are more than the header's "
                      "%d examples can take (at most %d bytes each)", path, body, h[2],
                      EVAL_MAX_RECORD_BYTES), -1;
    return 0;
}

/* Parse record i at v[at..), `left` values remaining in the file. On
 * success fills e (offsets into v) and returns the record's length in
 * values; -1 with a message otherwise. */
static long parse_record(const char *path, const uint16_t *v, size_t at, size_t left, int i,
                         EvalExample *e, char *err, size_t err_len)
{
    long long byte = EVAL_HEADER_BYTES + 2LL * (long long)at;
    if (left < 6)
        return io_err(err, err_len, "%s: example %d at byte %lld: truncated (the file ends "
                      "inside its first fields)", path, i, byte), -1;
    if (v[at] != EVAL_START_MARKER)
        return io_err(err, err_len, "%s: example %d at byte %lld: expected the start-of-example "
                      "marker 65535, found %u", path, i, byte, v[at]), -1;
    unsigned bytes = v[at + 1];
    if (bytes % 2 || bytes < EVAL_MIN_RECORD_BYTES || bytes / 2 > left)
        return io_err(err, err_len, "%s: example %d at byte %lld: record length %u bytes is "
                      "%s", path, i, byte, bytes,
                      bytes / 2 > left ? "past the end of the file (truncated)"
                                       : "not an even count of at least 30"), -1;
    size_t n = bytes / 2, end = at + n;
    if (v[at + 2] != (unsigned)i)
        return io_err(err, err_len, "%s: example %d at byte %lld: index field %u (expected %d: "
                      "examples are numbered in order)", path, i, byte, v[at + 2], i), -1;
    if (v[at + 4] != EVAL_COMPLETIONS)
        return io_err(err, err_len, "%s: example %d: %u completions (llm.c's format has %d)",
                      path, i, v[at + 4], EVAL_COMPLETIONS), -1;
    if (v[at + 3] >= EVAL_COMPLETIONS)
        return io_err(err, err_len, "%s: example %d: label %u is outside 0..%d", path, i,
                      v[at + 3], EVAL_COMPLETIONS - 1), -1;
    e->label = v[at + 3];
    size_t p = at + 5;
    for (int part = -1; part < EVAL_COMPLETIONS; part++) {
        char what[32];
        if (part < 0) snprintf(what, sizeof what, "the context");
        else snprintf(what, sizeof what, "completion %d", part);
        if (p >= end)
            return io_err(err, err_len, "%s: example %d: %s starts past the end of its %u-byte "
                          "record", path, i, what, bytes), -1;
        unsigned len = v[p++];
        if (len == 0)
            return io_err(err, err_len, "%s: example %d: %s has no tokens", path, i, what), -1;
        if (len > end - p)
            return io_err(err, err_len, "%s: example %d: %s of %u tokens overruns its %u-byte "
                          "record", path, i, what, len, bytes), -1;
        if (part < 0) e->ctx_len = (int)len, e->ctx_off = p;
        else e->comp_len[part] = (int)len, e->comp_off[part] = p;
        p += len;
    }
    if (p != end)
        return io_err(err, err_len, "%s: example %d: record length %u bytes, but its fields "
                      "take %zu", path, i, bytes, 2 * (p - at)), -1;
    return (long)n;
}

static int parse_body(const char *path, EvalSet *es, const int32_t *h, size_t nvals,
                      char *err, size_t err_len)
{
    const uint16_t *v = es->tokens;
    size_t at = 0;
    int longest = 0;
    for (int i = 0; i < es->num_examples; i++) {
        long n = parse_record(path, v, at, nvals - at, i, &es->ex[i], err, err_len);
        if (n < 0) return -1;
        if (2 * n > longest) longest = (int)(2 * n);
        at += (size_t)n;
    }
    if (at != nvals)
        return io_err(err, err_len, "%s: %zu trailing bytes after the last of the header's %d "
                      "examples", path, 2 * (nvals - at), es->num_examples), -1;
    if (longest != h[3])
        return io_err(err, err_len, "%s: the header's longest-example length is %d bytes, but "
                      "the longest record has %d", path, h[3], longest), -1;
    es->longest_bytes = longest;
    return 0;
}

int eval_file_read(const char *path, EvalSet *es, char *err, size_t err_len)
{
    memset(es, 0, sizeof *es);
    off_t size;
    int fd = io_open_regular(path, &size, err, err_len);
    if (fd < 0) return -1;
    int32_t h[EVAL_HEADER_INTS];
    int rc = -1;
    if (size < EVAL_HEADER_BYTES) {
        io_err(err, err_len, "%s: truncated header (%lld bytes; an eval file starts with a "
               "1024-byte header)", path, (long long)size);
        goto done;
    }
    if (io_pread_exact(fd, h, sizeof h, 0, path, err, err_len) != 0 ||
        check_header(path, h, (long long)size, err, err_len) != 0)
        goto done;
    size_t body = (size_t)size - EVAL_HEADER_BYTES;
    if (body % 2) {
        io_err(err, err_len, "%s: %zu bytes after the header: not a whole number of uint16 "
               "values (truncated or trailing byte)", path, body);
        goto done;
    }
    es->num_examples = h[2];
    es->ex = calloc((size_t)h[2], sizeof *es->ex);
    es->tokens = malloc(body);
    if (!es->ex || !es->tokens) {
        io_err(err, err_len, "%s: out of memory for %zu bytes", path, body);
        goto done;
    }
    es->num_tokens = es->cap_tokens = body / 2;
    es->cap_ex = h[2];
    if (io_pread_exact(fd, es->tokens, body, EVAL_HEADER_BYTES, path, err, err_len) != 0 ||
        parse_body(path, es, h, body / 2, err, err_len) != 0)
        goto done;
    rc = 0;
done:
    close(fd);
    if (rc) eval_set_free(es);
    return rc;
}

int eval_set_check_vocab(const EvalSet *es, int vocab_size, const char *path, char *err,
                         size_t err_len)
{
    for (int i = 0; i < es->num_examples; i++) {
        const EvalExample *e = &es->ex[i];
        for (int part = -1; part < EVAL_COMPLETIONS; part++) {
            size_t off = part < 0 ? e->ctx_off : e->comp_off[part];
            int len = part < 0 ? e->ctx_len : e->comp_len[part];
            for (int k = 0; k < len; k++) {
                int t = es->tokens[off + (size_t)k];
                if (t < vocab_size) continue;
                char what[32];
                if (part < 0) snprintf(what, sizeof what, "context");
                else snprintf(what, sizeof what, "completion %d", part);
                io_err(err, err_len, "%s: example %d %s: token %d is outside the model's "
                       "vocabulary (%d)", path, i, what, t, vocab_size);
                return -1;
            }
        }
    }
    return 0;
}
