/* tests/lib/rank_runs.c — see tests/lib/rank_runs.h. */
#include "tests/lib/rank_runs.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

char *rank_runs_setup(void)
{
    char *dir = tu_tempdir();
    tc_make_shards(dir, 2, 600);
    return dir;
}

void rank_runs_teardown(char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    tu_run(cmd);
    free(dir);
}

int rank_runs_train(const char *dir, int np, const char *tag, const char *shape,
                    const char *flags)
{
    char cmd[4096], launch[512] = "";
    if (np) snprintf(launch, sizeof launch, "timeout 120 " TC_MPIRUN " -np %d", np);
    snprintf(cmd, sizeof cmd,
             "rm -f %s/%s.bin %s/%s.log && %s %s %s %s --steps 3 --weight-decay 0.1 "
             "%s --save %s/%s.bin --log %s/%s.log > %s/%s.out 2>&1",
             dir, tag, dir, tag, launch, tc_bin(), tc_model_args(dir), shape, flags, dir, tag,
             dir, tag, dir, tag);
    return tu_run(cmd);
}

void rank_runs_expect_plan_met(const char *dir, const char *tag)
{
    char *out = rank_runs_read(dir, tag, "out");
    const char *m = strstr(out, "memory: arenas planned ");
    cr_assert_not_null(m, "%s: no memory line in:\n%s", tag, out);
    size_t planned = 0, hw = 0;
    cr_assert_eq(sscanf(m, "memory: arenas planned %zu bytes; their high-water mark %zu", &planned,
                        &hw), 2, "%s", m);
    cr_expect_eq(planned, hw, "%s: planned %zu, high-water %zu", tag, planned, hw);
    cr_expect(!strstr(out, "differ from the plan"), "%s: a rank differs:\n%s", tag, out);
    free(out);
}

char *rank_runs_read(const char *dir, const char *tag, const char *ext)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.%s", dir, tag, ext);
    char *s = tu_read_file(path, NULL);
    cr_assert_not_null(s, "%s missing", path);
    return s;
}

void rank_runs_expect_same_file(const char *dir, const char *a, const char *b, const char *ext,
                                const char *what)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cmp -s %s/%s.%s %s/%s.%s", dir, a, ext, dir, b, ext);
    cr_expect_eq(tu_run(cmd), 0, "%s: the %s files differ", what, ext);
}

void rank_runs_expect_same_log(const char *dir, const char *a, const char *b, const char *what)
{
    static const char *keys[] = {"step", "loss",    "val_loss",     "norm", "grad_norm",
                                 "lr",   "correct", "correct_norm", "n"};
    char *sa = rank_runs_read(dir, a, "log"), *sb = rank_runs_read(dir, b, "log");
    char *pa = NULL, *pb = NULL;
    char *la = strtok_r(sa, "\n", &pa), *lb = strtok_r(sb, "\n", &pb);
    int lines = 0, nums = 0;
    for (; la && lb; la = strtok_r(NULL, "\n", &pa), lb = strtok_r(NULL, "\n", &pb), lines++) {
        cJSON *ja = cJSON_Parse(la), *jb = cJSON_Parse(lb);
        cr_assert(ja && jb, "%s: bad log line", what);
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            cJSON *x = cJSON_GetObjectItem(ja, keys[k]), *y = cJSON_GetObjectItem(jb, keys[k]);
            cr_expect_eq(!x, !y, "%s: line %d: %s in one log only", what, lines, keys[k]);
            if (x && y && cJSON_IsNumber(x)) {
                nums++;
                cr_expect(x->valuedouble == y->valuedouble, "%s: line %d: %s %.17g vs %.17g",
                          what, lines, keys[k], x->valuedouble, y->valuedouble);
            }
        }
        cJSON_Delete(ja);
        cJSON_Delete(jb);
    }
    cr_expect(!la && !lb, "%s: the logs have different lengths", what);
    cr_expect_geq(nums, 6, "%s: only %d numbers compared", what, nums);
    free(sa);
    free(sb);
}
