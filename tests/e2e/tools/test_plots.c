/* tests/e2e/tools/test_plots.c — scripts/plot_log.sh: loss curves from --log files.
 * A hand-written log with known step times gives known token counts
 * (tokens of a step = tokens_per_s * ms / 1000, summed), a repeated step
 * (a resumed log) keeps its last line, val points sit at their step's
 * tokens, and the PNG is written; a missing or empty log is one clear
 * error. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/test_util.h"

Test(plots, plot_log_tokens_and_overlay, .timeout = 60)
{
    char *d = tu_tempdir(), a[600], b[600], cmd[4096], path[700];
    snprintf(a, sizeof a, "%s/run_a.jsonl", d);
    snprintf(b, sizeof b, "%s/run_b.jsonl", d);
    tu_write_text(a, "{\"step\":1,\"loss\":5.0,\"ms\":2000,\"tokens_per_s\":1000}\n"
                  "{\"step\":2,\"loss\":9.9,\"ms\":1000,\"tokens_per_s\":3000}\n"
                  "{\"step\":2,\"loss\":4.0,\"ms\":1000,\"tokens_per_s\":3000}\n"
                  "{\"step\":2,\"val_loss\":4.5}\n"
                  "{\"step\":3,\"loss\":3.5,\"ms\":500,\"tokens_per_s\":2000}\n"
                  "{\"event\":\"summary\",\"memory\":{}}\n");
    tu_write_text(b, "{\"step\":1,\"loss\":6.0,\"ms\":100,\"tokens_per_s\":10000}\n");
    snprintf(cmd, sizeof cmd, "PLOT_LOG_DATA=%s/data scripts/plot_log.sh -o %s/loss.png %s %s "
             "> %s/out.txt 2>&1", d, d, a, b, d);
    cr_assert_eq(tu_run(cmd), 0, "%s", cmd);
    snprintf(path, sizeof path, "%s/data/train0.dat", d);
    char *t = tu_read_file(path, NULL);
    cr_expect(t && strcmp(t, "1 2000 5.0 1000\n2 5000 4.0 3000\n3 6000 3.5 2000\n") == 0, "%s", t);
    free(t);
    snprintf(path, sizeof path, "%s/data/val0.dat", d);
    t = tu_read_file(path, NULL);
    cr_expect(t && strcmp(t, "2 5000 4.5\n") == 0, "%s", t);
    free(t);
    snprintf(path, sizeof path, "%s/data/train1.dat", d);
    t = tu_read_file(path, NULL);
    cr_expect(t && strcmp(t, "1 1000 6.0 10000\n") == 0, "%s", t);
    free(t);
    snprintf(path, sizeof path, "%s/loss.png", d);
    size_t len;
    t = tu_read_file(path, &len);
    cr_expect(t && len > 1000 && memcmp(t, "\x89PNG", 4) == 0, "no PNG written");
    free(t);
    snprintf(cmd, sizeof cmd, "rm -rf %s", d);
    tu_run(cmd);
    free(d);
}

Test(plots, plot_log_bad_inputs, .timeout = 60)
{
    char *d = tu_tempdir(), e[600], cmd[4096], path[700];
    snprintf(e, sizeof e, "%s/empty.jsonl", d);
    tu_write_text(e, "{\"event\":\"summary\"}\n");
    snprintf(path, sizeof path, "%s/out.txt", d);
    snprintf(cmd, sizeof cmd, "scripts/plot_log.sh -o %s/x.png %s > %s 2>&1", d, e, path);
    cr_expect_eq(tu_run(cmd), 1);
    char *t = tu_read_file(path, NULL);
    cr_expect(t && strstr(t, "empty.jsonl: no step lines"), "%s", t);
    free(t);
    snprintf(cmd, sizeof cmd, "scripts/plot_log.sh -o %s/x.png %s/missing.jsonl > %s 2>&1", d, d,
             path);
    cr_expect_eq(tu_run(cmd), 1);
    t = tu_read_file(path, NULL);
    cr_expect(t && strstr(t, "missing.jsonl: No such file or directory"), "%s", t);
    free(t);
    snprintf(cmd, sizeof cmd, "rm -rf %s", d);
    tu_run(cmd);
    free(d);
}
