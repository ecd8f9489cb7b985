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
        uint32_t *p = realloc(es->tokens, cap * sizeof *p);
        if (!p) return -1;
        es->tokens = p;
        es->cap_tokens = cap;
    }
    return 0;
}

static int check_tokens(const int32_t *t, int n, const char *what, char *err, size_t err_len)
{
    for (int i = 0; i < n; i++)
        if (t[i] < 0) {
            snprintf(err, err_len, "%s: token %d is negative", what, t[i]);
            return -1;
        }
    return 0;
}

static size_t push(EvalSet *es, const int32_t *t, int n)
{
    size_t off = es->num_tokens;
    for (int i = 0; i < n; i++) {
        es->tokens[off + i] = (uint32_t)t[i];
        if (t[i] >= EVAL_START_MARKER) es->version = EVAL_FILE_VERSION_WIDE;
    }
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
    if (values > EVAL_MAX_RECORD_VALUES) {
        snprintf(err, err_len, "the example needs a record of %zu values; the format allows at "
                 "most %d (version 1's uint16 length of %d bytes)", values,
                 EVAL_MAX_RECORD_VALUES, EVAL_MAX_RECORD_BYTES);
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
    if (es->version == 0) es->version = EVAL_FILE_VERSION;
    EvalExample *e = &es->ex[es->num_examples++];
    e->label = label;
    e->ctx_len = ctx_len;
    e->ctx_off = push(es, ctx, ctx_len);
    for (int c = 0; c < EVAL_COMPLETIONS; c++) {
        e->comp_len[c] = comp_len[c];
        e->comp_off[c] = push(es, comp[c], comp_len[c]);
    }
    if ((int)values > es->longest_values) es->longest_values = (int)values;
    es->longest_bytes = es->longest_values * (es->version == EVAL_FILE_VERSION_WIDE ? 4 : 2);
    return 0;
}

/* Record i's values into out (which has room for them), `width` bytes
 * each on disk; returns the count. */
static size_t encode_record(const EvalSet *es, int i, int width, uint32_t *out)
{
    const EvalExample *e = &es->ex[i];
    size_t k = 0;
    out[k++] = width == 4 ? EVAL_START_MARKER_WIDE : EVAL_START_MARKER;
    out[k++] = 0; /* the length, below */
    out[k++] = (uint32_t)i;
    out[k++] = (uint32_t)e->label;
    out[k++] = EVAL_COMPLETIONS;
    out[k++] = (uint32_t)e->ctx_len;
    memcpy(out + k, es->tokens + e->ctx_off, (size_t)e->ctx_len * 4);
    k += (size_t)e->ctx_len;
    for (int c = 0; c < EVAL_COMPLETIONS; c++) {
        out[k++] = (uint32_t)e->comp_len[c];
        memcpy(out + k, es->tokens + e->comp_off[c], (size_t)e->comp_len[c] * 4);
        k += (size_t)e->comp_len[c];
    }
    out[1] = (uint32_t)(width * k);
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
    int wide = es->version == EVAL_FILE_VERSION_WIDE, width = wide ? 4 : 2;
    uint32_t *body = malloc(values * sizeof *body);
    if (!body) {
        snprintf(err, err_len, "%s: out of memory for %zu bytes", path, 4 * values);
        return -1;
    }
    size_t k = 0;
    for (int i = 0; i < es->num_examples; i++) k += encode_record(es, i, width, body + k);
    /* version 1: narrow in place (every value < 65536 there), front to back */
    if (!wide)
        for (size_t j = 0; j < k; j++) {
            uint16_t v = (uint16_t)body[j];
            memcpy((char *)body + 2 * j, &v, 2);
        }
    int32_t header[EVAL_HEADER_INTS] = {0};
    header[0] = EVAL_FILE_MAGIC;
    header[1] = wide ? EVAL_FILE_VERSION_WIDE : EVAL_FILE_VERSION;
    header[2] = es->num_examples;
    header[3] = es->longest_values * width;
    if (wide) { /* the identity's two halves, as int32 bit patterns */
        uint32_t half[2] = {(uint32_t)es->tokenizer_id, (uint32_t)(es->tokenizer_id >> 32)};
        memcpy(&header[4], half, sizeof half);
    }
    int rc = io_write_file(path, header, sizeof header, body, k * (size_t)width, err, err_len);
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
    if (h[1] != EVAL_FILE_VERSION && h[1] != EVAL_FILE_VERSION_WIDE)
        return io_err(err, err_len, "%s: unsupported version %d (expected %d, llm.c's uint16 "
                      "records, or %d, this project's uint32 records)", path, h[1],
                      EVAL_FILE_VERSION, EVAL_FILE_VERSION_WIDE), -1;
    long long w = h[1] == EVAL_FILE_VERSION_WIDE ? 4 : 2;
    long long lo = w * EVAL_MIN_RECORD_VALUES, hi = w * EVAL_MAX_RECORD_VALUES;
    if (h[2] < 1 || h[2] > EVAL_MAX_EXAMPLES)
        return io_err(err, err_len, "%s: example count %d in the header is outside 1..%d", path,
                      h[2], EVAL_MAX_EXAMPLES), -1;
    if (h[3] < lo || h[3] > hi || h[3] % w)
        return io_err(err, err_len, "%s: longest-example length %d bytes in the header is "
                      "outside %lld..%lld or not a multiple of %lld (version %d)", path, h[3],
                      lo, hi, w, h[1]), -1;
    long long body = size - EVAL_HEADER_BYTES;
    if (body < (long long)h[2] * lo)
        return io_err(err, err_len, "%s: %lld bytes after the header cannot hold the header's "
                      "%d examples (at least %lld bytes each; truncated?)", path, body, h[2],
                      lo), -1;
    if (body > (long long)h[2] * hi)
        return io_err(err, err_len, "%s: %lld bytes after the header are more than the header's "
                      "%d examples can take (at most %lld bytes each)", path, body, h[2],
                      hi), -1;
    return 0;
}

/* Parse record i at v[at..) (values widened to uint32, `w` bytes each on
 * disk), `left` values remaining in the file. On success fills e (offsets
 * into v) and returns the record's length in values; -1 with a message
 * otherwise. */
static long parse_record(const char *path, const uint32_t *v, int w, size_t at, size_t left,
                         int i, EvalExample *e, char *err, size_t err_len)
{
    long long byte = EVAL_HEADER_BYTES + (long long)w * (long long)at;
    uint32_t marker = w == 4 ? EVAL_START_MARKER_WIDE : EVAL_START_MARKER;
    if (left < 6)
        return io_err(err, err_len, "%s: example %d at byte %lld: truncated (the file ends "
                      "inside its first fields)", path, i, byte), -1;
    if (v[at] != marker)
        return io_err(err, err_len, "%s: example %d at byte %lld: expected the start-of-example "
                      "marker %u, found %u", path, i, byte, (unsigned)marker,
                      (unsigned)v[at]), -1;
    uint32_t bytes = v[at + 1];
    if (bytes % (uint32_t)w || bytes < (uint32_t)w * EVAL_MIN_RECORD_VALUES ||
        bytes / (uint32_t)w > left || bytes / (uint32_t)w > EVAL_MAX_RECORD_VALUES)
        return io_err(err, err_len, "%s: example %d at byte %lld: record length %u bytes is "
                      "%s", path, i, byte, (unsigned)bytes,
                      bytes / (uint32_t)w > left ? "past the end of the file (truncated)"
                      : w == 4 ? "not a multiple of 4 in 60..131068"
                               : "not an even count of at least 30"), -1;
    size_t n = bytes / (uint32_t)w, end = at + n;
    if (v[at + 2] != (unsigned)i)
        return io_err(err, err_len, "%s: example %d at byte %lld: index field %u (expected %d: "
                      "examples are numbered in order)", path, i, byte, (unsigned)v[at + 2],
                      i), -1;
    if (v[at + 4] != EVAL_COMPLETIONS)
        return io_err(err, err_len, "%s: example %d: %u completions (llm.c's format has %d)",
                      path, i, (unsigned)v[at + 4], EVAL_COMPLETIONS), -1;
    if (v[at + 3] >= EVAL_COMPLETIONS)
        return io_err(err, err_len, "%s: example %d: label %u is outside 0..%d", path, i,
                      (unsigned)v[at + 3], EVAL_COMPLETIONS - 1), -1;
    e->label = (int)v[at + 3];
    size_t p = at + 5;
    for (int part = -1; part < EVAL_COMPLETIONS; part++) {
        char what[32];
        if (part < 0) snprintf(what, sizeof what, "the context");
        else snprintf(what, sizeof what, "completion %d", part);
        if (p >= end)
            return io_err(err, err_len, "%s: example %d: %s starts past the end of its %u-byte "
                          "record", path, i, what, (unsigned)bytes), -1;
        uint32_t len = v[p++];
        if (len == 0)
            return io_err(err, err_len, "%s: example %d: %s has no tokens", path, i, what), -1;
        if (len > end - p)
            return io_err(err, err_len, "%s: example %d: %s of %u tokens overruns its %u-byte "
                          "record", path, i, what, (unsigned)len, (unsigned)bytes), -1;
        if (part < 0) e->ctx_len = (int)len, e->ctx_off = p;
        else e->comp_len[part] = (int)len, e->comp_off[part] = p;
        p += len;
    }
    if (p != end)
        return io_err(err, err_len, "%s: example %d: record length %u bytes, but its fields "
                      "take %zu", path, i, (unsigned)bytes, (size_t)w * (p - at)), -1;
    return (long)n;
}

static int parse_body(const char *path, EvalSet *es, const int32_t *h, size_t nvals, int w,
                      char *err, size_t err_len)
{
    const uint32_t *v = es->tokens;
    size_t at = 0;
    long longest = 0;
    for (int i = 0; i < es->num_examples; i++) {
        long n = parse_record(path, v, w, at, nvals - at, i, &es->ex[i], err, err_len);
        if (n < 0) return -1;
        if (n > longest) longest = n;
        at += (size_t)n;
    }
    if (at != nvals)
        return io_err(err, err_len, "%s: %zu trailing bytes after the last of the header's %d "
                      "examples", path, (size_t)w * (nvals - at), es->num_examples), -1;
    if (w * longest != h[3])
        return io_err(err, err_len, "%s: the header's longest-example length is %d bytes, but "
                      "the longest record has %ld", path, h[3], w * longest), -1;
    es->longest_values = (int)longest;
    es->longest_bytes = (int)(w * longest);
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
    int w = h[1] == EVAL_FILE_VERSION_WIDE ? 4 : 2;
    size_t body = (size_t)size - EVAL_HEADER_BYTES, nvals = body / (size_t)w;
    if (body % (size_t)w) {
        io_err(err, err_len, "%s: %zu bytes after the header: not a whole number of %s values "
               "(truncated or trailing bytes)", path, body, w == 4 ? "uint32" : "uint16");
        goto done;
    }
    es->num_examples = h[2];
    es->version = h[1];
    if (w == 4) {
        uint32_t half[2];
        memcpy(half, &h[4], sizeof half);
        es->tokenizer_id = (uint64_t)half[1] << 32 | half[0];
    }
    es->ex = calloc((size_t)h[2], sizeof *es->ex);
    es->tokens = malloc(nvals * sizeof *es->tokens);
    if (!es->ex || !es->tokens) {
        io_err(err, err_len, "%s: out of memory for %zu bytes", path, 4 * nvals);
        goto done;
    }
    es->num_tokens = es->cap_tokens = nvals;
    es->cap_ex = h[2];
    /* v1: read the uint16s into the array's back half, widen front to back */
    char *dst = (char *)es->tokens + (w == 2 ? 2 * nvals : 0);
    if (io_pread_exact(fd, dst, body, EVAL_HEADER_BYTES, path, err, err_len) != 0)
        goto done;
    if (w == 2)
        for (size_t j = 0; j < nvals; j++) {
            uint16_t v;
            memcpy(&v, dst + 2 * j, 2);
            es->tokens[j] = v;
        }
    if (parse_body(path, es, h, nvals, w, err, err_len) != 0) goto done;
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
                uint32_t t = es->tokens[off + (size_t)k];
                if (t < (uint32_t)vocab_size) continue;
                char what[32];
                if (part < 0) snprintf(what, sizeof what, "context");
                else snprintf(what, sizeof what, "completion %d", part);
                io_err(err, err_len, "%s: example %d %s: token %u is outside the model's "
                       "vocabulary (%d)", path, i, what, (unsigned)t, vocab_size);
                return -1;
            }
        }
    }
    return 0;
}
