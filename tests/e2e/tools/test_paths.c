/* tests/e2e/tools/test_paths.c — the tree's words about itself stay true.
 * dev/check_paths.py fails on an include guard that does not match its
 * header's path and on a quoted `folder/file.ext` that does not exist;
 * these tests run it on the tree, and on a small tree with one fault of
 * each kind, which it must name. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/test_util.h"

static int check_paths(const char *root, char **out)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "python3 dev/check_paths.py '%s'", root);
    return tu_run_output(cmd, out, out);
}

Test(paths, every_guard_and_quoted_path_of_the_tree_holds)
{
    char *out;
    int rc = check_paths(".", &out);
    cr_expect_eq(rc, 0, "%s", out ? out : "");
    free(out);
}

Test(paths, a_stale_guard_and_a_dead_path_are_named)
{
    char *d = tu_tempdir(), cmd[4096];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/cli' '%s/model' && touch '%s/model/here.c'", d, d, d);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    /* a guard named for a folder the file left, and two quoted paths: one
     * that exists (not named) and one that does not */
    tu_write_text(tu_path(d, "cli/moved.h"),
                  "/* cli/moved.h: see model/here.c and model/gone.c */\n"
                  "#ifndef RUN_MOVED_H\n#define RUN_MOVED_H\n#endif\n");
    tu_write_text(tu_path(d, "cli/good.h"), "#ifndef CLI_GOOD_H\n#define CLI_GOOD_H\n#endif\n");
    char *out;
    int rc = check_paths(d, &out);
    cr_assert_not_null(out);
    cr_expect_eq(rc, 1, "%s", out);
    cr_expect(strstr(out, "cli/moved.h:2: include guard RUN_MOVED_H, not CLI_MOVED_H"), "%s", out);
    cr_expect(strstr(out, "cli/moved.h:1: names model/gone.c, which does not exist"), "%s", out);
    cr_expect(!strstr(out, "model/here.c") && !strstr(out, "good.h"), "%s", out);
    free(out), free(d);
}
