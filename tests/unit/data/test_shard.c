/* tests/unit/data/test_shard.c — the shard format and the loader's window order.
 * Offsets are computed by hand in the comments; every shard is made here
 * with tokens[i] = base + i, so a window's first input names its offset. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/loader.h"
#include "tests/lib/test_util.h"

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

/* ---- rank slicing against the one-process global batch ----
 * Token i of a test shard is i (vocabulary 65536), so a row's first input
 * is its token offset. For a global batch of W*b rows, rank r of W with
 * batch b must read, at every step, exactly rows [r*b, (r+1)*b) of the one
 * process with batch W*b (inputs and targets), across shard changes and
 * epochs, shuffled or not; the ranks' token ranges within a step are
 * disjoint. Loaders are opened with rank r of W directly (no MPI). */

/* Shards of the given sizes, token i = (start + i) % 65536 with start
 * running on across shards, in dir/train_00k.bin. */
static void write_shards(const char *dir, const size_t *sizes, int n)
{
    size_t start = 0;
    for (int k = 0; k < n; k++) {
        uint16_t *t = malloc(sizes[k] * sizeof(uint16_t));
        for (size_t i = 0; i < sizes[k]; i++) t[i] = (uint16_t)((start + i) % 65536);
        char path[512], err[256];
        snprintf(path, sizeof path, "%s/train_%03d.bin", dir, k);
        cr_assert_eq(shard_write(path, t, sizes[k], err, sizeof err), 0, "%s", err);
        free(t);
        start += sizes[k];
    }
}

static void check_slicing(int W, int b, int T, int shuffle, const size_t *sizes, int nshards,
                          int steps)
{
    char *dir = tu_tempdir(), glob[512], err[256];
    write_shards(dir, sizes, nshards);
    snprintf(glob, sizeof glob, "%s/train_*.bin", dir);
    Loader one, ranks[4];
    cr_assert_eq(loader_open(&one, glob, W * b, T, 0, 1, 65536, shuffle, 7, err, sizeof err), 0,
                 "%s", err);
    for (int r = 0; r < W; r++)
        cr_assert_eq(loader_open(&ranks[r], glob, b, T, r, W, 65536, shuffle, 7, err, sizeof err),
                     0, "%s", err);
    size_t N1 = (size_t)W * b * T, Nr = (size_t)b * T;
    int *in1 = malloc(N1 * sizeof(int)), *tg1 = malloc(N1 * sizeof(int));
    int *in = malloc(Nr * sizeof(int)), *tg = malloc(Nr * sizeof(int));
    for (int s = 0; s < steps; s++) {
        long lo[4], hi[4];
        for (int r = 0; r < W; r++) {
            cr_assert_str_eq(loader_current_path(&ranks[r]), loader_current_path(&one),
                             "step %d: rank %d reads another shard than the one process", s, r);
            lo[r] = loader_offset(&ranks[r]);
            hi[r] = lo[r] + (long)Nr; /* inputs cover [lo, hi) */
        }
        cr_assert_eq(loader_next(&one, in1, tg1, err, sizeof err), 0, "%s", err);
        for (int r = 0; r < W; r++) {
            cr_assert_eq(loader_next(&ranks[r], in, tg, err, sizeof err), 0, "%s", err);
            cr_assert_eq(memcmp(in, in1 + (size_t)r * Nr, Nr * sizeof(int)), 0,
                         "W=%d b=%d shuffle=%d step %d: rank %d's inputs are not rows %d..%d of "
                         "the one-process batch", W, b, shuffle, s, r, r * b, (r + 1) * b - 1);
            cr_assert_eq(memcmp(tg, tg1 + (size_t)r * Nr, Nr * sizeof(int)), 0,
                         "step %d: rank %d's targets differ", s, r);
        }
        for (int r = 0; r < W; r++)
            for (int q = r + 1; q < W; q++)
                cr_assert(hi[r] <= lo[q] || hi[q] <= lo[r],
                          "step %d: ranks %d [%ld,%ld) and %d [%ld,%ld) overlap", s, r, lo[r],
                          hi[r], q, lo[q], hi[q]);
    }
    free(in1), free(tg1), free(in), free(tg);
    loader_close(&one);
    for (int r = 0; r < W; r++) loader_close(&ranks[r]);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    tu_run(cmd);
    free(dir);
}

/* 1000 and 700 tokens: windows of 16 (or 48) tokens, partial tails, and
 * 200 steps cross both shards and several epochs. */
static const size_t SIZES[2] = {1000, 700};

Test(shard, two_ranks_b1_match_one_process_b2) { check_slicing(2, 1, 8, 0, SIZES, 2, 200); }
Test(shard, two_ranks_b2_match_one_process_b4) { check_slicing(2, 2, 8, 0, SIZES, 2, 200); }
Test(shard, three_ranks_match_one_process) { check_slicing(3, 2, 8, 0, SIZES, 2, 200); }
Test(shard, slicing_holds_when_shuffled) { check_slicing(2, 1, 8, 1, SIZES, 2, 200); }
Test(shard, three_ranks_shuffled) { check_slicing(3, 1, 5, 1, SIZES, 2, 300); }

/* A shard needs world * B * T + 1 tokens: 16 tokens serve one rank of
 * B=1, T=8 (9 needed) but not two (17 needed). */
Test(shard, too_small_for_the_world_is_rejected)
{
    char *dir = tu_tempdir(), glob[512], err[512];
    size_t n = 16;
    write_shards(dir, &n, 1);
    snprintf(glob, sizeof glob, "%s/train_*.bin", dir);
    Loader ld;
    cr_assert_eq(loader_open(&ld, glob, 1, 8, 0, 1, 65536, 0, 1, err, sizeof err), 0, "%s", err);
    loader_close(&ld);
    cr_assert_eq(loader_open(&ld, glob, 1, 8, 1, 2, 65536, 0, 1, err, sizeof err), -1);
    cr_expect(strstr(err, "train_000.bin: 16 tokens, fewer than the 17 one step needs (ranks 2 x "
                     "batch 1 x seq-len 8 + 1)") != NULL, "message: %s", err);
    /* exactly 17 is enough */
    n = 17;
    write_shards(dir, &n, 1);
    cr_assert_eq(loader_open(&ld, glob, 1, 8, 1, 2, 65536, 0, 1, err, sizeof err), 0, "%s", err);
    loader_close(&ld);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    tu_run(cmd);
    free(dir);
}

/* A shard too small for one step among usable ones is skipped, with one
 * note naming it; the order and windows of the others are as without it.
 * B=2, T=4: 9 tokens needed; b has 5. */
Test(shard, short_shard_is_skipped_with_a_note)
{
    char *d = tu_tempdir(), *a = path_in(d, "x_train_000000.bin"),
         *b = path_in(d, "x_train_000001.bin"), *c = path_in(d, "x_train_000002.bin");
    make_shard(a, 0, 30);
    make_shard(b, 500, 5);
    make_shard(c, 1000, 21);
    char glob[512], err[512];
    snprintf(glob, sizeof glob, "%s/x_train_*.bin", d);
    Loader ld;
    cr_assert_eq(loader_open(&ld, glob, 2, 4, 0, 1, 65536, 0, 1, err, sizeof err), 0, "%s", err);
    cr_expect_eq(ld.num_shards, 2);
    cr_expect_eq(ld.num_skipped, 1);
    cr_assert_not_null(ld.notes);
    char want[700];
    snprintf(want, sizeof want, "note: %s: 5 tokens, fewer than the 9 one step needs (ranks 1 x "
             "batch 2 x seq-len 4 + 1): skipped\n", b);
    cr_expect_str_eq(ld.notes, want);
    /* a: offsets 0, 8, 16; then c: 0, 8; then a again */
    static const int first[] = {0, 8, 16, 1000, 1008, 0};
    int in[8], tg[8];
    for (int s = 0; s < 6; s++) {
        cr_assert_eq(loader_next(&ld, in, tg, err, sizeof err), 0, "%s", err);
        cr_expect_eq(in[0], first[s], "step %d starts at token %d", s, in[0]);
    }
    loader_close(&ld);
    free(a), free(b), free(c), free(d);
}
