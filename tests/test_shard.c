/* tests/test_shard.c — the shard format and the loader's window order.
 * Offsets are computed by hand in the comments; every shard is made here
 * with tokens[i] = base + i, so a window's first input names its offset. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/shard.h"
#include "test_util.h"

static void make_shard(const char *path, int base, size_t n)
{
    uint16_t *t = malloc(n * sizeof *t + 2);
    for (size_t i = 0; i < n; i++) t[i] = (uint16_t)(base + i);
    char err[256];
    cr_assert_eq(shard_write(path, t, n, err, sizeof err), 0, "%s", err);
    free(t);
}

static char *path_in(const char *dir, const char *name)
{
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

Test(shard, writer_header_and_size)
{
    char *d = tu_tempdir(), *p = path_in(d, "s.bin");
    make_shard(p, 7, 5);
    size_t len;
    char *bytes = tu_read_file(p, &len);
    cr_assert_eq(len, 1024 + 2 * 5);
    int32_t h[3];
    memcpy(h, bytes, sizeof h);
    cr_expect_eq(h[0], 20240520);
    cr_expect_eq(h[1], 1);
    cr_expect_eq(h[2], 5);
    uint16_t first;
    memcpy(&first, bytes + 1024, 2);
    cr_expect_eq(first, 7);
    size_t n;
    char err[256];
    cr_expect_eq(shard_check(p, &n, err, sizeof err), 0, "%s", err);
    cr_expect_eq(n, 5);
    free(bytes), free(p), free(d);
}

/* B=2, T=4 (8 tokens a step, windows of 9). Shard a: 30 tokens -> floor(29/8)
 * = 3 steps at offsets 0, 8, 16. Shard b: 21 tokens -> floor(20/8) = 2 steps
 * at 0, 8. Then back to a. */
Test(shard, sequential_order_and_rollover)
{
    char *d = tu_tempdir(), *a = path_in(d, "x_train_000000.bin"), *b = path_in(d, "x_train_000001.bin");
    make_shard(a, 0, 30);
    make_shard(b, 1000, 21);
    char glob[512], err[512];
    snprintf(glob, sizeof glob, "%s/x_train_*.bin", d);
    Loader ld;
    cr_assert_eq(loader_open(&ld, glob, 2, 4, 0, 1, 65536, 0, 1, err, sizeof err), 0, "%s", err);
    int want[] = {0, 8, 16, 1000, 1008, 0, 8};
    int in[8], tg[8];
    for (int s = 0; s < 7; s++) {
        cr_assert_eq(loader_next(&ld, in, tg, err, sizeof err), 0, "%s", err);
        cr_expect_eq(in[0], want[s], "step %d: window starts at %d, want %d", s, in[0], want[s]);
        for (int i = 0; i < 8; i++) {
            cr_expect_eq(in[i], want[s] + i);
            cr_expect_eq(tg[i], want[s] + i + 1, "targets are inputs shifted by one");
        }
    }
    loader_close(&ld);
    free(a), free(b), free(d);
}

/* Two ranks, B=2, T=4: a step spans 16 tokens. Shard a (30 tokens):
 * floor(29/16) = 1 step; rank 0 at 0, rank 1 at 8. Shard b (40 tokens):
 * floor(39/16) = 2 steps; rank 0 at 0, 16; rank 1 at 8, 24. */
Test(shard, rank_strided_windows)
{
    char *d = tu_tempdir(), *a = path_in(d, "y_000.bin"), *b = path_in(d, "y_001.bin");
    make_shard(a, 0, 30);
    make_shard(b, 1000, 40);
    char glob[512], err[512];
    snprintf(glob, sizeof glob, "%s/y_*.bin", d);
    int want[2][3] = {{0, 1000, 1016}, {8, 1008, 1024}};
    for (int r = 0; r < 2; r++) {
        Loader ld;
        cr_assert_eq(loader_open(&ld, glob, 2, 4, r, 2, 65536, 0, 1, err, sizeof err), 0, "%s", err);
        int in[8], tg[8];
        for (int s = 0; s < 3; s++) {
            cr_assert_eq(loader_next(&ld, in, tg, err, sizeof err), 0, "%s", err);
            cr_expect_eq(in[0], want[r][s], "rank %d step %d: %d", r, s, in[0]);
        }
        loader_close(&ld);
    }
    free(a), free(b), free(d);
}

/* Shuffle: the same seed gives the same order, every window of an epoch is
 * visited exactly once, and the order differs from sequential. */
Test(shard, shuffle_is_a_seeded_permutation)
{
    char *d = tu_tempdir(), *a = path_in(d, "z_000.bin");
    make_shard(a, 0, 8 * 20 + 1); /* 20 steps of 8 */
    char glob[512], err[512];
    snprintf(glob, sizeof glob, "%s/z_*.bin", d);
    int seen[20] = {0}, first[20], in[8], tg[8], differs = 0;
    for (int rep = 0; rep < 2; rep++) {
        Loader ld;
        cr_assert_eq(loader_open(&ld, glob, 2, 4, 0, 1, 65536, 1, 42, err, sizeof err), 0, "%s", err);
        for (int s = 0; s < 20; s++) {
            cr_assert_eq(loader_next(&ld, in, tg, err, sizeof err), 0);
            if (rep == 0) {
                first[s] = in[0];
                seen[in[0] / 8]++;
                differs |= in[0] != s * 8;
            } else {
                cr_expect_eq(in[0], first[s], "same seed, same order");
            }
        }
        loader_close(&ld);
    }
    for (int w = 0; w < 20; w++) cr_expect_eq(seen[w], 1, "window %d seen %d times", w, seen[w]);
    cr_expect(differs);
    free(a), free(d);
}

/* Write raw bytes: a header (magic, version, count) and `payload` bytes. */
static void write_raw(const char *path, int magic, int version, int count, size_t payload)
{
    FILE *f = fopen(path, "wb");
    int32_t h[256] = {magic, version, count};
    fwrite(h, sizeof h, 1, f);
    for (size_t i = 0; i < payload; i++) fputc(1, f);
    fclose(f);
}

static void expect_open_error(const char *glob, int B, int T, const char *needle)
{
    Loader ld;
    char err[512] = "";
    cr_expect_neq(loader_open(&ld, glob, B, T, 0, 1, 65536, 0, 1, err, sizeof err), 0,
                  "%s should be rejected", glob);
    cr_expect(strstr(err, needle) != NULL, "message '%s' lacks '%s'", err, needle);
}

Test(shard, bad_inputs_rejected_with_file_and_fault)
{
    char *d = tu_tempdir(), p[512];
    snprintf(p, sizeof p, "%s/magic.bin", d);
    write_raw(p, 1234, 1, 10, 20);
    expect_open_error(p, 1, 4, "bad magic");
    expect_open_error(p, 1, 4, "magic.bin");
    snprintf(p, sizeof p, "%s/version.bin", d);
    write_raw(p, 20240520, 7, 10, 20);
    expect_open_error(p, 1, 4, "unsupported version 7");
    snprintf(p, sizeof p, "%s/trunc.bin", d);
    write_raw(p, 20240520, 1, 10, 15); /* 10 tokens need 20 bytes */
    expect_open_error(p, 1, 4, "truncated");
    snprintf(p, sizeof p, "%s/extra.bin", d);
    write_raw(p, 20240520, 1, 10, 21);
    expect_open_error(p, 1, 4, "trailing bytes");
    snprintf(p, sizeof p, "%s/short_header.bin", d);
    FILE *f = fopen(p, "wb");
    fwrite("abc", 1, 3, f);
    fclose(f);
    expect_open_error(p, 1, 4, "truncated header");
    snprintf(p, sizeof p, "%s/empty.bin", d);
    fclose(fopen(p, "wb"));
    expect_open_error(p, 1, 4, "truncated header");
    snprintf(p, sizeof p, "%s/negative.bin", d);
    write_raw(p, 20240520, 1, -5, 0);
    expect_open_error(p, 1, 4, "negative token count");
    snprintf(p, sizeof p, "%s/small.bin", d);
    make_shard(p, 0, 8); /* B*T+1 = 9 tokens needed */
    expect_open_error(p, 2, 4, "fewer than the 9");
    snprintf(p, sizeof p, "%s/nothing_*.bin", d);
    expect_open_error(p, 1, 4, "matched no files");
    snprintf(p, sizeof p, "%s/adir.bin", d);
    mkdir(p, 0700);
    expect_open_error(p, 1, 4, "not a regular file");
    free(d);
}

Test(shard, token_outside_vocab_rejected_when_read)
{
    char *d = tu_tempdir(), *p = path_in(d, "v.bin");
    make_shard(p, 250, 20); /* tokens 250..269; vocab 256 */
    Loader ld;
    char err[512];
    int in[8], tg[8];
    cr_assert_eq(loader_open(&ld, p, 2, 4, 0, 1, 256, 0, 1, err, sizeof err), 0, "%s", err);
    cr_expect_neq(loader_next(&ld, in, tg, err, sizeof err), 0);
    cr_expect(strstr(err, "token 256 at offset 6") && strstr(err, "v.bin"), "%s", err);
    loader_close(&ld);
    free(p), free(d);
}
