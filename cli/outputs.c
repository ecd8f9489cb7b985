/* cli/outputs.c — a new run's --save, --log and --dump-grads files never
 * replace another's silently (outputs.h). */
#include "outputs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "interop/model_file.h"
#include "cli/run_log.h"

/* Move path to path.replaced_<time>[-k] without replacing anything there
 * (io_link_aside, then the old name dropped); on a file system without
 * hard links, a rename to a name seen free. */
static int move_aside(const char *flag, const char *path, char *dst, size_t dst_len, char *err,
                      size_t err_len)
{
    if (io_link_aside(path, dst, dst_len) == 0) {
        if (unlink(path) == 0) return 0;
        int e = errno;
        unlink(dst);
        return io_err(err, err_len, "%s %s: --overwrite-outputs cannot move it aside: %s", flag,
                      path, strerror(e));
    }
    if (errno == EEXIST)
        return io_err(err, err_len, "%s %s: --overwrite-outputs found no free name %s.replaced_*",
                      flag, path, path);
    struct stat st;
    if (lstat(dst, &st) != 0 && rename(path, dst) == 0) return 0;
    return io_err(err, err_len, "%s %s: --overwrite-outputs cannot move it to %s: %s", flag, path,
                  dst, strerror(errno));
}

enum { OUT_FREE, OUT_EXISTS, OUT_BAD };

/* What stands at o->path: nothing (or an empty file), a file with
 * something in it, or something that cannot be written (err says). */
static int inspect(const RunOutput *o, long long *bytes, char *err, size_t err_len)
{
    struct stat st;
    if (stat(o->path, &st) != 0) {
        if (errno == ENOENT) return OUT_FREE;
        io_err(err, err_len, "%s %s: cannot inspect it: %s", o->flag, o->path, strerror(errno));
        return OUT_BAD;
    }
    if (!S_ISREG(st.st_mode)) {
        io_err(err, err_len, "%s %s: exists and is not a regular file (a %s); give a file path",
               o->flag, o->path, S_ISDIR(st.st_mode) ? "folder" : "special file");
        return OUT_BAD;
    }
    /* a log another run writes now is locked by it (cli/run_log.h), even
     * while still empty: refused here, before anything is built */
    int fd = open(o->path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        int busy = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
        close(fd);
        if (busy) {
            io_err(err, err_len, "%s %s: %s", o->flag, o->path, RUN_LOG_IN_USE);
            return OUT_BAD;
        }
    }
    *bytes = (long long)st.st_size;
    return st.st_size == 0 ? OUT_FREE : OUT_EXISTS;
}

int outputs_claim(const RunOutput *outs, int n, int resumed, int overwrite, int move,
                  FILE *notes, char *err, size_t err_len)
{
    /* every refusal before any move: one refused output moves nothing */
    for (int i = 0; i < n; i++) {
        long long bytes = 0;
        if (!outs[i].path) continue;
        int what = inspect(&outs[i], &bytes, err, err_len);
        if (what == OUT_BAD) return -1;
        if (what == OUT_EXISTS && !resumed && !overwrite)
            return io_err(err, err_len, "%s %s: the file exists (%lld bytes, from another "
                          "run?) and a new run would replace it; nothing was started. Give "
                          "another path, continue that run with --resume, or pass "
                          "--overwrite-outputs to move it to %s.replaced_<time> (nothing is "
                          "deleted)", outs[i].flag, outs[i].path, bytes, outs[i].path);
    }
    if (!move) return 0;
    for (int i = 0; i < n; i++) {
        long long bytes = 0;
        if (!outs[i].path || inspect(&outs[i], &bytes, err, err_len) != OUT_EXISTS) continue;
        if (resumed) {
            if (strcmp(outs[i].flag, "--save") == 0)
                fprintf(notes, "note: --save %s exists; this resumed run replaces it at its "
                        "end\n", outs[i].path);
            continue;
        }
        char dst[4200];
        if (move_aside(outs[i].flag, outs[i].path, dst, sizeof dst, err, err_len) != 0)
            return -1;
        fprintf(notes, "note: --overwrite-outputs: %s %s moved to %s\n", outs[i].flag,
                outs[i].path, dst);
    }
    return 0;
}

void outputs_note(const char *path, OutputSeen *seen)
{
    struct stat st;
    memset(seen, 0, sizeof *seen);
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) return;
    *seen = (OutputSeen){1, st.st_dev, st.st_ino, st.st_size, st.st_mtim};
}

/* 1 when path holds something that `seen` did not record. */
static int appeared(const char *path, const OutputSeen *seen)
{
    OutputSeen now;
    outputs_note(path, &now);
    if (!now.present) return 0;
    return !seen->present || now.dev != seen->dev || now.ino != seen->ino ||
           now.size != seen->size || now.mtime.tv_sec != seen->mtime.tv_sec ||
           now.mtime.tv_nsec != seen->mtime.tv_nsec;
}

int outputs_set_aside(const char *flag, const char *path, const OutputSeen *seen, FILE *notes,
                      char *err, size_t err_len)
{
    char kept[4200];
    if (!seen || !appeared(path, seen)) return 0;
    /* checked free at start-up; another run (or the user) wrote it since */
    if (io_link_aside(path, kept, sizeof kept) == 0) {
        fprintf(notes, "warning: %s %s: a file was written there while this run trained "
                "(another run given the same %s?); it is kept as %s\n", flag, path, flag, kept);
        return 0;
    }
    return io_err(err, err_len, "a file was written there while this run trained (another run "
                  "given the same %s?) and cannot be given a second name (%s), so it is left as "
                  "it is", flag, strerror(errno));
}

int outputs_save_model(const char *path, const GPTConfig *cfg, const float *params, int version,
                       const OutputSeen *seen, FILE *notes, char *err, size_t err_len)
{
    char why[2048];
    int write_here = outputs_set_aside("--save", path, seen, notes, why, sizeof why) == 0;
    if (write_here && model_file_save_as(path, cfg, params, version, why, sizeof why) == 0)
        return 0;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *tmp = getenv("TMPDIR");
    char cwd[2048];
    const char *dirs[] = {getcwd(cwd, sizeof cwd) ? cwd : ".", tmp && *tmp ? tmp : "/tmp"};
    char stamp[32], tried[3][4400], fault[2][1200];
    io_stamp(stamp, sizeof stamp);
    for (int i = 0; i < 2; i++) {
        io_err(tried[i], sizeof tried[i], "%s/%s.rescued_%s", dirs[i], base, stamp);
        struct stat st;
        if (lstat(tried[i], &st) == 0) {
            io_err(fault[i], sizeof fault[i], "the name is taken");
            continue;
        }
        if (model_file_save_as(tried[i], cfg, params, version, fault[i], sizeof fault[i]) == 0)
            return io_err(err, err_len, "--save %s: %s. The model was written to %s instead: "
                          "nothing is lost; move it where it belongs", path, why, tried[i]);
    }
    return io_err(err, err_len, "--save %s: %s. The model could not be rescued either: %s: %s; "
                  "%s: %s", path, why, tried[0], fault[0], tried[1], fault[1]);
}
