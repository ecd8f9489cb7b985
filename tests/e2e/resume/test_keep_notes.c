/* tests/e2e/resume/test_keep_notes.c — end-to-end: what --keep says.
 *
 *  - "saved step_8" comes before "deleted step_6": a save is announced
 *    before the deletions it allows;
 *  - a save that cannot be deleted (a folder inside it) is warned about
 *    once, not again at every later save. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

/* How many times text occurs in the file. */
static int count_of(const char *path, const char *text)
{
    size_t len;
    char *s = tu_read_file(path, &len);
    cr_assert_not_null(s, "%s", path);
    int n = 0;
    for (const char *p = s; (p = strstr(p, text)) != NULL; p += strlen(text)) n++;
    free(s);
    return n;
}

Test(keep_notes, saved_is_said_before_deleted, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 2000);
    snprintf(args, sizeof args, "%s --steps 4 --save-every 2 --keep 1 --checkpoint-dir %s/ck",
             tc_model_args(d), d);
    tc_run_expect(d, args, 0, "note: deleted ");
    size_t len;
    char *out = tu_read_file(tu_path(d, "run.out"), &len);
    cr_assert_not_null(out);
    const char *saved = strstr(out, "saved "), *saved4 = strstr(out, "step_00000004 (");
    const char *deleted = strstr(out, "note: deleted ");
    cr_assert(saved && saved4 && deleted, "%s", out);
    cr_expect(saved4 < deleted, "the deletion of step 2 is said before the save of step 4:\n%s",
              out);
    free(out);
    free(d);
}

Test(keep_notes, a_failed_deletion_warns_once, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096], junk[4096];
    tc_make_shards(d, 1, 2000);
    /* debris of step 2 (no COMPLETE) that the save of step 2 reuses, with a
     * folder inside that a save's deletion does not remove */
    snprintf(junk, sizeof junk, "%s/ck/step_00000002/kept_by_user", d);
    cr_assert_eq(mkdir(tu_path(d, "ck"), 0755), 0);
    cr_assert_eq(mkdir(tu_path(d, "ck/step_00000002"), 0755), 0);
    cr_assert_eq(mkdir(junk, 0755), 0);
    snprintf(args, sizeof args, "%s --steps 8 --save-every 2 --keep 1 --checkpoint-dir %s/ck",
             tc_model_args(d), d);
    tc_run_expect(d, args, 0, "step_00000002");
    int n = count_of(tu_path(d, "run.err"), "step_00000002");
    cr_expect_eq(n, 1, "the failed deletion of step 2 was warned about %d times", n);
    struct stat sb;
    cr_expect_eq(stat(junk, &sb), 0, "the user's folder inside the save was deleted");
    free(d);
}
