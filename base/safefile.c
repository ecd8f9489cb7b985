/* base/safefile.c — see safefile.h. */
#define _GNU_SOURCE /* O_NOFOLLOW, O_DIRECTORY with openat; fdopendir */
#include "safefile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"

int sf_open_dir(const char *dir, int follow, char *err, size_t err_len)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
    if (fd >= 0) return fd;
    /* O_NOFOLLOW with O_DIRECTORY reports a link as ELOOP or ENOTDIR */
    if (!follow && (errno == ELOOP || errno == ENOTDIR) && sf_is_link(dir))
        io_err(err, err_len, "%s: is a symbolic link, not followed", dir);
    else
        io_err(err, err_len, "%s: cannot open folder: %s", dir, strerror(errno));
    return -1;
}

int sf_create_at(int dirfd, const char *name, const char *shown, char *err, size_t err_len)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode) &&
        unlinkat(dirfd, name, 0) != 0 && errno != ENOENT) {
        io_err(err, err_len, "%s: cannot remove the stale file: %s", shown, strerror(errno));
        return -1;
    }
    int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        if (e == EEXIST && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
            io_err(err, err_len, "%s: cannot create: %s is in the way", shown,
                   S_ISDIR(st.st_mode) ? "a folder" : S_ISLNK(st.st_mode)
                   ? "a symbolic link (made since the stale one was removed)" : "a file");
        else
            io_err(err, err_len, "%s: cannot create: %s", shown, strerror(e));
    }
    return fd;
}

int sf_create(const char *path, char *err, size_t err_len)
{
    char dir[4096];
    io_dirname(path, dir, sizeof dir);
    const char *slash = strrchr(path, '/');
    int dfd = sf_open_dir(dir, 1, err, err_len);
    if (dfd < 0) return -1;
    int fd = sf_create_at(dfd, slash ? slash + 1 : path, path, err, err_len);
    close(dfd);
    return fd;
}

int sf_is_link(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

int sf_check_sole_name(int fd, const char *shown, char *err, size_t err_len)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        io_err(err, err_len, "%s: cannot inspect it: %s", shown, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        io_err(err, err_len, "%s: not a regular file; it is not written", shown);
        return -1;
    }
    if (st.st_nlink != 1) {
        io_err(err, err_len, "%s: hard-linked to another name (%ld links); it is written in "
               "place, so the file behind the other name would change too: nothing was "
               "written. Give it a name of its own (cp %s %s.copy && mv %s.copy %s breaks the "
               "link)", shown, (long)st.st_nlink, shown, shown, shown, shown);
        return -1;
    }
    return 0;
}

/* 1 when the resolved path p is `top` or inside it. */
static int under(const char *p, const char *top)
{
    size_t n = strlen(top);
    return strncmp(p, top, n) == 0 && (p[n] == 0 || p[n] == '/');
}

const char *sf_replace_refusal(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return NULL;
    if (S_ISLNK(st.st_mode)) return "is a symbolic link";
    /* /dev/fd/1 or /proc/self/fd/1 resolve through links of their own: the
     * folder is judged where it really is */
    char dir[4096], real[PATH_MAX];
    io_dirname(path, dir, sizeof dir);
    if (!realpath(dir, real)) return NULL;
    /* /dev/shm is a tmpfs that holds plain files (a common fast scratch) */
    if (under(real, "/dev") && !under(real, "/dev/shm")) return "is under /dev";
    if (under(real, "/proc")) return "is under /proc";
    return NULL;
}

int sf_remove_dir(int parentfd, const char *name, const char *shown,
                  int (*known)(const char *entry, void *ctx), void *ctx, char *err,
                  size_t err_len)
{
    struct stat st;
    if (fstatat(parentfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) return 0;
        io_err(err, err_len, "%s: cannot inspect: %s", shown, strerror(errno));
        return -1;
    }
    if (S_ISLNK(st.st_mode)) {
        io_err(err, err_len, "%s: is a symbolic link; nothing deleted", shown);
        return -1;
    }
    int fd = openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        io_err(err, err_len, "%s: cannot list: %s", shown, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (known && !known(e->d_name, ctx)) continue;
        int is_dir = e->d_type == DT_DIR;
        if (e->d_type == DT_UNKNOWN)
            is_dir = fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
        if (!is_dir) unlinkat(fd, e->d_name, 0); /* what is left fails the rmdir below */
    }
    closedir(d);
    if (unlinkat(parentfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT) {
        io_err(err, err_len, "%s: cannot delete folder: %s", shown, strerror(errno));
        return -1;
    }
    return 0;
}

void sf_guard_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        /* open returns the lowest free fd: this one */
        int got = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (got >= 0 && got != fd) {
            dup2(got, fd);
            close(got);
        }
    }
}
