/* tests/unit/interop/test_model_file.c — llm.c model files: a bitwise round trip, bf16
 * (version 5) loading, and rejection of damaged files. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "interop/model_file.h"
#include "tests/lib/test_util.h"

static char *save_tiny(const char *dir, float **params_out, GPTConfig *cfg_out)
{
    GPTConfig cfg = tu_tiny_config();
    float *p = tu_random_params(&cfg, 9);
    char *path = malloc(strlen(dir) + 16), err[256];
    sprintf(path, "%s/m.bin", dir);
    cr_assert_eq(model_file_save(path, &cfg, p, err, sizeof err), 0, "%s", err);
    *params_out = p;
    *cfg_out = cfg;
    return path;
}

Test(model_file, round_trip_is_bitwise)
{
    char *d = tu_tempdir(), err[256];
    float *p, *q;
    GPTConfig cfg, back;
    char *path = save_tiny(d, &p, &cfg);
    size_t len;
    char *bytes = tu_read_file(path, &len);
    cr_assert_eq(len, 1024 + config_num_params(&cfg) * 4);
    int32_t h[8];
    memcpy(h, bytes, sizeof h);
    int32_t want[8] = {20240326, 3, 8, 64, 2, 4, 32, 128};
    cr_expect_eq(memcmp(h, want, sizeof want), 0, "header fields in llm.c order");
    cr_assert_eq(model_file_load(path, &back, &q, err, sizeof err), 0, "%s", err);
    cr_expect_eq(memcmp(&back, &cfg, sizeof cfg), 0);
    cr_expect_eq(memcmp(p, q, config_num_params(&cfg) * sizeof(float)), 0);
    free(p), free(q), free(bytes), free(path), free(d);
}

/* The tokenizer identity in header words 28 (low) and 29 (high), for either
 * family; 0 stays 0 (a GPT-2 file is then llm.c's word for word). */
Test(model_file, tokenizer_identity_in_words_28_29)
{
    char *d = tu_tempdir(), err[256], path[600];
    GPTConfig cfg = tu_tiny_config(), back;
    cfg.tokenizer_id = 0x94c264325d7a03deull;
    float *p = tu_random_params(&cfg, 3), *q;
    snprintf(path, sizeof path, "%s/t.bin", d);
    cr_assert_eq(model_file_save_as(path, &cfg, p, MODEL_FILE_BF16, err, sizeof err), 0, "%s",
                 err);
    size_t len;
    unsigned char *b = (unsigned char *)tu_read_file(path, &len);
    uint32_t w[2];
    memcpy(w, b + 4 * 28, sizeof w);
    cr_expect_eq(w[0], 0x5d7a03deu);
    cr_expect_eq(w[1], 0x94c26432u);
    for (int i = 8; i < 256; i++)
        if (i != 28 && i != 29) cr_expect_eq(((int32_t *)(void *)b)[i], 0, "word %d", i);
    cr_assert_eq(model_file_load(path, &back, &q, err, sizeof err), 0, "%s", err);
    cr_expect_eq(back.tokenizer_id, cfg.tokenizer_id);
    free(b), free(p), free(q);
    tu_remove_tree(d);
}

Test(model_file, loads_bf16_version5)
{
    char *d = tu_tempdir(), path[512], err[256];
    GPTConfig cfg = tu_tiny_config(), back;
    size_t n = config_num_params(&cfg);
    snprintf(path, sizeof path, "%s/bf16.bin", d);
    FILE *f = fopen(path, "wb");
    int32_t h[256] = {20240326, 5, 8, 64, 2, 4, 32, 128};
    fwrite(h, sizeof h, 1, f);
    /* bf16 0x3fc0 = 1.5, 0xc000 = -2.0: exact values after widening */
    for (size_t i = 0; i < n; i++) {
        uint16_t v = i % 2 ? 0xc000 : 0x3fc0;
        fwrite(&v, 2, 1, f);
    }
    fclose(f);
    float *q;
    cr_assert_eq(model_file_load(path, &back, &q, err, sizeof err), 0, "%s", err);
    cr_expect(q[0] == 1.5f && q[1] == -2.0f && q[n - 1] == (n % 2 ? 1.5f : -2.0f));
    free(q), free(d);
}

static void expect_reject(const char *path, const char *needle)
{
    GPTConfig cfg;
    float *q = NULL;
    char err[512] = "";
    cr_expect_neq(model_file_load(path, &cfg, &q, err, sizeof err), 0, "%s loaded", path);
    cr_expect_null(q);
    cr_expect(strstr(err, needle) != NULL, "message '%s' lacks '%s'", err, needle);
    cr_expect(strstr(err, path) != NULL, "message '%s' does not name the file", err);
}

static void patch_int(const char *path, int index, int32_t value)
{
    FILE *f = fopen(path, "r+b");
    fseek(f, index * 4, SEEK_SET);
    fwrite(&value, 4, 1, f);
    fclose(f);
}

Test(model_file, damaged_files_rejected)
{
    char *d = tu_tempdir(), cmd[1024];
    float *p;
    GPTConfig cfg;
    char *path = save_tiny(d, &p, &cfg);
    size_t full = 1024 + config_num_params(&cfg) * 4;
    char bad[512];
    snprintf(bad, sizeof bad, "%s/magic.bin", d);
    snprintf(cmd, sizeof cmd, "cp %s %s", path, bad);
    cr_assert_eq(tu_run(cmd), 0);
    patch_int(bad, 0, 20240520);
    expect_reject(bad, "bad magic");
    snprintf(bad, sizeof bad, "%s/version.bin", d);
    snprintf(cmd, sizeof cmd, "cp %s %s", path, bad);
    tu_run(cmd);
    patch_int(bad, 1, 4);
    expect_reject(bad, "unsupported version 4");
    snprintf(bad, sizeof bad, "%s/trunc.bin", d);
    snprintf(cmd, sizeof cmd, "head -c %zu %s > %s", full - 10, path, bad);
    tu_run(cmd);
    expect_reject(bad, "truncated");
    snprintf(bad, sizeof bad, "%s/header_only.bin", d);
    snprintf(cmd, sizeof cmd, "head -c 100 %s > %s", path, bad);
    tu_run(cmd);
    expect_reject(bad, "truncated header");
    snprintf(bad, sizeof bad, "%s/dims.bin", d);
    snprintf(cmd, sizeof cmd, "cp %s %s", path, bad);
    tu_run(cmd);
    patch_int(bad, 4, -3); /* layers */
    expect_reject(bad, "layers must be");
    snprintf(bad, sizeof bad, "%s/huge.bin", d);
    snprintf(cmd, sizeof cmd, "cp %s %s", path, bad);
    tu_run(cmd);
    patch_int(bad, 6, 65536); /* channels: header claims far more data than the file holds */
    patch_int(bad, 5, 1);
    expect_reject(bad, "truncated");
    snprintf(bad, sizeof bad, "%s/adir", d);
    mkdir(bad, 0700);
    expect_reject(bad, "not a regular file");
    free(p), free(path), free(d);
}

/* fp32 -> bf16 by hand: round to nearest, ties to even. 1 + 2^-8 lies
 * halfway between 1 and 1 + 2^-7 and goes to 1 (even); 1 + 3*2^-8 lies
 * halfway between 1 + 2^-7 and 1 + 2^-6 and goes to 1 + 2^-6 (even);
 * 1 + 2^-8 + 2^-20 is past halfway and goes up. */
Test(model_file, bf16_rounding_by_hand)
{
    cr_expect_eq(model_file_bf16(1.0f), 0x3f80);
    cr_expect_eq(model_file_bf16(1.00390625f), 0x3f80);
    cr_expect_eq(model_file_bf16(1.01171875f), 0x3f82);
    cr_expect_eq(model_file_bf16(1.00390625f + 0x1p-20f), 0x3f81);
    cr_expect_eq(model_file_bf16(-2.0f), 0xc000);
    uint16_t nan = model_file_bf16(__builtin_nanf(""));
    cr_expect((nan & 0x7f80) == 0x7f80 && (nan & 0x7f) != 0, "NaN became %04x", nan);
}

/* --save-dtype bf16's file: version 5, 2 bytes a parameter, and loading it
 * gives each parameter rounded to bf16 (within 2^-8 relative). */
Test(model_file, bf16_version_5_round_trip)
{
    char *d = tu_tempdir(), err[256], path[512];
    GPTConfig cfg = tu_tiny_config(), back;
    float *p = tu_random_params(&cfg, 11), *q;
    size_t n = config_num_params(&cfg), len;
    snprintf(path, sizeof path, "%s/m5.bin", d);
    cr_assert_eq(model_file_save_as(path, &cfg, p, MODEL_FILE_BF16, err, sizeof err), 0, "%s",
                 err);
    char *bytes = tu_read_file(path, &len);
    cr_assert_eq(len, 1024 + n * 2);
    int32_t h[2];
    memcpy(h, bytes, sizeof h);
    cr_expect_eq(h[0], 20240326);
    cr_expect_eq(h[1], 5);
    cr_assert_eq(model_file_load(path, &back, &q, err, sizeof err), 0, "%s", err);
    cr_expect_eq(memcmp(&back, &cfg, sizeof cfg), 0);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t bits = (uint32_t)model_file_bf16(p[i]) << 16;
        float want;
        memcpy(&want, &bits, sizeof want);
        if (memcmp(&want, &q[i], sizeof want) != 0 || fabsf(q[i] - p[i]) > 0x1p-8f * fabsf(p[i]))
            bad++;
    }
    cr_expect_eq(bad, 0, "%zu of %zu parameters differ from their bf16 rounding", bad, n);
    /* and saved again as bf16, the file is the same bytes */
    char path2[600];
    snprintf(path2, sizeof path2, "%s/again.bin", d);
    cr_assert_eq(model_file_save_as(path2, &cfg, q, MODEL_FILE_BF16, err, sizeof err), 0, "%s",
                 err);
    char *bytes2 = tu_read_file(path2, &len);
    cr_expect_eq(memcmp(bytes, bytes2, 1024 + n * 2), 0);
    free(p), free(q), free(bytes), free(bytes2);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    tu_run(cmd);
    free(d);
}

/* A save is a temp file renamed over the name, and rename(2) replaces what
 * has the name: never a FIFO or a device (as root, `--save /dev/null`
 * replaced /dev/null with a 6.5 MB file). The FIFO stands in for the device. */
Test(model_file, save_never_replaces_a_fifo)
{
    char *d = tu_tempdir(), err[512];
    GPTConfig cfg = tu_tiny_config();
    float *p = tu_random_params(&cfg, 3);
    const char *fifo = tu_path(d, "fifo");
    cr_assert_eq(mkfifo(fifo, 0644), 0);
    cr_expect_eq(model_file_save(fifo, &cfg, p, err, sizeof err), -1);
    cr_expect(strstr(err, "fifo: is a FIFO, not a regular file; not replaced"), "%s", err);
    struct stat st;
    cr_expect(stat(fifo, &st) == 0 && S_ISFIFO(st.st_mode), "the FIFO was replaced");
    cr_expect_neq(access(tu_path(d, "fifo.tmp"), F_OK), 0, "the temp file was left");
    free(p);
    tu_remove_tree(d);
}
