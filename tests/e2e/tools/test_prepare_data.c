/* tests/e2e/tools/test_prepare_data.c — scripts/prepare_data.sh (`make data`,
 * which scripts/setup.sh runs) keeps the tinyshakespeare text it was given
 * by $TINYSHAKESPEARE in the per-user cache ($XDG_DATA_HOME/train_gpt/
 * tinyshakespeare/input.txt), so a later ./tokenize --fetch (make test,
 * memory_report.sh) finds it without the variable, offline. Run on a copy
 * of the script in a folder of its own (its ./tokenize a link to the test
 * build's), so the tree's datasets/ and the user's cache are not touched.
 * Before, the cache stayed empty and the later fetch failed offline. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

Test(prepare_data, the_text_given_is_kept_in_the_cache, .timeout = 120)
{
    char *d = tu_tempdir(), cmd[8192], *out;
    const char *text = TU_SHAKESPEARE; /* sha256-checked by the source chain */
    char abs_tok[4096];
    cr_assert(realpath(tc_tokenize_bin(), abs_tok), "no %s", tc_tokenize_bin());
    snprintf(cmd, sizeof cmd, "mkdir -p %s/tree/scripts %s/xdg && cp scripts/prepare_data.sh "
             "%s/tree/scripts/ && ln -s %s %s/tree/tokenize", d, d, d, abs_tok, d);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    /* GPT-2's files as the suite found them (in a user's clone, the user's
     * cache, which the empty XDG_DATA_HOME below hides), handed in */
    char gpt2[4096];
    snprintf(gpt2, sizeof gpt2, "%s", TU_ENCODER);
    char *slash = strrchr(gpt2, '/');
    cr_assert(slash, "%s", gpt2);
    *slash = 0;
    /* set-up, given the text */
    snprintf(cmd, sizeof cmd, "cd %s/tree && XDG_DATA_HOME=%s/xdg TINYSHAKESPEARE=%s "
             "TRAIN_GPT_GPT2_DIR=%s TRAIN_GPT_OFFLINE=1 scripts/prepare_data.sh", d, d, text, gpt2);
    int rc = tu_run_output(cmd, &out, &out);
    cr_assert_eq(rc, 0, "%s:\n%s", cmd, out);
    cr_expect(out && strstr(out, "kept a copy of $TINYSHAKESPEARE"), "%s", out);
    free(out);
    char cached[4200];
    snprintf(cached, sizeof cached, "%s/xdg/train_gpt/tinyshakespeare/input.txt", d);
    cr_expect(tc_files_equal(cached, text), "the cache does not hold the text");
    cr_expect(tu_exists(tu_path(d, "tree/datasets/tinyshakespeare_train_000000.bin")));
    /* later, without the variable and offline: the cache serves */
    snprintf(cmd, sizeof cmd, "cd %s/tree && env -u TINYSHAKESPEARE XDG_DATA_HOME=%s/xdg "
             "TRAIN_GPT_OFFLINE=1 ./tokenize --fetch tinyshakespeare 2>/dev/null", d, d);
    rc = tu_run_output(cmd, &out, NULL);
    cr_expect_eq(rc, 0);
    char want[4300];
    snprintf(want, sizeof want, "%s\n", cached);
    cr_expect(out && strcmp(out, want) == 0, "--fetch printed '%s', not the cached %s", out,
              cached);
    free(out);
    /* again: the same bytes are there already, nothing is said or rewritten */
    snprintf(cmd, sizeof cmd, "cd %s/tree && XDG_DATA_HOME=%s/xdg TINYSHAKESPEARE=%s "
             "TRAIN_GPT_GPT2_DIR=%s TRAIN_GPT_OFFLINE=1 scripts/prepare_data.sh", d, d, text, gpt2);
    rc = tu_run_output(cmd, &out, &out);
    cr_expect_eq(rc, 0);
    cr_expect(out && !strstr(out, "kept a copy"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "ls %s/xdg/train_gpt/tinyshakespeare | wc -l", d);
    tu_run_output(cmd, &out, NULL);
    cr_expect(out && atoi(out) == 1, "the cache holds more than input.txt: %s", out);
    free(out);
    tu_remove_tree(d);
}
