/* tests/unit/ckpt/test_run_state.c — the run state file, checkpoint folders and the
 * data loader's saved position, at the library level.
 *
 *  - a state file round-trips every field and both arrays bitwise;
 *  - optimizer state saved as 2 rank slices loads back as 1 or 3 slices
 *    (re-sharding), and a range no file holds is refused;
 *  - one flipped bit anywhere in a state file, or in a model.bin of a save,
 *    is detected by the checksums;
 *  - configuration comparison names each differing flag with both values;
 *  - manifest parsing refuses each malformed field;
 *  - --keep pruning, and folders without (or with a broken) COMPLETE are
 *    never taken for the newest save;
 *  - loader_seek: a loader moved to a saved position reads the same windows
 *    as the one that saved it, across shard and epoch boundaries (shuffle);
 *  - a write to /dev/full reports ENOSPC with the file's name. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/loader.h"
#include "ckpt/checkpoint.h"
#include <zlib.h>

#include "base/fileio.h"
#include "ckpt/run_state.h"
#include "tests/lib/test_util.h"

/* Its shard hashes are a static array: never run_state_free it. */
static uint64_t SAMPLE_SHA[2] = {0x0123456789abcdefull, 0xfedcba9876543210ull};
static RunState sample_state(void)
{
    RunState s = {.layers = 2, .channels = 32, .heads = 4, .vocab = 256, .padded_vocab = 256,
                  .max_seq_len = 16, .batch = 2, .seq_len = 16, .grad_accum = 2,
                  .world_size = 1, .shuffle = 1, .seed = 1337, .lr = 1e-3f, .beta1 = 0.9f,
                  .beta2 = 0.95f, .eps = 1e-8f, .grad_clip = 1.0f, .num_shards = 2,
                  .data_kind = RUN_STATE_DATA_SHA, .data_fingerprint = 0x1234567890abcdefull,
                  .shard_sha = SAMPLE_SHA, .recompute = 1, .total_steps = 20,
                  .step = 7, .adam_t = 6, .bad_steps = 1, .epoch = 3, .shard_pos = 1,
                  .window_pos = 5};
    return s;
}

static float *random_floats(size_t n, uint64_t seed)
{
    int *t = malloc(n * sizeof(int));
    float *f = malloc(n * sizeof(float));
    tu_random_tokens(t, n, 1 << 20, seed);
    for (size_t i = 0; i < n; i++) f[i] = (float)t[i] * 1e-6f - 0.5f;
    free(t);
    return f;
}

Test(run_state, round_trip)
{
    char *d = tu_tempdir(), p[512], err[512];
    snprintf(p, sizeof p, "%s/state.bin", d);
    RunState st = sample_state(), back;
    size_t n = 1000;
    float *m = random_floats(n, 1), *v = random_floats(n, 2);
    uint64_t bytes;
    uint32_t crc;
    cr_assert_eq(run_state_write(p, &st, n, 0, n, m, v, &bytes, &crc, err, sizeof err), 0, "%s",
                 err);
    RunStateInfo info;
    cr_assert_eq(run_state_read_info(p, &info, err, sizeof err), 0, "%s", err);
    back = info.st;
    cr_assert_not_null(back.shard_sha);
    cr_expect_eq(memcmp(back.shard_sha, SAMPLE_SHA, sizeof SAMPLE_SHA), 0, "shard hashes differ");
    back.shard_sha = st.shard_sha;
    cr_expect_eq(memcmp(&back, &st, sizeof st), 0, "fields differ after a round trip");
    run_state_free(&info.st);
    float *m2 = calloc(n, 4), *v2 = calloc(n, 4);
    cr_assert_eq(run_state_read_range(p, &info, 0, n, m2, v2, err, sizeof err), 0, "%s", err);
    cr_expect_eq(memcmp(m, m2, n * 4), 0);
    cr_expect_eq(memcmp(v, v2, n * 4), 0);
    /* the manifest's size and crc are the file's */
    uint64_t b2;
    uint32_t c2;
    cr_assert_eq(io_file_crc(p, &b2, &c2, err, sizeof err), 0);
    cr_expect_eq(b2, bytes);
    cr_expect_eq(c2, crc);
    free(m), free(v), free(m2), free(v2), free(d);
}

Test(run_state, every_flipped_bit_region_is_detected)
{
    char *d = tu_tempdir(), p[512], err[512];
    snprintf(p, sizeof p, "%s/state.bin", d);
    RunState st = sample_state();
    size_t n = 300;
    float *m = random_floats(n, 1), *v = random_floats(n, 2), *buf = malloc(2 * n * 4);
    uint64_t bytes;
    uint32_t crc;
    cr_assert_eq(run_state_write(p, &st, n, 0, n, m, v, &bytes, &crc, err, sizeof err), 0);
    size_t len;
    char *orig = tu_read_file(p, &len);
    /* header, entries, m, v: one bit each */
    size_t at[] = {3, 30, 64 + 5, 64 + 32 * 20 + 8, len - 8 * n + 17, len - 1};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        char *c = malloc(len);
        memcpy(c, orig, len);
        c[at[i]] ^= 0x10;
        FILE *f = fopen(p, "wb");
        fwrite(c, 1, len, f);
        fclose(f);
        RunStateInfo info;
        int rc = run_state_read_info(p, &info, err, sizeof err);
        if (rc == 0) rc = run_state_read_range(p, &info, 0, n, buf, buf + n, err, sizeof err);
        cr_expect_eq(rc, -1, "a flipped bit at byte %zu was not detected", at[i]);
        cr_expect(strstr(err, p) != NULL, "message does not name the file: %s", err);
        free(c);
    }
    free(orig), free(m), free(v), free(buf), free(d);
}

/* After an edit: the payload crc (bytes 64..) and the header crc. */
static void fix_crcs(unsigned char *b, size_t len)
{
    uint32_t pc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), b + 64, (uInt)(len - 64));
    memcpy(b + 56, &pc, 4);
    memset(b + 20, 0, 4);
    uint32_t hc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), b, 64);
    memcpy(b + 20, &hc, 4);
}

/* The byte offset of the entry named `name` in a state file's bytes. */
static size_t entry_at(const unsigned char *b, const char *name)
{
    uint32_t n;
    memcpy(&n, b + 12, 4);
    for (uint32_t i = 0; i < n; i++)
        if (strcmp((const char *)b + 64 + 32 * i, name) == 0) return 64 + 32 * (size_t)i;
    cr_assert_fail("no entry %s", name);
    return 0;
}

/* st written at p with a 4-float m and v; returns the file's bytes. */
static unsigned char *small_state_file(const char *p, const RunState *st, size_t *len)
{
    float m[4] = {1, 2, 3, 4}, v[4] = {5, 6, 7, 8};
    uint64_t bytes;
    uint32_t crc;
    char err[512];
    cr_assert_eq(run_state_write(p, st, 4, 0, 4, m, v, &bytes, &crc, err, sizeof err), 0, "%s",
                 err);
    unsigned char *b = (unsigned char *)tu_read_file(p, len);
    cr_assert_not_null(b);
    return b;
}

/* Version 1 saves (before content hashes) hold "train-tokens-hash" and no
 * shard entries: still read, as token counts. */
Test(run_state, reads_version_1_files)
{
    char *d = tu_tempdir(), p[512], err[512];
    snprintf(p, sizeof p, "%s/state.bin", d);
    RunState st = sample_state();
    st.data_kind = RUN_STATE_DATA_COUNTS;
    st.shard_sha = NULL;
    size_t len;
    unsigned char *b = small_state_file(p, &st, &len);
    uint32_t one = 1;
    memcpy(b + 8, &one, 4);
    fix_crcs(b, len);
    tu_write_file(p, b, len);
    RunStateInfo info;
    cr_assert_eq(run_state_read_info(p, &info, err, sizeof err), 0, "%s", err);
    cr_expect_eq(info.st.data_kind, RUN_STATE_DATA_COUNTS);
    cr_expect_eq(info.st.data_fingerprint, st.data_fingerprint);
    cr_expect_null(info.st.shard_sha);
    free(b), free(d);
}

/* The train data entries of version 2: each fault named. */
Test(run_state, data_entries_are_checked)
{
    char *d = tu_tempdir(), p[512], err[512];
    snprintf(p, sizeof p, "%s/state.bin", d);
    RunState st = sample_state();
    size_t len;
    unsigned char *orig = small_state_file(p, &st, &len);
    static const struct {
        const char *entry, *rename, *msg;
    } cases[] = {
        {"shard-sha-0000001", "shard-sha-0000005", "'shard-sha-0000005': beyond train-shards"},
        {"shard-sha-0000001", "shard-sha-0000000", "'shard-sha-0000000': appears twice"},
        {"shard-sha-0000001", "something-else", "entry 'shard-sha-0000001' is missing"},
        {"train-data-sha", "something-else", "needs exactly one entry"},
        {"shard-sha-0000000", "train-tokens-hash", "needs exactly one entry"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned char *b = malloc(len);
        memcpy(b, orig, len);
        size_t at = entry_at(b, cases[i].entry);
        memset(b + at, 0, 23);
        memcpy(b + at, cases[i].rename, strlen(cases[i].rename));
        fix_crcs(b, len);
        tu_write_file(p, b, len);
        RunStateInfo info;
        cr_expect_eq(run_state_read_info(p, &info, err, sizeof err), -1, "case %zu accepted", i);
        cr_expect(strstr(err, cases[i].msg) && strstr(err, p), "case %zu: '%s' lacks '%s'", i,
                  err, cases[i].msg);
        free(b);
    }
    free(orig), free(d);
}

/* Save m, v as world_size slices through the folder API. */
static void save_sharded(const char *dir, int world, size_t n, const float *params,
                         const GPTConfig *cfg, const float *m, const float *v)
{
    char sd[1024], err[512];
    CkptFile files[8];
    cr_assert_eq(ckpt_begin(dir, 5, sd, sizeof sd, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ckpt_write_model(sd, cfg, params, &files[0], err, sizeof err), 0, "%s", err);
    for (int r = 0; r < world; r++) {
        size_t lo = n * r / world, hi = n * (r + 1) / world;
        RunState st = sample_state();
        st.step = 5;
        st.rank = r;
        st.world_size = world;
        cr_assert_eq(ckpt_write_state(sd, r, &st, n, lo, hi - lo, m + lo, v + lo, &files[r + 1],
                                      err, sizeof err), 0, "%s", err);
    }
    cr_assert_eq(ckpt_commit(dir, sd, 5, world, files, world + 1, 0, NULL, err, sizeof err), 0,
                 "%s", err);
}

Test(run_state, optimizer_state_reshards)
{
    GPTConfig cfg = tu_tiny_config();
    size_t n = config_num_params(&cfg);
    float *params = tu_random_params(&cfg, 1), *m = random_floats(n, 3), *v = random_floats(n, 4);
    char *d = tu_tempdir(), sd[1024], err[512];
    save_sharded(d, 2, n, params, &cfg, m, v);
    int step;
    cr_assert_eq(ckpt_find_latest(d, sd, sizeof sd, &step, err, sizeof err), 1);
    CkptManifest man;
    cr_assert_eq(ckpt_read_manifest(sd, &man, err, sizeof err), 0, "%s", err);
    cr_expect_eq(man.world_size, 2);
    float *m2 = malloc(n * 4), *v2 = malloc(n * 4);
    for (int world = 1; world <= 3; world++) /* load as 1, 2 or 3 ranks */
        for (int r = 0; r < world; r++) {
            size_t lo = n * r / world, hi = n * (r + 1) / world;
            RunState st;
            memset(m2, 0, n * 4), memset(v2, 0, n * 4);
            cr_assert_eq(ckpt_load_state(sd, &man, &st, n, lo, hi - lo, m2, v2, err, sizeof err),
                         0, "%s", err);
            cr_expect_eq(memcmp(m2, m + lo, (hi - lo) * 4), 0, "world %d rank %d: m", world, r);
            cr_expect_eq(memcmp(v2, v + lo, (hi - lo) * 4), 0, "world %d rank %d: v", world, r);
            cr_expect_eq(st.step, 5);
            run_state_free(&st);
        }
    /* the whole state for a model of another size is refused */
    RunState st;
    cr_expect_eq(ckpt_load_state(sd, &man, &st, n + 1, 0, n + 1, m2, v2, err, sizeof err), -1);
    cr_expect(strstr(err, "parameters") != NULL, "%s", err);
    ckpt_manifest_free(&man);
    free(params), free(m), free(v), free(m2), free(v2), free(d);
}

/* --zero 0 replicates m and v: saves since 2026-12-01 hold them in rank 0's
 * file and an empty slice at the end in the others'; saves before held a
 * whole copy in every rank's file, which must still load (a copy is
 * skipped). The same overlap under ZeRO-1 is a damaged save: refused. */
static void save_replicated(const char *dir, int old_layout, int zero, size_t n,
                            const float *params, const GPTConfig *cfg, const float *m,
                            const float *v)
{
    char sd[1024], err[512];
    CkptFile files[3];
    cr_assert_eq(ckpt_begin(dir, 5, sd, sizeof sd, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ckpt_write_model(sd, cfg, params, &files[0], err, sizeof err), 0, "%s", err);
    for (int r = 0; r < 2; r++) {
        RunState st = sample_state();
        st.step = 5, st.rank = r, st.world_size = 2, st.zero = zero;
        int whole = r == 0 || old_layout;
        cr_assert_eq(ckpt_write_state(sd, r, &st, n, whole ? 0 : n, whole ? n : 0, m, v,
                                      &files[r + 1], err, sizeof err), 0, "%s", err);
    }
    cr_assert_eq(ckpt_commit(dir, sd, 5, 2, files, 3, 0, NULL, err, sizeof err), 0, "%s", err);
}

Test(run_state, replicated_optimizer_state_loads_in_both_layouts)
{
    GPTConfig cfg = tu_tiny_config();
    size_t n = config_num_params(&cfg);
    float *params = tu_random_params(&cfg, 1), *m = random_floats(n, 3), *v = random_floats(n, 4);
    float *m2 = malloc(n * 4), *v2 = malloc(n * 4);
    for (int old_layout = 0; old_layout <= 1; old_layout++)
        for (int zero = 0; zero <= 1; zero++) {
            char *d = tu_tempdir(), sd[1024], err[512];
            save_replicated(d, old_layout, zero, n, params, &cfg, m, v);
            ckpt_step_dir(sd, sizeof sd, d, 5);
            CkptManifest man;
            cr_assert_eq(ckpt_read_manifest(sd, &man, err, sizeof err), 0, "%s", err);
            RunState st;
            memset(m2, 0, n * 4), memset(v2, 0, n * 4);
            int rc = ckpt_load_state(sd, &man, &st, n, 0, n, m2, v2, err, sizeof err);
            if (old_layout && zero) { /* overlapping slices of a sharded optimizer */
                cr_expect_eq(rc, -1, "an overlap under ZeRO-1 must be refused");
                cr_expect(strstr(err, "overlaps") != NULL, "%s", err);
            } else {
                cr_expect_eq(rc, 0, "layout %s, zero %d: %s", old_layout ? "old" : "new", zero,
                             err);
                cr_expect_eq(memcmp(m2, m, n * 4), 0, "m (old layout %d)", old_layout);
                cr_expect_eq(memcmp(v2, v, n * 4), 0, "v (old layout %d)", old_layout);
                run_state_free(&st);
            }
            ckpt_manifest_free(&man);
            tu_remove_tree(d);
        }
    free(params), free(m), free(v), free(m2), free(v2);
}

Test(run_state, model_bin_corruption_is_detected)
{
    GPTConfig cfg = tu_tiny_config();
    size_t n = config_num_params(&cfg);
    float *params = tu_random_params(&cfg, 1), *m = random_floats(n, 3), *v = random_floats(n, 4);
    char *d = tu_tempdir(), sd[1024], err[512], p[1100];
    save_sharded(d, 1, n, params, &cfg, m, v);
    ckpt_step_dir(sd, sizeof sd, d, 5);
    snprintf(p, sizeof p, "%s/model.bin", sd);
    int fd = open(p, O_WRONLY);
    char c = 0x5a;
    cr_assert_eq(pwrite(fd, &c, 1, 5000), 1);
    close(fd);
    CkptManifest man;
    cr_assert_eq(ckpt_read_manifest(sd, &man, err, sizeof err), 0, "%s", err);
    float *back = NULL;
    GPTConfig c2;
    cr_expect_eq(ckpt_load_model(sd, &man, &c2, &back, err, sizeof err), -1);
    cr_expect(strstr(err, "crc32 differs from the manifest") != NULL, "%s", err);
    ckpt_manifest_free(&man);
    free(params), free(m), free(v), free(d);
}

Test(run_state, compare_names_every_difference)
{
    RunState a = sample_state(), b = a;
    char err[1024], notes[512];
    cr_expect_eq(run_state_compare(&a, &b, err, sizeof err, notes, sizeof notes), 0);
    b.batch = 4;
    b.lr = 2e-3f;
    b.data_fingerprint ^= 1; /* the data is checked by ckpt/session.c, which names the shards */
    b.recompute = 0;
    b.step = 99; /* progress is not configuration */
    cr_expect_eq(run_state_compare(&a, &b, err, sizeof err, notes, sizeof notes), -1);
    cr_expect(strstr(err, "--batch: the save has 2, this run 4") != NULL, "%s", err);
    cr_expect(strstr(err, "--lr: the save has 0.00100000005, this run 0.00200000009") != NULL,
              "%s", err);
    cr_expect(strstr(err, "--train-data") == NULL, "data compared here: %s", err);
    cr_expect(strstr(err, "--step:") == NULL, "progress compared as configuration: %s", err);
    cr_expect(strstr(notes, "--recompute: the save had 1, this run 0") != NULL, "%s", notes);
}

Test(run_state, manifest_parser_refuses_bad_fields)
{
    static const struct {
        const char *text, *msg;
    } cases[] = {
        {"", "not valid JSON"},
        {"{\"format\":\"train_gpt checkpoint\",\"version\":1,\"step\":3,\"world_size\":1,\"fi",
         "not valid JSON"},
        {"{\"format\":\"x\"}", "\"format\""},
        {"{\"format\":\"train_gpt checkpoint\",\"version\":3}", "\"version\""},
        {"{\"format\":\"train_gpt checkpoint\",\"version\":2,\"step\":1,\"world_size\":1,"
         "\"run_id\":\"00000000000000zz\",\"config_hash\":\"0000000000000000\"}", "\"run_id\""},
        {"{\"format\":\"train_gpt checkpoint\",\"version\":2,\"step\":1,\"world_size\":1,"
         "\"run_id\":\"0123456789abcdef\"}", "\"config_hash\""},
        {"{\"format\":\"train_gpt checkpoint\",\"version\":1,\"step\":-1}", "\"step\""},
        {"{\"format\":\"train_gpt checkpoint\",\"version\":1,\"step\":1e300}", "\"step\""},
        {"{\"format\":\"train_gpt checkpoint\",\"version\":1,\"step\":1,\"world_size\":100000}",
         "\"world_size\""},
        {"{\"format\":\"train_gpt checkpoint\",\"version\":1,\"step\":1,\"world_size\":1,"
         "\"files\":[]}", "\"files\""},
        {"{\"format\":\"train_gpt checkpoint\",\"version\":1,\"step\":1,\"world_size\":1,"
         "\"files\":[{\"name\":\"../x\",\"bytes\":1,\"crc32\":1},{}]}", "must be named"},
        {"{\"format\":\"train_gpt checkpoint\",\"version\":1,\"step\":1,\"world_size\":1,"
         "\"files\":[{\"name\":\"model.bin\",\"bytes\":-4,\"crc32\":1},"
         "{\"name\":\"state_r00000.bin\",\"bytes\":1,\"crc32\":1}]}", "out of range"},
        {"{\"format\":\"train_gpt checkpoint\",\"version\":1,\"step\":1,\"world_size\":1,"
         "\"files\":[{\"name\":\"model.bin\",\"bytes\":4,\"crc32\":4294967296},"
         "{\"name\":\"state_r00000.bin\",\"bytes\":1,\"crc32\":1}]}", "out of range"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CkptManifest man;
        char err[512];
        cr_expect_eq(ckpt_parse_manifest(cases[i].text, strlen(cases[i].text), "M", &man, err,
                                         sizeof err), -1, "case %zu accepted", i);
        cr_expect(strstr(err, cases[i].msg) != NULL, "case %zu: '%s' lacks '%s'", i, err,
                  cases[i].msg);
    }
    const char *good = "{\"format\":\"train_gpt checkpoint\",\"version\":1,\"step\":7,"
                       "\"world_size\":1,\"files\":[{\"name\":\"model.bin\",\"bytes\":4,"
                       "\"crc32\":4294967295},{\"name\":\"state_r00000.bin\",\"bytes\":1,"
                       "\"crc32\":0}]}";
    CkptManifest man;
    char err[512];
    cr_assert_eq(ckpt_parse_manifest(good, strlen(good), "M", &man, err, sizeof err), 0, "%s", err);
    cr_expect_eq(man.step, 7);
    cr_expect_eq(man.files[0].crc, 4294967295u);
    cr_expect_eq(man.has_identity, 0, "a version 1 manifest has no run identity");
    ckpt_manifest_free(&man);
    const char *v2 = "{\"format\":\"train_gpt checkpoint\",\"version\":2,\"step\":7,"
                     "\"world_size\":1,\"run_id\":\"0123456789abcdef\",\"config_hash\":"
                     "\"fedcba9876543210\",\"files\":[{\"name\":\"model.bin\",\"bytes\":4,"
                     "\"crc32\":1},{\"name\":\"state_r00000.bin\",\"bytes\":1,\"crc32\":0}]}";
    cr_assert_eq(ckpt_parse_manifest(v2, strlen(v2), "M", &man, err, sizeof err), 0, "%s", err);
    cr_expect_eq(man.has_identity, 1);
    cr_expect_eq(man.id.run_id, 0x0123456789abcdefull);
    cr_expect_eq(man.id.config_hash, 0xfedcba9876543210ull);
    ckpt_manifest_free(&man);
}

/* ckpt_save announces each save --keep deletes on stdout ("note: deleted
 * ..."); the --keep tests keep those lines (and the warnings) out of make
 * test's output. */
static void quiet(void)
{
    cr_redirect_stdout();
    cr_redirect_stderr();
}

/* Library level: --keep never deletes another run's
 * saves, nor, during a non-finite streak, the newest save made before it. */
Test(run_state, keep_spares_other_runs_and_the_rollback_point, .init = quiet)
{
    GPTConfig cfg = tu_tiny_config();
    size_t n = config_num_params(&cfg);
    float *params = tu_random_params(&cfg, 1), *m = random_floats(n, 3), *v = random_floats(n, 4);
    char *d = tu_tempdir(), sd[1024], err[512];
    RunState st = sample_state();
    CkptIdentity a = {0xaaaa, 1}, b = {0xbbbb, 1};
    st.step = 50; /* another run's save, in the folder by mistake */
    cr_assert_eq(ckpt_save(d, 50, 2, &b, &cfg, params, &st, n, m, v, sd, sizeof sd, err,
                           sizeof err), 0, "%s", err);
    for (int step = 1; step <= 8; step++) {
        st.step = step;
        st.bad_steps = step <= 3 ? 0 : step - 3; /* a streak from step 4 on */
        cr_assert_eq(ckpt_save(d, step, 2, &a, &cfg, params, &st, n, m, v, sd, sizeof sd, err,
                               sizeof err), 0, "%s", err);
    }
    /* --keep 2 kept 7 and 8, and step 3, the last before the streak */
    for (int step = 1; step <= 8; step++) {
        ckpt_step_dir(sd, sizeof sd, d, step);
        cr_expect_eq(access(sd, F_OK) == 0, step >= 7 || step == 3, "step %d folder", step);
    }
    ckpt_step_dir(sd, sizeof sd, d, 50);
    cr_expect_eq(access(sd, F_OK), 0, "run a's --keep deleted run b's save");
    int step = -1;
    cr_expect_eq(ckpt_find_rollback(d, &a, &step), 1);
    cr_expect_eq(step, 3);
    /* the streak ends: step 9 is good, and the old rollback point may go */
    st.step = 9;
    st.bad_steps = 0;
    cr_assert_eq(ckpt_save(d, 9, 2, &a, &cfg, params, &st, n, m, v, sd, sizeof sd, err,
                           sizeof err), 0, "%s", err);
    ckpt_step_dir(sd, sizeof sd, d, 3);
    cr_expect_neq(access(sd, F_OK), 0, "step 3 kept after the streak ended");
    free(params), free(m), free(v), free(d);
}

Test(run_state, keep_prunes_and_incomplete_saves_are_ignored, .init = quiet)
{
    GPTConfig cfg = tu_tiny_config();
    size_t n = config_num_params(&cfg);
    float *params = tu_random_params(&cfg, 1), *m = random_floats(n, 3), *v = random_floats(n, 4);
    char *d = tu_tempdir(), sd[1024], err[512], cmd[2048];
    RunState st = sample_state();
    for (int step = 1; step <= 5; step++) {
        st.step = step;
        cr_assert_eq(ckpt_save(d, step, 2, NULL, &cfg, params, &st, n, m, v, sd, sizeof sd, err,
                               sizeof err), 0, "%s", err);
    }
    /* --keep 2: only steps 4 and 5 are left */
    for (int step = 1; step <= 5; step++) {
        ckpt_step_dir(sd, sizeof sd, d, step);
        cr_expect_eq(access(sd, F_OK) == 0, step >= 4, "step %d folder", step);
    }
    /* a newer folder without COMPLETE, and one with a broken COMPLETE, are skipped */
    snprintf(cmd, sizeof cmd, "mkdir %s/step_00000006 %s/step_00000007 && "
             "cp %s/step_00000005/* %s/step_00000006/ && rm %s/step_00000006/COMPLETE && "
             "cp %s/step_00000005/* %s/step_00000007/ && echo '{\"format\"' > "
             "%s/step_00000007/COMPLETE", d, d, d, d, d, d, d, d);
    cr_assert_eq(tu_run(cmd), 0);
    int step;
    cr_assert_eq(ckpt_find_latest(d, sd, sizeof sd, &step, err, sizeof err), 1);
    cr_expect_eq(step, 5);
    /* quietly: the reader of a resume names what it skips (ckpt/rollback.c) */
    char *e = tu_captured_stderr();
    cr_expect_str_eq(e, "");
    free(e);
    /* an empty or missing folder has no save */
    snprintf(sd, sizeof sd, "%s/none", d);
    cr_expect_eq(ckpt_find_latest(sd, cmd, sizeof cmd, &step, err, sizeof err), 0);
    free(params), free(m), free(v), free(d);
}

Test(run_state, loader_seek_continues_the_same_windows)
{
    char *d = tu_tempdir(), pat[512], err[512];
    uint16_t tok[300];
    for (int s = 0; s < 3; s++) {
        for (int i = 0; i < 300; i++) tok[i] = (uint16_t)((s * 300 + i * 7) % 97);
        char p[512];
        snprintf(p, sizeof p, "%s/s_%d.bin", d, s);
        cr_assert_eq(shard_write(p, tok, 100 + 100 * s, err, sizeof err), 0);
    }
    snprintf(pat, sizeof pat, "%s/s_*.bin", d);
    int B = 2, T = 8, N = B * T;
    int in1[16], tg1[16], in2[16], tg2[16];
    for (int start = 0; start < 40; start += 7) {
        Loader a, b;
        cr_assert_eq(loader_open(&a, pat, B, T, 0, 1, 97, 1, 42, err, sizeof err), 0, "%s", err);
        cr_assert_eq(loader_open(&b, pat, B, T, 0, 1, 97, 1, 42, err, sizeof err), 0, "%s", err);
        for (int i = 0; i < start; i++) cr_assert_eq(loader_next(&a, in1, tg1, err, sizeof err), 0);
        cr_assert_eq(loader_seek(&b, a.epoch, a.shard_pos, a.window_pos, err, sizeof err), 0,
                     "%s", err);
        /* 6 + 12 + 18 = 36 windows per epoch: later starts cross into epoch 1 */
        for (int i = 0; i < 30; i++) {
            cr_assert_eq(loader_next(&a, in1, tg1, err, sizeof err), 0);
            cr_assert_eq(loader_next(&b, in2, tg2, err, sizeof err), 0);
            cr_assert_eq(memcmp(in1, in2, sizeof(int) * N), 0, "start %d, window %d", start, i);
            cr_assert_eq(memcmp(tg1, tg2, sizeof(int) * N), 0);
        }
        loader_close(&a);
        loader_close(&b);
    }
    Loader c;
    cr_assert_eq(loader_open(&c, pat, B, T, 0, 1, 97, 1, 42, err, sizeof err), 0);
    cr_expect_eq(loader_seek(&c, 0, 3, 0, err, sizeof err), -1);
    cr_expect_eq(loader_seek(&c, 0, 0, 1000, err, sizeof err), -1);
    cr_expect(strstr(err, "does not exist") != NULL, "%s", err);
    loader_close(&c);
    free(d);
}

Test(run_state, dev_full_reports_no_space)
{
    int fd = open("/dev/full", O_WRONLY);
    cr_assert(fd >= 0);
    char buf[4096] = {0}, err[512];
    cr_expect_eq(io_write_all(fd, buf, sizeof buf, "/dev/full", err, sizeof err), -1);
    cr_expect(strstr(err, "/dev/full: write failed: No space left on device") != NULL, "%s", err);
    close(fd);
}
