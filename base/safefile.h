/* base/safefile.h — the rules every writer and deleter of the project
 * follows, so that nothing outside its own files is written, truncated,
 * renamed or deleted, whatever symbolic links are planted in its folders.
 *
 * Owns: making a new file (a stale entry of its name unlinked first —
 * unlink removes a link itself, never what it names — then O_CREAT|O_EXCL|
 * O_NOFOLLOW, so an entry that reappears is refused, not followed); opening
 * a folder the program owns without following a link (O_DIRECTORY|
 * O_NOFOLLOW) and working relative to it; the test of what may be renamed
 * or replaced (never a symbolic link, never anything under /dev or /proc);
 * deleting a folder's known files by name, never following a link; and
 * file descriptors 0-2 at start-up. Every failure writes "<path>: <fault>"
 * into err and returns -1. */
#ifndef BASE_SAFEFILE_H
#define BASE_SAFEFILE_H

#include <stddef.h>

/* Open folder `dir` for *at() calls and fsync. follow 0: a symbolic link
 * at dir (its last component) is refused ("<dir>: is a symbolic link, not
 * followed"); follow 1: for a folder the user named, which may be one. */
int sf_open_dir(const char *dir, int follow, char *err, size_t err_len);

/* Create `name` in the folder dirfd, mode 0644, read-write: any entry of
 * that name that is not a folder is unlinked first, then O_CREAT|O_EXCL|
 * O_NOFOLLOW. Returns the fd; shown (the path, for err) names it. */
int sf_create_at(int dirfd, const char *name, const char *shown, char *err, size_t err_len);

/* sf_create_at for a path, in the folder that holds it (followed: the
 * user's). */
int sf_create(const char *path, char *err, size_t err_len);

/* NULL when path may be renamed or replaced by a rename; else why not:
 * "is a symbolic link" (a rename would move or replace the link, which is
 * not this program's file), "is under /dev" or "is under /proc" (its
 * folder, resolved; /dev/shm, a tmpfs of plain files, is not refused). Nothing at path: NULL. */
const char *sf_replace_refusal(const char *path);

/* Delete the folder `name` in parentfd (shown: its path, for err): each of
 * its entries that known(entry, ctx) accepts (known NULL: every entry) and
 * that is not a folder is unlinked (a link itself, never what it names),
 * then the folder. The folder is opened O_NOFOLLOW: a symbolic link there
 * is refused ("<shown>: is a symbolic link; nothing deleted"), and a folder
 * still holding other entries fails its rmdir, which err names. Nothing at
 * name: 0. */
int sf_remove_dir(int parentfd, const char *name, const char *shown,
                  int (*known)(const char *entry, void *ctx), void *ctx, char *err,
                  size_t err_len);

/* 1 when path is a symbolic link itself (lstat). */
int sf_is_link(const char *path);

/* The file open on fd, to be written in place (appended to, truncated),
 * must be a regular file with no other name: O_NOFOLLOW stops a symbolic
 * link but not a hard link, through which the write would change the file
 * behind the other name too. Judged on the descriptor (fstat), so a swap
 * of the name after the open cannot fool it. 0, or -1 with "SHOWN:
 * hard-linked to another name (N links); ..." or "SHOWN: not a regular
 * file" in err. */
int sf_check_sole_name(int fd, const char *shown, char *err, size_t err_len);

/* Open /dev/null on each of fds 0, 1 and 2 that is closed, so that the
 * first file a program opens never becomes its stdout (console text into a
 * lock file) or stdin. Called first thing by both programs. */
void sf_guard_std_fds(void);

#endif
