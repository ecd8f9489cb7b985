/* ckpt/ownership.c — see ownership.h. */
#include "ownership.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/safefile.h"

/* The folder's identity now, for own_check (the lock file's: from fd,
 * the file this run holds, when fd >= 0). */
static void record(OwnLock *l, const char *dir, int fd)
{
    struct stat st;
    l->has_dir = stat(dir, &st) == 0;
    if (l->has_dir) l->dir_dev = st.st_dev, l->dir_ino = st.st_ino;
    l->has_file = fd >= 0 && fstat(fd, &st) == 0;
    if (l->has_file) l->file_dev = st.st_dev, l->file_ino = st.st_ino;
}

int own_check(const OwnLock *l, const char *flag, const char *dir, char *err, size_t err_len)
{
    struct stat st;
    char p[4200];
    const char *what = NULL;
    if (l->has_dir) {
        if (stat(dir, &st) != 0)
            what = errno == ENOENT ? "it is gone (moved or deleted)" : strerror(errno);
        else if (st.st_dev != l->dir_dev || st.st_ino != l->dir_ino)
            what = "another folder now has its name (it was moved or deleted, and replaced)";
    }
    if (!what && l->has_file) {
        io_err(p, sizeof p, "%s/%s", dir, OWN_LOCK_FILE);
        if (lstat(p, &st) != 0)
            what = "its lock file " OWN_LOCK_FILE " is gone";
        else if (st.st_dev != l->file_dev || st.st_ino != l->file_ino)
            what = "its lock file " OWN_LOCK_FILE " was replaced (another run may hold the "
                   "new one)";
    }
    if (!what) return 0;
    io_err(err, err_len, "%s %s is no longer the folder this run locked at start-up: %s; "
           "nothing more is saved there (a save would make a folder without this run's lock, "
           "which a second run could share)", flag, dir, what);
    return -1;
}

int own_lock(OwnLock *l, const char *flag, const char *dir, char *err, size_t err_len)
{
    char p[4200];
    l->fd = -1;
    l->has_dir = l->has_file = 0;
    io_err(p, sizeof p, "%s/%s", dir, OWN_LOCK_FILE);
    /* never through a link: the lock is truncated and written below */
    int fd = open(p, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        if (errno == ELOOP)
            io_err(err, err_len, "%s: is a symbolic link; the lock file is never opened "
                   "through one (remove the link)", p);
        else
            io_err(err, err_len, "%s: cannot open the lock file: %s", p, strerror(errno));
        return -1;
    }
    struct stat st;
    /* a second hard link would make the truncate below another file's */
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        io_err(err, err_len, "%s: the lock file is not a regular file; it is not used "
               "(remove it)", p);
        close(fd);
        return -1;
    }
    if (st.st_nlink != 1) {
        /* the usual cause: a backup of the folder made with `cp -al`, whose
         * copy of the lock is this same file; removing one name frees it */
        io_err(err, err_len, "%s: the lock file is hard-linked to another name (%ld links), "
               "as in a backup made with `cp -al`; it is not used. To run on %s %s, remove "
               "this name of it (rm %s; the other keeps its bytes, and a new lock is made), "
               "or resume from a copy made with `cp -a`, which copies files instead of "
               "linking them", p, (long)st.st_nlink, flag, dir, p);
        close(fd);
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        if (e == ENOLCK || e == EOPNOTSUPP || e == ENOSYS) {
            fprintf(stderr, "warning: %s: this filesystem does not lock (%s): a second run on "
                    "%s %s would not be stopped\n", p, strerror(e), flag, dir);
            close(fd);
            record(l, dir, -1);
            return 0;
        }
        char holder[256] = "";
        ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
        holder[n > 0 ? n : 0] = 0;
        holder[strcspn(holder, "\n")] = 0;
        close(fd);
        if (e == EWOULDBLOCK)
            io_err(err, err_len, "%s %s is in use by another run (%s holds %s); wait for it "
                   "to end, or give this run another %s", flag, dir,
                   holder[0] ? holder : "a process that has just started", p, flag);
        else
            io_err(err, err_len, "%s: cannot lock: %s", p, strerror(e));
        return -1;
    }
    char host[128] = "?", stamp[64] = "", line[512];
    gethostname(host, sizeof host - 1);
    time_t now = time(NULL);
    strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", localtime(&now));
    int len = snprintf(line, sizeof line, "pid %ld on host %s since %s\n", (long)getpid(), host,
                       stamp);
    /* Who holds it, for the message above; the lock itself is the flock. */
    if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)len, 0) != len)
        fprintf(stderr, "warning: %s: cannot record this run's pid: %s\n", p, strerror(errno));
    l->fd = fd;
    record(l, dir, fd);
    return 0;
}

void own_unlock(OwnLock *l)
{
    if (l->fd >= 0) close(l->fd); /* closing drops the flock */
    l->fd = -1;
}

uint64_t own_new_run_id(void)
{
    uint64_t id = 0;
    while (id == 0) {
        if (getrandom(&id, sizeof id, 0) != (ssize_t)sizeof id) {
            /* no entropy source: time and pid still tell runs apart */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            id = ((uint64_t)ts.tv_sec * 1000000007ull) ^ (uint64_t)ts.tv_nsec ^
                 ((uint64_t)getpid() << 40);
        }
    }
    return id;
}

/* A complete save the run continuing `resumed` may keep as its own. */
static int ours(const CkptEntry *e, const CkptEntry *resumed)
{
    if (!resumed || !e->complete) return 0;
    if (!e->has_identity) return 1; /* made before run ids: the resumed run's */
    return resumed->has_identity && e->id.run_id == resumed->id.run_id;
}

/* Rename dir/step_N into to/step_N (step_N.2, .3, ... when taken). */
static int move_save(const char *dir, int step, const char *to, char *err, size_t err_len)
{
    char src[4300], dst[4400], name[64];
    ckpt_step_dir(src, sizeof src, dir, step);
    snprintf(name, sizeof name, "step_%08d", step);
    io_err(dst, sizeof dst, "%s/%s", to, name);
    for (int k = 2; access(dst, F_OK) == 0 && k < 1000; k++)
        io_err(dst, sizeof dst, "%s/%s.%d", to, name, k);
    if (rename(src, dst) != 0) {
        io_err(err, err_len, "cannot move %s to %s: %s", src, dst, strerror(errno));
        return -1;
    }
    return 0;
}

/* "8, 10 and 12" (at most the first few, then a count) into out. */
static void list_steps(char *out, size_t len, const int *steps, int n)
{
    out[0] = 0;
    for (int i = 0; i < n && i < 6; i++) {
        size_t used = strlen(out);
        snprintf(out + used, len - used, "%s%d", i == 0 ? "" : i == n - 1 ? " and " : ", ",
                 steps[i]);
    }
    if (n > 6) {
        size_t used = strlen(out);
        snprintf(out + used, len - used, " and %d more", n - 6);
    }
}

/* Move the listed saves into dir/<sub>/ (created), fsync, and say so. */
static int move_all(const char *dir, const char *sub, const int *steps, int n, const char *what,
                    char *err, size_t err_len)
{
    char to[4300], why[4400], list[256];
    /* a linked step_N is not this run's to move: refused before any move */
    for (int i = 0; i < n; i++) {
        char src[4300];
        ckpt_step_dir(src, sizeof src, dir, steps[i]);
        const char *refusal = sf_replace_refusal(src);
        if (refusal)
            return io_err(err, err_len, "%s: %s; it is not moved, nor anything else (remove "
                          "the link, or give another --checkpoint-dir)", src, refusal), -1;
    }
    io_err(to, sizeof to, "%s/%s", dir, sub);
    if (io_mkdirs(to, why, sizeof why) != 0) {
        io_err(err, err_len, "%s", why);
        return -1;
    }
    if (sf_is_link(to)) /* a folder of this run's, never one a link names */
        return io_err(err, err_len, "%s: is a symbolic link; the saves are not moved through "
                      "one (remove the link)", to), -1;
    for (int i = 0; i < n; i++)
        if (move_save(dir, steps[i], to, err, err_len) != 0) return -1;
    if (io_sync_dir(to, err, err_len) != 0 || io_sync_dir(dir, err, err_len) != 0) return -1;
    list_steps(list, sizeof list, steps, n);
    printf("note: moved %s (step%s %s) into %s/ (nothing deleted)\n", what, n == 1 ? "" : "s",
           list, to);
    fflush(stdout);
    return 0;
}

int own_claim(const char *dir, const CkptEntry *resumed, int overwrite, int move, char *err,
              size_t err_len)
{
    int resumed_step = resumed ? resumed->step : -1;
    CkptEntry *saves;
    int n;
    if (ckpt_list(dir, &saves, &n, err, err_len) != 0) return -1;
    int *foreign = malloc(sizeof(int) * (size_t)(n ? n : 1));
    int *newer = malloc(sizeof(int) * (size_t)(n ? n : 1));
    int nf = 0, nn = 0, rc = -1, other = -1;
    if (!foreign || !newer) {
        io_err(err, err_len, "%s: out of host memory", dir);
        goto out;
    }
    for (int i = 0; i < n; i++) {
        const CkptEntry *e = &saves[i];
        if (e->complete && !ours(e, resumed)) {
            foreign[nf++] = e->step;
            other = i;
        } else if (resumed && e->step > resumed_step && (e->complete || e->note[0])) {
            /* ours, or one whose manifest is damaged, beyond the one resumed; a
             * folder without a manifest is a save cut short: debris, which
             * the next save of that step reuses and --keep later deletes */
            newer[nn++] = e->step;
        } else if (!resumed && overwrite && !e->complete) {
            foreign[nf++] = e->step; /* a fresh start leaves no debris behind */
        }
    }
    if (other >= 0 && !overwrite) {
        const CkptEntry *e = &saves[other];
        char who[64] = "made before saves carried a run id";
        if (e->has_identity)
            snprintf(who, sizeof who, "run id %016llx", (unsigned long long)e->id.run_id);
        io_err(err, err_len, "--checkpoint-dir %s holds %d save%s of another run (%s; newest "
               "step_%08d)%s: this run's saves would mix with them and its --keep would delete "
               "them. Continue that run with --resume, give this run another --checkpoint-dir, "
               "or pass --overwrite-checkpoints to move them into %s/replaced_<time>/ (nothing "
               "is deleted)", dir, nf, nf == 1 ? "" : "s", who, e->step,
               resumed ? ", not of the run being resumed" : "", dir);
        goto out;
    }
    if (!move) {
        rc = 0;
        goto out;
    }
    if (nf > 0) {
        char sub[64], stamp[32];
        io_stamp(stamp, sizeof stamp);
        snprintf(sub, sizeof sub, "replaced_%s", stamp);
        if (move_all(dir, sub, foreign, nf, "--overwrite-checkpoints: the saves of another run",
                     err, err_len) != 0)
            goto out;
    }
    if (nn > 0) {
        char what[128];
        snprintf(what, sizeof what, "the saves newer than step %d, which this run replaces,",
                 resumed_step);
        if (move_all(dir, "abandoned", newer, nn, what, err, err_len) != 0) goto out;
    }
    rc = 0;
out:
    free(foreign);
    free(newer);
    free(saves);
    return rc;
}
