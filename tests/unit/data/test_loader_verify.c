/* tests/unit/data/test_loader_verify.c — a fresh run's check of its shards
 * (data/loader_verify.c):
 *
 *  - every shard a manifest lists is read (their sizes, 1024 + 2n bytes
 *    each, add up to what the check reports) and an untouched dataset
 *    passes;
 *  - a shard changed after the loader opened it (two tokens swapped: same
 *    size) fails the check, naming the shard and its manifest;
 *  - shards no manifest lists (llm.c's) are not read: nothing to start;
 *  - a val shard that is one of the train shards, under another name (a
 *    hard link), is found; a separate file is not. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/loader.h"
#include "data/shard.h"
#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

static void open_ok(Loader *ld, const char *glob)
{
    char err[1024];
    cr_assert_eq(loader_open(ld, glob, 1, 8, 0, 1, 65536, 0, 1, err, sizeof err), 0, "%s", err);
}

Test(loader_verify, reads_every_listed_shard_and_names_a_changed_one)
{
    char *d = tu_tempdir(), cmd[4096], glob[700], err[1024];
    snprintf(cmd, sizeof cmd, "head -c 6000 '%s' | %s --quiet --out %s/ts --shard-size 500 "
             "--val-tokens 500 -", TU_SHAKESPEARE, tc_tokenize_bin(), d);
    cr_assert_eq(tu_run(cmd), 0);
    snprintf(glob, sizeof glob, "%s/ts_*.bin", d);
    Loader ld;
    open_ok(&ld, glob);
    uint64_t want = 0;
    for (int i = 0; i < ld.num_shards; i++) want += 1024 + 2 * (uint64_t)ld.ntok[i];
    const Loader *one[1] = {&ld};
    LoaderVerify *v;
    LoaderVerifyStats st;
    cr_assert_eq(loader_verify_start(&v, one, 1, err, sizeof err), 0, "%s", err);
    cr_assert_not_null(v);
    cr_assert_eq(loader_verify_finish(v, &st, err, sizeof err), 0, "%s", err);
    cr_expect_eq(st.shards, ld.num_shards);
    cr_expect_eq(st.bytes, want, "read %llu bytes, the shards hold %llu",
                 (unsigned long long)st.bytes, (unsigned long long)want);
    /* swap two different tokens of the second train shard, in place */
    char p[700];
    snprintf(p, sizeof p, "%s/ts_train_000001.bin", d);
    size_t len;
    char *b = tu_read_file(p, &len), t[2];
    int at = 1024;
    while (memcmp(b + at, b + at + 2, 2) == 0) at += 2;
    memcpy(t, b + at, 2), memcpy(b + at, b + at + 2, 2), memcpy(b + at + 2, t, 2);
    FILE *f = fopen(p, "wb");
    cr_assert_eq(fwrite(b, 1, len, f), len);
    fclose(f);
    free(b);
    cr_assert_eq(loader_verify_start(&v, one, 1, err, sizeof err), 0, "%s", err);
    cr_expect_eq(loader_verify_finish(v, NULL, err, sizeof err), -1, "a changed shard passed");
    char want_msg[1600];
    snprintf(want_msg, sizeof want_msg, "%s: its content differs from its dataset manifest "
             "%s/ts.manifest.json", p, d);
    cr_expect(strstr(err, want_msg), "message: %s", err);
    loader_close(&ld);
    tu_remove_tree(d);
}

Test(loader_verify, unlisted_shards_are_not_read_and_shared_ones_are_found)
{
    char *d = tu_tempdir(), glob[700], err[1024];
    tc_make_shards(d, 2, 400); /* train_0.bin, train_1.bin, val.bin: no manifest */
    snprintf(glob, sizeof glob, "%s/train_*.bin", d);
    Loader train, val;
    open_ok(&train, glob);
    open_ok(&val, tu_path(d, "val.bin"));
    const Loader *both[2] = {&train, &val};
    LoaderVerify *v = (LoaderVerify *)1;
    cr_assert_eq(loader_verify_start(&v, both, 2, err, sizeof err), 0, "%s", err);
    cr_expect_null(v, "a thread for shards no manifest lists");
    cr_expect_eq(loader_verify_finish(NULL, NULL, err, sizeof err), 0);
    cr_expect_null(loader_shared_shard(&train, &val), "val.bin is a file of its own");
    loader_close(&val);
    char link_path[700];
    snprintf(link_path, sizeof link_path, "%s/other_name.bin", d);
    cr_assert_eq(link(tu_path(d, "train_1.bin"), link_path), 0);
    open_ok(&val, link_path);
    const char *shared = loader_shared_shard(&train, &val);
    cr_expect(shared && strcmp(shared, link_path) == 0, "the hard link to train_1.bin: %s",
              shared ? shared : "(none)");
    loader_close(&val);
    loader_close(&train);
    tu_remove_tree(d);
}
