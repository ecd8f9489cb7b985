/* tests/e2e/tools/test_layers.c — the layer order (dev/layers): every
 * #include points down. dev/check_layers.py reads the allowed order from
 * dev/layers and checks the tree; these tests run it on the tree itself, and
 * on copies with an upward include added, which it must refuse by name. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/test_util.h"

/* Run the checker on root; its output (stdout and stderr) into *out. */
static int check_layers(const char *root, char **out)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "python3 dev/check_layers.py '%s'", root);
    return tu_run_output(cmd, out, out);
}

/* A copy of the checked part of the tree: every layer's folder, the
 * programs at the root and the rules. */
static char *copy_tree(void)
{
    char *d = tu_tempdir(), cmd[4096];
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s/dev' && cp dev/layers '%s/dev/' && "
             "cp -r base kernels model data distributed ckpt interop eval cli *.c '%s'/", d, d, d);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    return d;
}

static void append(const char *root, const char *file, const char *line)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s", root, file);
    FILE *f = fopen(path, "a");
    cr_assert_not_null(f, "%s", path);
    fputs(line, f);
    fclose(f);
}

Test(layers, the_tree_points_down)
{
    char *out;
    int rc = check_layers(".", &out);
    cr_expect_eq(rc, 0, "%s", out);
    cr_expect(out && strstr(out, "every include points down the layers"), "%s", out);
    free(out);
}

/* model/ including ckpt/ (up), data/ including model/ (sideways) and ckpt/
 * including the CLI (up): each is refused with its file and line. */
Test(layers, an_upward_include_is_refused)
{
    char *d = copy_tree(), *out;
    append(d, "model/gpt.c", "#include \"ckpt/session.h\"\n");
    append(d, "data/shard.c", "#include \"model/config.h\"\n");
    append(d, "ckpt/checkpoint.c", "#include \"cli/options.h\"\n");
    int rc = check_layers(d, &out);
    cr_expect_eq(rc, 1, "%s", out);
    cr_expect(out && strstr(out, "model/gpt.c:") &&
              strstr(out, "layer model includes ckpt/session.h (layer ckpt)"), "%s", out);
    cr_expect(out && strstr(out, "data/shard.c:") &&
              strstr(out, "layer data includes model/config.h (layer model)"), "%s", out);
    cr_expect(out && strstr(out, "ckpt/checkpoint.c:") &&
              strstr(out, "layer ckpt includes cli/options.h (layer cli)"), "%s", out);
    cr_expect(out && strstr(out, "3 include(s) point up or sideways"), "%s", out);
    free(out);
    tu_remove_tree(d);
}

/* A program at the root is the CLI: it may include cli/, and a folder that
 * dev/layers does not name is refused rather than passed. */
Test(layers, a_folder_the_rules_do_not_name_is_refused)
{
    char *d = copy_tree(), cmd[4096], *out;
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/extra' && echo 'int x;' > '%s/extra/x.c'", d, d);
    cr_assert_eq(tu_run(cmd), 0);
    int rc = check_layers(d, &out);
    cr_expect_eq(rc, 1, "%s", out);
    cr_expect(out && strstr(out, "extra/x.c: folder extra/ is not a layer in dev/layers"), "%s", out);
    free(out);
    tu_remove_tree(d);
}

/* The order lives in dev/layers only: without it, or with a line that is
 * not a rule, the check cannot pass silently. */
Test(layers, missing_or_malformed_rules_are_an_error)
{
    char *d = copy_tree(), cmd[4096], *out;
    snprintf(cmd, sizeof cmd, "echo 'model includes kernels' >> '%s/dev/layers'", d);
    cr_assert_eq(tu_run(cmd), 0);
    int rc = check_layers(d, &out);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(out && strstr(out, "not a rule: 'model includes kernels'"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "rm '%s/dev/layers'", d);
    cr_assert_eq(tu_run(cmd), 0);
    rc = check_layers(d, &out);
    cr_expect_eq(rc, 2, "%s", out);
    cr_expect(out && strstr(out, "dev/layers: No such file or directory"), "%s", out);
    free(out);
    tu_remove_tree(d);
}
