/* tests/e2e/outputs/test_log_identity.c — end-to-end: a --log belongs to
 * one run.
 *
 *  - a new run's log starts with {"run_id": ID}, ID the run id its
 *    checkpoint manifests carry;
 *  - --resume given another run's log is refused (exit 1) naming both run
 *    ids, and that log is left byte for byte;
 *  - resuming a run that ended at its save keeps the lines logged after
 *    its last step (the final val loss, the summary): nothing abandoned. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

/* The "run_id" of the JSON on the first line of path, into id. */
static void first_line_run_id(const char *path, char *id, size_t len)
{
    size_t n;
    char *s = tu_read_file(path, &n);
    cr_assert_not_null(s, "%s", path);
    s[strcspn(s, "\n")] = 0;
    cJSON *j = cJSON_Parse(s);
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "run_id");
    cr_assert(cJSON_IsString(r), "no run_id on the first line of %s: %s", path, s);
    snprintf(id, len, "%s", r->valuestring);
    cJSON_Delete(j);
    free(s);
}

Test(log_identity, header_names_the_run_and_resume_checks_it, .timeout = 120)
{
    char *d = tu_tempdir(), args[8192], a[64], b[64], manifest[4096], want[512];
    tc_make_shards(d, 1, 2000);
    const char *m = tc_model_args(d);
    snprintf(args, sizeof args, "%s --steps 2 --checkpoint-dir %s/cka --log %s", m, d,
             tu_path(d, "a.jsonl"));
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "a")), 0);
    snprintf(args, sizeof args, "%s --steps 2 --checkpoint-dir %s/ckb --log %s", m, d,
             tu_path(d, "b.jsonl"));
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "b")), 0);
    first_line_run_id(tu_path(d, "a.jsonl"), a, sizeof a);
    first_line_run_id(tu_path(d, "b.jsonl"), b, sizeof b);
    cr_expect_eq(strlen(a), 16);
    snprintf(manifest, sizeof manifest, "%s/cka/step_00000002/COMPLETE", d);
    snprintf(want, sizeof want, "\"run_id\":\"%s\"", a);
    cr_expect(tc_file_has(manifest, want), "the log's run id %s is not the save's", a);
    /* run b resumed with run a's log */
    size_t before_len;
    char *before = tu_read_file(tu_path(d, "a.jsonl"), &before_len);
    snprintf(args, sizeof args, "%s --steps 4 --checkpoint-dir %s/ckb --resume --log %s", m, d,
             tu_path(d, "a.jsonl"));
    snprintf(want, sizeof want, "the log of run %s, and this run (resumed from its save) is "
             "run %s", a, b);
    tc_run_expect(d, args, 1, want);
    size_t after_len;
    char *after = tu_read_file(tu_path(d, "a.jsonl"), &after_len);
    cr_expect(after_len == before_len && memcmp(before, after, before_len) == 0,
              "the refused resume changed the other run's log");
    free(before);
    free(after);
    free(d);
}

Test(log_identity, a_finished_segment_keeps_its_last_lines, .timeout = 120)
{
    char *d = tu_tempdir(), args[8192];
    tc_make_shards(d, 1, 2000);
    const char *m = tc_model_args(d);
    snprintf(args, sizeof args, "%s --steps 2 --checkpoint-dir %s/ck --log %s", m, d,
             tu_path(d, "l.jsonl"));
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "a")), 0);
    cr_assert(tc_file_has(tu_path(d, "l.jsonl"), "\"val_loss\""), "no final val loss logged");
    snprintf(args, sizeof args, "%s --steps 4 --checkpoint-dir %s/ck --resume --log %s", m, d,
             tu_path(d, "l.jsonl"));
    cr_assert_eq(tc_run(NULL, args, tu_path(d, "r")), 0);
    cr_expect(access(tu_path(d, "l.jsonl.abandoned"), F_OK) != 0,
              "a finished segment's last lines were moved into l.jsonl.abandoned");
    cr_expect(tc_file_has(tu_path(d, "l.jsonl"), "{\"step\":2,\"val_loss\":"),
              "step 2's val loss is gone from the log");
    cr_expect_eq(tc_log_losses(tu_path(d, "l.jsonl"), NULL, NULL, NULL, TC_MAX_STEPS), 4);
    free(d);
}
