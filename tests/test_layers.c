/* tests/test_layers.c — the layer order (README, section Layout): every
 * #include points down. scripts/check_layers.py reads the allowed order from
 * the README and checks the tree; these tests run it on the tree itself, and
 * on a copy with one upward include added, which it must refuse by name. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

/* Run the checker on root; its output (stdout and stderr) into *out. */
static int check_layers(const char *root, char **out)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "python3 scripts/check_layers.py '%s'", root);
    return tu_run_output(cmd, out, out);
}

/* A copy of the checked part of the tree: every layer's folder, the
 * top-level sources and the README. */
static char *copy_tree(void)
{
    char *d = tu_tempdir(), cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cp -r README.md base kernels model data distributed run *.c *.h '%s'/", d);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    return d;
}

Test(layers, the_tree_points_down)
{
    char *out;
    int rc = check_layers(".", &out);
    cr_expect_eq(rc, 0, "%s", out);
    cr_expect(out && strstr(out, "every include points down the layers"), "%s", out);
    free(out);
}

/* model/ including run/ (up) and data/ including model/ (sideways): both are
 * refused, each with its file and line. */
Test(layers, an_upward_include_is_refused)
{
    char *d = copy_tree(), path[700], *out;
    snprintf(path, sizeof path, "%s/model/gpt.c", d);
    FILE *f = fopen(path, "a");
    cr_assert_not_null(f);
    fputs("#include \"run/session.h\"\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/data/shard.c", d);
    f = fopen(path, "a");
    cr_assert_not_null(f);
    fputs("#include \"model/config.h\"\n", f);
    fclose(f);
    int rc = check_layers(d, &out);
    cr_expect_eq(rc, 1, "%s", out);
    cr_expect(out && strstr(out, "model/gpt.c:") &&
              strstr(out, "layer model includes run/session.h (layer run)"), "%s", out);
    cr_expect(out && strstr(out, "data/shard.c:") &&
              strstr(out, "layer data includes model/config.h (layer model)"), "%s", out);
    cr_expect(out && strstr(out, "2 include(s) point up or sideways"), "%s", out);
    free(out);
    tu_remove_tree(d);
}

/* The order lives in the README only: without its block the check cannot
 * pass silently. */
Test(layers, a_readme_without_the_order_is_an_error)
{
    char *d = copy_tree(), cmd[4096], *out;
    snprintf(cmd, sizeof cmd, "sed -i '/<!-- layers -->/d' '%s/README.md'", d);
    cr_assert_eq(tu_run(cmd), 0);
    int rc = check_layers(d, &out);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(out && strstr(out, "no <!-- layers --> ... <!-- /layers --> block"), "%s", out);
    free(out);
    tu_remove_tree(d);
}
