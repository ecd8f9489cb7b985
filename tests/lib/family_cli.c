/* tests/lib/family_cli.c — see family_cli.h. */
#include "tests/lib/family_cli.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

void family_cli_expect_refused(const char *dir, const char *args, const char *want)
{
    char prefix[4200], err_path[4300];
    snprintf(prefix, sizeof prefix, "%s/refused", dir);
    int rc = tc_run("", args, prefix);
    snprintf(err_path, sizeof err_path, "%s.err", prefix);
    char *e = tu_read_file(err_path, NULL);
    cr_expect_eq(rc, 2, "%s: exit %d, stderr: %s", args, rc, e ? e : "");
    cr_expect(e && strstr(e, want), "%s: want '%s' in stderr: %s", args, want, e ? e : "");
    int lines = 0;
    for (const char *p = e; p && *p; p++) lines += *p == '\n';
    cr_expect_eq(lines, 1, "%s: %d lines of stderr: %s", args, lines, e ? e : "");
    free(e);
}

void family_cli_expect_modes_write_mode_0s_grads(const char *dir, const char *flags,
                                                 const char *header, const char *header_what,
                                                 const char *selective)
{
    char args[8192], prefix[4200], a[1024], b[4300];
    static const char *modes[] = {"0", "1", "2", "selective", "auto"};
    for (int i = 0; i < 5; i++) {
        snprintf(a, sizeof a, "%s/grads_%s.bin", dir, modes[i]);
        snprintf(args, sizeof args, "%s %s --steps 2 --recompute %s --op-costs flops "
                 "--memory-budget 4GiB --dump-grads %s", tc_model_args(dir), flags, modes[i], a);
        snprintf(prefix, sizeof prefix, "%s/run_%s", dir, modes[i]);
        int rc = tc_run("", args, prefix);
        snprintf(b, sizeof b, "%s.out", prefix);
        cr_assert_eq(rc, 0, "--recompute %s: exit %d", modes[i], rc);
        cr_expect(tc_file_has(b, header), "%s", header_what);
        if (i == 3 && selective) cr_expect(tc_file_has(b, selective), "selective's name");
        if (i == 0) continue;
        snprintf(b, sizeof b, "%s/grads_0.bin", dir);
        cr_expect(tc_files_equal(a, b), "--recompute %s: gradients differ from mode 0's",
                  modes[i]);
    }
}

void family_cli_expect_cached_generation_same(const char *dir, const char *flags, int tokens)
{
    char args[8192], prefix[4200], a[4300], b[4300];
    for (int kv = 0; kv <= 1; kv++) {
        snprintf(args, sizeof args, "%s %s --steps 2 --generate %d --num-samples 2 "
                 "--seed 7 --prompt 'ROMEO:' --kv-cache %d", tc_model_args(dir), flags, tokens, kv);
        snprintf(prefix, sizeof prefix, "%s/gen%d", dir, kv);
        cr_assert_eq(tc_run("", args, prefix), 0, "--kv-cache %d failed", kv);
    }
    snprintf(a, sizeof a, "%s/gen0.out", dir);
    snprintf(b, sizeof b, "%s/gen1.out", dir);
    char *x = tu_read_file(a, NULL), *y = tu_read_file(b, NULL);
    cr_assert(x && y);
    const char *sx = strstr(x, "ROMEO:"), *sy = strstr(y, "ROMEO:");
    cr_assert(sx && sy, "the samples start with the prompt: %s", x);
    cr_expect(strstr(sx, "sample 2/2:"), "both samples are printed: %s", sx);
    cr_expect_str_eq(sx, sy, "the samples differ with and without the cache");
    free(x), free(y);
}
