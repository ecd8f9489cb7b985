/* data/tokenize_job.c — text files -> GPT-2 token shards (tokenize_job.h). */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shard.h"
#include "tokenize_job.h"
#include "tokenizer.h"
#include "source.h"

#define READ_CHUNK (4u << 20)           /* bytes read and encoded at a time */
#define PROGRESS_MIN_BYTES (4u << 20)   /* smaller inputs get no progress line */

typedef struct {
    const TokenizeJob *job;
    Tokenizer tk;
    FILE *spool;                        /* uint16 tokens, unlinked */
    char *spool_buf;                    /* its stdio buffer */
    TokenIds ids;
    uint16_t *u16;
    size_t u16_cap;
    TokenizeStats st;
    size_t total_bytes;                 /* of all regular-file inputs (progress) */
    double t0, t_last;
    int progress_shown;
    char **written;                     /* shards written by this run */
    int num_written;
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

static int spool_ids(Run *r, const int32_t *ids, size_t n, char *err, size_t err_len)
{
    if (n > r->u16_cap) {
        uint16_t *p = realloc(r->u16, n * sizeof *p);
        if (!p) {
            snprintf(err, err_len, "out of memory");
            return -1;
        }
        r->u16 = p;
        r->u16_cap = n;
    }
    for (size_t i = 0; i < n; i++) r->u16[i] = (uint16_t)ids[i]; /* ids < 50257 */
    if (fwrite(r->u16, sizeof *r->u16, n, r->spool) != n) {
        snprintf(err, err_len, "%s: cannot write the token spool in the output folder: %s",
                 r->job->out_prefix, strerror(errno));
        return -1;
    }
    r->st.tokens += n;
    return 0;
}

static int start_doc(Run *r, char *err, size_t err_len)
{
    const int32_t eot = GPT2_EOT;
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
            size_t cut = tokenizer_safe_cut(buf, len);
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
    }
    rc = 0;
done:
    free(buf);
    if (f && !is_stdin) fclose(f);
    return rc;
}

static int shard_name(char *out, size_t cap, const char *prefix, const char *kind, int idx)
{
    return (size_t)snprintf(out, cap, "%s_%s_%06d.bin", prefix, kind, idx) < cap ? 0 : -1;
}

static void remove_written(Run *r)
{
    for (int i = 0; i < r->num_written; i++) {
        unlink(r->written[i]);
        free(r->written[i]);
    }
    free(r->written);
    r->written = NULL;
    r->num_written = 0;
}

/* Copy n tokens from the spool's current position into shards <prefix>_<kind>_NNNNNN.bin. */
static int write_part(Run *r, const char *kind, size_t n, uint16_t *buf, int *num_shards,
                      char *err, size_t err_len)
{
    size_t S = r->job->shard_size;
    *num_shards = 0;
    for (size_t done = 0; done < n; done += S) {
        size_t k = n - done < S ? n - done : S;
        char path[4096];
        if (shard_name(path, sizeof path, r->job->out_prefix, kind, *num_shards)) {
            snprintf(err, err_len, "%s: output prefix too long", r->job->out_prefix);
            return -1;
        }
        if (fread(buf, sizeof *buf, k, r->spool) != k) {
            snprintf(err, err_len, "%s: cannot read back the token spool: %s", r->job->out_prefix,
                     ferror(r->spool) ? strerror(errno) : "short read");
            return -1;
        }
        char **w = realloc(r->written, (r->num_written + 1) * sizeof *w);
        char *copy = strdup(path);
        if (w) r->written = w;
        if (!w || !copy) {
            free(copy);
            snprintf(err, err_len, "%s: out of memory", path);
            return -1;
        }
        if (shard_write(path, buf, k, err, err_len)) {
            free(copy);
            return -1;
        }
        r->written[r->num_written++] = copy;
        (*num_shards)++;
    }
    return 0;
}

/* Remove <prefix>_<kind>_NNNNNN.bin for NNNNNN >= from, up to the first gap. */
static void remove_stale(const char *prefix, const char *kind, int from)
{
    char path[4096];
    for (int i = from; !shard_name(path, sizeof path, prefix, kind, i) && unlink(path) == 0; i++)
        ;
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
    Run r = {.job = job};
    char dir[4096], enc[4096], voc[4096];
    uint16_t *buf = NULL;
    int rc = -1, loaded = 0;
    if (check_job(job, dir, sizeof dir, &r.total_bytes, err, err_len)) return -1;
    const char *enc_path = job->encoder_path, *voc_path = job->vocab_path;
    if (!enc_path || !voc_path) {
        char from[SOURCE_PATH_MAX + 200];
        if (tokenizer_find_files(enc, voc, sizeof enc, from, sizeof from, err, err_len)) {
            size_t n = strlen(err);
            snprintf(err + n, err_len - n, "; or give --encoder and --vocab");
            return -1;
        }
        if (!job->quiet) fprintf(stderr, "tokenize: GPT-2 vocabulary from %s\n", from);
        if (!enc_path) enc_path = enc;
        if (!voc_path) voc_path = voc;
    }
    if (tokenizer_load(&r.tk, enc_path, voc_path, err, err_len)) return -1;
    loaded = 1;

    char spool_path[4200];
    snprintf(spool_path, sizeof spool_path, "%s.tokens.%ld.tmp", job->out_prefix, (long)getpid());
    r.spool = fopen(spool_path, "w+b");
    if (!r.spool) {
        snprintf(err, err_len, "%s: cannot write in the output folder: %s", dir, strerror(errno));
        goto done;
    }
    unlink(spool_path); /* gone from the folder whatever happens next */
    if ((r.spool_buf = malloc(1 << 20))) setvbuf(r.spool, r.spool_buf, _IOFBF, 1 << 20);

    r.t0 = r.t_last = now_s();
    if (job->num_inputs == 0) {
        if (tokenize_input(&r, "-", err, err_len)) goto done;
    }
    for (int i = 0; i < job->num_inputs; i++)
        if (tokenize_input(&r, job->inputs[i], err, err_len)) goto done;
    progress(&r, 1);
    if (fflush(r.spool) != 0 || fseek(r.spool, 0, SEEK_SET) != 0) {
        snprintf(err, err_len, "%s: cannot write the token spool in the output folder: %s", dir,
                 strerror(errno));
        goto done;
    }

    size_t N = r.st.tokens;
    size_t V = job->val_tokens >= 0 ? ((size_t)job->val_tokens < N ? (size_t)job->val_tokens : N)
                                    : (size_t)(job->val_fraction * (double)N + 0.5);
    if (V > N) V = N;
    r.st.val_tokens = V;
    r.st.train_tokens = N - V;
    size_t most = V > N - V ? V : N - V;
    buf = malloc((most < job->shard_size ? most : job->shard_size) * sizeof *buf + 1);
    if (!buf) {
        snprintf(err, err_len, "out of memory for a shard of %zu tokens", job->shard_size);
        goto done;
    }
    if (write_part(&r, "val", V, buf, &r.st.val_shards, err, err_len) ||
        write_part(&r, "train", N - V, buf, &r.st.train_shards, err, err_len))
        goto done;
    remove_stale(job->out_prefix, "val", r.st.val_shards);
    remove_stale(job->out_prefix, "train", r.st.train_shards);
    if (!job->quiet)
        fprintf(stderr,
                "tokenize: %zu bytes, %zu document%s, %zu tokens -> val %zu tokens in %d shard%s, "
                "train %zu tokens in %d shard%s (%s_{val,train}_NNNNNN.bin)\n",
                r.st.bytes, r.st.docs, r.st.docs == 1 ? "" : "s", N, V, r.st.val_shards, r.st.val_shards == 1 ? "" : "s",
                N - V, r.st.train_shards, r.st.train_shards == 1 ? "" : "s", job->out_prefix);
    rc = 0;
done:
    if (rc) remove_written(&r);
    for (int i = 0; i < r.num_written; i++) free(r.written[i]);
    free(r.written);
    if (r.spool) fclose(r.spool);
    free(r.spool_buf);
    if (loaded) tokenizer_free(&r.tk);
    free(r.ids.data);
    free(r.u16);
    free(buf);
    if (st) *st = r.st;
    return rc;
}
