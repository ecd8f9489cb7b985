/* data/tokenize_job.c — text files -> GPT-2 token shards (tokenize_job.h). */
#define _GNU_SOURCE /* memmem */
#include <cjson/cJSON.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "base/safefile.h"
#include "base/stop.h"
#include "dataset.h"
#include "jsonl_text.h"
#include "shard.h"
#include "tokenize_job.h"
#include "tokenizer.h"

#define READ_CHUNK (4u << 20)           /* bytes read and encoded at a time */
#define PROGRESS_MIN_BYTES (4u << 20)   /* smaller inputs get no progress line */

typedef struct {
    const TokenizeJob *job;
    Tokenizer tk;
    FILE *spool;                        /* tokens of `width` bytes each, unlinked */
    int width;                          /* bytes per token: 2, or 4 over 65536 ids (shard.h) */
    char *spool_buf;                    /* its stdio buffer */
    EVP_MD_CTX *stream_hash;            /* SHA-256 of the spooled tokens: the dataset id */
    DatasetStage stage;                 /* where the new dataset is written (dataset.h) */
    TokenIds ids;
    unsigned char *packed;              /* ids as `width`-byte tokens */
    size_t packed_cap;                  /* in tokens */
    TokenizeStats st;
    size_t total_bytes;                 /* of all regular-file inputs (progress) */
    double t0, t_last;
    int progress_shown;
} Run;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

void tokenize_job_defaults(TokenizeJob *job)
{
    memset(job, 0, sizeof *job);
    job->val_fraction = 0.1;
    job->val_tokens = -1;
    job->shard_size = 100000000;
}

static void progress(Run *r, int final)
{
    if (r->job->quiet) return;
    double t = now_s();
    int big = r->st.bytes >= PROGRESS_MIN_BYTES || r->total_bytes >= PROGRESS_MIN_BYTES;
    int tty = isatty(2);
    if (!final && (!big || t - r->t_last < (tty ? 1.0 : 10.0))) return;
    if (final && !r->progress_shown) return;
    r->t_last = t;
    r->progress_shown = 1;
    double dt = t - r->t0 > 1e-9 ? t - r->t0 : 1e-9;
    char of[32] = "";
    if (r->total_bytes) snprintf(of, sizeof of, " / %.1f", r->total_bytes / 1e6);
    fprintf(stderr, "%stokenize: %.1f%s MB, %zu tokens, %.1f MB/s, %.2fM tokens/s%s",
            tty ? "\r" : "", r->st.bytes / 1e6, of, r->st.tokens, r->st.bytes / 1e6 / dt,
            r->st.tokens / 1e6 / dt, (tty && !final) ? "" : "\n");
}

/* The ids as the shards hold them: uint16 or uint32 (shard.h), so the
 * spool, the stream hash (the dataset id) and the shards are one byte
 * layout, and GPT-2's stay what they were. ids are < the vocabulary. */
static int spool_ids(Run *r, const int32_t *ids, size_t n, char *err, size_t err_len)
{
    size_t w = (size_t)r->width;
    if (n > r->packed_cap) {
        unsigned char *p = realloc(r->packed, n * w);
        if (!p) {
            snprintf(err, err_len, "out of memory");
            return -1;
        }
        r->packed = p;
        r->packed_cap = n;
    }
    for (size_t i = 0; i < n; i++) {
        if (w == 2) {
            uint16_t v = (uint16_t)ids[i];
            memcpy(r->packed + 2 * i, &v, 2);
        } else {
            uint32_t v = (uint32_t)ids[i];
            memcpy(r->packed + 4 * i, &v, 4);
        }
    }
    if (fwrite(r->packed, w, n, r->spool) != n) {
        snprintf(err, err_len, "%s: cannot write the token spool in the output folder: %s",
                 r->job->out_prefix, strerror(errno));
        return -1;
    }
    if (EVP_DigestUpdate(r->stream_hash, r->packed, n * w) != 1) {
        snprintf(err, err_len, "SHA-256 of the token stream failed");
        return -1;
    }
    r->st.tokens += n;
    return 0;
}

static int start_doc(Run *r, char *err, size_t err_len)
{
    const int32_t eot = r->tk.doc_id;
    r->st.docs++;
    return spool_ids(r, &eot, 1, err, err_len);
}

static int emit(Run *r, const uint8_t *text, size_t len, const char *name, char *err,
                size_t err_len)
{
    r->ids.len = 0;
    char why[256];
    if (tokenizer_encode(&r->tk, text, len, &r->ids, why, sizeof why)) {
        snprintf(err, err_len, "%s: %s", name, why);
        return -1;
    }
    return spool_ids(r, r->ids.data, r->ids.len, err, err_len);
}

/* Tokenize one input into the spool, document by document, encoding at most
 * a buffer at a time: a long document is cut where tokenizer_safe_cut says
 * the encoding cannot change. */
static int tokenize_input(Run *r, const char *path, char *err, size_t err_len)
{
    int is_stdin = strcmp(path, "-") == 0;
    const char *name = is_stdin ? "<stdin>" : path;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) {
        snprintf(err, err_len, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    /* A person at a terminal would otherwise face a silent wait (no FILE
     * given, or "-"); a pipe or a file on stdin gets no note. */
    if (is_stdin && isatty(STDIN_FILENO) && !r->job->quiet)
        fprintf(stderr, "tokenize: reading text from standard input (a terminal); end it with "
                "Ctrl-D on a line of its own\n");
    size_t cap = READ_CHUNK, len = 0, start = 0, scan = 0;
    uint8_t *buf = malloc(cap);
    int eof = 0, rc = -1, split = r->job->split_blank_lines;
    if (!buf) {
        snprintf(err, err_len, "%s: out of memory", name);
        goto done;
    }
    if (start_doc(r, err, err_len)) goto done;
    /* buf[start, len) is read but not yet encoded; "\n\n" is searched from scan. */
    for (;;) {
        if (split) {
            uint8_t *q = memmem(buf + scan, len - scan, "\n\n", 2);
            if (q) {
                size_t end = (size_t)(q - buf) + 2;
                if (emit(r, buf + start, end - start, name, err, err_len) ||
                    start_doc(r, err, err_len))
                    goto done;
                start = scan = end;
                continue;
            }
            scan = len > start ? len - 1 : start; /* a final '\n' may pair with the next read */
        }
        if (eof) {
            if (emit(r, buf + start, len - start, name, err, err_len)) goto done;
            break;
        }
        if (start > 0) {
            memmove(buf, buf + start, len - start);
            len -= start;
            scan -= start;
            start = 0;
        }
        if (len == cap) { /* a full buffer inside one document */
            size_t cut = tokenizer_safe_cut(&r->tk, buf, len);
            if (cut > 0) {
                if (emit(r, buf, cut, name, err, err_len)) goto done;
                start = cut;
                continue;
            }
            uint8_t *bigger = realloc(buf, 2 * cap); /* no safe cut yet: read on */
            if (!bigger) {
                snprintf(err, err_len, "%s: out of memory (%zu bytes with no place to cut)", name,
                         cap);
                goto done;
            }
            buf = bigger;
            cap *= 2;
        }
        size_t want = cap - len, got = fread(buf + len, 1, want, f);
        len += got;
        r->st.bytes += got;
        if (got < want) {
            if (ferror(f)) {
                snprintf(err, err_len, "%s: read error: %s", name, strerror(errno));
                goto done;
            }
            eof = 1;
        }
        progress(r, 0);
        if (stop_requested()) { /* every READ_CHUNK: a few hundred ms of work */
            snprintf(err, err_len, "%s: %s", name, STOP_MESSAGE);
            goto done;
        }
    }
    rc = 0;
done:
    free(buf);
    if (f && !is_stdin) fclose(f);
    return rc;
}

/* The document of one JSON line: its text field's string, every byte of it.
 * cJSON judges the structure but hands strings over NUL-terminated (so
 * "a\u0000b" would be "a") and lets raw control characters through; so the
 * raw line is checked first and the string taken from it with its length
 * (jsonl_text.h). A blank line is no document. */
static int jsonl_line(Run *r, char *line, size_t n, const char *name, size_t lineno, char *err,
                      size_t err_len)
{
    size_t k = 0;
    while (k < n && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r')) k++;
    if (k == n) return 0;
    const char *field = r->job->text_field ? r->job->text_field : "text";
    char why[256];
    if (jsonl_text_check(line, n, why, sizeof why) != 0) {
        snprintf(err, err_len, "%s:%zu: %s", name, lineno, why);
        return -1;
    }
    cJSON *j = cJSON_ParseWithLength(line, n);
    if (!cJSON_IsObject(j)) {
        snprintf(err, err_len, "%s:%zu: not a JSON object (one document per line: "
                 "{\"%s\": \"...\"})", name, lineno, field);
        cJSON_Delete(j);
        return -1;
    }
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, field);
    if (!cJSON_IsString(t)) {
        snprintf(err, err_len, "%s:%zu: %s \"%s\" (--text-field NAME names it)", name, lineno,
                 t ? "a non-string field" : "no field", field);
        cJSON_Delete(j);
        return -1;
    }
    cJSON_Delete(j);
    char *text;
    size_t len;
    if (jsonl_text_member(line, n, field, &text, &len) != 0) {
        /* cJSON found the string and the check passed: not expected */
        snprintf(err, err_len, "%s:%zu: cannot take the string of \"%s\" (a JSON form this "
                 "reader does not follow)", name, lineno, field);
        return -1;
    }
    int rc = start_doc(r, err, err_len) ||
             emit(r, (const uint8_t *)text, len, name, err, err_len);
    free(text);
    return rc ? -1 : 0;
}

/* One JSON-lines input, plain or gzip (zlib tells them apart by the magic
 * bytes 1f 8b and reads plain text as is), one document per line. */
static int tokenize_jsonl(Run *r, const char *path, char *err, size_t err_len)
{
    int is_stdin = strcmp(path, "-") == 0;
    const char *name = is_stdin ? "<stdin>" : path;
    int fd = is_stdin ? dup(STDIN_FILENO) : -1;
    gzFile g = is_stdin ? (fd >= 0 ? gzdopen(fd, "rb") : NULL) : gzopen(path, "rb");
    if (!g) {
        snprintf(err, err_len, "%s: cannot open: %s", name, errno ? strerror(errno) : "out of memory");
        if (fd >= 0) close(fd);
        return -1;
    }
    gzbuffer(g, 1u << 20);
    size_t cap = READ_CHUNK, len = 0, lineno = 0;
    char *buf = malloc(cap + 1);
    int rc = -1, eof = 0;
    if (!buf) {
        snprintf(err, err_len, "%s: out of memory", name);
        goto done;
    }
    for (;;) {
        /* every whole line in buf[0, len) */
        size_t start = 0;
        char *nl;
        while ((nl = memchr(buf + start, '\n', len - start))) {
            size_t end = (size_t)(nl - buf);
            if (jsonl_line(r, buf + start, end - start, name, ++lineno, err, err_len)) goto done;
            start = end + 1;
        }
        if (eof) { /* a last line without its newline */
            if (len > start && jsonl_line(r, buf + start, len - start, name, ++lineno, err, err_len))
                goto done;
            break;
        }
        memmove(buf, buf + start, len - start);
        len -= start;
        if (len == cap) { /* one line longer than the buffer */
            char *bigger = realloc(buf, 2 * cap + 1);
            if (!bigger) {
                snprintf(err, err_len, "%s:%zu: out of memory (a line over %zu bytes)", name,
                         lineno + 1, cap);
                goto done;
            }
            buf = bigger;
            cap *= 2;
        }
        unsigned want = (unsigned)(cap - len < (1u << 30) ? cap - len : 1u << 30);
        int got = gzread(g, buf + len, want);
        if (got < 0) {
            int zerr;
            const char *why = gzerror(g, &zerr);
            snprintf(err, err_len, "%s: read error: %s", name,
                     zerr == Z_ERRNO ? strerror(errno) : why);
            goto done;
        }
        len += (size_t)got;
        r->st.bytes += (size_t)got;
        if ((unsigned)got < want) eof = 1;
        progress(r, 0);
        if (stop_requested()) {
            snprintf(err, err_len, "%s: %s", name, STOP_MESSAGE);
            goto done;
        }
    }
    rc = 0;
done:
    free(buf);
    gzclose(g);
    return rc;
}

/* Copy n tokens from the spool's current position into the staged shards
 * of `kind` ("val" or "train"), shard_size tokens each (the last shorter). */
static int write_part(Run *r, const char *kind, size_t n, void *buf, int *num_shards,
                      char *err, size_t err_len)
{
    size_t S = r->job->shard_size;
    *num_shards = 0;
    for (size_t done = 0; done < n; done += S) {
        size_t k = n - done < S ? n - done : S;
        if (fread(buf, (size_t)r->width, k, r->spool) != k) {
            snprintf(err, err_len, "%s: cannot read back the token spool: %s", r->job->out_prefix,
                     ferror(r->spool) ? strerror(errno) : "short read");
            return -1;
        }
        if (dataset_stage_add(&r->stage, kind, buf, k, err, err_len)) return -1;
        (*num_shards)++;
        if (stop_requested()) {
            snprintf(err, err_len, "%s: %s", r->job->out_prefix, STOP_MESSAGE);
            return -1;
        }
    }
    return 0;
}

/* The dataset id (dataset.h): the first 8 bytes, big-endian, of the SHA-256
 * of the token stream, then the val token count and the shard size (each a
 * little-endian uint64); never 0. */
static int dataset_id(Run *r, size_t V, uint64_t *id, char *err, size_t err_len)
{
    unsigned char tail[16], md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    uint64_t v[2] = {V, r->job->shard_size};
    for (int i = 0; i < 16; i++) tail[i] = (unsigned char)(v[i / 8] >> (8 * (i % 8)));
    if (EVP_DigestUpdate(r->stream_hash, tail, sizeof tail) != 1 ||
        EVP_DigestFinal_ex(r->stream_hash, md, &n) != 1 || n < 8) {
        snprintf(err, err_len, "SHA-256 of the token stream failed");
        return -1;
    }
    *id = 0;
    for (int i = 0; i < 8; i++) *id = *id << 8 | md[i];
    if (*id == 0) *id = 1;
    return 0;
}

/* The tokenizer's identity for the manifest (dataset.h) and the shards'
 * width. GPT-2's files are named by the digests tokenizer_load checked them
 * against, so the identity does not depend on where they were found. */
static int record_tokenizer(Run *r, const TokenizerChoice *tc, char *err, size_t err_len)
{
    r->width = shard_token_bytes_for(r->tk.vocab_size);
    r->stage.man.token_bytes = r->width;
    return dataset_tokenizer_of(&r->stage.man.tok, &r->tk, tc, err, err_len);
}

static int check_job(const TokenizeJob *job, char *dir, size_t dir_cap, size_t *total_bytes,
                     char *err, size_t err_len)
{
    if (!job->out_prefix || !*job->out_prefix) {
        snprintf(err, err_len, "no output prefix given (--out PREFIX)");
        return -1;
    }
    if (job->val_tokens < 0 && !(job->val_fraction >= 0 && job->val_fraction < 1)) {
        snprintf(err, err_len, "val fraction %g is outside [0, 1)", job->val_fraction);
        return -1;
    }
    if (job->shard_size < 1 || job->shard_size > INT32_MAX) {
        snprintf(err, err_len, "shard size %zu is outside 1 .. %d tokens", job->shard_size,
                 INT32_MAX);
        return -1;
    }
    const char *slash = strrchr(job->out_prefix, '/');
    if ((size_t)snprintf(dir, dir_cap, "%.*s", slash ? (int)(slash - job->out_prefix) : 1,
                         slash ? job->out_prefix : ".") >= dir_cap) {
        snprintf(err, err_len, "%s: output prefix too long", job->out_prefix);
        return -1;
    }
    if (!*dir) snprintf(dir, dir_cap, "/");
    struct stat sb;
    if (stat(dir, &sb) != 0) {
        snprintf(err, err_len, "%s: output folder: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(sb.st_mode)) {
        snprintf(err, err_len, "%s: output folder: not a folder", dir);
        return -1;
    }
    /* Every input must be readable before any work starts. */
    int stdin_seen = job->num_inputs == 0;
    *total_bytes = 0;
    for (int i = 0; i < job->num_inputs; i++) {
        const char *p = job->inputs[i];
        if (strcmp(p, "-") == 0) {
            if (stdin_seen) {
                snprintf(err, err_len, "-: standard input given more than once");
                return -1;
            }
            stdin_seen = 1;
            continue;
        }
        FILE *f = fopen(p, "rb");
        if (!f) {
            snprintf(err, err_len, "%s: cannot open: %s", p, strerror(errno));
            return -1;
        }
        int bad = fstat(fileno(f), &sb) != 0 || S_ISDIR(sb.st_mode);
        fclose(f);
        if (bad) {
            snprintf(err, err_len, "%s: is a folder, not a text file", p);
            return -1;
        }
        if (S_ISREG(sb.st_mode)) *total_bytes += (size_t)sb.st_size;
    }
    return 0;
}

int tokenize_job_run(const TokenizeJob *job, TokenizeStats *st, char *err, size_t err_len)
{
    Run r = {.job = job, .stage = {.lock_fd = -1}};
    char dir[4096];
    unsigned char *buf = NULL;
    int rc = -1, loaded = 0, staged = 0;
    if (check_job(job, dir, sizeof dir, &r.total_bytes, err, err_len)) return -1;
    /* the prefix's verdict first: before the vocabulary, which may be fetched */
    if (dataset_stage_begin(&r.stage, job->out_prefix, job->overwrite, err, err_len)) return -1;
    staged = 1;
    if (!job->quiet && r.stage.notes[0]) fputs(r.stage.notes, stderr);
    TokenizerChoice tc = {.encoder_path = job->encoder_path, .vocab_path = job->vocab_path,
                          .hf_json = job->tokenizer_json, .encoding = job->encoding,
                          .allow_special = job->allow_special, .quiet = job->quiet};
    int trc = tokenizer_open(&r.tk, &tc, err, err_len);
    if (trc) {
        if (trc == TOKENIZER_UNSUPPORTED) rc = TOKENIZE_JOB_UNSUPPORTED;
        goto done;
    }
    loaded = 1;
    if (r.tk.doc_id < 0) {
        snprintf(err, err_len, "%s: no document token (none of <|begin_of_text|>, "
                 "<|endoftext|>, <|end_of_text|> among its added tokens)", r.tk.name);
        goto done;
    }
    if (record_tokenizer(&r, &tc, err, err_len)) goto done;
    r.stream_hash = EVP_MD_CTX_new();
    if (!r.stream_hash || EVP_DigestInit_ex(r.stream_hash, EVP_sha256(), NULL) != 1) {
        snprintf(err, err_len, "out of memory (SHA-256)");
        goto done;
    }

    char spool_path[4400];
    int spool_fd = -1;
    char why[4800] = "";
    /* created anew, never through a link (base/safefile.h) */
    if (dataset_stage_scratch(&r.stage, "tokens.spool", spool_path, sizeof spool_path) ||
        (spool_fd = sf_create(spool_path, why, sizeof why)) < 0 ||
        !(r.spool = fdopen(spool_fd, "w+b"))) {
        if (spool_fd >= 0) close(spool_fd);
        snprintf(err, err_len, "%s: cannot write in the output folder: %s", dir, strerror(errno));
        goto done;
    }
    unlink(spool_path); /* gone from the folder whatever happens next */
    if ((r.spool_buf = malloc(1 << 20))) setvbuf(r.spool, r.spool_buf, _IOFBF, 1 << 20);

    r.t0 = r.t_last = now_s();
    if (job->jsonl) r.total_bytes = 0; /* gzip: the file sizes are not the text's */
    int (*input)(Run *, const char *, char *, size_t) = job->jsonl ? tokenize_jsonl
                                                                   : tokenize_input;
    if (job->num_inputs == 0) {
        if (input(&r, "-", err, err_len)) goto done;
    }
    for (int i = 0; i < job->num_inputs; i++)
        if (input(&r, job->inputs[i], err, err_len)) goto done;
    progress(&r, 1);
    if (fflush(r.spool) != 0 || fseek(r.spool, 0, SEEK_SET) != 0) {
        snprintf(err, err_len, "%s: cannot write the token spool in the output folder: %s", dir,
                 strerror(errno));
        goto done;
    }

    size_t N = r.st.tokens;
    /* more val tokens than the text holds would leave train empty: the
     * flag's number is wrong, and only reading the text tells */
    if (job->val_tokens >= 0 && (unsigned long long)job->val_tokens > N) {
        snprintf(err, err_len, "--val-tokens %lld: more than the %zu tokens of the input (%zu "
                 "document%s, an EOT before each): give at most %zu, or --val-fraction",
                 job->val_tokens, N, r.st.docs, r.st.docs == 1 ? "" : "s", N);
        rc = TOKENIZE_JOB_USAGE;
        goto done;
    }
    size_t V = job->val_tokens >= 0 ? (size_t)job->val_tokens
                                    : (size_t)(job->val_fraction * (double)N + 0.5);
    if (V > N) V = N;
    r.st.val_tokens = V;
    r.st.train_tokens = N - V;
    if (dataset_id(&r, V, &r.stage.man.id, err, err_len)) goto done;
    size_t most = V > N - V ? V : N - V;
    buf = malloc((most < job->shard_size ? most : job->shard_size) * (size_t)r.width + 1);
    if (!buf) {
        snprintf(err, err_len, "out of memory for a shard of %zu tokens", job->shard_size);
        goto done;
    }
    /* Everything goes to the staging folder; the old dataset is replaced
     * only once the whole new one and its manifest are there. */
    if (write_part(&r, "val", V, buf, &r.st.val_shards, err, err_len) ||
        write_part(&r, "train", N - V, buf, &r.st.train_shards, err, err_len) ||
        dataset_stage_commit(&r.stage, err, err_len))
        goto done;
    if (!job->quiet && r.stage.moved)
        fprintf(stderr, "note: --overwrite: the old dataset's %d file%s moved to %s/\n",
                r.stage.moved, r.stage.moved == 1 ? "" : "s", r.stage.replaced);
    else if (!job->quiet && (r.stage.old_manifest || r.stage.old_shards))
        fprintf(stderr, "note: --overwrite: %s held this same dataset; rewritten, nothing "
                "moved\n", job->out_prefix);
    if (!job->quiet)
        fprintf(stderr,
                "tokenize: %zu bytes, %zu document%s, %zu tokens -> val %zu tokens in %d shard%s, "
                "train %zu tokens in %d shard%s (%s_{val,train}_NNNNNN.bin, %s%s, dataset "
                "%016llx)\n",
                r.st.bytes, r.st.docs, r.st.docs == 1 ? "" : "s", N, V, r.st.val_shards,
                r.st.val_shards == 1 ? "" : "s", N - V, r.st.train_shards,
                r.st.train_shards == 1 ? "" : "s", job->out_prefix, job->out_prefix,
                DATASET_MANIFEST_SUFFIX, (unsigned long long)r.stage.man.id);
    rc = 0;
done:
    if (rc != 0 && staged && !r.stage.switching) {
        size_t used = strlen(err);
        snprintf(err + used, err_len - used, " (nothing under %s was changed)", job->out_prefix);
    }
    if (r.spool) fclose(r.spool);
    if (staged) dataset_stage_close(&r.stage);
    EVP_MD_CTX_free(r.stream_hash);
    free(r.spool_buf);
    if (loaded) tokenizer_free(&r.tk);
    free(r.ids.data);
    free(r.packed);
    free(buf);
    if (st) *st = r.st;
    return rc;
}
