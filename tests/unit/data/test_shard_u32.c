/* tests/unit/data/test_shard_u32.c — uint32 token shards (llm.c's version 7,
 * magic 20240801) beside the uint16 ones: the writer's bytes against the
 * published layout (header of 256 int32, [2] the count, then uint32 little-
 * endian tokens: checked byte by byte here, not through the reader), the
 * loader reading both widths in one glob, the width a vocabulary needs,
 * token ids at and above the vocabulary, and the dataset manifest's
 * "token_bytes" and tokenizer identity (the id checked against Python's
 * hashlib for GPT-2's two files and against sha256sum for a test file). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset.h"
#include "data/loader.h"
#include "tests/lib/test_util.h"

/* tokens[i] = base + i, uint32 */
static void make32(const char *path, uint32_t base, size_t n)
{
    uint32_t *t = malloc(n * sizeof *t + 4);
    for (size_t i = 0; i < n; i++) t[i] = base + (uint32_t)i;
    char err[512];
    cr_assert_eq(shard_write32(path, t, n, err, sizeof err), 0, "%s", err);
    free(t);
}

static void make16(const char *path, uint16_t base, size_t n)
{
    uint16_t *t = malloc(n * sizeof *t + 2);
    for (size_t i = 0; i < n; i++) t[i] = (uint16_t)(base + i);
    char err[512];
    cr_assert_eq(shard_write(path, t, n, err, sizeof err), 0, "%s", err);
    free(t);
}

Test(shard_u32, writer_matches_the_published_layout)
{
    char *d = tu_tempdir();
    const char *p = tu_path(d, "w.bin");
    make32(p, 151000, 5);
    size_t len;
    unsigned char *b = (unsigned char *)tu_read_file(p, &len);
    cr_assert_eq(len, 1024 + 4 * 5, "1024-byte header + 4 bytes a token");
    /* little-endian int32s, read byte by byte */
    long h[5];
    for (int k = 0; k < 5; k++)
        h[k] = (long)(b[4 * k] | b[4 * k + 1] << 8 | b[4 * k + 2] << 16 |
                      (unsigned long)b[4 * k + 3] << 24);
    cr_expect_eq(h[0], 20240801);
    cr_expect_eq(h[1], 7);
    cr_expect_eq(h[2], 5);
    cr_expect_eq(h[3], 0, "dataset id 0");
    for (int i = 0; i < 5; i++) {
        const unsigned char *t = b + 1024 + 4 * i;
        unsigned long v = t[0] | t[1] << 8 | t[2] << 16 | (unsigned long)t[3] << 24;
        cr_expect_eq(v, 151000ul + i, "token %d", i);
    }
    size_t n;
    uint64_t id;
    int w;
    char err[512];
    cr_expect_eq(shard_check_info(p, &n, &id, &w, err, sizeof err), 0, "%s", err);
    cr_expect_eq(n, 5);
    cr_expect_eq(w, 4);
    /* uint16 unchanged: magic 20240520, version 1, 2 bytes a token */
    make16(tu_path(d, "n.bin"), 7, 5);
    cr_expect_eq(shard_check_info(tu_path(d, "n.bin"), &n, &id, &w, err, sizeof err), 0);
    cr_expect_eq(w, 2);
    free(b);
    tu_remove_tree(d);
}

Test(shard_u32, width_for_a_vocabulary)
{
    cr_expect_eq(shard_token_bytes_for(50257), 2);
    cr_expect_eq(shard_token_bytes_for(65536), 2, "ids 0..65535 fit uint16");
    cr_expect_eq(shard_token_bytes_for(65537), 4);
    cr_expect_eq(shard_token_bytes_for(128256), 4);
    cr_expect_eq(shard_token_bytes_for(151936), 4);
}

/* B=2, T=4: windows of 9. Shard a (uint16, 20 tokens from 100): 2 steps;
 * shard b (uint32, 20 tokens from 151900): 2 steps. One glob, both read at
 * their width, ids above 65535 intact. */
Test(shard_u32, one_glob_of_both_widths)
{
    char *d = tu_tempdir();
    make16(tu_path(d, "m_000.bin"), 100, 20);
    make32(tu_path(d, "m_001.bin"), 151900, 20);
    char glob[600], err[1024];
    snprintf(glob, sizeof glob, "%s/m_*.bin", d);
    Loader ld;
    /* a vocabulary of 60000: the uint16 shard fits, the uint32 shard's
     * ids are refused as they are read (the width itself is not) */
    cr_assert_eq(loader_open(&ld, glob, 2, 4, 0, 1, 60000, 0, 1, err, sizeof err), 0, "%s", err);
    int in[8], tg[8];
    cr_assert_eq(loader_next(&ld, in, tg, err, sizeof err), 0, "%s", err);
    cr_expect_eq(in[0], 100);
    cr_expect_eq(tg[7], 108);
    cr_assert_eq(loader_next(&ld, in, tg, err, sizeof err), 0, "%s", err);
    cr_expect_eq(in[0], 108);
    cr_expect_neq(loader_next(&ld, in, tg, err, sizeof err), 0, "uint32 ids over 60000");
    cr_expect(strstr(err, "m_001.bin") && strstr(err, "token 151900 at offset 0"), "%s", err);
    loader_close(&ld);
    tu_remove_tree(d);
}

Test(shard_u32, wide_ids_read_exactly)
{
    char *d = tu_tempdir();
    make32(tu_path(d, "q_000.bin"), 151900, 20);
    char err[1024];
    Loader ld;
    cr_assert_eq(loader_open(&ld, tu_path(d, "q_000.bin"), 2, 4, 0, 1, 151936, 0, 1, err,
                             sizeof err), 0, "%s", err);
    int in[8], tg[8];
    for (int s = 0; s < 2; s++) {
        cr_assert_eq(loader_next(&ld, in, tg, err, sizeof err), 0, "%s", err);
        for (int i = 0; i < 8; i++) {
            cr_expect_eq(in[i], 151900 + 8 * s + i);
            cr_expect_eq(tg[i], 151900 + 8 * s + i + 1);
        }
    }
    /* the epoch wraps to step 0 */
    cr_assert_eq(loader_next(&ld, in, tg, err, sizeof err), 0, "%s", err);
    cr_expect_eq(in[0], 151900);
    loader_close(&ld);
    /* the last token, 151919, is outside a vocabulary of 151915: named */
    cr_assert_eq(loader_open(&ld, tu_path(d, "q_000.bin"), 2, 4, 0, 1, 151915, 0, 1, err,
                             sizeof err), 0, "%s", err);
    cr_expect_eq(loader_next(&ld, in, tg, err, sizeof err), 0, "ids up to 151908");
    cr_expect_neq(loader_next(&ld, in, tg, err, sizeof err), 0);
    cr_expect(strstr(err, "q_000.bin: token 151915 at offset 15 is outside the vocabulary "
                     "(size 151915)"), "%s", err);
    loader_close(&ld);
    tu_remove_tree(d);
}

Test(shard_u32, narrow_shards_refused_for_a_wide_vocabulary)
{
    char *d = tu_tempdir();
    make16(tu_path(d, "r_000.bin"), 0, 40);
    char err[1024];
    Loader ld;
    cr_assert_eq(loader_open(&ld, tu_path(d, "r_000.bin"), 2, 4, 0, 1, 151936, 0, 1, err,
                             sizeof err), -1);
    cr_expect(strstr(err, "r_000.bin holds uint16 tokens") && strstr(err, "151936") &&
                  strstr(err, "another tokenizer"), "%s", err);
    /* 65536 ids still fit */
    cr_assert_eq(loader_open(&ld, tu_path(d, "r_000.bin"), 2, 4, 0, 1, 65536, 0, 1, err,
                             sizeof err), 0, "%s", err);
    loader_close(&ld);
    tu_remove_tree(d);
}

static void write_raw(const char *path, int magic, int version, int count, size_t payload)
{
    FILE *f = fopen(path, "wb");
    int32_t h[256] = {magic, version, count};
    fwrite(h, sizeof h, 1, f);
    for (size_t i = 0; i < payload; i++) fputc(1, f);
    fclose(f);
}

Test(shard_u32, bad_wide_headers_named)
{
    char *d = tu_tempdir(), err[1024];
    size_t n;
    struct {
        const char *name;
        int magic, version, count;
        size_t payload;
        const char *msg;
    } cases[] = {
        {"v1.bin", 20240801, 1, 10, 40, "unsupported version 1 for magic 20240801 (expected 7)"},
        {"v7_16.bin", 20240520, 7, 10, 20, "unsupported version 7 for magic 20240520"},
        {"half.bin", 20240801, 7, 10, 20, "need 1064 (truncated), at 4 bytes a token"},
        {"extra.bin", 20240801, 7, 10, 41, "trailing bytes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *p = tu_path(d, cases[i].name);
        write_raw(p, cases[i].magic, cases[i].version, cases[i].count, cases[i].payload);
        cr_expect_eq(shard_check(p, &n, err, sizeof err), -1, "%s", cases[i].name);
        cr_expect(strstr(err, cases[i].msg) && strstr(err, cases[i].name), "%s: %s",
                  cases[i].name, err);
    }
    tu_remove_tree(d);
}

/* ---- the manifest ---- */

Test(shard_u32, gpt2_tokenizer_identity)
{
    DatasetTokenizer t = {.vocab_size = 50257};
    char err[256];
    cr_assert_eq(dataset_tokenizer_add_digest(&t, "encoder.json",
                 "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783", err,
                 sizeof err), 0, "%s", err);
    cr_assert_eq(dataset_tokenizer_add_digest(&t, "vocab.bpe",
                 "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5", err,
                 sizeof err), 0, "%s", err);
    /* python3: hashlib.sha256(bytes.fromhex(enc) + bytes.fromhex(voc)).hexdigest()[:16] */
    cr_expect_eq(t.id, 0x94c264325d7a03deull, "%016llx", (unsigned long long)t.id);
}

/* A staged dataset of uint32 shards with a one-file tokenizer: the
 * manifest's fields, the id against sha256sum, and what the parser and the
 * loader refuse. */
Test(shard_u32, staged_wide_dataset_and_its_manifest, .timeout = 60)
{
    char *d = tu_tempdir(), err[2048], prefix[600], cmd[2000];
    const char *tokfile = tu_path(d, "tokenizer.json");
    FILE *f = fopen(tokfile, "w");
    fputs("{\"model\": \"a test tokenizer of 151936 ids\"}\n", f);
    fclose(f);
    snprintf(prefix, sizeof prefix, "%s/wide", d);
    DatasetStage s;
    cr_assert_eq(dataset_stage_begin(&s, prefix, 0, err, sizeof err), 0, "%s", err);
    s.man.id = 0x1234;
    s.man.token_bytes = 4;
    snprintf(s.man.tok.name, sizeof s.man.tok.name, "hf");
    s.man.tok.vocab_size = 151936;
    cr_assert_eq(dataset_tokenizer_add_file(&s.man.tok, tokfile, err, sizeof err), 0, "%s", err);
    uint32_t t[40];
    for (int i = 0; i < 40; i++) t[i] = 151000u + (uint32_t)i;
    cr_assert_eq(dataset_stage_add(&s, "val", t, 20, err, sizeof err), 0, "%s", err);
    cr_assert_eq(dataset_stage_add(&s, "train", t + 20, 20, err, sizeof err), 0, "%s", err);
    uint64_t want_id = s.man.tok.id;
    cr_assert_eq(dataset_stage_commit(&s, err, sizeof err), 0, "%s", err);
    dataset_stage_close(&s);

    /* the id: sha256sum of the file's 32-byte digest, first 16 hex digits */
    char idfile[700];
    snprintf(idfile, sizeof idfile, "%s/id.txt", d);
    snprintf(cmd, sizeof cmd, "sha256sum '%s' | cut -c1-64 | xxd -r -p | sha256sum | "
             "cut -c1-16 > '%s'", tokfile, idfile);
    cr_assert_eq(tu_run(cmd), 0);
    char *ref = tu_read_file(idfile, NULL);
    char mine[17];
    snprintf(mine, sizeof mine, "%016llx", (unsigned long long)want_id);
    cr_expect(strncmp(ref, mine, 16) == 0, "id %s, sha256sum says %.16s", mine, ref);
    free(ref);

    char mp[700];
    snprintf(mp, sizeof mp, "%s.manifest.json", prefix);
    DatasetManifest m;
    cr_assert_eq(dataset_manifest_read(mp, &m, err, sizeof err), 0, "%s", err);
    cr_expect_eq(m.token_bytes, 4);
    cr_expect_eq(m.shards[0].bytes, 1024 + 4 * 20);
    cr_expect_eq(m.tok.id, want_id);
    cr_expect_eq(m.tok.vocab_size, 151936);
    cr_expect_str_eq(m.tok.files[0].name, "tokenizer.json");
    dataset_manifest_free(&m);

    /* the loader: reads the wide ids, and takes the tokenizer's id */
    char glob[700];
    snprintf(glob, sizeof glob, "%s_train_*.bin", prefix);
    Loader ld;
    cr_assert_eq(loader_open(&ld, glob, 2, 4, 0, 1, 151936, 0, 1, err, sizeof err), 0, "%s", err);
    cr_expect_eq(ld.tokenizer_id, want_id);
    cr_expect(strstr(ld.tokenizer_desc, "tokenizer.json"), "%s", ld.tokenizer_desc);
    int in[8], tg[8];
    cr_assert_eq(loader_next(&ld, in, tg, err, sizeof err), 0, "%s", err);
    cr_expect_eq(in[0], 151020);
    loader_close(&ld);

    /* a manifest that says uint16 for these uint32 shards: the parser
     * refuses it (the tokenizer's ids need uint32; without a tokenizer, the
     * byte counts: manifest_without_the_new_fields_is_uint16); one edited
     * to another id: refused */
    char *text = tu_read_file(mp, NULL);
    char *edited = strdup(text), *at = strstr(edited, "\"token_bytes\":\t4");
    cr_assert_not_null(at, "%s", edited);
    at[strlen("\"token_bytes\":\t")] = '2';
    cr_expect_eq(dataset_manifest_parse(edited, strlen(edited), "m", &m, err, sizeof err), -1);
    cr_expect(strstr(err, "a tokenizer of 151936 ids cannot write uint16 shards"), "%s", err);
    free(edited);
    edited = strdup(text);
    at = strstr(edited, mine);
    cr_assert_not_null(at);
    at[0] = at[0] == '0' ? '1' : '0';
    cr_expect_eq(dataset_manifest_parse(edited, strlen(edited), "m", &m, err, sizeof err), -1);
    cr_expect(strstr(err, "is not that of its files"), "%s", err);
    free(edited);
    free(text);
    tu_remove_tree(d);
}

Test(shard_u32, manifest_without_the_new_fields_is_uint16)
{
    /* a manifest as ./tokenize wrote it before "token_bytes": one shard of
     * 3 tokens; the digest of one all-zero shard digest */
    const char *fmt = "{\"format\":\"train_gpt dataset\",\"version\":1,\"dataset_id\":"
                      "\"0000000000000001\",\"hash\":\"sha256\",\"tokens\":3,\"sha256\":\"%s\","
                      "\"shards\":[{\"name\":\"x_train_000000.bin\",\"tokens\":3,\"bytes\":%d,"
                      "\"sha256\":\"%064d\"}]}";
    DatasetManifest m = {.num_shards = 1};
    m.shards = calloc(1, sizeof *m.shards);
    unsigned char dg[32];
    dataset_manifest_digest(&m, dg);
    free(m.shards);
    char hex[65], text[1200], err[512];
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", dg[i]);
    snprintf(text, sizeof text, fmt, hex, 1030, 0);
    cr_assert_eq(dataset_manifest_parse(text, strlen(text), "old", &m, err, sizeof err), 0,
                 "%s", err);
    cr_expect_eq(m.token_bytes, 2);
    cr_expect_eq(m.tok.id, 0);
    dataset_manifest_free(&m);
    snprintf(text, sizeof text, fmt, hex, 1036, 0);
    cr_expect_eq(dataset_manifest_parse(text, strlen(text), "old", &m, err, sizeof err), -1,
                 "1024 + 4 x 3 bytes without token_bytes 4");
}
