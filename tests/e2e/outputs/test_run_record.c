/* tests/e2e/outputs/test_run_record.c — runs that record themselves
 * (cli/run_record.h): the first line of --log is the run's configuration
 * (every flag, the shape, the data's fingerprint, the commit, the backend),
 * and --config reads it back, the command line overriding it. The
 * reference is the first run itself: the run repeated from its log's first
 * line must give the same step-1 gradients (cmp of --dump-grads) and the
 * same losses, bit for bit. Before, the log had no such line and there
 * was no --config (exit 2, unknown flag). */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

static cJSON *first_record(const char *log)
{
    char *text = tu_read_file(log, NULL);
    cr_assert_not_null(text, "no log %s", log);
    char *nl = strchr(text, '\n');
    cr_assert_not_null(nl, "%s: no whole line", log);
    *nl = 0;
    cJSON *j = cJSON_Parse(text);
    free(text);
    cr_assert(cJSON_IsObject(j), "%s: the first line is not a JSON object", log);
    return j;
}

static int run_in(const char *d, const char *tag, const char *args)
{
    char p[700];
    snprintf(p, sizeof p, "%s/%s", d, tag);
    return tc_run(NULL, args, p);
}

Test(run_record, a_run_from_its_log_header_repeats_bit_for_bit, .timeout = 120)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 2000);
    /* flags away from their defaults, so that a lost one shows */
    snprintf(args, sizeof args, "%s --steps 4 --seed 77 --lr-schedule cosine --warmup 1 "
             "--weight-decay 0.1 --grad-clip 0.5 --recompute selective --log %s/a.log "
             "--dump-grads %s/a.grads", tc_model_args(d), d, d);
    cr_assert_eq(run_in(d, "a", args), 0, "first run failed");
    snprintf(args, sizeof args, "--config %s/a.log --log %s/b.log --dump-grads %s/b.grads", d,
             d, d);
    cr_assert_eq(run_in(d, "b", args), 0, "run from the header failed: %s",
                 tu_read_file(tu_path(d, "b.err"), NULL));
    cr_expect(tc_files_equal(tu_path(d, "a.grads"), tu_path(d, "b.grads")),
              "the gradients of the repeated run differ");
    double la[TC_MAX_STEPS], lb[TC_MAX_STEPS];
    int na = tc_log_losses(tu_path(d, "a.log"), NULL, la, NULL, TC_MAX_STEPS);
    int nb = tc_log_losses(tu_path(d, "b.log"), NULL, lb, NULL, TC_MAX_STEPS);
    cr_assert_eq(na, 4);
    cr_assert_eq(nb, na);
    for (int i = 0; i < na; i++)
        cr_expect(la[i] == lb[i], "step %d: loss %.17g vs %.17g", i + 1, la[i], lb[i]);
    /* the two records' configurations differ in the overridden outputs only */
    cJSON *ra = first_record(tu_path(d, "a.log")), *rb = first_record(tu_path(d, "b.log"));
    cJSON *ca = cJSON_GetObjectItem(ra, "config"), *cb = cJSON_GetObjectItem(rb, "config");
    cJSON_ReplaceItemInObject(cb, "log", cJSON_Duplicate(cJSON_GetObjectItem(ca, "log"), 1));
    cJSON_ReplaceItemInObject(cb, "dump-grads",
                              cJSON_Duplicate(cJSON_GetObjectItem(ca, "dump-grads"), 1));
    cr_expect(cJSON_Compare(ca, cb, 1), "configurations differ:\n%s\n%s", cJSON_Print(ca),
              cJSON_Print(cb));
    cJSON_Delete(ra);
    cJSON_Delete(rb);
    /* the command line overrides the file: another seed, other gradients */
    snprintf(args, sizeof args, "--config %s/a.log --log %s/c.log --dump-grads %s/c.grads "
             "--seed 78", d, d, d);
    cr_assert_eq(run_in(d, "c", args), 0);
    cr_expect(!tc_files_equal(tu_path(d, "a.grads"), tu_path(d, "c.grads")),
              "--seed on the command line did not override the file's");
    cJSON *rc_ = first_record(tu_path(d, "c.log"));
    cr_expect_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(rc_, "config"), "seed")->valueint, 78);
    cJSON_Delete(rc_);
    tu_remove_tree(d);
}

/* The record holds every flag but --config (as many as --help lists, less
 * -h, --version and --config), the shape, the data's fingerprint, the
 * commit and the backend. */
Test(run_record, the_first_line_is_the_whole_configuration, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096], cmd[4096];
    tc_make_shards(d, 1, 400);
    snprintf(args, sizeof args, "%s --steps 1 --log %s/a.log", tc_model_args(d), d);
    cr_assert_eq(run_in(d, "a", args), 0);
    cJSON *r = first_record(tu_path(d, "a.log"));
    cJSON *c = cJSON_GetObjectItem(r, "config"), *s = cJSON_GetObjectItem(r, "shape");
    cr_assert(cJSON_IsObject(c) && cJSON_IsObject(s));
    snprintf(cmd, sizeof cmd, "%s --help | grep -c '^  --'", tc_bin());
    char *out;
    cr_assert_eq(tu_run_output(cmd, &out, NULL), 0);
    int flags = atoi(out) - 2; /* --help's own --version and --config */
    free(out);
    cr_expect_eq(cJSON_GetArraySize(c), flags, "%d flags recorded, --help lists %d",
                 cJSON_GetArraySize(c), flags);
    cr_expect_eq(cJSON_GetObjectItem(c, "layers")->valueint, 2);
    cr_expect(cJSON_IsNull(cJSON_GetObjectItem(c, "init-from")));
    cr_expect(cJSON_IsFalse(cJSON_GetObjectItem(c, "plan")));
    cr_expect_str_eq(cJSON_GetObjectItem(c, "device")->valuestring, "cpu");
    cr_expect_eq(cJSON_GetObjectItem(s, "channels")->valueint, 32);
    cr_expect_eq(cJSON_GetObjectItem(s, "params")->valuedouble > 0, 1);
    const char *fp = cJSON_GetStringValue(cJSON_GetObjectItem(r, "data_fingerprint"));
    cr_expect(fp && strlen(fp) == 16 && strspn(fp, "0123456789abcdef") == 16, "fingerprint %s",
              fp);
    const char *commit = cJSON_GetStringValue(cJSON_GetObjectItem(r, "commit"));
    cr_expect(commit && *commit);
    cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(r, "backend")), "cpu fp32");
    cr_expect_eq(tc_log_losses(tu_path(d, "a.log"), NULL, NULL, NULL, TC_MAX_STEPS), 1);
    cJSON_Delete(r);
    tu_remove_tree(d);
}

/* A plain object of flag names works too; an unknown key, a key given
 * twice, a value of the wrong type or out of range, a file that is no JSON
 * object or is missing:
 * exit 2, one line naming the file (and the key). */
Test(run_record, config_errors_name_the_file_and_key, .timeout = 60)
{
    char *d = tu_tempdir(), args[4096];
    tc_make_shards(d, 1, 400);
    tu_write_text(tu_path(d, "ok.json"), "{\n  \"steps\": 2,\n  \"layers\": 1,\n  \"lr\": 0.002,\n"
                  "  \"resume\": false, \"init-from\": null, \"plan\": false\n}\n");
    snprintf(args, sizeof args, "%s --config %s/ok.json --layers 2 --log %s/ok.log",
             tc_model_args(d), d, d);
    cr_assert_eq(run_in(d, "ok", args), 0);
    cJSON *r = first_record(tu_path(d, "ok.log"));
    cJSON *c = cJSON_GetObjectItem(r, "config");
    cr_expect_eq(cJSON_GetObjectItem(c, "steps")->valueint, 2);
    cr_expect_eq(cJSON_GetObjectItem(c, "layers")->valueint, 2, "the command line must win");
    cJSON_Delete(r);
    struct {
        const char *text, *want;
    } bad[] = {
        {"{\"layerz\": 3}", "bad.json: unknown key \"layerz\""},
        {"{\"layers\": \"three\"}", "--layers: expected an integer"},
        {"{\"layers\": 0}", "bad.json: key \"layers\" holds that value"},
        {"{\"plan\": 1}", "bad.json: key \"plan\": expected true, false or null"},
        {"{\"steps\": [1]}", "key \"steps\": expected a number, a string"},
        {"{\"steps\": true}", "key \"steps\": expected a number or a string"},
        {"[1, 2]", "bad.json: not a JSON object"},
        {"{\"config\": 3}", "\"config\" is not an object of flags"},
        /* a JSON reader keeps one of two equal keys, which one is its own
         * choice: neither is taken */
        {"{\"lr\": 0.1, \"steps\": 2, \"lr\": 0.2}", "bad.json: key \"lr\" given twice"},
        {"{\"config\": {\"steps\": 2, \"st\\u0065ps\": 3}}",
         "bad.json: key \"steps\" given twice"},
        {"{\"config\": {}, \"config\": {\"steps\": 1}}",
         "bad.json: key \"config\" given twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tu_write_text(tu_path(d, "bad.json"), bad[i].text);
        snprintf(args, sizeof args, "%s --config %s/bad.json", tc_model_args(d), d);
        tc_run_expect(d, args, 2, bad[i].want);
    }
    snprintf(args, sizeof args, "%s --config %s/none.json", tc_model_args(d), d);
    tc_run_expect(d, args, 2, "none.json: No such file or directory");
    tu_remove_tree(d);
}
