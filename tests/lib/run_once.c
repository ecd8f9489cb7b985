/* tests/lib/run_once.c — a run's shared products (run_once.h). */
#include "tests/lib/run_once.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/lib/test_util.h"

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

char *run_once(const char *key, void (*build)(const char *dir, void *arg), void *arg)
{
    char done[PATH_MAX], lock[PATH_MAX + 8], tmp[PATH_MAX + 32];
    /* only under the suite's own root (test_util.c's PRE_ALL): a folder in
     * a lasting $TMPDIR would hand one run's results to the next */
    cr_assert(strstr(tu_tmp(), "/train_gpt_tests."), "run_once(%s): $TMPDIR %s is not the "
              "suite's root", key, tu_tmp());
    snprintf(done, sizeof done, "%s/once-%s", tu_tmp(), key);
    char *path = strdup(done);
    cr_assert_not_null(path);
    if (is_dir(done)) return path;
    snprintf(lock, sizeof lock, "%s.lock", done);
    int fd = open(lock, O_RDWR | O_CREAT, 0644);
    cr_assert_geq(fd, 0, "%s: cannot open the lock", lock);
    /* the builder holds it until its folder has its final name */
    cr_assert_eq(flock(fd, LOCK_EX), 0, "%s: flock failed", lock);
    if (!is_dir(done)) {
        snprintf(tmp, sizeof tmp, "%s.tmp%ld", done, (long)getpid());
        cr_assert_eq(mkdir(tmp, 0755), 0, "%s: cannot make it", tmp);
        build(tmp, arg);
        cr_assert_eq(rename(tmp, done), 0, "%s: cannot rename it to %s", tmp, done);
    }
    close(fd); /* releases the lock */
    return path;
}
