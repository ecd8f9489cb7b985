/* tests/unit/base/test_fileio.c — base/fileio.h's write protocol and
 * reader checks, against what its header promises: a committed file holds
 * exactly the bytes written, a failed or aborted write leaves nothing new,
 * readers refuse what is not a regular file, and every fault names its
 * path. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/fileio.h"
#include "tests/lib/test_util.h"

/* The names in a folder, sorted, one per line ("" when empty). */
static char *listing(const char *dir)
{
    char cmd[4200], *out = NULL;
    snprintf(cmd, sizeof cmd, "ls -A '%s' | sort", dir);
    cr_assert_eq(tu_run_output(cmd, &out, NULL), 0);
    return out ? out : strdup("");
}

Test(fileio, write_file_holds_head_then_body_and_leaves_no_temp)
{
    char *d = tu_tempdir(), err[512];
    const char *path = tu_path(d, "m.bin");
    cr_assert_eq(io_write_file(path, "HEAD", 4, "body!", 5, err, sizeof err), 0, "%s", err);
    size_t n;
    char *got = tu_read_file(path, &n);
    cr_expect_eq(n, 9);
    cr_expect_eq(memcmp(got, "HEADbody!", 9), 0);
    free(got);
    char *ls = listing(d);
    cr_expect_str_eq(ls, "m.bin\n", "only the file, no .tmp: %s", ls);
    free(ls);
    tu_remove_tree(d);
}

/* The crc a writer keeps is zlib's crc32 of every byte written, and
 * io_file_crc reads the same crc and size back from the committed file. */
Test(fileio, the_writer_crc_is_crc32_of_the_bytes)
{
    char *d = tu_tempdir(), err[512];
    const char *path = tu_path(d, "s.bin");
    IoWriter w;
    cr_assert_eq(io_create(&w, path, err, sizeof err), 0, "%s", err);
    unsigned char buf[3000];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)(i * 7 + 3);
    cr_assert_eq(io_write(&w, buf, 1000, err, sizeof err), 0, "%s", err);
    cr_assert_eq(io_write(&w, buf + 1000, 2000, err, sizeof err), 0, "%s", err);
    uint32_t want = (uint32_t)crc32(0L, buf, sizeof buf);
    cr_expect_eq(w.bytes, sizeof buf);
    cr_expect_eq(w.crc, want, "writer crc %08x, zlib %08x", w.crc, want);
    cr_assert_eq(io_commit(&w, err, sizeof err), 0, "%s", err);
    uint64_t bytes;
    uint32_t crc;
    cr_assert_eq(io_file_crc(path, &bytes, &crc, err, sizeof err), 0, "%s", err);
    cr_expect_eq(bytes, sizeof buf);
    cr_expect_eq(crc, want);
    tu_remove_tree(d);
}

/* An aborted write leaves what stood at path untouched and no temp file. */
Test(fileio, abort_keeps_the_old_file_and_removes_the_temp)
{
    char *d = tu_tempdir(), err[512];
    const char *path = tu_path(d, "m.bin");
    tu_write_text(path, "old contents");
    IoWriter w;
    cr_assert_eq(io_create(&w, path, err, sizeof err), 0, "%s", err);
    cr_assert_eq(io_write(&w, "new", 3, err, sizeof err), 0, "%s", err);
    io_abort(&w);
    char *got = tu_read_file(path, NULL);
    cr_expect_str_eq(got, "old contents");
    free(got);
    char *ls = listing(d);
    cr_expect_str_eq(ls, "m.bin\n", "%s", ls);
    free(ls);
    tu_remove_tree(d);
}

/* A stale temp file from a crash is replaced, not appended to. */
Test(fileio, a_stale_temp_is_truncated)
{
    char *d = tu_tempdir(), err[512];
    const char *path = tu_path(d, "m.bin");
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    tu_write_text(tmp, "debris from a crash, longer than the new file");
    cr_assert_eq(io_write_file(path, "ab", 2, NULL, 0, err, sizeof err), 0, "%s", err);
    size_t n;
    char *got = tu_read_file(path, &n);
    cr_expect_eq(n, 2);
    cr_expect_eq(memcmp(got, "ab", 2), 0);
    free(got);
    cr_expect(!tu_exists(tmp));
    tu_remove_tree(d);
}

Test(fileio, write_parts_concatenates_in_order_with_empty_parts)
{
    char *d = tu_tempdir(), err[512];
    const char *path = tu_path(d, "p.bin");
    const void *parts[] = {"one", "", "two", "three"};
    size_t lens[] = {3, 0, 3, 5};
    cr_assert_eq(io_write_parts(path, parts, lens, 4, err, sizeof err), 0, "%s", err);
    size_t n;
    char *got = tu_read_file(path, &n);
    cr_expect_eq(n, 11);
    cr_expect_eq(memcmp(got, "onetwothree", 11), 0);
    free(got);
    tu_remove_tree(d);
}

/* A write into a folder that does not exist fails naming the file. */
Test(fileio, a_missing_folder_is_named)
{
    char *d = tu_tempdir(), err[512] = "";
    const char *path = tu_path(d, "no/such/m.bin");
    cr_expect_eq(io_write_file(path, "x", 1, NULL, 0, err, sizeof err), -1);
    cr_expect(strstr(err, "no/such/m.bin") != NULL, "%s", err);
    cr_expect(strstr(err, "No such file or directory") != NULL, "%s", err);
    tu_remove_tree(d);
}

/* Readers start with io_open_regular: a folder and a FIFO are refused
 * (the FIFO without blocking on it), a regular file gives its size. */
Test(fileio, open_regular_refuses_folders_and_fifos, .timeout = 10)
{
    char *d = tu_tempdir(), err[512];
    off_t size = -1;
    const char *f = tu_path(d, "f");
    tu_write_text(f, "12345");
    int fd = io_open_regular(f, &size, err, sizeof err);
    cr_assert_geq(fd, 0, "%s", err);
    cr_expect_eq(size, 5);
    close(fd);
    err[0] = 0;
    cr_expect_eq(io_open_regular(d, &size, err, sizeof err), -1);
    cr_expect(strstr(err, d) != NULL, "%s", err);
    const char *fifo = tu_path(d, "fifo");
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    err[0] = 0;
    cr_expect_eq(io_open_regular(fifo, &size, err, sizeof err), -1);
    cr_expect(strstr(err, "fifo") != NULL, "%s", err);
    tu_remove_tree(d);
}

/* io_read_whole takes lo..hi bytes and says how many the file had. */
Test(fileio, read_whole_bounds_the_size)
{
    char *d = tu_tempdir(), err[512], *text = NULL;
    size_t len = 0;
    const char *f = tu_path(d, "manifest.json");
    tu_write_text(f, "{\"a\": 1}");
    cr_assert_eq(io_read_whole(f, 2, 100, "a manifest", &text, &len, err, sizeof err), 0, "%s",
                 err);
    cr_expect_eq(len, 8);
    cr_expect_str_eq(text, "{\"a\": 1}", "NUL-terminated");
    free(text);
    cr_expect_eq(io_read_whole(f, 2, 4, "a manifest", &text, &len, err, sizeof err), -1);
    cr_expect(strstr(err, "manifest.json: 8 bytes (a manifest has 2..4)") != NULL, "%s", err);
    tu_remove_tree(d);
}

Test(fileio, pread_exact_reports_a_short_read_as_truncated)
{
    char *d = tu_tempdir(), err[512];
    const char *f = tu_path(d, "short.bin");
    tu_write_text(f, "abc");
    int fd = open(f, O_RDONLY);
    cr_assert_geq(fd, 0);
    char buf[8];
    cr_expect_eq(io_pread_exact(fd, buf, 2, 1, f, err, sizeof err), 0, "%s", err);
    cr_expect_eq(memcmp(buf, "bc", 2), 0);
    cr_expect_eq(io_pread_exact(fd, buf, 8, 0, f, err, sizeof err), -1);
    cr_expect(strstr(err, "short.bin") && strstr(err, "truncated"), "%s", err);
    close(fd);
    tu_remove_tree(d);
}

Test(fileio, mkdirs_makes_parents_and_refuses_a_file_in_the_way)
{
    char *d = tu_tempdir(), err[512];
    const char *deep = tu_path(d, "a/b/c");
    cr_assert_eq(io_mkdirs(deep, err, sizeof err), 0, "%s", err);
    struct stat st;
    cr_expect(stat(deep, &st) == 0 && S_ISDIR(st.st_mode));
    cr_expect_eq(io_mkdirs(deep, err, sizeof err), 0, "an existing folder is fine: %s", err);
    tu_write_text(tu_path(d, "file"), "x");
    err[0] = 0;
    cr_expect_eq(io_mkdirs(tu_path(d, "file/sub"), err, sizeof err), -1);
    cr_expect(strstr(err, "file") != NULL, "%s", err);
    tu_remove_tree(d);
}

/* io_link_aside gives a second name and never replaces a file there. */
Test(fileio, link_aside_takes_the_first_free_name)
{
    char *d = tu_tempdir(), dst1[4200], dst2[4200];
    const char *f = tu_path(d, "log.txt");
    tu_write_text(f, "first");
    cr_assert_eq(io_link_aside(f, dst1, sizeof dst1), 0, "%s", strerror(errno));
    cr_assert_eq(io_link_aside(f, dst2, sizeof dst2), 0, "%s", strerror(errno));
    cr_expect_str_neq(dst1, dst2);
    char want[4200];
    snprintf(want, sizeof want, "%s.replaced_", f);
    cr_expect_eq(strncmp(dst1, want, strlen(want)), 0, "%s", dst1);
    char *a = tu_read_file(dst1, NULL), *b = tu_read_file(dst2, NULL);
    cr_expect_str_eq(a, "first");
    cr_expect_str_eq(b, "first");
    free(a);
    free(b);
    struct stat s0, s1;
    cr_assert_eq(stat(f, &s0), 0);
    cr_assert_eq(stat(dst1, &s1), 0);
    cr_expect_eq(s0.st_ino, s1.st_ino, "a hard link, not a copy");
    tu_remove_tree(d);
}

Test(fileio, stamp_is_date_dash_time)
{
    char s[32];
    io_stamp(s, sizeof s);
    cr_assert_eq(strlen(s), 15, "%s", s);
    for (int i = 0; i < 15; i++)
        cr_expect(i == 8 ? s[i] == '-' : (s[i] >= '0' && s[i] <= '9'), "%s", s);
}

Test(fileio, dirname_cases)
{
    char out[64];
    io_dirname("m.bin", out, sizeof out);
    cr_expect_str_eq(out, ".");
    io_dirname("/x", out, sizeof out);
    cr_expect_str_eq(out, "/");
    io_dirname("a/b/m.bin", out, sizeof out);
    cr_expect_str_eq(out, "a/b");
}

/* io_probe_output: a path ending in '/' and a missing folder are faults
 * (the fault without the path, for the caller to put after its flag). */
Test(fileio, probe_output_checks_the_folder_before_the_work)
{
    char *d = tu_tempdir(), err[512];
    cr_expect_eq(io_probe_output(tu_path(d, "m.bin"), err, sizeof err), 0, "%s", err);
    char *ls = listing(d);
    cr_expect_str_eq(ls, "", "the probe leaves nothing: %s", ls);
    free(ls);
    err[0] = 0;
    cr_expect_eq(io_probe_output(tu_path(d, "sub/"), err, sizeof err), -1);
    cr_expect(err[0] != 0);
    err[0] = 0;
    cr_expect_eq(io_probe_output(tu_path(d, "missing/m.bin"), err, sizeof err), -1);
    cr_expect(strstr(err, "its folder must exist and be writable") != NULL, "%s", err);
    tu_remove_tree(d);
}

/* io_commit renames over a regular file only: a folder standing at the
 * path is left as it was, the fault names it, and the temp file goes. */
Test(fileio, commit_never_replaces_a_folder)
{
    char *d = tu_tempdir(), err[512] = "";
    const char *path = tu_path(d, "m.bin");
    cr_assert_eq(mkdir(path, 0700), 0);
    tu_write_text(tu_path(path, "inside"), "kept");
    cr_expect_eq(io_write_file(path, "x", 1, NULL, 0, err, sizeof err), -1);
    cr_expect(strstr(err, "m.bin") && strstr(err, "not a regular file; not replaced"), "%s", err);
    char *got = tu_read_file(tu_path(path, "inside"), NULL);
    cr_expect_str_eq(got, "kept");
    free(got);
    char *ls = listing(d);
    cr_expect_str_eq(ls, "m.bin\n", "no temp left: %s", ls);
    free(ls);
    tu_remove_tree(d);
}
