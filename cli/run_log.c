/* cli/run_log.c — see run_log.h. */
#define _GNU_SOURCE /* memmem */
#include "run_log.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/safefile.h"

/* One log line's "step", and whether it is a training line ("loss"). */
static int line_step(const char *line, size_t len, int *step, int *train)
{
    if (!memmem(line, len, "\"step\"", 6)) return -1;
    cJSON *j = cJSON_ParseWithLength(line, len);
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "step");
    int ok = cJSON_IsNumber(st);
    if (ok) {
        *step = st->valueint;
        *train = cJSON_GetObjectItemCaseSensitive(j, "loss") != NULL;
    }
    cJSON_Delete(j);
    return ok ? 0 : -1;
}

/* Where to cut the log of a run resumed at step n: after its last
 * training line of step n, else before its first line of a later step,
 * else after its last newline (a torn last line), else -1 (nothing to cut). */
static long long cut_offset(FILE *f, int n)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long long off = 0, after_n = -1, first_later = -1, last_nl = 0;
    while ((len = getline(&line, &cap, f)) > 0) {
        int step, train;
        if (line_step(line, (size_t)len, &step, &train) == 0) {
            if (step == n && train) after_n = off + len;
            if (step > n && first_later < 0) first_later = off;
        }
        off += len;
        if (line[len - 1] == '\n') last_nl = off;
    }
    free(line);
    /* the lines after step n's (its val loss, a finished segment's
     * summary) are that run's and stay; steps past n are retrained */
    long long cut = first_later >= 0 ? first_later : after_n >= 0 ? last_nl : last_nl;
    return cut < off ? cut : -1;
}

/* Move bytes [cut, end) of the log into "<path>.abandoned", then cut. */
static int cut_back(RunLog *l, int fd, long long cut, long long end, int n, char *err,
                    size_t err_len)
{
    char side[4200];
    io_err(side, sizeof side, "%s.abandoned", l->path);
    size_t bytes = (size_t)(end - cut);
    char *buf = malloc(bytes);
    if (!buf) {
        io_err(err, err_len, "--log %s: out of host memory", l->path);
        return -1;
    }
    long lines = 0;
    int rc = io_pread_exact(fd, buf, bytes, (off_t)cut, l->path, err, err_len);
    for (size_t i = 0; rc == 0 && i < bytes; i++)
        lines += buf[i] == '\n' || i == bytes - 1; /* a torn last line counts too */
    /* appended to (an earlier cut's lines stay), never through a link */
    int out = rc == 0 ? open(side, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644)
                      : -1;
    if (rc == 0 && out < 0) {
        io_err(err, err_len, "--log %s: cannot open %s to keep the lines after step %d: %s",
               l->path, side, n, strerror(errno));
        rc = -1;
    }
    /* O_NOFOLLOW stops a symbolic link, not a hard one: the log is not cut */
    char why[4800];
    if (rc == 0 && sf_check_sole_name(out, side, why, sizeof why) != 0) {
        io_err(err, err_len, "--log %s: the log was not cut back; %s", l->path, why);
        rc = -1;
    }
    if (rc == 0) rc = io_write_all(out, buf, bytes, side, err, err_len);
    if (rc == 0 && fsync(out) != 0) {
        io_err(err, err_len, "%s: fsync failed: %s", side, strerror(errno));
        rc = -1;
    }
    if (out >= 0) close(out);
    free(buf);
    /* The lines are safe in the side file before the log loses them. */
    if (rc == 0 && ftruncate(fd, (off_t)cut) != 0) {
        io_err(err, err_len, "--log %s: cannot cut it back to step %d: %s", l->path, n,
               strerror(errno));
        rc = -1;
    }
    if (rc == 0)
        printf("note: --log %s: cut back to step %d, where this run resumes; the %ld line%s "
               "logged after it moved to %s\n", l->path, n, lines, lines == 1 ? "" : "s", side);
    return rc;
}

/* The run id of the log's first record (the run's record, its first line:
 * cli/run_record.h), into id; 0, or -1 when the first line has none (a log
 * from before run ids). The record holds every flag: a few KiB. */
static int header_run_id(int fd, char *id, size_t len)
{
    enum { MAX_RECORD = 1 << 20 };
    char *buf = malloc(MAX_RECORD);
    if (!buf) return -1;
    ssize_t n = pread(fd, buf, MAX_RECORD - 1, 0);
    if (n <= 0) {
        free(buf);
        return -1;
    }
    buf[n] = 0;
    buf[strcspn(buf, "\n")] = 0;
    cJSON *j = cJSON_Parse(buf);
    free(buf);
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "run_id");
    int ok = cJSON_IsString(r);
    if (ok) snprintf(id, len, "%s", r->valuestring);
    cJSON_Delete(j);
    return ok ? 0 : -1;
}

/* 1 when a log line is one this program writes: a training line ("step"
 * and "loss", null when not finite), a val line ("step", "val_loss"), an
 * eval line ("step", "eval"), or an event ("run": the record; "summary"). */
static int own_line(const char *line, size_t len)
{
    cJSON *j = cJSON_ParseWithLength(line, len);
    const cJSON *step = cJSON_GetObjectItemCaseSensitive(j, "step");
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(j, "event");
    int ok = 0;
    if (cJSON_IsObject(j) && cJSON_IsNumber(step))
        ok = cJSON_GetObjectItemCaseSensitive(j, "loss") ||
             cJSON_GetObjectItemCaseSensitive(j, "val_loss") ||
             cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "eval"));
    else if (cJSON_IsObject(j) && cJSON_IsString(ev))
        ok = !strcmp(ev->valuestring, "run") || !strcmp(ev->valuestring, "summary");
    cJSON_Delete(j);
    return ok;
}

/* A log with no run id in its first line (from before run ids, or no log
 * at all: notes, another program's output) is taken as this run's only
 * when every line is one this program writes; a torn last line (no
 * newline: a crash mid-write) after such lines is the crash's, cut as
 * before. 0, or the number of the first line that is not, its start in
 * `what`. The descriptor's offset is left at 0. */
static long foreign_line(int fd, char *what, size_t what_len)
{
    FILE *f = fdopen(dup(fd), "r");
    if (!f) return 1;
    rewind(f);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long n = 0, bad = 0;
    while (!bad && (len = getline(&line, &cap, f)) > 0) {
        n++;
        int torn = line[len - 1] != '\n';
        if (torn && n > 1 && line[0] == '{') break;
        if (torn || !own_line(line, (size_t)len)) {
            bad = n;
            size_t k = strcspn(line, "\n");
            snprintf(what, what_len, "%.*s%s", (int)(k < 60 ? k : 60), line, k > 60 ? "..." : "");
        }
    }
    free(line);
    fclose(f);
    lseek(fd, 0, SEEK_SET);
    return bad;
}

int run_log_open(RunLog *l, const char *path, int resume_step, const char *run_id,
                 int ignore_errors, char *err, size_t err_len)
{
    memset(l, 0, sizeof *l);
    l->fd = -1;
    l->ignore_errors = ignore_errors;
    if (!path) return 0;
    snprintf(l->path, sizeof l->path, "%s", path);
    /* Never O_TRUNC: a second run given the same --log, which found it
     * empty at its start-up, would cut this run's lines away and write
     * over the rest. The lock (held to exit) refuses it instead. */
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        io_err(err, err_len, "--log %s: cannot open for writing: %s", path,
               fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0) close(fd);
        return -1;
    }
    /* written in place (appended, cut back): never through a second name */
    char why[4800];
    if (sf_check_sole_name(fd, path, why, sizeof why) != 0) {
        io_err(err, err_len, "--log %s", why);
        close(fd);
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        if (e == ENOLCK || e == EOPNOTSUPP || e == ENOSYS) {
            /* as ckpt/ownership.c: a file system without locks runs unguarded */
            fprintf(stderr, "warning: --log %s: this filesystem does not lock (%s): a second "
                    "run given it would not be stopped\n", path, strerror(e));
        } else {
            io_err(err, err_len, "--log %s: %s", path,
                   e == EWOULDBLOCK ? RUN_LOG_IN_USE : strerror(e));
            close(fd);
            return -1;
        }
    }
    if (resume_step < 0 && fstat(fd, &st) == 0 && st.st_size > 0) {
        /* found empty or absent at start-up (cli/outputs.h); written since */
        io_err(err, err_len, "--log %s: written to since this run started (%lld bytes: by "
               "another run?); a new run would replace it. Give another path", path,
               (long long)st.st_size);
        close(fd);
        return -1;
    }
    char theirs[128], what[80];
    int has_id = resume_step >= 0 && header_run_id(fd, theirs, sizeof theirs) == 0;
    if (has_id && run_id && strcmp(theirs, run_id) != 0) {
        io_err(err, err_len, "--log %s: the log of run %s, and this run (resumed from its "
               "save) is run %s: nothing was cut or appended. Give this run its own --log, or "
               "the one its first segment wrote", path, theirs, run_id);
        close(fd);
        return -1;
    }
    /* a resume cuts its log back: only a file that is surely a log of
     * this program is cut, never notes that hold a line like one */
    long bad = resume_step >= 0 && !has_id && st.st_size > 0
                   ? foreign_line(fd, what, sizeof what) : 0;
    if (bad) {
        io_err(err, err_len, "--log %s: not this run's log: its first line names no run, and "
               "line %ld is no line this program writes (%s); nothing was cut or appended. "
               "Give this run its own --log, or the one its first segment wrote", path, bad,
               what);
        close(fd);
        return -1;
    }
    l->size = st.st_size;
    if (resume_step >= 0 && st.st_size > 0) {
        FILE *f = fdopen(dup(fd), "r");
        long long cut = f ? cut_offset(f, resume_step) : -1;
        if (f) fclose(f);
        if (cut >= 0 && cut_back(l, fd, cut, st.st_size, resume_step, err, err_len) != 0) {
            close(fd);
            return -1;
        }
        if (cut >= 0) l->size = cut;
    }
    if (lseek(fd, 0, SEEK_END) < 0) {
        io_err(err, err_len, "--log %s: cannot seek: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    l->fd = fd; /* a new log's first line, naming run_id, is the caller's (cli/run_record.h) */
    return 0;
}

void run_log_line(RunLog *l, const char *json)
{
    if (l->fd < 0) return;
    if (l->failed) {
        l->dropped++;
        return;
    }
    size_t n = strlen(json);
    char *line = malloc(n + 1);
    int rc = -1;
    if (line) {
        memcpy(line, json, n);
        line[n] = '\n';
        rc = io_write_all(l->fd, line, n + 1, l->path, l->fault, sizeof l->fault);
        free(line);
    } else {
        io_err(l->fault, sizeof l->fault, "%s: out of host memory for a log line", l->path);
    }
    if (rc == 0) {
        l->size += (long long)n + 1;
        return;
    }
    /* Keep the file whole lines: drop what part of this one got written. */
    if (ftruncate(l->fd, (off_t)l->size) == 0) lseek(l->fd, 0, SEEK_END);
    l->failed = 1;
    l->dropped++;
    fprintf(stderr, "warning: --log %s; this and later lines are not written (training goes "
            "on%s)\n", l->fault, l->ignore_errors ? "; --log-errors ignore"
                                                   : "; the run will exit 1 at the end");
    fflush(stderr);
}

int run_log_close(RunLog *l, char *err, size_t err_len)
{
    if (l->fd < 0) return 0;
    int rc = close(l->fd);
    l->fd = -1;
    if (rc != 0 && !l->failed) {
        l->failed = 1;
        io_err(l->fault, sizeof l->fault, "%s: close failed: %s", l->path, strerror(errno));
    }
    if (!l->failed || l->ignore_errors) return 0;
    io_err(err, err_len, "--log %s: %ld line%s could not be written (first failure: %s); the "
           "log is incomplete (pass --log-errors ignore to accept that)", l->path, l->dropped,
           l->dropped == 1 ? "" : "s", l->fault);
    return -1;
}
