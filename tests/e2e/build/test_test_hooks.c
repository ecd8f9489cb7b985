/* tests/e2e/build/test_test_hooks.c — the TRAIN_GPT_TEST_* hooks are in
 * the test build only (base/test_hooks.h): the ./train_gpt and ./tokenize
 * users run hold none of the names and ignore the variables, and the
 * programs the suite drives have every one. The product's folder is
 * $TRAIN_GPT_PRODUCT_DIR (make test: ., make test-asan: build/asan), else
 * the working directory. */
#define _GNU_SOURCE /* memmem */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

static const char *const HOOKS[] = {
    "TRAIN_GPT_TEST_NAN_STEP",       "TRAIN_GPT_TEST_STALL",
    "TRAIN_GPT_TEST_SAVE_DELAY_MS",  "TRAIN_GPT_TEST_COMMIT_DELAY_MS",
    "TRAIN_GPT_TEST_BLOCK_DELAY_MS", "TRAIN_GPT_TEST_EVAL_DUMP",
    "TRAIN_GPT_TEST_BASELINE",       "TRAIN_GPT_TEST_PAUSE_AT",
    "TRAIN_GPT_TEST_PAUSE_FILE",     "TRAIN_GPT_TEST_BLOCK_CLOCK_MS",
    "TRAIN_GPT_TEST_CLOCK_JUMP",
};

static const char *product(const char *name)
{
    static char path[2][4096];
    static int which;
    const char *dir = getenv("TRAIN_GPT_PRODUCT_DIR");
    char *p = path[which ^= 1];
    snprintf(p, sizeof path[0], "%s/%s", dir && *dir ? dir : ".", name);
    return p;
}

/* 1 when the file's bytes hold text (what `strings FILE | grep` finds). */
static int binary_has(const char *path, const char *text)
{
    size_t len;
    char *bytes = tu_read_file(path, &len);
    cr_assert_not_null(bytes, "%s: missing (make builds it)", path);
    int has = memmem(bytes, len, text, strlen(text)) != NULL;
    free(bytes);
    return has;
}

Test(test_hooks, the_product_holds_no_hook)
{
    const char *bins[] = {product("train_gpt"), product("tokenize")};
    for (int i = 0; i < 2; i++)
        cr_expect(!binary_has(bins[i], "TRAIN_GPT_TEST"),
                  "%s holds a TRAIN_GPT_TEST_* name: a test hook is in the product build "
                  "(base/test_hooks.h)", bins[i]);
}

Test(test_hooks, the_test_build_holds_every_hook)
{
    for (size_t i = 0; i < sizeof HOOKS / sizeof HOOKS[0]; i++)
        cr_expect(binary_has(tc_bin(), HOOKS[i]), "%s lacks %s: the suite is not driving the test "
                  "build (make test sets TRAIN_GPT_BIN)", tc_bin(), HOOKS[i]);
    cr_expect(binary_has(tc_tokenize_bin(), "TRAIN_GPT_TEST_COMMIT_DELAY_MS"), "%s",
              tc_tokenize_bin());
}

/* Every step's gradient poisoned: the test build skips them all (exit 4),
 * the product trains as if the variables were not there (with the stall,
 * the block delay or the pause at step 1 read, it would outlast the
 * timeout). */
Test(test_hooks, the_product_ignores_the_variables, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], cmd[8192], p[700];
    tc_make_shards(d, 1, 400);
    snprintf(args, sizeof args, "%s --steps 2 --max-bad-steps 1", tc_model_args(d));
    snprintf(p, sizeof p, "%s/hooked", d);
    cr_expect_eq(tc_run("TRAIN_GPT_TEST_NAN_STEP=1-2", args, p), 4, "the test build: non-finite");
    snprintf(cmd, sizeof cmd, "TRAIN_GPT_TEST_NAN_STEP=1-2 TRAIN_GPT_TEST_STALL=0:1:600 "
             "TRAIN_GPT_TEST_BLOCK_DELAY_MS=59999 TRAIN_GPT_TEST_PAUSE_AT=step:1 "
             "TRAIN_GPT_TEST_PAUSE_FILE=%s/pause %s %s >%s/p.out 2>%s/p.err", d,
             product("train_gpt"), args, d, d);
    cr_expect_eq(tu_run(cmd), 0, "the product build trains (see %s/p.err)", d);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    tu_run(cmd);
    free(d);
}
