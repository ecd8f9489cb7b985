/* base/fileio.h — crash-safe writing and careful reading of every file the
 * project writes: checkpoint folders, manifests, state files, model files
 * and token shards.
 *
 * Owns: the write protocol every checkpoint file follows — write
 * "<name>.tmp" in the same folder, fsync it, rename it over <name>, fsync
 * the folder — and the checks every read starts with (a regular file, its
 * size). Every failure writes "<path>: <fault>" into err and returns -1. */
#ifndef BASE_FILEIO_H
#define BASE_FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* snprintf into a message buffer (a long path is cut, never overflows);
 * returns what snprintf would. */
int io_err(char *err, size_t err_len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* An open temp file that becomes `path` on io_commit. crc covers every byte
 * written so far (zlib crc32). */
typedef struct {
    int fd, dirfd; /* the temp file; the folder holding it and path */
    char path[4096], tmp[4100];
    size_t base; /* where path's (and tmp's) last component starts */
    uint64_t bytes;
    uint32_t crc;
} IoWriter;

/* Create "<path>.tmp" in path's folder, opened once and worked in
 * relative to (base/safefile.h: a stale temp, or a symbolic link planted
 * at its name, is unlinked, then O_CREAT|O_EXCL|O_NOFOLLOW). */
int io_create(IoWriter *w, const char *path, char *err, size_t err_len);
/* Append n bytes (retrying short writes; ENOSPC, EIO... are reported). */
int io_write(IoWriter *w, const void *buf, size_t n, char *err, size_t err_len);
/* fsync, close, rename over path (renameat in the folder io_create
 * opened). Refused, the temp removed: a path that is a symbolic link, is
 * under /dev or /proc, or holds anything but a regular file. Does not
 * fsync the folder (io_sync_dir). */
int io_commit(IoWriter *w, char *err, size_t err_len);
/* Close and delete the temp file (after a failure). */
void io_abort(IoWriter *w);

/* The whole protocol for a file made of a header and a body: create, write
 * both, commit, fsync the folder. On failure nothing is left at `path` that
 * was not there before (the temp file is removed). */
int io_write_file(const char *path, const void *head, size_t head_len, const void *body,
                  size_t body_len, char *err, size_t err_len);
/* The same for a file made of n parts, written in order (lens[i] may be 0). */
int io_write_parts(const char *path, const void *const *parts, const size_t *lens, int n,
                   char *err, size_t err_len);

/* Write all n bytes to fd; err names `path`. */
int io_write_all(int fd, const void *buf, size_t n, const char *path, char *err,
                 size_t err_len);

/* fsync a folder, so renames and new entries inside it are durable. */
int io_sync_dir(const char *dir, char *err, size_t err_len);

/* mkdir -p; an existing non-folder in the way is an error. */
int io_mkdirs(const char *dir, char *err, size_t err_len);

/* Open for reading, refusing anything but a regular file (a folder, a FIFO,
 * a device) without blocking; *size = bytes. Every reader starts here. */
int io_open_regular(const char *path, off_t *size, char *err, size_t err_len);

/* A whole small file (a manifest, an op-cost file) into a malloc'd buffer
 * *text of *len bytes, NUL-terminated: a regular file of lo..hi bytes,
 * else "<path>: N bytes (<holds> has lo..hi)" (holds: "a manifest"). */
int io_read_whole(const char *path, size_t lo, size_t hi, const char *holds, char **text,
                  size_t *len, char *err, size_t err_len);

/* pread exactly n bytes at off (a short read is "truncated"). */
int io_pread_exact(int fd, void *buf, size_t n, off_t off, const char *path, char *err,
                   size_t err_len);

/* The buffer a file is read back through (io_file_crc, a run state's
 * m and v), bytes: a host copy a save or resume holds beside its own,
 * which the plan counts (cli/recompute.c). */
#define IO_READ_CHUNK_BYTES ((size_t)1 << 20)

/* crc32 and size of a whole file, read in IO_READ_CHUNK_BYTES pieces. */
int io_file_crc(const char *path, uint64_t *bytes, uint32_t *crc, char *err, size_t err_len);

/* A test-only pause (TRAIN_GPT_TEST_SAVE_DELAY_MS) between the files of a
 * save, to widen the window a kill can land in. 0 when unset, and always 0
 * in the product build (base/test_hooks.h). */
int io_test_save_delay_ms(void);
#ifdef TRAIN_GPT_TEST_HOOKS
/* Milliseconds in the environment variable `name` (test hooks, through
 * TEST_HOOK_MS), 0 when unset or outside 1..59999. In the test build
 * io_commit sleeps TRAIN_GPT_TEST_COMMIT_DELAY_MS before its fsync, so a
 * test can land a signal while a temp file exists. */
int io_test_env_ms(const char *name);
/* A staged race: the process holds at a named point until the test lets
 * it go. TRAIN_GPT_TEST_PAUSE_AT is a comma list of POINT or POINT:WHAT
 * ("step:3", "block:val 2/50", "startup:op costs", "commit"), paused at in
 * order: at the first call of io_test_pause(point, what) that the next
 * entry names (POINT alone: any what) the process writes "paused at
 * POINT:WHAT" to TRAIN_GPT_TEST_PAUSE_FILE (under mpirun, that path with
 * ".RANK" added) and waits until the test removes the file, or until a
 * stop signal comes that had not come when the pause began; the entry
 * after it is armed then. Each entry pauses once. The test
 * acts in between (writes a file, sends a signal) at a point the process
 * has reached for sure, with no delay to guess (docs/tests.md lists the
 * points). */
void io_test_pause(const char *point, const char *what);
#endif
void io_sleep_ms(int ms);

/* Remove the temp file io_create made and io_commit/io_abort have not yet
 * dealt with, if any. Async-signal-safe (one unlink): for a handler that is
 * about to _exit, so that an interrupted write leaves nothing behind. */
void io_remove_live_temp(void);

/* Check that dir exists, is a folder, and takes a new file: creates and
 * removes a probe file there (permissions, read-only mounts and a full
 * inode table show up now rather than when the real file is written). */
int io_probe_writable(const char *dir, char *err, size_t err_len);

/* Check that a file can be made at path (before the work that makes it):
 * path does not end in '/' and its folder passes io_probe_writable. (What
 * already stands at path is the caller's to judge; io_commit never renames
 * over anything but a regular file.) err gets the fault without the path
 * ("its folder must exist and be writable: <dir>: <why>"), for the caller
 * to put after the flag and path. */
int io_probe_output(const char *path, char *err, size_t err_len);

/* The local time as "YYYYmmdd-HHMMSS": the <time> of the names that files
 * moved aside or rescued get (NAME.replaced_<time>, DIR/replaced_<time>/). */
void io_stamp(char *out, size_t len);

/* Give the file at path a second name, path.replaced_<time>[-k] (the first
 * free one, into dst): a hard link, so nothing is copied, and link() never
 * replaces a file already there. Returns 0; -1 with errno set (EXDEV,
 * EPERM: a file system without hard links; EEXIST: no free name). */
int io_link_aside(const char *path, char *dst, size_t dst_len);

/* The folder holding path: "." when it has no slash, "/" for "/x". */
void io_dirname(const char *path, char *out, size_t len);

#endif
