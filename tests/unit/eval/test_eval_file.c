/* tests/unit/eval/test_eval_file.c — llm.c's eval file: the bytes against the
 * published layout written out by hand, round trips, and every fault the
 * reader must name (the end-to-end table is in test_hostile_inputs.c). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_file.h"
#include "base/rng.h"
#include "tests/lib/test_util.h"

static EvalSet one_example(void)
{
    EvalSet es = {0};
    char err[256];
    int32_t ctx[2] = {464, 3290}, a[1] = {7}, b[2] = {50256, 0}, c[1] = {65534}, d[3] = {1, 2, 3};
    const int32_t *comp[4] = {a, b, c, d};
    int len[4] = {1, 2, 1, 3};
    cr_assert_eq(eval_set_append(&es, 2, ctx, 2, comp, len, err, sizeof err), 0, "%s", err);
    return es;
}

/* The stream of llm.c's dev/data/data_common.py write_evalfile, by hand. */
Test(eval_file, bytes_follow_the_published_layout)
{
    char *dir = tu_tempdir(), path[600], err[256];
    snprintf(path, sizeof path, "%s/e.bin", dir);
    EvalSet es = one_example();
    cr_assert_eq(eval_file_write(path, &es, err, sizeof err), 0, "%s", err);
    size_t n;
    char *got = tu_read_file(path, &n);
    /* 5 fixed + (1 + 2) + (1 + 1) + (1 + 2) + (1 + 1) + (1 + 3) values = 19 -> 38 bytes */
    const uint16_t rec[19] = {65535, 38, 0, 2, 4, 2, 464, 3290, 1, 7, 2, 50256, 0, 1, 65534,
                              3, 1, 2, 3};
    int32_t head[256] = {20240522, 1, 1, 38};
    cr_assert_eq(n, 1024 + sizeof rec);
    cr_expect_eq(memcmp(got, head, 1024), 0, "header");
    cr_expect_eq(memcmp(got + 1024, rec, sizeof rec), 0, "record");
    EvalSet back;
    cr_assert_eq(eval_file_read(path, &back, err, sizeof err), 0, "%s", err);
    cr_expect(back.num_examples == 1 && back.ex[0].label == 2 && back.ex[0].ctx_len == 2 &&
              back.ex[0].comp_len[3] == 3 && back.tokens[back.ex[0].comp_off[2]] == 65534 &&
              back.longest_bytes == 38);
    eval_set_free(&back), eval_set_free(&es);
    free(got);
    tu_remove_tree(dir);
}

Test(eval_file, round_trip_of_random_examples)
{
    char *dir = tu_tempdir(), path[600], err[256];
    snprintf(path, sizeof path, "%s/e.bin", dir);
    EvalSet es = {0}, back;
    uint64_t s = 5;
    static int32_t t[5][300];
    for (int i = 0; i < 300; i++) {
        int len[5];
        for (int k = 0; k < 5; k++) {
            len[k] = 1 + (int)(rng_next(&s) % 300);
            for (int j = 0; j < len[k]; j++) t[k][j] = (int32_t)(rng_next(&s) % 65535);
        }
        const int32_t *comp[4] = {t[1], t[2], t[3], t[4]};
        cr_assert_eq(eval_set_append(&es, i % 4, t[0], len[0], comp, len + 1, err, sizeof err),
                     0, "%s", err);
    }
    cr_assert_eq(eval_file_write(path, &es, err, sizeof err), 0, "%s", err);
    cr_assert_eq(eval_file_read(path, &back, err, sizeof err), 0, "%s", err);
    cr_assert_eq(back.num_examples, 300);
    cr_expect_eq(back.longest_bytes, es.longest_bytes);
    for (int i = 0; i < 300; i++) {
        const EvalExample *a = &es.ex[i], *b = &back.ex[i];
        cr_assert(a->label == b->label && a->ctx_len == b->ctx_len);
        cr_assert_eq(memcmp(es.tokens + a->ctx_off, back.tokens + b->ctx_off, 2 * a->ctx_len), 0);
        for (int c = 0; c < 4; c++) {
            cr_assert_eq(a->comp_len[c], b->comp_len[c]);
            cr_assert_eq(memcmp(es.tokens + a->comp_off[c], back.tokens + b->comp_off[c],
                                2 * a->comp_len[c]), 0, "example %d completion %d", i, c);
        }
    }
    eval_set_free(&es), eval_set_free(&back);
    tu_remove_tree(dir);
}

Test(eval_file, append_refuses_what_the_format_cannot_hold)
{
    EvalSet es = {0};
    char err[256];
    static int32_t big[33000];
    int32_t ok[1] = {1}, bad[1] = {-1};
    const int32_t *c4[4] = {ok, ok, ok, ok}, *cbad[4] = {ok, bad, ok, ok};
    int l1[4] = {1, 1, 1, 1}, l0[4] = {1, 0, 1, 1};
    cr_expect_eq(eval_set_append(&es, 4, ok, 1, c4, l1, err, sizeof err), -1);
    cr_expect(strstr(err, "label 4 is outside 0..3"), "%s", err);
    cr_expect_eq(eval_set_append(&es, 0, ok, 0, c4, l1, err, sizeof err), -1);
    cr_expect(strstr(err, "the context has no tokens"), "%s", err);
    cr_expect_eq(eval_set_append(&es, 0, ok, 1, c4, l0, err, sizeof err), -1);
    cr_expect(strstr(err, "ending 1 has no tokens"), "%s", err);
    cr_expect_eq(eval_set_append(&es, 0, ok, 1, cbad, l1, err, sizeof err), -1);
    cr_expect(strstr(err, "ending 1: token -1 is negative"), "%s", err);
    /* 5 fixed + (1 + 33000) + 4 x (1 + 1) = 33014 values */
    cr_expect_eq(eval_set_append(&es, 0, big, 33000, c4, l1, err, sizeof err), -1);
    cr_expect(strstr(err, "needs a record of 33014 values; the format allows at most 32767"),
              "%s", err);
    cr_expect_eq(es.num_examples, 0, "nothing was appended");
    char *dir = tu_tempdir(), path[600];
    snprintf(path, sizeof path, "%s/empty.bin", dir);
    cr_expect_eq(eval_file_write(path, &es, err, sizeof err), -1);
    cr_expect(strstr(err, "no examples to write"), "%s", err);
    eval_set_free(&es);
    tu_remove_tree(dir);
}

/* A valid two-example file, then one edit at a time. */
typedef struct {
    const char *name;
    long at;         /* byte offset of a uint16 (>= 1024) or int32 (< 1024) to set; -1 none */
    long value;
    long size;       /* new file size when > 0 (truncate or extend with zeros) */
    const char *msg;
} Fault;

Test(eval_file, reader_names_every_fault)
{
    char *dir = tu_tempdir(), good[600], path[600], err[512];
    snprintf(good, sizeof good, "%s/good.bin", dir);
    snprintf(path, sizeof path, "%s/bad.bin", dir);
    EvalSet es = one_example();
    int32_t ctx[3] = {1, 2, 3}, a[1] = {9};
    const int32_t *comp[4] = {a, a, a, a};
    int len[4] = {1, 1, 1, 1};
    cr_assert_eq(eval_set_append(&es, 1, ctx, 3, comp, len, err, sizeof err), 0, "%s", err);
    cr_assert_eq(eval_file_write(good, &es, err, sizeof err), 0, "%s", err);
    eval_set_free(&es);
    /* record 0 at 1024 (38 bytes), record 1 at 1062 (34 bytes), end 1096 */
    static const Fault faults[] = {
        {"header", -1, 0, 100, "truncated header (100 bytes"},
        {"magic", 0, 20240520, 0, "bad magic 20240520 (expected 20240522: not an llm.c eval file; "
                                  "this is a token shard)"},
        {"version", 4, 3, 0, "unsupported version 3"},
        {"count", 8, 0, 0, "example count 0 in the header is outside 1..65535"},
        {"huge_count", 8, 1 << 30, 0, "example count 1073741824"},
        {"more_examples", 8, 3, 0, "cannot hold the header's 3 examples"},
        {"longest", 12, 7, 0, "longest-example length 7 bytes"},
        {"longest_wrong", 12, 40, 0, "the header's longest-example length is 40 bytes, but the "
                                     "longest record has 38"},
        {"marker", 1024, 65534, 0, "example 0 at byte 1024: expected the start-of-example marker"},
        {"length_odd", 1026, 37, 0, "record length 37 bytes is not an even count"},
        {"length_past_end", 1062 + 2, 64, 0, "example 1 at byte 1062: record length 64 bytes is "
                                             "past the end of the file"},
        {"index", 1062 + 4, 5, 0, "example 1 at byte 1062: index field 5 (expected 1"},
        {"label", 1024 + 6, 4, 0, "example 0: label 4 is outside 0..3"},
        {"completions", 1024 + 8, 5, 0, "example 0: 5 completions (llm.c's format has 4)"},
        {"empty_context", 1024 + 10, 0, 0, "example 0: the context has no tokens"},
        {"context_overrun", 1024 + 10, 40, 0, "example 0: the context of 40 tokens overruns"},
        {"completion_overrun", 1024 + 16, 11, 0, "example 0: completion 0 of 11 tokens overruns"},
        {"slack", 1024 + 2, 40, 1098, "record length 40 bytes, but its fields take 38"},
        {"trailing", -1, 0, 1100, "4 trailing bytes after the last of the header's 2 examples"},
        {"odd_size", -1, 0, 1097, "not a whole number of uint16 values"},
        {"truncated", -1, 0, 1090, "example 1 at byte 1062: record length 34 bytes is past the end"},
    };
    size_t n;
    char *orig = tu_read_file(good, &n);
    cr_assert_eq(n, 1096);
    for (size_t k = 0; k < sizeof faults / sizeof faults[0]; k++) {
        const Fault *f = &faults[k];
        size_t m = f->size > 0 ? (size_t)f->size : n;
        char *b = calloc(m > n ? m : n, 1);
        memcpy(b, orig, n);
        if (f->at >= 1024) {
            uint16_t v = (uint16_t)f->value;
            memcpy(b + f->at, &v, 2);
        } else if (f->at >= 0) {
            int32_t v = (int32_t)f->value;
            memcpy(b + f->at, &v, 4);
        }
        FILE *fp = fopen(path, "wb");
        fwrite(b, 1, m, fp);
        fclose(fp);
        free(b);
        EvalSet x;
        cr_expect_eq(eval_file_read(path, &x, err, sizeof err), -1, "%s: accepted", f->name);
        cr_expect(strstr(err, path) && strstr(err, f->msg), "%s: %s", f->name, err);
    }
    EvalSet x;
    cr_expect_eq(eval_file_read(dir, &x, err, sizeof err), -1);
    cr_expect(strstr(err, "not a regular file"), "%s", err);
    free(orig);
    tu_remove_tree(dir);
}

Test(eval_file, vocabulary_check_names_the_example)
{
    EvalSet es = one_example();
    char err[256];
    cr_expect_eq(eval_set_check_vocab(&es, 65535, "f.bin", err, sizeof err), 0);
    cr_expect_eq(eval_set_check_vocab(&es, 50257, "f.bin", err, sizeof err), -1);
    cr_expect(strstr(err, "f.bin: example 0 completion 2: token 65534 is outside the model's "
                          "vocabulary (50257)"), "%s", err);
    eval_set_free(&es);
}

/* Version 2, this project's: the same fields as uint32, written only when an
 * id does not fit a uint16 (eval_file.h), by hand. */
Test(eval_file, wide_ids_give_version_2_bytes_by_hand)
{
    char *dir = tu_tempdir(), path[600], err[256];
    snprintf(path, sizeof path, "%s/e.bin", dir);
    EvalSet es = {0};
    int32_t ctx[2] = {128000, 65535}, a[1] = {7}, b[2] = {128255, 0}, c[1] = {65534},
            d[3] = {1, 2, 70000};
    const int32_t *comp[4] = {a, b, c, d};
    int len[4] = {1, 2, 1, 3};
    cr_assert_eq(eval_set_append(&es, 3, ctx, 2, comp, len, err, sizeof err), 0, "%s", err);
    cr_expect_eq(es.version, 2);
    es.tokenizer_id = 0x0123456789abcdefull; /* version 2 records it: header[4], [5] */
    cr_assert_eq(eval_file_write(path, &es, err, sizeof err), 0, "%s", err);
    size_t n;
    char *got = tu_read_file(path, &n);
    /* 19 values as in version 1's example, 4 bytes each: 76 bytes */
    const uint32_t rec[19] = {0xFFFFFFFFu, 76, 0, 3, 4, 2, 128000, 65535, 1, 7, 2, 128255, 0,
                              1, 65534, 3, 1, 2, 70000};
    int32_t head[256] = {20240522, 2, 1, 76, (int32_t)0x89abcdefu, 0x01234567};
    cr_assert_eq(n, 1024 + sizeof rec);
    cr_expect_eq(memcmp(got, head, 1024), 0, "header");
    cr_expect_eq(memcmp(got + 1024, rec, sizeof rec), 0, "record");
    EvalSet back;
    cr_assert_eq(eval_file_read(path, &back, err, sizeof err), 0, "%s", err);
    cr_expect(back.version == 2 && back.num_examples == 1 && back.ex[0].label == 3 &&
              back.longest_bytes == 76 && back.num_tokens == 19 &&
              back.tokenizer_id == 0x0123456789abcdefull);
    cr_expect(back.tokens[back.ex[0].ctx_off] == 128000 &&
              back.tokens[back.ex[0].ctx_off + 1] == 65535 &&
              back.tokens[back.ex[0].comp_off[3] + 2] == 70000);
    cr_expect_eq(eval_set_check_vocab(&back, 128256, path, err, sizeof err), 0, "%s", err);
    cr_expect_eq(eval_set_check_vocab(&back, 100277, path, err, sizeof err), -1);
    cr_expect(strstr(err, "example 0 context: token 128000 is outside the model's vocabulary "
                          "(100277)"), "%s", err);
    /* version 2's faults name the same fields at their 4-byte places */
    uint32_t bad = 65535; /* version 1's marker is not version 2's */
    memcpy(got + 1024, &bad, 4);
    FILE *fp = fopen(path, "wb");
    fwrite(got, 1, n, fp);
    fclose(fp);
    cr_expect_eq(eval_file_read(path, &back, err, sizeof err), -1);
    cr_expect(strstr(err, "example 0 at byte 1024: expected the start-of-example marker "
                          "4294967295, found 65535"), "%s", err);
    fp = fopen(path, "wb");
    fwrite(got, 1, n - 2, fp);
    fclose(fp);
    cr_expect_eq(eval_file_read(path, &back, err, sizeof err), -1);
    cr_expect(strstr(err, "not a whole number of uint32 values"), "%s", err);
    eval_set_free(&es);
    free(got);
    tu_remove_tree(dir);
}
