/* tests/e2e/train/test_data_checks.c — the data a fresh run trains on is
 * checked where it matters (data/loader.h):
 *
 *  - a shard changed after ./tokenize wrote it (two tokens swapped: same
 *    size, same dataset id) is refused by a fresh run before its first
 *    step, exit 1 naming the shard and its manifest, with no log and no
 *    save written (the code before trained on it, saved its manifest hash,
 *    and every later --resume was refused); an untouched dataset trains,
 *    and the check says what it read;
 *  - a val shard that is also one of the train glob's draws a warning
 *    naming it, however the path is spelled; a separate one draws none
 *    (the code before said nothing). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

#define MODEL "--layers 1 --channels 16 --heads 2 --vocab 50257 --seq-len 32 --batch 2 " \
              "--device cpu --threads 1 --val-every 0 --val-batches 1"

/* ./tokenize 20,000 bytes of tinyshakespeare (6048 tokens) into d/ts:
 * shards of 1000 tokens, the first 1000 val. */
static void tokenize_into(const char *d)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "head -c 20000 '%s' | %s --quiet --out %s/ts --shard-size 1000 "
             "--val-tokens 1000 -", TU_SHAKESPEARE, tc_tokenize_bin(), d);
    cr_assert_eq(tu_run(cmd), 0);
}

/* Swap two different tokens of a shard in place. */
static void swap_tokens(const char *path)
{
    size_t len;
    char *b = tu_read_file(path, &len), t[2];
    cr_assert_not_null(b, "%s", path);
    int at = 1024;
    while (at + 4 <= (int)len && memcmp(b + at, b + at + 2, 2) == 0) at += 2;
    cr_assert(at + 4 <= (int)len, "no two different tokens in %s", path);
    memcpy(t, b + at, 2), memcpy(b + at, b + at + 2, 2), memcpy(b + at + 2, t, 2);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(b, 1, len, f), len);
    fclose(f);
    free(b);
}

Test(data_checks, a_changed_shard_stops_a_fresh_run, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], p[700];
    tokenize_into(d);
    /* untouched: it trains, and says what it checked (1 val and 5 train shards; the last, 48 tokens, is too short and skipped) */
    snprintf(args, sizeof args, MODEL " --train-data '%s/ts_train_*.bin' --val-data "
             "%s/ts_val_000000.bin --steps 1", d, d);
    snprintf(p, sizeof p, "%s/good", d);
    int rc = tc_run(NULL, args, p);
    snprintf(p, sizeof p, "%s/good.err", d);
    char *err = tu_read_file(p, NULL);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err ? err : "");
    free(err);
    snprintf(p, sizeof p, "%s/good.out", d);
    cr_expect(tc_file_has(p, "data: checked 6 shard(s) against their dataset manifest"),
              "no line of the check");
    snprintf(p, sizeof p, "%s/ts_train_000003.bin", d);
    swap_tokens(p);
    snprintf(args, sizeof args, MODEL " --train-data '%s/ts_train_*.bin' --val-data "
             "%s/ts_val_000000.bin --steps 2 --checkpoint-dir %s/ck --log %s/l.jsonl", d, d, d,
             d);
    snprintf(p, sizeof p, "%s/bad", d);
    rc = tc_run(NULL, args, p);
    snprintf(p, sizeof p, "%s/bad.err", d);
    err = tu_read_file(p, NULL);
    cr_expect_eq(rc, 1, "a fresh run trained on a changed shard (exit %d): %s", rc,
                 err ? err : "");
    cr_expect(err && strstr(err, "ts_train_000003.bin: its content differs from its dataset "
                            "manifest") && strstr(err, "ts.manifest.json"),
              "message: %s", err ? err : "");
    free(err);
    snprintf(p, sizeof p, "%s/bad.out", d);
    cr_expect(!tc_file_has(p, "| loss "), "a step ran");
    snprintf(p, sizeof p, "%s/l.jsonl", d);
    cr_expect_neq(access(p, F_OK), 0, "the log was written");
    snprintf(p, sizeof p, "%s/ck/step_00000002", d);
    cr_expect_neq(access(p, F_OK), 0, "a save was written");
    tu_remove_tree(d);
}

Test(data_checks, a_val_shard_in_the_train_glob_is_named, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], p[700];
    tc_make_shards(d, 2, 400);
    /* tc_model_args' own val shard is a file of its own: no warning */
    snprintf(args, sizeof args, "%s --steps 1", tc_model_args(d));
    snprintf(p, sizeof p, "%s/apart", d);
    cr_assert_eq(tc_run(NULL, args, p), 0);
    snprintf(p, sizeof p, "%s/apart.err", d);
    cr_expect(!tc_file_has(p, "warning"), "a warning for a separate val shard");
    /* train_1.bin, spelled another way, is in the glob */
    snprintf(args, sizeof args, "%s --steps 1 --val-data %s/./train_1.bin", tc_model_args(d), d);
    snprintf(p, sizeof p, "%s/inside", d);
    cr_assert_eq(tc_run(NULL, args, p), 0);
    snprintf(p, sizeof p, "%s/inside.err", d);
    char want[900];
    snprintf(want, sizeof want, "warning: --val-data: %s/./train_1.bin is also a shard of "
             "--train-data %s/train_*.bin", d, d);
    cr_expect(tc_file_has(p, want), "no warning naming the shard");
    tu_remove_tree(d);
}
