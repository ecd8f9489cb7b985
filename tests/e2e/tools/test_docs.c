/* tests/e2e/tools/test_docs.c — the user's documentation stays true to the tree.
 * The README and the .md files of docs/ link to each other by relative
 * paths and #anchors (the README summarises, docs/ holds the detail); moving
 * a section must not leave a link behind. dev/check_doc_links.py checks
 * every such link; these tests run it on the tree, and on a copy with a link
 * to a missing file and one to a missing heading, which it must name.
 * docs/flags.md is generated from the binaries' --help (dev/gen_flags_md.sh,
 * `make docs`); a test regenerates it and compares it byte for byte. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

/* Run the checker on root; its output (stdout and stderr) into *out. */
static int check_links(const char *root, char **out)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "python3 dev/check_doc_links.py '%s'", root);
    return tu_run_output(cmd, out, out);
}

Test(docs, every_relative_link_and_anchor_exists)
{
    char *out;
    int rc = check_links(".", &out);
    cr_expect_eq(rc, 0, "broken links:\n%s", out ? out : "");
    free(out);
}

Test(docs, a_broken_link_and_anchor_are_named)
{
    char *d = tu_tempdir(), cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cp -r README.md docs '%s'/ && printf '\\n[a](docs/no_such.md) [b](#no-such-heading)\\n'"
             " >> '%s/README.md'", d, d);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    char *out;
    int rc = check_links(d, &out);
    cr_assert_not_null(out);
    cr_expect_neq(rc, 0, "the checker passed a broken link");
    cr_expect(strstr(out, "docs/no_such.md: no such file") != NULL, "%s", out);
    cr_expect(strstr(out, "#no-such-heading: no heading") != NULL, "%s", out);
    free(out), free(d);
}

/* docs/flags.md is what dev/gen_flags_md.sh prints from this build's
 * ./train_gpt --help and ./tokenize --help, byte for byte. */
Test(docs, flags_md_is_the_help_text)
{
    char *d = tu_tempdir(), cmd[4096], gen[1024];
    snprintf(gen, sizeof gen, "%s/flags.md", d);
    snprintf(cmd, sizeof cmd, "dev/gen_flags_md.sh '%s' '%s' > '%s'", tc_bin(), tc_tokenize_bin(),
             gen);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    size_t n_gen, n_doc;
    char *want = tu_read_file(gen, &n_gen), *have = tu_read_file("docs/flags.md", &n_doc);
    cr_assert_not_null(want, "%s", gen);
    cr_assert_not_null(have, "docs/flags.md not found (run from the project root)");
    cr_expect(n_gen == n_doc && memcmp(want, have, n_gen) == 0,
              "docs/flags.md differs from the binaries' --help: regenerate it with `make docs` "
              "(dev/gen_flags_md.sh ./train_gpt ./tokenize > docs/flags.md)");
    free(want), free(have), free(d);
}
