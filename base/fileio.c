/* base/fileio.c — see fileio.h. */
#include "fileio.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "base/safefile.h"
#include "base/stop.h"
#include "base/test_hooks.h"

int io_err(char *err, size_t err_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
    return n;
}

int io_write_all(int fd, const void *buf, size_t n, const char *path, char *err, size_t err_len)
{
    const char *p = buf;
    while (n > 0) {
        /* write() takes at most ~2 GiB at a time on Linux. */
        size_t chunk = n < ((size_t)1 << 30) ? n : ((size_t)1 << 30);
        ssize_t k = write(fd, p, chunk);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            io_err(err, err_len, "%s: write failed: %s", path,
                     k < 0 ? strerror(errno) : "no progress");
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* The temp file being written now, so that a signal handler about to
 * _exit can remove it (io_remove_live_temp). A second global beside
 * base/signals.c's, for the same reason: a handler can reach nothing else.
 * One writer at a time is what the trainer does; live_set is raised only
 * after live_tmp is complete and lowered before it changes. */
static char live_tmp[4100];
static volatile sig_atomic_t live_set;

static void live_begin(const char *tmp)
{
    live_set = 0;
    snprintf(live_tmp, sizeof live_tmp, "%s", tmp);
    live_set = 1;
}

void io_remove_live_temp(void)
{
    if (live_set) unlink(live_tmp);
}

int io_create(IoWriter *w, const char *path, char *err, size_t err_len)
{
    memset(w, 0, sizeof *w);
    w->fd = w->dirfd = -1;
    if (strlen(path) >= sizeof w->path) {
        io_err(err, err_len, "%.200s...: path too long", path);
        return -1;
    }
    snprintf(w->path, sizeof w->path, "%s", path);
    snprintf(w->tmp, sizeof w->tmp, "%s.tmp", path);
    /* refused before anything is written beside it (io_commit checks again) */
    const char *refusal = sf_replace_refusal(path);
    if (refusal) {
        io_err(err, err_len, "%s: %s; not replaced", path, refusal);
        return -1;
    }
    const char *slash = strrchr(w->path, '/');
    w->base = slash ? (size_t)(slash + 1 - w->path) : 0;
    char dir[4096];
    io_dirname(path, dir, sizeof dir);
    w->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (w->dirfd < 0) {
        io_err(err, err_len, "%s: cannot create: %s", w->tmp, strerror(errno));
        return -1;
    }
    live_begin(w->tmp);
    w->fd = sf_create_at(w->dirfd, w->tmp + w->base, w->tmp, err, err_len);
    if (w->fd < 0) {
        live_set = 0;
        close(w->dirfd);
        w->dirfd = -1;
        return -1;
    }
    w->crc = (uint32_t)crc32(0L, Z_NULL, 0);
    return 0;
}

int io_write(IoWriter *w, const void *buf, size_t n, char *err, size_t err_len)
{
    if (io_write_all(w->fd, buf, n, w->tmp, err, err_len) != 0) return -1;
    /* zlib's crc32 takes a uInt length: feed it in pieces below 4 GiB. */
    const unsigned char *p = buf;
    for (size_t left = n; left > 0;) {
        uInt k = left > (1u << 30) ? (1u << 30) : (uInt)left;
        w->crc = (uint32_t)crc32(w->crc, p, k);
        p += k;
        left -= k;
    }
    w->bytes += n;
    return 0;
}

/* What is at path when it exists and is not a regular file ("a folder",
 * "a character device", ...), else NULL. A symbolic link is not followed
 * (sf_replace_refusal refuses it before this is asked). */
static const char *existing_kind(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0 || S_ISREG(st.st_mode)) return NULL;
    return S_ISDIR(st.st_mode)   ? "a folder"
           : S_ISCHR(st.st_mode) ? "a character device"
           : S_ISBLK(st.st_mode) ? "a block device"
           : S_ISFIFO(st.st_mode) ? "a FIFO"
           : S_ISSOCK(st.st_mode) ? "a socket"
                                  : "not a file";
}

/* The temp file gone and the folder closed, after a failure past close. */
static void drop_temp(IoWriter *w)
{
    unlinkat(w->dirfd, w->tmp + w->base, 0);
    live_set = 0;
    close(w->dirfd);
    w->dirfd = -1;
}

/* io_commit; with sync_dir, the folder fsynced too (through its fd). */
static int commit(IoWriter *w, int sync_dir, char *err, size_t err_len)
{
    int delay = TEST_HOOK_MS("TRAIN_GPT_TEST_COMMIT_DELAY_MS");
    if (delay) io_sleep_ms(delay);
    TEST_HOOK(io_test_pause("commit", w->path + w->base)); /* the temp file is there */
    if (fsync(w->fd) != 0) {
        io_err(err, err_len, "%s: fsync failed: %s", w->tmp, strerror(errno));
        io_abort(w);
        return -1;
    }
    int rc = close(w->fd);
    w->fd = -1;
    if (rc != 0) {
        io_err(err, err_len, "%s: close failed: %s", w->tmp, strerror(errno));
        drop_temp(w);
        return -1;
    }
    /* rename(2) replaces whatever has the name: never a link (it would
     * replace the link, which is not this program's file), nothing under
     * /dev or /proc, never a device, a FIFO or a socket (as root, a model
     * saved to /dev/null would replace it) */
    const char *refusal = sf_replace_refusal(w->path);
    const char *kind = refusal ? NULL : existing_kind(w->path);
    if (refusal || kind) {
        if (refusal) io_err(err, err_len, "%s: %s; not replaced", w->path, refusal);
        else io_err(err, err_len, "%s: is %s, not a regular file; not replaced", w->path, kind);
        drop_temp(w);
        return -1;
    }
    if (renameat(w->dirfd, w->tmp + w->base, w->dirfd, w->path + w->base) != 0) {
        io_err(err, err_len, "%s: cannot rename into place: %s", w->path, strerror(errno));
        drop_temp(w);
        return -1;
    }
    live_set = 0;
    rc = sync_dir ? fsync(w->dirfd) : 0;
    int e = errno;
    close(w->dirfd);
    w->dirfd = -1;
    /* Some file systems refuse fsync on a folder (EINVAL); nothing more to do there. */
    if (rc != 0 && e != EINVAL) {
        char dir[4096];
        io_dirname(w->path, dir, sizeof dir);
        io_err(err, err_len, "%s: fsync of the folder failed: %s", dir, strerror(e));
        return -1;
    }
    return 0;
}

int io_commit(IoWriter *w, char *err, size_t err_len) { return commit(w, 0, err, err_len); }

void io_abort(IoWriter *w)
{
    if (w->fd >= 0) close(w->fd);
    w->fd = -1;
    if (w->dirfd >= 0) drop_temp(w);
    live_set = 0;
}

int io_sync_dir(const char *dir, char *err, size_t err_len)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        io_err(err, err_len, "%s: cannot open folder: %s", dir, strerror(errno));
        return -1;
    }
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    /* Some file systems refuse fsync on a folder (EINVAL); nothing more to do there. */
    if (rc != 0 && e != EINVAL) {
        io_err(err, err_len, "%s: fsync of the folder failed: %s", dir, strerror(e));
        return -1;
    }
    return 0;
}

int io_mkdirs(const char *dir, char *err, size_t err_len)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) {
        io_err(err, err_len, "%.200s...: path too long", dir);
        return -1;
    }
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != 0) continue;
        char c = *p;
        *p = 0;
        struct stat st;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
            io_err(err, err_len, "%s: cannot create folder: %s", buf, strerror(errno));
            return -1;
        }
        if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) {
            io_err(err, err_len, "%s: exists and is not a folder", buf);
            return -1;
        }
        *p = c;
        if (!c) break;
    }
    return 0;
}

int io_open_regular(const char *path, off_t *size, char *err, size_t err_len)
{
    /* O_NONBLOCK until the type is known: open() of a FIFO would block. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        io_err(err, err_len, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        io_err(err, err_len, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        io_err(err, err_len, "%s: not a regular file%s", path,
                 S_ISDIR(st.st_mode) ? " (a folder)" : "");
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    *size = st.st_size;
    return fd;
}

int io_pread_exact(int fd, void *buf, size_t n, off_t off, const char *path, char *err,
                   size_t err_len)
{
    char *p = buf;
    while (n > 0) {
        ssize_t k = pread(fd, p, n, off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            io_err(err, err_len, "%s: %s at byte %lld", path,
                     k < 0 ? strerror(errno) : "truncated (end of file)", (long long)off);
            return -1;
        }
        p += k;
        n -= (size_t)k;
        off += k;
    }
    return 0;
}

int io_file_crc(const char *path, uint64_t *bytes, uint32_t *crc, char *err, size_t err_len)
{
    off_t size;
    int fd = io_open_regular(path, &size, err, err_len);
    if (fd < 0) return -1;
    const size_t CHUNK = IO_READ_CHUNK_BYTES;
    unsigned char *buf = malloc(CHUNK);
    if (!buf) {
        io_err(err, err_len, "%s: out of host memory", path);
        close(fd);
        return -1;
    }
    uLong c = crc32(0L, Z_NULL, 0);
    uint64_t total = 0;
    int rc = 0;
    for (;;) {
        ssize_t k = read(fd, buf, CHUNK);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            io_err(err, err_len, "%s: read failed: %s", path, strerror(errno));
            rc = -1;
            break;
        }
        if (k == 0) break;
        c = crc32(c, buf, (uInt)k);
        total += (uint64_t)k;
    }
    free(buf);
    close(fd);
    *bytes = total;
    *crc = (uint32_t)c;
    return rc;
}

#ifdef TRAIN_GPT_TEST_HOOKS
int io_test_env_ms(const char *name)
{
    const char *s = getenv(name);
    if (!s || !*s) return 0;
    int ms = atoi(s);
    return ms > 0 && ms < 60000 ? ms : 0;
}

/* Hold the process at `here` until the test removes path, or a stop
 * signal arrives that had not arrived when the pause began. A stop asked
 * for before it (a pause in the save a stop makes) does not end it: there
 * the test acts with a second signal, which exits at once. */
static void pause_here(const char *path, const char *here)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    fprintf(f, "paused at %s\n", here);
    /* renamed into place: the test never reads a half-written file */
    if (fclose(f) != 0 || rename(tmp, path) != 0) return;
    int stopped_before = stop_requested();
    while (access(path, F_OK) == 0 && (stopped_before || !stop_requested())) io_sleep_ms(5);
}

void io_test_pause(const char *point, const char *what)
{
    static int next; /* the entry armed now: the list is paused at in order, once each */
    const char *list = getenv("TRAIN_GPT_TEST_PAUSE_AT");
    const char *file = getenv("TRAIN_GPT_TEST_PAUSE_FILE");
    if (!list || !file || !*file) return;
    char here[256], path[4096];
    snprintf(here, sizeof here, "%s%s%s", point, what && *what ? ":" : "", what ? what : "");
    /* under mpirun each rank pauses on its own file, PATH.RANK */
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (rank) snprintf(path, sizeof path, "%s.%s", file, rank);
    else snprintf(path, sizeof path, "%s", file);
    const char *p = list;
    for (int i = 0; i < next && *p; i++) p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',');
    if (!*p) return; /* every entry has paused */
    size_t n = strcspn(p, ",");
    int bare = n == strlen(point) && strncmp(p, point, n) == 0;
    int exact = n == strlen(here) && strncmp(p, here, n) == 0;
    if (!bare && !exact) return;
    next++;
    pause_here(path, here);
}
#endif

int io_test_save_delay_ms(void) { return TEST_HOOK_MS("TRAIN_GPT_TEST_SAVE_DELAY_MS"); }

int io_read_whole(const char *path, size_t lo, size_t hi, const char *holds, char **text,
                  size_t *len, char *err, size_t err_len)
{
    *text = NULL;
    *len = 0;
    off_t size;
    int fd = io_open_regular(path, &size, err, err_len);
    if (fd < 0) return -1;
    if (size < 0 || (uint64_t)size < lo || (uint64_t)size > hi) {
        io_err(err, err_len, "%s: %lld bytes (%s has %zu..%zu)", path, (long long)size, holds, lo,
               hi);
        close(fd);
        return -1;
    }
    char *buf = malloc((size_t)size + 1);
    int rc = buf ? io_pread_exact(fd, buf, (size_t)size, 0, path, err, err_len) : -1;
    if (!buf) io_err(err, err_len, "%s: out of host memory", path);
    close(fd);
    if (rc != 0) {
        free(buf);
        return -1;
    }
    buf[size] = 0;
    *text = buf;
    *len = (size_t)size;
    return 0;
}

int io_probe_writable(const char *dir, char *err, size_t err_len)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        io_err(err, err_len, "%s: the folder does not exist (%s)", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        io_err(err, err_len, "%s: not a folder", dir);
        return -1;
    }
    char name[64], p[4200], why[4400];
    snprintf(name, sizeof name, ".train_gpt_write_test.%ld", (long)getpid());
    io_err(p, sizeof p, "%s/%s", dir, name);
    int dfd = sf_open_dir(dir, 1, why, sizeof why);
    /* the probe's name is this process's: a link planted there is removed,
     * never written through (sf_create_at) */
    int fd = dfd < 0 ? -1 : sf_create_at(dfd, name, p, why, sizeof why);
    if (fd < 0) {
        io_err(err, err_len, "%s: cannot write there: %s", dir, strerror(errno));
        if (dfd >= 0) close(dfd);
        return -1;
    }
    close(fd);
    unlinkat(dfd, name, 0);
    close(dfd);
    return 0;
}

int io_probe_output(const char *path, char *err, size_t err_len)
{
    size_t n = strlen(path);
    if (n == 0 || path[n - 1] == '/') {
        io_err(err, err_len, "names a folder (it ends with '/'), not a file");
        return -1;
    }
    char dir[4096], why[4400];
    io_dirname(path, dir, sizeof dir);
    if (io_probe_writable(dir, why, sizeof why) != 0) {
        io_err(err, err_len, "its folder must exist and be writable: %s", why);
        return -1;
    }
    return 0;
}

void io_stamp(char *out, size_t len)
{
    time_t now = time(NULL);
    struct tm tm;
    if (!localtime_r(&now, &tm) || strftime(out, len, "%Y%m%d-%H%M%S", &tm) == 0)
        snprintf(out, len, "%lld", (long long)now);
}

int io_link_aside(const char *path, char *dst, size_t dst_len)
{
    char stamp[32];
    io_stamp(stamp, sizeof stamp);
    for (int k = 1; k < 100; k++) {
        if (k == 1) snprintf(dst, dst_len, "%s.replaced_%s", path, stamp);
        else snprintf(dst, dst_len, "%s.replaced_%s-%d", path, stamp, k);
        if (link(path, dst) == 0) return 0;
        if (errno != EEXIST) return -1;
    }
    return -1; /* errno EEXIST */
}

void io_dirname(const char *path, char *out, size_t len)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--; /* "a/b/" names b */
    size_t cut = n;
    while (cut > 0 && path[cut - 1] != '/') cut--;
    if (cut == 0) snprintf(out, len, ".");
    else {
        while (cut > 1 && path[cut - 1] == '/') cut--;
        snprintf(out, len, "%.*s", (int)cut, path);
    }
}

void io_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

int io_write_parts(const char *path, const void *const *parts, const size_t *lens, int n,
                   char *err, size_t err_len)
{
    IoWriter w;
    if (io_create(&w, path, err, err_len) != 0) return -1;
    for (int i = 0; i < n; i++)
        if (lens[i] && io_write(&w, parts[i], lens[i], err, err_len) != 0) {
            io_abort(&w);
            return -1;
        }
    return commit(&w, 1, err, err_len);
}

int io_write_file(const char *path, const void *head, size_t head_len, const void *body,
                  size_t body_len, char *err, size_t err_len)
{
    const void *parts[2] = {head, body};
    const size_t lens[2] = {head_len, body_len};
    return io_write_parts(path, parts, lens, 2, err, err_len);
}
