/* tests/unit/base/test_safefile.c — base/safefile.h and the writers built
 * on it (base/fileio.h, data/shard.h, model/opcost_file.h), against what
 * the headers promise: whatever symbolic link is planted at a temp name, a
 * final name, a probe name or a folder to delete, the file or folder it
 * points at (outside the folder written) keeps every byte and every entry;
 * nothing under /dev or /proc is renamed; closed fds 0-2 are reopened. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/safefile.h"
#include "data/shard.h"
#include "model/opcost.h"
#include "model/opcost_file.h"
#include "tests/lib/test_util.h"

static const char KEEP[] = "a file outside the run's folders: keep me byte for byte\n";

/* d/outside/target holding KEEP, and d/work/ (the folder written); the
 * target's path into target. */
static void setup(const char *d, char *target, size_t len)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/outside", d);
    cr_assert_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/work", d);
    cr_assert_eq(mkdir(p, 0755), 0);
    snprintf(target, len, "%s/outside/target", d);
    tu_write_text(target, KEEP);
}

static void expect_untouched(const char *target)
{
    size_t n = 0;
    char *got = tu_read_file(target, &n);
    cr_expect(got && n == strlen(KEEP) && memcmp(got, KEEP, n) == 0,
              "%s changed: %zu bytes '%.60s'", target, n, got ? got : "(gone)");
    free(got);
}

static void expect_link(const char *path, const char *to)
{
    char got[4200] = "";
    ssize_t n = readlink(path, got, sizeof got - 1);
    cr_expect(n > 0, "%s is no longer a symbolic link", path);
    if (n > 0) {
        got[n] = 0;
        cr_expect_str_eq(got, to);
    }
}

static void plant(const char *target, const char *link_path)
{
    cr_assert_eq(symlink(target, link_path), 0, "%s: %s", link_path, strerror(errno));
}

Test(safefile, a_link_at_the_temp_name_is_removed_not_written_through)
{
    char *d = tu_tempdir(), target[4200], path[4200], tmp[4300], err[4600];
    setup(d, target, sizeof target);
    snprintf(path, sizeof path, "%s/work/m.bin", d);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    plant(target, tmp);
    cr_assert_eq(io_write_file(path, "HEAD", 4, "body", 4, err, sizeof err), 0, "%s", err);
    expect_untouched(target);
    struct stat st;
    cr_expect(lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 8);
    cr_expect(lstat(tmp, &st) != 0, "the link at the temp name is gone");
    tu_remove_tree(d);
}

Test(safefile, a_link_at_the_final_name_is_refused_and_kept)
{
    char *d = tu_tempdir(), target[4200], path[4200], err[4600] = "";
    setup(d, target, sizeof target);
    snprintf(path, sizeof path, "%s/work/m.bin", d);
    plant(target, path);
    cr_expect_neq(io_write_file(path, "HEAD", 4, "body", 4, err, sizeof err), 0);
    cr_expect(strstr(err, path) && strstr(err, "is a symbolic link"), "%s", err);
    expect_untouched(target);
    expect_link(path, target);
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    cr_expect(!tu_exists(tmp), "no temp file left");
    tu_remove_tree(d);
}

Test(safefile, the_write_probe_never_writes_through_a_link_at_its_name)
{
    char *d = tu_tempdir(), target[4200], work[4200], probe[4300], err[4600];
    setup(d, target, sizeof target);
    snprintf(work, sizeof work, "%s/work", d);
    snprintf(probe, sizeof probe, "%s/.train_gpt_write_test.%ld", work, (long)getpid());
    plant(target, probe);
    cr_assert_eq(io_probe_writable(work, err, sizeof err), 0, "%s", err);
    expect_untouched(target);
    struct stat st;
    cr_expect(lstat(probe, &st) != 0, "the probe's name is left free");
    tu_remove_tree(d);
}

Test(safefile, shards_and_opcost_files_never_write_through_a_temp_link)
{
    char *d = tu_tempdir(), target[4200], path[4200], tmp[4300], err[4600];
    setup(d, target, sizeof target);
    const uint16_t tokens[4] = {1, 2, 3, 4};
    snprintf(path, sizeof path, "%s/work/s_train_000000.bin", d);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    plant(target, tmp);
    cr_assert_eq(shard_write(path, tokens, 4, err, sizeof err), 0, "%s", err);
    expect_untouched(target);
    snprintf(path, sizeof path, "%s/work/costs.json", d);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    plant(target, tmp);
    PlanInput in = {.cfg = {.max_seq_len = 16, .vocab_size = 256, .padded_vocab = 256,
                            .num_layers = 1, .num_heads = 1, .channels = 8},
                    .B = 1, .T = 16, .dtype = DTYPE_FP32};
    OpCosts oc = {.unit = OPCOST_NS, .reps = 1};
    cr_assert_eq(opcost_file_write(path, "cpu: test", &in, &oc, err, sizeof err), 0, "%s", err);
    expect_untouched(target);
    tu_remove_tree(d);
}

/* d/outside/ with three files: a folder a link to delete points at. */
static void fill(const char *dir)
{
    const char *names[] = {"COMPLETE", "model.bin", "state_r00000.bin"};
    for (int i = 0; i < 3; i++) tu_write_text(tu_path(dir, names[i]), KEEP);
}

static void expect_full(const char *dir)
{
    const char *names[] = {"COMPLETE", "model.bin", "state_r00000.bin"};
    for (int i = 0; i < 3; i++) expect_untouched(tu_path(dir, names[i]));
}

static int only_bins(const char *name, void *ctx)
{
    (void)ctx;
    size_t n = strlen(name);
    return n > 4 && strcmp(name + n - 4, ".bin") == 0;
}

Test(safefile, remove_dir_refuses_a_link_and_deletes_known_names_only)
{
    char *d = tu_tempdir(), target[4200], outside[4200], link[4200], err[4600] = "";
    setup(d, target, sizeof target);
    snprintf(outside, sizeof outside, "%s/outside", d);
    fill(outside);
    snprintf(link, sizeof link, "%s/work/step_00000002", d);
    plant(outside, link);
    int dfd = sf_open_dir(tu_path(d, "work"), 0, err, sizeof err);
    cr_assert_geq(dfd, 0, "%s", err);
    cr_expect_neq(sf_remove_dir(dfd, "step_00000002", link, NULL, NULL, err, sizeof err), 0);
    cr_expect(strstr(err, link) && strstr(err, "symbolic link"), "%s", err);
    expect_full(outside);
    expect_untouched(target);
    expect_link(link, outside);

    /* a real folder: its known names go; a link inside is removed itself,
     * never its target; an unknown file keeps the folder */
    char real[4200];
    snprintf(real, sizeof real, "%s/work/step_00000004", d);
    cr_assert_eq(mkdir(real, 0755), 0);
    tu_write_text(tu_path(real, "model.bin"), "x");
    plant(target, tu_path(real, "state_r00000.bin"));
    tu_write_text(tu_path(real, "notes.txt"), "the user's");
    cr_expect_neq(sf_remove_dir(dfd, "step_00000004", real, only_bins, NULL, err, sizeof err), 0);
    cr_expect(strstr(err, real) && strstr(err, "cannot delete folder"), "%s", err);
    cr_expect(!tu_exists(tu_path(real, "model.bin")));
    cr_expect(tu_exists(tu_path(real, "notes.txt")), "an unknown name is kept");
    expect_untouched(target);
    unlink(tu_path(real, "notes.txt"));
    cr_expect_eq(sf_remove_dir(dfd, "step_00000004", real, only_bins, NULL, err, sizeof err), 0,
                 "%s", err);
    cr_expect(!tu_exists(real));
    close(dfd);
    tu_remove_tree(d);
}

Test(safefile, open_dir_without_follow_refuses_a_link)
{
    char *d = tu_tempdir(), target[4200], link[4200], err[4600] = "";
    setup(d, target, sizeof target);
    snprintf(link, sizeof link, "%s/work/linked", d);
    plant(tu_path(d, "outside"), link);
    cr_expect_lt(sf_open_dir(link, 0, err, sizeof err), 0);
    cr_expect(strstr(err, link) && strstr(err, "is a symbolic link"), "%s", err);
    int fd = sf_open_dir(link, 1, err, sizeof err);
    cr_expect_geq(fd, 0, "a folder the user named may be a link: %s", err);
    if (fd >= 0) close(fd);
    tu_remove_tree(d);
}

Test(safefile, nothing_under_dev_or_proc_nor_a_link_is_replaced)
{
    cr_expect_str_eq(sf_replace_refusal("/dev/null"), "is under /dev");
    cr_expect_str_eq(sf_replace_refusal("/proc/self/status"), "is under /proc");
    cr_expect_str_eq(sf_replace_refusal("/dev/stdout"), "is a symbolic link");
    char *d = tu_tempdir(), err[4600] = "";
    tu_write_text(tu_path(d, "f"), "x");
    cr_expect_null(sf_replace_refusal(tu_path(d, "f")));
    cr_expect_null(sf_replace_refusal(tu_path(d, "absent")));
    /* a path that resolves under /dev through a link of the user's */
    char via[4200];
    snprintf(via, sizeof via, "%s/devlink", d);
    cr_assert_eq(symlink("/dev", via), 0);
    cr_expect_str_eq(sf_replace_refusal(tu_path(via, "null")), "is under /dev");
    struct stat before, after;
    cr_assert_eq(stat("/dev/null", &before), 0);
    cr_expect_neq(io_write_file(tu_path(via, "null"), "x", 1, NULL, 0, err, sizeof err), 0);
    cr_expect(strstr(err, "is under /dev"), "%s", err);
    cr_assert_eq(lstat("/dev/null", &after), 0);
    cr_expect(S_ISCHR(after.st_mode) && after.st_ino == before.st_ino, "/dev/null was replaced");
    cr_expect(!tu_exists("/dev/null.tmp"), "nothing is created in /dev");
    tu_remove_tree(d);
}

Test(safefile, closed_std_fds_are_reopened_on_dev_null)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(0);
        close(1);
        sf_guard_std_fds();
        int ok = fcntl(0, F_GETFD) != -1 && fcntl(1, F_GETFD) != -1 && fcntl(2, F_GETFD) != -1;
        int fd = open("/dev/null", O_RDONLY); /* a new file never gets 0-2 */
        _exit(ok && fd > 2 ? 0 : 1);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
