/* cli/outputs.c — the run's --save, --log and --dump-grads files: probed
 * and claimed at start-up (a new run never replaces another's silently),
 * --dump-grads and --save written (or rescued), the log written and closed
 * (cli/outputs.h). */
#include "cli/outputs.h"

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
#include "interop/model_file.h"

typedef struct {
    const char *flag; /* "--save" */
    const char *path; /* NULL: the flag was not given */
} RunOutput;

/* Move path to path.replaced_<time>[-k] without replacing anything there
 * (io_link_aside, then the old name dropped); on a file system without
 * hard links, a rename to a name seen free. */
static int move_aside(const char *flag, const char *path, char *dst, size_t dst_len, char *err,
                      size_t err_len)
{
    /* a link is not this run's to move (--log /dev/stdout as root would
     * have the link replaced by a regular file), nor is anything in /dev */
    const char *refusal = sf_replace_refusal(path);
    if (refusal)
        return io_err(err, err_len, "%s %s: %s; --overwrite-outputs does not move it aside "
                      "(give the path of the file itself, or move it yourself)", flag, path,
                      refusal);
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
    /* --save and --dump-grads are renamed into place, which would replace
     * a link, not the file it names: refused now rather than at the end.
     * The log is a stream (--log /dev/stdout), written through a link. */
    if (strcmp(o->flag, "--log") != 0 && sf_is_link(o->path)) {
        io_err(err, err_len, "%s %s: is a symbolic link; the file is written by a rename, "
               "never through a link: give the path of the file itself", o->flag, o->path);
        return OUT_BAD;
    }
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
    /* the log is written in place: a second name would see every line
     * (cli/run_log.c checks the descriptor again when it opens it) */
    if (strcmp(o->flag, "--log") == 0 && st.st_nlink > 1) {
        io_err(err, err_len, "%s %s: hard-linked to another name (%ld links); it is written in "
               "place, so the file behind the other name would change too: nothing was "
               "started. Give it a name of its own (cp %s %s.copy && mv %s.copy %s breaks the "
               "link)", o->flag, o->path, (long)st.st_nlink, o->path, o->path, o->path, o->path);
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

/* Check each output; with move, also move aside (overwrite) or note (a
 * resumed run's) those that exist. Notes (kept, moved) go to `notes`.
 * Returns 0, or -1 with err naming the flag and file. Rank 0. */
static int claim(const RunOutput *outs, int n, int resumed, int overwrite, int move,
                 const char *resume_hint, FILE *notes, char *err, size_t err_len)
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
                          "another path, %spass --overwrite-outputs to move it to "
                          "%s.replaced_<time> (nothing is deleted)", outs[i].flag, outs[i].path,
                          bytes, resume_hint, outs[i].path);
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

/* Record what stands at path now into seen. */
static void note(const char *path, OutputSeen *seen)
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
    note(path, &now);
    if (!now.present) return 0;
    return !seen->present || now.dev != seen->dev || now.ino != seen->ino ||
           now.size != seen->size || now.mtime.tv_sec != seen->mtime.tv_sec ||
           now.mtime.tv_nsec != seen->mtime.tv_nsec;
}

/* Before the run writes `path` (given as `flag`): a non-empty file there
 * that is not the one `seen` recorded (NULL: no check) gets a second name,
 * said on `notes`. Returns 0 when path may be written; -1 when the file
 * could not be given a second name (it is left as it is), with the reason
 * in err. */
static int set_aside(const char *flag, const char *path, const OutputSeen *seen, FILE *notes,
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

/* Write the model file `path` (version MODEL_FILE_FP32 or _BF16), after
 * set_aside; where that cannot, or the write fails, rescue it (above).
 * Returns 0 when path was written; else -1 with err naming path and the
 * fault, and where the model went (or that every place failed, and why). */
static int write_model(const char *path, const GPTConfig *cfg, const float *params, int version,
                       const OutputSeen *seen, FILE *notes, char *err, size_t err_len)
{
    char why[2048];
    int write_here = set_aside("--save", path, seen, notes, why, sizeof why) == 0;
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

void outputs_init(Outputs *out)
{
    memset(out, 0, sizeof *out);
    out->log.fd = -1;
}

/* a and b name one file: the same text, the same existing file, or the
 * same name in the same folder (a file not made yet: "x" and "./x"). */
static int same_output(const char *a, const char *b)
{
    if (strcmp(a, b) == 0) return 1;
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    const char *ba = strrchr(a, '/'), *bb = strrchr(b, '/');
    if (strcmp(ba ? ba + 1 : a, bb ? bb + 1 : b) != 0) return 0;
    char da[4096], db[4096];
    io_dirname(a, da, sizeof da);
    io_dirname(b, db, sizeof db);
    return stat(da, &sa) == 0 && stat(db, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* The files a run writes after its work (--save at the end, --dump-grads
 * after step 1, --log from the first line) must be writable now, not after
 * hours of training: a file name (no trailing '/') in a folder that takes a
 * new file. (What stands at the path already: outputs_check_all.) */
void outputs_check_paths(const TrainOptions *o, Dist *d)
{
    const char *flag[] = {"--save", "--dump-grads", "--log"};
    const char *path[] = {o->save, o->dump_grads, o->log_path};
    int n = o->plan || o->generate > 0 ? 1 : 3;
    if (d->rank != 0) return;
    /* one file for two outputs: each write would destroy the other's */
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (path[i] && path[j] && same_output(path[i], path[j]))
                dist_fail(d, 2, "%s %s and %s %s name the same file: give each its own path",
                          flag[i], path[i], flag[j], path[j]);
    for (int i = 0; i < n; i++) {
        char why[4600];
        if (path[i] && io_probe_output(path[i], why, sizeof why) != 0)
            dist_fail(d, 1, "%s %s: %s", flag[i], path[i], why);
    }
}

/* Rank 0 decides, every rank learns the verdict. move: the run has
 * started (outputs_move_aside); else it only checks (outputs_check_all). */
static void claim_all(Outputs *out, const TrainOptions *o, Dist *d, int resumed, int move)
{
    char err[4400] = "";
    int refused = 0;
    if (o->plan || o->generate > 0) return; /* they write none of them */
    if (d->rank == 0) {
        RunOutput outs[] = {{"--save", o->save}, {"--log", o->log_path},
                            {"--dump-grads", o->dump_grads}};
        /* --resume continues only a run that saved into a checkpoint folder */
        char hint[4200] = "or ";
        if (o->checkpoint_dir)
            snprintf(hint, sizeof hint, "continue that run with --resume, or ");
        else if (o->llmc_save_dir)
            snprintf(hint, sizeof hint, "continue that run with --resume-llmc %s, or ",
                     o->llmc_save_dir);
        refused = claim(outs, 3, resumed, o->overwrite_outputs, move, hint, stdout, err,
                        sizeof err) != 0;
        /* what --save holds now (nothing, or a resumed run's model) is what
         * its write at the end may replace */
        if (move && o->save) note(o->save, &out->save_seen);
        if (move && o->dump_grads) note(o->dump_grads, &out->dump_seen);
    }
    dist_broadcast(d, &refused, sizeof refused);
    if (refused) dist_exit_all(d, 1, "%s", d->rank == 0 ? err : "rank 0 refused an output file");
}

void outputs_check_all(Outputs *out, const TrainOptions *o, Dist *d, int resumed)
{
    claim_all(out, o, d, resumed, 0);
}

void outputs_move_aside(Outputs *out, const TrainOptions *o, Dist *d, int resumed)
{
    claim_all(out, o, d, resumed, 1);
}

void outputs_log(Outputs *out, cJSON *obj)
{
    char *s = out->log.fd >= 0 ? cJSON_PrintUnformatted(obj) : NULL;
    if (s) run_log_line(&out->log, s);
    cJSON_free(s);
    cJSON_Delete(obj);
}

int outputs_dump_grads(Outputs *out, const TrainOptions *o, Dist *d, size_t num_params,
                       double loss, char *err, size_t len)
{
    size_t n = num_params;
    float *g = malloc(n * sizeof(float));
    if (!g) {
        snprintf(err, len, "--dump-grads: out of host memory");
        return -1;
    }
    int rc = dist_get_grads(d, g, err, len); /* collective */
    if (rc == 0 && d->rank == 0) {
        float l = (float)loss;
        char why[900];
        rc = set_aside("--dump-grads", o->dump_grads, &out->dump_seen, stderr, why, sizeof why);
        if (rc == 0)
            rc = io_write_file(o->dump_grads, &l, sizeof l, g, n * sizeof(float), why,
                               sizeof why);
        if (rc != 0) snprintf(err, len, "--dump-grads %s: %s", o->dump_grads, why);
    }
    free(g);
    return rc;
}

/* Every rank's parameters must be the same bits; rank 0 writes --save. */
int outputs_save_model(Outputs *out, const TrainOptions *o, Dist *d, const GPTConfig *cfg,
                       size_t num_params, char *err, size_t len)
{
    if (!d->mpi && !o->save) return 0;
    size_t n = num_params;
    float *host = malloc(n * sizeof(float));
    if (!host) {
        snprintf(err, len, "out of host memory for the final parameters");
        return -1;
    }
    int rc = dist_get_params(d, host, err, len);
    if (rc == 0 && d->mpi) {
        if (!dist_replicas_agree(d, dist_hash_floats(host, n))) {
            free(host);
            dist_exit_all(d, 1, "internal error: the ranks' final parameters differ");
        }
        printf("replicas: parameters identical on all %d rank%s\n", d->world,
               d->world == 1 ? "" : "s");
    }
    if (rc == 0 && o->save && d->rank == 0) {
        rc = write_model(o->save, cfg, host, o->save_dtype ? MODEL_FILE_BF16 : MODEL_FILE_FP32,
                         &out->save_seen, stderr, err, len);
        if (rc == 0) printf("saved %s\n", o->save);
    }
    free(host);
    return rc;
}

/* A lost line is an error (exit 1) unless --log-errors ignore. */
int outputs_close_log(Outputs *out, int rc)
{
    char err[1024];
    if (run_log_close(&out->log, err, sizeof err) == 0) return rc;
    fprintf(stderr, "error: %s\n", err);
    return rc == 0 ? 1 : rc;
}
