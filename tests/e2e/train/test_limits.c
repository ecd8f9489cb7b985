/* tests/e2e/train/test_limits.c — limits found at start-up, never a hang:
 * under ulimit -v (where OpenBLAS retried a failed 128 MiB buffer map
 * forever, in its load-time constructor below about 322,000 KiB and in the
 * first matmul above) and ulimit -n (where the first save failed and every
 * step was lost), a run trains or stops with exit 1 and one line. A CUDA
 * build may stop earlier still, in the loader (exit 127, its own one
 * line), when the CUDA libraries do not fit. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/cli_harness.h"
#include "tests/lib/test_util.h"

#ifdef __SANITIZE_ADDRESS__
#define SKIP_UNDER_ASAN() cr_skip_test("address limits are ASan's own under ASan")
#else
#define SKIP_UNDER_ASAN() ((void)0)
#endif

static void expect_trains_or_one_line(const char *d, const char *limit, const char *extra)
{
    char args[2048], prefix[600], env[64];
    snprintf(env, sizeof env, "%s;", limit);
    snprintf(prefix, sizeof prefix, "%s/run", d);
    snprintf(args, sizeof args, "%s --steps 2 --op-costs flops --checkpoint-dir '%s/ck' "
             "--log '%s/log.jsonl' --overwrite-outputs %s", tc_model_args(d), d, d, extra);
    int rc = tc_run(env, args, prefix);
    char *err = tu_read_file(tu_path(d, "run.err"), NULL);
    int loader = rc == 127 && err && strstr(err, "error while loading shared libraries");
    cr_expect(rc == 0 || rc == 1 || loader, "%s: exit %d: %s", limit, rc, err ? err : "");
    if (rc == 1) {
        const char *nl = err ? strchr(err, '\n') : NULL;
        cr_expect(err && strstr(err, "limit") && nl && nl[1] == 0, "%s: not one line: %s", limit,
                  err ? err : "");
    }
    free(err);
}

Test(limits, address_space_limit_stops_or_trains, .timeout = 120)
{
    SKIP_UNDER_ASAN();
    char *d = tu_tempdir();
    tc_make_shards(d, 1, 20000);
    const char *v[] = {"ulimit -v 150000", "ulimit -v 250000", "ulimit -v 400000",
                       "ulimit -v 440000"};
    for (int i = 0; i < 4; i++) expect_trains_or_one_line(d, v[i], "");
    /* one OpenMP thread: one constructor buffer, so 250000 passes the load */
    expect_trains_or_one_line(d, "export OMP_NUM_THREADS=1; ulimit -v 250000", "--threads 1");
    tu_remove_tree(d);
}

Test(limits, open_file_limit_stops_or_trains, .timeout = 120)
{
    char *d = tu_tempdir();
    tc_make_shards(d, 1, 20000);
    /* 8 and 10 are below the descriptors the test runner itself passes
     * down (the shell exits 2 before train_gpt runs); checked by hand */
    const char *n[] = {"ulimit -n 12", "ulimit -n 16"};
    for (int i = 0; i < 2; i++) expect_trains_or_one_line(d, n[i], "");
    tu_remove_tree(d);
}
